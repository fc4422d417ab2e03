/* The engine service's objects as the API serves them: JSON helpers, a store object as KubeVirt's JSON (the VM's
 * manifest as applied with the server's metadata and status, events, the VMI's migrationState), the synthesised
 * Namespace and Node, and the engine's KubeVirt CR (its status is the service's health). */
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

/* ---- JSON helpers ---- */

json_object *apis_jstr(const char *s)
{
	return s ? json_object_new_string(s) : NULL;
}

json_object *apis_jget(json_object *o, const char *k)
{
	json_object *v = NULL;
	return o && json_object_is_type(o, json_type_object) && json_object_object_get_ex(o, k, &v) ? v : NULL;
}

const char *apis_jgets(json_object *o, const char *k)
{
	json_object *v = apis_jget(o, k);
	return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

json_object *apis_jobj(json_object *o, const char *k)
{
	json_object *v = apis_jget(o, k);
	if (v && json_object_is_type(v, json_type_object))
		return v;
	v = json_object_new_object();
	json_object_object_add(o, k, v);
	return v;
}

char *apis_jtext(json_object *o)
{
	return xstrdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
}

json_object *apis_time_json(int64_t t)
{
	char b[40];
	if (t <= 0)
		return NULL;
	util_format_time(t, b, sizeof b);
	return json_object_new_string(b);
}

/* The stored manifest as a JSON object (NULL when it does not parse). */
json_object *apis_manifest_json(const char *text)
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
			l = apis_jobj(md, "labels");
		json_object_object_add(l, k, json_object_new_string(v));
	}
}

static json_object *vm_json(const struct obj *o)
{
	const struct vm *v = (const struct vm *)o;
	json_object *base = objjson_new(o);
	struct evm *ev = evm_find(o->src, o->ns, o->name);
	json_object *m = ev ? apis_manifest_json(ev->text) : NULL;
	if (m == NULL)
		return base;
	/* the manifest as applied (spec, labels, annotations), with the server's metadata and status */
	json_object_object_del(m, "status");
	json_object *md = apis_jobj(m, "metadata"), *bmd = apis_jget(base, "metadata");
	const char *keys[] = { "name", "namespace", "uid", "creationTimestamp", "deletionTimestamp", "generation" };
	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
		json_object *x = apis_jget(bmd, keys[i]);
		json_object_object_del(md, keys[i]);
		if (x)
			json_object_object_add(md, keys[i], json_object_get(x));
	}
	json_object_object_del(md, "resourceVersion");
	json_object_object_del(md, "managedFields");
	json_object *spec = apis_jobj(m, "spec");
	if (v->run_strategy && !v->running_field)
		json_object_object_add(spec, "runStrategy", json_object_new_string(v->run_strategy));
	json_object_object_add(m, "apiVersion", json_object_new_string("kubevirt.io/v1"));
	json_object_object_add(m, "kind", json_object_new_string("VirtualMachine"));
	json_object *st = apis_jget(base, "status");
	json_object_object_add(m, "status", st ? json_object_get(st) : json_object_new_object());
	json_object_put(base);
	return m;
}

/* A VMI's spec as KubeVirt's: the VM template's spec (the manifest its execution was created from; a waiting or
 * adopted execution has the VM's current one), with what the engine decided (evictionStrategy) over it. */
static void vmi_spec(json_object *j, const struct obj *o)
{
	struct evm *ev = evm_find(o->src, o->ns, o->name);
	if (ev == NULL)
		return;
	const char *text = ev->cur && ev->cur->manifest && strcmp(ev->cur->uid, o->uid) == 0 ? ev->cur->manifest : ev->text;
	json_object *m = text ? apis_manifest_json(text) : NULL;
	json_object *ts = apis_jget(apis_jget(apis_jget(m, "spec"), "template"), "spec");
	if (ts && json_object_is_type(ts, json_type_object)) {
		json_object *spec = apis_jget(j, "spec");
		if (spec && json_object_is_type(spec, json_type_object)) {
			json_object_object_foreach(spec, k, v)
				json_object_object_add(ts, k, json_object_get(v));
		}
		json_object_object_add(j, "spec", json_object_get(ts));
	}
	json_object_put(m);
}

