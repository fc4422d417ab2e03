/* The engine service's replica set controller: VirtualMachineInstanceReplicaSet objects (create, merge patch /
 * update as kubectl apply sends them, delete, the scale subresource of kubectl scale), kept on disk
 * (engine-data/vmirs/NS_NAME.json, written before anything is acted on) with the names of their members, and
 * reconciled as KubeVirt's controller does: spec.replicas VMIs of spec.template, named generateName-style
 * (the replica set's name and five random characters), owned by the replica set; fewer are made up, more are
 * deleted (not ready ones first, then the newest), a deleted one is replaced, nothing is done while spec.paused;
 * a member the engine refuses is asked again 30 s later (or at the next change of the spec).
 * spec.selector is a label selector (matchLabels, matchExpressions: In, NotIn, Exists, DoesNotExist; engine/apisel.c
 * reads it) that must select the template's labels; a member whose VMI's labels it no longer selects (a new
 * selector and template applied) is released, as KubeVirt's controller releases it: it stays, a VirtualMachine of
 * its own (its VMI no longer owned by the replica set), and another member is made. VMIs of the engine's other VMs
 * are owned by their VM, never orphans, so nothing is adopted.
 * Events on the replica set as KubeVirt's virtualmachinereplicaset-controller records them: SuccessfulCreate,
 * FailedCreate, SuccessfulDelete, FailedDelete (a scale down), SuccessfulPaused, SuccessfulResumed.
 * The engine runs VirtualMachines only: a member is an engine VM of the template with runStrategy Always, which the
 * API does not list (apis_vmirs_filter); its VMI is what clients see. status: replicas (members with a VMI),
 * readyReplicas (their VMIs Ready), labelSelector, conditions ReplicaPaused and ReplicaFailure. */
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <microhttpd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "apiserver/internal.h"
#include "core/buf.h"
#include "core/log.h"
#include "core/util.h"
#include "core/xmalloc.h"
#include "engine/apisel.h"
#include "engine/engine.h"
#include "engine/evm.h"
#include "engine/manifest.h"
#include "model/obj.h"
#include "model/registry.h"
#include "model/source.h"
#include "model/store.h"

#define MAX_REPLICAS 64 /* one host's guests: a bound on what one request can start */
#define VMIRS_RETRY_MS 30000 /* a member the engine refused is asked again this much later */
#define SUFFIX_CHARS "bcdfghjklmnpqrstvwxz2456789" /* Kubernetes' generateName alphabet */
#define RS_COMPONENT "virtualmachinereplicaset-controller" /* KubeVirt's event source */

static void rs_free(struct vmirs *rs)
{
	if (rs == NULL)
		return;
	free(rs->ns);
	free(rs->name);
	if (rs->obj)
		json_object_put(rs->obj);
	for (size_t i = 0; i < rs->nmembers; i++)
		free(rs->members[i].name);
	free(rs->members);
	free(rs->failure);
	free(rs->body);
	free(rs->text);
	free(rs->ev.message);
	free(rs);
}

void apis_vmirs_free_all(struct apisrv *srv)
{
	while (srv->vmirss) {
		struct vmirs *rs = srv->vmirss;
		srv->vmirss = rs->next;
		rs_free(rs);
	}
}

static struct vmirs *rs_find(struct apisrv *srv, const char *ns, const char *name)
{
	for (struct vmirs *rs = srv->vmirss; rs; rs = rs->next)
		if (strcmp(rs->ns, ns) == 0 && strcmp(rs->name, name) == 0)
			return rs;
	return NULL;
}

struct vmirs *apis_vmirs_owner(struct apisrv *srv, const char *ns, const char *name)
{
	for (struct vmirs *rs = srv->vmirss; rs && ns && name; rs = rs->next)
		if (strcmp(rs->ns, ns) == 0)
			for (size_t i = 0; i < rs->nmembers; i++)
				if (strcmp(rs->members[i].name, name) == 0)
					return rs;
	return NULL;
}

static json_object *spec_of(const struct vmirs *rs)
{
	return apis_jget(rs->obj, "spec");
}

static int replicas_of(const struct vmirs *rs)
{
	json_object *r = apis_jget(spec_of(rs), "replicas");
	return r ? json_object_get_int(r) : 1; /* KubeVirt's default */
}

static bool paused_of(const struct vmirs *rs)
{
	return json_object_get_boolean(apis_jget(spec_of(rs), "paused"));
}

