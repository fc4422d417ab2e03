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
		buf_add_utf8(&ps->text, (uint32_t)ch);
	return PASTE_MORE;
}

void paste_free(struct paste *ps)
{
	buf_free(&ps->text);
	ps->active = false;
}
