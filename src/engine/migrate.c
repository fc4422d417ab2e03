/* Live migration of engine VMs between hosts. The loop thread validates the request and keeps the VM's
 * migrationState; a thread per migration opens its own connections to both hosts, runs the pre-flight checks,
 * starts a peer-to-peer migration (virDomainMigrateToURI3 on a helper thread: it blocks until the end) and
 * polls virDomainGetJobStats meanwhile, posting progress to the loop. On success the VM's record moves to
 * the target host with a new launcher UID; on failure or abort it stays where it runs. */
#include "engine/embed.h"
#include "engine/migrate.h"

#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/intern.h"
#include "core/log.h"
#include "core/loop.h"
#include "core/opts.h"
#include "core/util.h"
#include "core/xmalloc.h"
#include "engine/domxml.h"
#include "engine/ejson.h"
#include "engine/engine.h"
#include "engine/evm.h"
#include "engine/host.h"
#include "model/store.h"

#define META_URI "https://kvcon.dev/xmlns/engine/1"
#define POLL_MS 250
#define STATS_EVERY_MS 500

enum mmsg_type { MM_PROGRESS, MM_DONE };

struct mig_job {
	/* read-only for the thread once it runs */
	char *src_uri, *dst_uri, *mig_uri, *dom, *new_launcher, *target_name;
	struct migrate_opts o;
	bool kvm;                 /* the execution runs under KVM (its record), not TCG */
	char *cpu_model;          /* the manifest's CPU model: NULL, host-model, host-passthrough or a name */
	bool resume;              /* settles a migration an earlier process left (dst_uri NULL: no such host) */
	char vm_uid[UID_LEN];
	atomic_bool abort;
	char *abort_why;          /* set before abort (loop thread), read by the thread after it sees abort */
	pthread_t thread;
	/* loop thread */
	struct evm *v;
	struct ehost *dst;
	action_done_cb done;
	void *arg;
};

struct mmsg {
	enum mmsg_type type;
	struct mig_job *j;
	int status;               /* MM_DONE: 0 completed, -1 failed */
	bool aborted, postcopy, timed_out;
	bool retry;               /* resume: could not tell yet (a host unreachable); the next sync tries again */
	char *text;
	uint64_t processed, remaining, total, dirty_rate;
	int iteration;
	int64_t downtime_ms, elapsed_ms;
};

/* A URI another host can use as is: a remote transport with a host name. */
static bool uri_is_network(const char *uri)
{
	const char *p = strstr(uri, "://");
	return p && p[3] != '/' && p[3] != '\0' && strstr(uri, "+unix") == NULL;
}

/* ---- the record ---- */

void emig_free(struct emig *m)
{
	if (m == NULL)
		return;
	free(m->source_node);
	free(m->target_node);
	free(m->abort_status);
	free(m->mode);
	free(m->failure_reason);
	for (int i = 0; i < m->nprev; i++)
		free(m->prev[i].node);
	free(m);
}

/* migrationState as the record keeps it (and as VMIs show it, below): the same keys KubeVirt uses */
static const struct ejson_field emig_rows[] = {
	{ "migrationUid", EJ_UID, offsetof(struct emig, uid), NULL },
	{ "targetLauncherUid", EJ_UID, offsetof(struct emig, target_launcher), NULL },
	{ "sourceNode", EJ_STR, offsetof(struct emig, source_node), NULL },
	{ "targetNode", EJ_STR, offsetof(struct emig, target_node), NULL },
	{ "startTimestamp", EJ_I64, offsetof(struct emig, start), NULL },
	{ "endTimestamp", EJ_I64, offsetof(struct emig, end), NULL },
	{ "completed", EJ_BOOL, offsetof(struct emig, completed), NULL },
	{ "failed", EJ_BOOL, offsetof(struct emig, failed), NULL },
	{ "abortRequested", EJ_BOOL, offsetof(struct emig, abort_requested), NULL },
	{ "abortStatus", EJ_STR, offsetof(struct emig, abort_status), NULL },
	{ "mode", EJ_STR, offsetof(struct emig, mode), NULL },
	{ "failureReason", EJ_STR, offsetof(struct emig, failure_reason), NULL },
	{ "downtimeMs", EJ_I64, offsetof(struct emig, downtime_ms), NULL },
	{ "elapsedMs", EJ_I64, offsetof(struct emig, elapsed_ms), NULL },
	{ "dataTotal", EJ_U64, offsetof(struct emig, total), NULL },
	{ "dataProcessed", EJ_U64, offsetof(struct emig, processed), NULL },
};

static const struct ejson_field launcher_rows[] = {
	{ "launcherUid", EJ_UID, offsetof(struct mig_launcher, uid), NULL },
	{ "node", EJ_STR, offsetof(struct mig_launcher, node), NULL },
	{ "pid", EJ_INT, offsetof(struct mig_launcher, pid), NULL },
	{ "started", EJ_I64, offsetof(struct mig_launcher, started), NULL },
	{ "ended", EJ_I64, offsetof(struct mig_launcher, ended), NULL },
	{ "podDeleted", EJ_BOOL, offsetof(struct mig_launcher, deleted), NULL },
};

static const struct ejson_field state_rows[] = {
	{ "migrationUid", EJ_UID, offsetof(struct migration_state, migration_uid), NULL },
	{ "sourceNode", EJ_ISTR, offsetof(struct migration_state, source_node), NULL },
	{ "targetNode", EJ_ISTR, offsetof(struct migration_state, target_node), NULL },
	{ "sourcePod", EJ_STR, offsetof(struct migration_state, source_pod), NULL },
	{ "targetPod", EJ_STR, offsetof(struct migration_state, target_pod), NULL },
	{ "startTimestamp", EJ_I64, offsetof(struct migration_state, start), NULL },
	{ "endTimestamp", EJ_I64, offsetof(struct migration_state, end), NULL },
	{ "completed", EJ_BOOL, offsetof(struct migration_state, completed), NULL },
	{ "failed", EJ_BOOL, offsetof(struct migration_state, failed), NULL },
	{ "abortRequested", EJ_BOOL, offsetof(struct migration_state, abort_requested), NULL },
	{ "abortStatus", EJ_ISTR, offsetof(struct migration_state, abort_status), NULL },
	{ "mode", EJ_ISTR, offsetof(struct migration_state, mode), NULL },
	{ "failureReason", EJ_STR, offsetof(struct migration_state, failure_reason), NULL },
	{ "progress", EJ_INT, offsetof(struct migration_state, progress_pct), NULL },
	{ "dataProcessed", EJ_U64, offsetof(struct migration_state, data_processed), NULL },
	{ "dataRemaining", EJ_U64, offsetof(struct migration_state, data_remaining), NULL },
	{ "memoryDirtyRate", EJ_U64, offsetof(struct migration_state, dirty_rate), NULL },
	{ "memoryIteration", EJ_INT, offsetof(struct migration_state, iteration), NULL },
	{ "downtimeMs", EJ_I64, offsetof(struct migration_state, downtime_ms), NULL },
};

