/* Decoding of Kubernetes API objects (kube/jv.h trees of VirtualMachine, VirtualMachineInstance, Pod and Event)
 * into the model's compact structs (model/obj.h). Only the fields kvcon shows are kept; everything else in the
 * tree is ignored. Hostile or broken input never crashes the decoder: wrong types read as absent, lists and
 * strings are capped, and an object without a usable identity is refused with a reason. */
#ifndef KVCON_KUBE_DECODE_H
#define KVCON_KUBE_DECODE_H

#include <stdint.h>

#include "model/obj.h"
#include "model/source.h"

struct json_object;
struct jv;

/* Caps applied while decoding (bytes; longer values are cut at a UTF-8 boundary). */
#define KUBE_DECODE_NAME_MAX 253   /* object names: longer is refused, as the API server would */
#define KUBE_DECODE_NS_MAX 63      /* namespaces: longer is refused */
#define KUBE_DECODE_MSG_MAX 4096   /* messages (conditions, events, containers): truncated */
#define KUBE_DECODE_WORD_MAX 128   /* interned enum-like words (phase, reason, type, node): truncated */
#define KUBE_DECODE_LIST_MAX 64    /* entries kept of any list (conditions, containers, labels, IPs) */

/* The same object before packing, in the decoder's scratch memory: valid until the next decode, never freed by
 * the caller, independent of item (which may be released at once). obj_pack_copy makes it a store object. */
struct obj *kube_decode_jv(enum obj_kind kind, const struct jv *item, struct source *src, char **err);

/* Called, when a test defines it, with every member the decoder looks up (tests/unit/test_prune.c checks each
 * against what the pruner keeps). */
void kube_decode_lookup_hook(const struct jv *o, const char *key) __attribute__((weak));

/* ---- test seams: exported for tests/ only, not to be called by kvcon itself (tests/check-exports.sh) ---- */
/* Decodes one object of the given kind, a json-c tree (copied to a jv tree first). Returns a new object (free
 * with obj_free, or hand it to store_upsert) with o->src = src, or NULL when it cannot be identified (not a JSON
 * object, missing or oversized metadata.name / metadata.uid / namespace); then *err (when err is not NULL) gets a
 * newly allocated reason the caller frees. Unknown fields are ignored. UI/loop thread only (interns strings,
 * decodes in static scratch memory). The object comes packed (obj_pack). */
struct obj *kube_decode(enum obj_kind kind, struct json_object *item, struct source *src, char **err);
/* Reads metadata.resourceVersion of an object or of a list. Returns 0 and sets *rv when it is a decimal
 * number (as etcd's are), -1 when absent, malformed or not numeric. */
int kube_decode_rv(struct json_object *item, uint64_t *rv);

#endif
