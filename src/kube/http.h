/* HTTP to one Kubernetes API server over libcurl's multi interface, driven by the one event loop
 * (CURLMOPT_SOCKETFUNCTION / TIMERFUNCTION -> loop_fd_* / loop_timer_*): nothing here blocks.
 * TLS, client certificates, bearer tokens (static, token file, exec plugin) and proxies come from the kubeconfig.
 *
 * Reusing the connection settings elsewhere (the console's CONNECT_ONLY WebSocket):
 *     kube_http_when_ready(h, cb, arg);                 // exec credential obtained (cb at once if not needed)
 *     char *url = kube_http_url(h, path);          // path: a subresource's, model/registry.h
 *     CURL *e = curl_easy_init();
 *     struct curl_slist *hdrs = NULL;
 *     kube_http_setup_easy(h, e, &hdrs, &err);          // TLS/CA/client cert/proxy/tls-server-name + Authorization
 *     curl_easy_setopt(e, CURLOPT_URL, url);            // then CONNECT_ONLY etc.; add own headers to hdrs, then
 *     curl_easy_setopt(e, CURLOPT_HTTPHEADER, hdrs);    // free hdrs with curl_slist_free_all after the transfer
 * kube_http_url() already applies tls-server-name (the URL's host is the TLS name; CURLOPT_CONNECT_TO, set by
 * kube_http_setup_easy, sends the connection to the real server). */
#ifndef KVCON_KUBE_HTTP_H
#define KVCON_KUBE_HTTP_H

#include <curl/curl.h>
#include <stdbool.h>
#include <stddef.h>

#include "kube/kubeconfig.h"

struct buf;

struct kube_http;
struct kube_req;

struct kube_resp {
	long status;       /* HTTP status; 0 when no response arrived (transport or credential failure) */
	const char *error; /* transport/credential error text when status is 0, else NULL */
	const char *body;  /* the whole body (non-streamed requests, or a streamed request's non-2xx body) */
	size_t len;
	long retry_after;  /* seconds from Retry-After, -1 when absent */
	bool aborted;      /* the chunk callback asked to stop */
	struct buf *collected; /* the buffer body points into: the done callback may move it out (take its struct,
				* buf_init it) instead of copying a large body; freed after the callback */
};

/* Ends this loop pass's decoding of streamed bodies (they go on at the next pass): what was decoded so far is
 * to be drawn first (the dashboard's first rows). */
void kube_http_yield(void);

/* Streamed 2xx body bytes; return false to abort the transfer (done then reports aborted). Must not cancel
 * requests or free the client: set a flag and act in the done callback. */
typedef bool (*kube_http_chunk_cb)(void *arg, const char *data, size_t len);
/* Called once per request on the loop thread; the request handle is invalid afterwards. */
typedef void (*kube_http_done_cb)(void *arg, const struct kube_resp *resp);
typedef void (*kube_http_ready_cb)(void *arg, const char *err);

struct kube_http_req {
	const char *method;       /* NULL: GET */
	const char *path;         /* "/apis/kubevirt.io/v1/...?query" */
	const char *body;         /* copied */
	size_t body_len;
	const char *content_type; /* default application/json when a body is given */
	const char *accept;       /* NULL: application/json */
	long timeout_ms;          /* whole transfer; 0: none (watches) */
	kube_http_chunk_cb on_chunk; /* set: 2xx bodies are streamed through it instead of collected */
	unsigned batch_ms;        /* a stream whose bytes may wait this long before they are read (watches that a
				   * dashboard draws at a frame rate): while every live request of the client is
				   * batched, a socket read is not polled again for the smallest batch_ms; 0: read
				   * as bytes arrive */
	kube_http_done_cb on_done;
	void *arg;
};

/* Response limits: a list response (KVCON_LIST_MAX_MIB, default 256 MiB; also any collected body) and one object
 * in it or in a watch (KVCON_OBJECT_MAX_MIB, default 16 MiB). */
void kube_limits(size_t *list_max, size_t *object_max);

/* Borrows kc (must outlive the client). NULL with *err when the settings cannot be applied. */
struct kube_http *kube_http_new(const struct kube_config *kc, char **err);
/* Cancels every request without calling back. */
void kube_http_free(struct kube_http *h);

/* Starts a request (after the exec credential, when one is needed). A 401 with an exec plugin re-runs the
 * plugin and retries once, transparently. Never calls back before returning. */
struct kube_req *kube_http_start(struct kube_http *h, const struct kube_http_req *r);
/* Stops a request; its callbacks are not called. Not from inside its own callbacks. NULL is ignored. */
void kube_http_cancel(struct kube_req *req);

/* The full URL of an API path (tls-server-name applied). Caller frees. */
char *kube_http_url(const struct kube_http *h, const char *path);
/* Configures an easy handle with the client's TLS, proxy, connect-to and Authorization header (appended to
 * *headers, which the caller sets as CURLOPT_HTTPHEADER and frees). Returns 0, or -1 with *err. */
int kube_http_setup_easy(struct kube_http *h, CURL *easy, struct curl_slist **headers, char **err);
/* Calls cb once the credential is available (later, on the loop; err set when it cannot be had). */
void kube_http_when_ready(struct kube_http *h, kube_http_ready_cb cb, void *arg);

/* A server on the unix socket answers GET /healthz with 200 within timeout_ms (blocking; no loop needed). */
bool kube_http_unix_healthy(const char *socket_path, long timeout_ms);
/* The body of GET path (e.g. "/apis/...") on the unix socket's server when it answers 200 within timeout_ms
 * (blocking; no loop needed); NULL otherwise. Caller frees. */
char *kube_http_unix_get(const char *socket_path, const char *path, long timeout_ms);

/* The API's Status message of a failed response ("forbidden: ..."), else a description of the failure.
 * Caller frees. */
char *kube_http_error_message(const struct kube_resp *r);

#endif
