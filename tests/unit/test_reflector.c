/* The watch path without a network: the stream splitter (values across arbitrary chunk boundaries, malformed and
 * oversized input), watch events applied to the store (ADDED/MODIFIED/DELETED/BOOKMARK/ERROR 410), the API
 * Status message extraction, and URL building with tls-server-name. Over a loopback socket: a streamed body is
 * handed to its chunk callback within the decoding budget of a loop pass, whatever the server's speed; a batched
 * stream's socket is not read again before its batch time, unless a request that is not batched starts. */
#include <arpa/inet.h>
#include <json.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "core/loop.h"
#include "core/xmalloc.h"
#include "kube/http.h"
#include "kube/jstream.h"
#include "kube/jv.h"
#include "kube/kubeconfig.h"
#include "kube/reflector.h"
#include "model/store.h"
#include "t.h"

struct collect {
	int n;
	char names[8][32];
};

static bool on_value(void *arg, struct jv *v)
{
	struct collect *c = arg;
	struct jv *n = jv_get(v, "n");
	if (c->n < 8 && jv_is(n, JV_STRING))
		snprintf(c->names[c->n], sizeof c->names[0], "%s", n->u.s);
	c->n++;
	return true;
}

static void test_jstream(void)
{
	const char stream[] = "{\"n\":\"a\",\"x\":[1,2,{\"y\":\"}\"}]}\n{\"n\":\"b\\\"q\"}\r\n  {\"n\":\"c\"}{\"n\":\"d\"}\n{\"n\":\"e\\\\\"}";
	size_t len = strlen(stream);
	/* every chunk size, so each value is split at every possible position */
	for (size_t chunk = 1; chunk <= len; chunk++) {
		struct kube_jstream *s = kube_jstream_new(1 << 20);
		struct collect c = { 0 };
		char *err = NULL;
		for (size_t off = 0; off < len; off += chunk) {
			size_t n = len - off < chunk ? len - off : chunk;
			T_EQ_INT(kube_jstream_feed(s, stream + off, n, on_value, &c, &err), 0);
		}
		T_EQ_INT(c.n, 5);
		T_EQ_STR(c.names[4], "e\\");
		T_EQ_STR(c.names[1], "b\"q");
		T_EQ_STR(c.names[3], "d");
		T_CHECK(!kube_jstream_partial(s));
		kube_jstream_free(s);
	}
	struct kube_jstream *s = kube_jstream_new(64);
	struct collect c = { 0 };
	char *err = NULL;
	T_EQ_INT(kube_jstream_feed(s, "{\"n\":\"half", 10, on_value, &c, &err), 0);
	T_CHECK(kube_jstream_partial(s));
	kube_jstream_reset(s);
	T_CHECK(!kube_jstream_partial(s));
	T_EQ_INT(kube_jstream_feed(s, "{\"n\":]}", 7, on_value, &c, &err), -1);
	T_CHECK(err && strstr(err, "malformed"));
	free(err);
	err = NULL;
	char big[200];
	memset(big, ' ', sizeof big);
	big[0] = '[';
	T_EQ_INT(kube_jstream_feed(s, big, sizeof big, on_value, &c, &err), -1);
	T_CHECK(err && strstr(err, "larger than"));
	free(err);
	kube_jstream_free(s);
}

static char *event(const char *type, const char *name, const char *uid, const char *rv)
{
	return xasprintf("{\"type\":\"%s\",\"object\":{\"apiVersion\":\"kubevirt.io/v1\",\"kind\":\"VirtualMachine\","
			 "\"metadata\":{\"name\":\"%s\",\"namespace\":\"ns\",\"uid\":\"%s\",\"resourceVersion\":\"%s\"},"
			 "\"spec\":{\"runStrategy\":\"Always\"},\"status\":{\"printableStatus\":\"%s\"}}}\n",
			 type, name, uid, rv, strcmp(type, "MODIFIED") == 0 ? "Stopped" : "Running");
}

static const char U1[] = "11111111-1111-4111-8111-111111111111";
static const char U2[] = "22222222-2222-4222-8222-222222222222";

