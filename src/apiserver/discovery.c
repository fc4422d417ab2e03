/* The engine service's resources and discovery: RES[] (each a kind of model/registry.c with the verbs this server
 * allows on it), /api, /apis, the APIResourceLists (the actions' subresources from the registry), /version and the
 * OpenAPI v3 documents kubectl apply reads. */
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

#include "apiserver/internal.h"
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

#define KV_VERSION "v1.5.0-kvcon"

/* Each resource is a kind of the registry (model/registry.c: names, group, short names, scope, store kind) with
 * the verbs this server allows on it; RES[r] reads as the table it was, filled from the registry on first use. */
static const struct {
	enum kind_id kind;
	const char *verbs;
} RES_ROWS[R_COUNT] = {
	[R_VM] = { KIND_VM, "create,delete,get,list,patch,update,watch" },
	[R_VMI] = { KIND_VMI, "delete,get,list,watch" },
	[R_POD] = { KIND_POD, "get,list,watch" },
	[R_EVENT] = { KIND_EVENT, "get,list,watch" },
	[R_NS] = { KIND_NS, "create,delete,get,list,patch,watch" },
	[R_NODE] = { KIND_NODE, "get,list,watch,patch" },
	[R_VMIM] = { KIND_VMIM, "create,delete,get,list,watch" },
	/* the engine's own KubeVirt CR (kv_json): read-only, writes are 405 */
	[R_KV] = { KIND_KV, "get,list,watch" },
	[R_VMIRS] = { KIND_VMIRS, "create,delete,get,list,patch,update,watch" },
	/* storage (storage.c): local volumes under the engine's volume directory, CDI's DataVolumes */
	[R_PVC] = { KIND_PVC, "create,delete,get,list,patch,update,watch" },
	[R_PV] = { KIND_PV, "delete,get,list,watch" },
	[R_SC] = { KIND_SC, "get,list,watch" },
	[R_DV] = { KIND_DV, "create,delete,get,list,patch,update,watch" },
	/* secrets.c */
	[R_SECRET] = { KIND_SECRET, "create,delete,get,list,patch,update,watch" },
	[R_CM] = { KIND_CM, "create,delete,get,list,patch,update,watch" },
};

/* The API groups served besides the core one, with their one version each. */
static const char *const GROUPS[][2] = {
	{ "kubevirt.io", "v1" },
	{ "subresources.kubevirt.io", "v1" },
	{ "storage.k8s.io", "v1" },
	{ "cdi.kubevirt.io", "v1beta1" },
};
#define NGROUPS (sizeof GROUPS / sizeof GROUPS[0])

const struct resdef *apis_res_table(void)
{
	static struct resdef t[R_COUNT];
	if (t[0].plural == NULL)
		for (int r = 0; r < R_COUNT; r++) {
			const struct kind_def *k = registry_kind(RES_ROWS[r].kind);
			t[r] = (struct resdef){ k->plural, k->singular, k->kind, k->group, k->shorts[0], k->shorts[1],
						k->version, k->namespaced, k->obj, RES_ROWS[r].verbs, RES_ROWS[r].kind };
		}
	return t;
}

const char *apis_api_version(enum res r)
{
	static char gv[R_COUNT][64];
	if (*RES[r].group == 0)
		return "v1";
	if (gv[r][0] == 0)
		snprintf(gv[r], sizeof gv[r], "%s/%s", RES[r].group, RES[r].version);
	return gv[r];
}

enum res apis_res_find(const char *g, const char *v, const char *plural)
{
	for (int r = 0; r < R_COUNT; r++)
		if (strcmp(RES[r].plural, plural) == 0 && strcmp(RES[r].group, g ? g : "") == 0 &&
		    strcmp(RES[r].version, v) == 0)
			return (enum res)r;
	return R_COUNT;
}

enum res apis_res_of_kind(enum obj_kind k)
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

/* ---- discovery ---- */

