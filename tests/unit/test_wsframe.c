/* Unit tests of kube/wsframe: encoding, parsing split at every byte boundary, limits and every protocol error. */
#include "core/buf.h"
#include "kube/wsframe.h"
#include "t.h"

/* Records parser events as text; data chunks are joined into whole messages so any split gives the same log. */
struct rec {
	struct buf log;
	struct buf msg;
	bool in_msg;
	int bad_order;
};

static int rec_cb(void *arg, const struct wsframe_event *ev)
{
	struct rec *r = arg;
	switch (ev->type) {
	case WSFRAME_DATA:
		if (ev->first != !r->in_msg)
			r->bad_order++;
		r->in_msg = true;
		buf_add(&r->msg, ev->data, ev->len);
		if (ev->last) {
			buf_printf(&r->log, "%s[%zu]:", ev->opcode == WS_OP_TEXT ? "T" : "B", r->msg.len);
			buf_add(&r->log, r->msg.data ? r->msg.data : "", r->msg.len);
			buf_add_char(&r->log, '|');
			buf_reset(&r->msg);
			r->in_msg = false;
		}
		break;
	case WSFRAME_PING:
	case WSFRAME_PONG:
		buf_printf(&r->log, "%s:", ev->type == WSFRAME_PING ? "PING" : "PONG");
		buf_add(&r->log, ev->data, ev->len);
		buf_add_char(&r->log, '|');
		break;
	case WSFRAME_CLOSE:
		buf_printf(&r->log, "CLOSE:%d:", ev->close_code);
		buf_add(&r->log, ev->data, ev->len);
		buf_add_char(&r->log, '|');
		break;
	}
	return 0;
}

static void rec_init(struct rec *r)
{
	buf_init(&r->log);
	buf_init(&r->msg);
	r->in_msg = false;
	r->bad_order = 0;
}

static void rec_free(struct rec *r)
{
	buf_free(&r->log);
	buf_free(&r->msg);
}

/* Parses in as a server stream cut at each boundary in cuts[] (or whole); returns the log (caller frees). */
static size_t last_len;
static char *parse_cut(const struct buf *in, enum wsframe_role role, size_t step, long *rc_out, int *err_code)
{
	struct wsframe_parser p;
	wsframe_parser_init(&p, role);
	p.max_frame = 1 << 20;
	p.max_message = 2 << 20;
	struct rec r;
	rec_init(&r);
	long rc = 0;
	for (size_t off = 0; off < in->len;) {
		size_t n = step && step < in->len - off ? step : in->len - off;
		long k = wsframe_feed(&p, (const uint8_t *)in->data + off, n, rec_cb, &r);
		if (k < 0) {
			rc = -1;
			break;
		}
		rc += k;
		off += n;
		if ((size_t)k < n)
			break;
	}
	if (rc_out)
		*rc_out = rc;
	if (err_code)
		*err_code = p.err_code;
	T_EQ_INT(r.bad_order, 0);
	buf_free(&r.msg);
	last_len = r.log.len;
	if (!r.log.data)
		buf_add(&r.log, "", 0);
	return buf_steal(&r.log);
}

static const char *expect_all =
	"B[5]:hello|PING:are you there|T[12]:fragmented\xc3\xa9|B[0]:|PONG:|B[300]:"
	"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
	"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
	"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx|"
	"B[70000]:|CLOSE:1000:bye|";

/* A server stream exercising every frame kind: short, 16-bit and 64-bit lengths, fragments with a control
 * frame interleaved, empty frames, close. */
static void build_stream(struct buf *b, const uint8_t *mask)
{
	char big[300];
	memset(big, 'x', sizeof big);
	wsframe_encode(b, WS_OP_BINARY, true, mask, "hello", 5);
	wsframe_encode(b, WS_OP_PING, true, mask, "are you there", 13);
	wsframe_encode(b, WS_OP_TEXT, false, mask, "frag", 4);
	wsframe_encode(b, WS_OP_CONT, false, mask, "ment", 4);
	wsframe_encode(b, WS_OP_CONT, true, mask, "ed\xc3\xa9", 4);
	wsframe_encode(b, WS_OP_BINARY, true, mask, "", 0);
	wsframe_encode(b, WS_OP_PONG, true, mask, "", 0);
	wsframe_encode(b, WS_OP_BINARY, true, mask, big, sizeof big);
	static uint8_t huge[70000];
	wsframe_encode(b, WS_OP_BINARY, true, mask, huge, sizeof huge);
	wsframe_encode_close(b, mask, 1000, "bye");
	wsframe_encode(b, WS_OP_BINARY, true, mask, "after close", 11);
}

