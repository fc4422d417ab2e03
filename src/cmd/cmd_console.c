/* `kvcon console`: one console session (consess) full-screen: the dashboard's console pane alone, zoomed to the
 * whole terminal (ui/panemain.c), the guest's screen above, one status line below. The dashboard's screen owns
 * the terminal: its restore path and its frame pacer (at most ~30 frames a second, whatever the guest's rate). */
#include "cmd/cmd_console.h"

#include <errno.h>
#include <locale.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "cmd/args.h"
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
	const char *ns, *name; /* the VM, when the target is one */
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
	char *halted = never && c->st ? console_not_running(c->st, c->src, c->ns, c->name) : NULL;
	if (halted) { /* stopped while the console waited: nothing is coming */
		quit(c, EXIT_API, halted);
		free(halted);
		return;
	}
	if (never && c->timeout_s > 0 && util_now_ms() - c->start_ms >= (uint64_t)c->timeout_s * 1000) {
		char msg[400];
		snprintf(msg, sizeof msg, "no console after %d s: %s", c->timeout_s, consess_status(c->cs));
		quit(c, EXIT_API, msg);
		return;
	}
	c->timeout_timer = loop_timer_add(200, on_timeout_check, c);
}

char *console_not_running(const struct store *st, struct source *src, const char *ns, const char *name)
{
	const struct vm *vm = (const struct vm *)store_find(st, src, OBJ_VM, ns, name);
	const struct vmi *vmi = (const struct vmi *)store_find(st, src, OBJ_VMI, ns, name);
	bool final = vmi && (util_str_eq(vmi->phase, "Succeeded") || util_str_eq(vmi->phase, "Failed"));
	if (vm == NULL || vm_will_run(vm, vmi) || (vmi && !final))
		return NULL;
	char *n = util_escape_display(name), *e_ns = util_escape_display(ns);
	char *msg = xasprintf("VM %s/%s is %s (runStrategy %s%s%s): it has no console until it runs; start it with: "
			      "kvcon start %s/%s",
			      e_ns, n, vm->printable_status ? vm->printable_status : "not running",
			      vm->run_strategy ? vm->run_strategy : "unset", final ? ", its last VMI " : "",
			      final ? vmi->phase : "", e_ns, n);
	free(n);
	free(e_ns);
	return msg;
}

static void store_cb(void *arg, enum obj_kind kind, const struct obj *old, const struct obj *new_)
{
	struct console_cmd *c = arg;
	if (c->cs)
		consess_store_changed(c->cs, kind, old, new_);
}

static bool is_vmi_target(const char *t)
{
	const char *slash = strchr(t, '/');
	return slash && slash != t && slash[1] && !strchr(slash + 1, '/') && !strchr(t, ':');
}

int cmd_console(int argc, char **argv)
{
	/* the flags are the command table's (cmd/cmd.c), parsed there (cmd/args.c): --timeout counts minutes as
	 * virtctl's, or takes a unit */
	struct args a;
	int p = args_parse_verb(argc, argv, &a);
	if (p == ARGS_OK && a.npos != 1) {
		log_eprintf("error: %s\nSee 'kvcon console --help' for usage.\n",
			    a.npos ? "one console at a time" : "which console? (NS/NAME, ws://URL, unix:PATH or tcp:HOST:PORT)");
		p = ARGS_ERR;
	}
	if (p != ARGS_OK) {
		args_free(&a);
		return p == ARGS_HELP ? EXIT_OK : EXIT_USAGE;
	}
	long tmo = args_num(&a, "--timeout", 300000);
	struct console_cmd c = { .timeout_s = tmo > 0 && tmo < 1000 ? 1 : (int)(tmo / 1000), .listen_id = -1,
				 .rc = EXIT_OK };
	const char *log_path = args_get(&a, "--log");
	const char **sopt = xcalloc((size_t)a.nitems + 1, sizeof *sopt);
	const char **sval = xcalloc((size_t)a.nitems + 1, sizeof *sval);
	int nsteps = 0;
	for (int i = 0; i < a.nitems; i++)
		if (strcmp(a.items[i].f->l, "--expect") == 0 || strcmp(a.items[i].f->l, "--send") == 0) {
			sopt[nsteps] = a.items[i].f->l;
			sval[nsteps++] = a.items[i].val;
		}
	bool wait_stop = args_bool(&a, "--wait-stop");
	const char *target = a.pos[0];
	args_free(&a);
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
	struct consess_opts co = { .log_path = log_path, .view_only = opts_global()->readonly };
	char *ns = NULL, *err = NULL, *raw_label = NULL;
	if (is_vmi_target(target)) {
		const char *slash = strchr(target, '/');
		ns = xstrndup(target, (size_t)(slash - target));
		co.ns = ns;
		co.name = slash + 1;
		c.st = store_new();
		/* watch only this namespace's VMIs and VMs (session_resolve watches ns alone): the VMIs (phase, UID)
		 * and the VMs (a halted VM has no console to wait for) */
		c.src = session_resolve(c.st, co.ns, co.name, KUBE_KIND_BIT(OBJ_VMI) | KUBE_KIND_BIT(OBJ_VM), false,
					&err);
		char *halted = c.src ? console_not_running(c.st, c.src, co.ns, co.name) : NULL;
		if (halted) {
			log_eprintf("error: %s\n", halted);
			free(halted);
			free(ns);
			store_free(c.st);
			return EXIT_API;
		}
		if (!c.src) {
			log_eprintf("error: %s\n", err ? err : "no source");
			free(err);
			free(ns);
			store_free(c.st);
			return EXIT_API;
		}
		co.st = c.st;
		co.src = c.src;
		c.ns = co.ns;
		c.name = co.name;
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
	source_free_all();
	store_free(c.st);
	free(c.exit_msg);
	free(label);
	free(ns);
	return rc;
}
