/* kvcon-engine: the engine in an executable of its own. The engine service (`serve`: the engine opened in this
 * process and served by apiserver/), its host work and its libraries (libvirt, libxml2, libmicrohttpd, libarchive)
 * live here, so that kvcon links none of them. kvcon starts it on demand (service/service.c), `kvcon engine serve`
 * and `kvcon engine pull` exec it; a user never needs to name it. Its command line is kvcon's own (the global
 * options that matter to the engine, anywhere; `ps` shows the same `engine serve` line as before):
 *   kvcon-engine [-c URI]... [--log-file FILE] [--v=N] [--readonly] engine serve [--socket PATH] [--https PORT]
 *                [--kubeconfig-out FILE] [--idle-exit SECONDS]
 *   kvcon-engine engine pull [--] IMAGE */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "apiserver/apisrv.h"
#include "core/config.h"
#include "core/log.h"
#include "core/loop.h"
#include "core/opts.h"
#include "core/util.h"
#include "core/xmalloc.h"
#include "engine/engine.h"
#include "engine/oci.h"
#include "engine/volumes.h"
#include "model/source.h"
#include "model/store.h"
#include "service/service.h"
#include "service/settings.h"

#define ENGINE_READY_MS 120000 /* the embedded driver's first open probes QEMU (~1 min on a cold cache) */

/* ---- the command line: one row per option ---- */

enum opt_type { OPT_FLAG, OPT_INT, OPT_STR, OPT_URI };

struct opt_row {
	const char *name, *alias;
	enum opt_type type;
	void *dst;
};

static struct {
	const char *sock, *kubeconfig, *log;
	int port, idle, verbose;
	bool readonly, on_demand;
} S = { .port = -1 };

/* The global options kvcon passes on (cmd/cmd_serve.c, service/service.c), beside every verb's own. */
static const struct opt_row globals[] = {
	{ "--connect", "-c", OPT_URI, NULL },
	{ "--log-file", NULL, OPT_STR, &S.log },
	{ "--v", NULL, OPT_INT, &S.verbose },
	{ "--readonly", NULL, OPT_FLAG, &S.readonly },
};

static const struct opt_row *find_row(const struct opt_row *rows, size_t n, const char *a, const char **val)
{
	for (size_t k = 0; k < n; k++) {
		size_t l = strlen(rows[k].name);
		if (strcmp(a, rows[k].name) == 0 || (rows[k].alias && strcmp(a, rows[k].alias) == 0))
			return &rows[k];
		if (rows[k].type != OPT_FLAG && strncmp(a, rows[k].name, l) == 0 && a[l] == '=') {
			*val = a + l + 1;
			return &rows[k];
		}
	}
	return NULL;
}

/* Parses argv[1..argc) against the verb's rows and the globals into their destinations; at most one operand into
 * *operand when operand is not NULL ("--" ends the options). On anything else says so and returns EXIT_USAGE,
 * else 0. */
static int parse(int argc, char **argv, const struct opt_row *rows, size_t n, const char **operand)
{
	struct kvcon_opts *o = opts_global();
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *val = NULL;
		if (strcmp(a, "--") == 0 && operand && *operand == NULL && i + 2 == argc) {
			*operand = argv[i + 1];
			break;
		}
		const struct opt_row *r = find_row(rows, n, a, &val);
		if (r == NULL)
			r = find_row(globals, sizeof globals / sizeof globals[0], a, &val);
		if (r == NULL && a[0] != '-' && operand && *operand == NULL) {
			*operand = a;
			continue;
		}
		if (r == NULL || (r->type != OPT_FLAG && val == NULL && i + 1 >= argc)) {
			/* the words `kvcon engine serve` always said */
			log_eprintf("error: unexpected argument '%s' for \"kvcon engine %s\" (kvcon engine --help)\n", a,
				    argv[0]);
			return EXIT_USAGE;
		}
		if (r->type != OPT_FLAG && val == NULL)
			val = argv[++i];
		switch (r->type) {
		case OPT_FLAG:
			*(bool *)r->dst = true;
			break;
		case OPT_INT:
			*(int *)r->dst = atoi(val);
			break;
		case OPT_STR:
			*(const char **)r->dst = val;
			break;
		case OPT_URI:
			o->uris = xreallocarray(o->uris, (size_t)o->nuris + 1, sizeof *o->uris);
			o->uris[o->nuris++] = xstrdup(val);
			break;
		}
	}
	return 0;
}

