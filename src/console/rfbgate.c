/* rfbgate: the display proxy's RFB security handshake (see rfbgate.h). */
#include "console/rfbgate.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/types.h>

#include <openssl/evp.h>

#include "core/xmalloc.h"

enum side_state {
	V_VERSION,  /* viewer: waiting for its 12-byte ProtocolVersion */
	V_TYPE,     /* viewer (3.7+): waiting for its chosen security type */
	V_ANSWER,   /* viewer: waiting for its 16-byte answer to our challenge */
	V_WAIT,     /* viewer authenticated; its bytes wait for the display's handshake */
	D_VERSION,  /* display: waiting for its ProtocolVersion */
	D_TYPE33,   /* display (3.3): waiting for the 4-byte security type it decided */
	D_NTYPES,   /* display (3.7+): waiting for the number of security types */
	D_TYPES,    /* display: waiting for the list of types */
	D_REASON,   /* display: waiting for a failure reason (length, then text) */
	D_CHALLENGE, /* display: waiting for its 16-byte challenge */
	D_RESULT,   /* display: waiting for its SecurityResult */
	RELAY,
	FAILED,
};

struct rfbgate {
	char listen_pw[RFBGATE_PASSWORD_LEN + 1];
	char *display_pw;
	uint8_t challenge[16];
	int viewer_minor;  /* 3, 7 or 8 */
	int display_minor; /* 3, 7 or 8 */
	enum side_state viewer, display;
	struct buf vin, din; /* bytes of each side not consumed yet */
	size_t ntypes, reason_len;
	char error[160];
};

#define RFB_NONE 1
#define RFB_VNCAUTH 2

