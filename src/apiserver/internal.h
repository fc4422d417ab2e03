/* What the files of the engine service's API server (src/apiserver/) share: the resources it serves, the state of
 * one server (struct apisrv), and the functions one file offers the others. Private to src/apiserver/: apisrv.h is
 * the module's interface. Everything here runs on the loop thread.
 *
 *   apisrv.c     daemon and HTTP glue: listeners, libmicrohttpd in the loop, authentication, routing, idle exit
 *   discovery.c  the resources (RES[], from model/registry.c), discovery and OpenAPI documents
 *   objects.c    JSON helpers; objects as the API serves them (VM, event, Namespace, Node, the KubeVirt CR); the
 *                events of the service's own controllers (apis_event_record)
 *   kept.c       the objects the controllers keep on disk (vmim.c, vmirs.c, storage.c): one JSON file an object
 *   reply.c      responses: JSON, text, Status objects (404, 422 ...)
 *   list.c       selection (namespace, name, label and field selectors), get, list with continue, Tables
 *   watch.c      resourceVersions, the watch ring and its watchers (410 for what the ring no longer holds)
 *   vmwrite.c    writes to VMs: create, patch/update (apply), delete, the lifecycle subresources
 *   vmim.c       VirtualMachineInstanceMigration: the migration controller and its objects on disk
 *   vmirs.c      VirtualMachineInstanceReplicaSet: the replica set controller, its members, the scale subresource
 *   nsx.c        namespaces: those in use and those created through the API (kept on disk), their deletion
 *   storage.c    PersistentVolumeClaims, PersistentVolumes, the classes `local` and `local-wffc`, CDI DataVolumes
 *                (dvsource.c: sources and phases; dvimport.c: imports and clones)
 *   secrets.c    Secrets and ConfigMaps (kept on disk, 0600), read by the engine through engine/esecret.h
 *   wsbridge.c   the serial console and VNC as KubeVirt's WebSocket subresources
 *   subres.c     pods/NAME/log and kvcon's own read-only subresources (domain XML, storage) */
#ifndef KVCON_APISERVER_INTERNAL_H
#define KVCON_APISERVER_INTERNAL_H

#include <json-c/json.h>
#include <microhttpd.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/buf.h"
#include "core/hmap.h"
#include "engine/apitls.h"
#include "model/obj.h"
#include "model/registry.h"
#include "model/source.h"

#define MAX_BODY (4u << 20)
/* where the engine's KubeVirt CR lives, as a real install names it */
#define KV_NS "kubevirt"
#define KV_NAME "kubevirt"
#define VMIM_NPHASE 8
#define KV_NCOND 5 /* the KubeVirt CR's conditions (kv_json) */

struct apisel;
struct wsconn;

/* ---- resources ---- */

enum res { R_VM, R_VMI, R_POD, R_EVENT, R_NS, R_NODE, R_VMIM, R_KV, R_VMIRS, R_PVC, R_PV, R_SC, R_DV, R_SECRET, R_CM,
	   R_COUNT };

/* Each resource is a kind of the registry (model/registry.c: names, group, short names, scope, store kind) with
 * the verbs this server allows on it; RES[r] reads as the table it was, filled from the registry on first use. */
struct resdef {
	const char *plural, *singular, *kind, *group, *short1, *short2;
	const char *version; /* "v1", "v1beta1" */
	bool namespaced;
	int obj_kind; /* enum obj_kind, -1 for synthesised kinds */
	const char *verbs;
	enum kind_id id; /* its row of model/registry.c */
};

const struct resdef *apis_res_table(void);
/* The resource of API group g (NULL or "": the core group) and version v named plural, or R_COUNT. */
enum res apis_res_find(const char *g, const char *v, const char *plural);
#define RES (apis_res_table())

/* ---- one server's state ---- */

/* The last JSON text served for a store object: its resourceVersion, the text (with that resourceVersion) and, to
 * tell a change, the SHA-256 of the JSON without it: there is one of these per store object (100,000s), a digest
 * rather than a second copy of the text. */
#define APIS_SUM_LEN 32
struct cent {
	char key[UID_LEN + 4];
	bool summed; /* sum is the last body's (false: the next refresh is a change) */
	unsigned char sum[APIS_SUM_LEN];
	uint64_t rv;
	char *text; /* JSON as served */
};

