/* `kvcon engine VERB ...`: the engine's own verbs (apply, serve, pull, reconcile; migrate and drain in
 * cmd_engine_migrate.c), each through the engine service of its hosts (-c URI, default the embedded driver; serve
 * and pull are kvcon-engine's, exec'd: service/service.h), and
 * the old spellings of the top-level verbs on the engine only (get, the actions of model/registry.c,
 * console, vnc: cmd_get, cmd_action, cmd_console, cmd_vnc with opts.engine_only). The verbs are child rows of the
 * engine's row in the command table (cmd/cmd.c), their flags parsed by cmd/args.c. */
#include "cmd/cmd_engine.h"
#include "cmd/cmd_apply.h"

#include <errno.h>
#include <stddef.h>
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
#include "core/ydoc.h"
#include "cmd/args.h"
#include "cmd/cmd_console.h"
#include "cmd/cmd_diagnose.h"
#include "cmd/cmd_get.h"
#include "cmd/cmd_vnc.h"
#include "cmd/cmd_serve.h"
#include "kube/http.h"
#include "kube/kconsole.h"
#include "kube/kube.h"
#include "model/columns.h"
#include "model/registry.h"
#include "model/source.h"
#include "model/store.h"
#include "service/service.h"
#include "service/settings.h"

static struct {
	struct store *st;
	struct source **srcs;
	int nsrcs;
	const char *ns;
} C;

/* ---- a verb's options, and asynchronous replies ---- */

void engine_cli_reply(void *reply, int status, const char *msg)
{
	struct cli_reply *r = reply;
	r->done = true;
	r->status = status;
	free(r->msg);
	r->msg = xstrdup0(msg);
}

static int open_engine(void)
{
	struct kvcon_opts *o = opts_global();
	session_cli_start();
	C.st = store_new();
	C.ns = o->ns ? o->ns : "default";
	/* the hosts open as every verb opens them (cmd/session.c): each ready or failed before the verb runs */
	char *err = NULL;
	C.nsrcs = session_open_engines(C.st, &C.srcs, &err);
	if (C.nsrcs < 0) {
		C.nsrcs = 0;
		char *e = util_escape_display(err);
		log_eprintf("error: %s\n", e);
		free(e);
		free(err);
		return EXIT_API;
	}
	for (int i = 0; i < C.nsrcs; i++)
		if (C.srcs[i]->notice && util_has_prefix(C.srcs[i]->notice, SESSION_DEGRADED)) {
			/* the service's own state (session_service_status): said every time, as get does */
			char *e = util_escape_display(C.srcs[i]->notice);
			log_eprintf("warning: %s\n", e);
			free(e);
		} else if (C.srcs[i]->notice && C.srcs[i]->type == SOURCE_KUBE) {
			/* a client's, from the service (the Node's kvcon.io/notice): the service itself only logs it,
			 * so that the once-a-boot stamp is the user's */
			session_notice_once(C.srcs[i]);
		}
	return EXIT_OK;
}

static int close_engine(int rc)
{
	loop_once(0); /* deliver what was posted last */
	return rc;
}

/* ---- apply ---- */

/* `kvcon engine apply -f ...` is `kvcon apply` on the engine (cmd/cmd_apply.c: multi-document files, kubectl's
 * output, its flags parsed by cmd/args.c from the apply row), which waits until the run strategies of the VMs it
 * stored have acted. */
int cmd_engine_apply(int argc, char **argv)
{
	opts_global()->engine_only = true;
	return cmd_apply(argc, argv);
}

/* ---- the verbs shared with the top level ---- */

/* `kvcon engine VERB NAME` is `kvcon VERB NS/NAME` resolved on the engine only (one verb tree: the same code,
 * output, flags and exit codes). The engine forms keep their old spellings as aliases: a bare NAME is in -n's
 * namespace (default), and the actions wait for their effect unless --no-wait (--timeout S: --wait=S). */
static int shared(int (*fn)(int, char **), char **av, int n)
{
	opts_global()->engine_only = true;
	av[n] = NULL;
	return fn(n, av);
}

static char *ns_name(const char *name)
{
	const char *ns = opts_global()->ns ? opts_global()->ns : "default";
	return strchr(name, '/') ? xstrdup(name) : xasprintf("%s/%s", ns, name);
}