static int feed(struct kube_reflector *r, char *ev)
{
	int rc = kube_reflector_feed(r, ev, strlen(ev));
	free(ev);
	return rc;
}

static void test_apply(void)
{
	struct source *src = source_new(SOURCE_KUBE, "test");
	struct store *st = store_new();
	struct kube_reflector_cfg cfg = { .st = st, .src = src, .kind = OBJ_VM };
	struct kube_reflector *r = kube_reflector_new(&cfg);
	T_EQ_INT(feed(r, event("ADDED", "a", U1, "10")), 0);
	T_EQ_INT(store_count(st, OBJ_VM), 1);
	T_EQ_INT(feed(r, event("MODIFIED", "a", U1, "11")), 0);
	struct vm *v = (struct vm *)store_get(st, src, OBJ_VM, U1);
	T_CHECK(v && strcmp(v->printable_status, "Stopped") == 0);
	/* recreated under a new UID: the name moves to the new object */
	T_EQ_INT(feed(r, event("ADDED", "a", U2, "12")), 0);
	T_EQ_INT(store_count(st, OBJ_VM), 1);
	T_CHECK(store_get(st, src, OBJ_VM, U2) != NULL);
	/* DELETED of an unknown UID still removes what holds the name */
	T_EQ_INT(feed(r, event("DELETED", "a", U1, "13")), 0);
	T_EQ_INT(store_count(st, OBJ_VM), 0);
	T_EQ_INT(feed(r, event("ADDED", "b", U1, "14")), 0);
	T_EQ_INT(feed(r, event("DELETED", "b", U1, "15")), 0);
	T_EQ_INT(store_count(st, OBJ_VM), 0);
	T_EQ_INT(kube_reflector_stats(r)->events, 6);
	const char bm[] = "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"VirtualMachine\",\"metadata\":{\"resourceVersion\":\"99\"}}}";
	T_EQ_INT(kube_reflector_feed(r, bm, strlen(bm)), 0);
	T_EQ_INT(store_count(st, OBJ_VM), 0);
	/* an object the decoder refuses is skipped, the stream goes on */
	const char bad[] = "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"x\"}}}\n";
	T_EQ_INT(kube_reflector_feed(r, bad, strlen(bad)), 0);
	T_EQ_INT(kube_reflector_stats(r)->skipped, 1);
	/* ERROR 410 asks for a relist: the rest of the chunk is not applied */
	struct json_object *e410 = json_tokener_parse("{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":410,"
						      "\"reason\":\"Expired\",\"message\":\"too old resource version\"}}");
	T_EQ_INT(kube_reflector_apply(r, e410), 1);
	json_object_put(e410);
	char *two = xasprintf("%s%s", "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":410}}\n",
			      "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"c\",\"namespace\":\"ns\",\"uid\":\"33333333-3333-4333-8333-333333333333\"}}}\n");
	T_EQ_INT(feed(r, two), 0);
	T_EQ_INT(store_count(st, OBJ_VM), 0);
	struct json_object *e500 = json_tokener_parse("{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":500,"
						      "\"message\":\"etcd \\u001b[2J down\"}}");
	T_EQ_INT(kube_reflector_apply(r, e500), -1);
	json_object_put(e500);
	struct json_object *odd = json_tokener_parse("{\"type\":\"ADDED\",\"object\":[1]}");
	T_EQ_INT(kube_reflector_apply(r, odd), -1);
	json_object_put(odd);
	/* a list page goes through the same pruning and decoding as the list path */
	char *page = xasprintf("{\"kind\":\"VirtualMachineList\",\"metadata\":{\"resourceVersion\":\"20\"},\"items\":["
			       "{\"metadata\":{\"name\":\"p\",\"namespace\":\"ns\",\"uid\":\"%s\",\"annotations\":{\"x\":\"y\"}},"
			       "\"status\":{\"printableStatus\":\"Running\"}}]}",
			       U1);
	T_EQ_INT(kube_reflector_apply_list(r, page, strlen(page)), 0);
	struct vm *pv = (struct vm *)store_get(st, src, OBJ_VM, U1);
	T_CHECK(pv && strcmp(pv->o.name, "p") == 0 && strcmp(pv->printable_status, "Running") == 0);
	T_EQ_INT(kube_reflector_apply_list(r, "[1]", 3), -1);
	/* items are decoded one by one as the page is parsed; a page the pruner gives up on midway (a fractional
	 * generation: only json-c reads it) is parsed whole and applied again, each item counted once */