static void rs_event(struct apisrv *srv, struct vmirs *rs, const char *type, const char *reason, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
static void rs_event(struct apisrv *srv, struct vmirs *rs, const char *type, const char *reason, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *msg = xvasprintf(fmt, ap);
	va_end(ap);
	apis_event_record(srv, &rs->ev, RES[R_VMIRS].kind, rs->ns, rs->name, rs->uid, type, reason, RS_COMPONENT, msg);
	free(msg);
}

static const char *json_label(void *arg, const char *key)
{
	return apis_jgets(arg, key);
}

static const char *obj_label_get(void *arg, const char *key)
{
	return obj_label(arg, key);
}

/* rs's spec.selector, parsed (caller frees); NULL when it does not parse (validated when it was accepted: a file
 * another version kept), and then no member is released for it. */
static struct apisel *selector_of(const struct vmirs *rs)
{
	char *err = NULL;
	struct apisel *s = apisel_from_json(apis_jget(spec_of(rs), "selector"), &err);
	if (s == NULL) {
		log_warn("engine serve: replica set %s/%s: spec.selector: %s", rs->ns, rs->name, err);
		free(err);
	}
	return s;
}

/* ---- what the API shows ---- */

static json_object *owner_ref(const struct vmirs *rs)
{
	json_object *a = json_object_new_array(), *o = json_object_new_object();
	json_object_object_add(o, "apiVersion", apis_jstr("kubevirt.io/v1"));
	json_object_object_add(o, "kind", apis_jstr(RES[R_VMIRS].kind));
	json_object_object_add(o, "name", apis_jstr(rs->name));
	json_object_object_add(o, "uid", apis_jstr(rs->uid));
	json_object_object_add(o, "controller", json_object_new_boolean(1));
	json_object_object_add(o, "blockOwnerDeletion", json_object_new_boolean(1));
	json_object_array_add(a, o);
	return a;
}

json_object *apis_vmirs_filter(struct apisrv *srv, const struct obj *o, json_object *j)
{
	if (j == NULL || srv->vmirss == NULL)
		return j;
	if (o->kind == OBJ_EVENT) { /* a member's VirtualMachine does not exist for clients: nor do its events */
		json_object *io = apis_jget(j, "involvedObject");
		if (util_str_eq(apis_jgets(io, "kind"), "VirtualMachine") &&
		    apis_vmirs_owner(srv, apis_jgets(io, "namespace"), apis_jgets(io, "name"))) {
			json_object_put(j);
			return NULL;
		}
		return j;
	}
	if (o->kind != OBJ_VM && o->kind != OBJ_VMI)
		return j;
	struct vmirs *rs = apis_vmirs_owner(srv, o->ns, o->name);
	if (rs == NULL)
		return j;
	if (o->kind == OBJ_VM) {
		json_object_put(j);
		return NULL;
	}
	json_object *md = apis_jobj(j, "metadata");
	json_object_object_add(md, "ownerReferences", owner_ref(rs));
	json_object_object_del(md, "generateName");
	json_object_object_add(md, "generateName", apis_jstr(rs->name));
	return j;
}

static const struct vmi *member_vmi(struct apisrv *srv, const char *ns, const char *name)
{
	for (int s = 0; s < srv->nsrcs; s++) {
		struct obj *o = store_find(srv->st, srv->srcs[s], OBJ_VMI, ns, name);
		if (o)
			return (const struct vmi *)o;
	}
	return NULL;
}

static bool vmi_ready(const struct vmi *v)
{
	const struct cond *c = v ? cond_find(v->conds, v->nconds, "Ready") : NULL;
	return c && util_str_eq(cond_status(c), "True");
}

static json_object *rs_json(struct apisrv *srv, const struct vmirs *rs)
{
	json_object *j = json_tokener_parse(json_object_to_json_string(rs->obj));
	json_object *st = json_object_new_object(), *conds = json_object_new_array();
	int have = 0, ready = 0;
	for (size_t i = 0; i < rs->nmembers; i++) {
		const struct vmi *v = rs->members[i].deleting ? NULL : member_vmi(srv, rs->ns, rs->members[i].name);
		have += v != NULL;
		ready += vmi_ready(v);
	}
	json_object_object_add(st, "replicas", json_object_new_int(have));
	if (ready)
		json_object_object_add(st, "readyReplicas", json_object_new_int(ready));
	struct apisel *as = selector_of(rs);
	char *sel = apisel_format(as); /* as KubeVirt's status.labelSelector: what `kubectl get vmi -l` takes */
	apisel_free(as);
	json_object_object_add(st, "labelSelector", apis_jstr(sel));
	free(sel);
	if (paused_of(rs)) {
		json_object *c = json_object_new_object();
		json_object_object_add(c, "type", apis_jstr("ReplicaPaused"));
		json_object_object_add(c, "status", apis_jstr("True"));
		json_object_object_add(c, "reason", apis_jstr("Paused"));
		json_object_object_add(c, "message", apis_jstr("Controller got paused"));
		json_object_array_add(conds, c);
	}
	if (rs->failure) {
		json_object *c = json_object_new_object();
		json_object_object_add(c, "type", apis_jstr("ReplicaFailure"));
		json_object_object_add(c, "status", apis_jstr("True"));
		json_object_object_add(c, "reason", apis_jstr("FailedCreate"));
		json_object_object_add(c, "message", apis_jstr(rs->failure));
		json_object_array_add(conds, c);
	}
	if (json_object_array_length(conds))
		json_object_object_add(st, "conditions", conds);
	else
		json_object_put(conds);
	json_object_object_add(j, "status", st);
	return j;
}

/* Rebuilds rs's text; a change bumps the resourceVersion and becomes a watch event of type (NULL: MODIFIED). */
static void rs_refresh(struct apisrv *srv, struct vmirs *rs, const char *type)
{
	if (!apis_publish(srv, rs_json(srv, rs), &rs->body, &rs->text, &rs->rv) && type == NULL)
		return;
	apis_ring_push(srv, R_VMIRS, type ? type : "MODIFIED", NULL, rs->text);
	apis_wake_watchers(srv);
}

/* ---- on disk ---- */

/* Writes rs's file (temporary file, fsync, rename, directory fsync). 0, or -1 with *err (caller frees). */
static int rs_store(const struct vmirs *rs, char **err)
{
	json_object *f = json_object_new_object(), *m = json_object_new_array();
	json_object_object_add(f, "object", json_object_get(rs->obj));
	for (size_t i = 0; i < rs->nmembers; i++) {
		json_object *e = json_object_new_object();
		json_object_object_add(e, "name", apis_jstr(rs->members[i].name));
		if (rs->members[i].deleting)
			json_object_object_add(e, "deleting", json_object_new_boolean(1));
		json_object_array_add(m, e);
	}
	json_object_object_add(f, "members", m);
	if (rs->deleting)
		json_object_object_add(f, "deleting", json_object_new_boolean(1));
	char *text = apis_jtext(f), *d = apis_kept_dir("vmirs");
	json_object_put(f);
	int rc = apis_kept_write(d, rs->ns, rs->name, text, err);
	free(text);
	free(d);
	return rc;
}

static void rs_unlink(const struct vmirs *rs)
{
	char *d = apis_kept_dir("vmirs");
	apis_kept_remove(d, rs->ns, rs->name);
	free(d);
}

static void rs_loaded(void *ctx, const char *path, json_object *f, const char *why)
{
	struct apisrv *srv = ctx;
	if (why)
		log_warn("engine serve: %s", why);
	json_object *o = apis_jget(f, "object");
	json_object *md = apis_jget(o, "metadata"), *ml = apis_jget(f, "members");
	const char *ns = apis_jgets(md, "namespace"), *name = apis_jgets(md, "name"), *uid = apis_jgets(md, "uid");
	if (ns == NULL || name == NULL || uid == NULL || !apis_valid_name(name) || !manifest_dns_label(ns) ||
	    rs_find(srv, ns, name) || !json_object_is_type(apis_jget(o, "spec"), json_type_object)) {
		log_warn("engine serve: %s: not a VirtualMachineInstanceReplicaSet kvcon stored; ignored", path);
	} else {
		struct vmirs *rs = xcalloc(1, sizeof *rs);
		rs->ns = xstrdup(ns);
		rs->name = xstrdup(name);
		snprintf(rs->uid, sizeof rs->uid, "%s", uid);
		rs->obj = json_object_get(o);
		rs->deleting = json_object_get_boolean(apis_jget(f, "deleting"));
		for (size_t i = 0; ml && json_object_is_type(ml, json_type_array) && i < json_object_array_length(ml); i++) {
			json_object *e = json_object_array_get_idx(ml, i);
			const char *mn = apis_jgets(e, "name");
			if (mn == NULL || !apis_valid_name(mn))
				continue;
			rs->members = xreallocarray(rs->members, rs->nmembers + 1, sizeof *rs->members);
			rs->members[rs->nmembers++] = (struct vmirs_member){ xstrdup(mn),
									     json_object_get_boolean(apis_jget(e, "deleting")) };
		}
		rs->paused_seen = paused_of(rs); /* its events were told by the process that acted on it */
		rs->next = srv->vmirss;
		srv->vmirss = rs;
	}
}

/* The replica sets an earlier service kept, with their members (at start). */
void apis_vmirs_load(struct apisrv *srv)
{
	char *d = apis_kept_dir("vmirs");
	apis_kept_load(d, rs_loaded, srv);
	free(d);
	for (struct vmirs *rs = srv->vmirss; rs; rs = rs->next)
		rs_refresh(srv, rs, NULL);
}

/* ---- the controller ---- */

static bool engine_has(struct apisrv *srv, const char *ns, const char *name)
{
	for (int s = 0; s < srv->nsrcs; s++) {
		struct evm *v = evm_find(srv->srcs[s], ns, name);
		if (v)
			return true;
	}
	return false;
}

/* The member VM of rs's template named name, as a manifest for engine_apply (caller frees). */
static char *member_manifest(const struct vmirs *rs, const char *name)
{
	json_object *vm = json_object_new_object(), *md = json_object_new_object(), *spec = json_object_new_object();
	json_object *tmpl = apis_jget(spec_of(rs), "template");
	json_object_object_add(vm, "apiVersion", apis_jstr("kubevirt.io/v1"));
	json_object_object_add(vm, "kind", apis_jstr("VirtualMachine"));
	json_object_object_add(md, "name", apis_jstr(name));
	json_object_object_add(md, "namespace", apis_jstr(rs->ns));
	json_object *labels = apis_jget(apis_jget(tmpl, "metadata"), "labels");
	if (labels)
		json_object_object_add(md, "labels", json_object_get(labels));
	json_object_object_add(vm, "metadata", md);
	json_object_object_add(spec, "runStrategy", apis_jstr("Always"));
	json_object_object_add(spec, "template", tmpl ? json_object_get(tmpl) : json_object_new_object());
	json_object_object_add(vm, "spec", spec);
	char *text = apis_jtext(vm);
	json_object_put(vm);
	return text;
}

/* Deletes member m; report: a scale down the controller decided (its events on the replica set). */
static void member_delete(struct apisrv *srv, struct vmirs *rs, struct vmirs_member *m, bool report)
{
	m->deleting = true;
	const struct vmi *v = member_vmi(srv, rs->ns, m->name);
	char uid[UID_LEN];
	snprintf(uid, sizeof uid, "%s", v ? v->o.uid : m->name);
	for (int s = 0; s < srv->nsrcs; s++) {
		if (evm_find(srv->srcs[s], rs->ns, m->name) == NULL)
			continue;
		struct source *src = srv->srcs[s];
		struct action_req req = { .act = ACT_DELETE, .ns = rs->ns, .name = m->name, .grace_period = -1 };
		char *err = NULL;
		if (src->ops->action(src, &req, apis_action_done, NULL, &err) < 0) {
			log_warn("engine serve: replica set %s/%s: deleting %s: %s", rs->ns, rs->name, m->name,
				 err ? err : "refused");
			if (report)
				rs_event(srv, rs, "Warning", "FailedDelete", "Error deleting virtual machine instance %s: %s",
					 m->name, err ? err : "refused");
			free(err);
		} else if (report)
			rs_event(srv, rs, "Normal", "SuccessfulDelete",
				 "Stopped the virtual machine by deleting the virtual machine instance %s", uid);
	}
}

/* A new member's name: the replica set's name and five characters of Kubernetes' generateName alphabet, free. */
static char *member_name(struct apisrv *srv, const struct vmirs *rs)
{
	for (int tries = 0; tries < 100; tries++) {
		unsigned char r[5] = { 0 };
		if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r)
			log_warn("engine serve: getrandom: %s", strerror(errno));
		char sfx[6];
		for (int i = 0; i < 5; i++)
			sfx[i] = SUFFIX_CHARS[r[i] % (sizeof SUFFIX_CHARS - 1)];
		sfx[5] = 0;
		char *n = xasprintf("%.*s%s", 58, rs->name, sfx);
		if (!engine_has(srv, rs->ns, n) && apis_vmirs_owner(srv, rs->ns, n) == NULL)
			return n;
		free(n);
	}
	return NULL;
}

