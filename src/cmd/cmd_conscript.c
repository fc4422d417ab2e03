/* The scripted console: `kvcon console NS/NAME --expect RE --send LINE ... [--wait-stop]` (and its engine
 * spelling `kvcon engine console NAME ...`). The VM resolves as every verb resolves it (cmd/session.c; on the
 * engine only for the engine spelling); the guest's bytes come through the source's console WebSocket (a
 * cluster's or the engine service's: the same shared console, backlog first) and reach stdout escaped. */
#include "cmd/cmd_console.h"

#include <errno.h>
#include <fcntl.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/session.h"
#include "core/buf.h"
#include "core/log.h"
#include "core/loop.h"
#include "core/opts.h"
#include "core/util.h"
#include "core/xmalloc.h"
#include "kube/kconsole.h"
#include "kube/kube.h"
#include "model/source.h"
#include "model/store.h"

struct step {
	bool send;
	const char *arg;
	regex_t re;
};

static struct {
	struct store *st;
	struct source *src;
	const char *ns, *name;
	struct step *steps;
	int nsteps, cur;
	struct buf seen;         /* guest text since the last match (for --expect) */
	bool wait_stop;
	struct stream *ws;       /* the console WebSocket */
	bool ws_failed;          /* refused or broken (said on stderr) */
	char first_uid[UID_LEN]; /* the execution the console was opened on */
	FILE *log;
} K;

/* Guest bytes for the terminal: printable text, CR, LF, TAB and BS pass; every other control byte shows
 * escaped, so nothing from the guest drives the user's terminal. */
static void show(const char *data, size_t len)
{
	struct buf b;
	buf_init(&b);
	size_t start = 0;
	for (size_t i = 0; i <= len; i++) {
		bool cut = i == len || data[i] == '\r' || data[i] == '\n' || data[i] == '\t' || data[i] == '\b';
		if (!cut)
			continue;
		if (i > start) {
			size_t cap = (i - start) * 4 + 1;
			char *e = xmalloc(cap);
			size_t n = util_escape_display_n(data + start, i - start, e, cap);
			buf_add(&b, e, n);
			free(e);
		}
		if (i < len)
			buf_add_char(&b, data[i]);
		start = i + 1;
	}
	if (b.len)
		fwrite(b.data, 1, b.len, stdout);
	fflush(stdout);
	buf_free(&b);
}

static void run_steps(void)
{
	while (K.cur < K.nsteps) {
		struct step *s = &K.steps[K.cur];
		if (s->send) {
			char *line = xasprintf("%s\r", s->arg);
			stream_write(K.ws, line, strlen(line));
			free(line);
			K.cur++;
			continue;
		}
		regmatch_t m;
		if (K.seen.len && regexec(&s->re, K.seen.data, 1, &m, 0) == 0) {
			buf_consume(&K.seen, (size_t)m.rm_eo);
			K.cur++;
			continue;
		}
		return;
	}
}

static void on_ws_data(struct stream *st, const uint8_t *data, size_t len, void *arg)
{
	(void)st;
	(void)arg;
	if (len == 0)
		return;
	if (K.log)
		fwrite(data, 1, len, K.log);
	show((const char *)data, len);
	for (size_t i = 0; i < len; i++)
		if (data[i] != '\0')
			buf_add_char(&K.seen, (char)data[i]);
	if (K.seen.len > (1u << 20))
		buf_consume(&K.seen, K.seen.len - (1u << 19));
	run_steps();
}

static void on_ws_state(struct stream *st, enum stream_state state, void *arg)
{
	(void)arg;
	if (state == STREAM_OPEN)
		run_steps(); /* a --send waits for the connection */
	if (state == STREAM_CLOSED) {
		/* refused, broken, or closed by the server while a step still waits (the execution ended, the service
		 * went away): said at once, never a silent wait until --timeout */
		if (stream_end(st) == STREAM_END_REFUSED || stream_end(st) == STREAM_END_ERROR ||
		    (stream_end(st) == STREAM_END_REMOTE && K.cur < K.nsteps)) {
			const char *why = stream_reason(st) && *stream_reason(st) ? stream_reason(st)
										: stream_end_name(stream_end(st));
			if (stream_end(st) == STREAM_END_REMOTE && !(stream_reason(st) && *stream_reason(st)))
				why = "the console closed before the expected output";
			char *e = util_escape_display(why);
			char *n = util_escape_display(K.name);
			log_eprintf("\nerror: console %s: %s\n", n, e);
			free(n);
			free(e);
			K.ws_failed = true;
			loop_quit(EXIT_API);
		}
	}
}

/* The execution the console was opened on has ended (its VMI is gone, replaced or final). */
static bool execution_ended(void)
{
	const struct vmi *v = (const struct vmi *)store_find(K.st, K.src, OBJ_VMI, K.ns, K.name);
	if (v == NULL || strcmp(v->o.uid, K.first_uid) != 0)
		return true;
	return strcmp(v->phase, "Succeeded") == 0 || strcmp(v->phase, "Failed") == 0;
}

static bool finished(void)
{
	if (K.cur < K.nsteps)
		return false;
	/* the execution's end as the API says it: a service's shared console follows the next execution (an Always
	 * restart) without closing */
	return !K.wait_stop || execution_ended();
}

/* After --wait-stop: the VM's run strategy has reacted (an Always VM runs a new execution; nothing is starting,
 * stopping or terminating), as the in-process engine converged before it returned. */