#define ITEM                                                                                                      \
	"{\"metadata\":{\"name\":\"%c\",\"namespace\":\"ns\",\"uid\":"                                              \
	"\"%c%c%c%c%c%c%c%c-4444-4444-8444-444444444444\",\"generation\":%s},\"status\":{\"printableStatus\":\"Stopped\"}}"
	char *it[4];
	for (int i = 0; i < 4; i++) {
		char c = (char)('a' + i);
		it[i] = xasprintf(ITEM, c, c, c, c, c, c, c, c, c, i == 2 ? "1.5" : "2");
	}
	char *mixed = xasprintf("{\"metadata\":{\"resourceVersion\":\"21\"},\"items\":[%s,%s,%s,%s]}", it[0], it[1],
				it[2], it[3]);
	size_t loaded = src->health[OBJ_VM].loaded;
	T_EQ_INT(kube_reflector_apply_list(r, mixed, strlen(mixed)), 0);
	T_EQ_INT(src->health[OBJ_VM].loaded - loaded, 4);
	struct vm *cv = (struct vm *)store_get(st, src, OBJ_VM, "cccccccc-4444-4444-8444-444444444444");
	T_CHECK(cv && cv->o.generation == 1 && strcmp(cv->printable_status, "Stopped") == 0);
	T_CHECK(store_get(st, src, OBJ_VM, "dddddddd-4444-4444-8444-444444444444") != NULL);
	/* streamed in chunks of any size and decoded in small batches: the same objects, each counted once */
	for (size_t chunk = 1; chunk < 700; chunk = chunk * 3 + 1) {
		for (size_t batch = 1; batch < 2000; batch = batch * 7 + 3) {
			store_free(st);
			st = store_new();
			kube_reflector_free(r);
			r = kube_reflector_new(&(struct kube_reflector_cfg){ .st = st, .src = src, .kind = OBJ_VM });
			char *err = NULL;
			T_EQ_INT(kube_reflector_apply_list_chunked(r, mixed, strlen(mixed), chunk, batch, &err), 0);
			T_CHECK(err == NULL);
			free(err);
			T_EQ_INT(store_count(st, OBJ_VM), 4);
			T_EQ_INT(src->health[OBJ_VM].loaded, 4); /* a first page: counted from 0 */
			cv = (struct vm *)store_get(st, src, OBJ_VM, "cccccccc-4444-4444-8444-444444444444");
			T_CHECK(cv && cv->o.generation == 1);
		}
	}
	/* a list that is no list, or whose items are not objects, is an error */
	static const char *const notlists[] = { "[1]", "{\"items\":[1]}", "{\"items\":[{}", "{\"items\":{}}", "\"x\"",
					   "{\"items\":[{\"a\":}]}" };
	for (size_t i = 0; i < sizeof notlists / sizeof notlists[0]; i++) {
		char *err = NULL;
		T_EQ_INT(kube_reflector_apply_list_chunked(r, notlists[i], strlen(notlists[i]), 2, 3, &err), -1);
		T_CHECK(err != NULL);
		free(err);
	}
	/* a page cut short: an error, and the items that arrived whole are kept (they are the server's) */
	store_free(st);
	st = store_new();
	kube_reflector_free(r);
	r = kube_reflector_new(&(struct kube_reflector_cfg){ .st = st, .src = src, .kind = OBJ_VM });
	char *cut = xasprintf("{\"metadata\":{\"resourceVersion\":\"22\"},\"items\":[%s,%s,%.20s", it[0], it[1], it[3]);
	T_EQ_INT(kube_reflector_apply_list(r, cut, strlen(cut)), -1);
	T_EQ_INT(store_count(st, OBJ_VM), 2);
	T_CHECK(store_get(st, src, OBJ_VM, "bbbbbbbb-4444-4444-8444-444444444444") != NULL);
	free(cut);
	free(mixed);
	for (int i = 0; i < 4; i++)
		free(it[i]);
	free(page);
	kube_reflector_free(r);
	store_free(st);
}

