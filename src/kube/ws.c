/* WebSocket client stream: libcurl connects (CONNECT_ONLY, on a helper thread), then the Upgrade handshake,
 * frames, ping/pong and the close handshake run on the loop with curl_easy_send/curl_easy_recv. */
#include "kube/ws.h"

#include <ctype.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <json-c/json.h>

#include "core/buf.h"
#include "core/fatal.h"
#include "core/log.h"
#include "core/loop.h"
#include "core/util.h"
#include "core/xmalloc.h"
#include "kube/wsframe.h"

#define WS_GUID "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
#define WS_MAX_RESPONSE_HEAD 65536
#define WS_CLOSE_WAIT_MS 2000
#define WS_CONNECT_SOCKS 4 /* sockets curl may hold open at once while connecting (happy eyeballs) */

enum ws_phase { WS_CONNECTING, WS_HANDSHAKE, WS_REFUSED_BODY, WS_OPEN, WS_CLOSING, WS_DONE };

struct ws {
	struct stream *s;
	CURL *easy;
	char *url;  /* http(s) form */
	char *host; /* Host header value */
	char *path; /* request target */
	char *subprotocol;
	char *bearer;
	char key[32];
	long timeout_ms, keepalive_ms;
	enum ws_phase phase;
	CURLcode connect_rc;
	char curl_err[CURL_ERROR_SIZE];
	curl_socket_t sock;
	struct loop_fd *fdh;
	struct loop_timer *timer;      /* handshake timeout, close wait */
	struct loop_timer *keepalive;
	struct wsframe_parser parser;
	struct buf in;  /* handshake bytes, then the refused body */
	struct buf out; /* bytes to send (request, frames) */
	struct buf early; /* frames written before the upgrade completed */
	struct buf extra; /* extra request header lines */
	bool paused;
	bool close_sent;
	bool reading; /* in ws_read: a send that fails leaves the end to what is read */
	int http_status;
	size_t body_want; /* refused: Content-Length, or SIZE_MAX until EOF */
	/* the connect thread: it holds a stream reference, so w outlives it; closing cancels it (the flag, and
	 * shutdown() on its sockets wakes a wait in connect, TLS or the proxy's CONNECT); whoever clears joinable
	 * (on_connected on the loop, or ws_atexit) joins it. socks, joinable and the list link: under conn_lock. */
	pthread_t thread;
	bool joinable;
	atomic_bool cancelled;
	curl_socket_t socks[WS_CONNECT_SOCKS];
	struct ws *next_connecting;
};

/* Connect threads not joined yet, for ws_atexit: process exit cancels and joins them before libcurl's and
 * OpenSSL's own exit handlers free state a thread in the handshake still uses. */
static pthread_mutex_t conn_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ws *connecting;

/* ---- SHA-1 (FIPS 180-1) and base64, only for Sec-WebSocket-Accept ---- */

static uint32_t rol(uint32_t v, int n)
{
	return v << n | v >> (32 - n);
}

