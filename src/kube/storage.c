/* The storage behind a cluster VM, link by link: each volume of the VM's template -> its DataVolume (CDI) ->
 * PersistentVolumeClaim -> PersistentVolume, with phase, capacity, access modes, storage class, owner
 * references and reclaim policy, and the first link that is broken (a missing object, a DataVolume not
 * Succeeded, a PVC not Bound, a PV not Bound) or, for a running VM, a ReadWriteOnce claim that blocks live
 * migration. The objects are read once with GETs (diagnose runs once; the store keeps no storage kinds). */
#include "kube/storage.h"

#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>

#include "core/loop.h"
#include "core/util.h"
#include "core/xmalloc.h"
#include "kube/http.h"
#include "kube/kube.h"

struct get {
	bool done;
	long status;
	struct json_object *obj;
	char *error;
};

static void got(void *arg, const struct kube_resp *r)
{
	struct get *g = arg;
	g->done = true;
	g->status = r->status;
	if (r->status == 200)
		g->obj = json_tokener_parse(r->body);
	else if (r->status != 404)
		g->error = kube_http_error_message(r);
}

/* GET path; the object, or NULL with *status 404 (missing) or another status and *err. */
static struct json_object *get_obj(struct kube_http *h, const char *path, long *status, char **err);

struct json_object *storage_get_json(struct source *src, const char *path, long *status, char **err)
{
	struct kube_http *h = kube_source_http(src);
	if (h == NULL) {
		*status = -1;
		*err = xstrdup("not a cluster");
		return NULL;
	}
	return get_obj(h, path, status, err);
}

static struct json_object *get_obj(struct kube_http *h, const char *path, long *status, char **err)
{
	struct get g = { 0 };
	struct kube_http_req q = { .path = path, .timeout_ms = 30000, .on_done = got, .arg = &g };
	kube_http_start(h, &q);
	while (!g.done)
		loop_once(1000);
	*status = g.status;
	*err = g.error;
	return g.obj;
}

static const char *jget(struct json_object *o, const char *a, const char *b, const char *c)
{
	const char *ks[3] = { a, b, c };
	for (int i = 0; i < 3 && ks[i] && o; i++)
		if (!json_object_is_type(o, json_type_object) || !json_object_object_get_ex(o, ks[i], &o))
			return NULL;
	return o && json_object_is_type(o, json_type_string) ? json_object_get_string(o) : NULL;
}

static struct json_object *jobj(struct json_object *o, const char *a, const char *b)
{
	struct json_object *v = NULL;
	if (o && json_object_object_get_ex(o, a, &v) && b)
		json_object_object_get_ex(v, b, &v);
	return v;
}

/* base/namespaces/NS/plural/NAME (ns NULL: base/plural/NAME), names URL-escaped */
static char *obj_path(const char *base, const char *ns, const char *plural, const char *name)
{
	char *n = curl_easy_escape(NULL, ns ? ns : "", 0), *m = curl_easy_escape(NULL, name, 0);
	char *p = ns ? xasprintf("%s/namespaces/%s/%s/%s", base, n, plural, m) : xasprintf("%s/%s/%s", base, plural, m);
	curl_free(n);
	curl_free(m);
	return p;
}

static void add_str(struct json_object *o, const char *k, const char *v)
{
	if (v) {
		char *e = util_escape_display(v);
		json_object_object_add(o, k, json_object_new_string(e));
		free(e);
	}
}

static struct json_object *owners_of(struct json_object *obj)
{
	struct json_object *refs = jobj(jobj(obj, "metadata", NULL), "ownerReferences", NULL), *out = json_object_new_array();
	for (size_t i = 0; refs && i < json_object_array_length(refs); i++) {
		struct json_object *r = json_object_array_get_idx(refs, i);
		char *s = xasprintf("%s/%s", jget(r, "kind", NULL, NULL) ? jget(r, "kind", NULL, NULL) : "?",
				    jget(r, "name", NULL, NULL) ? jget(r, "name", NULL, NULL) : "?");
		char *e = util_escape_display(s);
		json_object_array_add(out, json_object_new_string(e));
		free(e);
		free(s);
	}
	return out;
}

