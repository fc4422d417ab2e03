/* The storage behind a cluster VM, link by link: each volume of the VM's template -> its DataVolume (CDI) ->
 * PersistentVolumeClaim -> PersistentVolume, with phase, capacity, access modes, storage class, owner
 * references and reclaim policy, and the first link that is broken (a missing object, a DataVolume not
 * Succeeded, a PVC not Bound, a PV not Bound) or, for a running VM, a ReadWriteOnce claim that blocks live
 * migration. The objects are read once with GETs (diagnose runs once; the store keeps no storage kinds). */
#include "cmd/storage.h"

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

struct json_object *storage_chain(struct source *src, const char *ns, const char *vm, bool running, char **err)
{
	*err = NULL;
	struct kube_http *h = kube_source_http(src);
	if (h == NULL) {
		*err = xstrdup("not a cluster");
		return NULL;
	}
	long status;
	char *e = NULL;
	char *path = obj_path("/apis/kubevirt.io/v1", ns, "virtualmachines", vm);
	struct json_object *vmo = get_obj(h, path, &status, &e);
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
			path = obj_path("/apis/cdi.kubevirt.io/v1beta1", ns, "datavolumes", dv);
			struct json_object *d = get_obj(h, path, &status, &e);
			free(path);
			struct json_object *dj = json_object_new_object();
			add_str(dj, "name", dv);
			if (d == NULL) {
				add_str(dj, "phase", status == 404 ? "(missing)" : "(unreadable)");
				char *why = status == 404 ? xasprintf("DataVolume %s/%s does not exist", ns, dv)
							  : xasprintf("DataVolume %s/%s: %s", ns, dv, e ? e : "read failed");
				broken(v, "DataVolume", why);
				free(why);
			} else {
				const char *ph = jget(d, "status", "phase", NULL);
				add_str(dj, "phase", ph ? ph : "");
				add_str(dj, "progress", jget(d, "status", "progress", NULL));
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
			free(e);
			e = NULL;
			json_object_object_add(v, "dataVolume", dj);
			json_object_put(d);
		}
		path = obj_path("/api/v1", ns, "persistentvolumeclaims", claim);
		struct json_object *pvc = get_obj(h, path, &status, &e);
		free(path);
		struct json_object *pj = json_object_new_object();
		add_str(pj, "name", claim);
		const char *pv_name = NULL;
		if (pvc == NULL) {
			add_str(pj, "phase", status == 404 ? "(missing)" : "(unreadable)");
			char *why = status == 404 ? xasprintf("PVC %s/%s does not exist", ns, claim)
						  : xasprintf("PVC %s/%s: %s", ns, claim, e ? e : "read failed");
			broken(v, "PVC", why);
			free(why);
		} else {
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
		free(e);
		e = NULL;
		json_object_object_add(v, "pvc", pj);
		if (pv_name) {
			path = obj_path("/api/v1", NULL, "persistentvolumes", pv_name);
			struct json_object *pv = get_obj(h, path, &status, &e);
			free(path);
			struct json_object *vj = json_object_new_object();
			add_str(vj, "name", pv_name);
			if (pv == NULL) {
				add_str(vj, "phase", status == 404 ? "(missing)" : "(unreadable)");
				char *why = xasprintf("PV %s (bound to PVC %s/%s) %s", pv_name, ns, claim,
						      status == 404 ? "does not exist" : "could not be read");
				broken(v, "PV", why);
				free(why);
			} else {
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
			free(e);
			e = NULL;
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

void storage_format_text(struct json_object *chain, struct buf *out)
{
	size_t n = chain ? json_object_array_length(chain) : 0;
	if (n == 0)
		return;
	buf_add_str(out, "\nStorage (VM volume -> DataVolume -> PVC -> PV):\n");
	for (size_t i = 0; i < n; i++) {
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