/* One watch event kept for watchers that are behind. */
struct wev {
	uint64_t rv;
	enum res r;
	const char *type; /* ADDED, MODIFIED, DELETED */
	struct obj *o;    /* packed copy (namespace, name, labels for the filters); NULL for a migration (text) */
	char *text;
	struct source *from; /* a move between the engine's hosts: the host it left (o->src the one it is on) */
};

struct watcher {
	struct apisrv *srv;
	struct MHD_Connection *c;
	enum res r;
	char *ns, *name;
	struct apisel *ls, *fs;
	struct source *only; /* a watch through /kvcon-host/NAME: that host's objects alone */
	uint64_t rv; /* last sent */
	bool bookmarks, table, suspended, ended, sent_columns;
	uint64_t deadline_ms, next_bookmark_ms;
	struct buf out;
	struct loop_fd *gone; /* while suspended: the client's socket, to notice that it left */
	struct watcher *next;
};

struct agentq;
struct reqctx {
	struct buf body;
	bool too_big;
	struct agentq *aq; /* a guest agent subresource's answer under way (subres.c) */
};

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

/* The events one of the service's own controllers recorded about one object (objects.c, apis_event_record): the
 * UIDs of those in the store, oldest first, at most APIS_EVLOG_MAX (the oldest goes); a repeat of the last one
 * (same type, reason and message) counts on it, as client-go's recorder aggregates. */
#define APIS_EVLOG_MAX 32
struct apis_evlog {
	char uids[APIS_EVLOG_MAX][37];
	int n;
	const char *type, *reason; /* the last one's, interned */
	char *message;
	int count;
	int64_t first;
};

/* A VirtualMachineInstanceReplicaSet (vmirs.c): kept by the service in a file of its own
 * (engine-data/vmirs/NS_NAME.json, fsync'd before the request is answered or a member is created) with the names of
 * its members. A member is an engine VM of the template (runStrategy Always) that the API does not list: what it
 * serves is the member's VMI, owned by the replica set, as KubeVirt's replica set controller makes it. */
struct vmirs_member {
	char *name;
	bool deleting; /* its deletion was asked: dropped from the list once the engine has no record of it */
};
struct vmirs {
	char *ns, *name;
	char uid[37];
	json_object *obj; /* apiVersion, kind, metadata (without resourceVersion), spec: as created and patched */
	struct vmirs_member *members;
	size_t nmembers;
	bool deleting;    /* deleted: its members go first, then it */
	char *failure;    /* the last member the engine refused, why (condition ReplicaFailure) */
	uint64_t failed_ms; /* when: asked again VMIRS_RETRY_MS later, or at the next change of the spec */
	bool paused_seen; /* spec.paused as the controller last acted on it (SuccessfulPaused, SuccessfulResumed) */
	struct apis_evlog ev; /* its events (SuccessfulCreate, SuccessfulDelete, FailedCreate ...) */
	uint64_t rv;
	char *body, *text; /* JSON without / with resourceVersion */
	struct vmirs *next;
};

/* An object removed from the store during this loop turn, its DELETED not sent yet: one added again with the same
 * UID in the same turn (the engine moves a VM between its hosts: a migration) is MODIFIED instead. */
struct gone {
	struct cent *c;
	struct obj *o; /* packed copy, for the watch filters */
	char *text;    /* as served, without the new resourceVersion */
	struct gone *next;
};

/* The objects of one store kind in namespace/name order, which lists page through: a page costs a binary search
 * and its own objects, not a sort of the whole kind (100,000 VMs are 200 pages of 500). Built from the store on its
 * first read, then kept: an object that comes or goes is put in or taken out (apis_order_note), one that changes
 * keeps its place (its UID, namespace and name: the entry finds the object by UID). */
struct oent {
	char *key; /* ns/name */
	struct source *src;
	char uid[UID_LEN];
};
struct apis_order {
	struct oent *e;
	size_t n, cap;
	bool valid;
	unsigned builds; /* how many times it was built (tests) */
};

/* The KubeVirt CR as last served. */
struct kv_state {
	char status[KV_NCOND][6]; /* each condition's last status, for its transition time */
	int64_t since[KV_NCOND];
	uint64_t rv;
	char *body, *text; /* JSON without / with resourceVersion */
};

