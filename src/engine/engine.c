/* The engine on the loop thread: per host a source, the VMs' records, the run-strategy reconciler driven by
 * libvirt lifecycle events and a periodic resync, actions with virtctl's semantics, and the objects it puts in
 * the store (VM, VMI = execution, launcher pod = QEMU process, events). libvirt itself runs in host.c. */
#include "engine/engine.h"

#include <dirent.h>
#include <json.h>
#include <sys/stat.h>
#include <errno.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <time.h>
#include <libvirt/libvirt.h>
#include <netinet/in.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/buf.h"
#include "core/config.h"
#include "core/hmap.h"
#include "core/intern.h"
#include "core/log.h"
#include "core/loop.h"
#include "core/opts.h"
#include "core/trust.h"
#include "core/util.h"
#include "core/xmalloc.h"
#include "engine/domxml.h"
#include "engine/embed.h"
#include "engine/estream.h"
#include "engine/evm.h"
#include "engine/elog.h"
#include "engine/host.h"
#include "engine/hostfwd.h"
#include "engine/hostenv.h"
#include "engine/imgcache.h"
#include "engine/migrate.h"
#include "engine/oci.h"
#include "model/registry.h"
#include "model/source.h"

#define RESYNC_MS 10000
#define RING_MAX (64 * 1024)
#define QUICK_FAILURE_S 60

enum preq_kind { PK_START, PK_STOP, PK_DESTROY, PK_PAUSE, PK_INSPECT, PK_WRITE, PK_UNDEFINE, PK_CONSOLE, PK_VNC,
		 PK_OTHER };

struct preq {
	int id;
	enum preq_kind kind;
	struct evm *v;
	engine_vnc_cb vnc_cb;
	void *arg;
	struct preq *next;
};

struct ehost {
	struct source *src;
	struct host *h;
	char *uri;
	bool up, synced, loaded;
	char *accel, *error;
	char *records_dir;
	int owner_fd;   /* the flock on the host's service.lock: one engine process per host (-1: none held) */
	char **bad;     /* unreadable records: "FILE: reason", kept on disk untouched, reported (engine_problems) */
	char **bad_uid; /* the VM row each one shows as */
	int nbad;
	struct embed_account acct; /* who QEMU runs as on an embedded root (acct.same otherwise) */
	struct hmap vms; /* ns/name -> evm */
	struct preq *reqs;
	/* the kvcon domains of the last sync (copies): where a domain moved behind kvcon's back is found */
	struct host_dom *seen;
	int nseen;
};

struct waiter {
	enum action act;
	action_done_cb done;
	void *arg;
	char old_uid[UID_LEN];
	struct waiter *next;
};

struct engine_console {
	struct loop_timer *backlog_timer;
	char *backlog;
	size_t backlog_len;
	struct evm *v;
	struct ehost *eh;
	char *key;
	engine_console_cb cb;
	void *arg;
	struct engine_console *next;
};

static struct {
	struct store *st;
	struct ehost **hosts;
	int nhosts;
	struct loop_timer *resync;
} E;

static void reconcile(struct evm *v);
static void publish(struct evm *v);
static void check_waiters(struct evm *v);
static bool pull_reason(const char *how);
static void pull_cancel(const struct evm *v);
static void pod_image_containers(const struct evm *v, struct pod *p);

/* ---- paths ---- */

static char *data_dir(void)
{
	char *s = util_state_dir();
	char *d = util_path_join(s, "engine-data");
	free(s);
	return d;
}

static void values_free(char **vals)
{
	for (size_t i = 0; vals && vals[i]; i++)
		free(vals[i]);
	free(vals);
}

/* An engine setting: $ENV, else the first non-empty "key = value" of the config file (core/config.h), else NULL.
 * Caller frees. */
static char *setting(const char *env, const char *key)
{
	const char *e = getenv(env);
	if (e && *e)
		return xstrdup(e);
	struct config *cfg = config_load(NULL);
	const char *v = config_get(cfg, key);
	char *val = v ? xstrdup(v) : NULL;
	config_free(cfg);
	return val;
}

char *engine_setting(const char *env, const char *key)
{
	return setting(env, key);
}

/* The directories the host's owner allows for hostDisk and kernelBoot host paths: "engine.allow-host-path =
 * DIR" lines of the config file only (an opt-in, like KubeVirt's HostDisk feature gate; absolute paths).
 * A NULL-terminated array (caller frees with values_free; never NULL). */
static char **host_roots(void)
{
	struct config *cfg = config_load(NULL);
	char **vals = xcalloc(config_count(cfg) + 1, sizeof *vals);
	size_t j = 0;
	for (size_t i = 0; i < config_count(cfg); i++) {
		const struct config_entry *e = config_at(cfg, i);
		if (strcmp(e->key, "engine.allow-host-path") != 0 || e->value[0] == '\0')
			continue;
		if (e->value[0] == '/')
			vals[j++] = xstrdup(e->value);
		else {
			char *w = config_where(cfg, e);
			log_warn("config %s: engine.allow-host-path = %s ignored: not an absolute path", w, e->value);
			free(w);
		}
	}
	config_free(cfg);
	return vals;
}

/* The engine's cache of containerDisks pulled from registries (engine-data/imgcache): images the engine wrote
 * itself, as trusted as the image directory. */
static char *image_cache_dir(void)
{
	char *d = data_dir();
	char *p = util_path_join(d, "imgcache");
	free(d);
	return p;
}

static char *env_dir(const char *env, const char *sub)
{
	char *e = setting(env, strcmp(sub, "images") == 0 ? "engine.images" : "engine.volumes");
	if (e)
		return e;
	char *d = data_dir();
	char *p = util_path_join(d, sub);
	free(d);
	return p;
}

bool engine_has_record(const char *ns, const char *name)
{
	char *dd = data_dir();
	char *hosts = util_path_join(dd, "hosts");
	free(dd);
	char *want = ns && name ? xasprintf("%s_%s.json", ns, name) : NULL;
	bool any = false;
	DIR *d = opendir(hosts);
	for (struct dirent *e; d && !any && (e = readdir(d)) != NULL;) {
		if (e->d_name[0] == '.')
			continue;
		char *vms = xasprintf("%s/%s/vms", hosts, e->d_name);
		DIR *v = opendir(vms);
		for (struct dirent *r; v && !any && (r = readdir(v)) != NULL;) {
			size_t l = strlen(r->d_name);
			any = want ? strcmp(r->d_name, want) == 0 : l > 5 && strcmp(r->d_name + l - 5, ".json") == 0;
		}
		if (v)
			closedir(v);
		free(vms);
	}
	if (d)
		closedir(d);
	free(want);
	free(hosts);
	return any;
}

/* $KVCON_ENGINE_URI, else $LIBVIRT_DEFAULT_URI, else qemu:///embed?root=$XDG_STATE_HOME/kvcon/engine. Caller
 * frees. */
static char *engine_default_uri(void)
{
	/* -c and the config's hosts come first (the callers); then kvcon's own variable, then libvirt's as virsh
	 * honours it, then the embedded driver under kvcon's state directory */
	const char *e = getenv("KVCON_ENGINE_URI");
	if (e && *e)
		return xstrdup(e);
	e = getenv("LIBVIRT_DEFAULT_URI");
	if (e && *e)
		return xstrdup(e);
	char *s = util_state_dir();
	char *u = xasprintf("qemu:///embed?root=%s/engine", s);
	free(s);
	return u;
}

static char *dom_name(const struct evm *v)
{
	return xasprintf("%s_%s", v->m->ns, v->m->name);
}

static char *record_path(const struct evm *v)
{
	return xasprintf("%s/%s_%s.json", v->eh->records_dir, v->m->ns, v->m->name);
}

/* ---- small helpers ---- */

static bool active(const struct exec *x)
{
	return x && (x->phase == intern("Pending") || x->phase == intern("Scheduled") || x->phase == intern("Running"));
}

static bool strategy_is(const struct evm *v, const char *s)
{
	return strcmp(v->run_strategy, s) == 0;
}

static void set_phase(struct exec *x, const char *phase)
{
	const char *p = intern(phase);
	if (x->phase == p && x->nphases)
		return;
	x->phase = p;
	if (x->nphases == EVM_MAX_PHASES) {
		memmove(x->phases, x->phases + 1, sizeof x->phases[0] * (EVM_MAX_PHASES - 1));
		x->nphases--;
	}
	x->phases[x->nphases].phase = p;
	x->phases[x->nphases++].at = util_wall_s();
}

static struct preq *track(struct ehost *eh, int id, enum preq_kind kind, struct evm *v)
{
	if (id == 0)
		return NULL; /* the host is closed: nothing will answer (pulls track negative ids) */
	struct preq *p = xcalloc(1, sizeof *p);
	p->id = id;
	p->kind = kind;
	p->v = v;
	p->next = eh->reqs;
	eh->reqs = p;
	if (v)
		v->inflight++;
	return p;
}

static int send_simple(struct evm *v, enum host_req_type type, enum preq_kind kind)
{
	char *dn = dom_name(v);
	int id = host_simple(v->eh->h, type, dn);
	free(dn);
	track(v->eh, id, kind, v);
	return id;
}

static int64_t wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Stores the record now, on this thread: written to a temporary file, fsync'd, renamed over the record and the
 * directory fsync'd, so an accepted request is on disk before the engine acts on it (a kill -9 at any later
 * moment finds it). 0, or -1 with *err (caller frees) and the previous record intact. */
static int persist_err(struct evm *v, char **err)
{
	char *path = record_path(v);
	char *json = record_dump(v), why[UTIL_WHY_LEN];
	int rc = util_write_file_why(path, json, strlen(json), 0600, why);
	if (rc < 0 && errno == ENOENT) {
		util_mkdir_p(v->eh->records_dir, 0700);
		rc = util_write_file_why(path, json, strlen(json), 0600, why);
	}
	if (rc < 0)
		*err = xasprintf("cannot store the record %s: %s", path, why);
	free(json);
	free(path);
	return rc;
}

/* The same for the engine's own progress (what it saw): a failure is logged; the next change writes again. */
static void persist(struct evm *v)
{
	char *err = NULL;
	if (persist_err(v, &err) < 0) {
		log_error("engine: %s", err);
		free(err);
	}
}

/* Removes a record durably (the directory fsync'd). */
static void unlink_record(const char *path)
{
	if (unlink(path) < 0 && errno != ENOENT) {
		log_error("engine: cannot remove %s: %s", path, strerror(errno));
		return;
	}
	char *dir = xstrdup(path);
	char *slash = strrchr(dir, '/');
	if (slash) {
		*slash = '\0';
		int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd >= 0) {
			fsync(fd);
			close(fd);
		}
	}
	free(dir);
}

static struct evm *find_dom(struct ehost *eh, const char *dom)
{
	const char *key;
	void *val;
	for (size_t it = 0; hmap_next(&eh->vms, &it, &key, &val);) {
		struct evm *v = val;
		char *dn = dom_name(v);
		bool eq = strcmp(dn, dom) == 0;
		free(dn);
		if (eq)
			return v;
	}
	return NULL;
}

static struct ehost *ehost_of(const struct source *src)
{
	return src && src->type == SOURCE_ENGINE ? src->priv : NULL;
}

static struct evm *find_vm(struct source *src, const char *ns, const char *name)
{
	struct ehost *eh = ehost_of(src);
	if (eh == NULL)
		return NULL;
	char *key = xasprintf("%s/%s", ns && *ns ? ns : "default", name);
	struct evm *v = hmap_get(&eh->vms, key);
	free(key);
	return v;
}

/* ---- events ---- */

static void event_obj(struct evm *v, const struct evm_event *e)
{
	struct event *o = (struct event *)obj_new(OBJ_EVENT);
	o->o.src = v->eh->src;
	o->o.ns = intern(v->m->ns);
	o->o.name = xasprintf("%s.%.8s", v->m->name, e->uid);
	snprintf(o->o.uid, UID_LEN, "%s", e->uid);
	o->o.created = e->first;
	o->type = e->type;
	o->reason = e->reason;
	o->message = xstrdup(e->message);
	o->inv_kind = intern(e->on_vmi ? "VirtualMachineInstance" : "VirtualMachine");
	o->inv_name = xstrdup(v->m->name);
	o->inv_ns = intern(v->m->ns);
	snprintf(o->inv_uid, UID_LEN, "%s", e->inv_uid);
	o->count = e->count;
	o->first = e->first;
	o->last = e->last;
	o->component = intern("kvcon-engine");
	store_upsert(E.st, &o->o);
}

__attribute__((format(printf, 5, 6))) static void add_event(struct evm *v, const char *type, const char *reason,
							     bool on_vmi, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *msg = xvasprintf(fmt, ap);
	va_end(ap);
	log_info("engine: %s: %s: %s", v->key, reason, msg);
	if (v->nevents == EVM_MAX_EVENTS) {
		store_remove(E.st, v->eh->src, OBJ_EVENT, v->events[0].uid);
		free(v->events[0].message);
		memmove(v->events, v->events + 1, sizeof v->events[0] * (EVM_MAX_EVENTS - 1));
		v->nevents--;
	}
	v->events = xreallocarray(v->events, (size_t)v->nevents + 1, sizeof *v->events);
	struct evm_event *e = &v->events[v->nevents++];
	memset(e, 0, sizeof *e);
	util_uuid_v4(e->uid);
	e->type = intern(type);
	e->reason = intern(reason);
	e->message = msg;
	e->on_vmi = on_vmi && v->cur;
	snprintf(e->inv_uid, UID_LEN, "%s", e->on_vmi ? v->cur->uid : v->uid);
	e->first = e->last = util_wall_s();
	e->count = 1;
	event_obj(v, e);
}

/* ---- the objects in the store ---- */

static void add_cond(struct cond **conds, int *n, const char *type, bool status, const char *reason,
		     const char *message, int64_t at)
{
	*conds = xreallocarray(*conds, (size_t)*n + 1, sizeof **conds);
	struct cond *c = &(*conds)[(*n)++];
	memset(c, 0, sizeof *c);
	c->type = intern(type);
	c->status = intern(status ? "True" : "False");
	c->reason = intern(reason);
	c->message = xstrdup0(message);
	c->last_transition = at;
}

static bool want_running(const struct evm *v);

static const char *printable(const struct evm *v)
{
	if (v->deleting)
		return "Terminating";
	if (v->stopping)
		return "Stopping";
	if (active(v->cur)) {
		if (v->cur->phase != intern("Running"))
			return "Starting";
		return v->cur->paused ? "Paused" : "Running";
	}
	if (v->cur && pull_reason(v->cur->how)) /* kubelet's reasons for the launcher's image containers */
		return strcmp(v->cur->how, "ErrImageNeverPull") == 0 ? "ErrImagePull"
		       : v->retry_after > util_wall_s() && want_running(v) ? "ImagePullBackOff"
									     : "ErrImagePull";
	if (v->retry_after > util_wall_s() && want_running(v))
		return "CrashLoopBackOff";
	if (v->start_error && strstr(v->start_error, "persistentVolumeClaim"))
		return "ErrorPvcNotFound";
	return "Stopped";
}

static char *pod_name(const struct evm *v)
{
	return xasprintf("virt-launcher-%s-%.5s", v->m->name, v->cur->launcher);
}

static void remove_execution_objs(struct evm *v, const struct exec *x)
{
	if (x == NULL)
		return;
	store_remove(E.st, v->eh->src, OBJ_VMI, x->uid);
	store_remove(E.st, v->eh->src, OBJ_POD, x->launcher);
	migrate_unpublish(v, x);
}

/* The execution's pod network (x->net) as the VMI's status.interfaces and its forwarded ports. */
static void publish_net(const struct exec *x, struct vmi *vi)
{
	for (const char *l = x->net; l && *l;) {
		const char *e = strchr(l, '\n');
		char *line = e ? xstrndup(l, (size_t)(e - l)) : xstrdup(l);
		l = e ? e + 1 : l + strlen(l);
		char *save = NULL, *kind = strtok_r(line, " ", &save), *ifc = strtok_r(NULL, " ", &save);
		char *a = strtok_r(NULL, " ", &save), *b = strtok_r(NULL, " ", &save), *c = strtok_r(NULL, " ", &save),
		     *d = strtok_r(NULL, " ", &save);
		if (kind && ifc && a && strcmp(kind, "ip") == 0) {
			vi->ips = xreallocarray(vi->ips, (size_t)vi->nips + 1, sizeof *vi->ips);
			vi->ip_ifaces = xreallocarray(vi->ip_ifaces, (size_t)vi->nips + 1, sizeof *vi->ip_ifaces);
			vi->ip_ifaces[vi->nips] = intern(ifc);
			vi->ips[vi->nips++] = xstrdup(a);
			if (vi->ip == NULL)
				vi->ip = xstrdup(a);
		} else if (kind && ifc && d && strcmp(kind, "port") == 0) {
			vi->fwds = xreallocarray(vi->fwds, (size_t)vi->nfwds + 1, sizeof *vi->fwds);
			struct port_fwd *f = &vi->fwds[vi->nfwds++];
			f->iface = intern(ifc);
			f->name = strcmp(a, "-") ? intern(a) : NULL;
			f->proto = intern(b);
			f->port = atoi(c);
			f->host_port = atoi(d);
		}
		free(line);
	}
}