static bool reacted(void)
{
	static const char *const moving[] = { "Starting", "Stopping", "Terminating", "Provisioning", "Migrating",
					      "WaitingForVolumeBinding" };
	const struct vm *vm = (const struct vm *)store_find(K.st, K.src, OBJ_VM, K.ns, K.name);
	if (vm == NULL)
		return true;
	const char *ps = vm->printable_status ? vm->printable_status : "";
	for (size_t k = 0; k < sizeof moving / sizeof moving[0]; k++)
		if (strcmp(ps, moving[k]) == 0)
			return false;
	if (!util_str_eq(vm->run_strategy, "Always"))
		return true;
	const struct vmi *v = (const struct vmi *)store_find(K.st, K.src, OBJ_VMI, K.ns, K.name);
	return v && strcmp(v->o.uid, K.first_uid) != 0 && util_str_eq(v->phase, "Running");
}

static int script(const char *ns, const char *name, int timeout_s)
{
	char *err = NULL;
	K.st = store_new();
	K.src = session_resolve(K.st, ns, name, 0, true, &err);
	if (K.src == NULL) {
		char *e = util_escape_display(err ? err : "no source");
		log_eprintf("error: %s\n", e);
		free(e);
		free(err);
		return EXIT_API;
	}
	char *halted = console_not_running(K.st, K.src, ns, name);
	if (halted) { /* nothing will start: said at once, not after --timeout */
		log_eprintf("error: %s\n", halted);
		free(halted);
		return EXIT_API;
	}
	const struct obj *vmi = store_find(K.st, K.src, OBJ_VMI, ns, name);
	snprintf(K.first_uid, UID_LEN, "%s", vmi ? vmi->uid : "");
	K.ws = kube_console_open(kube_source_http(K.src), K.src->name, ns, name, &err);
	if (K.ws == NULL) {
		char *e = util_escape_display(err ? err : "no console"), *n = util_escape_display(name);
		log_eprintf("error: console %s: %s\n", n, e);
		free(n);
		free(e);
		free(err);
		return EXIT_API;
	}
	static const struct stream_cbs cbs = { .data = on_ws_data, .state = on_ws_state };
	stream_set_callbacks(K.ws, &cbs, NULL);
	uint64_t until = util_now_ms() + (uint64_t)timeout_s * 1000;
	while (!finished() && !loop_quitting() && (timeout_s == 0 || util_now_ms() < until))
		loop_once(50);
	bool ok = finished();
	stream_free(K.ws); /* no callback after it */
	K.ws = NULL;
	for (uint64_t settle = util_now_ms() + 60000; ok && K.wait_stop && !reacted() && !loop_quitting() &&
							util_now_ms() < settle;)
		loop_once(100);
	if (ok)
		return EXIT_OK;
	if (!K.ws_failed && !loop_quitting()) {
		char *n = util_escape_display(name);
		if (K.cur < K.nsteps) {
			char *re = util_escape_display(K.steps[K.cur].arg);
			log_eprintf("\nerror: console %s: timed out after %d s waiting for /%s/\n", n, timeout_s, re);
			free(re);
		} else {
			log_eprintf("\nerror: console %s: timed out after %d s waiting for the execution to stop\n", n,
				    timeout_s);
		}
		free(n);
	}
	return EXIT_API;
}

int console_script(const char *ns, const char *name, const char *const *opt, const char *const *val, int n,
		   bool wait_stop, int timeout_s, const char *logfile)
{
	memset(&K, 0, sizeof K);
	K.ns = ns;
	K.name = name;
	K.wait_stop = wait_stop;
	K.steps = xcalloc((size_t)n + 1, sizeof *K.steps);
	int rc = EXIT_OK;
	for (int i = 0; i < n && rc == EXIT_OK; i++) {
		struct step *s = &K.steps[K.nsteps];
		s->send = strcmp(opt[i], "--send") == 0;
		s->arg = val[i];
		if (!s->send && regcomp(&s->re, s->arg, REG_EXTENDED | REG_NEWLINE) != 0) {
			char *e = util_escape_display(s->arg);
			log_eprintf("error: bad regular expression '%s'\n", e);
			free(e);
			rc = EXIT_USAGE;
		} else {
			K.nsteps++;
		}
	}
	if (rc == EXIT_OK && logfile) {
		/* the transcript holds the guest's output: 0600 */
		char why[UTIL_WHY_LEN] = "";
		int lfd = util_open_private(logfile, O_APPEND, false, why);
		if (lfd < 0 || (K.log = fdopen(lfd, "ab")) == NULL) {
			log_eprintf("error: %s: %s\n", logfile, *why ? why : strerror(errno));
			if (lfd >= 0)
				close(lfd);
			rc = EXIT_USAGE;
		}
	}
	if (rc == EXIT_OK) {
		session_cli_start(); /* session_resolve lists and watches the VM's own namespace */
		buf_init(&K.seen);
		rc = script(ns, name, timeout_s);
		buf_free(&K.seen);
		source_free_all();
		store_free(K.st);
		loop_fini();
	}
	if (K.log)
		fclose(K.log);
	for (int i = 0; i < K.nsteps; i++)
		if (!K.steps[i].send)
			regfree(&K.steps[i].re);
	free(K.steps);
	memset(&K, 0, sizeof K);
	return rc;
}
