/* The engine service's namespaces: those in use (default, the KubeVirt CR's, any object's) and those created through
 * the API, with their labels and annotations, kept in $XDG_STATE_HOME/kvcon/engine-namespaces; and their deletion
 * as Kubernetes does it: the namespace turns Terminating (its deletionTimestamp written down before the answer),
 * creates in it are refused, the namespace controller's part (apis_nsx_tick, once a second) deletes everything in
 * it through each kind's own delete, and once it is empty the namespace goes (watchers see DELETED). */
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

const char **apis_namespaces(struct apisrv *srv, size_t *n)
{
	const char **out = xcalloc(3, sizeof *out);
	*n = 0;
	out[(*n)++] = "default";
	out[(*n)++] = KV_NS; /* the KubeVirt CR's */
	for (size_t i = 0; i < srv->nnsx; i++) {
		if (strcmp(srv->nsx[i], "default") == 0 || strcmp(srv->nsx[i], KV_NS) == 0)
			continue;
		out = xreallocarray(out, *n + 2, sizeof *out);
		out[(*n)++] = srv->nsx[i];
	}
	for (int k = 0; k < OBJ_KIND_COUNT; k++) /* a binary search per namespace in each kind's order */
		apis_order_namespaces(srv, (enum obj_kind)k, &out, n);
	for (size_t i = 1; i < *n; i++)
		for (size_t k = i; k > 0 && strcmp(out[k - 1], out[k]) > 0; k--) {
			const char *t = out[k];
			out[k] = out[k - 1];
			out[k - 1] = t;
		}
	return out;
}

/* ---- namespaces created through the API ---- */

/* Namespaces that may not be deleted: the API server's immortal ones, and the KubeVirt CR's. */
static const char *const BUILT_IN[] = { "default", "kube-system", "kube-public", "kube-node-lease", KV_NS };

static char *nsx_path(void)
{
	char *d = util_state_dir(), *p = util_path_join(d, "engine-namespaces");
	free(d);
	return p;
}

static void nsx_add(struct apisrv *srv, const char *name, const char *meta)
{
	srv->nsx = xreallocarray(srv->nsx, srv->nnsx + 1, sizeof *srv->nsx);
	srv->nsxmeta = xreallocarray(srv->nsxmeta, srv->nnsx + 1, sizeof *srv->nsxmeta);
	srv->nsx[srv->nnsx] = xstrdup(name);
	srv->nsxmeta[srv->nnsx++] = meta ? xstrdup(meta) : NULL;
}

static void nsx_remove(struct apisrv *srv, size_t i)
{
	free(srv->nsx[i]);
	free(srv->nsxmeta[i]);
	srv->nsxmeta[i] = srv->nsxmeta[srv->nnsx - 1];
	srv->nsx[i] = srv->nsx[--srv->nnsx];
}

static size_t nsx_find(const struct apisrv *srv, const char *name)
{
	size_t i;
	for (i = 0; i < srv->nnsx && strcmp(srv->nsx[i], name) != 0; i++)
		;
	return i;
}

/* The labels (but the one the server sets) and annotations of a Namespace object, as kept, and its
 * deletionTimestamp when it is terminating (deleting, else NULL); NULL when none. */
static char *nsx_meta_of(json_object *o, const char *deleting)
{
	json_object *md = apis_jget(o, "metadata"), *l = apis_jget(md, "labels"), *a = apis_jget(md, "annotations");
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
	if (deleting)
		json_object_object_add(m, "deletionTimestamp", apis_jstr(deleting));
	char *t = json_object_object_length(m) ? xstrdup(json_object_to_json_string_ext(m, JSON_C_TO_STRING_PLAIN)) : NULL;
	json_object_put(m);
	return t;
}

/* The deletionTimestamp of namespace i of srv->nsx when it is terminating (caller frees), else NULL. */
static char *nsx_deleting(const struct apisrv *srv, size_t i)
{
	json_object *m = srv->nsxmeta[i] ? json_tokener_parse(srv->nsxmeta[i]) : NULL;
	const char *t = apis_jgets(m, "deletionTimestamp");
	char *out = t ? xstrdup(t) : NULL;
	if (m)
		json_object_put(m);
	return out;
}

