/* Test client for kube/ws.c against a real WebSocket peer (websockify, fakekube): sends random bytes in
 * random-sized writes, expects them echoed back in order, then closes with the close handshake.
 * Built by the e2e scripts against build/libkvcon.a.
 * usage: wsclient URL [-b BYTES] [-p SUBPROTOCOL] [-c CAFILE] [-t TOKEN] [-r STATUS (expect refusal)]
 *        [-e (expect the peer to end the stream)] */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/stream.h"
#include "core/buf.h"
#include "core/loop.h"
#include "core/util.h"
#include "kube/ws.h"

static struct buf got;
static int opened, closed;

static void on_data(struct stream *s, const uint8_t *d, size_t n, void *arg)
{
	(void)s, (void)arg;
	buf_add(&got, d, n);
}

static void on_state(struct stream *s, enum stream_state st, void *arg)
{
	(void)arg;
	if (st == STREAM_OPEN)
		opened = 1;
	if (st == STREAM_CLOSED) {
		closed = 1;
		fprintf(stderr, "closed: %s status %d reason '%s'\n", stream_end_name(stream_end(s)), stream_status(s),
			stream_reason(s));
	}
}

static const struct stream_cbs cbs = { on_data, on_state };

#define WAIT(cond, ms)                                              \
	do {                                                        \
		uint64_t e_ = util_now_ms() + (ms);                 \
		while (!(cond) && util_now_ms() < e_)               \
			loop_once(20);                              \
	} while (0)

int main(int argc, char **argv)
{
	size_t total = 1 << 20;
	const char *proto = NULL, *ca = NULL, *token = NULL;
	int expect_status = 0, expect_end = 0, opt;
	while ((opt = getopt(argc, argv, "b:p:c:t:r:e")) != -1) {
		if (opt == 'b')
			total = strtoul(optarg, NULL, 10);
		else if (opt == 'p')
			proto = optarg;
		else if (opt == 'c')
			ca = optarg;
		else if (opt == 't')
			token = optarg;
		else if (opt == 'r')
			expect_status = atoi(optarg);
		else if (opt == 'e')
			expect_end = 1;
	}
	if (optind >= argc)
		return 2;
	loop_init();
	buf_init(&got);
	CURL *easy = curl_easy_init();
	if (ca)
		curl_easy_setopt(easy, CURLOPT_CAINFO, ca);
	struct ws_config cfg = { .url = argv[optind], .subprotocol = proto, .bearer = token, .keepalive_ms = 200 };
	struct stream *s = ws_open(&cfg, easy, "test");
	stream_set_callbacks(s, &cbs, NULL);
	WAIT(opened || closed, 10000);
	if (expect_status) {
		WAIT(closed, 10000);
		if (stream_end(s) != STREAM_END_REFUSED || stream_status(s) != expect_status) {
			fprintf(stderr, "FAIL: expected refusal %d\n", expect_status);
			return 1;
		}
		printf("refused %d: %s\n", stream_status(s), stream_reason(s));
		stream_free(s);
		return 0;
	}
	if (!opened) {
		fprintf(stderr, "FAIL: not open\n");
		return 1;
	}
	uint8_t *data = malloc(total);
	srand(42);
	for (size_t i = 0; i < total; i++)
		data[i] = (uint8_t)rand();
	uint64_t t0 = util_now_ms();
	size_t sent = 0;
	while (sent < total && !closed) {
		size_t n = (size_t)(rand() % 70000) + 1;
		if (n > total - sent)
			n = total - sent;
		if (stream_write(s, data + sent, n) < 0) {
			fprintf(stderr, "FAIL: write refused\n");
			return 1;
		}
		sent += n;
		while (stream_pending(s) > (1 << 20))
			loop_once(20);
		loop_once(0);
	}
	WAIT(got.len >= total || closed, 30000);
	uint64_t ms = util_now_ms() - t0;
	if (got.len != total || memcmp(got.data, data, total) != 0) {
		fprintf(stderr, "FAIL: echoed %zu of %zu bytes (or different)\n", got.len, total);
		return 1;
	}
	printf("echoed %zu bytes in %llu ms\n", total, (unsigned long long)ms);
	if (expect_end) {
		WAIT(closed, 10000);
		if (!closed) {
			fprintf(stderr, "FAIL: the peer did not end the stream\n");
			return 1;
		}
		stream_free(s);
		return 0;
	}
	stream_close(s);
	WAIT(closed, 5000);
	if (!closed || stream_end(s) != STREAM_END_LOCAL) {
		fprintf(stderr, "FAIL: close handshake\n");
		return 1;
	}
	printf("closed cleanly (code %d)\n", stream_status(s));
	stream_free(s);
	free(data);
	buf_free(&got);
	loop_fini();
	return 0;
}
