/* rfbgate: the display proxy's RFB security handshake, driven byte by byte as a viewer and a display would,
 * with libvncclient's own DES (an independent implementation) as the reference for the answers. */
#include <stdint.h>
#include <string.h>

#include "console/rfbgate.h"
#include "core/buf.h"
#include "t.h"

/* exported by libvncclient, not declared in its headers: encrypts a 16-byte challenge in place */
extern void rfbClientEncryptBytes(unsigned char *bytes, char *passwd);

static void reference_answer(const uint8_t ch[16], const char *pw, uint8_t out[16])
{
	char copy[64];
	snprintf(copy, sizeof copy, "%s", pw);
	memcpy(out, ch, 16);
	rfbClientEncryptBytes(out, copy);
}

static void test_answer(void)
{
	/* not "": its all-zero key is one of DES's weak keys, which the reference (libgcrypt underneath) refuses */
	const char *pws[] = {"a", "kv-s3cret", "12345678", "longer-than-eight", "\xff\xfe"};
	for (size_t i = 0; i < sizeof pws / sizeof pws[0]; i++)
		for (int k = 0; k < 8; k++) {
			uint8_t ch[16], want[16], got[16];
			for (int j = 0; j < 16; j++)
				ch[j] = (uint8_t)(k * 37 + j * 11 + i);
			reference_answer(ch, pws[i], want);
			rfbgate_answer(ch, pws[i], got);
			T_CHECK(memcmp(want, got, 16) == 0);
		}
	char pw[RFBGATE_PASSWORD_LEN + 1], pw2[RFBGATE_PASSWORD_LEN + 1];
	rfbgate_random_password(pw);
	rfbgate_random_password(pw2);
	T_EQ_INT(strlen(pw), RFBGATE_PASSWORD_LEN);
	T_CHECK(strcmp(pw, pw2) != 0);
	for (int i = 0; i < RFBGATE_PASSWORD_LEN; i++)
		T_CHECK((pw[i] >= 'a' && pw[i] <= 'z') || (pw[i] >= 'A' && pw[i] <= 'Z') || (pw[i] >= '2' && pw[i] <= '9'));
}

/* feeds bytes one at a time, as a slow network would; returns the last step */
static enum rfbgate_step viewer_says(struct rfbgate *g, const void *data, size_t len, struct buf *tv, struct buf *td)
{
	enum rfbgate_step st = RFBGATE_MORE;
	for (size_t i = 0; i < len; i++) {
		st = rfbgate_from_viewer(g, (const char *)data + i, 1, tv, td);
		if (st == RFBGATE_FAIL || (st == RFBGATE_OPEN_DISPLAY && i + 1 < len))
			return st;
	}
	return st;
}

static enum rfbgate_step display_says(struct rfbgate *g, const void *data, size_t len, struct buf *tv, struct buf *td)
{
	enum rfbgate_step st = RFBGATE_MORE;
	for (size_t i = 0; i < len; i++)
		if ((st = rfbgate_from_display(g, (const char *)data + i, 1, tv, td)) == RFBGATE_FAIL)
			return st;
	return st;
}

/* A viewer of RFB 3.minor with password pw; the display speaks 3.dminor and offers types (a NUL-free list), with
 * display_pw as its password. Returns the final step; *tv_out the bytes the viewer received after the version. */