json_object *emig_json(const struct emig *m)
{
	json_object *o = json_object_new_object();
	ejson_put(o, m, EJSON_ROWS(emig_rows));
	json_object_object_add(o, "previousLaunchers",
			       ejson_array(m->prev, sizeof m->prev[0], m->nprev, EJSON_ROWS(launcher_rows)));
	return o;
}

struct emig *emig_from(json_object *o)
{
	struct emig *m = xcalloc(1, sizeof *m);
	ejson_get(m, o, EJSON_ROWS(emig_rows));
	/* neither completed nor failed: the process that ran it ended before it did; migrate_resume_all settles it */
	m->progress_pct = m->completed ? 100 : -1;
	json_object *a = ejson_child(o, "previousLaunchers", json_type_array);
	for (size_t i = 0; a && i < json_object_array_length(a) && m->nprev < MIG_MAX_PREV; i++)
		ejson_get(&m->prev[m->nprev++], json_object_array_get_idx(a, i), EJSON_ROWS(launcher_rows));
	return m;
}

json_object *migrate_state_json(const struct migration_state *m)
{
	json_object *o = json_object_new_object();
	ejson_put(o, m, EJSON_ROWS(state_rows));
	return o;
}

/* ---- the thread ---- */

static void post_msg(void (*fn)(void *), struct mmsg *m)
{
	loop_post(fn, m);
}

static void on_msg(void *arg);

__attribute__((format(printf, 1, 2))) static char *lv_err(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *head = xvasprintf(fmt, ap);
	va_end(ap);
	const char *e = virGetLastErrorMessage();
	char *s = xasprintf("%s: %s", head, e ? e : "unknown libvirt error");
	free(head);
	return s;
}

/* The files a domain needs on the target: kernel, initrd, loader, disk images (unless they are copied). */
struct need {
	char *path;
	const char *what;
};

static void need_add(struct need **v, int *n, char *path, const char *what)
{
	for (int i = 0; i < *n; i++)
		if (strcmp((*v)[i].path, path) == 0) {
			free(path);
			return;
		}
	*v = xreallocarray(*v, (size_t)*n + 1, sizeof **v);
	(*v)[*n].path = path;
	(*v)[(*n)++].what = what;
}

static void needs_of(const char *xml, bool copy_storage, struct need **v, int *n)
{
	struct domxml_need *found = NULL;
	int nf = domxml_needs(xml, copy_storage, &found); /* disks: libvirt copies them with copy_storage */
	for (int i = 0; i < nf; i++)
		need_add(v, n, found[i].path, found[i].what);
	free(found);
}

/* The active storage pool of c whose target is dir, or NULL (listed rather than looked up: a failed lookup is
 * logged by libvirt as an error). */
static virStoragePoolPtr pool_over(virConnectPtr c, const char *dir)
{
	virStoragePoolPtr *pools = NULL, found = NULL;
	int n = virConnectListAllStoragePools(c, &pools, VIR_CONNECT_LIST_STORAGE_POOLS_ACTIVE);
	for (int i = 0; i < n; i++) {
		char *x = found ? NULL : virStoragePoolGetXMLDesc(pools[i], 0);
		char *target = x ? domxml_attr(x, "/pool/target/path") : NULL;
		if (target && strcmp(target, dir) == 0)
			found = pools[i];
		else
			virStoragePoolFree(pools[i]);
		free(target);
		free(x);
	}
	free(pools);
	return found;
}

/* Whether path exists as the target's libvirt sees it (its own mounts): through the pool already covering the
 * file's directory, or a transient dir pool on that directory. 1 yes, 0 no, -1 unknown (*why). */
static int path_on(virConnectPtr c, const char *path, char **why)
{
	char *dir = xstrdup(path);
	char *slash = strrchr(dir, '/');
	const char *base = slash ? slash + 1 : path;
	if (slash && slash != dir)
		*slash = '\0';
	else if (slash)
		dir[1] = '\0';
	int rc = -1;
	bool made = false;
	virStoragePoolPtr pool = pool_over(c, dir);
	if (pool == NULL) {
		char uid[37];
		util_uuid_v4(uid);
		char *name = xasprintf("kvcon-preflight-%.8s", uid);
		char *x = domxml_dir_pool(name, dir);
		free(name);
		bool built = x != NULL;
		pool = built ? virStoragePoolCreateXML(c, x, 0) : NULL;
		free(x);
		if (pool == NULL) {
			virErrorPtr e = built ? virGetLastError() : NULL;
			if (e && e->message && (strstr(e->message, "No such file") || strstr(e->message, "does not exist")))
				rc = 0;
			else
				*why = xstrdup(!built ? "the directory's name is not plain text"
						      : e && e->message ? e->message : "storage pool");
			free(dir);
			return rc;
		}
		made = true;
	} else
		virStoragePoolRefresh(pool, 0);
	/* listed too: the volumes of the directory, by name */
	virStorageVolPtr *vols = NULL;
	int n = virStoragePoolListAllVolumes(pool, &vols, 0);
	rc = n < 0 ? -1 : 0;
	for (int i = 0; i < n; i++) {
		const char *vn = virStorageVolGetName(vols[i]);
		if (vn && strcmp(vn, base) == 0)
			rc = 1;
		virStorageVolFree(vols[i]);
	}
	free(vols);
	if (rc < 0)
		*why = xstrdup(virGetLastErrorMessage());
	if (made)
		virStoragePoolDestroy(pool);
	virStoragePoolFree(pool);
	free(dir);
	return rc;
}

/* Under KVM the target must offer the guest's CPU (its model, or this host's CPU for host-passthrough and
 * host-model); a TCG guest's CPU is emulated the same everywhere. Which case applies comes from the execution's
 * record and the manifest; libvirt's XML only supplies the CPU definition handed to the comparison. */
static int check_cpu(struct mig_job *j, virConnectPtr sc, virConnectPtr dc, const char *xml, char **err)
{
	if (!j->kvm)
		return 0;
	bool named = j->cpu_model && strcmp(j->cpu_model, "host-model") != 0 &&
		     strcmp(j->cpu_model, "host-passthrough") != 0;
	char *check = named ? domxml_element(xml, "/domain/cpu[model]") : NULL;
	if (check == NULL) {
		char *caps = virConnectGetCapabilities(sc);
		check = caps ? domxml_element(caps, "/capabilities/host/cpu") : NULL;
		free(caps);
	}
	if (check == NULL)
		return 0;
	int r = virConnectCompareHypervisorCPU(dc, NULL, NULL, NULL, "kvm", check, 0);
	if (r == VIR_CPU_COMPARE_ERROR)
		r = virConnectCompareCPU(dc, check, 0);
	free(check);
	if (r == VIR_CPU_COMPARE_INCOMPATIBLE) {
		*err = xasprintf("refused: the guest's CPU model is not compatible with %s's CPU (virConnectCompareCPU)",
				 j->target_name);
		return -1;
	}
	if (r == VIR_CPU_COMPARE_ERROR)
		log_warn("engine: CPU comparison on %s failed: %s", j->target_name, virGetLastErrorMessage());
	return 0;
}

