/* `kvcon console`: one console session (consess) full-screen: the dashboard's console pane alone, zoomed to the
 * whole terminal (ui/panemain.c), the guest's screen above, one status line below. The dashboard's screen owns
 * the terminal: its restore path and its frame pacer (at most ~30 frames a second, whatever the guest's rate). */
#include "cmd/cmd_console.h"

#include <errno.h>
#include <getopt.h>
#include <locale.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "cmd/session.h"
#include "console/consess.h"
#include "core/log.h"
#include "core/loop.h"
#include "core/opts.h"
#include "core/util.h"
#include "core/xmalloc.h"
#include "kube/kube.h"
#include "ui/console_view.h"
#include "ui/panemain.h"


struct console_cmd {
	struct store *st;
	struct source *src;
	struct consess *cs; /* the pane's session */
	int timeout_s;
	uint64_t start_ms;
	struct loop_timer *timeout_timer;
	int listen_id;
	int rc;
	char *exit_msg;
};

static void quit(struct console_cmd *c, int rc, const char *msg)
{
	if (msg && !c->exit_msg)
		c->exit_msg = xstrdup(msg);
	c->rc = rc;
	loop_quit(rc);
}

static void on_timeout_check(void *arg)
{
	struct console_cmd *c = arg;
	c->timeout_timer = NULL;
	enum consess_state st = consess_state(c->cs);
	if (st == CONSESS_ENDED) {
		char msg[400];
		snprintf(msg, sizeof msg, "console %s", consess_status(c->cs));
		quit(c, consess_uid(c->cs)[0] || consess_bytes_in(c->cs) ? EXIT_OK : EXIT_API, msg);
		return;
	}
	bool never = !consess_uid(c->cs)[0] && st != CONSESS_OPEN;
	if (never && c->timeout_s > 0 && util_now_ms() - c->start_ms >= (uint64_t)c->timeout_s * 1000) {
		char msg[400];
		snprintf(msg, sizeof msg, "no console after %d s: %s", c->timeout_s, consess_status(c->cs));
		quit(c, EXIT_API, msg);
		return;
	}
	c->timeout_timer = loop_timer_add(200, on_timeout_check, c);
}

static void store_cb(void *arg, enum obj_kind kind, const struct obj *old, const struct obj *new_)
{
	struct console_cmd *c = arg;
	if (c->cs)
		consess_store_changed(c->cs, kind, old, new_);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: kvcon console NS/NAME|ws://URL|unix:PATH|tcp:HOST:PORT [--timeout MIN] [--log FILE]\n"
		   "       kvcon console NS/NAME [--expect RE] [--send LINE]... [--wait-stop] [--timeout MIN] [--log FILE]\n"
		   "  --timeout MIN wait at most MIN minutes (or 30s, 2m, 1h) for the VMI to be Running and the console "
		   "to open (default 5, 0: forever)\n"
		   "  --log FILE    append every byte the guest sends to FILE\n"
		   "  --expect RE   scripted (no terminal needed): wait for the extended regular expression in the guest's\n"
		   "                output (after the previous match); --send LINE types a line; in the order given;\n"
		   "  --wait-stop   then wait until the execution ended and the run strategy reacted. The guest's output goes\n"
		   "                to stdout, escaped.\n"
		   "Keys: Ctrl+] exits; F12 copy mode; Shift+PgUp/PgDn (or the mouse wheel) scroll back. A paste goes to the guest,\n"
		   "bracketed when the guest turned bracketed paste on.\n");
}

static bool is_vmi_target(const char *t)
{
	const char *slash = strchr(t, '/');
	return slash && slash != t && slash[1] && !strchr(slash + 1, '/') && !strchr(t, ':');
}

