/* jsonpath: kubectl's JSONPath templates (k8s.io/client-go/util/jsonpath) over json-c trees:
 *     text {.a.b} {.items[*].metadata.name} {.x[0]} {.x[-1]} {.x[1:3]} {.x[0,2]} {['a.b/c']} {..name} {.*}
 *     {.items[?(@.status.phase=="Running")].metadata.name}  (== != < <= > >=, or @.x alone for existence)
 *     {range .items[*]}{.metadata.name}{"\t"}{.status.phase}{"\n"}{end}
 * Printing follows kubectl: the results of one {...} are separated by a space, strings are printed raw, numbers
 * and booleans as text, maps and lists as compact JSON with sorted keys; missing keys print nothing (kubectl's
 * get sets allowMissingKeys). */
#ifndef KVCON_CORE_JSONPATH_H
#define KVCON_CORE_JSONPATH_H

#include <json.h>
#include <stddef.h>

#include "core/buf.h"

struct jsonpath;

/* Parses a template. NULL with *err (caller frees) on a syntax error. */
struct jsonpath *jsonpath_parse(const char *tmpl, char **err);
/* kubectl's relaxed form for custom-columns and --sort-by: ".a.b", "a.b" or "{.a.b}" mean "{.a.b}". */
struct jsonpath *jsonpath_parse_relaxed(const char *expr, char **err);
void jsonpath_free(struct jsonpath *jp);

/* Prints the template over root into out. text_fn, when set, appends each string value (API text) instead of
 * a raw copy (a terminal-safe escaper). Returns 0, -1 with *err on an evaluation error. */
typedef void (*jsonpath_text_fn)(struct buf *out, const char *s, size_t len);
int jsonpath_print(const struct jsonpath *jp, struct json_object *root, struct buf *out, jsonpath_text_fn text_fn,
		   char **err);

/* The values a template's single expression yields (custom-columns, --sort-by): up to max of them into vals;
 * returns how many were found (may exceed max). JSON null values count and are returned as NULL. */
size_t jsonpath_values(const struct jsonpath *jp, struct json_object *root, struct json_object **vals, size_t max);

/* One value as kubectl's printer shows it (strings raw, numbers and booleans as text, maps/lists as compact
 * JSON), through text_fn for strings when set. */
void jsonpath_value_text(struct buf *out, struct json_object *v, jsonpath_text_fn text_fn);

#endif
