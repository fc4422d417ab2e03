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
/* Files at paths someone else may have prepared (a sticky /tmp, the run directory QEMU's account can write).
 * Nothing is followed (O_NOFOLLOW, O_EXCL), every check is fstat of the descriptor opened, and a refusal leaves why
 * (UTIL_WHY_LEN bytes, NULL for none) with one reason for an "error: PATH: WHY" line: "a symlink (not followed)",
 * "owned by uid 1000, not by uid 0 (this kvcon)", "not a regular file (a FIFO)", or strerror(errno). */
#define UTIL_WHY_LEN 160

/* Opens (O_WRONLY|O_CLOEXEC|extra) a file kvcon writes text from outside into at a path it was given (logs,
 * transcripts): a new file is created O_EXCL, 0600 whatever the umask; an existing one is opened O_NOFOLLOW and
 * kept only when fstat shows a regular file of the euid with one link that group and others cannot write (its mode
 * is kept, unless tighten is set (kvcon's own default log): then group and other bits go). Returns the fd, or -1
 * with errno and why. */
int util_open_private(const char *path, int extra, bool tighten, char *why);

/* Writes data to path atomically: a temporary file made by util_temp_open, chmod'ed to mode once written, fsync,
 * then util_temp_commit. 0, or -1 with errno (and why). */
int util_write_file_why(const char *path, const void *data, size_t len, mode_t mode, char *why);
int util_write_file_atomic(const char *path, const void *data, size_t len, mode_t mode);
/* The temporary file of an atomic write of path: "PATH.tmp.XXXXXX" by mkostemp (O_EXCL, a random name, mode
 * 0600) beside it. Returns the fd and *tmp (caller frees), or -1 with errno. */
int util_temp_open(const char *path, char **tmp);
/* Whether path may be replaced by util_temp_commit: nothing there, or a regular file of the euid (lstat: a
 * symlink is refused, not followed). 0, or -1 with errno and why. An early answer for a long job (the bundle);
 * util_temp_commit checks again. */
int util_target_check(const char *path, char *why);
/* Renames the written, closed temporary file tmp to path, which may hold nothing or a regular file of the euid
 * (anything else is refused, tmp removed); fsyncs the directory. 0, or -1 with errno and why. */
int util_temp_commit(char *tmp, const char *path, char *why);

/* Who may own a file util_open_checked opens: the owner of the directory it is in (the QEMU account root gave its
 * run directory to). */
#define UTIL_OWNER_DIR ((uid_t)-2)
/* Opens for reading a file in a directory someone else may write: the directory and the file are not followed,
 * the open does not block (a FIFO), and fstat must show a regular file owned by one of owners (uids or
 * UTIL_OWNER_DIR) — any owner when only the euid can write the directory. Returns the fd or -1 with errno, why. */
int util_open_checked(const char *path, const uid_t *owners, size_t nowners, char *why);
/* Reads fd to its end or max bytes, whichever comes first (NUL-terminated, length in *len if not NULL). Caller
 * frees; NULL with errno. */
char *util_read_fd(int fd, size_t max, size_t *len);
/* util_open_checked then util_read_fd; a file larger than max is refused (EFBIG). Caller frees; NULL with errno
 * and why. */
char *util_read_file_checked(const char *path, const uid_t *owners, size_t nowners, size_t max, size_t *len,
			     char *why);
/* Reads a whole file (NUL-terminated, length in *len if not NULL). Caller frees; NULL with errno set. */
char *util_read_file(const char *path, size_t *len);

/* Copies s into a new string where every byte that could drive a terminal (C0, DEL, C1, ESC, invalid UTF-8)
 * is shown escaped (\e, \x9b, ...), keeping valid printable UTF-8. Caller frees. */
char *util_escape_display(const char *s);
/* Same, for JSON/plain-text CLI output into a buffer of at most len bytes; returns bytes written. */
size_t util_escape_display_n(const char *s, size_t slen, char *out, size_t len);

/* A UUID (version 4) in canonical text form, 37 bytes with the NUL. */
void util_uuid_v4(char out[37]);

/* data[0..n) as base64 (RFC 4648, with padding), NUL-terminated. Caller frees. */
char *util_b64_encode(const void *data, size_t n);
/* in[0..inlen) decoded from base64, NUL-terminated (*outlen, when not NULL, without the NUL); NULL when
 * malformed. CR and LF are skipped, spaces and tabs too unless UTIL_B64_PADDED; '=' is padding only at the end, at most two; a lone sixth of a
 * byte at the end is malformed. UTIL_B64_PADDED: the characters must come in fours (Go's StdEncoding, as
 * encoding/json reads []byte); UTIL_B64_URLSAFE: '-' and '_' as well as '+' and '/'. Caller frees. */
#define UTIL_B64_PADDED 1u
#define UTIL_B64_URLSAFE 2u
char *util_b64_decode(const char *in, size_t inlen, size_t *outlen, unsigned flags);
/* Whether process pid runs: false once it exited, even while it is a zombie its parent has not reaped yet
 * (kill(pid, 0) still answers for one; init, the parent of a detached process, may reap a second later). */
bool util_pid_running(pid_t pid);
/* Whether process pid is on its way out: its main thread has exited (a zombie in /proc/PID/stat) while another
 * thread still runs, keeping the process's files and locks a little longer. */
bool util_pid_leaving(pid_t pid);
/* fsyncs the directory dir (a name made, renamed or removed in it made durable); nothing when it cannot be opened. */
void util_fsync_dir(const char *dir);
/* Runs argv (execvp) with stdin, stdout and stderr on /dev/null and waits for it. 0 when it exited 0, else -1 with
 * *err (caller frees): "WHAT failed (exit N)" or "(signal N)", what argv[0] when NULL. */
int util_run_quiet(char *const argv[], const char *what, char **err);

bool util_str_eq(const char *a, const char *b); /* NULL-safe */
bool util_has_prefix(const char *s, const char *prefix);

#endif
