/* The store: every object of every source, indexed by UID and by namespace/name, with change notification.
 * UI thread only. Providers upsert decoded objects; views and the CLI read; listeners (lineage, views) hear
 * every change. */
#ifndef KVCON_MODEL_STORE_H
#define KVCON_MODEL_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "model/obj.h"
#include "model/source.h"

struct store;

/* old is NULL on add, new is NULL on delete; both set on replace. Called before old is freed. */
typedef void (*store_listener)(void *arg, enum obj_kind kind, const struct obj *old, const struct obj *new_);

struct store *store_new(void);
void store_free(struct store *st);

/* Takes ownership of o (o->src, o->uid, o->ns, o->name set). Replaces an object with the same UID in the same
 * source, or with the same ns/name (a recreated object under a new UID replaces the old one). Returns o; NULL when
 * o was dropped (freed, logged): a new object past the 16.7 million a source may hold of one kind. */
struct obj *store_upsert(struct store *st, struct obj *o);
/* Removes and frees; returns 0, or -1 when absent. */
int store_remove(struct store *st, struct source *src, enum obj_kind kind, const char *uid);

struct obj *store_get(const struct store *st, struct source *src, enum obj_kind kind, const char *uid);
struct obj *store_find(const struct store *st, struct source *src, enum obj_kind kind, const char *ns,
		       const char *name);

/* Dense array of a source's objects of one kind (valid until the next change). */
struct obj *const *store_objs(const struct store *st, struct source *src, enum obj_kind kind, size_t *n);
size_t store_count(const struct store *st, enum obj_kind kind); /* over all sources */
/* Bumped on every change of that kind (views re-sort only when it moved). */
uint64_t store_version(const struct store *st, enum obj_kind kind);
/* For a listener that keeps something derived from the store change by change: true when the change being told
 * is the next one after *ver (the store bumps the version before telling its listeners), and then *ver follows
 * it; false when a change went by unseen (rebuild what was derived). */
bool store_in_step(const struct store *st, enum obj_kind kind, uint64_t *ver);

/* Mark and sweep for relists: mark every object of (src, kind) in namespace ns (NULL: all), upserts clear the
 * mark, sweep removes what is still marked and returns how many. */
void store_mark(struct store *st, struct source *src, enum obj_kind kind, const char *ns);
size_t store_sweep(struct store *st, struct source *src, enum obj_kind kind, const char *ns);
/* Drops every object of a source (context switch). */
void store_clear_source(struct store *st, struct source *src);

int store_listen(struct store *st, store_listener fn, void *arg);
void store_unlisten(struct store *st, int id);

/* ---- test seams: exported for tests/ only, not to be called by kvcon itself (tests/check-exports.sh) ---- */
/* Bytes held by the objects (approximate, malloc_usable_size based). */
size_t store_heap_size(const struct store *st);

#endif
