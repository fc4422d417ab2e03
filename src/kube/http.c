/* libcurl multi on the loop: sockets become loop fds, curl's one timer a loop timer. Completed transfers are
 * collected after each socket action and reported from there, never from inside libcurl's own callbacks. */
#include "kube/http.h"

#include <errno.h>
#include <json.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "core/buf.h"
#include "core/log.h"
#include "core/loop.h"
#include "core/util.h"
#include "core/xmalloc.h"
#include "kube/cred.h"

#define LIST_MAX_MIB 256
#define OBJECT_MAX_MIB 16
/* An API server that has not accepted the TCP connection by then is down or filtered: a command says so within
 * 5 s (the dashboard retries with backoff). */
#define CONNECT_TIMEOUT_MS 3000L
/* Streamed bodies (lists, watches) are handed to their chunk callbacks, which decode them, for at most this much
 * time per loop pass, whichever requests it goes to; past it a transfer is paused (its bytes wait in the socket)
 * and resumed on the next pass, after the pass's input and frame (HTTP/1 only: pausable()). A fast server's lists
 * would otherwise be decoded all at once, tens of megabytes in one libcurl call, with no frame and no key between. */
#define PASS_DECODE_US 6000u

struct kube_req {
	struct kube_http *h;
	CURL *easy;
	struct curl_slist *hdrs;
	char *method, *path, *ctype, *accept;
	char *body;
	size_t body_len;
	long timeout_ms;
	kube_http_chunk_cb on_chunk;
	kube_http_done_cb on_done;
	void *arg;
	struct buf resp;
	long status;
	long retry_after;
	bool aborted;
	bool too_big;
	bool retried;
	bool waiting_cred;
	bool cancelled;
	bool in_multi;
	bool paused;  /* by on_write, the pass's decoding budget spent; resumed on a later pass */
	unsigned batch_ms; /* kube_http_req.batch_ms */
	struct loop_timer *launch_t;
	char errbuf[CURL_ERROR_SIZE];
	struct kube_req *next, *prev;
};

struct sock {
	struct loop_fd *fd;
	struct kube_http *h;
	short want;            /* the events libcurl asked for */
	bool held;             /* not polled until the client's release (hold_sock) */
	struct sock *held_next;
};

struct ready_waiter {
	kube_http_ready_cb cb;
	void *arg;
	struct kube_http *h;
	struct loop_timer *now_t; /* answer decided at once, delivered from the loop */
};

struct kube_http {
	const struct kube_config *kc;
	struct kube_cred *cred;
	CURLM *multi;
	struct loop_timer *timer;
	char *base;                 /* scheme://host[:port] with tls-server-name applied, no trailing slash */
	struct curl_slist *connect_to;
	struct kube_req *reqs;      /* every live request */
	int depth;                  /* >0 while inside curl_multi_socket_action */
	struct loop_timer *reap_t;  /* deferred removal of cancelled requests */
	int hook;                   /* the loop hook that starts a pass's decoding budget */
	struct loop_timer *resume_t; /* resumes the paused requests on this pass */
	unsigned resume_turn;       /* which paused request is resumed first (each in turn) */
	struct ready_waiter **ready;
	size_t nready;
	size_t nplain;              /* live requests without batch_ms: while any, no socket is held */
	struct sock *held;          /* sockets held until hold_t */
	struct loop_timer *hold_t;
	struct sock *acting;        /* the socket on_sock is acting on; NULL once libcurl removed it meanwhile */
};

static void check_done(struct kube_http *h);

/* The decoding time spent on this loop pass, shared by every client: reset by each client's hook (all of them run
 * before the pass's poll, so before any decoding). */
static uint64_t pass_spent_us;

void kube_http_yield(void)
{
	pass_spent_us = PASS_DECODE_US;
}

static uint64_t now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static size_t env_mib(const char *name, size_t def)
{
	const char *v = getenv(name);
	char *end;
	long n = v && *v ? strtol(v, &end, 10) : 0;
	return (v && *v && *end == '\0' && n > 0 && n <= 65536 ? (size_t)n : def) << 20;
}

void kube_limits(size_t *list_max, size_t *object_max)
{
	static size_t lm, om;
	if (lm == 0) {
		lm = env_mib("KVCON_LIST_MAX_MIB", LIST_MAX_MIB);
		om = env_mib("KVCON_OBJECT_MAX_MIB", OBJECT_MAX_MIB);
	}
	*list_max = lm;
	*object_max = om;
}