/* Not ready first, then the newest (the last made): the ones a scale down deletes first. */
static int victim(struct apisrv *srv, const struct vmirs *rs)
{
	int best = -1;
	for (size_t i = 0; i < rs->nmembers; i++) {
		if (rs->members[i].deleting)
			continue;
		if (best < 0 || !vmi_ready(member_vmi(srv, rs->ns, rs->members[i].name)) ||
		    vmi_ready(member_vmi(srv, rs->ns, rs->members[best].name)))
			best = (int)i;
	}
	return best;
}

static void rs_sync(struct apisrv *srv, struct vmirs *rs)
{
	bool changed = false;
	/* members whose deletion is done, or that vanished (the engine has no record of them), leave the list: a
	 * vanished one is replaced below */
	for (size_t i = 0; i < rs->nmembers;) {
		struct vmirs_member *m = &rs->members[i];
		if (!engine_has(srv, rs->ns, m->name)) {
			free(m->name);
			rs->members[i] = rs->members[--rs->nmembers];
			changed = true;
			continue;
		}
		i++;
	}
	char *err = NULL;
	if (rs->deleting) {
		for (size_t i = 0; i < rs->nmembers; i++)
			if (!rs->members[i].deleting) {
				member_delete(srv, rs, &rs->members[i], false);
				changed = true;
			}
		if (changed && rs_store(rs, &err) < 0) {
			log_warn("engine serve: %s", err);
			free(err);
		}
		return;
	}
	/* members whose VMI the selector no longer selects are released (KubeVirt's ClaimVirtualMachineInstances) */
	struct apisel *sel = selector_of(rs);
	for (size_t i = 0; i < rs->nmembers;) {
		struct vmirs_member *m = &rs->members[i];
		const struct vmi *v = m->deleting || sel == NULL ? NULL : member_vmi(srv, rs->ns, m->name);
		if (v && !apisel_match(sel, obj_label_get, (void *)&v->o)) {
			log_info("engine serve: replica set %s/%s: %s released (its labels no longer match the selector)",
				 rs->ns, rs->name, m->name);
			char *name = m->name;
			memmove(m, m + 1, (rs->nmembers - i - 1) * sizeof *m);
			rs->nmembers--;
			/* clients see its VirtualMachine appear and its VMI no longer owned by the replica set */
			for (int s = 0; s < srv->nsrcs; s++) {
				struct obj *vm = store_find(srv->st, srv->srcs[s], OBJ_VM, rs->ns, name);
				if (vm)
					apis_refresh(srv, vm, true);
			}
			apis_refresh(srv, &v->o, true);
			free(name);
			changed = true;
			continue;
		}
		i++;
	}
	apisel_free(sel);
	if (paused_of(rs) != rs->paused_seen) {
		rs->paused_seen = paused_of(rs);
		rs_event(srv, rs, "Normal", rs->paused_seen ? "SuccessfulPaused" : "SuccessfulResumed",
			 rs->paused_seen ? "Paused" : "Resumed");
	}
	if (rs->failure && util_now_ms() - rs->failed_ms >= VMIRS_RETRY_MS) {
		free(rs->failure);
		rs->failure = NULL;
	}
	if (!paused_of(rs)) {
		int want = replicas_of(rs), active = 0;
		for (size_t i = 0; i < rs->nmembers; i++)
			active += !rs->members[i].deleting;
		for (; active > want; active--) {
			int v = victim(srv, rs);
			if (v < 0)
				break;
			member_delete(srv, rs, &rs->members[v], true);
			changed = true;
		}
		for (; active < want && rs->failure == NULL; active++) {
			char *name = member_name(srv, rs);
			if (name == NULL)
				break;
			rs->members = xreallocarray(rs->members, rs->nmembers + 1, sizeof *rs->members);
			rs->members[rs->nmembers++] = (struct vmirs_member){ name, false };
			/* written down before the engine is asked: a restart finds it a member, not a VM of its own */
			if (rs_store(rs, &err) < 0) {
				log_warn("engine serve: %s", err);
				free(rs->members[--rs->nmembers].name);
				rs->failure = err;
				rs->failed_ms = util_now_ms();
				err = NULL;
				break;
			}
			char *text = member_manifest(rs, name), *result = NULL;
			int rc = engine_apply(srv->srcs[0], text, strlen(text), &result, &err);
			free(text);
			free(result);
			if (rc < 0) {
				rs->failure = xstrdup(err ? err : "refused");
				rs->failed_ms = util_now_ms();
				rs_event(srv, rs, "Warning", "FailedCreate", "Error creating virtual machine instance: %s",
					 rs->failure);
				free(err);
				err = NULL;
				rs->members[rs->nmembers - 1].deleting = true;
			} else
				rs_event(srv, rs, "Normal", "SuccessfulCreate",
					 "Started the virtual machine by creating the new virtual machine instance %s", name);
			changed = true;
		}
	}
	if (changed && rs_store(rs, &err) < 0) {
		log_warn("engine serve: %s", err);
		free(err);
	}
}