static void test_status_message(void)
{
	const char body[] = "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"message\":\"virtualmachines."
			    "kubevirt.io is forbidden: User \\\"x\\\" cannot list \\u001b[31m\",\"reason\":\"Forbidden\","
			    "\"code\":403}";
	struct kube_resp r = { .status = 403, .body = body, .len = strlen(body) };
	char *m = kube_http_error_message(&r);
	T_CHECK(strstr(m, "is forbidden: User \"x\" cannot list") != NULL);
	T_CHECK(strchr(m, '\033') == NULL); /* escaped for the terminal */
	free(m);
	struct kube_resp plain = { .status = 502, .body = "Bad Gateway\n<html>", .len = 18 };
	m = kube_http_error_message(&plain);
	T_EQ_STR(m, "HTTP 502: Bad Gateway");
	free(m);
	struct kube_resp none = { .status = 0, .error = "Connection refused" };
	m = kube_http_error_message(&none);
	T_EQ_STR(m, "Connection refused");
	free(m);
}

static void test_url(void)
{
	struct kube_config kc = { .origin = "test", .server = "https://10.0.0.1:6443/prefix/" };
	char *err = NULL;
	struct kube_http *h = kube_http_new(&kc, &err);
	T_CHECK(h != NULL);
	char *u = kube_http_url(h, "/apis/kubevirt.io/v1");
	T_EQ_STR(u, "https://10.0.0.1:6443/prefix/apis/kubevirt.io/v1");
	free(u);
	kube_http_free(h);
	kc.tls_server_name = "api.internal";
	h = kube_http_new(&kc, &err);
	u = kube_http_url(h, "/api/v1");
	T_EQ_STR(u, "https://api.internal:6443/prefix/api/v1");
	free(u);
	kube_http_free(h);
	struct kube_config bad = { .origin = "test", .server = "not a url" };
	T_CHECK(kube_http_new(&bad, &err) == NULL && err && strstr(err, "not a URL"));
	free(err);
}

enum { BODY = 2 << 20 };

/* A listening socket on a free loopback port; server: its http:// URL. */
static int listen_local(int backlog, char server[64])
{
	int ls = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof a;
	T_CHECK(ls >= 0 && bind(ls, (struct sockaddr *)&a, sizeof a) == 0 && listen(ls, backlog) == 0 &&
		getsockname(ls, (struct sockaddr *)&a, &al) == 0);
	snprintf(server, 64, "http://127.0.0.1:%d", ntohs(a.sin_port));
	return ls;
}

/* Reads a request's head (its body, if any, is not looked at). */
static void drain_request(int c)
{
	char req[4096];
	size_t got = 0;
	while (got < sizeof req - 1) {
		ssize_t n = read(c, req + got, sizeof req - 1 - got);
		if (n <= 0)
			break;
		got += (size_t)n;
		req[got] = '\0';
		if (strstr(req, "\r\n\r\n"))
			break;
	}
}