static json_object *event_json(const struct obj *o)
{
	const struct event *e = (const struct event *)o;
	json_object *j = json_object_new_object(), *md = json_object_new_object(), *io = json_object_new_object();
	json_object_object_add(j, "apiVersion", apis_jstr("v1"));
	json_object_object_add(j, "kind", apis_jstr("Event"));
	json_object_object_add(md, "name", apis_jstr(o->name));
	json_object_object_add(md, "namespace", apis_jstr(o->ns));
	json_object_object_add(md, "uid", apis_jstr(o->uid));
	json_object_object_add(md, "creationTimestamp", apis_time_json(o->created ? o->created : e->first));
	json_object_object_add(j, "metadata", md);
	const struct kind_def *ik = e->inv_kind ? registry_kind_find(e->inv_kind) : NULL;
	char iv[64];
	snprintf(iv, sizeof iv, "%s%s%s", ik && *ik->group ? ik->group : "", ik && *ik->group ? "/" : "",
		 ik ? ik->version : "v1");
	json_object_object_add(io, "apiVersion", apis_jstr(ik ? iv : "kubevirt.io/v1"));
	json_object_object_add(io, "kind", apis_jstr(e->inv_kind));
	json_object_object_add(io, "name", apis_jstr(e->inv_name));
	json_object_object_add(io, "namespace", apis_jstr(e->inv_ns ? e->inv_ns : o->ns));
	if (e->inv_uid[0])
		json_object_object_add(io, "uid", apis_jstr(e->inv_uid));
	json_object_object_add(j, "involvedObject", io);
	json_object_object_add(j, "reason", apis_jstr(e->reason));
	json_object_object_add(j, "message", apis_jstr(e->message));
	json_object_object_add(j, "type", apis_jstr(e->type));
	json_object_object_add(j, "count", json_object_new_int(e->count > 0 ? e->count : 1));
	json_object_object_add(j, "firstTimestamp", apis_time_json(e->first));
	json_object_object_add(j, "lastTimestamp", apis_time_json(e->last ? e->last : e->first));
	json_object *src = json_object_new_object();
	json_object_object_add(src, "component", apis_jstr(e->component ? e->component : "kvcon-engine"));
	if (o->src && o->src->name)
		json_object_object_add(src, "host", apis_jstr(o->src->name));
	json_object_object_add(j, "source", src);
	json_object_object_add(j, "reportingComponent", apis_jstr(e->component ? e->component : "kvcon-engine"));
	return j;
}

/* ---- the events of the service's own controllers ---- */

void apis_event_record(struct apisrv *srv, struct apis_evlog *log, const char *kind, const char *ns, const char *name,
		       const char *uid, const char *type, const char *reason, const char *component, const char *msg)
{
	int64_t now = util_wall_s();
	bool again = log->n > 0 && log->type == intern(type) && log->reason == intern(reason) &&
		     util_str_eq(log->message, msg);
	if (!again) {
		if (log->n == APIS_EVLOG_MAX) {
			store_remove(srv->st, srv->srcs[0], OBJ_EVENT, log->uids[0]);
			memmove(log->uids, log->uids + 1, sizeof log->uids[0] * (APIS_EVLOG_MAX - 1));
			log->n--;
		}
		util_uuid_v4(log->uids[log->n++]);
		log->type = intern(type);
		log->reason = intern(reason);
		free(log->message);
		log->message = xstrdup(msg);
		log->count = 0;
		log->first = now;
	}
	log->count++;
	const char *euid = log->uids[log->n - 1];
	struct event *e = (struct event *)obj_new(OBJ_EVENT);
	e->o.src = srv->srcs[0];
	e->o.ns = intern(ns);
	e->o.name = xasprintf("%s.%.8s", name, euid);
	snprintf(e->o.uid, UID_LEN, "%s", euid);
	e->o.created = obj_epoch(log->first);
	e->type = log->type;
	e->reason = log->reason;
	e->message = xstrdup(msg);
	e->inv_kind = intern(kind);
	e->inv_name = xstrdup(name);
	e->inv_ns = intern(ns);
	snprintf(e->inv_uid, UID_LEN, "%s", uid);
	e->count = log->count;
	e->first = obj_epoch(log->first);
	e->last = obj_epoch(now);
	e->component = intern(component);
	store_upsert(srv->st, &e->o);
	log_info("engine serve: %s %s/%s: %s: %s", kind, ns, name, reason, msg);
}

