/* kapply: `kubectl apply -f` and `kubectl delete -f` of one object on an API server (a cluster, or the engine
 * service, which is one), as kubectl does by default: client-side apply with the last-applied annotation
 * (kubectl.kubernetes.io/last-applied-configuration): GET; absent: POST with the annotation ("created");
 * present: the three-way JSON merge patch of the last applied, the new and the current object, not sent when
 * empty ("unchanged"), else PATCH ("configured"). --dry-run=server sends the writes with dryRun=All; client sends
 * none. The lines are kubectl's (`virtualmachine.kubevirt.io/NAME created (server dry run)`), and so are the
 * errors (`Error from server (NotFound): error when creating "FILE": namespaces "x" not found`). */
#ifndef KVCON_KUBE_KAPPLY_H
#define KVCON_KUBE_KAPPLY_H

#include <stdbool.h>

struct json_object;
struct kube_http;

enum kapply_dry { KAPPLY_DRY_NONE, KAPPLY_DRY_CLIENT, KAPPLY_DRY_SERVER };

struct kapply_opts {
	enum kapply_dry dry;
	const char *ns;     /* the namespace of documents that name none (-n, else the context's) */
	const char *source; /* the file's name for messages ("-": STDIN) */
	bool ignore_not_found; /* delete: an absent object is no error */
	long timeout_ms;
};

/* Applies obj (borrowed; not changed). 0 with *line (caller frees: "KIND.GROUP/NAME created"), or -1 with *err
 * (caller frees, kubectl's words, without "error: "). */
int kapply_apply(struct kube_http *h, struct json_object *obj, const struct kapply_opts *o, char **line,
		 char **err);
/* Deletes the object obj names (kind, apiVersion, metadata.name and namespace). 0 with *line (kubectl's
 * `KIND.GROUP "NAME" deleted`, NULL when ignore_not_found met an absent one), or -1 with *err. */
int kapply_delete(struct kube_http *h, struct json_object *obj, const struct kapply_opts *o, char **line,
		  char **err);

/* kubectl create of obj: POST only ("namespace/NAME created"; AlreadyExists is an error). As kapply_apply. */
int kapply_create(struct kube_http *h, struct json_object *obj, const struct kapply_opts *o, char **line,
		  char **err);
/* The object's API path (ns: the namespace of a document that names none); NULL for an unknown kind. Caller frees. */
char *kapply_path(struct json_object *obj, const char *ns);

/* The pure parts, for tests. */

/* ---- test seams: exported for tests/ only, not to be called by kvcon itself (tests/check-exports.sh) ---- */
/* Go's json.Marshal of obj (keys sorted, <>& escaped as \u003c...): the last-applied annotation's text, with
 * json.Encoder's newline. Caller frees. */
char *kapply_marshal(struct json_object *obj);
/* kubectl's CreateThreeWayJSONMergePatch: the deletions from original (may be NULL) to modified, and the additions
 * and changes from current to modified. A new object (caller puts); an empty object: nothing to send. */
struct json_object *kapply_patch3(struct json_object *original, struct json_object *modified,
				  struct json_object *current);

#endif