/* Answers one request on the listening socket with BODY bytes at once, as fast as the kernel takes them. */
static void *serve_once(void *arg)
{
	int ls = *(int *)arg;
	int c = accept(ls, NULL, NULL);
	if (c < 0)
		return NULL;
	drain_request(c);
	char head[128];
	int hl = snprintf(head, sizeof head, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", BODY);
	char *body = xmalloc(BODY);
	for (int i = 0; i < BODY; i++)
		body[i] = (char)('a' + i % 26);
	bool ok = write(c, head, (size_t)hl) == hl;
	for (size_t off = 0; ok && off < BODY;) {
		ssize_t n = write(c, body + off, BODY - off);
		ok = n > 0;
		off += ok ? (size_t)n : 0;
	}
	free(body);
	close(c);
	return NULL;
}

static struct {
	unsigned long pass, chunk_pass;
	int in_pass, max_in_pass;
	size_t bytes;
	bool intact, done;
	long status;
} B;

static void count_pass(void *arg)
{
	(void)arg;
	B.pass++;
}

static uint64_t mono_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* Each chunk costs at least a millisecond, as a page of objects being decoded would. */
static bool slow_chunk(void *arg, const char *data, size_t len)
{
	(void)arg;
	if (B.chunk_pass != B.pass) {
		B.chunk_pass = B.pass;
		B.in_pass = 0;
	}
	if (++B.in_pass > B.max_in_pass)
		B.max_in_pass = B.in_pass;
	for (size_t i = 0; i < len; i++)
		B.intact &= data[i] == (char)('a' + (B.bytes + i) % 26);
	B.bytes += len;
	uint64_t t0 = mono_us();
	while (mono_us() < t0 + 1000)
		;
	return true;
}

static void slow_done(void *arg, const struct kube_resp *resp)
{
	(void)arg;
	B.status = resp->status;
	B.done = true;
}

static void test_pass_budget(void)
{
	char server[64];
	int ls = listen_local(1, server);
	pthread_t th;
	T_CHECK(pthread_create(&th, NULL, serve_once, &ls) == 0);
	struct kube_config kc = { .origin = "test", .server = server };
	char *err = NULL;
	struct kube_http *h = kube_http_new(&kc, &err);
	T_CHECK(h != NULL);
	B.intact = true;
	int hook = loop_hook_add(count_pass, NULL);
	struct kube_http_req q = { .path = "/big", .timeout_ms = 60000, .on_chunk = slow_chunk, .on_done = slow_done };
	kube_http_start(h, &q);
	for (int i = 0; !B.done && i < 1000000; i++)
		loop_once(1000);
	loop_hook_remove(hook);
	T_EQ_INT(B.status, 200);
	T_EQ_INT(B.bytes, BODY);
	T_CHECK(B.intact);
	/* 6 ms a pass: at most 6 one-millisecond chunks, and the body over many passes */
	T_CHECK(B.max_in_pass >= 1 && B.max_in_pass <= 6);
	T_CHECK(B.pass > 10);
	pthread_join(th, NULL);
	close(ls);
	kube_http_free(h);
}

/* --- batched streams (kube_http_req.batch_ms) --- */

enum { HOLD_MS = 1000, PACED = 200 };

static struct {
	int ls;
	int cmd[2], ack[2]; /* test -> server, server -> test */
	char got[256];
	size_t len;
	unsigned long pass, last_pass;
	int passes_with_data;
	bool plain_done, watch_done;
	long plain_status;
} H;

static void put_chunk(int c, const char *text)
{
	char b[128];
	int n = snprintf(b, sizeof b, "%zx\r\n%s\r\n", strlen(text), text);
	T_CHECK(write(c, b, (size_t)n) == n);
}

static char wait_cmd(void)
{
	char x = 0;
	T_CHECK(read(H.cmd[0], &x, 1) == 1);
	return x;
}

static void ack(void)
{
	T_CHECK(write(H.ack[1], "k", 1) == 1);
}

/* The watch: "A" at once; on 'p' PACED chunks "P", one a millisecond as a server writes a watch's events; on 'c'
 * one more and then a plain request is answered on a second connection; on 'e' the stream ends. */
static void *serve_stream(void *arg)
{
	(void)arg;
	int c = accept(H.ls, NULL, NULL);
	if (c < 0)
		return NULL;
	int one = 1; /* each chunk its own segment at once, not held back for the client's ACK */
	T_CHECK(setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) == 0);
	drain_request(c);
	const char *head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
	T_CHECK(write(c, head, strlen(head)) == (ssize_t)strlen(head));
	put_chunk(c, "A");
	for (char x; (x = wait_cmd()) != 'e';) {
		if (x == 'p') {
			for (int i = 0; i < PACED; i++) {
				put_chunk(c, "P");
				usleep(1000);
			}
			ack();
		} else if (x == 'c') {
			put_chunk(c, "C");
			ack();
			int p = accept(H.ls, NULL, NULL);
			drain_request(p);
			const char *ok = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
			T_CHECK(write(p, ok, strlen(ok)) == (ssize_t)strlen(ok));
			close(p);
		}
	}
	T_CHECK(write(c, "0\r\n\r\n", 5) == 5);
	close(c);
	return NULL;
}

