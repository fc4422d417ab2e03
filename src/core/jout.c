/* jout: kubectl-style JSON and YAML printing of json-c trees, safe for a terminal. */
#include "core/jout.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "core/xmalloc.h"

/* Length of the valid UTF-8 sequence at p (1..4), 0 when invalid (overlong, surrogate, > U+10FFFF, cut). */
static size_t u8len(const unsigned char *p, size_t n, uint32_t *cp)
{
	unsigned c = p[0];
	size_t len;
	uint32_t v;
	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if (c >= 0xc2 && c <= 0xdf) {
		len = 2;
		v = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		len = 3;
		v = c & 0x0f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4;
		v = c & 0x07;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		v = (v << 6) | (p[i] & 0x3f);
	}
	if ((len == 3 && (v < 0x800 || (v >= 0xd800 && v <= 0xdfff))) || (len == 4 && (v < 0x10000 || v > 0x10ffff)))
		return 0;
	*cp = v;
	return len;
}

char *jout_valid_utf8(const char *s, size_t len)
{
	struct buf b;
	buf_init(&b);
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;
	while (i < len) {
		uint32_t cp;
		size_t n = u8len(p + i, len - i, &cp);
		if (n == 0 || cp == 0) {
			buf_add_str(&b, "\xef\xbf\xbd");
			i++;
			continue;
		}
		buf_add(&b, p + i, n);
		i += n;
	}
	buf_add(&b, "", 0);
	if (b.data == NULL)
		return xstrdup("");
	return buf_steal(&b);
}

void jout_text(struct buf *b, const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;
	while (i < len) {
		uint32_t cp;
		size_t n = u8len(p + i, len - i, &cp);
		if (n == 0) {
			buf_printf(b, "\\x%02x", p[i]);
			i++;
		} else if (cp == 0x1b) {
			buf_add_str(b, "\\e");
			i++;
		} else if ((cp < 0x20 && cp != '\n' && cp != '\t') || cp == 0x7f) {
			buf_printf(b, "\\x%02x", (unsigned)cp);
			i++;
		} else if (cp >= 0x80 && cp < 0xa0) {
			buf_printf(b, "\\x%02x", (unsigned)cp);
			i += n;
		} else {
			buf_add(b, p + i, n);
			i += n;
		}
	}
}

/* A JSON string as Go's encoding/json writes it (HTML characters escaped), plus DEL and C1 escaped. */
static void json_str(struct buf *b, const char *s, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p = (const unsigned char *)s;
	buf_add_char(b, '"');
	size_t i = 0;
	while (i < len) {
		/* the common case: a run of printable ASCII that needs no escape, copied at once */
		size_t run = i;
		while (run < len && p[run] >= 0x20 && p[run] < 0x7f && p[run] != '"' && p[run] != '\\' && p[run] != '<' &&
		       p[run] != '>' && p[run] != '&')
			run++;
		if (run > i) {
			buf_add(b, p + i, run - i);
			i = run;
			continue;
		}
		uint32_t cp;
		size_t n = u8len(p + i, len - i, &cp);
		if (n == 0) {
			buf_add_str(b, "\\ufffd");
			i++;
			continue;
		}
		i += n;
		switch (cp) {
		case '"':
			buf_add_str(b, "\\\"");
			continue;
		case '\\':
			buf_add_str(b, "\\\\");
			continue;
		case '\n':
			buf_add_str(b, "\\n");
			continue;
		case '\r':
			buf_add_str(b, "\\r");
			continue;
		case '\t':
			buf_add_str(b, "\\t");
			continue;
		default:
			break;
		}
		if (cp < 0x20 || cp == '<' || cp == '>' || cp == '&' || (cp >= 0x7f && cp < 0xa0) || cp == 0x2028 ||
		    cp == 0x2029) {
			char e[7] = { '\\', 'u', hex[(cp >> 12) & 15], hex[(cp >> 8) & 15], hex[(cp >> 4) & 15], hex[cp & 15],
				      0 };
			buf_add_str(b, e);
		} else {
			buf_add(b, p + i - n, n);
		}
	}
	buf_add_char(b, '"');
}

