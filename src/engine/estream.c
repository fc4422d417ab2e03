/* The engine's byte streams for core/stream.h: the serial console (a subscription to the engine's shared
 * virStream, engine_console_*) and the VNC display (the socket libvirt hands over with virDomainOpenGraphicsFD,
 * relayed through an fdstream once it arrives). Both run on the loop thread. */
#include "engine/estream.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/fdstream.h"
#include "core/buf.h"
#include "core/xmalloc.h"
#include "engine/engine.h"

/* ---- serial console ---- */

struct econ {
	struct stream *s;
	struct engine_console *c;
};

static void econ_data(void *arg, const char *data, size_t len)
{
	struct econ *e = arg;
	if (len == 0)
		stream_emit_closed(e->s, STREAM_END_REMOTE, 0, "the execution ended");
	else
		stream_emit_data(e->s, data, len);
}

static int econ_write(struct stream *s, const uint8_t *data, size_t len)
{
	struct econ *e = stream_impl(s);
	if (e->c == NULL)
		return -1;
	engine_console_write(e->c, (const char *)data, len);
	return 0;
}

static void econ_close(struct stream *s)
{
	stream_emit_closed(s, STREAM_END_LOCAL, 0, NULL);
}

static void econ_destroy(struct stream *s)
{
	struct econ *e = stream_impl(s);
	engine_console_close(e->c);
	free(e);
}

static const struct stream_ops econ_ops = {
	.type = "virstream",
	.write = econ_write,
	.close = econ_close,
	.destroy = econ_destroy,
};

struct stream *estream_console(struct source *src, const char *ns, const char *name, char **err)
{
	if (!engine_running(src, ns, name)) {
		*err = xasprintf("VMI %s/%s is not running", ns, name);
		return NULL;
	}
	struct econ *e = xcalloc(1, sizeof *e);
	char *title = xasprintf("engine/%s %s/%s console", src->name, ns, name);
	e->s = stream_new(&econ_ops, e, title);
	free(title);
	e->c = engine_console_open(src, ns, name, econ_data, e, err);
	if (e->c == NULL) {
		stream_free(e->s);
		return NULL;
	}
	stream_post_open(e->s); /* delivered on a later loop pass, before the backlog */
	return e->s;
}

/* ---- VNC display ---- */

struct evnc {
	struct stream *s;     /* the consumer's; NULL once freed */
	struct stream *inner; /* the fdstream over libvirt's socket */
	struct buf pending;   /* written before the socket arrived */
	bool waiting;         /* engine_vnc_open's callback still due */
};

static void inner_data(struct stream *in, const uint8_t *data, size_t len, void *arg)
{
	(void)in;
	struct evnc *e = arg;
	if (e->s)
		stream_emit_data(e->s, data, len);
}

static void inner_state(struct stream *in, enum stream_state st, void *arg)
{
	struct evnc *e = arg;
	if (e->s == NULL)
		return;
	if (st == STREAM_OPEN)
		stream_emit_open(e->s);
	else if (st == STREAM_CLOSED)
		stream_emit_closed(e->s, stream_end(in), stream_status(in), stream_reason(in));
}

static const struct stream_cbs inner_cbs = { .data = inner_data, .state = inner_state };

static void evnc_fd(void *arg, int fd, const char *err)
{
	struct evnc *e = arg;
	e->waiting = false;
	if (e->s == NULL) { /* the consumer left meanwhile */
		if (fd >= 0)
			close(fd);
		buf_free(&e->pending);
		free(e);
		return;
	}
	if (fd < 0) {
		stream_emit_closed(e->s, STREAM_END_REFUSED, 0, err ? err : "no display");
		return;
	}
	e->inner = fdstream_new(fd, fd, stream_name(e->s));
	stream_set_callbacks(e->inner, &inner_cbs, e);
	if (e->pending.len)
		stream_write(e->inner, e->pending.data, e->pending.len);
	buf_reset(&e->pending);
}

static int evnc_write(struct stream *s, const uint8_t *data, size_t len)
{
	struct evnc *e = stream_impl(s);
	if (e->inner)
		return stream_write(e->inner, data, len);
	buf_add(&e->pending, data, len);
	return 0;
}

static void evnc_close(struct stream *s)
{
	struct evnc *e = stream_impl(s);
	if (e->inner)
		stream_close(e->inner);
	else
		stream_emit_closed(s, STREAM_END_LOCAL, 0, NULL);
}

static size_t evnc_pending(const struct stream *s)
{
	const struct evnc *e = stream_impl(s);
	return e->pending.len + (e->inner ? stream_pending(e->inner) : 0);
}

static void evnc_destroy(struct stream *s)
{
	struct evnc *e = stream_impl(s);
	e->s = NULL;
	stream_free(e->inner);
	e->inner = NULL;
	if (!e->waiting) {
		buf_free(&e->pending);
		free(e);
	}
}

static const struct stream_ops evnc_ops = {
	.type = "virdisplay",
	.write = evnc_write,
	.close = evnc_close,
	.destroy = evnc_destroy,
	.pending = evnc_pending,
};

struct stream *estream_vnc(struct source *src, const char *ns, const char *name, char **err)
{
	struct evnc *e = xcalloc(1, sizeof *e);
	buf_init(&e->pending);
	if (engine_vnc_open(src, ns, name, evnc_fd, e, err) < 0) {
		free(e);
		return NULL;
	}
	e->waiting = true;
	char *title = xasprintf("engine/%s %s/%s vnc", src->name, ns, name);
	e->s = stream_new(&evnc_ops, e, title);
	free(title);
	return e->s;
}