static enum rfbgate_step session(int minor, const char *pw, int dminor, const char *types, const char *display_pw,
				 struct buf *tv_out, struct buf *td_out)
{
	struct buf tv, td;
	buf_init(&tv);
	buf_init(&td);
	struct rfbgate *g = rfbgate_new("Secret12", display_pw, &tv);
	T_CHECK(tv.len == 12 && memcmp(tv.data, "RFB 003.008\n", 12) == 0);
	buf_reset(&tv);
	char ver[13];
	snprintf(ver, sizeof ver, "RFB 003.%03d\n", minor);
	enum rfbgate_step st = viewer_says(g, ver, 12, &tv, &td);
	T_EQ_INT(st, RFBGATE_MORE);
	if (minor >= 7) {
		T_CHECK(tv.len == 2 && tv.data[0] == 1 && tv.data[1] == 2); /* one type: VNC authentication */
		buf_reset(&tv);
		st = viewer_says(g, "\x02", 1, &tv, &td);
	} else {
		T_CHECK(tv.len == 20 && memcmp(tv.data, "\0\0\0\x02", 4) == 0);
		buf_consume(&tv, 4);
	}
	T_EQ_INT(tv.len, 16);
	uint8_t answer[16];
	reference_answer((const uint8_t *)tv.data, pw, answer);
	buf_reset(&tv);
	st = viewer_says(g, answer, 16, &tv, &td);
	if (st == RFBGATE_FAIL)
		goto out;
	T_EQ_INT(st, RFBGATE_OPEN_DISPLAY);
	T_CHECK(tv.len == 4 && memcmp(tv.data, "\0\0\0\0", 4) == 0);
	T_EQ_INT(td.len, 0); /* nothing reaches the display before it is opened */
	buf_reset(&tv);
	/* ClientInit before the display answered: it must wait */
	T_EQ_INT(viewer_says(g, "\x01", 1, &tv, &td), RFBGATE_MORE);
	T_EQ_INT(td.len, 0);

	snprintf(ver, sizeof ver, "RFB 003.%03d\n", dminor);
	st = display_says(g, ver, 12, &tv, &td);
	T_CHECK(td.len == 12 && memcmp(td.data, ver, 12) == 0);
	buf_reset(&td);
	if (dminor >= 7) {
		char list[16];
		list[0] = (char)strlen(types);
		memcpy(list + 1, types, strlen(types));
		st = display_says(g, list, 1 + strlen(types), &tv, &td);
	} else {
		char t33[4] = {0, 0, 0, types[0]};
		st = display_says(g, t33, 4, &tv, &td);
	}
	if (st == RFBGATE_FAIL)
		goto out;
	if (st != RFBGATE_RELAY) {
		if (td.len >= 1 && td.data[0] == 2)
			buf_consume(&td, 1);
		if (strchr(types, 1) == NULL) {
			/* VNC authentication toward the display with its own password */
			uint8_t ch[16], want[16];
			for (int i = 0; i < 16; i++)
				ch[i] = (uint8_t)(200 - i * 3);
			T_EQ_INT(display_says(g, ch, 16, &tv, &td), RFBGATE_MORE);
			reference_answer(ch, display_pw, want);
			T_CHECK(td.len == 16 && memcmp(td.data, want, 16) == 0);
			buf_reset(&td);
		} else {
			T_CHECK(td.len == 1 && td.data[0] == 1);
			buf_reset(&td);
		}
		st = display_says(g, "\0\0\0\0", 4, &tv, &td);
	}
	if (st == RFBGATE_RELAY) {
		/* the waiting ClientInit went to the display; from now on bytes pass untouched */
		T_CHECK(td.len >= 1 && td.data[td.len - 1] == 1);
		buf_reset(&td);
		buf_reset(&tv);
		T_EQ_INT(rfbgate_from_display(g, "SERVERINIT", 10, &tv, &td), RFBGATE_RELAY);
		T_CHECK(tv.len == 10 && memcmp(tv.data, "SERVERINIT", 10) == 0);
		T_EQ_INT(rfbgate_from_viewer(g, "\x03\x00", 2, &tv, &td), RFBGATE_RELAY);
		T_CHECK(td.len == 2 && td.data[0] == 3);
	}
out:
	if (st == RFBGATE_FAIL)
		T_CHECK(rfbgate_error(g)[0] != '\0');
	if (tv_out)
		buf_add(tv_out, tv.data, tv.len);
	if (td_out)
		buf_add(td_out, td.data, td.len);
	rfbgate_free(g);
	buf_free(&tv);
	buf_free(&td);
	return st;
}