/* An action's verb (model/registry.c; migrate is the engine's own, below) */
/* ACTION NAME [--force] [--grace-period N] [--delete-volumes] [--no-wait]
 * [--timeout S] [--wait[=S]]: cmd_action on NS/NAME. */
int cmd_engine_action(int argc, char **argv)
{
	/* its flags are its row's (the action's own, --no-wait, --timeout S), parsed here; the action itself is the
	 * top-level verb's with NS/NAME and --wait=S */
	struct args a;
	int p = args_parse_sub("engine", argc, argv, &a);
	if (p == ARGS_OK && a.npos != 1) {
		log_eprintf("error: %s\nSee 'kvcon engine %s --help' for usage.\n",
			    a.npos ? "one VM at a time" : "which VM? (NAME or NS/NAME)", argv[0]);
		p = ARGS_ERR;
	}
	if (p != ARGS_OK) {
		args_free(&a);
		return p == ARGS_HELP ? EXIT_OK : EXIT_USAGE;
	}
	char **av = xcalloc(8, sizeof *av);
	char *target = ns_name(a.pos[0]), *grace = NULL, *wait = NULL;
	int n = 0;
	av[n++] = argv[0];
	av[n++] = target;
	if (args_has(&a, "--grace-period"))
		av[n++] = grace = xasprintf("--grace-period=%ld", args_num(&a, "--grace-period", 0));
	if (args_bool(&a, "--force"))
		av[n++] = (char *)"--force";
	if (args_bool(&a, "--delete-volumes"))
		av[n++] = (char *)"--delete-volumes";
	if (!args_bool(&a, "--no-wait")) {
		long ms = args_has(&a, "--wait") ? args_num(&a, "--wait", 300000) : args_num(&a, "--timeout", 300000);
		av[n++] = wait = xasprintf("--wait=%ld", ms > 0 ? (ms + 999) / 1000 : 300);
	}
	args_free(&a);
	int rc = shared(cmd_action, av, n);
	free(wait);
	free(grace);
	free(target);
	free(av);
	return rc;
}

/* get [KIND] [NAME] [-o FMT] [get's flags]: cmd_get of KIND (vm when none); `get event NAME` is the events about
 * NAME (--field-selector involvedObject.name=NAME), as the engine form always listed them. */
int cmd_engine_get(int argc, char **argv)
{
	static const char *const with_value[] = { "-o", "--output", "-l", "--selector", "--field-selector", "-L",
						  "--label-columns", "--sort-by", "--watch-for", "--timeout", NULL };
	char **av = xcalloc((size_t)argc + 4, sizeof *av);
	const char *kind = NULL, *name = NULL;
	int n = 0;
	av[n++] = argv[0];
	av[n++] = NULL; /* the kind, below */
	for (int i = 1; i < argc; i++) {
		bool val = false;
		for (size_t k = 0; with_value[k]; k++)
			val |= strcmp(argv[i], with_value[k]) == 0;
		if (val && i + 1 < argc) {
			av[n++] = argv[i++];
			av[n++] = argv[i];
			continue;
		}
		bool is_kind = kind == NULL && name == NULL && registry_kind_find(argv[i]) != NULL;
		if (is_kind)
			kind = argv[i];
		else if (argv[i][0] != '-' && name == NULL)
			name = argv[i];
		else
			av[n++] = argv[i];
	}
	av[1] = (char *)(kind ? kind : "vm");
	char *fs = NULL;
	bool events = kind && (strcmp(kind, "event") == 0 || strcmp(kind, "events") == 0 || strcmp(kind, "ev") == 0);
	if (name && events) {
		av[n++] = "--field-selector";
		av[n++] = fs = xasprintf("involvedObject.name=%s", name);
	} else if (name) {
		av[n++] = (char *)name;
	}
	int rc = shared(cmd_get, av, n);
	free(fs);
	free(av);
	return rc;
}

/* ---- console ---- */

/* console NAME [--timeout MIN] [--log FILE] [--expect RE] [--send LINE]... [--wait-stop]: cmd_console on NS/NAME
 * (its full-screen console on a terminal, its scripted console with --expect/--send/--wait-stop); its flags are
 * console's, --timeout in minutes as virtctl's (30s, 2m with a unit). */
