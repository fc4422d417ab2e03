/* The store: per source and kind, a dense array plus two hash indexes (UID, ns/name). The indexes are open
 * addressing tables of positions in the dense array, hashed from the objects' own fields (no key copies, 4 bytes
 * a slot). */
#include "model/store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/util.h"
#include "core/xmalloc.h"

/* Linear probing with backward-shift deletion (no tombstones). A slot holds the object's position in the table's
 * dense array plus one (0: empty): 4 bytes a slot, half a pointer. */
struct index {
	uint32_t *slots;
	size_t cap; /* power of two, or 0 */
};

struct table {
	struct obj **objs;
	size_t n, cap;
	struct index by_uid;
	struct index by_key;
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
	free(t->by_uid.slots);
	free(t->by_key.slots);
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

/* ---- the indexes ---- */

#define FNV_INIT 2166136261u

static uint32_t fnv(uint32_t h, const char *s)
{
	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 16777619u;
	}
	return h;
}

static uint32_t hash_uid(const char *uid)
{
	return fnv(FNV_INIT, uid);
}

static uint32_t hash_key(const char *ns, const char *name)
{
	uint32_t h = fnv(FNV_INIT, ns);
	h ^= '/';
	h *= 16777619u;
	return fnv(h, name);
}

enum idx_kind { IDX_UID, IDX_KEY };

static uint32_t obj_hash(const struct obj *o, enum idx_kind ik)
{
	return ik == IDX_UID ? hash_uid(o->uid) : hash_key(o->ns, o->name ? o->name : "");
}

static bool obj_is(const struct obj *o, enum idx_kind ik, const char *a, const char *b)
{
	if (ik == IDX_UID)
		return strcmp(o->uid, a) == 0;
	return strcmp(o->name ? o->name : "", b) == 0 && (o->ns == a || strcmp(o->ns, a) == 0);
}

/* An index slot: 0 when empty, else the object's position + 1 in its low SLOT_POS_BITS and the top bits of its
 * hash above them, so that a probe passes over other objects' slots without reading the objects (255 in 256 of
 * them). A table holds at most SLOT_POS_MAX objects (16.7 million: gigabytes of one kind from one source). */
#define SLOT_POS_BITS 24
#define SLOT_POS_MASK ((1u << SLOT_POS_BITS) - 1)
#define SLOT_POS_MAX (SLOT_POS_MASK - 1)

static uint32_t slot_make(uint32_t pos, uint32_t h)
{
	return (h & ~SLOT_POS_MASK) | (pos + 1);
}

static bool slot_holds(uint32_t v, uint32_t pos)
{
	return (v & SLOT_POS_MASK) == pos + 1;
}

/* The object an index slot names (the slot must not be empty). */
static struct obj *idx_obj(const struct table *t, uint32_t v)
{
	return t->objs[(v & SLOT_POS_MASK) - 1];
}

/* The slot holding the object matching (a, b) (uid; or ns, name), or the empty slot where it would go. */
static size_t idx_probe(const struct table *t, const struct index *x, enum idx_kind ik, uint32_t h, const char *a,
			const char *b)
{
	size_t mask = x->cap - 1;
	uint32_t tag = h & ~SLOT_POS_MASK;
	for (size_t i = h & mask;; i = (i + 1) & mask) {
		uint32_t v = x->slots[i];
		if (v == 0 || ((v & ~SLOT_POS_MASK) == tag && obj_is(idx_obj(t, v), ik, a, b)))
			return i;
	}
}

static struct obj *idx_get(const struct table *t, const struct index *x, enum idx_kind ik, const char *a,
			   const char *b)
{
	if (x->cap == 0)
		return NULL;
	uint32_t h = ik == IDX_UID ? hash_uid(a) : hash_key(a, b);
	uint32_t v = x->slots[idx_probe(t, x, ik, h, a, b)];
	return v ? idx_obj(t, v) : NULL;
}

/* Where the entry for position pos is, its object hashing to h; SIZE_MAX when absent. */
static size_t idx_slot_of(const struct index *x, uint32_t pos, uint32_t h)
{
	if (x->cap == 0)
		return SIZE_MAX;
	size_t mask = x->cap - 1;
	for (size_t i = h & mask; x->slots[i] != 0; i = (i + 1) & mask)
		if (slot_holds(x->slots[i], pos))
			return i;
	return SIZE_MAX;
}

/* Adds the object at position pos (t->objs[pos] set); count: the objects the table holds. */
static void idx_put(const struct table *t, struct index *x, enum idx_kind ik, uint32_t pos, size_t count)
{
	if ((count + 1) * 4 > x->cap * 3) {
		struct index old = *x;
		x->cap = old.cap ? old.cap * 2 : 64;
		x->slots = xcalloc(x->cap, sizeof *x->slots);
		for (size_t i = 0; i < old.cap; i++)
			if (old.slots[i])
				idx_put(t, x, ik, (old.slots[i] & SLOT_POS_MASK) - 1, 0);
		free(old.slots);
	}
	size_t mask = x->cap - 1;
	uint32_t h = obj_hash(t->objs[pos], ik);
	size_t i = h & mask;
	while (x->slots[i] != 0 && !slot_holds(x->slots[i], pos))
		i = (i + 1) & mask;
	x->slots[i] = slot_make(pos, h);
}

