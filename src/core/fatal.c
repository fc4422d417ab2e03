/* fatal: the hook, the log's part, and the exit (see fatal.h). */
#include "core/fatal.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

static void (*hook_fn)(void);
static volatile sig_atomic_t hook_ran;
static void (*log_release)(void);
static void (*log_report)(const char *fmt, va_list ap);

void fatal_set_hook(void (*hook)(void))
{
	hook_fn = hook;
	hook_ran = 0;
}

void fatal_run_hook(void)
{
	if (hook_fn && !hook_ran) {
		hook_ran = 1;
		hook_fn();
	}
	if (log_release)
		log_release();
}

void fatal_set_log(void (*release_stderr)(void), void (*report)(const char *fmt, va_list ap))
{
	log_release = release_stderr;
	log_report = report;
}

void fatal(const char *fmt, ...)
{
	va_list ap;
	fatal_run_hook();
	va_start(ap, fmt);
	if (log_report) {
		log_report(fmt, ap);
	} else {
		fputs("kvcon: fatal: ", stderr);
		vfprintf(stderr, fmt, ap);
		fputc('\n', stderr);
	}
	va_end(ap);
	exit(70);
}