void apis_evlog_drop(struct apisrv *srv, struct apis_evlog *log)
{
	for (int i = 0; i < log->n; i++)
		store_remove(srv->st, srv->srcs[0], OBJ_EVENT, log->uids[i]);
	free(log->message);
	memset(log, 0, sizeof *log);
}

/* status.migrationState as KubeVirt writes it (timestamps RFC 3339). */
json_object *apis_mig_state_json(const struct migration_state *m)
{
	json_object *j = json_object_new_object();
	if (m->migration_uid[0])
		json_object_object_add(j, "migrationUid", apis_jstr(m->migration_uid));
	if (m->source_node)
		json_object_object_add(j, "sourceNode", apis_jstr(m->source_node));
	if (m->target_node)
		json_object_object_add(j, "targetNode", apis_jstr(m->target_node));
	if (m->source_pod)
		json_object_object_add(j, "sourcePod", apis_jstr(m->source_pod));
	if (m->target_pod)
		json_object_object_add(j, "targetPod", apis_jstr(m->target_pod));
	if (m->start)
		json_object_object_add(j, "startTimestamp", apis_time_json(m->start));
	if (m->end)
		json_object_object_add(j, "endTimestamp", apis_time_json(m->end));
	json_object_object_add(j, "completed", json_object_new_boolean(m->completed));
	json_object_object_add(j, "failed", json_object_new_boolean(m->failed));
	if (m->abort_requested)
		json_object_object_add(j, "abortRequested", json_object_new_boolean(1));
	if (m->abort_status)
		json_object_object_add(j, "abortStatus", apis_jstr(m->abort_status));
	if (m->mode)
		json_object_object_add(j, "mode", apis_jstr(m->mode));
	if (m->failure_reason)
		json_object_object_add(j, "failureReason", apis_jstr(m->failure_reason));
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

json_object *apis_obj_to_json(const struct obj *o)
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
		json_object *st = apis_jget(j, "status");
		if (m && m->present && st)
			json_object_object_add(st, "migrationState", apis_mig_state_json(m));
		vmi_spec(j, o);
	}
	json_object *md = apis_jobj(j, "metadata");
	if (apis_jget(md, "labels") == NULL)
		add_labels(md, o);
	return j;
}

/* ---- synthesised kinds: Namespace and Node ---- */

static void fake_uid(struct apisrv *srv, char out[37], const char *kind, const char *name)
{
	uint32_t a = hmap_hash(kind), b = hmap_hash(name), c = hmap_hash(srv->node_uid);
	snprintf(out, 37, "%08x-%04x-4%03x-8%03x-%08x%04x", a ^ c, b & 0xffff, (b >> 16) & 0xfff, (a >> 8) & 0xfff,
		 b ^ c, a & 0xffff);
}

