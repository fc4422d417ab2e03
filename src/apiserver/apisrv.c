/* The engine service: the Kubernetes API over the engine's store (see apisrv.h and docs/ENGINE-SERVICE.md).
 *
 * Everything runs on the loop thread: libmicrohttpd in external-epoll mode (its epoll fd is one of the loop's fds,
 * MHD_run is called when it is readable and at the end of every loop pass), the engine's reconciler and the store
 * listener that turns store changes into resource versions and watch events. */
#include "apiserver/apisrv.h"
#include "apiserver/apipf.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <microhttpd.h>
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "apiserver/apigate.h"
#include "core/buf.h"
#include "core/hmap.h"
#include "core/intern.h"
#include "core/log.h"
#include "core/loop.h"
#include "core/opts.h"
#include "core/trust.h"
#include "core/util.h"
#include "core/version.h"
#include "core/xmalloc.h"
#include "core/ydoc.h"
#include "engine/apisel.h"
#include "engine/apitls.h"
#include "engine/engine.h"
#include "engine/evm.h"
#include "engine/manifest.h"
#include "engine/migrate.h"
#include "kube/wsframe.h"
#include "model/columns.h"
#include "model/objjson.h"
#include "model/registry.h"
#include "model/source.h"
#include "model/store.h"

#define MAX_BODY (4u << 20)
#define DOMXML_READ_MAX (1u << 20) /* a domain XML kvcon wrote: kilobytes */
#define RING_DEFAULT 4096
#define BOOKMARK_MS 10000
#define KV_VERSION "v1.5.0-kvcon"
/* where the engine's KubeVirt CR lives, as a real install names it */
#define KV_NS "kubevirt"
#define KV_NAME "kubevirt"

/* ---- resources ---- */

enum res { R_VM, R_VMI, R_POD, R_EVENT, R_NS, R_NODE, R_VMIM, R_KV, R_COUNT };

/* Each resource is a kind of the registry (model/registry.c: names, group, short names, scope, store kind) with
 * the verbs this server allows on it; RES[r] reads as the table it was, filled from the registry on first use. */
struct resdef {
	const char *plural, *singular, *kind, *group, *short1, *short2;
	bool namespaced;
	int obj_kind; /* enum obj_kind, -1 for synthesised kinds */
	const char *verbs;
};

static const struct {
	enum kind_id kind;
	const char *verbs;
} RES_ROWS[R_COUNT] = {
	[R_VM] = { KIND_VM, "create,delete,get,list,patch,update,watch" },
	[R_VMI] = { KIND_VMI, "delete,get,list,watch" },
	[R_POD] = { KIND_POD, "get,list,watch" },
	[R_EVENT] = { KIND_EVENT, "get,list,watch" },
	[R_NS] = { KIND_NS, "create,delete,get,list,patch,watch" },
	[R_NODE] = { KIND_NODE, "get,list,watch" },
	[R_VMIM] = { KIND_VMIM, "create,delete,get,list,watch" },
	/* the engine's own KubeVirt CR (kv_json): read-only, writes are 405 */
	[R_KV] = { KIND_KV, "get,list,watch" },
};

static const struct resdef *res_table(void)
{
	static struct resdef t[R_COUNT];
	if (t[0].plural == NULL)
		for (int r = 0; r < R_COUNT; r++) {
			const struct kind_def *k = registry_kind(RES_ROWS[r].kind);
			t[r] = (struct resdef){ k->plural, k->singular, k->kind, k->group, k->shorts[0], k->shorts[1],
						k->namespaced, k->obj, RES_ROWS[r].verbs };
		}
	return t;
}
#define RES (res_table())

static const char *api_version(enum res r)
{
	return *RES[r].group ? "kubevirt.io/v1" : "v1";
}

static enum res res_of_kind(enum obj_kind k)
{
	switch (k) {
	case OBJ_VM:
		return R_VM;
	case OBJ_VMI:
		return R_VMI;
	case OBJ_POD:
		return R_POD;
	default:
		return R_EVENT;
	}
}

/* ---- state ---- */

/* The last JSON text served for a store object: its resourceVersion and text (with that resourceVersion). */
struct cent {
	char key[UID_LEN + 4];
	uint64_t rv;
	char *body; /* JSON without resourceVersion (for comparison) */
	char *text; /* JSON as served */
};

/* One watch event kept for watchers that are behind. */
struct wev {
	uint64_t rv;
	enum res r;
	const char *type; /* ADDED, MODIFIED, DELETED */
	struct obj *o;    /* packed copy (namespace, name, labels for the filters); NULL for a migration (text) */
	char *text;
};

struct watcher {
	struct MHD_Connection *c;
	enum res r;
	char *ns, *name;
	struct apisel *ls, *fs;
	uint64_t rv; /* last sent */
	bool bookmarks, table, suspended, ended, sent_columns;
	uint64_t deadline_ms, next_bookmark_ms;
	struct buf out;
	struct loop_fd *gone; /* while suspended: the client's socket, to notice that it left */
	struct watcher *next;
};

struct reqctx {
	struct buf body;
	bool too_big;
};

#define VMIM_NPHASE 8
#define KV_NCOND 5 /* the KubeVirt CR's conditions (kv_json) */

/* A VirtualMachineInstanceMigration: kept by the service in a file of its own (engine-data/vmims/NS_NAME.json,
 * fsync'd, stored before the engine is asked to migrate); its phase follows the engine's migration (the VMI's
 * migrationState with the same migrationUid, which the object chooses and hands to the engine) and the action's
 * outcome. */
struct vmim {
	unsigned id;
	char *ns, *name, *vmi, *target; /* target: spec.addedNodeSelector's kubernetes.io/hostname, or NULL */
	char uid[37];
	char mig_uid[UID_LEN]; /* the engine's migrationUid once started */
	int64_t created;
	json_object *labels, *annotations;
	const char *phase;
	char *reason;      /* why it failed (refused, or the engine's message) */
	int done;          /* 0 running, 1 the action ended well, -1 it failed */
	const char *tphase[VMIM_NPHASE];
	int64_t tstamp[VMIM_NPHASE];
	int ntrans;
	uint64_t rv;
	char *body, *text; /* JSON without / with resourceVersion */
	bool loaded;       /* read from its file: an earlier service accepted it */
	/* the engine's options, from the kvcon.io/ annotations (vmim_opts; docs/ENGINE-SERVICE.md) */
	uint32_t flags;    /* ENGINE_MIG_* */
	char *mig_uri;
	int timeout;
	unsigned long bandwidth;
	struct vmim *next;
};

static struct {
	struct store *st;
	struct source **srcs;
	int nsrcs;
	uint64_t rv;
	struct hmap cache;
	struct wev *ring;
	size_t ring_size, head, count; /* ring[head] is the oldest */
	uint64_t oldest_rv; /* watches from before it get 410 */
	struct watcher *watchers;
	struct apitls tls;
	bool https;
	struct MHD_Daemon *d[2];
	struct loop_fd *lfd[2];
	int nd;
	struct loop_timer *timer, *tick;
	int64_t started;
	char node_uid[37];
	char **nsx; /* namespaces created through the API (kept in $XDG_STATE_HOME/kvcon/engine-namespaces) */
	char **nsxmeta; /* each one's labels and annotations as applied: {"labels":..,"annotations":..} text, or NULL */
	size_t nnsx;
	struct vmim *vmims;
	unsigned vmim_ids;
	bool vmim_posted;
	/* objects removed from the store during this loop turn, their DELETED not sent yet: one added again with the
	 * same UID in the same turn (the engine moves a VM between its hosts: a migration) is MODIFIED instead */
	struct gone {
		struct cent *c;
		struct obj *o; /* packed copy, for the watch filters */
		char *text;    /* as served, without the new resourceVersion */
		struct gone *next;
	} *gone;
	bool gone_posted;
	struct kv_state {
		char status[KV_NCOND][6]; /* each condition's last status, for its transition time */
		int64_t since[KV_NCOND];
		uint64_t rv;
		char *body, *text; /* JSON without / with resourceVersion */
	} kv;
	long idle_exit;      /* seconds without a client and with nothing to reconcile before the service exits; 0 never */
	uint64_t busy_ms;    /* the last time a client was connected or something needed reconciling */
	char *busy_why;      /* what last kept it (logged when it changes) */
	char *pid_path;      /* SOCKET.pid, removed at exit */
	char *sock_path;     /* the unix socket, and its identity: a service whose socket was removed or replaced */
	dev_t sock_dev;      /* (and which serves no HTTPS) can be reached by nobody: it leaves */
	ino_t sock_ino;
} S;

/* ---- JSON helpers ---- */

static json_object *jstr(const char *s)
{
	return s ? json_object_new_string(s) : NULL;
}

static json_object *jget(json_object *o, const char *k)
{
	json_object *v = NULL;
	return o && json_object_is_type(o, json_type_object) && json_object_object_get_ex(o, k, &v) ? v : NULL;
}

static const char *jgets(json_object *o, const char *k)
{
	json_object *v = jget(o, k);
	return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

static json_object *jobj(json_object *o, const char *k)
{
	json_object *v = jget(o, k);
	if (v && json_object_is_type(v, json_type_object))
		return v;
	v = json_object_new_object();
	json_object_object_add(o, k, v);
	return v;
}

static char *jtext(json_object *o)
{
	return xstrdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
}

static json_object *time_json(int64_t t)
{
	char b[40];
	if (t <= 0)
		return NULL;
	util_format_time(t, b, sizeof b);
	return json_object_new_string(b);
}

/* The stored manifest as a JSON object (NULL when it does not parse). */
static json_object *manifest_json(const char *text)
{
	if (text == NULL)
		return NULL;
	char *err = NULL;
	yaml_document_t doc;
	if (ydoc_load(&doc, text, strlen(text), &err) < 0) {
		free(err);
		return NULL;
	}
	yaml_node_t *root = yaml_document_get_root_node(&doc);
	json_object *o = root && root->type == YAML_MAPPING_NODE ? ydoc_json(&doc, root) : NULL;
	yaml_document_delete(&doc);
	return o;
}

/* ---- objects as the API serves them ---- */

static void add_labels(json_object *md, const struct obj *o)
{
	json_object *l = NULL;
	for (const char *it = NULL, *k, *v; obj_label_next(o, &it, &k, &v);) {
		if (l == NULL)
			l = jobj(md, "labels");
		json_object_object_add(l, k, json_object_new_string(v));
	}
}

static json_object *vm_json(const struct obj *o)
{
	const struct vm *v = (const struct vm *)o;
	json_object *base = objjson_new(o);
	struct evm *ev = evm_find(o->src, o->ns, o->name);
	json_object *m = ev ? manifest_json(ev->text) : NULL;
	if (m == NULL)
		return base;
	/* the manifest as applied (spec, labels, annotations), with the server's metadata and status */
	json_object_object_del(m, "status");
	json_object *md = jobj(m, "metadata"), *bmd = jget(base, "metadata");
	const char *keys[] = { "name", "namespace", "uid", "creationTimestamp", "deletionTimestamp", "generation" };
	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
		json_object *x = jget(bmd, keys[i]);
		json_object_object_del(md, keys[i]);
		if (x)
			json_object_object_add(md, keys[i], json_object_get(x));
	}
	json_object_object_del(md, "resourceVersion");
	json_object_object_del(md, "managedFields");
	json_object *spec = jobj(m, "spec");
	if (v->run_strategy && !v->running_field)
		json_object_object_add(spec, "runStrategy", json_object_new_string(v->run_strategy));
	json_object_object_add(m, "apiVersion", json_object_new_string("kubevirt.io/v1"));
	json_object_object_add(m, "kind", json_object_new_string("VirtualMachine"));
	json_object *st = jget(base, "status");
	json_object_object_add(m, "status", st ? json_object_get(st) : json_object_new_object());
	json_object_put(base);
	return m;
}

static json_object *event_json(const struct obj *o)
{
	const struct event *e = (const struct event *)o;
	json_object *j = json_object_new_object(), *md = json_object_new_object(), *io = json_object_new_object();
	json_object_object_add(j, "apiVersion", jstr("v1"));
	json_object_object_add(j, "kind", jstr("Event"));
	json_object_object_add(md, "name", jstr(o->name));
	json_object_object_add(md, "namespace", jstr(o->ns));
	json_object_object_add(md, "uid", jstr(o->uid));
	json_object_object_add(md, "creationTimestamp", time_json(o->created ? o->created : e->first));
	json_object_object_add(j, "metadata", md);
	json_object_object_add(io, "apiVersion", jstr("kubevirt.io/v1"));
	json_object_object_add(io, "kind", jstr(e->inv_kind));
	json_object_object_add(io, "name", jstr(e->inv_name));
	json_object_object_add(io, "namespace", jstr(e->inv_ns ? e->inv_ns : o->ns));
	if (e->inv_uid[0])
		json_object_object_add(io, "uid", jstr(e->inv_uid));
	json_object_object_add(j, "involvedObject", io);
	json_object_object_add(j, "reason", jstr(e->reason));
	json_object_object_add(j, "message", jstr(e->message));
	json_object_object_add(j, "type", jstr(e->type));
	json_object_object_add(j, "count", json_object_new_int(e->count > 0 ? e->count : 1));
	json_object_object_add(j, "firstTimestamp", time_json(e->first));
	json_object_object_add(j, "lastTimestamp", time_json(e->last ? e->last : e->first));
	json_object *src = json_object_new_object();
	json_object_object_add(src, "component", jstr(e->component ? e->component : "kvcon-engine"));
	if (o->src && o->src->name)
		json_object_object_add(src, "host", jstr(o->src->name));
	json_object_object_add(j, "source", src);
	json_object_object_add(j, "reportingComponent", jstr(e->component ? e->component : "kvcon-engine"));
	return j;
}

/* status.migrationState as KubeVirt writes it (timestamps RFC 3339). */
static json_object *mig_state_json(const struct migration_state *m)
{
	json_object *j = json_object_new_object();
	if (m->migration_uid[0])
		json_object_object_add(j, "migrationUid", jstr(m->migration_uid));
	if (m->source_node)
		json_object_object_add(j, "sourceNode", jstr(m->source_node));
	if (m->target_node)
		json_object_object_add(j, "targetNode", jstr(m->target_node));
	if (m->source_pod)
		json_object_object_add(j, "sourcePod", jstr(m->source_pod));
	if (m->target_pod)
		json_object_object_add(j, "targetPod", jstr(m->target_pod));
	if (m->start)
		json_object_object_add(j, "startTimestamp", time_json(m->start));
	if (m->end)
		json_object_object_add(j, "endTimestamp", time_json(m->end));
	json_object_object_add(j, "completed", json_object_new_boolean(m->completed));
	json_object_object_add(j, "failed", json_object_new_boolean(m->failed));
	if (m->abort_requested)
		json_object_object_add(j, "abortRequested", json_object_new_boolean(1));
	if (m->abort_status)
		json_object_object_add(j, "abortStatus", jstr(m->abort_status));
	if (m->mode)
		json_object_object_add(j, "mode", jstr(m->mode));
	if (m->failure_reason)
		json_object_object_add(j, "failureReason", jstr(m->failure_reason));
	/* the engine's job figures, which KubeVirt's migrationState has no field for (docs/ENGINE-SERVICE.md) */
	if (m->progress_pct >= 0 || m->data_processed || m->downtime_ms) {
		json_object *job = json_object_new_object();
		json_object_object_add(job, "progress", json_object_new_int(m->progress_pct));
		json_object_object_add(job, "dataProcessed", json_object_new_int64((int64_t)m->data_processed));
		json_object_object_add(job, "dataRemaining", json_object_new_int64((int64_t)m->data_remaining));
		json_object_object_add(job, "memoryDirtyRate", json_object_new_int64((int64_t)m->dirty_rate));
		json_object_object_add(job, "memoryIteration", json_object_new_int(m->iteration));
		json_object_object_add(job, "downtimeMs", json_object_new_int64(m->downtime_ms));
		json_object_object_add(j, "kvconJob", job);
	}
	return j;
}

static json_object *obj_to_json(const struct obj *o)
{
	json_object *j;
	switch (o->kind) {
	case OBJ_VM:
		return vm_json(o);
	case OBJ_EVENT:
		return event_json(o);
	default:
		j = objjson_new(o);
		break;
	}
	if (j == NULL)
		return NULL;
	if (o->kind == OBJ_VMI) {
		const struct migration_state *m = vmi_mig((const struct vmi *)o);
		json_object *st = jget(j, "status");
		if (m && m->present && st)
			json_object_object_add(st, "migrationState", mig_state_json(m));
	}
	json_object *md = jobj(j, "metadata");
	if (jget(md, "labels") == NULL)
		add_labels(md, o);
	return j;
}

/* ---- resource versions and the watch ring ---- */

static void cent_key(char *out, size_t len, const struct obj *o)
{
	snprintf(out, len, "%d/%s", (int)o->kind, o->uid);
}

static void ring_push(enum res r, const char *type, const struct obj *o, const char *text)
{
	if (S.count == S.ring_size) {
		struct wev *w = &S.ring[S.head];
		S.oldest_rv = w->rv;
		obj_free(w->o);
		free(w->text);
		S.head = (S.head + 1) % S.ring_size;
		S.count--;
	}
	struct wev *w = &S.ring[(S.head + S.count++) % S.ring_size];
	w->rv = S.rv;
	w->r = r;
	w->type = type;
	w->o = o ? obj_pack_copy(o) : NULL;
	w->text = xstrdup(text);
}

static void wake_watchers(void);

/* The served text of o, rebuilt; bumps the resourceVersion and records a watch event when it changed. */
/* Takes j (the object as served, without resourceVersion): when it differs from *body, the next resourceVersion
 * goes into *rv and j's metadata, the texts into *body and *text, and it returns true. */
static bool publish(json_object *j, char **body, char **text, uint64_t *rv)
{
	char *b = jtext(j);
	if (*body && strcmp(*body, b) == 0) {
		free(b);
		json_object_put(j);
		return false;
	}
	free(*body);
	*body = b;
	*rv = ++S.rv;
	char rvs[24];
	snprintf(rvs, sizeof rvs, "%llu", (unsigned long long)*rv);
	json_object_object_add(jobj(j, "metadata"), "resourceVersion", json_object_new_string(rvs));
	free(*text);
	*text = jtext(j);
	json_object_put(j);
	return true;
}

static void flush_gone(void *arg);

static struct cent *refresh(const struct obj *o, bool notify)
{
	char key[UID_LEN + 4];
	cent_key(key, sizeof key, o);
	struct cent *c = hmap_get(&S.cache, key);
	json_object *j = obj_to_json(o);
	if (j == NULL)
		return c;
	for (struct gone **g = &S.gone; c == NULL && *g; g = &(*g)->next)
		if (strcmp((*g)->c->key, key) == 0) { /* back in the same turn: a move, not a deletion */
			struct gone *x = *g;
			*g = x->next;
			c = x->c;
			hmap_put(&S.cache, c->key, c);
			obj_free(x->o);
			free(x->text);
			free(x);
			break;
		}
	/* a new object (another UID) under the name of one removed this turn (a restart's next VMI, its launcher):
	 * the old one's DELETED goes first, as a watch on a cluster sees it, or a client keyed by name would drop
	 * the new one */
	for (struct gone *g = S.gone; c == NULL && g; g = g->next)
		if (g->o->kind == o->kind && util_str_eq(g->o->ns, o->ns) && util_str_eq(g->o->name, o->name)) {
			flush_gone(NULL);
			break;
		}
	bool added = c == NULL;
	if (c == NULL) {
		c = xcalloc(1, sizeof *c);
		memcpy(c->key, key, sizeof key);
		hmap_put(&S.cache, c->key, c);
	}
	if (publish(j, &c->body, &c->text, &c->rv) && notify) {
		ring_push(res_of_kind(o->kind), added ? "ADDED" : "MODIFIED", o, c->text);
		wake_watchers();
	}
	return c;
}

static void vmims_update(void);

static void on_vmi_changed(void *arg)
{
	(void)arg;
	S.vmim_posted = false;
	vmims_update();
}

/* The DELETED events of the objects removed during the last loop turn that did not come back. */
static void flush_gone(void *arg)
{
	(void)arg;
	S.gone_posted = false;
	struct gone *g = S.gone;
	S.gone = NULL;
	/* oldest first, as they were removed */
	struct gone *rev = NULL;
	while (g) {
		struct gone *n = g->next;
		g->next = rev;
		rev = g;
		g = n;
	}
	for (g = rev; g;) {
		struct gone *n = g->next;
		S.rv++;
		json_object *j = json_tokener_parse(g->text);
		if (j) {
			char rv[24];
			snprintf(rv, sizeof rv, "%llu", (unsigned long long)S.rv);
			json_object_object_add(jobj(j, "metadata"), "resourceVersion", json_object_new_string(rv));
			char *text = jtext(j);
			json_object_put(j);
			ring_push(res_of_kind(g->o->kind), "DELETED", g->o, text);
			free(text);
		}
		obj_free(g->o);
		free(g->text);
		free(g->c->body);
		free(g->c->text);
		free(g->c);
		free(g);
		g = n;
	}
	wake_watchers();
}