void apis_vmirs_sync(struct apisrv *srv)
{
	/* not before every host has read its records: a member not read yet is not a vanished one */
	for (int s = 0; s < srv->nsrcs; s++)
		if (!engine_ready(srv->srcs[s]))
			return;
	for (struct vmirs **p = &srv->vmirss; *p;) {
		struct vmirs *rs = *p;
		rs_sync(srv, rs);
		if (rs->deleting && rs->nmembers == 0) { /* its members are gone: then it */
			rs_unlink(rs);
			apis_evlog_drop(srv, &rs->ev);
			*p = rs->next;
			srv->rv++;
			json_object *j = json_tokener_parse(rs->text ? rs->text : "{}");
			char rv[24];
			snprintf(rv, sizeof rv, "%llu", (unsigned long long)srv->rv);
			json_object_object_add(apis_jobj(j, "metadata"), "resourceVersion", json_object_new_string(rv));
			char *text = apis_jtext(j);
			json_object_put(j);
			apis_ring_push(srv, R_VMIRS, "DELETED", NULL, text);
			apis_wake_watchers(srv);
			free(text);
			rs_free(rs);
			continue;
		}
		rs_refresh(srv, rs, NULL);
		p = &rs->next;
	}
}

/* ---- requests ---- */

/* What KubeVirt's admission checks of a replica set: 0, or -1 with *why (caller frees). The template is checked
 * as the engine will run it (a member VM's manifest). */