static char *modes_of(struct json_object *arr)
{
	char buf[128] = "";
	for (size_t i = 0; arr && json_object_is_type(arr, json_type_array) && i < json_object_array_length(arr); i++) {
		const char *m = json_object_get_string(json_object_array_get_idx(arr, i));
		const char *s = strcmp(m, "ReadWriteOnce") == 0   ? "RWO"
				: strcmp(m, "ReadWriteMany") == 0 ? "RWX"
				: strcmp(m, "ReadOnlyMany") == 0  ? "ROX"
				: strcmp(m, "ReadWriteOncePod") == 0 ? "RWOP"
								     : m;
		size_t l = strlen(buf);
		snprintf(buf + l, sizeof buf - l, "%s%s", l ? "," : "", s);
	}
	return xstrdup(buf);
}

static void broken(struct json_object *v, const char *link, const char *why)
{
	if (json_object_object_get(v, "brokenLink"))
		return; /* the first one only */
	add_str(v, "brokenLink", link);
	add_str(v, "reason", why);
}

/* ---- the job: three rounds of GETs (the VM; its DataVolumes and PVCs; the PVs those are bound to), then the
 * chain is built from what came back. The CLI waits for it on the loop, the dashboard gets a callback. ---- */

struct sfetch {
	char *path;
	long status;
	struct json_object *obj;
	char *err;
};

struct storage_job {
	struct kube_http *h;
	char *ns, *vm;
	bool running;
	bool engine;                  /* the engine service: one GET of its kvcon-storage subresource */
	int round, pending;
	struct sfetch *f;
	size_t nf;
	struct kube_req **reqs;       /* [i]: the request of f[i] while in flight */
	struct fetch_arg **args;      /* [i]: its callback argument while in flight */
	storage_done_cb cb;
	void *arg;
};

struct fetch_arg {
	struct storage_job *j;
	size_t i;
};

static void next_round(struct storage_job *j);

static void fetched(void *arg, const struct kube_resp *r)
{
	struct fetch_arg *a = arg;
	struct storage_job *j = a->j;
	struct sfetch *f = &j->f[a->i];
	f->status = r->status;
	if (r->status == 200)
		f->obj = json_tokener_parse(r->body);
	else if (r->status != 404)
		f->err = kube_http_error_message(r);
	j->reqs[a->i] = NULL;
	j->args[a->i] = NULL;
	free(a);
	if (--j->pending == 0)
		next_round(j);
}

static void want(struct storage_job *j, char *path)
{
	for (size_t i = 0; i < j->nf; i++)
		if (strcmp(j->f[i].path, path) == 0) {
			free(path);
			return;
		}
	j->f = xreallocarray(j->f, j->nf + 1, sizeof *j->f);
	j->reqs = xreallocarray(j->reqs, j->nf + 1, sizeof *j->reqs);
	j->args = xreallocarray(j->args, j->nf + 1, sizeof *j->args);
	memset(&j->f[j->nf], 0, sizeof j->f[0]);
	j->f[j->nf].path = path;
	struct fetch_arg *a = xcalloc(1, sizeof *a);
	a->j = j;
	a->i = j->nf;
	j->args[a->i] = a;
	j->nf++;
	j->pending++;
	struct kube_http_req q = { .path = path, .timeout_ms = 30000, .on_done = fetched, .arg = a };
	j->reqs[a->i] = kube_http_start(j->h, &q);
}

/* What a GET brought: a new reference to the object (caller puts it) or NULL with *status and *err (caller frees). */
static struct json_object *lookup(struct storage_job *j, const char *path, long *status, char **err)
{
	for (size_t i = 0; i < j->nf; i++)
		if (strcmp(j->f[i].path, path) == 0) {
			*status = j->f[i].status;
			*err = xstrdup0(j->f[i].err);
			return j->f[i].obj ? json_object_get(j->f[i].obj) : NULL;
		}
	*status = -1;
	*err = xstrdup("not read");
	return NULL;
}

/* One link of the chain: the object at path (caller puts it), with {"name": name} started in *lj (caller adds it
 * to v). When it cannot be read, *lj gets the phase "(missing)" or "(unreadable)" and v the broken link "LINK
 * WHAT does not exist" or "LINK WHAT: why", and NULL comes back. Frees path. */
