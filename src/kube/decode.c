/* Kubernetes JSON to the model's compact structs: a minimal stand-in written by the kube helper so that the
 * client can run before the model helper's full decoder lands (that one replaces this file). It keeps the
 * fields `kvcon get` prints; wrong types read as absent, strings and lists are capped. */
#include "kube/decode.h"

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/intern.h"
#include "core/util.h"
#include "core/xmalloc.h"

static struct json_object *jget(struct json_object *o, const char *key, enum json_type type)
{
	struct json_object *v;
	if (o == NULL || !json_object_is_type(o, json_type_object) || !json_object_object_get_ex(o, key, &v) ||
	    v == NULL || !json_object_is_type(v, type))
		return NULL;
	return v;
}

static const char *jstr(struct json_object *o, const char *key)
{
	struct json_object *v = jget(o, key, json_type_string);
	return v ? json_object_get_string(v) : NULL;
}

static char *jdup(struct json_object *o, const char *key, size_t max)
{
	const char *s = jstr(o, key);
	return s ? xstrndup(s, strnlen(s, max)) : NULL;
}

static const char *jintern(struct json_object *o, const char *key)
{
	const char *s = jstr(o, key);
	return s ? intern_n(s, strnlen(s, KUBE_DECODE_WORD_MAX)) : NULL;
}

static int64_t jtime(struct json_object *o, const char *key)
{
	int64_t t = 0;
	const char *s = jstr(o, key);
	if (s && util_parse_time(s, &t) < 0)
		t = 0;
	return t;
}

static int jint(struct json_object *o, const char *key)
{
	struct json_object *v = jget(o, key, json_type_int);
	return v ? json_object_get_int(v) : 0;
}

static bool jbool(struct json_object *o, const char *key)
{
	struct json_object *v = jget(o, key, json_type_boolean);
	return v && json_object_get_boolean(v);
}

static void copy_uid(char dst[UID_LEN], const char *s)
{
	dst[0] = '\0';
	if (s && strlen(s) < UID_LEN)
		strcpy(dst, s);
}

/* The controller owner of the given kind (or the first of that kind). */
static const char *owner_uid(struct json_object *meta, const char *kind, char other[32])
{
	struct json_object *refs = jget(meta, "ownerReferences", json_type_array);
	const char *first = NULL;
	size_t n = refs ? json_object_array_length(refs) : 0;
	for (size_t i = 0; i < n && i < KUBE_DECODE_LIST_MAX; i++) {
		struct json_object *r = json_object_array_get_idx(refs, i);
		const char *k = jstr(r, "kind");
		if (k && strcmp(k, kind) == 0) {
			if (jbool(r, "controller"))
				return jstr(r, "uid");
			if (first == NULL)
				first = jstr(r, "uid");
		} else if (k && jbool(r, "controller") && other) {
			snprintf(other, 32, "%s", k);
		}
	}
	return first;
}

static void decode_conds(struct json_object *status, struct cond **out, int *n)
{
	struct json_object *a = jget(status, "conditions", json_type_array);
	size_t len = a ? json_object_array_length(a) : 0;
	if (len > KUBE_DECODE_LIST_MAX)
		len = KUBE_DECODE_LIST_MAX;
	*out = len ? xcalloc(len, sizeof **out) : NULL;
	*n = 0;
	for (size_t i = 0; i < len; i++) {
		struct json_object *c = json_object_array_get_idx(a, i);
		const char *type = jintern(c, "type");
		if (type == NULL)
			continue;
		struct cond *d = &(*out)[(*n)++];
		d->type = type;
		d->status = jintern(c, "status");
		d->reason = jintern(c, "reason");
		d->message = jdup(c, "message", KUBE_DECODE_MSG_MAX);
		d->last_transition = jtime(c, "lastTransitionTime");
		d->last_probe = jtime(c, "lastProbeTime");
	}
}

static void decode_vm(struct vm *v, struct json_object *it)
{
	struct json_object *spec = jget(it, "spec", json_type_object);
	struct json_object *status = jget(it, "status", json_type_object);
	v->run_strategy = jintern(spec, "runStrategy");
	struct json_object *running = jget(spec, "running", json_type_boolean);
	if (running) {
		v->running_field = true;
		if (v->run_strategy == NULL)
			v->run_strategy = intern(json_object_get_boolean(running) ? "Always" : "Halted");
	}
	v->printable_status = jintern(status, "printableStatus");
	v->ready = jbool(status, "ready");
	v->created_vmi = jbool(status, "created");
	decode_conds(status, &v->conds, &v->nconds);
}

static void decode_vmi(struct vmi *v, struct json_object *it, struct json_object *meta)
{
	struct json_object *status = jget(it, "status", json_type_object);
	copy_uid(v->vm_uid, owner_uid(meta, "VirtualMachine", NULL));
	v->phase = jintern(status, "phase");
	if (v->phase == NULL)
		v->phase = intern("");
	v->node = jintern(status, "nodeName");
	struct json_object *ifs = jget(status, "interfaces", json_type_array);
	if (ifs && json_object_array_length(ifs) > 0)
		v->ip = jdup(json_object_array_get_idx(ifs, 0), "ipAddress", 64);
	decode_conds(status, &v->conds, &v->nconds);
}

