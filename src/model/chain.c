/* The chain join of one VM across its four boundaries (see chain.h). Ownership is matched by UID, never by
 * name or label alone: in a shared namespace the created-by label finds other launchers too. */
#include "model/chain.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/hmap.h"
#include "core/intern.h"
#include "core/util.h"
#include "core/xmalloc.h"

static bool uid_eq(const char *a, const char *b)
{
	return a[0] != '\0' && strcmp(a, b) == 0;
}

/* Appends to a growable array whose capacity is the next power of two of its count. */
#define PUSH(arr, n, p)                                                                       \
	do {                                                                                  \
		if (((n) & ((n)-1)) == 0)                                                     \
			(arr) = xreallocarray((arr), (n) ? (n)*2 : 4, sizeof *(arr));         \
		(arr)[(n)++] = (p);                                                           \
	} while (0)

static int pod_newest_first(const void *a, const void *b)
{
	const struct pod *pa = *(const struct pod *const *)a, *pb = *(const struct pod *const *)b;
	if (pa->o.created != pb->o.created)
		return pa->o.created < pb->o.created ? 1 : -1;
	return strcmp(pa->o.name, pb->o.name);
}

static int event_oldest_first(const void *a, const void *b)
{
	const struct event *ea = *(const struct event *const *)a, *eb = *(const struct event *const *)b;
	if (ea->last != eb->last)
		return ea->last < eb->last ? -1 : 1;
	if (ea->first != eb->first)
		return ea->first < eb->first ? -1 : 1;
	return strcmp(ea->o.name, eb->o.name);
}

static bool pod_finished(const struct pod *p)
{
	return p->phase && (strcmp(p->phase, "Succeeded") == 0 || strcmp(p->phase, "Failed") == 0);
}

/* The pod the VMI runs in: one listed in activePods on the VMI's node, else a live pod on the VMI's node, else
 * the newest live pod, else the newest. */
static const struct pod *pick_active(const struct chain *c)
{
	const struct vmi *v = c->vmi;
	if (c->npods == 0)
		return NULL;
	for (size_t i = 0; v && i < c->npods; i++)
		for (int k = 0; k < v->nactive; k++)
			if (strcmp(v->active[k].uid, c->pods[i]->o.uid) == 0 &&
			    (v->node == NULL || c->pods[i]->node == NULL || strcmp(v->node, c->pods[i]->node) == 0))
				return c->pods[i];
	for (size_t i = 0; v && v->node && i < c->npods; i++)
		if (!pod_finished(c->pods[i]) && c->pods[i]->node && strcmp(c->pods[i]->node, v->node) == 0)
			return c->pods[i];
	for (size_t i = 0; i < c->npods; i++)
		if (!pod_finished(c->pods[i]))
			return c->pods[i];
	return c->pods[0];
}

static bool event_matches(const struct chain *c, const struct event *e)
{
	if (e->inv_uid[0] != '\0') {
		if (c->vm && strcmp(e->inv_uid, c->vm->o.uid) == 0)
			return true;
		if (c->vmi && strcmp(e->inv_uid, c->vmi->o.uid) == 0)
			return true;
		for (size_t i = 0; i < c->npods; i++)
			if (strcmp(e->inv_uid, c->pods[i]->o.uid) == 0)
				return true;
		for (size_t i = 0; i < c->nstray; i++)
			if (strcmp(e->inv_uid, c->stray[i]->o.uid) == 0)
				return true;
		return false;
	}
	/* no UID (some controllers omit it): fall back to kind and name in the same namespace */
	if (e->inv_kind == NULL || e->inv_name == NULL || (e->inv_ns && strcmp(e->inv_ns, c->ns) != 0))
		return false;
	if (strcmp(e->inv_kind, "VirtualMachine") == 0 || strcmp(e->inv_kind, "VirtualMachineInstance") == 0)
		return strcmp(e->inv_name, c->name) == 0;
	if (strcmp(e->inv_kind, "Pod") == 0)
		for (size_t i = 0; i < c->npods; i++)
			if (strcmp(e->inv_name, c->pods[i]->o.name) == 0)
				return true;
	return false;
}

static struct chain *chain_start(const struct store *st, struct source *src, const char *ns, const char *name)
{
	const struct vm *vm = (const struct vm *)store_find(st, src, OBJ_VM, ns, name);
	const struct vmi *vmi = (const struct vmi *)store_find(st, src, OBJ_VMI, ns, name);
	if (vm == NULL && vmi == NULL)
		return NULL;
	struct chain *c = xcalloc(1, sizeof *c);
	c->src = src;
	c->ns = intern(ns);
	c->name = xstrdup(name);
	c->vm = vm;
	if (vmi) {
		if (vmi->vm_uid[0] == '\0') {
			c->vmi = vmi;
			c->vmi_unowned = true;
		} else if (vm == NULL || strcmp(vmi->vm_uid, vm->o.uid) == 0) {
			c->vmi = vmi; /* a VMI whose VM is gone (deleted, orphaned) is still this name's execution */
		} else {
			c->vmi_foreign = vmi;
		}
	}
	return c;
}

