/* The engine service's pure request parsing: Kubernetes label and field selectors, continue tokens, and the
 * DNS-1123 checks on names in URL paths. No I/O, no engine state (unit-tested and fuzzed). */
#ifndef KVCON_ENGINE_APISEL_H
#define KVCON_ENGINE_APISEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum apisel_op { SEL_EQ, SEL_NE, SEL_IN, SEL_NOTIN, SEL_EXISTS, SEL_NOT_EXISTS };

struct apisel_req {
	enum apisel_op op;
	char *key;
	char **values; /* IN/NOTIN: one or more; EQ/NE: exactly one */
	size_t nvalues;
};

struct apisel {
	struct apisel_req *reqs;
	size_t n;
};

/* Parses a labelSelector ("a=b,c!=d,e in (x,y),f notin (z),g,!h"); fields: a fieldSelector (=, ==, != only).
 * An empty or NULL string selects everything. NULL with *err (caller frees) when malformed. */
struct apisel *apisel_parse(const char *s, bool fields, char **err);
void apisel_free(struct apisel *s);
/* Whether an object matches: get(arg, key) returns the label (or field) value, NULL when absent. */
bool apisel_match(const struct apisel *s, const char *(*get)(void *arg, const char *key), void *arg);

/* A LabelSelector object {matchLabels, matchExpressions} as Kubernetes' LabelSelectorAsSelector reads it:
 * matchLabels as key=value, matchExpressions' operators In, NotIn, Exists and DoesNotExist (the API server's
 * checks on keys, values and operators). NULL or {} selects everything. NULL with *err (caller frees: the field
 * under the selector and why) when malformed. */
struct json_object;
struct apisel *apisel_from_json(struct json_object *sel, char **err);
/* s as Kubernetes prints a selector (a ReplicaSet's status.labelSelector, what `-l` takes): requirements sorted by
 * key, values sorted, e.g. "app=web,canary,!old,tier in (a,b)" (caller frees). */
char *apisel_format(const struct apisel *s);

/* A continue token for a list sorted by key: resume after last at resourceVersion rv (caller frees). */
char *apisel_continue_encode(uint64_t rv, const char *last);
/* 0 with *rv and *last (caller frees), or -1 when the token is malformed. */
int apisel_continue_decode(const char *tok, uint64_t *rv, char **last);

/* A resourceVersion parameter: "" or NULL is 0 (any); -1 when not a decimal number. */
int apisel_rv_parse(const char *s, uint64_t *rv);

/* The kind and metadata.name of a Kubernetes protobuf object (the "k8s\0" envelope kubectl's typed clients send,
 * e.g. `kubectl create namespace`): 0 with *kind and *name (caller frees), or -1 when malformed. Nothing else of
 * the object is read. */
int apisel_pb_kind_name(const void *data, size_t len, char **kind, char **name);

/* RFC 7386 JSON merge patch: target (consumed; NULL allowed) patched by patch (borrowed); returns the result (a new
 * reference). A null member deletes; objects merge member by member; anything else replaces. */
struct json_object;
struct json_object *apisel_merge_patch(struct json_object *target, struct json_object *patch);

/* RFC 6902 JSON patch: target (consumed) patched by ops (borrowed: an array of add, remove, replace and test
 * operations; move and copy are refused); the result (a new reference), or NULL with *err (caller frees) when an
 * operation fails (a test that does not hold, a path that does not exist). What kubectl patch --type=json and
 * virtctl's credentials send. */
struct json_object *apisel_json_patch(struct json_object *target, struct json_object *ops, char **err);

/* A Secret or a ConfigMap in Kubernetes' protobuf ("k8s\0" envelope, as kubectl's typed clients send
 * `kubectl create secret` and `kubectl create configmap`) as its JSON object: apiVersion, kind, metadata (name,
 * generateName, namespace, labels, annotations), data (base64 for a Secret's, as JSON has it), stringData or
 * binaryData, type, immutable. NULL when malformed or of another kind. */
struct json_object *apisel_pb_object(const void *data, size_t len);

#endif