json_object *apis_ns_json(struct apisrv *srv, const char *name)
{
	json_object *j = json_object_new_object(), *md = json_object_new_object(), *st = json_object_new_object();
	char uid[37], rv[24];
	fake_uid(srv, uid, "Namespace", name);
	snprintf(rv, sizeof rv, "%llu", (unsigned long long)srv->rv);
	json_object_object_add(j, "apiVersion", apis_jstr("v1"));
	json_object_object_add(j, "kind", apis_jstr("Namespace"));
	json_object_object_add(md, "name", apis_jstr(name));
	json_object_object_add(md, "uid", apis_jstr(uid));
	json_object_object_add(md, "resourceVersion", apis_jstr(rv));
	json_object_object_add(md, "creationTimestamp", apis_time_json(srv->started));
	json_object *l = json_object_new_object();
	json_object *meta = NULL;
	for (size_t i = 0; i < srv->nnsx && meta == NULL; i++)
		if (strcmp(srv->nsx[i], name) == 0 && srv->nsxmeta[i])
			meta = json_tokener_parse(srv->nsxmeta[i]);
	json_object *ml = apis_jget(meta, "labels"), *ma = apis_jget(meta, "annotations");
	if (ml && json_object_is_type(ml, json_type_object)) {
		json_object_object_foreach(ml, k, v)
			json_object_object_add(l, k, json_object_get(v));
	}
	json_object_object_add(l, "kubernetes.io/metadata.name", apis_jstr(name));
	json_object_object_add(md, "labels", l);
	if (ma && json_object_is_type(ma, json_type_object) && json_object_object_length(ma))
		json_object_object_add(md, "annotations", json_object_get(ma));
	if (meta)
		json_object_put(meta);
	json_object_object_add(j, "metadata", md);
	json_object_object_add(j, "spec", json_object_new_object());
	json_object_object_add(st, "phase", apis_jstr("Active"));
	json_object_object_add(j, "status", st);
	apis_ns_terminating_json(srv, name, j); /* nsx.c: Terminating, once deleted */
	return j;
}

json_object *apis_node_json(struct apisrv *srv, struct source *src)
{
	json_object *j = json_object_new_object(), *md = json_object_new_object(), *st = json_object_new_object();
	char uid[37], rv[24];
	fake_uid(srv, uid, "Node", src->name);
	snprintf(rv, sizeof rv, "%llu", (unsigned long long)srv->rv);
	json_object_object_add(j, "apiVersion", apis_jstr("v1"));
	json_object_object_add(j, "kind", apis_jstr("Node"));
	json_object_object_add(md, "name", apis_jstr(src->name));
	json_object_object_add(md, "uid", apis_jstr(uid));
	json_object_object_add(md, "resourceVersion", apis_jstr(rv));
	json_object_object_add(md, "creationTimestamp", apis_time_json(srv->started));
	/* labels, taints, cordon and capacity as the engine places on them (engine/enode.c) */
	json_object *e = engine_node_obj(src), *el = apis_jget(apis_jget(e, "metadata"), "labels");
	json_object_object_add(md, "labels", el ? json_object_get(el) : json_object_new_object());
	json_object *an = json_object_new_object();
	json_object_object_add(an, "kvcon.io/libvirt-uri", apis_jstr(src->server));
	/* what the engine in-process showed in the dashboard's header and once a boot on stderr (KVM unusable and
	 * guests under TCG, TCG forced, unreadable records): clients show it the same (kube/kube.c) */
	if (src->notice)
		json_object_object_add(an, "kvcon.io/notice", apis_jstr(src->notice));
	json_object_object_add(md, "annotations", an);
	json_object_object_add(j, "metadata", md);
	json_object *es = apis_jget(e, "spec");
	json_object_object_add(j, "spec", es ? json_object_get(es) : json_object_new_object());
	json_object *cap = apis_jget(apis_jget(e, "status"), "capacity"), *alloc = apis_jget(apis_jget(e, "status"), "allocatable");
	if (cap)
		json_object_object_add(st, "capacity", json_object_get(cap));
	if (alloc)
		json_object_object_add(st, "allocatable", json_object_get(alloc));
	json_object_put(e);
	json_object *conds = json_object_new_array(), *c = json_object_new_object();
	bool ready = engine_ready(src);
	json_object_object_add(c, "type", apis_jstr("Ready"));
	json_object_object_add(c, "status", apis_jstr(ready ? "True" : "False"));
	json_object_object_add(c, "reason", apis_jstr(ready ? "LibvirtConnected" : "LibvirtNotConnected"));
	json_object_object_add(c, "message", apis_jstr(ready ? "libvirt is connected" : engine_error(src)));
	json_object_array_add(conds, c);
	/* unreadable VM records (kept on disk, their QEMU left running and unmanaged): named here */
	const char *problems = engine_problems(src);
	json_object *rc = json_object_new_object();
	json_object_object_add(rc, "type", apis_jstr("RecordsReadable"));
	json_object_object_add(rc, "status", apis_jstr(problems ? "False" : "True"));
	json_object_object_add(rc, "reason", apis_jstr(problems ? "RecordUnreadable" : "AllRecordsRead"));
	json_object_object_add(rc, "message", apis_jstr(problems ? problems : "every VM record reads"));
	json_object_array_add(conds, rc);
	json_object_object_add(st, "conditions", conds);
	json_object *ni = json_object_new_object();
	json_object_object_add(ni, "kubeletVersion", apis_jstr(src->version ? src->version : ""));
	json_object_object_add(ni, "containerRuntimeVersion", apis_jstr("libvirt"));
	json_object_object_add(ni, "operatingSystem", apis_jstr("linux"));
	json_object_object_add(ni, "architecture", apis_jstr("amd64"));
	json_object_object_add(st, "nodeInfo", ni);
	json_object_object_add(j, "status", st);
	return j;
}

