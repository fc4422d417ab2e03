/* The log file, stderr capture while curses owns the terminal, and fatal exits that give the terminal back. */
#include "core/log.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/fatal.h"
#include "core/util.h"

static FILE *log_file;
static char *log_file_path;
static enum log_level log_min = LOG_INFO;
static int log_stderr_min = LOG_ERROR + 1;
static int saved_stderr = -1;

static const char *const level_names[] = { "debug", "info", "warn", "error" };

int log_open(const char *path)
{
	char *p = NULL;
	if (path == NULL)
		path = getenv("KVCON_LOG");
	if (path == NULL || *path == '\0') {
		char *dir = util_state_dir();
		if (util_mkdir_p(dir, 0700) < 0) {
			free(dir);
			return -1;
		}
		p = util_path_join(dir, "kvcon.log");
		free(dir);
		path = p;
	}
	/* guest and cluster text ends up here: 0600, and kvcon's own default log is tightened if an older kvcon
	 * left it readable */
	int fd = util_open_private(path, O_APPEND, p != NULL, NULL); /* main refused a bad --log-file already */
	FILE *f = fd >= 0 ? fdopen(fd, "a") : NULL;
	if (f == NULL) {
		if (fd >= 0)
			close(fd);
		free(p);
		return -1;
	}
	setvbuf(f, NULL, _IOLBF, 0);
	log_close();
	log_file = f;
	free(log_file_path);
	log_file_path = p ? p : strdup(path);
	return 0;
}

void log_close(void)
{
	if (log_file)
		fclose(log_file);
	log_file = NULL;
}

const char *log_path(void)
{
	return log_file_path;
}

void log_set_level(enum log_level level)
{
	log_min = level;
}

void log_set_stderr_level(int level)
{
	log_stderr_min = level;
}

/* The formatted message, or NULL when it cannot be built. Caller frees. */
__attribute__((format(printf, 1, 0))) static char *vformat(const char *fmt, va_list ap)
{
	char *s = NULL;
	if (vasprintf(&s, fmt, ap) < 0)
		return NULL;
	return s;
}

/* util_escape_display without xmalloc (fatal() prints through here: no recursion on an allocation failure). */
static char *escape_dup(const char *s, size_t n)
{
	char *o = malloc(n * 4 + 1);
	if (o)
		util_escape_display_n(s, n, o, n * 4 + 1);
	return o;
}

/* Writes s to f with each line escaped, the separating newlines kept. */
static void put_escaped_lines(FILE *f, const char *s)
{
	while (*s) {
		size_t n = strcspn(s, "\n");
		char *e = escape_dup(s, n);
		if (e)
			fputs(e, f);
		free(e);
		s += n;
		if (*s == '\n') {
			fputc('\n', f);
			s++;
		}
	}
}

__attribute__((format(printf, 2, 0))) static void log_vmsg(enum log_level level, const char *fmt, va_list ap)
{
	bool to_file = level >= log_min && log_file;
	bool to_stderr = (int)level >= log_stderr_min && saved_stderr < 0;
	if (!to_file && !to_stderr)
		return;
	char *msg = vformat(fmt, ap);
	/* one message, one line: a newline in text from outside cannot forge another log line */
	char *e = msg ? escape_dup(msg, strlen(msg)) : NULL;
	if (e == NULL) {
		free(msg);
		return;
	}
	if (to_file) {
		struct timespec ts;
		struct tm tm;
		char when[32];
		clock_gettime(CLOCK_REALTIME, &ts);
		gmtime_r(&ts.tv_sec, &tm);
		strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
		fprintf(log_file, "%s.%03ldZ %s: %s\n", when, ts.tv_nsec / 1000000, level_names[level], e);
	}
	if (to_stderr)
		fprintf(stderr, "kvcon: %s\n", e);
	free(e);
	free(msg);
}

__attribute__((format(printf, 1, 0))) static void log_veprintf(const char *fmt, va_list ap)
{
	char *msg = vformat(fmt, ap);
	if (msg == NULL)
		return;
	put_escaped_lines(stderr, msg);
	free(msg);
}

void log_eprintf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	log_veprintf(fmt, ap);
	va_end(ap);
}

void log_msg(enum log_level level, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	log_vmsg(level, fmt, ap);
	va_end(ap);
}

void log_capture_stderr(void)
{
	if (saved_stderr >= 0 || log_file == NULL)
		return;
	fflush(stderr);
	saved_stderr = dup(2);
	dup2(fileno(log_file), 2);
}

void log_release_stderr(void)
{
	if (saved_stderr < 0)
		return;
	fflush(stderr);
	dup2(saved_stderr, 2);
	close(saved_stderr);
	saved_stderr = -1;
}

static void crash_handler(int sig)
{
	fatal_run_hook();
	static const char msg[] = "kvcon: crashed; the terminal was restored\n";
	ssize_t w = write(2, msg, sizeof msg - 1);
	(void)w;
	signal(sig, SIG_DFL);
	raise(sig);
}

void log_install_crash_handlers(void)
{
	static const int sigs[] = { SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL };
	for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = crash_handler;
		sa.sa_flags = SA_RESETHAND;
		sigaction(sigs[i], &sa, NULL);
	}
}

/* fatal()'s message (core/fatal.c): to the log, and escaped to stderr. */
__attribute__((format(printf, 1, 0))) static void report_fatal(const char *fmt, va_list ap)
{
	va_list ap2;
	va_copy(ap2, ap);
	log_stderr_min = LOG_ERROR + 1; /* reported once, below */
	log_vmsg(LOG_ERROR, fmt, ap);
	fputs("kvcon: fatal: ", stderr);
	log_veprintf(fmt, ap2);
	fputc('\n', stderr);
	va_end(ap2);
}

/* The log's part of fatal(), from the start of the program (before anything can fail). */
__attribute__((constructor)) static void register_fatal(void)
{
	fatal_set_log(log_release_stderr, report_fatal);
}