/* Files a candidate launcher pod as owned or as an owner mismatch. */
static void consider_pod(struct chain *c, const struct pod *p)
{
	if (p->o.ns != c->ns && strcmp(p->o.ns, c->ns) != 0)
		return;
	if (uid_eq(p->vmi_uid, c->vmi->o.uid))
		PUSH(c->pods, c->npods, p);
	else if (uid_eq(pod_created_by(p), c->vmi->o.uid))
		PUSH(c->stray, c->nstray, p);
}

static void finish_pods(struct chain *c)
{
	if (c->vmi == NULL)
		return;
	if (c->npods > 1)
		qsort(c->pods, c->npods, sizeof *c->pods, pod_newest_first);
	if (c->nstray > 1)
		qsort(c->stray, c->nstray, sizeof *c->stray, pod_newest_first);
	c->active = pick_active(c);
	c->guest.agent = cond_find(c->vmi->conds, c->vmi->nconds, "AgentConnected");
	c->guest.agent_connected = cond_is_true(c->vmi->conds, c->vmi->nconds, "AgentConnected");
	c->guest.os = c->vmi->guest_os;
}

static void finish_events(struct chain *c)
{
	if (c->nevents > 1)
		qsort(c->events, c->nevents, sizeof *c->events, event_oldest_first);
}

struct chain_index;
static struct chain_index *index_of(const struct store *st);

struct chain *chain_build(const struct store *st, struct source *src, const char *ns, const char *name)
{
	struct chain_index *ix = index_of(st);
	if (ix)
		return chain_build_ix(ix, src, ns, name);
	struct chain *c = chain_start(st, src, ns, name);
	if (c == NULL)
		return NULL;
	size_t n;
	if (c->vmi) {
		struct obj *const *pods = store_objs(st, src, OBJ_POD, &n);
		for (size_t i = 0; i < n; i++)
			consider_pod(c, (const struct pod *)pods[i]);
	}
	finish_pods(c);
	struct obj *const *evs = store_objs(st, src, OBJ_EVENT, &n);
	for (size_t i = 0; i < n; i++) {
		const struct event *e = (const struct event *)evs[i];
		if (event_matches(c, e))
			PUSH(c->events, c->nevents, e);
	}
	finish_events(c);
	return c;
}

/* ---- the index: launcher pods by owner / created-by UID, events by involved object ---- */

struct bucket {
	char *key;
	const struct obj **v;
	size_t n;
};

struct chain_index {
	struct store *st;
	int listener;
	struct hmap pods;   /* "<source id>:<vmi uid>" -> bucket (owner and created-by) */
	struct hmap events; /* "<source id>:<uid>" or "<source id>:<ns>/<kind>/<name>" -> bucket */
};

static void bucket_add(struct hmap *m, const char *key, const struct obj *o)
{
	struct bucket *b = hmap_get(m, key);
	if (b == NULL) {
		b = xcalloc(1, sizeof *b);
		b->key = xstrdup(key);
		hmap_put(m, b->key, b);
	}
	PUSH(b->v, b->n, o);
}

static void bucket_del(struct hmap *m, const char *key, const struct obj *o)
{
	struct bucket *b = hmap_get(m, key);
	for (size_t i = 0; b && i < b->n; i++) {
		if (b->v[i] != o)
			continue;
		b->v[i] = b->v[--b->n];
		if (b->n == 0) {
			hmap_del(m, b->key);
			free(b->key);
			free(b->v);
			free(b);
		}
		return;
	}
}

/* The keys an object is filed under (at most 2). */
static int index_keys(const struct obj *o, char keys[2][512])
{
	int n = 0;
	if (o->kind == OBJ_POD) {
		const struct pod *p = (const struct pod *)o;
		if (p->vmi_uid[0])
			snprintf(keys[n++], 512, "%d:%s", o->src->id, p->vmi_uid);
		const char *cb = pod_created_by(p);
		if (cb[0] && strcmp(cb, p->vmi_uid) != 0)
			snprintf(keys[n++], 512, "%d:%s", o->src->id, cb);
	} else if (o->kind == OBJ_EVENT) {
		const struct event *e = (const struct event *)o;
		if (e->inv_uid[0])
			snprintf(keys[n++], 512, "%d:%s", o->src->id, e->inv_uid);
		else if (e->inv_kind && e->inv_name)
			snprintf(keys[n++], 512, "%d:%s/%s/%.256s", o->src->id, e->inv_ns ? e->inv_ns : o->ns, e->inv_kind,
				 e->inv_name);
	}
	return n;
}