/* PATCH of a Node: kubectl label, taint, cordon and uncordon (a JSON merge patch; a strategic merge patch is
 * applied as one: a Node's taints have no merge key, a patch replaces them). metadata.labels, spec.taints and
 * spec.unschedulable are the owner's; they are stored (engine_node_set) before the answer. */
enum MHD_Result apis_patch_node(struct apisrv *srv, struct MHD_Connection *c, struct reqctx *rq, const char *name)
{
	struct source *src = NULL;
	for (int s = 0; s < srv->nsrcs && src == NULL; s++)
		if (util_str_eq(srv->srcs[s]->name, name))
			src = srv->srcs[s];
	if (src == NULL)
		return apis_not_found(c, R_NODE, name);
	const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
	if (ct && strstr(ct, "json-patch+json"))
		return apis_send_status(c, 415, "UnsupportedMediaType", R_COUNT, NULL,
					"the body of the request was in an unknown format - accepted media types include: "
					"application/merge-patch+json, application/strategic-merge-patch+json");
	enum MHD_Result rc;
	json_object *p = apis_body_json(c, rq, &rc);
	if (p == NULL)
		return rc;
	json_object *res = apisel_merge_patch(apis_node_json(srv, src), p);
	json_object_put(p);
	json_object *md = apis_jget(res, "metadata"), *spec = apis_jget(res, "spec");
	json_object *labels = apis_jget(md, "labels"), *taints = apis_jget(spec, "taints"), *un = apis_jget(spec, "unschedulable");
	const char *why = NULL;
	if (!util_str_eq(apis_jgets(md, "name"), name)) {
		json_object_put(res);
		return apis_send_status(c, 400, "BadRequest", R_COUNT, NULL, "the name of the object may not change");
	}
	if (labels && !json_object_is_type(labels, json_type_object))
		why = "metadata.labels: Invalid value: expected a map of strings";
	else if (labels) {
		json_object_object_foreach(labels, lk, lv) {
			if (!json_object_is_type(lv, json_type_string) || strlen(lk) > 317 ||
			    strlen(json_object_get_string(lv)) > 63)
				why = "metadata.labels: Invalid value: a label is a key of at most 317 characters and a string "
				      "value of at most 63";
		}
	}
	if (taints && !json_object_is_type(taints, json_type_array))
		why = "spec.taints: Invalid value: expected a list";
	for (size_t i = 0; why == NULL && taints && i < json_object_array_length(taints); i++) {
		json_object *t = json_object_array_get_idx(taints, i);
		const char *k = apis_jgets(t, "key"), *e = apis_jgets(t, "effect");
		if (k == NULL || *k == '\0')
			why = "spec.taints.key: Required value";
		else if (!util_str_eq(e, "NoSchedule") && !util_str_eq(e, "PreferNoSchedule") && !util_str_eq(e, "NoExecute"))
			why = "spec.taints.effect: Unsupported value: supported values: \"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\"";
	}
	if (un && !json_object_is_type(un, json_type_boolean))
		why = "spec.unschedulable: Invalid value: expected a boolean";
	if (why) {
		json_object_put(res);
		return apis_send_invalid_res(c, R_NODE, name, why);
	}
	if (apis_dry_run(c, rq))
		return apis_send_json(c, 200, res);
	bool cordon = un && json_object_get_boolean(un);
	/* the node lifecycle controller's taint of a cordoned node is its own: not kept */
	json_object *kept = json_object_new_array();
	for (size_t i = 0; taints && i < json_object_array_length(taints); i++) {
		json_object *t = json_object_array_get_idx(taints, i);
		if (!util_str_eq(apis_jgets(t, "key"), "node.kubernetes.io/unschedulable"))
			json_object_array_add(kept, json_object_get(t));
	}
	json_object *l = labels ? json_object_get(labels) : json_object_new_object();
	json_object_put(res);
	char *err = NULL;
	int wr = engine_node_set(src, l, kept, cordon, &err);
	json_object_put(l);
	json_object_put(kept);
	if (wr < 0) {
		rc = apis_send_status(c, 500, "InternalError", R_NODE, name, "%s", err);
		free(err);
		return rc;
	}
	/* a new resourceVersion and a MODIFIED event for the Node's watchers (kubectl get node -w, kvcon's :node) */
	char *body = NULL, *text = NULL;
	uint64_t nrv = 0;
	apis_publish(srv, apis_node_json(srv, src), &body, &text, &nrv);
	free(body);
	apis_ring_push(srv, R_NODE, "MODIFIED", NULL, text);
	apis_wake_watchers(srv);
	return apis_send_text(c, 200, text, "application/json");
}