static void publish(struct evm *v)
{
	int64_t now = util_wall_s();
	struct vm *vm = (struct vm *)obj_new(OBJ_VM);
	vm->o.src = v->eh->src;
	vm->o.ns = intern(v->m->ns);
	vm->o.name = xstrdup(v->m->name);
	snprintf(vm->o.uid, UID_LEN, "%s", v->uid);
	vm->o.created = v->created;
	vm->o.generation = v->generation;
	vm->o.deleted = v->deleting ? now : 0;
	if (v->m->nlabels > 0) {
		/* packed in one go: adding them one by one costs the length so far each time (80,000 labels) */
		size_t n = 0, cap = (size_t)v->m->nlabels;
		char **kvs = xcalloc(cap, sizeof *kvs);
		const char **keys = xcalloc(cap, sizeof *keys), **vals = xcalloc(cap, sizeof *vals);
		for (int i = 0; i < v->m->nlabels; i++) {
			char *kv = xstrdup(v->m->labels[i]);
			char *eq = strchr(kv, '=');
			if (eq == NULL) {
				free(kv);
				continue;
			}
			*eq = '\0';
			kvs[n] = kv;
			keys[n] = kv;
			vals[n++] = eq + 1;
		}
		size_t len = obj_labels_encode(NULL, keys, vals, n);
		free(vm->o.labels);
		vm->o.labels = xmalloc(len);
		obj_labels_encode(vm->o.labels, keys, vals, n);
		for (size_t i = 0; i < n; i++)
			free(kvs[i]);
		free(kvs);
		free(keys);
		free(vals);
	}
	vm->run_strategy = intern(v->run_strategy);
	vm->running_field = v->m->running_field;
	vm->printable_status = intern(printable(v));
	bool running = active(v->cur) && v->cur->phase == intern("Running");
	vm->ready = running && !v->cur->paused;
	vm->created_vmi = v->cur != NULL;
	vm->cpu_cores = v->m->cores;
	vm->memory = xstrdup0(v->m->memory_text);
	vm->desired_generation = v->generation;
	vm->observed_generation = v->generation;
	add_cond(&vm->conds, &vm->nconds, "Ready", vm->ready, vm->ready ? "" : "VMINotRunning",
		 vm->ready ? NULL : "the VM has no running instance", now);
	if (v->start_error)
		add_cond(&vm->conds, &vm->nconds, "Failure", true, "FailedCreate", v->start_error, now);
	if (running && v->cur->paused)
		add_cond(&vm->conds, &vm->nconds, "Paused", true, "PausedByUser", "paused by the user", now);
	if (active(v->cur) && v->cur->generation != v->generation)
		add_cond(&vm->conds, &vm->nconds, "RestartRequired", true, "",
			 "the manifest changed since this instance started; restart to apply it", now);
	if (v->failures > 1) {
		vm->start_failures = v->failures;
		vm->start_retry_after = v->retry_after;
	}
	if (v->req_start || v->req_stop) {
		vm->scr = xcalloc(1, sizeof *vm->scr);
		vm->scr[0].action = intern(v->req_start ? "Start" : "Stop");
		vm->nscr = 1;
	}
	store_upsert(E.st, &vm->o);

	struct exec *x = v->cur;
	if (x == NULL)
		return;
	struct vmi *vi = (struct vmi *)obj_new(OBJ_VMI);
	vi->o.src = v->eh->src;
	vi->o.ns = intern(v->m->ns);
	vi->o.name = xstrdup(v->m->name);
	snprintf(vi->o.uid, UID_LEN, "%s", x->uid);
	vi->o.created = x->created;
	vi->o.generation = x->generation;
	obj_label_add(&vi->o, "kubevirt.io/nodeName", x->node ? x->node : "");
	snprintf(vi->vm_uid, UID_LEN, "%s", v->uid);
	/* an execution waiting for its images is, as in KubeVirt, a VMI still Scheduling (its launcher Pending) */
	vi->phase = pull_reason(x->how) ? intern("Scheduling") : x->phase;
	vi->node = intern(x->node);
	vi->phases = xcalloc((size_t)x->nphases + 1, sizeof *vi->phases);
	memcpy(vi->phases, x->phases, sizeof *vi->phases * (size_t)x->nphases);
	vi->nphases = x->nphases;
	bool vready = x->phase == intern("Running") && !x->paused;
	add_cond(&vi->conds, &vi->nconds, "Ready", vready, vready ? "" : x->paused ? "PausedByUser" : "NotRunning",
		 NULL, x->started ? x->started : x->created);
	add_cond(&vi->conds, &vi->nconds, "AgentConnected", x->agent, x->agent ? "" : "AgentNotConnected",
		 x->agent ? NULL : "no guest agent on org.qemu.guest_agent.0", now);
	if (x->paused)
		add_cond(&vi->conds, &vi->nconds, "Paused", true, "PausedByUser", "paused by the user", now);
	vi->software_emulation = x->tcg;
	publish_net(x, vi);
	vi->eviction = v->m->eviction ? intern(v->m->eviction) : NULL;
	vi->active = xcalloc(1, sizeof *vi->active);
	snprintf(vi->active[0].uid, UID_LEN, "%s", x->launcher);
	vi->active[0].node = vi->node;
	vi->nactive = 1;
	migrate_publish(v, vi);
	store_upsert(E.st, &vi->o);

	struct pod *p = (struct pod *)obj_new(OBJ_POD);
	p->o.src = v->eh->src;
	p->o.ns = intern(v->m->ns);
	p->o.name = pod_name(v);
	snprintf(p->o.uid, UID_LEN, "%s", x->launcher);
	p->o.created = x->created;
	/* a launcher a live migration made was created when the source's ended (the VMI keeps its own creation) */
	if (x->mig && x->mig->nprev > 0 && x->mig->prev[x->mig->nprev - 1].ended > p->o.created)
		p->o.created = x->mig->prev[x->mig->nprev - 1].ended;
	obj_label_add(&p->o, "kubevirt.io", "virt-launcher");
	obj_label_add(&p->o, "kubevirt.io/created-by", x->uid);
	obj_label_add(&p->o, "vm.kubevirt.io/name", v->m->name);
	snprintf(p->vmi_uid, UID_LEN, "%s", x->uid);
	p->vm_name = intern(v->m->name);
	const char *pp = x->phase == intern("Pending") || x->phase == intern("Scheduled") || pull_reason(x->how)
				 ? "Pending" /* a pod whose images cannot be pulled stays Pending */
				 : x->phase;
	p->phase = intern(pp);
	p->node = intern(x->node);
	p->containers = xcalloc(1, sizeof *p->containers);
	p->ncontainers = 1;
	struct container_status *c = &p->containers[0];
	c->name = intern("compute");
	if (x->phase == intern("Running")) {
		c->state = intern("running");
		c->ready = true;
		c->started = x->started;
		p->ready_containers = 1;
	} else if (active(x)) {
		c->state = intern("waiting");
		c->reason = intern("ContainerCreating");
		c->message = xstrdup0(x->pull_msg);
	} else if (pull_reason(x->how)) {
		c->state = intern("waiting");
		c->reason = intern(strcmp(x->how, "ErrImageNeverPull") == 0 ? x->how : printable(v));
		c->message = xstrdup0(x->message);
	} else {
		c->state = intern("terminated");
		c->reason = intern(x->phase == intern("Succeeded") ? "Completed" : "Error");
		c->exit_code = x->phase == intern("Succeeded") ? 0 : 1;
		c->message = xstrdup0(x->message);
	}
	add_cond(&p->conds, &p->nconds, "PodScheduled", true, "", NULL, x->created);
	add_cond(&p->conds, &p->nconds, "Ready", c->ready, c->ready ? "" : "ContainersNotReady", NULL, now);
	pod_image_containers(v, p); /* last: it grows p->containers, c points into it */
	p->pid = x->pid;
	p->cmdline = xstrdup0(x->cmdline);
	p->log_path = xstrdup0(x->log_path);
	store_upsert(E.st, &p->o);
}

/* ---- executions ---- */

static void archive(struct evm *v)
{
	struct exec *x = v->cur;
	if (x == NULL)
		return;
	if (v->npast == EVM_MAX_HISTORY) {
		free(v->past[0].node);
		free(v->past[0].how);
		memmove(v->past, v->past + 1, sizeof v->past[0] * (EVM_MAX_HISTORY - 1));
		v->npast--;
	}
	v->past = xreallocarray(v->past, (size_t)v->npast + 1, sizeof *v->past);
	struct evm_past *p = &v->past[v->npast++];
	memset(p, 0, sizeof *p);
	snprintf(p->uid, UID_LEN, "%s", x->uid);
	snprintf(p->launcher, UID_LEN, "%s", x->launcher);
	p->node = xstrdup0(x->node);
	p->how = xstrdup0(x->how ? x->how : x->phase);
	p->started = x->started;
	p->ended = x->ended;
	remove_execution_objs(v, x);
	exec_free(x);
	v->cur = NULL;
}

static void fill_from_dom(struct ehost *eh, struct exec *x, const struct host_dom *d)
{
	(void)eh;
	if (d->pid > 0)
		x->pid = d->pid;
	if (d->cmdline) {
		free(x->cmdline);
		x->cmdline = xstrdup(d->cmdline);
	}
	if (d->log_path) {
		free(x->log_path);
		x->log_path = xstrdup(d->log_path);
	}
	if (d->started)
		x->started = d->started;
	x->paused = d->state == VIR_DOMAIN_PAUSED;
}

/* how: Stopped, ShutdownByGuest, Crashed, FailedCreate, Migrated. */
static void end_exec(struct evm *v, bool failed, const char *how, const char *message)
{
	struct exec *x = v->cur;
	if (!active(x))
		return;
	int64_t now = util_wall_s();
	x->ended = now;
	x->pid = 0;
	x->paused = false;
	free(x->how);
	x->how = xstrdup(how);
	free(x->message);
	x->message = xstrdup0(message);
	set_phase(x, failed ? "Failed" : "Succeeded");
	loop_timer_cancel(v->grace_timer);
	v->grace_timer = NULL;
	bool by_us = x->stop_by_us;
	v->stopping = false;
	v->stop_unsent = false;
	v->stop_deadline = 0;
	v->pause_req = 0;
	if (failed) {
		bool quick = x->started == 0 || now - x->started < QUICK_FAILURE_S;
		v->failures = quick ? v->failures + 1 : 1;
		int64_t delay = v->failures <= 1 ? 0 : (int64_t)10 << (v->failures - 2 > 5 ? 5 : v->failures - 2);
		v->retry_after = delay ? now + (delay > 300 ? 300 : delay) : 0;
		add_event(v, "Warning", how, true, "%s", message ? message : how);
	} else {
		v->failures = 0;
		v->retry_after = 0;
		add_event(v, "Normal", how, true, "%s", message ? message : how);
	}
	/* the display's and agent's sockets, when they had a private directory of their own */
	char *sd = v->eh->h ? domxml_sock_dir_of(x->run_dir, x->uid) : NULL;
	if (sd) {
		struct host_req *r = xcalloc(1, sizeof *r);
		r->type = RQ_RMTREE;
		r->path = sd;
		track(v->eh, host_request(v->eh->h, r), PK_WRITE, NULL);
	}
	if (by_us)
		archive(v); /* KubeVirt deletes the VMI of a stopped VM */
	publish(v);
	persist(v);
}

static const char *const stop_detail_text[] = {
	[VIR_DOMAIN_EVENT_STOPPED_SHUTDOWN] = "the guest shut down",
	[VIR_DOMAIN_EVENT_STOPPED_DESTROYED] = "the domain was destroyed outside kvcon",
	[VIR_DOMAIN_EVENT_STOPPED_CRASHED] = "the guest crashed",
	[VIR_DOMAIN_EVENT_STOPPED_MIGRATED] = "the domain migrated away",
	[VIR_DOMAIN_EVENT_STOPPED_SAVED] = "the domain was saved",
	[VIR_DOMAIN_EVENT_STOPPED_FAILED] = "QEMU exited unexpectedly",
	[VIR_DOMAIN_EVENT_STOPPED_FROM_SNAPSHOT] = "a snapshot was restored",
};

/* A stop seen as a lifecycle event detail (VIR_DOMAIN_EVENT_STOPPED_*). */
static void ended_by_event(struct evm *v, int detail)
{
	if (v->cur == NULL)
		return;
	const char *text = detail >= 0 && detail <= VIR_DOMAIN_EVENT_STOPPED_FROM_SNAPSHOT ? stop_detail_text[detail]
											     : "the domain stopped";
	if (v->cur->stop_by_us)
		end_exec(v, false, "Stopped", "stopped by request");
	else if (detail == VIR_DOMAIN_EVENT_STOPPED_SHUTDOWN)
		end_exec(v, false, "ShutdownByGuest", text);
	else if (detail == VIR_DOMAIN_EVENT_STOPPED_MIGRATED)
		end_exec(v, false, "Migrated", text);
	else
		end_exec(v, true, "Crashed", text);
}

/* The same from a shut-off state's reason (VIR_DOMAIN_SHUTOFF_*), seen by a resync. */
static void ended_by_state(struct evm *v, const struct host_dom *d)
{
	static const int detail_of_reason[] = {
		[VIR_DOMAIN_SHUTOFF_UNKNOWN] = VIR_DOMAIN_EVENT_STOPPED_FAILED,
		[VIR_DOMAIN_SHUTOFF_SHUTDOWN] = VIR_DOMAIN_EVENT_STOPPED_SHUTDOWN,
		[VIR_DOMAIN_SHUTOFF_DESTROYED] = VIR_DOMAIN_EVENT_STOPPED_DESTROYED,
		[VIR_DOMAIN_SHUTOFF_CRASHED] = VIR_DOMAIN_EVENT_STOPPED_CRASHED,
		[VIR_DOMAIN_SHUTOFF_MIGRATED] = VIR_DOMAIN_EVENT_STOPPED_MIGRATED,
		[VIR_DOMAIN_SHUTOFF_SAVED] = VIR_DOMAIN_EVENT_STOPPED_SAVED,
		[VIR_DOMAIN_SHUTOFF_FAILED] = VIR_DOMAIN_EVENT_STOPPED_FAILED,
		[VIR_DOMAIN_SHUTOFF_FROM_SNAPSHOT] = VIR_DOMAIN_EVENT_STOPPED_FROM_SNAPSHOT,
	};
	if (d == NULL) {
		if (v->cur->stop_by_us)
			end_exec(v, false, "Stopped", "stopped by request");
		else
			end_exec(v, true, "Crashed", "the domain disappeared");
		return;
	}
	if (d->state == VIR_DOMAIN_SHUTOFF && d->reason >= 0 &&
	    d->reason < (int)(sizeof detail_of_reason / sizeof detail_of_reason[0]))
		ended_by_event(v, detail_of_reason[d->reason]);
	else if (d->state == VIR_DOMAIN_CRASHED)
		ended_by_event(v, VIR_DOMAIN_EVENT_STOPPED_CRASHED);
	else
		ended_by_event(v, VIR_DOMAIN_EVENT_STOPPED_FAILED);
}

/* An unprivileged QEMU (engine/embed.h) must reach the engine's images and volumes and own the execution's run
 * directory; paths elsewhere (hostDisk, kernelBoot image: host) are the host owner's to open to it. */
