/* jout: API objects (json-c trees) printed as kubectl prints them: JSON with sorted keys (4-space indent, or
 * compact as Go's json.Marshal), YAML through libyaml's emitter (block style, sorted keys, strings that would
 * read back as another type quoted). Every string is made safe for a terminal on the way: invalid UTF-8 becomes
 * U+FFFD, and C0/C1 controls and DEL are escaped (JSON \u00XX, YAML double-quoted escapes). */
#ifndef KVCON_CORE_JOUT_H
#define KVCON_CORE_JOUT_H

#include <json.h>
#include <stdbool.h>

#include "core/buf.h"

/* indent: spaces per level (0: compact, no spaces); base: the indent of the first line's level. */
void jout_json(struct buf *b, struct json_object *j, int indent, int base);
/* One YAML document (no "---") of j appended to b. Returns 0, -1 when libyaml fails. */
int jout_yaml(struct buf *b, struct json_object *j);
/* A YAML List (apiVersion v1, items, kind List, metadata.resourceVersion "") written item by item through one
 * emitter, so that items wrap and indent as in one document. */
struct jout_ylist;
struct jout_ylist *jout_yaml_list_begin(struct buf *b);
void jout_yaml_list_item(struct jout_ylist *l, struct json_object *j);
int jout_yaml_list_end(struct jout_ylist *l); /* frees l */
/* A string value as text for a terminal: kept as is but for controls other than \n and \t, DEL, C1 controls
 * and invalid UTF-8, which are shown escaped (util_escape_display's forms). */
void jout_text(struct buf *b, const char *s, size_t len);

/* ---- test seams: exported for tests/ only, not to be called by kvcon itself (tests/check-exports.sh) ---- */
/* s with invalid UTF-8 replaced by U+FFFD (caller frees). */
char *jout_valid_utf8(const char *s, size_t len);

#endif