static void sha1_block(uint32_t h[5], const uint8_t *p)
{
	uint32_t w[80];
	for (int i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
	for (int i = 16; i < 80; i++)
		w[i] = rol(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
	uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
	for (int i = 0; i < 80; i++) {
		uint32_t f, k;
		if (i < 20)
			f = (b & c) | (~b & d), k = 0x5a827999;
		else if (i < 40)
			f = b ^ c ^ d, k = 0x6ed9eba1;
		else if (i < 60)
			f = (b & c) | (b & d) | (c & d), k = 0x8f1bbcdc;
		else
			f = b ^ c ^ d, k = 0xca62c1d6;
		uint32_t t = rol(a, 5) + f + e + k + w[i];
		e = d;
		d = c;
		c = rol(b, 30);
		b = a;
		a = t;
	}
	h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e;
}

static void sha1(const uint8_t *msg, size_t len, uint8_t out[20])
{
	uint32_t h[5] = { 0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476, 0xc3d2e1f0 };
	size_t i = 0;
	for (; i + 64 <= len; i += 64)
		sha1_block(h, msg + i);
	uint8_t tail[128] = { 0 };
	size_t rest = len - i;
	memcpy(tail, msg + i, rest);
	tail[rest] = 0x80;
	size_t tlen = rest + 1 + 8 <= 64 ? 64 : 128;
	uint64_t bits = (uint64_t)len * 8;
	for (int k = 0; k < 8; k++)
		tail[tlen - 1 - k] = (uint8_t)(bits >> (8 * k));
	sha1_block(h, tail);
	if (tlen == 128)
		sha1_block(h, tail + 64);
	for (int k = 0; k < 5; k++) {
		out[4 * k] = (uint8_t)(h[k] >> 24);
		out[4 * k + 1] = (uint8_t)(h[k] >> 16);
		out[4 * k + 2] = (uint8_t)(h[k] >> 8);
		out[4 * k + 3] = (uint8_t)h[k];
	}
}

void ws_accept_for_key(const char *key, char *out, size_t outlen)
{
	char cat[128];
	snprintf(cat, sizeof cat, "%s%s", key, WS_GUID);
	uint8_t dig[20];
	sha1((const uint8_t *)cat, strlen(cat), dig);
	char *b = util_b64_encode(dig, sizeof dig);
	snprintf(out, outlen, "%s", b);
	free(b);
}

static void random_bytes(uint8_t *p, size_t n)
{
	size_t got = 0;
	while (got < n) {
		ssize_t r = getrandom(p + got, n - got, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			fatal("getrandom: %s", strerror(errno));
		got += (size_t)r;
	}
}

/* ---- finishing ---- */

static void ws_teardown_io(struct ws *w)
{
	loop_fd_remove(w->fdh);
	w->fdh = NULL;
	loop_timer_cancel(w->timer);
	w->timer = NULL;
	loop_timer_cancel(w->keepalive);
	w->keepalive = NULL;
	w->phase = WS_DONE;
}

static void ws_finish(struct ws *w, enum stream_end end, int status, const char *reason)
{
	ws_teardown_io(w);
	if (end == STREAM_END_ERROR || end == STREAM_END_REFUSED)
		log_info("websocket %s: %s %d %s", stream_name(w->s), stream_end_name(end), status, reason ? reason : "");
	stream_emit_closed(w->s, end, status, reason);
}

static void ws_update_events(struct ws *w)
{
	if (!w->fdh)
		return;
	short ev = 0;
	if (!w->paused || w->phase != WS_OPEN)
		ev |= POLLIN;
	if (w->out.len)
		ev |= POLLOUT;
	loop_fd_set_events(w->fdh, ev);
}

static void ws_read(struct ws *w);

/* Sends what can be sent now. Returns -1 after finishing the stream on an error. A send fails when the peer has
 * closed, and a peer that closes has usually said why first (a close frame with the reason, such as the dial error
 * of a port-forward): what it sent is read before the stream ends, so that its words, not "Failed sending data to
 * the peer", are the end's reason, however the two ends' timing falls. */
static int ws_flush(struct ws *w)
{
	while (w->out.len) {
		size_t n = 0;
		CURLcode rc = curl_easy_send(w->easy, w->out.data, w->out.len, &n);
		if (rc == CURLE_AGAIN)
			break;
		if (rc != CURLE_OK) {
			buf_consume(&w->out, w->out.len);
			if (w->reading) /* the read under way ends the stream with what it reads */
				return -1;
			struct stream *st = w->s; /* a consumer's callback may drop its reference while we read */
			stream_ref(st);
			ws_read(w);
			if (w->phase != WS_DONE)
				ws_finish(w, STREAM_END_ERROR, 0, curl_easy_strerror(rc));
			stream_unref(st);
			return -1;
		}
		buf_consume(&w->out, n);
	}
	ws_update_events(w);
	return 0;
}

static void ws_queue_frame(struct ws *w, int opcode, const void *data, size_t len)
{
	uint8_t mask[4];
	random_bytes(mask, sizeof mask);
	wsframe_encode(&w->out, opcode, true, mask, data, len);
}

static void ws_queue_close(struct ws *w, int code, const char *reason)
{
	if (w->close_sent)
		return;
	uint8_t mask[4];
	random_bytes(mask, sizeof mask);
	wsframe_encode_close(&w->out, mask, code, reason);
	w->close_sent = true;
}

/* ---- open phase ---- */

struct frame_ctx {
	struct ws *w;
	bool stop;
};

static int on_frame(void *arg, const struct wsframe_event *ev)
{
	struct frame_ctx *c = arg;
	struct ws *w = c->w;
	switch (ev->type) {
	case WSFRAME_DATA:
		if (w->phase == WS_OPEN && ev->len)
			stream_emit_data(w->s, ev->data, ev->len);
		break;
	case WSFRAME_PING:
		if (!w->close_sent)
			ws_queue_frame(w, WS_OP_PONG, ev->data, ev->len);
		break;
	case WSFRAME_PONG:
		break;
	case WSFRAME_CLOSE: {
		char reason[160];
		snprintf(reason, sizeof reason, "%.*s", (int)ev->len, (const char *)ev->data);
		char *esc = util_escape_display(reason);
		if (w->phase == WS_CLOSING) {
			ws_finish(w, STREAM_END_LOCAL, ev->close_code, esc);
		} else {
			/* echo the code back, then end (RFC 6455 5.5.1) */
			ws_queue_close(w, ev->close_code == WS_CLOSE_NO_STATUS ? 0 : ev->close_code, NULL);
			ws_flush(w);
			ws_finish(w, ev->close_code == WS_CLOSE_NORMAL || ev->close_code == WS_CLOSE_NO_STATUS ||
					     ev->close_code == WS_CLOSE_GOING_AWAY
				     ? STREAM_END_REMOTE
				     : STREAM_END_ERROR,
				  ev->close_code, esc[0] ? esc : "closed by the server");
		}
		free(esc);
		c->stop = true;
		return 1;
	}
	}
	/* the consumer may have closed or freed the stream inside its data callback */
	if (w->phase == WS_DONE || stream_state(w->s) == STREAM_CLOSED) {
		c->stop = true;
		return 1;
	}
	return 0;
}

static void ws_feed(struct ws *w, const uint8_t *d, size_t n)
{
	struct frame_ctx c = { .w = w };
	long r = wsframe_feed(&w->parser, d, n, on_frame, &c);
	if (r < 0 && w->phase != WS_DONE) {
		ws_queue_close(w, w->parser.err_code, w->parser.err);
		ws_flush(w);
		if (w->phase != WS_DONE)
			ws_finish(w, STREAM_END_ERROR, w->parser.err_code, w->parser.err);
	}
}

static void on_keepalive(void *arg)
{
	struct ws *w = arg;
	w->keepalive = NULL;
	if (w->phase != WS_OPEN)
		return;
	ws_queue_frame(w, WS_OP_PING, "kvcon", 5);
	if (ws_flush(w) == 0)
		w->keepalive = loop_timer_add((uint64_t)w->keepalive_ms, on_keepalive, w);
}

/* ---- handshake ---- */

static const char *header_value(const char *head, const char *name, char *out, size_t outlen)
{
	size_t nl = strlen(name);
	const char *p = strstr(head, "\r\n");
	while (p && p[2] != '\r') {
		const char *line = p + 2;
		const char *eol = strstr(line, "\r\n");
		if (!eol)
			break;
		if ((size_t)(eol - line) > nl && strncasecmp(line, name, nl) == 0 && line[nl] == ':') {
			const char *v = line + nl + 1;
			while (v < eol && (*v == ' ' || *v == '\t'))
				v++;
			const char *e = eol;
			while (e > v && (e[-1] == ' ' || e[-1] == '\t'))
				e--;
			snprintf(out, outlen, "%.*s", (int)(e - v), v);
			return out;
		}
		p = eol;
	}
	return NULL;
}

/* True when the comma-separated header value contains token (case-insensitive). */
static bool has_token(const char *value, const char *token)
{
	size_t tl = strlen(token);
	const char *p = value;
	while (*p) {
		while (*p == ' ' || *p == ',' || *p == '\t')
			p++;
		const char *e = p;
		while (*e && *e != ',')
			e++;
		const char *t = e;
		while (t > p && (t[-1] == ' ' || t[-1] == '\t'))
			t--;
		if ((size_t)(t - p) == tl && strncasecmp(p, token, tl) == 0)
			return true;
		p = e;
	}
	return false;
}

static void ws_refused(struct ws *w)
{
	/* the server's own message, escaped and shortened (the API's Status JSON or a plain line) */
	char body[4096];
	size_t n = w->in.len < sizeof body - 1 ? w->in.len : sizeof body - 1;
	memcpy(body, w->in.data ? w->in.data : "", n);
	body[n] = '\0';
	while (n && (body[n - 1] == '\n' || body[n - 1] == '\r'))
		body[--n] = '\0';
	/* the API answers with a Status object: show its message */
	json_object *j = json_tokener_parse(body);
	json_object *m = NULL;
	if (j && json_object_is_type(j, json_type_object) && json_object_object_get_ex(j, "message", &m) &&
	    json_object_is_type(m, json_type_string))
		snprintf(body, sizeof body, "%s", json_object_get_string(m));
	else
		body[160] = '\0'; /* an HTML error page: its start is enough */
	json_object_put(j);
	char *esc = util_escape_display(body);
	ws_finish(w, STREAM_END_REFUSED, w->http_status, esc[0] ? esc : "upgrade refused");
	free(esc);
}

/* Parses the response head in w->in once complete. */
int ws_parse_response(const char *data, size_t len, const char *key, const char *subprotocol, struct ws_response *r,
		      const char **err)
{
	*err = NULL;
	r->status = 0;
	r->head_len = 0;
	r->content_length = UINT64_MAX;
	const char *end = memmem(data, len, "\r\n\r\n", 4);
	if (!end) {
		if (len > WS_MAX_RESPONSE_HEAD) {
			*err = "response head too large";
			return -1;
		}
		return 0;
	}
	r->head_len = (size_t)(end - data) + 4;
	r->content_length = UINT64_MAX;
	/* the head as a string (up to and including the last header line's CRLF) */
	char *head = xstrndup(data, r->head_len - 2);
	int rc = -1;
	int major = 0, minor = 0, status = 0;
	if (strlen(head) != r->head_len - 2) {
		*err = "NUL byte in the response head";
		goto out;
	}
	if (sscanf(head, "HTTP/%d.%d %d", &major, &minor, &status) != 3 || major != 1 || status < 100 || status > 999) {
		*err = "not an HTTP/1.x response";
		goto out;
	}
	r->status = status;
	char v[256];
	if (status != 101) {
		if (header_value(head, "Content-Length", v, sizeof v)) {
			char *e;
			unsigned long long cl = strtoull(v, &e, 10);
			if (*e == '\0' && v[0] >= '0' && v[0] <= '9')
				r->content_length = cl;
		}
		rc = 1;
		goto out;
	}
	char want[40];
	ws_accept_for_key(key, want, sizeof want);
	if (!header_value(head, "Upgrade", v, sizeof v) || !has_token(v, "websocket"))
		*err = "101 without Upgrade: websocket";
	else if (!header_value(head, "Connection", v, sizeof v) || !has_token(v, "upgrade"))
		*err = "101 without Connection: Upgrade";
	else if (!header_value(head, "Sec-WebSocket-Accept", v, sizeof v) || strcmp(v, want) != 0)
		*err = "wrong Sec-WebSocket-Accept";
	else if (header_value(head, "Sec-WebSocket-Extensions", v, sizeof v))
		*err = "server chose an extension kvcon did not offer";
	else if (header_value(head, "Sec-WebSocket-Protocol", v, sizeof v) && (!subprotocol || strcmp(v, subprotocol) != 0))
		*err = "server chose a subprotocol kvcon did not offer";
	else
		rc = 1;
out:
	free(head);
	return rc;
}

/* Parses the response head in w->in once complete. */
static void ws_handshake_input(struct ws *w)
{
	struct ws_response r;
	const char *err;
	int rc = ws_parse_response(w->in.data, w->in.len, w->key, w->subprotocol, &r, &err);
	if (rc == 0)
		return;
	if (rc < 0) {
		ws_finish(w, STREAM_END_ERROR, r.status == 101 ? 101 : 0, err);
		return;
	}
	size_t head_len = r.head_len;
	w->http_status = r.status;
	if (r.status != 101) {
		w->body_want = r.content_length > SIZE_MAX ? SIZE_MAX : (size_t)r.content_length;
		buf_consume(&w->in, head_len);
		w->phase = WS_REFUSED_BODY;
		if (w->in.len >= w->body_want)
			ws_refused(w);
		return;
	}
	buf_consume(&w->in, head_len);
	loop_timer_cancel(w->timer);
	w->timer = NULL;
	w->phase = WS_OPEN;
	stream_emit_open(w->s);
	if (w->phase != WS_OPEN)
		return;
	if (w->early.len) {
		buf_add(&w->out, w->early.data, w->early.len);
		buf_free(&w->early);
	}
	if (w->keepalive_ms > 0)
		w->keepalive = loop_timer_add((uint64_t)w->keepalive_ms, on_keepalive, w);
	if (w->in.len) {
		struct buf rest = w->in;
		buf_init(&w->in);
		ws_feed(w, (const uint8_t *)rest.data, rest.len);
		buf_free(&rest);
	}
	ws_update_events(w);
}

static void ws_read_some(struct ws *w)
{
	uint8_t b[65536];
	for (int i = 0; i < 64 && w->phase != WS_DONE && !(w->paused && w->phase == WS_OPEN); i++) {
		size_t n = 0;
		CURLcode rc = curl_easy_recv(w->easy, b, sizeof b, &n);
		if (rc == CURLE_AGAIN)
			return;
		if (rc != CURLE_OK) {
			ws_finish(w, STREAM_END_ERROR, 1006, curl_easy_strerror(rc));
			return;
		}
		if (n == 0) {
			if (w->phase == WS_REFUSED_BODY)
				ws_refused(w);
			else if (w->phase == WS_CLOSING)
				ws_finish(w, STREAM_END_LOCAL, 0, NULL);
			else
				ws_finish(w, STREAM_END_ERROR, 1006, "connection closed without a close frame");
			return;
		}
		if (w->phase == WS_HANDSHAKE) {
			buf_add(&w->in, b, n);
			ws_handshake_input(w);
		} else if (w->phase == WS_REFUSED_BODY) {
			buf_add(&w->in, b, n);
			if (w->in.len >= w->body_want)
				ws_refused(w);
		} else {
			ws_feed(w, b, n);
		}
	}
}

static void ws_read(struct ws *w)
{
	bool outer = !w->reading;
	w->reading = true;
	ws_read_some(w);
	if (outer)
		w->reading = false;
}

static void on_sock(int fd, short revents, void *arg)
{
	(void)fd;
	struct ws *w = arg;
	struct stream *s = w->s;
	stream_ref(s);
	if ((revents & POLLOUT) && w->phase != WS_DONE)
		ws_flush(w);
	if ((revents & (POLLIN | POLLHUP | POLLERR)) && w->phase != WS_DONE)
		ws_read(w);
	if (w->phase != WS_DONE)
		ws_update_events(w);
	stream_unref(s);
}

static void on_timeout(void *arg)
{
	struct ws *w = arg;
	w->timer = NULL;
	stream_ref(w->s);
	if (w->phase == WS_CLOSING)
		ws_finish(w, STREAM_END_LOCAL, 0, "no close answer from the server");
	else if (w->phase == WS_HANDSHAKE || w->phase == WS_REFUSED_BODY)
		ws_finish(w, STREAM_END_ERROR, 0, "timed out waiting for the WebSocket upgrade");
	stream_unref(w->s);
}

/* ---- the connect thread ---- */

/* Takes w off the list of connect threads; true when the caller is the one to join it. */
static bool ws_claim_join(struct ws *w)
{
	pthread_mutex_lock(&conn_lock);
	bool mine = w->joinable;
	if (mine) {
		struct ws **pp = &connecting;
		while (*pp != w)
			pp = &(*pp)->next_connecting;
		*pp = w->next_connecting;
		w->joinable = false;
	}
	pthread_mutex_unlock(&conn_lock);
	return mine;
}

/* conn_lock held. Makes curl_easy_perform return soon: no new socket, the open ones shut down. */
static void ws_cancel_locked(struct ws *w)
{
	atomic_store(&w->cancelled, true);
	for (int i = 0; i < WS_CONNECT_SOCKS; i++)
		if (w->socks[i] != CURL_SOCKET_BAD)
			shutdown(w->socks[i], SHUT_RDWR);
}

static void ws_cancel_connect(struct ws *w)
{
	pthread_mutex_lock(&conn_lock);
	if (w->joinable)
		ws_cancel_locked(w);
	pthread_mutex_unlock(&conn_lock);
}

static void ws_atexit(void)
{
	pthread_mutex_lock(&conn_lock);
	struct ws *list = connecting;
	connecting = NULL;
	for (struct ws *w = list; w; w = w->next_connecting) {
		w->joinable = false;
		ws_cancel_locked(w);
	}
	pthread_mutex_unlock(&conn_lock);
	for (struct ws *w = list; w; w = w->next_connecting)
		pthread_join(w->thread, NULL);
}

/* CURLOPT_OPENSOCKETFUNCTION: the socket curl connects, recorded under the lock so a cancel never misses it. */
static curl_socket_t ws_open_socket(void *arg, curlsocktype purpose, struct curl_sockaddr *a)
{
	(void)purpose;
	struct ws *w = arg;
	curl_socket_t fd = CURL_SOCKET_BAD;
	pthread_mutex_lock(&conn_lock);
	if (!atomic_load(&w->cancelled)) {
		fd = socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
		for (int i = 0; fd >= 0 && i < WS_CONNECT_SOCKS; i++)
			if (w->socks[i] == CURL_SOCKET_BAD) {
				w->socks[i] = fd;
				break;
			}
	}
	pthread_mutex_unlock(&conn_lock);
	return fd < 0 ? CURL_SOCKET_BAD : fd;
}

static int ws_close_socket(void *arg, curl_socket_t fd)
{
	struct ws *w = arg;
	pthread_mutex_lock(&conn_lock);
	for (int i = 0; i < WS_CONNECT_SOCKS; i++)
		if (w->socks[i] == fd)
			w->socks[i] = CURL_SOCKET_BAD;
	pthread_mutex_unlock(&conn_lock);
	return close(fd);
}

/* CURLOPT_XFERINFOFUNCTION: a cancel between sockets (the proxy's CONNECT answer, TLS) aborts too. */
static int ws_progress(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	(void)dt, (void)dn, (void)ut, (void)un;
	struct ws *w = arg;
	return atomic_load(&w->cancelled) ? 1 : 0;
}

/* Back on the loop thread after curl connected (or failed). */
static void on_connected(void *arg)
{
	struct ws *w = arg;
	struct stream *s = w->s;
	if (ws_claim_join(w))
		pthread_join(w->thread, NULL);
	if (stream_detached(s) || stream_state(s) == STREAM_CLOSED || atomic_load(&w->cancelled)) {
		stream_unref(s); /* the thread's reference */
		return;
	}
	if (w->connect_rc != CURLE_OK) {
		ws_finish(w, STREAM_END_ERROR, 0, w->curl_err[0] ? w->curl_err : curl_easy_strerror(w->connect_rc));
		stream_unref(s);
		return;
	}
	curl_socket_t sock = CURL_SOCKET_BAD;
	if (curl_easy_getinfo(w->easy, CURLINFO_ACTIVESOCKET, &sock) != CURLE_OK || sock == CURL_SOCKET_BAD) {
		ws_finish(w, STREAM_END_ERROR, 0, "no socket after connect");
		stream_unref(s);
		return;
	}
	w->sock = sock;
	w->phase = WS_HANDSHAKE;
	buf_printf(&w->out,
		   "GET %s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
		   "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\nUser-Agent: kvcon\r\n",
		   w->path, w->host, w->key);
	if (w->subprotocol)
		buf_printf(&w->out, "Sec-WebSocket-Protocol: %s\r\n", w->subprotocol);
	if (w->bearer)
		buf_printf(&w->out, "Authorization: Bearer %s\r\n", w->bearer);
	if (w->extra.len)
		buf_add(&w->out, w->extra.data, w->extra.len);
	buf_add_str(&w->out, "\r\n");
	w->fdh = loop_fd_add(sock, POLLIN | POLLOUT, on_sock, w);
	w->timer = loop_timer_add((uint64_t)w->timeout_ms, on_timeout, w);
	ws_flush(w);
	stream_unref(s);
}

static void *connect_thread(void *arg)
{
	struct ws *w = arg;
	w->connect_rc = curl_easy_perform(w->easy);
	loop_post(on_connected, w);
	return NULL;
}

/* ---- stream ops ---- */

static int ws_write(struct stream *s, const uint8_t *data, size_t len)
{
	struct ws *w = stream_impl(s);
	if (w->phase == WS_DONE || w->phase == WS_CLOSING || w->close_sent)
		return -1;
	if (w->phase != WS_OPEN) {
		/* kept until the upgrade is in, so nothing goes out before the request */
		uint8_t mask[4];
		random_bytes(mask, sizeof mask);
		wsframe_encode(&w->early, WS_OP_BINARY, true, mask, data, len);
		return 0;
	}
	ws_queue_frame(w, WS_OP_BINARY, data, len);
	ws_flush(w);
	return 0;
}

static void ws_close(struct stream *s)
{
	struct ws *w = stream_impl(s);
	if (w->phase == WS_CONNECTING)
		ws_cancel_connect(w);
	if (w->phase == WS_OPEN && !stream_detached(s)) {
		ws_queue_close(w, WS_CLOSE_NORMAL, NULL);
		w->phase = WS_CLOSING;
		loop_timer_cancel(w->timer);
		w->timer = loop_timer_add(WS_CLOSE_WAIT_MS, on_timeout, w);
		ws_flush(w);
		return;
	}
	if (w->phase == WS_OPEN) {
		/* the consumer is gone: a best-effort close frame, no waiting */
		ws_queue_close(w, WS_CLOSE_GOING_AWAY, NULL);
		if (w->out.len) {
			size_t n = 0;
			curl_easy_send(w->easy, w->out.data, w->out.len, &n);
		}
	}
	if (w->phase != WS_DONE && w->phase != WS_CLOSING)
		ws_finish(w, STREAM_END_LOCAL, 0, NULL);
}

static void ws_destroy(struct stream *s)
{
	struct ws *w = stream_impl(s);
	ws_teardown_io(w);
	if (w->easy)
		curl_easy_cleanup(w->easy);
	buf_free(&w->in);
	buf_free(&w->out);
	buf_free(&w->early);
	buf_free(&w->extra);
	free(w->url);
	free(w->host);
	free(w->path);
	free(w->subprotocol);
	if (w->bearer) {
		memset(w->bearer, 0, strlen(w->bearer));
		free(w->bearer);
	}
	free(w);
}

static size_t ws_pending(const struct stream *s)
{
	const struct ws *w = stream_impl(s);
	return w->out.len + w->early.len;
}

static void ws_pause(struct stream *s, bool paused)
{
	struct ws *w = stream_impl(s);
	w->paused = paused;
	ws_update_events(w);
	/* resuming: TLS may hold decrypted bytes poll() cannot see */
	if (!paused && w->phase == WS_OPEN)
		ws_read(w);
}

static const struct stream_ops ws_ops = {
	.type = "websocket",
	.write = ws_write,
	.close = ws_close,
	.destroy = ws_destroy,
	.pending = ws_pending,
	.pause = ws_pause,
};

/* Splits the URL into the curl connect URL (http/https), the Host header and the request target. */
static int ws_parse_url(struct ws *w, const char *url)
{
	int rc = -1;
	CURLU *u = curl_url();
	char *scheme = NULL, *host = NULL, *port = NULL, *path = NULL, *query = NULL;
	const char *in = url;
	char *fixed = NULL;
	if (strncasecmp(url, "ws://", 5) == 0)
		in = fixed = xasprintf("http://%s", url + 5);
	else if (strncasecmp(url, "wss://", 6) == 0)
		in = fixed = xasprintf("https://%s", url + 6);
	if (curl_url_set(u, CURLUPART_URL, in, 0) != CURLUE_OK)
		goto out;
	if (curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK)
		goto out;
	curl_url_get(u, CURLUPART_PORT, &port, 0);
	curl_url_get(u, CURLUPART_PATH, &path, 0);
	curl_url_get(u, CURLUPART_QUERY, &query, 0);
	w->url = xstrdup(in);
	w->host = port ? xasprintf("%s:%s", host, port) : xstrdup(host);
	w->path = query ? xasprintf("%s?%s", path ? path : "/", query) : xstrdup(path ? path : "/");
	rc = 0;
out:
	curl_free(scheme);
	curl_free(host);
	curl_free(port);
	curl_free(path);
	curl_free(query);
	curl_url_cleanup(u);
	free(fixed);
	return rc;
}

static void on_bad_url(void *arg)
{
	struct ws *w = arg;
	w->timer = NULL;
	ws_finish(w, STREAM_END_ERROR, 0, "invalid URL");
}

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static void curl_init_once(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
	/* after curl_global_init, which registers OpenSSL's exit handler: ours runs first */
	atexit(ws_atexit);
}

struct stream *ws_new(const char *name)
{
	pthread_once(&curl_once, curl_init_once);
	struct ws *w = xcalloc(1, sizeof *w);
	buf_init(&w->in);
	buf_init(&w->out);
	buf_init(&w->early);
	buf_init(&w->extra);
	w->sock = CURL_SOCKET_BAD;
	for (int i = 0; i < WS_CONNECT_SOCKS; i++)
		w->socks[i] = CURL_SOCKET_BAD;
	atomic_init(&w->cancelled, false);
	w->timeout_ms = 15000;
	wsframe_parser_init(&w->parser, WSFRAME_CLIENT);
	w->s = stream_new(&ws_ops, w, name ? name : "websocket");
	return w->s;
}

void ws_fail(struct stream *s, const char *reason)
{
	struct ws *w = stream_impl(s);
	if (w->phase != WS_DONE && stream_state(s) != STREAM_CLOSED)
		ws_finish(w, STREAM_END_ERROR, 0, reason);
}

void ws_start(struct stream *s, const struct ws_config *cfg, CURL *easy)
{
	struct ws *w = stream_impl(s);
	if (w->phase != WS_CONNECTING || w->easy || stream_state(s) == STREAM_CLOSED) {
		if (easy)
			curl_easy_cleanup(easy);
		return;
	}
	w->easy = easy ? easy : curl_easy_init();
	w->subprotocol = xstrdup0(cfg->subprotocol);
	w->bearer = xstrdup0(cfg->bearer);
	if (cfg->connect_timeout_ms > 0)
		w->timeout_ms = cfg->connect_timeout_ms;
	w->keepalive_ms = cfg->keepalive_ms;
	if (cfg->max_frame)
		w->parser.max_frame = cfg->max_frame;
	if (cfg->max_message)
		w->parser.max_message = cfg->max_message;
	/* extra request headers (the kube client's Authorization); CR/LF inside one would split the request */
	for (const struct curl_slist *h = cfg->headers; h; h = h->next)
		if (h->data && !strpbrk(h->data, "\r\n") && strchr(h->data, ':'))
			buf_printf(&w->extra, "%s\r\n", h->data);
	uint8_t nonce[16];
	random_bytes(nonce, sizeof nonce);
	char *key = util_b64_encode(nonce, sizeof nonce);
	snprintf(w->key, sizeof w->key, "%s", key); /* 24 characters */
	free(key);
	if (ws_parse_url(w, cfg->url) < 0) {
		w->timer = loop_timer_add(0, on_bad_url, w);
		return;
	}
	curl_easy_setopt(w->easy, CURLOPT_URL, w->url);
	curl_easy_setopt(w->easy, CURLOPT_CONNECT_ONLY, 1L);
	curl_easy_setopt(w->easy, CURLOPT_HTTPPROXYTUNNEL, 1L);
	curl_easy_setopt(w->easy, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(w->easy, CURLOPT_CONNECTTIMEOUT_MS, w->timeout_ms);
	curl_easy_setopt(w->easy, CURLOPT_ERRORBUFFER, w->curl_err);
	curl_easy_setopt(w->easy, CURLOPT_OPENSOCKETFUNCTION, ws_open_socket);
	curl_easy_setopt(w->easy, CURLOPT_OPENSOCKETDATA, w);
	curl_easy_setopt(w->easy, CURLOPT_CLOSESOCKETFUNCTION, ws_close_socket);
	curl_easy_setopt(w->easy, CURLOPT_CLOSESOCKETDATA, w);
	curl_easy_setopt(w->easy, CURLOPT_XFERINFOFUNCTION, ws_progress);
	curl_easy_setopt(w->easy, CURLOPT_XFERINFODATA, w);
	curl_easy_setopt(w->easy, CURLOPT_NOPROGRESS, 0L);
	stream_ref(w->s); /* the connect thread's */
	pthread_mutex_lock(&conn_lock);
	int rc = pthread_create(&w->thread, NULL, connect_thread, w);
	if (rc == 0) {
		w->joinable = true;
		w->next_connecting = connecting;
		connecting = w;
	}
	pthread_mutex_unlock(&conn_lock);
	if (rc != 0)
		fatal("pthread_create: %s", strerror(rc));
}

struct stream *ws_open(const struct ws_config *cfg, CURL *easy, const char *name)
{
	struct stream *s = ws_new(name ? name : cfg->url);
	ws_start(s, cfg, easy);
	return s;
}