static int reach_for_qemu(struct ehost *eh, const struct evm *v, const char *imgs, const char *vols,
			  const char *run_dir, char **err)
{
	if (geteuid() != 0 && eh->acct.same) {
		/* the embedded driver runs as kvcon: without root libvirt cannot create a tap device on a bridge (and
		 * qemu-bridge-helper is not setuid on Debian); QEMU itself never needs root for it */
		char *embed = host_embed_root(eh->uri);
		bool local = embed != NULL;
		free(embed);
		for (int i = 0; local && i < v->m->nifaces; i++)
			if (v->m->ifaces[i].bridge) {
				*err = xasprintf("spec.template.spec.domain.devices.interfaces[%d].bridge: a host bridge needs "
						 "kvcon as root (libvirt creates the tap device; QEMU still runs unprivileged)",
						 i);
				return -1;
			}
		return 0;
	}
	if (eh->acct.same)
		return 0;
	struct stat st;
	if (stat(imgs, &st) == 0 && embed_reach(&eh->acct, imgs, err) < 0)
		return -1;
	for (int i = 0; i < v->m->nvols; i++)
		if (v->m->vols[i].type == MF_VOL_CONTAINER) { /* pulled containerDisks are backing files of the cache */
			char *cache = image_cache_dir(), *disks = util_path_join(cache, "disks");
			int rc = stat(disks, &st) == 0 ? embed_reach(&eh->acct, disks, err) : 0;
			free(disks);
			free(cache);
			if (rc < 0)
				return -1;
			break;
		}
	if (v->m->kernel_image) { /* a kernel-boot image is a directory of the image directory */
		char *kd = util_path_join(imgs, v->m->kernel_image);
		char *real = realpath(kd, NULL), *rimgs = realpath(imgs, NULL);
		int rc = 0;
		if (real && rimgs && util_has_prefix(real, rimgs) && real[strlen(rimgs)] == '/' &&
		    stat(real, &st) == 0 && S_ISDIR(st.st_mode))
			rc = embed_reach(&eh->acct, real, err);
		free(real);
		free(rimgs);
		free(kd);
		if (rc < 0)
			return -1;
	}
	for (int i = 0; i < v->m->nvols; i++)
		if (v->m->vols[i].type == MF_VOL_PVC) {
			char *nsd = util_path_join(vols, v->m->ns);
			int rc = stat(nsd, &st) == 0 ? embed_reach(&eh->acct, nsd, err) : 0;
			free(nsd);
			if (rc < 0)
				return -1;
			break;
		}
	/* the run directory itself is made (root's, 0700) and filled by domxml_prepare, then given to the account
	 * (host.c); here only the way to it */
	char *parent = xstrdup(run_dir);
	char *slash = strrchr(parent, '/');
	if (slash && slash != parent)
		*slash = '\0';
	int rc = util_mkdir_p(parent, 0700) < 0 ? -1 : embed_reach(&eh->acct, parent, err);
	if (rc < 0 && *err == NULL)
		*err = xasprintf("%s: %s", parent, strerror(errno));
	free(parent);
	return rc;
}

static bool pulls_begin(struct evm *v);
static void start_build(struct evm *v);
static void pull_done(void *arg);

static void start_exec(struct evm *v, const char *why)
{
	if (active(v->cur))
		return;
	struct ehost *eh = v->eh;
	if (v->cur)
		archive(v);
	struct exec *x = exec_new();
	util_uuid_v4(x->uid);
	util_uuid_v4(x->launcher);
	x->node = xstrdup(eh->src->name);
	x->created = util_wall_s();
	x->generation = v->generation;
	x->tcg = eh->accel && strcmp(eh->accel, "qemu") == 0;
	char *dd = data_dir();
	x->run_dir = xasprintf("%s/run/%s", dd, x->uid);
	free(dd);
	set_phase(x, "Pending");
	v->cur = x;
	v->req_start = false;
	free(v->start_error);
	v->start_error = NULL;
	if (why)
		add_event(v, "Normal", "Restarted", true, "%s", why);
	add_event(v, "Normal", "Created", true, "created virtual machine instance %s", x->uid);
	if (pulls_begin(v))
		return; /* start_build follows the image pulls */
	start_build(v);
}

/* The first pod-network (masquerade) interface of the VM: the one whose ports are forwarded. */
static const struct mf_iface *pod_iface(const struct evm *v)
{
	for (int i = 0; i < v->m->nifaces; i++)
		if (!v->m->ifaces[i].bridge)
			return &v->m->ifaces[i];
	return NULL;
}

/* x->net: the interface's address and its ports with the host ports forwarded to them (hports, or none). */
static char *net_text(const struct mf_iface *f, const int *hports)
{
	struct buf b = { 0 };
	buf_printf(&b, "ip %s %s\n", f->name, DOMXML_POD_IP);
	for (int i = 0; hports && i < f->nports; i++)
		buf_printf(&b, "port %s %s %s %d %d\n", f->name, f->ports[i].name ? f->ports[i].name : "-",
			   f->ports[i].proto, f->ports[i].port, hports[i]);
	return buf_steal(&b);
}

/* The pod network (domxml.h): the VMI's address, and host ports for the masquerade interface's ports (free
 * when chosen, recorded in the execution: x->net). Ports are forwarded only on a host whose QEMU shares
 * kvcon's network namespace (a local URI: the embedded driver, or the system or session daemon). 0, or -1
 * with *err. */
static int pod_net(struct evm *v, struct domxml_env *env, int **hports, char **err)
{
	const struct mf_iface *f = pod_iface(v);
	const char *uri = ehost_uri(v->eh);
	*hports = NULL;
	free(v->cur->net);
	v->cur->net = NULL;
	if (f == NULL)
		return 0;
	if (f->nports && (uri == NULL || strncmp(uri, "qemu:///", 8) != 0)) {
		*err = xasprintf("interface %s: ports are forwarded only on a local host (qemu:///...), not on %s", f->name,
				 uri ? uri : "this host");
		return -1;
	}
	*hports = xcalloc((size_t)f->nports + 1, sizeof **hports);
	int *held = xcalloc((size_t)f->nports + 1, sizeof *held);
	int rc = 0;
	for (int i = 0; i < f->nports; i++) {
		/* held until every port is chosen: no two ports of this VM get the same one */
		held[i] = hostfwd_free_port(strcmp(f->ports[i].proto, "UDP") == 0, &(*hports)[i]);
		if (held[i] < 0) {
			*err = xasprintf("interface %s: no free host port for %d/%s: %s", f->name, f->ports[i].port,
					 f->ports[i].proto, strerror(errno));
			rc = -1;
			break;
		}
	}
	for (int i = 0; i < f->nports; i++)
		if (held[i] > 0)
			close(held[i]);
	free(held);
	if (rc < 0) {
		free(*hports);
		*hports = NULL;
		return -1;
	}
	env->host_ports = *hports;
	v->cur->net = net_text(f, *hports);
	return 0;
}

/* The second half of a start, once every containerDisk is on this host: the plan and the worker's request. */
static void start_build(struct evm *v)
{
	struct ehost *eh = v->eh;
	struct exec *x = v->cur;
	char *imgs = env_dir("KVCON_ENGINE_IMAGES", "images"), *vols = env_dir("KVCON_ENGINE_VOLUMES", "volumes");
	char *bridge = setting("KVCON_ENGINE_BRIDGE", "engine.bridge");
	char **roots = host_roots();
	char *cache = image_cache_dir();
	char *dn = dom_name(v);
	char *err = NULL;
	if (reach_for_qemu(eh, v, imgs, vols, x->run_dir, &err) < 0) {
		v->start_error = xstrdup(err);
		end_exec(v, true, "FailedCreate", err);
		free(err);
		free(cache);
		values_free(roots);
		free(imgs);
		free(vols);
		free(bridge);
		free(dn);
		return;
	}
	struct domxml_env env = {
		.image_dir = imgs, .image_cache = cache, .volume_dir = vols, .run_dir = x->run_dir, .bridge = bridge,
		.host_roots = (const char *const *)roots,
		.domain_type = eh->accel ? eh->accel : "qemu", .dom_name = dn, .vm_uid = v->uid, .vmi_uid = x->uid,
		.launcher_uid = x->launcher, .generation = v->generation,
	};
	int *hports = NULL;
	struct domxml_plan *plan = pod_net(v, &env, &hports, &err) < 0 ? NULL : domxml_build(v->m, &env, &err);
	free(hports);
	free(imgs);
	free(vols);
	free(bridge);
	free(cache);
	values_free(roots);
	if (plan == NULL) {
		v->start_error = xstrdup(err);
		end_exec(v, true, "FailedCreate", err);
		free(err);
		free(dn);
		return;
	}
	free(x->serial_log);
	x->serial_log = xstrdup(plan->serial_log);
	set_phase(x, "Scheduled"); /* the host is chosen: it is this one */
	publish(v);
	persist(v); /* queued before the start: the record names the execution before QEMU exists */
	struct host_req *r = xcalloc(1, sizeof *r);
	r->type = RQ_START;
	r->dom = dn;
	r->plan = plan;
	int id = host_request(eh->h, r);
	track(eh, id, PK_START, v);
	v->ring_len = 0;
}

/* ---- containerDisk pulls ----
 * A start whose containerDisks are neither in the image directory nor (per imagePullPolicy) in the image cache
 * pulls them first, on a thread of its own (oci_pull blocks), tracked as the execution's start request so
 * that stop, delete and the reconciler wait for it. The execution stays Pending meanwhile; its launcher shows
 * the progress. A failed pull ends the execution with kubelet's reason (ErrImagePull; ImagePullBackOff while
 * the crash-loop back-off delays the next try; ErrImageNeverPull) and a message naming the registry. */

#define PULL_TICK_MS 500

struct pulljob {
	struct ehost *eh;
	char *key;
	char exec_uid[UID_LEN];
	int preq_id;
	int n;
	char **vols, **refs, **ids; /* per image: the volume, the reference as written, the imageID pulled */
	struct oci_regconf *conf;
	char *root;
	struct oci_progress prog;
	volatile int cur;           /* the image being pulled (written by the thread) */
	char *err;
	uint64_t fetched;
	uint64_t t0;
	struct loop_timer *tick;
	struct pulljob *next;
};

static struct pulljob *pulls;
static int pull_ids = -1; /* start-request ids of pulls: negative, never a worker's */

static bool pull_reason(const char *how)
{
	return how && (strcmp(how, "ErrImagePull") == 0 || strcmp(how, "ErrImageNeverPull") == 0);
}

/* The image as a file of the image directory (not of the cache): a local file wins over any registry. */
static bool local_image(const char *imgs, const char *ref)
{
	char **c = manifest_image_candidates(imgs, ref);
	const char *root = imgcache_root();
	bool found = false;
	for (size_t i = 0; c[i]; i++) {
		struct stat st;
		if (!found && !(root && util_has_prefix(c[i], root)) && stat(c[i], &st) == 0 && S_ISREG(st.st_mode))
			found = true;
		free(c[i]);
	}
	free(c);
	return found;
}

static void pulljob_free(struct pulljob *j)
{
	for (int i = 0; i < j->n; i++) {
		free(j->vols[i]);
		free(j->refs[i]);
		free(j->ids[i]);
	}
	free(j->vols);
	free(j->refs);
	free(j->ids);
	oci_regconf_free(j->conf);
	free(j->root);
	free(j->err);
	free(j->key);
	free(j);
}

/* "repo@sha256:..." for a reference and the digest it resolved to. */
static char *image_id(const char *ref, const char *digest)
{
	struct oci_ref r;
	char *e = NULL;
	if (oci_ref_parse(ref, &r, &e) < 0) {
		free(e);
		return xstrdup(digest);
	}
	char *s = xasprintf("%s/%s@%s", r.registry, r.repo, digest);
	oci_ref_free(&r);
	return s;
}

static void add_image(struct exec *x, const char *vol, const char *ref, const char *id)
{
	char *line = xasprintf("%s%s %s %s\n", x->images ? x->images : "", vol, ref, id);
	free(x->images);
	x->images = line;
}

/* The launcher's containerDisk containers ("volume<NAME>", as virt-launcher pods have), with the image and,
 * once pulled, its imageID. */
static void pod_image_containers(const struct evm *v, struct pod *p)
{
	const struct exec *x = v->cur;
	for (int i = 0; i < v->m->nvols; i++) {
		const struct mf_volume *vol = &v->m->vols[i];
		if (vol->type != MF_VOL_CONTAINER)
			continue;
		p->containers = xreallocarray(p->containers, (size_t)p->ncontainers + 1, sizeof *p->containers);
		struct container_status *c = &p->containers[p->ncontainers++];
		*c = p->containers[0];
		c->message = xstrdup0(p->containers[0].message);
		char *name = xasprintf("volume%s", vol->name);
		c->name = intern(name);
		free(name);
		c->image = intern(vol->image);
		for (const char *l = x->images; l && *l;) { /* VOLUME IMAGE IMAGEID lines */
			const char *nl = strchr(l, '\n'), *end = nl ? nl : l + strlen(l);
			size_t vl = strlen(vol->name);
			if ((size_t)(end - l) > vl && strncmp(l, vol->name, vl) == 0 && l[vl] == ' ') {
				const char *sp = memrchr(l, ' ', (size_t)(end - l));
				char *id = xstrndup(sp + 1, (size_t)(end - sp - 1));
				c->image_id = intern(id);
				free(id);
			}
			l = nl ? nl + 1 : end;
		}
	}
	if (p->ncontainers > 1 && util_str_eq(p->containers[0].state, "waiting")) {
		free(p->containers[0].message); /* the image containers carry the pull's progress or failure */
		p->containers[0].message = NULL;
		p->containers[0].reason = intern("PodInitializing");
	}
}

static struct evm *pull_vm(const struct pulljob *j)
{
	struct evm *v = hmap_get(&j->eh->vms, j->key);
	return v && v->cur && strcmp(v->cur->uid, j->exec_uid) == 0 ? v : NULL;
}

static void pull_tick(void *arg)
{
	struct pulljob *j = arg;
	j->tick = loop_timer_add(PULL_TICK_MS, pull_tick, j);
	struct evm *v = pull_vm(j);
	if (v == NULL)
		return;
	char *msg = oci_progress_text(j->refs[j->cur], &j->prog);
	if (!util_str_eq(msg, v->cur->pull_msg)) {
		free(v->cur->pull_msg);
		v->cur->pull_msg = msg;
		publish(v);
	} else
		free(msg);
}

static void *pull_thread(void *arg)
{
	struct pulljob *j = arg;
	for (int i = 0; i < j->n && j->err == NULL; i++) {
		struct oci_result res;
		char *e = NULL;
		j->prog.done = j->prog.total = j->prog.unpacked = 0;
		j->cur = i;
		if (oci_pull(j->refs[i], j->conf, j->root, &j->prog, &res, &e) < 0) {
			j->err = e;
			break;
		}
		j->ids[i] = image_id(j->refs[i], res.manifest_digest);
		j->fetched += res.fetched;
		oci_result_free(&res);
	}
	loop_post(pull_done, j);
	return NULL;
}

static void pull_done(void *arg)
{
	struct pulljob *j = arg;
	loop_timer_cancel(j->tick);
	for (struct pulljob **pp = &pulls; *pp; pp = &(*pp)->next)
		if (*pp == j) {
			*pp = j->next;
			break;
		}
	struct preq *p = NULL;
	for (struct preq **pp = &j->eh->reqs; *pp; pp = &(*pp)->next)
		if ((*pp)->id == j->preq_id) {
			p = *pp;
			*pp = p->next;
			break;
		}
	struct evm *v = p ? p->v : NULL;
	if (v)
		v->inflight--;
	free(p);
	if (v && v->cur && strcmp(v->cur->uid, j->exec_uid) == 0 && active(v->cur)) {
		struct exec *x = v->cur;
		free(x->pull_msg);
		x->pull_msg = NULL;
		if (v->stopping || v->deleting) {
			end_exec(v, false, "Stopped", "stopped before its images were pulled");
		} else if (j->err) {
			free(v->start_error);
			v->start_error = xstrdup(j->err);
			end_exec(v, true, "ErrImagePull", j->err);
		} else {
			double s = (double)(util_now_ms() - j->t0) / 1000.0;
			for (int i = 0; i < j->n; i++) {
				add_image(x, j->vols[i], j->refs[i], j->ids[i]);
				add_event(v, "Normal", "Pulled", true, "Successfully pulled image \"%s\" in %.3fs (%s)",
					  j->refs[i], s, j->ids[i]);
			}
			log_info("engine: %s: pulled %llu bytes in %.3f s", v->key, (unsigned long long)j->fetched, s);
			start_build(v);
		}
		check_waiters(v);
		reconcile(v);
	} else if (v) {
		check_waiters(v);
		reconcile(v);
	}
	pulljob_free(j);
}

static void pull_cancel(const struct evm *v)
{
	for (struct pulljob *j = pulls; j; j = j->next)
		if (strcmp(j->key, v->key) == 0)
			j->prog.cancel = 1;
}

/* Decides, per containerDisk, local file / cached / pull; starts the pulls. True when the start now waits for
 * them (or failed: ErrImageNeverPull, a bad registries configuration). */
