/* A small document tree (maps, sequences, scalars) read from one YAML document with libyaml, or from JSON with
 * json-c, so the engine validates manifests against one shape whatever their syntax. Every node remembers its
 * line (1-based) for error messages. YAML is loaded with libyaml's document API, as kube/kubeconfig.c loads it;
 * aliases are refused (no alias bombs). */
#ifndef KVCON_ENGINE_YTREE_H
#define KVCON_ENGINE_YTREE_H

#include <stdbool.h>
#include <stddef.h>

enum ynode_type { YNODE_SCALAR, YNODE_MAP, YNODE_SEQ };

struct ynode {
	enum ynode_type type;
	char *str;            /* scalar text (owned) */
	bool quoted;          /* scalar was quoted (a string, never a number/bool/null) */
	char **keys;          /* map keys (owned), parallel to kids */
	struct ynode **kids;  /* map values or sequence items */
	size_t n;
	int line;
};

/* Parses text (YAML, or JSON when it starts with '{' or '['). Returns the root, or NULL with *err (caller
 * frees) naming the line. Exactly one document is accepted. */
struct ynode *ytree_parse(const char *text, size_t len, char **err);
void ytree_free(struct ynode *n);

/* Map lookup; NULL when absent or when map is not a map. */
struct ynode *ytree_get(const struct ynode *map, const char *key);
/* A scalar that is YAML null ("", "~", "null" unquoted). */
bool ytree_is_null(const struct ynode *n);

#endif
