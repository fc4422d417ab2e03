/* End-to-end benchmark of the VNC path: a synthetic RFB 3.8 server (a thread here) streams full 1024x768 Raw
 * framebuffer updates over a socketpair into kvcon's libvncclient session (vnc_new_fd); the loop thread renders
 * every VNC_FRAME into a 200x60 grid and emits the escape sequences, as `kvcon vnc` does (without the 30 frames/s
 * cap). Prints updates decoded per second, frames rendered per second, and the CPU of kvcon's two threads (the
 * process total minus the synthetic server's own thread). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "console/fbcells.h"
#include "console/vnc.h"
#include "core/buf.h"
#include "core/log.h"
#include "core/loop.h"

#define W 1024
#define H 768
#define SECONDS 5

static int frames_sent;
static double server_cpu;
static volatile int stop;

static double clock_s(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int put_all(int fd, const void *p, size_t n)
{
	const char *c = p;
	while (n) {
		ssize_t k = send(fd, c, n, MSG_NOSIGNAL);
		if (k <= 0)
			return -1;
		c += k;
		n -= (size_t)k;
	}
	return 0;
}

static void *drain(void *arg)
{
	int fd = *(int *)arg;
	char b[4096];
	while (read(fd, b, sizeof b) > 0)
		;
	return NULL;
}

static void *server(void *arg)
{
	int fd = *(int *)arg;
	double c0 = clock_s(CLOCK_THREAD_CPUTIME_ID);
	static const char hello[] = "RFB 003.008\n";
	uint8_t init[24 + 5] = {W >> 8, W & 255, H >> 8, H & 255, 32, 24, 0, 1, 0, 255, 0, 255, 0, 255, 16, 8, 0};
	memcpy(init + 20, "\0\0\0\5bench", 9);
	char ver[12], choice, shared;
	if (put_all(fd, hello, 12) || read(fd, ver, 12) != 12 || put_all(fd, "\1\1", 2) || read(fd, &choice, 1) != 1 ||
	    put_all(fd, "\0\0\0\0", 4) || read(fd, &shared, 1) != 1 || put_all(fd, init, sizeof init))
		return NULL;
	pthread_t d;
	pthread_create(&d, NULL, drain, arg);
	size_t fsz = (size_t)W * H * 4;
	uint8_t *frame[2] = {malloc(16 + fsz), malloc(16 + fsz)};
	for (int k = 0; k < 2; k++) {
		uint8_t hdr[16] = {0, 0, 0, 1, 0, 0, 0, 0, W >> 8, W & 255, H >> 8, H & 255, 0, 0, 0, 0};
		memcpy(frame[k], hdr, 16);
		for (size_t i = 0; i < fsz; i++) /* a desktop-ish picture, different in the two frames */
			frame[k][16 + i] =
			    (uint8_t)(((i / 4) % W / (k ? 3 : 5)) + ((i / 4) / W / (k ? 2 : 4)) * (i % 4));
	}
	while (!stop && put_all(fd, frame[frames_sent & 1], 16 + fsz) == 0)
		frames_sent++;
	server_cpu = clock_s(CLOCK_THREAD_CPUTIME_ID) - c0;
	shutdown(fd, SHUT_RDWR);
	pthread_join(d, NULL);
	free(frame[0]);
	free(frame[1]);
	return NULL;
}

struct bench {
	struct vnc *v;
	struct fbcells *cells;
	struct buf out;
	int rendered;
	size_t bytes;
	double ui_cpu;
	bool closed;
};

static void on_event(struct vnc *v, enum vnc_event ev, void *arg)
{
	struct bench *b = arg;
	if (ev == VNC_CLOSED)
		b->closed = true;
	if (ev != VNC_FRAME)
		return;
	double c0 = clock_s(CLOCK_THREAD_CPUTIME_ID);
	vnc_render(v, b->cells, 200, 60, FBC_FIT, 0, 0);
	buf_reset(&b->out);
	b->bytes += fbcells_emit(b->cells, &b->out, 0, 0, FBC_TRUECOLOUR, false);
	b->rendered++;
	b->ui_cpu += clock_s(CLOCK_THREAD_CPUTIME_ID) - c0;
}

int main(void)
{
	log_set_stderr_level(LOG_ERROR + 1);
	loop_init();
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
		return 1;
	pthread_t st;
	pthread_create(&st, NULL, server, &sv[0]);
	struct bench b = {0};
	b.cells = fbcells_new();
	buf_init(&b.out);
	struct vnc_opts o = {.quality = -1};
	double p0 = clock_s(CLOCK_PROCESS_CPUTIME_ID), t0 = clock_s(CLOCK_MONOTONIC);
	b.v = vnc_new_fd(sv[1], &o, on_event, &b);
	while (clock_s(CLOCK_MONOTONIC) - t0 < SECONDS && !b.closed)
		loop_once(50);
	uint64_t updates = vnc_updates(b.v, NULL);
	double wall = clock_s(CLOCK_MONOTONIC) - t0;
	stop = 1;
	vnc_free(b.v);
	pthread_join(st, NULL);
	double cpu = clock_s(CLOCK_PROCESS_CPUTIME_ID) - p0 - server_cpu;
	printf("  end to end, Raw 1024x768 full updates over a socketpair -> 200x60 true colour, %.1f s:\n", wall);
	printf("    %.0f updates decoded/s, %.0f frames rendered/s (%d coalesced), %zu bytes/frame\n", updates / wall,
	       b.rendered / wall, (int)updates - b.rendered, b.rendered ? b.bytes / (size_t)b.rendered : 0);
	printf("    kvcon CPU: %.0f%% of one core in all (%.2f ms per update), UI thread %.2f ms per rendered frame\n",
	       100 * cpu / wall, updates ? 1000 * cpu / (double)updates : 0,
	       b.rendered ? 1000 * b.ui_cpu / b.rendered : 0);
	fbcells_free(b.cells);
	buf_free(&b.out);
	close(sv[0]);
	return 0;
}