static void index_apply(struct chain_index *ix, const struct obj *o, bool add)
{
	char keys[2][512];
	int n = index_keys(o, keys);
	struct hmap *m = o->kind == OBJ_POD ? &ix->pods : &ix->events;
	for (int i = 0; i < n; i++) {
		if (add)
			bucket_add(m, keys[i], o);
		else
			bucket_del(m, keys[i], o);
	}
}

static void index_on_change(void *arg, enum obj_kind kind, const struct obj *old, const struct obj *new_)
{
	struct chain_index *ix = arg;
	if (kind != OBJ_POD && kind != OBJ_EVENT)
		return;
	if (old && new_) {
		/* the usual update: filed under the same keys, the new object takes the old one's place */
		char ko[2][512], kn[2][512];
		int n = index_keys(old, ko);
		bool same = n == index_keys(new_, kn);
		for (int i = 0; same && i < n; i++)
			same = strcmp(ko[i], kn[i]) == 0;
		if (same) {
			struct hmap *m = kind == OBJ_POD ? &ix->pods : &ix->events;
			for (int i = 0; i < n; i++) {
				struct bucket *b = hmap_get(m, ko[i]);
				size_t j = 0;
				while (b && j < b->n && b->v[j] != old)
					j++;
				if (b && j < b->n)
					b->v[j] = new_;
				else
					bucket_add(m, kn[i], new_);
			}
			return;
		}
	}
	if (old)
		index_apply(ix, old, false);
	if (new_)
		index_apply(ix, new_, true);
}

/* The indexes in use, so chain_build on an indexed store uses its index (a program has one or two stores). */
static struct chain_index **registry;
static size_t nregistry;

static struct chain_index *index_of(const struct store *st)
{
	for (size_t i = 0; i < nregistry; i++)
		if (registry[i]->st == st)
			return registry[i];
	return NULL;
}

struct chain_index *chain_index_new(struct store *st)
{
	struct chain_index *ix = xcalloc(1, sizeof *ix);
	ix->st = st;
	hmap_init(&ix->pods);
	hmap_init(&ix->events);
	for (size_t s = 0; s < source_count(); s++) {
		for (int k = OBJ_POD; k <= OBJ_EVENT; k++) {
			size_t n;
			struct obj *const *objs = store_objs(st, source_get(s), (enum obj_kind)k, &n);
			for (size_t i = 0; i < n; i++)
				index_apply(ix, objs[i], true);
		}
	}
	ix->listener = store_listen(st, index_on_change, ix);
	registry = xreallocarray(registry, nregistry + 1, sizeof *registry);
	registry[nregistry++] = ix;
	return ix;
}

static void buckets_free(struct hmap *m)
{
	const char *k;
	void *v;
	for (size_t it = 0; hmap_next(m, &it, &k, &v);) {
		struct bucket *b = v;
		free(b->key);
		free(b->v);
		free(b);
	}
	hmap_free(m);
}

void chain_index_free(struct chain_index *ix)
{
	if (ix == NULL)
		return;
	store_unlisten(ix->st, ix->listener);
	for (size_t i = 0; i < nregistry; i++)
		if (registry[i] == ix) {
			registry[i] = registry[--nregistry];
			break;
		}
	if (nregistry == 0) {
		free(registry);
		registry = NULL;
	}
	buckets_free(&ix->pods);
	buckets_free(&ix->events);
	free(ix);
}

static void events_of(struct chain *c, const struct chain_index *ix, const char *uid)
{
	char key[512];
	snprintf(key, sizeof key, "%d:%s", c->src->id, uid);
	const struct bucket *b = hmap_get(&ix->events, key);
	for (size_t i = 0; b && i < b->n; i++)
		PUSH(c->events, c->nevents, (const struct event *)b->v[i]);
}

static void events_named(struct chain *c, const struct chain_index *ix, const char *kind, const char *name)
{
	char key[512];
	snprintf(key, sizeof key, "%d:%s/%s/%.256s", c->src->id, c->ns, kind, name);
	const struct bucket *b = hmap_get(&ix->events, key);
	for (size_t i = 0; b && i < b->n; i++)
		PUSH(c->events, c->nevents, (const struct event *)b->v[i]);
}