static void check_log_prefix(const char *got, size_t n70k_at)
{
	(void)n70k_at;
	/* the 70000 zero bytes are in the log; compare around them */
	const char *tag = "B[70000]:";
	const char *at = strstr(got, tag);
	T_CHECK(at != NULL);
	if (!at)
		return;
	size_t pre = (size_t)(at - got) + strlen(tag);
	T_CHECK(strncmp(got, expect_all, pre) == 0);
	T_EQ_STR(at + strlen(tag) + 70000, "|CLOSE:1000:bye|");
}

static void test_roundtrip_every_split(void)
{
	struct buf b;
	buf_init(&b);
	build_stream(&b, NULL);
	/* 64-bit length encoding: 127 then 8 bytes */
	long rc;
	char *whole = parse_cut(&b, WSFRAME_CLIENT, 0, &rc, NULL);
	size_t whole_len = last_len;
	check_log_prefix(whole, 0);
	T_EQ_INT(rc, (long)b.len - (2 + 11)); /* stops at the close; the frame after it is not consumed */
	/* every split into two feeds, and byte-by-byte */
	int mismatches = 0;
	/* every boundary in the headers and small frames, around the close frame, and a sample of the big payload */
	for (size_t cut = 1; cut < b.len; cut += (cut < 400 || cut + 60 > b.len ? 1 : 997)) {
		struct wsframe_parser p;
		wsframe_parser_init(&p, WSFRAME_CLIENT);
		struct rec r;
		rec_init(&r);
		long k1 = wsframe_feed(&p, (const uint8_t *)b.data, cut, rec_cb, &r);
		long k2 = (size_t)k1 == cut ? wsframe_feed(&p, (const uint8_t *)b.data + cut, b.len - cut, rec_cb, &r) : 0;
		if (k1 < 0 || k2 < 0 || r.log.len != whole_len || memcmp(r.log.data, whole, whole_len))
			mismatches++;
		rec_free(&r);
	}
	T_EQ_INT(mismatches, 0);
	char *bytewise = parse_cut(&b, WSFRAME_CLIENT, 1, &rc, NULL);
	T_CHECK(last_len == whole_len && memcmp(bytewise, whole, whole_len) == 0);
	check_log_prefix(bytewise, 0);
	free(bytewise);
	free(whole);
	buf_free(&b);
}

static void test_masked_server_role(void)
{
	static const uint8_t key[4] = { 0x12, 0x34, 0x56, 0x78 };
	struct buf b;
	buf_init(&b);
	build_stream(&b, key);
	long rc;
	char *got = parse_cut(&b, WSFRAME_SERVER, 7, &rc, NULL);
	check_log_prefix(got, 0);
	free(got);
	/* masked frames to a client are a protocol error, as are unmasked ones to a server */
	int code = 0;
	got = parse_cut(&b, WSFRAME_CLIENT, 0, &rc, &code);
	T_EQ_INT(rc, -1);
	T_EQ_INT(code, WS_CLOSE_PROTOCOL);
	T_EQ_STR(got, "");
	free(got);
	buf_reset(&b);
	wsframe_encode(&b, WS_OP_BINARY, true, NULL, "x", 1);
	got = parse_cut(&b, WSFRAME_SERVER, 0, &rc, &code);
	T_EQ_INT(rc, -1);
	free(got);
	buf_free(&b);
}