static void test_handshakes(void)
{
	/* the right password, each protocol version on each side, a display with None */
	int minors[] = {3, 7, 8};
	for (int v = 0; v < 3; v++)
		for (int d = 0; d < 3; d++)
			T_EQ_INT(session(minors[v], "Secret12", minors[d], "\x01", NULL, NULL, NULL), RFBGATE_RELAY);
	/* a display that offers both picks None; one that wants VNC authentication gets its own password */
	T_EQ_INT(session(8, "Secret12", 8, "\x02\x01", NULL, NULL, NULL), RFBGATE_RELAY);
	T_EQ_INT(session(8, "Secret12", 8, "\x02", "kv-s3cret", NULL, NULL), RFBGATE_RELAY);
	T_EQ_INT(session(8, "Secret12", 3, "\x02", "kv-s3cret", NULL, NULL), RFBGATE_RELAY);
	/* ... and fails clearly without one */
	T_EQ_INT(session(8, "Secret12", 8, "\x02", NULL, NULL, NULL), RFBGATE_FAIL);
	T_EQ_INT(session(8, "Secret12", 8, "\x10", NULL, NULL, NULL), RFBGATE_FAIL);

	/* a wrong password is refused (with a reason for 3.8) and the display is never opened */
	struct buf tv, td;
	buf_init(&tv);
	buf_init(&td);
	T_EQ_INT(session(8, "secret12", 8, "\x01", NULL, &tv, &td), RFBGATE_FAIL);
	T_CHECK(tv.len > 8 && memcmp(tv.data, "\0\0\0\x01", 4) == 0 && strstr(tv.data + 8, "wrong password"));
	T_EQ_INT(td.len, 0);
	buf_reset(&tv);
	T_EQ_INT(session(3, "", 8, "\x01", NULL, &tv, &td), RFBGATE_FAIL);
	T_CHECK(tv.len == 4 && memcmp(tv.data, "\0\0\0\x01", 4) == 0);
	buf_free(&tv);
	buf_free(&td);

	/* a viewer that asks for None, or does not speak RFB, is refused; a display cannot speak first */
	buf_init(&tv);
	buf_init(&td);
	struct rfbgate *g = rfbgate_new("Secret12", NULL, &tv);
	T_EQ_INT(rfbgate_from_viewer(g, "RFB 003.008\n", 12, &tv, &td), RFBGATE_MORE);
	T_EQ_INT(rfbgate_from_viewer(g, "\x01", 1, &tv, &td), RFBGATE_FAIL);
	rfbgate_free(g);
	g = rfbgate_new("Secret12", NULL, &tv);
	T_EQ_INT(rfbgate_from_viewer(g, "GET / HTTP/1.1\r\n", 16, &tv, &td), RFBGATE_FAIL);
	rfbgate_free(g);
	g = rfbgate_new("Secret12", NULL, &tv);
	T_EQ_INT(rfbgate_from_display(g, "RFB 003.008\n", 12, &tv, &td), RFBGATE_FAIL);
	rfbgate_free(g);
	/* a display's refusal reason is passed on without control bytes */
	g = rfbgate_new("Secret12", NULL, &tv);
	rfbgate_from_viewer(g, "RFB 003.008\n\x02", 13, &tv, &td);
	uint8_t answer[16];
	reference_answer((const uint8_t *)tv.data + tv.len - 16, "Secret12", answer);
	T_EQ_INT(rfbgate_from_viewer(g, answer, 16, &tv, &td), RFBGATE_OPEN_DISPLAY);
	static const char refusal[] = "RFB 003.008\n\x00\x00\x00\x00\x0etoo \x1b[2Jmany!!";
	T_EQ_INT(display_says(g, refusal, sizeof refusal - 1, &tv, &td), RFBGATE_FAIL);
	T_CHECK(strstr(rfbgate_error(g), "too ?[2Jmany") != NULL);
	rfbgate_free(g);
	buf_free(&tv);
	buf_free(&td);
}

int main(void)
{
	test_answer();
	test_handshakes();
	printf("test_rfbgate: %d checks, %d failed\n", t_checks, t_failures);
	return t_failures != 0;
}
