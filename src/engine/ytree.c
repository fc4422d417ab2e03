/* Document tree for manifests: libyaml's event stream (or a json-c object) folded into struct ynode. */
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

/* ---- YAML ---- */

struct yparse {
	yaml_parser_t p;
	char *err;
	size_t nodes;
};

static int ev_line(const yaml_event_t *ev)
{
	return (int)ev->start_mark.line + 1;
}

static struct ynode *parse_node(struct yparse *y, yaml_event_t *ev, int depth);

static bool next_event(struct yparse *y, yaml_event_t *ev)
{
	if (!yaml_parser_parse(&y->p, ev)) {
		y->err = xasprintf("YAML error at line %zu: %s", y->p.problem_mark.line + 1,
				   y->p.problem ? y->p.problem : "malformed");
		return false;
	}
	return true;
}

static struct ynode *parse_collection(struct yparse *y, enum ynode_type t, int line, int depth)
{
	struct ynode *n = node_new(t, line);
	yaml_event_type_t end = t == YNODE_MAP ? YAML_MAPPING_END_EVENT : YAML_SEQUENCE_END_EVENT;
	struct hmap seen; /* the map's keys once it has more than a few: duplicate detection stays linear */
	hmap_init(&seen);
	for (;;) {
		yaml_event_t ev;
		if (!next_event(y, &ev))
			goto fail;
		if (ev.type == end) {
			yaml_event_delete(&ev);
			hmap_free(&seen);
			return n;
		}
		char *key = NULL;
		if (t == YNODE_MAP) {
			if (ev.type != YAML_SCALAR_EVENT) {
				y->err = xasprintf("line %d: only scalar map keys are supported", ev_line(&ev));
				yaml_event_delete(&ev);
				goto fail;
			}
			key = xstrndup((const char *)ev.data.scalar.value, ev.data.scalar.length);
			yaml_event_delete(&ev);
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
				y->err = xasprintf("line %d: duplicate key \"%s\"", line, key);
				free(key);
				goto fail;
			}
			if (seen.count > 0)
				hmap_put(&seen, key, n);
			if (!next_event(y, &ev)) {
				free(key);
				goto fail;
			}
		}
		struct ynode *kid = parse_node(y, &ev, depth + 1);
		if (kid == NULL) {
			free(key);
			goto fail;
		}
		node_add(n, key, kid);
	}
fail:
	hmap_free(&seen);
	ytree_free(n);
	return NULL;
}

/* Consumes ev (deletes it). */
static struct ynode *parse_node(struct yparse *y, yaml_event_t *ev, int depth)
{
	struct ynode *n = NULL;
	int line = ev_line(ev);
	if (depth > YTREE_MAX_DEPTH || ++y->nodes > YTREE_MAX_NODES) {
		y->err = xasprintf("line %d: document too deep or too large", line);
		yaml_event_delete(ev);
		return NULL;
	}
	switch (ev->type) {
	case YAML_SCALAR_EVENT:
		if (ev->data.scalar.anchor) {
			y->err = xasprintf("line %d: YAML anchors are not supported", line);
			break;
		}
		n = node_new(YNODE_SCALAR, line);
		n->str = xstrndup((const char *)ev->data.scalar.value, ev->data.scalar.length);
		n->quoted = ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE;
		break;
	case YAML_MAPPING_START_EVENT:
	case YAML_SEQUENCE_START_EVENT: {
		bool map = ev->type == YAML_MAPPING_START_EVENT;
		const yaml_char_t *anchor = map ? ev->data.mapping_start.anchor : ev->data.sequence_start.anchor;
		if (anchor) {
			y->err = xasprintf("line %d: YAML anchors are not supported", line);
			break;
		}
		yaml_event_delete(ev);
		return parse_collection(y, map ? YNODE_MAP : YNODE_SEQ, line, depth);
	}
	case YAML_ALIAS_EVENT:
		y->err = xasprintf("line %d: YAML aliases are not supported", line);
		break;
	default:
		y->err = xasprintf("line %d: unexpected YAML event", line);
		break;
	}
	yaml_event_delete(ev);
	return n;
}

static struct ynode *parse_yaml(const char *text, size_t len, char **err)
{
	struct yparse y = { .err = NULL };
	struct ynode *root = NULL;
	int docs = 0;
	yaml_parser_initialize(&y.p);
	yaml_parser_set_input_string(&y.p, (const unsigned char *)text, len);
	for (;;) {
		yaml_event_t ev;
		if (!next_event(&y, &ev))
			break;
		if (ev.type == YAML_STREAM_END_EVENT) {
			yaml_event_delete(&ev);
			break;
		}
		if (ev.type == YAML_STREAM_START_EVENT || ev.type == YAML_DOCUMENT_END_EVENT) {
			yaml_event_delete(&ev);
			continue;
		}
		if (ev.type == YAML_DOCUMENT_START_EVENT) {
			yaml_event_delete(&ev);
			continue;
		}
		struct ynode *n = parse_node(&y, &ev, 0);
		if (n == NULL)
			break;
		if (ytree_is_null(n)) { /* an empty document between separators */
			ytree_free(n);
			continue;
		}
		if (++docs > 1) {
			y.err = xasprintf("line %d: more than one document (apply one manifest per file)", n->line);
			ytree_free(n);
			break;
		}
		root = n;
	}
	yaml_parser_delete(&y.p);
	if (y.err) {
		ytree_free(root);
		*err = y.err;
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
