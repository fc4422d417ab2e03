/* The engine service's storage: PersistentVolumeClaims, PersistentVolumes, the StorageClasses `local` (the
 * default, Immediate) and `local-wffc` (WaitForFirstConsumer: its claims stay Pending until a VM that uses them is
 * started, the engine's gate telling) and CDI's DataVolumes (v1beta1). A claim of either class is a file of the
 * requested size (sparse) in the engine's volume directory, <volumes>/<namespace>/<claim>.img, the file the engine
 * gives a VM's persistentVolumeClaim (or dataVolume) volume; it is Bound to a PersistentVolume pvc-<claim uid>
 * whose reclaim policy (Delete) removes the file with the claim. Files placed there by hand are adopted as claims
 * (their volumes Retain the file). A DataVolume owns its claim and fills it (blank; http, registry or a clone of
 * another claim: dvimport.c, the phases as dvsource.c says); a VM's dataVolumeTemplates make their DataVolumes,
 * and the engine starts a VM only once its claims are ready (engine/volumes.h: the gate).
 *
 * Durability: each object is a file under engine-data/storage/<plural>/ (written as the records are: temporary
 * file, fsync, rename, directory fsync), stored before it is acted on: a claim is stored Pending before its file
 * is made and Bound after its volume is stored; a deletion is stored (deletionTimestamp) before the file goes. A
 * restarted service finishes what the files say was under way (provisions Pending claims, deletes Terminating
 * ones, starts interrupted imports again). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <microhttpd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "apiserver/dvimport.h"
#include "apiserver/dvsource.h"
#include "apiserver/internal.h"
#include "core/intern.h"
#include "core/log.h"
#include "core/trust.h"
#include "core/util.h"
#include "core/xmalloc.h"
#include "engine/apisel.h"
#include "engine/engine.h"
#include "engine/manifest.h"
#include "engine/volumes.h"
#include "model/obj.h"
#include "model/store.h"

#define SC_NAME "local"
#define SC_PROVISIONER "kvcon.io/local"
#define WFFC_MSG "waiting for first consumer to be created before binding"
#define SELECTED_NODE "volume.kubernetes.io/selected-node"
#define NCLASSES 2

/* The classes the service serves: the same local files, bound at once or on first use. */
static const struct {
	const char *name, *uid, *mode;
	bool dflt;
} CLASSES[NCLASSES] = {
	{ SC_NAME, "6b76636f-6e00-4c6f-8361-6c0000000001", "Immediate", true },
	{ "local-wffc", "6b76636f-6e00-4c6f-8361-6c0000000002", "WaitForFirstConsumer", false },
};
#define DEFAULT_MAX (100ull << 30) /* engine.volume-max */
#define IMPORT_TIMEOUT 3600        /* engine.import-timeout, seconds */
#define SCAN_EVERY_S 10

struct sobj {
	enum res r;
	char *ns, *name; /* ns "" for PersistentVolumes */
	json_object *j;  /* as stored, without resourceVersion */
	uint64_t rv;
	char *body, *text;
	struct dvimport *imp; /* a DataVolume's import under way */
	char *failed;         /* the last provisioning failure or wait reported (once, not at every tick) */
	char *consumer;       /* a claim of class local-wffc: the node a VM that uses it starts on (the gate) */
	struct sobj *next;
};

struct storage {
	struct sobj *objs;
	struct sobj sc[NCLASSES]; /* the classes, served, not stored */
	char *dir;      /* engine-data/storage */
	char *vols;     /* the engine's volume directory */
	uint64_t max;
	long timeout;
	int64_t scanned;
	unsigned events;
};

/* Which DataVolume an import is for: by name and uid, as it may be deleted (and made again) meanwhile. */
struct dv_ticket {
	struct apisrv *srv;
	char *ns, *name, uid[37];
};

static void ticket_free(void *arg)
{
	struct dv_ticket *t = arg;
	if (t == NULL)
		return;
	free(t->ns);
	free(t->name);
	free(t);
}

static struct storage *ST(struct apisrv *srv)
{
	return srv->stor;
}

/* ---- the objects ---- */

static struct sobj *find(struct apisrv *srv, enum res r, const char *ns, const char *name)
{
	for (struct sobj *s = ST(srv)->objs; s; s = s->next)
		if (s->r == r && strcmp(s->ns, ns ? ns : "") == 0 && strcmp(s->name, name) == 0)
			return s;
	return NULL;
}

static json_object *at(json_object *o, const char *a, const char *b)
{
	json_object *x = apis_jget(o, a);
	return b ? apis_jget(x, b) : x;
}

static const char *str_at(json_object *o, const char *a, const char *b, const char *c)
{
	json_object *x = at(o, a, b);
	if (c)
		x = apis_jget(x, c);
	return x && json_object_is_type(x, json_type_string) ? json_object_get_string(x) : NULL;
}

static const char *phase_of(const struct sobj *s)
{
	const char *p = str_at(s->j, "status", "phase", NULL);
	return p ? p : "";
}

static char *record_dir(struct apisrv *srv, enum res r)
{
	return xasprintf("%s/%s", ST(srv)->dir, RES[r].plural);
}

/* Writes s's record. 0, or -1 with *err (caller frees). */
static int store_rec(struct apisrv *srv, const struct sobj *s, char **err)
{
	char *text = apis_jtext(s->j), *d = record_dir(srv, s->r);
	int rc = apis_kept_write(d, s->ns, s->name, text, err);
	free(text);
	free(d);
	return rc;
}

static void publish(struct apisrv *srv, struct sobj *s, const char *type)
{
	if (apis_publish(srv, json_tokener_parse(json_object_to_json_string(s->j)), &s->body, &s->text, &s->rv)) {
		apis_ring_push(srv, s->r, type, NULL, s->text);
		apis_wake_watchers(srv);
	}
}

/* Stores and publishes s (a change of its object). */
static void save(struct apisrv *srv, struct sobj *s)
{
	char *err = NULL;
	if (store_rec(srv, s, &err) < 0) {
		log_warn("engine serve: %s", err);
		free(err);
	}
	publish(srv, s, s->body ? "MODIFIED" : "ADDED");
}

static void sobj_free(struct sobj *s)
{
	if (s->imp)
		ticket_free(dvimport_cancel(s->imp));
	free(s->failed);
	free(s->consumer);
	free(s->ns);
	free(s->name);
	if (s->j)
		json_object_put(s->j);
	free(s->body);
	free(s->text);
	free(s);
}

static struct sobj *add(struct apisrv *srv, enum res r, const char *ns, const char *name, json_object *j)
{
	struct sobj *s = xcalloc(1, sizeof *s);
	s->r = r;
	s->ns = xstrdup(ns ? ns : "");
	s->name = xstrdup(name);
	s->j = j;
	s->next = ST(srv)->objs;
	ST(srv)->objs = s;
	return s;
}

/* Removes s's events from the store (they would keep its namespace listed, as the API server's namespace
 * deletion takes them too). */
static void drop_events(struct apisrv *srv, const struct sobj *s)
{
	const char *uid = str_at(s->j, "metadata", "uid", NULL);
	if (uid == NULL)
		return;
	size_t n;
	struct obj *const *evs = store_objs(srv->st, srv->srcs[0], OBJ_EVENT, &n);
	char (*gone)[UID_LEN] = xcalloc(n + 1, sizeof *gone);
	size_t ng = 0;
	for (size_t i = 0; i < n; i++) {
		const struct event *e = (const struct event *)evs[i];
		if (strcmp(e->inv_uid, uid) == 0 && util_str_eq(e->inv_kind, RES[s->r].kind))
			memcpy(gone[ng++], evs[i]->uid, UID_LEN);
	}
	for (size_t i = 0; i < ng; i++)
		store_remove(srv->st, srv->srcs[0], OBJ_EVENT, gone[i]);
	free(gone);
}

/* Removes s: its record, its events, then a DELETED event. */
static void drop(struct apisrv *srv, struct sobj *s)
{
	drop_events(srv, s);
	char *d = record_dir(srv, s->r);
	apis_kept_remove(d, s->ns, s->name);
	free(d);
	for (struct sobj **p = &ST(srv)->objs; *p; p = &(*p)->next)
		if (*p == s) {
			*p = s->next;
			break;
		}
	if (s->text) {
		srv->rv++;
		json_object *j = json_tokener_parse(s->text);
		char rv[24];
		snprintf(rv, sizeof rv, "%llu", (unsigned long long)srv->rv);
		json_object_object_add(apis_jobj(j, "metadata"), "resourceVersion", json_object_new_string(rv));
		char *text = apis_jtext(j);
		json_object_put(j);
		apis_ring_push(srv, s->r, "DELETED", NULL, text);
		free(text);
		apis_wake_watchers(srv);
	}
	sobj_free(s);
}