static int cmp_keys(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The object's keys, sorted (caller frees the array, not the keys). */
static const char **sorted_keys(struct json_object *j, size_t *n)
{
	size_t cnt = (size_t)json_object_object_length(j), k = 0;
	const char **keys = xcalloc(cnt ? cnt : 1, sizeof *keys);
	json_object_object_foreach(j, key, val)
	{
		(void)val;
		keys[k++] = key;
	}
	qsort(keys, k, sizeof *keys, cmp_keys);
	*n = k;
	return keys;
}

static void number(struct buf *b, struct json_object *j)
{
	if (json_object_is_type(j, json_type_int)) {
		buf_printf(b, "%lld", (long long)json_object_get_int64(j));
		return;
	}
	double d = json_object_get_double(j);
	if (!isfinite(d)) {
		buf_add_str(b, "null");
		return;
	}
	char t[40];
	/* the shortest text that reads back as the same double, as Go prints float64 */
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(t, sizeof t, "%.*g", prec, d);
		if (strtod(t, NULL) == d)
			break;
	}
	buf_add_str(b, t);
}

static void pad(struct buf *b, int n)
{
	static const char spaces[] = "                                                                ";
	while (n > 0) {
		int k = n < (int)sizeof spaces - 1 ? n : (int)sizeof spaces - 1;
		buf_add(b, spaces, (size_t)k);
		n -= k;
	}
}

void jout_json(struct buf *b, struct json_object *j, int indent, int base)
{
	switch (json_object_get_type(j)) {
	case json_type_null:
		buf_add_str(b, "null");
		break;
	case json_type_boolean:
		buf_add_str(b, json_object_get_boolean(j) ? "true" : "false");
		break;
	case json_type_int:
	case json_type_double:
		number(b, j);
		break;
	case json_type_string:
		json_str(b, json_object_get_string(j), (size_t)json_object_get_string_len(j));
		break;
	case json_type_array: {
		size_t n = json_object_array_length(j);
		if (n == 0) {
			buf_add_str(b, "[]");
			break;
		}
		buf_add_char(b, '[');
		for (size_t i = 0; i < n; i++) {
			if (i)
				buf_add_char(b, ',');
			if (indent) {
				buf_add_char(b, '\n');
				pad(b, base + indent);
			}
			jout_json(b, json_object_array_get_idx(j, i), indent, base + indent);
		}
		if (indent) {
			buf_add_char(b, '\n');
			pad(b, base);
		}
		buf_add_char(b, ']');
		break;
	}
	case json_type_object: {
		size_t n;
		const char **keys = sorted_keys(j, &n);
		if (n == 0) {
			buf_add_str(b, "{}");
			free(keys);
			break;
		}
		buf_add_char(b, '{');
		for (size_t i = 0; i < n; i++) {
			if (i)
				buf_add_char(b, ',');
			if (indent) {
				buf_add_char(b, '\n');
				pad(b, base + indent);
			}
			json_str(b, keys[i], strlen(keys[i]));
			buf_add_str(b, indent ? ": " : ":");
			jout_json(b, json_object_object_get(j, keys[i]), indent, base + indent);
		}
		if (indent) {
			buf_add_char(b, '\n');
			pad(b, base);
		}
		buf_add_char(b, '}');
		free(keys);
		break;
	}
	}
}

/* --- YAML ---------------------------------------------------------------------------------------------- */

/* True when a plain scalar s would not read back as the string s (YAML 1.1 as go-yaml resolves it: null, bools,
 * numbers, timestamps-ish, or a text libyaml might still emit plain). */