/* Writes the file (temporary file, fsync, rename). 0, or -1 with why. */
static int nsx_save(struct apisrv *srv, char why[UTIL_WHY_LEN])
{
	struct buf b;
	buf_init(&b);
	for (size_t i = 0; i < srv->nnsx; i++)
		buf_printf(&b, "%s%s%s\n", srv->nsx[i], srv->nsxmeta[i] ? "\t" : "", srv->nsxmeta[i] ? srv->nsxmeta[i] : "");
	char *p = nsx_path();
	int rc = util_write_file_why(p, b.data ? b.data : "", b.len, 0600, why);
	if (rc < 0)
		log_warn("engine serve: %s: %s", p, why);
	free(p);
	buf_free(&b);
	return rc;
}

void apis_nsx_load(struct apisrv *srv)
{
	char *p = nsx_path(), *why = NULL, *text = trust_read_file(p, NULL, &why);
	if (why)
		log_warn("engine serve: %s (its namespaces are not listed)", why);
	free(why);
	free(p);
	for (char *sp, *l = text ? strtok_r(text, "\n", &sp) : NULL; l; l = strtok_r(NULL, "\n", &sp)) {
		char *meta = strchr(l, '\t'); /* NAME, or NAME TAB its labels, annotations, deletionTimestamp (JSON) */
		if (meta)
			*meta++ = '\0';
		json_object *mj = meta ? json_tokener_parse(meta) : NULL;
		if (manifest_dns_label(l) && srv->nnsx < 10000)
			nsx_add(srv, l, mj && json_object_is_type(mj, json_type_object) ? meta : NULL);
		if (mj)
			json_object_put(mj);
	}
	free(text);
}

/* Every create asks (100,000 VMs: it was a walk of them all): the built-in and created ones, then a binary search of
 * each kind's order. */
bool apis_ns_exists(struct apisrv *srv, const char *name)
{
	if (strcmp(name, "default") == 0 || strcmp(name, KV_NS) == 0 || nsx_find(srv, name) < srv->nnsx)
		return true;
	for (int k = 0; k < OBJ_KIND_COUNT; k++)
		if (apis_order_has_ns(srv, (enum obj_kind)k, name))
			return true;
	return false;
}

bool apis_ns_terminating(struct apisrv *srv, const char *name)
{
	size_t i = nsx_find(srv, name);
	char *d = i < srv->nnsx ? nsx_deleting(srv, i) : NULL;
	free(d);
	return d != NULL;
}

/* A watch event of namespace name (its object as served now, under a new resourceVersion). */
static void ns_event(struct apisrv *srv, const char *name, const char *type)
{
	srv->rv++;
	json_object *j = apis_ns_json(srv, name);
	char *text = apis_jtext(j);
	json_object_put(j);
	apis_ring_push(srv, R_NS, type, NULL, text);
	free(text);
	apis_wake_watchers(srv);
}

enum MHD_Result apis_create_ns(struct apisrv *srv, struct MHD_Connection *c, struct reqctx *rq)
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
			return apis_send_status(c, 400, "BadRequest", R_COUNT, NULL, "the request body is not a Namespace");
		}
		o = json_object_new_object();
		json_object *md = apis_jobj(o, "metadata");
		json_object_object_add(md, "name", json_object_new_string(pname));
		free(kind);
		free(pname);
	} else if ((o = apis_body_json(c, rq, &rc)) == NULL)
		return rc;
	const char *name = apis_jgets(apis_jget(o, "metadata"), "name");
	char why[UTIL_WHY_LEN];
	if (name == NULL || !manifest_dns_label(name))
		rc = apis_send_status(c, 422, "Invalid", R_NS, name, "Namespace \"%s\" is invalid: metadata.name: Invalid value: "
				 "a lowercase RFC 1123 label is required", name ? name : "");
	else if (apis_ns_terminating(srv, name))
		rc = apis_send_status(c, 409, "AlreadyExists", R_NS, name,
				      "object is being deleted: namespaces \"%s\" already exists", name);
	else if (apis_ns_exists(srv, name))
		rc = apis_send_status(c, 409, "AlreadyExists", R_NS, name, "namespaces \"%s\" already exists", name);
	else if (apis_arg(c, "dryRun"))
		rc = apis_send_json(c, 201, json_object_get(o)); /* nothing kept */
	else {
		char *meta = nsx_meta_of(o, NULL);
		nsx_add(srv, name, meta);
		free(meta);
		if (nsx_save(srv, why) < 0) {
			nsx_remove(srv, srv->nnsx - 1);
			rc = apis_send_status(c, 500, "InternalError", R_NS, name, "Internal error occurred: %s", why);
		} else {
			ns_event(srv, name, "ADDED");
			rc = apis_send_json(c, 201, apis_ns_json(srv, name));
		}
	}
	json_object_put(o);
	return rc;
}

