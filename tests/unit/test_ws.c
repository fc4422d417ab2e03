/* Unit tests of kube/ws.c: Sec-WebSocket-Accept (RFC 6455's example), the Upgrade answer parser (incomplete heads,
 * refusals with their body length, every check on a 101), and a stream closed or a process exiting while libcurl's
 * connect thread is still in the TLS handshake with a server that accepts and never answers. */
#include "kube/ws.h"
#include "t.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/loop.h"

#define KEY "dGhlIHNhbXBsZSBub25jZQ=="
#define ACCEPT "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="

static int parse(const char *head, const char *proto, struct ws_response *r, const char **err)
{
	return ws_parse_response(head, strlen(head), KEY, proto, r, err);
}

/* ---- closing or exiting mid-connect ---- */

/* A loopback listener that accepts TCP and never speaks TLS: the connect thread waits in the handshake. */
static int silent_listener(int *port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof sa;
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(fd, 16) < 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &sl) < 0) {
		perror("listener");
		exit(2);
	}
	*port = ntohs(sa.sin_port);
	return fd;
}

static struct stream *open_stalled(int port)
{
	char url[64];
	snprintf(url, sizeof url, "wss://127.0.0.1:%d/stall", port);
	/* far longer than any wait below: only a cancel ends the handshake in time */
	struct ws_config cfg = { .url = url, .connect_timeout_ms = 120000 };
	return ws_open(&cfg, NULL, "stalled");
}

/* Accepts the client's connection and reads its ClientHello: the connect thread is then inside
 * curl_easy_perform, waiting for a ServerHello that never comes. -1 when none came within 10 s. */
static int accept_hello(int lfd)
{
	struct pollfd p = { .fd = lfd, .events = POLLIN };
	if (poll(&p, 1, 10000) != 1)
		return -1;
	int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (c < 0)
		return -1;
	p.fd = c;
	char b[512];
	if (poll(&p, 1, 10000) != 1 || read(c, b, sizeof b) <= 0) {
		close(c);
		return -1;
	}
	return c;
}

/* True once the client's end of c is closed (EOF or reset) within ms. */
static bool peer_closed(int c, int ms)
{
	struct pollfd p = { .fd = c, .events = POLLIN };
	char b[512];
	while (poll(&p, 1, ms) == 1) {
		ssize_t n = read(c, b, sizeof b);
		if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN))
			return true;
	}
	return false;
}

struct closed_seen {
	int closed;
	enum stream_end end;
};

static void on_state(struct stream *s, enum stream_state st, void *arg)
{
	struct closed_seen *c = arg;
	if (st == STREAM_CLOSED) {
		c->closed++;
		c->end = stream_end(s);
	}
}

static const struct stream_cbs seen_cbs = { .state = on_state };

struct eof_watch {
	int fd;
	bool eof;
};

static void on_server_fd(int fd, short revents, void *arg)
{
	(void)revents;
	struct eof_watch *e = arg;
	char b[512];
	ssize_t n = read(fd, b, sizeof b);
	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
		e->eof = true;
}

/* Closing (or freeing) a stream whose connect thread is in the handshake cancels the connect: the client's
 * socket closes at once, not when the connect timeout runs out, and the thread is joined on the loop. */
static void test_close_mid_connect(void)
{
	int port;
	int lfd = silent_listener(&port);
	loop_init();
	for (int i = 0; i < 20; i++) {
		struct stream *s = open_stalled(port);
		struct closed_seen seen = { 0 };
		stream_set_callbacks(s, &seen_cbs, &seen);
		int c = accept_hello(lfd);
		T_CHECK(c >= 0);
		if (c < 0) {
			stream_free(s);
			break;
		}
		T_EQ_INT(stream_state(s), STREAM_CONNECTING);
		if (i % 2) {
			stream_close(s);
			T_EQ_INT(seen.closed, 1);
			T_EQ_INT(seen.end, STREAM_END_LOCAL);
		}
		stream_free(s);
		struct eof_watch e = { .fd = c };
		struct loop_fd *h = loop_fd_add(c, POLLIN, on_server_fd, &e);
		uint64_t until = loop_now() + 5000;
		while (!e.eof && loop_now() < until)
			loop_once(100);
		loop_fd_remove(h);
		close(c);
		T_CHECK(e.eof);
		if (!e.eof)
			break;
	}
	loop_fini();
	close(lfd);
}

/* Exit while a connect thread is in the handshake: ws.c's exit handler cancels and joins it, so the client's
 * socket is closed before the process is gone (checked from an exit handler registered before ws.c's, which
 * runs after it) and nothing of libcurl's or OpenSSL's is torn down under a running thread. Runs in a child
 * that has not touched ws.c before, so the order of the exit handlers is known. */
static int exit_conn = -1;