/* An event about s, as the controllers report them (kept in the store beside the engine's). */
static void event(struct apisrv *srv, const struct sobj *s, const char *type, const char *reason, const char *component,
		  const char *fmt, ...) __attribute__((format(printf, 6, 7)));
static void event(struct apisrv *srv, const struct sobj *s, const char *type, const char *reason, const char *component,
		  const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *msg = xvasprintf(fmt, ap);
	va_end(ap);
	struct event *e = (struct event *)obj_new(OBJ_EVENT);
	int64_t now = util_wall_s();
	char uid[37];
	util_uuid_v4(uid);
	e->o.src = srv->srcs[0];
	e->o.ns = intern(*s->ns ? s->ns : "default");
	e->o.name = xasprintf("%s.%.8s", s->name, uid);
	snprintf(e->o.uid, UID_LEN, "%s", uid);
	e->o.created = obj_epoch(now);
	e->type = intern(type);
	e->reason = intern(reason);
	e->message = msg;
	e->inv_kind = intern(RES[s->r].kind);
	e->inv_name = xstrdup(s->name);
	e->inv_ns = intern(s->ns);
	snprintf(e->inv_uid, UID_LEN, "%s", str_at(s->j, "metadata", "uid", NULL) ? str_at(s->j, "metadata", "uid", NULL) : "");
	e->count = 1;
	e->first = e->last = obj_epoch(now);
	e->component = intern(component);
	store_upsert(srv->st, &e->o);
	log_info("engine serve: %s %s/%s: %s: %s", RES[s->r].kind, s->ns, s->name, reason, msg);
}

static json_object *new_meta(json_object *from, const char *ns, const char *name, int64_t *created)
{
	json_object *md = json_object_new_object();
	char uid[37];
	util_uuid_v4(uid);
	json_object_object_add(md, "name", apis_jstr(name));
	if (ns)
		json_object_object_add(md, "namespace", apis_jstr(ns));
	json_object_object_add(md, "uid", apis_jstr(uid));
	*created = util_wall_s();
	json_object_object_add(md, "creationTimestamp", apis_time_json(*created));
	const char *keep[] = { "labels", "annotations", "ownerReferences" };
	for (size_t i = 0; i < 3; i++) {
		json_object *x = apis_jget(from, keep[i]);
		if (x && json_object_is_type(x, i == 2 ? json_type_array : json_type_object))
			json_object_object_add(md, keep[i], json_tokener_parse(json_object_to_json_string(x)));
	}
	return md;
}

static json_object *strings(const char *a, const char *b)
{
	json_object *l = json_object_new_array();
	json_object_array_add(l, apis_jstr(a));
	if (b)
		json_object_array_add(l, apis_jstr(b));
	return l;
}

/* ---- claims and their volumes ---- */

static char *claim_file(struct apisrv *srv, const char *ns, const char *name)
{
	char *q = xasprintf("%s/%s/%s.qcow2", ST(srv)->vols, ns, name);
	struct stat sb;
	if (lstat(q, &sb) == 0 && S_ISREG(sb.st_mode))
		return q;
	free(q);
	return xasprintf("%s/%s/%s.img", ST(srv)->vols, ns, name);
}

/* The class named (NULL: the default); -1 when the engine has none of that name. */
static int class_of(const char *sc)
{
	for (int i = 0; i < NCLASSES; i++)
		if (sc ? strcmp(sc, CLASSES[i].name) == 0 : CLASSES[i].dflt)
			return i;
	return -1;
}

static bool claim_wffc(const struct sobj *pvc)
{
	int c = class_of(str_at(pvc->j, "spec", "storageClassName", NULL));
	return c >= 0 && strcmp(CLASSES[c].mode, "WaitForFirstConsumer") == 0;
}

static uint64_t requested(json_object *spec)
{
	uint64_t b = 0;
	const char *q = str_at(spec, "resources", "requests", "storage");
	if (q == NULL || manifest_quantity(q, &b) < 0)
		return 0;
	return b;
}

static json_object *pv_json(const struct sobj *claim, const char *pv, const char *file, bool retain)
{
	json_object *o = json_object_new_object(), *md = json_object_new_object(), *spec = json_object_new_object(),
		    *cref = json_object_new_object(), *hp = json_object_new_object(), *an = json_object_new_object(),
		    *cap = json_object_new_object(), *st = json_object_new_object();
	json_object *cspec = apis_jget(claim->j, "spec");
	char uid[37];
	util_uuid_v4(uid);
	json_object_object_add(o, "apiVersion", apis_jstr("v1"));
	json_object_object_add(o, "kind", apis_jstr("PersistentVolume"));
	json_object_object_add(md, "name", apis_jstr(pv));
	json_object_object_add(md, "uid", apis_jstr(uid));
	json_object_object_add(md, "creationTimestamp", apis_time_json(util_wall_s()));
	json_object_object_add(an, "pv.kubernetes.io/provisioned-by", apis_jstr(SC_PROVISIONER));
	json_object_object_add(md, "annotations", an);
	json_object_object_add(md, "finalizers", strings("kubernetes.io/pv-protection", NULL));
	json_object_object_add(o, "metadata", md);
	json_object *modes = apis_jget(cspec, "accessModes");
	json_object_object_add(spec, "accessModes", modes ? json_object_get(modes) : strings("ReadWriteOnce", NULL));
	json_object_object_add(cap, "storage", apis_jstr(str_at(cspec, "resources", "requests", "storage")));
	json_object_object_add(spec, "capacity", cap);
	json_object_object_add(cref, "apiVersion", apis_jstr("v1"));
	json_object_object_add(cref, "kind", apis_jstr("PersistentVolumeClaim"));
	json_object_object_add(cref, "namespace", apis_jstr(claim->ns));
	json_object_object_add(cref, "name", apis_jstr(claim->name));
	json_object_object_add(cref, "uid", apis_jstr(str_at(claim->j, "metadata", "uid", NULL)));
	json_object_object_add(spec, "claimRef", cref);
	json_object_object_add(hp, "path", apis_jstr(file));
	json_object_object_add(hp, "type", apis_jstr("File"));
	json_object_object_add(spec, "hostPath", hp);
	json_object_object_add(spec, "persistentVolumeReclaimPolicy", apis_jstr(retain ? "Retain" : "Delete"));
	const char *sc = str_at(cspec, "storageClassName", NULL, NULL);
	json_object_object_add(spec, "storageClassName", apis_jstr(sc ? sc : SC_NAME));
	json_object_object_add(spec, "volumeMode", apis_jstr("Filesystem"));
	json_object_object_add(o, "spec", spec);
	json_object_object_add(st, "phase", apis_jstr("Bound"));
	json_object_object_add(o, "status", st);
	return o;
}

/* Reports why s has no file yet: an event when the reason is new (the tick tries again every second). */
static void provision_failed(struct apisrv *srv, struct sobj *s, const char *file, const char *why)
{
	char *m = xasprintf("%s: %s", file, why);
	if (!util_str_eq(s->failed, m))
		event(srv, s, "Warning", "ProvisioningFailed", "persistentvolume-controller", "%s", m);
	free(s->failed);
	s->failed = m;
}

/* A Pending claim of class local gets its file (made here, or adopted when it is there already), its volume, and
 * is Bound; in that order, each step stored before the next. */
