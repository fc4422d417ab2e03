/* Width-aware, escaping text output for the dashboard. */
#include "ui/draw.h"

#include <curses.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

/* Decodes one strict UTF-8 sequence; returns its length (0 when invalid) and the code point. */
static size_t utf8_decode(const unsigned char *p, size_t n, uint32_t *cp)
{
	unsigned c = p[0];
	size_t len;
	uint32_t v, min;
	if (c < 0x80) {
		*cp = c;
		return 1;
	} else if ((c & 0xe0) == 0xc0) {
		len = 2, v = c & 0x1f, min = 0x80;
	} else if ((c & 0xf0) == 0xe0) {
		len = 3, v = c & 0x0f, min = 0x800;
	} else if ((c & 0xf8) == 0xf0) {
		len = 4, v = c & 0x07, min = 0x10000;
	} else {
		return 0;
	}
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		v = (v << 6) | (p[i] & 0x3f);
	}
	if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
		return 0;
	*cp = v;
	return len;
}

/* Invisible characters that could reorder or hide text: shown escaped like controls. */
static int is_format_char(uint32_t cp)
{
	return (cp >= 0x200b && cp <= 0x200f) || (cp >= 0x2028 && cp <= 0x202e) || (cp >= 0x2060 && cp <= 0x206f) ||
	       cp == 0xfeff;
}

/* The next displayable piece of s: either the original bytes of one character or an escape. */
struct piece {
	char buf[16];
	const char *bytes;
	size_t blen;   /* bytes of the piece */
	size_t adv;    /* bytes of input consumed */
	int width;
};

static void next_piece(const unsigned char *p, size_t n, struct piece *pc)
{
	uint32_t cp = 0;
	size_t len = utf8_decode(p, n, &cp);
	pc->bytes = pc->buf;
	if (len == 0) {
		pc->blen = (size_t)snprintf(pc->buf, sizeof pc->buf, "\\x%02x", p[0]);
		pc->adv = 1;
	} else if (cp < 0x20 || cp == 0x7f) {
		static const char *const names[] = { ['\033'] = "\\e", ['\n'] = "\\n", ['\t'] = "\\t", ['\r'] = "\\r" };
		const char *nm = cp < sizeof names / sizeof names[0] ? names[cp] : NULL;
		pc->blen = nm ? (size_t)snprintf(pc->buf, sizeof pc->buf, "%s", nm)
			      : (size_t)snprintf(pc->buf, sizeof pc->buf, "\\x%02x", (unsigned)cp);
		pc->adv = 1;
	} else if (cp < 0x80) {
		pc->buf[0] = (char)cp;
		pc->blen = 1;
		pc->adv = 1;
	} else {
		int w = (cp >= 0x80 && cp < 0xa0) || is_format_char(cp) ? -1 : wcwidth((wchar_t)cp);
		if (w < 0) {
			pc->blen = (size_t)snprintf(pc->buf, sizeof pc->buf, "\\u{%x}", (unsigned)cp);
		} else {
			pc->bytes = (const char *)p;
			pc->blen = len;
			pc->width = w;
			pc->adv = len;
			return;
		}
		pc->adv = len;
	}
	pc->width = (int)pc->blen; /* escapes are ASCII */
}

int draw_width(const char *s)
{
	if (s == NULL)
		return 0;
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s);
	int w = 0;
	for (size_t i = 0; i < n;) {
		struct piece pc;
		next_piece(p + i, n - i, &pc);
		w += pc.width;
		i += pc.adv;
	}
	return w;
}

int draw_fit(const char *s, int maxw, char *out, size_t outlen)
{
	if (outlen == 0)
		return 0;
	out[0] = '\0';
	if (s == NULL || maxw <= 0)
		return 0;
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s);
	int total = draw_width(s);
	int limit = total <= maxw ? maxw : maxw - 1; /* room for the cut mark */
	int w = 0;
	size_t o = 0;
	for (size_t i = 0; i < n;) {
		struct piece pc;
		next_piece(p + i, n - i, &pc);
		if (w + pc.width > limit || o + pc.blen + 2 > outlen)
			break;
		memcpy(out + o, pc.bytes, pc.blen);
		o += pc.blen;
		w += pc.width;
		i += pc.adv;
	}
	if (total > maxw && o + 2 <= outlen) {
		out[o++] = '~';
		w++;
	}
	out[o] = '\0';
	return w;
}