static int curl_ready(void)
{
	static int state; /* 0 not yet, 1 ok, -1 failed */
	if (state == 0)
		state = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? 1 : -1;
	return state;
}

/* --- loop glue --------------------------------------------------------------------------------------- */

/* Held sockets are polled again: what arrived meanwhile is read on the next pass, all of it at once. */
static void release_held(struct kube_http *h)
{
	loop_timer_cancel(h->hold_t);
	h->hold_t = NULL;
	for (struct sock *sk = h->held, *next; sk; sk = next) {
		next = sk->held_next;
		sk->held = false;
		sk->held_next = NULL;
		loop_fd_set_events(sk->fd, sk->want);
	}
	h->held = NULL;
}

static void on_hold_end(void *arg)
{
	struct kube_http *h = arg;
	h->hold_t = NULL;
	release_held(h);
}

/* Batched streams (kube_http_req.batch_ms): once a socket has been read, it is not polled again for batch_ms, so
 * that a watch's events, written one by one by the server, are read and decoded many at a time: a loop wakeup, a
 * socket action and a pass's end (frame check, lineage write) per batch instead of per event, which was most of
 * the dashboard's CPU under churn. Only while every live request is batched: an answer someone waits for is never
 * held back, whichever socket it shares (HTTP/2). */
static void hold_sock(struct kube_http *h, struct sock *sk)
{
	if (h->nplain > 0 || sk->held || h->reqs == NULL)
		return;
	unsigned ms = 0;
	for (struct kube_req *r = h->reqs; r; r = r->next)
		if (ms == 0 || r->batch_ms < ms)
			ms = r->batch_ms;
	sk->held = true;
	sk->held_next = h->held;
	h->held = sk;
	loop_fd_set_events(sk->fd, 0);
	if (h->hold_t == NULL)
		h->hold_t = loop_timer_add(ms, on_hold_end, h);
}

static void on_sock(int fd, short revents, void *arg)
{
	struct sock *sk = arg;
	struct kube_http *h = sk->h;
	int ev = 0;
	if (revents & (POLLIN | POLLHUP))
		ev |= CURL_CSELECT_IN;
	if (revents & POLLOUT)
		ev |= CURL_CSELECT_OUT;
	if (revents & (POLLERR | POLLNVAL))
		ev |= CURL_CSELECT_ERR;
	int running;
	h->acting = sk;
	h->depth++;
	curl_multi_socket_action(h->multi, fd, ev, &running);
	h->depth--;
	sk = h->acting;
	h->acting = NULL;
	if (sk)
		hold_sock(h, sk);
	check_done(h);
}

static void sock_unhold(struct kube_http *h, struct sock *sk)
{
	for (struct sock **p = &h->held; *p; p = &(*p)->held_next) {
		if (*p == sk) {
			*p = sk->held_next;
			break;
		}
	}
	sk->held = false;
}

static int sock_cb(CURL *easy, curl_socket_t s, int what, void *userp, void *socketp)
{
	(void)easy;
	struct kube_http *h = userp;
	struct sock *sk = socketp;
	if (what == CURL_POLL_REMOVE) {
		if (sk) {
			if (sk->held)
				sock_unhold(h, sk);
			if (h->acting == sk)
				h->acting = NULL;
			loop_fd_remove(sk->fd);
			free(sk);
			curl_multi_assign(h->multi, s, NULL);
		}
		return 0;
	}
	short events = 0;
	if (what == CURL_POLL_IN || what == CURL_POLL_INOUT)
		events |= POLLIN;
	if (what == CURL_POLL_OUT || what == CURL_POLL_INOUT)
		events |= POLLOUT;
	if (sk == NULL) {
		sk = xcalloc(1, sizeof *sk);
		sk->h = h;
		sk->want = events;
		sk->fd = loop_fd_add(s, events, on_sock, sk);
		curl_multi_assign(h->multi, s, sk);
	} else {
		sk->want = events;
		if (!sk->held)
			loop_fd_set_events(sk->fd, events);
	}
	return 0;
}

static void on_timer(void *arg)
{
	struct kube_http *h = arg;
	h->timer = NULL;
	int running;
	h->depth++;
	curl_multi_socket_action(h->multi, CURL_SOCKET_TIMEOUT, 0, &running);
	h->depth--;
	check_done(h);
}

/* Resumes paused transfers, each in turn first; libcurl hands a resumed transfer its held bytes at once (which
 * may pause it again) and reads its socket again from its own timer. */