static void provision(struct apisrv *srv, struct sobj *s)
{
	if (strcmp(phase_of(s), "Pending") != 0 || at(s->j, "metadata", "deletionTimestamp"))
		return;
	json_object *spec = apis_jget(s->j, "spec");
	if (class_of(str_at(spec, "storageClassName", NULL, NULL)) < 0)
		return; /* stays Pending (create reported it) */
	if (claim_wffc(s) && s->consumer == NULL && !str_at(s->j, "metadata", "annotations", SELECTED_NODE)) {
		/* stays Pending until a VM that uses it starts (the gate names its node), as the scheduler binds it */
		if (!util_str_eq(s->failed, WFFC_MSG))
			event(srv, s, "Normal", "WaitForFirstConsumer", "persistentvolume-controller", WFFC_MSG);
		free(s->failed);
		s->failed = xstrdup(WFFC_MSG);
		return;
	}
	uint64_t size = requested(spec);
	char *dir = xasprintf("%s/%s", ST(srv)->vols, s->ns), *file = claim_file(srv, s->ns, s->name);
	bool adopted = false;
	util_mkdir_p(dir, 0700);
	int fd = open(file, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd >= 0) {
		int rc = ftruncate(fd, (off_t)size);
		if (rc == 0)
			rc = fsync(fd);
		close(fd);
		util_fsync_dir(dir);
		if (rc < 0) {
			provision_failed(srv, s, file, strerror(errno));
			unlink(file);
			goto out;
		}
	} else {
		struct stat sb;
		if (errno != EEXIST || lstat(file, &sb) < 0 || !S_ISREG(sb.st_mode)) {
			provision_failed(srv, s, file, errno == EEXIST ? "not a regular file" : strerror(errno));
			goto out;
		}
		adopted = true; /* there already: a file placed by hand, or ours before a restart */
	}
	char *pv = xasprintf("pvc-%s", str_at(s->j, "metadata", "uid", NULL));
	struct sobj *v = find(srv, R_PV, "", pv);
	if (v == NULL) {
		v = add(srv, R_PV, "", pv, pv_json(s, pv, file, false));
		save(srv, v);
	}
	json_object_object_add(spec, "volumeName", apis_jstr(pv));
	json_object *an = apis_jobj(apis_jobj(s->j, "metadata"), "annotations");
	json_object_object_add(an, "pv.kubernetes.io/bind-completed", apis_jstr("yes"));
	json_object_object_add(an, "pv.kubernetes.io/bound-by-controller", apis_jstr("yes"));
	json_object_object_add(an, "volume.kubernetes.io/storage-provisioner", apis_jstr(SC_PROVISIONER));
	if (claim_wffc(s) && s->consumer) /* the scheduler's choice, as Kubernetes records it */
		json_object_object_add(an, SELECTED_NODE, apis_jstr(s->consumer));
	json_object *st = json_object_new_object(), *cap = json_object_new_object(), *modes = apis_jget(spec, "accessModes");
	json_object_object_add(st, "phase", apis_jstr("Bound"));
	json_object_object_add(st, "accessModes", modes ? json_object_get(modes) : strings("ReadWriteOnce", NULL));
	json_object_object_add(cap, "storage", apis_jstr(str_at(spec, "resources", "requests", "storage")));
	json_object_object_add(st, "capacity", cap);
	json_object_object_add(s->j, "status", st);
	save(srv, s);
	if (!adopted)
		event(srv, s, "Normal", "ProvisioningSucceeded", SC_PROVISIONER "_engine",
		      "Successfully provisioned volume %s", pv);
	free(pv);
	engine_volumes_changed();
out:
	free(dir);
	free(file);
}

/* A running VM of ns uses claim (a persistentVolumeClaim or dataVolume volume): kubernetes.io/pvc-protection. */
static bool claim_in_use(struct apisrv *srv, const char *ns, const char *claim)
{
	for (int i = 0; i < srv->nsrcs; i++) /* a host that has not read its records and domains yet: maybe in use */
		if (!engine_ready(srv->srcs[i]))
			return true;
	for (int i = 0; i < srv->nsrcs; i++) {
		size_t n;
		struct obj *const *vms = store_objs(srv->st, srv->srcs[i], OBJ_VM, &n);
		for (size_t k = 0; k < n; k++) {
			if (strcmp(vms[k]->ns, ns) != 0 || !engine_running(srv->srcs[i], ns, vms[k]->name))
				continue;
			json_object *j = apis_obj_to_json(vms[k]); /* its manifest: not the watch cache, empty after a restart */
			json_object *vols = at(apis_jget(at(j, "spec", "template"), "spec"), "volumes", NULL);
			bool uses = false;
			for (size_t v = 0; vols && json_object_is_type(vols, json_type_array) && v < json_object_array_length(vols); v++) {
				json_object *vol = json_object_array_get_idx(vols, v);
				uses |= util_str_eq(str_at(vol, "persistentVolumeClaim", "claimName", NULL), claim) ||
					util_str_eq(str_at(vol, "dataVolume", "name", NULL), claim);
			}
			if (j)
				json_object_put(j);
			if (uses)
				return true;
		}
	}
	return false;
}

/* A Terminating claim goes once no running VM uses it: its volume as the reclaim policy says, then itself. */
static void claim_finish_delete(struct apisrv *srv, struct sobj *s)
{
	if (claim_in_use(srv, s->ns, s->name))
		return;
	const char *pvn = str_at(s->j, "spec", "volumeName", NULL);
	struct sobj *v = pvn ? find(srv, R_PV, "", pvn) : NULL;
	if (v && util_str_eq(str_at(v->j, "spec", "persistentVolumeReclaimPolicy", NULL), "Delete")) {
		char *file = claim_file(srv, s->ns, s->name);
		if (unlink(file) < 0 && errno != ENOENT)
			log_warn("engine serve: cannot remove %s: %s", file, strerror(errno));
		char *d = xasprintf("%s/%s", ST(srv)->vols, s->ns);
		util_fsync_dir(d);
		free(d);
		free(file);
		drop(srv, v);
	} else if (v) {
		json_object_object_add(apis_jobj(v->j, "status"), "phase", apis_jstr("Released"));
		save(srv, v);
	}
	drop(srv, s);
	engine_volumes_changed();
}

static void claim_delete(struct apisrv *srv, struct sobj *s)
{
	json_object *md = apis_jobj(s->j, "metadata");
	if (apis_jget(md, "deletionTimestamp") == NULL) {
		json_object_object_add(md, "deletionTimestamp", apis_time_json(util_wall_s()));
		save(srv, s); /* stored before anything goes */
	}
	claim_finish_delete(srv, s);
}

static struct sobj *new_claim(struct apisrv *srv, const char *ns, const char *name, json_object *md_from, json_object *spec_from)
{
	json_object *o = json_object_new_object(), *spec = json_object_new_object();
	int64_t created;
	json_object *md = new_meta(md_from, ns, name, &created);
	json_object_object_add(md, "finalizers", strings("kubernetes.io/pvc-protection", NULL));
	json_object_object_add(o, "apiVersion", apis_jstr("v1"));
	json_object_object_add(o, "kind", apis_jstr("PersistentVolumeClaim"));
	json_object_object_add(o, "metadata", md);
	json_object *modes = apis_jget(spec_from, "accessModes");
	json_object_object_add(spec, "accessModes", modes && json_object_is_type(modes, json_type_array)
							    ? json_tokener_parse(json_object_to_json_string(modes))
							    : strings("ReadWriteOnce", NULL));
	json_object *res = json_object_new_object(), *req = json_object_new_object();
	json_object_object_add(req, "storage", apis_jstr(str_at(spec_from, "resources", "requests", "storage")));
	json_object_object_add(res, "requests", req);
	json_object_object_add(spec, "resources", res);
	const char *sc = str_at(spec_from, "storageClassName", NULL, NULL);
	json_object_object_add(spec, "storageClassName", apis_jstr(sc ? sc : SC_NAME));
	json_object_object_add(spec, "volumeMode", apis_jstr("Filesystem"));
	json_object_object_add(o, "spec", spec);
	json_object *st = json_object_new_object();
	json_object_object_add(st, "phase", apis_jstr("Pending"));
	json_object_object_add(o, "status", st);
	return add(srv, R_PVC, ns, name, o);
}

/* ---- DataVolumes ---- */

static void dv_set(struct apisrv *srv, struct sobj *d, const char *phase, const char *progress)
{
	json_object *st = apis_jobj(d->j, "status");
	bool changed = !util_str_eq(str_at(st, "phase", NULL, NULL), phase);
	json_object_object_add(st, "phase", apis_jstr(phase));
	if (progress)
		json_object_object_add(st, "progress", apis_jstr(progress));
	/* CDI's conditions: Bound (its claim), Ready, Running (the importer) */
	bool ok = strcmp(phase, "Succeeded") == 0, failed = strcmp(phase, "Failed") == 0,
	     running = strcmp(phase, "ImportInProgress") == 0 || strcmp(phase, "CloneInProgress") == 0;
	struct sobj *pvc = find(srv, R_PVC, d->ns, d->name);
	bool bound = pvc && strcmp(phase_of(pvc), "Bound") == 0;
	const char *err = str_at(st, "kvconError", NULL, NULL);
	json_object *conds = json_object_new_array(), *old = apis_jget(st, "conditions");
	struct {
		const char *type;
		bool status;
		const char *reason, *message;
	} cs[3] = {
		{ "Bound", bound, bound ? "Bound" : "Pending", NULL },
		{ "Ready", ok, ok ? "" : failed ? "Error" : running ? "TransferRunning" : "", ok ? "" : failed ? err : "" },
		{ "Running", running, running ? "Pod is running" : failed ? "Error" : ok ? "Completed" : "",
		  failed ? err : running ? (phase[0] == 'C' ? "Clone in progress" : "Import in progress") : "" },
	};
	char bm[300];
	snprintf(bm, sizeof bm, "PVC %s %s", d->name, bound ? "Bound" : "Pending");
	cs[0].message = bm;
	for (int i = 0; i < 3; i++) {
		json_object *c = json_object_new_object();
		const char *was = NULL, *since = NULL;
		for (size_t k = 0; old && json_object_is_type(old, json_type_array) && k < json_object_array_length(old); k++) {
			json_object *oc = json_object_array_get_idx(old, k);
			if (util_str_eq(str_at(oc, "type", NULL, NULL), cs[i].type)) {
				was = str_at(oc, "status", NULL, NULL);
				since = str_at(oc, "lastTransitionTime", NULL, NULL);
			}
		}
		const char *now = cs[i].status ? "True" : "False";
		json_object_object_add(c, "type", apis_jstr(cs[i].type));
		json_object_object_add(c, "status", apis_jstr(now));
		json_object_object_add(c, "reason", apis_jstr(cs[i].reason ? cs[i].reason : ""));
		json_object_object_add(c, "message", apis_jstr(cs[i].message ? cs[i].message : ""));
		json_object_object_add(c, "lastTransitionTime", since && util_str_eq(was, now) ? apis_jstr(since)
												: apis_time_json(util_wall_s()));
		json_object_object_add(c, "lastHeartbeatTime", apis_time_json(util_wall_s()));
		json_object_array_add(conds, c);
	}
	json_object_object_add(st, "conditions", conds);
	if (changed)
		save(srv, d);
	else
		publish(srv, d, "MODIFIED");
	if (changed)
		engine_volumes_changed();
}

