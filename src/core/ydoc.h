/* YAML documents as libyaml's document API holds them (yaml_document_t, nodes by id): the one tree kvcon reads
 * YAML into, for kubeconfigs (kube/kubeconfig.c) and manifests (engine/manifest.c). ydoc_load reads one
 * manifest-like document, YAML or JSON (json-c, folded into the same kind of document), with limits; the
 * accessors are NULL-tolerant so a lookup chain needs no checks between its steps. */
#ifndef KVCON_CORE_YDOC_H
#define KVCON_CORE_YDOC_H

#include <stdbool.h>
#include <stddef.h>
#include <yaml.h>

/* Parses text (YAML, or JSON when it starts with '{' or '['): exactly one non-empty document, at most 16 MiB,
 * 64 levels and 200,000 nodes, scalar map keys without duplicates, no anchors/aliases (no alias bombs). 0, or
 * -1 with *err (caller frees) naming the line; on success the caller owns *doc (yaml_document_delete). */
int ydoc_load(yaml_document_t *doc, const char *text, size_t len, char **err);
/* Every document of a multi-document stream (`---` separators; empty documents skipped), each checked as
 * ydoc_load checks one, at most YDOC_MAX_DOCS; JSON is one document. 0 with *docs (*n of them, possibly none; the
 * caller frees with ydoc_free_all), or -1 with *err (caller frees) and nothing kept: a syntax error anywhere
 * fails the whole stream, as kubectl reads a file before applying it. */
#define YDOC_MAX_DOCS 10000
int ydoc_load_all(yaml_document_t **docs, size_t *n, const char *text, size_t len, char **err);
void ydoc_free_all(yaml_document_t *docs, size_t n);

/* The value of key in map; NULL when map is NULL or not a mapping, or key is absent. */
yaml_node_t *ydoc_get(yaml_document_t *d, const yaml_node_t *map, const char *key);
/* A scalar's text, NULL for anything else. */
const char *ydoc_str(const yaml_node_t *n);
/* Entries of a mapping or sequence (0 for a scalar or NULL), and the i-th one's value / key text. */
size_t ydoc_len(const yaml_node_t *n);
yaml_node_t *ydoc_at(yaml_document_t *d, const yaml_node_t *n, size_t i);
const char *ydoc_key(yaml_document_t *d, const yaml_node_t *map, size_t i);
/* A scalar written with quotes (a string, never a number/bool/null). */
bool ydoc_quoted(const yaml_node_t *n);
/* NULL, or a plain scalar that is YAML null ("", "~", "null", "Null", "NULL"). */
bool ydoc_is_null(const yaml_node_t *n);
/* n as JSON: quoted scalars are strings, plain ones typed as YAML 1.2's core schema does (null, booleans,
 * integers, floats); NULL for YAML null. The caller owns the result (json_object_put). */
struct json_object *ydoc_json(yaml_document_t *d, const yaml_node_t *n);

#endif
