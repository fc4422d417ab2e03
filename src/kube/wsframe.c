/* RFC 6455 framing: the incremental parser (a byte-at-a-time state machine that never buffers a data payload)
 * and the encoder. Strict where the RFC says MUST: reserved bits, unknown opcodes, masking direction,
 * fragmented or oversized control frames, 64-bit lengths with the top bit set, UTF-8 in text and close reasons. */
#include "kube/wsframe.h"

#include <stdio.h>
#include <string.h>

enum { ST_HDR, ST_PAYLOAD, ST_CLOSED, ST_ERROR };

void wsframe_parser_init(struct wsframe_parser *p, enum wsframe_role role)
{
	memset(p, 0, sizeof *p);
	p->role = role;
	p->max_frame = 16u << 20;
	p->max_message = 64u << 20;
	p->state = ST_HDR;
	p->hdr_need = 2;
}

static bool wsframe_close_code_valid(int code)
{
	return (code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1014) || (code >= 3000 && code <= 4999);
}

static long fail(struct wsframe_parser *p, int code, const char *msg)
{
	p->state = ST_ERROR;
	p->err_code = code;
	snprintf(p->err, sizeof p->err, "%s", msg);
	return -1;
}

/* One byte of UTF-8 validation; need/lo/hi carry the state across calls. Returns false on invalid input. */
static bool utf8_step(uint8_t *need, uint8_t *lo, uint8_t *hi, uint8_t b)
{
	static const struct {
		uint8_t first, last, need, lo, hi;
	} leads[] = {
		{ 0x00, 0x7f, 0, 0, 0 },       { 0xc2, 0xdf, 1, 0x80, 0xbf }, { 0xe0, 0xe0, 2, 0xa0, 0xbf },
		{ 0xe1, 0xec, 2, 0x80, 0xbf }, { 0xed, 0xed, 2, 0x80, 0x9f }, { 0xee, 0xef, 2, 0x80, 0xbf },
		{ 0xf0, 0xf0, 3, 0x90, 0xbf }, { 0xf1, 0xf3, 3, 0x80, 0xbf }, { 0xf4, 0xf4, 3, 0x80, 0x8f },
	};
	if (*need) {
		if (b < *lo || b > *hi)
			return false;
		(*need)--;
		*lo = 0x80;
		*hi = 0xbf;
		return true;
	}
	for (size_t i = 0; i < sizeof leads / sizeof leads[0]; i++) {
		if (b >= leads[i].first && b <= leads[i].last) {
			*need = leads[i].need;
			*lo = leads[i].lo;
			*hi = leads[i].hi;
			return true;
		}
	}
	return false;
}

static bool utf8_valid(const uint8_t *s, size_t n)
{
	uint8_t need = 0, lo = 0, hi = 0;
	for (size_t i = 0; i < n; i++)
		if (!utf8_step(&need, &lo, &hi, s[i]))
			return false;
	return need == 0;
}

static bool is_control(int op)
{
	return op >= 0x8;
}

/* The header is complete: validate it and set up the payload. Returns 0 or -1. */
static int header_done(struct wsframe_parser *p)
{
	const uint8_t *h = p->hdr;
	size_t off = 2;
	uint8_t l7 = h[1] & 0x7f;
	if (l7 == 126) {
		p->plen = (uint64_t)h[2] << 8 | h[3];
		off = 4;
	} else if (l7 == 127) {
		p->plen = 0;
		for (int i = 0; i < 8; i++)
			p->plen = p->plen << 8 | h[2 + i];
		off = 10;
		if (p->plen >> 63)
			return (int)fail(p, WS_CLOSE_PROTOCOL, "64-bit payload length with the top bit set");
	} else {
		p->plen = l7;
	}
	if (p->masked)
		memcpy(p->mask, h + off, 4);
	p->pgot = 0;
	if (is_control(p->opcode)) {
		if (!p->fin)
			return (int)fail(p, WS_CLOSE_PROTOCOL, "fragmented control frame");
		if (p->plen > 125)
			return (int)fail(p, WS_CLOSE_PROTOCOL, "control frame longer than 125 bytes");
		return 0;
	}
	if (p->opcode == WS_OP_CONT && !p->in_message)
		return (int)fail(p, WS_CLOSE_PROTOCOL, "continuation frame without a message");
	if (p->opcode != WS_OP_CONT && p->in_message)
		return (int)fail(p, WS_CLOSE_PROTOCOL, "new message inside a fragmented message");
	if (p->plen > p->max_frame)
		return (int)fail(p, WS_CLOSE_TOO_BIG, "frame larger than the limit");
	if (p->opcode != WS_OP_CONT) {
		p->in_message = true;
		p->msg_opcode = p->opcode;
		p->msg_len = 0;
		p->msg_started = false;
		p->utf8_need = 0;
	}
	if (p->plen > p->max_message - p->msg_len)
		return (int)fail(p, WS_CLOSE_TOO_BIG, "message larger than the limit");
	p->msg_len += p->plen;
	return 0;
}

