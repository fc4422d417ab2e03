/* One YAML tree: libyaml's documents (see ydoc.h). */
#include "core/ydoc.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

#include "core/hmap.h"
#include "core/xmalloc.h"

#define YDOC_MAX_DEPTH 64
#define YDOC_MAX_NODES 200000

const char *ydoc_str(const yaml_node_t *n)
{
	return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

size_t ydoc_len(const yaml_node_t *n)
{
	if (n == NULL)
		return 0;
	if (n->type == YAML_MAPPING_NODE)
		return (size_t)(n->data.mapping.pairs.top - n->data.mapping.pairs.start);
	if (n->type == YAML_SEQUENCE_NODE)
		return (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
	return 0;
}

yaml_node_t *ydoc_at(yaml_document_t *d, const yaml_node_t *n, size_t i)
{
	if (i >= ydoc_len(n))
		return NULL;
	if (n->type == YAML_MAPPING_NODE)
		return yaml_document_get_node(d, n->data.mapping.pairs.start[i].value);
	return yaml_document_get_node(d, n->data.sequence.items.start[i]);
}

const char *ydoc_key(yaml_document_t *d, const yaml_node_t *map, size_t i)
{
	if (map == NULL || map->type != YAML_MAPPING_NODE || i >= ydoc_len(map))
		return NULL;
	return ydoc_str(yaml_document_get_node(d, map->data.mapping.pairs.start[i].key));
}

yaml_node_t *ydoc_get(yaml_document_t *d, const yaml_node_t *map, const char *key)
{
	if (map == NULL || map->type != YAML_MAPPING_NODE)
		return NULL;
	for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
		const char *k = ydoc_str(yaml_document_get_node(d, p->key));
		if (k && strcmp(k, key) == 0)
			return yaml_document_get_node(d, p->value);
	}
	return NULL;
}

bool ydoc_quoted(const yaml_node_t *n)
{
	return n && n->type == YAML_SCALAR_NODE && n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE;
}

bool ydoc_is_null(const yaml_node_t *n)
{
	if (n == NULL)
		return true;
	if (n->type != YAML_SCALAR_NODE || ydoc_quoted(n))
		return false;
	const char *s = ydoc_str(n);
	return s[0] == '\0' || strcmp(s, "~") == 0 || strcmp(s, "null") == 0 || strcmp(s, "Null") == 0 ||
	       strcmp(s, "NULL") == 0;
}

/* 1-based line of the node in its text (1 for JSON). */
static int ydoc_line(const yaml_node_t *n)
{
	return n ? (int)n->start_mark.line + 1 : 0;
}

/* ---- checks a loaded document passes: shape, size, keys ---- */

struct check {
	yaml_document_t *d;
	unsigned char *seen; /* by node id: an alias is a second reference to a node */
	char *err;
};

static bool check_node(struct check *c, int id, int depth);

static bool check_map(struct check *c, yaml_node_t *n, int depth)
{
	struct hmap keys; /* once the map has more than a few: duplicate detection stays linear */
	hmap_init(&keys);
	size_t len = ydoc_len(n);
	bool ok = true;
	for (size_t i = 0; i < len && ok; i++) {
		yaml_node_pair_t *p = &n->data.mapping.pairs.start[i];
		yaml_node_t *kn = yaml_document_get_node(c->d, p->key);
		if (!check_node(c, p->key, depth + 1))
			ok = false;
		else if (kn->type != YAML_SCALAR_NODE) {
			c->err = xasprintf("line %d: only scalar map keys are supported", ydoc_line(kn));
			ok = false;
		} else {
			const char *k = ydoc_str(kn);
			bool dup = false;
			if (i < 8) {
				for (size_t j = 0; j < i && !dup; j++)
					dup = strcmp(ydoc_key(c->d, n, j), k) == 0;
			} else {
				if (keys.count == 0)
					for (size_t j = 0; j < i; j++)
						hmap_put(&keys, ydoc_key(c->d, n, j), n);
				dup = hmap_get(&keys, k) != NULL;
				hmap_put(&keys, k, n);
			}
			if (dup) {
				c->err = xasprintf("line %d: duplicate key \"%s\"", ydoc_line(n), k);
				ok = false;
			} else
				ok = check_node(c, p->value, depth + 1);
		}
	}
	hmap_free(&keys);
	return ok;
}

static bool check_node(struct check *c, int id, int depth)
{
	yaml_node_t *n = yaml_document_get_node(c->d, id);
	if (n == NULL) {
		c->err = xstrdup("malformed YAML document");
		return false;
	}
	if (depth > YDOC_MAX_DEPTH) {
		c->err = xasprintf("line %d: document too deep or too large", ydoc_line(n));
		return false;
	}
	if (c->seen[id - 1]) {
		c->err = xasprintf("line %d: YAML anchors and aliases are not supported", ydoc_line(n));
		return false;
	}
	c->seen[id - 1] = 1;
	if (n->type == YAML_MAPPING_NODE)
		return check_map(c, n, depth);
	if (n->type == YAML_SEQUENCE_NODE) {
		for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++)
			if (!check_node(c, *it, depth + 1))
				return false;
	}
	return true;
}