int cmd_engine_console(int argc, char **argv)
{
	/* console's flags, parsed by the command table's parser; only NAME changes (NS/NAME in -n's namespace) */
	struct args a;
	int p = args_parse(cmd_find("console"), argc, argv, &a);
	const char *name = p == ARGS_OK && a.npos > 0 ? a.pos[0] : NULL;
	args_free(&a);
	if (p != ARGS_OK)
		return p == ARGS_HELP ? EXIT_OK : EXIT_USAGE;
	char **av = xcalloc((size_t)argc + 1, sizeof *av);
	char *target = NULL;
	for (int i = 0; i < argc; i++)
		av[i] = argv[i] == name ? (target = ns_name(name)) : argv[i];
	int rc = shared(cmd_console, av, argc);
	free(target);
	free(av);
	return rc;
}

/* ---- vnc ---- */

/* The in-terminal viewer, --screenshot and --proxy-only are all the VNC command's (cmd/cmd_vnc.c), on the
 * engine's display stream: one proxy, with its VNC authentication, for clusters and engines alike. */
int cmd_engine_vnc(int argc, char **argv)
{
	/* vnc's flags, parsed by the command table's parser; only NAME changes (NS/NAME in -n's namespace) */
	struct args a;
	int p = args_parse(cmd_find("vnc"), argc, argv, &a);
	const char *name = p == ARGS_OK && a.npos > 0 ? a.pos[0] : NULL;
	args_free(&a);
	if (p != ARGS_OK)
		return p == ARGS_HELP ? EXIT_OK : EXIT_USAGE;
	if (name == NULL) {
		log_eprintf("error: which VM? (NAME or NS/NAME)\nSee 'kvcon engine vnc --help' for usage.\n");
		return EXIT_USAGE;
	}
	char **av = xcalloc((size_t)argc + 1, sizeof *av);
	char *target = NULL;
	for (int i = 0; i < argc; i++)
		av[i] = argv[i] == name ? (target = ns_name(name)) : argv[i];
	av[0] = (char *)"vnc";
	opts_global()->engine_only = true;
	int rc = cmd_vnc(argc, av);
	free(target);
	free(av);
	return rc;
}

/* ---- pull: an image into the engine's cache, as a start would ---- */

/* The pull itself is kvcon-engine's (`kvcon-engine engine pull IMAGE`: the OCI client, libarchive): exec'd here with the
 * same stdio, so that its progress lines and its answer are this command's. */
int cmd_engine_pull(int argc, char **argv)
{
	struct args a;
	int p = args_parse_sub("engine", argc, argv, &a);
	if (p == ARGS_OK && a.npos != 1) {
		log_eprintf("error: %s\nSee 'kvcon engine pull --help' for usage.\n",
			    a.npos ? "one image at a time" : "which image? (IMAGE)");
		p = ARGS_ERR;
	}
	const char *ref = p == ARGS_OK ? a.pos[0] : NULL;
	args_free(&a);
	if (p != ARGS_OK)
		return p == ARGS_HELP ? EXIT_OK : EXIT_USAGE;
	char *err = NULL, *exe = engine_exe(&err);
	if (exe == NULL) {
		log_eprintf("error: %s\n", err);
		free(err);
		return EXIT_API;
	}
	char *const av[] = { exe, (char *)"engine", (char *)"pull", (char *)"--", (char *)ref, NULL };
	fflush(NULL);
	execv(exe, av);
	log_eprintf("error: %s: %s\n", exe, strerror(errno));
	free(exe);
	return EXIT_API;
}

/* ---- reconcile: run the engine headless for a while ---- */

/* Every VM the service serves is in a settled state (not starting, stopping, terminating or migrating). */
static bool routed_settled(void *arg)
{
	(void)arg;
	static const char *const moving[] = { "Starting", "Stopping", "Terminating", "Migrating", "Provisioning" };
	for (int s = 0; s < C.nsrcs; s++) {
		size_t n = 0;
		struct obj *const *vms = store_objs(C.st, C.srcs[s], OBJ_VM, &n);
		for (size_t i = 0; i < n; i++) {
			const char *st = ((const struct vm *)vms[i])->printable_status;
			for (size_t k = 0; st && k < sizeof moving / sizeof moving[0]; k++)
				if (strcmp(st, moving[k]) == 0)
					return false;
		}
	}
	return true;
}