static bool pulls_begin(struct evm *v)
{
	struct exec *x = v->cur;
	char *imgs = env_dir("KVCON_ENGINE_IMAGES", "images");
	struct pulljob *j = NULL;
	char *fail_reason = NULL, *fail_msg = NULL;
	for (int i = 0; i < v->m->nvols && fail_msg == NULL; i++) {
		const struct mf_volume *vol = &v->m->vols[i];
		if (vol->type != MF_VOL_CONTAINER || local_image(imgs, vol->image))
			continue;
		struct oci_ref r;
		char *e = NULL;
		if (oci_ref_parse(vol->image, &r, &e) < 0) {
			free(e); /* not a registry reference: the plan reports the missing file */
			continue;
		}
		const char *policy = vol->pull_policy ? vol->pull_policy : oci_default_policy(&r);
		oci_ref_free(&r);
		char *digest = NULL, *have = imgcache_lookup(vol->image, &digest);
		if (have && strcmp(policy, "Always") != 0) {
			char *id = image_id(vol->image, digest);
			add_image(x, vol->name, vol->image, id);
			add_event(v, "Normal", "Pulled", true, "Container image \"%s\" already present on machine (%s)",
				  vol->image, id);
			free(id);
		} else if (strcmp(policy, "Never") == 0) {
			fail_reason = "ErrImageNeverPull";
			fail_msg = xasprintf("Container image \"%s\" is not present with pull policy of Never", vol->image);
		} else {
			if (j == NULL) {
				j = xcalloc(1, sizeof *j);
				char *cerr = NULL;
				j->conf = oci_regconf_load(&cerr);
				if (j->conf == NULL) {
					fail_reason = "ErrImagePull";
					fail_msg = xasprintf("registries configuration: %s", cerr);
					free(cerr);
				}
			}
			j->vols = xreallocarray(j->vols, (size_t)j->n + 1, sizeof *j->vols);
			j->refs = xreallocarray(j->refs, (size_t)j->n + 1, sizeof *j->refs);
			j->ids = xreallocarray(j->ids, (size_t)j->n + 1, sizeof *j->ids);
			j->vols[j->n] = xstrdup(vol->name);
			j->refs[j->n] = xstrdup(vol->image);
			j->ids[j->n++] = NULL;
			add_event(v, "Normal", "Pulling", true, "Pulling image \"%s\"", vol->image);
		}
		free(have);
		free(digest);
	}
	free(imgs);
	if (fail_msg) {
		if (j)
			pulljob_free(j);
		free(v->start_error);
		v->start_error = xstrdup(fail_msg);
		end_exec(v, true, fail_reason, fail_msg);
		free(fail_msg);
		return true;
	}
	if (j == NULL)
		return false;
	j->eh = v->eh;
	j->key = xstrdup(v->key);
	snprintf(j->exec_uid, UID_LEN, "%s", x->uid);
	j->root = image_cache_dir();
	j->preq_id = pull_ids--;
	j->t0 = util_now_ms();
	track(v->eh, j->preq_id, PK_START, v);
	x->pull_msg = xasprintf("pulling image \"%s\"", j->refs[0]);
	j->next = pulls;
	pulls = j;
	j->tick = loop_timer_add(PULL_TICK_MS, pull_tick, j);
	publish(v);
	persist(v);
	pthread_t t;
	pthread_attr_t at;
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&t, &at, pull_thread, j) != 0) {
		j->err = xasprintf("cannot start a pull thread: %s", strerror(errno));
		loop_post(pull_done, j);
	}
	pthread_attr_destroy(&at);
	return true;
}

/* The references every VM of this process's hosts uses, and those of other hosts' records on disk. */
static void sweep_images(void)
{
	char **refs = NULL;
	int n = 0;
	for (int h = 0; h < E.nhosts; h++) {
		const char *key;
		void *val;
		for (size_t it = 0; hmap_next(&E.hosts[h]->vms, &it, &key, &val);) {
			const struct evm *v = val;
			for (int i = 0; v->m && i < v->m->nvols; i++)
				if (v->m->vols[i].type == MF_VOL_CONTAINER && !v->deleting) {
					refs = xreallocarray(refs, (size_t)n + 1, sizeof *refs);
					refs[n++] = xstrdup(v->m->vols[i].image);
				}
		}
	}
	/* records of hosts this process has not opened keep their images too */
	char *dd = data_dir(), *hd = util_path_join(dd, "hosts");
	DIR *d = opendir(hd);
	struct dirent *de;
	while (d && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		char *vd = xasprintf("%s/%s/vms", hd, de->d_name);
		bool mine = false;
		for (int h = 0; h < E.nhosts; h++)
			mine |= util_str_eq(E.hosts[h]->records_dir, vd);
		DIR *rd = mine ? NULL : opendir(vd);
		struct dirent *re;
		while (rd && (re = readdir(rd))) {
			size_t l = strlen(re->d_name);
			if (re->d_name[0] == '.' || l < 6 || strcmp(re->d_name + l - 5, ".json") != 0)
				continue;
			char *path = util_path_join(vd, re->d_name), *text = util_read_file(path, NULL), *err = NULL;
			struct evm *tmp = xcalloc(1, sizeof *tmp);
			if (text && record_load(tmp, text, &err) == 0)
				for (int i = 0; tmp->m && i < tmp->m->nvols; i++)
					if (tmp->m->vols[i].type == MF_VOL_CONTAINER) {
						refs = xreallocarray(refs, (size_t)n + 1, sizeof *refs);
						refs[n++] = xstrdup(tmp->m->vols[i].image);
					}
			evm_free(tmp);
			free(err);
			free(text);
			free(path);
		}
		if (rd)
			closedir(rd);
		free(vd);
	}
	if (d)
		closedir(d);
	free(hd);
	free(dd);
	int removed = 0;
	if (imgcache_sweep((const char *const *)refs, n, &removed) == 0 && removed)
		log_info("engine: image cache: %d unused files removed", removed);
	for (int i = 0; i < n; i++)
		free(refs[i]);
	free(refs);
}

char *engine_image_cache(void)
{
	char *root = image_cache_dir();
	if (imgcache_root() == NULL)
		imgcache_set_root(root);
	return root;
}

static void grace_expired(void *arg)
{
	struct evm *v = arg;
	v->grace_timer = NULL;
	if (!active(v->cur))
		return;
	add_event(v, "Normal", "Killing", true, "the guest did not stop within its grace period: powering off");
	send_simple(v, RQ_DESTROY, PK_DESTROY);
}

/* The intent of a stop with its grace period (a stop, a restart's stop, a delete's stop): stored by the caller
 * before issue_stop sends it. A second stop only shortens a pending one to a power-off. */
static void stop_intent(struct evm *v, int grace)
{
	if (!active(v->cur))
		return;
	bool was = v->stopping;
	v->stopping = true;
	v->cur->stop_by_us = true;
	if (was && grace > 0)
		return;
	v->stop_deadline = wall_ms() + (grace > 0 ? (int64_t)grace * 1000 : 0);
	v->stop_unsent = true;
}

/* Sends the stored stop: ACPI with a timer to its deadline (what is left of the grace period when the record
 * was loaded by a later process), or a power-off when the deadline has passed. */
static void issue_stop(struct evm *v)
{
	if (!v->stop_unsent || !active(v->cur))
		return;
	v->stop_unsent = false;
	bool starting = false;
	for (struct preq *p = v->eh->reqs; p; p = p->next)
		starting |= p->v == v && p->kind == PK_START;
	if (starting) {
		pull_cancel(v);
		publish(v);
		return; /* the start's completion sees stopping and powers off */
	}
	int64_t left = v->stop_deadline - wall_ms();
	loop_timer_cancel(v->grace_timer);
	v->grace_timer = NULL;
	if (left <= 0)
		send_simple(v, RQ_DESTROY, PK_DESTROY);
	else {
		send_simple(v, RQ_SHUTDOWN, PK_STOP);
		v->grace_timer = loop_timer_add((uint64_t)left, grace_expired, v);
	}
	publish(v);
}

static void begin_stop(struct evm *v, int grace)
{
	if (!active(v->cur))
		return;
	stop_intent(v, grace);
	persist(v);
	issue_stop(v);
	publish(v);
}

/* ---- the reconciler ---- */

static bool want_running(const struct evm *v)
{
	if (v->deleting)
		return false;
	const struct exec *x = v->cur;
	if (strategy_is(v, "Always"))
		return true;
	if (strategy_is(v, "Halted"))
		return false;
	if (strategy_is(v, "Once"))
		return active(x) || (x == NULL && v->npast == 0);
	if (strategy_is(v, "RerunOnFailure")) {
		if (v->req_stop)
			return false;
		if (x == NULL || active(x) || v->req_start)
			return true;
		return x->phase == intern("Failed");
	}
	/* Manual */
	if (v->req_stop)
		return false;
	return active(x) || v->req_start;
}

static void retry_fire(void *arg)
{
	struct evm *v = arg;
	v->retry_timer = NULL;
	reconcile(v);
}

static void finish_delete(struct evm *v);

static void reconcile(struct evm *v)
{
	struct ehost *eh = v->eh;
	if (!eh->up || !eh->synced || migrate_busy(v))
		return;
	bool starting = false;
	for (struct preq *p = eh->reqs; p; p = p->next)
		starting |= p->v == v && p->kind == PK_START;
	if (starting)
		return;
	if (v->stop_unsent && active(v->cur)) {
		issue_stop(v); /* a stop stored by an earlier process, with what is left of its grace period */
		return;
	}
	if (v->pause_req && !v->deleting && !v->stopping) {
		bool sent = false;
		for (struct preq *p = eh->reqs; p; p = p->next)
			sent |= p->v == v && p->kind == PK_PAUSE;
		bool running = active(v->cur) && v->cur->phase == intern("Running");
		if (!sent && running && v->pause_req == EVM_PAUSE && !v->cur->paused)
			send_simple(v, RQ_SUSPEND, PK_PAUSE);
		else if (!sent && running && v->pause_req == EVM_UNPAUSE && v->cur->paused)
			send_simple(v, RQ_RESUME, PK_PAUSE);
		else if (!sent) {
			v->pause_req = 0; /* done, or nothing left to pause */
			persist(v);
		}
	}
	if (v->deleting) {
		if (active(v->cur))
			begin_stop(v, v->m->grace);
		else
			finish_delete(v);
		return;
	}
	bool want = want_running(v), is = active(v->cur);
	if (!want && !is && v->cur && (strategy_is(v, "Halted") || v->req_stop)) {
		/* a finished execution of a VM not to run again: KubeVirt deletes its VMI (a stop after a crash loop
		 * must not wait on a Failed VMI forever); Manual and Once keep a final VMI until the next start */
		archive(v);
		v->failures = 0; /* and clears its startFailure: a stopped VM is not backing off */
		v->retry_after = 0;
		publish(v);
		persist(v);
		check_waiters(v);
		return;
	}
	if (want && !is) {
		int64_t now = util_wall_s();
		if (v->retry_after > now) {
			if (v->retry_timer == NULL && v->cur && util_str_eq(v->cur->how, "ErrImagePull"))
				add_event(v, "Normal", "BackOff", true, "Back-off pulling image: next try in %llds",
					  (long long)(v->retry_after - now));
			if (v->retry_timer == NULL)
				v->retry_timer = loop_timer_add((uint64_t)(v->retry_after - now) * 1000 + 100, retry_fire, v);
			publish(v);
			return;
		}
		const char *why = NULL;
		char buf[160];
		if (v->restart) {
			why = "restarted by request";
			v->restart = false;
		} else if (v->cur && !v->cur->stop_by_us) {
			snprintf(buf, sizeof buf, "restarted by run strategy %s after %s", v->run_strategy,
				 v->cur->message ? v->cur->message : v->cur->phase);
			why = buf;
		}
		start_exec(v, why);
	} else if (!want && is && !v->stopping)
		begin_stop(v, v->m->grace);
}

static void reconcile_host(struct ehost *eh)
{
	struct evm **list = xcalloc(eh->vms.count + 1, sizeof *list);
	size_t n = 0;
	const char *key;
	void *val;
	for (size_t it = 0; hmap_next(&eh->vms, &it, &key, &val);)
		list[n++] = val;
	for (size_t i = 0; i < n; i++)
		reconcile(list[i]);
	free(list);
}

/* ---- waiters (actions complete when the state they asked for is reached) ---- */

struct done_call {
	action_done_cb done;
	void *arg;
	int status;
	char *msg;
};

static void done_fire(void *arg)
{
	struct done_call *d = arg;
	d->done(d->arg, d->status, d->msg);
	free(d->msg);
	free(d);
}

static void complete(struct waiter *w, int status, const char *msg)
{
	struct done_call *d = xcalloc(1, sizeof *d);
	d->done = w->done;
	d->arg = w->arg;
	d->status = status;
	d->msg = xstrdup0(msg);
	loop_post(done_fire, d);
}

static void check_waiters(struct evm *v)
{
	for (struct waiter **pp = &v->waiters; *pp;) {
		struct waiter *w = *pp;
		int st = 1; /* 1: still waiting */
		const char *msg = NULL;
		char *pm = NULL;
		const struct exec *x = v->cur;
		switch (w->act) {
		case ACT_START:
		case ACT_RESTART:
			if (x && x->phase == intern("Running") && strcmp(x->uid, w->old_uid) != 0)
				st = 0;
			else if (x && strcmp(x->uid, w->old_uid) != 0 && !active(x) && x->how &&
				 (strcmp(x->how, "FailedCreate") == 0 || pull_reason(x->how))) {
				st = -1;
				msg = x->message;
				if (pull_reason(x->how)) /* kubelet's reason first, as kubectl describe shows it */
					msg = pm = xasprintf("%s: %s", x->how, x->message ? x->message : "");
			}
			break;
		case ACT_STOP:
		case ACT_FORCE_STOP:
			if (!active(x))
				st = 0;
			break;
		case ACT_PAUSE:
			if (!active(x))
				st = -1, msg = "the VM stopped";
			else if (x->paused)
				st = 0;
			break;
		case ACT_UNPAUSE:
			if (!active(x))
				st = -1, msg = "the VM stopped";
			else if (!x->paused)
				st = 0;
			break;
		case ACT_SOFT_REBOOT:
			st = 0; /* accepted once asked, as KubeVirt's subresource answers */
			break;
		default:
			break;
		}
		if (st == 1) {
			pp = &w->next;
			continue;
		}
		complete(w, st, msg);
		free(pm);
		*pp = w->next;
		free(w);
	}
}

static void add_waiter(struct evm *v, enum action act, action_done_cb done, void *arg)
{
	struct waiter *w = xcalloc(1, sizeof *w);
	w->act = act;
	w->done = done;
	w->arg = arg;
	if (v->cur && (act == ACT_START || act == ACT_RESTART))
		snprintf(w->old_uid, UID_LEN, "%s", v->cur->uid);
	w->next = v->waiters;
	v->waiters = w;
}

static void finish_delete(struct evm *v)
{
	if (v->deleting == false || v->inflight > 0)
		return;
	struct ehost *eh = v->eh;
	if (!v->undefining) {
		/* the domain goes first; the record (which says "deleting") when that is done, so a kill between
		 * the two finds the delete still to finish */
		v->undefining = true;
		send_simple(v, RQ_UNDEFINE, PK_UNDEFINE);
		return;
	}
	struct host_req *r;
	char *rp = record_path(v);
	unlink_record(rp);
	free(rp);
	if (v->delete_volumes) {
		char *vols = env_dir("KVCON_ENGINE_VOLUMES", "volumes");
		for (int i = 0; i < v->m->nvols; i++)
			if (v->m->vols[i].type == MF_VOL_PVC)
				for (int k = 0; k < 2; k++) {
					r = xcalloc(1, sizeof *r);
					r->type = RQ_UNLINK;
					r->path = xasprintf("%s/%s/%s.%s", vols, v->m->ns, v->m->vols[i].claim,
							    k ? "qcow2" : "img");
					track(eh, host_request(eh->h, r), PK_WRITE, NULL);
				}
		free(vols);
	}
	remove_execution_objs(v, v->cur);
	for (int i = 0; i < v->nevents; i++)
		store_remove(E.st, eh->src, OBJ_EVENT, v->events[i].uid);
	store_remove(E.st, eh->src, OBJ_VM, v->uid);
	hmap_del(&eh->vms, v->key);
	log_info("engine: %s deleted%s", v->key, v->delete_volumes ? " with its volumes" : "");
	sweep_images(); /* its pulled images go when no other VM uses them */
	for (struct waiter *w = v->waiters, *n; w; w = n) {
		n = w->next;
		complete(w, 0, NULL);
		free(w);
	}
	v->waiters = NULL;
	for (struct engine_console *c = v->consoles; c; c = c->next) {
		c->v = NULL;
		c->cb(c->arg, NULL, 0);
	}
	v->consoles = NULL;
	loop_timer_cancel(v->retry_timer);
	loop_timer_cancel(v->grace_timer);
	evm_free(v);
}

/* Drops a VM from this process without touching its record (another process moved it away). */
static void forget(struct evm *v)
{
	struct ehost *eh = v->eh;
	log_info("engine: %s migrated away from %s by another kvcon process", v->key, eh->src->name);
	remove_execution_objs(v, v->cur);
	for (int i = 0; i < v->nevents; i++)
		store_remove(E.st, eh->src, OBJ_EVENT, v->events[i].uid);
	store_remove(E.st, eh->src, OBJ_VM, v->uid);
	hmap_del(&eh->vms, v->key);
	for (struct preq *p = eh->reqs; p; p = p->next)
		if (p->v == v) {
			p->v = NULL;
			p->kind = PK_OTHER;
		}
	for (struct waiter *w = v->waiters, *n; w; w = n) {
		n = w->next;
		complete(w, -1, "the VM migrated to another host");
		free(w);
	}
	v->waiters = NULL;
	for (struct engine_console *c = v->consoles; c; c = c->next) {
		c->v = NULL;
		c->cb(c->arg, NULL, 0);
	}
	v->consoles = NULL;
	loop_timer_cancel(v->retry_timer);
	loop_timer_cancel(v->grace_timer);
	evm_free(v);
}