int cmd_console(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "timeout", required_argument, NULL, 't' },
		{ "log", required_argument, NULL, 'l' },
		{ "expect", required_argument, NULL, 'e' },
		{ "send", required_argument, NULL, 's' },
		{ "wait-stop", no_argument, NULL, 'w' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct console_cmd c = { .timeout_s = 300, .listen_id = -1, .rc = EXIT_OK };
	const char *log_path = NULL;
	const char **sopt = xcalloc((size_t)argc + 1, sizeof *sopt), **sval = xcalloc((size_t)argc + 1, sizeof *sval);
	int nsteps = 0;
	bool wait_stop = false;
	int opt;
	optind = 1;
	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		if (opt == 't') {
			/* minutes, as virtctl console counts them; a unit (30s, 2m, 1h) says otherwise */
			char *end;
			long v = strtol(optarg, &end, 10);
			long mult = *end == '\0' || strcmp(end, "m") == 0 ? 60 : strcmp(end, "s") == 0 ? 1
								  : strcmp(end, "h") == 0 ? 3600 : 0;
			if (end == optarg || mult == 0 || v < 0 || v > 10L * 365 * 24 * 3600 / mult) {
				log_eprintf("error: --timeout takes minutes (5), or a duration with its unit (30s, 2m, 1h)\n");
				return EXIT_USAGE;
			}
			c.timeout_s = (int)(v * mult);
		} else if (opt == 'l') {
			log_path = optarg;
		} else if (opt == 'e' || opt == 's') {
			sopt[nsteps] = opt == 'e' ? "--expect" : "--send";
			sval[nsteps++] = optarg;
		} else if (opt == 'w') {
			wait_stop = true;
		} else {
			free(sopt);
			free(sval);
			usage(opt == 'h' ? stdout : stderr);
			return opt == 'h' ? EXIT_OK : EXIT_USAGE;
		}
	}
	if (optind != argc - 1) {
		free(sopt);
		free(sval);
		usage(stderr);
		return EXIT_USAGE;
	}
	const char *target = argv[optind];
	if (nsteps > 0 || wait_stop) {
		/* the scripted console: no terminal needed */
		int rc = EXIT_USAGE;
		if (!is_vmi_target(target)) {
			log_eprintf("error: --expect, --send and --wait-stop take NS/NAME\n");
		} else {
			char *sns = xstrndup(target, (size_t)(strchr(target, '/') - target));
			rc = console_script(sns, strchr(target, '/') + 1, sopt, sval, nsteps, wait_stop, c.timeout_s,
					    log_path);
			free(sns);
		}
		free(sopt);
		free(sval);
		return rc;
	}
	free(sopt);
	free(sval);
	if (!isatty(0) || !isatty(1)) {
		log_eprintf("error: needs a terminal on stdin and stdout\n");
		return EXIT_USAGE;
	}
	setlocale(LC_ALL, "");
	signal(SIGPIPE, SIG_IGN);
	loop_init();
	log_open(opts_global()->log);
	struct consess_opts co = { .log_path = log_path };
	char *ns = NULL, *err = NULL, *raw_label = NULL;
	if (is_vmi_target(target)) {
		const char *slash = strchr(target, '/');
		ns = xstrndup(target, (size_t)(slash - target));
		co.ns = ns;
		co.name = slash + 1;
		c.st = store_new();
		/* watch only this namespace's VMIs (session_resolve watches ns alone): the phase and UID are all the
		 * console needs */
		c.src = session_resolve(c.st, co.ns, co.name, KUBE_KIND_BIT(OBJ_VMI), false, &err);
		if (!c.src) {
			log_eprintf("error: %s\n", err ? err : "no source");
			session_sources_close();
			free(err);
			free(ns);
			store_free(c.st);
			return EXIT_API;
		}
		co.st = c.st;
		co.src = c.src;
		c.listen_id = store_listen(c.st, store_cb, &c);
		raw_label = xasprintf("%s/%s", ns, co.name);
	} else {
		co.target = target;
		co.no_reconnect = false;
		raw_label = xstrdup(target);
	}
	char *label = util_escape_display(raw_label);
	free(raw_label);
	/* the dashboard's screen owns the terminal from here (library chatter goes to the log); the pane sizes the
	 * session to its region on the first frame */
	struct winsize ws;
	bool have_ws = ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 1 && ws.ws_col > 0;
	co.rows = have_ws ? ws.ws_row - 1 : 24;
	co.cols = have_ws ? ws.ws_col : 80;
	struct view *v = console_view_new(&co, label, &err);
	int rc = EXIT_OK;
	if (!v) {
		log_eprintf("error: %s\n", err ? err : "no console");
		free(err);
		rc = EXIT_USAGE;
		goto out;
	}
	c.cs = console_view_session(v);
	c.start_ms = util_now_ms();
	c.timeout_timer = loop_timer_add(200, on_timeout_check, &c);
	int lrc = panemain_run(v);
	loop_timer_cancel(c.timeout_timer);
	if (lrc < 0) {
		rc = EXIT_USAGE;
		goto out;
	}
	rc = c.exit_msg ? c.rc : lrc;
	log_info("console: %lu frames drawn in %.1f s, %llu guest bytes", panemain_frames(),
		 (double)(util_now_ms() - c.start_ms) / 1000.0, (unsigned long long)consess_bytes_in(c.cs));
	if (c.exit_msg)
		log_eprintf("error: %s\n", c.exit_msg);
out:
	if (c.st && c.listen_id >= 0)
		store_unlisten(c.st, c.listen_id);
	panemain_close();
	c.cs = NULL;
	session_sources_close();
	source_free_all();
	store_free(c.st);
	free(c.exit_msg);
	free(label);
	free(ns);
	return rc;
}
