/* Bracketed paste from the outer terminal: kvcon turns it on while it owns the terminal (and every exit path turns
 * it off again), teaches ncurses the paste start and end sequences (ESC[200~, ESC[201~) as two key codes, and
 * collects the keys between them as the pasted text. Where the text goes is the caller's business: a console
 * pane sends it to the guest (bracketed only when the guest asked, see vtpane_paste), a text prompt takes it as
 * typed, anything else drops it (a paste is never a string of key commands). */
#ifndef KVCON_CONSOLE_PASTE_H
#define KVCON_CONSOLE_PASTE_H

#include <curses.h>
#include <stdbool.h>
#include <stddef.h>

#include "core/buf.h"

/* Key codes ncurses returns for ESC[200~ and ESC[201~ (after paste_terminal_on), well above the codes it gives
 * terminfo's extended keys. */
#define PASTE_KEY_BEGIN (KEY_MAX + 0x700)
#define PASTE_KEY_END (KEY_MAX + 0x701)

/* Written to the terminal to turn bracketed paste on and off (xterm's DECSET 2004). */
#define PASTE_TERM_ON "\033[?2004h"
#define PASTE_TERM_OFF "\033[?2004l"

/* At most this much text is collected (the rest of a longer paste is dropped). */
#define PASTE_MAX (1024 * 1024)

struct paste {
	bool active;	 /* between the start and end keys */
	struct buf text; /* what was pasted, UTF-8 */
};

/* After ncurses owns the terminal (keypad on): defines the two key codes and turns bracketed paste on. */
void paste_terminal_on(void);

enum paste_result {
	PASTE_NONE, /* not part of a paste: handle the key as usual */
	PASTE_MORE, /* taken into the paste */
	PASTE_DONE, /* the paste ended: ps->text holds it (reset by the next paste) */
};

/* One key from wget_wch (keycode: it returned KEY_CODE_YES). */
enum paste_result paste_key(struct paste *ps, int ch, bool keycode);
void paste_free(struct paste *ps);

#endif