/* kubectl apply's patch of a Namespace: its labels and annotations (a merge patch; a strategic merge patch is
 * one for these maps). A namespace that exists only because it is in use or built in is kept from then on; a
 * terminating one stays so. */
enum MHD_Result apis_patch_ns(struct apisrv *srv, struct MHD_Connection *c, struct reqctx *rq, const char *name)
{
	enum MHD_Result rc;
	if (!apis_ns_exists(srv, name))
		return apis_not_found(c, R_NS, name);
	json_object *p = apis_body_json(c, rq, &rc);
	if (p == NULL)
		return rc;
	json_object *res = apisel_merge_patch(apis_ns_json(srv, name), p);
	json_object_put(p);
	if (!util_str_eq(apis_jgets(apis_jget(res, "metadata"), "name"), name)) {
		json_object_put(res);
		return apis_send_status(c, 400, "BadRequest", R_COUNT, NULL, "the name of the object may not change");
	}
	if (apis_arg(c, "dryRun"))
		return apis_send_json(c, 200, res);
	size_t i = nsx_find(srv, name);
	char *deleting = i < srv->nnsx ? nsx_deleting(srv, i) : NULL;
	char *meta = nsx_meta_of(res, deleting);
	free(deleting);
	json_object_put(res);
	if (i == srv->nnsx)
		nsx_add(srv, name, meta);
	else {
		free(srv->nsxmeta[i]);
		srv->nsxmeta[i] = meta ? xstrdup(meta) : NULL;
	}
	free(meta);
	char why[UTIL_WHY_LEN];
	nsx_save(srv, why);
	ns_event(srv, name, "MODIFIED");
	return apis_send_json(c, 200, apis_ns_json(srv, name));
}

static void on_deleted(void *arg)
{
	apis_nsx_tick(arg);
}

/* DELETE: a built-in namespace is refused (403, as the API server refuses default and kube-system); another one
 * turns Terminating, written down before the answer (200, the object as it is now: kubectl waits until it is
 * gone); its content goes from the loop (apis_nsx_tick). A second delete while it terminates is 409, as on a
 * cluster. */
enum MHD_Result apis_delete_ns(struct apisrv *srv, struct MHD_Connection *c, struct reqctx *rq, const char *name)
{
	for (size_t b = 0; b < sizeof BUILT_IN / sizeof BUILT_IN[0]; b++)
		if (strcmp(BUILT_IN[b], name) == 0)
			return apis_send_status(c, 403, "Forbidden", R_NS, name,
						"namespaces \"%s\" is forbidden: this namespace may not be deleted", name);
	if (!apis_ns_exists(srv, name))
		return apis_not_found(c, R_NS, name);
	if (apis_ns_terminating(srv, name))
		return apis_send_status(c, 409, "Conflict", R_NS, name,
					"Operation cannot be fulfilled on namespaces \"%s\": The system is ensuring all content is "
					"removed from this namespace.  Upon completion, this namespace will automatically be purged "
					"by the system.", name);
	char ts[40];
	util_format_time(util_wall_s(), ts, sizeof ts);
	if (apis_dry_run(c, rq)) {
		json_object *j = apis_ns_json(srv, name);
		json_object_object_add(apis_jobj(j, "metadata"), "deletionTimestamp", apis_jstr(ts));
		json_object_object_add(apis_jobj(j, "status"), "phase", apis_jstr("Terminating"));
		return apis_send_json(c, 200, j);
	}
	size_t i = nsx_find(srv, name);
	bool added = i == srv->nnsx; /* in use only: kept from now on, as terminating */
	if (added)
		nsx_add(srv, name, NULL);
	json_object *cur = apis_ns_json(srv, name);
	char *old = srv->nsxmeta[i] ? xstrdup(srv->nsxmeta[i]) : NULL;
	free(srv->nsxmeta[i]);
	srv->nsxmeta[i] = nsx_meta_of(cur, ts);
	json_object_put(cur);
	char why[UTIL_WHY_LEN];
	if (nsx_save(srv, why) < 0) {
		if (added)
			nsx_remove(srv, i);
		else {
			free(srv->nsxmeta[i]);
			srv->nsxmeta[i] = old;
			old = NULL;
		}
		free(old);
		return apis_send_status(c, 500, "InternalError", R_NS, name, "Internal error occurred: %s", why);
	}
	free(old);
	log_info("engine serve: namespace %s: terminating", name);
	ns_event(srv, name, "MODIFIED");
	loop_post(on_deleted, srv); /* its content goes at once, not at the next tick */
	return apis_send_json(c, 200, apis_ns_json(srv, name));
}

