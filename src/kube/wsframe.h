/* RFC 6455 WebSocket framing as a pure unit (no I/O): an incremental frame parser that can be fed one byte at a
 * time, and a frame encoder. kube/ws.c puts it on a socket; tests and the fuzzer drive it directly. */
#ifndef KVCON_KUBE_WSFRAME_H
#define KVCON_KUBE_WSFRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"

enum {
	WS_OP_CONT = 0x0,
	WS_OP_TEXT = 0x1,
	WS_OP_BINARY = 0x2,
	WS_OP_CLOSE = 0x8,
	WS_OP_PING = 0x9,
	WS_OP_PONG = 0xa,
};

/* Close codes kvcon sends or reports (RFC 6455 7.4.1). */
enum {
	WS_CLOSE_NORMAL = 1000,
	WS_CLOSE_GOING_AWAY = 1001,
	WS_CLOSE_PROTOCOL = 1002,
	WS_CLOSE_UNSUPPORTED = 1003,
	WS_CLOSE_NO_STATUS = 1005, /* reported when a close frame carried no code; never sent */
	WS_CLOSE_INVALID_DATA = 1007,
	WS_CLOSE_TOO_BIG = 1009,
};

enum wsframe_role {
	WSFRAME_CLIENT, /* parses server frames: they must NOT be masked */
	WSFRAME_SERVER, /* parses client frames: they MUST be masked */
};

enum wsframe_event_type { WSFRAME_DATA, WSFRAME_PING, WSFRAME_PONG, WSFRAME_CLOSE };

struct wsframe_event {
	enum wsframe_event_type type;
	int opcode;             /* DATA: the message's opcode (WS_OP_TEXT or WS_OP_BINARY) */
	bool first, last;       /* DATA: this chunk starts / ends a message */
	const uint8_t *data;    /* payload chunk (DATA) or whole payload (PING, PONG, CLOSE reason); unmasked */
	size_t len;
	int close_code;         /* CLOSE: the peer's code, WS_CLOSE_NO_STATUS when none */
};

/* Returns 0 to continue, non-zero to stop feeding (wsframe_feed returns early). */
typedef int (*wsframe_cb)(void *arg, const struct wsframe_event *ev);

struct wsframe_parser {
	/* settings (wsframe_parser_init sets defaults) */
	enum wsframe_role role;
	uint64_t max_frame;   /* payload bytes per frame */
	uint64_t max_message; /* payload bytes per message (sum of fragments) */
	/* state */
	int state;
	uint8_t hdr[14];
	size_t hdr_len, hdr_need;
	int opcode;
	bool fin, masked;
	uint8_t mask[4];
	uint64_t plen, pgot;
	bool in_message;
	int msg_opcode;
	uint64_t msg_len;
	bool msg_started;      /* a DATA event with first=true was delivered for the current message */
	uint8_t ctl[125];      /* control frame payload, delivered whole */
	uint8_t utf8_need;     /* continuation bytes still expected in a text message */
	uint8_t utf8_lo, utf8_hi; /* allowed range of the next continuation byte */
	bool closed;           /* a CLOSE was parsed; nothing more is read */
	/* error (wsframe_feed returned -1) */
	int err_code;          /* close code to send back: 1002, 1007 or 1009 */
	char err[96];
};

void wsframe_parser_init(struct wsframe_parser *p, enum wsframe_role role);

/* Parses len bytes. Returns the number consumed (len, or less when cb asked to stop or a CLOSE ended the
 * stream), or -1 on a protocol violation (p->err_code, p->err). Once -1 or closed, further calls return 0/-1. */
long wsframe_feed(struct wsframe_parser *p, const uint8_t *data, size_t len, wsframe_cb cb, void *arg);

/* Appends one frame to out. mask NULL: unmasked (server); otherwise the 4-byte key (clients must mask). */
void wsframe_encode(struct buf *out, int opcode, bool fin, const uint8_t *mask, const void *payload, size_t len);
/* Appends a close frame with code (0: none) and reason (truncated to fit 125 bytes). */
void wsframe_encode_close(struct buf *out, const uint8_t *mask, int code, const char *reason);

#endif