/* pvc's controller is the DataVolume d (its ownerReferences name d's uid) */
static bool owns(const struct sobj *d, const struct sobj *pvc)
{
	json_object *refs = at(pvc->j, "metadata", "ownerReferences");
	for (size_t i = 0; refs && json_object_is_type(refs, json_type_array) && i < json_object_array_length(refs); i++)
		if (util_str_eq(str_at(json_object_array_get_idx(refs, i), "uid", NULL, NULL), str_at(d->j, "metadata", "uid", NULL)))
			return true;
	return false;
}


/* "from NS/NAME into NS/NAME" of a clone's events, as CDI writes them. */
static char *clone_what(const struct sobj *d, const struct dvs *src)
{
	return xasprintf("%s/%s into %s/%s", src->ns, src->name, d->ns, d->name);
}

static void import_done(void *arg, const char *err)
{
	struct dv_ticket *t = arg;
	struct sobj *d = find(t->srv, R_DV, t->ns, t->name);
	struct dvs src;
	char *why = NULL;
	if (d && util_str_eq(str_at(d->j, "metadata", "uid", NULL), t->uid)) {
		d->imp = NULL;
		if (dvs_parse(apis_jget(d->j, "spec"), d->ns, &src, &why) < 0)
			src.kind = DVS_HTTP; /* (stored by this service: parsed before) */
		const char *comp = dvs_component(src.kind);
		if (err) {
			json_object_object_add(apis_jobj(d->j, "status"), "kvconError", apis_jstr(err));
			event(t->srv, d, "Warning", "Error", comp, "%s", err);
			dv_set(t->srv, d, "Failed", NULL);
		} else {
			json_object_object_del(apis_jobj(d->j, "status"), "kvconError");
			dv_set(t->srv, d, "Succeeded", "100.0%");
			if (src.kind == DVS_PVC) {
				char *w = clone_what(d, &src);
				event(t->srv, d, "Normal", "CloneSucceeded", comp, "Successfully cloned from %s", w);
				free(w);
			} else
				event(t->srv, d, "Normal", "ImportSucceeded", comp, "Successfully imported into PVC %s", d->name);
		}
	}
	free(why);
	ticket_free(t);
}

/* A clone's source claim: there, Bound and filled (its own DataVolume Succeeded), not in a running VM's use. */
static enum dvs_src clone_source(struct apisrv *srv, const struct dvs *src, bool *filling)
{
	struct sobj *from = find(srv, R_PVC, src->ns, src->name), *fdv = find(srv, R_DV, src->ns, src->name);
	*filling = false;
	if (from == NULL || at(from->j, "metadata", "deletionTimestamp"))
		return DVS_SRC_MISSING;
	if (strcmp(phase_of(from), "Bound") != 0 || (fdv && owns(fdv, from) && strcmp(phase_of(fdv), "Succeeded") != 0)) {
		*filling = true; /* CDI waits for the source to be populated */
		return DVS_SRC_IN_USE;
	}
	return claim_in_use(srv, src->ns, src->name) ? DVS_SRC_IN_USE : DVS_SRC_READY;
}

/* Reports a wait's reason once (not at every tick); NULL forgets the last one. */
static void dv_wait_reason(struct apisrv *srv, struct sobj *d, const struct dvs *src, const char *reason)
{
	if (util_str_eq(d->failed, reason))
		return;
	free(d->failed);
	d->failed = reason ? xstrdup(reason) : NULL;
	if (reason && strcmp(reason, "CloneWithoutSource") == 0)
		event(srv, d, "Warning", reason, dvs_component(src->kind), "The source pvc %s doesn't exist", src->name);
	else if (reason)
		event(srv, d, "Warning", reason, dvs_component(src->kind), "a running VirtualMachine is using "
		      "PersistentVolumeClaim %s/%s: the clone waits until it stops", src->ns, src->name);
}

/* Its claim Bound and its copy scheduled: CDI's events on entering the Scheduled phase. */
static void dv_scheduled(struct apisrv *srv, struct sobj *d, const struct dvs *src)
{
	const char *comp = dvs_component(src->kind);
	event(srv, d, "Normal", "Bound", comp, "PVC %s Bound", d->name);
	if (src->kind == DVS_PVC) {
		char *w = clone_what(d, src);
		event(srv, d, "Normal", "CloneScheduled", comp, "Cloning from %s scheduled", w);
		free(w);
	} else
		event(srv, d, "Normal", "ImportScheduled", comp, "Import into %s scheduled", d->name);
}