/* Removes the entry for position pos, its object o (when it is there): the entries after it in its run move back
 * so probing never stops early. */
static void idx_del(const struct table *t, struct index *x, enum idx_kind ik, const struct obj *o, uint32_t pos)
{
	size_t i = idx_slot_of(x, pos, obj_hash(o, ik));
	if (i == SIZE_MAX)
		return;
	size_t mask = x->cap - 1;
	for (size_t j = i;;) {
		x->slots[i] = 0;
		for (;;) {
			j = (j + 1) & mask;
			if (x->slots[j] == 0)
				return;
			size_t home = obj_hash(idx_obj(t, x->slots[j]), ik) & mask;
			/* the entry at j may fill the hole at i unless its home lies cyclically in (i, j] */
			bool stays = i <= j ? (home > i && home <= j) : (home > i || home <= j);
			if (!stays)
				break;
		}
		x->slots[i] = x->slots[j];
		i = j;
	}
}

/* The entry for position from now names position to (the object moved in the dense array). */
static void idx_move(struct index *x, enum idx_kind ik, const struct obj *o, uint32_t from, uint32_t to)
{
	size_t i = idx_slot_of(x, from, obj_hash(o, ik));
	if (i != SIZE_MAX)
		x->slots[i] = (x->slots[i] & ~SLOT_POS_MASK) | (to + 1);
}

static void table_unlink(struct table *t, struct obj *o)
{
	uint32_t slot = o->slot;
	idx_del(t, &t->by_uid, IDX_UID, o, slot);
	idx_del(t, &t->by_key, IDX_KEY, o, slot);
	t->n--;
	if (slot != t->n) {
		struct obj *last = t->objs[t->n];
		idx_move(&t->by_uid, IDX_UID, last, (uint32_t)t->n, slot);
		idx_move(&t->by_key, IDX_KEY, last, (uint32_t)t->n, slot);
		t->objs[slot] = last;
		last->slot = slot;
	}
}

struct obj *store_upsert(struct store *st, struct obj *o)
{
	struct table *t = table_make(st, o->src, o->kind);
	o->flags &= ~OBJ_F_MARK;
	const char *name = o->name ? o->name : "";
	struct obj *old = idx_get(t, &t->by_uid, IDX_UID, o->uid, NULL);
	/* an object with this UID under the same namespace and name is the one the key index holds for them: the
	 * key index is not probed again */
	struct obj *same_name = old && obj_is(old, IDX_KEY, o->ns, name) ? old
									 : idx_get(t, &t->by_key, IDX_KEY, o->ns, name);
	if (old && same_name == old) {
		/* the usual update (same UID, same name, so the same hashes): the new object takes the old one's
		 * position, which the indexes hold */
		o->slot = old->slot;
		t->objs[o->slot] = o;
		notify(st, o->kind, old, o);
		obj_free(old);
		return o;
	}
	if (same_name) {
		/* the name now belongs to a new object: the old one is gone */
		table_unlink(t, same_name);
		st->count[o->kind]--;
		notify(st, o->kind, same_name, NULL);
		obj_free(same_name);
	}
	if (old) {
		/* renamed: its entries go (hashed from the old object), the new object's come */
		o->slot = old->slot;
		idx_del(t, &t->by_uid, IDX_UID, old, o->slot);
		idx_del(t, &t->by_key, IDX_KEY, old, o->slot);
		t->objs[o->slot] = o;
	} else {
		if (t->n >= SLOT_POS_MAX) {
			log_warn("store: more than %u objects of kind %s from one source: %s/%s dropped", SLOT_POS_MAX,
				 obj_kind_name(o->kind), o->ns ? o->ns : "", name);
			obj_free(o);
			return NULL;
		}
		if (t->n == t->cap) {
			t->cap = t->cap ? t->cap * 2 : 64;
			t->objs = xreallocarray(t->objs, t->cap, sizeof *t->objs);
		}
		o->slot = (uint32_t)t->n;
		t->objs[t->n++] = o;
		st->count[o->kind]++;
	}
	idx_put(t, &t->by_uid, IDX_UID, o->slot, t->n);
	idx_put(t, &t->by_key, IDX_KEY, o->slot, t->n);
	notify(st, o->kind, old, o);
	obj_free(old);
	return o;
}

int store_remove(struct store *st, struct source *src, enum obj_kind kind, const char *uid)
{
	struct table *t = table_of(st, src, kind);
	struct obj *o = t ? idx_get(t, &t->by_uid, IDX_UID, uid, NULL) : NULL;
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
	return t ? idx_get(t, &t->by_uid, IDX_UID, uid, NULL) : NULL;
}

struct obj *store_find(const struct store *st, struct source *src, enum obj_kind kind, const char *ns,
		       const char *name)
{
	struct table *t = table_of(st, src, kind);
	return t ? idx_get(t, &t->by_key, IDX_KEY, ns, name) : NULL;
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

bool store_in_step(const struct store *st, enum obj_kind kind, uint64_t *ver)
{
	if (*ver + 1 != st->version[kind])
		return false;
	(*ver)++;
	return true;
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
		if (t) /* the dense array and the two indexes */
			n += t->cap * sizeof(struct obj *) + (t->by_uid.cap + t->by_key.cap) * sizeof(uint32_t);
	}
	return n;
}
