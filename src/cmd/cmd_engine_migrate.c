/* `kvcon engine migrate` and `kvcon engine drain`: live migration between engine hosts on the command line,
 * with the job's progress printed as it goes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/loop.h"
#include "core/opts.h"
#include "core/util.h"
#include "core/xmalloc.h"
#include "cmd/args.h"
#include "cmd/cmd_engine.h"
#include "model/source.h"
#include "model/store.h"

/* The flags of migrate and drain (their rows in cmd/cmd.c), as the migrate request carries them. */
struct migrate_opts {
	const char *target;      /* host name or URI; NULL: the engine's choice */
	const char *mig_uri;     /* the target's URI as the source host reaches it; NULL: from the config */
	bool offline;            /* a stopped VM: move its definition and record only */
	bool auto_converge, postcopy, copy_storage;
	unsigned long bandwidth; /* MiB/s, 0 unlimited */
	int timeout;             /* s, 0 none */
};

struct mig_wait {
	const char *ns, *name;
	uint64_t last_print;
	int last_pct;
	bool quiet;
};

static const struct vmi *find_vmi(const struct mig_wait *w)
{
	int n;
	struct source **srcs = engine_cli_sources(&n);
	for (int i = 0; i < n; i++) {
		const struct vmi *v = (const struct vmi *)store_find(engine_cli_store(), srcs[i], OBJ_VMI, w->ns, w->name);
		if (v && vmi_mig(v)->present)
			return v;
	}
	return NULL;
}

/* One line per second while the job runs: the same figures the dashboard shows. With final, the job has
 * completed: its last figures once, when it ended before a line was printed (a short migration between two
 * looks still says what it sent). */
static void print_progress(struct mig_wait *w, bool final)
{
	uint64_t now = util_now_ms();
	if (w->quiet || w->name == NULL || (final ? w->last_print != 0 : now - w->last_print < 1000))
		return;
	const struct vmi *v = find_vmi(w);
	const struct migration_state *m = v ? vmi_mig(v) : NULL;
	if (m == NULL || m->failed || m->progress_pct < 0 ||
	    (!final && (m->completed || m->data_processed + m->data_remaining == 0)))
		return;
	w->last_print = now;
	printf("  %3d%%  %llu MiB sent, %llu MiB remaining, dirty %.1f MiB/s, pass %d, expected downtime %lld ms, "
	       "%s, %lld s\n",
	       m->progress_pct, (unsigned long long)(m->data_processed >> 20),
	       (unsigned long long)(m->data_remaining >> 20), (double)m->dirty_rate / (1024.0 * 1024.0), m->iteration,
	       (long long)m->downtime_ms, m->mode ? m->mode : "PreCopy", (long long)(util_wall_s() - m->start));
	fflush(stdout);
}

static bool replied(void *arg)
{
	return ((struct cli_reply *)arg)->done;
}

static struct source *source_of(const char *ns, const char *name)
{
	int n;
	struct source **srcs = engine_cli_sources(&n);
	for (int i = 0; i < n; i++)
		if (store_find(engine_cli_store(), srcs[i], OBJ_VM, ns, name))
			return srcs[i];
	return NULL;
}

static void print_err(const char *verb, const char *name, const char *msg)
{
	char *e = util_escape_display(msg ? msg : "failed");
	log_eprintf("error: %s %s: %s\n", verb, name, e);
	free(e);
}

/* The VMI's migrationState as the store has it (any source), or NULL. */
static const struct migration_state *mig_state(const char *ns, const char *name)
{
	struct mig_wait w = { .ns = ns, .name = name };
	const struct vmi *v = find_vmi(&w);
	return v ? vmi_mig(v) : NULL;
}

struct routed_mig {
	struct cli_reply r;
	const char *ns, *name;
	char before[UID_LEN]; /* the VMI's migrationUid before the request */
	bool offline;         /* no VMI: the request's answer is the end */
	struct mig_wait pw;   /* the progress lines (the job figures the service serves) */
};

/* the request answered, then a migration other than the one before it has ended */
static bool routed_mig_done(void *arg)
{
	struct routed_mig *w = arg;
	if (!w->r.done)
		return false;
	if (w->r.status != 0 || w->offline)
		return true;
	const struct migration_state *m = mig_state(w->ns, w->name);
	bool ours = m && m->migration_uid[0] && strcmp(m->migration_uid, w->before) != 0;
	if (ours)
		print_progress(&w->pw, m->completed);
	return ours && (m->completed || m->failed);
}

