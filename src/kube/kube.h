/* The Kubernetes provider: opens a kubeconfig context as a source, checks that KubeVirt is served, starts its
 * reflectors on the loop, and carries out actions and raw fetches through the API (struct provider_ops). */
#ifndef KVCON_KUBE_KUBE_H
#define KVCON_KUBE_KUBE_H

#include <stddef.h>

#include "model/source.h"
#include "model/store.h"

struct kube_http;

#define KUBE_KIND_BIT(k) (1u << (k))
#define KUBE_KINDS_ALL ((1u << OBJ_KIND_COUNT) - 1)

struct kube_open_opts {
	unsigned kinds;       /* KUBE_KIND_BIT mask of reflectors to run; 0: all */
	const char *selector; /* label selector ANDed into the reflectors of selector_kinds (-l) */
	unsigned selector_kinds; /* KUBE_KIND_BIT mask; 0: every kind */
	int max_failures;     /* give up a kind (WATCH_ERROR) after this many consecutive transport failures before
			       * its first complete list (5x as many when the server answers 429/5xx); 0: keep
			       * retrying (the dashboard) */
	int page_limit;       /* list page size; 0: 500 */
	const char *unix_socket; /* set: the engine service on this socket (kube_config_unix) instead of a kubeconfig */
	const char *name;     /* with unix_socket: the source's name */
	bool all_namespaces;  /* watch every namespace whatever -n/-A say (the engine service's objects) */
	bool live_notice;     /* with unix_socket: the nodes' notices read again every 10 s (the dashboard's header) */
	/* The namespace scope instead of -n/-A (the caller's, passed down: the global options are not rewritten):
	 * ns_set: ns (NULL: the context's) in place of -n; one_ns: never every namespace (-A ignored). */
	bool ns_set;
	const char *ns;
	bool one_ns;
	bool identity_only; /* the store keeps each object's identity alone (obj_pack_identity): get -o name */
	bool no_version;    /* KubeVirt's version (the dashboard's header) is not asked for: no second connection
			     * beside the first list's */
	unsigned watch_batch_ms; /* the watches' events may wait this long to be read, many at once
				  * (kube_http_req.batch_ms): the dashboard, which draws at a frame rate */
};

/* Loads the kubeconfig per opts_global() (--kubeconfig, -n, -A; o's namespace scope when set), creates the source
 * for context (NULL: the current one) and starts discovery + reflectors on the loop. NULL with *err (caller frees)
 * when the kubeconfig is unusable. Network failures arrive later through src->health. */
struct source *kube_open_ex(struct store *st, const char *context, const struct kube_open_opts *o, char **err);
/* Context names of the merged kubeconfig (NULL-terminated; free with kube_context_names_free). */
char **kube_context_names(size_t *n);
void kube_context_names_free(char **names);

/* The HTTP client of a kube source (the console's WebSocket reuses its settings, see kube/http.h). */
struct kube_http *kube_source_http(struct source *src);
/* True once every started reflector has applied its first complete list. */
bool kube_source_synced(struct source *src);

/* API paths (caller frees): the object's own path, and a subresource path. */
char *kube_object_path(enum obj_kind kind, const char *ns, const char *name);

/* The engine service's notices on socket sock: each Node's kvcon.io/notice (KVM unusable and guests under TCG,
 * TCG forced, unreadable records), the text alone for one node, "NODE: text; ..." for several; NULL when there is
 * none. Blocking (a local socket, 3 s at most). Caller frees. A source opened with live_notice reads them again
 * every 10 s, without blocking. */
char *kube_engine_notice(const char *sock);

#endif