static int rs_validate(json_object *o, const char *name, char **why)
{
	json_object *spec = apis_jget(o, "spec"), *r = apis_jget(spec, "replicas");
	json_object *sel = apis_jget(spec, "selector"), *tmpl = apis_jget(spec, "template");
	if (spec == NULL || !json_object_is_type(spec, json_type_object)) {
		*why = xstrdup("spec: Required value");
		return -1;
	}
	if (r && (!json_object_is_type(r, json_type_int) || json_object_get_int(r) < 0 ||
		  json_object_get_int(r) > MAX_REPLICAS)) {
		*why = xasprintf("spec.replicas: Invalid value: a whole number from 0 to %d is required", MAX_REPLICAS);
		return -1;
	}
	if (sel == NULL || !json_object_is_type(sel, json_type_object)) {
		*why = xstrdup("spec.selector: Required value");
		return -1;
	}
	char *serr = NULL;
	struct apisel *as = apisel_from_json(sel, &serr);
	if (as == NULL) {
		*why = xasprintf("spec.selector%s%s", strncmp(serr, "Invalid", 7) == 0 ? ": " : ".", serr);
		free(serr);
		return -1;
	}
	json_object *tl = apis_jget(apis_jget(tmpl, "metadata"), "labels");
	bool empty = as->n == 0, match = apisel_match(as, json_label, tl);
	apisel_free(as);
	if (empty) { /* as Kubernetes' ReplicaSet: an empty selector would select every VMI of the namespace */
		*why = xstrdup("spec.selector: Invalid value: empty selector is invalid for a replica set");
		return -1;
	}
	if (!match) {
		*why = xstrdup("spec.selector: Invalid value: selector does not match labels in "
			       "spec.template.metadata.labels");
		return -1;
	}
	if (tmpl == NULL || apis_jget(tmpl, "spec") == NULL) {
		*why = xstrdup("spec.template.spec: Required value");
		return -1;
	}
	struct vmirs probe = { .ns = (char *)"default", .name = (char *)name, .obj = o };
	char *text = member_manifest(&probe, name), *err = NULL;
	struct manifest *m = manifest_parse(text, strlen(text), &err);
	free(text);
	manifest_free(m);
	if (m == NULL) {
		*why = xasprintf("spec.template.%s", err ? err : "refused");
		free(err);
		return -1;
	}
	return 0;
}