static bool needs_quotes(const char *s)
{
	static const char *const words[] = { "", "~", "null", "Null", "NULL", "true", "True", "TRUE", "false", "False",
					     "FALSE", "yes", "Yes", "YES", "no", "No", "NO", "on", "On", "ON", "off",
					     "Off", "OFF", "y", "Y", "n", "N", ".inf", ".Inf", ".INF", "-.inf", "-.Inf",
					     "-.INF", "+.inf", ".nan", ".NaN", ".NAN", "<<", "=", NULL };
	for (const char *const *w = words; *w; w++)
		if (strcmp(s, *w) == 0)
			return true;
	/* numbers as YAML 1.1 reads them (ints, floats, hex, octal, with '_'), sexagesimals and timestamps */
	char t[64];
	size_t n = 0;
	for (const char *q = s; *q && n + 1 < sizeof t; q++)
		if (*q != '_')
			t[n++] = *q;
	t[n] = '\0';
	if (n > 0 && strlen(s) < sizeof t) {
		char *end;
		strtod(t, &end);
		if (*end == '\0')
			return true;
		strtoll(t, &end, 0);
		if (*end == '\0')
			return true;
	}
	/* [-+]?[0-9][0-9_]*(:[0-5]?[0-9])+ */
	const char *p = s + (*s == '+' || *s == '-');
	bool sexa = *p >= '0' && *p <= '9' && strchr(p, ':');
	while (sexa && ((*p >= '0' && *p <= '9') || *p == '_'))
		p++;
	while (sexa && *p == ':') {
		p++;
		int d = 0, v = 0;
		while (*p >= '0' && *p <= '9' && d < 3) {
			v = v * 10 + (*p++ - '0');
			d++;
		}
		sexa = d >= 1 && d <= 2 && v < 60 && !(d == 2 && p[-2] > '5');
	}
	if (sexa && *p == '\0')
		return true;
	/* YYYY-M-D... */
	int k = 0;
	while (k < 4 && s[k] >= '0' && s[k] <= '9')
		k++;
	return k == 4 && s[4] == '-' && s[5] >= '0' && s[5] <= '9';
}

static int emit(yaml_emitter_t *e, yaml_event_t *ev)
{
	return yaml_emitter_emit(e, ev) ? 0 : -1;
}

static int scalar(yaml_emitter_t *e, const char *s, size_t len, bool is_string)
{
	yaml_event_t ev;
	char *v = jout_valid_utf8(s, len);
	yaml_scalar_style_t style = YAML_ANY_SCALAR_STYLE;
	if (is_string) {
		if (needs_quotes(v))
			style = YAML_DOUBLE_QUOTED_SCALAR_STYLE;
		for (const unsigned char *p = (const unsigned char *)v; *p; p++)
			if ((*p < 0x20 && *p != '\n') || *p == 0x7f || (p[0] == 0xc2 && p[1] >= 0x80 && p[1] < 0xa0))
				style = YAML_DOUBLE_QUOTED_SCALAR_STYLE;
		if (style == YAML_ANY_SCALAR_STYLE && strchr(v, '\n'))
			style = YAML_LITERAL_SCALAR_STYLE;
	}
	int ok = yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)v, (int)strlen(v), 1, 1, style);
	free(v);
	if (!ok)
		return -1;
	return emit(e, &ev);
}

static int yaml_node(yaml_emitter_t *e, struct json_object *j)
{
	yaml_event_t ev;
	struct buf t;
	int rc = 0;
	switch (json_object_get_type(j)) {
	case json_type_null:
		return scalar(e, "null", 4, false);
	case json_type_boolean:
		return json_object_get_boolean(j) ? scalar(e, "true", 4, false) : scalar(e, "false", 5, false);
	case json_type_int:
	case json_type_double:
		buf_init(&t);
		number(&t, j);
		rc = scalar(e, t.data, t.len, false);
		buf_free(&t);
		return rc;
	case json_type_string:
		return scalar(e, json_object_get_string(j), (size_t)json_object_get_string_len(j), true);
	case json_type_array: {
		size_t n = json_object_array_length(j);
		yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1, n ? YAML_BLOCK_SEQUENCE_STYLE : YAML_FLOW_SEQUENCE_STYLE);
		if (emit(e, &ev) < 0)
			return -1;
		for (size_t i = 0; i < n && rc == 0; i++)
			rc = yaml_node(e, json_object_array_get_idx(j, i));
		yaml_sequence_end_event_initialize(&ev);
		return rc < 0 ? -1 : emit(e, &ev);
	}
	case json_type_object: {
		size_t n;
		const char **keys = sorted_keys(j, &n);
		yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1, n ? YAML_BLOCK_MAPPING_STYLE : YAML_FLOW_MAPPING_STYLE);
		if (emit(e, &ev) < 0) {
			free(keys);
			return -1;
		}
		for (size_t i = 0; i < n && rc == 0; i++) {
			rc = scalar(e, keys[i], strlen(keys[i]), true);
			if (rc == 0)
				rc = yaml_node(e, json_object_object_get(j, keys[i]));
		}
		free(keys);
		yaml_mapping_end_event_initialize(&ev);
		return rc < 0 ? -1 : emit(e, &ev);
	}
	}
	return -1;
}

