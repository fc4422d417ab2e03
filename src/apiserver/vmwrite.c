/* The engine service's writes to VirtualMachines: create, patch and update (kubectl apply's merge patch,
 * resourceVersion conflicts, dry runs) through engine_apply, delete, and the lifecycle subresources of the
 * registry's actions (start, stop, restart, ...) through the provider. */
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

/* ---- writes ---- */

struct source *apis_source_of(struct apisrv *srv, const char *ns, const char *name)
{
	for (int s = 0; s < srv->nsrcs; s++)
		if (store_find(srv->st, srv->srcs[s], OBJ_VM, ns, name))
			return srv->srcs[s];
	return NULL;
}

static enum MHD_Result reply_object(struct apisrv *srv, struct MHD_Connection *c, unsigned code, enum res r, const char *ns,
				    const char *name)
{
	for (int s = 0; s < srv->nsrcs; s++) {
		struct obj *o = store_find(srv->st, srv->srcs[s], (enum obj_kind)RES[r].obj_kind, ns, name);
		if (o) {
			struct cent *ce = apis_refresh(srv, o, true);
			if (ce)
				return apis_send_text(c, code, xstrdup(ce->text), "application/json");
		}
	}
	return apis_not_found(c, r, name);
}

/* The manifest text for the engine: the object without server-owned fields. */
static char *manifest_text(json_object *o)
{
	json_object_object_del(o, "status");
	json_object *md = apis_jget(o, "metadata");
	const char *drop[] = { "uid", "resourceVersion", "creationTimestamp", "generation", "managedFields",
			       "deletionTimestamp", "selfLink" };
	for (size_t i = 0; md && i < sizeof drop / sizeof drop[0]; i++)
		json_object_object_del(md, drop[i]);
	return apis_jtext(o);
}

static enum MHD_Result do_apply(struct apisrv *srv, struct MHD_Connection *c, json_object *o, const char *ns, const char *name,
				unsigned ok_code)
{
	char *text = manifest_text(o);
	struct source *src = apis_source_of(srv, ns, name);
	for (int s = 0; srv->only && src == NULL && s < srv->all_n; s++)
		if (store_find(srv->st, srv->all_srcs[s], OBJ_VM, ns, name)) {
			/* through one host of the set (kvcon -c HOST): another host's VM is not this one's */
			free(text);
			return apis_send_status(c, 409, "AlreadyExists", R_VM, name,
						"virtualmachines.kubevirt.io \"%s\" already exists on engine host %s, "
						"not on %s",
						name, srv->all_srcs[s]->name, srv->only->name);
		}
	if (src == NULL)
		src = srv->srcs[0];
	char *result = NULL, *err = NULL;
	const char *dry = apis_arg(c, "dryRun");
	if (dry) {
		/* validated as an apply would, nothing stored; the answer is the object as sent */
		struct manifest *m = manifest_parse(text, strlen(text), &err);
		manifest_free(m);
		free(text);
		if (m == NULL) {
			enum MHD_Result r = apis_send_invalid(c, name, err ? err : "refused");
			free(err);
			return r;
		}
		return apis_send_json(c, ok_code, json_object_get(o));
	}
	/* applied through one host of the set: its executions run there; through the set: where it is scheduled */
	int rc = engine_apply_on(src, text, strlen(text), srv->only != NULL, &result, &err);
	free(text);
	free(result);
	if (rc < 0 && err && util_has_prefix(err, "cannot store the record")) {
		/* the manifest is fine, the disk is not (ENOSPC, EIO): the API server's answer to a failed write */
		enum MHD_Result r = apis_send_status(c, 500, "InternalError", R_VM, name, "Internal error occurred: %s", err);
		free(err);
		return r;
	}
	if (rc < 0) {
		enum MHD_Result r = apis_send_invalid(c, name, err ? err : "refused");
		free(err);
		return r;
	}
	apis_storage_vm_applied(srv, ns, name, o); /* its dataVolumeTemplates */
	return reply_object(srv, c, ok_code, R_VM, ns, name);
}

