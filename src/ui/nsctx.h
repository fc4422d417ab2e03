/* The namespace and context lists: namespaces the clusters list plus those seen in the store (enter scopes the
 * lists to one), kubeconfig contexts (enter switches). */
#ifndef KVCON_UI_NSCTX_H
#define KVCON_UI_NSCTX_H

#include <stddef.h>

struct view *nsctx_ns_view_new(void);
struct view *nsctx_ctx_view_new(void);
/* "all", then the namespaces of every object in the store and those the clusters listed, sorted (valid until
 * the next call). */
const char *const *nsctx_namespaces(size_t *n);
/* Asks every source for its namespace list again (asynchronous; the list view redraws when answers come). */
void nsctx_refresh(void);
/* Why some namespaces come from objects only (a 403 on the namespace list), or NULL. */
const char *nsctx_note(void);

#endif