static int write_buf(void *data, unsigned char *buffer, size_t size)
{
	buf_add((struct buf *)data, buffer, size);
	return 1;
}

int jout_yaml(struct buf *b, struct json_object *j)
{
	yaml_emitter_t e;
	yaml_event_t ev;
	if (!yaml_emitter_initialize(&e))
		return -1;
	yaml_emitter_set_output(&e, write_buf, b);
	yaml_emitter_set_unicode(&e, 1);
	yaml_emitter_set_indent(&e, 2);
	int rc = 0;
	yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING);
	rc = emit(&e, &ev);
	if (rc == 0) {
		yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1);
		rc = emit(&e, &ev);
	}
	if (rc == 0)
		rc = yaml_node(&e, j);
	if (rc == 0) {
		yaml_document_end_event_initialize(&ev, 1);
		rc = emit(&e, &ev);
	}
	if (rc == 0) {
		yaml_stream_end_event_initialize(&ev);
		rc = emit(&e, &ev);
	}
	yaml_emitter_delete(&e);
	return rc;
}

struct jout_ylist {
	yaml_emitter_t e;
	int rc;
};

static int ev_str(yaml_emitter_t *e, const char *s, bool quoted)
{
	yaml_event_t ev;
	if (!yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)s, (int)strlen(s), 1, 1,
					  quoted ? YAML_DOUBLE_QUOTED_SCALAR_STYLE : YAML_ANY_SCALAR_STYLE))
		return -1;
	return emit(e, &ev);
}

struct jout_ylist *jout_yaml_list_begin(struct buf *b)
{
	struct jout_ylist *l = xcalloc(1, sizeof *l);
	yaml_event_t ev;
	if (!yaml_emitter_initialize(&l->e)) {
		free(l);
		return NULL;
	}
	yaml_emitter_set_output(&l->e, write_buf, b);
	yaml_emitter_set_unicode(&l->e, 1);
	yaml_emitter_set_indent(&l->e, 2);
	yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING);
	l->rc = emit(&l->e, &ev);
	if (l->rc == 0) {
		yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1);
		l->rc = emit(&l->e, &ev);
	}
	if (l->rc == 0) {
		yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_MAPPING_STYLE);
		l->rc = emit(&l->e, &ev);
	}
	if (l->rc == 0)
		l->rc = ev_str(&l->e, "apiVersion", false) || ev_str(&l->e, "v1", false) || ev_str(&l->e, "items", false);
	if (l->rc == 0) {
		yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_SEQUENCE_STYLE);
		l->rc = emit(&l->e, &ev);
	}
	return l;
}

void jout_yaml_list_item(struct jout_ylist *l, struct json_object *j)
{
	if (l->rc == 0)
		l->rc = yaml_node(&l->e, j);
	yaml_emitter_flush(&l->e);
}

int jout_yaml_list_end(struct jout_ylist *l)
{
	yaml_event_t ev;
	if (l->rc == 0) {
		yaml_sequence_end_event_initialize(&ev);
		l->rc = emit(&l->e, &ev);
	}
	if (l->rc == 0)
		l->rc = ev_str(&l->e, "kind", false) || ev_str(&l->e, "List", false) || ev_str(&l->e, "metadata", false);
	if (l->rc == 0) {
		yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_MAPPING_STYLE);
		l->rc = emit(&l->e, &ev);
	}
	if (l->rc == 0)
		l->rc = ev_str(&l->e, "resourceVersion", false) || ev_str(&l->e, "", true);
	for (int i = 0; i < 2 && l->rc == 0; i++) {
		yaml_mapping_end_event_initialize(&ev);
		l->rc = emit(&l->e, &ev);
	}
	if (l->rc == 0) {
		yaml_document_end_event_initialize(&ev, 1);
		l->rc = emit(&l->e, &ev);
	}
	if (l->rc == 0) {
		yaml_stream_end_event_initialize(&ev);
		l->rc = emit(&l->e, &ev);
	}
	int rc = l->rc;
	yaml_emitter_delete(&l->e);
	free(l);
	return rc;
}
