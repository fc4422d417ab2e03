/* The bytes that give the terminal back after a fatal error or a crash, for the one terminal owner (the
 * dashboard's screen, which full-screen `kvcon console` and `kvcon vnc` use too). They are collected from terminfo
 * while it is safe to allocate, and written from the fatal hook with write() and tcsetattr() only. */
#ifndef KVCON_CORE_TERMRESTORE_H
#define KVCON_CORE_TERMRESTORE_H

#include <stddef.h>
#include <termios.h>

/* Starts a new collection: no bytes, and tio (NULL: none) as the terminal modes to set back. */
void termrestore_begin(const struct termios *tio);
/* Appends s; NULL and (char *)-1 (tigetstr's "absent" and "not a string") add nothing, nor does what would
 * not fit. */
void termrestore_add(const char *s);
/* Appends the current terminal's terminfo string capability cap ("rmcup"), when it has one. */
void termrestore_add_cap(const char *cap);
/* Makes the restore (to fd 1, modes on fd 0) the fatal hook, and installs the crash handlers. It runs once. */
void termrestore_arm(void);
/* The caller gave the terminal back itself: the hook does nothing any more, and is unset. */
void termrestore_disarm(void);

/* ---- test seams: exported for tests/ only, not to be called by kvcon itself (tests/check-exports.sh) ---- */
/* The collected bytes (not NUL-terminated), their count in *len. */
const char *termrestore_bytes(size_t *len);
/* Async-signal-safe: writes the bytes to out_fd and sets the modes back on tty_fd. */
void termrestore_write(int out_fd, int tty_fd);

#endif