/* ---- messages from the host workers ---- */

/* The row of an unreadable record NS_NAME.json (names cannot hold '_'): status RecordUnreadable, and what is
 * known of its domain. */
static void publish_bad(struct ehost *eh, const char *file, const char *why, const char *uid,
			const struct host_dom *d)
{
	size_t n = strlen(file);
	const char *us = strchr(file, '_');
	if (us == NULL || n < 6)
		return;
	struct vm *vm = (struct vm *)obj_new(OBJ_VM);
	vm->o.src = eh->src;
	char *ns = xstrndup(file, (size_t)(us - file));
	vm->o.ns = intern(ns);
	free(ns);
	vm->o.name = xstrndup(us + 1, n - 5 - (size_t)(us + 1 - file));
	snprintf(vm->o.uid, UID_LEN, "%s", uid);
	char *path = util_path_join(eh->records_dir, file);
	struct stat sb;
	if (stat(path, &sb) == 0)
		vm->o.created = sb.st_mtime; /* when the file was last written */
	free(path);
	vm->run_strategy = intern("Unknown");
	vm->printable_status = intern("RecordUnreadable");
	/* the file and what is wrong with it: what a client (kvcon get, kubectl) shows of the row */
	char *msg = xasprintf("the engine's record of this VM is unreadable (%s)%s", why,
			      d && d->pid > 0 ? "; its QEMU keeps running, unmanaged" : "");
	add_cond(&vm->conds, &vm->nconds, "Failure", true, "RecordUnreadable", msg, util_wall_s());
	free(msg);
	store_upsert(E.st, &vm->o);
}

/* Forgets unreadable record i when its file is gone (moved away, removed: the service runs on, so it learns
 * this at the next sync of the host or apply of that name): its row goes, the host's notice with the last one. True when forgotten. */
static bool forget_bad(struct ehost *eh, int i)
{
	size_t pl = strcspn(eh->bad[i], ":");
	char *path = xstrndup(eh->bad[i], pl);
	struct stat sb;
	bool gone = lstat(path, &sb) != 0 && errno == ENOENT;
	free(path);
	if (!gone)
		return false;
	store_remove(E.st, eh->src, OBJ_VM, eh->bad_uid[i]);
	free(eh->bad[i]);
	free(eh->bad_uid[i]);
	memmove(&eh->bad[i], &eh->bad[i + 1], (size_t)(eh->nbad - i - 1) * sizeof *eh->bad);
	memmove(&eh->bad_uid[i], &eh->bad_uid[i + 1], (size_t)(eh->nbad - i - 1) * sizeof *eh->bad_uid);
	eh->nbad--;
	if (eh->nbad == 0)
		source_set_notice(eh->src, NULL);
	return true;
}

/* The host's unreadable records against the domains it runs: each is logged with its QEMU (left running,
 * unmanaged) and becomes the host's notice. */
static void check_bad(struct ehost *eh, const struct host_msg *m)
{
	for (int i = 0; i < eh->nbad; i++)
		if (forget_bad(eh, i))
			i--;
	if (eh->nbad == 0)
		return;
	struct buf b;
	buf_init(&b);
	buf_printf(&b, "%d unreadable VM record%s (not managed until fixed or removed): ", eh->nbad,
		   eh->nbad == 1 ? "" : "s");
	for (int i = 0; i < eh->nbad; i++) {
		const char *file = strrchr(eh->bad[i], '/') ? strrchr(eh->bad[i], '/') + 1 : eh->bad[i];
		size_t fl = strcspn(file, ":");
		const struct host_dom *d = NULL;
		for (int k = 0; k < m->ndoms; k++)
			if (fl > 5 && strlen(m->doms[k].name) == fl - 5 && strncmp(m->doms[k].name, file, fl - 5) == 0)
				d = &m->doms[k];
		char *fn = xstrndup(file, fl);
		publish_bad(eh, fn, eh->bad[i], eh->bad_uid[i], d);
		free(fn);
		bool up = d && d->state != VIR_DOMAIN_SHUTOFF && d->state != VIR_DOMAIN_CRASHED;
		buf_printf(&b, "%s%s", i ? "; " : "", eh->bad[i]);
		if (up)
			buf_printf(&b, " (its domain %s runs, QEMU pid %d, left running)", d->name, d->pid);
	}
	char *text = buf_steal(&b);
	if (!util_str_eq(eh->src->notice, text)) {
		log_warn("engine: %s: %s", eh->src->name, text);
		source_set_notice(eh->src, text);
	}
	free(text);
}

static void load_record_file(struct ehost *eh, const char *dir, const char *fname);

/* A loaded record with an offline move's intent (evm_move_offline): the process that stored it was killed before
 * the move was done. Finished here: the target's record is written unless it already is, then the source's removed
 * and its domain undefined. true: v no longer belongs to eh (freed by the caller); false: keep it here (the intent
 * is not kvcon's, or the target's record could not be written: tried again at the next load). */
static bool finish_offline_move(struct ehost *eh, struct evm *v, const char *path, const char *fname)
{
	char *dd = data_dir(), *hosts = xasprintf("%s/hosts/", dd);
	const char *md = v->moving_dir;
	size_t ml = md ? strlen(md) : 0;
	bool ours = md && strncmp(md, hosts, strlen(hosts)) == 0 && !strstr(md, "/..") && ml > 4 &&
		    strcmp(md + ml - 4, "/vms") == 0 && strcmp(md, eh->records_dir) != 0;
	free(hosts);
	free(dd);
	if (!ours) {
		log_warn("engine: %s: an offline move's intent names no host directory of this engine; ignored", path);
		free(v->moving_to);
		free(v->moving_dir);
		v->moving_to = v->moving_dir = NULL;
		return false;
	}
	char *tpath = util_path_join(md, fname), *to = xstrdup(v->moving_to ? v->moving_to : "?");
	char *dir = xstrdup(md);
	bool done = access(tpath, F_OK) == 0;
	if (!done) {
		free(v->moving_to);
		free(v->moving_dir);
		v->moving_to = v->moving_dir = NULL;
		char *json = record_dump(v);
		util_mkdir_p(dir, 0700);
		done = util_write_file_atomic(tpath, json, strlen(json), 0600) == 0;
		if (!done) {
			log_error("engine: %s: cannot finish the offline move to %s: %s: %s", v->key, to, tpath, strerror(errno));
			v->moving_to = xstrdup(to);
			v->moving_dir = xstrdup(dir);
		}
		free(json);
	}
	if (done) {
		unlink_record(path);
		char *dn = dom_name(v);
		if (eh->h)
			host_simple(eh->h, RQ_UNDEFINE, dn); /* the definition is rebuilt at the next start on the target */
		free(dn);
		log_warn("engine: %s: an interrupted offline migration to %s was finished (its record moved)", v->key, to);
		/* the target, when it has read its records already, reads this one too */
		int n;
		struct ehost **all = ehost_all(&n);
		for (int i = 0; i < n; i++)
			if (all[i] != eh && all[i]->loaded && all[i]->records_dir && strcmp(all[i]->records_dir, dir) == 0)
				load_record_file(all[i], dir, fname);
	}
	free(dir);
	free(to);
	free(tpath);
	return done;
}

static void load_record_file(struct ehost *eh, const char *dir, const char *fname)
{
	char *path = util_path_join(dir, fname), *err = NULL;
	char *text = trust_read_file(path, NULL, &err); /* a record decides what root runs: kvcon's own only */
	struct evm *v = xcalloc(1, sizeof *v);
	v->eh = eh;
	if (text == NULL || record_load(v, text, &err) < 0) {
		/* kept as it is (never overwritten), shown by get and the host's notice; its domain, if any, is
		 * left alone (on_sync says so) */
		log_error("engine: %s: unreadable record: %s", path, err ? err : strerror(errno));
		eh->bad = xreallocarray(eh->bad, (size_t)eh->nbad + 1, sizeof *eh->bad);
		eh->bad_uid = xreallocarray(eh->bad_uid, (size_t)eh->nbad + 1, sizeof *eh->bad_uid);
		eh->bad[eh->nbad] = xasprintf("%s: %s", path, err ? err : strerror(errno));
		eh->bad_uid[eh->nbad] = xcalloc(1, UID_LEN);
		util_uuid_v4(eh->bad_uid[eh->nbad]);
		publish_bad(eh, fname, eh->bad[eh->nbad], eh->bad_uid[eh->nbad], NULL);
		eh->nbad++;
		evm_free(v);
	} else {
		v->key = xasprintf("%s/%s", v->m->ns, v->m->name);
		if (hmap_get(&eh->vms, v->key)) {
			/* held already (an offline move finished by another host's load, its target's record read
			 * before): the VM in memory is the newer, and consoles or requests may hold it */
			evm_free(v);
		} else if ((v->moving_to || v->moving_dir) && finish_offline_move(eh, v, path, fname)) {
			evm_free(v);
		} else {
			if (!active(v->cur)) { /* the stop was done, its record not written after it */
				v->stopping = false;
				v->stop_deadline = 0;
			}
			v->stop_unsent = v->stopping; /* an accepted stop: sent again with what is left of its grace */
			hmap_put(&eh->vms, v->key, v);
			publish(v);
			for (int i = 0; i < v->nevents; i++)
				event_obj(v, &v->events[i]);
		}
	}
	free(err);
	free(text);
	free(path);
}

static void load_records(struct ehost *eh)
{
	DIR *d = opendir(eh->records_dir);
	if (d == NULL)
		return;
	struct dirent *de;
	while ((de = readdir(d))) {
		size_t n = strlen(de->d_name);
		if (n < 6 || strcmp(de->d_name + n - 5, ".json") != 0 || de->d_name[0] == '.')
			continue;
		load_record_file(eh, eh->records_dir, de->d_name);
	}
	closedir(d);
}

/* The directory name of a host's records, from its identity: the host name a daemon reports (qemu:///system,
 * remote hosts), with "~session" for a session daemon, and for an embedded root this machine's name with
 * "~embed-" and a hash of the root's real path: two roots on one machine never share records. */
static char *host_key(const char *uri, const char *name)
{
	char *root = host_embed_root(uri);
	char *key;
	if (root) {
		char *real = realpath(root, NULL);
		uint64_t h = 1469598103934665603ull; /* FNV-1a */
		for (const unsigned char *p = (const unsigned char *)(real ? real : root); *p; p++)
			h = (h ^ *p) * 1099511628211ull;
		key = xasprintf("%s~embed-%016llx", name, (unsigned long long)h);
		free(real);
		free(root);
	} else if (strstr(uri, "/session"))
		key = xasprintf("%s~session", name);
	else
		key = xstrdup(name);
	/* a host name is a DNS name, but it comes from the host: nothing that leaves the directory */
	for (char *c = key; *c; c++)
		if (*c == '/' || (c == key && *c == '.'))
			*c = '_';
	return key;
}

/* Records kept by earlier versions under hosts/NAME/vms (keyed by host name only, shared by every embedded root
 * and session of this machine) move to this host's own directory: an embedded root or session takes those
 * whose domain it defines; the default host (engine_default_uri) takes the rest. Moved with rename (same file
 * system), both directories fsync'd. */
static void adopt_old_records(struct ehost *eh, const char *dd, const char *name, const char *key)
{
	if (strcmp(name, key) == 0 || strchr(name, '/') || name[0] == '.')
		return;
	char *old = xasprintf("%s/hosts/%s/vms", dd, name);
	DIR *d = opendir(old);
	if (d == NULL) {
		free(old);
		return;
	}
	char *def = engine_default_uri();
	bool is_default = strcmp(def, eh->uri) == 0;
	free(def);
	char *root = host_embed_root(eh->uri);
	int moved = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		size_t n = strlen(de->d_name);
		if (n < 6 || strcmp(de->d_name + n - 5, ".json") != 0 || de->d_name[0] == '.')
			continue;
		bool mine = is_default;
		if (!mine && root) {
			/* the embedded driver keeps a defined domain's XML in ROOT/etc/qemu/DOMAIN.xml */
			char *x = xasprintf("%s/etc/qemu/%.*s.xml", root, (int)(n - 5), de->d_name);
			mine = access(x, F_OK) == 0;
			free(x);
		}
		if (!mine)
			continue;
		char *from = util_path_join(old, de->d_name), *to = util_path_join(eh->records_dir, de->d_name);
		if (access(to, F_OK) != 0 && rename(from, to) == 0)
			moved++;
		free(from);
		free(to);
	}
	closedir(d);
	if (moved) {
		const char *dirs[] = { eh->records_dir, old };
		for (int i = 0; i < 2; i++) {
			int fd = open(dirs[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			if (fd >= 0) {
				fsync(fd);
				close(fd);
			}
		}
		log_info("engine: %d VM record%s moved from %s to %s (records are kept per host identity)", moved,
			 moved == 1 ? "" : "s", old, eh->records_dir);
		rmdir(old); /* when empty */
	}
	free(root);
	free(old);
}

static void set_health(struct ehost *eh, enum watch_state st, const char *msg)
{
	for (int k = 0; k < OBJ_KIND_COUNT; k++)
		source_set_health(eh->src, (enum obj_kind)k, st, msg);
}

static char *owner_label;

void engine_set_owner(const char *label)
{
	free(owner_label);
	owner_label = label ? xstrdup(label) : NULL;
}

/* Takes the host's service.lock (an flock held for the process's life, released by the kernel when it dies)
 * and writes who holds it: NULL, or why not (caller frees): another engine process holds the host. */
static char *own_host(struct ehost *eh, const char *dd, const char *hk)
{
	if (eh->owner_fd >= 0)
		return NULL;
	char *dir = xasprintf("%s/hosts/%s", dd, hk), *path = xasprintf("%s/service.lock", dir);
	util_mkdir_p(dir, 0700);
	char *why = NULL;
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0) {
		why = xasprintf("%s: %s", path, strerror(errno));
	} else if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		char held[512] = "";
		ssize_t n = pread(fd, held, sizeof held - 1, 0);
		held[n > 0 ? n : 0] = '\0';
		held[strcspn(held, "\n")] = '\0';
		why = xasprintf("its VMs are managed by another kvcon engine process (%s); one engine service per host: "
				"use that service's hosts (the same -c set), or stop it",
				held[0] ? held : "see its lock file");
		close(fd);
		fd = -1;
	} else {
		char who[512];
		int len = snprintf(who, sizeof who, "pid %ld, %s\n", (long)getpid(),
				   owner_label ? owner_label : "no socket");
		if (ftruncate(fd, 0) == 0 && pwrite(fd, who, (size_t)len, 0) != len)
			log_warn("engine: %s: cannot write who holds it", path);
	}
	free(path);
	free(dir);
	if (fd >= 0)
		eh->owner_fd = fd;
	return why;
}

static void on_up(struct ehost *eh, struct host_msg *m)
{
	eh->up = true;
	free(eh->error);
	eh->error = NULL;
	free(eh->accel);
	eh->accel = xstrdup(m->accel);
	if (!eh->loaded) {
		/* the embedded driver is this machine; a daemon reports its own name */
		char hn[256] = "";
		const char *name = m->hostname;
		char *embed = host_embed_root(eh->uri);
		if (embed && gethostname(hn, sizeof hn - 1) == 0 && hn[0])
			name = hn;
		free(embed);
		if (source_find(name) && source_find(name) != eh->src) {
			char *alt = xasprintf("%s~%d", name, eh->src->id);
			free(eh->src->name);
			eh->src->name = alt;
		} else {
			free(eh->src->name);
			eh->src->name = xstrdup(name);
		}
		char *dd = data_dir();
		char *hk = host_key(eh->uri, name);
		char *why = own_host(eh, dd, hk);
		if (why) {
			/* another engine process reconciles this host's records: two would start its VMs twice */
			eh->up = false;
			free(eh->error);
			eh->error = xasprintf("%s: %s", eh->uri, why);
			log_error("engine: %s", eh->error);
			set_health(eh, WATCH_ERROR, eh->error);
			free(why);
			free(hk);
			free(dd);
			return;
		}
		eh->records_dir = xasprintf("%s/hosts/%s/vms", dd, hk);
		util_mkdir_p(eh->records_dir, 0700);
		adopt_old_records(eh, dd, name, hk);
		free(hk);
		free(dd);
		load_records(eh);
		eh->loaded = true;
	}
	free(eh->src->version);
	eh->src->version = xstrdup(m->version);
	source_set_notice(eh->src, m->note);
	if (m->note)
		log_warn("engine: %s: %s", eh->src->name, m->note);
	set_health(eh, WATCH_LOADING, NULL);
}

static void seen_free(struct ehost *eh)
{
	for (int i = 0; i < eh->nseen; i++) {
		free(eh->seen[i].name);
		free(eh->seen[i].cmdline);
		free(eh->seen[i].log_path);
	}
	free(eh->seen);
	eh->seen = NULL;
	eh->nseen = 0;
}