static void put32(struct buf *b, uint32_t v)
{
	uint8_t be[4] = {(uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v};
	buf_add(b, be, 4);
}

static uint32_t get32(const char *p)
{
	const uint8_t *u = (const uint8_t *)p;
	return (uint32_t)u[0] << 24 | (uint32_t)u[1] << 16 | (uint32_t)u[2] << 8 | u[3];
}

static enum rfbgate_step fail(struct rfbgate *g, const char *why)
{
	snprintf(g->error, sizeof g->error, "%s", why);
	g->viewer = g->display = FAILED;
	return RFBGATE_FAIL;
}

/* "RFB 003.00x\n" -> 3, 7 or 8 (later versions speak 3.8, as RFC 6143 asks); -1 when it is not a version line. */
static int parse_version(const char *p)
{
	if (memcmp(p, "RFB 003.", 8) != 0 || p[11] != '\n')
		return -1;
	int minor = 0;
	for (int i = 8; i < 11; i++) {
		if (p[i] < '0' || p[i] > '9')
			return -1;
		minor = minor * 10 + (p[i] - '0');
	}
	return minor >= 8 ? 8 : minor >= 7 ? 7 : 3;
}

void rfbgate_answer(const uint8_t challenge[16], const char *pw, uint8_t out[16])
{
	/* RFB's DES key: the password's first 8 bytes, zero-padded, each byte's bits mirrored. Single DES is
	 * three-key DES with three equal keys, which OpenSSL's default provider has (plain DES is "legacy"). */
	uint8_t key[24] = {0};
	size_t n = strnlen(pw, RFBGATE_PASSWORD_LEN);
	for (size_t i = 0; i < 8; i++) {
		uint8_t c = i < n ? (uint8_t)pw[i] : 0, r = 0;
		for (int bit = 0; bit < 8; bit++)
			if (c & (1u << bit))
				r |= (uint8_t)(0x80u >> bit);
		key[i] = key[i + 8] = key[i + 16] = r;
	}
	EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
	int len = 0, fin = 0;
	if (ctx == NULL || EVP_EncryptInit_ex(ctx, EVP_des_ede3_ecb(), NULL, key, NULL) != 1 ||
	    EVP_CIPHER_CTX_set_padding(ctx, 0) != 1 || EVP_EncryptUpdate(ctx, out, &len, challenge, 16) != 1 ||
	    EVP_EncryptFinal_ex(ctx, out + len, &fin) != 1 || len + fin != 16)
		memset(out, 0, 16); /* never matches a real answer: the viewer is refused */
	EVP_CIPHER_CTX_free(ctx);
	memset(key, 0, sizeof key);
}

void rfbgate_random_password(char out[RFBGATE_PASSWORD_LEN + 1])
{
	static const char alphabet[] = "abcdefghijkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789";
	uint8_t raw[RFBGATE_PASSWORD_LEN];
	size_t got = 0;
	while (got < sizeof raw) {
		ssize_t r = getrandom(raw + got, sizeof raw - got, 0);
		if (r > 0)
			got += (size_t)r;
	}
	for (size_t i = 0; i < sizeof raw; i++)
		out[i] = alphabet[raw[i] % (sizeof alphabet - 1)];
	out[RFBGATE_PASSWORD_LEN] = '\0';
}

struct rfbgate *rfbgate_new(const char *listen_pw, const char *display_pw, struct buf *to_viewer)
{
	struct rfbgate *g = xcalloc(1, sizeof *g);
	snprintf(g->listen_pw, sizeof g->listen_pw, "%s", listen_pw);
	g->display_pw = display_pw ? xstrdup(display_pw) : NULL;
	buf_init(&g->vin);
	buf_init(&g->din);
	g->viewer = V_VERSION;
	g->display = D_VERSION;
	buf_add_str(to_viewer, "RFB 003.008\n");
	return g;
}

void rfbgate_free(struct rfbgate *g)
{
	if (g == NULL)
		return;
	if (g->display_pw) {
		memset(g->display_pw, 0, strlen(g->display_pw));
		free(g->display_pw);
	}
	memset(g->listen_pw, 0, sizeof g->listen_pw);
	buf_free(&g->vin);
	buf_free(&g->din);
	free(g);
}

const char *rfbgate_error(const struct rfbgate *g)
{
	return g->error;
}

bool rfbgate_relaying(const struct rfbgate *g)
{
	return g && g->viewer == RELAY;
}

static void send_challenge(struct rfbgate *g, struct buf *to_viewer)
{
	size_t got = 0;
	while (got < sizeof g->challenge) {
		ssize_t r = getrandom(g->challenge + got, sizeof g->challenge - got, 0);
		if (r > 0)
			got += (size_t)r;
	}
	buf_add(to_viewer, g->challenge, sizeof g->challenge);
	g->viewer = V_ANSWER;
}

/* A refusal the viewer can show: 3.8 carries a reason string. */
static enum rfbgate_step refuse_viewer(struct rfbgate *g, struct buf *to_viewer, const char *why)
{
	put32(to_viewer, 1);
	if (g->viewer_minor >= 8) {
		put32(to_viewer, (uint32_t)strlen(why));
		buf_add_str(to_viewer, why);
	}
	return fail(g, why);
}

enum rfbgate_step rfbgate_from_viewer(struct rfbgate *g, const void *data, size_t len, struct buf *to_viewer,
				      struct buf *to_display)
{
	if (g->viewer == FAILED)
		return RFBGATE_FAIL;
	if (g->viewer == RELAY) {
		buf_add(to_display, data, len);
		return RFBGATE_RELAY;
	}
	buf_add(&g->vin, data, len);
	for (;;) {
		switch (g->viewer) {
		case V_VERSION:
			if (g->vin.len < 12)
				return RFBGATE_MORE;
			g->viewer_minor = parse_version(g->vin.data);
			if (g->viewer_minor < 0)
				return fail(g, "the viewer did not speak RFB");
			buf_consume(&g->vin, 12);
			if (g->viewer_minor == 3) {
				put32(to_viewer, RFB_VNCAUTH); /* 3.3: the server decides */
				send_challenge(g, to_viewer);
			} else {
				buf_add(to_viewer, "\x01\x02", 2); /* one type: VNC authentication */
				g->viewer = V_TYPE;
			}
			break;
		case V_TYPE:
			if (g->vin.len < 1)
				return RFBGATE_MORE;
			if ((uint8_t)g->vin.data[0] != RFB_VNCAUTH)
				return refuse_viewer(g, to_viewer, "this display needs VNC authentication");
			buf_consume(&g->vin, 1);
			send_challenge(g, to_viewer);
			break;
		case V_ANSWER: {
			if (g->vin.len < 16)
				return RFBGATE_MORE;
			uint8_t want[16];
			rfbgate_answer(g->challenge, g->listen_pw, want);
			uint8_t diff = 0;
			for (int i = 0; i < 16; i++)
				diff |= (uint8_t)(want[i] ^ (uint8_t)g->vin.data[i]);
			memset(want, 0, sizeof want);
			buf_consume(&g->vin, 16);
			if (diff != 0)
				return refuse_viewer(g, to_viewer, "authentication failed: wrong password");
			put32(to_viewer, 0);
			g->viewer = V_WAIT;
			return RFBGATE_OPEN_DISPLAY;
		}
		case V_WAIT:
			return RFBGATE_MORE; /* ClientInit waits in vin until the display is ready */
		default:
			return RFBGATE_MORE;
		}
	}
}

static enum rfbgate_step relay(struct rfbgate *g, struct buf *to_viewer, struct buf *to_display)
{
	g->viewer = g->display = RELAY;
	buf_add(to_display, g->vin.data, g->vin.len);
	buf_add(to_viewer, g->din.data, g->din.len);
	buf_free(&g->vin);
	buf_free(&g->din);
	return RFBGATE_RELAY;
}

enum rfbgate_step rfbgate_from_display(struct rfbgate *g, const void *data, size_t len, struct buf *to_viewer,
				       struct buf *to_display)
{
	if (g->display == FAILED)
		return RFBGATE_FAIL;
	if (g->display == RELAY) {
		buf_add(to_viewer, data, len);
		return RFBGATE_RELAY;
	}
	if (g->viewer != V_WAIT)
		return fail(g, "the display spoke before the viewer authenticated");
	buf_add(&g->din, data, len);
	for (;;) {
		switch (g->display) {
		case D_VERSION:
			if (g->din.len < 12)
				return RFBGATE_MORE;
			g->display_minor = parse_version(g->din.data);
			if (g->display_minor < 0)
				return fail(g, "the display did not speak RFB");
			buf_consume(&g->din, 12);
			buf_printf(to_display, "RFB 003.00%d\n", g->display_minor);
			g->display = g->display_minor == 3 ? D_TYPE33 : D_NTYPES;
			break;
		case D_TYPE33: {
			if (g->din.len < 4)
				return RFBGATE_MORE;
			uint32_t t = get32(g->din.data);
			buf_consume(&g->din, 4);
			if (t == RFB_NONE)
				return relay(g, to_viewer, to_display);
			if (t == RFB_VNCAUTH && g->display_pw) {
				g->display = D_CHALLENGE;
				break;
			}
			if (t == 0) {
				g->display = D_REASON;
				g->reason_len = 0;
				break;
			}
			return fail(g, t == RFB_VNCAUTH ? "the display asks for a password (--password-file)"
							: "the display offers no security type kvcon speaks");
		}
		case D_NTYPES:
			if (g->din.len < 1)
				return RFBGATE_MORE;
			g->ntypes = (uint8_t)g->din.data[0];
			buf_consume(&g->din, 1);
			g->display = g->ntypes ? D_TYPES : D_REASON;
			g->reason_len = 0;
			break;
		case D_TYPES: {
			if (g->din.len < g->ntypes)
				return RFBGATE_MORE;
			bool none = memchr(g->din.data, RFB_NONE, g->ntypes) != NULL;
			bool auth = memchr(g->din.data, RFB_VNCAUTH, g->ntypes) != NULL;
			buf_consume(&g->din, g->ntypes);
			if (none) {
				buf_add_char(to_display, RFB_NONE);
				if (g->display_minor == 7)
					return relay(g, to_viewer, to_display);
				g->display = D_RESULT;
			} else if (auth && g->display_pw) {
				buf_add_char(to_display, RFB_VNCAUTH);
				g->display = D_CHALLENGE;
			} else {
				return fail(g, auth ? "the display asks for a password (--password-file)"
						    : "the display offers no security type kvcon speaks");
			}
			break;
		}
		case D_CHALLENGE: {
			if (g->din.len < 16)
				return RFBGATE_MORE;
			uint8_t answer[16];
			rfbgate_answer((const uint8_t *)g->din.data, g->display_pw, answer);
			buf_add(to_display, answer, sizeof answer);
			buf_consume(&g->din, 16);
			g->display = D_RESULT;
			break;
		}
		case D_RESULT: {
			if (g->din.len < 4)
				return RFBGATE_MORE;
			uint32_t r = get32(g->din.data);
			buf_consume(&g->din, 4);
			if (r == 0)
				return relay(g, to_viewer, to_display);
			if (g->display_minor >= 8) {
				g->display = D_REASON;
				g->reason_len = 0;
				break;
			}
			return fail(g, "the display refused the password");
		}
		case D_REASON: {
			if (g->reason_len == 0) {
				if (g->din.len < 4)
					return RFBGATE_MORE;
				g->reason_len = get32(g->din.data) + 4;
				if (g->reason_len > 4 + 1024)
					return fail(g, "the display refused the connection");
			}
			if (g->din.len < g->reason_len)
				return RFBGATE_MORE;
			/* the display's own words are untrusted: only letters, digits and punctuation reach the error */
			char why[96];
			size_t n = 0;
			for (size_t i = 4; i < g->reason_len && n + 1 < sizeof why; i++) {
				char c = g->din.data[i];
				why[n++] = (c >= 0x20 && c < 0x7f) ? c : '?';
			}
			why[n] = '\0';
			char msg[sizeof g->error];
			snprintf(msg, sizeof msg, "the display refused the connection: %s", why);
			return fail(g, msg);
		}
		default:
			return RFBGATE_MORE;
		}
	}
}