static void on_resume(void *arg)
{
	struct kube_http *h = arg;
	h->resume_t = NULL;
	size_t n = 0;
	for (struct kube_req *r = h->reqs; r; r = r->next)
		n += r->paused;
	if (n == 0)
		return;
	size_t skip = h->resume_turn++ % n;
	struct kube_req **order = xreallocarray(NULL, n, sizeof *order);
	size_t i = 0;
	for (struct kube_req *r = h->reqs; r; r = r->next)
		if (r->paused)
			order[(i++ + n - skip) % n] = r;
	h->depth++;
	for (i = 0; i < n; i++) {
		struct kube_req *r = order[i];
		if (!r->paused || r->cancelled || r->easy == NULL)
			continue;
		r->paused = false;
		curl_easy_pause(r->easy, CURLPAUSE_CONT);
	}
	h->depth--;
	free(order);
	check_done(h);
}

/* The start of a loop pass (before its poll): a new decoding budget, and paused transfers resumed after the
 * pass's input. */
static void pass_hook(void *arg)
{
	struct kube_http *h = arg;
	pass_spent_us = 0;
	if (h->resume_t)
		return;
	for (struct kube_req *r = h->reqs; r; r = r->next) {
		if (r->paused) {
			h->resume_t = loop_timer_add(0, on_resume, h);
			return;
		}
	}
}

static int timer_cb(CURLM *multi, long timeout_ms, void *userp)
{
	(void)multi;
	struct kube_http *h = userp;
	loop_timer_cancel(h->timer);
	h->timer = NULL;
	if (timeout_ms >= 0)
		h->timer = loop_timer_add((uint64_t)timeout_ms, on_timer, h);
	return 0;
}

/* --- client ------------------------------------------------------------------------------------------ */

/* Splits the server URL and, with tls-server-name, builds the URL host and the CONNECT_TO entry. */
static int setup_base(struct kube_http *h, char **err)
{
	const struct kube_config *kc = h->kc;
	CURLU *u = curl_url();
	char *scheme = NULL, *host = NULL, *port = NULL, *path = NULL;
	int rc = -1;
	if (curl_url_set(u, CURLUPART_URL, kc->server, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK) {
		*err = xasprintf("%s: server '%s' is not a URL", kc->origin, kc->server);
		goto out;
	}
	curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT);
	curl_url_get(u, CURLUPART_PATH, &path, 0);
	const char *p = path && strcmp(path, "/") != 0 ? path : "";
	size_t pl = strlen(p);
	while (pl > 0 && p[pl - 1] == '/')
		pl--;
	if (kc->tls_server_name && *kc->tls_server_name) {
		h->base = xasprintf("%s://%s:%s%.*s", scheme, kc->tls_server_name, port, (int)pl, p);
		char *ct = xasprintf("%s:%s:%s:%s", kc->tls_server_name, port, host, port);
		h->connect_to = curl_slist_append(NULL, ct);
		free(ct);
	} else {
		const char *defport = strcmp(scheme, "https") == 0 ? "443" : "80";
		bool v6 = strchr(host, ':') != NULL && host[0] != '[';
		if (strcmp(port, defport) == 0)
			h->base = xasprintf("%s://%s%s%s%.*s", scheme, v6 ? "[" : "", host, v6 ? "]" : "", (int)pl, p);
		else
			h->base = xasprintf("%s://%s%s%s:%s%.*s", scheme, v6 ? "[" : "", host, v6 ? "]" : "", port,
					    (int)pl, p);
	}
	rc = 0;
out:
	curl_free(scheme);
	curl_free(host);
	curl_free(port);
	curl_free(path);
	curl_url_cleanup(u);
	return rc;
}