/* Through the engine service (a routed source): the migrate subresource, which makes a
 * VirtualMachineInstanceMigration, or with the engine's options that object with kvcon.io/ annotations; then the
 * VMI's migrationState until that migration has ended (offline: the object's own end, there is no VMI). */
static int migrate_routed(struct source *src, const char *ns, const char *name, const struct migrate_opts *o,
			  bool quiet)
{
	struct routed_mig w = { .ns = ns, .name = name, .pw = { .ns = ns, .name = name, .quiet = quiet } };
	const struct migration_state *m0 = mig_state(ns, name);
	if (m0 && m0->present)
		snprintf(w.before, UID_LEN, "%s", m0->migration_uid);
	w.offline = o->offline;
	struct action_req req = { .act = ACT_MIGRATE,
				  .ns = ns,
				  .name = name,
				  .grace_period = -1,
				  .target = o->target,
				  .mig_uri = o->mig_uri,
				  .timeout = o->timeout,
				  .bandwidth = o->bandwidth,
				  .flags = (o->auto_converge ? ENGINE_MIG_AUTO_CONVERGE : 0) |
					   (o->postcopy ? ENGINE_MIG_POSTCOPY : 0) |
					   (o->copy_storage ? ENGINE_MIG_COPY_STORAGE : 0) | (o->offline ? ENGINE_MIG_OFFLINE : 0) };
	char *err = NULL;
	if (src->ops->action(src, &req, engine_cli_reply, &w.r, &err) < 0) {
		print_err("migrate", name, err);
		free(err);
		return EXIT_API;
	}
	if (!loop_run_until(routed_mig_done, &w, 24 * 3600 * 1000ULL)) {
		log_eprintf("error: migrate %s: interrupted; the engine service carries on with the migration "
			    "(kvcon engine migrate --abort %s stops it)\n", name, name);
		free(w.r.msg);
		return EXIT_API;
	}
	if (w.r.status != 0) {
		print_err("migrate", name, w.r.msg);
		free(w.r.msg);
		return EXIT_API;
	}
	free(w.r.msg);
	if (o->offline) {
		char *t = util_escape_display(o->target ? o->target : "the other host");
		printf("virtualmachine %s moved to %s (offline, through the engine service)\n", name, t);
		free(t);
		fflush(stdout);
		return EXIT_OK;
	}
	const struct migration_state *m = mig_state(ns, name);
	if (m->failed) {
		print_err("migrate", name, m->failure_reason ? m->failure_reason : "the migration failed");
		return EXIT_API;
	}
	char *t = util_escape_display(m->target_node ? m->target_node : "?");
	char *f = util_escape_display(m->source_node ? m->source_node : "?");
	printf("virtualmachine %s migrated from %s to %s (through the engine service)\n", name, f, t);
	free(t);
	free(f);
	fflush(stdout);
	return EXIT_OK;
}

/* Runs one migration to its end through the engine service. 0 ok, else an exit code. */
static int migrate_one(const char *ns, const char *name, const struct migrate_opts *o, bool quiet)
{
	struct source *src = source_of(ns, name);
	if (src == NULL) {
		log_eprintf("error: virtualmachine \"%s\" not found in namespace %s\n", name, ns);
		return EXIT_API;
	}
	return migrate_routed(src, ns, name, o, quiet);
}

/* `--abort NAME` from another process: the job runs in the engine service, which aborts it through the source
 * host. */
static int abort_cmd(const char *ns, const char *name)
{
	struct source *src = source_of(ns, name);
	if (src == NULL) {
		log_eprintf("error: virtualmachine \"%s\" not found in namespace %s\n", name, ns);
		return EXIT_API;
	}
	char *err = NULL;
	struct cli_reply r = { 0 };
	struct action_req req = { .act = ACT_MIGRATE_ABORT, .ns = ns, .name = name, .grace_period = -1 };
	if (src->ops->action(src, &req, engine_cli_reply, &r, &err) < 0) {
		print_err("migrate --abort", name, err);
		free(err);
		return EXIT_API;
	}
	loop_run_until(replied, &r, 30000);
	if (!r.done || r.status != 0) {
		print_err("migrate --abort", name, r.done ? r.msg : "no answer from the source host");
		free(r.msg);
		return EXIT_API;
	}
	printf("virtualmachine %s: migration abort requested\n", name);
	free(r.msg);
	return EXIT_OK;
}

/* The flags migrate and drain share into o (their rows in cmd/cmd.c, parsed by cmd/args.c); the one operand (NAME
 * or HOST, what) into *operand. 0, or the exit code after --help or the error. */