static void check_conn_closed_at_exit(void)
{
	if (!peer_closed(exit_conn, 5000))
		_exit(3);
}

static void test_exit_mid_connect(bool free_first)
{
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		atexit(check_conn_closed_at_exit);
		int port;
		int lfd = silent_listener(&port);
		loop_init();
		struct stream *s = open_stalled(port);
		exit_conn = accept_hello(lfd);
		if (exit_conn < 0)
			_exit(2);
		if (free_first)
			stream_free(s);
		loop_fini();
		exit(0);
	}
	int st = 0;
	T_CHECK(pid > 0 && waitpid(pid, &st, 0) == pid);
	T_CHECK(WIFEXITED(st));
	T_EQ_INT(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st), 0);
}

int main(void)
{
	/* first: the children must not inherit an exit handler of ws.c registered by this process */
	test_exit_mid_connect(false);
	test_exit_mid_connect(true);
	test_close_mid_connect();

	char acc[40];
	ws_accept_for_key(KEY, acc, sizeof acc);
	T_EQ_STR(acc, ACCEPT);

	struct ws_response r;
	const char *err;
	const char *ok = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: WebSocket\r\nConnection: keep-alive, Upgrade\r\n"
			 "Sec-WebSocket-Accept: " ACCEPT "\r\nSec-WebSocket-Protocol: plain.kubevirt.io\r\n\r\n\x82\x01x";
	T_EQ_INT(parse(ok, "plain.kubevirt.io", &r, &err), 1);
	T_EQ_INT(r.status, 101);
	T_EQ_INT(r.head_len, strlen(ok) - 3); /* the frame after the head is not part of it */
	/* every prefix of the head is "need more" */
	size_t hl = strlen(ok) - 3;
	int early = 0;
	for (size_t n = 0; n + 1 < hl; n++)
		early += ws_parse_response(ok, n, KEY, "plain.kubevirt.io", &r, &err) != 0;
	T_EQ_INT(early, 0);

	static const struct {
		const char *head, *proto, *err;
	} bad[] = {
		{ "HTTP/1.1 101 X\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " ACCEPT "\r\n\r\n", NULL, "Upgrade" },
		{ "HTTP/1.1 101 X\r\nUpgrade: websocket\r\nSec-WebSocket-Accept: " ACCEPT "\r\n\r\n", NULL, "Connection" },
		{ "HTTP/1.1 101 X\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: x\r\n\r\n", NULL,
		  "Accept" },
		{ "HTTP/1.1 101 X\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n", NULL, "Accept" },
		{ "HTTP/1.1 101 X\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " ACCEPT
		  "\r\nSec-WebSocket-Extensions: permessage-deflate\r\n\r\n",
		  NULL, "extension" },
		{ "HTTP/1.1 101 X\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " ACCEPT
		  "\r\nSec-WebSocket-Protocol: binary\r\n\r\n",
		  "plain.kubevirt.io", "subprotocol" },
		{ "HTTP/1.1 101 X\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " ACCEPT
		  "\r\nSec-WebSocket-Protocol: binary\r\n\r\n",
		  NULL, "subprotocol" },
		{ "SSH-2.0-OpenSSH\r\n\r\n", NULL, "HTTP" },
		{ "HTTP/2 101\r\n\r\n", NULL, "HTTP" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		int rc = parse(bad[i].head, bad[i].proto, &r, &err);
		T_EQ_INT(rc, -1);
		T_CHECK(err && strstr(err, bad[i].err));
	}
	/* no subprotocol in the answer is accepted (RFC 6455 4.1 only forbids one that was not offered) */
	T_EQ_INT(parse("HTTP/1.1 101 X\r\nupgrade: websocket\r\nconnection: upgrade\r\nsec-websocket-accept: " ACCEPT
		       "\r\n\r\n",
		       "plain.kubevirt.io", &r, &err),
		 1);
	/* refusals: the status and the body length */
	T_EQ_INT(parse("HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: 42\r\n\r\n{", NULL,
		       &r, &err),
		 1);
	T_EQ_INT(r.status, 400);
	T_EQ_INT(r.content_length, 42);
	T_EQ_INT(parse("HTTP/1.0 403 Forbidden\r\n\r\n", NULL, &r, &err), 1);
	T_EQ_INT(r.status, 403);
	T_CHECK(r.content_length == UINT64_MAX);
	/* a head that never ends */
	static char big[70000];
	memset(big, 'a', sizeof big);
	T_EQ_INT(ws_parse_response(big, sizeof big, KEY, NULL, &r, &err), -1);
	/* a NUL inside the head */
	T_EQ_INT(ws_parse_response("HTTP/1.1 101 X\r\nA: \0b\r\n\r\n", 25, KEY, NULL, &r, &err), -1);
	return T_DONE();
}