size_t draw_wrap_rows(const char *s, int maxw, int indent, size_t *starts, size_t max)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = s ? strlen(s) : 0, rows = 0;
	if (maxw - indent < 8)
		indent = 0; /* too narrow to indent */
	if (maxw < 1)
		maxw = 1;
	size_t row_start = 0;
	for (;;) {
		if (rows < max)
			starts[rows] = row_start;
		rows++;
		int room = maxw - (rows > 1 ? indent : 0), w = 0;
		size_t i = row_start, last_space = 0;
		bool word = false; /* a space after the row's leading blanks */
		while (i < n) {
			struct piece pc;
			next_piece(p + i, n - i, &pc);
			if (w + pc.width > room && w > 0)
				break;
			if (p[i] != ' ')
				word = true;
			else if (word)
				last_space = i;
			w += pc.width;
			i += pc.adv;
		}
		if (i >= n)
			break;
		/* words stay whole (names, UIDs): the row ends at a space, the one that did not fit or the last one
		 * before it; only a word longer than a whole row is cut, at the width */
		if (p[i] != ' ' && last_space > row_start)
			i = last_space;
		while (i < n && p[i] == ' ')
			i++;
		if (i >= n)
			break;
		row_start = i;
	}
	return rows;
}

int draw_wrap(int y, int x, int maxw, int maxrows, int indent, int attr, const char *s)
{
	size_t starts[64];
	size_t rows = draw_wrap_rows(s, maxw, indent, starts, 64);
	if (maxw - indent < 8)
		indent = 0;
	int used = 0;
	for (size_t r = 0; r < rows && r < 64 && used < maxrows; r++, used++) {
		size_t end = r + 1 < rows && r + 1 < 64 ? starts[r + 1] : strlen(s);
		while (end > starts[r] && s[end - 1] == ' ') /* the spaces a row ends at */
			end--;
		char *piece = strndup(s + starts[r], end - starts[r]);
		int in = r ? indent : 0;
		/* the last visible row of a longer text keeps the cut mark */
		const char *text = piece ? piece : "";
		if (used + 1 == maxrows && r + 1 < rows)
			text = s + starts[r];
		draw_text(y + used, x + in, maxw - in, attr, text);
		free(piece);
	}
	return used;
}

int draw_text(int y, int x, int maxw, int attr, const char *s)
{
	char buf[1024];
	if (maxw <= 0)
		return 0;
	int w = draw_fit(s, maxw, buf, sizeof buf);
	attrset((attr_t)attr);
	mvaddstr(y, x, buf);
	return w;
}

void draw_title_bar(int y, int x, int w, int battr, int tattr, const char *title)
{
	attrset((attr_t)battr);
	mvhline(y, x, ACS_HLINE, w);
	int tx = x + (w - draw_width(title)) / 2;
	draw_text(y, tx < x ? x : tx, w, tattr, title);
}

void draw_fill(int y, int x, int w, int attr)
{
	if (w <= 0)
		return;
	attrset((attr_t)attr);
	mvhline(y, x, ' ', w);
}

void draw_cell(int y, int x, int w, int attr, const char *s, bool right)
{
	char buf[1024];
	if (w <= 0)
		return;
	int used = draw_fit(s ? s : "", w, buf, sizeof buf);
	attrset((attr_t)attr);
	if (right && used < w) {
		mvhline(y, x, ' ', w - used);
		mvaddstr(y, x + w - used, buf);
	} else {
		mvaddstr(y, x, buf);
		if (used < w)
			mvhline(y, x + used, ' ', w - used);
	}
}

void draw_clear_rect(int y, int x, int h, int w, int attr)
{
	for (int i = 0; i < h; i++)
		draw_fill(y + i, x, w, attr);
}