static int preflight(struct mig_job *j, virConnectPtr sc, virConnectPtr dc, virDomainPtr dom, char **err)
{
	virDomainPtr *doms = NULL;
	int nd = virConnectListAllDomains(dc, &doms, 0);
	bool there = false;
	for (int i = 0; i < nd; i++) {
		there |= strcmp(virDomainGetName(doms[i]), j->dom) == 0;
		virDomainFree(doms[i]);
	}
	free(doms);
	if (there) {
		*err = xasprintf("refused: a domain named %s already exists on %s", j->dom, j->target_name);
		return -1;
	}
	char *xml = virDomainGetXMLDesc(dom, 0);
	if (xml == NULL) {
		*err = lv_err("%s: domain definition", j->dom);
		return -1;
	}
	int rc = -1;
	struct need *needs = NULL;
	int nneeds = 0;
	/* the engine's manifests cannot ask for host devices (manifest.c refuses them); a domain edited behind the
	 * engine's back can have some */
	char *hostdev = domxml_element(xml, "/domain/devices/hostdev");
	bool has_hostdev = hostdev != NULL;
	free(hostdev);
	if (has_hostdev) {
		*err = xasprintf("refused: %s uses host devices (hostdev), which cannot be migrated", j->dom);
		goto out;
	}
	if (check_cpu(j, sc, dc, xml, err) < 0)
		goto out;
	virDomainInfo info;
	unsigned long long free_b = virNodeGetFreeMemory(dc);
	if (virDomainGetInfo(dom, &info) == 0 && free_b > 0 && free_b < (unsigned long long)info.memory * 1024) {
		*err = xasprintf("refused: %s has %llu MiB free, the guest needs %lu MiB", j->target_name,
				 free_b >> 20, info.memory >> 10);
		goto out;
	}
	needs_of(xml, j->o.copy_storage, &needs, &nneeds);
	for (int i = 0; i < nneeds; i++) {
		char *why = NULL;
		int r = path_on(dc, needs[i].path, &why);
		if (r == 0) {
			char *p = util_escape_display(needs[i].path);
			*err = xasprintf("refused: %s %s does not exist on %s%s", needs[i].what, p, j->target_name,
					 strstr(needs[i].what, "disk") ? " (--copy-storage copies disk images)" : "");
			free(p);
			goto out;
		}
		if (r < 0) {
			log_warn("engine: pre-flight: cannot tell whether %s exists on %s: %s", needs[i].path,
				 j->target_name, why ? why : "?");
		}
		free(why);
	}
	rc = 0;
out:
	for (int i = 0; i < nneeds; i++)
		free(needs[i].path);
	free(needs);
	free(xml);
	return rc;
}

struct mig_call {
	virDomainPtr dom;
	const char *uri;
	virTypedParameterPtr params;
	int nparams;
	unsigned int flags;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool finished;      /* under mu: the poller wakes at once when the call returns */
	int rc;
	char *err;
};

static void *mig_call_main(void *arg)
{
	struct mig_call *c = arg;
	c->rc = virDomainMigrateToURI3(c->dom, c->uri, c->params, (unsigned)c->nparams, c->flags);
	if (c->rc < 0) {
		const char *e = virGetLastErrorMessage();
		c->err = xstrdup(e ? e : "migration failed");
	}
	pthread_mutex_lock(&c->mu);
	c->finished = true;
	pthread_cond_signal(&c->cv);
	pthread_mutex_unlock(&c->mu);
	return NULL;
}

/* Waits up to ms for the migration call to return; true when it has. */
static bool call_wait(struct mig_call *c, int ms)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += (long)ms * 1000000L;
	ts.tv_sec += ts.tv_nsec / 1000000000L;
	ts.tv_nsec %= 1000000000L;
	pthread_mutex_lock(&c->mu);
	while (!c->finished && pthread_cond_timedwait(&c->cv, &c->mu, &ts) == 0)
		;
	bool done = c->finished;
	pthread_mutex_unlock(&c->mu);
	return done;
}

static void read_stats(virDomainPtr dom, unsigned int flags, struct mmsg *m)
{
	int type = 0, n = 0;
	virTypedParameterPtr p = NULL;
	if (virDomainGetJobStats(dom, &type, &p, &n, flags) < 0)
		return;
	unsigned long long v = 0, page = 4096, rate = 0;
	if (virTypedParamsGetULLong(p, n, VIR_DOMAIN_JOB_DATA_PROCESSED, &v) == 1)
		m->processed = v;
	if (virTypedParamsGetULLong(p, n, VIR_DOMAIN_JOB_DATA_REMAINING, &v) == 1)
		m->remaining = v;
	if (virTypedParamsGetULLong(p, n, VIR_DOMAIN_JOB_DATA_TOTAL, &v) == 1)
		m->total = v;
	virTypedParamsGetULLong(p, n, VIR_DOMAIN_JOB_MEMORY_PAGE_SIZE, &page);
	if (virTypedParamsGetULLong(p, n, VIR_DOMAIN_JOB_MEMORY_DIRTY_RATE, &rate) == 1)
		m->dirty_rate = rate * page;
	if (virTypedParamsGetULLong(p, n, VIR_DOMAIN_JOB_MEMORY_ITERATION, &v) == 1)
		m->iteration = (int)v;
	if (virTypedParamsGetULLong(p, n, VIR_DOMAIN_JOB_DOWNTIME, &v) == 1)
		m->downtime_ms = (int64_t)v;
	if (virTypedParamsGetULLong(p, n, VIR_DOMAIN_JOB_TIME_ELAPSED, &v) == 1)
		m->elapsed_ms = (int64_t)v;
	virTypedParamsFree(p, n);
}

/* Runs the migration; fills d (MM_DONE). */
/* What a failed live migration says: an abort on request or by --timeout reads as one whatever libvirt said. */
char *migrate_failure_text(bool aborted, const char *abort_why, const char *err)
{
	if (aborted && abort_why)
		return xasprintf("aborted: %s (%s)", abort_why, err);
	if (aborted && !strstr(err, "canceled by client"))
		/* the abort closes the stream: libvirt may report the target's failure to load it first */
		return xasprintf("aborted on request, canceled by client (%s)", err);
	return xstrdup(err);
}