static void on_store(void *arg, enum obj_kind kind, const struct obj *old, const struct obj *new_)
{
	(void)arg;
	if (kind == OBJ_VMI && S.vmims && !S.vmim_posted) { /* read once the store is done with this change */
		S.vmim_posted = true;
		loop_post(on_vmi_changed, NULL);
	}
	if (new_) {
		refresh(new_, true);
		return;
	}
	char key[UID_LEN + 4];
	cent_key(key, sizeof key, old);
	struct cent *c = hmap_del(&S.cache, key);
	if (c) { /* its DELETED once this turn is over, unless it comes back (refresh) */
		struct gone *g = xcalloc(1, sizeof *g);
		g->c = c;
		g->o = obj_pack_copy(old);
		g->text = xstrdup(c->text);
		g->next = S.gone;
		S.gone = g;
		if (!S.gone_posted) {
			S.gone_posted = true;
			loop_post(flush_gone, NULL);
		}
		return;
	}
	S.rv++;
	char *text = NULL;
	json_object *j = obj_to_json(old);
	if (j) {
		char rv[24];
		snprintf(rv, sizeof rv, "%llu", (unsigned long long)S.rv);
		json_object_object_add(jobj(j, "metadata"), "resourceVersion", json_object_new_string(rv));
		text = jtext(j);
		json_object_put(j);
	}
	if (text)
		ring_push(res_of_kind(old->kind), "DELETED", old, text);
	free(text);
	wake_watchers();
}

/* ---- synthesised kinds: Namespace and Node ---- */

static void fake_uid(char out[37], const char *kind, const char *name)
{
	uint32_t a = hmap_hash(kind), b = hmap_hash(name), c = hmap_hash(S.node_uid);
	snprintf(out, 37, "%08x-%04x-4%03x-8%03x-%08x%04x", a ^ c, b & 0xffff, (b >> 16) & 0xfff, (a >> 8) & 0xfff,
		 b ^ c, a & 0xffff);
}

static json_object *ns_json(const char *name)
{
	json_object *j = json_object_new_object(), *md = json_object_new_object(), *st = json_object_new_object();
	char uid[37], rv[24];
	fake_uid(uid, "Namespace", name);
	snprintf(rv, sizeof rv, "%llu", (unsigned long long)S.rv);
	json_object_object_add(j, "apiVersion", jstr("v1"));
	json_object_object_add(j, "kind", jstr("Namespace"));
	json_object_object_add(md, "name", jstr(name));
	json_object_object_add(md, "uid", jstr(uid));
	json_object_object_add(md, "resourceVersion", jstr(rv));
	json_object_object_add(md, "creationTimestamp", time_json(S.started));
	json_object *l = json_object_new_object();
	json_object *meta = NULL;
	for (size_t i = 0; i < S.nnsx && meta == NULL; i++)
		if (strcmp(S.nsx[i], name) == 0 && S.nsxmeta[i])
			meta = json_tokener_parse(S.nsxmeta[i]);
	json_object *ml = jget(meta, "labels"), *ma = jget(meta, "annotations");
	if (ml && json_object_is_type(ml, json_type_object)) {
		json_object_object_foreach(ml, k, v)
			json_object_object_add(l, k, json_object_get(v));
	}
	json_object_object_add(l, "kubernetes.io/metadata.name", jstr(name));
	json_object_object_add(md, "labels", l);
	if (ma && json_object_is_type(ma, json_type_object) && json_object_object_length(ma))
		json_object_object_add(md, "annotations", json_object_get(ma));
	if (meta)
		json_object_put(meta);
	json_object_object_add(j, "metadata", md);
	json_object_object_add(j, "spec", json_object_new_object());
	json_object_object_add(st, "phase", jstr("Active"));
	json_object_object_add(j, "status", st);
	return j;
}

static json_object *node_json(struct source *src)
{
	json_object *j = json_object_new_object(), *md = json_object_new_object(), *st = json_object_new_object();
	char uid[37], rv[24];
	fake_uid(uid, "Node", src->name);
	snprintf(rv, sizeof rv, "%llu", (unsigned long long)S.rv);
	json_object_object_add(j, "apiVersion", jstr("v1"));
	json_object_object_add(j, "kind", jstr("Node"));
	json_object_object_add(md, "name", jstr(src->name));
	json_object_object_add(md, "uid", jstr(uid));
	json_object_object_add(md, "resourceVersion", jstr(rv));
	json_object_object_add(md, "creationTimestamp", time_json(S.started));
	json_object *l = json_object_new_object();
	json_object_object_add(l, "kubernetes.io/hostname", jstr(src->name));
	json_object_object_add(l, "kubevirt.io/schedulable", jstr("true"));
	json_object_object_add(md, "labels", l);
	json_object *an = json_object_new_object();
	json_object_object_add(an, "kvcon.io/libvirt-uri", jstr(src->server));
	/* what the engine in-process showed in the dashboard's header and once a boot on stderr (KVM unusable and
	 * guests under TCG, TCG forced, unreadable records): clients show it the same (kube/kube.c) */
	if (src->notice)
		json_object_object_add(an, "kvcon.io/notice", jstr(src->notice));
	json_object_object_add(md, "annotations", an);
	json_object_object_add(j, "metadata", md);
	json_object_object_add(j, "spec", json_object_new_object());
	json_object *conds = json_object_new_array(), *c = json_object_new_object();
	bool ready = engine_ready(src);
	json_object_object_add(c, "type", jstr("Ready"));
	json_object_object_add(c, "status", jstr(ready ? "True" : "False"));
	json_object_object_add(c, "reason", jstr(ready ? "LibvirtConnected" : "LibvirtNotConnected"));
	json_object_object_add(c, "message", jstr(ready ? "libvirt is connected" : engine_error(src)));
	json_object_array_add(conds, c);
	/* unreadable VM records (kept on disk, their QEMU left running and unmanaged): named here */
	const char *problems = engine_problems(src);
	json_object *rc = json_object_new_object();
	json_object_object_add(rc, "type", jstr("RecordsReadable"));
	json_object_object_add(rc, "status", jstr(problems ? "False" : "True"));
	json_object_object_add(rc, "reason", jstr(problems ? "RecordUnreadable" : "AllRecordsRead"));
	json_object_object_add(rc, "message", jstr(problems ? problems : "every VM record reads"));
	json_object_array_add(conds, rc);
	json_object_object_add(st, "conditions", conds);
	json_object *ni = json_object_new_object();
	json_object_object_add(ni, "kubeletVersion", jstr(src->version ? src->version : ""));
	json_object_object_add(ni, "containerRuntimeVersion", jstr("libvirt"));
	json_object_object_add(ni, "operatingSystem", jstr("linux"));
	json_object_object_add(ni, "architecture", jstr("amd64"));
	json_object_object_add(st, "nodeInfo", ni);
	json_object_object_add(j, "status", st);
	return j;
}

/* ---- the engine's KubeVirt CR ---- */

/* One condition of the KubeVirt CR; its transition time changes only with its status, as virt-operator's do. */
static void kv_cond(json_object *conds, int i, const char *type, bool status, const char *reason, const char *msg)
{
	const char *st = status ? "True" : "False";
	if (strcmp(S.kv.status[i], st) != 0) {
		snprintf(S.kv.status[i], sizeof S.kv.status[i], "%s", st);
		S.kv.since[i] = util_wall_s();
	}
	json_object *c = json_object_new_object();
	json_object_object_add(c, "type", jstr(type));
	json_object_object_add(c, "status", jstr(st));
	json_object_object_add(c, "reason", jstr(reason));
	json_object_object_add(c, "message", jstr(msg));
	json_object_object_add(c, "lastProbeTime", time_json(S.kv.since[i]));
	json_object_object_add(c, "lastTransitionTime", time_json(S.kv.since[i]));
	json_object_array_add(conds, c);
}

/* kubevirt/kubevirt: the engine as KubeVirt's operator would describe its install. Deployed once the service
 * serves (its hosts have each connected or failed by then); Available while a host is ready; Degraded, naming the
 * host and the reason, while a host is not ready or holds unreadable VM records (RecordsReadable, as the node's
 * condition). */
static json_object *kv_json(void)
{
	struct buf down, bad;
	buf_init(&down);
	buf_init(&bad);
	int ready = 0;
	for (int s = 0; s < S.nsrcs; s++) {
		if (engine_ready(S.srcs[s]))
			ready++;
		else
			buf_printf(&down, "%shost %s is not ready: %s", down.len ? "; " : "", S.srcs[s]->name,
				   engine_error(S.srcs[s]) ? engine_error(S.srcs[s]) : "connecting");
		const char *p = engine_problems(S.srcs[s]);
		if (p)
			buf_printf(&bad, "%shost %s: %s", bad.len ? "; " : "", S.srcs[s]->name, p);
	}
	buf_add_char(&down, 0);
	buf_add_char(&bad, 0);
	bool degraded = ready < S.nsrcs || bad.len > 1;
	char version[64];
	snprintf(version, sizeof version, "v%s", KVCON_VERSION);

	json_object *j = json_object_new_object(), *md = json_object_new_object(), *spec = json_object_new_object(),
		    *st = json_object_new_object(), *an = json_object_new_object(), *conds = json_object_new_array();
	char uid[37];
	fake_uid(uid, "KubeVirt", KV_NAME);
	json_object_object_add(j, "apiVersion", jstr("kubevirt.io/v1"));
	json_object_object_add(j, "kind", jstr("KubeVirt"));
	json_object_object_add(md, "name", jstr(KV_NAME));
	json_object_object_add(md, "namespace", jstr(KV_NS));
	json_object_object_add(md, "uid", jstr(uid));
	json_object_object_add(md, "generation", json_object_new_int(1));
	json_object_object_add(md, "creationTimestamp", time_json(S.started));
	json_object_object_add(an, "kubevirt.io/latest-observed-api-version", jstr("v1"));
	json_object_object_add(an, "kubevirt.io/storage-observed-api-version", jstr("v1"));
	json_object_object_add(md, "annotations", an);
	json_object_object_add(j, "metadata", md);
	json_object_object_add(spec, "certificateRotateStrategy", json_object_new_object());
	json_object_object_add(spec, "configuration", json_object_new_object());
	json_object_object_add(spec, "customizeComponents", json_object_new_object());
	json_object_object_add(spec, "imagePullPolicy", jstr("IfNotPresent"));
	json_object_object_add(spec, "workloadUpdateStrategy", json_object_new_object());
	json_object_object_add(j, "spec", spec);

	const char *all = "All components are ready.";
	if (!degraded) {
		kv_cond(conds, 0, "Available", true, "AllComponentsReady", all);
		kv_cond(conds, 1, "Progressing", false, "AllComponentsReady", all);
		kv_cond(conds, 2, "Degraded", false, "AllComponentsReady", all);
	} else {
		char avail[96];
		snprintf(avail, sizeof avail, "%d of %d engine hosts ready", ready, S.nsrcs);
		kv_cond(conds, 0, "Available", ready > 0, ready > 0 ? "SomeHostsReady" : "NoHostReady", avail);
		kv_cond(conds, 1, "Progressing", false, "DeploymentCompleted", avail);
		char *why = xasprintf("%s%s%s", down.data, down.len > 1 && bad.len > 1 ? "; " : "", bad.data);
		kv_cond(conds, 2, "Degraded", true, ready < S.nsrcs ? "HostNotReady" : "RecordUnreadable", why);
		free(why);
	}
	kv_cond(conds, 3, "Created", true, "AllResourcesCreated", "All resources were created.");
	kv_cond(conds, 4, "RecordsReadable", bad.len <= 1, bad.len > 1 ? "RecordUnreadable" : "AllRecordsRead",
		bad.len > 1 ? bad.data : "every VM record reads");
	json_object_object_add(st, "phase", jstr("Deployed"));
	json_object_object_add(st, "conditions", conds);
	json_object_object_add(st, "defaultArchitecture", jstr("amd64"));
	json_object_object_add(st, "observedGeneration", json_object_new_int(1));
	json_object_object_add(st, "operatorVersion", jstr(version));
	json_object_object_add(st, "targetKubeVirtVersion", jstr(version));
	json_object_object_add(st, "observedKubeVirtVersion", jstr(version));
	json_object_object_add(st, "outdatedVirtualMachineInstanceWorkloads", json_object_new_int(0));
	json_object_object_add(j, "status", st);
	buf_free(&down);
	buf_free(&bad);
	return j;
}

/* Rebuilds the KubeVirt CR's text; a change becomes a watch event. */
static void kv_refresh(void)
{
	bool added = S.kv.body == NULL;
	if (publish(kv_json(), &S.kv.body, &S.kv.text, &S.kv.rv)) {
		ring_push(R_KV, added ? "ADDED" : "MODIFIED", NULL, S.kv.text);
		wake_watchers();
	}
}

/* The namespaces in use, "default" and the KubeVirt CR's always among them, sorted; NULL-terminated, strings borrowed (interned). */
static const char **namespaces(size_t *n)
{
	const char **out = xcalloc(3, sizeof *out);
	*n = 0;
	out[(*n)++] = "default";
	out[(*n)++] = KV_NS; /* the KubeVirt CR's */
	for (size_t i = 0; i < S.nnsx; i++) {
		if (strcmp(S.nsx[i], "default") == 0 || strcmp(S.nsx[i], KV_NS) == 0)
			continue;
		out = xreallocarray(out, *n + 2, sizeof *out);
		out[(*n)++] = S.nsx[i];
	}
	for (int s = 0; s < S.nsrcs; s++)
		for (int k = 0; k < OBJ_KIND_COUNT; k++) {
			size_t cnt;
			struct obj *const *objs = store_objs(S.st, S.srcs[s], (enum obj_kind)k, &cnt);
			for (size_t i = 0; i < cnt; i++) {
				size_t x;
				for (x = 0; x < *n && strcmp(out[x], objs[i]->ns) != 0; x++)
					;
				if (x == *n && *objs[i]->ns) {
					out = xreallocarray(out, *n + 2, sizeof *out);
					out[(*n)++] = objs[i]->ns;
				}
			}
		}
	for (size_t i = 1; i < *n; i++)
		for (size_t k = i; k > 0 && strcmp(out[k - 1], out[k]) > 0; k--) {
			const char *t = out[k];
			out[k] = out[k - 1];
			out[k - 1] = t;
		}
	return out;
}

/* ---- responses ---- */

static enum MHD_Result send_text(struct MHD_Connection *c, unsigned code, char *text, const char *ctype)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
	MHD_add_response_header(r, "Content-Type", ctype);
	MHD_add_response_header(r, "Cache-Control", "no-cache, private");
	enum MHD_Result rc = MHD_queue_response(c, code, r);
	MHD_destroy_response(r);
	return rc;
}

static enum MHD_Result send_json(struct MHD_Connection *c, unsigned code, json_object *o)
{
	char *t = jtext(o);
	json_object_put(o);
	return send_text(c, code, t, "application/json");
}

static const char *reason_of(unsigned code)
{
	switch (code) {
	case 400:
		return "BadRequest";
	case 401:
		return "Unauthorized";
	case 404:
		return "NotFound";
	case 405:
		return "MethodNotAllowed";
	case 406:
		return "NotAcceptable";
	case 409:
		return "Conflict";
	case 410:
		return "Expired";
	case 413:
		return "RequestEntityTooLarge";
	case 415:
		return "UnsupportedMediaType";
	case 422:
		return "Invalid";
	default:
		return "InternalError";
	}
}

static json_object *status_json(unsigned code, const char *reason, const char *msg, enum res r, const char *name)
{
	json_object *s = json_object_new_object();
	json_object_object_add(s, "kind", jstr("Status"));
	json_object_object_add(s, "apiVersion", jstr("v1"));
	json_object_object_add(s, "metadata", json_object_new_object());
	json_object_object_add(s, "status", jstr("Failure"));
	json_object_object_add(s, "message", jstr(msg));
	json_object_object_add(s, "reason", jstr(reason ? reason : reason_of(code)));
	if (name && r < R_COUNT) {
		json_object *d = json_object_new_object();
		json_object_object_add(d, "name", jstr(name));
		json_object_object_add(d, "group", jstr(RES[r].group));
		json_object_object_add(d, "kind", jstr(RES[r].plural));
		json_object_object_add(s, "details", d);
	}
	json_object_object_add(s, "code", json_object_new_int((int)code));
	return s;
}

static enum MHD_Result send_status(struct MHD_Connection *c, unsigned code, const char *reason, enum res r,
				   const char *name, const char *fmt, ...) __attribute__((format(printf, 6, 7)));
static enum MHD_Result send_status(struct MHD_Connection *c, unsigned code, const char *reason, enum res r,
				   const char *name, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *msg = NULL;
	if (vasprintf(&msg, fmt, ap) < 0)
		msg = NULL;
	va_end(ap);
	enum MHD_Result rc = send_json(c, code, status_json(code, reason, msg ? msg : "error", r, name));
	free(msg);
	return rc;
}

/* 422 as the API server words it: details.kind is the Kind and each cause names its field, so that kubectl prints
 * `The VirtualMachine "x" is invalid: spec.field: reason`. why is the engine's "field.path: reason". */
static enum MHD_Result send_invalid(struct MHD_Connection *c, const char *name, const char *why)
{
	char *msg = xasprintf("VirtualMachine.kubevirt.io \"%s\" is invalid: %s", name, why);
	json_object *s = status_json(422, "Invalid", msg, R_COUNT, NULL);
	json_object *d = json_object_new_object(), *causes = json_object_new_array(), *cause = json_object_new_object();
	json_object_object_add(d, "name", jstr(name));
	json_object_object_add(d, "group", jstr("kubevirt.io"));
	json_object_object_add(d, "kind", jstr("VirtualMachine"));
	const char *sep = strstr(why, ": ");
	char *field = sep ? xstrndup(why, (size_t)(sep - why)) : NULL;
	json_object_object_add(cause, "reason", jstr("FieldValueInvalid"));
	json_object_object_add(cause, "message", jstr(sep ? sep + 2 : why));
	if (field && strchr(field, ' ') == NULL)
		json_object_object_add(cause, "field", jstr(field));
	else
		json_object_object_add(cause, "message", jstr(why));
	json_object_array_add(causes, cause);
	json_object_object_add(d, "causes", causes);
	json_object_object_add(s, "details", d);
	free(field);
	free(msg);
	return send_json(c, 422, s);
}

static enum MHD_Result not_found(struct MHD_Connection *c, enum res r, const char *name)
{
	const char *g = RES[r].group;
	return send_status(c, 404, "NotFound", r, name, "%s%s%s \"%s\" not found", RES[r].plural, *g ? "." : "", g,
			   name);
}

static const char *arg(struct MHD_Connection *c, const char *k)
{
	return MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, k);
}

/* ---- Table output ---- */

static bool wants_table(struct MHD_Connection *c)
{
	const char *a = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Accept");
	if (a == NULL)
		return false;
	size_t first = strcspn(a, ",");
	char *f = xstrndup(a, first);
	bool t = strstr(f, "as=Table") && strstr(f, "v=v1") && !strstr(f, "v=v1beta1");
	free(f);
	return t;
}

struct col {
	const char *name, *type, *format;
	int priority;
};

/* VirtualMachines, VMIs, pods and events: the kinds' column tables (model/columns.c); these have none */
static const struct col COLS_NS[] = { { "Name", "string", "name", 0 }, { "Status", "string", "", 0 },
				      { "Age", "string", "", 0 }, { 0 } };
static const struct col COLS_NODE[] = { { "Name", "string", "name", 0 },	{ "Status", "string", "", 0 },
					{ "Roles", "string", "", 0 },		{ "Age", "string", "", 0 },
					{ "Version", "string", "", 0 },		{ "Internal-IP", "string", "", 1 },
					{ "External-IP", "string", "", 1 },	{ "OS-Image", "string", "", 1 },
					{ "Kernel-Version", "string", "", 1 },	{ "Container-Runtime", "string", "", 1 },
					{ 0 } };
/* KubeVirt's additionalPrinterColumns for VirtualMachineInstanceMigration */
static const struct col COLS_VMIM[] = { { "Name", "string", "name", 0 }, { "Phase", "string", "", 0 },
					{ "VMI", "string", "", 0 }, { 0 } };
