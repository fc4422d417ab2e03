/* The store: per source and kind, a dense array plus two hash indexes (UID, ns/name). */
#include "model/store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/hmap.h"
#include "core/util.h"
#include "core/xmalloc.h"

struct table {
	struct obj **objs;
	size_t n, cap;
	struct hmap by_uid;
	struct hmap by_key;
};

struct listener {
	int id;
	store_listener fn;
	void *arg;
};

struct store {
	struct table **tables; /* [source id * OBJ_KIND_COUNT + kind] */
	size_t ntables;
	uint64_t version[OBJ_KIND_COUNT];
	size_t count[OBJ_KIND_COUNT];
	struct listener *listeners;
	size_t nlisteners;
	int next_id;
};

struct store *store_new(void)
{
	return xcalloc(1, sizeof(struct store));
}

static void table_free(struct table *t)
{
	if (t == NULL)
		return;
	for (size_t i = 0; i < t->n; i++)
		obj_free(t->objs[i]);
	free(t->objs);
	hmap_free(&t->by_uid);
	hmap_free(&t->by_key);
	free(t);
}

void store_free(struct store *st)
{
	if (st == NULL)
		return;
	for (size_t i = 0; i < st->ntables; i++)
		table_free(st->tables[i]);
	free(st->tables);
	free(st->listeners);
	free(st);
}

static struct table *table_of(const struct store *st, struct source *src, enum obj_kind kind)
{
	size_t i = (size_t)src->id * OBJ_KIND_COUNT + kind;
	return i < st->ntables ? st->tables[i] : NULL;
}

static struct table *table_make(struct store *st, struct source *src, enum obj_kind kind)
{
	size_t i = (size_t)src->id * OBJ_KIND_COUNT + kind;
	if (i >= st->ntables) {
		size_t n = i + 1;
		st->tables = xreallocarray(st->tables, n, sizeof *st->tables);
		memset(st->tables + st->ntables, 0, (n - st->ntables) * sizeof *st->tables);
		st->ntables = n;
	}
	if (st->tables[i] == NULL)
		st->tables[i] = xcalloc(1, sizeof(struct table));
	return st->tables[i];
}

static void notify(struct store *st, enum obj_kind kind, const struct obj *old, const struct obj *new_)
{
	st->version[kind]++;
	for (size_t i = 0; i < st->nlisteners; i++)
		st->listeners[i].fn(st->listeners[i].arg, kind, old, new_);
}

static void table_unlink(struct table *t, struct obj *o)
{
	hmap_del(&t->by_uid, o->uid);
	if (hmap_get(&t->by_key, o->key) == o)
		hmap_del(&t->by_key, o->key);
	uint32_t slot = o->slot;
	t->n--;
	if (slot != t->n) {
		t->objs[slot] = t->objs[t->n];
		t->objs[slot]->slot = slot;
	}
}

struct obj *store_upsert(struct store *st, struct obj *o)
{
	struct table *t = table_make(st, o->src, o->kind);
	if (o->key == NULL)
		obj_set_key(o);
	o->flags &= ~OBJ_F_MARK;
	struct obj *old = hmap_get(&t->by_uid, o->uid);
	struct obj *same_name = hmap_get(&t->by_key, o->key);
	if (same_name && same_name != old) {
		/* the name now belongs to a new object: the old one is gone */
		table_unlink(t, same_name);
		st->count[o->kind]--;
		notify(st, o->kind, same_name, NULL);
		obj_free(same_name);
	}
	if (old) {
		o->slot = old->slot;
		t->objs[o->slot] = o;
		hmap_del(&t->by_uid, old->uid);
		if (hmap_get(&t->by_key, old->key) == old)
			hmap_del(&t->by_key, old->key);
	} else {
		if (t->n == t->cap) {
			t->cap = t->cap ? t->cap * 2 : 64;
			t->objs = xreallocarray(t->objs, t->cap, sizeof *t->objs);
		}
		o->slot = (uint32_t)t->n;
		t->objs[t->n++] = o;
		st->count[o->kind]++;
	}
	hmap_put(&t->by_uid, o->uid, o);
	hmap_put(&t->by_key, o->key, o);
	notify(st, o->kind, old, o);
	obj_free(old);
	return o;
}

