/* termkeys: what the VNC display needs to turn a terminal's keys into X key events: the modifier bits, and which
 * keysyms a US keyboard types with Shift. (The terminal's bytes are decoded by the dashboard's screen, ui/screen.c,
 * through ncurses; ui/vnc_view.c maps its keys to keysyms.) */
#ifndef KVCON_CONSOLE_TERMKEYS_H
#define KVCON_CONSOLE_TERMKEYS_H

#include <stdbool.h>
#include <stdint.h>

enum { TK_SHIFT = 1, TK_ALT = 2, TK_CTRL = 4 };

/* True when the keysym is typed with Shift on a US layout ('A', '>', '~'...): VNC servers such as QEMU map
 * keysyms to scancodes and need the Shift press a real keyboard would send. */
bool termkeys_needs_shift(uint32_t keysym);

#endif