/* 0 when doc's shape passes, else -1 with *err. */
static int check_doc(yaml_document_t *doc, char **err)
{
	size_t count = (size_t)(doc->nodes.top - doc->nodes.start);
	if (count > YDOC_MAX_NODES) {
		*err = xasprintf("line %d: document too deep or too large", ydoc_line(yaml_document_get_root_node(doc)));
		return -1;
	}
	struct check c = { .d = doc, .seen = xcalloc(count ? count : 1, 1) };
	bool ok = count == 0 || check_node(&c, 1, 0); /* the root is node 1 */
	free(c.seen);
	if (ok)
		return 0;
	*err = c.err;
	return -1;
}

/* ---- YAML ---- */

/* Every non-empty document of the stream into *docs (grown; *n of them), at most max (0: any number): more is
 * an error naming the line. On error the documents read so far stay in *docs for the caller to delete. */
static int load_yaml(yaml_document_t **docs, size_t *n, size_t max, const char *text, size_t len, char **err)
{
	yaml_parser_t p;
	char *e = NULL;
	yaml_parser_initialize(&p);
	yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
	while (e == NULL) {
		yaml_document_t doc;
		if (!yaml_parser_load(&p, &doc)) {
			e = xasprintf("YAML error at line %zu: %s", p.problem_mark.line + 1,
				      p.problem ? p.problem : "malformed");
			break;
		}
		yaml_node_t *root = yaml_document_get_root_node(&doc);
		if (root == NULL) { /* the end of the stream */
			yaml_document_delete(&doc);
			break;
		}
		if (check_doc(&doc, &e) < 0 || ydoc_is_null(root)) { /* or an empty document between separators */
			yaml_document_delete(&doc);
			continue;
		}
		if (max && *n == max) {
			e = xasprintf("line %d: more than one document (apply one manifest per file)", ydoc_line(root));
			yaml_document_delete(&doc);
			break;
		}
		if (*n >= YDOC_MAX_DOCS) {
			e = xasprintf("line %d: more than %d documents", ydoc_line(root), YDOC_MAX_DOCS);
			yaml_document_delete(&doc);
			break;
		}
		*docs = xreallocarray(*docs, *n + 1, sizeof **docs);
		(*docs)[(*n)++] = doc;
	}
	yaml_parser_delete(&p);
	if (e) {
		*err = e;
		return -1;
	}
	return 0;
}

/* ---- JSON, folded into a document ---- */

static int add_json(yaml_document_t *d, json_object *j, int depth)
{
	if (depth > YDOC_MAX_DEPTH)
		return 0;
	switch (json_object_get_type(j)) {
	case json_type_object: {
		int m = yaml_document_add_mapping(d, NULL, YAML_BLOCK_MAPPING_STYLE);
		json_object_object_foreach(j, k, v)
		{
			int kid = yaml_document_add_scalar(d, NULL, (yaml_char_t *)k, (int)strlen(k),
							   YAML_DOUBLE_QUOTED_SCALAR_STYLE);
			int vid = add_json(d, v, depth + 1);
			if (!m || !kid || !vid || !yaml_document_append_mapping_pair(d, m, kid, vid))
				return 0;
		}
		return m;
	}
	case json_type_array: {
		int s = yaml_document_add_sequence(d, NULL, YAML_BLOCK_SEQUENCE_STYLE);
		size_t len = json_object_array_length(j);
		for (size_t i = 0; i < len; i++) {
			int vid = add_json(d, json_object_array_get_idx(j, i), depth + 1);
			if (!s || !vid || !yaml_document_append_sequence_item(d, s, vid))
				return 0;
		}
		return s;
	}
	case json_type_string:
		return yaml_document_add_scalar(d, NULL, (yaml_char_t *)json_object_get_string(j),
						json_object_get_string_len(j), YAML_DOUBLE_QUOTED_SCALAR_STYLE);
	case json_type_null:
		return yaml_document_add_scalar(d, NULL, (yaml_char_t *)"null", 4, YAML_PLAIN_SCALAR_STYLE);
	default: {
		const char *s = json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN);
		return yaml_document_add_scalar(d, NULL, (yaml_char_t *)s, (int)strlen(s), YAML_PLAIN_SCALAR_STYLE);
	}
	}
}