static struct json_object *link_lookup(struct storage_job *j, char *path, struct json_object *v, const char *link,
				       const char *name, const char *what, struct json_object **lj)
{
	long status = 0;
	char *e = NULL;
	struct json_object *o = lookup(j, path, &status, &e);
	free(path);
	*lj = json_object_new_object();
	add_str(*lj, "name", name);
	if (o == NULL) {
		add_str(*lj, "phase", status == 404 ? "(missing)" : "(unreadable)");
		char *why = status == 404 ? xasprintf("%s %s does not exist", link, what)
					  : xasprintf("%s %s: %s", link, what, e ? e : "read failed");
		broken(v, link, why);
		free(why);
	}
	free(e);
	return o;
}

static void job_free(struct storage_job *j)
{
	for (size_t i = 0; i < j->nf; i++) {
		free(j->f[i].path);
		json_object_put(j->f[i].obj);
		free(j->f[i].err);
	}
	free(j->f);
	free(j->reqs);
	free(j->args);
	free(j->ns);
	free(j->vm);
	free(j);
}

static struct json_object *build(struct storage_job *j, char **err);

/* The engine service answers the chain itself (GET virtualmachines/NAME/kvcon-storage, docs/ENGINE-SERVICE.md):
 * the VM's volumes and the files behind them on its host, in this chain's shape. */
static struct json_object *engine_chain(struct storage_job *j, char **err)
{
	long st;
	char *e = NULL;
	char *p = obj_path("/apis/kubevirt.io/v1", j->ns, "virtualmachines", j->vm);
	char *sp = xasprintf("%s/kvcon-storage", p);
	struct json_object *o = lookup(j, sp, &st, &e);
	free(sp);
	free(p);
	if (o && !json_object_is_type(o, json_type_array)) {
		json_object_put(o);
		o = NULL;
		st = -1;
	}
	if (o == NULL)
		*err = e ? e : xstrdup(st == 404 ? "no such VM on this engine" : "the engine's answer is not a storage chain");
	else
		free(e);
	return o;
}

static void next_round(struct storage_job *j)
{
	j->round++;
	if (j->engine) {
		char *err = NULL;
		struct json_object *chain = engine_chain(j, &err);
		j->cb(j->arg, chain, err);
		json_object_put(chain);
		free(err);
		job_free(j);
		return;
	}
	if (j->round == 2 || j->round == 3) {
		long st;
		char *e = NULL;
		char *vp = obj_path("/apis/kubevirt.io/v1", j->ns, "virtualmachines", j->vm);
		struct json_object *vmo = lookup(j, vp, &st, &e);
		free(vp);
		free(e);
		struct json_object *vols = jobj(jobj(jobj(vmo, "spec", "template"), "spec", NULL), "volumes", NULL);
		for (size_t i = 0; vols && json_object_is_type(vols, json_type_array) && i < json_object_array_length(vols); i++) {
			struct json_object *vol = json_object_array_get_idx(vols, i);
			const char *dv = jget(vol, "dataVolume", "name", NULL);
			const char *claim = jget(vol, "persistentVolumeClaim", "claimName", NULL);
			if (j->round == 2) {
				if (dv)
					want(j, obj_path("/apis/cdi.kubevirt.io/v1beta1", j->ns, "datavolumes", dv));
				if (dv || claim)
					want(j, obj_path("/api/v1", j->ns, "persistentvolumeclaims", claim ? claim : dv));
			} else if (dv || claim) {
				char *pp = obj_path("/api/v1", j->ns, "persistentvolumeclaims", claim ? claim : dv);
				struct json_object *pvc = lookup(j, pp, &st, &e);
				free(pp);
				free(e);
				const char *pv = jget(pvc, "spec", "volumeName", NULL);
				if (pv)
					want(j, obj_path("/api/v1", NULL, "persistentvolumes", pv));
				json_object_put(pvc);
			}
		}
		json_object_put(vmo);
		if (j->pending > 0)
			return; /* the next round starts when these are in */
		next_round(j);
		return;
	}
	char *err = NULL;
	struct json_object *chain = build(j, &err);
	j->cb(j->arg, chain, err);
	json_object_put(chain);
	free(err);
	job_free(j);
}