/* The first header byte pair is in: decide how many more header bytes follow. */
static int header_start(struct wsframe_parser *p)
{
	uint8_t b0 = p->hdr[0], b1 = p->hdr[1];
	p->fin = b0 & 0x80;
	p->opcode = b0 & 0x0f;
	p->masked = b1 & 0x80;
	if (b0 & 0x70)
		return (int)fail(p, WS_CLOSE_PROTOCOL, "reserved bits set (no extension negotiated)");
	static const int known[] = { WS_OP_CONT, WS_OP_TEXT, WS_OP_BINARY, WS_OP_CLOSE, WS_OP_PING, WS_OP_PONG };
	bool ok = false;
	for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
		ok |= p->opcode == known[i];
	if (!ok)
		return (int)fail(p, WS_CLOSE_PROTOCOL, "unknown opcode");
	if (p->role == WSFRAME_CLIENT && p->masked)
		return (int)fail(p, WS_CLOSE_PROTOCOL, "masked frame from the server");
	if (p->role == WSFRAME_SERVER && !p->masked)
		return (int)fail(p, WS_CLOSE_PROTOCOL, "unmasked frame from the client");
	uint8_t l7 = b1 & 0x7f;
	p->hdr_need = 2 + (l7 == 126 ? 2 : l7 == 127 ? 8 : 0) + (p->masked ? 4 : 0);
	return 0;
}

static int emit(struct wsframe_parser *p, wsframe_cb cb, void *arg, const struct wsframe_event *ev)
{
	(void)p;
	return cb ? cb(arg, ev) : 0;
}

/* A whole control frame is in p->ctl. Returns <0 error, >0 stop, 0 continue. */
static int control_done(struct wsframe_parser *p, wsframe_cb cb, void *arg)
{
	struct wsframe_event ev = { .data = p->ctl, .len = (size_t)p->plen };
	if (p->opcode == WS_OP_PING) {
		ev.type = WSFRAME_PING;
		return emit(p, cb, arg, &ev) ? 1 : 0;
	}
	if (p->opcode == WS_OP_PONG) {
		ev.type = WSFRAME_PONG;
		return emit(p, cb, arg, &ev) ? 1 : 0;
	}
	ev.type = WSFRAME_CLOSE;
	ev.close_code = WS_CLOSE_NO_STATUS;
	if (p->plen == 1)
		return (int)fail(p, WS_CLOSE_PROTOCOL, "close frame with a 1-byte payload");
	if (p->plen >= 2) {
		ev.close_code = p->ctl[0] << 8 | p->ctl[1];
		if (!wsframe_close_code_valid(ev.close_code))
			return (int)fail(p, WS_CLOSE_PROTOCOL, "invalid close code");
		ev.data = p->ctl + 2;
		ev.len = (size_t)p->plen - 2;
		if (!utf8_valid(ev.data, ev.len))
			return (int)fail(p, WS_CLOSE_INVALID_DATA, "close reason is not UTF-8");
	}
	p->state = ST_CLOSED;
	emit(p, cb, arg, &ev);
	return 1;
}

/* Delivers an unmasked chunk of a data frame. Returns <0 error, >0 stop, 0 continue. */
static int data_chunk(struct wsframe_parser *p, const uint8_t *d, size_t n, bool frame_end, wsframe_cb cb, void *arg)
{
	if (p->msg_opcode == WS_OP_TEXT)
		for (size_t i = 0; i < n; i++)
			if (!utf8_step(&p->utf8_need, &p->utf8_lo, &p->utf8_hi, d[i]))
				return (int)fail(p, WS_CLOSE_INVALID_DATA, "text message is not UTF-8");
	bool last = frame_end && p->fin;
	if (last && p->utf8_need)
		return (int)fail(p, WS_CLOSE_INVALID_DATA, "text message ends inside a UTF-8 sequence");
	if (n == 0 && p->msg_started && !last)
		return 0;
	struct wsframe_event ev = {
		.type = WSFRAME_DATA, .opcode = p->msg_opcode, .first = !p->msg_started, .last = last, .data = d, .len = n
	};
	p->msg_started = true;
	if (last)
		p->in_message = false;
	return emit(p, cb, arg, &ev) ? 1 : 0;
}