static void on_quit_signal(int sig, void *arg)
{
	(void)sig;
	(void)arg;
	loop_quit(130);
}

/* ---- serve ---- */

static bool idle(void *arg)
{
	(void)arg;
	return engine_idle();
}

/* The engine itself, in this process (the one place it is opened): every host of -c (else the config's, else the
 * default) ready, or the first failure said in *err. Their number, or -1. */
static int open_hosts(struct store *st, struct source ***hosts, char **err)
{
	struct kvcon_opts *o = opts_global();
	int n = o->nuris > 0 ? o->nuris : 1;
	*hosts = xcalloc((size_t)n, sizeof **hosts);
	for (int i = 0; i < n; i++) {
		const char *uri = o->nuris > 0 ? o->uris[i] : NULL;
		char *e = NULL;
		(*hosts)[i] = engine_open(st, uri, &e);
		if ((*hosts)[i] == NULL) {
			/* the engine's refusals name the URI */
			*err = e ? e : xasprintf("%s: refused", uri ? uri : "the default engine");
			return -1;
		}
	}
	uint64_t deadline = util_now_ms() + ENGINE_READY_MS;
	for (int i = 0; i < n; i++) {
		struct source *h = (*hosts)[i];
		/* the first failure is the answer (the engine's errors name the host or the machine's problem) */
		while (!engine_ready(h) && engine_error(h) == NULL && util_now_ms() < deadline)
			loop_once(100);
		if (!engine_ready(h)) {
			const char *why = engine_error(h);
			*err = why ? xstrdup(why) : xasprintf("%s: timed out connecting", h->server);
			return -1;
		}
	}
	return n;
}

/* What keeps this machine from running the hosts (engine_check: no QEMU, a bad account, the root held by another
 * process, a -c host that refuses), said before anything is touched: the kvcon that started this service reports
 * the error line of its log. NULL when nothing; caller frees. */
static char *unstartable(void)
{
	struct kvcon_opts *o = opts_global();
	for (int i = 0; i < (o->nuris > 0 ? o->nuris : 1); i++) {
		char *why = engine_check(o->nuris > 0 ? o->uris[i] : NULL);
		if (why)
			return why;
	}
	return NULL;
}

/* The root's well-known socket (service/service.h), where kvcon's commands look for the service. */
static char *default_socket(void)
{
	struct kvcon_opts *o = opts_global();
	char *p = engine_service_socket(o->uris, o->nuris);
	char *dir = xstrndup(p, (size_t)(strrchr(p, '/') - p));
	util_mkdir_p(dir, 0700);
	free(dir);
	return p;
}

/* The pid of the service started on demand (service/service.c: `engine serve --on-demand`) of this user that
 * serves sock, or 0: its SOCK.pid names a process of ours whose command line says so. */
static pid_t on_demand_pid(const char *sock)
{
	char *pf = xasprintf("%s.pid", sock);
	char *t = util_read_file(pf, NULL);
	free(pf);
	long pid = t ? atol(t) : 0;
	free(t);
	if (pid <= 1 || pid == (long)getpid())
		return 0;
	char cl[64];
	snprintf(cl, sizeof cl, "/proc/%ld/cmdline", pid);
	struct stat sb;
	size_t n = 0;
	char *cmd = stat(cl, &sb) == 0 && sb.st_uid == geteuid() ? util_read_file(cl, &n) : NULL;
	bool serve = false, demand = false;
	for (size_t i = 0; cmd && i < n; i += strlen(cmd + i) + 1) {
		serve |= strcmp(cmd + i, "serve") == 0;
		demand |= strcmp(cmd + i, "--on-demand") == 0;
	}
	free(cmd);
	return serve && demand ? (pid_t)pid : 0;
}

/* An explicit `engine serve` takes the root over from the service started on demand (asked to leave as on
 * SIGTERM; guests keep running) instead of being refused because that one holds it. 0, or -1 when it stays. */
