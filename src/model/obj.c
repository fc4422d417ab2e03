/* Allocation, freeing and small accessors of the model's objects. */
#include "model/obj.h"

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/xmalloc.h"

static const struct {
	const char *name;
	const char *title;
	size_t size;
} kinds[OBJ_KIND_COUNT] = {
	[OBJ_VM] = { "vm", "VirtualMachine", sizeof(struct vm) },
	[OBJ_VMI] = { "vmi", "VirtualMachineInstance", sizeof(struct vmi) },
	[OBJ_POD] = { "pod", "Pod", sizeof(struct pod) },
	[OBJ_EVENT] = { "event", "Event", sizeof(struct event) },
};

struct obj *obj_new(enum obj_kind kind)
{
	struct obj *o = xcalloc(1, kinds[kind].size);
	o->kind = kind;
	o->ns = "";
	return o;
}

const char *obj_kind_name(enum obj_kind kind)
{
	return kind < OBJ_KIND_COUNT ? kinds[kind].name : "?";
}

const char *obj_kind_title(enum obj_kind kind)
{
	return kind < OBJ_KIND_COUNT ? kinds[kind].title : "?";
}

void conds_free(struct cond *conds, int n)
{
	for (int i = 0; i < n; i++)
		free(conds[i].message);
	free(conds);
}

void obj_free(struct obj *o)
{
	if (o == NULL)
		return;
	switch (o->kind) {
	case OBJ_VM: {
		struct vm *v = (struct vm *)o;
		conds_free(v->conds, v->nconds);
		free(v->scr);
		free(v->instancetype);
		free(v->memory);
		break;
	}
	case OBJ_VMI: {
		struct vmi *v = (struct vmi *)o;
		free(v->ip);
		for (int i = 0; i < v->nips; i++)
			free(v->ips[i]);
		free(v->ips);
		conds_free(v->conds, v->nconds);
		free(v->phases);
		free(v->guest_os);
		free(v->agent_version);
		free(v->active);
		free(v->mig.source_pod);
		free(v->mig.target_pod);
		free(v->mig.failure_reason);
		break;
	}
	case OBJ_POD: {
		struct pod *p = (struct pod *)o;
		free(p->message);
		conds_free(p->conds, p->nconds);
		for (int i = 0; i < p->ncontainers; i++)
			free(p->containers[i].message);
		free(p->containers);
		free(p->ip);
		free(p->cmdline);
		free(p->log_path);
		break;
	}
	case OBJ_EVENT: {
		struct event *e = (struct event *)o;
		free(e->message);
		free(e->inv_name);
		break;
	}
	case OBJ_KIND_COUNT:
		break;
	}
	free(o->name);
	free(o->labels);
	free(o->key);
	free(o);
}

void obj_set_key(struct obj *o)
{
	free(o->key);
	o->key = xasprintf("%s/%s", o->ns ? o->ns : "", o->name ? o->name : "");
}

void obj_label_add(struct obj *o, const char *k, const char *v)
{
	size_t old = 0;
	if (o->labels) {
		const char *p = o->labels;
		while (*p)
			p += strlen(p) + 1;
		old = (size_t)(p - o->labels);
	}
	size_t add = strlen(k) + 1 + strlen(v) + 1;
	o->labels = xrealloc(o->labels, old + add + 1);
	char *w = o->labels + old;
	w += sprintf(w, "%s=%s", k, v) + 1;
	*w = '\0';
}

const char *obj_label(const struct obj *o, const char *k)
{
	size_t kl = strlen(k);
	for (const char *p = o->labels; p && *p; p += strlen(p) + 1)
		if (strncmp(p, k, kl) == 0 && p[kl] == '=')
			return p + kl + 1;
	return NULL;
}

const struct cond *cond_find(const struct cond *conds, int n, const char *type)
{
	for (int i = 0; i < n; i++)
		if (conds[i].type && strcmp(conds[i].type, type) == 0)
			return &conds[i];
	return NULL;
}

bool cond_is_true(const struct cond *conds, int n, const char *type)
{
	const struct cond *c = cond_find(conds, n, type);
	return c && c->status && strcmp(c->status, "True") == 0;
}

static size_t sz(const void *p)
{
	return p ? malloc_usable_size((void *)p) + 16 : 0;
}

size_t obj_heap_size(const struct obj *o)
{
	size_t n = sz(o) + sz(o->name) + sz(o->labels) + sz(o->key);
	switch (o->kind) {
	case OBJ_VM: {
		const struct vm *v = (const struct vm *)o;
		n += sz(v->conds) + sz(v->scr) + sz(v->instancetype) + sz(v->memory);
		for (int i = 0; i < v->nconds; i++)
			n += sz(v->conds[i].message);
		break;
	}
	case OBJ_VMI: {
		const struct vmi *v = (const struct vmi *)o;
		n += sz(v->ip) + sz(v->ips) + sz(v->conds) + sz(v->phases) + sz(v->guest_os) + sz(v->active);
		for (int i = 0; i < v->nips; i++)
			n += sz(v->ips[i]);
		for (int i = 0; i < v->nconds; i++)
			n += sz(v->conds[i].message);
		break;
	}
	case OBJ_POD: {
		const struct pod *p = (const struct pod *)o;
		n += sz(p->message) + sz(p->conds) + sz(p->containers) + sz(p->ip);
		for (int i = 0; i < p->ncontainers; i++)
			n += sz(p->containers[i].message);
		break;
	}
	case OBJ_EVENT: {
		const struct event *e = (const struct event *)o;
		n += sz(e->message) + sz(e->inv_name);
		break;
	}
	case OBJ_KIND_COUNT:
		break;
	}
	return n;
}
