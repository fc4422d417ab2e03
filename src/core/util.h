/* Small helpers shared by every module: time, paths, atomic files, display escaping. */
#ifndef KVCON_CORE_UTIL_H
#define KVCON_CORE_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Milliseconds on the monotonic clock. */
uint64_t util_now_ms(void);
/* Seconds since the epoch (wall clock). */
int64_t util_wall_s(void);

/* Parses RFC 3339 ("2024-01-02T03:04:05Z", fractional seconds and offsets allowed) to epoch seconds.
 * Returns 0 on success, -1 when malformed. */
int util_parse_time(const char *s, int64_t *out);
/* Formats epoch seconds as RFC 3339 UTC into buf (at least 21 bytes). */
void util_format_time(int64_t t, char *buf, size_t len);
/* kubectl's human duration ("45s", "3m12s", "5h", "2d3h", "400d", "3y20d") for a number of seconds. */
void util_human_duration(int64_t seconds, char *buf, size_t len);

/* The home directory: $HOME when it is an absolute path, else the passwd entry of the effective uid (never a
 * shared directory such as /tmp); NULL when there is neither. Caller frees. */
char *util_home_dir(void);
/* $XDG_STATE_HOME/kvcon (default ~/.local/state/kvcon), $XDG_CONFIG_HOME/kvcon (~/.config/kvcon), ~ as
 * util_home_dir; with no home directory at all they print an `error:` line and exit 1. Caller frees. */
char *util_state_dir(void);
char *util_config_dir(void);
char *util_path_join(const char *a, const char *b);
/* Creates path and missing parents with exactly mode (whatever the umask: a directory it creates is chmod'ed);
 * directories that exist already are left as they are. */
int util_mkdir_p(const char *path, mode_t mode);
/* Opens (O_WRONLY|O_CREAT|O_CLOEXEC|extra) a file kvcon writes text from outside into (logs, transcripts,
 * screenshots): a new file is 0600 whatever the umask; an existing one keeps its mode unless tighten is set
 * (kvcon's own default log), which removes group and other bits from a regular file the caller owns.
 * Returns the fd or -1 with errno. */
int util_open_private(const char *path, int extra, bool tighten);

/* Writes data to path atomically: temporary file in the same directory, fsync, rename, fsync of the directory. */
int util_write_file_atomic(const char *path, const void *data, size_t len, mode_t mode);
/* Reads a whole file (NUL-terminated, length in *len if not NULL). Caller frees; NULL with errno set. */
char *util_read_file(const char *path, size_t *len);

/* Copies s into a new string where every byte that could drive a terminal (C0, DEL, C1, ESC, invalid UTF-8)
 * is shown escaped (\e, \x9b, ...), keeping valid printable UTF-8. Caller frees. */
char *util_escape_display(const char *s);
/* Same, for JSON/plain-text CLI output into a buffer of at most len bytes; returns bytes written. */
size_t util_escape_display_n(const char *s, size_t slen, char *out, size_t len);

/* A UUID (version 4) in canonical text form, 37 bytes with the NUL. */
void util_uuid_v4(char out[37]);

bool util_str_eq(const char *a, const char *b); /* NULL-safe */
bool util_has_prefix(const char *s, const char *prefix);

#endif