struct storage_job *storage_chain_start(struct source *src, const char *ns, const char *vm, bool running,
					storage_done_cb cb, void *arg, char **err)
{
	*err = NULL;
	struct kube_http *h = kube_source_http(src);
	if (h == NULL) {
		*err = xstrdup("not a cluster");
		return NULL;
	}
	struct storage_job *j = xcalloc(1, sizeof *j);
	j->h = h;
	j->ns = xstrdup(ns);
	j->vm = xstrdup(vm);
	j->running = running;
	j->cb = cb;
	j->arg = arg;
	j->round = 1;
	j->engine = src->engine;
	char *p = obj_path("/apis/kubevirt.io/v1", ns, "virtualmachines", vm);
	if (j->engine) {
		want(j, xasprintf("%s/kvcon-storage", p));
		free(p);
	} else {
		want(j, p);
	}
	return j;
}

struct sync_wait {
	bool done;
	struct json_object *chain;
	char *err;
};

static void sync_done(void *arg, struct json_object *chain, const char *err)
{
	struct sync_wait *w = arg;
	w->done = true;
	w->chain = chain ? json_object_get(chain) : NULL;
	w->err = xstrdup0(err);
}

struct json_object *storage_chain(struct source *src, const char *ns, const char *vm, bool running, char **err)
{
	if (src->ops && src->ops->storage_json) {
		/* the engine answers from its own records */
		*err = NULL;
		struct json_object *o = src->ops->storage_json(src, ns, vm);
		if (o == NULL)
			*err = xstrdup("no such VM on this engine host");
		return o;
	}
	struct sync_wait w = { 0 };
	if (storage_chain_start(src, ns, vm, running, sync_done, &w, err) == NULL)
		return NULL;
	while (!w.done)
		loop_once(1000);
	*err = w.err;
	return w.chain;
}