int store_remove(struct store *st, struct source *src, enum obj_kind kind, const char *uid)
{
	struct table *t = table_of(st, src, kind);
	struct obj *o = t ? hmap_get(&t->by_uid, uid) : NULL;
	if (o == NULL)
		return -1;
	table_unlink(t, o);
	st->count[kind]--;
	notify(st, kind, o, NULL);
	obj_free(o);
	return 0;
}

struct obj *store_get(const struct store *st, struct source *src, enum obj_kind kind, const char *uid)
{
	struct table *t = table_of(st, src, kind);
	return t ? hmap_get(&t->by_uid, uid) : NULL;
}

struct obj *store_find(const struct store *st, struct source *src, enum obj_kind kind, const char *ns,
		       const char *name)
{
	struct table *t = table_of(st, src, kind);
	if (t == NULL)
		return NULL;
	char stackkey[512];
	char *key = stackkey;
	size_t need = strlen(ns) + strlen(name) + 2;
	if (need > sizeof stackkey)
		key = xmalloc(need);
	size_t nl = strlen(ns);
	memcpy(key, ns, nl);
	key[nl] = '/';
	memcpy(key + nl + 1, name, strlen(name) + 1);
	struct obj *o = hmap_get(&t->by_key, key);
	if (key != stackkey)
		free(key);
	return o;
}

struct obj *const *store_objs(const struct store *st, struct source *src, enum obj_kind kind, size_t *n)
{
	struct table *t = table_of(st, src, kind);
	*n = t ? t->n : 0;
	return t ? t->objs : NULL;
}

size_t store_count(const struct store *st, enum obj_kind kind)
{
	return st->count[kind];
}

uint64_t store_version(const struct store *st, enum obj_kind kind)
{
	return st->version[kind];
}

static bool in_ns(const struct obj *o, const char *ns)
{
	return ns == NULL || strcmp(o->ns, ns) == 0;
}

void store_mark(struct store *st, struct source *src, enum obj_kind kind, const char *ns)
{
	struct table *t = table_of(st, src, kind);
	for (size_t i = 0; t && i < t->n; i++)
		if (in_ns(t->objs[i], ns))
			t->objs[i]->flags |= OBJ_F_MARK;
}

size_t store_sweep(struct store *st, struct source *src, enum obj_kind kind, const char *ns)
{
	struct table *t = table_of(st, src, kind);
	size_t removed = 0;
	for (size_t i = 0; t && i < t->n;) {
		struct obj *o = t->objs[i];
		if ((o->flags & OBJ_F_MARK) && in_ns(o, ns)) {
			table_unlink(t, o); /* moves the last object into slot i */
			st->count[kind]--;
			notify(st, kind, o, NULL);
			obj_free(o);
			removed++;
		} else {
			i++;
		}
	}
	return removed;
}

void store_clear_source(struct store *st, struct source *src)
{
	for (int k = 0; k < OBJ_KIND_COUNT; k++) {
		store_mark(st, src, (enum obj_kind)k, NULL);
		store_sweep(st, src, (enum obj_kind)k, NULL);
	}
}

int store_listen(struct store *st, store_listener fn, void *arg)
{
	st->listeners = xreallocarray(st->listeners, st->nlisteners + 1, sizeof *st->listeners);
	st->listeners[st->nlisteners].id = ++st->next_id;
	st->listeners[st->nlisteners].fn = fn;
	st->listeners[st->nlisteners].arg = arg;
	st->nlisteners++;
	return st->next_id;
}

void store_unlisten(struct store *st, int id)
{
	for (size_t i = 0; i < st->nlisteners; i++) {
		if (st->listeners[i].id == id) {
			memmove(&st->listeners[i], &st->listeners[i + 1],
				(st->nlisteners - i - 1) * sizeof *st->listeners);
			st->nlisteners--;
			return;
		}
	}
}

size_t store_heap_size(const struct store *st)
{
	size_t n = 0;
	for (size_t i = 0; i < st->ntables; i++) {
		struct table *t = st->tables[i];
		for (size_t j = 0; t && j < t->n; j++)
			n += obj_heap_size(t->objs[j]);
	}
	return n;
}