static void decode_pod(struct pod *p, struct json_object *it, struct json_object *meta)
{
	struct json_object *status = jget(it, "status", json_type_object);
	struct json_object *spec = jget(it, "spec", json_type_object);
	copy_uid(p->vmi_uid, owner_uid(meta, "VirtualMachineInstance", p->owner_kind_other));
	copy_uid(p->created_by, obj_label(&p->o, "kubevirt.io/created-by"));
	p->vm_name = intern(obj_label(&p->o, "vm.kubevirt.io/name"));
	p->phase = jintern(status, "phase");
	p->node = jintern(spec, "nodeName");
	p->reason = jintern(status, "reason");
	p->message = jdup(status, "message", KUBE_DECODE_MSG_MAX);
	p->ip = jdup(status, "podIP", 64);
	decode_conds(status, &p->conds, &p->nconds);
	struct json_object *cs = jget(status, "containerStatuses", json_type_array);
	size_t n = cs ? json_object_array_length(cs) : 0;
	if (n > KUBE_DECODE_LIST_MAX)
		n = KUBE_DECODE_LIST_MAX;
	p->containers = n ? xcalloc(n, sizeof *p->containers) : NULL;
	for (size_t i = 0; i < n; i++) {
		struct json_object *c = json_object_array_get_idx(cs, i);
		struct container_status *d = &p->containers[p->ncontainers++];
		d->name = jintern(c, "name");
		d->ready = jbool(c, "ready");
		d->restarts = jint(c, "restartCount");
		struct json_object *state = jget(c, "state", json_type_object);
		static const char *const states[] = { "running", "waiting", "terminated" };
		for (size_t s = 0; s < 3; s++) {
			struct json_object *st = jget(state, states[s], json_type_object);
			if (st) {
				d->state = intern(states[s]);
				d->reason = jintern(st, "reason");
				d->message = jdup(st, "message", KUBE_DECODE_MSG_MAX);
				d->started = jtime(st, "startedAt");
				d->exit_code = jint(st, "exitCode");
				break;
			}
		}
		p->ready_containers += d->ready;
		p->restarts += d->restarts;
	}
}

static void decode_event(struct event *e, struct json_object *it)
{
	e->type = jintern(it, "type");
	e->reason = jintern(it, "reason");
	e->message = jdup(it, "message", KUBE_DECODE_MSG_MAX);
	struct json_object *inv = jget(it, "involvedObject", json_type_object);
	e->inv_kind = jintern(inv, "kind");
	e->inv_name = jdup(inv, "name", KUBE_DECODE_NAME_MAX);
	e->inv_ns = jintern(inv, "namespace");
	copy_uid(e->inv_uid, jstr(inv, "uid"));
	e->count = jint(it, "count");
	e->first = jtime(it, "firstTimestamp");
	e->last = jtime(it, "lastTimestamp");
	if (e->last == 0)
		e->last = jtime(it, "eventTime");
	struct json_object *src = jget(it, "source", json_type_object);
	e->component = jintern(src, "component");
	if (e->component == NULL)
		e->component = jintern(it, "reportingComponent");
}

struct obj *kube_decode(enum obj_kind kind, struct json_object *item, struct source *src, char **err)
{
	struct json_object *meta = jget(item, "metadata", json_type_object);
	const char *name = jstr(meta, "name");
	const char *ns = jstr(meta, "namespace");
	const char *uid = jstr(meta, "uid");
	const char *why = NULL;
	if (meta == NULL)
		why = "no metadata";
	else if (name == NULL || *name == '\0' || strlen(name) > KUBE_DECODE_NAME_MAX)
		why = "missing or oversized metadata.name";
	else if (uid == NULL || *uid == '\0' || strlen(uid) >= UID_LEN)
		why = "missing or malformed metadata.uid";
	else if (ns && strlen(ns) > KUBE_DECODE_NS_MAX)
		why = "oversized metadata.namespace";
	if (why) {
		if (err)
			*err = xstrdup(why);
		return NULL;
	}
	struct obj *o = obj_new(kind);
	o->src = src;
	o->ns = intern(ns ? ns : "");
	o->name = xstrdup(name);
	copy_uid(o->uid, uid);
	o->created = jtime(meta, "creationTimestamp");
	o->deleted = jtime(meta, "deletionTimestamp");
	struct json_object *gen = jget(meta, "generation", json_type_int);
	o->generation = gen ? (uint64_t)json_object_get_int64(gen) : 0;
	kube_decode_rv(item, &o->rv);
	struct json_object *labels = jget(meta, "labels", json_type_object);
	int nl = 0;
	if (labels) {
		json_object_object_foreach(labels, k, v)
		{
			if (nl++ >= KUBE_DECODE_LIST_MAX)
				break;
			if (json_object_is_type(v, json_type_string))
				obj_label_add(o, k, json_object_get_string(v));
		}
	}
	switch (kind) {
	case OBJ_VM:
		decode_vm((struct vm *)o, item);
		break;
	case OBJ_VMI:
		decode_vmi((struct vmi *)o, item, meta);
		break;
	case OBJ_POD:
		decode_pod((struct pod *)o, item, meta);
		break;
	case OBJ_EVENT:
		decode_event((struct event *)o, item);
		break;
	default:
		break;
	}
	obj_set_key(o);
	return o;
}

int kube_decode_rv(struct json_object *item, uint64_t *rv)
{
	struct json_object *meta = jget(item, "metadata", json_type_object);
	const char *s = jstr(meta, "resourceVersion");
	if (s == NULL || *s == '\0')
		return -1;
	uint64_t v = 0;
	for (const char *p = s; *p; p++) {
		if (*p < '0' || *p > '9' || v > (UINT64_MAX - 9) / 10)
			return -1;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	*rv = v;
	return 0;
}