/* What kubectl refuses too: a credential over cleartext, and a CA that insecure-skip-tls-verify would ignore. */
static int check_settings(struct kube_http *h, char **err)
{
	const struct kube_config *kc = h->kc;
	if ((kc->ca_file || kc->ca_data) && kc->insecure) {
		*err = xasprintf("%s: context '%s': specifying a root certificates file with the insecure flag is not "
				 "allowed (certificate-authority and insecure-skip-tls-verify are both set)",
				 kc->origin, kc->context);
		return -1;
	}
	if (kc->unix_socket && (!util_has_prefix(h->base, "http://") || kc->proxy_url || kc->exec || kc->token ||
				kc->token_file || kc->username || kc->password || kc->cert_file || kc->cert_data ||
				kc->key_file || kc->key_data)) {
		/* the socket's mode is the access control: nothing else is ever sent there */
		*err = xasprintf("%s: a unix socket takes plain HTTP with no credential and no proxy", kc->origin);
		return -1;
	}
	if (!util_has_prefix(h->base, "http://"))
		return 0;
	const char *what = kc->exec		       ? "an exec credential"
			   : kc->token || kc->token_file ? "a bearer token"
			   : kc->username || kc->password ? "basic auth"
			   : kc->cert_file || kc->cert_data || kc->key_file || kc->key_data ? "a client certificate"
										       : NULL;
	if (what) {
		*err = xasprintf("%s: context '%s': refusing to send %s over plain HTTP to %s (use https)", kc->origin,
				 kc->context, what, h->base);
		return -1;
	}
	return 0;
}

struct kube_http *kube_http_new(const struct kube_config *kc, char **err)
{
	*err = NULL;
	if (curl_ready() < 0) {
		*err = xstrdup("libcurl failed to initialise");
		return NULL;
	}
	struct kube_http *h = xcalloc(1, sizeof *h);
	h->kc = kc;
	if (setup_base(h, err) < 0 || check_settings(h, err) < 0) {
		curl_slist_free_all(h->connect_to);
		free(h->base);
		free(h);
		return NULL;
	}
	h->cred = kube_cred_new(kc);
	h->multi = curl_multi_init();
	curl_multi_setopt(h->multi, CURLMOPT_SOCKETFUNCTION, sock_cb);
	curl_multi_setopt(h->multi, CURLMOPT_SOCKETDATA, h);
	curl_multi_setopt(h->multi, CURLMOPT_TIMERFUNCTION, timer_cb);
	curl_multi_setopt(h->multi, CURLMOPT_TIMERDATA, h);
	curl_multi_setopt(h->multi, CURLMOPT_PIPELINING, (long)CURLPIPE_MULTIPLEX);
	h->hook = loop_hook_add(pass_hook, h);
	return h;
}

static void req_unlink(struct kube_req *r)
{
	struct kube_http *h = r->h;
	if (r->prev || h->reqs == r)
		h->nplain -= r->batch_ms == 0;
	if (r->prev)
		r->prev->next = r->next;
	else if (h->reqs == r)
		h->reqs = r->next;
	if (r->next)
		r->next->prev = r->prev;
	r->next = r->prev = NULL;
}

static void req_detach_easy(struct kube_req *r)
{
	if (r->easy) {
		if (r->in_multi)
			curl_multi_remove_handle(r->h->multi, r->easy);
		curl_easy_cleanup(r->easy);
		r->easy = NULL;
		r->in_multi = false;
	}
	curl_slist_free_all(r->hdrs);
	r->hdrs = NULL;
}

static void req_free(struct kube_req *r)
{
	req_detach_easy(r);
	free(r->method);
	free(r->path);
	free(r->ctype);
	free(r->accept);
	free(r->body);
	buf_free(&r->resp);
	free(r);
}

void kube_http_free(struct kube_http *h)
{
	if (h == NULL)
		return;
	while (h->reqs) {
		struct kube_req *r = h->reqs;
		req_unlink(r);
		kube_cred_forget(h->cred, r);
		req_free(r);
	}
	for (size_t i = 0; i < h->nready; i++) {
		kube_cred_forget(h->cred, h->ready[i]);
		loop_timer_cancel(h->ready[i]->now_t);
		free(h->ready[i]);
	}
	free(h->ready);
	loop_timer_cancel(h->timer);
	loop_timer_cancel(h->reap_t);
	loop_timer_cancel(h->resume_t);
	loop_timer_cancel(h->hold_t);
	h->hold_t = NULL;
	loop_hook_remove(h->hook);
	curl_multi_cleanup(h->multi); /* sockets' REMOVE callbacks free their loop fds */
	kube_cred_free(h->cred);
	curl_slist_free_all(h->connect_to);
	free(h->base);
	free(h);
}

char *kube_http_url(const struct kube_http *h, const char *path)
{
	return xasprintf("%s%s%s", h->base, path[0] == '/' ? "" : "/", path);
}