struct chain *chain_build_ix(const struct chain_index *ix, struct source *src, const char *ns, const char *name)
{
	struct chain *c = chain_start(ix->st, src, ns, name);
	if (c == NULL)
		return NULL;
	if (c->vmi) {
		char key[512];
		snprintf(key, sizeof key, "%d:%s", src->id, c->vmi->o.uid);
		const struct bucket *b = hmap_get(&ix->pods, key);
		for (size_t i = 0; b && i < b->n; i++)
			consider_pod(c, (const struct pod *)b->v[i]);
	}
	finish_pods(c);
	if (c->vm)
		events_of(c, ix, c->vm->o.uid);
	if (c->vmi)
		events_of(c, ix, c->vmi->o.uid);
	for (size_t i = 0; i < c->npods; i++)
		events_of(c, ix, c->pods[i]->o.uid);
	for (size_t i = 0; i < c->nstray; i++)
		events_of(c, ix, c->stray[i]->o.uid);
	events_named(c, ix, "VirtualMachine", name);
	events_named(c, ix, "VirtualMachineInstance", name);
	for (size_t i = 0; i < c->npods; i++)
		events_named(c, ix, "Pod", c->pods[i]->o.name);
	finish_events(c);
	return c;
}

void chain_free(struct chain *c)
{
	if (c == NULL)
		return;
	free(c->name);
	free(c->pods);
	free(c->stray);
	free(c->events);
	free(c);
}

int chain_parse_ref(const char *ref, const char *default_ns, char **ns, char **name)
{
	const char *slash = strchr(ref, '/');
	*ns = *name = NULL;
	if (slash) {
		if (slash == ref || slash[1] == '\0' || strchr(slash + 1, '/'))
			return -1;
		*ns = xstrndup(ref, (size_t)(slash - ref));
		*name = xstrdup(slash + 1);
		return 0;
	}
	if (*ref == '\0')
		return -1;
	*ns = xstrdup(default_ns ? default_ns : "default");
	*name = xstrdup(ref);
	return 0;
}

/* The pod a log request for ns/name reads: the VM's or VMI's current launcher, else a pod of that name.
 * NULL with *why (caller frees) when there is none. */
const struct pod *chain_log_pod(const struct store *st, struct source *src, const char *ns, const char *name,
			       const char **vm_name, char **why)
{
	*why = NULL;
	*vm_name = NULL;
	struct chain *c = chain_build(st, src, ns, name);
	if (c) {
		const struct pod *p = c->active ? c->active : c->npods ? c->pods[0] : NULL;
		if (p == NULL)
			*why = xasprintf("%s %s/%s has no launcher pod (%s): nothing to show",
					 c->vm ? "VirtualMachine" : "VirtualMachineInstance", ns, name,
					 c->vmi ? "its VMI has none yet" : "no VMI: the VM is not running");
		else
			*vm_name = c->vmi ? c->vmi->o.name : name;
		chain_free(c);
		return p;
	}
	const struct pod *p = (const struct pod *)store_find(st, src, OBJ_POD, ns, name);
	if (p == NULL) {
		*why = xasprintf("no VirtualMachine, VirtualMachineInstance or pod named %s/%s", ns, name);
		return NULL;
	}
	*vm_name = p->vm_name;
	return p;
}

/* the pod's containers' names: spec.containers', else (a pod built without its spec) its statuses' */
int pod_container_names(const struct pod *p, const char **out, int max)
{
	int n = 0;
	for (const char *q = p->spec_names, *nl; q && *q && n < max; q = nl + 1) {
		nl = strchr(q, '\n');
		if (nl == NULL)
			break;
		out[n++] = intern_n(q, (size_t)(nl - q));
	}
	for (int i = 0; p->spec_names == NULL && i < p->ncontainers && n < max; i++)
		if (!p->containers[i].init && p->containers[i].name)
			out[n++] = p->containers[i].name;
	return n;
}

const char *pod_default_container(const struct pod *p, char **note)
{
	const char *names[32];
	int n = pod_container_names(p, names, 32);
	if (note)
		*note = NULL;
	if (p->default_container) {
		for (int i = 0; i < n; i++)
			if (strcmp(names[i], p->default_container) == 0)
				return names[i];
		if (note)
			*note = xasprintf("Default container name \"%s\" not found in pod %s", p->default_container, p->o.name);
	}
	if (n == 0)
		return NULL;
	if (note && *note == NULL && (n > 1 || p->spec_init_names)) {
		struct buf b; /* kubectl's AllContainerNames: the containers, then the init containers "(init)" */
		buf_init(&b);
		for (int i = 0; i < n; i++)
			buf_printf(&b, "%s%s", b.len ? ", " : "", names[i]);
		for (const char *q = p->spec_init_names, *nl; q && *q && (nl = strchr(q, '\n')); q = nl + 1)
			buf_printf(&b, "%s%.*s (init)", b.len ? ", " : "", (int)(nl - q), q);
		*note = xasprintf("Defaulted container \"%s\" out of: %s", names[0], b.data);
		buf_free(&b);
	}
	return names[0];
}