static int take_over(const char *sock)
{
	pid_t pid = on_demand_pid(sock);
	if (pid == 0 || kill(pid, SIGTERM) < 0)
		return 0;
	log_eprintf("engine serve: the service started on demand (pid %ld) leaves for this one\n", (long)pid);
	for (int i = 0; i < 600; i++) { /* its queued writes first: up to a minute */
		if (!util_pid_running(pid))
			return 0;
		struct timespec ts = { 0, 100 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	log_eprintf("error: engine serve: the service started on demand (pid %ld) did not leave\n", (long)pid);
	return -1;
}

static int serve(int argc, char **argv)
{
	struct kvcon_opts *o = opts_global();
	const struct opt_row rows[] = {
		{ "--socket", NULL, OPT_STR, &S.sock },
		{ "--https", NULL, OPT_INT, &S.port },
		{ "--kubeconfig-out", NULL, OPT_STR, &S.kubeconfig },
		{ "--idle-exit", NULL, OPT_INT, &S.idle },
		{ "--on-demand", NULL, OPT_FLAG, &S.on_demand },
	};
	int rc = parse(argc, argv, rows, sizeof rows / sizeof rows[0], NULL);
	if (rc)
		return rc;
	if (S.idle < 0) {
		log_eprintf("error: engine serve: --idle-exit %d: not a number of seconds\n", S.idle);
		return EXIT_USAGE;
	}
	if (S.port > 65535) {
		log_eprintf("error: engine serve: %d: not a port\n", S.port);
		return EXIT_USAGE;
	}
	/* no -c: the config file's engine hosts, as kvcon reads them */
	char *const *cfg = o->nuris ? NULL : migrate_config_hosts();
	for (int i = 0; cfg && cfg[i]; i++) {
		o->uris = xreallocarray(o->uris, (size_t)o->nuris + 1, sizeof *o->uris);
		o->uris[o->nuris++] = xstrdup(cfg[i]);
	}
	engine_service_notify_take(); /* before anything this service starts could inherit it */
	o->verbose = S.verbose;
	o->readonly = S.readonly;
	o->log = (char *)S.log;
	loop_init();
	log_open(o->log);
	log_set_level(o->verbose ? LOG_DEBUG : LOG_INFO);
	log_set_stderr_level(o->verbose ? LOG_INFO : LOG_ERROR + 1);
	loop_signal(SIGINT, on_quit_signal, NULL);
	loop_signal(SIGTERM, on_quit_signal, NULL);
	char *spath = S.sock ? xstrdup(S.sock) : default_socket();
	/* before engine_check, which would find the root held by the service started on demand */
	if (!S.on_demand && take_over(spath) < 0) {
		free(spath);
		return EXIT_API;
	}
	char *why = unstartable();
	if (why) {
		char *e = util_escape_display(why);
		log_eprintf("error: %s\n", e);
		free(e);
		free(why);
		free(spath);
		return EXIT_API;
	}
	{ /* who holds each host's lock (engine.c): a second service for one of these hosts names this one */
		char *label = xasprintf("engine serve on %s", spath);
		engine_set_owner(label, spath);
		free(label);
	}
	engine_volume_gate_hold(); /* starts of VMs with claims wait for the service's storage (apiserver/storage.c) */
	struct store *st = store_new();
	struct apisrv_config c = { .socket = spath, .https_port = S.port, .kubeconfig = S.kubeconfig,
				   .idle_exit = S.idle, .st = st };
	char *err = NULL;
	c.nsrcs = open_hosts(st, &c.srcs, &err);
	if (c.nsrcs < 0) {
		char *e = util_escape_display(err);
		log_eprintf("error: %s\n", e);
		free(e);
		free(err);
		free(c.srcs);
		free(spath);
		return EXIT_API;
	}
	rc = apisrv_serve(&c, &err);
	if (rc < 0) {
		log_eprintf("error: engine serve: %s\n", err);
		free(err);
		rc = EXIT_API;
	} else if (rc == 130) {
		rc = EXIT_OK;
	}
	if (!loop_quitting())
		loop_run_until(idle, NULL, 0);
	engine_close_all();
	loop_once(0); /* deliver what the workers posted last */
	free(c.srcs);
	free(spath);
	return rc;
}

/* ---- pull: an image into the engine's cache, as a start would ---- */

struct pull_call {
	const char *ref, *root;
	const struct oci_regconf *conf;
	struct oci_progress prog;
	struct oci_result res;
	char *err;
	int rc;
	volatile int done;
};

static void *pull_call_thread(void *arg)
{
	struct pull_call *p = arg;
	p->rc = oci_pull(p->ref, p->conf, p->root, &p->prog, &p->res, &p->err);
	__atomic_store_n(&p->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* Runs the pull on a thread and prints its progress (bytes fetched of total, bytes unpacked) on stderr once a
 * second. */
static int pull_with_progress(struct pull_call *p)
{
	pthread_t t;
	if (pthread_create(&t, NULL, pull_call_thread, p) != 0)
		return pull_call_thread(p), p->rc;
	uint64_t last = util_now_ms();
	while (!__atomic_load_n(&p->done, __ATOMIC_ACQUIRE)) {
		usleep(50000);
		if (util_now_ms() - last >= 1000 && p->prog.total) {
			last = util_now_ms();
			char *line = oci_progress_text(p->ref, &p->prog);
			char *e = util_escape_display(line);
			fprintf(stderr, "%s\n", e);
			free(e);
			free(line);
		}
	}
	pthread_join(t, NULL);
	return p->rc;
}

static int pull(int argc, char **argv)
{
	const char *ref = NULL;
	int rc = parse(argc, argv, NULL, 0, &ref);
	if (rc)
		return rc;
	if (ref == NULL) {
		log_eprintf("error: which image? (IMAGE)\n");
		return EXIT_USAGE;
	}
	char *err = NULL, *root = engine_image_cache();
	struct oci_regconf *conf = oci_regconf_load(&err);
	struct pull_call pc = { .ref = ref, .root = root, .conf = conf, .rc = -1 };
	struct oci_result res;
	uint64_t t0 = util_now_ms();
	if (conf && pull_with_progress(&pc) == 0)
		res = pc.res;
	else if (conf)
		err = pc.err;
	if (conf == NULL || pc.rc < 0) {
		char *e = util_escape_display(err);
		fprintf(stderr, "error: ErrImagePull: %s\n", e);
		free(e);
		rc = EXIT_API;
	} else {
		double s = (double)(util_now_ms() - t0) / 1000.0;
		char *r = util_escape_display(ref);
		printf("pulled %s %s from %s: %llu bytes fetched in %.3f s (%.1f MiB/s)\n%s\n", r, res.manifest_digest,
		       res.endpoint, (unsigned long long)res.fetched, s,
		       s > 0 ? (double)res.fetched / (1 << 20) / s : 0.0, res.disk);
		free(r);
		oci_result_free(&res);
	}
	free(err);
	free(root);
	oci_regconf_free(conf);
	return rc;
}

/* ---- dispatch ---- */

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
} verbs[] = {
	{ "serve", serve },
	{ "pull", pull },
};

/* argv without the words "engine VERB" (found after the global options that come first), VERB as argv[0]; NULL
 * when there is no such verb. Caller frees the array. */
static char **verb_argv(int argc, char **argv, int *n)
{
	for (int i = 1; i + 1 < argc; i++) {
		const char *val = NULL;
		const struct opt_row *g = find_row(globals, sizeof globals / sizeof globals[0], argv[i], &val);
		if (g) {
			i += g->type != OPT_FLAG && val == NULL;
			continue;
		}
		if (strcmp(argv[i], "engine") != 0)
			return NULL;
		char **av = xcalloc((size_t)argc, sizeof *av);
		*n = 0;
		av[(*n)++] = argv[i + 1];
		for (int k = 1; k < argc; k++)
			if (k != i && k != i + 1)
				av[(*n)++] = argv[k];
		return av;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int n = 0;
	char **av = verb_argv(argc, argv, &n);
	for (size_t i = 0; av && i < sizeof verbs / sizeof verbs[0]; i++) {
		if (strcmp(av[0], verbs[i].name) != 0)
			continue;
		/* before anything reads the config (engine hosts, registries) or the state: another user may have
		 * written both */
		char *terr = NULL;
		if (config_trust_check(&terr) < 0) {
			log_eprintf("error: %s\n", terr);
			free(terr);
			free(av);
			return EXIT_API;
		}
		int rc = verbs[i].fn(n, av);
		free(av);
		return rc;
	}
	free(av);
	fprintf(stderr, "usage: kvcon-engine [-c URI]... engine serve|pull ...: the engine of kvcon, started by kvcon\n"
			"(kvcon engine serve, kvcon engine pull; see kvcon(1), section ENGINE)\n");
	return EXIT_USAGE;
}
