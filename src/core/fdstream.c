/* struct stream over file descriptors: reads on POLLIN, queued writes flushed on POLLOUT. */
#include "core/fdstream.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/buf.h"
#include "core/loop.h"
#include "core/xmalloc.h"

struct fdstream {
	struct stream *s;
	int rfd, wfd;
	struct loop_fd *rh, *wh; /* wh NULL when rfd == wfd (one registration for both directions) */
	struct loop_timer *open_timer;
	struct buf out;
	bool paused;
	bool closing; /* close requested: flush, then end */
};

static void fds_update(struct fdstream *f)
{
	short rev = f->paused ? 0 : POLLIN;
	short wev = f->out.len ? POLLOUT : 0;
	if (f->wh) {
		loop_fd_set_events(f->rh, rev);
		loop_fd_set_events(f->wh, wev);
	} else if (f->rh) {
		loop_fd_set_events(f->rh, (short)(rev | wev));
	}
}

static void fds_finish(struct fdstream *f, enum stream_end end, const char *reason)
{
	loop_fd_remove(f->rh);
	loop_fd_remove(f->wh);
	f->rh = f->wh = NULL;
	stream_emit_closed(f->s, end, 0, reason);
}

static void fds_flush(struct fdstream *f)
{
	while (f->out.len) {
		/* send() with MSG_NOSIGNAL so a vanished peer is an error here, not a SIGPIPE */
		ssize_t n = send(f->wfd, f->out.data, f->out.len, MSG_NOSIGNAL);
		if (n < 0 && errno == ENOTSOCK)
			n = write(f->wfd, f->out.data, f->out.len);
		if (n > 0) {
			buf_consume(&f->out, (size_t)n);
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		fds_finish(f, STREAM_END_ERROR, n < 0 ? strerror(errno) : "write failed");
		return;
	}
	if (f->closing && f->out.len == 0) {
		fds_finish(f, STREAM_END_LOCAL, NULL);
		return;
	}
	fds_update(f);
}

static void fds_read(struct fdstream *f)
{
	uint8_t b[65536];
	/* A bounded number of reads per pass so one busy stream cannot starve the loop. */
	for (int i = 0; i < 16 && stream_state(f->s) == STREAM_OPEN && !f->paused; i++) {
		ssize_t n = read(f->rfd, b, sizeof b);
		if (n > 0) {
			stream_emit_data(f->s, b, (size_t)n);
			if ((size_t)n < sizeof b)
				break;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		fds_finish(f, n == 0 || errno == EIO ? STREAM_END_REMOTE : STREAM_END_ERROR,
			   n == 0 ? "end of stream" : strerror(errno));
		break;
	}
}

static void on_fd(int fd, short revents, void *arg)
{
	struct fdstream *f = arg;
	struct stream *s = f->s;
	stream_ref(s);
	if (stream_state(s) == STREAM_CONNECTING)
		stream_emit_open(s);
	if ((revents & POLLOUT) && fd == f->wfd && stream_state(s) == STREAM_OPEN)
		fds_flush(f);
	if ((revents & (POLLIN | POLLHUP | POLLERR)) && fd == f->rfd && stream_state(s) == STREAM_OPEN)
		fds_read(f);
	stream_unref(s);
}

static void on_open(void *arg)
{
	struct fdstream *f = arg;
	f->open_timer = NULL;
	stream_ref(f->s);
	stream_emit_open(f->s);
	if (stream_state(f->s) == STREAM_OPEN)
		fds_flush(f);
	stream_unref(f->s);
}

static int fds_write(struct stream *s, const uint8_t *data, size_t len)
{
	struct fdstream *f = stream_impl(s);
	if (f->closing)
		return -1;
	buf_add(&f->out, data, len);
	if (stream_state(s) == STREAM_OPEN)
		fds_flush(f);
	return 0;
}

static void fds_close(struct stream *s)
{
	struct fdstream *f = stream_impl(s);
	f->closing = true;
	if (stream_detached(s) || stream_state(s) != STREAM_OPEN)
		fds_finish(f, STREAM_END_LOCAL, NULL);
	else
		fds_flush(f);
}

static void fds_destroy(struct stream *s)
{
	struct fdstream *f = stream_impl(s);
	loop_timer_cancel(f->open_timer);
	loop_fd_remove(f->rh);
	loop_fd_remove(f->wh);
	if (f->wfd != f->rfd && f->wfd >= 0)
		close(f->wfd);
	if (f->rfd >= 0)
		close(f->rfd);
	buf_free(&f->out);
	free(f);
}

static size_t fds_pending(const struct stream *s)
{
	const struct fdstream *f = stream_impl(s);
	return f->out.len;
}

static void fds_pause(struct stream *s, bool paused)
{
	struct fdstream *f = stream_impl(s);
	f->paused = paused;
	fds_update(f);
}

static const struct stream_ops fdstream_ops = {
	.type = "fd",
	.write = fds_write,
	.close = fds_close,
	.destroy = fds_destroy,
	.pending = fds_pending,
	.pause = fds_pause,
};

static void set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	if (fl >= 0)
		fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

struct stream *fdstream_new(int rfd, int wfd, const char *name)
{
	struct fdstream *f = xcalloc(1, sizeof *f);
	f->rfd = rfd;
	f->wfd = wfd;
	buf_init(&f->out);
	set_nonblock(rfd);
	if (wfd != rfd)
		set_nonblock(wfd);
	f->s = stream_new(&fdstream_ops, f, name);
	f->rh = loop_fd_add(rfd, 0, on_fd, f);
	if (wfd != rfd)
		f->wh = loop_fd_add(wfd, 0, on_fd, f);
	f->open_timer = loop_timer_add(0, on_open, f);
	return f->s;
}
