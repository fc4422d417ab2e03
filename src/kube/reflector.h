/* A reflector keeps the store in step with one resource of one source in one namespace scope: paginated list
 * (limit=500 + continue, each page's items decoded one by one as they stream in, within the limits of
 * kube_limits(): past one the list ends with WATCH_ERROR and is not fetched again), then a watch from the list's resourceVersion with
 * bookmarks; 410 Expired relists with mark and sweep; dropped streams and 5xx reconnect with jittered
 * exponential backoff; 429 waits Retry-After; 403 on a cluster-wide list falls back to a namespace.
 * Its progress is published in src->health[kind]. */
#ifndef KVCON_KUBE_REFLECTOR_H
#define KVCON_KUBE_REFLECTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kube/http.h"
#include "model/obj.h"
#include "model/source.h"
#include "model/store.h"

struct kube_reflector;
struct json_object;

struct kube_reflector_cfg {
	struct kube_http *http;
	struct store *st;
	struct source *src;
	enum obj_kind kind;
	const char *ns;             /* NULL: every namespace */
	const char *fallback_ns;    /* namespace to fall back to on 403 for a cluster-wide list (NULL: none) */
	const char *selector;       /* extra label selector (-l), ANDed with the resource's own */
	int max_failures;           /* before the first complete list: give up (WATCH_ERROR) after this many
				     * consecutive failures (5x as many once the server has answered with an HTTP
				     * status: 429 and 5xx are transient); 0 retries forever */
	int page_limit;             /* list page size; 0: 500 */
	bool identity_only;         /* store each object's identity alone (obj_pack_identity) */
	unsigned watch_batch_ms;    /* the watch's kube_http_req.batch_ms */
};

struct kube_reflector *kube_reflector_new(const struct kube_reflector_cfg *cfg);
void kube_reflector_free(struct kube_reflector *r);
/* Starts listing (on the loop). */
void kube_reflector_start(struct kube_reflector *r);

/* The first complete list has been applied. */
bool kube_reflector_synced(const struct kube_reflector *r);
/* Counters (tests, benchmarks). */
struct kube_reflector_stats {
	uint64_t events;   /* watch events applied */
	uint64_t lists;    /* complete lists */
	uint64_t relists;  /* relists after 410 */
	uint64_t watches;  /* watch requests started */
	uint64_t skipped;  /* objects the decoder refused */
	uint64_t failures; /* failed requests */
};

/* ---- test seams: exported for tests/ only, not to be called by kvcon itself (tests/check-exports.sh) ---- */
/* Applies one watch event ({"type":..., "object":...}) to the store as the watch would. Returns 0, 1 when the
 * event asks for a relist (410), -1 when it is unusable (logged). Exposed for replay benchmarks and tests. */
int kube_reflector_apply(struct kube_reflector *r, struct json_object *event);
/* Applies one list response body ({"metadata":..., "items": [...]}) as a page of the list would (benchmarks,
 * tests). Returns 0, or -1 when it is not a list (logged). */
int kube_reflector_apply_list(struct kube_reflector *r, const char *body, size_t len);
/* The same as a streamed list response arriving in chunks of chunk bytes, decoded every batch bytes (0: as the
 * list path does). Returns 0, or -1 with *err (caller frees). Tests and fuzzing. */
int kube_reflector_apply_list_chunked(struct kube_reflector *r, const char *body, size_t len, size_t chunk,
				      size_t batch, char **err);
/* Feeds raw watch-stream bytes through the line parser into kube_reflector_apply (benchmarks, fuzzing).
 * Returns 0, or -1 on a malformed stream. */
int kube_reflector_feed(struct kube_reflector *r, const char *data, size_t len);
const struct kube_reflector_stats *kube_reflector_stats(const struct kube_reflector *r);

#endif