/* ---- the engine's KubeVirt CR ---- */

/* One condition of the KubeVirt CR; its transition time changes only with its status, as virt-operator's do. */
static void kv_cond(struct apisrv *srv, json_object *conds, int i, const char *type, bool status, const char *reason, const char *msg)
{
	const char *st = status ? "True" : "False";
	if (strcmp(srv->kv.status[i], st) != 0) {
		snprintf(srv->kv.status[i], sizeof srv->kv.status[i], "%s", st);
		srv->kv.since[i] = util_wall_s();
	}
	json_object *c = json_object_new_object();
	json_object_object_add(c, "type", apis_jstr(type));
	json_object_object_add(c, "status", apis_jstr(st));
	json_object_object_add(c, "reason", apis_jstr(reason));
	json_object_object_add(c, "message", apis_jstr(msg));
	json_object_object_add(c, "lastProbeTime", apis_time_json(srv->kv.since[i]));
	json_object_object_add(c, "lastTransitionTime", apis_time_json(srv->kv.since[i]));
	json_object_array_add(conds, c);
}

/* kubevirt/kubevirt: the engine as KubeVirt's operator would describe its install. Deployed once the service
 * serves (its hosts have each connected or failed by then); Available while a host is ready; Degraded, naming the
 * host and the reason, while a host is not ready or holds unreadable VM records (RecordsReadable, as the node's
 * condition). */
