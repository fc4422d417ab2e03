/* fatal: how kvcon ends on an error nothing can recover from (allocation failure, a failed getrandom or
 * pthread_create): the hook of whoever owns the terminal (core/termrestore.c) runs first, once, stderr comes back
 * from the log (core/log.c), the message goes to the log and to stderr, and the program exits 70. The crash
 * handlers (log_install_crash_handlers) run the same hook. The lowest module of core: xmalloc, util and log call it,
 * and it calls none of them (log registers its part with fatal_set_log). */
#ifndef KVCON_CORE_FATAL_H
#define KVCON_CORE_FATAL_H

#include <stdarg.h>

/* The hook run before any fatal exit and on crash signals (the terminal's restore); NULL: none. It must be
 * async-signal-tolerant enough to be called from a SIGSEGV handler. */
void fatal_set_hook(void (*hook)(void));
/* Runs the hook (once until it is set again), then the log's release of stderr. */
void fatal_run_hook(void);
/* The log's part: release_stderr gives fd 2 back when the log holds it; report writes the message to the log
 * and, escaped, to stderr ("kvcon: fatal: ..."). Without it the message goes to stderr as it is. */
void fatal_set_log(void (*release_stderr)(void), void (*report)(const char *fmt, va_list ap));

_Noreturn void fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