static void run_migration(struct mig_job *j, virConnectPtr dc, virDomainPtr dom, struct mmsg *d)
{
	struct mig_call c = { .dom = dom, .uri = j->mig_uri };
	pthread_mutex_init(&c.mu, NULL);
	pthread_cond_init(&c.cv, NULL);
	int maxp = 0;
	if (j->o.bandwidth)
		virTypedParamsAddULLong(&c.params, &c.nparams, &maxp, VIR_MIGRATE_PARAM_BANDWIDTH, j->o.bandwidth);
	c.flags = VIR_MIGRATE_LIVE | VIR_MIGRATE_PEER2PEER | VIR_MIGRATE_PERSIST_DEST | VIR_MIGRATE_UNDEFINE_SOURCE;
	if (j->o.auto_converge)
		c.flags |= VIR_MIGRATE_AUTO_CONVERGE;
	if (j->o.postcopy)
		c.flags |= VIR_MIGRATE_POSTCOPY;
	if (j->o.copy_storage)
		c.flags |= VIR_MIGRATE_NON_SHARED_DISK;
	pthread_t t;
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	int prc = pthread_create(&t, NULL, mig_call_main, &c);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (prc != 0) {
		d->status = -1;
		d->text = xstrdup("cannot start the migration thread");
		virTypedParamsFree(c.params, c.nparams);
		return;
	}
	uint64_t t0 = util_now_ms(), last = 0;
	bool aborted = false, postcopy = false;
	char *abort_why = NULL;
	for (;;) {
		if (call_wait(&c, POLL_MS))
			break;
		uint64_t now = util_now_ms();
		bool want_abort = atomic_load(&j->abort);
		if (!want_abort && j->o.timeout > 0 && now - t0 > (uint64_t)j->o.timeout * 1000 && !postcopy) {
			want_abort = true;
			free(abort_why);
			abort_why = xasprintf("not completed within --timeout %d s", j->o.timeout);
		}
		if (want_abort && !aborted) {
			if (virDomainAbortJob(dom) == 0)
				aborted = true;
			else
				log_warn("engine: abort %s: %s", j->dom, virGetLastErrorMessage());
		}
		if (now - last < STATS_EVERY_MS)
			continue;
		last = now;
		struct mmsg *m = xcalloc(1, sizeof *m);
		m->type = MM_PROGRESS;
		m->j = j;
		read_stats(dom, 0, m);
		if (j->o.postcopy && !postcopy && !aborted && m->iteration >= 2) {
			/* the first pass is done: the rest moves on demand from the target */
			if (virDomainMigrateStartPostCopy(dom, 0) == 0)
				postcopy = true;
			else
				log_warn("engine: post-copy %s: %s", j->dom, virGetLastErrorMessage());
		}
		m->postcopy = postcopy;
		post_msg(on_msg, m);
	}
	pthread_join(t, NULL);
	pthread_mutex_destroy(&c.mu);
	pthread_cond_destroy(&c.cv);
	virTypedParamsFree(c.params, c.nparams);
	d->postcopy = postcopy;
	d->elapsed_ms = (int64_t)(util_now_ms() - t0);
	if (c.rc < 0) {
		d->status = -1;
		d->aborted = aborted;
		d->timed_out = aborted && abort_why;
		d->text = migrate_failure_text(aborted, abort_why, c.err);
		free(c.err);
		free(abort_why);
		return;
	}
	free(abort_why);
	d->status = 0;
	virDomainPtr dd = virDomainLookupByName(dc, j->dom);
	if (dd == NULL) {
		log_warn("engine: %s: migrated but not found on %s: %s", j->dom, j->target_name, virGetLastErrorMessage());
		return;
	}
	int64_t wall = d->elapsed_ms;
	read_stats(dd, VIR_DOMAIN_JOB_STATS_COMPLETED | VIR_DOMAIN_JOB_STATS_KEEP_COMPLETED, d);
	d->elapsed_ms = wall; /* libvirt's own elapsed time counts the target's part only */
	/* the new launcher: QEMU on the target is a new process of the same execution */
	char *meta = virDomainGetMetadata(dd, VIR_DOMAIN_METADATA_ELEMENT, META_URI, VIR_DOMAIN_AFFECT_LIVE);
	if (meta) {
		char *fixed = domxml_with_attr(meta, "launcher", j->new_launcher);
		if (fixed) {
			if (virDomainSetMetadata(dd, VIR_DOMAIN_METADATA_ELEMENT, fixed, "kvcon", META_URI,
						 VIR_DOMAIN_AFFECT_LIVE | VIR_DOMAIN_AFFECT_CONFIG) < 0)
				log_warn("engine: %s: launcher metadata: %s", j->dom, virGetLastErrorMessage());
			free(fixed);
		}
		free(meta);
	}
	virDomainFree(dd);
}

/* ---- settling a migration that a killed process left (the record says started, not how it ended) ---- */

#define RESUME_WAIT_MS (180 * 1000) /* libvirt's own job may still run: waited for, then aborted */

struct where {
	virDomainPtr d;
	int state, reason;
	bool up;       /* QEMU runs (running or paused) */
	bool incoming; /* the target's side of a migration not finished (paused for it) */
	bool job;      /* the source's side of a migration still runs (libvirt's job) */
};

/* source: whether c is the migration's source host, the only side whose job libvirt reports (the target's
 * refuses: "migration statistics are available only on the source host", logged at every poll) */
static void where_of(virConnectPtr c, const char *dom, const char *vm_uid, bool source, struct where *w)
{
	memset(w, 0, sizeof *w);
	if (c == NULL || (w->d = virDomainLookupByName(c, dom)) == NULL)
		return;
	if (virDomainGetState(w->d, &w->state, &w->reason, 0) < 0)
		w->state = VIR_DOMAIN_NOSTATE;
	w->up = w->state == VIR_DOMAIN_RUNNING || w->state == VIR_DOMAIN_PAUSED || w->state == VIR_DOMAIN_BLOCKED ||
		w->state == VIR_DOMAIN_SHUTDOWN || w->state == VIR_DOMAIN_PMSUSPENDED;
	if (w->up) { /* another VM's domain of the same name is not this execution */
		char *meta = virDomainGetMetadata(w->d, VIR_DOMAIN_METADATA_ELEMENT, META_URI, 0);
		if (meta && vm_uid[0] && strstr(meta, vm_uid) == NULL)
			w->up = false;
		free(meta);
	}
	w->incoming = w->up && w->state == VIR_DOMAIN_PAUSED && w->reason == VIR_DOMAIN_PAUSED_MIGRATION;
	virDomainJobInfo info;
	w->job = source && w->up && virDomainGetJobInfo(w->d, &info) == 0 && info.type != VIR_DOMAIN_JOB_NONE;
}

static void where_free(struct where *w)
{
	if (w->d)
		virDomainFree(w->d);
	w->d = NULL;
}

/* Stops a copy of the domain that must not run (the other one is the execution). */
static void drop_copy(struct where *w, const char *host, const char *dom)
{
	log_warn("engine: %s: a second copy ran on %s after an interrupted migration: destroyed", dom, host);
	if (virDomainDestroy(w->d) < 0)
		log_warn("engine: %s on %s: %s", dom, host, virGetLastErrorMessage());
}