/* Moves a DataVolume on: its claim made and Bound, then its source copied into it (dvsource.h's steps). */
static void dv_advance(struct apisrv *srv, struct sobj *d)
{
	const char *ph = phase_of(d);
	if (at(d->j, "metadata", "deletionTimestamp") || strcmp(ph, "Succeeded") == 0 || strcmp(ph, "Failed") == 0 || d->imp)
		return;
	json_object *spec = apis_jget(d->j, "spec"), *sspec = apis_jget(spec, "storage");
	if (sspec == NULL)
		sspec = apis_jget(spec, "pvc");
	struct dvs src;
	char *why = NULL;
	if (dvs_parse(spec, d->ns, &src, &why) < 0) { /* a record of another version's rules */
		json_object_object_add(apis_jobj(d->j, "status"), "kvconError", apis_jstr(why));
		dv_set(srv, d, "Failed", "N/A");
		free(why);
		return;
	}
	const char *comp = dvs_component(src.kind);
	bool filling = false;
	enum dvs_src ss = src.kind == DVS_PVC ? clone_source(srv, &src, &filling) : DVS_SRC_READY;
	struct sobj *pvc = find(srv, R_PVC, d->ns, d->name);
	if (pvc && !owns(d, pvc)) {
		/* a claim of that name that is not its own: CDI does not write into it */
		json_object_object_add(apis_jobj(d->j, "status"), "kvconError",
				       apis_jstr("a PersistentVolumeClaim of this name exists and is not this DataVolume's"));
		event(srv, d, "Warning", "ErrClaimNotValid", comp,
		      "PersistentVolumeClaim %s exists and is not owned by this DataVolume", d->name);
		dv_set(srv, d, "Failed", "N/A");
		return;
	}
	if (pvc == NULL && ss != DVS_SRC_MISSING) {
		json_object *md = json_object_new_object(), *refs = json_object_new_array(), *ref = json_object_new_object();
		json_object_object_add(ref, "apiVersion", apis_jstr("cdi.kubevirt.io/v1beta1"));
		json_object_object_add(ref, "kind", apis_jstr("DataVolume"));
		json_object_object_add(ref, "name", apis_jstr(d->name));
		json_object_object_add(ref, "uid", apis_jstr(str_at(d->j, "metadata", "uid", NULL)));
		json_object_object_add(ref, "controller", json_object_new_boolean(1));
		json_object_object_add(ref, "blockOwnerDeletion", json_object_new_boolean(1));
		json_object_array_add(refs, ref);
		json_object_object_add(md, "ownerReferences", refs);
		pvc = new_claim(srv, d->ns, d->name, md, sspec);
		json_object_put(md);
		save(srv, pvc);
		event(srv, d, "Normal", "Pending", comp, "PVC %s Pending", d->name);
	}
	if (pvc)
		provision(srv, pvc);
	enum dvs_claim cs = pvc && strcmp(phase_of(pvc), "Bound") == 0 ? DVS_CLAIM_BOUND
			    : pvc && claim_wffc(pvc) && pvc->consumer == NULL ? DVS_CLAIM_WFFC
								      : DVS_CLAIM_PENDING;
	struct dvs_step st = dvs_next(src.kind, ph, cs, ss);
	if (st.act == DVS_WAIT) {
		dv_wait_reason(srv, d, &src, filling ? NULL : st.reason);
		if (strcmp(ph, st.phase) != 0 && strcmp(st.phase, dvs_phase(src.kind, true)) == 0)
			dv_scheduled(srv, d, &src); /* a clone whose source is in use */
		if (strcmp(ph, st.phase) != 0 || d->body == NULL)
			dv_set(srv, d, st.phase, "N/A");
		return;
	}
	dv_wait_reason(srv, d, &src, NULL);
	if (st.act == DVS_SUCCEED) {
		event(srv, d, "Normal", "Bound", comp, "PVC %s Bound", d->name);
		dv_set(srv, d, "Succeeded", "100.0%");
		return;
	}
	char *w = src.kind == DVS_PVC ? clone_what(d, &src) : NULL;
	if (st.act == DVS_START && strcmp(ph, st.phase) != 0) {
		dv_scheduled(srv, d, &src);
		dv_set(srv, d, st.phase, "N/A");
	} else if (st.act == DVS_RESTART) {
		/* a copy a stopped service left: again from the start (CDI restarts its importer pod) */
		json_object *js = apis_jobj(d->j, "status");
		json_object_object_add(js, "restartCount", json_object_new_int(json_object_get_int(apis_jget(js, "restartCount")) + 1));
	}
	struct dv_ticket *t = xcalloc(1, sizeof *t);
	t->srv = srv;
	t->ns = xstrdup(d->ns);
	t->name = xstrdup(d->name);
	snprintf(t->uid, sizeof t->uid, "%s", str_at(d->j, "metadata", "uid", NULL));
	char *file = claim_file(srv, d->ns, d->name);
	/* the download and what it decompresses to: at most the claim's size and a tenth (a qcow2's metadata), and
	 * never more than engine.volume-max (a registry pull: engine.image-max-size, oci.h) */
	uint64_t size = requested(apis_jget(pvc->j, "spec")), bound = size + size / 10 + (16u << 20);
	if (bound > ST(srv)->max)
		bound = ST(srv)->max;
	if (src.kind == DVS_PVC) {
		char *from = claim_file(srv, src.ns, src.name);
		d->imp = dvimport_start(DVIMPORT_CLONE, from, NULL, file, size, bound, ST(srv)->timeout, import_done, t);
		free(from);
		event(srv, d, "Normal", "CloneInProgress", comp, "Cloning from %s in progress", w);
	} else {
		d->imp = dvimport_start(src.kind == DVS_REGISTRY ? DVIMPORT_REGISTRY : DVIMPORT_HTTP, src.url, src.checksum,
					file, size, bound, ST(srv)->timeout, import_done, t);
		event(srv, d, "Normal", "ImportInProgress", comp, "Import into %s in progress", d->name);
	}
	free(w);
	free(file);
	dv_set(srv, d, dvs_phase(src.kind, false), src.kind == DVS_PVC ? "N/A" : "0.00%");
}

static void dv_delete(struct apisrv *srv, struct sobj *d)
{
	if (d->imp) {
		ticket_free(dvimport_cancel(d->imp));
		d->imp = NULL;
	}
	struct sobj *pvc = find(srv, R_PVC, d->ns, d->name);
	bool owned = pvc && owns(d, pvc);
	drop(srv, d);
	if (owned)
		claim_delete(srv, pvc); /* the garbage collector's part: its claim goes with it */
	engine_volumes_changed();
}

/* The engine's gate (engine/volumes.h): KubeVirt's printableStatus while a VM's claim is not ready. A start (node:
 * the VM is to run there) is the first consumer a claim of class local-wffc waits for: the next tick binds it,
 * annotated with that node. */
static const char *gate(void *arg, const char *ns, const char *claim, bool dv, const char *node)
{
	struct apisrv *srv = arg;
	struct sobj *d = find(srv, R_DV, ns, claim), *pvc = find(srv, R_PVC, ns, claim);
	if (node && pvc && pvc->consumer == NULL && claim_wffc(pvc) && strcmp(phase_of(pvc), "Pending") == 0) {
		pvc->consumer = xstrdup(node);
		log_info("engine serve: claim %s/%s: a VM that uses it starts: binding (WaitForFirstConsumer)", ns, claim);
	}
	if (d) {
		const char *ph = phase_of(d);
		return strcmp(ph, "Succeeded") == 0 ? NULL : strcmp(ph, "Failed") == 0 ? "DataVolumeError" : "Provisioning";
	}
	if (pvc)
		return strcmp(phase_of(pvc), "Pending") == 0 ? "WaitingForVolumeBinding" : NULL;
	return dv ? "Provisioning" : NULL; /* a DataVolume not made yet (its VM's template comes next) */
}

/* ---- the class ---- */

static json_object *sc_json(struct apisrv *srv, int i)
{
	json_object *o = json_object_new_object(), *md = json_object_new_object(), *an = json_object_new_object();
	json_object_object_add(o, "apiVersion", apis_jstr("storage.k8s.io/v1"));
	json_object_object_add(o, "kind", apis_jstr("StorageClass"));
	json_object_object_add(md, "name", apis_jstr(CLASSES[i].name));
	json_object_object_add(md, "uid", apis_jstr(CLASSES[i].uid));
	json_object_object_add(md, "creationTimestamp", apis_time_json(srv->started));
	if (CLASSES[i].dflt)
		json_object_object_add(an, "storageclass.kubernetes.io/is-default-class", apis_jstr("true"));
	json_object_object_add(md, "annotations", an);
	json_object_object_add(o, "metadata", md);
	json_object_object_add(o, "provisioner", apis_jstr(SC_PROVISIONER));
	json_object_object_add(o, "reclaimPolicy", apis_jstr("Delete"));
	json_object_object_add(o, "volumeBindingMode", apis_jstr(CLASSES[i].mode));
	json_object_object_add(o, "allowVolumeExpansion", json_object_new_boolean(0));
	return o;
}

/* ---- adoption: files placed by hand ---- */

static bool image_name(const char *f, char *claim, size_t len)
{
	size_t n = strlen(f);
	const char *ext = n > 4 && strcmp(f + n - 4, ".img") == 0 ? ".img" : n > 6 && strcmp(f + n - 6, ".qcow2") == 0 ? ".qcow2" : NULL;
	if (f[0] == '.' || ext == NULL || n - strlen(ext) >= len)
		return false;
	snprintf(claim, len, "%.*s", (int)(n - strlen(ext)), f);
	return apis_valid_name(claim);
}

static void adopt_scan(struct apisrv *srv)
{
	DIR *d = opendir(ST(srv)->vols);
	struct dirent *de;
	while (d && (de = readdir(d))) {
		if (!manifest_dns_label(de->d_name))
			continue;
		char *nd = xasprintf("%s/%s", ST(srv)->vols, de->d_name);
		DIR *d2 = opendir(nd);
		struct dirent *fe;
		while (d2 && (fe = readdir(d2))) {
			char claim[254];
			struct stat sb;
			char *f = xasprintf("%s/%s", nd, fe->d_name);
			if (image_name(fe->d_name, claim, sizeof claim) && find(srv, R_PVC, de->d_name, claim) == NULL &&
			    lstat(f, &sb) == 0 && S_ISREG(sb.st_mode)) {
				bool released = false; /* a Retain volume whose claim was deleted keeps the file, unclaimed */
				for (struct sobj *v = ST(srv)->objs; v; v = v->next)
					released |= v->r == R_PV && util_str_eq(str_at(v->j, "spec", "hostPath", "path"), f);
				if (!released) {
					json_object *spec = json_object_new_object(), *res = json_object_new_object(),
						    *req = json_object_new_object(), *md = json_object_new_object(),
						    *an = json_object_new_object();
					char q[32];
					snprintf(q, sizeof q, "%lldKi", (long long)((sb.st_size + 1023) / 1024));
					json_object_object_add(req, "storage", apis_jstr(q));
					json_object_object_add(res, "requests", req);
					json_object_object_add(spec, "resources", res);
					json_object_object_add(an, "kvcon.io/adopted-file", apis_jstr(f));
					json_object_object_add(md, "annotations", an);
					struct sobj *s = new_claim(srv, de->d_name, claim, md, spec);
					json_object_put(md);
					json_object_put(spec);
					save(srv, s);
					provision(srv, s);
					/* the file was the user's: deleting the claim keeps it */
					struct sobj *v = find(srv, R_PV, "", str_at(s->j, "spec", "volumeName", NULL) ? str_at(s->j, "spec", "volumeName", NULL) : "");
					if (v) {
						json_object_object_add(apis_jobj(v->j, "spec"), "persistentVolumeReclaimPolicy",
								       apis_jstr("Retain"));
						save(srv, v);
					}
					log_info("engine serve: %s adopted as claim %s/%s", f, de->d_name, claim);
				}
			}
			free(f);
		}
		if (d2)
			closedir(d2);
		free(nd);
	}
	if (d)
		closedir(d);
}