/* One server: what apisrv_serve was given, its listeners and everything it serves. */
struct apisrv {
	struct store *st;
	struct source **srcs;
	int nsrcs;
	/* a request through /kvcon-host/NAME/... (kvcon -c HOST beside this set's service): while it is routed,
	 * srcs is that host alone, only names it and all_srcs/all_n keep the whole set (apisrv.c) */
	struct source *only, **all_srcs;
	int all_n;
	uint64_t rv;
	struct hmap cache;
	struct wev *ring;
	size_t ring_size, head, count; /* ring[head] is the oldest */
	uint64_t oldest_rv; /* watches from before it get 410 */
	struct watcher *watchers;
	struct apitls tls;
	bool https;
	struct MHD_Daemon *d[2];
	struct apisrv_daemon {
		struct apisrv *srv;
		bool tls;
	} dcls[2]; /* each daemon's callback argument */
	struct loop_fd *lfd[2];
	int nd;
	struct loop_timer *timer, *tick;
	int64_t started;
	char node_uid[37];
	char **nsx; /* namespaces created through the API (kept in $XDG_STATE_HOME/kvcon/engine-namespaces) */
	char **nsxmeta; /* each one's labels and annotations as applied: {"labels":..,"annotations":..} text, or NULL */
	size_t nnsx;
	struct wsconn *wsconns; /* the console and VNC WebSocket bridges (wsbridge.c) */
	struct vmim *vmims;
	unsigned vmim_ids;
	bool vmim_posted;
	struct gone *gone; /* removed this loop turn, their DELETED not sent yet */
	bool gone_posted;
	struct kv_state kv;
	struct storage *stor; /* claims, volumes, DataVolumes (storage.c) */
	struct secrets *secrets; /* Secrets and ConfigMaps (secrets.c) */
	long idle_exit;      /* seconds without a client and with nothing to reconcile before the service exits; 0 never */
	uint64_t busy_ms;    /* the last time a client was connected or something needed reconciling */
	char *busy_why;      /* what last kept it (logged when it changes) */
	char *pid_path;      /* SOCKET.pid, removed at exit */
	char *sock_path;     /* the unix socket, and its identity: a service whose socket was removed or replaced */
	dev_t sock_dev;      /* (and which serves no HTTPS) can be reached by nobody: it leaves */
	ino_t sock_ino;
	struct vmirs *vmirss;  /* the replica sets (vmirs.c) */
	bool https_sticky;   /* HTTPS by default on the root's recorded port (leaves with its socket as if it had none) */
	struct apis_order order[OBJ_KIND_COUNT]; /* lists' order of each store kind (list.c) */
	struct { /* building the texts of the objects held before the server listened (watch.c, apis_warm_start) */
		int kind, src;
		size_t i, built;
		uint64_t since;
		bool done;
	} warm;
};

/* ---- selecting objects (list.c) ---- */

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

/* ---- discovery.c ---- */

const char *apis_api_version(enum res r);
enum res apis_res_of_kind(enum obj_kind k);
enum MHD_Result apis_discovery(struct apisrv *srv, struct MHD_Connection *c, const char *p, bool *handled);

/* ---- objects.c ---- */

json_object *apis_jstr(const char *s);
json_object *apis_jget(json_object *o, const char *k);
const char *apis_jgets(json_object *o, const char *k);
json_object *apis_jobj(json_object *o, const char *k);
char *apis_jtext(json_object *o);
json_object *apis_time_json(int64_t t);
json_object *apis_manifest_json(const char *text);
json_object *apis_mig_state_json(const struct migration_state *m);
json_object *apis_obj_to_json(const struct obj *o);
json_object *apis_ns_json(struct apisrv *srv, const char *name);
json_object *apis_node_json(struct apisrv *srv, struct source *src);
enum MHD_Result apis_patch_node(struct apisrv *srv, struct MHD_Connection *c, struct reqctx *rq, const char *name);
void apis_kv_refresh(struct apisrv *srv);
/* Records an event about the object KIND ns/name (uid) of one of the service's controllers (component) in the
 * store, now, in log (a repeat of its last event: count + 1). */
void apis_event_record(struct apisrv *srv, struct apis_evlog *log, const char *kind, const char *ns, const char *name,
		       const char *uid, const char *type, const char *reason, const char *component, const char *msg);
/* Removes log's events from the store (their object is gone) and frees what log holds. */
void apis_evlog_drop(struct apisrv *srv, struct apis_evlog *log);