/* Where the domain is once libvirt's own job is over: on the target (completed) or on the source (failed). */
static void resume_main(struct mig_job *j, struct mmsg *d)
{
	virConnectPtr sc = virConnectOpen(j->src_uri), dc = j->dst_uri ? virConnectOpen(j->dst_uri) : NULL;
	if (sc == NULL || (j->dst_uri && dc == NULL)) {
		d->retry = true;
		d->text = lv_err("cannot reach %s", sc == NULL ? j->src_uri : j->dst_uri);
		goto out;
	}
	uint64_t t0 = util_now_ms();
	bool aborted = false;
	struct where s, t;
	for (;;) {
		where_of(sc, j->dom, j->vm_uid, true, &s);
		where_of(dc, j->dom, j->vm_uid, false, &t);
		if (!s.job && !t.incoming)
			break;
		bool give_up = util_now_ms() - t0 > RESUME_WAIT_MS;
		if ((atomic_load(&j->abort) || give_up) && !aborted && s.job) {
			aborted = virDomainAbortJob(s.d) == 0;
			if (!aborted)
				log_warn("engine: abort %s: %s", j->dom, virGetLastErrorMessage());
		}
		if (give_up && util_now_ms() - t0 > RESUME_WAIT_MS + 30000) {
			if (t.incoming) { /* the target still waits for a migration that does not come */
				drop_copy(&t, j->target_name, j->dom);
				t.up = false;
			}
			break;
		}
		where_free(&s);
		where_free(&t);
		usleep(POLL_MS * 1000);
	}
	if (t.up && s.up) {
		/* never both: the one that runs the guest (not paused by the migration) is the execution */
		bool target_wins = s.state == VIR_DOMAIN_PAUSED && t.state == VIR_DOMAIN_RUNNING;
		if (target_wins)
			drop_copy(&s, "the source", j->dom);
		else
			drop_copy(&t, j->target_name, j->dom);
		if (target_wins)
			s.up = false;
		else
			t.up = false;
	}
	if (t.up) {
		d->status = 0;
		/* the new launcher, as a completed migration sets it (the kill may have come first) */
		char *meta = virDomainGetMetadata(t.d, VIR_DOMAIN_METADATA_ELEMENT, META_URI, VIR_DOMAIN_AFFECT_LIVE);
		char *fixed = meta ? domxml_with_attr(meta, "launcher", j->new_launcher) : NULL;
		if (fixed && virDomainSetMetadata(t.d, VIR_DOMAIN_METADATA_ELEMENT, fixed, "kvcon", META_URI,
						  VIR_DOMAIN_AFFECT_LIVE | VIR_DOMAIN_AFFECT_CONFIG) < 0)
			log_warn("engine: %s: launcher metadata: %s", j->dom, virGetLastErrorMessage());
		free(fixed);
		free(meta);
	} else {
		d->status = -1;
		d->aborted = aborted;
		d->text = s.up ? xstrdup("interrupted: the engine stopped during the migration; libvirt did not complete it")
			       : xstrdup("interrupted: the engine stopped during the migration, and the VM with it");
	}
	where_free(&s);
	where_free(&t);
out:
	if (sc)
		virConnectClose(sc);
	if (dc)
		virConnectClose(dc);
}

static void *job_main(void *arg)
{
	struct mig_job *j = arg;
	struct mmsg *d = xcalloc(1, sizeof *d);
	d->type = MM_DONE;
	d->j = j;
	d->status = -1;
	virConnectPtr sc = NULL, dc = NULL;
	virDomainPtr dom = NULL;
	if (j->resume) {
		resume_main(j, d);
		goto out;
	}
	sc = virConnectOpen(j->src_uri);
	if (sc == NULL) {
		d->text = lv_err("source host %s unreachable", j->src_uri);
		goto out;
	}
	dc = virConnectOpen(j->dst_uri);
	if (dc == NULL) {
		d->text = lv_err("refused: target host %s unreachable", j->target_name);
		goto out;
	}
	dom = virDomainLookupByName(sc, j->dom);
	if (dom == NULL && !j->o.offline) {
		d->text = lv_err("%s: not on the source host", j->dom);
		goto out;
	}
	if (dom && preflight(j, sc, dc, dom, &d->text) < 0)
		goto out;
	if (atomic_load(&j->abort)) {
		d->aborted = true;
		d->text = xstrdup("aborted before it started");
		goto out;
	}
	if (j->o.offline) {
		d->status = 0; /* the loop moves the record; the definition is rebuilt at the next start */
		goto out;
	}
	run_migration(j, dc, dom, d);
out:
	if (dom)
		virDomainFree(dom);
	if (sc)
		virConnectClose(sc);
	if (dc)
		virConnectClose(dc);
	post_msg(on_msg, d);
	return NULL;
}

/* ---- the loop side ---- */

static void job_free(struct mig_job *j)
{
	free(j->src_uri);
	free(j->dst_uri);
	free(j->mig_uri);
	free(j->dom);
	free(j->new_launcher);
	free(j->target_name);
	free(j->cpu_model);
	free(j->abort_why);
	free(j);
}

static char *pod_name_of(const struct evm *v, const char *launcher)
{
	return xasprintf("virt-launcher-%s-%.5s", v->m->name, launcher);
}

static void stats_into(struct emig *e, const struct mmsg *m)
{
	e->processed = m->processed;
	e->remaining = m->remaining;
	e->total = m->total ? m->total : m->processed + m->remaining;
	e->dirty_rate = m->dirty_rate;
	e->iteration = m->iteration;
	e->downtime_ms = m->downtime_ms;
	e->elapsed_ms = m->elapsed_ms;
	if (e->total > 0)
		e->progress_pct = (int)((e->total - (m->remaining < e->total ? m->remaining : e->total)) * 100 / e->total);
	if (m->postcopy) {
		free(e->mode);
		e->mode = xstrdup("PostCopy");
	}
}

