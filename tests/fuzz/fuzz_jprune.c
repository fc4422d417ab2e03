/* libFuzzer harness, differential: the pruner building a json-c tree in one pass (kube_jprune_tree, the watch path;
 * kube_jprune_tree_each, the list path, with the items it hands over put back) must give exactly the tree json-c's
 * tokener parses from the pruner's text (kube_jprune_prefix), for every schema and for key-name mode, value after
 * value through the input. Whenever the tree builder accepts a value, the text form must be accepted too, end at
 * the same byte and parse to an equal tree; a value the builder finds cut must be cut for the text form too. Any
 * difference aborts. Seeds: tests/fuzz/corpus/jprune/ (watch streams, list pages and objects with escapes,
 * repeated keys, odd numbers and literals). */
#include <json.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube/jprune.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* kube_jprune_tree_each's elements, collected to be put back where they came from */
static void collect(void *arg, struct json_object *element)
{
	json_object_array_add(arg, element);
}

/* The tree with the handed-over items back in its items array (which must be there, and empty). */
static bool put_back(struct json_object *tree, struct json_object *collected)
{
	struct json_object *items;
	size_t n = json_object_array_length(collected);
	if (n == 0)
		return true;
	if (!json_object_object_get_ex(tree, "items", &items) || !json_object_is_type(items, json_type_array) ||
	    json_object_array_length(items) != 0)
		return false;
	for (size_t i = 0; i < n; i++)
		json_object_array_add(items, json_object_get(json_object_array_get_idx(collected, i)));
	return true;
}

static void check(const struct kube_jprune_node *schema, const char *in, size_t len, char *out,
		  struct json_tokener *tok, bool each)
{
	size_t off = 0;
	while (off < len) {
		while (off < len && (in[off] == ' ' || in[off] == '\n' || in[off] == '\r' || in[off] == '\t'))
			off++;
		if (off == len || (in[off] != '{' && in[off] != '['))
			return; /* streams hold objects and arrays (json-c waits for more after a bare number) */
		struct json_object *tree = NULL, *collected = json_object_new_array();
		size_t consumed = 0;
		ssize_t m = each ? kube_jprune_tree_each(schema, in + off, len - off, &tree, collect, collected)
				 : kube_jprune_tree(schema, in + off, len - off, &tree);
		if (m >= 0 && !put_back(tree, collected)) {
			fprintf(stderr, "items handed over, but the tree has no empty items array\n");
			abort();
		}
		json_object_put(collected);
		ssize_t n = kube_jprune_prefix(schema, in + off, len - off, out, &consumed);
		if (m == -2 && n != -2) {
			fprintf(stderr, "tree: cut value; text: %zd\n", n);
			abort();
		}
		if (m < 0) {
			if (n < 0 || consumed == 0)
				return;
			off += consumed; /* the builder refused what json-c may read: go on after it */
			continue;
		}
		if (n < 0 || (size_t)m != consumed) {
			fprintf(stderr, "tree: %zd bytes; text: %zd (%zu bytes)\n", m, n, consumed);
			abort();
		}
		json_tokener_reset(tok);
		struct json_object *parsed = json_tokener_parse_ex(tok, out, (int)n);
		if (json_tokener_get_error(tok) != json_tokener_success || !json_object_equal(tree, parsed)) {
			fprintf(stderr, "tree %s\ntext %.*s\n", tree ? json_object_to_json_string(tree) : "null",
				(int)n, out);
			abort();
		}
		json_object_put(tree);
		json_object_put(parsed);
		off += consumed;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct json_tokener *tok;
	if (tok == NULL)
		tok = json_tokener_new_ex(256);
	if (size > 1 << 20)
		return 0;
	char *out = malloc(size + 1);
	if (out == NULL)
		return 0;
	check(NULL, (const char *)data, size, out, tok, false);
	for (int k = 0; k < OBJ_KIND_COUNT; k++)
		for (int each = 0; each < 2; each++)
			check(kube_jprune_schema((enum obj_kind)k), (const char *)data, size, out, tok, each);
	free(out);
	return 0;
}