/* o without what the server owns, with the server's metadata of rs (uid, creationTimestamp, generation). */
static void rs_set_obj(struct vmirs *rs, json_object *o, const char *created, int64_t gen)
{
	json_object_object_del(o, "status");
	json_object_object_add(o, "apiVersion", apis_jstr("kubevirt.io/v1"));
	json_object_object_add(o, "kind", apis_jstr(RES[R_VMIRS].kind));
	json_object *md = apis_jobj(o, "metadata");
	const char *drop[] = { "resourceVersion", "managedFields", "selfLink", "deletionTimestamp" };
	for (size_t i = 0; i < sizeof drop / sizeof drop[0]; i++)
		json_object_object_del(md, drop[i]);
	json_object_object_add(md, "name", apis_jstr(rs->name));
	json_object_object_add(md, "namespace", apis_jstr(rs->ns));
	json_object_object_add(md, "uid", apis_jstr(rs->uid));
	json_object_object_add(md, "creationTimestamp", apis_jstr(created));
	json_object_object_add(md, "generation", json_object_new_int64(gen));
	if (rs->obj)
		json_object_put(rs->obj);
	rs->obj = o;
}

static enum MHD_Result rs_reply(struct MHD_Connection *c, unsigned code, const struct vmirs *rs)
{
	return apis_send_text(c, code, xstrdup(rs->text), "application/json");
}

static enum MHD_Result rs_create(struct apisrv *srv, struct MHD_Connection *c, struct reqctx *rq, const char *ns)
{
	enum MHD_Result rc;
	json_object *o = apis_body_json(c, rq, &rc);
	if (o == NULL)
		return rc;
	json_object *md = apis_jget(o, "metadata");
	const char *kind = apis_jgets(o, "kind"), *name = apis_jgets(md, "name"), *mns = apis_jgets(md, "namespace");
	const char *gen = apis_jgets(md, "generateName");
	char *gname = NULL, *why = NULL;
	if ((name == NULL || *name == 0) && gen && *gen) {
		struct vmirs probe = { .ns = (char *)ns, .name = (char *)gen };
		name = gname = member_name(srv, &probe);
	}
	if (kind && strcmp(kind, RES[R_VMIRS].kind) != 0)
		rc = apis_send_status(c, 400, "BadRequest", R_COUNT, NULL, "kind %s does not match %s", kind,
				      RES[R_VMIRS].plural);
	else if (name == NULL || !apis_valid_name(name) || strlen(name) > 63)
		rc = apis_send_invalid(c, name ? name : "", "metadata.name: Invalid value: a lowercase RFC 1123 label is required");
	else if (mns && strcmp(mns, ns) != 0)
		rc = apis_send_status(c, 400, "BadRequest", R_COUNT, NULL,
				      "the namespace of the provided object does not match the namespace sent on the request");
	else if (!apis_ns_exists(srv, ns))
		rc = apis_send_status(c, 404, "NotFound", R_NS, ns, "namespaces \"%s\" not found", ns);
	else if (rs_find(srv, ns, name))
		rc = apis_send_status(c, 409, "AlreadyExists", R_VMIRS, name, "%s.kubevirt.io \"%s\" already exists",
				      RES[R_VMIRS].plural, name);
	else if (rs_validate(o, name, &why) < 0)
		rc = apis_send_invalid(c, name, why);
	else {
		struct vmirs *rs = xcalloc(1, sizeof *rs);
		rs->ns = xstrdup(ns);
		rs->name = xstrdup(name);
		util_uuid_v4(rs->uid);
		char ts[32];
		util_format_time(util_wall_s(), ts, sizeof ts);
		rs_set_obj(rs, json_object_get(o), ts, 1);
		char *err = NULL;
		if (apis_dry_run(c, rq)) {
			json_object *j = rs_json(srv, rs);
			rs_free(rs);
			rc = apis_send_json(c, 201, j);
		} else if (rs_store(rs, &err) < 0) { /* written down before it is acted on */
			rc = apis_send_status(c, 500, "InternalError", R_VMIRS, name, "Internal error occurred: %s", err);
			free(err);
			rs_free(rs);
		} else {
			rs->next = srv->vmirss;
			srv->vmirss = rs;
			rs_refresh(srv, rs, "ADDED"); /* paused_seen false: a paused one says SuccessfulPaused */
			apis_vmirs_sync(srv);
			rc = rs_reply(c, 201, rs);
		}
	}
	free(why);
	free(gname);
	json_object_put(o);
	return rc;
}