static json_object *kv_json(struct apisrv *srv)
{
	struct buf down, bad;
	buf_init(&down);
	buf_init(&bad);
	int ready = 0;
	for (int s = 0; s < srv->nsrcs; s++) {
		if (engine_ready(srv->srcs[s]))
			ready++;
		else
			buf_printf(&down, "%shost %s is not ready: %s", down.len ? "; " : "", srv->srcs[s]->name,
				   engine_error(srv->srcs[s]) ? engine_error(srv->srcs[s]) : "connecting");
		const char *p = engine_problems(srv->srcs[s]);
		if (p)
			buf_printf(&bad, "%shost %s: %s", bad.len ? "; " : "", srv->srcs[s]->name, p);
	}
	buf_add_char(&down, 0);
	buf_add_char(&bad, 0);
	bool degraded = ready < srv->nsrcs || bad.len > 1;
	char version[64];
	snprintf(version, sizeof version, "v%s", KVCON_VERSION);

	json_object *j = json_object_new_object(), *md = json_object_new_object(), *spec = json_object_new_object(),
		    *st = json_object_new_object(), *an = json_object_new_object(), *conds = json_object_new_array();
	char uid[37];
	fake_uid(srv, uid, "KubeVirt", KV_NAME);
	json_object_object_add(j, "apiVersion", apis_jstr("kubevirt.io/v1"));
	json_object_object_add(j, "kind", apis_jstr("KubeVirt"));
	json_object_object_add(md, "name", apis_jstr(KV_NAME));
	json_object_object_add(md, "namespace", apis_jstr(KV_NS));
	json_object_object_add(md, "uid", apis_jstr(uid));
	json_object_object_add(md, "generation", json_object_new_int(1));
	json_object_object_add(md, "creationTimestamp", apis_time_json(srv->started));
	json_object_object_add(an, "kubevirt.io/latest-observed-api-version", apis_jstr("v1"));
	json_object_object_add(an, "kubevirt.io/storage-observed-api-version", apis_jstr("v1"));
	json_object_object_add(md, "annotations", an);
	json_object_object_add(j, "metadata", md);
	json_object_object_add(spec, "certificateRotateStrategy", json_object_new_object());
	json_object_object_add(spec, "configuration", json_object_new_object());
	json_object_object_add(spec, "customizeComponents", json_object_new_object());
	json_object_object_add(spec, "imagePullPolicy", apis_jstr("IfNotPresent"));
	json_object_object_add(spec, "workloadUpdateStrategy", json_object_new_object());
	json_object_object_add(j, "spec", spec);

	const char *all = "All components are ready.";
	if (!degraded) {
		kv_cond(srv, conds, 0, "Available", true, "AllComponentsReady", all);
		kv_cond(srv, conds, 1, "Progressing", false, "AllComponentsReady", all);
		kv_cond(srv, conds, 2, "Degraded", false, "AllComponentsReady", all);
	} else {
		char avail[96];
		snprintf(avail, sizeof avail, "%d of %d engine hosts ready", ready, srv->nsrcs);
		kv_cond(srv, conds, 0, "Available", ready > 0, ready > 0 ? "SomeHostsReady" : "NoHostReady", avail);
		kv_cond(srv, conds, 1, "Progressing", false, "DeploymentCompleted", avail);
		char *why = xasprintf("%s%s%s", down.data, down.len > 1 && bad.len > 1 ? "; " : "", bad.data);
		kv_cond(srv, conds, 2, "Degraded", true, ready < srv->nsrcs ? "HostNotReady" : "RecordUnreadable", why);
		free(why);
	}
	kv_cond(srv, conds, 3, "Created", true, "AllResourcesCreated", "All resources were created.");
	kv_cond(srv, conds, 4, "RecordsReadable", bad.len <= 1, bad.len > 1 ? "RecordUnreadable" : "AllRecordsRead",
		bad.len > 1 ? bad.data : "every VM record reads");
	json_object_object_add(st, "phase", apis_jstr("Deployed"));
	json_object_object_add(st, "conditions", conds);
	json_object_object_add(st, "defaultArchitecture", apis_jstr("amd64"));
	json_object_object_add(st, "observedGeneration", json_object_new_int(1));
	json_object_object_add(st, "operatorVersion", apis_jstr(version));
	json_object_object_add(st, "targetKubeVirtVersion", apis_jstr(version));
	json_object_object_add(st, "observedKubeVirtVersion", apis_jstr(version));
	json_object_object_add(st, "outdatedVirtualMachineInstanceWorkloads", json_object_new_int(0));
	json_object_object_add(j, "status", st);
	buf_free(&down);
	buf_free(&bad);
	return j;
}

/* Rebuilds the KubeVirt CR's text; a change becomes a watch event. */
void apis_kv_refresh(struct apisrv *srv)
{
	bool added = srv->kv.body == NULL;
	if (apis_publish(srv, kv_json(srv), &srv->kv.body, &srv->kv.text, &srv->kv.rv)) {
		apis_ring_push(srv, R_KV, added ? "ADDED" : "MODIFIED", NULL, srv->kv.text);
		apis_wake_watchers(srv);
	}
}

/* The namespaces in use, "default" and the KubeVirt CR's always among them, sorted; NULL-terminated, strings borrowed (interned). */