static void test_encoding_bytes(void)
{
	struct buf b;
	buf_init(&b);
	static const uint8_t key[4] = { 1, 2, 3, 4 };
	wsframe_encode(&b, WS_OP_BINARY, true, key, "abcd", 4);
	static const uint8_t want[] = { 0x82, 0x84, 1, 2, 3, 4, 'a' ^ 1, 'b' ^ 2, 'c' ^ 3, 'd' ^ 4 };
	T_EQ_INT(b.len, sizeof want);
	T_CHECK(memcmp(b.data, want, sizeof want) == 0);
	buf_reset(&b);
	static uint8_t big[65536];
	wsframe_encode(&b, WS_OP_BINARY, false, NULL, big, sizeof big);
	static const uint8_t want64[] = { 0x02, 127, 0, 0, 0, 0, 0, 1, 0, 0 };
	T_CHECK(memcmp(b.data, want64, sizeof want64) == 0);
	T_EQ_INT(b.len, 10 + 65536);
	buf_reset(&b);
	wsframe_encode(&b, WS_OP_TEXT, true, NULL, big, 65535);
	static const uint8_t want16[] = { 0x81, 126, 0xff, 0xff };
	T_CHECK(memcmp(b.data, want16, sizeof want16) == 0);
	buf_reset(&b);
	char reason[200];
	memset(reason, 'r', sizeof reason - 1);
	reason[sizeof reason - 1] = 0;
	wsframe_encode_close(&b, NULL, 1001, reason);
	T_EQ_INT(b.len, 2 + 125);
	T_EQ_INT((uint8_t)b.data[2], 0x03);
	T_EQ_INT((uint8_t)b.data[3], 0xe9);
	buf_free(&b);
}

/* Raw byte strings that must each fail with the given close code. */
static void test_errors(void)
{
	static const struct {
		const char *what;
		uint8_t bytes[16];
		size_t len;
		int code;
	} cases[] = {
		{ "rsv1", { 0xc2, 0x00 }, 2, WS_CLOSE_PROTOCOL },
		{ "rsv2", { 0xa2, 0x00 }, 2, WS_CLOSE_PROTOCOL },
		{ "rsv3", { 0x92, 0x00 }, 2, WS_CLOSE_PROTOCOL },
		{ "opcode 3", { 0x83, 0x00 }, 2, WS_CLOSE_PROTOCOL },
		{ "opcode 7", { 0x87, 0x00 }, 2, WS_CLOSE_PROTOCOL },
		{ "opcode 0xb", { 0x8b, 0x00 }, 2, WS_CLOSE_PROTOCOL },
		{ "opcode 0xf", { 0x8f, 0x00 }, 2, WS_CLOSE_PROTOCOL },
		{ "masked from server", { 0x82, 0x81, 1, 2, 3, 4, 'x' }, 7, WS_CLOSE_PROTOCOL },
		{ "fragmented ping", { 0x09, 0x00 }, 2, WS_CLOSE_PROTOCOL },
		{ "fragmented close", { 0x08, 0x00 }, 2, WS_CLOSE_PROTOCOL },
		{ "ping of 126", { 0x89, 126, 0, 126 }, 4, WS_CLOSE_PROTOCOL },
		{ "continuation first", { 0x80, 0x00 }, 2, WS_CLOSE_PROTOCOL },
		{ "new message inside fragmented", { 0x02, 0x00, 0x82, 0x00 }, 4, WS_CLOSE_PROTOCOL },
		{ "64-bit top bit", { 0x82, 127, 0x80, 0, 0, 0, 0, 0, 0, 1 }, 10, WS_CLOSE_PROTOCOL },
		{ "frame too big", { 0x82, 127, 0, 0, 0, 0, 0, 0x10, 0, 1 }, 10, WS_CLOSE_TOO_BIG },
		{ "close 1 byte", { 0x88, 0x01, 0x03 }, 3, WS_CLOSE_PROTOCOL },
		{ "close code 999", { 0x88, 0x02, 0x03, 0xe7 }, 4, WS_CLOSE_PROTOCOL },
		{ "close code 1005", { 0x88, 0x02, 0x03, 0xed }, 4, WS_CLOSE_PROTOCOL },
		{ "close code 1006", { 0x88, 0x02, 0x03, 0xee }, 4, WS_CLOSE_PROTOCOL },
		{ "close code 1015", { 0x88, 0x02, 0x03, 0xf7 }, 4, WS_CLOSE_PROTOCOL },
		{ "close code 2999", { 0x88, 0x02, 0x0b, 0xb7 }, 4, WS_CLOSE_PROTOCOL },
		{ "close code 5000", { 0x88, 0x02, 0x13, 0x88 }, 4, WS_CLOSE_PROTOCOL },
		{ "close reason not utf-8", { 0x88, 0x03, 0x03, 0xe8, 0xff }, 5, WS_CLOSE_INVALID_DATA },
		{ "text not utf-8", { 0x81, 0x01, 0xc0 }, 3, WS_CLOSE_INVALID_DATA },
		{ "text surrogate", { 0x81, 0x03, 0xed, 0xa0, 0x80 }, 5, WS_CLOSE_INVALID_DATA },
		{ "text cut sequence", { 0x81, 0x01, 0xc3 }, 3, WS_CLOSE_INVALID_DATA },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		/* whole and byte by byte */
		for (int bytewise = 0; bytewise < 2; bytewise++) {
			struct wsframe_parser p;
			wsframe_parser_init(&p, WSFRAME_CLIENT);
			p.max_frame = 1 << 20;
			long rc = 0;
			for (size_t k = 0; k < cases[i].len && rc >= 0; k += bytewise ? 1 : cases[i].len)
				rc = wsframe_feed(&p, cases[i].bytes + k, bytewise ? 1 : cases[i].len, NULL, NULL);
			if (rc != -1 || p.err_code != cases[i].code)
				fprintf(stderr, "case '%s' (bytewise %d): rc %ld code %d\n", cases[i].what, bytewise, rc,
					p.err_code);
			T_EQ_INT(rc, -1);
			T_EQ_INT(p.err_code, cases[i].code);
			T_CHECK(p.err[0] != '\0');
			/* once failed, it stays failed */
			T_EQ_INT(wsframe_feed(&p, (const uint8_t *)"\x82\x00", 2, NULL, NULL), -1);
		}
	}
}