/* POST of an object into a terminating namespace: 403 as the API server's NamespaceLifecycle admission words it
 * (kubectl prints `... "x" is forbidden: unable to create new content in namespace NS because it is being
 * terminated`). The name comes from the body (JSON, or kubectl's protobuf). */
enum MHD_Result apis_ns_refuse_create(struct MHD_Connection *c, struct reqctx *rq, enum res r, const char *ns)
{
	char *name = NULL;
	const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
	if (!rq->too_big && ct && strstr(ct, "protobuf")) {
		char *kind = NULL;
		if (apisel_pb_kind_name(rq->body.data ? rq->body.data : "", rq->body.len, &kind, &name) < 0) {
			free(name);
			name = NULL;
		}
		free(kind);
	} else if (!rq->too_big && rq->body.len) {
		buf_add_char(&rq->body, 0);
		json_object *o = json_tokener_parse(rq->body.data);
		rq->body.len--;
		const char *n = apis_jgets(apis_jget(o, "metadata"), "name");
		name = n && *n ? xstrdup(n) : NULL;
		if (o)
			json_object_put(o);
	}
	const char *g = RES[r].group;
	char *msg = name ? xasprintf("%s%s%s \"%s\" is forbidden: unable to create new content in namespace %s because it "
				     "is being terminated", RES[r].plural, *g ? "." : "", g, name, ns)
			 : xasprintf("%s%s%s is forbidden: unable to create new content in namespace %s because it is being "
				     "terminated", RES[r].plural, *g ? "." : "", g, ns);
	json_object *s = json_object_new_object(), *d = json_object_new_object(), *causes = json_object_new_array(),
		    *cause = json_object_new_object();
	json_object_object_add(s, "kind", apis_jstr("Status"));
	json_object_object_add(s, "apiVersion", apis_jstr("v1"));
	json_object_object_add(s, "metadata", json_object_new_object());
	json_object_object_add(s, "status", apis_jstr("Failure"));
	json_object_object_add(s, "message", apis_jstr(msg));
	json_object_object_add(s, "reason", apis_jstr("Forbidden"));
	if (name)
		json_object_object_add(d, "name", apis_jstr(name));
	if (*g)
		json_object_object_add(d, "group", apis_jstr(g));
	json_object_object_add(d, "kind", apis_jstr(RES[r].plural));
	json_object_object_add(cause, "reason", apis_jstr("NamespaceTerminating"));
	char *cm = xasprintf("namespace %s is being terminated", ns);
	json_object_object_add(cause, "message", apis_jstr(cm));
	free(cm);
	json_object_object_add(cause, "field", apis_jstr("metadata.namespace"));
	json_object_array_add(causes, cause);
	json_object_object_add(d, "causes", causes);
	json_object_object_add(s, "details", d);
	json_object_object_add(s, "code", json_object_new_int(403));
	free(msg);
	free(name);
	return apis_send_json(c, 403, s);
}

/* ---- the namespace controller's part ---- */

/* What of namespace ns is still served, by resource ("virtualmachines.kubevirt.io has 1 resource instances", as
 * the namespace controller counts it) into *remaining (sorted, ", "-joined; caller frees) when not NULL; the
 * claims among it into *claims. The total. */
static size_t ns_content(struct apisrv *srv, const char *ns, char **remaining, size_t *claims)
{
	size_t total = 0, nparts = 0;
	char *parts[R_COUNT];
	if (claims)
		*claims = 0;
	for (int r = 0; r < R_COUNT; r++) {
		if (!RES[r].namespaced || r == R_KV) /* the KubeVirt CR's namespace is built in */
			continue;
		if (((r == R_PVC || r == R_DV) && srv->stor == NULL) || ((r == R_SECRET || r == R_CM) && srv->secrets == NULL))
			continue; /* a server without those modules (a unit test's) serves none */
		struct filter f = { .ns = ns };
		size_t n;
		struct item *items = apis_select_items(srv, (enum res)r, &f, &n);
		apis_items_free(items, n);
		if (n == 0)
			continue;
		total += n;
		if (r == R_PVC && claims)
			*claims = n;
		const char *g = RES[r].group;
		parts[nparts++] = xasprintf("%s%s%s has %zu resource instances", RES[r].plural, *g ? "." : "", g, n);
	}
	for (size_t i = 1; i < nparts; i++)
		for (size_t k = i; k > 0 && strcmp(parts[k - 1], parts[k]) > 0; k--) {
			char *t = parts[k];
			parts[k] = parts[k - 1];
			parts[k - 1] = t;
		}
	struct buf b;
	buf_init(&b);
	for (size_t i = 0; i < nparts; i++) {
		buf_printf(&b, "%s%s", i ? ", " : "", parts[i]);
		free(parts[i]);
	}
	if (remaining)
		*remaining = xstrdup(b.data ? b.data : "");
	buf_free(&b);
	return total;
}