/* ---- the service's side ---- */

struct loading {
	struct apisrv *srv;
	enum res r;
};

static void loaded(void *ctx, const char *path, json_object *o, const char *why)
{
	const struct loading *l = ctx;
	const char *ns = str_at(o, "metadata", "namespace", NULL), *name = str_at(o, "metadata", "name", NULL);
	if (o == NULL || name == NULL || !apis_valid_name(name) ||
	    (RES[l->r].namespaced && (ns == NULL || !manifest_dns_label(ns))))
		log_warn("engine serve: %s: %s", path, why ? why : "not an object kvcon stored; ignored");
	else
		publish(l->srv, add(l->srv, l->r, RES[l->r].namespaced ? ns : "", name, json_object_get(o)), "ADDED");
}

void apis_storage_load(struct apisrv *srv)
{
	struct storage *st = xcalloc(1, sizeof *st);
	srv->stor = st;
	char *state = util_state_dir();
	st->dir = util_path_join(state, "engine-data/storage");
	free(state);
	st->vols = engine_volume_dir();
	char *m = engine_setting("KVCON_ENGINE_VOLUME_MAX", "engine.volume-max");
	st->max = DEFAULT_MAX;
	if (m && *m && manifest_quantity(m, &st->max) < 0) {
		log_warn("engine serve: engine.volume-max %s is not a quantity: %llu bytes", m, DEFAULT_MAX);
		st->max = DEFAULT_MAX;
	}
	free(m);
	char *t = engine_setting("KVCON_ENGINE_IMPORT_TIMEOUT", "engine.import-timeout");
	st->timeout = t && atol(t) > 0 ? atol(t) : IMPORT_TIMEOUT;
	free(t);
	for (int i = 0; i < NCLASSES; i++) {
		st->sc[i].r = R_SC;
		st->sc[i].ns = xstrdup("");
		st->sc[i].name = xstrdup(CLASSES[i].name);
		st->sc[i].j = sc_json(srv, i);
		publish(srv, &st->sc[i], "ADDED");
	}
	const enum res kinds[] = { R_PV, R_PVC, R_DV };
	for (size_t k = 0; k < 3; k++) {
		char *d = record_dir(srv, kinds[k]);
		struct loading l = { srv, kinds[k] };
		apis_kept_load(d, loaded, &l);
		free(d);
	}
	engine_volume_gate(gate, srv);
	engine_volumes_changed(); /* the starts held until now (engine_volume_gate_hold) */
	adopt_scan(srv);
	st->scanned = util_wall_s();
	apis_storage_tick(srv);
}

void apis_storage_free(struct apisrv *srv)
{
	struct storage *st = ST(srv);
	if (st == NULL)
		return;
	engine_volume_gate(NULL, NULL);
	while (st->objs) {
		struct sobj *s = st->objs;
		st->objs = s->next;
		sobj_free(s);
	}
	for (int i = 0; i < NCLASSES; i++) {
		free(st->sc[i].ns);
		free(st->sc[i].name);
		json_object_put(st->sc[i].j);
		free(st->sc[i].body);
		free(st->sc[i].text);
	}
	free(st->dir);
	free(st->vols);
	free(st);
	srv->stor = NULL;
}

/* Once a second: what the records say is under way goes on (claims to provision or delete, DataVolumes to import,
 * those whose VM is gone), imports report their progress, files placed by hand are adopted. */
void apis_storage_tick(struct apisrv *srv)
{
	struct storage *st = ST(srv);
	bool ready = true;
	for (int i = 0; i < srv->nsrcs; i++)
		ready &= engine_ready(srv->srcs[i]);
	/* a snapshot: deleting one object may delete others (a DataVolume's claim, a claim's volume) */
	size_t n = 0, cap = 0;
	struct sobj **snap = NULL;
	for (struct sobj *s = st->objs; s; s = s->next) {
		if (n == cap)
			snap = xreallocarray(snap, cap = cap ? cap * 2 : 16, sizeof *snap);
		snap[n++] = s;
	}
	for (size_t i = 0; i < n; i++) {
		struct sobj *s = st->objs;
		while (s && s != snap[i])
			s = s->next;
		if (s == NULL)
			continue; /* gone with an earlier one */
		if (s->r == R_PVC && at(s->j, "metadata", "deletionTimestamp")) {
			if (ready) /* which VMs run (and use it) is known once every host has been read */
				claim_finish_delete(srv, s);
			continue;
		}
		if (s->r == R_PVC)
			provision(srv, s);
		if (s->r != R_DV)
			continue;
		/* the garbage collector: a DataVolume of a VM's dataVolumeTemplates goes with its VM */
		json_object *refs = at(s->j, "metadata", "ownerReferences");
		bool orphan = false;
		for (size_t k = 0; ready && refs && json_object_is_type(refs, json_type_array) && k < json_object_array_length(refs); k++) {
			json_object *r = json_object_array_get_idx(refs, k);
			if (!util_str_eq(str_at(r, "kind", NULL, NULL), "VirtualMachine"))
				continue;
			struct source *src = apis_source_of(srv, s->ns, str_at(r, "name", NULL, NULL));
			const struct obj *vm = src ? store_find(srv->st, src, OBJ_VM, s->ns, str_at(r, "name", NULL, NULL)) : NULL;
			orphan |= vm == NULL || !util_str_eq(vm->uid, str_at(r, "uid", NULL, NULL));
		}
		if (orphan) {
			dv_delete(srv, s);
			continue;
		}
		if (s->imp) {
			double p = dvimport_progress(s->imp);
			if (p >= 0) {
				char b[16];
				snprintf(b, sizeof b, "%.2f%%", p > 99.99 ? 99.99 : p);
				if (!util_str_eq(str_at(s->j, "status", "progress", NULL), b)) {
					json_object_object_add(apis_jobj(s->j, "status"), "progress", apis_jstr(b));
					publish(srv, s, "MODIFIED");
				}
			}
		} else
			dv_advance(srv, s);
	}
	free(snap);
	if (util_wall_s() - st->scanned >= SCAN_EVERY_S) {
		st->scanned = util_wall_s();
		adopt_scan(srv);
	}
}

char *apis_storage_busy(struct apisrv *srv)
{
	for (struct sobj *s = ST(srv)->objs; s; s = s->next)
		if (s->imp)
			return xasprintf("DataVolume %s/%s: importing", s->ns, s->name);
	return NULL;
}

/* Namespace ns holds a claim or a DataVolume. */
bool apis_storage_in_ns(struct apisrv *srv, const char *ns)
{
	for (struct sobj *s = ST(srv)->objs; s; s = s->next)
		if ((s->r == R_PVC || s->r == R_DV) && strcmp(s->ns, ns) == 0)
			return true;
	return false;
}

const char *apis_storage_text_at(struct apisrv *srv, enum res r, size_t i, const char **ns, const char **name)
{
	struct storage *st = ST(srv);
	if (r == R_SC) {
		*ns = "";
		if (i >= NCLASSES)
			return NULL;
		*name = st->sc[i].name;
		return st->sc[i].text;
	}
	for (struct sobj *s = st->objs; s; s = s->next)
		if (s->r == r && s->text && i-- == 0) {
			*ns = s->ns;
			*name = s->name;
			return s->text;
		}
	return NULL;
}

static const char *mode_short(const char *m)
{
	static const char *const t[][2] = { { "ReadWriteOnce", "RWO" }, { "ReadOnlyMany", "ROX" }, { "ReadWriteMany", "RWX" },
					    { "ReadWriteOncePod", "RWOP" } };
	for (size_t i = 0; i < 4; i++)
		if (util_str_eq(m, t[i][0]))
			return t[i][1];
	return m;
}

static json_object *modes_cell(json_object *modes)
{
	char b[64] = "";
	for (size_t i = 0; modes && json_object_is_type(modes, json_type_array) && i < json_object_array_length(modes); i++)
		snprintf(b + strlen(b), sizeof b - strlen(b), "%s%s", i ? "," : "",
			 mode_short(json_object_get_string(json_object_array_get_idx(modes, i))));
	return apis_jstr(b);
}

static json_object *s_or(const char *s, const char *dflt)
{
	return apis_jstr(s && *s ? s : dflt);
}