static int load_json(yaml_document_t *out, const char *text, size_t len, char **err)
{
	json_tokener *tok = json_tokener_new_ex(YDOC_MAX_DEPTH);
	json_object *j = json_tokener_parse_ex(tok, text, (int)len);
	enum json_tokener_error jerr = json_tokener_get_error(tok);
	size_t off = json_tokener_get_parse_end(tok);
	int rc = -1;
	if (j == NULL || jerr != json_tokener_success) {
		*err = xasprintf("JSON error at byte %zu: %s", off, json_tokener_error_desc(jerr));
		goto out;
	}
	for (size_t i = off; i < len; i++)
		if (text[i] != ' ' && text[i] != '\n' && text[i] != '\r' && text[i] != '\t') {
			*err = xasprintf("JSON error at byte %zu: trailing data", i);
			goto out;
		}
	if (!yaml_document_initialize(out, NULL, NULL, NULL, 1, 1)) {
		*err = xstrdup("out of memory");
		goto out;
	}
	if (add_json(out, j, 0) == 0) {
		*err = xstrdup("JSON document too deep");
		yaml_document_delete(out);
		goto out;
	}
	if (check_doc(out, err) < 0) {
		yaml_document_delete(out);
		goto out;
	}
	rc = 0;
out:
	json_object_put(j);
	json_tokener_free(tok);
	return rc;
}

/* The checks before any parser: size, NUL bytes; whether the text is JSON. */
static int precheck(const char *text, size_t len, bool *json, char **err)
{
	*err = NULL;
	if (len > (size_t)16 << 20) {
		*err = xstrdup("manifest larger than 16 MiB");
		return -1;
	}
	if (memchr(text, '\0', len)) {
		*err = xstrdup("manifest contains a NUL byte");
		return -1;
	}
	size_t i = 0;
	while (i < len && (text[i] == ' ' || text[i] == '\n' || text[i] == '\r' || text[i] == '\t'))
		i++;
	*json = i < len && (text[i] == '{' || text[i] == '[');
	return 0;
}

int ydoc_load(yaml_document_t *doc, const char *text, size_t len, char **err)
{
	memset(doc, 0, sizeof *doc);
	bool json;
	if (precheck(text, len, &json, err) < 0)
		return -1;
	if (json)
		return load_json(doc, text, len, err);
	yaml_document_t *docs = NULL;
	size_t n = 0;
	int rc = load_yaml(&docs, &n, 1, text, len, err);
	if (rc == 0 && n == 0) {
		*err = xstrdup("empty document");
		rc = -1;
	}
	if (rc == 0)
		*doc = docs[0];
	else
		ydoc_free_all(docs, n);
	if (rc == 0)
		free(docs);
	return rc;
}

int ydoc_load_all(yaml_document_t **docs, size_t *n, const char *text, size_t len, char **err)
{
	*docs = NULL;
	*n = 0;
	bool json;
	if (precheck(text, len, &json, err) < 0)
		return -1;
	if (json) {
		*docs = xcalloc(1, sizeof **docs);
		if (load_json(*docs, text, len, err) < 0) {
			free(*docs);
			*docs = NULL;
			return -1;
		}
		*n = 1;
		return 0;
	}
	if (load_yaml(docs, n, 0, text, len, err) < 0) {
		ydoc_free_all(*docs, *n);
		*docs = NULL;
		*n = 0;
		return -1;
	}
	return 0;
}

void ydoc_free_all(yaml_document_t *docs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		yaml_document_delete(&docs[i]);
	free(docs);
}

static json_object *node_json(yaml_document_t *d, const yaml_node_t *n, int depth)
{
	if (n == NULL || depth > YDOC_MAX_DEPTH)
		return NULL;
	if (n->type == YAML_MAPPING_NODE) {
		json_object *o = json_object_new_object();
		for (size_t i = 0; i < ydoc_len(n); i++)
			json_object_object_add(o, ydoc_key(d, n, i), node_json(d, ydoc_at(d, n, i), depth + 1));
		return o;
	}
	if (n->type == YAML_SEQUENCE_NODE) {
		json_object *a = json_object_new_array();
		for (size_t i = 0; i < ydoc_len(n); i++)
			json_object_array_add(a, node_json(d, ydoc_at(d, n, i), depth + 1));
		return a;
	}
	const char *s = ydoc_str(n);
	if (ydoc_quoted(n))
		return json_object_new_string(s);
	if (ydoc_is_null(n))
		return NULL;
	if (strcmp(s, "true") == 0 || strcmp(s, "false") == 0)
		return json_object_new_boolean(s[0] == 't');
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (*s && *end == '\0' && errno == 0)
		return json_object_new_int64(v);
	if (*s && (s[0] == '-' || s[0] == '.' || (s[0] >= '0' && s[0] <= '9'))) {
		double x = strtod(s, &end);
		if (*end == '\0')
			return json_object_new_double(x);
	}
	return json_object_new_string(s);
}

json_object *ydoc_json(yaml_document_t *d, const yaml_node_t *n)
{
	return node_json(d, n, 0);
}