static void add_cond(json_object *conds, const char *type, bool status, const char *reason, const char *msg,
		     const char *since)
{
	json_object *c = json_object_new_object();
	json_object_object_add(c, "type", apis_jstr(type));
	json_object_object_add(c, "status", apis_jstr(status ? "True" : "False"));
	json_object_object_add(c, "lastTransitionTime", apis_jstr(since));
	json_object_object_add(c, "reason", apis_jstr(reason));
	json_object_object_add(c, "message", apis_jstr(msg));
	json_object_array_add(conds, c);
}

void apis_ns_terminating_json(struct apisrv *srv, const char *name, json_object *j)
{
	size_t i = nsx_find(srv, name);
	char *since = i < srv->nnsx ? nsx_deleting(srv, i) : NULL;
	if (since == NULL)
		return;
	json_object_object_add(apis_jobj(j, "metadata"), "deletionTimestamp", apis_jstr(since));
	json_object *fin = json_object_new_array();
	json_object_array_add(fin, apis_jstr("kubernetes"));
	json_object_object_add(apis_jobj(j, "spec"), "finalizers", fin);
	json_object *st = apis_jobj(j, "status"), *conds = json_object_new_array();
	json_object_object_add(st, "phase", apis_jstr("Terminating"));
	char *remaining = NULL;
	size_t claims;
	bool left = ns_content(srv, name, &remaining, &claims) > 0;
	add_cond(conds, "NamespaceDeletionDiscoveryFailure", false, "ResourcesDiscovered",
		 "All resources successfully discovered", since);
	add_cond(conds, "NamespaceDeletionGroupVersionParsingFailure", false, "ParsedGroupVersions",
		 "All legacy kube types successfully parsed", since);
	add_cond(conds, "NamespaceDeletionContentFailure", false, "ContentDeleted",
		 "All content successfully deleted, may be waiting on finalization", since);
	char *msg = left ? xasprintf("Some resources are remaining: %s", remaining) : xstrdup("All content successfully removed");
	add_cond(conds, "NamespaceContentRemaining", left, left ? "SomeResourcesRemain" : "ContentRemoved", msg, since);
	free(msg);
	msg = claims ? xasprintf("Some content in the namespace has finalizers remaining: kubernetes.io/pvc-protection in "
				 "%zu resource instances", claims)
		     : xstrdup("All content-preserving finalizers finished");
	add_cond(conds, "NamespaceFinalizersRemaining", claims > 0, claims ? "SomeFinalizersRemain" : "ContentHasNoFinalizers",
		 msg, since);
	free(msg);
	json_object_object_add(st, "conditions", conds);
	free(remaining);
	free(since);
}

/* The VMs of terminating namespace ns go as their DELETE does (an execution stops as the VM's grace period says);
 * a replica set's members go with their replica set. A refusal is logged once (it is asked again each tick). */
static void ns_delete_vms(struct apisrv *srv, const char *ns)
{
	static char *last_refusal;
	for (int s = 0; s < srv->nsrcs; s++) {
		struct source *src = srv->srcs[s];
		size_t n, nn = 0;
		struct obj *const *vms = store_objs(srv->st, src, OBJ_VM, &n);
		char **names = xcalloc(n + 1, sizeof *names); /* an action republishes the store's objects */
		for (size_t k = 0; k < n; k++)
			if (strcmp(vms[k]->ns, ns) == 0)
				names[nn++] = xstrdup(vms[k]->name);
		for (size_t k = 0; k < nn; k++) {
			struct evm *v = evm_find(src, ns, names[k]);
			if ((v && v->deleting) || apis_vmirs_owner(srv, ns, names[k]))
				continue;
			struct action_req req = { .act = ACT_DELETE, .ns = ns, .name = names[k], .grace_period = -1 };
			char *err = NULL;
			if (src->ops->action(src, &req, apis_action_done, NULL, &err) < 0) {
				char *m = xasprintf("namespace %s: deleting VM %s: %s", ns, names[k], err ? err : "refused");
				if (last_refusal == NULL || strcmp(last_refusal, m) != 0)
					log_warn("engine serve: %s", m);
				free(last_refusal);
				last_refusal = m;
			} else
				log_info("engine serve: namespace %s: deleting VM %s", ns, names[k]);
			free(err);
		}
		for (size_t k = 0; k < nn; k++)
			free(names[k]);
		free(names);
	}
}

