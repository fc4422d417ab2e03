/* termkeys: terminal input bytes -> X keysyms and pointer events (see termkeys.h). Tables, not switches: the
 * CSI/SS3 final bytes and the "~" codes each map to a keysym through a table row. */
#include "console/termkeys.h"

#include <stdlib.h>
#include <string.h>

#include "core/xmalloc.h"

#define XK_BackSpace 0xff08
#define XK_Tab 0xff09
#define XK_Return 0xff0d
#define XK_Escape 0xff1b
#define XK_Home 0xff50
#define XK_Left 0xff51
#define XK_Up 0xff52
#define XK_Right 0xff53
#define XK_Down 0xff54
#define XK_Page_Up 0xff55
#define XK_Page_Down 0xff56
#define XK_End 0xff57
#define XK_Insert 0xff63
#define XK_Delete 0xffff
#define XK_F1 0xffbe
#define XK_F8 (XK_F1 + 7)

struct termkeys {
	termkeys_cb cb;
	void *arg;
	uint8_t buf[64];
	size_t len;
};

/* CSI/SS3 sequences ending in a letter */
static const struct {
	char final;
	uint32_t keysym;
} final_keys[] = {
    {'A', XK_Up}, {'B', XK_Down},   {'C', XK_Right},  {'D', XK_Left},	{'H', XK_Home}, {'F', XK_End},
    {'P', XK_F1}, {'Q', XK_F1 + 1}, {'R', XK_F1 + 2}, {'S', XK_F1 + 3}, {'Z', XK_Tab}, /* CSI Z: Shift+Tab */
};

/* CSI n ~ */
static const struct {
	int n;
	uint32_t keysym;
} tilde_keys[] = {
    {1, XK_Home},      {2, XK_Insert},	{3, XK_Delete},	 {4, XK_End},	   {5, XK_Page_Up},
    {6, XK_Page_Down}, {7, XK_Home},	{8, XK_End},	 {11, XK_F1},	   {12, XK_F1 + 1},
    {13, XK_F1 + 2},   {14, XK_F1 + 3}, {15, XK_F1 + 4}, {17, XK_F1 + 5},  {18, XK_F1 + 6},
    {19, XK_F1 + 7},   {20, XK_F1 + 8}, {21, XK_F1 + 9}, {23, XK_F1 + 10}, {24, XK_F1 + 11},
};

/* control bytes that are keys of their own */
static const struct {
	uint8_t byte;
	uint32_t keysym;
} control_keys[] = {
    {0x08, XK_BackSpace},
    {0x09, XK_Tab},
    {0x0d, XK_Return},
    {0x7f, XK_BackSpace},
};

struct termkeys *termkeys_new(termkeys_cb cb, void *arg)
{
	struct termkeys *k = xcalloc(1, sizeof *k);
	k->cb = cb;
	k->arg = arg;
	return k;
}

void termkeys_free(struct termkeys *k)
{
	free(k);
}

bool termkeys_pending(const struct termkeys *k)
{
	return k->len > 0;
}

bool termkeys_needs_shift(uint32_t keysym)
{
	return (keysym >= 'A' && keysym <= 'Z') ||
	       (keysym < 0x80 && strchr("~!@#$%^&*()_+{}|:\"<>?", (int)keysym) && keysym != 0);
}

static void key(struct termkeys *k, uint32_t keysym, unsigned mods, char ch)
{
	if (keysym == XK_F8 && mods == 0) {
		struct termkeys_event ev = {.type = TK_MENU};
		k->cb(&ev, k->arg);
		return;
	}
	struct termkeys_event ev = {.type = TK_KEY, .keysym = keysym, .mods = mods, .ch = ch};
	k->cb(&ev, k->arg);
}

/* xterm modifier parameter: 1 + (shift 1, alt 2, ctrl 4) */
static unsigned mods_of(int p)
{
	unsigned m = p > 1 ? (unsigned)(p - 1) : 0;
	return m & (TK_SHIFT | TK_ALT | TK_CTRL);
}

/* One byte that is not part of an escape sequence. */
static void plain_byte(struct termkeys *k, uint8_t b, unsigned mods)
{
	if (b == 0x1d) {
		struct termkeys_event ev = {.type = TK_LEAVE};
		k->cb(&ev, k->arg);
		return;
	}
	for (size_t i = 0; i < sizeof control_keys / sizeof control_keys[0]; i++)
		if (control_keys[i].byte == b) {
			key(k, control_keys[i].keysym, mods, 0);
			return;
		}
	if (b == 0x1b) {
		key(k, XK_Escape, mods, 0);
		return;
	}
	if (b == 0)
		key(k, ' ', mods | TK_CTRL, 0);
	else if (b < 0x1b)
		key(k, (uint32_t)('a' + b - 1), mods | TK_CTRL, 0);
	else if (b < 0x20)
		key(k, (uint32_t)("\\]^_"[b - 0x1c]), mods | TK_CTRL, 0);
	else
		key(k, b, mods, (char)b);
}