/* KubeVirt's additionalPrinterColumns for KubeVirt */
static const struct col COLS_KV[] = { { "Name", "string", "name", 0 }, { "Age", "date", "", 0 },
				      { "Phase", "string", "", 0 }, { 0 } };
static const struct col *const COLS[R_COUNT] = { [R_NS] = COLS_NS, [R_NODE] = COLS_NODE, [R_VMIM] = COLS_VMIM,
						 [R_KV] = COLS_KV };

static json_object *columns_json(enum res r)
{
	if (RES[r].obj_kind >= 0)
		return columns_api_defs(columns_table((enum obj_kind)RES[r].obj_kind));
	json_object *a = json_object_new_array();
	for (const struct col *c = COLS[r]; c->name; c++) {
		json_object *d = json_object_new_object();
		json_object_object_add(d, "name", jstr(c->name));
		json_object_object_add(d, "type", jstr(c->type));
		json_object_object_add(d, "format", jstr(c->format));
		json_object_object_add(d, "description", jstr(""));
		json_object_object_add(d, "priority", json_object_new_int(c->priority));
		json_object_array_add(a, d);
	}
	return a;
}

static json_object *age_cell(const char *ts)
{
	int64_t t;
	char b[32];
	if (ts == NULL || util_parse_time(ts, &t) < 0)
		return jstr("<unknown>");
	util_human_duration(util_wall_s() - t, b, sizeof b);
	return jstr(b);
}

static json_object *cond_cell(json_object *o, const char *type)
{
	json_object *conds = jget(jget(o, "status"), "conditions");
	for (size_t i = 0; conds && json_object_is_type(conds, json_type_array) && i < json_object_array_length(conds); i++) {
		json_object *c = json_object_array_get_idx(conds, i);
		if (util_str_eq(jgets(c, "type"), type))
			return jstr(jgets(c, "status"));
	}
	return NULL;
}

static json_object *row_cells(enum res r, json_object *o)
{
	if (RES[r].obj_kind >= 0)
		return columns_api_cells(columns_table((enum obj_kind)RES[r].obj_kind), o, util_wall_s());
	json_object *a = json_object_new_array(), *md = jget(o, "metadata"), *st = jget(o, "status");
	const char *name = jgets(md, "name"), *created = jgets(md, "creationTimestamp");
#define CELL(x) json_object_array_add(a, (x))
	switch (r) {
	case R_VM:
	case R_VMI:
	case R_POD:
	case R_EVENT:
		break; /* columns_api_cells, above */
	case R_NS:
		CELL(jstr(name));
		CELL(jstr("Active"));
		CELL(age_cell(created));
		break;
	case R_NODE: {
		json_object *rc = cond_cell(o, "Ready");
		CELL(jstr(name));
		CELL(jstr(util_str_eq(json_object_get_string(rc), "True") ? "Ready" : "NotReady"));
		json_object_put(rc);
		CELL(jstr("<none>"));
		CELL(age_cell(created));
		CELL(jstr(jgets(jget(st, "nodeInfo"), "kubeletVersion")));
		CELL(jstr("<none>"));
		CELL(jstr("<none>"));
		CELL(jstr("<unknown>"));
		CELL(jstr("<unknown>"));
		CELL(jstr("libvirt"));
		break;
	}
	case R_VMIM:
		CELL(jstr(name));
		CELL(jstr(jgets(st, "phase")));
		CELL(jstr(jgets(jget(o, "spec"), "vmiName")));
		break;
	case R_KV:
		CELL(jstr(name));
		CELL(age_cell(created));
		CELL(jstr(jgets(st, "phase")));
		break;
	case R_COUNT:
		break;
	}
#undef CELL
	return a;
}

/* includeObject: None, Metadata (the default) or Object. */
static json_object *table_row(enum res r, json_object *o, const char *include)
{
	json_object *row = json_object_new_object();
	json_object_object_add(row, "cells", row_cells(r, o));
	if (util_str_eq(include, "Object"))
		json_object_object_add(row, "object", json_object_get(o));
	else if (!util_str_eq(include, "None")) {
		json_object *p = json_object_new_object();
		json_object_object_add(p, "kind", jstr("PartialObjectMetadata"));
		json_object_object_add(p, "apiVersion", jstr("meta.k8s.io/v1"));
		json_object *md = jget(o, "metadata");
		json_object_object_add(p, "metadata", md ? json_object_get(md) : json_object_new_object());
		json_object_object_add(row, "object", p);
	}
	return row;
}

static json_object *table_new(enum res r, uint64_t rv, const char *cont, bool columns)
{
	json_object *t = json_object_new_object(), *md = json_object_new_object();
	char b[24];
	snprintf(b, sizeof b, "%llu", (unsigned long long)rv);
	json_object_object_add(t, "kind", jstr("Table"));
	json_object_object_add(t, "apiVersion", jstr("meta.k8s.io/v1"));
	json_object_object_add(md, "resourceVersion", jstr(b));
	if (cont)
		json_object_object_add(md, "continue", jstr(cont));
	json_object_object_add(t, "metadata", md);
	json_object_object_add(t, "columnDefinitions", columns ? columns_json(r) : json_object_new_array());
	json_object_object_add(t, "rows", json_object_new_array());
	return t;
}

/* ---- selecting objects ---- */

struct item {
	char *key;   /* ns/name, the list's order */
	char *text;  /* JSON as served (owned) */
	json_object *j; /* parsed on demand (Table) */
};

struct filter {
	const char *ns;   /* NULL: all namespaces */
	const char *name; /* NULL: all */
	struct apisel *ls, *fs;
};

struct lookup {
	const struct obj *o; /* store objects */
	json_object *j;      /* synthesised ones */
	const char *ns, *name;
};

static const char *label_of(void *arg, const char *k)
{
	struct lookup *l = arg;
	if (l->o)
		return obj_label(l->o, k);
	return jgets(jget(jget(l->j, "metadata"), "labels"), k);
}

/* The fields kubectl selects on: every kind's metadata.name/namespace; events' involvedObject (kubectl describe),
 * pods' spec.nodeName and status.phase. */
static const char *field_of(void *arg, const char *k)
{
	struct lookup *l = arg;
	if (strcmp(k, "metadata.name") == 0)
		return l->name;
	if (strcmp(k, "metadata.namespace") == 0)
		return l->ns;
	if (l->o && l->o->kind == OBJ_EVENT) {
		const struct event *e = (const struct event *)l->o;
		if (strcmp(k, "involvedObject.name") == 0)
			return e->inv_name;
		if (strcmp(k, "involvedObject.namespace") == 0)
			return e->inv_ns ? e->inv_ns : l->o->ns;
		if (strcmp(k, "involvedObject.uid") == 0)
			return e->inv_uid;
		if (strcmp(k, "involvedObject.kind") == 0)
			return e->inv_kind;
		if (strcmp(k, "involvedObject.apiVersion") == 0)
			return "kubevirt.io/v1";
		if (strcmp(k, "type") == 0)
			return e->type;
		if (strcmp(k, "reason") == 0)
			return e->reason;
	}
	if (l->o && l->o->kind == OBJ_POD) {
		const struct pod *p = (const struct pod *)l->o;
		if (strcmp(k, "spec.nodeName") == 0)
			return p->node ? p->node : "";
		if (strcmp(k, "status.phase") == 0)
			return p->phase ? p->phase : "";
	}
	return NULL;
}

static bool field_supported(enum res r, const char *k)
{
	if (strcmp(k, "metadata.name") == 0 || strcmp(k, "metadata.namespace") == 0)
		return true;
	if (r == R_EVENT)
		return util_has_prefix(k, "involvedObject.") || strcmp(k, "type") == 0 || strcmp(k, "reason") == 0;
	if (r == R_POD)
		return strcmp(k, "spec.nodeName") == 0 || strcmp(k, "status.phase") == 0;
	return false;
}

static bool matches(const struct filter *f, struct lookup *l)
{
	if (f->ns && strcmp(f->ns, l->ns) != 0)
		return false;
	if (f->name && strcmp(f->name, l->name) != 0)
		return false;
	return apisel_match(f->ls, label_of, l) && apisel_match(f->fs, field_of, l);
}

static int cmp_item(const void *a, const void *b)
{
	return strcmp(((const struct item *)a)->key, ((const struct item *)b)->key);
}

static void add_item(struct item **items, size_t *n, const char *ns, const char *name, char *text)
{
	*items = xreallocarray(*items, *n + 1, sizeof **items);
	(*items)[*n].key = xasprintf("%s/%s", ns, name);
	(*items)[*n].text = text;
	(*items)[*n].j = NULL;
	(*n)++;
}

static void items_free(struct item *items, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(items[i].key);
		free(items[i].text);
		if (items[i].j)
			json_object_put(items[i].j);
	}
	free(items);
}

/* Every object of r that f selects, sorted by namespace/name. */
static struct item *select_items(enum res r, const struct filter *f, size_t *n)
{
	struct item *items = NULL;
	*n = 0;
	if (RES[r].obj_kind >= 0) {
		for (int s = 0; s < S.nsrcs; s++) {
			size_t cnt;
			struct obj *const *objs = store_objs(S.st, S.srcs[s], (enum obj_kind)RES[r].obj_kind, &cnt);
			for (size_t i = 0; i < cnt; i++) {
				struct lookup l = { .o = objs[i], .ns = objs[i]->ns, .name = objs[i]->name };
				if (!matches(f, &l))
					continue;
				char key[UID_LEN + 4];
				cent_key(key, sizeof key, objs[i]);
				struct cent *c = hmap_get(&S.cache, key); /* the listener keeps it current */
				if (c == NULL)
					c = refresh(objs[i], false);
				if (c)
					add_item(&items, n, objs[i]->ns, objs[i]->name, xstrdup(c->text));
			}
		}
	} else if (r == R_NS) {
		size_t nn;
		const char **names = namespaces(&nn);
		for (size_t i = 0; i < nn; i++) {
			json_object *j = ns_json(names[i]);
			struct lookup l = { .j = j, .ns = "", .name = names[i] };
			if (matches(f, &l))
				add_item(&items, n, "", names[i], jtext(j));
			json_object_put(j);
		}
		free(names);
	} else if (r == R_KV) {
		kv_refresh();
		json_object *j = json_tokener_parse(S.kv.text);
		struct lookup l = { .j = j, .ns = KV_NS, .name = KV_NAME };
		if (j && matches(f, &l))
			add_item(&items, n, KV_NS, KV_NAME, xstrdup(S.kv.text));
		if (j)
			json_object_put(j);
	} else if (r == R_VMIM) {
		for (struct vmim *m = S.vmims; m; m = m->next) {
			if (m->text == NULL)
				continue;
			json_object *j = json_tokener_parse(m->text);
			struct lookup l = { .j = j, .ns = m->ns, .name = m->name };
			if (j && matches(f, &l))
				add_item(&items, n, m->ns, m->name, xstrdup(m->text));
			if (j)
				json_object_put(j);
		}
	} else {
		for (int s = 0; s < S.nsrcs; s++) {
			json_object *j = node_json(S.srcs[s]);
			struct lookup l = { .j = j, .ns = "", .name = S.srcs[s]->name };
			if (matches(f, &l))
				add_item(&items, n, "", S.srcs[s]->name, jtext(j));
			json_object_put(j);
		}
	}
	if (*n > 1)
		qsort(items, *n, sizeof *items, cmp_item);
	return items;
}

static int parse_filter(struct MHD_Connection *c, enum res r, struct filter *f, char **err)
{
	f->ls = apisel_parse(arg(c, "labelSelector"), false, err);
	if (f->ls == NULL)
		return -1;
	f->fs = apisel_parse(arg(c, "fieldSelector"), true, err);
	if (f->fs == NULL)
		return -1;
	for (size_t i = 0; i < f->fs->n; i++)
		if (!field_supported(r, f->fs->reqs[i].key)) {
			*err = xasprintf("field label not supported: %s", f->fs->reqs[i].key);
			return -1;
		}
	return 0;
}

static void filter_free(struct filter *f)
{
	apisel_free(f->ls);
	apisel_free(f->fs);
}

/* ---- get and list ---- */

static enum MHD_Result get_one(struct MHD_Connection *c, enum res r, const char *ns, const char *name)
{
	struct filter f = { .ns = RES[r].namespaced ? ns : NULL, .name = name };
	size_t n;
	struct item *items = select_items(r, &f, &n);
	if (n == 0) {
		items_free(items, n);
		return not_found(c, r, name);
	}
	enum MHD_Result rc;
	if (wants_table(c)) {
		json_object *o = json_tokener_parse(items[0].text);
		json_object *t = table_new(r, S.rv, NULL, true);
		json_object_array_add(jget(t, "rows"), table_row(r, o, arg(c, "includeObject")));
		json_object_put(o);
		rc = send_json(c, 200, t);
	} else {
		rc = send_text(c, 200, items[0].text, "application/json");
		items[0].text = NULL;
	}
	items_free(items, n);
	return rc;
}

static enum MHD_Result list(struct MHD_Connection *c, enum res r, const char *ns)
{
	struct filter f = { .ns = ns };
	char *err = NULL;
	if (parse_filter(c, r, &f, &err) < 0) {
		filter_free(&f);
		enum MHD_Result rc = send_status(c, 400, "BadRequest", R_COUNT, NULL, "%s", err);
		free(err);
		return rc;
	}
	const char *lim = arg(c, "limit"), *cont = arg(c, "continue");
	long limit = lim ? strtol(lim, NULL, 10) : 0;
	char *after = NULL;
	uint64_t crv = 0;
	if (cont && *cont && apisel_continue_decode(cont, &crv, &after) < 0) {
		filter_free(&f);
		return send_status(c, 400, "BadRequest", R_COUNT, NULL, "invalid continue token");
	}
	if (cont && *cont && crv < S.oldest_rv) {
		free(after);
		filter_free(&f);
		return send_status(c, 410, "Expired", R_COUNT, NULL,
				   "The provided continue parameter is too old to display a consistent list result. You "
				   "can start a new list without the continue parameter.");
	}
	size_t n;
	struct item *items = select_items(r, &f, &n);
	filter_free(&f);
	size_t start = 0;
	if (after)
		while (start < n && strcmp(items[start].key, after) <= 0)
			start++;
	free(after);
	size_t end = n;
	char *next = NULL;
	if (limit > 0 && n - start > (size_t)limit) {
		end = start + (size_t)limit;
		next = apisel_continue_encode(crv ? crv : S.rv, items[end - 1].key);
	}
	enum MHD_Result rc;
	if (wants_table(c)) {
		json_object *t = table_new(r, S.rv, next, true), *rows = jget(t, "rows");
		const char *inc = arg(c, "includeObject");
		for (size_t i = start; i < end; i++) {
			json_object *o = json_tokener_parse(items[i].text);
			json_object_array_add(rows, table_row(r, o, inc));
			json_object_put(o);
		}
		if (next)
			json_object_object_add(jget(t, "metadata"), "remainingItemCount",
					       json_object_new_int64((int64_t)(n - end)));
		rc = send_json(c, 200, t);
	} else {
		struct buf b;
		buf_init(&b);
		buf_printf(&b, "{\"kind\":\"%sList\",\"apiVersion\":\"%s\",\"metadata\":{\"resourceVersion\":\"%llu\"",
			   RES[r].kind, api_version(r), (unsigned long long)S.rv);
		if (next)
			buf_printf(&b, ",\"continue\":\"%s\",\"remainingItemCount\":%zu", next, n - end);
		buf_add_str(&b, "},\"items\":[");
		for (size_t i = start; i < end; i++) {
			if (i > start)
				buf_add_char(&b, ',');
			buf_add_str(&b, items[i].text);
		}
		buf_add_str(&b, "]}");
		buf_add_char(&b, 0);
		rc = send_text(c, 200, buf_steal(&b), "application/json");
	}
	free(next);
	items_free(items, n);
	return rc;
}

/* ---- watch ---- */

static void watcher_event(struct watcher *w, const char *type, const char *text)
{
	if (w->table) {
		json_object *o = json_tokener_parse(text);
		json_object *t = table_new(w->r, S.rv, NULL, !w->sent_columns);
		w->sent_columns = true;
		json_object_array_add(jget(t, "rows"), table_row(w->r, o, "Metadata"));
		json_object_put(o);
		char *tt = jtext(t);
		json_object_put(t);
		buf_printf(&w->out, "{\"type\":\"%s\",\"object\":%s}\n", type, tt);
		free(tt);
	} else
		buf_printf(&w->out, "{\"type\":\"%s\",\"object\":%s}\n", type, text);
}

static bool watcher_matches(struct watcher *w, const struct wev *e)
{
	if (e->r != w->r)
		return false;
	struct filter f = { .ns = w->ns, .name = w->name, .ls = w->ls, .fs = w->fs };
	if (e->o == NULL) { /* a migration or the KubeVirt CR: its text says the rest */
		json_object *j = json_tokener_parse(e->text), *md = jget(j, "metadata");
		struct lookup l = { .j = j, .ns = jgets(md, "namespace"), .name = jgets(md, "name") };
		bool ok = j && l.ns && l.name && matches(&f, &l);
		if (j)
			json_object_put(j);
		return ok;
	}
	struct lookup l = { .o = e->o, .ns = e->o->ns, .name = e->o->name };
	return matches(&f, &l);
}

/* Moves the ring's events after w->rv into w's output. */
static void watcher_fill(struct watcher *w)
{
	for (size_t i = 0; i < S.count; i++) {
		const struct wev *e = &S.ring[(S.head + i) % S.ring_size];
		if (e->rv <= w->rv)
			continue;
		if (watcher_matches(w, e))
			watcher_event(w, e->type, e->text);
		w->rv = e->rv;
	}
	if (w->rv < S.rv)
		w->rv = S.rv;
}

static void watcher_bookmark(struct watcher *w)
{
	buf_printf(&w->out,
		   "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"%s\",\"apiVersion\":\"%s\",\"metadata\":"
		   "{\"resourceVersion\":\"%llu\"}}}\n",
		   w->table ? "Table" : RES[w->r].kind, w->table ? "meta.k8s.io/v1" : api_version(w->r),
		   (unsigned long long)w->rv);
}

static void wake(struct watcher *w)
{
	loop_fd_remove(w->gone);
	w->gone = NULL;
	if (w->suspended) {
		w->suspended = false;
		MHD_resume_connection(w->c);
	}
}

static void wake_watchers(void)
{
	for (struct watcher *w = S.watchers; w; w = w->next)
		wake(w);
}

/* A suspended watch's socket turned readable: a client that left (EOF) ends the watch now, not at the next
 * event or bookmark written to it. Departed clients (every kvcon command lists and watches) otherwise pile up to
 * the connection limit, and new connections, a console's too, wait in the listen queue meanwhile. */
static void watch_peer(int fd, short revents, void *arg)
{
	struct watcher *w = arg;
	char b;
	ssize_t n = recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
	if (n > 0 && !(revents & (POLLHUP | POLLERR))) { /* bytes from the client (pipelined): MHD reads them */
		loop_fd_remove(w->gone);
		w->gone = NULL;
		return;
	}
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) && !(revents & (POLLHUP | POLLERR)))
		return;
	w->ended = true;
	wake(w);
}

static ssize_t watch_read(void *cls, uint64_t pos, char *out, size_t max)
{
	(void)pos;
	struct watcher *w = cls;
	if (w->out.len == 0 && !w->ended) {
		watcher_fill(w);
		uint64_t now = util_now_ms();
		if (w->out.len == 0 && w->bookmarks && now >= w->next_bookmark_ms) {
			watcher_bookmark(w);
			w->next_bookmark_ms = now + BOOKMARK_MS;
		}
		if (w->deadline_ms && now >= w->deadline_ms)
			w->ended = true;
	}
	if (w->out.len == 0) {
		if (w->ended)
			return MHD_CONTENT_READER_END_OF_STREAM;
		w->suspended = true;
		MHD_suspend_connection(w->c);
		const union MHD_ConnectionInfo *ci = MHD_get_connection_info(w->c, MHD_CONNECTION_INFO_CONNECTION_FD);
		if (ci && ci->connect_fd != MHD_INVALID_SOCKET && w->gone == NULL)
			w->gone = loop_fd_add(ci->connect_fd, POLLIN, watch_peer, w);
		return 0;
	}
	size_t n = w->out.len < max ? w->out.len : max;
	memcpy(out, w->out.data, n);
	buf_consume(&w->out, n);
	return (ssize_t)n;
}