/* The request body as a JSON object, or NULL after replying 400/413. */
json_object *apis_body_json(struct MHD_Connection *c, struct reqctx *rq, enum MHD_Result *rc)
{
	if (rq->too_big) {
		*rc = apis_send_status(c, 413, NULL, R_COUNT, NULL, "the request body is larger than %u bytes", MAX_BODY);
		return NULL;
	}
	const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
	if (ct && (strstr(ct, "protobuf") || strstr(ct, "cbor") || strstr(ct, "yaml"))) {
		/* JSON only: client-go sends its typed objects again as JSON after a 415 */
		*rc = apis_send_status(c, 415, "UnsupportedMediaType", R_COUNT, NULL,
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
		*rc = apis_send_status(c, 400, "BadRequest", R_COUNT, NULL, "the request body is not a JSON object");
		return NULL;
	}
	return o;
}


enum MHD_Result apis_create_vm(struct apisrv *srv, struct MHD_Connection *c, struct reqctx *rq, const char *ns)
{
	enum MHD_Result rc;
	json_object *o = apis_body_json(c, rq, &rc);
	if (o == NULL)
		return rc;
	const char *kind = apis_jgets(o, "kind");
	json_object *md = apis_jget(o, "metadata");
	const char *name = apis_jgets(md, "name"), *mns = apis_jgets(md, "namespace");
	if (kind && strcmp(kind, "VirtualMachine") != 0)
		rc = apis_send_status(c, 400, "BadRequest", R_COUNT, NULL, "kind %s does not match virtualmachines", kind);
	else if (name == NULL || !manifest_dns_subdomain(name))
		rc = apis_send_invalid(c, name ? name : "", "metadata.name: Invalid value: a lowercase RFC 1123 subdomain is required");
	else if (mns && strcmp(mns, ns) != 0)
		rc = apis_send_status(c, 400, "BadRequest", R_COUNT, NULL,
				 "the namespace of the provided object does not match the namespace sent on the request");
	else if (!apis_ns_exists(srv, ns))
		rc = apis_send_status(c, 404, "NotFound", R_NS, ns, "namespaces \"%s\" not found", ns);
	else if (apis_source_of(srv, ns, name))
		rc = apis_send_status(c, 409, "AlreadyExists", R_VM, name, "virtualmachines.kubevirt.io \"%s\" already exists", name);
	else {
		char *nm = xstrdup(name);
		json_object_object_add(apis_jobj(o, "metadata"), "namespace", json_object_new_string(ns));
		rc = do_apply(srv, c, o, ns, nm, 201);
		free(nm);
	}
	json_object_put(o);
	return rc;
}

/* The VM as stored (its manifest), for a patch or an update: NULL when absent. */
static json_object *current_manifest(struct apisrv *srv, const char *ns, const char *name)
{
	for (int s = 0; s < srv->nsrcs; s++) {
		struct evm *v = evm_find(srv->srcs[s], ns, name);
		if (v && !v->deleting)
			return apis_manifest_json(v->text);
	}
	return NULL;
}

static bool rv_conflict(struct apisrv *srv, json_object *o, const char *ns, const char *name)
{
	const char *want = apis_jgets(apis_jget(o, "metadata"), "resourceVersion");
	if (want == NULL || *want == 0)
		return false;
	for (int s = 0; s < srv->nsrcs; s++) {
		struct obj *x = store_find(srv->st, srv->srcs[s], OBJ_VM, ns, name);
		if (x) {
			struct cent *ce = apis_refresh(srv, x, true);
			char b[24];
			snprintf(b, sizeof b, "%llu", (unsigned long long)(ce ? ce->rv : 0));
			return strcmp(b, want) != 0;
		}
	}
	return false;
}

enum MHD_Result apis_patch_vm(struct apisrv *srv, struct MHD_Connection *c, struct reqctx *rq, const char *ns, const char *name,
				bool replace)
{
	enum MHD_Result rc;
	const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
	bool jpatch = !replace && ct && strstr(ct, "json-patch+json"); /* kubectl patch --type=json, virtctl credentials */
	json_object *cur = current_manifest(srv, ns, name);
	if (cur == NULL) {
		/* a row without a manifest: its record is unreadable (the row's Failure condition names the file) */
		struct source *src = apis_source_of(srv, ns, name);
		const struct vm *bad = src ? (const struct vm *)store_find(srv->st, src, OBJ_VM, ns, name) : NULL;
		const struct cond *f = bad ? cond_find(bad->conds, bad->nconds, "Failure") : NULL;
		if (f && util_str_eq(f->reason, "RecordUnreadable"))
			return apis_send_status(c, 409, "Conflict", R_VM, name, "%s: move it away first",
					   f->message ? f->message : "its record is unreadable");
		return apis_not_found(c, R_VM, name);
	}
	json_object *p = NULL;
	if (jpatch && !rq->too_big) {
		buf_add_char(&rq->body, 0);
		p = json_tokener_parse(rq->body.data ? rq->body.data : "");
		if (p == NULL || !json_object_is_type(p, json_type_array)) {
			json_object_put(p);
			json_object_put(cur);
			return apis_send_status(c, 400, "BadRequest", R_COUNT, NULL, "the request body is not a JSON patch");
		}
	} else if ((p = apis_body_json(c, rq, &rc)) == NULL) {
		json_object_put(cur);
		return rc;
	}
	if (jpatch) {
		/* the VM as the API serves it: its runStrategy the live one (start and stop change it, as
		 * virtctl's do KubeVirt's VM object), not the one last applied */
		for (int s = 0; s < srv->nsrcs; s++) {
			struct evm *v = evm_find(srv->srcs[s], ns, name);
			json_object *spec = apis_jget(cur, "spec");
			if (v && v->run_strategy && spec && json_object_is_type(spec, json_type_object)) {
				json_object_object_del(spec, "running");
				json_object_object_add(spec, "runStrategy", json_object_new_string(v->run_strategy));
			}
		}
		char *err = NULL;
		json_object *res = apisel_json_patch(cur, p, &err);
		json_object_put(p);
		if (res == NULL) {
			rc = apis_send_status(c, 422, "Invalid", R_VM, name, "the JSON patch could not be applied: %s", err);
			free(err);
			return rc;
		}
		cur = json_object_new_object();
		p = res; /* the patched manifest, applied as a replacement */
		replace = true;
	}
	if (!jpatch && rv_conflict(srv, p, ns, name)) {
		json_object_put(cur);
		json_object_put(p);
		return apis_send_status(c, 409, "Conflict", R_VM, name,
				   "Operation cannot be fulfilled on virtualmachines.kubevirt.io \"%s\": the object has been "
				   "modified; please apply your changes to the latest version and try again",
				   name);
	}
	json_object *res = replace ? json_object_get(p) : apisel_merge_patch(json_object_get(cur), p);
	json_object_put(cur);
	json_object_put(p);
	json_object *md = apis_jobj(res, "metadata");
	if ((apis_jgets(md, "name") && strcmp(apis_jgets(md, "name"), name) != 0) ||
	    (apis_jgets(md, "namespace") && strcmp(apis_jgets(md, "namespace"), ns) != 0)) {
		json_object_put(res);
		return apis_send_status(c, 400, "BadRequest", R_COUNT, NULL, "the name or namespace of the object may not change");
	}
	json_object_object_add(md, "name", json_object_new_string(name));
	json_object_object_add(md, "namespace", json_object_new_string(ns));
	rc = do_apply(srv, c, res, ns, name, 200);
	json_object_put(res);
	return rc;
}

void apis_action_done(void *arg, int status, const char *message)
{
	(void)arg;
	if (status != 0)
		log_warn("engine serve: an action ended with %d: %s", status, message ? message : "");
}

/* A grace period from the query or a DeleteOptions / StopOptions body; -1 when none. */
int apis_grace_of(struct MHD_Connection *c, struct reqctx *rq, const char *key)
{
	const char *q = apis_arg(c, "gracePeriodSeconds");
	if (q && *q)
		return atoi(q);
	if (rq->body.len == 0 || rq->too_big)
		return -1;
	buf_add_char(&rq->body, 0);
	json_object *o = json_tokener_parse(rq->body.data);
	rq->body.len--;
	json_object *g = apis_jget(o, key);
	int v = g && json_object_is_type(g, json_type_int) ? json_object_get_int(g) : -1;
	if (o)
		json_object_put(o);
	return v < 0 ? -1 : v;
}

/* dryRun as a query parameter (create, patch) or in the body's DeleteOptions / options (delete, subresources). */
bool apis_dry_run(struct MHD_Connection *c, struct reqctx *rq)
{
	if (apis_arg(c, "dryRun"))
		return true;
	if (rq->body.len == 0 || rq->too_big)
		return false;
	buf_add_char(&rq->body, 0);
	json_object *o = json_tokener_parse(rq->body.data);
	rq->body.len--;
	json_object *d = apis_jget(o, "dryRun");
	bool dry = d && json_object_is_type(d, json_type_array) && json_object_array_length(d) > 0;
	if (o)
		json_object_put(o);
	return dry;
}

enum MHD_Result apis_act(struct apisrv *srv, struct MHD_Connection *c, struct reqctx *rq, enum res r, enum action a, const char *ns,
			   const char *name, int grace, const char *target, unsigned ok_code, bool reply_obj)
{
	struct source *src = apis_source_of(srv, ns, name);
	if (src == NULL)
		return apis_not_found(c, r == R_VM ? R_VM : R_VMI, name);
	if (apis_dry_run(c, rq)) /* nothing is done */
		return reply_obj ? reply_object(srv, c, ok_code, r, ns, name) : apis_send_text(c, ok_code, xstrdup(""), "text/plain");
	struct action_req req = { .act = a, .ns = ns, .name = name, .grace_period = grace, .target = target };
	if (a == ACT_DELETE && util_str_eq(apis_arg(c, "deleteVolumes"), "true"))
		req.flags |= ACTION_DELETE_VOLUMES; /* the engine's extension: the VM's disks go too */
	if (a == ACT_STOP && grace == 0)
		req.act = ACT_FORCE_STOP;
	char *err = NULL;
	if (src->ops->action(src, &req, apis_action_done, NULL, &err) < 0) {
		enum MHD_Result rc = apis_send_status(c, 409, "Conflict", r, name, "%s", err ? err : "refused");
		free(err);
		return rc;
	}
	if (reply_obj)
		return reply_object(srv, c, ok_code, r, ns, name);
	return apis_send_text(c, ok_code, xstrdup(""), "text/plain");
}


enum MHD_Result apis_subresource(struct apisrv *srv, struct MHD_Connection *c, struct reqctx *rq, enum res r, const char *ns,
				   const char *name, const char *sub)
{
	/* the action whose subresource of this kind it is (model/registry.c) */
	const struct action_def *ad;
	for (size_t i = 0; (ad = registry_action_at(i)) != NULL; i++)
		if (ad->verb && ad->subresource && ad->on == RES[r].id && strcmp(ad->subresource, sub) == 0)
			break;
	unsigned ok = r == R_VM ? 202 : 200; /* virt-api's codes: accepted for a VM's, OK for a VMI's */
	if (ad && ad->act == ACT_MIGRATE)
		return apis_migrate_sub(srv, c, rq, ns, name);
	if (ad && ad->act == ACT_STOP)
		return apis_act(srv, c, rq, r, ACT_STOP, ns, name, apis_grace_of(c, rq, "gracePeriod"), NULL, ok, false);
	if (ad && ad->act == ACT_RESTART)
		return apis_act(srv, c, rq, r, ACT_RESTART, ns, name, apis_grace_of(c, rq, "gracePeriodSeconds"), NULL, ok, false);
	if (ad)
		return apis_act(srv, c, rq, r, ad->act, ns, name, -1, NULL, ok, false);
	return apis_send_status(c, 404, "NotFound", R_COUNT, NULL, "the server could not find the requested resource");
}

/* POST pods/NAME/eviction (the policy/v1 Eviction API, kubectl drain): a launcher pod is evicted as KubeVirt's
 * virt-api decides by the VMI's evictionStrategy. LiveMigrate (and LiveMigrateIfPossible when another host is
 * ready): a migration starts and the answer is 429, which kubectl drain retries until the pod is gone; without
 * another host LiveMigrate is refused with 409 (the VMI stays; kubectl drain stops with the message). None, External and LiveMigrateIfPossible without
 * a target: the execution ends (201); a runStrategy Always VM starts again where its node admits it (a cordoned
 * node does not: ErrorUnschedulable). */
enum MHD_Result apis_evict_pod(struct apisrv *srv, struct MHD_Connection *c, struct reqctx *rq, const char *ns, const char *name)
{
	const struct pod *p = NULL;
	for (int s = 0; s < srv->nsrcs && p == NULL; s++)
		p = (const struct pod *)store_find(srv->st, srv->srcs[s], OBJ_POD, ns, name);
	if (p == NULL || p->vm_name == NULL)
		return apis_not_found(c, R_POD, name);
	/* an action or a migration republishes the VM's objects (store_upsert frees the old ones): p, vi and vm
	 * are not read after one starts */
	char vmn[256];
	snprintf(vmn, sizeof vmn, "%s", p->vm_name);
	struct source *src = p->o.src;
	const struct vmi *vi = (const struct vmi *)store_find(srv->st, src, OBJ_VMI, ns, vmn);
	const struct vm *vm = (const struct vm *)store_find(srv->st, src, OBJ_VM, ns, vmn);
	const char *strategy = vi && vi->eviction ? vi->eviction : "None";
	bool other = false;
	for (int s = 0; s < srv->nsrcs; s++)
		other |= srv->srcs[s] != src && engine_ready(srv->srcs[s]);
	bool ended = util_str_eq(p->phase, "Succeeded") || util_str_eq(p->phase, "Failed");
	if (ended) { /* a migration's source launcher, completed: deleted (the API server evicts a finished pod) */
		if (!apis_dry_run(c, rq)) {
			char uid[sizeof p->o.uid];
			snprintf(uid, sizeof uid, "%s", p->o.uid);
			engine_delete_launcher(src, ns, vmn, uid);
		}
		return apis_send_json(c, 201, apis_status_success());
	}
	bool running = vi && util_str_eq(vi->phase, "Running");
	bool migrate = running && (util_str_eq(strategy, "LiveMigrate") || (util_str_eq(strategy, "LiveMigrateIfPossible") && other));
	if (apis_dry_run(c, rq))
		return migrate ? apis_send_status(c, 429, "TooManyRequests", R_POD, name, "Eviction triggered evacuation of VMI \"%s/%s\"", ns, vmn)
			       : apis_send_json(c, 201, apis_status_success());
	if (migrate && !other) /* refused for good (409, not 429): kubectl drain stops instead of retrying forever */
		return apis_send_status(c, 409, "Conflict", R_POD, name,
					"Cannot evict pod as it would violate the VMI's evictionStrategy LiveMigrate: no other engine "
					"host to migrate VMI \"%s/%s\" to", ns, vmn);
	if (migrate) {
		char *err = NULL;
		enum MHD_Result rc;
		if (apis_vmim_evacuate(srv, src, ns, vmn, &err) < 0)
			rc = apis_send_status(c, 429, "TooManyRequests", R_POD, name,
					      "Eviction of VMI \"%s/%s\" refused: %s", ns, vmn, err);
		else
			rc = apis_send_status(c, 429, "TooManyRequests", R_POD, name,
					      "Eviction triggered evacuation of VMI \"%s/%s\"", ns, vmn);
		free(err);
		return rc;
	}
	if (vi == NULL || !util_str_eq(vi->o.uid, p->vmi_uid) || util_str_eq(vi->phase, "Succeeded") || util_str_eq(vi->phase, "Failed"))
		return apis_send_json(c, 201, apis_status_success()); /* nothing runs: the pod goes with its VMI */
	bool always = vm && util_str_eq(vm->run_strategy, "Always");
	return apis_act(srv, c, rq, R_VMI, always ? ACT_RESTART : ACT_STOP, ns, vmn, apis_grace_of(c, rq, "gracePeriodSeconds"),
			NULL, 201, false);
}