/* Length of the UTF-8 sequence starting with b (1 for ASCII and for invalid lead bytes). */
static size_t utf8_len(uint8_t b)
{
	return b >= 0xf8 ? 1 : b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
}

/* Tries to decode one event at the start of buf; returns bytes used, 0 when more input is needed. */
static size_t decode(struct termkeys *k, const uint8_t *b, size_t n)
{
	if (b[0] != 0x1b) {
		size_t l = utf8_len(b[0]);
		if (l == 1) {
			if (b[0] < 0x80) /* a stray continuation byte or 0xf8..0xff is not input: dropped */
				plain_byte(k, b[0], 0);
			return 1;
		}
		if (n < l)
			return 0;
		uint32_t cp = b[0] & (0x3f >> (l - 1));
		for (size_t i = 1; i < l; i++) {
			if ((b[i] & 0xc0) != 0x80)
				return 1; /* not UTF-8: the stray lead byte is dropped */
			cp = cp << 6 | (b[i] & 0x3f);
		}
		/* overlong forms, surrogates and values past Unicode are dropped too */
		static const uint32_t min_cp[5] = {0, 0, 0x80, 0x800, 0x10000};
		if (cp < min_cp[l] || (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
			return l;
		key(k, cp < 0x100 ? cp : 0x01000000u | cp, 0, 0);
		return l;
	}
	if (n < 2)
		return 0;
	if (b[1] != '[' && b[1] != 'O') {
		/* ESC x: Alt+x (ESC ESC: Alt+Escape) */
		if (b[1] >= 0x80) {
			plain_byte(k, 0x1b, 0);
			return 1;
		}
		plain_byte(k, b[1], TK_ALT);
		return 2;
	}
	if (b[1] == 'O') {
		if (n < 3)
			return 0;
		for (size_t i = 0; i < sizeof final_keys / sizeof final_keys[0]; i++)
			if (final_keys[i].final == (char)b[2]) {
				key(k, final_keys[i].keysym, 0, 0);
				return 3;
			}
		return 3; /* unknown SS3: dropped */
	}
	/* CSI: parameters and intermediates up to a final byte 0x40..0x7e */
	size_t j = 2;
	while (j < n && (b[j] < 0x40 || b[j] > 0x7e))
		j++;
	if (j >= n)
		return n >= sizeof k->buf ? n : 0; /* an endless sequence is dropped once the buffer is full */
	char final = (char)b[j];
	bool sgr_mouse = b[2] == '<';
	int p[8] = {0}, np = 0;
	for (size_t i = sgr_mouse ? 3 : 2; i < j && np < 8; i++) {
		if (b[i] >= '0' && b[i] <= '9')
			p[np] = p[np] * 10 + (b[i] - '0');
		else if (b[i] == ';')
			np++;
	}
	np++;
	if (sgr_mouse && (final == 'M' || final == 'm') && np >= 3) {
		int code = p[0];
		struct termkeys_event ev = {.type = TK_MOUSE, .col = p[1] - 1, .row = p[2] - 1};
		ev.mods = (code & 4 ? TK_SHIFT : 0) | (code & 8 ? TK_ALT : 0) | (code & 16 ? TK_CTRL : 0);
		ev.motion = (code & 32) != 0;
		ev.press = final == 'M';
		if (code & 64)
			ev.button = 3 + (code & 1);
		else
			ev.button = (code & 3) == 3 ? -1 : (code & 3);
		k->cb(&ev, k->arg);
		return j + 1;
	}
	if (final == '~') {
		for (size_t i = 0; i < sizeof tilde_keys / sizeof tilde_keys[0]; i++)
			if (tilde_keys[i].n == p[0]) {
				key(k, tilde_keys[i].keysym, np > 1 ? mods_of(p[1]) : 0, 0);
				break;
			}
		return j + 1;
	}
	for (size_t i = 0; i < sizeof final_keys / sizeof final_keys[0]; i++)
		if (final_keys[i].final == final) {
			unsigned m = np > 1 ? mods_of(p[1]) : 0;
			if (final == 'Z')
				m |= TK_SHIFT;
			key(k, final_keys[i].keysym, m, 0);
			break;
		}
	return j + 1;
}

void termkeys_feed(struct termkeys *k, const uint8_t *data, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		if (k->len == sizeof k->buf) {
			/* a sequence that never ends: report what we have and start over */
			termkeys_flush(k);
		}
		k->buf[k->len++] = data[i];
		size_t used;
		while (k->len && (used = decode(k, k->buf, k->len)) > 0) {
			memmove(k->buf, k->buf + used, k->len - used);
			k->len -= used;
		}
	}
}

void termkeys_flush(struct termkeys *k)
{
	size_t i = 0;
	while (i < k->len) {
		/* a lone ESC (or ESC [ / ESC O cut short) is the Escape key, then whatever followed */
		if (k->buf[i] == 0x1b) {
			plain_byte(k, 0x1b, 0);
			i++;
			continue;
		}
		if (k->buf[i] < 0x80) /* an incomplete UTF-8 sequence is dropped */
			plain_byte(k, k->buf[i], 0);
		i++;
	}
	k->len = 0;
}
