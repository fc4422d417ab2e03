/* The chain join of one VM across its four boundaries (see chain.h). Ownership is matched by UID, never by
 * name or label alone: in a shared namespace the created-by label finds other launchers too. */
#include "model/chain.h"

#include <stdlib.h>
#include <string.h>

#include "core/intern.h"
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

struct chain *chain_build(const struct store *st, struct source *src, const char *ns, const char *name)
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

	if (c->vmi) {
		size_t n;
		struct obj *const *pods = store_objs(st, src, OBJ_POD, &n);
		for (size_t i = 0; i < n; i++) {
			const struct pod *p = (const struct pod *)pods[i];
			if (p->o.ns != c->ns && strcmp(p->o.ns, c->ns) != 0)
				continue;
			if (uid_eq(p->vmi_uid, c->vmi->o.uid))
				PUSH(c->pods, c->npods, p);
			else if (uid_eq(p->created_by, c->vmi->o.uid))
				PUSH(c->stray, c->nstray, p);
		}
		if (c->npods > 1)
			qsort(c->pods, c->npods, sizeof *c->pods, pod_newest_first);
		if (c->nstray > 1)
			qsort(c->stray, c->nstray, sizeof *c->stray, pod_newest_first);
		c->active = pick_active(c);
		c->guest.agent = cond_find(c->vmi->conds, c->vmi->nconds, "AgentConnected");
		c->guest.agent_connected = cond_is_true(c->vmi->conds, c->vmi->nconds, "AgentConnected");
		c->guest.os = c->vmi->guest_os;
	}

	size_t n;
	struct obj *const *evs = store_objs(st, src, OBJ_EVENT, &n);
	for (size_t i = 0; i < n; i++) {
		const struct event *e = (const struct event *)evs[i];
		if (event_matches(c, e))
			PUSH(c->events, c->nevents, e);
	}
	if (c->nevents > 1)
		qsort(c->events, c->nevents, sizeof *c->events, event_oldest_first);
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

bool chain_has_pod(const struct chain *c, const struct pod *p)
{
	for (size_t i = 0; i < c->npods; i++)
		if (c->pods[i] == p)
			return true;
	return false;
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
