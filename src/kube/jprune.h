/* Pruning of Kubernetes JSON before it is parsed: one pass over the bytes keeps only the object members whose
 * key the decoder reads (at any depth; maps with free-form keys such as labels are kept whole) and drops the
 * rest (spec.domain.devices, annotations, managedFields, ...), so json-c builds a tree of half the size or less.
 * A scanner for JSON's lexical structure only (strings, escapes, nesting); json-c still parses what is kept. */
#ifndef KVCON_KUBE_JPRUNE_H
#define KVCON_KUBE_JPRUNE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* The keys kept for the decoder (kube/decode.c) and the list/watch envelopes; NULL-terminated. */
extern const char *const kube_jprune_keys[];
/* Keys whose value is kept whole (maps with free-form keys). */
extern const char *const kube_jprune_whole[];

/* Whether key (len bytes, as it appears between the quotes) is kept: 0 drop, 1 keep and prune inside, 2 keep
 * whole. */
int kube_jprune_class(const char *key, size_t len);

/* Copies the JSON value at in[0..len) to out (room for len bytes), pruned. Returns the bytes written, or -1 when
 * the input is not a single well-formed value (then parse the original: json-c reports the error). */
ssize_t kube_jprune(const char *in, size_t len, char *out);

/* Finds where a JSON object or array starting at in[0] ends: scans with state kept in *st across calls (zero it
 * for a new value). Returns the number of bytes consumed up to and including the closing bracket, 0 when the
 * value continues past len, -1 when the bytes cannot be JSON. */
struct kube_jscan {
	int depth;
	bool in_string, escape;
};
ssize_t kube_jscan(struct kube_jscan *st, const char *in, size_t len);

#endif
