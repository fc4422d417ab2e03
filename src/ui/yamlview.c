/* JSON -> YAML for the object view, and the fetch that feeds it. */
#include "ui/yamlview.h"

#include <json-c/json.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "core/buf.h"
#include "core/xmalloc.h"
#include "model/source.h"
#include "ui/pager.h"

static int write_buf(void *data, unsigned char *buffer, size_t size)
{
	buf_add(data, buffer, size);
	return 1;
}

/* A string that a YAML reader would take as something else (bool, null, number) must be quoted. */
static bool needs_quotes(const char *s)
{
	static const char *const words[] = { "", "~", "null", "Null", "NULL", "true", "True", "TRUE", "false", "False",
					     "FALSE", "yes", "Yes", "YES", "no", "No", "NO", "on", "On", "ON", "off",
					     "Off", "OFF", "y", "Y", "n", "N", ".inf", ".nan" };
	for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
		if (strcmp(s, words[i]) == 0)
			return true;
	char *end;
	strtod(s, &end);
	if (end != s && *end == '\0')
		return true;
	return strchr("0123456789+-.", s[0]) != NULL && strspn(s, "0123456789+-.eExXoO_:abcdefABCDEF") == strlen(s);
}

static int emit_scalar(yaml_emitter_t *e, const char *s, yaml_scalar_style_t style)
{
	yaml_event_t ev;
	if (!yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)s, (int)strlen(s), 1, 1, style))
		return -1;
	return yaml_emitter_emit(e, &ev) ? 0 : -1;
}

static int emit(yaml_emitter_t *e, struct json_object *j, int depth)
{
	yaml_event_t ev;
	if (depth > 200)
		return -1;
	switch (json_object_get_type(j)) {
	case json_type_object:
		yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_MAPPING_STYLE);
		if (!yaml_emitter_emit(e, &ev))
			return -1;
		json_object_object_foreach(j, k, v)
		{
			if (emit_scalar(e, k, needs_quotes(k) ? YAML_DOUBLE_QUOTED_SCALAR_STYLE : YAML_ANY_SCALAR_STYLE) < 0 ||
			    emit(e, v, depth + 1) < 0)
				return -1;
		}
		yaml_mapping_end_event_initialize(&ev);
		return yaml_emitter_emit(e, &ev) ? 0 : -1;
	case json_type_array:
		yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_SEQUENCE_STYLE);
		if (!yaml_emitter_emit(e, &ev))
			return -1;
		for (size_t i = 0; i < json_object_array_length(j); i++)
			if (emit(e, json_object_array_get_idx(j, i), depth + 1) < 0)
				return -1;
		yaml_sequence_end_event_initialize(&ev);
		return yaml_emitter_emit(e, &ev) ? 0 : -1;
	case json_type_string: {
		const char *s = json_object_get_string(j);
		return emit_scalar(e, s, needs_quotes(s) ? YAML_DOUBLE_QUOTED_SCALAR_STYLE : YAML_ANY_SCALAR_STYLE);
	}
	case json_type_null:
		return emit_scalar(e, "null", YAML_PLAIN_SCALAR_STYLE);
	default: /* numbers and booleans as JSON spells them */
		return emit_scalar(e, json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN), YAML_PLAIN_SCALAR_STYLE);
	}
}

char *yamlview_from_json(const char *json, size_t len, char **err)
{
	size_t i = 0;
	while (i < len && (json[i] == ' ' || json[i] == '\n' || json[i] == '\r' || json[i] == '\t'))
		i++;
	if (i < len && json[i] != '{' && json[i] != '[') /* already YAML (the engine keeps manifests as YAML) */
		return xstrndup(json, len);
	struct json_tokener *tok = json_tokener_new_ex(256);
	struct json_object *root = json_tokener_parse_ex(tok, json, (int)len);
	enum json_tokener_error jerr = json_tokener_get_error(tok);
	json_tokener_free(tok);
	if (root == NULL || jerr != json_tokener_success) {
		*err = xasprintf("the object is not valid JSON: %s", json_tokener_error_desc(jerr));
		json_object_put(root);
		return NULL;
	}
	struct buf out;
	buf_init(&out);
	yaml_emitter_t e;
	yaml_event_t ev;
	yaml_emitter_initialize(&e);
	yaml_emitter_set_output(&e, write_buf, &out);
	yaml_emitter_set_unicode(&e, 1);
	yaml_emitter_set_width(&e, -1);
	yaml_emitter_set_indent(&e, 2);
	int rc = -1;
	yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING);
	if (!yaml_emitter_emit(&e, &ev))
		goto out;
	yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1);
	if (!yaml_emitter_emit(&e, &ev))
		goto out;
	if (emit(&e, root, 0) < 0)
		goto out;
	yaml_document_end_event_initialize(&ev, 1);
	if (!yaml_emitter_emit(&e, &ev))
		goto out;
	yaml_stream_end_event_initialize(&ev);
	if (!yaml_emitter_emit(&e, &ev))
		goto out;
	rc = 0;
out:
	if (rc < 0)
		*err = xasprintf("YAML emitter: %s", e.problem ? e.problem : "failed");
	yaml_emitter_delete(&e);
	json_object_put(root);
	if (rc < 0) {
		buf_free(&out);
		return NULL;
	}
	return buf_steal(&out);
}

static void fetched(void *arg, int status, const char *body, size_t len)
{
	struct view *v = pager_find((unsigned)(uintptr_t)arg);
	if (v == NULL)
		return; /* closed meanwhile */
	if (status != 0) {
		char *m = xasprintf("fetch failed (%d): %.*s", status, (int)(len > 2000 ? 2000 : len), body ? body : "");
		pager_set_text(v, m);
		free(m);
		return;
	}
	char *err = NULL;
	char *y = yamlview_from_json(body, len, &err);
	pager_set_text(v, y ? y : err);
	free(y);
	free(err);
}

struct view *yamlview_new(const struct obj *o)
{
	char title[600];
	snprintf(title, sizeof title, "%s %s/%s (YAML)", obj_kind_title(o->kind), o->ns, o->name);
	struct view *v = pager_new(title, "fetching...");
	struct source *src = o->src;
	char *err = NULL;
	if (src->ops == NULL || src->ops->fetch_raw == NULL) {
		pager_set_text(v, "this source cannot fetch objects");
	} else if (src->ops->fetch_raw(src, o->kind, o->ns, o->name, fetched, (void *)(uintptr_t)pager_id(v), &err) < 0) {
		char *m = xasprintf("fetch failed: %s", err ? err : "refused");
		pager_set_text(v, m);
		free(m);
	}
	free(err);
	return v;
}