static struct json_object *build(struct storage_job *j, char **err)
{
	const char *ns = j->ns, *vm = j->vm;
	bool running = j->running;
	*err = NULL;
	long status;
	char *e = NULL;
	char *path = obj_path("/apis/kubevirt.io/v1", ns, "virtualmachines", vm);
	struct json_object *vmo = lookup(j, path, &status, &e);
	free(path);
	if (vmo == NULL) {
		*err = e ? e : xstrdup(status == 404 ? "the VirtualMachine is gone" : "the VirtualMachine could not be read");
		return NULL;
	}
	free(e);
	struct json_object *vols = jobj(jobj(jobj(vmo, "spec", "template"), "spec", NULL), "volumes", NULL);
	struct json_object *out = json_object_new_array();
	for (size_t i = 0; vols && json_object_is_type(vols, json_type_array) && i < json_object_array_length(vols); i++) {
		struct json_object *vol = json_object_array_get_idx(vols, i);
		const char *dv = jget(vol, "dataVolume", "name", NULL);
		const char *claim = jget(vol, "persistentVolumeClaim", "claimName", NULL);
		char *claim_owned = NULL; /* the DataVolume's claim outlives the DataVolume's JSON */
		if (dv == NULL && claim == NULL)
			continue; /* container disks, cloud-init: no storage objects behind them */
		struct json_object *v = json_object_new_object();
		add_str(v, "volume", jget(vol, "name", NULL, NULL));
		add_str(v, "type", dv ? "dataVolume" : "persistentVolumeClaim");
		if (dv) {
			char *what = xasprintf("%s/%s", ns, dv);
			struct json_object *dj;
			struct json_object *d = link_lookup(j, obj_path("/apis/cdi.kubevirt.io/v1beta1", ns, "datavolumes", dv), v,
							    "DataVolume", dv, what, &dj);
			free(what);
			if (d != NULL) {
				const char *ph = jget(d, "status", "phase", NULL);
				add_str(dj, "phase", ph ? ph : "");
				add_str(dj, "progress", jget(d, "status", "progress", NULL));
				/* why a DataVolume failed: CDI says it in its Running condition */
				struct json_object *conds = jobj(jobj(d, "status", NULL), "conditions", NULL);
				for (size_t k = 0; !util_str_eq(ph, "Succeeded") && conds &&
						   json_object_is_type(conds, json_type_array) && k < json_object_array_length(conds);
				     k++) {
					struct json_object *cd = json_object_array_get_idx(conds, k);
					const char *msg = jget(cd, "message", NULL, NULL);
					if (util_str_eq(jget(cd, "type", NULL, NULL), "Running") &&
					    util_str_eq(jget(cd, "status", NULL, NULL), "False") && msg && *msg)
						add_str(dj, "message", msg);
				}
				json_object_object_add(dj, "owners", owners_of(d));
				if (!util_str_eq(ph, "Succeeded")) {
					char *why = xasprintf("DataVolume %s/%s is %s%s%s%s: the VM cannot start until it is Succeeded", ns,
							      dv, ph ? ph : "without a phase", jget(d, "status", "progress", NULL) ? " (" : "",
							      jget(d, "status", "progress", NULL) ? jget(d, "status", "progress", NULL) : "",
							      jget(d, "status", "progress", NULL) ? ")" : "");
					broken(v, "DataVolume", why);
					free(why);
				}
				const char *cn = jget(d, "status", "claimName", NULL);
				claim = claim_owned = xstrdup(cn ? cn : dv);
			}
			json_object_object_add(v, "dataVolume", dj);
			json_object_put(d);
		}
		char *what = xasprintf("%s/%s", ns, claim);
		struct json_object *pj;
		struct json_object *pvc =
			link_lookup(j, obj_path("/api/v1", ns, "persistentvolumeclaims", claim), v, "PVC", claim, what, &pj);
		free(what);
		const char *pv_name = NULL;
		if (pvc != NULL) {
			const char *ph = jget(pvc, "status", "phase", NULL);
			add_str(pj, "phase", ph ? ph : "");
			add_str(pj, "capacity", jget(pvc, "status", "capacity", "storage"));
			char *m = modes_of(jobj(jobj(pvc, "spec", NULL), "accessModes", NULL));
			add_str(pj, "accessModes", m);
			add_str(pj, "storageClass", jget(pvc, "spec", "storageClassName", NULL));
			json_object_object_add(pj, "owners", owners_of(pvc));
			pv_name = jget(pvc, "spec", "volumeName", NULL);
			if (!util_str_eq(ph, "Bound")) {
				char *why = xasprintf("PVC %s/%s is %s (storage class %s): nothing can mount it until it is Bound",
						      ns, claim, ph ? ph : "without a phase",
						      jget(pvc, "spec", "storageClassName", NULL) ? jget(pvc, "spec", "storageClassName", NULL)
												  : "<unset>");
				broken(v, "PVC", why);
				free(why);
			} else if (running && strstr(m, "RWX") == NULL) {
				char *why = xasprintf("PVC %s/%s is %s, not ReadWriteMany: it blocks live migration", ns, claim, m);
				add_str(v, "migration", why);
				free(why);
			}
			free(m);
		}
		json_object_object_add(v, "pvc", pj);
		if (pv_name) {
			char *bound = xasprintf("%s (bound to PVC %s/%s)", pv_name, ns, claim);
			struct json_object *vj;
			struct json_object *pv =
				link_lookup(j, obj_path("/api/v1", NULL, "persistentvolumes", pv_name), v, "PV", pv_name, bound, &vj);
			free(bound);
			if (pv != NULL) {
				const char *ph = jget(pv, "status", "phase", NULL);
				add_str(vj, "phase", ph ? ph : "");
				add_str(vj, "capacity", jget(pv, "spec", "capacity", "storage"));
				add_str(vj, "reclaimPolicy", jget(pv, "spec", "persistentVolumeReclaimPolicy", NULL));
				if (!util_str_eq(ph, "Bound")) {
					char *why = xasprintf("PV %s is %s", pv_name, ph ? ph : "without a phase");
					broken(v, "PV", why);
					free(why);
				}
			}
			json_object_object_add(v, "pv", vj);
			json_object_put(pv);
		}
		json_object_put(pvc);
		free(claim_owned);
		json_object_array_add(out, v);
	}
	json_object_put(vmo);
	return out;
}

static const char *s_of(struct json_object *o, const char *k)
{
	struct json_object *v;
	return o && json_object_object_get_ex(o, k, &v) ? json_object_get_string(v) : NULL;
}

static const char *sv(struct json_object *o, const char *k)
{
	const char *v = s_of(o, k);
	return v ? v : "";
}

