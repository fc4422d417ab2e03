/* Unit tests of core/stream (states, references, posts from another thread) and core/fdstream. */
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/fdstream.h"
#include "core/stream.h"
#include "core/buf.h"
#include "core/loop.h"
#include "core/util.h"
#include "t.h"

struct rec {
	struct buf in;
	int opens, closes;
	bool free_on_data;
	struct stream *s;
};

static void rec_data(struct stream *s, const uint8_t *d, size_t n, void *arg)
{
	struct rec *r = arg;
	buf_add(&r->in, d, n);
	if (r->free_on_data) {
		stream_free(s);
		r->s = NULL;
	}
}

static void rec_state(struct stream *s, enum stream_state st, void *arg)
{
	struct rec *r = arg;
	(void)s;
	if (st == STREAM_OPEN)
		r->opens++;
	if (st == STREAM_CLOSED)
		r->closes++;
}

static const struct stream_cbs rec_cbs = { rec_data, rec_state };

/* Runs the loop until cond holds or 5 s pass. */
#define RUN_UNTIL(cond)                                                   \
	do {                                                              \
		uint64_t t_end = util_now_ms() + 5000;                    \
		while (!(cond) && util_now_ms() < t_end)                  \
			loop_once(50);                                    \
	} while (0)

static void test_fdstream_echo(void)
{
	int sv[2];
	T_CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	struct rec r = { 0 };
	buf_init(&r.in);
	struct stream *s = fdstream_new(sv[0], sv[0], "test");
	stream_set_callbacks(s, &rec_cbs, &r);
	T_EQ_INT(stream_state(s), STREAM_CONNECTING);
	T_EQ_INT(r.opens, 0); /* never a callback from inside the constructor */
	T_EQ_INT(stream_write(s, "hello", 5), 0); /* queued while connecting */
	RUN_UNTIL(r.opens == 1);
	T_EQ_INT(stream_state(s), STREAM_OPEN);
	char b[16] = { 0 };
	uint64_t end = util_now_ms() + 5000;
	ssize_t got = 0;
	while (got < 5 && util_now_ms() < end) {
		loop_once(10);
		ssize_t n = recv(sv[1], b + got, sizeof b - 1 - (size_t)got, MSG_DONTWAIT);
		if (n > 0)
			got += n;
	}
	T_EQ_STR(b, "hello");
	T_CHECK(write(sv[1], "world", 5) == 5);
	RUN_UNTIL(r.in.len == 5);
	T_EQ_STR(r.in.data, "world");
	T_EQ_INT(stream_bytes_in(s), 5);
	T_EQ_INT(stream_bytes_out(s), 5);
	close(sv[1]);
	RUN_UNTIL(r.closes == 1);
	T_EQ_INT(stream_state(s), STREAM_CLOSED);
	T_EQ_INT(stream_end(s), STREAM_END_REMOTE);
	T_EQ_INT(stream_write(s, "x", 1), -1);
	stream_free(s);
	T_EQ_INT(r.closes, 1);
	buf_free(&r.in);
}

static void test_free_inside_callback(void)
{
	int sv[2];
	T_CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	struct rec r = { .free_on_data = true };
	buf_init(&r.in);
	r.s = fdstream_new(sv[0], sv[0], "t2");
	stream_set_callbacks(r.s, &rec_cbs, &r);
	T_CHECK(write(sv[1], "abc", 3) == 3);
	RUN_UNTIL(r.s == NULL);
	T_EQ_STR(r.in.data, "abc");
	T_EQ_INT(r.closes, 0); /* no callback after stream_free */
	for (int i = 0; i < 5; i++)
		loop_once(10);
	T_EQ_STR(r.in.data, "abc");
	close(sv[1]);
	buf_free(&r.in);
}

/* A fake implementation whose "I/O thread" posts. */
static int destroyed;
static int nop_write(struct stream *s, const uint8_t *d, size_t n)
{
	(void)s, (void)d, (void)n;
	return 0;
}
static void nop_close(struct stream *s)
{
	stream_emit_closed(s, STREAM_END_LOCAL, 0, "bye");
}
static void nop_destroy(struct stream *s)
{
	(void)s;
	destroyed++;
}
static const struct stream_ops nop_ops = { .type = "nop", .write = nop_write, .close = nop_close, .destroy = nop_destroy };

static void *poster(void *arg)
{
	struct stream *s = arg;
	stream_post_open(s);
	for (int i = 0; i < 100; i++)
		stream_post_data(s, "0123456789", 10);
	stream_post_closed(s, STREAM_END_REMOTE, 0, "guest went away");
	stream_unref(s);
	return NULL;
}

static void test_posts(void)
{
	struct rec r = { 0 };
	buf_init(&r.in);
	destroyed = 0;
	struct stream *s = stream_new(&nop_ops, NULL, "nop");
	stream_set_callbacks(s, &rec_cbs, &r);
	stream_ref(s); /* the thread's reference */
	pthread_t th;
	pthread_create(&th, NULL, poster, s);
	pthread_join(th, NULL);
	RUN_UNTIL(r.closes == 1);
	T_EQ_INT(r.opens, 1);
	T_EQ_INT(r.in.len, 1000);
	T_EQ_INT(stream_end(s), STREAM_END_REMOTE);
	T_EQ_STR(stream_reason(s), "guest went away");
	T_EQ_INT(destroyed, 0);
	stream_free(s);
	T_EQ_INT(destroyed, 1);
	buf_free(&r.in);

	/* posts still queued when the consumer frees: dropped, destroy after the last one */
	struct rec r2 = { 0 };
	buf_init(&r2.in);
	s = stream_new(&nop_ops, NULL, "nop2");
	stream_set_callbacks(s, &rec_cbs, &r2);
	stream_post_data(s, "zz", 2);
	stream_free(s);
	T_EQ_INT(destroyed, 1);
	RUN_UNTIL(destroyed == 2);
	T_EQ_INT(destroyed, 2);
	T_EQ_INT(r2.in.len, 0);
	buf_free(&r2.in);
}

int main(void)
{
	loop_init();
	test_fdstream_echo();
	test_free_inside_callback();
	test_posts();
	loop_fini();
	return T_DONE();
}