static void watch_free(void *cls)
{
	struct watcher *w = cls;
	loop_fd_remove(w->gone);
	for (struct watcher **p = &S.watchers; *p; p = &(*p)->next)
		if (*p == w) {
			*p = w->next;
			break;
		}
	free(w->ns);
	free(w->name);
	apisel_free(w->ls);
	apisel_free(w->fs);
	buf_free(&w->out);
	free(w);
}

static enum MHD_Result watch(struct MHD_Connection *c, enum res r, const char *ns, const char *name)
{
	struct filter f = { .ns = ns, .name = name };
	char *err = NULL;
	if (parse_filter(c, r, &f, &err) < 0) {
		filter_free(&f);
		enum MHD_Result rc = send_status(c, 400, "BadRequest", R_COUNT, NULL, "%s", err);
		free(err);
		return rc;
	}
	uint64_t rv;
	if (apisel_rv_parse(arg(c, "resourceVersion"), &rv) < 0) {
		filter_free(&f);
		return send_status(c, 400, "BadRequest", R_COUNT, NULL, "resourceVersion: not a resource version");
	}
	if (rv > 0 && (rv < S.oldest_rv || rv > S.rv)) {
		filter_free(&f);
		return send_status(c, 410, "Expired", R_COUNT, NULL, "too old resource version: %llu (%llu)",
				   (unsigned long long)rv, (unsigned long long)S.oldest_rv);
	}
	struct watcher *w = xcalloc(1, sizeof *w);
	w->c = c;
	w->r = r;
	w->ns = xstrdup0(ns);
	w->name = xstrdup0(name);
	w->ls = f.ls;
	w->fs = f.fs;
	w->table = wants_table(c);
	const char *bm = arg(c, "allowWatchBookmarks");
	w->bookmarks = bm && (strcmp(bm, "true") == 0 || strcmp(bm, "1") == 0);
	w->next_bookmark_ms = util_now_ms() + BOOKMARK_MS;
	const char *ts = arg(c, "timeoutSeconds");
	if (ts && atol(ts) > 0)
		w->deadline_ms = util_now_ms() + (uint64_t)atol(ts) * 1000;
	buf_init(&w->out);
	if (rv == 0) {
		/* a watch from "now" starts with the current objects as ADDED, as the API server's does */
		size_t n;
		struct filter ff = { .ns = ns, .name = name, .ls = w->ls, .fs = w->fs };
		struct item *items = select_items(r, &ff, &n);
		for (size_t i = 0; i < n; i++)
			watcher_event(w, "ADDED", items[i].text);
		items_free(items, n);
		w->rv = S.rv;
	} else
		w->rv = rv;
	w->next = S.watchers;
	S.watchers = w;
	struct MHD_Response *resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64 * 1024, watch_read, w,
								       watch_free);
	MHD_add_response_header(resp, "Content-Type", "application/json");
	MHD_add_response_header(resp, "Cache-Control", "no-cache, private");
	enum MHD_Result rc = MHD_queue_response(c, 200, resp);
	MHD_destroy_response(resp);
	return rc;
}

static void vmims_settle_loaded(void);
static void idle_check(uint64_t now);

static void on_tick(void *arg)
{
	(void)arg;
	S.tick = loop_timer_add(1000, on_tick, NULL);
	kv_refresh(); /* hosts come and go, records turn unreadable: the KubeVirt CR's status follows within 1 s */
	vmims_settle_loaded();
	uint64_t now = util_now_ms();
	for (struct watcher *w = S.watchers; w; w = w->next)
		if ((w->bookmarks && now >= w->next_bookmark_ms) || (w->deadline_ms && now >= w->deadline_ms))
			wake(w);
	apigate_expire(now);
	idle_check(now);
}

/* ---- writes ---- */

static struct source *source_of(const char *ns, const char *name)
{
	for (int s = 0; s < S.nsrcs; s++)
		if (store_find(S.st, S.srcs[s], OBJ_VM, ns, name))
			return S.srcs[s];
	return NULL;
}

static enum MHD_Result reply_object(struct MHD_Connection *c, unsigned code, enum res r, const char *ns,
				    const char *name)
{
	for (int s = 0; s < S.nsrcs; s++) {
		struct obj *o = store_find(S.st, S.srcs[s], (enum obj_kind)RES[r].obj_kind, ns, name);
		if (o) {
			struct cent *ce = refresh(o, true);
			if (ce)
				return send_text(c, code, xstrdup(ce->text), "application/json");
		}
	}
	return not_found(c, r, name);
}

/* The manifest text for the engine: the object without server-owned fields. */
static char *manifest_text(json_object *o)
{
	json_object_object_del(o, "status");
	json_object *md = jget(o, "metadata");
	const char *drop[] = { "uid", "resourceVersion", "creationTimestamp", "generation", "managedFields",
			       "deletionTimestamp", "selfLink" };
	for (size_t i = 0; md && i < sizeof drop / sizeof drop[0]; i++)
		json_object_object_del(md, drop[i]);
	return jtext(o);
}

static enum MHD_Result do_apply(struct MHD_Connection *c, json_object *o, const char *ns, const char *name,
				unsigned ok_code)
{
	char *text = manifest_text(o);
	struct source *src = source_of(ns, name);
	if (src == NULL)
		src = S.srcs[0];
	char *result = NULL, *err = NULL;
	const char *dry = arg(c, "dryRun");
	if (dry) {
		/* validated as an apply would, nothing stored; the answer is the object as sent */
		struct manifest *m = manifest_parse(text, strlen(text), &err);
		manifest_free(m);
		free(text);
		if (m == NULL) {
			enum MHD_Result r = send_invalid(c, name, err ? err : "refused");
			free(err);
			return r;
		}
		return send_json(c, ok_code, json_object_get(o));
	}
	int rc = engine_apply(src, text, strlen(text), &result, &err);
	free(text);
	free(result);
	if (rc < 0 && err && util_has_prefix(err, "cannot store the record")) {
		/* the manifest is fine, the disk is not (ENOSPC, EIO): the API server's answer to a failed write */
		enum MHD_Result r = send_status(c, 500, "InternalError", R_VM, name, "Internal error occurred: %s", err);
		free(err);
		return r;
	}
	if (rc < 0) {
		enum MHD_Result r = send_invalid(c, name, err ? err : "refused");
		free(err);
		return r;
	}
	return reply_object(c, ok_code, R_VM, ns, name);
}

/* The request body as a JSON object, or NULL after replying 400/413. */
static json_object *body_json(struct MHD_Connection *c, struct reqctx *rq, enum MHD_Result *rc)
{
	if (rq->too_big) {
		*rc = send_status(c, 413, NULL, R_COUNT, NULL, "the request body is larger than %u bytes", MAX_BODY);
		return NULL;
	}
	const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
	if (ct && (strstr(ct, "protobuf") || strstr(ct, "cbor") || strstr(ct, "yaml"))) {
		/* JSON only: client-go sends its typed objects again as JSON after a 415 */
		*rc = send_status(c, 415, "UnsupportedMediaType", R_COUNT, NULL,
				  "the body of the request was in an unknown format - accepted media types include: "
				  "application/json, application/merge-patch+json");
		return NULL;
	}
	buf_add_char(&rq->body, 0);
	json_tokener *tok = json_tokener_new_ex(64);
	json_object *o = json_tokener_parse_ex(tok, rq->body.data, (int)rq->body.len);
	enum json_tokener_error e = json_tokener_get_error(tok);
	json_tokener_free(tok);
	if (o == NULL || e != json_tokener_success || !json_object_is_type(o, json_type_object)) {
		if (o)
			json_object_put(o);
		*rc = send_status(c, 400, "BadRequest", R_COUNT, NULL, "the request body is not a JSON object");
		return NULL;
	}
	return o;
}

static bool ns_exists(const char *name);

static enum MHD_Result create_vm(struct MHD_Connection *c, struct reqctx *rq, const char *ns)
{
	enum MHD_Result rc;
	json_object *o = body_json(c, rq, &rc);
	if (o == NULL)
		return rc;
	const char *kind = jgets(o, "kind");
	json_object *md = jget(o, "metadata");
	const char *name = jgets(md, "name"), *mns = jgets(md, "namespace");
	if (kind && strcmp(kind, "VirtualMachine") != 0)
		rc = send_status(c, 400, "BadRequest", R_COUNT, NULL, "kind %s does not match virtualmachines", kind);
	else if (name == NULL || !manifest_dns_subdomain(name))
		rc = send_invalid(c, name ? name : "", "metadata.name: Invalid value: a lowercase RFC 1123 subdomain is required");
	else if (mns && strcmp(mns, ns) != 0)
		rc = send_status(c, 400, "BadRequest", R_COUNT, NULL,
				 "the namespace of the provided object does not match the namespace sent on the request");
	else if (!ns_exists(ns))
		rc = send_status(c, 404, "NotFound", R_NS, ns, "namespaces \"%s\" not found", ns);
	else if (source_of(ns, name))
		rc = send_status(c, 409, "AlreadyExists", R_VM, name, "virtualmachines.kubevirt.io \"%s\" already exists", name);
	else {
		char *nm = xstrdup(name);
		json_object_object_add(jobj(o, "metadata"), "namespace", json_object_new_string(ns));
		rc = do_apply(c, o, ns, nm, 201);
		free(nm);
	}
	json_object_put(o);
	return rc;
}

/* The VM as stored (its manifest), for a patch or an update: NULL when absent. */
static json_object *current_manifest(const char *ns, const char *name)
{
	for (int s = 0; s < S.nsrcs; s++) {
		struct evm *v = evm_find(S.srcs[s], ns, name);
		if (v && !v->deleting)
			return manifest_json(v->text);
	}
	return NULL;
}

static bool rv_conflict(json_object *o, const char *ns, const char *name)
{
	const char *want = jgets(jget(o, "metadata"), "resourceVersion");
	if (want == NULL || *want == 0)
		return false;
	for (int s = 0; s < S.nsrcs; s++) {
		struct obj *x = store_find(S.st, S.srcs[s], OBJ_VM, ns, name);
		if (x) {
			struct cent *ce = refresh(x, true);
			char b[24];
			snprintf(b, sizeof b, "%llu", (unsigned long long)(ce ? ce->rv : 0));
			return strcmp(b, want) != 0;
		}
	}
	return false;
}

static enum MHD_Result patch_vm(struct MHD_Connection *c, struct reqctx *rq, const char *ns, const char *name,
				bool replace)
{
	enum MHD_Result rc;
	const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
	if (!replace && ct && strstr(ct, "json-patch+json"))
		return send_status(c, 415, "UnsupportedMediaType", R_COUNT, NULL,
				   "the body of the request was in an unknown format - accepted media types include: "
				   "application/merge-patch+json, application/strategic-merge-patch+json");
	json_object *cur = current_manifest(ns, name);
	if (cur == NULL) {
		/* a row without a manifest: its record is unreadable (the row's Failure condition names the file) */
		struct source *src = source_of(ns, name);
		const struct vm *bad = src ? (const struct vm *)store_find(S.st, src, OBJ_VM, ns, name) : NULL;
		const struct cond *f = bad ? cond_find(bad->conds, bad->nconds, "Failure") : NULL;
		if (f && util_str_eq(f->reason, "RecordUnreadable"))
			return send_status(c, 409, "Conflict", R_VM, name, "%s: move it away first",
					   f->message ? f->message : "its record is unreadable");
		return not_found(c, R_VM, name);
	}
	json_object *p = body_json(c, rq, &rc);
	if (p == NULL) {
		json_object_put(cur);
		return rc;
	}
	if (rv_conflict(p, ns, name)) {
		json_object_put(cur);
		json_object_put(p);
		return send_status(c, 409, "Conflict", R_VM, name,
				   "Operation cannot be fulfilled on virtualmachines.kubevirt.io \"%s\": the object has been "
				   "modified; please apply your changes to the latest version and try again",
				   name);
	}
	json_object *res = replace ? json_object_get(p) : apisel_merge_patch(json_object_get(cur), p);
	json_object_put(cur);
	json_object_put(p);
	json_object *md = jobj(res, "metadata");
	if ((jgets(md, "name") && strcmp(jgets(md, "name"), name) != 0) ||
	    (jgets(md, "namespace") && strcmp(jgets(md, "namespace"), ns) != 0)) {
		json_object_put(res);
		return send_status(c, 400, "BadRequest", R_COUNT, NULL, "the name or namespace of the object may not change");
	}
	json_object_object_add(md, "name", json_object_new_string(name));
	json_object_object_add(md, "namespace", json_object_new_string(ns));
	rc = do_apply(c, res, ns, name, 200);
	json_object_put(res);
	return rc;
}

static void action_done(void *arg, int status, const char *message)
{
	(void)arg;
	if (status != 0)
		log_warn("engine serve: an action ended with %d: %s", status, message ? message : "");
}

/* A grace period from the query or a DeleteOptions / StopOptions body; -1 when none. */
static int grace_of(struct MHD_Connection *c, struct reqctx *rq, const char *key)
{
	const char *q = arg(c, "gracePeriodSeconds");
	if (q && *q)
		return atoi(q);
	if (rq->body.len == 0 || rq->too_big)
		return -1;
	buf_add_char(&rq->body, 0);
	json_object *o = json_tokener_parse(rq->body.data);
	rq->body.len--;
	json_object *g = jget(o, key);
	int v = g && json_object_is_type(g, json_type_int) ? json_object_get_int(g) : -1;
	if (o)
		json_object_put(o);
	return v < 0 ? -1 : v;
}

/* dryRun as a query parameter (create, patch) or in the body's DeleteOptions / options (delete, subresources). */
static bool dry_run(struct MHD_Connection *c, struct reqctx *rq)
{
	if (arg(c, "dryRun"))
		return true;
	if (rq->body.len == 0 || rq->too_big)
		return false;
	buf_add_char(&rq->body, 0);
	json_object *o = json_tokener_parse(rq->body.data);
	rq->body.len--;
	json_object *d = jget(o, "dryRun");
	bool dry = d && json_object_is_type(d, json_type_array) && json_object_array_length(d) > 0;
	if (o)
		json_object_put(o);
	return dry;
}

static enum MHD_Result act(struct MHD_Connection *c, struct reqctx *rq, enum res r, enum action a, const char *ns,
			   const char *name, int grace, const char *target, unsigned ok_code, bool reply_obj)
{
	struct source *src = source_of(ns, name);
	if (src == NULL)
		return not_found(c, r == R_VM ? R_VM : R_VMI, name);
	if (dry_run(c, rq)) /* nothing is done */
		return reply_obj ? reply_object(c, ok_code, r, ns, name) : send_text(c, ok_code, xstrdup(""), "text/plain");
	struct action_req req = { .act = a, .ns = ns, .name = name, .grace_period = grace, .target = target };
	if (a == ACT_DELETE && util_str_eq(arg(c, "deleteVolumes"), "true"))
		req.flags |= ACTION_DELETE_VOLUMES; /* the engine's extension: the VM's disks go too */
	if (a == ACT_STOP && grace == 0)
		req.act = ACT_FORCE_STOP;
	char *err = NULL;
	if (src->ops->action(src, &req, action_done, NULL, &err) < 0) {
		enum MHD_Result rc = send_status(c, 409, "Conflict", r, name, "%s", err ? err : "refused");
		free(err);
		return rc;
	}
	if (reply_obj)
		return reply_object(c, ok_code, r, ns, name);
	return send_text(c, ok_code, xstrdup(""), "text/plain");
}

static enum MHD_Result migrate_sub(struct MHD_Connection *c, struct reqctx *rq, const char *ns, const char *name);

static enum MHD_Result subresource(struct MHD_Connection *c, struct reqctx *rq, enum res r, const char *ns,
				   const char *name, const char *sub)
{
	/* the action whose subresource of this kind it is (model/registry.c) */
	const struct action_def *ad;
	for (size_t i = 0; (ad = registry_action_at(i)) != NULL; i++)
		if (ad->verb && ad->subresource && ad->on == RES_ROWS[r].kind && strcmp(ad->subresource, sub) == 0)
			break;
	unsigned ok = r == R_VM ? 202 : 200; /* virt-api's codes: accepted for a VM's, OK for a VMI's */
	if (ad && ad->act == ACT_MIGRATE)
		return migrate_sub(c, rq, ns, name);
	if (ad && ad->act == ACT_STOP)
		return act(c, rq, r, ACT_STOP, ns, name, grace_of(c, rq, "gracePeriod"), NULL, ok, false);
	if (ad && ad->act == ACT_RESTART)
		return act(c, rq, r, ACT_RESTART, ns, name, grace_of(c, rq, "gracePeriodSeconds"), NULL, ok, false);
	if (ad)
		return act(c, rq, r, ad->act, ns, name, -1, NULL, ok, false);
	return send_status(c, 404, "NotFound", R_COUNT, NULL, "the server could not find the requested resource");
}

/* ---- VirtualMachineInstanceMigration ---- */

static bool valid_name(const char *s);
static bool vmim_final(const struct vmim *m);
static const struct migration_state *vmim_state(const struct vmim *m);
static void vmim_refresh(struct vmim *m, const char *type);

static void vmim_free(struct vmim *m)
{
	free(m->ns);
	free(m->name);
	free(m->vmi);
	free(m->target);
	free(m->mig_uri);
	free(m->reason);
	free(m->body);
	free(m->text);
	if (m->labels)
		json_object_put(m->labels);
	if (m->annotations)
		json_object_put(m->annotations);
	free(m);
}

static struct vmim *vmim_find(const char *ns, const char *name)
{
	for (struct vmim *m = S.vmims; m; m = m->next)
		if (strcmp(m->ns, ns) == 0 && strcmp(m->name, name) == 0)
			return m;
	return NULL;
}

static const struct vmi *vmi_of(const char *ns, const char *name)
{
	for (int s = 0; s < S.nsrcs; s++) {
		struct obj *o = store_find(S.st, S.srcs[s], OBJ_VMI, ns, name);
		if (o)
			return (const struct vmi *)o;
	}
	return NULL;
}

/* The engine's migration options, which KubeVirt's object has no field for: annotations of the
 * VirtualMachineInstanceMigration (docs/ENGINE-SERVICE.md, what is not KubeVirt-compatible):
 *   kvcon.io/migrate-uri         the target's libvirt URI as the source host reaches it (SCHEME://...)
 *   kvcon.io/migration-timeout   seconds, 1..604800: aborted when not completed by then
 *   kvcon.io/migration-bandwidth MiB/s, 1..1048576
 *   kvcon.io/migration-options   a comma list of auto-converge, postcopy, copy-storage, offline
 * Other kvcon.io/migrat* annotations are refused (a misspelt option must not be ignored silently). A migrate-uri
 * from anyone but the host's owner must be one the owner configured. 0, or -1 with *why (caller frees). */
