/* Document tree for manifests: a document loaded with libyaml's document API (or a json-c object) folded into
 * struct ynode. */
#include "engine/ytree.h"

#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "core/hmap.h"
#include "core/xmalloc.h"

#define YTREE_MAX_DEPTH 64
#define YTREE_MAX_NODES 200000

static struct ynode *node_new(enum ynode_type t, int line)
{
	struct ynode *n = xcalloc(1, sizeof *n);
	n->type = t;
	n->line = line;
	return n;
}

void ytree_free(struct ynode *n)
{
	if (n == NULL)
		return;
	for (size_t i = 0; i < n->n; i++) {
		ytree_free(n->kids[i]);
		if (n->keys)
			free(n->keys[i]);
	}
	free(n->kids);
	free(n->keys);
	free(n->str);
	free(n);
}

/* Arrays grow by doubling (their capacity is the power of two at or above n): a map of 80,000 labels must not
 * cost 80,000 reallocations. */
static void node_add(struct ynode *parent, char *key, struct ynode *kid)
{
	size_t n = parent->n;
	if ((n & (n - 1)) == 0) {
		size_t cap = n ? n * 2 : 1;
		parent->kids = xreallocarray(parent->kids, cap, sizeof *parent->kids);
		if (parent->type == YNODE_MAP)
			parent->keys = xreallocarray(parent->keys, cap, sizeof *parent->keys);
	}
	if (parent->type == YNODE_MAP)
		parent->keys[n] = key;
	parent->kids[parent->n++] = kid;
}

struct ynode *ytree_get(const struct ynode *map, const char *key)
{
	if (map == NULL || map->type != YNODE_MAP)
		return NULL;
	for (size_t i = 0; i < map->n; i++)
		if (strcmp(map->keys[i], key) == 0)
			return map->kids[i];
	return NULL;
}

bool ytree_is_null(const struct ynode *n)
{
	if (n == NULL)
		return true;
	if (n->type != YNODE_SCALAR || n->quoted)
		return false;
	return n->str[0] == '\0' || strcmp(n->str, "~") == 0 || strcmp(n->str, "null") == 0 ||
	       strcmp(n->str, "Null") == 0 || strcmp(n->str, "NULL") == 0;
}

/* ---- YAML: libyaml's document API (as kubeconfig reads YAML), folded into ynodes ---- */

struct yload {
	yaml_document_t *doc;
	unsigned char *seen; /* by node id: an alias makes a second reference to a node */
	char *err;
};

static int node_line(const yaml_node_t *n)
{
	return (int)n->start_mark.line + 1;
}

static struct ynode *fold(struct yload *y, int id, int depth);

static struct ynode *fold_map(struct yload *y, yaml_node_t *yn, int depth)
{
	struct ynode *n = node_new(YNODE_MAP, node_line(yn));
	struct hmap seen; /* the map's keys once it has more than a few: duplicate detection stays linear */
	hmap_init(&seen);
	for (yaml_node_pair_t *p = yn->data.mapping.pairs.start; p < yn->data.mapping.pairs.top; p++) {
		yaml_node_t *kn = yaml_document_get_node(y->doc, p->key);
		if (kn == NULL || kn->type != YAML_SCALAR_NODE) {
			y->err = xasprintf("line %d: only scalar map keys are supported", kn ? node_line(kn) : n->line);
			goto fail;
		}
		char *key = xstrndup((const char *)kn->data.scalar.value, kn->data.scalar.length);
		bool dup = false;
		if (n->n < 8) {
			for (size_t i = 0; i < n->n && !dup; i++)
				dup = strcmp(n->keys[i], key) == 0;
		} else {
			if (seen.count == 0)
				for (size_t i = 0; i < n->n; i++)
					hmap_put(&seen, n->keys[i], n);
			dup = hmap_get(&seen, key) != NULL;
		}
		if (dup) {
			y->err = xasprintf("line %d: duplicate key \"%s\"", n->line, key);
			free(key);
			goto fail;
		}
		if (seen.count > 0)
			hmap_put(&seen, key, n);
		struct ynode *kid = fold(y, p->value, depth + 1);
		if (kid == NULL) {
			free(key);
			goto fail;
		}
		node_add(n, key, kid);
	}
	hmap_free(&seen);
	return n;
fail:
	hmap_free(&seen);
	ytree_free(n);
	return NULL;
}

static struct ynode *fold(struct yload *y, int id, int depth)
{
	yaml_node_t *yn = yaml_document_get_node(y->doc, id);
	if (yn == NULL) {
		y->err = xstrdup("malformed YAML document");
		return NULL;
	}
	int line = node_line(yn);
	if (depth > YTREE_MAX_DEPTH) {
		y->err = xasprintf("line %d: document too deep or too large", line);
		return NULL;
	}
	if (y->seen[id - 1]) { /* no alias bombs, and one owner a node */
		y->err = xasprintf("line %d: YAML anchors and aliases are not supported", line);
		return NULL;
	}
	y->seen[id - 1] = 1;
	switch (yn->type) {
	case YAML_SCALAR_NODE: {
		struct ynode *n = node_new(YNODE_SCALAR, line);
		n->str = xstrndup((const char *)yn->data.scalar.value, yn->data.scalar.length);
		n->quoted = yn->data.scalar.style != YAML_PLAIN_SCALAR_STYLE;
		return n;
	}
	case YAML_MAPPING_NODE:
		return fold_map(y, yn, depth);
	case YAML_SEQUENCE_NODE: {
		struct ynode *n = node_new(YNODE_SEQ, line);
		for (yaml_node_item_t *it = yn->data.sequence.items.start; it < yn->data.sequence.items.top; it++) {
			struct ynode *kid = fold(y, *it, depth + 1);
			if (kid == NULL) {
				ytree_free(n);
				return NULL;
			}
			node_add(n, NULL, kid);
		}
		return n;
	}
	default:
		y->err = xasprintf("line %d: unexpected YAML node", line);
		return NULL;
	}
}