static json_object *resource_list(const char *gv)
{
	json_object *l = json_object_new_object(), *a = json_object_new_array();
	json_object_object_add(l, "kind", apis_jstr("APIResourceList"));
	json_object_object_add(l, "apiVersion", apis_jstr("v1"));
	json_object_object_add(l, "groupVersion", apis_jstr(gv));
	bool kv = strcmp(gv, "kubevirt.io/v1") == 0, sub = strcmp(gv, "subresources.kubevirt.io/v1") == 0;
	for (int r = 0; r < R_COUNT && !sub; r++) {
		if (strcmp(apis_api_version((enum res)r), gv) != 0)
			continue;
		json_object *e = json_object_new_object(), *verbs = json_object_new_array(), *sn = json_object_new_array();
		json_object_object_add(e, "name", apis_jstr(RES[r].plural));
		json_object_object_add(e, "singularName", apis_jstr(RES[r].singular));
		json_object_object_add(e, "namespaced", json_object_new_boolean(RES[r].namespaced));
		json_object_object_add(e, "kind", apis_jstr(RES[r].kind));
		char *v = xstrdup(RES[r].verbs);
		for (char *s, *p = strtok_r(v, ",", &s); p; p = strtok_r(NULL, ",", &s))
			json_object_array_add(verbs, apis_jstr(p));
		free(v);
		json_object_object_add(e, "verbs", verbs);
		if (RES[r].short1)
			json_object_array_add(sn, apis_jstr(RES[r].short1));
		if (RES[r].short1 && RES[r].short2)
			json_object_array_add(sn, apis_jstr(RES[r].short2));
		json_object_object_add(e, "shortNames", sn);
		if (kv || r == R_DV) {
			json_object *cat = json_object_new_array();
			json_object_array_add(cat, apis_jstr("all"));
			json_object_object_add(e, "categories", cat);
		}
		json_object_array_add(a, e);
		if (r == R_POD) { /* the Eviction API (kubectl drain looks for it here, else deletes pods) */
			json_object *se = json_object_new_object(), *sv = json_object_new_array();
			json_object_object_add(se, "name", apis_jstr("pods/eviction"));
			json_object_object_add(se, "singularName", apis_jstr(""));
			json_object_object_add(se, "namespaced", json_object_new_boolean(1));
			json_object_object_add(se, "group", apis_jstr("policy"));
			json_object_object_add(se, "version", apis_jstr("v1"));
			json_object_object_add(se, "kind", apis_jstr("Eviction"));
			json_object_array_add(sv, apis_jstr("create"));
			json_object_object_add(se, "verbs", sv);
			json_object_array_add(a, se);
		}
		if (r == R_VMIRS) { /* its scale subresource (kubectl scale) and status, as KubeVirt's CRD declares them */
			for (int k = 0; k < 2; k++) {
				json_object *se = json_object_new_object(), *sv = json_object_new_array();
				char *sn_ = xasprintf("%s/%s", RES[r].plural, k ? "status" : "scale");
				json_object_object_add(se, "name", apis_jstr(sn_));
				free(sn_);
				json_object_object_add(se, "singularName", apis_jstr(""));
				json_object_object_add(se, "namespaced", json_object_new_boolean(1));
				if (!k) {
					json_object_object_add(se, "group", apis_jstr("autoscaling"));
					json_object_object_add(se, "version", apis_jstr("v1"));
				}
				json_object_object_add(se, "kind", apis_jstr(k ? RES[r].kind : "Scale"));
				json_object_array_add(sv, apis_jstr("get"));
				json_object_array_add(sv, apis_jstr("patch"));
				json_object_array_add(sv, apis_jstr("update"));
				json_object_object_add(se, "verbs", sv);
				json_object_array_add(a, se);
			}
		}
	}
	if (sub) {
		/* the actions' subresources (model/registry.c), then the VMI's console and display, then the guest
		 * verbs' (port-forward and the guest agent's) */
		char subs[24][2][64];
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
		for (int i = 0; i < GV_COUNT && n < 24; i++) {
			const struct guest_verb_def *gd = registry_guest_verb((enum guest_verb)i);
			bool seen = gd->subresource == NULL;
			char name[64];
			snprintf(name, sizeof name, "%s/%s", RES[R_VMI].plural, gd->subresource ? gd->subresource : "");
			for (size_t k = 0; k < n && !seen; k++)
				seen = strcmp(subs[k][0], name) == 0;
			if (seen)
				continue;
			snprintf(subs[n][0], sizeof subs[n][0], "%s", name);
			snprintf(subs[n][1], sizeof subs[n][1], "get");
			n++;
		}
		for (size_t i = 0; i < n; i++) {
			json_object *e = json_object_new_object(), *verbs = json_object_new_array();
			json_object_object_add(e, "name", apis_jstr(subs[i][0]));
			json_object_object_add(e, "singularName", apis_jstr(""));
			json_object_object_add(e, "namespaced", json_object_new_boolean(1));
			json_object_object_add(e, "kind", apis_jstr(""));
			json_object_array_add(verbs, apis_jstr(subs[i][1]));
			json_object_object_add(e, "verbs", verbs);
			json_object_array_add(a, e);
		}
	}
	json_object_object_add(l, "resources", a);
	return l;
}

