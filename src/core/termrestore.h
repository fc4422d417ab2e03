/* The bytes that give the terminal back after a fatal error or a crash, for the full-screen commands (the
 * dashboard's screen, which `kvcon console` uses, and `kvcon vnc`). They are collected from terminfo while it is safe to allocate, and written
 * from the fatal hook with write() and tcsetattr() only. */
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
/* fcntl(fd, F_SETFL, flags) first when restoring (a descriptor made non-blocking: it is shared with the shell). */
void termrestore_set_flags(int fd, int flags);
/* The collected bytes (not NUL-terminated), their count in *len. */
const char *termrestore_bytes(size_t *len);
/* Async-signal-safe: writes the bytes to out_fd and sets the modes back on tty_fd. */
void termrestore_write(int out_fd, int tty_fd);
/* Makes the restore (to fd 1, modes on fd 0) the fatal hook, and installs the crash handlers. It runs once. */
void termrestore_arm(void);
/* Gives the terminal back now through the same path as the fatal hook (when armed), and disarms. */
void termrestore_now(void);
/* The caller gave the terminal back itself: the hook does nothing any more, and is unset. */
void termrestore_disarm(void);

#endif