static void seen_keep(struct ehost *eh, const struct host_msg *m)
{
	seen_free(eh);
	eh->seen = m->ndoms ? xcalloc((size_t)m->ndoms, sizeof *eh->seen) : NULL;
	for (int i = 0; i < m->ndoms; i++) {
		eh->seen[i] = m->doms[i];
		eh->seen[i].name = xstrdup0(m->doms[i].name);
		eh->seen[i].cmdline = xstrdup0(m->doms[i].cmdline);
		eh->seen[i].log_path = xstrdup0(m->doms[i].log_path);
	}
	eh->nseen = m->ndoms;
}

static bool dom_running(const struct host_dom *d)
{
	return d && d->state != VIR_DOMAIN_SHUTOFF && d->state != VIR_DOMAIN_CRASHED && d->state != VIR_DOMAIN_NOSTATE;
}

static void apply_obs(struct evm *v, const struct host_dom *d);

/* v's execution is gone from its host: when another host of the set runs its domain with the same execution
 * (kvcon's metadata travels with the domain: `virsh migrate` behind kvcon's back), the record follows it there
 * instead of the execution ending. true when it did. */
static bool adopt_elsewhere(struct evm *v)
{
	if (!active(v->cur) || v->cur->uid[0] == '\0')
		return false;
	char *dn = dom_name(v);
	struct ehost *to = NULL;
	const struct host_dom *found = NULL;
	for (int i = 0; i < E.nhosts && !to; i++) {
		struct ehost *o = E.hosts[i];
		if (o == v->eh || !o->synced || !o->up || hmap_get(&o->vms, v->key))
			continue;
		for (int k = 0; k < o->nseen; k++)
			if (strcmp(o->seen[k].name, dn) == 0 && strcmp(o->seen[k].vmi, v->cur->uid) == 0 &&
			    dom_running(&o->seen[k])) {
				to = o;
				found = &o->seen[k];
				break;
			}
	}
	free(dn);
	if (to == NULL)
		return false;
	struct ehost *from = v->eh;
	log_warn("engine: %s: runs on %s now (moved outside kvcon): its record follows it from %s", v->key,
		 to->src->name, from->src->name);
	add_event(v, "Normal", "Migrated", true, "found running on %s (moved outside kvcon, e.g. by virsh migrate): the "
		  "record follows it from %s", to->src->name, from->src->name);
	v->away_until = 0;
	evm_move(v, to);
	apply_obs(v, found);
	return true;
}

static void apply_obs(struct evm *v, const struct host_dom *d)
{
	if (migrate_busy(v))
		return; /* the domain leaves this host: migrate.c decides where the execution is */
	bool starting = false;
	for (struct preq *p = v->eh->reqs; p; p = p->next)
		starting |= p->v == v && p->kind == PK_START;
	if (starting)
		return;
	bool running = d && d->state != VIR_DOMAIN_SHUTOFF && d->state != VIR_DOMAIN_CRASHED &&
		       d->state != VIR_DOMAIN_NOSTATE;
	struct exec *x = v->cur;
	if (running) {
		if (active(x) && (d->vmi[0] == '\0' || strcmp(d->vmi, x->uid) == 0)) {
			if (x->phase != intern("Running") && d->state == VIR_DOMAIN_PAUSED) {
				/* kvcon stopped between "start paused" and "resume": finish that start */
				send_simple(v, RQ_CONSOLE, PK_CONSOLE);
				send_simple(v, RQ_RESUME, PK_PAUSE);
				fill_from_dom(v->eh, x, d);
				x->paused = false;
				set_phase(x, "Running");
				x->started = d->started ? d->started : util_wall_s();
				add_event(v, "Normal", "Started", true, "resumed a start that kvcon left paused");
				publish(v);
				persist(v);
				return;
			}
			bool changed = x->phase != intern("Running") || x->pid != d->pid ||
				       x->paused != (d->state == VIR_DOMAIN_PAUSED);
			fill_from_dom(v->eh, x, d);
			if (x->phase != intern("Running")) {
				set_phase(x, "Running");
				add_event(v, "Normal", "Started", true, "found running (pid %d) after kvcon restarted",
					  x->pid);
			}
			if (changed) {
				publish(v);
				persist(v);
			}
			return;
		}
		if (active(x))
			end_exec(v, true, "Crashed", "replaced by another execution of the domain");
		if (v->cur)
			archive(v);
		/* running without (or beyond) our record: adopt it as the current execution */
		x = exec_new();
		snprintf(x->uid, UID_LEN, "%s", d->vmi[0] ? d->vmi : "");
		if (x->uid[0] == '\0')
			util_uuid_v4(x->uid);
		snprintf(x->launcher, UID_LEN, "%s", d->launcher[0] ? d->launcher : "");
		if (x->launcher[0] == '\0')
			util_uuid_v4(x->launcher);
		x->node = xstrdup(v->eh->src->name);
		x->created = util_wall_s();
		x->generation = v->generation;
		x->tcg = v->eh->accel && strcmp(v->eh->accel, "qemu") == 0;
		set_phase(x, "Running");
		fill_from_dom(v->eh, x, d);
		v->cur = x;
		v->failures = 0; /* it runs: no crash loop to back off from */
		v->retry_after = 0;
		add_event(v, "Normal", "Started", true, "adopted a running domain (started outside kvcon's record)");
		publish(v);
		persist(v);
		return;
	}
	if (active(x) && d == NULL) {
		/* gone from this host: moved to another host of the set behind kvcon's back? */
		if (adopt_elsewhere(v))
			return;
		char *rp = record_path(v);
		bool kept = access(rp, F_OK) == 0;
		free(rp);
		if (!kept) { /* another kvcon process moved it (its record with it): dropped by on_sync */
			v->forget_me = true;
			return;
		}
		bool all_seen = true;
		for (int i = 0; i < E.nhosts; i++)
			all_seen &= E.hosts[i] == v->eh || E.hosts[i]->synced;
		if (!all_seen || v->away_until > util_wall_s())
			return; /* not before every host has said what it runs (or the migration's target has) */
		v->away_until = 0;
	}
	if (active(x))
		ended_by_state(v, d);
}

static void on_sync(struct ehost *eh, struct host_msg *m)
{
	if (m->status < 0) {
		log_warn("engine: %s", m->text);
		return;
	}
	bool first = !eh->synced;
	eh->synced = true;
	seen_keep(eh, m);
	check_bad(eh, m);
	const char *key;
	void *val;
	struct evm **list = xcalloc(eh->vms.count + 1, sizeof *list);
	size_t n = 0;
	for (size_t it = 0; hmap_next(&eh->vms, &it, &key, &val);)
		list[n++] = val;
	for (size_t i = 0; i < n; i++) {
		char *dn = dom_name(list[i]);
		const struct host_dom *d = NULL;
		for (int k = 0; k < m->ndoms; k++)
			if (strcmp(m->doms[k].name, dn) == 0)
				d = &m->doms[k];
		free(dn);
		apply_obs(list[i], d);
		if (list[i]->forget_me)
			forget(list[i]);
		else
			check_waiters(list[i]);
	}
	free(list);
	/* executions gone from other hosts that this one may run now (moved behind kvcon's back) */
	for (int i = 0; i < E.nhosts; i++) {
		if (E.hosts[i] == eh)
			continue;
		struct evm **vs = NULL;
		size_t nv = 0;
		for (size_t it = 0; hmap_next(&E.hosts[i]->vms, &it, &key, &val);) {
			struct evm *ov = val;
			if (ov->away_until || (first && active(ov->cur))) {
				vs = xreallocarray(vs, nv + 1, sizeof *vs);
				vs[nv++] = ov;
			}
		}
		for (size_t k = 0; k < nv; k++)
			if (!migrate_busy(vs[k]) && !hmap_get(&eh->vms, vs[k]->key)) {
				char *dn = dom_name(vs[k]);
				bool there = false;
				for (int d = 0; d < E.hosts[i]->nseen; d++)
					there |= strcmp(E.hosts[i]->seen[d].name, dn) == 0 && dom_running(&E.hosts[i]->seen[d]);
				free(dn);
				if (!there)
					adopt_elsewhere(vs[k]);
			}
		free(vs);
	}
	if (first)
		set_health(eh, WATCH_LIVE, NULL);
	migrate_resume_all(); /* migrations a killed process left: settled before the reconciler acts on them */
	reconcile_host(eh);
}

static void on_lifecycle(struct ehost *eh, struct host_msg *m)
{
	struct evm *v = find_dom(eh, m->dom);
	if (v == NULL || migrate_busy(v))
		return;
	bool starting = false;
	for (struct preq *p = eh->reqs; p; p = p->next)
		starting |= p->v == v && p->kind == PK_START;
	log_debug("engine: %s: lifecycle event %d detail %d", m->dom, m->event, m->detail);
	if (m->event == VIR_DOMAIN_EVENT_STOPPED && m->detail == VIR_DOMAIN_EVENT_STOPPED_MIGRATED && !starting) {
		/* migrated behind kvcon's back (virsh migrate): the execution is not over; the hosts of the set say
		 * where it runs now, and the record follows it there (adopt_elsewhere); ended if none does in 30 s */
		v->away_until = util_wall_s() + 30;
		log_info("engine: %s migrated away from %s outside kvcon: asking the other hosts", v->key, eh->src->name);
		for (int i = 0; i < E.nhosts; i++)
			if (E.hosts[i] != eh && E.hosts[i]->up)
				host_simple(E.hosts[i]->h, RQ_SYNC, NULL);
		return;
	}
	if (m->event == VIR_DOMAIN_EVENT_SUSPENDED && (m->detail == VIR_DOMAIN_EVENT_SUSPENDED_MIGRATED ||
						      m->detail == VIR_DOMAIN_EVENT_SUSPENDED_POSTCOPY))
		return; /* the last pass of a migration (another process's): not a pause of the guest */
	switch (m->event) {
	case VIR_DOMAIN_EVENT_STOPPED:
		if (starting)
			break; /* the start's completion inspects the domain */
		ended_by_event(v, m->detail);
		break;
	case VIR_DOMAIN_EVENT_SUSPENDED:
	case VIR_DOMAIN_EVENT_RESUMED:
		if (!starting && active(v->cur)) {
			v->cur->paused = m->event == VIR_DOMAIN_EVENT_SUSPENDED;
			add_event(v, "Normal", v->cur->paused ? "Paused" : "Unpaused", true, "%s",
				  v->cur->paused ? "the instance is paused" : "the instance runs again");
			publish(v);
			persist(v);
		}
		break;
	case VIR_DOMAIN_EVENT_STARTED:
		if (!starting)
			send_simple(v, RQ_INSPECT, PK_INSPECT);
		break;
	default:
		break;
	}
	check_waiters(v);
	reconcile(v);
}

static void console_deliver(struct evm *v, const char *data, size_t len)
{
	if (len) {
		if (v->ring_len + len > RING_MAX) {
			size_t drop = v->ring_len + len - RING_MAX;
			if (drop > v->ring_len)
				drop = v->ring_len;
			memmove(v->ring, v->ring + drop, v->ring_len - drop);
			v->ring_len -= drop;
		}
		if (v->ring == NULL)
			v->ring = xmalloc(RING_MAX);
		size_t take = len > RING_MAX ? RING_MAX : len;
		memcpy(v->ring + v->ring_len, data + len - take, take);
		v->ring_len += take;
	}
	for (struct engine_console *c = v->consoles; c; c = c->next)
		c->cb(c->arg, data, len);
}

static void on_done(struct ehost *eh, struct host_msg *m)
{
	struct preq *p = NULL;
	for (struct preq **pp = &eh->reqs; *pp; pp = &(*pp)->next)
		if ((*pp)->id == m->req_id) {
			p = *pp;
			*pp = p->next;
			break;
		}
	if (p == NULL)
		return;
	struct evm *v = p->v;
	if (v)
		v->inflight--;
	const struct host_dom *d = m->ndoms ? &m->doms[0] : NULL;
	switch (p->kind) {
	case PK_START:
		if (m->status < 0) {
			free(v->start_error);
			v->start_error = xstrdup(m->text);
			end_exec(v, true, "FailedCreate", m->text);
			break;
		}
		if (!active(v->cur))
			break;
		if (d && (d->state == VIR_DOMAIN_SHUTOFF || d->state == VIR_DOMAIN_CRASHED)) {
			ended_by_state(v, d);
			break;
		}
		if (d)
			fill_from_dom(v->eh, v->cur, d);
		const struct mf_iface *pf = pod_iface(v);
		if (m->nports && pf && pf->nports == m->nports) { /* a port QEMU could not bind moved (hostfwd.h) */
			free(v->cur->net);
			v->cur->net = net_text(pf, m->ports);
		}
		if (v->cur->started == 0)
			v->cur->started = util_wall_s();
		set_phase(v->cur, "Running");
		add_event(v, "Normal", "Started", true, "started (QEMU pid %d%s)", v->cur->pid,
			  v->cur->tcg ? ", TCG emulation" : "");
		publish(v);
		persist(v);
		if (v->stopping) /* a stop arrived while it was starting */
			send_simple(v, RQ_DESTROY, PK_DESTROY);
		break;
	case PK_STOP:
		if (m->status < 0 && active(v->cur)) /* ACPI refused: power off now */
			send_simple(v, RQ_DESTROY, PK_DESTROY);
		break;
	case PK_DESTROY:
		if (m->status < 0 && active(v->cur))
			send_simple(v, RQ_INSPECT, PK_INSPECT); /* maybe already off */
		break;
	case PK_PAUSE:
		if (v->pause_req) {
			v->pause_req = 0;
			persist(v);
		}
		if (active(v->cur) && d) {
			fill_from_dom(v->eh, v->cur, d);
			publish(v);
		}
		if (m->status < 0)
			log_warn("engine: %s", m->text);
		break;
	case PK_INSPECT:
		if (v && !v->deleting)
			apply_obs(v, d && d->name ? d : NULL);
		break;
	case PK_WRITE:
	case PK_UNDEFINE:
	case PK_CONSOLE:
	case PK_OTHER:
		if (m->status < 0)
			log_warn("engine: %s", m->text);
		break;
	case PK_VNC:
		/* the request failed before it opened anything (the domain gone): the opener still hears of it */
		if (m->status < 0 && p->vnc_cb)
			p->vnc_cb(p->arg, -1, m->text ? m->text : "the domain is gone");
		break;
	}
	free(p);
	if (v) {
		check_waiters(v);
		if (v->deleting && v->inflight == 0)
			reconcile(v);
		else if (!v->deleting)
			reconcile(v);
	}
}

static void on_msg(void *arg, struct host_msg *m)
{
	struct ehost *eh = arg;
	switch (m->type) {
	case HM_UP:
		on_up(eh, m);
		break;
	case HM_DOWN:
		eh->up = false;
		eh->synced = false;
		free(eh->error);
		eh->error = xstrdup(m->text);
		log_warn("engine: %s", m->text);
		set_health(eh, WATCH_RECONNECTING, m->text);
		break;
	case HM_SYNC:
		on_sync(eh, m);
		break;
	case HM_LIFECYCLE:
		on_lifecycle(eh, m);
		break;
	case HM_AGENT: {
		struct evm *v = find_dom(eh, m->dom);
		if (v && active(v->cur) && v->cur->agent != (m->event != 0)) {
			v->cur->agent = m->event != 0;
			publish(v);
		}
		break;
	}
	case HM_DONE:
		on_done(eh, m);
		break;
	case HM_CONSOLE: {
		struct evm *v = find_dom(eh, m->dom);
		if (v && !(m->len == 0 && migrate_busy(v))) /* the source's console ends; the target's follows */
			console_deliver(v, m->data, m->len);
		break;
	}
	case HM_VNC:
		for (struct preq **pp = &eh->reqs; *pp; pp = &(*pp)->next)
			if ((*pp)->id == m->req_id) {
				struct preq *p = *pp;
				*pp = p->next;
				p->vnc_cb(p->arg, m->fd, m->text);
				m->fd = -1;
				free(p);
				break;
			}
		break;
	}
}

static void resync_fire(void *arg)
{
	(void)arg;
	E.resync = loop_timer_add(RESYNC_MS, resync_fire, NULL);
	for (int i = 0; i < E.nhosts; i++)
		if (E.hosts[i]->up)
			host_simple(E.hosts[i]->h, RQ_SYNC, NULL); /* answered by HM_SYNC, not HM_DONE: not tracked */
}

/* ---- provider ops ---- */

