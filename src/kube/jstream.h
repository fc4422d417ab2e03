/* A splitter for streams of concatenated JSON objects/arrays (a watch response: one event object per line), fed
 * in arbitrary chunks. Each value becomes a tree in the stream's arena (kube/jv.h): built by the pruner in the pass
 * that finds the value's end, with only the members the decoder reads (kube/jprune.h), or, unpruned or where the
 * pruner refuses the bytes, parsed whole by json-c's tokener and copied. */
#ifndef KVCON_KUBE_JSTREAM_H
#define KVCON_KUBE_JSTREAM_H

#include <stdbool.h>
#include <stddef.h>

#include "kube/jprune.h"

struct json_object;
struct jv;
struct kube_jstream;

/* Called for each complete top-level value, which lives in the stream's arena until the callback returns.
 * Return false to stop. */
typedef bool (*kube_jstream_cb)(void *arg, struct jv *value);

/* max_value: refuse a single value larger than this many bytes (a hostile or broken stream). */
struct kube_jstream *kube_jstream_new(size_t max_value);
void kube_jstream_free(struct kube_jstream *s);
/* Prunes each value before parsing (off by default), by a schema (kube/jprune.h; NULL: by key name). */
struct kube_jprune_node;
void kube_jstream_set_schema(struct kube_jstream *s, const struct kube_jprune_node *schema);
/* Parses one complete value, pruned when asked (else, or where the pruner refuses the bytes, by json-c's tokener,
 * copied): a tree in the stream's arena until its next value, or NULL with *err. */
struct jv *kube_jstream_parse(struct kube_jstream *s, const char *data, size_t len, bool prune, char **err);
/* Parses one complete value pruned, handing each element of a list page's items to each as it is built
 * (kube_jprune_jv). When the pruner refuses the value, json-c parses it whole and the items stay in the tree (some
 * may have been handed over already: applying them again must be harmless). */
struct jv *kube_jstream_parse_each(struct kube_jstream *s, const char *data, size_t len, kube_jprune_jv_cb each,
				   void *arg, char **err);
/* Forgets a partial value (a new stream starts). */
void kube_jstream_reset(struct kube_jstream *s);
/* Feeds bytes. Returns 0 when all were consumed, 1 when cb asked to stop, -1 on malformed or oversized input
 * with *err (caller frees). */
int kube_jstream_feed(struct kube_jstream *s, const char *data, size_t len, kube_jstream_cb cb, void *arg,
		      char **err);
/* The last kube_jstream_feed failed because a value was larger than max_value. */
bool kube_jstream_too_big(const struct kube_jstream *s);
/* True while a value is incomplete (a stream ending now was cut mid-value). */
bool kube_jstream_partial(const struct kube_jstream *s);

#endif