void storage_format_text(struct json_object *chain, struct buf *out)
{
	size_t n = chain ? json_object_array_length(chain) : 0;
	if (n == 0)
		return;
	struct json_object *f0 = NULL;
	bool engine = json_object_object_get_ex(json_object_array_get_idx(chain, 0), "type", &f0) &&
		      !json_object_object_get(json_object_array_get_idx(chain, 0), "pvc");
	buf_add_str(out, engine ? "\nStorage (engine volumes: VM volume -> file on this host):\n"
				: "\nStorage (VM volume -> DataVolume -> PVC -> PV):\n");
	for (size_t i = 0; engine && i < n; i++) {
		struct json_object *v = json_object_array_get_idx(chain, i), *f, *x, *users;
		buf_printf(out, "  %s: %s", sv(v, "volume"), sv(v, "type"));
		if (s_of(v, "claim"))
			buf_printf(out, " claim %s", sv(v, "claim"));
		if (s_of(v, "image"))
			buf_printf(out, " image %s", sv(v, "image"));
		if (json_object_object_get_ex(v, "file", &f)) {
			bool ex = json_object_object_get_ex(f, "exists", &x) && json_object_get_boolean(x);
			buf_printf(out, " -> %s", sv(f, "path"));
			if (ex && json_object_object_get_ex(f, "sizeBytes", &x))
				buf_printf(out, " %lld bytes", (long long)json_object_get_int64(x));
			else if (!ex)
				buf_add_str(out, " (missing)");
		} else {
			buf_add_str(out, " (no file: the VM is not running)");
		}
		buf_add_char(out, '\n');
		if (json_object_object_get_ex(v, "usedBy", &users) && json_object_array_length(users) > 0) {
			buf_add_str(out, "      used by");
			for (size_t k = 0; k < json_object_array_length(users); k++)
				buf_printf(out, " %s", json_object_get_string(json_object_array_get_idx(users, k)));
			buf_add_char(out, '\n');
		}
		const char *bl = s_of(v, "brokenLink"), *why = s_of(v, "reason");
		if (bl)
			buf_printf(out, "      first broken link: %s: %s\n", bl, why ? why : "");
	}
	for (size_t i = 0; !engine && i < n; i++) {
		struct json_object *v = json_object_array_get_idx(chain, i), *d, *p, *pv;
		buf_printf(out, "  %s:", s_of(v, "volume"));
		if (json_object_object_get_ex(v, "dataVolume", &d))
			buf_printf(out, " DataVolume %s %s%s%s ->", s_of(d, "name"), s_of(d, "phase"), s_of(d, "progress") ? " " : "",
				   s_of(d, "progress") ? s_of(d, "progress") : "");
		if (json_object_object_get_ex(v, "pvc", &p)) {
			buf_printf(out, " PVC %s %s", s_of(p, "name"), s_of(p, "phase"));
			if (s_of(p, "capacity"))
				buf_printf(out, " %s", s_of(p, "capacity"));
			if (s_of(p, "accessModes") && *s_of(p, "accessModes"))
				buf_printf(out, " %s", s_of(p, "accessModes"));
			if (s_of(p, "storageClass"))
				buf_printf(out, " class %s", s_of(p, "storageClass"));
		}
		if (json_object_object_get_ex(v, "pv", &pv))
			buf_printf(out, " -> PV %s %s reclaim %s", s_of(pv, "name"), s_of(pv, "phase"),
				   s_of(pv, "reclaimPolicy") ? s_of(pv, "reclaimPolicy") : "?");
		buf_add_char(out, '\n');
		struct json_object *own;
		if (json_object_object_get_ex(v, "pvc", &p) && json_object_object_get_ex(p, "owners", &own) &&
		    json_object_array_length(own) > 0) {
			buf_add_str(out, "      PVC owned by");
			for (size_t k = 0; k < json_object_array_length(own); k++)
				buf_printf(out, " %s", json_object_get_string(json_object_array_get_idx(own, k)));
			buf_add_char(out, '\n');
		}
		const char *bl = s_of(v, "brokenLink"), *why = s_of(v, "reason");
		if (bl)
			buf_printf(out, "      first broken link: %s: %s\n", bl, why ? why : "");
		else
			buf_add_str(out, "      every link holds\n");
		if (s_of(v, "migration"))
			buf_printf(out, "      migration: %s\n", s_of(v, "migration"));
	}
}
