/* The namespace and context lists: namespaces seen in the store (enter scopes the lists to one), kubeconfig
 * contexts (enter switches). */
#ifndef KVCON_UI_NSCTX_H
#define KVCON_UI_NSCTX_H

#include <stddef.h>

struct view *nsctx_ns_view_new(void);
struct view *nsctx_ctx_view_new(void);
/* Namespaces of every object in the store, sorted, plus "all" (valid until the next call). */
const char *const *nsctx_namespaces(size_t *n);

#endif
