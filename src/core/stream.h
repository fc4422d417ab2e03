/* A non-blocking, bidirectional byte stream to a guest (serial console or VNC display), driven by the loop in
 * core/loop.h. One interface, several implementations: the KubeVirt WebSocket (kube/ws.c), a libvirt virStream
 * (engine), a plain fd (core/fdstream.c: sockets, pipes, ptys, tests). Consumers (the console pane, the VNC
 * pane, `kvcon console`) never know which one they hold.
 *
 * Life cycle
 *   provider_ops.open_console()/open_vnc() (or fdstream_new) returns a stream in STREAM_CONNECTING (or OPEN).
 *   The consumer calls stream_set_callbacks() right away. Implementations never call back from inside the
 *   function that created the stream: the first callback comes from a later loop pass, so nothing is missed.
 *   state(OPEN) is reported once when bytes can flow; data() then delivers guest bytes in order;
 *   state(CLOSED) is reported exactly once, last (stream_end() / stream_status() / stream_reason() say why).
 *   No callback is made after CLOSED or after stream_free().
 *
 * Threading rules
 *   - Every function here runs on the loop thread, EXCEPT the ones marked "any thread": stream_ref,
 *     stream_unref and the stream_post_* family.
 *   - Callbacks (data, state) always run on the loop thread. A callback may call any loop-thread function,
 *     including stream_write, stream_close and stream_free on the same stream (freeing is deferred until the
 *     callback returns).
 *   - ops functions are called on the loop thread and must not block. An implementation that does its I/O on
 *     another thread (libvirt's virStream on the engine thread) hands writes over itself (queue + wakeup) and
 *     reports back with stream_post_open/data/closed, which copy the bytes, hold a reference while queued, and
 *     deliver on the loop thread in the order posted. Posts that arrive after the stream was closed or freed
 *     are dropped silently.
 *   - References: the creator's reference belongs to the consumer and is dropped by stream_free(). An
 *     implementation thread that may still post takes its own reference (stream_ref) and drops it
 *     (stream_unref) when it will post no more. ops->destroy runs when the last reference goes, always on the
 *     loop thread (posted there if the last unref happens elsewhere).
 *   - An implementation whose own loop callback emits (an fd callback reading frames) holds a reference
 *     across that callback (stream_ref first, stream_unref last) and re-checks stream_state() after each emit:
 *     the consumer may have closed or freed the stream inside its data() callback.
 *
 * Data and flow control
 *   - data() hands over every byte once; the stream keeps nothing. The consumer buffers what it cannot use yet
 *     (the console pane never drops guest bytes). stream_pause(s, true) asks the implementation to stop reading
 *     (backpressure: bytes wait in the kernel / the server); it is a hint, a few bytes may still arrive.
 *   - stream_write() queues all of the bytes or none: it never writes partially and never blocks. Bytes written
 *     while CONNECTING are sent once OPEN. stream_pending() says how much is still queued.
 */
#ifndef KVCON_CONSOLE_STREAM_H
#define KVCON_CONSOLE_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct stream;

enum stream_state {
	STREAM_CONNECTING, /* opening (TCP/TLS/HTTP upgrade, libvirt console open) */
	STREAM_OPEN,       /* bytes flow both ways */
	STREAM_CLOSED,     /* final; see enum stream_end */
};

/* Why a stream is CLOSED. */
enum stream_end {
	STREAM_END_NONE,    /* not closed */
	STREAM_END_LOCAL,   /* stream_close() by the consumer */
	STREAM_END_REMOTE,  /* the peer ended it cleanly (WebSocket close, EOF, virStream finished) */
	STREAM_END_REFUSED, /* the far side refused to open it: HTTP 4xx/5xx (VMI not running, 404, 403), no console */
	STREAM_END_ERROR,   /* transport or protocol failure (connection reset, TLS, bad frame, timeout) */
};

