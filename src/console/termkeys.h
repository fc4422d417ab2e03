/* termkeys: decodes the bytes a terminal sends (keys, xterm SGR mouse reports) into X keysyms and pointer events,
 * for the VNC display. Ctrl+] is reported as "leave" and F8 as "menu" (the VNC viewers' menu key). */
#ifndef KVCON_CONSOLE_TERMKEYS_H
#define KVCON_CONSOLE_TERMKEYS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum termkeys_type { TK_KEY, TK_MOUSE, TK_LEAVE, TK_MENU };
enum { TK_SHIFT = 1, TK_ALT = 2, TK_CTRL = 4 };

struct termkeys_event {
	enum termkeys_type type;
	uint32_t keysym; /* TK_KEY: the X keysym (letters as typed: 'A' arrives as Shift + 'A') */
	unsigned mods;	 /* TK_SHIFT | TK_ALT | TK_CTRL */
	/* TK_MOUSE: cell (0-based), button 0 left 1 middle 2 right 3 wheel up 4 wheel down, -1 none (motion) */
	int col, row, button;
	bool press;  /* press (true) or release */
	bool motion; /* a move (with button held, or none) */
	/* TK_KEY: the raw ASCII byte for letters/digits (menu selection), else 0 */
	char ch;
};

typedef void (*termkeys_cb)(const struct termkeys_event *ev, void *arg);

struct termkeys;

struct termkeys *termkeys_new(termkeys_cb cb, void *arg);
void termkeys_free(struct termkeys *k); /* NULL is ignored */
/* Feeds terminal input; complete keys are reported at once. A lone ESC waits for termkeys_flush(). */
void termkeys_feed(struct termkeys *k, const uint8_t *data, size_t len);
/* True when an incomplete sequence is buffered (call termkeys_flush after ~50 ms without input). */
bool termkeys_pending(const struct termkeys *k);
/* Reports what is buffered as keys (a lone ESC becomes Escape). */
void termkeys_flush(struct termkeys *k);

/* True when the keysym is typed with Shift on a US layout ('A', '>', '~'...): VNC servers such as QEMU map
 * keysyms to scancodes and need the Shift press a real keyboard would send. */
bool termkeys_needs_shift(uint32_t keysym);

#endif