int kube_http_setup_easy(struct kube_http *h, CURL *e, struct curl_slist **headers, char **err)
{
	const struct kube_config *kc = h->kc;
	*err = NULL;
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, CONNECT_TIMEOUT_MS);
	curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(e, CURLOPT_USERAGENT, "kvcon/0.1");
	if (kc->insecure) {
		curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
	} else if (kc->ca_data) {
		struct curl_blob b = { .data = kc->ca_data, .len = kc->ca_len, .flags = CURL_BLOB_COPY };
		curl_easy_setopt(e, CURLOPT_CAINFO_BLOB, &b);
	} else if (kc->ca_file) {
		curl_easy_setopt(e, CURLOPT_CAINFO, kc->ca_file);
	}
	if (h->connect_to)
		curl_easy_setopt(e, CURLOPT_CONNECT_TO, h->connect_to);
	if (kc->unix_socket) {
		curl_easy_setopt(e, CURLOPT_UNIX_SOCKET_PATH, kc->unix_socket);
		curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 0L);
		return 0; /* no credential, no proxy (check_settings) */
	}
	if (kc->proxy_url)
		curl_easy_setopt(e, CURLOPT_PROXY, kc->proxy_url);
	size_t cl = 0, kl = 0;
	const char *ecert = kube_cred_cert(h->cred, &cl);
	const char *ekey = kube_cred_key(h->cred, &kl);
	if (ecert && ekey) {
		struct curl_blob c = { .data = (void *)ecert, .len = cl, .flags = CURL_BLOB_COPY };
		struct curl_blob k = { .data = (void *)ekey, .len = kl, .flags = CURL_BLOB_COPY };
		curl_easy_setopt(e, CURLOPT_SSLCERT_BLOB, &c);
		curl_easy_setopt(e, CURLOPT_SSLKEY_BLOB, &k);
		curl_easy_setopt(e, CURLOPT_SSLCERTTYPE, "PEM");
		curl_easy_setopt(e, CURLOPT_SSLKEYTYPE, "PEM");
	} else {
		if (kc->cert_data) {
			struct curl_blob c = { .data = kc->cert_data, .len = kc->cert_len, .flags = CURL_BLOB_COPY };
			curl_easy_setopt(e, CURLOPT_SSLCERT_BLOB, &c);
			curl_easy_setopt(e, CURLOPT_SSLCERTTYPE, "PEM");
		} else if (kc->cert_file) {
			curl_easy_setopt(e, CURLOPT_SSLCERT, kc->cert_file);
		}
		if (kc->key_data) {
			struct curl_blob k = { .data = kc->key_data, .len = kc->key_len, .flags = CURL_BLOB_COPY };
			curl_easy_setopt(e, CURLOPT_SSLKEY_BLOB, &k);
			curl_easy_setopt(e, CURLOPT_SSLKEYTYPE, "PEM");
		} else if (kc->key_file) {
			curl_easy_setopt(e, CURLOPT_SSLKEY, kc->key_file);
		}
	}
	const char *tok = kube_cred_token(h->cred);
	if (tok) {
		char *hv = xasprintf("Authorization: Bearer %s", tok);
		*headers = curl_slist_append(*headers, hv);
		explicit_bzero(hv, strlen(hv));
		free(hv);
	} else if (kc->username && kc->password) {
		curl_easy_setopt(e, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
		curl_easy_setopt(e, CURLOPT_USERNAME, kc->username);
		curl_easy_setopt(e, CURLOPT_PASSWORD, kc->password);
	}
	return 0;
}

/* A body of at most cap bytes (a larger one fails the transfer). */
struct capped {
	struct buf b;
	size_t cap;
};

static size_t on_get_body(char *data, size_t size, size_t n, void *arg)
{
	struct capped *c = arg;
	if (c->b.len + size * n > c->cap)
		return 0;
	buf_add(&c->b, data, size * n);
	return size * n;
}

/* GET path on the unix socket's server: its body (caller frees) when it answers 200 within timeout_ms with at
 * most cap bytes, else NULL. */
static char *unix_get(const char *socket_path, const char *path, long timeout_ms, size_t cap)
{
	if (curl_ready() < 0)
		return NULL;
	CURL *e = curl_easy_init();
	if (e == NULL)
		return NULL;
	struct capped c = { .cap = cap };
	buf_init(&c.b);
	char *url = xasprintf("http://kvcon-engine%s", path);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_UNIX_SOCKET_PATH, socket_path);
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(e, CURLOPT_PROXY, "");
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_get_body);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, &c);
	long status = 0;
	bool ok = curl_easy_perform(e) == CURLE_OK && curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status) == CURLE_OK &&
		  status == 200;
	curl_easy_cleanup(e);
	free(url);
	if (!ok) {
		buf_free(&c.b);
		return NULL;
	}
	buf_add_char(&c.b, 0);
	return buf_steal(&c.b);
}