struct stream_cbs {
	/* Guest bytes, in order. len > 0. */
	void (*data)(struct stream *s, const uint8_t *data, size_t len, void *arg);
	/* OPEN once, then CLOSED once (or CLOSED directly from CONNECTING). */
	void (*state)(struct stream *s, enum stream_state state, void *arg);
};

/* What an implementation provides. All called on the loop thread; none may block. */
struct stream_ops {
	const char *type; /* "websocket", "virstream", "fd" */
	/* Queues len bytes (all or nothing). 0, or -1 when the stream cannot take them (closed, broken). */
	int (*write)(struct stream *s, const uint8_t *data, size_t len);
	/* Starts a graceful close (WebSocket close handshake...). The implementation ends with
	 * stream_emit_closed(s, STREAM_END_LOCAL, ...) (or whatever happened first); it may do so at once. */
	void (*close)(struct stream *s);
	/* Frees the implementation's state (fds off the loop, timers cancelled). The stream is CLOSED or the
	 * consumer is gone; no emit may follow. Required. */
	void (*destroy)(struct stream *s);
	/* Optional (NULL): bytes queued and not yet sent; stop/resume reading; terminal size to the far side. */
	size_t (*pending)(const struct stream *s);
	void (*pause)(struct stream *s, bool paused);
	int (*resize)(struct stream *s, int cols, int rows);
};

/* ---- consumer side (loop thread) ---- */

/* cbs must outlive the stream (a static const table). arg is passed back to each callback. */
void stream_set_callbacks(struct stream *s, const struct stream_cbs *cbs, void *arg);
int stream_write(struct stream *s, const void *data, size_t len);
/* Graceful close; a CLOSED state callback follows (possibly from within this call). */
void stream_close(struct stream *s);
/* Closes if needed and drops the consumer's reference: no callback after this returns. NULL is ignored. */
void stream_free(struct stream *s);
size_t stream_pending(const struct stream *s);
void stream_pause(struct stream *s, bool paused);
/* -1 when the implementation has no notion of a terminal size (KubeVirt and libvirt serial consoles). */
int stream_resize(struct stream *s, int cols, int rows);

enum stream_state stream_state(const struct stream *s);
enum stream_end stream_end(const struct stream *s);
/* HTTP status of a refused upgrade, WebSocket close code, or 0. */
int stream_status(const struct stream *s);
/* Human-readable reason for CLOSED ("" when none). Never contains a token. */
const char *stream_reason(const struct stream *s);
/* What this stream is ("kube/ctx default/vm1 console"), for titles and logs. */
const char *stream_name(const struct stream *s);

const char *stream_end_name(enum stream_end e); /* "", "closed", "ended by peer", "refused", "error" */

/* ---- implementation side ---- */

/* Creates a stream in CONNECTING with one reference (the consumer's). impl is the implementation's state. */
struct stream *stream_new(const struct stream_ops *ops, void *impl, const char *name);
void *stream_impl(const struct stream *s);
/* True once the consumer called stream_free(): an implementation may stop work early. */
bool stream_detached(const struct stream *s);

/* Loop thread: report to the consumer. No-ops once CLOSED. emit_data before OPEN implies OPEN first. */
void stream_emit_open(struct stream *s);
void stream_emit_data(struct stream *s, const void *data, size_t len);
/* reason may be NULL. */
void stream_emit_closed(struct stream *s, enum stream_end end, int status, const char *reason);

/* Any thread: the same, delivered on the loop thread in order (the bytes are copied). */
void stream_post_open(struct stream *s);

/* Any thread. */
void stream_ref(struct stream *s);
void stream_unref(struct stream *s);

/* ---- test seams: exported for tests/ only, not to be called by kvcon itself (tests/check-exports.sh) ---- */
uint64_t stream_bytes_in(const struct stream *s);
/* Bytes delivered through data() and accepted by stream_write() so far. */
uint64_t stream_bytes_out(const struct stream *s);
void stream_post_closed(struct stream *s, enum stream_end end, int status, const char *reason);
void stream_post_data(struct stream *s, const void *data, size_t len);

#endif
