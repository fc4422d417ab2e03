/* Logging to a file (fatal errors, which restore the terminal before reporting, are core/fatal.h).
 * While curses owns the screen, stderr (where libcurl, libvirt and libvncclient chatter) is sent to the log. */
#ifndef KVCON_CORE_LOG_H
#define KVCON_CORE_LOG_H

#include <stdarg.h>

enum log_level { LOG_DEBUG, LOG_INFO, LOG_WARN, LOG_ERROR };

/* Opens the log file (NULL: $KVCON_LOG, else $XDG_STATE_HOME/kvcon/kvcon.log). Returns 0 or -1. */
int log_open(const char *path);
const char *log_path(void);
void log_set_level(enum log_level level);
/* Also copy messages of at least this level to stderr (CLI mode); LOG_ERROR+1 disables. */
void log_set_stderr_level(int level);

/* Log lines are escaped (util_escape_display) before they reach the file or stderr: they carry text from clusters,
 * guests and kubeconfigs. */
void log_msg(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARN, __VA_ARGS__)
#define log_error(...) log_msg(LOG_ERROR, __VA_ARGS__)

/* The one way kvcon prints a message to stderr: formatted, then every line escaped (C0/C1 controls, ESC, invalid
 * UTF-8 shown as \e, \x9b, ...; the newlines that separate lines kept), so that text from outside (a server
 * URL from a kubeconfig, an API's message, a guest's name) never drives the terminal. */
void log_eprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Sends fd 2 to the log file (when curses takes the screen) and back. */
void log_capture_stderr(void);
void log_release_stderr(void);

/* Installs SIGSEGV/SIGBUS/SIGABRT/SIGFPE handlers that run the fatal hook (core/fatal.h), then re-raise. */
void log_install_crash_handlers(void);

/* ---- test seams: exported for tests/ only, not to be called by kvcon itself (tests/check-exports.sh) ---- */
void log_close(void);

#endif