static bool ns_has_vms(struct apisrv *srv, const char *ns)
{
	for (int s = 0; s < srv->nsrcs; s++) {
		size_t n;
		struct obj *const *vms = store_objs(srv->st, srv->srcs[s], OBJ_VM, &n);
		for (size_t k = 0; k < n; k++)
			if (strcmp(vms[k]->ns, ns) == 0)
				return true;
	}
	return false;
}

/* Events left in ns once its VMs are gone (theirs go with them): the namespace controller deletes them too. */
static void ns_delete_events(struct apisrv *srv, const char *ns)
{
	for (int s = 0; s < srv->nsrcs; s++) {
		size_t n, ng = 0;
		struct obj *const *evs = store_objs(srv->st, srv->srcs[s], OBJ_EVENT, &n);
		char (*gone)[UID_LEN] = xcalloc(n + 1, sizeof *gone);
		for (size_t k = 0; k < n; k++)
			if (strcmp(evs[k]->ns, ns) == 0)
				memcpy(gone[ng++], evs[k]->uid, UID_LEN);
		for (size_t k = 0; k < ng; k++)
			store_remove(srv->st, srv->srcs[s], OBJ_EVENT, gone[k]);
		free(gone);
	}
}

/* Once a second (and right after a DELETE): every terminating namespace's content is deleted through each kind's
 * own delete; an empty one goes. Not before every host has read its records (what exists is known then). */
void apis_nsx_tick(struct apisrv *srv)
{
	for (int s = 0; s < srv->nsrcs; s++)
		if (!engine_ready(srv->srcs[s]))
			return;
	for (size_t i = 0; i < srv->nnsx;) {
		char *since = nsx_deleting(srv, i);
		if (since == NULL) {
			i++;
			continue;
		}
		free(since);
		char *ns = xstrdup(srv->nsx[i]);
		apis_vmirs_delete_ns(srv, ns); /* before the VMs: a member is not made again */
		apis_vmim_delete_ns(srv, ns);
		ns_delete_vms(srv, ns);
		/* what the VMs use once they are gone: no volume file goes while a QEMU may still hold it open (as
		 * pvc-protection keeps a claim until its pods are gone), no Secret while a VM may still read it */
		if (!ns_has_vms(srv, ns)) {
			if (srv->secrets && apis_secrets_in_ns(srv, ns))
				apis_secrets_delete_ns(srv, ns);
			if (srv->stor && apis_storage_in_ns(srv, ns))
				apis_storage_delete_ns(srv, ns);
			ns_delete_events(srv, ns);
		}
		i = nsx_find(srv, ns);
		if (i < srv->nnsx && ns_content(srv, ns, NULL, NULL) == 0) {
			json_object *j = apis_ns_json(srv, ns); /* as it was last, under the next resourceVersion */
			nsx_remove(srv, i);
			char why[UTIL_WHY_LEN];
			nsx_save(srv, why);
			srv->rv++;
			char rv[24];
			snprintf(rv, sizeof rv, "%llu", (unsigned long long)srv->rv);
			json_object_object_add(apis_jobj(j, "metadata"), "resourceVersion", apis_jstr(rv));
			char *text = apis_jtext(j);
			json_object_put(j);
			apis_ring_push(srv, R_NS, "DELETED", NULL, text);
			free(text);
			apis_wake_watchers(srv);
			log_info("engine serve: namespace %s: deleted", ns);
		} else
			i++;
		free(ns);
	}
}

/* What keeps the service from its idle exit: a terminating namespace (NULL when none; caller frees). */
char *apis_nsx_busy(struct apisrv *srv)
{
	for (size_t i = 0; i < srv->nnsx; i++) {
		char *since = nsx_deleting(srv, i);
		if (since) {
			free(since);
			return xasprintf("namespace %s: terminating", srv->nsx[i]);
		}
	}
	return NULL;
}