int cmd_engine_reconcile(int argc, char **argv)
{
	struct args a;
	int p = args_parse_sub("engine", argc, argv, &a);
	if (p == ARGS_OK && a.npos > 0) {
		log_eprintf("error: unexpected argument for \"kvcon engine reconcile\"\n");
		p = ARGS_ERR;
	}
	int secs = (int)(args_num(&a, "--for", 0) / 1000);
	args_free(&a);
	if (p != ARGS_OK)
		return p == ARGS_HELP ? EXIT_OK : EXIT_USAGE;
	int rc = open_engine();
	if (rc)
		return rc;
	/* the engine service holds these hosts and reconciles them all the time: nothing to run here but to wait
	 * (--for), then for its VMs to settle */
	printf("engine ready (the engine service reconciles these hosts)\n");
	fflush(stdout);
	uint64_t until = util_now_ms() + (uint64_t)(secs > 0 ? secs : 0) * 1000;
	while (util_now_ms() < until && !loop_quitting())
		loop_once(200);
	if (!loop_run_until(routed_settled, NULL, 60000)) {
		log_eprintf("error: reconcile: the engine service's VMs did not settle within 60 s\n");
		return close_engine(EXIT_API);
	}
	return close_engine(EXIT_OK);
}

int cmd_engine(int argc, char **argv)
{
	/* the verbs are the engine row's children in the command table (cmd/cmd.c): dispatch, --help, completion */
	const struct cmd_entry *e = cmd_find("engine");
	if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
		if (argc >= 3 && strcmp(argv[1], "help") == 0 && cmd_child(e, argv[2])) {
			cmd_usage(cmd_child(e, argv[2]), stdout);
			return EXIT_OK;
		}
		FILE *f = argc < 2 ? stderr : stdout;
		if (argc < 2)
			fprintf(f, "error: which engine verb?\n");
		cmd_usage(e, f);
		fprintf(f, "\nget, console, vnc and the actions are the top-level verbs (kvcon get, kvcon start NS/NAME, ...)\n"
			   "on the engine's VMs only: the same code, output, flags and exit codes. NAME alone is in -n's\n"
			   "namespace (default); the actions wait for their effect (--wait=300; --timeout S sets it,\n"
			   "--no-wait does not wait). Every verb goes through the engine service (kvcon engine serve, started\n"
			   "on demand).\n"
			   "\nDefault host: $KVCON_ENGINE_URI, else $LIBVIRT_DEFAULT_URI, else the embedded QEMU driver\n"
			   "(qemu:///embed?root=$XDG_STATE_HOME/kvcon/engine). Domains are named NS_NAME.\n"
			   "See kvcon(1), section ENGINE.\n");
		return argc < 2 ? EXIT_USAGE : EXIT_OK;
	}
	const struct cmd_entry *c = cmd_child(e, argv[1]);
	if (c == NULL) {
		char *w = util_escape_display(argv[1]);
		log_eprintf("error: unknown command \"%s\" for \"kvcon engine\" (see kvcon engine --help)\n", w);
		free(w);
		return EXIT_USAGE;
	}
	for (int i = 2; i < argc && strcmp(argv[i], "--") != 0; i++)
		if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
			cmd_usage(c, stdout);
			return EXIT_OK;
		}
	/* every verb reaches the engine through its service (cmd/session.h); `serve` is the service */
	return c->fn(argc - 1, argv + 1);
}

int engine_cli_open(void)
{
	return open_engine();
}

int engine_cli_close(int rc)
{
	return close_engine(rc);
}


struct source **engine_cli_sources(int *n)
{
	*n = C.nsrcs;
	return C.srcs;
}

struct store *engine_cli_store(void)
{
	return C.st;
}

const char *engine_cli_ns(void)
{
	return C.ns;
}

void engine_cli_config_hosts(struct kvcon_opts *o)
{
	char *const *cfg = o->nuris || o->no_engine ? NULL : migrate_config_hosts();
	o->uris_config = cfg && cfg[0];
	for (int i = 0; cfg && cfg[i]; i++) {
		o->uris = xreallocarray(o->uris, (size_t)o->nuris + 1, sizeof *o->uris);
		o->uris[o->nuris++] = xstrdup(cfg[i]);
	}
}