/* The Table cells of the storage kinds (list.c's columns); NULL where list.c puts the age. */
void apis_storage_cells(enum res r, json_object *o, json_object *a)
{
	json_object *md = apis_jget(o, "metadata"), *spec = apis_jget(o, "spec"), *st = apis_jget(o, "status");
	const char *name = apis_jgets(md, "name");
#define CELL(x) json_object_array_add(a, (x))
	switch (r) {
	case R_PVC:
		CELL(apis_jstr(name));
		CELL(apis_jstr(apis_jget(md, "deletionTimestamp") ? "Terminating" : apis_jgets(st, "phase")));
		CELL(s_or(apis_jgets(spec, "volumeName"), ""));
		CELL(s_or(str_at(st, "capacity", "storage", NULL), ""));
		CELL(modes_cell(apis_jget(st, "accessModes")));
		CELL(s_or(apis_jgets(spec, "storageClassName"), ""));
		CELL(NULL);
		CELL(s_or(apis_jgets(spec, "volumeMode"), "Filesystem"));
		break;
	case R_PV: {
		char claim[600] = "";
		if (apis_jget(spec, "claimRef"))
			snprintf(claim, sizeof claim, "%s/%s", str_at(spec, "claimRef", "namespace", NULL),
				 str_at(spec, "claimRef", "name", NULL));
		CELL(apis_jstr(name));
		CELL(s_or(str_at(spec, "capacity", "storage", NULL), ""));
		CELL(modes_cell(apis_jget(spec, "accessModes")));
		CELL(s_or(apis_jgets(spec, "persistentVolumeReclaimPolicy"), ""));
		CELL(apis_jstr(apis_jgets(st, "phase")));
		CELL(apis_jstr(claim));
		CELL(s_or(apis_jgets(spec, "storageClassName"), ""));
		CELL(s_or(apis_jgets(st, "reason"), ""));
		CELL(NULL);
		CELL(s_or(apis_jgets(spec, "volumeMode"), "Filesystem"));
		break;
	}
	case R_SC: {
		char n[300];
		snprintf(n, sizeof n, "%s%s", name,
			 util_str_eq(str_at(md, "annotations", "storageclass.kubernetes.io/is-default-class", NULL), "true")
				 ? " (default)"
				 : "");
		CELL(apis_jstr(n));
		CELL(apis_jstr(apis_jgets(o, "provisioner")));
		CELL(apis_jstr(apis_jgets(o, "reclaimPolicy")));
		CELL(apis_jstr(apis_jgets(o, "volumeBindingMode")));
		CELL(apis_jstr(json_object_get_boolean(apis_jget(o, "allowVolumeExpansion")) ? "true" : "false"));
		CELL(NULL);
		break;
	}
	case R_DV:
		CELL(apis_jstr(name));
		CELL(apis_jstr(apis_jgets(st, "phase")));
		CELL(s_or(apis_jgets(st, "progress"), "N/A"));
		CELL(json_object_new_int(json_object_get_int(apis_jget(st, "restartCount"))));
		CELL(NULL);
		break;
	default:
		break;
	}
#undef CELL
}

/* ---- writes ---- */

/* A DataVolume's spec as the engine takes it, or why not (a 422's cause). */
static char *dv_invalid(json_object *spec, const char *ns)
{
	json_object *sspec = apis_jget(spec, "storage");
	if (sspec == NULL)
		sspec = apis_jget(spec, "pvc");
	struct dvs src;
	char *why = NULL;
	if (dvs_parse(spec, ns, &src, &why) < 0)
		return why;
	if (sspec == NULL)
		return xstrdup("spec.storage: Required value: storage or pvc");
	uint64_t b;
	const char *q = str_at(sspec, "resources", "requests", "storage");
	if (q == NULL || manifest_quantity(q, &b) < 0 || b == 0)
		return xstrdup("spec.storage.resources.requests.storage: Required value: the claim's size");
	return NULL;
}

/* A clone whose spec.storage names no size takes its source claim's, as CDI's storage API does (filled in before
 * the spec is checked; a source that does not exist yet leaves it missing: the 422 asks for a size). */
static void clone_size(struct apisrv *srv, const char *ns, json_object *spec)
{
	json_object *ss = apis_jget(spec, "storage");
	struct dvs src;
	char *why = NULL;
	if (ss == NULL || !json_object_is_type(ss, json_type_object) || str_at(ss, "resources", "requests", "storage") ||
	    dvs_parse(spec, ns, &src, &why) < 0 || src.kind != DVS_PVC) {
		free(why);
		return;
	}
	struct sobj *from = find(srv, R_PVC, src.ns, src.name);
	const char *q = from ? str_at(apis_jget(from->j, "spec"), "resources", "requests", "storage") : NULL;
	if (q)
		json_object_object_add(apis_jobj(apis_jobj(ss, "resources"), "requests"), "storage", apis_jstr(q));
}

/* A clone into a claim smaller than its (existing) source: refused as CDI's webhook refuses it. */
static char *clone_too_small(struct apisrv *srv, const char *ns, json_object *spec, json_object *sspec)
{
	struct dvs src;
	char *why = NULL;
	if (dvs_parse(spec, ns, &src, &why) < 0 || src.kind != DVS_PVC) {
		free(why);
		return NULL;
	}
	struct sobj *from = find(srv, R_PVC, src.ns, src.name);
	if (from == NULL || requested(apis_jget(from->j, "spec")) <= requested(sspec))
		return NULL;
	return xstrdup("spec.storage.resources.requests.storage: Invalid value: target resources requests storage size "
		       "is smaller than the source");
}

static char *size_invalid(struct apisrv *srv, json_object *sspec, const char *field)
{
	uint64_t b = requested(sspec);
	const char *q = str_at(sspec, "resources", "requests", "storage");
	if (q == NULL)
		return xasprintf("%s.resources.requests.storage: Required value: a size (1Gi, 512Mi)", field);
	if (b == 0)
		return xasprintf("%s.resources.requests.storage: Invalid value: \"%s\": a size (up to Ti)", field, q);
	if (b > ST(srv)->max)
		return xasprintf("%s.resources.requests.storage: Invalid value: \"%s\": more than the engine's "
				 "engine.volume-max (%llu bytes)",
				 field, str_at(sspec, "resources", "requests", "storage"), (unsigned long long)ST(srv)->max);
	return NULL;
}

static json_object *new_dv(struct apisrv *srv, const char *ns, const char *name, json_object *md_from, json_object *spec)
{
	(void)srv;
	json_object *o = json_object_new_object(), *st = json_object_new_object();
	int64_t created;
	json_object *md = new_meta(md_from, ns, name, &created);
	json_object_object_add(md, "generation", json_object_new_int(1));
	json_object_object_add(o, "apiVersion", apis_jstr("cdi.kubevirt.io/v1beta1"));
	json_object_object_add(o, "kind", apis_jstr("DataVolume"));
	json_object_object_add(o, "metadata", md);
	json_object_object_add(o, "spec", json_tokener_parse(json_object_to_json_string(spec)));
	json_object_object_add(st, "phase", apis_jstr("Pending"));
	json_object_object_add(st, "progress", apis_jstr("N/A"));
	json_object_object_add(st, "restartCount", json_object_new_int(0));
	json_object_object_add(st, "claimName", apis_jstr(name));
	json_object_object_add(o, "status", st);
	return o;
}