bool kube_http_unix_healthy(const char *socket_path, long timeout_ms)
{
	char *body = unix_get(socket_path, "/healthz", timeout_ms, 4096);
	bool ok = body != NULL;
	free(body);
	return ok;
}

char *kube_http_unix_get(const char *socket_path, const char *path, long timeout_ms)
{
	return unix_get(socket_path, path, timeout_ms, 1u << 20);
}

/* --- requests ---------------------------------------------------------------------------------------- */

static size_t on_header(char *data, size_t size, size_t n, void *arg)
{
	struct kube_req *r = arg;
	size_t len = size * n;
	if (len > 5 && strncmp(data, "HTTP/", 5) == 0) {
		r->retry_after = -1; /* a new response (after 100 Continue) */
		return len;
	}
	static const char ra[] = "retry-after:";
	if (len > sizeof ra - 1 && strncasecmp(data, ra, sizeof ra - 1) == 0) {
		char tmp[32];
		size_t vl = len - (sizeof ra - 1);
		if (vl >= sizeof tmp)
			vl = sizeof tmp - 1;
		memcpy(tmp, data + sizeof ra - 1, vl);
		tmp[vl] = '\0';
		char *end;
		long v = strtol(tmp, &end, 10);
		if (end != tmp && v >= 0)
			r->retry_after = v;
	}
	return len;
}

/* Only an HTTP/1 transfer waits for the next pass: libcurl's pause of one HTTP/2 stream among others on a
 * connection has stalled or failed transfers in several releases (curl issues 9180, 10988, 19334, pull request
 * 16960), so an HTTP/2 transfer is decoded as it comes, as before. */
static bool pausable(struct kube_req *r)
{
	long v = 0;
	curl_easy_getinfo(r->easy, CURLINFO_HTTP_VERSION, &v);
	return v == CURL_HTTP_VERSION_1_0 || v == CURL_HTTP_VERSION_1_1;
}

static size_t on_write(char *data, size_t size, size_t n, void *arg)
{
	struct kube_req *r = arg;
	size_t len = size * n;
	if (r->cancelled)
		return 0;
	if (r->status == 0)
		curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &r->status);
	if (r->on_chunk && r->status >= 200 && r->status < 300) {
		if (pass_spent_us >= PASS_DECODE_US && pausable(r)) {
			r->paused = true; /* libcurl keeps these bytes and hands them over again when resumed */
			return CURL_WRITEFUNC_PAUSE;
		}
		uint64_t t0 = now_us();
		bool ok = r->on_chunk(r->arg, data, len);
		pass_spent_us += now_us() - t0;
		if (!ok) {
			r->aborted = true;
			return 0;
		}
		return len;
	}
	size_t body_max, obj_max;
	kube_limits(&body_max, &obj_max);
	if (r->resp.len + len > body_max) {
		r->too_big = true;
		return 0;
	}
	buf_add(&r->resp, data, len);
	return len;
}

static void finish(struct kube_req *r, long status, const char *error)
{
	struct kube_resp resp = {
		.status = status,
		.error = status ? NULL : error,
		.body = r->resp.data ? r->resp.data : "",
		.len = r->resp.len,
		.retry_after = r->retry_after,
		.aborted = r->aborted,
		.collected = &r->resp,
	};
	req_unlink(r);
	req_detach_easy(r);
	if (!r->cancelled && r->on_done)
		r->on_done(r->arg, &resp);
	req_free(r);
}

static void launch(struct kube_req *r);

static void on_cred(void *arg, const char *err)
{
	struct kube_req *r = arg;
	r->waiting_cred = false;
	if (r->cancelled) {
		req_unlink(r);
		req_free(r);
		return;
	}
	if (err) {
		finish(r, 0, err);
		return;
	}
	launch(r);
}