static int migrate_args(int argc, char **argv, const char *what, struct migrate_opts *o, const char **operand,
			bool *abort_it, bool *quiet)
{
	struct args a;
	int p = args_parse_sub("engine", argc, argv, &a);
	if (p == ARGS_OK && a.npos != 1) {
		log_eprintf("error: %s %s\nSee 'kvcon engine %s --help' for usage.\n", a.npos ? "one" : "which",
			    what, argv[0]);
		p = ARGS_ERR;
	}
	if (p == ARGS_OK) {
		*operand = a.pos[0];
		o->target = args_get(&a, "--to");
		o->mig_uri = args_get(&a, "--migrate-uri");
		o->bandwidth = (unsigned long)args_num(&a, "--bandwidth", 0);
		o->timeout = (int)((args_num(&a, "--timeout", 0) + 999) / 1000);
		o->auto_converge = args_bool(&a, "--auto-converge");
		o->postcopy = args_bool(&a, "--postcopy");
		o->copy_storage = args_bool(&a, "--copy-storage");
		o->offline = args_bool(&a, "--offline");
		if (abort_it)
			*abort_it = args_bool(&a, "--abort");
		if (quiet)
			*quiet = args_bool(&a, "--quiet");
	}
	args_free(&a);
	return p == ARGS_OK ? 0 : p == ARGS_HELP ? EXIT_OK : EXIT_USAGE;
}

int migrate_cmd(int argc, char **argv)
{
	struct migrate_opts o = { 0 };
	const char *name = NULL;
	bool abort_it = false, quiet = false;
	int rc = migrate_args(argc, argv, "VM (NAME)", &o, &name, &abort_it, &quiet);
	if (rc == 0 && name == NULL)
		return EXIT_OK; /* --help */
	if (rc == 0)
		rc = engine_cli_open();
	if (rc)
		return rc;
	const char *ns = engine_cli_ns();
	rc = abort_it ? abort_cmd(ns, name) : migrate_one(ns, name, &o, quiet);
	return engine_cli_close(rc);
}

/* Migrates keys[0..nk) ("NS/NAME"; keys and each key freed here) one after the other with drain's progress lines;
 * how many failed. */
static int drain_keys(char **keys, size_t nk, const struct migrate_opts *o)
{
	int failed = 0;
	for (size_t i = 0; i < nk; i++) {
		char *slash = strchr(keys[i], '/');
		*slash = '\0';
		printf("[%zu/%zu] %s/%s\n", i + 1, nk, keys[i], slash + 1);
		fflush(stdout);
		if (migrate_one(keys[i], slash + 1, o, false) != EXIT_OK)
			failed++;
		free(keys[i]);
	}
	free(keys);
	return failed;
}

/* Through the engine service: the VMIs running on node HOST, migrated one after the other (a
 * VirtualMachineInstanceMigration each, the engine's choice of target unless --to). */
static int drain_routed(const char *host, const struct migrate_opts *o)
{
	int n;
	struct source **srcs = engine_cli_sources(&n);
	char **keys = NULL;
	size_t nk = 0;
	for (int s = 0; s < n; s++) {
		size_t nv = 0;
		struct obj *const *vmis = store_objs(engine_cli_store(), srcs[s], OBJ_VMI, &nv);
		for (size_t i = 0; i < nv; i++) {
			const struct vmi *v = (const struct vmi *)vmis[i];
			if (v->node && strcmp(v->node, host) == 0 && v->phase && strcmp(v->phase, "Running") == 0) {
				keys = xreallocarray(keys, nk + 1, sizeof *keys);
				keys[nk++] = xasprintf("%s/%s", v->o.ns, v->o.name);
			}
		}
	}
	char *h = util_escape_display(host);
	printf("draining %s: %zu running VM%s (through the engine service)\n", h, nk, nk == 1 ? "" : "s");
	fflush(stdout);
	int failed = drain_keys(keys, nk, o);
	if (failed)
		log_eprintf("error: drain %s: %d of %zu migrations failed; those VMs still run on %s\n", h, failed, nk, h);
	else
		printf("%s drained\n", h);
	free(h);
	return failed ? EXIT_API : EXIT_OK;
}

int drain_cmd(int argc, char **argv)
{
	struct migrate_opts o = { 0 };
	const char *host = NULL;
	int rc = migrate_args(argc, argv, "host (HOST)", &o, &host, NULL, NULL);
	if (rc == 0 && host == NULL)
		return EXIT_OK; /* --help */
	if (rc == 0)
		rc = engine_cli_open();
	if (rc)
		return rc;
	return engine_cli_close(drain_routed(host, &o));
}
