/* Pruning of Kubernetes JSON before it is parsed: one pass over the bytes keeps only the object members the decoder
 * reads and drops the rest (spec.domain.devices, annotations, managedFields, ...), so json-c builds a tree of a
 * fraction of the size. Two modes: by key name at any depth (kube_jprune: the union of every key the decoder reads),
 * and by a per-kind schema of paths (kube_jprune_schema: only the members read at that place, plus the list and
 * watch envelopes and Status errors). The kept members come out as text (json-c parses it) or, in the same pass,
 * as a tree in arena memory (kube_jprune_jv: the watch and list paths). */
#ifndef KVCON_KUBE_JPRUNE_H
#define KVCON_KUBE_JPRUNE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "model/obj.h"

/* A schema: the members kept at one object level, an array ending with a NULL key. Arrays are transparent: the
 * elements of an array member are pruned with the member's kids. */
struct kube_jprune_node {
	const char *key;
	unsigned char len; /* strlen(key) */
	unsigned char flags; /* KUBE_JPRUNE_* */
	const struct kube_jprune_node *kids; /* NULL: a scalar (an object or array there is dropped) */
};
#define KUBE_JPRUNE_WHOLE 1u      /* kept as is (maps with free-form keys, lists of strings) */
#define KUBE_JPRUNE_KEEP_EMPTY 2u /* kept when null, {} or [] (else such members are dropped: the decoder reads
				   * them as absent) because its presence means something */
#define KUBE_JPRUNE_COUNT 4u      /* an array only counted: each element becomes null */
#define KUBE_JPRUNE_EACH 8u       /* a list page's items: kube_jprune_jv hands them over one by one */

/* The schema of watch events and list pages of one kind (their objects, and Status errors). */
const struct kube_jprune_node *kube_jprune_schema(enum obj_kind kind);

/* The schemas of list pages of any kind printed whole (kubectl's -o json, yaml, name): items false, the envelope
 * alone (metadata's continue and resourceVersion; the items skipped); items true, the items kept whole (every
 * member, empty ones too), for kube_jprune_jv's each: a page then costs its text and one item, not a tree. */
const struct kube_jprune_node *kube_jprune_list_schema(bool items);
/* The same items with nothing but metadata.name kept (-o name: a page costs its text and a name at a time). */
const struct kube_jprune_node *kube_jprune_names_schema(void);

/* The same pruning, building the kept members as a tree in arena a (kube/jv.h) in the same pass: the tree json-c
 * would parse from kube_jprune_prefix's text, without the text, the tokener or an allocation per value. Returns
 * the bytes up to the value's end and sets *out (NULL when the value is null); -2 when the input ends first; -1
 * when it is not well-formed or holds something only json-c should read (an unknown escape, an unpaired
 * surrogate, a number that is not a plain int64, a lenient literal, a free-form map of more than 512 keys): then
 * parse the original with json-c. Whatever it built stays in a until a is reset.
 * each (may be NULL): takes each element of a list page's items as soon as it is built, instead of the tree (which
 * keeps an empty items array); the element's memory is reused once each returns, so a page costs the memory of
 * one item. When it fails, some elements may have been handed over already. */
struct jv;
struct jv_arena;
typedef void (*kube_jprune_jv_cb)(void *arg, struct jv *element);
ssize_t kube_jprune_jv(const struct kube_jprune_node *schema, const char *in, size_t len, struct jv_arena *a,
		       struct jv **out, kube_jprune_jv_cb each, void *arg);

/* Finds where a JSON object or array starting at in[0] ends: scans with state kept in *st across calls (zero it
 * for a new value). Returns the number of bytes consumed up to and including the closing bracket, 0 when the
 * value continues past len, -1 when the bytes cannot be JSON. */
struct kube_jscan {
	int depth;
	bool in_string, escape;
};
ssize_t kube_jscan(struct kube_jscan *st, const char *in, size_t len);

/* ---- test seams: exported for tests/ only, not to be called by kvcon itself (tests/check-exports.sh) ---- */
/* Copies the JSON value at in[0..len) to out (room for len bytes), pruned by key name. Returns the bytes written,
 * or -1 when the input is not a single well-formed value (then parse the original: json-c reports the error). */
ssize_t kube_jprune(const char *in, size_t len, char *out);
/* Whether key (len bytes, as it appears between the quotes) is kept: 0 drop, 1 keep and prune inside, 2 keep
 * whole. */
int kube_jprune_class(const char *key, size_t len);
/* Whether the member at path ("object/status/phase": object keys only, array levels transparent) is kept. */
bool kube_jprune_keeps(const struct kube_jprune_node *schema, const char *path);
/* The keys kept for the decoder (kube/decode.c) and the list/watch envelopes; NULL-terminated. */
extern const char *const kube_jprune_keys[];
/* Prunes the JSON value that starts at in[0] (after optional whitespace) by schema (NULL: by key name). out has
 * room for len bytes. Returns the bytes written and sets *consumed to the bytes up to the value's end; -2 when the
 * input ends before the value does (feed more and scan again); -1 when it is not well-formed JSON. */
ssize_t kube_jprune_prefix(const struct kube_jprune_node *schema, const char *in, size_t len, char *out,
			   size_t *consumed);
/* kube_jprune_jv's tree as a json-c tree (json_object_put it), and its elements handed to each as json-c trees
 * each owns: the form tests/fuzz/fuzz_jprune.c holds to json-c's parse of the pruned text. */
struct json_object;
ssize_t kube_jprune_tree(const struct kube_jprune_node *schema, const char *in, size_t len, struct json_object **out);
typedef void (*kube_jprune_each_cb)(void *arg, struct json_object *element);
ssize_t kube_jprune_tree_each(const struct kube_jprune_node *schema, const char *in, size_t len,
			      struct json_object **out, kube_jprune_each_cb each, void *arg);

#endif