/* ---- kept.c ---- */

/* STATE/engine-data/SUB, a directory of kept objects. */
char *apis_kept_dir(const char *sub);
/* Writes the object's file, DIR/NS_NAME.json (DIR/NAME.json when ns is NULL or "": a cluster-scoped object):
 * temporary file, fsync, rename, directory fsync; dir made when missing. 0, or -1 with *err (caller frees). */
int apis_kept_write(const char *dir, const char *ns, const char *name, const char *text, char **err);
/* Removes the object's file (a warning if it cannot) and fsyncs dir. */
void apis_kept_remove(const char *dir, const char *ns, const char *name);
/* Called for each DIR/ *.json file: f is its JSON (NULL when unreadable or not JSON; freed after the call, take a
 * reference to keep it), why trust_read_file's reason when it could not be read (else NULL). */
typedef void apis_kept_fn(void *ctx, const char *path, json_object *f, const char *why);
void apis_kept_load(const char *dir, apis_kept_fn *fn, void *ctx);

/* ---- nsx.c ---- */

const char **apis_namespaces(struct apisrv *srv, size_t *n);
void apis_nsx_load(struct apisrv *srv);
bool apis_ns_exists(struct apisrv *srv, const char *name);
enum MHD_Result apis_create_ns(struct apisrv *srv, struct MHD_Connection *c, struct reqctx *rq);
enum MHD_Result apis_patch_ns(struct apisrv *srv, struct MHD_Connection *c, struct reqctx *rq, const char *name);
enum MHD_Result apis_delete_ns(struct apisrv *srv, struct MHD_Connection *c, struct reqctx *rq, const char *name);
/* The namespace is Terminating: creates in it are refused (apis_ns_refuse_create). */
bool apis_ns_terminating(struct apisrv *srv, const char *name);
enum MHD_Result apis_ns_refuse_create(struct MHD_Connection *c, struct reqctx *rq, enum res r, const char *ns);
/* A terminating namespace's object (j, as apis_ns_json makes it): deletionTimestamp, phase, conditions. */
void apis_ns_terminating_json(struct apisrv *srv, const char *name, json_object *j);
void apis_nsx_tick(struct apisrv *srv);
char *apis_nsx_busy(struct apisrv *srv);

/* ---- reply.c ---- */

enum MHD_Result apis_send_text(struct MHD_Connection *c, unsigned code, char *text, const char *ctype);
enum MHD_Result apis_send_json(struct MHD_Connection *c, unsigned code, json_object *o);
enum MHD_Result apis_send_status(struct MHD_Connection *c, unsigned code, const char *reason, enum res r,
				 const char *name, const char *fmt, ...) __attribute__((format(printf, 6, 7)));
enum MHD_Result apis_send_invalid(struct MHD_Connection *c, const char *name, const char *why);
enum MHD_Result apis_send_invalid_res(struct MHD_Connection *c, enum res r, const char *name, const char *why);
enum MHD_Result apis_not_found(struct MHD_Connection *c, enum res r, const char *name);
json_object *apis_status_success(void);
const char *apis_arg(struct MHD_Connection *c, const char *k);

/* ---- list.c ---- */

bool apis_wants_table(struct MHD_Connection *c);
json_object *apis_table_row(enum res r, json_object *o, const char *include);
json_object *apis_table_new(enum res r, uint64_t rv, const char *cont, bool columns);
bool apis_matches(const struct filter *f, struct lookup *l);
void apis_items_free(struct item *items, size_t n);
struct item *apis_select_items(struct apisrv *srv, enum res r, const struct filter *f, size_t *n);
/* One page of a store kind's objects (RES[r].obj_kind >= 0) that f selects, in apis_select_items' order: those
 * after the key `after` (NULL: from the first), at most limit (0: all). text[i] are the texts as served and key
 * the last one's, borrowed until the next change of the store; more: objects remain after the page; remaining:
 * how many, or -1 when a label or field selector makes that unknown (the API server then leaves
 * remainingItemCount out); visited: index entries looked at. apis_page_free frees the arrays only. */
struct page {
	const char **text;
	const char *key;
	size_t n;
	bool more;
	long remaining;
	size_t visited;
};
void apis_page(struct apisrv *srv, enum res r, const struct filter *f, const char *after, size_t limit,
	       struct page *p);