static json_object *group_json(const char *g, const char *ver)
{
	json_object *o = json_object_new_object(), *vs = json_object_new_array(), *v = json_object_new_object();
	char *gv = xasprintf("%s/%s", g, ver);
	json_object_object_add(o, "kind", apis_jstr("APIGroup"));
	json_object_object_add(o, "apiVersion", apis_jstr("v1"));
	json_object_object_add(o, "name", apis_jstr(g));
	json_object_object_add(v, "groupVersion", apis_jstr(gv));
	json_object_object_add(v, "version", apis_jstr(ver));
	json_object_array_add(vs, json_object_get(v));
	json_object_object_add(o, "versions", vs);
	json_object_object_add(o, "preferredVersion", v);
	free(gv);
	return o;
}

/* Just enough OpenAPI v3 for kubectl apply/create: write operations declare fieldValidation (kubectl then
 * leaves validation to the server, which runs the engine's validators) and each kind keeps unknown fields. */
static json_object *openapi_doc(const char *gv)
{
	bool kv = strcmp(gv, "v1") != 0;
	json_object *doc = json_object_new_object(), *paths = json_object_new_object(), *schemas = json_object_new_object();
	json_object_object_add(doc, "openapi", apis_jstr("3.0.0"));
	json_object *info = json_object_new_object();
	json_object_object_add(info, "title", apis_jstr("kvcon engine"));
	json_object_object_add(info, "version", apis_jstr(KV_VERSION));
	json_object_object_add(doc, "info", info);
	for (int r = 0; r < R_COUNT; r++) {
		if (strcmp(apis_api_version((enum res)r), gv) != 0)
			continue;
		/* io.k8s.api.core.v1.Pod, io.kubevirt.v1.VirtualMachine, io.k8s.api.storage.v1.StorageClass */
		char *sname = !kv ? xasprintf("io.k8s.api.core.v1.%s", RES[r].kind)
			      : strcmp(RES[r].group, "kubevirt.io") == 0 ? xasprintf("io.kubevirt.v1.%s", RES[r].kind)
			      : strcmp(RES[r].group, "storage.k8s.io") == 0
				      ? xasprintf("io.k8s.api.storage.%s.%s", RES[r].version, RES[r].kind)
				      : xasprintf("io.kubevirt.cdi.%s.%s", RES[r].version, RES[r].kind);
		char *ref = xasprintf("#/components/schemas/%s", sname);
		json_object *gvk = json_object_new_object();
		json_object_object_add(gvk, "group", apis_jstr(RES[r].group));
		json_object_object_add(gvk, "version", apis_jstr(RES[r].version));
		json_object_object_add(gvk, "kind", apis_jstr(RES[r].kind));
		char *base = kv ? xasprintf("/apis/%s", gv) : xstrdup("/api/v1");
		char *coll = xasprintf("%s%s%s", base, RES[r].namespaced ? "/namespaces/{namespace}/" : "/", RES[r].plural);
		free(base);
		char *one = xasprintf("%s/{name}", coll);
		const char *ops[][2] = { { "post", NULL }, { "put", "one" }, { "patch", "one" } };
		json_object *pc = json_object_new_object(), *po = json_object_new_object();
		for (size_t i = 0; i < 3; i++) {
			json_object *op = json_object_new_object(), *params = json_object_new_array(),
				    *fv = json_object_new_object(), *sch = json_object_new_object();
			json_object_object_add(fv, "name", apis_jstr("fieldValidation"));
			json_object_object_add(fv, "in", apis_jstr("query"));
			json_object_object_add(sch, "type", apis_jstr("string"));
			json_object_object_add(sch, "uniqueItems", json_object_new_boolean(1));
			json_object_object_add(fv, "schema", sch);
			json_object_array_add(params, fv);
			json_object_object_add(op, "parameters", params);
			json_object *rs = json_object_new_object(), *ok = json_object_new_object(),
				    *content = json_object_new_object(), *aj = json_object_new_object(),
				    *s2 = json_object_new_object();
			json_object_object_add(s2, "$ref", apis_jstr(ref));
			json_object_object_add(aj, "schema", s2);
			json_object_object_add(content, "application/json", aj);
			json_object_object_add(ok, "description", apis_jstr("OK"));
			json_object_object_add(ok, "content", content);
			json_object_object_add(rs, "200", ok);
			json_object_object_add(op, "responses", rs);
			json_object_object_add(op, "x-kubernetes-action", apis_jstr(ops[i][0]));
			json_object_object_add(op, "x-kubernetes-group-version-kind", json_object_get(gvk));
			json_object_object_add(ops[i][1] ? po : pc, ops[i][0], op);
		}
		json_object_object_add(paths, coll, pc);
		json_object_object_add(paths, one, po);
		json_object *s = json_object_new_object(), *gl = json_object_new_array();
		json_object_object_add(s, "type", apis_jstr("object"));
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

enum MHD_Result apis_discovery(struct apisrv *srv, struct MHD_Connection *c, const char *p, bool *handled)
{
	*handled = true;
	if (strcmp(p, "/version") == 0) {
		json_object *v = json_object_new_object();
		json_object_object_add(v, "major", apis_jstr("1"));
		json_object_object_add(v, "minor", apis_jstr("33"));
		json_object_object_add(v, "gitVersion", apis_jstr("v1.33.0-kvcon-engine"));
		json_object_object_add(v, "platform", apis_jstr("linux/amd64"));
		return apis_send_json(c, 200, v);
	}
	if (strcmp(p, "/healthz") == 0 || strcmp(p, "/readyz") == 0 || strcmp(p, "/livez") == 0)
		return apis_send_text(c, 200, xstrdup("ok"), "text/plain");
	if (strcmp(p, "/api") == 0) {
		json_object *o = json_object_new_object(), *v = json_object_new_array();
		json_object_object_add(o, "kind", apis_jstr("APIVersions"));
		json_object_array_add(v, apis_jstr("v1"));
		json_object_object_add(o, "versions", v);
		json_object_object_add(o, "serverAddressByClientCIDRs", json_object_new_array());
		return apis_send_json(c, 200, o);
	}
	if (strcmp(p, "/api/v1") == 0)
		return apis_send_json(c, 200, resource_list("v1"));
	if (strcmp(p, "/apis") == 0) {
		json_object *o = json_object_new_object(), *g = json_object_new_array();
		json_object_object_add(o, "kind", apis_jstr("APIGroupList"));
		json_object_object_add(o, "apiVersion", apis_jstr("v1"));
		for (size_t i = 0; i < NGROUPS; i++) {
			json_object *e = group_json(GROUPS[i][0], GROUPS[i][1]);
			json_object_object_del(e, "kind");
			json_object_object_del(e, "apiVersion");
			json_object_array_add(g, e);
		}
		json_object_object_add(o, "groups", g);
		return apis_send_json(c, 200, o);
	}
	for (size_t i = 0; i < NGROUPS; i++) {
		char gp[96], vp[96];
		snprintf(gp, sizeof gp, "/apis/%s", GROUPS[i][0]);
		snprintf(vp, sizeof vp, "/apis/%s/%s", GROUPS[i][0], GROUPS[i][1]);
		if (strcmp(p, gp) == 0)
			return apis_send_json(c, 200, group_json(GROUPS[i][0], GROUPS[i][1]));
		if (strcmp(p, vp) == 0)
			return apis_send_json(c, 200, resource_list(vp + 6));
	}
	if (strcmp(p, "/apis/subresources.kubevirt.io/v1/version") == 0) {
		json_object *v = json_object_new_object();
		json_object_object_add(v, "gitVersion", apis_jstr(KV_VERSION));
		json_object_object_add(v, "platform", apis_jstr("linux/amd64"));
		return apis_send_json(c, 200, v);
	}
	if (strcmp(p, "/openapi/v3") == 0) {
		json_object *o = json_object_new_object(), *ps = json_object_new_object();
		for (size_t i = 0; i <= NGROUPS; i++) {
			if (i < NGROUPS && strcmp(GROUPS[i][0], "subresources.kubevirt.io") == 0)
				continue;
			char key[96];
			if (i == NGROUPS)
				snprintf(key, sizeof key, "api/v1");
			else
				snprintf(key, sizeof key, "apis/%s/%s", GROUPS[i][0], GROUPS[i][1]);
			json_object *e = json_object_new_object();
			char *u = xasprintf("/openapi/v3/%s?hash=%llu", key, (unsigned long long)srv->started);
			json_object_object_add(e, "serverRelativeURL", apis_jstr(u));
			free(u);
			json_object_object_add(ps, key, e);
		}
		json_object_object_add(o, "paths", ps);
		return apis_send_json(c, 200, o);
	}
	if (strcmp(p, "/openapi/v3/api/v1") == 0)
		return apis_send_json(c, 200, openapi_doc("v1"));
	for (size_t i = 0; i < NGROUPS; i++) {
		char k[96];
		snprintf(k, sizeof k, "/openapi/v3/apis/%s/%s", GROUPS[i][0], GROUPS[i][1]);
		if (strcmp(p, k) == 0 && strcmp(GROUPS[i][0], "subresources.kubevirt.io") != 0)
			return apis_send_json(c, 200, openapi_doc(k + 17));
	}
	*handled = false;
	return MHD_NO;
}