static void hold_pass(void *arg)
{
	(void)arg;
	H.pass++;
}

static bool hold_chunk(void *arg, const char *data, size_t len)
{
	(void)arg;
	if (H.last_pass != H.pass) {
		H.last_pass = H.pass;
		H.passes_with_data++;
	}
	if (H.len + len < sizeof H.got) {
		memcpy(H.got + H.len, data, len);
		H.len += len;
	}
	return true;
}

static void hold_done(void *arg, const struct kube_resp *resp)
{
	(void)arg;
	(void)resp;
	H.watch_done = true;
}

static void plain_done(void *arg, const struct kube_resp *resp)
{
	(void)arg;
	H.plain_status = resp->status;
	H.plain_done = true;
}

static void wait_ack(void)
{
	char x;
	T_CHECK(read(H.ack[0], &x, 1) == 1);
}

static void loop_until_len(size_t len, uint64_t bound_ms)
{
	uint64_t t0 = mono_us();
	while (H.len < len && mono_us() - t0 < bound_ms * 1000)
		loop_once(50);
}

static void test_batch(void)
{
	char server[64];
	H.ls = listen_local(2, server);
	T_CHECK(pipe(H.cmd) == 0 && pipe(H.ack) == 0);
	pthread_t th;
	T_CHECK(pthread_create(&th, NULL, serve_stream, NULL) == 0);
	struct kube_config kc = { .origin = "test", .server = server };
	char *err = NULL;
	struct kube_http *h = kube_http_new(&kc, &err);
	T_CHECK(h != NULL);
	int hook = loop_hook_add(hold_pass, NULL);
	struct kube_http_req q = { .path = "/watch", .on_chunk = hold_chunk, .on_done = hold_done, .batch_ms = HOLD_MS };
	kube_http_start(h, &q);
	loop_until_len(1, 10000);
	T_CHECK(H.len == 1 && H.got[0] == 'A');

	/* PACED events, a millisecond apart: read a hold at a time, in a few passes (libcurl's own timers may read the
	 * socket too, a few times); read as they come, as without batch_ms, they take one pass each */
	int before = H.passes_with_data;
	T_CHECK(write(H.cmd[1], "p", 1) == 1);
	loop_until_len(1 + PACED, 20000);
	uint64_t at_p = mono_us();
	T_EQ_INT(H.len, 1 + PACED);
	T_CHECK(H.got[PACED] == 'P');
	int passes = H.passes_with_data - before;
	T_CHECK(passes >= 1 && passes <= PACED / 10);
	wait_ack();

	/* held after the last read; a request that is not batched releases it at once: "C" arrives before the hold
	 * would end, and the plain answer too */
	T_CHECK(write(H.cmd[1], "c", 1) == 1);
	wait_ack();
	struct kube_http_req p = { .path = "/plain", .timeout_ms = 10000, .on_done = plain_done };
	kube_http_start(h, &p);
	loop_until_len(2 + PACED, 10000);
	T_EQ_INT(H.len, 2 + PACED);
	T_CHECK(H.got[1 + PACED] == 'C');
	T_CHECK(mono_us() - at_p < HOLD_MS * 1000u);
	for (int i = 0; !H.plain_done && i < 200; i++)
		loop_once(50);
	T_EQ_INT(H.plain_status, 200);

	T_CHECK(write(H.cmd[1], "e", 1) == 1);
	for (int i = 0; !H.watch_done && i < 200; i++)
		loop_once(50);
	T_CHECK(H.watch_done);
	loop_hook_remove(hook);
	pthread_join(th, NULL);
	close(H.ls);
	for (int i = 0; i < 2; i++) {
		close(H.cmd[i]);
		close(H.ack[i]);
	}
	kube_http_free(h);
}

int main(void)
{
	test_jstream();
	test_apply();
	test_status_message();
	test_url();
	test_pass_budget();
	test_batch();
	return T_DONE();
}