static json_object *scale_json(const struct vmirs *rs)
{
	json_object *j = json_tokener_parse(rs->text), *s = json_object_new_object();
	json_object *md = json_object_new_object(), *omd = apis_jget(j, "metadata"), *sp = json_object_new_object();
	json_object *st = json_object_new_object();
	json_object_object_add(s, "kind", apis_jstr("Scale"));
	json_object_object_add(s, "apiVersion", apis_jstr("autoscaling/v1"));
	const char *keep[] = { "name", "namespace", "uid", "resourceVersion", "creationTimestamp" };
	for (size_t i = 0; i < sizeof keep / sizeof keep[0]; i++)
		if (apis_jget(omd, keep[i]))
			json_object_object_add(md, keep[i], json_object_get(apis_jget(omd, keep[i])));
	json_object_object_add(s, "metadata", md);
	json_object_object_add(sp, "replicas", json_object_new_int(replicas_of(rs)));
	json_object_object_add(s, "spec", sp);
	json_object *r = apis_jget(apis_jget(j, "status"), "replicas");
	json_object_object_add(st, "replicas", json_object_new_int(r ? json_object_get_int(r) : 0));
	json_object_object_add(st, "selector", apis_jstr(apis_jgets(apis_jget(j, "status"), "labelSelector")));
	json_object_object_add(s, "status", st);
	json_object_put(j);
	return s;
}

/* A new spec for rs (patch, update, scale): validated, stored, then reconciled. */
static enum MHD_Result rs_update(struct apisrv *srv, struct MHD_Connection *c, struct reqctx *rq, struct vmirs *rs,
				 json_object *res, bool scale)
{
	enum MHD_Result rc;
	char *why = NULL, *err = NULL;
	json_object *md = apis_jget(res, "metadata");
	if ((apis_jgets(md, "name") && strcmp(apis_jgets(md, "name"), rs->name) != 0) ||
	    (apis_jgets(md, "namespace") && strcmp(apis_jgets(md, "namespace"), rs->ns) != 0)) {
		json_object_put(res);
		return apis_send_status(c, 400, "BadRequest", R_COUNT, NULL, "the name or namespace of the object may not change");
	}
	if (rs_validate(res, rs->name, &why) < 0) {
		rc = apis_send_invalid(c, rs->name, why);
		free(why);
		json_object_put(res);
		return rc;
	}
	if (apis_dry_run(c, rq)) {
		json_object_put(res);
		return scale ? apis_send_json(c, 200, scale_json(rs)) : rs_reply(c, 200, rs);
	}
	json_object *omd = apis_jget(rs->obj, "metadata");
	const char *created = apis_jgets(omd, "creationTimestamp");
	int64_t gen = json_object_get_int64(apis_jget(omd, "generation"));
	char *cr = xstrdup(created ? created : "");
	bool same = json_object_equal(apis_jget(res, "spec"), spec_of(rs));
	json_object *old = json_object_get(rs->obj);
	rs_set_obj(rs, res, cr, same ? gen : gen + 1);
	free(cr);
	free(rs->failure); /* a new spec: the engine is asked again */
	rs->failure = NULL;
	if (rs_store(rs, &err) < 0) {
		rs_set_obj(rs, old, apis_jgets(apis_jget(old, "metadata"), "creationTimestamp"), gen);
		rc = apis_send_status(c, 500, "InternalError", R_VMIRS, rs->name, "Internal error occurred: %s", err);
		free(err);
		return rc;
	}
	json_object_put(old);
	apis_vmirs_sync(srv);
	return scale ? apis_send_json(c, 200, scale_json(rs)) : rs_reply(c, 200, rs);
}

