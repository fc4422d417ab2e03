/* The namespace and context lists: namespaces the clusters list plus those seen in the store (enter scopes the
 * lists to one), kubeconfig contexts (enter switches). */
#ifndef KVCON_UI_NSCTX_H
#define KVCON_UI_NSCTX_H

#include <stddef.h>

#include "model/obj.h"

struct store;

struct view *nsctx_ns_view_new(void);
struct view *nsctx_ctx_view_new(void);
/* "all", then the namespaces of every VM, VMI and pod in the store, those the clusters listed and the current
 * one, sorted (valid until the next call). Rebuilt only when one of those sets changed; the store is scanned
 * only when nsctx_store_changed missed a change. */
const char *const *nsctx_namespaces(size_t *n);
/* A store change (the dashboard's store listener calls it): keeps the per-namespace object counts in step. */
void nsctx_store_changed(const struct store *st, enum obj_kind kind, const struct obj *old, const struct obj *new_);
/* Forgets the counts (another store is used from now on). */
void nsctx_forget(void);
/* Asks every source for its namespace list again (asynchronous; the list view redraws when answers come). */
void nsctx_refresh(void);

/* ---- test seams: exported for tests/ only, not to be called by kvcon itself (tests/check-exports.sh) ---- */
/* How many times the namespaces were counted over the whole store (for tests). */
size_t nsctx_scans(void);

#endif