static int vmim_opts(json_object *an, struct vmim *m, bool owner, char **why)
{
	if (an == NULL || !json_object_is_type(an, json_type_object))
		return 0;
	json_object_object_foreach(an, key, val)
	{
		if (strncmp(key, "kvcon.io/migrat", 15) != 0)
			continue;
		const char *v = json_object_is_type(val, json_type_string) ? json_object_get_string(val) : NULL;
		if (v == NULL) {
			*why = xasprintf("metadata.annotations[%s]: Invalid value: a string is required", key);
			return -1;
		}
		char *end = NULL;
		if (strcmp(key, "kvcon.io/migrate-uri") == 0) {
			size_t sl = strspn(v, "abcdefghijklmnopqrstuvwxyz0123456789+.-");
			bool ok = sl > 0 && strncmp(v + sl, "://", 3) == 0 && strlen(v) <= 1024;
			for (const unsigned char *p = (const unsigned char *)v; ok && *p; p++)
				ok = *p > 0x20 && *p < 0x7f;
			if (!ok) {
				*why = xstrdup("metadata.annotations[kvcon.io/migrate-uri]: Invalid value: a URI "
					       "(SCHEME://HOST..., printable ASCII, no spaces, at most 1024 characters) is required");
				return -1;
			}
			/* libvirt may run a program a URI names (+ext, command=): only the host's owner chooses one */
			bool known = owner || migrate_uri_configured(v);
			for (int s = 0; s < S.nsrcs && !known; s++)
				known = util_str_eq(S.srcs[s]->server, v);
			if (!known) {
				char *e = util_escape_display(v);
				*why = xasprintf("metadata.annotations[kvcon.io/migrate-uri]: Forbidden: %s is not a URI this "
						 "host's owner configured (an engine.host line, or its migrate-uri=, in the config "
						 "file of the engine service's user, or a host it serves)", e);
				free(e);
				return -1;
			}
			free(m->mig_uri);
			m->mig_uri = xstrdup(v);
		} else if (strcmp(key, "kvcon.io/migration-timeout") == 0) {
			errno = 0;
			long n = strtol(v, &end, 10);
			if (errno || end == v || *end || n < 1 || n > 604800) {
				*why = xstrdup("metadata.annotations[kvcon.io/migration-timeout]: Invalid value: whole seconds "
					       "from 1 to 604800 are required");
				return -1;
			}
			m->timeout = (int)n;
		} else if (strcmp(key, "kvcon.io/migration-bandwidth") == 0) {
			errno = 0;
			long n = strtol(v, &end, 10);
			if (errno || end == v || *end || n < 1 || n > 1048576) {
				*why = xstrdup("metadata.annotations[kvcon.io/migration-bandwidth]: Invalid value: MiB/s from 1 "
					       "to 1048576 are required");
				return -1;
			}
			m->bandwidth = (unsigned long)n;
		} else if (strcmp(key, "kvcon.io/migration-options") == 0) {
			static const struct {
				const char *name;
				uint32_t flag;
			} known[] = { { "auto-converge", ENGINE_MIG_AUTO_CONVERGE },
				      { "postcopy", ENGINE_MIG_POSTCOPY },
				      { "copy-storage", ENGINE_MIG_COPY_STORAGE },
				      { "offline", ENGINE_MIG_OFFLINE } };
			for (const char *p = v; *p;) {
				size_t l = strcspn(p, ",");
				bool found = false;
				for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
					if (l == strlen(known[i].name) && strncmp(p, known[i].name, l) == 0) {
						m->flags |= known[i].flag;
						found = true;
					}
				if (!found) {
					*why = xstrdup("metadata.annotations[kvcon.io/migration-options]: Invalid value: a comma "
						       "list of auto-converge, postcopy, copy-storage, offline is required");
					return -1;
				}
				p += l;
				if (*p == ',')
					p++;
			}
		} else {
			char *k = util_escape_display(key);
			*why = xasprintf("metadata.annotations[%s]: Unsupported value: the engine's migration annotations are "
					 "kvcon.io/migrate-uri, kvcon.io/migration-timeout, kvcon.io/migration-bandwidth and "
					 "kvcon.io/migration-options", k);
			free(k);
			return -1;
		}
	}
	return 0;
}

/* The engine's state of m's migration: the VMI's migrationState when it is this migration's, else NULL. */
static const struct migration_state *vmim_state(const struct vmim *m)
{
	const struct vmi *v = m->mig_uid[0] ? vmi_of(m->ns, m->vmi) : NULL;
	const struct migration_state *ms = v ? vmi_mig(v) : NULL;
	return ms && ms->present && strcmp(ms->migration_uid, m->mig_uid) == 0 ? ms : NULL;
}

static bool vmim_final(const struct vmim *m)
{
	return util_str_eq(m->phase, "Succeeded") || util_str_eq(m->phase, "Failed");
}

/* KubeVirt's phase from the engine's state: pre-flight checks pass before the migration exists (Scheduling and
 * Scheduled are instantaneous here), no job figures yet is the target being prepared, figures are Running. */
static const char *vmim_phase_now(struct vmim *m)
{
	if (vmim_final(m))
		return m->phase;
	const struct migration_state *ms = vmim_state(m);
	if (ms && ms->completed)
		return "Succeeded";
	if (ms && ms->failed) {
		if (m->reason == NULL && ms->failure_reason)
			m->reason = xstrdup(ms->failure_reason);
		return "Failed";
	}
	if (m->done)
		return m->done > 0 ? "Succeeded" : "Failed";
	if (ms == NULL)
		return m->phase;
	if (ms->iteration > 0 || ms->data_processed > 0 || ms->progress_pct > 0)
		return "Running";
	return "PreparingTarget";
}

static void vmim_set_phase(struct vmim *m, const char *phase)
{
	if (util_str_eq(m->phase, phase))
		return;
	/* the steps a jump skips are recorded too, as KubeVirt's controller passes through them */
	static const char *const order[] = { "Pending",	       "Scheduling", "Scheduled", "PreparingTarget",
					     "TargetReady",    "Running",    "Succeeded" };
	int from = -1, to = -1;
	for (int i = 0; i < 7; i++) {
		if (util_str_eq(order[i], m->phase))
			from = i;
		if (util_str_eq(order[i], phase))
			to = i;
	}
	int64_t now = util_wall_s();
	for (int i = from + 1; from >= 0 && to > from && i < to && m->ntrans < VMIM_NPHASE; i++) {
		m->tphase[m->ntrans] = order[i];
		m->tstamp[m->ntrans++] = now;
	}
	if (m->ntrans < VMIM_NPHASE) {
		m->tphase[m->ntrans] = phase;
		m->tstamp[m->ntrans++] = now;
	}
	m->phase = phase;
}

static json_object *vmim_json(const struct vmim *m)
{
	json_object *j = json_object_new_object(), *md = json_object_new_object(), *spec = json_object_new_object(),
		    *st = json_object_new_object();
	json_object_object_add(j, "apiVersion", jstr("kubevirt.io/v1"));
	json_object_object_add(j, "kind", jstr("VirtualMachineInstanceMigration"));
	json_object_object_add(md, "name", jstr(m->name));
	json_object_object_add(md, "namespace", jstr(m->ns));
	json_object_object_add(md, "uid", jstr(m->uid));
	json_object_object_add(md, "creationTimestamp", time_json(m->created));
	json_object *l = m->labels ? json_object_get(m->labels) : json_object_new_object();
	json_object_object_add(l, "kubevirt.io/vmi-name", jstr(m->vmi));
	json_object_object_add(md, "labels", l);
	if (m->annotations)
		json_object_object_add(md, "annotations", json_object_get(m->annotations));
	json_object_object_add(j, "metadata", md);
	json_object_object_add(spec, "vmiName", jstr(m->vmi));
	if (m->target) {
		json_object *sel = json_object_new_object();
		json_object_object_add(sel, "kubernetes.io/hostname", jstr(m->target));
		json_object_object_add(spec, "addedNodeSelector", sel);
	}
	json_object_object_add(j, "spec", spec);
	json_object_object_add(st, "phase", jstr(m->phase));
	json_object *tr = json_object_new_array();
	for (int i = 0; i < m->ntrans; i++) {
		json_object *t = json_object_new_object();
		json_object_object_add(t, "phase", jstr(m->tphase[i]));
		json_object_object_add(t, "phaseTransitionTimestamp", time_json(m->tstamp[i]));
		json_object_array_add(tr, t);
	}
	json_object_object_add(st, "phaseTransitionTimestamps", tr);
	const struct migration_state *ms = vmim_state(m);
	if (ms)
		json_object_object_add(st, "migrationState", mig_state_json(ms));
	if (util_str_eq(m->phase, "Failed") && m->reason) {
		json_object *conds = json_object_new_array(), *c = json_object_new_object();
		json_object_object_add(c, "type", jstr("Failed"));
		json_object_object_add(c, "status", jstr("True"));
		json_object_object_add(c, "message", jstr(m->reason));
		json_object_array_add(conds, c);
		json_object_object_add(st, "conditions", conds);
	}
	json_object_object_add(j, "status", st);
	return j;
}

/* ---- the objects on disk, beside the engine's records ---- */

static char *vmim_dir(void)
{
	char *d = util_state_dir(), *p = util_path_join(d, "engine-data/vmims");
	free(d);
	return p;
}

static char *vmim_path(const struct vmim *m)
{
	char *d = vmim_dir(), *p = xasprintf("%s/%s_%s.json", d, m->ns, m->name);
	free(d);
	return p;
}

/* Writes m's file (temporary file, fsync, rename, directory fsync). 0, or -1 with *err (caller frees). */
static int vmim_store(const struct vmim *m, const char *body, char **err)
{
	json_object *f = json_object_new_object();
	json_object_object_add(f, "object", json_tokener_parse(body));
	json_object_object_add(f, "migrationUid", jstr(m->mig_uid));
	json_object_object_add(f, "created", json_object_new_int64(m->created));
	json_object_object_add(f, "done", json_object_new_int(m->done));
	if (m->reason)
		json_object_object_add(f, "reason", jstr(m->reason));
	json_object *tr = json_object_new_array();
	for (int i = 0; i < m->ntrans; i++) {
		json_object *t = json_object_new_object();
		json_object_object_add(t, "phase", jstr(m->tphase[i]));
		json_object_object_add(t, "time", json_object_new_int64(m->tstamp[i]));
		json_object_array_add(tr, t);
	}
	json_object_object_add(f, "transitions", tr);
	char *text = jtext(f), *path = vmim_path(m);
	json_object_put(f);
	char why[UTIL_WHY_LEN];
	int rc = util_write_file_why(path, text, strlen(text), 0600, why);
	if (rc < 0 && errno == ENOENT) {
		char *d = vmim_dir();
		util_mkdir_p(d, 0700);
		free(d);
		rc = util_write_file_why(path, text, strlen(text), 0600, why);
	}
	if (rc < 0)
		*err = xasprintf("cannot store %s: %s", path, why);
	free(text);
	free(path);
	return rc;
}

static void vmim_unlink(const struct vmim *m)
{
	char *path = vmim_path(m);
	if (unlink(path) < 0 && errno != ENOENT)
		log_warn("engine serve: cannot remove %s: %s", path, strerror(errno));
	char *d = vmim_dir();
	int fd = open(d, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
	free(d);
	free(path);
}

static bool valid_name(const char *s);

/* The objects an earlier service kept (at start; their phases follow the engine's records once read). */
static void vmims_load(void)
{
	char *d = vmim_dir();
	DIR *dir = opendir(d);
	struct dirent *de;
	while (dir && (de = readdir(dir))) {
		size_t n = strlen(de->d_name);
		if (de->d_name[0] == '.' || n < 6 || strcmp(de->d_name + n - 5, ".json") != 0)
			continue;
		char *path = util_path_join(d, de->d_name), *why = NULL, *text = trust_read_file(path, NULL, &why);
		if (why)
			log_warn("engine serve: %s", why);
		free(why);
		json_object *f = text ? json_tokener_parse(text) : NULL, *o = jget(f, "object");
		json_object *md = jget(o, "metadata"), *spec = jget(o, "spec");
		const char *ns = jgets(md, "namespace"), *name = jgets(md, "name"), *vmi = jgets(spec, "vmiName");
		const char *uid = jgets(md, "uid"), *mu = jgets(f, "migrationUid");
		if (ns == NULL || name == NULL || vmi == NULL || uid == NULL || !valid_name(name) || !valid_name(ns) ||
		    vmim_find(ns, name)) {
			log_warn("engine serve: %s: not a VirtualMachineInstanceMigration kvcon stored; ignored", path);
		} else {
			struct vmim *m = xcalloc(1, sizeof *m);
			m->id = ++S.vmim_ids;
			m->loaded = true;
			m->ns = xstrdup(ns);
			m->name = xstrdup(name);
			m->vmi = xstrdup(vmi);
			m->target = xstrdup0(jgets(jget(spec, "addedNodeSelector"), "kubernetes.io/hostname"));
			snprintf(m->uid, sizeof m->uid, "%s", uid);
			snprintf(m->mig_uid, UID_LEN, "%s", mu ? mu : "");
			m->created = json_object_get_int64(jget(f, "created"));
			m->done = json_object_get_int(jget(f, "done"));
			m->reason = xstrdup0(jgets(f, "reason"));
			json_object *x = jget(md, "labels");
			if (x && json_object_is_type(x, json_type_object)) {
				m->labels = json_tokener_parse(json_object_to_json_string(x));
				json_object_object_del(m->labels, "kubevirt.io/vmi-name");
			}
			x = jget(md, "annotations");
			if (x && json_object_is_type(x, json_type_object))
				m->annotations = json_tokener_parse(json_object_to_json_string(x));
			char *owhy = NULL;
			if (vmim_opts(m->annotations, m, true, &owhy) < 0) { /* validated when created: not kvcon's file */
				log_warn("engine serve: %s: %s", path, owhy);
				free(owhy);
			}
			json_object *tr = jget(f, "transitions");
			for (size_t i = 0; tr && json_object_is_type(tr, json_type_array) && i < json_object_array_length(tr) &&
					   m->ntrans < VMIM_NPHASE; i++) {
				const char *ph = jgets(json_object_array_get_idx(tr, i), "phase");
				if (ph == NULL)
					continue;
				m->tphase[m->ntrans] = intern(ph);
				m->tstamp[m->ntrans++] = json_object_get_int64(jget(json_object_array_get_idx(tr, i), "time"));
			}
			const char *ph = jgets(jget(o, "status"), "phase");
			m->phase = ph ? intern(ph) : intern("Pending");
			m->next = S.vmims;
			S.vmims = m;
		}
		if (f)
			json_object_put(f);
		free(text);
		free(path);
	}
	if (dir)
		closedir(dir);
	free(d);
}

/* A loaded migration the engine never heard of (the service was killed between storing the object and asking the
 * engine), or whose VM is gone: Failed, once every host has been read. */
static void vmims_settle_loaded(void)
{
	bool ready = true;
	for (int s = 0; s < S.nsrcs; s++)
		ready &= engine_ready(S.srcs[s]);
	if (!ready)
		return;
	for (struct vmim *m = S.vmims; m; m = m->next) {
		if (!m->loaded)
			continue;
		m->loaded = false;
		if (vmim_final(m) || m->done || vmim_state(m))
			continue;
		struct source *at = (m->flags & ENGINE_MIG_OFFLINE) && m->target ? source_of(m->ns, m->vmi) : NULL;
		if (at && util_str_eq(at->name, m->target)) {
			/* an offline move the engine finished from its record's intent (its record is on the target) */
			m->done = 1;
			vmim_refresh(m, NULL);
			continue;
		}
		free(m->reason);
		m->reason = xstrdup("interrupted: the engine service stopped before the migration started");
		m->done = -1;
		vmim_refresh(m, NULL);
	}
}

/* Rebuilds m's text; a change bumps the resourceVersion and becomes a watch event (and is stored). */
static void vmim_refresh(struct vmim *m, const char *type)
{
	const char *was = m->phase;
	bool stored = m->body != NULL; /* the first body is stored by create */
	vmim_set_phase(m, vmim_phase_now(m));
	if (!publish(vmim_json(m), &m->body, &m->text, &m->rv))
		return;
	char *err = NULL;
	/* a new phase is stored (the figures of a running migration are not: they come from the engine's record) */
	if (stored && was != m->phase && vmim_store(m, m->body, &err) < 0) {
		log_warn("engine serve: %s", err);
		free(err);
	}
	ring_push(R_VMIM, type ? type : "MODIFIED", NULL, m->text);
	wake_watchers();
}

static void vmims_update(void)
{
	for (struct vmim *m = S.vmims; m; m = m->next)
		vmim_refresh(m, NULL);
}

static void vmim_done(void *arg, int status, const char *message)
{
	unsigned id = (unsigned)(uintptr_t)arg;
	for (struct vmim *m = S.vmims; m; m = m->next)
		if (m->id == id) {
			m->done = status == 0 ? 1 : -1;
			if (status != 0 && m->reason == NULL && message)
				m->reason = xstrdup(message);
			vmim_refresh(m, NULL);
			return;
		}
}

/* Keeps m and starts its migration: the object, with the migrationUid the engine will use, is on disk before the
 * engine acts (a service killed from here on finds it, and the engine's record says how the migration went). -1
 * with *err when it cannot be stored (m freed, nothing done); else 0, m listed (Failed when the engine refused). */
static int vmim_begin(struct vmim *m, struct source *src, char **err)
{
	util_uuid_v4(m->mig_uid);
	vmim_set_phase(m, "Scheduling");
	json_object *j = vmim_json(m);
	char *body = jtext(j);
	json_object_put(j);
	if (vmim_store(m, body, err) < 0) {
		free(body);
		vmim_free(m);
		return -1;
	}
	free(body);
	m->next = S.vmims;
	S.vmims = m;
	struct action_req req = { .act = ACT_MIGRATE, .ns = m->ns, .name = m->vmi, .grace_period = -1,
				  .target = m->target, .uid = m->mig_uid, .flags = m->flags, .mig_uri = m->mig_uri,
				  .timeout = m->timeout, .bandwidth = m->bandwidth };
	char *why = NULL;
	if (src->ops->action(src, &req, vmim_done, (void *)(uintptr_t)m->id, &why) < 0) {
		m->reason = why ? why : xstrdup("refused");
		vmim_set_phase(m, "Failed");
	} else {
		vmim_set_phase(m, "Scheduled");
	}
	vmim_refresh(m, "ADDED");
	char *serr = NULL;
	if (vmim_store(m, m->body, &serr) < 0) {
		log_warn("engine serve: %s", serr);
		free(serr);
	}
	return 0;
}

/* The request came from the host's owner: a client of the unix socket (in a directory of the service user's) running
 * as the service's uid or root, as `kvcon engine migrate --migrate-uri` does; an HTTPS client holds a token only. */
static bool from_owner(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	struct sockaddr_storage sa;
	socklen_t sl = sizeof sa;
	struct ucred cr;
	socklen_t cl = sizeof cr;
	if (ci == NULL || getsockname(ci->connect_fd, (struct sockaddr *)&sa, &sl) < 0 || sa.ss_family != AF_UNIX ||
	    getsockopt(ci->connect_fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) < 0)
		return false;
	return cr.uid == geteuid() || cr.uid == 0;
}

static enum MHD_Result create_vmim(struct MHD_Connection *c, struct reqctx *rq, const char *ns)
{
	enum MHD_Result rc;
	json_object *o = body_json(c, rq, &rc);
	if (o == NULL)
		return rc;
	json_object *md = jget(o, "metadata"), *spec = jget(o, "spec");
	const char *name = jgets(md, "name"), *gen = jgets(md, "generateName"), *vmi = jgets(spec, "vmiName");
	const char *target = jgets(jget(spec, "addedNodeSelector"), "kubernetes.io/hostname");
	char *gname = NULL;
	if ((name == NULL || *name == 0) && gen && *gen) {
		char u[37];
		util_uuid_v4(u);
		name = gname = xasprintf("%s%.5s", gen, u);
	}
	struct source *src = vmi ? source_of(ns, vmi) : NULL;
	bool tfound = target == NULL;
	for (int s = 0; s < S.nsrcs && !tfound; s++)
		tfound = util_str_eq(S.srcs[s]->name, target);
	struct vmim opts = { 0 };
	char *owhy = NULL;
	bool oerr = vmim_opts(jget(md, "annotations"), &opts, from_owner(c), &owhy) < 0;
	if (name == NULL || !valid_name(name))
		rc = send_invalid(c, name ? name : "", "metadata.name: Invalid value: a lowercase RFC 1123 subdomain is required");
	else if (vmi == NULL || *vmi == 0)
		rc = send_invalid(c, name, "spec.vmiName: Required value");
	else if (!ns_exists(ns))
		rc = send_status(c, 404, "NotFound", R_NS, ns, "namespaces \"%s\" not found", ns);
	else if (vmim_find(ns, name))
		rc = send_status(c, 409, "AlreadyExists", R_VMIM, name, "%s \"%s\" already exists", RES[R_VMIM].plural,
				 name);
	else if (oerr)
		rc = send_invalid(c, name, owhy);
	else if (src == NULL && (opts.flags & ENGINE_MIG_OFFLINE))
		rc = send_invalid(c, name, "spec.vmiName: no VirtualMachine of that name (offline migration)");
	else if (src == NULL || (vmi_of(ns, vmi) == NULL && !(opts.flags & ENGINE_MIG_OFFLINE)))
		rc = send_invalid(c, name, "spec.vmiName: the VMI does not exist or is not running");
	else if (!tfound)
		rc = send_invalid(c, name, "spec.addedNodeSelector: kubernetes.io/hostname is not one of the nodes");
	else {
		struct vmim *m = xcalloc(1, sizeof *m);
		m->id = ++S.vmim_ids;
		m->ns = xstrdup(ns);
		m->name = xstrdup(name);
		m->vmi = xstrdup(vmi);
		m->target = xstrdup0(target);
		util_uuid_v4(m->uid);
		m->created = util_wall_s();
		json_object *x = jget(md, "labels");
		if (x && json_object_is_type(x, json_type_object))
			m->labels = json_tokener_parse(json_object_to_json_string(x));
		x = jget(md, "annotations");
		if (x && json_object_is_type(x, json_type_object))
			m->annotations = json_tokener_parse(json_object_to_json_string(x));
		m->flags = opts.flags;
		m->mig_uri = opts.mig_uri;
		opts.mig_uri = NULL;
		m->timeout = opts.timeout;
		m->bandwidth = opts.bandwidth;
		vmim_set_phase(m, "Pending");
		char *err = NULL;
		if (dry_run(c, rq)) { /* nothing is kept or done */
			json_object *j = vmim_json(m);
			vmim_free(m);
			rc = send_json(c, 201, j);
		} else if (vmim_begin(m, src, &err) < 0) {
			rc = send_status(c, 500, "InternalError", R_VMIM, name, "%s", err);
			free(err);
		} else {
			rc = send_text(c, 201, xstrdup(m->text), "application/json");
		}
	}
	free(opts.mig_uri);
	free(owhy);
	free(gname);
	json_object_put(o);
	return rc;
}

/* The migrate subresource (virtctl migrate, kvcon's kube provider): as KubeVirt's virt-api, a
 * VirtualMachineInstanceMigration named kubevirt-migrate-vm-XXXXX (MigrateOptions.addedNodeSelector its target);
 * the engine's refusal is also the answer (409), the object stays Failed. */
static enum MHD_Result migrate_sub(struct MHD_Connection *c, struct reqctx *rq, const char *ns, const char *name)
{
	struct source *src = source_of(ns, name);
	if (src == NULL)
		return not_found(c, R_VM, name);
	char *target = NULL;
	if (rq->body.len && !rq->too_big) {
		buf_add_char(&rq->body, 0);
		json_object *o = json_tokener_parse(rq->body.data);
		rq->body.len--;
		target = xstrdup0(jgets(jget(o, "addedNodeSelector"), "kubernetes.io/hostname"));
		if (o)
			json_object_put(o);
	}
	bool tfound = target == NULL;
	for (int s = 0; s < S.nsrcs && !tfound; s++)
		tfound = util_str_eq(S.srcs[s]->name, target);
	if (!tfound) {
		free(target);
		return send_status(c, 422, "Invalid", R_VM, name, "addedNodeSelector: kubernetes.io/hostname is not one of the nodes");
	}
	if (vmi_of(ns, name) == NULL) {
		free(target);
		return send_status(c, 409, "Conflict", R_VM, name, "VM is not running");
	}
	if (dry_run(c, rq)) {
		free(target);
		return send_text(c, 202, xstrdup(""), "text/plain");
	}
	struct vmim *m = xcalloc(1, sizeof *m);
	m->id = ++S.vmim_ids;
	m->ns = xstrdup(ns);
	char u[37];
	util_uuid_v4(u);
	m->name = xasprintf("kubevirt-migrate-vm-%.5s", u);
	m->vmi = xstrdup(name);
	m->target = target;
	util_uuid_v4(m->uid);
	m->created = util_wall_s();
	vmim_set_phase(m, "Pending");
	char *err = NULL;
	if (vmim_begin(m, src, &err) < 0) {
		enum MHD_Result rc = send_status(c, 500, "InternalError", R_VM, name, "%s", err);
		free(err);
		return rc;
	}
	if (util_str_eq(m->phase, "Failed"))
		return send_status(c, 409, "Conflict", R_VM, name, "%s", m->reason ? m->reason : "refused");
	return send_text(c, 202, xstrdup(""), "text/plain");
}

/* Deleting a migration that is still running aborts it, as KubeVirt's controller does. */
static enum MHD_Result delete_vmim(struct MHD_Connection *c, struct reqctx *rq, const char *ns, const char *name)
{
	struct vmim *m = vmim_find(ns, name);
	if (m == NULL)
		return not_found(c, R_VMIM, name);
	if (dry_run(c, rq))
		return send_text(c, 200, xstrdup(m->text), "application/json");
	vmim_refresh(m, NULL);
	vmim_unlink(m);
	if (!vmim_final(m)) {
		struct source *src = source_of(ns, m->vmi);
		struct action_req req = { .act = ACT_MIGRATE_ABORT, .ns = ns, .name = m->vmi, .grace_period = -1 };
		char *err = NULL;
		if (src == NULL || src->ops->action(src, &req, action_done, NULL, &err) < 0) {
			log_warn("engine serve: aborting migration %s/%s: %s", ns, name, err ? err : "the VM is gone");
			free(err);
		}
	}
	for (struct vmim **p = &S.vmims; *p; p = &(*p)->next)
		if (*p == m) {
			*p = m->next;
			break;
		}
	S.rv++;
	json_object *j = json_tokener_parse(m->text);
	char rv[24];
	snprintf(rv, sizeof rv, "%llu", (unsigned long long)S.rv);
	json_object_object_add(jobj(j, "metadata"), "resourceVersion", json_object_new_string(rv));
	char *text = jtext(j);
	json_object_put(j);
	ring_push(R_VMIM, "DELETED", NULL, text);
	wake_watchers();
	vmim_free(m);
	return send_text(c, 200, text, "application/json");
}

/* ---- the serial console as KubeVirt's WebSocket (plain.kubevirt.io): binary frames both ways ---- */

struct wsconn {
	struct MHD_UpgradeResponseHandle *urh;
	int fd;
	struct loop_fd *lfd;
	struct engine_console *con;
	int peer;                /* vnc: the display's socket (-1 until libvirt opened it) */
	struct loop_fd *peer_lfd;
	struct buf peer_out;     /* client bytes for the display */
	bool vnc, waiting_peer;
	struct wsframe_parser p;
	struct buf out;
	bool closing;
	struct wsconn *next;
};

static struct wsconn *wsconns;

static void ws_close(struct wsconn *w)
{
	for (struct wsconn **pp = &wsconns; *pp; pp = &(*pp)->next)
		if (*pp == w) {
			*pp = w->next;
			break;
		}
	loop_fd_remove(w->lfd);
	engine_console_close(w->con);
	loop_fd_remove(w->peer_lfd);
	if (w->peer >= 0)
		close(w->peer);
	MHD_upgrade_action(w->urh, MHD_UPGRADE_ACTION_CLOSE);
	buf_free(&w->out);
	buf_free(&w->peer_out);
	if (w->waiting_peer) { /* engine_vnc_open's callback still comes: it finds the connection gone */
		w->urh = NULL;
		w->lfd = NULL;
		w->closing = true;
		return;
	}
	free(w);
}

/* Sends what b holds to fd without blocking; on an error the connection closes and b is dropped. */
static void send_out(struct wsconn *w, int fd, struct buf *b)
{
	while (fd >= 0 && b->len) {
		ssize_t n = send(fd, b->data, b->len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
			break;
		if (n <= 0) {
			w->closing = true;
			b->len = 0;
			break;
		}
		buf_consume(b, (size_t)n);
	}
}

static void peer_flush(struct wsconn *w)
{
	send_out(w, w->peer, &w->peer_out);
	if (w->peer_lfd)
		loop_fd_set_events(w->peer_lfd, (short)(POLLIN | (w->peer_out.len ? POLLOUT : 0)));
}

static void ws_flush(struct wsconn *w)
{
	send_out(w, w->fd, &w->out);
	loop_fd_set_events(w->lfd, (short)(POLLIN | (w->out.len ? POLLOUT : 0)));
}

static int ws_frame(void *arg, const struct wsframe_event *ev)
{
	struct wsconn *w = arg;
	switch (ev->type) {
	case WSFRAME_DATA:
		if (ev->len && w->vnc) {
			if (w->peer_out.len < (8u << 20))
				buf_add(&w->peer_out, ev->data, ev->len);
			peer_flush(w);
		} else if (ev->len && w->con)
			engine_console_write(w->con, (const char *)ev->data, ev->len);
		break;
	case WSFRAME_PING:
		wsframe_encode(&w->out, WS_OP_PONG, true, NULL, ev->data, ev->len);
		break;
	case WSFRAME_PONG:
		break;
	case WSFRAME_CLOSE:
		wsframe_encode_close(&w->out, NULL, WS_CLOSE_NORMAL, "");
		w->closing = true;
		return 1;
	}
	return 0;
}

static void ws_on_fd(int fd, short revents, void *arg)
{
	struct wsconn *w = arg;
	if (revents & (POLLIN | POLLHUP | POLLERR)) {
		uint8_t b[16384];
		ssize_t n = recv(fd, b, sizeof b, MSG_DONTWAIT);
		if (n > 0) {
			if (wsframe_feed(&w->p, b, (size_t)n, ws_frame, w) < 0) {
				wsframe_encode_close(&w->out, NULL, w->p.err_code, w->p.err);
				w->closing = true;
			}
		} else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
			ws_close(w);
			return;
		}
	}
	ws_flush(w);
	if (w->closing && w->out.len == 0)
		ws_close(w);
}

static void ws_console_data(void *arg, const char *data, size_t len)
{
	struct wsconn *w = arg;
	if (len == 0 || w->closing)
		return; /* the execution ended: the subscription follows the next one, as virt-handler's does not */
	if (w->out.len > (8u << 20))
		return; /* a client that does not read loses console bytes, never the service's memory */
	wsframe_encode(&w->out, WS_OP_BINARY, true, NULL, data, len);
	ws_flush(w);
}

static void ws_peer_fd(int fd, short revents, void *arg)
{
	struct wsconn *w = arg;
	if (revents & (POLLIN | POLLHUP | POLLERR)) {
		char b[65536];
		ssize_t n = recv(fd, b, sizeof b, MSG_DONTWAIT);
		if (n > 0) {
			if (w->out.len < (8u << 20))
				wsframe_encode(&w->out, WS_OP_BINARY, true, NULL, b, (size_t)n);
		} else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
			wsframe_encode_close(&w->out, NULL, WS_CLOSE_NORMAL, "the display closed");
			w->closing = true;
			loop_fd_remove(w->peer_lfd);
			w->peer_lfd = NULL;
		}
	}
	if (w->peer_lfd)
		peer_flush(w);
	ws_flush(w);
	if (w->closing && w->out.len == 0)
		ws_close(w);
}