void apis_page_free(struct page *p);
/* The store told a change of kind (apis_on_store): the order takes an object that came, leaves one that went. */
void apis_order_note(struct apisrv *srv, enum obj_kind kind, const struct obj *old, const struct obj *new_);
void apis_order_free(struct apisrv *srv);
/* The namespaces of kind's objects (nsx.c): added to *out (interned strings), *n of them. */
void apis_order_namespaces(struct apisrv *srv, enum obj_kind kind, const char ***out, size_t *n);
/* Whether kind has an object in namespace ns. */
bool apis_order_has_ns(struct apisrv *srv, enum obj_kind kind, const char *ns);
int apis_parse_filter(struct MHD_Connection *c, enum res r, struct filter *f, char **err);
void apis_filter_free(struct filter *f);
enum MHD_Result apis_get_one(struct apisrv *srv, struct MHD_Connection *c, enum res r, const char *ns, const char *name);
enum MHD_Result apis_list(struct apisrv *srv, struct MHD_Connection *c, enum res r, const char *ns);

/* ---- watch.c ---- */

void apis_cent_key(char *out, size_t len, const struct obj *o);
void apis_ring_push(struct apisrv *srv, enum res r, const char *type, const struct obj *o, const char *text);
bool apis_publish(struct apisrv *srv, json_object *j, char **body, char **text, uint64_t *rv);
struct cent *apis_refresh(struct apisrv *srv, const struct obj *o, bool notify);
/* Every served text dropped (the cache emptied and freed). */
void apis_cache_free(struct apisrv *srv);
void apis_on_store(void *arg, enum obj_kind kind, const struct obj *old, const struct obj *new_);
/* Builds the texts of the store's objects in slices on the loop (the store is listened to already). */
void apis_warm_start(struct apisrv *srv);
void apis_wake(struct watcher *w);
void apis_wake_watchers(struct apisrv *srv);
enum MHD_Result apis_watch(struct apisrv *srv, struct MHD_Connection *c, enum res r, const char *ns, const char *name);

/* ---- vmwrite.c ---- */

struct source *apis_source_of(struct apisrv *srv, const char *ns, const char *name);
json_object *apis_body_json(struct MHD_Connection *c, struct reqctx *rq, enum MHD_Result *rc);
enum MHD_Result apis_create_vm(struct apisrv *srv, struct MHD_Connection *c, struct reqctx *rq, const char *ns);
enum MHD_Result apis_patch_vm(struct apisrv *srv, struct MHD_Connection *c, struct reqctx *rq, const char *ns, const char *name,
				bool replace);
void apis_action_done(void *arg, int status, const char *message);
enum MHD_Result apis_evict_pod(struct apisrv *srv, struct MHD_Connection *c, struct reqctx *rq, const char *ns, const char *name);
int apis_grace_of(struct MHD_Connection *c, struct reqctx *rq, const char *key);
bool apis_dry_run(struct MHD_Connection *c, struct reqctx *rq);
enum MHD_Result apis_act(struct apisrv *srv, struct MHD_Connection *c, struct reqctx *rq, enum res r, enum action a, const char *ns,
			   const char *name, int grace, const char *target, unsigned ok_code, bool reply_obj);
enum MHD_Result apis_subresource(struct apisrv *srv, struct MHD_Connection *c, struct reqctx *rq, enum res r, const char *ns,
				   const char *name, const char *sub);

/* ---- vmim.c ---- */

void apis_vmim_free(struct vmim *m);
void apis_vmims_load(struct apisrv *srv);
void apis_vmims_settle_loaded(struct apisrv *srv);
void apis_vmims_update(struct apisrv *srv);
enum MHD_Result apis_create_vmim(struct apisrv *srv, struct MHD_Connection *c, struct reqctx *rq, const char *ns);
enum MHD_Result apis_migrate_sub(struct apisrv *srv, struct MHD_Connection *c, struct reqctx *rq, const char *ns, const char *name);
int apis_vmim_evacuate(struct apisrv *srv, struct source *src, const char *ns, const char *vmi, char **err);
enum MHD_Result apis_delete_vmim(struct apisrv *srv, struct MHD_Connection *c, struct reqctx *rq, const char *ns, const char *name);
/* Deletes every migration of namespace ns as its DELETE does (a terminating namespace, nsx.c). */
void apis_vmim_delete_ns(struct apisrv *srv, const char *ns);