static void frame_reset(struct wsframe_parser *p)
{
	p->state = ST_HDR;
	p->hdr_len = 0;
	p->hdr_need = 2;
}

long wsframe_feed(struct wsframe_parser *p, const uint8_t *data, size_t len, wsframe_cb cb, void *arg)
{
	size_t i = 0;
	if (p->state == ST_ERROR)
		return -1;
	while (i < len && p->state != ST_CLOSED) {
		int rc = 0;
		if (p->state == ST_HDR) {
			p->hdr[p->hdr_len++] = data[i++];
			if (p->hdr_len == 2 && header_start(p) < 0)
				return -1;
			if (p->hdr_len < p->hdr_need)
				continue;
			if (header_done(p) < 0)
				return -1;
			p->state = ST_PAYLOAD;
			if (p->plen == 0) {
				rc = is_control(p->opcode) ? control_done(p, cb, arg) : data_chunk(p, NULL, 0, true, cb, arg);
				if (p->state == ST_PAYLOAD)
					frame_reset(p);
			}
		} else {
			uint64_t want = p->plen - p->pgot;
			size_t n = len - i < want ? len - i : (size_t)want;
			if (is_control(p->opcode)) {
				for (size_t k = 0; k < n; k++)
					p->ctl[p->pgot + k] = data[i + k] ^ (p->masked ? p->mask[(p->pgot + k) & 3] : 0);
				p->pgot += n;
				i += n;
				if (p->pgot == p->plen) {
					rc = control_done(p, cb, arg);
					if (p->state == ST_PAYLOAD)
						frame_reset(p);
				}
			} else if (!p->masked) {
				p->pgot += n;
				i += n;
				bool end = p->pgot == p->plen;
				rc = data_chunk(p, data + i - n, n, end, cb, arg);
				if (end && p->state == ST_PAYLOAD)
					frame_reset(p);
			} else {
				uint8_t tmp[4096];
				if (n > sizeof tmp)
					n = sizeof tmp;
				for (size_t k = 0; k < n; k++)
					tmp[k] = data[i + k] ^ p->mask[(p->pgot + k) & 3];
				p->pgot += n;
				i += n;
				bool end = p->pgot == p->plen;
				rc = data_chunk(p, tmp, n, end, cb, arg);
				if (end && p->state == ST_PAYLOAD)
					frame_reset(p);
			}
		}
		if (rc < 0)
			return -1;
		if (rc > 0)
			break;
	}
	return (long)i;
}

void wsframe_encode(struct buf *out, int opcode, bool fin, const uint8_t *mask, const void *payload, size_t len)
{
	uint8_t h[14];
	size_t n = 0;
	h[n++] = (uint8_t)((fin ? 0x80 : 0) | (opcode & 0x0f));
	uint8_t m = mask ? 0x80 : 0;
	if (len < 126) {
		h[n++] = (uint8_t)(m | len);
	} else if (len <= 0xffff) {
		h[n++] = m | 126;
		h[n++] = (uint8_t)(len >> 8);
		h[n++] = (uint8_t)len;
	} else {
		h[n++] = m | 127;
		for (int i = 7; i >= 0; i--)
			h[n++] = (uint8_t)((uint64_t)len >> (8 * i));
	}
	if (mask) {
		memcpy(h + n, mask, 4);
		n += 4;
	}
	buf_add(out, h, n);
	if (!len)
		return;
	buf_reserve(out, len);
	uint8_t *dst = (uint8_t *)out->data + out->len;
	const uint8_t *src = payload;
	if (mask)
		for (size_t i = 0; i < len; i++)
			dst[i] = src[i] ^ mask[i & 3];
	else
		memcpy(dst, src, len);
	out->len += len;
	out->data[out->len] = '\0';
}

void wsframe_encode_close(struct buf *out, const uint8_t *mask, int code, const char *reason)
{
	uint8_t p[125];
	size_t n = 0;
	if (code) {
		p[n++] = (uint8_t)(code >> 8);
		p[n++] = (uint8_t)code;
		size_t rl = reason ? strlen(reason) : 0;
		if (rl > sizeof p - n)
			rl = sizeof p - n;
		/* never cut a UTF-8 sequence in half */
		while (rl > 0 && !utf8_valid((const uint8_t *)reason, rl))
			rl--;
		if (rl)
			memcpy(p + n, reason, rl);
		n += rl;
	}
	wsframe_encode(out, WS_OP_CLOSE, true, mask, p, n);
}
