/* An RFC 6455 WebSocket client as a struct stream (core/stream.h), over a libcurl CONNECT_ONLY connection so
 * TLS, client certificates, proxies and CA bundles are configured exactly as for every API call. libcurl does
 * the TCP/TLS/proxy connect (on a short-lived thread, since a CONNECT_ONLY perform blocks); the HTTP/1.1 Upgrade
 * handshake and the framing (kube/wsframe.c) are ours, driven non-blocking by the loop. */
#ifndef KVCON_KUBE_WS_H
#define KVCON_KUBE_WS_H

#include <curl/curl.h>
#include <stddef.h>
#include <stdint.h>

#include "core/stream.h"

struct ws_config {
	const char *url;         /* http(s):// or ws(s):// with path and query */
	const char *subprotocol; /* Sec-WebSocket-Protocol to ask for ("plain.kubevirt.io"), NULL: none */
	const char *bearer;      /* bearer token for Authorization, NULL: none (never logged) */
	uint64_t max_frame;      /* 0: 16 MiB */
	uint64_t max_message;    /* 0: 64 MiB */
	long connect_timeout_ms; /* TCP+TLS+proxy, and the Upgrade answer; 0: 15 s */
	long keepalive_ms;       /* send a ping this often while open; 0: never */
	const struct curl_slist *headers; /* extra request header lines ("Name: value"), e.g. from
					   * kube_http_setup_easy (Authorization); copied */
};

/* Starts connecting; returns a stream in CONNECTING at once. easy is a handle already configured for TLS, client
 * certificates and proxy (kube/http.c), or NULL for a fresh one; ownership passes to the stream either way.
 * A refused Upgrade ends the stream with STREAM_END_REFUSED, stream_status() = the HTTP status and the
 * server's message (escaped) as the reason. Binary and text messages are both delivered as bytes; writes go
 * out as masked binary frames. */
struct stream *ws_open(const struct ws_config *cfg, CURL *easy, const char *name);

/* The same in two steps, for callers that must wait (an exec credential) before they can configure the
 * connection: ws_new returns the stream in CONNECTING at once; ws_start connects it (or ws_fail ends it). */
struct stream *ws_new(const char *name);
void ws_start(struct stream *s, const struct ws_config *cfg, CURL *easy);
void ws_fail(struct stream *s, const char *reason);

struct ws_response {
	int status;              /* HTTP status */
	size_t head_len;         /* bytes of the head, blank line included (frames or the body follow) */
	uint64_t content_length; /* refused responses: Content-Length, UINT64_MAX when absent */
};

/* The Sec-WebSocket-Accept value for a key (RFC 6455 4.2.2): base64(SHA-1(key + GUID)). out >= 29 bytes. */
void ws_accept_for_key(const char *key, char *out, size_t outlen);

/* ---- test seams: exported for tests/ only, not to be called by kvcon itself (tests/check-exports.sh) ---- */
/* Parses the HTTP/1.1 answer to the Upgrade request at the start of data (a pure function: tests, fuzzing).
 * Returns 0 when more bytes are needed, 1 when complete (r filled; a 101 was checked against key and the
 * subprotocol asked for: Upgrade, Connection, Sec-WebSocket-Accept, no extension, no unexpected subprotocol),
 * -1 when malformed or the upgrade is wrong (*err says why; r->status set once known). */
int ws_parse_response(const char *data, size_t len, const char *key, const char *subprotocol, struct ws_response *r,
		      const char **err);

#endif
