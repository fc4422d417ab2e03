/* Bracketed paste keys from the outer terminal, collected into text (see paste.h). */
#include "console/paste.h"

#include <curses.h>
#include <stdio.h>

void paste_terminal_on(void)
{
	define_key("\033[200~", PASTE_KEY_BEGIN);
	define_key("\033[201~", PASTE_KEY_END);
	fputs(PASTE_TERM_ON, stdout);
	fflush(stdout);
}

static void add_utf8(struct buf *b, unsigned ch)
{
	char u[4];
	size_t n;
	if (ch < 0x80) {
		u[0] = (char)ch;
		n = 1;
	} else if (ch < 0x800) {
		u[0] = (char)(0xc0 | ch >> 6);
		u[1] = (char)(0x80 | (ch & 63));
		n = 2;
	} else if (ch < 0x10000) {
		u[0] = (char)(0xe0 | ch >> 12);
		u[1] = (char)(0x80 | (ch >> 6 & 63));
		u[2] = (char)(0x80 | (ch & 63));
		n = 3;
	} else {
		u[0] = (char)(0xf0 | ch >> 18);
		u[1] = (char)(0x80 | (ch >> 12 & 63));
		u[2] = (char)(0x80 | (ch >> 6 & 63));
		u[3] = (char)(0x80 | (ch & 63));
		n = 4;
	}
	buf_add(b, u, n);
}

enum paste_result paste_key(struct paste *ps, int ch, bool keycode)
{
	if (keycode && ch == PASTE_KEY_BEGIN) {
		ps->active = true;
		buf_reset(&ps->text);
		return PASTE_MORE;
	}
	if (!ps->active)
		return PASTE_NONE;
	if (keycode && ch == PASTE_KEY_END) {
		ps->active = false;
		return PASTE_DONE;
	}
	if (ps->text.len >= PASTE_MAX)
		return PASTE_MORE;
	if (keycode) {
		/* ncurses decoded a key sequence inside the text: Enter is a line end, the rest is dropped */
		if (ch == KEY_ENTER)
			buf_add_char(&ps->text, '\r');
		return PASTE_MORE;
	}
	/* text and the usual whitespace; other controls (ESC above all) are not pasted */
	if (ch == '\t' || ch == '\r' || ch == '\n' ||
	    (ch >= 0x20 && ch != 0x7f && ch <= 0x10ffff && !(ch >= 0x80 && ch < 0xa0) &&
	     !(ch >= 0xd800 && ch < 0xe000)))
		add_utf8(&ps->text, (unsigned)ch);
	return PASTE_MORE;
}

void paste_free(struct paste *ps)
{
	buf_free(&ps->text);
	ps->active = false;
}