static void launch(struct kube_req *r)
{
	struct kube_http *h = r->h;
	char *err = NULL;
	int c = kube_cred_ensure(h->cred, on_cred, r, &err);
	if (c < 0) {
		finish(r, 0, err);
		free(err);
		return;
	}
	if (c == 0) {
		r->waiting_cred = true;
		return;
	}
	CURL *e = curl_easy_init();
	r->easy = e;
	r->status = 0;
	r->retry_after = -1;
	buf_reset(&r->resp);
	char *acc = xasprintf("Accept: %s", r->accept ? r->accept : "application/json");
	r->hdrs = curl_slist_append(NULL, acc);
	free(acc);
	if (kube_http_setup_easy(h, e, &r->hdrs, &err) < 0) {
		finish(r, 0, err);
		free(err);
		return;
	}
	char *url = kube_http_url(h, r->path);
	curl_easy_setopt(e, CURLOPT_URL, url);
	free(url);
	curl_easy_setopt(e, CURLOPT_PRIVATE, r);
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, r->errbuf);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, r);
	curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, ""); /* gzip if the server offers it */
	if (r->timeout_ms > 0)
		curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, r->timeout_ms);
	if (strcmp(r->method, "GET") != 0)
		curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, r->method);
	if (r->body) {
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, r->body);
		curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, (long)r->body_len);
		char *ct = xasprintf("Content-Type: %s", r->ctype ? r->ctype : "application/json");
		r->hdrs = curl_slist_append(r->hdrs, ct);
		free(ct);
	} else if (strcmp(r->method, "PUT") == 0 || strcmp(r->method, "POST") == 0) {
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, "");
		curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, 0L);
	}
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, r->hdrs);
	r->errbuf[0] = '\0';
	if (curl_multi_add_handle(h->multi, e) != CURLM_OK) {
		finish(r, 0, "curl_multi_add_handle failed");
		return;
	}
	r->in_multi = true;
}

/* Launching can fail at once; the first callback must come from the loop, never from inside start(). */
static void on_launch(void *arg)
{
	struct kube_req *r = arg;
	r->launch_t = NULL;
	r->waiting_cred = false;
	launch(r);
}

struct kube_req *kube_http_start(struct kube_http *h, const struct kube_http_req *q)
{
	struct kube_req *r = xcalloc(1, sizeof *r);
	r->h = h;
	r->method = xstrdup(q->method ? q->method : "GET");
	r->path = xstrdup(q->path);
	r->ctype = xstrdup0(q->content_type);
	r->accept = xstrdup0(q->accept);
	if (q->body) {
		r->body = xmalloc(q->body_len + 1);
		memcpy(r->body, q->body, q->body_len);
		r->body[q->body_len] = '\0';
		r->body_len = q->body_len;
	}
	r->timeout_ms = q->timeout_ms;
	r->on_chunk = q->on_chunk;
	r->on_done = q->on_done;
	r->arg = q->arg;
	r->retry_after = -1;
	r->batch_ms = q->batch_ms;
	if (r->batch_ms == 0 && h->nplain++ == 0)
		release_held(h); /* its answer is not to wait behind a hold */
	buf_init(&r->resp);
	r->next = h->reqs;
	if (h->reqs)
		h->reqs->prev = r;
	h->reqs = r;
	r->launch_t = loop_timer_add(0, on_launch, r);
	return r;
}

static void on_reap(void *arg)
{
	struct kube_http *h = arg;
	h->reap_t = NULL;
	for (struct kube_req *r = h->reqs, *next; r; r = next) {
		next = r->next;
		if (r->cancelled && r->in_multi) {
			req_unlink(r);
			req_free(r);
		}
	}
}

void kube_http_cancel(struct kube_req *r)
{
	if (r == NULL || r->cancelled)
		return;
	struct kube_http *h = r->h;
	r->cancelled = true;
	if (r->launch_t) {
		loop_timer_cancel(r->launch_t);
		r->launch_t = NULL;
	} else if (r->waiting_cred) {
		kube_cred_forget(h->cred, r);
	} else if (r->in_multi && h->depth > 0) {
		/* libcurl forbids removing handles from inside its callbacks */
		if (h->reap_t == NULL)
			h->reap_t = loop_timer_add(0, on_reap, h);
		return;
	}
	req_unlink(r);
	req_free(r);
}