static void ws_vnc_opened(void *arg, int fd, const char *err)
{
	struct wsconn *w = arg;
	w->waiting_peer = false;
	if (w->urh == NULL) { /* the client left first */
		if (fd >= 0)
			close(fd);
		free(w);
		return;
	}
	if (fd < 0) {
		wsframe_encode_close(&w->out, NULL, WS_CLOSE_GOING_AWAY, err ? err : "no display");
		w->closing = true;
	} else {
		w->peer = fd;
		w->peer_lfd = loop_fd_add(fd, POLLIN, ws_peer_fd, w);
		peer_flush(w);
	}
	ws_flush(w);
	if (w->closing && w->out.len == 0)
		ws_close(w);
}

struct ws_pending {
	struct source *src;
	bool vnc;
	char ns[64], name[254];
};

static void ws_upgraded(void *cls, struct MHD_Connection *c, void *con_cls, const char *extra, size_t extra_len,
			MHD_socket sock, struct MHD_UpgradeResponseHandle *urh)
{
	(void)c;
	(void)con_cls;
	struct ws_pending *pd = cls;
	struct wsconn *w = xcalloc(1, sizeof *w);
	w->urh = urh;
	w->fd = sock;
	w->peer = -1;
	w->vnc = pd->vnc;
	buf_init(&w->out);
	buf_init(&w->peer_out);
	wsframe_parser_init(&w->p, WSFRAME_SERVER);
	w->lfd = loop_fd_add(sock, POLLIN, ws_on_fd, w);
	w->next = wsconns;
	wsconns = w;
	char *err = NULL;
	bool ok;
	if (w->vnc) {
		ok = engine_vnc_open(pd->src, pd->ns, pd->name, ws_vnc_opened, w, &err) == 0;
		w->waiting_peer = ok;
	} else
		ok = (w->con = engine_console_open(pd->src, pd->ns, pd->name, ws_console_data, w, &err)) != NULL;
	if (!ok) /* the client says it too (kvcon console: at once); the service's log keeps which and why */
		log_info("engine serve: %s %s/%s refused: %s", w->vnc ? "display" : "console", pd->ns, pd->name,
			 err ? err : "no console");
	free(pd);
	if (!ok) {
		wsframe_encode_close(&w->out, NULL, WS_CLOSE_GOING_AWAY, err ? err : "no console");
		w->closing = true;
	} else if (extra_len && wsframe_feed(&w->p, (const uint8_t *)extra, extra_len, ws_frame, w) < 0)
		w->closing = true;
	free(err);
	ws_flush(w);
}

static enum MHD_Result console_ws(struct MHD_Connection *c, const char *ns, const char *name, bool vnc)
{
	const char *up = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Upgrade");
	const char *key = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Sec-WebSocket-Key");
	if (up == NULL || strcasecmp(up, "websocket") != 0 || key == NULL || strlen(key) > 64)
		return send_status(c, 400, "BadRequest", R_COUNT, NULL, "a WebSocket upgrade is required");
	struct source *src = source_of(ns, name);
	if (src == NULL || !engine_running(src, ns, name))
		return send_status(c, 404, "NotFound", R_VMI, name, "%s.%s \"%s\" not found or not running",
				   RES[R_VMI].plural, RES[R_VMI].group, name);
	char *k = xasprintf("%s258EAFA5-E914-47DA-95CA-C5AB0DC85B11", key);
	unsigned char sha[SHA_DIGEST_LENGTH];
	SHA1((const unsigned char *)k, strlen(k), sha);
	free(k);
	char accept[64];
	EVP_EncodeBlock((unsigned char *)accept, sha, SHA_DIGEST_LENGTH);
	struct ws_pending *pd = xcalloc(1, sizeof *pd);
	pd->src = src;
	pd->vnc = vnc;
	snprintf(pd->ns, sizeof pd->ns, "%s", ns);
	snprintf(pd->name, sizeof pd->name, "%s", name);
	struct MHD_Response *r = MHD_create_response_for_upgrade(ws_upgraded, pd);
	MHD_add_response_header(r, "Upgrade", "websocket");
	MHD_add_response_header(r, "Connection", "Upgrade");
	MHD_add_response_header(r, "Sec-WebSocket-Accept", accept);
	const char *proto = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Sec-WebSocket-Protocol");
	if (proto && strstr(proto, "plain.kubevirt.io"))
		MHD_add_response_header(r, "Sec-WebSocket-Protocol", "plain.kubevirt.io");
	enum MHD_Result rc = MHD_queue_response(c, MHD_HTTP_SWITCHING_PROTOCOLS, r);
	MHD_destroy_response(r);
	if (rc != MHD_YES)
		free(pd);
	return rc;
}

/* ---- namespaces created through the API ---- */

static char *nsx_path(void)
{
	char *d = util_state_dir(), *p = util_path_join(d, "engine-namespaces");
	free(d);
	return p;
}

static void nsx_add(const char *name, const char *meta)
{
	S.nsx = xreallocarray(S.nsx, S.nnsx + 1, sizeof *S.nsx);
	S.nsxmeta = xreallocarray(S.nsxmeta, S.nnsx + 1, sizeof *S.nsxmeta);
	S.nsx[S.nnsx] = xstrdup(name);
	S.nsxmeta[S.nnsx++] = meta ? xstrdup(meta) : NULL;
}

/* The labels (but the one the server sets) and annotations of a Namespace object, as kept; NULL when none. */
static char *nsx_meta_of(json_object *o)
{
	json_object *md = jget(o, "metadata"), *l = jget(md, "labels"), *a = jget(md, "annotations");
	json_object *m = json_object_new_object();
	if (l && json_object_is_type(l, json_type_object)) {
		json_object *lc = json_object_new_object();
		json_object_object_foreach(l, k, v)
			if (strcmp(k, "kubernetes.io/metadata.name") != 0 && json_object_is_type(v, json_type_string))
				json_object_object_add(lc, k, json_object_get(v));
		json_object_object_add(m, "labels", lc);
	}
	if (a && json_object_is_type(a, json_type_object)) {
		json_object *ac = json_object_new_object();
		json_object_object_foreach(a, k, v)
			if (json_object_is_type(v, json_type_string))
				json_object_object_add(ac, k, json_object_get(v));
		json_object_object_add(m, "annotations", ac);
	}
	char *t = json_object_object_length(m) ? xstrdup(json_object_to_json_string_ext(m, JSON_C_TO_STRING_PLAIN)) : NULL;
	json_object_put(m);
	return t;
}

static void nsx_save(void)
{
	struct buf b;
	buf_init(&b);
	for (size_t i = 0; i < S.nnsx; i++)
		buf_printf(&b, "%s%s%s\n", S.nsx[i], S.nsxmeta[i] ? "\t" : "", S.nsxmeta[i] ? S.nsxmeta[i] : "");
	char *p = nsx_path(), why[UTIL_WHY_LEN];
	if (util_write_file_why(p, b.data ? b.data : "", b.len, 0600, why) < 0)
		log_warn("engine serve: %s: %s", p, why);
	free(p);
	buf_free(&b);
}

static void nsx_load(void)
{
	char *p = nsx_path(), *why = NULL, *text = trust_read_file(p, NULL, &why);
	if (why)
		log_warn("engine serve: %s (its namespaces are not listed)", why);
	free(why);
	free(p);
	for (char *sp, *l = text ? strtok_r(text, "\n", &sp) : NULL; l; l = strtok_r(NULL, "\n", &sp)) {
		char *meta = strchr(l, '\t'); /* NAME, or NAME TAB its labels and annotations (JSON) */
		if (meta)
			*meta++ = '\0';
		json_object *mj = meta ? json_tokener_parse(meta) : NULL;
		if (manifest_dns_label(l) && S.nnsx < 10000)
			nsx_add(l, mj && json_object_is_type(mj, json_type_object) ? meta : NULL);
		if (mj)
			json_object_put(mj);
	}
	free(text);
}

static bool ns_exists(const char *name)
{
	size_t n;
	const char **names = namespaces(&n);
	bool found = false;
	for (size_t i = 0; i < n && !found; i++)
		found = strcmp(names[i], name) == 0;
	free(names);
	return found;
}

static enum MHD_Result create_ns(struct MHD_Connection *c, struct reqctx *rq)
{
	enum MHD_Result rc;
	const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
	json_object *o;
	if (ct && strstr(ct, "protobuf") && !rq->too_big) {
		/* kubectl create namespace sends protobuf: the kind and the name are all it needs to say */
		char *kind = NULL, *pname = NULL;
		if (apisel_pb_kind_name(rq->body.data ? rq->body.data : "", rq->body.len, &kind, &pname) < 0 ||
		    strcmp(kind, "Namespace") != 0) {
			free(kind);
			free(pname);
			return send_status(c, 400, "BadRequest", R_COUNT, NULL, "the request body is not a Namespace");
		}
		o = json_object_new_object();
		json_object *md = jobj(o, "metadata");
		json_object_object_add(md, "name", json_object_new_string(pname));
		free(kind);
		free(pname);
	} else if ((o = body_json(c, rq, &rc)) == NULL)
		return rc;
	const char *name = jgets(jget(o, "metadata"), "name");
	if (name == NULL || !manifest_dns_label(name))
		rc = send_status(c, 422, "Invalid", R_NS, name, "Namespace \"%s\" is invalid: metadata.name: Invalid value: "
				 "a lowercase RFC 1123 label is required", name ? name : "");
	else if (ns_exists(name))
		rc = send_status(c, 409, "AlreadyExists", R_NS, name, "namespaces \"%s\" already exists", name);
	else if (arg(c, "dryRun"))
		rc = send_json(c, 201, json_object_get(o)); /* nothing kept */
	else {
		char *meta = nsx_meta_of(o);
		nsx_add(name, meta);
		free(meta);
		nsx_save();
		rc = send_json(c, 201, ns_json(name));
	}
	json_object_put(o);
	return rc;
}

/* kubectl apply's patch of a Namespace: its labels and annotations (a merge patch; a strategic merge patch is
 * one for these maps). A namespace that exists only because it is in use or built in is kept from then on. */
static enum MHD_Result patch_ns(struct MHD_Connection *c, struct reqctx *rq, const char *name)
{
	enum MHD_Result rc;
	if (!ns_exists(name))
		return not_found(c, R_NS, name);
	json_object *p = body_json(c, rq, &rc);
	if (p == NULL)
		return rc;
	json_object *res = apisel_merge_patch(ns_json(name), p);
	json_object_put(p);
	if (!util_str_eq(jgets(jget(res, "metadata"), "name"), name)) {
		json_object_put(res);
		return send_status(c, 400, "BadRequest", R_COUNT, NULL, "the name of the object may not change");
	}
	if (arg(c, "dryRun"))
		return send_json(c, 200, res);
	char *meta = nsx_meta_of(res);
	json_object_put(res);
	size_t i;
	for (i = 0; i < S.nnsx && strcmp(S.nsx[i], name) != 0; i++)
		;
	if (i == S.nnsx)
		nsx_add(name, meta);
	else {
		free(S.nsxmeta[i]);
		S.nsxmeta[i] = meta ? xstrdup(meta) : NULL;
	}
	free(meta);
	nsx_save();
	return send_json(c, 200, ns_json(name));
}