static void finish(struct mig_job *j, struct mmsg *m)
{
	struct evm *v = j->v;
	struct exec *x = v->cur;
	struct emig *e = x ? x->mig : NULL;
	int64_t now = util_wall_s();
	char *msg = NULL;
	if (e) {
		e->job = NULL;
		e->end = now;
		stats_into(e, m);
	}
	const char *target = j->target_name;
	char *serr = NULL;
	if (m->status == 0 && j->o.offline && evm_move_offline(v, j->dst, &serr) < 0) {
		free(m->text);
		m->text = xasprintf("the move could not be stored: %s", serr);
		m->status = -1;
		free(serr);
	}
	if (m->status == 0 && j->o.offline) {
		msg = xasprintf("moved to %s (offline)", target);
		evm_event(v, "Normal", "Migrated", msg);
		evm_persist(v);
	} else if (m->status == 0 && x && e) {
		e->completed = true;
		e->progress_pct = 100;
		if (e->nprev == MIG_MAX_PREV) {
			free(e->prev[0].node);
			memmove(e->prev, e->prev + 1, sizeof e->prev[0] * (MIG_MAX_PREV - 1));
			e->nprev--;
		}
		struct mig_launcher *l = &e->prev[e->nprev++];
		snprintf(l->uid, UID_LEN, "%s", x->launcher);
		l->node = xstrdup0(x->node);
		l->pid = x->pid;
		l->started = x->started ? x->started : x->created;
		l->ended = now;
		snprintf(x->launcher, UID_LEN, "%s", j->new_launcher);
		x->pid = 0;
		free(x->cmdline);
		x->cmdline = NULL;
		if (j->resume)
			msg = xasprintf("migrated from %s to %s (completed while the engine was stopped)",
					e->source_node, target);
		else
			msg = xasprintf("migrated from %s to %s in %.1f s (downtime %lld ms, %llu MiB transferred)",
					e->source_node, target, (double)m->elapsed_ms / 1000.0, (long long)m->downtime_ms,
					(unsigned long long)(m->processed >> 20));
		evm_event(v, "Normal", "Migrated", msg);
		/* the old launcher's pod object goes with the source host's view */
		store_remove(evm_store(), ehost_source(v->eh), OBJ_POD, l->uid);
		evm_move(v, j->dst);
	} else {
		const char *why = m->text ? m->text : "migration failed";
		if (e) {
			e->failed = true;
			free(e->failure_reason);
			e->failure_reason = xstrdup(why);
			if (!m->timed_out && (e->abort_requested || m->aborted || strstr(why, "canceled by client"))) {
				free(e->abort_status);
				e->abort_status = xstrdup(m->aborted || strstr(why, "abort") || strstr(why, "canceled") ? "Succeeded"
															      : "Failed");
			}
		}
		msg = j->o.offline ? xasprintf("offline migration to %s failed; the VM stays on %s: %s", target,
					       ehost_source(v->eh)->name, why)
				   : xasprintf("migration to %s failed; the VM keeps running on %s: %s", target,
					       ehost_source(v->eh)->name, why);
		evm_event(v, "Warning", "FailedMigration", msg);
		if (evm_active(v))
			evm_inspect(v);
		evm_publish(v);
		evm_persist(v);
	}
	log_info("engine: %s: %s", v->key, msg);
	if (j->done)
		j->done(j->arg, m->status == 0 ? 0 : -1, m->status == 0 ? msg : m->text ? m->text : "failed");
	free(msg);
}

static void on_msg(void *arg)
{
	struct mmsg *m = arg;
	struct mig_job *j = m->j;
	struct evm *v = j->v;
	if (m->type == MM_PROGRESS) {
		if (v->cur && v->cur->mig && v->cur->mig->job == j) {
			stats_into(v->cur->mig, m);
			evm_publish(v);
		}
	} else if (m->retry) {
		pthread_join(j->thread, NULL);
		log_warn("engine: %s: the interrupted migration is not settled yet: %s", v->key, m->text);
		if (v->cur && v->cur->mig && v->cur->mig->job == j)
			v->cur->mig->job = NULL; /* the next sync tries again */
		job_free(j);
	} else {
		pthread_join(j->thread, NULL);
		finish(j, m);
		job_free(j);
	}
	free(m->text);
	free(m);
}

static struct ehost *pick_target(struct ehost *from, const char *target, char **err)
{
	int n;
	struct ehost **all = ehost_all(&n);
	struct ehost *found = NULL;
	int others = 0;
	for (int i = 0; i < n; i++) {
		if (all[i] == from)
			continue;
		others++;
		if (target == NULL || strcmp(ehost_source(all[i])->name, target) == 0 ||
		    strcmp(ehost_uri(all[i]), target) == 0)
			found = found && target == NULL ? found : all[i];
	}
	if (target == NULL && others > 1) {
		*err = xstrdup("several engine hosts: say which with --to HOST");
		return NULL;
	}
	if (target && (strcmp(ehost_source(from)->name, target) == 0 || strcmp(ehost_uri(from), target) == 0)) {
		*err = xasprintf("refused: the VM already runs on %s", target);
		return NULL;
	}
	if (found == NULL)
		*err = target ? xasprintf("refused: no engine host %s (open it with -c URI or list it in the config)",
					  target)
			      : xstrdup("refused: no other engine host to migrate to (open one with -c URI)");
	return found;
}

/* Starts a migration of the VM ns/name found on src. done runs when it has ended (status 0: completed).
 * 0, or -1 with *err (caller frees) when refused before anything started. */