/* A failed transfer in a few words: the usual ways of not reaching a server plainly, anything else as curl says. */
static void transport_error(struct kube_req *r, CURLcode res, char *out, size_t len)
{
	long os_errno = 0;
	curl_off_t connected_us = 0;
	curl_easy_getinfo(r->easy, CURLINFO_OS_ERRNO, &os_errno);
	curl_easy_getinfo(r->easy, CURLINFO_CONNECT_TIME_T, &connected_us);
	if (res == CURLE_COULDNT_CONNECT && os_errno == ECONNREFUSED)
		snprintf(out, len, "connection refused");
	else if (res == CURLE_OPERATION_TIMEDOUT && connected_us == 0)
		snprintf(out, len, "no answer within %ld s", CONNECT_TIMEOUT_MS / 1000);
	else if (res == CURLE_COULDNT_RESOLVE_HOST)
		snprintf(out, len, "cannot resolve the host name");
	else if (res == CURLE_COULDNT_CONNECT && os_errno != 0)
		snprintf(out, len, "%s", strerror((int)os_errno));
	else
		snprintf(out, len, "%s", r->errbuf[0] ? r->errbuf : curl_easy_strerror(res));
}

/* Reports completed transfers; a 401 with a refreshable credential is retried once. */
static void check_done(struct kube_http *h)
{
	CURLMsg *m;
	int left;
	while ((m = curl_multi_info_read(h->multi, &left))) {
		if (m->msg != CURLMSG_DONE)
			continue;
		struct kube_req *r = NULL;
		curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&r);
		if (r == NULL)
			continue;
		CURLcode res = m->data.result;
		if (r->cancelled) {
			req_unlink(r);
			req_free(r);
			continue;
		}
		long status = 0;
		curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &status);
		if (res != CURLE_OK && !(res == CURLE_WRITE_ERROR && r->aborted)) {
			char msg[CURL_ERROR_SIZE + 256];
			size_t body_max, obj_max;
			kube_limits(&body_max, &obj_max);
			if (r->too_big)
				snprintf(msg, sizeof msg, "the response from %s%s exceeds %zu MiB (KVCON_LIST_MAX_MIB)", h->base,
					 r->path, body_max >> 20);
			else
				transport_error(r, res, msg, sizeof msg);
			/* a stream cut mid-body still had a status: report the transport failure */
			finish(r, 0, msg);
			continue;
		}
		if (status == 401 && !r->retried && kube_cred_invalidate(h->cred)) {
			log_info("kube: 401 from %s, refreshing the credential and retrying once", h->base);
			r->retried = true;
			req_detach_easy(r);
			launch(r);
			continue;
		}
		finish(r, status, NULL);
	}
}

static void on_ready_cred(void *arg, const char *err)
{
	struct ready_waiter *w = arg;
	struct kube_http *h = w->h;
	for (size_t i = 0; i < h->nready; i++) {
		if (h->ready[i] == w) {
			h->ready[i] = h->ready[--h->nready];
			break;
		}
	}
	w->cb(w->arg, err);
	free(w);
}

static void on_ready_now(void *arg)
{
	struct ready_waiter *w = arg;
	w->now_t = NULL;
	on_ready_cred(w, NULL);
}

void kube_http_when_ready(struct kube_http *h, kube_http_ready_cb cb, void *arg)
{
	struct ready_waiter *w = xcalloc(1, sizeof *w);
	w->cb = cb;
	w->arg = arg;
	w->h = h;
	h->ready = xreallocarray(h->ready, h->nready + 1, sizeof *h->ready);
	h->ready[h->nready++] = w;
	char *err = NULL;
	int c = kube_cred_ensure(h->cred, on_ready_cred, w, &err);
	if (c != 0) {
		/* decided at once: still report from the loop */
		if (c < 0) {
			log_warn("kube: %s", err);
			free(err);
		}
		w->now_t = loop_timer_add(0, on_ready_now, w);
	}
}

char *kube_http_error_message(const struct kube_resp *r)
{
	if (r->status == 0)
		return xstrdup(r->error ? r->error : "no response");
	char *msg = NULL;
	if (r->len > 0) {
		struct json_tokener *tok = json_tokener_new();
		struct json_object *o = json_tokener_parse_ex(tok, r->body, (int)(r->len > 0x7fffffff ? 0x7fffffff : r->len));
		json_tokener_free(tok);
		struct json_object *m;
		if (o && json_object_is_type(o, json_type_object) && json_object_object_get_ex(o, "message", &m) &&
		    json_object_is_type(m, json_type_string))
			msg = util_escape_display(json_object_get_string(m));
		json_object_put(o);
		if (msg == NULL) {
			size_t n = strcspn(r->body, "\r\n");
			char tmp[256];
			util_escape_display_n(r->body, n > r->len ? r->len : n, tmp, sizeof tmp);
			if (tmp[0])
				msg = xasprintf("HTTP %ld: %s", r->status, tmp);
		}
	}
	return msg ? msg : xasprintf("HTTP %ld", r->status);
}