static struct ynode *parse_yaml(const char *text, size_t len, char **err)
{
	yaml_parser_t p;
	struct ynode *root = NULL;
	char *e = NULL;
	int docs = 0;
	yaml_parser_initialize(&p);
	yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
	while (e == NULL) {
		yaml_document_t doc;
		if (!yaml_parser_load(&p, &doc)) {
			e = xasprintf("YAML error at line %zu: %s", p.problem_mark.line + 1,
				      p.problem ? p.problem : "malformed");
			break;
		}
		yaml_node_t *top = yaml_document_get_root_node(&doc);
		if (top == NULL) { /* the end of the stream */
			yaml_document_delete(&doc);
			break;
		}
		size_t count = (size_t)(doc.nodes.top - doc.nodes.start);
		struct ynode *n = NULL;
		if (count > YTREE_MAX_NODES) {
			e = xasprintf("line %d: document too deep or too large", node_line(top));
		} else {
			struct yload y = { .doc = &doc, .seen = xcalloc(count, 1) };
			n = fold(&y, 1, 0); /* the root is node 1 */
			e = y.err;
			free(y.seen);
		}
		yaml_document_delete(&doc);
		if (n == NULL)
			break;
		if (ytree_is_null(n)) { /* an empty document between separators */
			ytree_free(n);
			continue;
		}
		if (++docs > 1) {
			e = xasprintf("line %d: more than one document (apply one manifest per file)", n->line);
			ytree_free(n);
			break;
		}
		root = n;
	}
	yaml_parser_delete(&p);
	if (e) {
		ytree_free(root);
		*err = e;
		return NULL;
	}
	if (root == NULL)
		*err = xstrdup("empty document");
	return root;
}

/* ---- JSON ---- */

static struct ynode *from_json(json_object *j, int depth)
{
	if (depth > YTREE_MAX_DEPTH)
		return NULL;
	struct ynode *n;
	switch (json_object_get_type(j)) {
	case json_type_object: {
		n = node_new(YNODE_MAP, 0);
		json_object_object_foreach(j, k, v)
		{
			struct ynode *kid = from_json(v, depth + 1);
			if (kid == NULL) {
				ytree_free(n);
				return NULL;
			}
			node_add(n, xstrdup(k), kid);
		}
		return n;
	}
	case json_type_array: {
		n = node_new(YNODE_SEQ, 0);
		size_t len = json_object_array_length(j);
		for (size_t i = 0; i < len; i++) {
			struct ynode *kid = from_json(json_object_array_get_idx(j, i), depth + 1);
			if (kid == NULL) {
				ytree_free(n);
				return NULL;
			}
			node_add(n, NULL, kid);
		}
		return n;
	}
	case json_type_string:
		n = node_new(YNODE_SCALAR, 0);
		n->str = xstrndup(json_object_get_string(j), (size_t)json_object_get_string_len(j));
		n->quoted = true;
		return n;
	case json_type_null:
		n = node_new(YNODE_SCALAR, 0);
		n->str = xstrdup("null");
		return n;
	default:
		n = node_new(YNODE_SCALAR, 0);
		n->str = xstrdup(json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN));
		return n;
	}
}

static struct ynode *parse_json(const char *text, size_t len, char **err)
{
	json_tokener *tok = json_tokener_new_ex(YTREE_MAX_DEPTH);
	json_object *j = json_tokener_parse_ex(tok, text, (int)len);
	enum json_tokener_error jerr = json_tokener_get_error(tok);
	size_t off = json_tokener_get_parse_end(tok);
	struct ynode *root = NULL;
	if (j == NULL || jerr != json_tokener_success) {
		*err = xasprintf("JSON error at byte %zu: %s", off, json_tokener_error_desc(jerr));
		goto out;
	}
	for (size_t i = off; i < len; i++)
		if (text[i] != ' ' && text[i] != '\n' && text[i] != '\r' && text[i] != '\t') {
			*err = xasprintf("JSON error at byte %zu: trailing data", i);
			goto out;
		}
	root = from_json(j, 0);
	if (root == NULL)
		*err = xstrdup("JSON document too deep");
out:
	json_object_put(j);
	json_tokener_free(tok);
	return root;
}

struct ynode *ytree_parse(const char *text, size_t len, char **err)
{
	*err = NULL;
	if (len > (size_t)16 << 20) {
		*err = xstrdup("manifest larger than 16 MiB");
		return NULL;
	}
	if (memchr(text, '\0', len)) {
		*err = xstrdup("manifest contains a NUL byte");
		return NULL;
	}
	size_t i = 0;
	while (i < len && (text[i] == ' ' || text[i] == '\n' || text[i] == '\r' || text[i] == '\t'))
		i++;
	if (i < len && (text[i] == '{' || text[i] == '['))
		return parse_json(text, len, err);
	return parse_yaml(text, len, err);
}