static int engine_migrate(struct source *src, const char *ns, const char *name, const struct migrate_opts *o,
			  action_done_cb done, void *arg, char **err)
{
	struct evm *v = evm_find(src, ns, name);
	if (v == NULL || v->deleting) {
		*err = xasprintf("virtualmachine \"%s\" not found on %s", name, src->name);
		return -1;
	}
	if (src->readonly || opts_global()->readonly) {
		*err = xstrdup("read-only: migrate refused");
		return -1;
	}
	if (migrate_busy(v)) {
		*err = xasprintf("a migration of %s is already running", name);
		return -1;
	}
	bool running = evm_active(v);
	if (running && o->offline) {
		*err = xstrdup("refused: the VM is running (--offline moves a stopped VM; drop it for a live migration)");
		return -1;
	}
	if (!running && !o->offline) {
		*err = xstrdup("refused: the VM is not running (--offline moves a stopped VM)");
		return -1;
	}
	if (running && v->cur->phase != intern("Running")) {
		*err = xstrdup("refused: the VM is still starting");
		return -1;
	}
	if (v->stopping || v->restart) {
		*err = xstrdup("refused: the VM is being stopped");
		return -1;
	}
	struct ehost *from = ehost_of_source(src);
	struct ehost *dst = pick_target(from, o->target, err);
	if (dst == NULL)
		return -1;
	struct source *dsrc = ehost_source(dst);
	if (!ehost_ready(dst)) {
		const char *why = engine_error(dsrc);
		*err = why ? xasprintf("refused: target host %s unreachable: %s", ehost_uri(dst), why)
			   : xasprintf("refused: target host %s is not connected yet", ehost_uri(dst));
		return -1;
	}
	if (evm_find(dsrc, ns, name)) {
		*err = xasprintf("refused: %s already has a virtualmachine %s/%s", dsrc->name, v->m->ns, name);
		return -1;
	}
	char *unsched = enode_unschedulable_on(v, dst); /* the target's launcher pod would not be scheduled */
	if (unsched) {
		*err = xasprintf("refused: the target node %s does not admit the VM: %s", dsrc->name, unsched);
		free(unsched);
		return -1;
	}
	char *root = embed_uri_root(ehost_uri(from));
	char *droot = embed_uri_root(ehost_uri(dst));
	bool embedded = root || droot;
	free(root);
	free(droot);
	if (embedded && !o->offline) {
		*err = xstrdup("refused: the embedded driver (qemu:///embed) cannot take part in a live migration; "
			       "run the VM on a libvirtd host");
		return -1;
	}
	const char *mig_uri = o->mig_uri ? o->mig_uri : migrate_uri_for(ehost_uri(dst), dsrc->name);
	if (mig_uri == NULL && uri_is_network(ehost_uri(dst)))
		mig_uri = ehost_uri(dst);
	if (mig_uri == NULL && !o->offline) {
		*err = xasprintf("refused: no migration URI for %s: the source host cannot use %s; set "
				 "`engine.host = %s migrate-uri=qemu+tcp://ADDRESS/system` in the config or pass --migrate-uri",
				 dsrc->name, ehost_uri(dst), ehost_uri(dst));
		return -1;
	}
	struct mig_job *j = xcalloc(1, sizeof *j);
	j->src_uri = xstrdup(ehost_uri(from));
	j->dst_uri = xstrdup(ehost_uri(dst));
	j->mig_uri = xstrdup0(mig_uri);
	j->dom = evm_dom_name(v);
	j->target_name = xstrdup(dsrc->name);
	j->new_launcher = xmalloc(UID_LEN);
	util_uuid_v4(j->new_launcher);
	j->o = *o;
	j->o.target = j->o.mig_uri = j->o.uid = NULL;
	j->kvm = v->cur && !v->cur->tcg;
	j->cpu_model = xstrdup0(v->m->cpu_model);
	j->v = v;
	j->dst = dst;
	j->done = done;
	j->arg = arg;
	struct exec *x = v->cur;
	if (x) {
		if (x->mig == NULL)
			x->mig = xcalloc(1, sizeof *x->mig);
		struct emig *e = x->mig;
		if (o->uid && strlen(o->uid) == UID_LEN - 1)
			snprintf(e->uid, UID_LEN, "%s", o->uid);
		else
			util_uuid_v4(e->uid);
		snprintf(e->target_launcher, UID_LEN, "%s", j->new_launcher);
		free(e->source_node);
		e->source_node = xstrdup(src->name);
		free(e->target_node);
		e->target_node = xstrdup(dsrc->name);
		e->start = util_wall_s();
		e->end = 0;
		e->completed = e->failed = e->abort_requested = false;
		free(e->abort_status);
		e->abort_status = NULL;
		free(e->mode);
		e->mode = xstrdup("PreCopy");
		free(e->failure_reason);
		e->failure_reason = NULL;
		e->progress_pct = 0;
		e->processed = e->remaining = e->total = e->dirty_rate = 0;
		e->iteration = 0;
		e->downtime_ms = e->elapsed_ms = 0;
		e->job = j;
		char *msg = xasprintf("migrating to %s (migration %s%s%s)", dsrc->name, e->uid,
				      o->postcopy ? ", post-copy allowed" : "", o->copy_storage ? ", copying storage" : "");
		/* the intent on disk before libvirt hears of it: a process killed from here on leaves a record that
		 * the next one settles (migrate_resume_all) */
		if (evm_persist_err(v, err) < 0) {
			e->job = NULL;
			e->failed = true;
			e->end = util_wall_s();
			e->failure_reason = xstrdup(*err);
			job_free(j);
			free(msg);
			evm_publish(v);
			return -1;
		}
		evm_event(v, "Normal", "Migrating", msg);
		free(msg);
		evm_publish(v);
	}
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	int rc = pthread_create(&j->thread, NULL, job_main, j);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		if (x)
			x->mig->job = NULL;
		job_free(j);
		*err = xstrdup("cannot start the migration thread");
		return -1;
	}
	return 0;
}

/* Asks the running migration of ns/name to abort (virDomainAbortJob). 0, or -1 with *err. */
static int engine_migrate_abort(struct source *src, const char *ns, const char *name, char **err)
{
	struct evm *v = evm_find(src, ns, name);
	if (v == NULL) {
		*err = xasprintf("virtualmachine \"%s\" not found on %s", name, src->name);
		return -1;
	}
	if (!migrate_busy(v)) {
		*err = xasprintf("no migration of %s is running", name);
		return -1;
	}
	struct emig *e = v->cur->mig;
	e->abort_requested = true;
	free(e->abort_status);
	e->abort_status = xstrdup("Aborting");
	atomic_store(&e->job->abort, true);
	evm_event(v, "Normal", "MigrationAbortRequested", "abort of the migration requested");
	evm_publish(v);
	return 0;
}

struct abort_call {
	char *uri, *dom, *err;
	action_done_cb done;
	void *arg;
	pthread_t thread;
};

static void abort_fire(void *arg)
{
	struct abort_call *a = arg;
	pthread_join(a->thread, NULL);
	a->done(a->arg, a->err ? -1 : 0, a->err);
	free(a->uri);
	free(a->dom);
	free(a->err);
	free(a);
}

static void *abort_main(void *arg)
{
	struct abort_call *a = arg;
	virConnectPtr c = virConnectOpen(a->uri);
	virDomainPtr d = c ? virDomainLookupByName(c, a->dom) : NULL;
	virDomainJobInfo info;
	if (d == NULL)
		a->err = lv_err("%s", a->dom);
	else if (virDomainGetJobInfo(d, &info) == 0 && info.type == VIR_DOMAIN_JOB_NONE)
		a->err = xasprintf("no migration of %s is running", a->dom);
	else if (virDomainAbortJob(d) < 0)
		a->err = lv_err("abort %s", a->dom);
	if (d)
		virDomainFree(d);
	if (c)
		virConnectClose(c);
	loop_post(abort_fire, a);
	return NULL;
}

/* The same from any process: a migration started by another process is aborted through the source host
 * (virDomainAbortJob). done runs once libvirt answered. */
static int migrate_abort_any(struct source *src, const char *ns, const char *name, action_done_cb done, void *arg,
			     char **err)
{
	struct evm *v = evm_find(src, ns, name);
	if (v == NULL) {
		*err = xasprintf("virtualmachine \"%s\" not found on %s", name, src->name);
		return -1;
	}
	if (migrate_busy(v)) {
		if (engine_migrate_abort(src, ns, name, err) < 0)
			return -1;
		done(arg, 0, NULL);
		return 0;
	}
	if (!evm_active(v)) {
		*err = xasprintf("%s is not running", name);
		return -1;
	}
	struct abort_call *a = xcalloc(1, sizeof *a);
	a->uri = xstrdup(ehost_uri(ehost_of_source(src)));
	a->dom = evm_dom_name(v);
	a->done = done;
	a->arg = arg;
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	int rc = pthread_create(&a->thread, NULL, abort_main, a);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		free(a->uri);
		free(a->dom);
		free(a);
		*err = xstrdup("cannot start a thread");
		return -1;
	}
	return 0;
}

int migrate_action(struct source *src, const struct action_req *req, action_done_cb done, void *arg, char **err)
{
	if (req->act == ACT_MIGRATE_ABORT)
		return migrate_abort_any(src, req->ns, req->name, done, arg, err);
	struct migrate_opts o = {
		.target = req->target,
		.auto_converge = req->flags & ENGINE_MIG_AUTO_CONVERGE,
		.postcopy = req->flags & ENGINE_MIG_POSTCOPY,
		.copy_storage = req->flags & ENGINE_MIG_COPY_STORAGE,
		.offline = req->flags & ENGINE_MIG_OFFLINE,
		.uid = req->uid,
		.mig_uri = req->mig_uri,
		.timeout = req->timeout,
		.bandwidth = req->bandwidth,
	};
	return engine_migrate(src, req->ns, req->name, &o, done, arg, err);
}

