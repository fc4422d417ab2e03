/* libFuzzer harness for console/vnc: the input is everything a (malicious) VNC server sends, handed to kvcon's
 * libvncclient integration over a socketpair exactly as a stream would be; each frame is rendered into cells.
 * Whatever the bytes (rectangles outside the framebuffer, huge sizes, truncated messages), the session must end
 * with VNC_CLOSED and nothing may crash. Seeds in tests/fuzz/corpus/vnc start with a valid RFB 3.8 handshake.
 * libvncclient itself is not instrumented: ASan sees its heap use through malloc/memcpy interceptors only. */
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "console/fbcells.h"
#include "console/vnc.h"
#include "core/log.h"
#include "core/loop.h"

struct run {
	const uint8_t *data;
	size_t len, off;
	int fd;
	struct loop_fd *h;
	struct vnc *v;
	struct fbcells *cells;
	bool closed;
};

static void on_event(struct vnc *v, enum vnc_event ev, void *arg)
{
	struct run *r = arg;
	if (ev == VNC_FRAME)
		vnc_render(v, r->cells, 80, 24, FBC_FIT, 0, 0);
	if (ev == VNC_CLOSED)
		r->closed = true;
}

/* the server side: write the input, discard what the client sends */
static void on_server(int fd, short revents, void *arg)
{
	struct run *r = arg;
	if (revents & (POLLIN | POLLHUP | POLLERR)) {
		uint8_t b[65536];
		ssize_t n = read(fd, b, sizeof b);
		if (n <= 0 && !(n < 0 && errno == EAGAIN)) {
			loop_fd_remove(r->h);
			r->h = NULL;
			return;
		}
	}
	if ((revents & POLLOUT) && r->off < r->len) {
		ssize_t n = send(fd, r->data + r->off, r->len - r->off, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n > 0)
			r->off += (size_t)n;
		else if (n < 0 && errno != EAGAIN)
			r->off = r->len;
		if (r->off == r->len) {
			shutdown(fd, SHUT_WR);
			loop_fd_set_events(r->h, POLLIN);
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool init;
	if (!init) {
		loop_init();
		log_set_stderr_level(LOG_ERROR + 1);
		init = true;
	}
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return 0;
	struct run r = {data, size, 0, sv[0], NULL, NULL, NULL, false};
	r.cells = fbcells_new();
	r.h = loop_fd_add(sv[0], (short)(POLLIN | (size ? POLLOUT : 0)), on_server, &r);
	if (size == 0)
		shutdown(sv[0], SHUT_WR);
	struct vnc_opts o = {.password = "secret", .quality = -1};
	r.v = vnc_new_fd(sv[1], &o, on_event, &r);
	while (!r.closed)
		loop_once(100);
	vnc_free(r.v);
	loop_fd_remove(r.h);
	close(sv[0]);
	fbcells_free(r.cells);
	/* the session thread's last posts, queued before vnc_free joined it, run now, so nothing leaks between
	 * inputs (without waiting: a 1 ms poll per pass was most of each input's time) */
	for (int i = 0; i < 3; i++)
		loop_once(0);
	return 0;
}
