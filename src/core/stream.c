/* The byte-stream core shared by every implementation: state, callbacks, references, cross-thread posts.
 * See stream.h for the rules this enforces. */
#include "core/stream.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/loop.h"
#include "core/xmalloc.h"

struct stream {
	const struct stream_ops *ops;
	void *impl;
	char *name;
	enum stream_state state;
	enum stream_end end;
	int status;
	char *reason;
	const struct stream_cbs *cbs;
	void *cb_arg;
	bool detached;
	atomic_int refs;
	pthread_t owner; /* the loop thread */
	uint64_t bytes_in, bytes_out;
};

struct stream *stream_new(const struct stream_ops *ops, void *impl, const char *name)
{
	struct stream *s = xcalloc(1, sizeof *s);
	s->ops = ops;
	s->impl = impl;
	s->name = xstrdup(name ? name : ops->type);
	s->state = STREAM_CONNECTING;
	s->reason = xstrdup("");
	atomic_init(&s->refs, 1);
	s->owner = pthread_self();
	return s;
}

static void stream_destroy(void *arg)
{
	struct stream *s = arg;
	if (s->ops->destroy)
		s->ops->destroy(s);
	free(s->name);
	free(s->reason);
	free(s);
}

void stream_ref(struct stream *s)
{
	atomic_fetch_add(&s->refs, 1);
}

void stream_unref(struct stream *s)
{
	if (!s || atomic_fetch_sub(&s->refs, 1) != 1)
		return;
	if (pthread_equal(pthread_self(), s->owner))
		stream_destroy(s);
	else
		loop_post(stream_destroy, s);
}

void *stream_impl(const struct stream *s)
{
	return s->impl;
}

bool stream_detached(const struct stream *s)
{
	return s->detached;
}

void stream_set_callbacks(struct stream *s, const struct stream_cbs *cbs, void *arg)
{
	s->cbs = cbs;
	s->cb_arg = arg;
}

int stream_write(struct stream *s, const void *data, size_t len)
{
	if (s->state == STREAM_CLOSED || s->detached)
		return -1;
	if (len == 0)
		return 0;
	if (s->ops->write(s, data, len) < 0)
		return -1;
	s->bytes_out += len;
	return 0;
}

void stream_close(struct stream *s)
{
	if (s->state == STREAM_CLOSED)
		return;
	stream_ref(s);
	s->ops->close(s);
	stream_unref(s);
}

void stream_free(struct stream *s)
{
	if (!s)
		return;
	s->cbs = NULL;
	s->cb_arg = NULL;
	s->detached = true;
	if (s->state != STREAM_CLOSED) {
		stream_ref(s);
		s->ops->close(s);
		if (s->state != STREAM_CLOSED) {
			s->state = STREAM_CLOSED;
			s->end = STREAM_END_LOCAL;
		}
		stream_unref(s);
	}
	stream_unref(s);
}

size_t stream_pending(const struct stream *s)
{
	return s->ops->pending && s->state != STREAM_CLOSED ? s->ops->pending(s) : 0;
}

void stream_pause(struct stream *s, bool paused)
{
	if (s->ops->pause && s->state != STREAM_CLOSED)
		s->ops->pause(s, paused);
}

int stream_resize(struct stream *s, int cols, int rows)
{
	if (!s->ops->resize || s->state == STREAM_CLOSED)
		return -1;
	return s->ops->resize(s, cols, rows);
}

enum stream_state stream_state(const struct stream *s)
{
	return s->state;
}

enum stream_end stream_end(const struct stream *s)
{
	return s->end;
}

int stream_status(const struct stream *s)
{
	return s->status;
}

const char *stream_reason(const struct stream *s)
{
	return s->reason;
}

const char *stream_name(const struct stream *s)
{
	return s->name;
}

uint64_t stream_bytes_in(const struct stream *s)
{
	return s->bytes_in;
}

uint64_t stream_bytes_out(const struct stream *s)
{
	return s->bytes_out;
}

const char *stream_end_name(enum stream_end e)
{
	static const char *const names[] = { "", "closed", "ended by peer", "refused", "error" };
	return (unsigned)e < sizeof names / sizeof names[0] ? names[e] : "?";
}

/* Calls the state callback with a reference held, so the consumer may free the stream inside it. */
static void notify_state(struct stream *s)
{
	if (!s->cbs || !s->cbs->state)
		return;
	stream_ref(s);
	s->cbs->state(s, s->state, s->cb_arg);
	stream_unref(s);
}

void stream_emit_open(struct stream *s)
{
	if (s->state != STREAM_CONNECTING)
		return;
	s->state = STREAM_OPEN;
	notify_state(s);
}

void stream_emit_data(struct stream *s, const void *data, size_t len)
{
	if (s->state == STREAM_CLOSED || len == 0)
		return;
	if (s->state == STREAM_CONNECTING) {
		stream_emit_open(s);
		if (s->state != STREAM_OPEN)
			return;
	}
	s->bytes_in += len;
	if (!s->cbs || !s->cbs->data)
		return;
	stream_ref(s);
	s->cbs->data(s, data, len, s->cb_arg);
	stream_unref(s);
}

void stream_emit_closed(struct stream *s, enum stream_end end, int status, const char *reason)
{
	if (s->state == STREAM_CLOSED)
		return;
	s->state = STREAM_CLOSED;
	s->end = end;
	s->status = status;
	free(s->reason);
	s->reason = xstrdup(reason ? reason : "");
	notify_state(s);
}

enum post_kind { POST_OPEN, POST_DATA, POST_CLOSED };

struct stream_post {
	struct stream *s;
	enum post_kind kind;
	enum stream_end end;
	int status;
	char *reason;
	size_t len;
	uint8_t data[];
};

static void deliver_post(void *arg)
{
	struct stream_post *p = arg;
	struct stream *s = p->s;
	if (!s->detached) {
		if (p->kind == POST_OPEN)
			stream_emit_open(s);
		else if (p->kind == POST_DATA)
			stream_emit_data(s, p->data, p->len);
		else
			stream_emit_closed(s, p->end, p->status, p->reason);
	}
	free(p->reason);
	free(p);
	stream_unref(s);
}

static void post(struct stream *s, enum post_kind kind, const void *data, size_t len, enum stream_end end,
		 int status, const char *reason)
{
	struct stream_post *p = xmalloc(sizeof *p + len);
	p->s = s;
	p->kind = kind;
	p->end = end;
	p->status = status;
	p->reason = reason ? xstrdup(reason) : NULL;
	p->len = len;
	if (len)
		memcpy(p->data, data, len);
	stream_ref(s);
	loop_post(deliver_post, p);
}

void stream_post_open(struct stream *s)
{
	post(s, POST_OPEN, NULL, 0, STREAM_END_NONE, 0, NULL);
}

void stream_post_data(struct stream *s, const void *data, size_t len)
{
	if (len)
		post(s, POST_DATA, data, len, STREAM_END_NONE, 0, NULL);
}

void stream_post_closed(struct stream *s, enum stream_end end, int status, const char *reason)
{
	post(s, POST_CLOSED, NULL, 0, end, status, reason);
}