static bool unsettled(const struct emig *e)
{
	return e && e->start && !e->completed && !e->failed;
}

bool migrate_busy(const struct evm *v)
{
	return v && v->cur && v->cur->mig && (v->cur->mig->job || unsettled(v->cur->mig));
}

static void resume_one(struct evm *v, struct ehost **all, int n)
{
	struct emig *e = v->cur->mig;
	struct ehost *dst = NULL;
	for (int i = 0; i < n; i++)
		if (all[i] != v->eh && util_str_eq(ehost_source(all[i])->name, e->target_node))
			dst = all[i];
	struct mig_job *j = xcalloc(1, sizeof *j);
	j->resume = true;
	j->src_uri = xstrdup(ehost_uri(v->eh));
	j->dst_uri = dst ? xstrdup(ehost_uri(dst)) : NULL;
	j->dom = evm_dom_name(v);
	j->target_name = xstrdup(dst ? ehost_source(dst)->name : e->target_node ? e->target_node : "?");
	j->new_launcher = xmalloc(UID_LEN);
	if (e->target_launcher[0])
		snprintf(j->new_launcher, UID_LEN, "%s", e->target_launcher);
	else
		util_uuid_v4(j->new_launcher);
	snprintf(j->vm_uid, UID_LEN, "%s", v->uid);
	j->v = v;
	j->dst = dst;
	e->job = j;
	log_info("engine: %s: settling migration %s to %s, started by a process that ended before it did", v->key,
		 e->uid, j->target_name);
	sigset_t all_sigs, old;
	sigfillset(&all_sigs);
	pthread_sigmask(SIG_BLOCK, &all_sigs, &old);
	int rc = pthread_create(&j->thread, NULL, job_main, j);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		e->job = NULL;
		job_free(j);
	}
}

void migrate_resume_all(void)
{
	int n;
	struct ehost **all = ehost_all(&n);
	bool all_ready = true;
	for (int i = 0; i < n; i++)
		all_ready &= ehost_ready(all[i]);
	for (int i = 0; i < n; i++) {
		if (!ehost_ready(all[i]))
			continue;
		int nv = 0;
		struct evm **vs = ehost_vms(all[i], &nv);
		for (int k = 0; k < nv; k++) {
			struct evm *v = vs[k];
			if (v->cur == NULL || !unsettled(v->cur->mig) || v->cur->mig->job)
				continue;
			/* both hosts answer; a target named by no host is settled once every host answered (a host
			 * is known by its name only then): until then the VM waits, never started twice */
			bool target_ready = false;
			for (int h = 0; h < n; h++)
				target_ready |= all[h] != all[i] && ehost_ready(all[h]) &&
						util_str_eq(ehost_source(all[h])->name, v->cur->mig->target_node);
			if (target_ready || all_ready)
				resume_one(v, all, n);
		}
		free(vs);
	}
}

void migrate_publish(struct evm *v, struct vmi *vi)
{
	const struct exec *x = v->cur;
	if (x == NULL || x->mig == NULL)
		return;
	const struct emig *e = x->mig;
	struct migration_state *m = vmi_mig_set(vi);
	m->present = true;
	m->source_node = intern(e->source_node);
	m->target_node = intern(e->target_node);
	snprintf(m->migration_uid, UID_LEN, "%s", e->uid);
	m->start = e->start;
	m->end = e->end;
	m->completed = e->completed;
	m->failed = e->failed;
	m->abort_requested = e->abort_requested;
	m->abort_status = e->abort_status ? intern(e->abort_status) : NULL;
	m->mode = e->mode ? intern(e->mode) : NULL;
	m->failure_reason = xstrdup0(e->failure_reason);
	m->progress_pct = e->progress_pct;
	m->data_processed = e->processed;
	m->data_remaining = e->remaining;
	m->dirty_rate = e->dirty_rate;
	m->iteration = e->iteration;
	m->downtime_ms = e->downtime_ms;
	const struct mig_launcher *last = e->nprev ? &e->prev[e->nprev - 1] : NULL;
	if (e->job) {
		m->source_pod = pod_name_of(v, x->launcher);
		m->target_pod = pod_name_of(v, e->job->new_launcher);
	} else if (e->completed && last) {
		m->source_pod = pod_name_of(v, last->uid);
		m->target_pod = pod_name_of(v, x->launcher);
	}
	/* the launchers this execution left on other hosts: completed pods, as KubeVirt keeps a migration's source */
	struct store *st = evm_store();
	for (int i = 0; i < e->nprev; i++) {
		const struct mig_launcher *l = &e->prev[i];
		if (l->deleted) {
			store_remove(st, vi->o.src, OBJ_POD, l->uid);
			continue;
		}
		struct pod *p = (struct pod *)obj_new(OBJ_POD);
		p->o.src = vi->o.src;
		p->o.ns = vi->o.ns;
		p->o.name = pod_name_of(v, l->uid);
		snprintf(p->o.uid, UID_LEN, "%s", l->uid);
		p->o.created = obj_epoch(l->started);
		obj_label_add(&p->o, "kubevirt.io", "virt-launcher");
		obj_label_add(&p->o, "kubevirt.io/created-by", x->uid);
		obj_label_add(&p->o, "vm.kubevirt.io/name", v->m->name);
		snprintf(p->vmi_uid, UID_LEN, "%s", x->uid);
		p->vm_name = intern(v->m->name);
		p->phase = intern("Succeeded");
		p->node = intern(l->node);
		p->containers = xcalloc(1, sizeof *p->containers);
		p->ncontainers = 1;
		p->containers[0].name = intern("compute");
		p->containers[0].state = intern("terminated");
		p->containers[0].reason = intern("Completed");
		p->containers[0].started = l->started;
		p->containers[0].message = xstrdup("migrated away");
		p->pid = 0;
		store_upsert(st, &p->o);
	}
}

int engine_delete_launcher(struct source *src, const char *ns, const char *name, const char *pod_uid)
{
	struct evm *v = evm_find(src, ns, name);
	struct exec *x = v ? v->cur : NULL;
	for (int i = 0; x && x->mig && i < x->mig->nprev; i++)
		if (strcmp(x->mig->prev[i].uid, pod_uid) == 0 && !x->mig->prev[i].deleted) {
			x->mig->prev[i].deleted = true;
			evm_persist(v);
			evm_publish(v);
			return 0;
		}
	return -1;
}

void migrate_unpublish(struct evm *v, const struct exec *x)
{
	if (x == NULL || x->mig == NULL)
		return;
	for (int i = 0; i < x->mig->nprev; i++)
		store_remove(evm_store(), ehost_source(v->eh), OBJ_POD, x->mig->prev[i].uid);
}