static enum MHD_Result create(struct apisrv *srv, struct MHD_Connection *c, struct reqctx *rq, enum res r, const char *ns)
{
	enum MHD_Result mrc;
	json_object *o = apis_body_json(c, rq, &mrc);
	if (o == NULL)
		return mrc;
	json_object *md = apis_jget(o, "metadata"), *spec = apis_jget(o, "spec");
	const char *name = apis_jgets(md, "name"), *kind = apis_jgets(o, "kind");
	char *why = NULL;
	if (r == R_DV && spec && json_object_is_type(spec, json_type_object))
		clone_size(srv, ns, spec);
	if (kind && strcmp(kind, RES[r].kind) != 0)
		why = xasprintf("kind: Invalid value: \"%s\": not %s", kind, RES[r].kind);
	else if (name == NULL || !apis_valid_name(name))
		why = xstrdup("metadata.name: Invalid value: a lowercase RFC 1123 subdomain");
	else if (r == R_PVC)
		why = size_invalid(srv, spec, "spec");
	else if ((why = dv_invalid(spec, ns)) == NULL) {
		json_object *ss = apis_jget(spec, "storage") ? apis_jget(spec, "storage") : apis_jget(spec, "pvc");
		why = size_invalid(srv, ss, apis_jget(spec, "storage") ? "spec.storage" : "spec.pvc");
		if (why == NULL)
			why = clone_too_small(srv, ns, spec, ss);
	}
	if (why) {
		mrc = apis_send_invalid_res(c, r, name ? name : "", why);
		free(why);
		json_object_put(o);
		return mrc;
	}
	if (!apis_ns_exists(srv, ns)) {
		json_object_put(o);
		return apis_send_status(c, 404, "NotFound", R_NS, ns, "namespaces \"%s\" not found", ns);
	}
	if (find(srv, r, ns, name)) {
		char gr[128];
		snprintf(gr, sizeof gr, "%s%s%s", RES[r].plural, *RES[r].group ? "." : "", RES[r].group);
		mrc = apis_send_status(c, 409, "AlreadyExists", r, name, "%s \"%s\" already exists", gr, name);
		json_object_put(o);
		return mrc;
	}
	struct sobj *s;
	if (r == R_PVC) {
		s = new_claim(srv, ns, name, md, spec);
	} else {
		s = add(srv, R_DV, ns, name, new_dv(srv, ns, name, md, spec));
	}
	json_object_put(o);
	if (apis_dry_run(c, rq)) {
		json_object *reply = json_object_get(s->j);
		for (struct sobj **p = &ST(srv)->objs; *p; p = &(*p)->next)
			if (*p == s) {
				*p = s->next;
				break;
			}
		sobj_free(s);
		mrc = apis_send_json(c, 201, reply);
		return mrc;
	}
	char *err = NULL;
	if (store_rec(srv, s, &err) < 0) {
		mrc = apis_send_status(c, 500, "InternalError", r, name, "Internal error occurred: %s", err);
		free(err);
		for (struct sobj **p = &ST(srv)->objs; *p; p = &(*p)->next)
			if (*p == s) {
				*p = s->next;
				break;
			}
		sobj_free(s);
		return mrc;
	}
	publish(srv, s, "ADDED");
	const char *sc = str_at(s->j, "spec", "storageClassName", NULL);
	if (r == R_PVC && class_of(sc) < 0)
		event(srv, s, "Warning", "ProvisioningFailed", "persistentvolume-controller",
		      "storageclass.storage.k8s.io \"%s\" not found", sc);
	if (r == R_PVC)
		provision(srv, s);
	else
		dv_advance(srv, s);
	return apis_send_text(c, 201, xstrdup(s->text), "application/json");
}

/* PATCH/PUT: the labels and annotations (kubectl apply's last-applied annotation); the spec of a claim or a
 * DataVolume does not change once made. */
static enum MHD_Result patch(struct apisrv *srv, struct MHD_Connection *c, struct reqctx *rq, struct sobj *s, bool replace)
{
	const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
	if (!replace && ct && strstr(ct, "json-patch+json"))
		return apis_send_status(c, 415, "UnsupportedMediaType", R_COUNT, NULL,
				   "the body of the request was in an unknown format - accepted media types include: "
				   "application/merge-patch+json, application/strategic-merge-patch+json");
	enum MHD_Result mrc;
	json_object *p = apis_body_json(c, rq, &mrc);
	if (p == NULL)
		return mrc;
	json_object *res = replace ? json_object_get(p) : apisel_merge_patch(json_tokener_parse(json_object_to_json_string(s->j)), p);
	json_object *nmd = apis_jget(res, "metadata"), *md = apis_jobj(s->j, "metadata");
	bool dry = apis_dry_run(c, rq);
	json_object *keep = json_tokener_parse(json_object_to_json_string(s->j));
	const char *keys[] = { "labels", "annotations" };
	for (int i = 0; i < 2; i++) {
		json_object *x = apis_jget(nmd, keys[i]);
		if (x && json_object_is_type(x, json_type_object))
			json_object_object_add(md, keys[i], json_tokener_parse(json_object_to_json_string(x)));
		else
			json_object_object_del(md, keys[i]);
	}
	json_object_put(res);
	json_object_put(p);
	if (dry) {
		json_object *reply = s->j;
		s->j = keep;
		return apis_send_json(c, 200, reply);
	}
	json_object_put(keep);
	save(srv, s);
	return apis_send_text(c, 200, xstrdup(s->text), "application/json");
}

enum MHD_Result apis_storage_write(struct apisrv *srv, struct MHD_Connection *c, struct reqctx *rq, enum res r,
				   const char *method, const char *ns, const char *name)
{
	bool post = strcmp(method, "POST") == 0, del = strcmp(method, "DELETE") == 0;
	if (r == R_SC || (r == R_PV && !del))
		return apis_send_status(c, 405, "MethodNotAllowed", r, name,
				   "%s are the engine service's own: they cannot be created or changed through the API",
				   RES[r].plural);
	if (post && ns && name == NULL)
		return create(srv, c, rq, r, ns);
	if (name == NULL || (RES[r].namespaced && ns == NULL))
		return apis_send_status(c, 405, "MethodNotAllowed", R_COUNT, NULL,
				   "the server does not allow this method on the requested resource");
	struct sobj *s = find(srv, r, RES[r].namespaced ? ns : "", name);
	if (s == NULL)
		return apis_not_found(c, r, name);
	if (strcmp(method, "PATCH") == 0 || strcmp(method, "PUT") == 0)
		return patch(srv, c, rq, s, method[1] == 'U');
	if (!del)
		return apis_send_status(c, 405, "MethodNotAllowed", R_COUNT, NULL,
				   "the server does not allow this method on the requested resource");
	char *text = xstrdup(s->text);
	if (apis_dry_run(c, rq))
		return apis_send_text(c, 200, text, "application/json");
	if (r == R_PV) {
		if (!util_str_eq(phase_of(s), "Released")) {
			free(text);
			return apis_send_status(c, 409, "Conflict", r, name,
					   "persistentvolumes \"%s\" is bound to a claim: delete the claim", name);
		}
		drop(srv, s); /* a Retain volume: its file stays (and is adopted again) */
	} else if (r == R_PVC)
		claim_delete(srv, s);
	else
		dv_delete(srv, s);
	return apis_send_text(c, 200, text, "application/json");
}

/* A VM was applied: its dataVolumeTemplates' DataVolumes are made when missing, owned by the VM (the
 * garbage collector's tick deletes them with it). */
void apis_storage_vm_applied(struct apisrv *srv, const char *ns, const char *name, json_object *vm)
{
	json_object *tpls = at(vm, "spec", "dataVolumeTemplates");
	struct source *src = apis_source_of(srv, ns, name);
	const struct obj *o = src ? store_find(srv->st, src, OBJ_VM, ns, name) : NULL;
	for (size_t i = 0; o && tpls && json_object_is_type(tpls, json_type_array) && i < json_object_array_length(tpls); i++) {
		json_object *t = json_object_array_get_idx(tpls, i), *md = apis_jget(t, "metadata");
		const char *dn = apis_jgets(md, "name");
		char *why = dn && apis_valid_name(dn) ? dv_invalid(apis_jget(t, "spec"), ns) : xstrdup("metadata.name: Required value");
		if (why == NULL && find(srv, R_DV, ns, dn) == NULL) {
			json_object *m2 = json_tokener_parse(json_object_to_json_string(md ? md : json_object_new_object()));
			json_object *refs = json_object_new_array(), *ref = json_object_new_object();
			json_object_object_add(ref, "apiVersion", apis_jstr("kubevirt.io/v1"));
			json_object_object_add(ref, "kind", apis_jstr("VirtualMachine"));
			json_object_object_add(ref, "name", apis_jstr(name));
			json_object_object_add(ref, "uid", apis_jstr(o->uid));
			json_object_object_add(ref, "controller", json_object_new_boolean(1));
			json_object_object_add(ref, "blockOwnerDeletion", json_object_new_boolean(1));
			json_object_array_add(refs, ref);
			json_object_object_add(m2, "ownerReferences", refs);
			struct sobj *s = add(srv, R_DV, ns, dn, new_dv(srv, ns, dn, m2, apis_jget(t, "spec")));
			json_object_put(m2);
			save(srv, s);
			dv_advance(srv, s);
		} else if (why) {
			log_warn("engine serve: VM %s/%s: dataVolumeTemplates[%zu]: %s", ns, name, i, why);
		}
		free(why);
	}
}

void apis_storage_delete_ns(struct apisrv *srv, const char *ns)
{
	/* one at a time: deleting a DataVolume deletes its claim (and a claim its volume) */
	for (bool again = true; again;) {
		again = false;
		for (struct sobj *s = ST(srv)->objs; s; s = s->next) {
			if (strcmp(s->ns, ns) != 0)
				continue;
			if (s->r == R_DV)
				dv_delete(srv, s);
			else if (s->r == R_PVC && at(s->j, "metadata", "deletionTimestamp") == NULL)
				claim_delete(srv, s); /* it waits for the VMs that use it to stop (the tick) */
			else
				continue;
			again = true;
			break;
		}
	}
}