enum MHD_Result apis_vmirs_request(struct apisrv *srv, struct MHD_Connection *c, struct reqctx *rq, const char *method,
				   const char *ns, const char *name, const char *sub)
{
	enum MHD_Result rc;
	if (strcmp(method, "POST") == 0 && ns && name == NULL && sub == NULL)
		return rs_create(srv, c, rq, ns);
	struct vmirs *rs = ns && name ? rs_find(srv, ns, name) : NULL;
	if (ns == NULL || name == NULL || (sub && strcmp(sub, "scale") != 0))
		return apis_send_status(c, 405, "MethodNotAllowed", R_COUNT, NULL,
					"the server does not allow this method on the requested resource");
	if (rs == NULL)
		return apis_not_found(c, R_VMIRS, name);
	bool patch = strcmp(method, "PATCH") == 0, put = strcmp(method, "PUT") == 0;
	if (sub && strcmp(method, "GET") == 0)
		return apis_send_json(c, 200, scale_json(rs));
	if (patch || put) {
		const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
		if (patch && ct && strstr(ct, "json-patch+json"))
			return apis_send_status(c, 415, "UnsupportedMediaType", R_COUNT, NULL,
						"the body of the request was in an unknown format - accepted media types include: "
						"application/merge-patch+json, application/strategic-merge-patch+json");
		json_object *p = apis_body_json(c, rq, &rc);
		if (p == NULL)
			return rc;
		json_object *cur = json_tokener_parse(json_object_to_json_string(rs->obj)), *res;
		if (sub) { /* a Scale: its spec.replicas is the replica set's */
			json_object *r = apis_jget(apis_jget(p, "spec"), "replicas");
			if (r == NULL && put) {
				json_object_put(p);
				json_object_put(cur);
				return apis_send_invalid(c, name, "spec.replicas: Required value");
			}
			if (r)
				json_object_object_add(apis_jobj(cur, "spec"), "replicas", json_object_get(r));
			res = cur;
		} else
			res = put ? json_object_get(p) : apisel_merge_patch(cur, p);
		if (put && !sub)
			json_object_put(cur);
		json_object_put(p);
		if (rs->deleting) {
			json_object_put(res);
			return apis_send_status(c, 409, "Conflict", R_VMIRS, name, "the object is being deleted");
		}
		return rs_update(srv, c, rq, rs, res, sub != NULL);
	}
	if (strcmp(method, "DELETE") == 0 && sub == NULL) {
		if (apis_dry_run(c, rq))
			return rs_reply(c, 200, rs);
		char *err = NULL;
		rs->deleting = true;
		if (rs_store(rs, &err) < 0) {
			rs->deleting = false;
			rc = apis_send_status(c, 500, "InternalError", R_VMIRS, name, "Internal error occurred: %s", err);
			free(err);
			return rc;
		}
		/* answered with the object as it was; it goes once its members are gone (kubectl waits for that) */
		json_object *j = json_tokener_parse(rs->text);
		char ts[32];
		util_format_time(util_wall_s(), ts, sizeof ts);
		json_object_object_add(apis_jobj(j, "metadata"), "deletionTimestamp", apis_jstr(ts));
		apis_vmirs_sync(srv);
		return apis_send_json(c, 200, j);
	}
	return apis_send_status(c, 405, "MethodNotAllowed", R_COUNT, NULL,
				"the server does not allow this method on the requested resource");
}

enum MHD_Result apis_vmirs_delete_member(struct apisrv *srv, struct MHD_Connection *c, struct reqctx *rq,
					 struct vmirs *rs, const char *ns, const char *name)
{
	const struct vmi *v = member_vmi(srv, ns, name);
	if (v == NULL)
		return apis_not_found(c, R_VMI, name);
	char *text = NULL;
	json_object *j = apis_vmirs_filter(srv, &v->o, apis_obj_to_json(&v->o));
	if (j) {
		text = apis_jtext(j);
		json_object_put(j);
	}
	if (!apis_dry_run(c, rq)) {
		for (size_t i = 0; i < rs->nmembers; i++)
			if (strcmp(rs->members[i].name, name) == 0 && !rs->members[i].deleting)
				member_delete(srv, rs, &rs->members[i], false);
		char *err = NULL;
		if (rs_store(rs, &err) < 0) {
			log_warn("engine serve: %s", err);
			free(err);
		}
		apis_vmirs_sync(srv); /* its replacement */
	}
	return apis_send_text(c, 200, text ? text : xstrdup("{}"), "application/json");
}

void apis_vmirs_delete_ns(struct apisrv *srv, const char *ns)
{
	bool any = false;
	for (struct vmirs *rs = srv->vmirss; rs; rs = rs->next) {
		if (rs->deleting || strcmp(rs->ns, ns) != 0)
			continue;
		char *err = NULL;
		rs->deleting = true; /* written down as the DELETE does; the sync deletes its members, then it */
		if (rs_store(rs, &err) < 0) {
			rs->deleting = false;
			log_warn("engine serve: %s", err);
			free(err);
		}
		any |= rs->deleting;
	}
	if (any)
		apis_vmirs_sync(srv);
}