static enum MHD_Result delete_ns(struct MHD_Connection *c, const char *name)
{
	for (size_t i = 0; i < S.nnsx; i++)
		if (strcmp(S.nsx[i], name) == 0) {
			for (int s = 0; s < S.nsrcs; s++) {
				size_t cnt;
				struct obj *const *objs = store_objs(S.st, S.srcs[s], OBJ_VM, &cnt);
				for (size_t k = 0; k < cnt; k++)
					if (strcmp(objs[k]->ns, name) == 0)
						return send_status(c, 409, "Conflict", R_NS, name,
								   "namespace %s still holds virtual machines", name);
			}
			json_object *j = ns_json(name);
			free(S.nsx[i]);
			free(S.nsxmeta[i]);
			S.nsxmeta[i] = S.nsxmeta[S.nnsx - 1];
			S.nsx[i] = S.nsx[--S.nnsx];
			nsx_save();
			return send_json(c, 200, j);
		}
	if (ns_exists(name))
		return send_status(c, 409, "Conflict", R_NS, name, "namespace %s is in use or built in", name);
	return not_found(c, R_NS, name);
}

/* ---- discovery ---- */

static json_object *resource_list(const char *gv)
{
	json_object *l = json_object_new_object(), *a = json_object_new_array();
	json_object_object_add(l, "kind", jstr("APIResourceList"));
	json_object_object_add(l, "apiVersion", jstr("v1"));
	json_object_object_add(l, "groupVersion", jstr(gv));
	bool kv = strcmp(gv, "kubevirt.io/v1") == 0, sub = strcmp(gv, "subresources.kubevirt.io/v1") == 0;
	for (int r = 0; r < R_COUNT && !sub; r++) {
		if ((*RES[r].group != 0) != kv)
			continue;
		json_object *e = json_object_new_object(), *verbs = json_object_new_array(), *sn = json_object_new_array();
		json_object_object_add(e, "name", jstr(RES[r].plural));
		json_object_object_add(e, "singularName", jstr(RES[r].singular));
		json_object_object_add(e, "namespaced", json_object_new_boolean(RES[r].namespaced));
		json_object_object_add(e, "kind", jstr(RES[r].kind));
		char *v = xstrdup(RES[r].verbs);
		for (char *s, *p = strtok_r(v, ",", &s); p; p = strtok_r(NULL, ",", &s))
			json_object_array_add(verbs, jstr(p));
		free(v);
		json_object_object_add(e, "verbs", verbs);
		json_object_array_add(sn, jstr(RES[r].short1));
		if (RES[r].short2)
			json_object_array_add(sn, jstr(RES[r].short2));
		json_object_object_add(e, "shortNames", sn);
		if (kv) {
			json_object *cat = json_object_new_array();
			json_object_array_add(cat, jstr("all"));
			json_object_object_add(e, "categories", cat);
		}
		json_object_array_add(a, e);
	}
	if (sub) {
		/* the actions' subresources (model/registry.c), then the VMI's console and display */
		char subs[16][2][64];
		size_t n = 0;
		const struct action_def *ad;
		for (size_t i = 0; (ad = registry_action_at(i)) != NULL && n < 14; i++)
			if (ad->verb && ad->subresource) {
				snprintf(subs[n][0], sizeof subs[n][0], "%s/%s", registry_kind(ad->on)->plural, ad->subresource);
				snprintf(subs[n][1], sizeof subs[n][1], "put");
				n++;
			}
		for (int i = 0; i < 2; i++) {
			snprintf(subs[n][0], sizeof subs[n][0], "%s/%s", RES[R_VMI].plural, i ? "vnc" : "console");
			snprintf(subs[n][1], sizeof subs[n][1], "get");
			n++;
		}
		for (size_t i = 0; i < n; i++) {
			json_object *e = json_object_new_object(), *verbs = json_object_new_array();
			json_object_object_add(e, "name", jstr(subs[i][0]));
			json_object_object_add(e, "singularName", jstr(""));
			json_object_object_add(e, "namespaced", json_object_new_boolean(1));
			json_object_object_add(e, "kind", jstr(""));
			json_object_array_add(verbs, jstr(subs[i][1]));
			json_object_object_add(e, "verbs", verbs);
			json_object_array_add(a, e);
		}
	}
	json_object_object_add(l, "resources", a);
	return l;
}

static json_object *group_json(const char *g)
{
	json_object *o = json_object_new_object(), *vs = json_object_new_array(), *v = json_object_new_object();
	char *gv = xasprintf("%s/v1", g);
	json_object_object_add(o, "kind", jstr("APIGroup"));
	json_object_object_add(o, "apiVersion", jstr("v1"));
	json_object_object_add(o, "name", jstr(g));
	json_object_object_add(v, "groupVersion", jstr(gv));
	json_object_object_add(v, "version", jstr("v1"));
	json_object_array_add(vs, json_object_get(v));
	json_object_object_add(o, "versions", vs);
	json_object_object_add(o, "preferredVersion", v);
	free(gv);
	return o;
}

/* Just enough OpenAPI v3 for kubectl apply/create: write operations declare fieldValidation (kubectl then
 * leaves validation to the server, which runs the engine's validators) and each kind keeps unknown fields. */
static json_object *openapi_doc(bool kv)
{
	json_object *doc = json_object_new_object(), *paths = json_object_new_object(), *schemas = json_object_new_object();
	json_object_object_add(doc, "openapi", jstr("3.0.0"));
	json_object *info = json_object_new_object();
	json_object_object_add(info, "title", jstr("kvcon engine"));
	json_object_object_add(info, "version", jstr(KV_VERSION));
	json_object_object_add(doc, "info", info);
	for (int r = 0; r < R_COUNT; r++) {
		if ((*RES[r].group != 0) != kv)
			continue;
		char *sname = xasprintf("%s%s", kv ? "io.kubevirt.v1." : "io.k8s.api.core.v1.", RES[r].kind);
		char *ref = xasprintf("#/components/schemas/%s", sname);
		json_object *gvk = json_object_new_object();
		json_object_object_add(gvk, "group", jstr(RES[r].group));
		json_object_object_add(gvk, "version", jstr("v1"));
		json_object_object_add(gvk, "kind", jstr(RES[r].kind));
		const char *base = kv ? "/apis/kubevirt.io/v1" : "/api/v1";
		char *coll = xasprintf("%s%s%s", base, RES[r].namespaced ? "/namespaces/{namespace}/" : "/", RES[r].plural);
		char *one = xasprintf("%s/{name}", coll);
		const char *ops[][2] = { { "post", NULL }, { "put", "one" }, { "patch", "one" } };
		json_object *pc = json_object_new_object(), *po = json_object_new_object();
		for (size_t i = 0; i < 3; i++) {
			json_object *op = json_object_new_object(), *params = json_object_new_array(),
				    *fv = json_object_new_object(), *sch = json_object_new_object();
			json_object_object_add(fv, "name", jstr("fieldValidation"));
			json_object_object_add(fv, "in", jstr("query"));
			json_object_object_add(sch, "type", jstr("string"));
			json_object_object_add(sch, "uniqueItems", json_object_new_boolean(1));
			json_object_object_add(fv, "schema", sch);
			json_object_array_add(params, fv);
			json_object_object_add(op, "parameters", params);
			json_object *rs = json_object_new_object(), *ok = json_object_new_object(),
				    *content = json_object_new_object(), *aj = json_object_new_object(),
				    *s2 = json_object_new_object();
			json_object_object_add(s2, "$ref", jstr(ref));
			json_object_object_add(aj, "schema", s2);
			json_object_object_add(content, "application/json", aj);
			json_object_object_add(ok, "description", jstr("OK"));
			json_object_object_add(ok, "content", content);
			json_object_object_add(rs, "200", ok);
			json_object_object_add(op, "responses", rs);
			json_object_object_add(op, "x-kubernetes-action", jstr(ops[i][0]));
			json_object_object_add(op, "x-kubernetes-group-version-kind", json_object_get(gvk));
			json_object_object_add(ops[i][1] ? po : pc, ops[i][0], op);
		}
		json_object_object_add(paths, coll, pc);
		json_object_object_add(paths, one, po);
		json_object *s = json_object_new_object(), *gl = json_object_new_array();
		json_object_object_add(s, "type", jstr("object"));
		json_object_object_add(s, "x-kubernetes-preserve-unknown-fields", json_object_new_boolean(1));
		json_object_array_add(gl, json_object_get(gvk));
		json_object_object_add(s, "x-kubernetes-group-version-kind", gl);
		json_object_object_add(schemas, sname, s);
		json_object_put(gvk);
		free(coll);
		free(one);
		free(ref);
		free(sname);
	}
	json_object_object_add(doc, "paths", paths);
	json_object *comp = json_object_new_object();
	json_object_object_add(comp, "schemas", schemas);
	json_object_object_add(doc, "components", comp);
	return doc;
}

static enum MHD_Result discovery(struct MHD_Connection *c, const char *p, bool *handled)
{
	*handled = true;
	if (strcmp(p, "/version") == 0) {
		json_object *v = json_object_new_object();
		json_object_object_add(v, "major", jstr("1"));
		json_object_object_add(v, "minor", jstr("33"));
		json_object_object_add(v, "gitVersion", jstr("v1.33.0-kvcon-engine"));
		json_object_object_add(v, "platform", jstr("linux/amd64"));
		return send_json(c, 200, v);
	}
	if (strcmp(p, "/healthz") == 0 || strcmp(p, "/readyz") == 0 || strcmp(p, "/livez") == 0)
		return send_text(c, 200, xstrdup("ok"), "text/plain");
	if (strcmp(p, "/api") == 0) {
		json_object *o = json_object_new_object(), *v = json_object_new_array();
		json_object_object_add(o, "kind", jstr("APIVersions"));
		json_object_array_add(v, jstr("v1"));
		json_object_object_add(o, "versions", v);
		json_object_object_add(o, "serverAddressByClientCIDRs", json_object_new_array());
		return send_json(c, 200, o);
	}
	if (strcmp(p, "/api/v1") == 0)
		return send_json(c, 200, resource_list("v1"));
	if (strcmp(p, "/apis") == 0) {
		json_object *o = json_object_new_object(), *g = json_object_new_array();
		json_object_object_add(o, "kind", jstr("APIGroupList"));
		json_object_object_add(o, "apiVersion", jstr("v1"));
		json_object *kv = group_json("kubevirt.io"), *sub = group_json("subresources.kubevirt.io");
		json_object_object_del(kv, "kind");
		json_object_object_del(kv, "apiVersion");
		json_object_object_del(sub, "kind");
		json_object_object_del(sub, "apiVersion");
		json_object_array_add(g, kv);
		json_object_array_add(g, sub);
		json_object_object_add(o, "groups", g);
		return send_json(c, 200, o);
	}
	if (strcmp(p, "/apis/kubevirt.io") == 0)
		return send_json(c, 200, group_json("kubevirt.io"));
	if (strcmp(p, "/apis/subresources.kubevirt.io") == 0)
		return send_json(c, 200, group_json("subresources.kubevirt.io"));
	if (strcmp(p, "/apis/kubevirt.io/v1") == 0)
		return send_json(c, 200, resource_list("kubevirt.io/v1"));
	if (strcmp(p, "/apis/subresources.kubevirt.io/v1") == 0)
		return send_json(c, 200, resource_list("subresources.kubevirt.io/v1"));
	if (strcmp(p, "/apis/subresources.kubevirt.io/v1/version") == 0) {
		json_object *v = json_object_new_object();
		json_object_object_add(v, "gitVersion", jstr(KV_VERSION));
		json_object_object_add(v, "platform", jstr("linux/amd64"));
		return send_json(c, 200, v);
	}
	if (strcmp(p, "/openapi/v3") == 0) {
		json_object *o = json_object_new_object(), *ps = json_object_new_object();
		const char *keys[] = { "api/v1", "apis/kubevirt.io/v1" };
		for (int i = 0; i < 2; i++) {
			json_object *e = json_object_new_object();
			char *u = xasprintf("/openapi/v3/%s?hash=%llu", keys[i], (unsigned long long)S.started);
			json_object_object_add(e, "serverRelativeURL", jstr(u));
			free(u);
			json_object_object_add(ps, keys[i], e);
		}
		json_object_object_add(o, "paths", ps);
		return send_json(c, 200, o);
	}
	if (strcmp(p, "/openapi/v3/api/v1") == 0)
		return send_json(c, 200, openapi_doc(false));
	if (strcmp(p, "/openapi/v3/apis/kubevirt.io/v1") == 0)
		return send_json(c, 200, openapi_doc(true));
	*handled = false;
	return MHD_NO;
}

/* ---- pods/NAME/log: the launcher's containers as the engine keeps them (compute: QEMU's log, serial: the
 * guest's serial log), streamed from the engine's open_log as kubectl logs reads a cluster's ---- */

struct logconn {
	struct MHD_Connection *c;
	struct source *src;
	struct log_stream *ls; /* NULL once it ended */
	struct buf out;
	bool ended, suspended;
};

static void logconn_wake(struct logconn *lc)
{
	if (lc->suspended) {
		lc->suspended = false;
		MHD_resume_connection(lc->c);
	}
}

static bool logconn_data(void *arg, const char *data, size_t len)
{
	struct logconn *lc = arg;
	buf_add(&lc->out, data, len);
	logconn_wake(lc);
	return true;
}

static void logconn_end(void *arg, int status, const char *message)
{
	struct logconn *lc = arg;
	if (status != 0)
		log_info("engine serve: a log ended: %d %s", status, message ? message : "");
	lc->ls = NULL;
	lc->ended = true;
	logconn_wake(lc);
}

static ssize_t logconn_read(void *cls, uint64_t pos, char *out, size_t max)
{
	(void)pos;
	struct logconn *lc = cls;
	if (lc->out.len == 0) {
		if (lc->ended)
			return MHD_CONTENT_READER_END_OF_STREAM;
		lc->suspended = true;
		MHD_suspend_connection(lc->c);
		return 0;
	}
	size_t n = lc->out.len < max ? lc->out.len : max;
	memcpy(out, lc->out.data, n);
	buf_consume(&lc->out, n);
	return (ssize_t)n;
}

static void logconn_free(void *cls)
{
	struct logconn *lc = cls;
	if (lc->ls && lc->src->ops->close_log)
		lc->src->ops->close_log(lc->ls);
	buf_free(&lc->out);
	free(lc);
}

static bool arg_true(struct MHD_Connection *c, const char *k)
{
	const char *v = arg(c, k);
	return v && (strcmp(v, "true") == 0 || strcmp(v, "1") == 0);
}

static enum MHD_Result pod_log(struct MHD_Connection *c, const char *ns, const char *name)
{
	struct obj *pod = NULL;
	struct source *src = NULL;
	for (int s = 0; s < S.nsrcs && pod == NULL; s++)
		if ((pod = store_find(S.st, S.srcs[s], OBJ_POD, ns, name)) != NULL)
			src = S.srcs[s];
	if (pod == NULL)
		return not_found(c, R_POD, name);
	if (src->ops->open_log == NULL)
		return send_status(c, 405, "MethodNotAllowed", R_COUNT, NULL, "this host keeps no logs");
	struct log_req rq = { .ns = ns, .pod = name, .vm = obj_label(pod, "vm.kubevirt.io/name"),
			      .container = arg(c, "container"), .follow = arg_true(c, "follow"),
			      .previous = arg_true(c, "previous"), .timestamps = arg_true(c, "timestamps"),
			      .tail_lines = -1 };
	const char *t = arg(c, "tailLines"), *since = arg(c, "sinceSeconds");
	char *end = NULL;
	if (t && ((rq.tail_lines = strtol(t, &end, 10)) < 0 || *end))
		return send_status(c, 400, "BadRequest", R_COUNT, NULL, "tailLines: not a number of lines");
	if (since && ((rq.since_s = strtol(since, &end, 10)) < 1 || *end))
		return send_status(c, 400, "BadRequest", R_COUNT, NULL, "sinceSeconds: not a number of seconds");
	struct logconn *lc = xcalloc(1, sizeof *lc);
	lc->c = c;
	lc->src = src;
	buf_init(&lc->out);
	char *err = NULL;
	lc->ls = src->ops->open_log(src, &rq, logconn_data, logconn_end, lc, &err);
	if (lc->ls == NULL) {
		free(lc);
		enum MHD_Result rc = send_status(c, 400, "BadRequest", R_COUNT, NULL, "%s", err ? err : "no log");
		free(err);
		return rc;
	}
	struct MHD_Response *resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64 * 1024, logconn_read, lc,
								       logconn_free);
	MHD_add_response_header(resp, "Content-Type", "text/plain");
	enum MHD_Result rc = MHD_queue_response(c, 200, resp);
	MHD_destroy_response(resp);
	return rc;
}

/* ---- kvcon's own read-only subresources (not KubeVirt's: docs/ENGINE-SERVICE.md): what the engine keeps on
 * its host and KubeVirt's API has no field for, for kvcon's diagnose, bundle and VM view ---- */

/* GET the VMI's NAME/kvcon-domainxml: the libvirt domain XML kvcon defined for the current
 * execution (application/xml). */
static enum MHD_Result vmi_domainxml(struct MHD_Connection *c, const char *ns, const char *name)
{
	struct source *src = NULL;
	for (int s = 0; s < S.nsrcs && src == NULL; s++)
		if (store_find(S.st, S.srcs[s], OBJ_VMI, ns, name))
			src = S.srcs[s];
	if (src == NULL)
		return not_found(c, R_VMI, name);
	const char *sl = engine_serial_log(src, ns, name);
	const char *slash = sl ? strrchr(sl, '/') : NULL;
	if (slash == NULL)
		return send_status(c, 404, "NotFound", R_VMI, name, "the VMI %s/%s has no current execution", ns, name);
	char *xp = xasprintf("%.*s/domain.xml", (int)(slash - sl), sl), why[UTIL_WHY_LEN];
	size_t len = 0;
	/* the run directory is QEMU's account's: root's own file there, not a link or FIFO the account put in its
	 * place (it would serve any of the host's files) */
	const uid_t owners[] = { geteuid() };
	char *xml = util_read_file_checked(xp, owners, 1, DOMXML_READ_MAX, &len, why);
	if (xml == NULL && errno != ENOENT)
		log_warn("engine serve: %s: %s", xp, why);
	free(xp);
	if (xml == NULL)
		return send_status(c, 404, "NotFound", R_VMI, name, "the domain XML of %s/%s's execution could not be read",
				   ns, name);
	if (strlen(xml) != len) { /* send_text sends a string */
		free(xml);
		return send_status(c, 500, "InternalError", R_VMI, name, "the domain XML of %s/%s is not text", ns, name);
	}
	return send_text(c, 200, xml, "application/xml");
}

/* GET virtualmachines/NAME/kvcon-storage: the VM's volumes and the files behind them on the engine's host (the
 * storage chain's JSON array, kube/storage.h's shape with the engine's file links). */
static enum MHD_Result vm_storage(struct MHD_Connection *c, const char *ns, const char *name)
{
	struct source *src = source_of(ns, name);
	if (src == NULL)
		return not_found(c, R_VM, name);
	json_object *o = src->ops->storage_json ? src->ops->storage_json(src, ns, name) : NULL;
	if (o == NULL)
		return send_status(c, 404, "NotFound", R_VM, name, "no storage record for %s/%s", ns, name);
	return send_json(c, 200, o);
}

/* ---- routing ---- */

static bool valid_name(const char *s)
{
	return s && *s && strlen(s) <= 253 && manifest_dns_subdomain(s);
}