/* ---- vmirs.c ---- */

void apis_vmirs_load(struct apisrv *srv);
void apis_vmirs_free_all(struct apisrv *srv);
void apis_vmirs_sync(struct apisrv *srv);
/* The replica set whose member the engine VM ns/name is, or NULL. */
struct vmirs *apis_vmirs_owner(struct apisrv *srv, const char *ns, const char *name);
/* j (o as served, owned) as the API shows it: NULL for a member's VM (not listed), a member's VMI owned by its
 * replica set. */
json_object *apis_vmirs_filter(struct apisrv *srv, const struct obj *o, json_object *j);
/* Writes (create, patch, update, delete) and the scale subresource. */
enum MHD_Result apis_vmirs_request(struct apisrv *srv, struct MHD_Connection *c, struct reqctx *rq, const char *method,
				   const char *ns, const char *name, const char *sub);
/* DELETE of a member's VMI: the member goes, the replica set makes another. */
enum MHD_Result apis_vmirs_delete_member(struct apisrv *srv, struct MHD_Connection *c, struct reqctx *rq,
					 struct vmirs *rs, const char *ns, const char *name);
/* Deletes every replica set of namespace ns as its DELETE does, members first (a terminating namespace). */
void apis_vmirs_delete_ns(struct apisrv *srv, const char *ns);

/* ---- storage.c ---- */

struct storage;
void apis_storage_load(struct apisrv *srv);
void apis_storage_free(struct apisrv *srv);
void apis_storage_tick(struct apisrv *srv);
char *apis_storage_busy(struct apisrv *srv);
bool apis_storage_in_ns(struct apisrv *srv, const char *ns);
const char *apis_storage_text_at(struct apisrv *srv, enum res r, size_t i, const char **ns, const char **name);
void apis_storage_cells(enum res r, json_object *o, json_object *cells);
enum MHD_Result apis_storage_write(struct apisrv *srv, struct MHD_Connection *c, struct reqctx *rq, enum res r,
				   const char *method, const char *ns, const char *name);
void apis_storage_vm_applied(struct apisrv *srv, const char *ns, const char *name, json_object *vm);
/* Deletes every DataVolume and claim of namespace ns as their DELETEs do (a terminating namespace). */
void apis_storage_delete_ns(struct apisrv *srv, const char *ns);

/* ---- secrets.c ---- */

struct secrets;
void apis_secrets_load(struct apisrv *srv);
void apis_secrets_free(struct apisrv *srv);
void apis_secrets_tick(struct apisrv *srv);
bool apis_secrets_in_ns(struct apisrv *srv, const char *ns);
const char *apis_secrets_text_at(struct apisrv *srv, enum res r, size_t i, const char **ns, const char **name);
void apis_secrets_cells(enum res r, json_object *o, json_object *cells);
enum MHD_Result apis_secrets_write(struct apisrv *srv, struct MHD_Connection *c, struct reqctx *rq, enum res r,
				   const char *method, const char *ns, const char *name);
/* Deletes every Secret and ConfigMap of namespace ns as their DELETEs do (a terminating namespace). */
void apis_secrets_delete_ns(struct apisrv *srv, const char *ns);

/* ---- wsbridge.c ---- */

void apis_ws_close(struct apisrv *srv, struct wsconn *w);
enum MHD_Result apis_console_ws(struct apisrv *srv, struct MHD_Connection *c, const char *ns, const char *name, bool vnc);

/* ---- subres.c ---- */

enum MHD_Result apis_pod_log(struct apisrv *srv, struct MHD_Connection *c, const char *ns, const char *name);
/* GET virtualmachineinstances/NAME/{guestosinfo,userlist,filesystemlist} (what: engine/gagent.h's); the request
 * ends while its answer is under way: apis_agentq_ended from the completion callback */
enum MHD_Result apis_vmi_agent(struct apisrv *srv, struct MHD_Connection *c, struct reqctx *rq, const char *ns,
			       const char *name, int what);
void apis_agentq_ended(struct reqctx *rq);
enum MHD_Result apis_vmi_domainxml(struct apisrv *srv, struct MHD_Connection *c, const char *ns, const char *name);
enum MHD_Result apis_vm_storage(struct apisrv *srv, struct MHD_Connection *c, const char *ns, const char *name);

/* ---- apisrv.c ---- */

bool apis_valid_name(const char *s);

#endif