static int act_refuse(char **err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int act_refuse(char **err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	*err = xvasprintf(fmt, ap);
	va_end(ap);
	return -1;
}

static void done_now(action_done_cb done, void *arg)
{
	struct waiter w = { .done = done, .arg = arg };
	complete(&w, 0, NULL);
}

/* What an action may change of the record, to put back when the record cannot be stored. */
struct intent {
	char *run_strategy;
	bool req_start, req_stop, restart, deleting, delete_volumes, stopping, stop_unsent, stop_by_us;
	int failures, pause_req;
	int64_t retry_after, stop_deadline;
};

static void intent_save(const struct evm *v, struct intent *s)
{
	*s = (struct intent){ xstrdup(v->run_strategy), v->req_start, v->req_stop, v->restart, v->deleting,
			      v->delete_volumes, v->stopping, v->stop_unsent, v->cur && v->cur->stop_by_us,
			      v->failures, v->pause_req, v->retry_after, v->stop_deadline };
}

static void intent_restore(struct evm *v, struct intent *s)
{
	free(v->run_strategy);
	v->run_strategy = s->run_strategy;
	v->req_start = s->req_start;
	v->req_stop = s->req_stop;
	v->restart = s->restart;
	v->deleting = s->deleting;
	v->delete_volumes = s->delete_volumes;
	v->stopping = s->stopping;
	v->stop_unsent = s->stop_unsent;
	if (v->cur)
		v->cur->stop_by_us = s->stop_by_us;
	v->failures = s->failures;
	v->pause_req = s->pause_req;
	v->retry_after = s->retry_after;
	v->stop_deadline = s->stop_deadline;
}

/* An action: checked, its intent stored (fsync'd; refused when that fails, nothing changed), then acted on. */
static int engine_action(struct source *src, const struct action_req *req, action_done_cb done, void *arg,
			 char **err)
{
	struct evm *v = find_vm(src, req->ns, req->name);
	if (v == NULL || v->deleting)
		return act_refuse(err, "virtualmachine \"%s\" not found on %s", req->name, src->name);
	if (src->readonly || opts_global()->readonly)
		return act_refuse(err, "read-only: %s refused", action_name(req->act));
	if (migrate_busy(v) && req->act != ACT_MIGRATE_ABORT && req->act != ACT_MIGRATE)
		return act_refuse(err, "%s is migrating: abort the migration first", req->name);
	if (req->act == ACT_MIGRATE || req->act == ACT_MIGRATE_ABORT)
		return migrate_action(src, req, done, arg, err);
	if (req->act == ACT_COUNT)
		return act_refuse(err, "unknown action");
	bool is = active(v->cur);
	bool force = req->act == ACT_FORCE_STOP || req->grace_period == 0;
	int grace = force ? 0 : req->grace_period > 0 ? req->grace_period : v->m->grace;
	const char *rs = v->run_strategy;
	struct intent saved;
	/* 1. the checks, and the intent in memory */
	switch (req->act) {
	case ACT_START:
		if (is)
			return act_refuse(err, "VM is already running");
		if (strcmp(rs, "Always") == 0 || strcmp(rs, "Once") == 0)
			return act_refuse(err, "%s does not support manual start requests", rs);
		if (strcmp(rs, "RerunOnFailure") == 0 && v->cur && v->cur->phase == intern("Failed"))
			return act_refuse(err, "RerunOnFailure does not support starting VM from failed state");
		intent_save(v, &saved);
		if (strcmp(rs, "Halted") == 0) {
			free(v->run_strategy);
			v->run_strategy = xstrdup("Always");
		} else
			v->req_start = true;
		v->req_stop = false;
		v->failures = 0;
		v->retry_after = 0;
		break;
	case ACT_STOP:
	case ACT_FORCE_STOP:
		if (strcmp(rs, "Halted") == 0) {
			if (!is)
				return act_refuse(err, "VM is not running");
			if (!force && grace >= v->m->grace)
				return act_refuse(err, "Halted only supports manual stop requests with a shorter graceperiod");
		} else if ((strcmp(rs, "RerunOnFailure") == 0 || strcmp(rs, "Manual") == 0) && !is)
			return act_refuse(err, "VM is not running");
		intent_save(v, &saved);
		if (strcmp(rs, "RerunOnFailure") == 0 || strcmp(rs, "Manual") == 0) {
			v->req_stop = true;
			v->req_start = false;
		} else if (strcmp(rs, "Halted") != 0) {
			free(v->run_strategy);
			v->run_strategy = xstrdup("Halted");
		}
		stop_intent(v, grace);
		break;
	case ACT_RESTART:
		if (strcmp(rs, "Halted") == 0)
			return act_refuse(err, "Halted does not support manual restart requests");
		if (!is)
			return act_refuse(err, "VM is not running");
		intent_save(v, &saved);
		v->restart = true;
		if (strcmp(rs, "Manual") == 0 || strcmp(rs, "RerunOnFailure") == 0) {
			v->req_start = true;
			v->req_stop = false;
		}
		stop_intent(v, grace);
		break;
	case ACT_PAUSE:
		if (!is || v->cur->phase != intern("Running"))
			return act_refuse(err, "VM is not running");
		if (v->cur->paused)
			return act_refuse(err, "VMI is already paused");
		intent_save(v, &saved);
		v->pause_req = EVM_PAUSE;
		break;
	case ACT_UNPAUSE:
		if (!is || !v->cur->paused)
			return act_refuse(err, "VMI is not paused");
		intent_save(v, &saved);
		v->pause_req = EVM_UNPAUSE;
		break;
	case ACT_SOFT_REBOOT:
		if (!is || v->cur->phase != intern("Running"))
			return act_refuse(err, "VM is not running");
		if (v->cur->paused)
			return act_refuse(err, "VMI is paused");
		intent_save(v, &saved);
		break;
	case ACT_DELETE:
		intent_save(v, &saved);
		v->deleting = true;
		v->delete_volumes = (req->flags & ENGINE_DELETE_VOLUMES) != 0;
		stop_intent(v, force ? 0 : grace);
		break;
	default:
		return act_refuse(err, "unknown action");
	}
	/* 2. stored before anything is done about it */
	char *perr = NULL;
	if (persist_err(v, &perr) < 0) {
		intent_restore(v, &saved);
		*err = perr;
		return -1;
	}
	free(saved.run_strategy);
	/* 3. acted on */
	switch (req->act) {
	case ACT_START:
		add_waiter(v, ACT_START, done, arg);
		break;
	case ACT_STOP:
	case ACT_FORCE_STOP:
		if (is)
			add_waiter(v, req->act, done, arg);
		else
			done_now(done, arg);
		break;
	case ACT_RESTART:
		add_waiter(v, ACT_RESTART, done, arg);
		break;
	case ACT_PAUSE:
		send_simple(v, RQ_SUSPEND, PK_PAUSE);
		add_waiter(v, ACT_PAUSE, done, arg);
		break;
	case ACT_UNPAUSE:
		send_simple(v, RQ_RESUME, PK_PAUSE);
		add_waiter(v, ACT_UNPAUSE, done, arg);
		break;
	case ACT_SOFT_REBOOT:
		send_simple(v, RQ_REBOOT, PK_OTHER);
		add_event(v, "Normal", "SoftRebooted", true, "soft reboot requested (guest agent, else ACPI)");
		add_waiter(v, ACT_SOFT_REBOOT, done, arg);
		break;
	case ACT_DELETE:
		add_event(v, "Normal", "Deleting", false, "deleting the virtual machine%s",
			  v->delete_volumes ? " and its volumes" : "");
		add_waiter(v, ACT_DELETE, done, arg);
		break;
	default:
		break;
	}
	issue_stop(v);
	publish(v);
	persist(v);
	reconcile(v);
	return 0;
}

struct fetch_call {
	fetch_done_cb done;
	void *arg;
	char *body;
};

static void fetch_fire(void *arg)
{
	struct fetch_call *f = arg;
	f->done(f->arg, f->body ? 0 : 404, f->body ? f->body : "not found", f->body ? strlen(f->body) : 9);
	free(f->body);
	free(f);
}

static int engine_fetch_raw(struct source *src, enum obj_kind kind, const char *ns, const char *name,
			    fetch_done_cb done, void *arg, char **err)
{
	(void)kind;
	(void)err;
	struct evm *v = find_vm(src, ns, name);
	struct fetch_call *f = xcalloc(1, sizeof *f);
	f->done = done;
	f->arg = arg;
	f->body = v ? record_dump(v) : NULL;
	loop_post(fetch_fire, f);
	return 0;
}

/* The source goes away (kvcon exits): the worker drains its queue (record writes) and stops. */
static void engine_destroy(struct source *src)
{
	struct ehost *eh = ehost_of(src);
	if (eh == NULL || eh->h == NULL)
		return;
	host_free(eh->h);
	eh->h = NULL;
	eh->up = false;
}

static struct json_object *engine_storage_json(struct source *src, const char *ns, const char *name);

static const struct provider_ops engine_ops = {
	.type = "engine",
	.action = engine_action,
	.open_console = estream_console,
	.open_vnc = estream_vnc,
	.fetch_raw = engine_fetch_raw,
	.open_log = engine_log_open,
	.close_log = engine_log_close,
	.storage_json = engine_storage_json,
	.destroy = engine_destroy,
};

/* ---- public ---- */

struct source *engine_open(struct store *st, const char *uri, char **err)
{
	char *u = uri ? xstrdup(uri) : engine_default_uri();
	if (strncmp(u, "qemu", 4) != 0) {
		*err = xasprintf("%s: only QEMU/KVM hosts (qemu:// URIs) are supported", u);
		free(u);
		return NULL;
	}
	E.st = st;
	if (imgcache_root() == NULL) {
		char *root = image_cache_dir();
		imgcache_set_root(root);
		free(root);
		manifest_image_hook(imgcache_hook);
	}
	char hn[256] = "localhost";
	gethostname(hn, sizeof hn - 1);
	struct source *src = source_new(SOURCE_ENGINE, hn);
	src->engine = true;
	struct ehost *eh = xcalloc(1, sizeof *eh);
	eh->src = src;
	eh->uri = u;
	eh->owner_fd = -1;
	hmap_init(&eh->vms);
	src->priv = eh;
	src->ops = &engine_ops;
	free(src->server);
	src->server = xstrdup(u);
	src->readonly = opts_global()->readonly;
	set_health(eh, WATCH_LOADING, NULL);
	E.hosts = xreallocarray(E.hosts, (size_t)E.nhosts + 1, sizeof *E.hosts);
	E.hosts[E.nhosts++] = eh;
	char *accel = setting("KVCON_ENGINE_ACCEL", "engine.accel");
	char *quser = setting("KVCON_ENGINE_QEMU_USER", "engine.qemu-user");
	char *embed = host_embed_root(u), *aerr = NULL;
	eh->acct.same = true;
	if (embed && embed_account_resolve(quser, &eh->acct, &aerr) < 0) {
		eh->acct.same = true; /* the connection fails with this error (embed_prepare) */
		free(aerr);
	}
	free(embed);
	eh->h = host_new(u, accel, quser, on_msg, eh);
	free(quser);
	free(accel);
	if (E.resync == NULL)
		E.resync = loop_timer_add(RESYNC_MS, resync_fire, NULL);
	return src;
}

char *engine_check(const char *uri)
{
	char *u = uri ? xstrdup(uri) : engine_default_uri();
	char *problem = hostenv_problem(u);
	free(u);
	return problem;
}

bool engine_ready(const struct source *src)
{
	const struct ehost *eh = ehost_of(src);
	return eh && eh->up && eh->synced;
}

const char *engine_error(const struct source *src)
{
	const struct ehost *eh = ehost_of(src);
	return eh && !eh->up ? eh->error : NULL;
}

const char *engine_problems(const struct source *src)
{
	const struct ehost *eh = ehost_of(src);
	return eh && eh->nbad ? eh->src->notice : NULL;
}

bool engine_idle(void)
{
	int64_t now = util_wall_s();
	for (int i = 0; i < E.nhosts; i++) {
		struct ehost *eh = E.hosts[i];
		if (eh->reqs)
			return false;
		if (!eh->up)
			continue;
		const char *key;
		void *val;
		for (size_t it = 0; hmap_next(&eh->vms, &it, &key, &val);) {
			struct evm *v = val;
			if (v->stopping || v->restart || v->deleting || v->waiters || migrate_busy(v))
				return false;
			if (want_running(v) != active(v->cur) && v->retry_after <= now)
				return false;
		}
	}
	return true;
}

char *engine_needs_reconciler(void)
{
	int64_t now = util_wall_s();
	for (int i = 0; i < E.nhosts; i++) {
		struct ehost *eh = E.hosts[i];
		if (eh->reqs)
			return xasprintf("%s: requests in flight", eh->uri);
		/* a host not (yet) connected may have executions to watch: nobody knows until it answers */
		if (!eh->up || !eh->synced)
			return xasprintf("%s: not connected", eh->uri);
		const char *key;
		void *val;
		for (size_t it = 0; hmap_next(&eh->vms, &it, &key, &val);) {
			struct evm *v = val;
			if (v->stopping || v->restart || v->deleting || v->pause_req || v->waiters || v->inflight ||
			    v->undefining || migrate_busy(v))
				return xasprintf("%s: a request is under way", v->key);
			/* a running execution is reaped (and, per its run strategy, restarted) when its QEMU dies */
			if (active(v->cur))
				return xasprintf("%s: running (%s)", v->key, v->run_strategy);
			/* Always, RerunOnFailure after a failure, a start asked: the reconciler has a start to retry */
			if (want_running(v))
				return xasprintf("%s: %s", v->key,
						 v->retry_after > now ? "waiting to retry its start" : "to start");
		}
	}
	return NULL;
}

static bool requests_pending(void)
{
	for (int i = 0; i < E.nhosts; i++)
		if (E.hosts[i]->reqs && E.hosts[i]->up)
			return true;
	return false;
}

void engine_close_all(void)
{
	/* let replies arrive, so the records they cause are queued before the workers stop */
	uint64_t until = util_now_ms() + 10000;
	while (requests_pending() && util_now_ms() < until)
		loop_once(50);
	for (int i = 0; i < E.nhosts; i++) {
		host_free(E.hosts[i]->h);
		E.hosts[i]->h = NULL;
		E.hosts[i]->up = false;
	}
	loop_timer_cancel(E.resync);
	E.resync = NULL;
}

int engine_apply(struct source *src, const char *text, size_t len, char **result, char **err)
{
	struct ehost *eh = ehost_of(src);
	*result = NULL;
	if (eh == NULL || !eh->loaded) {
		*err = xstrdup("the engine host is not connected");
		return -1;
	}
	struct manifest *m = manifest_parse(text, len, err);
	if (m == NULL)
		return -1;
	char *imgs = env_dir("KVCON_ENGINE_IMAGES", "images"), *vols = env_dir("KVCON_ENGINE_VOLUMES", "volumes");
	char *bridge = setting("KVCON_ENGINE_BRIDGE", "engine.bridge");
	char **roots = host_roots();
	char *cache = image_cache_dir();
	struct domxml_env env = { .image_dir = imgs, .image_cache = cache, .volume_dir = vols, .bridge = bridge,
				  .host_roots = (const char *const *)roots };
	/* containerDisks from registries are pulled at start (as kubelet does), not looked for at apply */
	enum mf_vol *types = xcalloc((size_t)m->nvols + 1, sizeof *types);
	for (int i = 0; i < m->nvols; i++) {
		struct oci_ref r;
		char *e = NULL;
		types[i] = m->vols[i].type;
		if (types[i] == MF_VOL_CONTAINER && !local_image(imgs, m->vols[i].image) &&
		    oci_ref_parse(m->vols[i].image, &r, &e) == 0) {
			m->vols[i].type = MF_VOL_EMPTY;
			oci_ref_free(&r);
		}
		free(e);
	}
	int rc = domxml_resolve(m, &env, err);
	for (int i = 0; i < m->nvols; i++)
		m->vols[i].type = types[i];
	free(types);
	free(imgs);
	free(vols);
	free(bridge);
	free(cache);
	values_free(roots);
	if (rc < 0) {
		manifest_free(m);
		return -1;
	}
	char *key = xasprintf("%s/%s", m->ns, m->name);
	struct evm *v = hmap_get(&eh->vms, key);
	char *file = xasprintf("/%s_%s.json:", m->ns, m->name);
	for (int i = 0; i < eh->nbad && v == NULL; i++)
		if (strstr(eh->bad[i], file) && forget_bad(eh, i)) {
			i--; /* moved away or removed since: this apply writes the record anew */
		} else if (strstr(eh->bad[i], file)) {
			*err = xasprintf("the record of %s is unreadable (%s): move it away first", key, eh->bad[i]);
			free(file);
			free(key);
			manifest_free(m);
			return -1;
		}
	free(file);
	if (v && v->deleting) {
		*err = xasprintf("%s is being deleted", key);
		free(key);
		manifest_free(m);
		return -1;
	}
	if (v && v->text && strlen(v->text) == len && memcmp(v->text, text, len) == 0) {
		*result = xstrdup("unchanged");
		free(key);
		manifest_free(m);
		sweep_images();
		return 0;
	}
	/* the new record is stored before anything else: an apply that cannot be stored is refused and leaves
	 * the previous record (file and memory) as it was */
	bool fresh = v == NULL;
	struct evm old = { 0 };
	if (fresh) {
		v = xcalloc(1, sizeof *v);
		v->eh = eh;
		v->key = key;
		util_uuid_v4(v->uid);
		v->created = util_wall_s();
		v->generation = 1;
	} else {
		free(key);
		old.m = v->m;
		old.text = v->text;
		old.run_strategy = v->run_strategy;
		old.generation = v->generation;
		old.req_start = v->req_start;
		old.req_stop = v->req_stop;
		v->generation++;
		v->run_strategy = NULL;
	}
	v->m = m;
	v->text = xstrndup(text, len);
	v->run_strategy = xstrdup(m->run_strategy); /* apply sets spec.runStrategy, as kubectl apply does */
	v->req_start = v->req_stop = false;
	if (persist_err(v, err) < 0) {
		if (fresh)
			evm_free(v);
		else {
			manifest_free(v->m);
			free(v->text);
			free(v->run_strategy);
			v->m = old.m;
			v->text = old.text;
			v->run_strategy = old.run_strategy;
			v->generation = old.generation;
			v->req_start = old.req_start;
			v->req_stop = old.req_stop;
		}
		return -1;
	}
	if (fresh)
		hmap_put(&eh->vms, v->key, v);
	else {
		manifest_free(old.m);
		free(old.text);
		free(old.run_strategy);
	}
	*result = xstrdup(fresh ? "created" : "configured");
	publish(v);
	reconcile(v);
	sweep_images(); /* images the previous manifest used may be unused now */
	return 0;
}

static void console_backlog_fire(void *arg)
{
	struct engine_console *c = arg;
	c->backlog_timer = NULL;
	char *b = c->backlog;
	size_t n = c->backlog_len;
	c->backlog = NULL;
	c->cb(c->arg, b, n);
	free(b);
}

struct engine_console *engine_console_open(struct source *src, const char *ns, const char *name,
					   engine_console_cb cb, void *arg, char **err)
{
	struct evm *v = find_vm(src, ns, name);
	if (v == NULL) {
		*err = xasprintf("virtualmachine \"%s\" not found", name);
		return NULL;
	}
	if (!v->m->serial_console) {
		*err = xasprintf("%s has no serial console (autoattachSerialConsole: false)", name);
		return NULL;
	}
	struct engine_console *c = xcalloc(1, sizeof *c);
	c->v = v;
	c->eh = v->eh;
	c->key = xstrdup(v->key);
	c->cb = cb;
	c->arg = arg;
	if (v->ring_len == 0 && active(v->cur) && v->cur->serial_log) {
		/* attached after the start (another kvcon started it): the log's tail is the backlog, read from a file of
		 * root or QEMU's account (the run directory's owner), never through a link the account planted */
		const uid_t owners[] = { geteuid(), UTIL_OWNER_DIR };
		int fd = util_open_checked(v->cur->serial_log, owners, 2, NULL);
		struct stat st;
		if (fd >= 0 && fstat(fd, &st) == 0 && st.st_size > 0) {
			off_t from = st.st_size > 8192 ? st.st_size - 8192 : 0;
			size_t n = 0;
			char *s = lseek(fd, from, SEEK_SET) == from ? util_read_fd(fd, 8192, &n) : NULL;
			if (s && n)
				console_deliver(v, s, n); /* into the ring, before c subscribes */
			free(s);
		}
		if (fd >= 0)
			close(fd);
	}
	c->next = v->consoles;
	v->consoles = c;
	if (v->ring_len) {
		/* the backlog comes from the loop, never from inside this call */
		c->backlog = xmalloc(v->ring_len);
		memcpy(c->backlog, v->ring, v->ring_len);
		c->backlog_len = v->ring_len;
		c->backlog_timer = loop_timer_add(0, console_backlog_fire, c);
	}
	if (active(v->cur))
		send_simple(v, RQ_CONSOLE, PK_CONSOLE);
	return c;
}

void engine_console_write(struct engine_console *c, const char *data, size_t len)
{
	if (c == NULL || c->v == NULL || len == 0)
		return;
	struct host_req *r = xcalloc(1, sizeof *r);
	r->type = RQ_CONSOLE_SEND;
	r->dom = dom_name(c->v);
	r->data = xmalloc(len);
	memcpy(r->data, data, len);
	r->len = len;
	host_request(c->eh->h, r);
}

void engine_console_close(struct engine_console *c)
{
	if (c == NULL)
		return;
	if (c->v)
		for (struct engine_console **pp = &c->v->consoles; *pp; pp = &(*pp)->next)
			if (*pp == c) {
				*pp = c->next;
				break;
			}
	loop_timer_cancel(c->backlog_timer);
	free(c->backlog);
	free(c->key);
	free(c);
}

int engine_vnc_open(struct source *src, const char *ns, const char *name, engine_vnc_cb cb, void *arg, char **err)
{
	struct evm *v = find_vm(src, ns, name);
	if (v == NULL || !active(v->cur)) {
		*err = xasprintf("virtualmachine \"%s\" is not running", name);
		return -1;
	}
	if (!v->m->graphics) {
		*err = xasprintf("%s has no display (autoattachGraphicsDevice: false)", name);
		return -1;
	}
	char *dn = dom_name(v);
	int id = host_simple(v->eh->h, RQ_VNC, dn);
	free(dn);
	struct preq *p = track(v->eh, id, PK_VNC, NULL);
	if (p == NULL) {
		*err = xasprintf("%s: the engine host is closed", name);
		return -1;
	}
	p->vnc_cb = cb;
	p->arg = arg;
	return 0;
}

int engine_portforward_open(struct source *src, const char *ns, const char *name, int port, engine_vnc_cb cb,
			    void *arg, int *host_port, char **err)
{
	struct evm *v = find_vm(src, ns, name);
	if (v == NULL || !active(v->cur)) {
		*err = xasprintf("virtualmachineinstance \"%s\" is not running", name);
		return -1;
	}
	const struct mf_iface *f = pod_iface(v);
	const char *uri = ehost_uri(v->eh);
	if (f == NULL) {
		*err = xasprintf("%s has no masquerade interface to forward to", name);
		return -1;
	}
	if (uri == NULL || strncmp(uri, "qemu:///", 8) != 0) {
		*err = xasprintf("ports are forwarded only on a local host (qemu:///...), not on %s", uri ? uri : "this host");
		return -1;
	}
	/* a free port now; QEMU binds it at once (a port taken meanwhile fails the rule, and this connection) */
	int hp = 0, held = hostfwd_free_port(false, &hp);
	if (held < 0) {
		*err = xasprintf("no free host port: %s", strerror(errno));
		return -1;
	}
	close(held);
	struct host_req *r = xcalloc(1, sizeof *r);
	r->type = RQ_PORTFWD;
	r->dom = dom_name(v);
	r->data = xasprintf("hostfwd_add hostua-%s tcp:127.0.0.1:%d-:%d", f->name, hp, port);
	r->len = (size_t)hp;
	int id = host_request(v->eh->h, r);
	struct preq *p = track(v->eh, id, PK_VNC, NULL);
	if (p == NULL) {
		*err = xasprintf("%s: the engine host is closed", name);
		return -1;
	}
	p->vnc_cb = cb;
	p->arg = arg;
	*host_port = hp;
	return 0;
}

void engine_portforward_drop(struct source *src, const char *ns, const char *name, int host_port)
{
	struct evm *v = find_vm(src, ns, name);
	const struct mf_iface *f = v ? pod_iface(v) : NULL;
	if (f == NULL || !active(v->cur) || host_port <= 0)
		return; /* the execution ended: its QEMU and its rules are gone */
	struct host_req *r = xcalloc(1, sizeof *r);
	r->type = RQ_PORTFWD_DROP;
	r->dom = dom_name(v);
	r->data = xasprintf("hostfwd_remove hostua-%s tcp:127.0.0.1:%d", f->name, host_port);
	host_request(v->eh->h, r);
}

const char *engine_serial_log(struct source *src, const char *ns, const char *name)
{
	struct evm *v = find_vm(src, ns, name);
	return v && v->cur ? v->cur->serial_log : NULL;
}

bool engine_running(struct source *src, const char *ns, const char *name)
{
	struct evm *v = find_vm(src, ns, name);
	return v && active(v->cur);
}

/* ---- services for migrate.c ---- */

struct ehost *ehost_of_source(const struct source *src)
{
	return ehost_of(src);
}

struct ehost **ehost_all(int *n)
{
	*n = E.nhosts;
	return E.hosts;
}

struct evm **ehost_vms(struct ehost *eh, int *n)
{
	struct evm **list = xcalloc(eh->vms.count + 1, sizeof *list);
	size_t k = 0;
	const char *key;
	void *val;
	for (size_t it = 0; hmap_next(&eh->vms, &it, &key, &val);)
		list[k++] = val;
	*n = (int)k;
	return list;
}

struct source *ehost_source(const struct ehost *eh)
{
	return eh->src;
}

const char *ehost_uri(const struct ehost *eh)
{
	return eh->uri;
}

bool ehost_ready(const struct ehost *eh)
{
	return eh->up && eh->synced;
}

struct store *evm_store(void)
{
	return E.st;
}

struct evm *evm_find(struct source *src, const char *ns, const char *name)
{
	return find_vm(src, ns, name);
}

bool evm_active(const struct evm *v)
{
	return active(v->cur);
}

char *evm_dom_name(const struct evm *v)
{
	return dom_name(v);
}

void evm_publish(struct evm *v)
{
	publish(v);
}

void evm_persist(struct evm *v)
{
	persist(v);
}

int evm_persist_err(struct evm *v, char **err)
{
	return persist_err(v, err);
}

void evm_event(struct evm *v, const char *type, const char *reason, const char *msg)
{
	add_event(v, type, reason, true, "%s", msg);
}

void evm_inspect(struct evm *v)
{
	send_simple(v, RQ_INSPECT, PK_INSPECT);
}

void evm_move(struct evm *v, struct ehost *dst)
{
	struct ehost *from = v->eh;
	remove_execution_objs(v, v->cur);
	for (int i = 0; i < v->nevents; i++)
		store_remove(E.st, from->src, OBJ_EVENT, v->events[i].uid);
	store_remove(E.st, from->src, OBJ_VM, v->uid);
	char *old_path = record_path(v); /* removed once the target's record is stored */
	for (struct preq *p = from->reqs; p; p = p->next)
		if (p->v == v) { /* answers about the domain on the old host no longer concern it */
			p->v = NULL;
			p->kind = PK_OTHER;
			v->inflight--;
		}
	hmap_del(&from->vms, v->key);
	struct evm *stale = hmap_get(&dst->vms, v->key);
	if (stale && stale != v) {
		remove_execution_objs(stale, stale->cur);
		store_remove(E.st, dst->src, OBJ_VM, stale->uid);
		hmap_del(&dst->vms, stale->key);
		evm_free(stale);
	}
	v->eh = dst;
	hmap_put(&dst->vms, v->key, v);
	if (v->cur) {
		free(v->cur->node);
		v->cur->node = xstrdup(dst->src->name);
	}
	for (struct engine_console *c = v->consoles; c; c = c->next)
		c->eh = dst;
	for (int i = 0; i < v->nevents; i++)
		event_obj(v, &v->events[i]);
	publish(v);
	char *err = NULL;
	if (persist_err(v, &err) < 0) {
		/* the source's record stays: a live migration's says where the execution went (migrate_resume_all), an
		 * offline one's holds its intent (finish_offline_move) */
		log_error("engine: %s: %s; the record on %s is kept", v->key, err, from->src->name);
		free(err);
	} else {
		unlink_record(old_path);
	}
	free(old_path);
	if (active(v->cur)) {
		send_simple(v, RQ_INSPECT, PK_INSPECT);
		if (v->m->serial_console)
			send_simple(v, RQ_CONSOLE, PK_CONSOLE);
	}
}

int evm_move_offline(struct evm *v, struct ehost *dst, char **err)
{
	v->moving_to = xstrdup(dst->src->name);
	v->moving_dir = xstrdup(dst->records_dir);
	int rc = persist_err(v, err);
	free(v->moving_to);
	free(v->moving_dir);
	v->moving_to = v->moving_dir = NULL;
	if (rc < 0)
		return -1;
	char *dn = dom_name(v);
	struct ehost *from = v->eh;
	evm_move(v, dst);
	/* after the move: a kill before it leaves the domain where the record is */
	if (from->h)
		host_simple(from->h, RQ_UNDEFINE, dn);
	free(dn);
	return 0;
}

/* ---- the storage of an engine VM (diagnose, bundle) ---- */

static void vol_file(struct json_object *o, const char *path)
{
	struct stat sb;
	struct json_object *f = json_object_new_object();
	char *e = util_escape_display(path);
	json_object_object_add(f, "path", json_object_new_string(e));
	free(e);
	bool ok = stat(path, &sb) == 0;
	json_object_object_add(f, "exists", json_object_new_boolean(ok));
	if (ok)
		json_object_object_add(f, "sizeBytes", json_object_new_int64((int64_t)sb.st_size));
	json_object_object_add(o, "file", f);
}

static void vol_broken(struct json_object *o, const char *why)
{
	char *e = util_escape_display(why);
	json_object_object_add(o, "brokenLink", json_object_new_string("file"));
	json_object_object_add(o, "reason", json_object_new_string(e));
	free(e);
}

/* The VM's volumes as diagnose and bundle show storage (provider_ops.storage_json): per volume its type, claim or
 * image, the file behind it on this machine (path, exists, sizeBytes), the VMs of this host using the same file
 * (usedBy), and brokenLink + reason when a file the VM needs is missing. NULL when no such VM. */
static struct json_object *engine_storage_json(struct source *src, const char *ns, const char *name)
{
	struct evm *v = find_vm(src, ns, name);
	if (v == NULL)
		return NULL;
	struct json_object *out = json_object_new_array();
	char *vols = env_dir("KVCON_ENGINE_VOLUMES", "volumes");
	const char *run = v->cur && active(v->cur) ? v->cur->run_dir : NULL;
	static const char *const types[] = { "hostDisk", "persistentVolumeClaim", "emptyDisk", "containerDisk",
					     "cloudInitNoCloud" };
	for (int i = 0; i < v->m->nvols; i++) {
		const struct mf_volume *mv = &v->m->vols[i];
		struct json_object *o = json_object_new_object();
		char *e = util_escape_display(mv->name);
		json_object_object_add(o, "volume", json_object_new_string(e));
		free(e);
		json_object_object_add(o, "type", json_object_new_string(types[mv->type]));
		char *path = NULL;
		switch (mv->type) {
		case MF_VOL_HOSTDISK:
			path = xstrdup(mv->path);
			break;
		case MF_VOL_PVC: {
			char *q = xasprintf("%s/%s/%s.qcow2", vols, v->m->ns, mv->claim);
			struct stat sb;
			path = stat(q, &sb) == 0 ? q : (free(q), xasprintf("%s/%s/%s.img", vols, v->m->ns, mv->claim));
			char *c = util_escape_display(mv->claim);
			json_object_object_add(o, "claim", json_object_new_string(c));
			free(c);
			break;
		}
		case MF_VOL_EMPTY:
			path = run ? xasprintf("%s/empty-%s.img", run, mv->name) : NULL;
			break;
		case MF_VOL_CONTAINER: {
			char *im = util_escape_display(mv->image);
			json_object_object_add(o, "image", json_object_new_string(im));
			free(im);
			path = run ? xasprintf("%s/overlay-%s.qcow2", run, mv->name) : NULL;
			break;
		}
		case MF_VOL_CLOUDINIT:
			path = run ? xasprintf("%s/cloudinit-%s.iso", run, mv->name) : NULL;
			break;
		}
		if (path) {
			vol_file(o, path);
			struct stat sb;
			bool exists = stat(path, &sb) == 0;
			if (!exists && mv->type == MF_VOL_PVC) {
				char *why = xasprintf("the volume file of claim %s (%s) does not exist", mv->claim, path);
				vol_broken(o, why);
				free(why);
			} else if (!exists && mv->type == MF_VOL_HOSTDISK && !mv->create) {
				char *why = xasprintf("hostDisk %s does not exist (type Disk: it is not created)", path);
				vol_broken(o, why);
				free(why);
			}
		}
		/* which VMs of this host use the same file (a PVC or host disk shared by two VMs) */
		if (mv->type == MF_VOL_PVC || mv->type == MF_VOL_HOSTDISK) {
			struct json_object *users = json_object_new_array();
			const char *k;
			void *val;
			for (size_t it = 0; hmap_next(&v->eh->vms, &it, &k, &val);) {
				const struct evm *o2 = val;
				for (int j = 0; j < o2->m->nvols; j++) {
					const struct mf_volume *w = &o2->m->vols[j];
					bool same = w->type == mv->type &&
						    (mv->type == MF_VOL_PVC ? strcmp(o2->m->ns, v->m->ns) == 0 && util_str_eq(w->claim, mv->claim)
									     : util_str_eq(w->path, mv->path));
					if (same) {
						char *u = util_escape_display(k);
						json_object_array_add(users, json_object_new_string(u));
						free(u);
						break;
					}
				}
			}
			json_object_object_add(o, "usedBy", users);
		}
		free(path);
		json_object_array_add(out, o);
	}
	free(vols);
	return out;
}