static enum MHD_Result route(struct MHD_Connection *c, struct reqctx *rq, const char *url, const char *method)
{
	char path[1024];
	size_t ul = strlen(url);
	if (ul >= sizeof path)
		return send_status(c, 404, "NotFound", R_COUNT, NULL, "the server could not find the requested resource");
	memcpy(path, url, ul + 1);
	while (ul > 1 && path[ul - 1] == '/')
		path[--ul] = 0;
	bool handled;
	if (strcmp(method, "GET") == 0) {
		enum MHD_Result rc = discovery(c, path, &handled);
		if (handled)
			return rc;
	}
	/* /api/v1/... or /apis/{kubevirt.io,subresources.kubevirt.io}/v1/... */
	char *seg[12];
	int n = 0;
	for (char *s, *p = strtok_r(path, "/", &s); p && n < 12; p = strtok_r(NULL, "/", &s))
		seg[n++] = p;
	int i;
	bool sub_group = false, core;
	if (n >= 3 && strcmp(seg[0], "api") == 0 && strcmp(seg[1], "v1") == 0)
		i = 2, core = true;
	else if (n >= 4 && strcmp(seg[0], "apis") == 0 && strcmp(seg[2], "v1") == 0 &&
		 (strcmp(seg[1], "kubevirt.io") == 0 || (sub_group = strcmp(seg[1], "subresources.kubevirt.io") == 0)))
		i = 3, core = false;
	else
		return send_status(c, 404, "NotFound", R_COUNT, NULL, "the server could not find the requested resource");
	const char *ns = NULL, *plural, *name = NULL, *sub = NULL;
	if (n - i >= 2 && strcmp(seg[i], "namespaces") == 0 && n - i != 2) {
		ns = seg[i + 1];
		i += 2;
	}
	plural = seg[i++];
	if (i < n)
		name = seg[i++];
	if (i < n)
		sub = seg[i++];
	int pf_at = sub_group && sub && strcmp(sub, "portforward") == 0 ? i : -1; /* PORT[/PROTOCOL] follow */
	if (i < n && pf_at < 0)
		return send_status(c, 404, "NotFound", R_COUNT, NULL, "the server could not find the requested resource");
	enum res r;
	for (r = 0; r < R_COUNT; r++)
		if (strcmp(RES[r].plural, plural) == 0 && (*RES[r].group == 0) == core)
			break;
	if (r == R_COUNT)
		return send_status(c, 404, "NotFound", R_COUNT, NULL, "the server could not find the requested resource");
	if ((ns && !manifest_dns_label(ns)) || (name && !valid_name(name)))
		return send_status(c, 400, "BadRequest", R_COUNT, NULL, "invalid namespace or name in the path");
	if (ns && !RES[r].namespaced && !(r == R_NS && name == NULL))
		return send_status(c, 404, "NotFound", R_COUNT, NULL, "the server could not find the requested resource");
	if (r == R_NS && ns && name == NULL) /* /api/v1/namespaces/NAME */
		name = ns, ns = NULL;
	if (sub_group) {
		if (pf_at >= 0 && (r == R_VMI || r == R_VM) && ns && name && strcmp(method, "GET") == 0) {
			enum MHD_Result mrc = MHD_NO;
			char *perr = NULL;
			int code = apipf_serve(c, source_of(ns, name), ns, name, (const char *const *)seg + pf_at, n - pf_at,
					       &mrc, &perr);
			if (code)
				mrc = send_status(c, (unsigned)code, code == 404 ? "NotFound" : "BadRequest", R_VMI, name,
						  "%s", perr);
			free(perr);
			return mrc;
		}
		if (r == R_VMI && ns && name && sub && (strcmp(sub, "console") == 0 || strcmp(sub, "vnc") == 0) &&
		    strcmp(method, "GET") == 0)
			return console_ws(c, ns, name, sub[0] == 'v');
		if (ns == NULL || name == NULL || sub == NULL || strcmp(method, "PUT") != 0)
			return send_status(c, 405, "MethodNotAllowed", R_COUNT, NULL,
					   "the server does not allow this method on the requested resource");
		return subresource(c, rq, r, ns, name, sub);
	}
	if (r == R_POD && ns && name && sub && strcmp(sub, "log") == 0 && strcmp(method, "GET") == 0)
		return pod_log(c, ns, name);
	bool domxml = r == R_VMI && sub && strcmp(sub, "kvcon-domainxml") == 0;
	if ((domxml || (r == R_VM && sub && strcmp(sub, "kvcon-storage") == 0)) && ns && name) {
		if (strcmp(method, "GET") != 0) /* kvcon's own read-only subresources */
			return send_status(c, 405, "MethodNotAllowed", R_COUNT, NULL, "%s is read-only", sub);
		return domxml ? vmi_domainxml(c, ns, name) : vm_storage(c, ns, name);
	}
	if (sub && strcmp(sub, "status") != 0)
		return send_status(c, 404, "NotFound", R_COUNT, NULL, "the server could not find the requested resource");
	if (strcmp(method, "GET") == 0) {
		const char *w = arg(c, "watch");
		if (w && (strcmp(w, "true") == 0 || strcmp(w, "1") == 0))
			return watch(c, r, ns, name);
		if (name)
			return get_one(c, r, ns, name);
		return list(c, r, ns);
	}
	if (sub)
		return send_status(c, 405, "MethodNotAllowed", R_COUNT, NULL, "status is written by the engine only");
	if (r == R_KV)
		return send_status(c, 405, "MethodNotAllowed", R_KV, name,
				   "the KubeVirt object %s/%s is the engine service's own (kvcon engine serve): it cannot "
				   "be created, changed or deleted through the API", KV_NS, KV_NAME);
	if (strcmp(method, "POST") == 0 && r == R_VM && ns && name == NULL)
		return create_vm(c, rq, ns);
	if (strcmp(method, "POST") == 0 && r == R_NS && name == NULL)
		return create_ns(c, rq);
	if (strcmp(method, "POST") == 0 && r == R_VMIM && ns && name == NULL)
		return create_vmim(c, rq, ns);
	if (strcmp(method, "DELETE") == 0 && r == R_VMIM && ns && name)
		return delete_vmim(c, rq, ns, name);
	if (strcmp(method, "DELETE") == 0 && r == R_NS && name)
		return delete_ns(c, name);
	if (strcmp(method, "PATCH") == 0 && r == R_NS && name)
		return patch_ns(c, rq, name);
	if ((strcmp(method, "PATCH") == 0 || strcmp(method, "PUT") == 0) && r == R_VM && ns && name)
		return patch_vm(c, rq, ns, name, method[1] == 'U');
	if (strcmp(method, "DELETE") == 0 && ns && name) {
		int grace = grace_of(c, rq, "gracePeriodSeconds");
		if (r == R_VM)
			return act(c, rq, r, ACT_DELETE, ns, name, grace, NULL, 200, true);
		if (r == R_VMI) {
			/* the execution ends; the VM's run strategy decides what follows (Always: a new one) */
			const struct vm *vm = NULL;
			struct source *src = source_of(ns, name);
			if (src)
				vm = (const struct vm *)store_find(S.st, src, OBJ_VM, ns, name);
			bool always = vm && util_str_eq(vm->run_strategy, "Always");
			return act(c, rq, r, always ? ACT_RESTART : ACT_STOP, ns, name, grace, NULL, 200, true);
		}
	}
	return send_status(c, 405, "MethodNotAllowed", R_COUNT, NULL,
			   "the server does not allow this method on the requested resource");
}

/* ---- libmicrohttpd ---- */

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
				  const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
	(void)version;
	bool tls = cls != NULL;
	struct reqctx *rq = *con_cls;
	if (rq == NULL) {
		rq = xcalloc(1, sizeof *rq);
		buf_init(&rq->body);
		*con_cls = rq;
		/* before any body is read: no token, nothing buffered (MHD drops the rest and closes) */
		if (tls && !apitls_auth_ok(&S.tls, MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization")))
			return send_status(c, 401, "Unauthorized", R_COUNT, NULL, "Unauthorized");
		if (tls)
			apigate_authed(c);
		const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
		if (cl && strtoull(cl, NULL, 10) > MAX_BODY)
			return send_status(c, 413, NULL, R_COUNT, NULL, "the request body is larger than %u bytes", MAX_BODY);
		return MHD_YES;
	}
	if (*upload_size) {
		if (rq->body.len + *upload_size > MAX_BODY)
			rq->too_big = true;
		else
			buf_add(&rq->body, upload, *upload_size);
		*upload_size = 0;
		return MHD_YES;
	}
	if (tls && !apitls_auth_ok(&S.tls, MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization")))
		return send_status(c, 401, "Unauthorized", R_COUNT, NULL, "Unauthorized");
	log_debug("engine serve: %s %s", method, url);
	return route(c, rq, url, method);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode t)
{
	(void)cls;
	(void)c;
	(void)t;
	struct reqctx *rq = *con_cls;
	if (rq) {
		buf_free(&rq->body);
		free(rq);
		*con_cls = NULL;
	}
}

static void mhd_run_all(void);

static void on_mhd_timer(void *arg)
{
	(void)arg;
	S.timer = NULL;
	mhd_run_all();
}

static void mhd_run_all(void)
{
	MHD_UNSIGNED_LONG_LONG t, best = (MHD_UNSIGNED_LONG_LONG)-1;
	for (int i = 0; i < S.nd; i++) {
		MHD_run(S.d[i]);
		if (MHD_get_timeout(S.d[i], &t) == MHD_YES && t < best)
			best = t;
	}
	loop_timer_cancel(S.timer);
	S.timer = NULL;
	if (best != (MHD_UNSIGNED_LONG_LONG)-1)
		S.timer = loop_timer_add(best, on_mhd_timer, NULL);
}

static void on_epoll(int fd, short revents, void *arg)
{
	(void)fd;
	(void)revents;
	(void)arg;
	mhd_run_all();
}

static void on_pass(void *arg)
{
	(void)arg;
	mhd_run_all();
}

static unsigned mhd_connections(void)
{
	unsigned n = 0;
	for (int i = 0; i < S.nd; i++) {
		const union MHD_DaemonInfo *info = MHD_get_daemon_info(S.d[i], MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
		n += info ? info->num_connections : 1;
	}
	return n;
}

/* The idle exit (docs/ENGINE-SERVICE.md, "Started on demand, gone when idle"): the service leaves once it has
 * had no client (connection, watch, console or VNC) for S.idle_exit seconds while nothing needed reconciling:
 * no running execution to reap, no VM to (re)start, no request under way. Every tick that finds one of them
 * starts the period again. */
static void idle_check(uint64_t now)
{
	struct stat sb;
	if (S.sock_path && S.nd == 1 &&
	    (lstat(S.sock_path, &sb) < 0 || sb.st_dev != S.sock_dev || sb.st_ino != S.sock_ino)) {
		log_info("engine serve: %s was removed or replaced: nobody can reach this service: exiting", S.sock_path);
		printf("engine service: %s was removed or replaced: exiting\n", S.sock_path);
		fflush(stdout);
		S.sock_path = NULL;
		loop_quit(0);
		return;
	}
	if (S.idle_exit <= 0)
		return;
	unsigned nc = mhd_connections(), waiting = apigate_unauthed(); /* a connection without the token is no client */
	nc = nc > waiting ? nc - waiting : 0;
	char *why = S.watchers || wsconns || apipf_active() || nc ? xasprintf("%u client connection(s)", nc)
								    : engine_needs_reconciler();
	if (why) {
		if (S.busy_why == NULL || strcmp(why, S.busy_why) != 0)
			log_info("engine serve: staying: %s", why);
		free(S.busy_why);
		S.busy_why = why;
		S.busy_ms = now;
		return;
	}
	free(S.busy_why);
	S.busy_why = NULL;
	if (now - S.busy_ms >= (uint64_t)S.idle_exit * 1000) {
		log_info("engine serve: no client for %ld s and nothing to reconcile: exiting", S.idle_exit);
		printf("engine service idle for %ld s with nothing to reconcile: exiting\n", S.idle_exit);
		fflush(stdout);
		S.idle_exit = 0;
		loop_quit(0);
	}
}

__attribute__((format(printf, 2, 0))) static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	(void)cls;
	char msg[512];
	vsnprintf(msg, sizeof msg, fmt, ap);
	msg[strcspn(msg, "\n")] = 0;
	log_info("engine serve: libmicrohttpd: %s", msg);
}

static int start_daemon(int lfd, bool tls, char **err)
{
	unsigned flags = MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_ALLOW_UPGRADE | MHD_USE_ERROR_LOG |
			 (tls ? MHD_USE_TLS : 0);
	struct MHD_OptionItem opts[] = {
		{ MHD_OPTION_LISTEN_SOCKET, lfd, NULL },
		{ MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)on_completed, NULL },
		{ MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)mhd_log, NULL },
		/* idle connections; a waiting watch is suspended, not idle. HTTPS: anyone local can connect, so the gate
		 * (apigate.h) holds a connection to a short deadline until its request head carries the token. */
		{ MHD_OPTION_CONNECTION_LIMIT, tls ? apigate_connection_limit() : 512, NULL },
		{ MHD_OPTION_CONNECTION_TIMEOUT, tls ? APIGATE_DEADLINE_S : APIGATE_IDLE_TIMEOUT_S, NULL },
		{ tls ? MHD_OPTION_NOTIFY_CONNECTION : MHD_OPTION_END, (intptr_t)apigate_notify, NULL },
		{ MHD_OPTION_HTTPS_MEM_KEY, 0, S.tls.key_pem },
		{ MHD_OPTION_HTTPS_MEM_CERT, 0, S.tls.cert_pem },
		{ MHD_OPTION_END, 0, NULL },
	};
	struct MHD_Daemon *d = MHD_start_daemon(flags, 0, NULL, NULL, on_request, tls ? (void *)&S : NULL,
						MHD_OPTION_ARRAY, opts, MHD_OPTION_END);
	if (d == NULL) {
		*err = xstrdup(tls ? "libmicrohttpd refused the HTTPS listener" : "libmicrohttpd refused the socket");
		return -1;
	}
	const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_EPOLL_FD);
	S.d[S.nd] = d;
	S.lfd[S.nd] = loop_fd_add(info->epoll_fd, POLLIN, on_epoll, NULL);
	S.nd++;
	return 0;
}

static int listen_unix(const char *path, char **err)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof a.sun_path) {
		*err = xasprintf("%s: the socket path is too long", path);
		return -1;
	}
	strcpy(a.sun_path, path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		*err = xasprintf("socket: %s", strerror(errno));
		return -1;
	}
	/* a service that answers keeps its socket: a second one on the same root is refused, not swapped in */
	int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (probe >= 0 && connect(probe, (struct sockaddr *)&a, sizeof a) == 0) {
		close(probe);
		close(fd);
		*err = xasprintf("%s: another engine service answers there", path);
		return -1;
	}
	if (probe >= 0)
		close(probe);
	unlink(path);
	mode_t old = umask(077);
	int rc = bind(fd, (struct sockaddr *)&a, sizeof a);
	umask(old);
	if (rc < 0 || chmod(path, 0600) < 0 || listen(fd, 64) < 0) {
		*err = xasprintf("%s: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

static int listen_tcp(int *port, char **err)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	int one = 1;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)*port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	if (fd < 0) {
		*err = xasprintf("socket: %s", strerror(errno));
		return -1;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	socklen_t al = sizeof a;
	/* a deep accept queue: a burst of connections (the gate closes those without the token) leaves room */
	if (bind(fd, (struct sockaddr *)&a, sizeof a) < 0 || listen(fd, SOMAXCONN) < 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &al) < 0) {
		*err = xasprintf("127.0.0.1:%d: %s", *port, strerror(errno));
		close(fd);
		return -1;
	}
	*port = ntohs(a.sin_port);
	return fd;
}

static void on_stop_signal(int sig, void *arg)
{
	(void)sig;
	(void)arg;
	loop_quit(0);
}

static void state_free(void)
{
	for (size_t i = 0; i < S.count; i++) {
		struct wev *w = &S.ring[(S.head + i) % S.ring_size];
		obj_free(w->o);
		free(w->text);
	}
	free(S.ring);
	S.ring = NULL;
	for (size_t i = 0; i < S.nnsx; i++) {
		free(S.nsx[i]);
		free(S.nsxmeta[i]);
	}
	free(S.nsx);
	free(S.nsxmeta);
	S.nsx = NULL;
	S.nsxmeta = NULL;
	S.nnsx = 0;
	S.count = 0;
	while (S.vmims) {
		struct vmim *m = S.vmims;
		S.vmims = m->next;
		vmim_free(m);
	}
	const char *k;
	void *v;
	for (size_t it = 0; hmap_next(&S.cache, &it, &k, &v);) {
		struct cent *c = v;
		free(c->body);
		free(c->text);
		free(c);
	}
	hmap_free(&S.cache);
	free(S.kv.body);
	free(S.kv.text);
	memset(&S.kv, 0, sizeof S.kv);
}

/* SOCKET.pid: this process's pid beside its socket (how scripts and tests find a service started on demand) */
static void write_pid(const char *sock)
{
	S.pid_path = xasprintf("%s.pid", sock);
	char text[32], why[UTIL_WHY_LEN];
	int n = snprintf(text, sizeof text, "%ld\n", (long)getpid());
	if (util_write_file_why(S.pid_path, text, (size_t)n, 0600, why) < 0)
		log_info("engine serve: %s: %s", S.pid_path, why);
}

static void remove_pid(void)
{
	if (S.pid_path == NULL)
		return;
	char *t = util_read_file(S.pid_path, NULL);
	if (t && atol(t) == (long)getpid())
		unlink(S.pid_path);
	free(t);
	free(S.pid_path);
	S.pid_path = NULL;
}

int apisrv_serve(const struct apisrv_config *c, char **errp)
{
	const char *kubeconfig = c->kubeconfig;
	int port = c->https_port, rc;
	loop_signal(SIGTERM, on_stop_signal, NULL);
	S.idle_exit = c->idle_exit;
	S.busy_ms = util_now_ms();
	S.st = c->st;
	S.srcs = c->srcs;
	S.nsrcs = c->nsrcs;
	S.started = util_wall_s();
	util_uuid_v4(S.node_uid);
	hmap_init(&S.cache);
	/* the watch history: $KVCON_ENGINE_WATCH_HISTORY events (tests make it small to reach 410 quickly) */
	const char *h = getenv("KVCON_ENGINE_WATCH_HISTORY");
	S.ring_size = h && atol(h) >= 4 && atol(h) <= 1000000 ? (size_t)atol(h) : RING_DEFAULT;
	S.ring = xcalloc(S.ring_size, sizeof *S.ring);
	nsx_load();
	vmims_load();
	vmims_update();
	int lid = store_listen(S.st, on_store, NULL);
	kv_refresh();
	if (port < 0) { /* engine.api-port in the config file, or $KVCON_ENGINE_API_PORT */
		char *ps = engine_setting("KVCON_ENGINE_API_PORT", "engine.api-port");
		if (ps && *ps)
			port = atoi(ps);
		free(ps);
	}
	char *err = NULL, *spath = xstrdup(c->socket), *kpath = NULL;
	char *state = util_state_dir();
	if (port > 65535) {
		err = xasprintf("%d: not a port", port);
		goto fail;
	}
	int fd = listen_unix(spath, &err);
	if (fd < 0 || start_daemon(fd, false, &err) < 0)
		goto fail;
	write_pid(spath);
	struct stat sb;
	if (lstat(spath, &sb) == 0) {
		S.sock_path = spath;
		S.sock_dev = sb.st_dev;
		S.sock_ino = sb.st_ino;
	}
	printf("socket: %s\n", spath);
	if (port >= 0) {
		if (apitls_load(state, &S.tls, &err) < 0)
			goto fail;
		int tfd = listen_tcp(&port, &err);
		if (tfd < 0 || start_daemon(tfd, true, &err) < 0)
			goto fail;
		kpath = kubeconfig ? xstrdup(kubeconfig) : util_path_join(state, "engine-kubeconfig");
		if (apitls_kubeconfig(kpath, &S.tls, port, &err) < 0)
			goto fail;
		printf("https: https://127.0.0.1:%d\nkubeconfig: %s\n", port, kpath);
	}
	printf("engine serving\n");
	fflush(stdout);
	int hook = loop_hook_add(on_pass, NULL);
	S.tick = loop_timer_add(1000, on_tick, NULL);
	rc = loop_run();
	loop_hook_remove(hook);
	loop_timer_cancel(S.tick);
	loop_timer_cancel(S.timer);
	for (struct watcher *w = S.watchers; w; w = w->next) {
		w->ended = true;
		wake(w);
	}
	while (wsconns)
		ws_close(wsconns);
	apipf_close_all();
	for (int i = 0; i < S.nd; i++) {
		loop_fd_remove(S.lfd[i]);
		MHD_stop_daemon(S.d[i]);
	}
	struct stat now_sb; /* the socket, unless it is another's now */
	if (lstat(spath, &now_sb) == 0 && now_sb.st_dev == S.sock_dev && now_sb.st_ino == S.sock_ino)
		unlink(spath);
	S.sock_path = NULL;
	remove_pid();
	free(S.busy_why);
	S.busy_why = NULL;
	store_unlisten(S.st, lid);
	state_free();
	free(spath);
	free(kpath);
	free(state);
	apitls_free(&S.tls);
	return rc;
fail:
	if (S.pid_path) { /* listening already (the HTTPS side failed) */
		unlink(spath);
		remove_pid();
	}
	*errp = err ? err : xstrdup("cannot listen");
	free(spath);
	free(kpath);
	free(state);
	store_unlisten(S.st, lid);
	state_free();
	return -1;
}