static void test_valid_close_codes(void)
{
	static const int ok[] = { 1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 3000, 4000, 4999 };
	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
		struct buf b;
		buf_init(&b);
		wsframe_encode_close(&b, NULL, ok[i], "r");
		struct wsframe_parser p;
		wsframe_parser_init(&p, WSFRAME_CLIENT);
		struct rec r;
		rec_init(&r);
		T_EQ_INT(wsframe_feed(&p, (const uint8_t *)b.data, b.len, rec_cb, &r), (long)b.len);
		char want[32];
		snprintf(want, sizeof want, "CLOSE:%d:r|", ok[i]);
		T_EQ_STR(r.log.data, want);
		rec_free(&r);
		buf_free(&b);
	}
	/* an empty close frame reports 1005 */
	struct wsframe_parser p;
	wsframe_parser_init(&p, WSFRAME_CLIENT);
	struct rec r;
	rec_init(&r);
	T_EQ_INT(wsframe_feed(&p, (const uint8_t *)"\x88\x00", 2, rec_cb, &r), 2);
	T_EQ_STR(r.log.data, "CLOSE:1005:|");
	rec_free(&r);
}

static void test_limits(void)
{
	/* message limit across fragments */
	struct wsframe_parser p;
	wsframe_parser_init(&p, WSFRAME_CLIENT);
	p.max_frame = 100;
	p.max_message = 150;
	struct buf b;
	buf_init(&b);
	static uint8_t z[101];
	wsframe_encode(&b, WS_OP_BINARY, false, NULL, z, 100);
	wsframe_encode(&b, WS_OP_CONT, true, NULL, z, 100);
	T_EQ_INT(wsframe_feed(&p, (const uint8_t *)b.data, b.len, NULL, NULL), -1);
	T_EQ_INT(p.err_code, WS_CLOSE_TOO_BIG);
	buf_reset(&b);
	wsframe_parser_init(&p, WSFRAME_CLIENT);
	p.max_frame = 100;
	wsframe_encode(&b, WS_OP_BINARY, true, NULL, z, 101);
	T_EQ_INT(wsframe_feed(&p, (const uint8_t *)b.data, 4, NULL, NULL), -1); /* refused from the header alone */
	T_EQ_INT(p.err_code, WS_CLOSE_TOO_BIG);
	/* a ping between fragments is fine; data resumes */
	buf_reset(&b);
	wsframe_parser_init(&p, WSFRAME_CLIENT);
	wsframe_encode(&b, WS_OP_BINARY, false, NULL, "ab", 2);
	wsframe_encode(&b, WS_OP_PING, true, NULL, "p", 1);
	wsframe_encode(&b, WS_OP_CONT, true, NULL, "cd", 2);
	struct rec r;
	rec_init(&r);
	T_EQ_INT(wsframe_feed(&p, (const uint8_t *)b.data, b.len, rec_cb, &r), (long)b.len);
	T_EQ_STR(r.log.data, "PING:p|B[4]:abcd|");
	rec_free(&r);
	buf_free(&b);
}

int main(void)
{
	test_encoding_bytes();
	test_roundtrip_every_split();
	test_masked_server_role();
	test_errors();
	test_valid_close_codes();
	test_limits();
	return T_DONE();
}
