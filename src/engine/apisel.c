/* Selectors, continue tokens and resourceVersions of the engine service (see apisel.h). */
#include "engine/apisel.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "core/buf.h"
#include "core/util.h"
#include "core/xmalloc.h"

#define MAX_REQS 64
#define MAX_VALUES 64
#define MAX_TOKEN 316 /* a qualified label key: 253-byte prefix, '/', 63-byte name */

static void skip_ws(const char **p)
{
	while (**p == ' ' || **p == '\t')
		(*p)++;
}

/* A key or value: label characters [A-Za-z0-9._/-], plus ':' for field values. */
static char *token(const char **p, bool fields)
{
	const char *s = *p;
	while (isalnum((unsigned char)**p) || **p == '-' || **p == '_' || **p == '.' || **p == '/' ||
	       (fields && **p == ':'))
		(*p)++;
	size_t n = (size_t)(*p - s);
	if (n > MAX_TOKEN)
		return NULL;
	return xstrndup(s, n);
}

static void req_free(struct apisel_req *r)
{
	free(r->key);
	for (size_t i = 0; i < r->nvalues; i++)
		free(r->values[i]);
	free(r->values);
}

void apisel_free(struct apisel *s)
{
	if (s == NULL)
		return;
	for (size_t i = 0; i < s->n; i++)
		req_free(&s->reqs[i]);
	free(s->reqs);
	free(s);
}

static void add_value(struct apisel_req *r, char *v)
{
	r->values = xreallocarray(r->values, r->nvalues + 1, sizeof *r->values);
	r->values[r->nvalues++] = v;
}

static int parse_req(const char **pp, bool fields, struct apisel_req *r, char **err)
{
	const char *p = *pp;
	skip_ws(&p);
	if (*p == '!' && !fields) {
		p++;
		skip_ws(&p);
		r->op = SEL_NOT_EXISTS;
	} else
		r->op = SEL_EXISTS;
	r->key = token(&p, fields);
	if (r->key == NULL || r->key[0] == 0) {
		*err = xstrdup("a key is expected");
		return -1;
	}
	skip_ws(&p);
	if (r->op == SEL_NOT_EXISTS) {
		*pp = p;
		return 0;
	}
	if (p[0] == '=' && p[1] == '=')
		r->op = SEL_EQ, p += 2;
	else if (p[0] == '=')
		r->op = SEL_EQ, p += 1;
	else if (p[0] == '!' && p[1] == '=')
		r->op = SEL_NE, p += 2;
	else if (!fields && strncmp(p, "in", 2) == 0 && (p[2] == ' ' || p[2] == '('))
		r->op = SEL_IN, p += 2;
	else if (!fields && strncmp(p, "notin", 5) == 0 && (p[5] == ' ' || p[5] == '('))
		r->op = SEL_NOTIN, p += 5;
	else if (fields) {
		*err = xasprintf("invalid selector: '%s'; can't understand it", r->key);
		return -1;
	}
	skip_ws(&p);
	if (r->op == SEL_EQ || r->op == SEL_NE) {
		char *v = token(&p, fields);
		if (v == NULL) {
			*err = xstrdup("a value is too long");
			return -1;
		}
		add_value(r, v);
	} else if (r->op == SEL_IN || r->op == SEL_NOTIN) {
		if (*p++ != '(') {
			*err = xstrdup("'(' is expected after in/notin");
			return -1;
		}
		for (;;) {
			skip_ws(&p);
			char *v = token(&p, false);
			if (v == NULL || r->nvalues >= MAX_VALUES) {
				free(v);
				*err = xstrdup("too long a set of values");
				return -1;
			}
			add_value(r, v);
			skip_ws(&p);
			if (*p == ',') {
				p++;
				continue;
			}
			if (*p == ')') {
				p++;
				break;
			}
			*err = xstrdup("',' or ')' is expected in a set of values");
			return -1;
		}
	}
	skip_ws(&p);
	*pp = p;
	return 0;
}

struct apisel *apisel_parse(const char *s, bool fields, char **err)
{
	struct apisel *sel = xcalloc(1, sizeof *sel);
	if (s == NULL)
		return sel;
	const char *p = s;
	skip_ws(&p);
	if (*p == 0)
		return sel;
	for (;;) {
		if (sel->n >= MAX_REQS) {
			*err = xstrdup("too many requirements in the selector");
			apisel_free(sel);
			return NULL;
		}
		sel->reqs = xreallocarray(sel->reqs, sel->n + 1, sizeof *sel->reqs);
		struct apisel_req *r = &sel->reqs[sel->n++];
		memset(r, 0, sizeof *r);
		if (parse_req(&p, fields, r, err) < 0) {
			apisel_free(sel);
			return NULL;
		}
		if (*p == ',') {
			p++;
			continue;
		}
		if (*p == 0)
			return sel;
		*err = xasprintf("unexpected '%c' in the selector", isprint((unsigned char)*p) ? *p : '?');
		apisel_free(sel);
		return NULL;
	}
}

static bool in_values(const struct apisel_req *r, const char *v)
{
	for (size_t i = 0; i < r->nvalues; i++)
		if (strcmp(r->values[i], v) == 0)
			return true;
	return false;
}

bool apisel_match(const struct apisel *s, const char *(*get)(void *arg, const char *key), void *arg)
{
	for (size_t i = 0; s && i < s->n; i++) {
		const struct apisel_req *r = &s->reqs[i];
		const char *v = get(arg, r->key);
		bool ok = false;
		switch (r->op) {
		case SEL_EQ:
			ok = v && in_values(r, v);
			break;
		case SEL_NE: /* an absent label is "not equal" (as Kubernetes) */
			ok = v == NULL || !in_values(r, v);
			break;
		case SEL_IN:
			ok = v && in_values(r, v);
			break;
		case SEL_NOTIN:
			ok = v == NULL || !in_values(r, v);
			break;
		case SEL_EXISTS:
			ok = v != NULL;
			break;
		case SEL_NOT_EXISTS:
			ok = v == NULL;
			break;
		}
		if (!ok)
			return false;
	}
	return true;
}

/* ---- LabelSelector objects ---- */

/* A label key or value as the string form takes it (token's characters), within its bounds. */
static bool label_text_ok(const char *s, size_t max, bool empty_ok)
{
	size_t n = s ? strlen(s) : 0;
	if (s == NULL || n > max || (n == 0 && !empty_ok))
		return false;
	for (const char *p = s; *p; p++)
		if (!isalnum((unsigned char)*p) && *p != '-' && *p != '_' && *p != '.' && *p != '/')
			return false;
	return true;
}

/* One requirement of a LabelSelector: 0, or -1 with *err naming the field under at. */
static int json_req(struct apisel_req *r, json_object *e, const char *at, char **err)
{
	static const struct {
		const char *name;
		enum apisel_op op;
	} ops[] = { { "In", SEL_IN }, { "NotIn", SEL_NOTIN }, { "Exists", SEL_EXISTS }, { "DoesNotExist", SEL_NOT_EXISTS } };
	json_object *k = NULL, *o = NULL, *vs = NULL;
	if (!json_object_is_type(e, json_type_object)) {
		*err = xasprintf("%s: Invalid value: a requirement {key, operator, values} is expected", at);
		return -1;
	}
	json_object_object_get_ex(e, "key", &k);
	json_object_object_get_ex(e, "operator", &o);
	json_object_object_get_ex(e, "values", &vs);
	const char *key = json_object_is_type(k, json_type_string) ? json_object_get_string(k) : NULL;
	const char *op = json_object_is_type(o, json_type_string) ? json_object_get_string(o) : NULL;
	if (key == NULL || *key == 0) {
		*err = xasprintf("%s.key: Required value", at);
		return -1;
	}
	if (!label_text_ok(key, MAX_TOKEN, false)) {
		*err = xasprintf("%s.key: Invalid value: \"%.64s\": not a valid label key", at, key);
		return -1;
	}
	size_t i = 0;
	while (i < sizeof ops / sizeof ops[0] && !(op && strcmp(op, ops[i].name) == 0))
		i++;
	if (i == sizeof ops / sizeof ops[0]) {
		*err = xasprintf("%s.operator: Unsupported value: \"%.32s\": supported values: \"In\", \"NotIn\", "
				 "\"Exists\", \"DoesNotExist\"", at, op ? op : "");
		return -1;
	}
	r->op = ops[i].op;
	r->key = xstrdup(key);
	bool set = r->op == SEL_IN || r->op == SEL_NOTIN;
	size_t n = vs && json_object_is_type(vs, json_type_array) ? json_object_array_length(vs) : 0;
	if (vs && !json_object_is_type(vs, json_type_array)) {
		*err = xasprintf("%s.values: Invalid value: a list is expected", at);
		return -1;
	}
	if (set && n == 0) {
		*err = xasprintf("%s.values: Required value: must be specified when `operator` is 'In' or 'NotIn'", at);
		return -1;
	}
	if (!set && n > 0) {
		*err = xasprintf("%s.values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'", at);
		return -1;
	}
	if (n > MAX_VALUES) {
		*err = xasprintf("%s.values: Too many: %zu: must have at most %d items", at, n, MAX_VALUES);
		return -1;
	}
	for (size_t v = 0; v < n; v++) {
		json_object *x = json_object_array_get_idx(vs, v);
		const char *s = json_object_is_type(x, json_type_string) ? json_object_get_string(x) : NULL;
		if (!label_text_ok(s, 63, true)) {
			*err = xasprintf("%s.values[%zu]: Invalid value: not a valid label value", at, v);
			return -1;
		}
		add_value(r, xstrdup(s));
	}
	return 0;
}

struct apisel *apisel_from_json(struct json_object *sel, char **err)
{
	struct apisel *s = xcalloc(1, sizeof *s);
	if (sel == NULL)
		return s;
	json_object *ml = NULL, *me = NULL;
	if (!json_object_is_type(sel, json_type_object)) {
		*err = xstrdup("Invalid value: a label selector {matchLabels, matchExpressions} is expected");
		goto bad;
	}
	json_object_object_get_ex(sel, "matchLabels", &ml);
	json_object_object_get_ex(sel, "matchExpressions", &me);
	if (ml && !json_object_is_type(ml, json_type_object)) {
		*err = xstrdup("matchLabels: Invalid value: a map of label keys to values is expected");
		goto bad;
	}
	if (me && !json_object_is_type(me, json_type_array)) {
		*err = xstrdup("matchExpressions: Invalid value: a list is expected");
		goto bad;
	}
	size_t nml = ml ? (size_t)json_object_object_length(ml) : 0, nme = me ? json_object_array_length(me) : 0;
	if (nml + nme > MAX_REQS) {
		*err = xstrdup("Invalid value: too many requirements in the selector");
		goto bad;
	}
	s->reqs = xcalloc(nml + nme + 1, sizeof *s->reqs);
	if (ml) {
		json_object_object_foreach(ml, k, v)
		{
			const char *val = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
			struct apisel_req *r = &s->reqs[s->n++];
			r->op = SEL_EQ;
			r->key = xstrdup(k);
			if (!label_text_ok(k, MAX_TOKEN, false)) {
				*err = xasprintf("matchLabels: Invalid value: \"%.64s\": not a valid label key", k);
				goto bad;
			}
			if (!label_text_ok(val, 63, true)) {
				*err = xasprintf("matchLabels: Invalid value: the value of \"%.64s\" is not a valid label value", k);
				goto bad;
			}
			add_value(r, xstrdup(val));
		}
	}
	for (size_t i = 0; i < nme; i++) {
		char at[48];
		snprintf(at, sizeof at, "matchExpressions[%zu]", i);
		if (json_req(&s->reqs[s->n++], json_object_array_get_idx(me, i), at, err) < 0)
			goto bad;
	}
	return s;
bad:
	apisel_free(s);
	return NULL;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

char *apisel_format(const struct apisel *s)
{
	size_t n = s ? s->n : 0;
	const struct apisel_req **order = xcalloc(n + 1, sizeof *order);
	for (size_t i = 0; i < n; i++) { /* by key, stable (insertion) */
		size_t j = i;
		while (j > 0 && strcmp(order[j - 1]->key, s->reqs[i].key) > 0) {
			order[j] = order[j - 1];
			j--;
		}
		order[j] = &s->reqs[i];
	}
	struct buf b;
	buf_init(&b);
	for (size_t i = 0; i < n; i++) {
		const struct apisel_req *r = order[i];
		if (i)
			buf_add_char(&b, ',');
		if (r->op == SEL_NOT_EXISTS)
			buf_add_char(&b, '!');
		buf_printf(&b, "%s", r->key);
		if (r->op == SEL_EQ || r->op == SEL_NE) {
			buf_printf(&b, "%s%s", r->op == SEL_EQ ? "=" : "!=", r->nvalues ? r->values[0] : "");
		} else if (r->op == SEL_IN || r->op == SEL_NOTIN) {
			char **v = xcalloc(r->nvalues + 1, sizeof *v);
			memcpy(v, r->values, r->nvalues * sizeof *v);
			qsort(v, r->nvalues, sizeof *v, cmp_str);
			buf_printf(&b, " %s (", r->op == SEL_IN ? "in" : "notin");
			for (size_t k = 0; k < r->nvalues; k++)
				buf_printf(&b, "%s%s", k ? "," : "", v[k]);
			buf_add_char(&b, ')');
			free(v);
		}
	}
	buf_add_char(&b, 0);
	free(order);
	return buf_steal(&b);
}

/* Tokens are hex of "RV/LAST": opaque to clients, any byte of a key survives. */
char *apisel_continue_encode(uint64_t rv, const char *last)
{
	struct buf b;
	buf_init(&b);
	char head[32];
	int n = snprintf(head, sizeof head, "%llu/", (unsigned long long)rv);
	for (int i = 0; i < n; i++)
		buf_printf(&b, "%02x", (unsigned char)head[i]);
	for (const char *p = last; *p; p++)
		buf_printf(&b, "%02x", (unsigned char)*p);
	buf_add_char(&b, 0);
	return buf_steal(&b);
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

int apisel_continue_decode(const char *tok, uint64_t *rv, char **last)
{
	size_t n = strlen(tok);
	if (n == 0 || n % 2 || n > 4096)
		return -1;
	char *raw = xmalloc(n / 2 + 1);
	for (size_t i = 0; i < n / 2; i++) {
		int hi = hexval(tok[2 * i]), lo = hexval(tok[2 * i + 1]);
		if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
			free(raw);
			return -1;
		}
		raw[i] = (char)(hi << 4 | lo);
	}
	raw[n / 2] = 0;
	char *slash = strchr(raw, '/');
	if (slash == NULL || slash == raw) {
		free(raw);
		return -1;
	}
	*slash = 0;
	if (apisel_rv_parse(raw, rv) < 0 || (raw[0] == '0' && raw[1] != 0)) { /* canonical: no leading zeros */
		free(raw);
		return -1;
	}
	*last = xstrdup(slash + 1);
	free(raw);
	return 0;
}

int apisel_rv_parse(const char *s, uint64_t *rv)
{
	*rv = 0;
	if (s == NULL || *s == 0)
		return 0;
	uint64_t v = 0;
	for (const char *p = s; *p; p++) {
		if (!isdigit((unsigned char)*p) || p - s >= 19)
			return -1;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	*rv = v;
	return 0;
}

/* ---- the protobuf envelope: just enough for a kind and a name ---- */

struct pb {
	const uint8_t *p, *end;
};

static int pb_varint(struct pb *b, uint64_t *v)
{
	*v = 0;
	for (int shift = 0; shift < 64; shift += 7) {
		if (b->p >= b->end)
			return -1;
		uint8_t c = *b->p++;
		*v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80))
			return 0;
	}
	return -1;
}

/* The next field: its number, and for length-delimited ones the bytes (others are skipped: *sub empty). */
static int pb_next(struct pb *b, uint32_t *field, struct pb *sub)
{
	uint64_t key, v;
	if (pb_varint(b, &key) < 0 || key >> 3 == 0 || key >> 3 > 0x1fffffff)
		return -1;
	*field = (uint32_t)(key >> 3);
	sub->p = sub->end = NULL;
	switch (key & 7) {
	case 0:
		return pb_varint(b, &v);
	case 1:
		if (b->end - b->p < 8)
			return -1;
		b->p += 8;
		return 0;
	case 5:
		if (b->end - b->p < 4)
			return -1;
		b->p += 4;
		return 0;
	case 2:
		if (pb_varint(b, &v) < 0 || v > (uint64_t)(b->end - b->p))
			return -1;
		sub->p = b->p;
		sub->end = b->p + v;
		b->p += v;
		return 0;
	default:
		return -1;
	}
}

static char *pb_string(const struct pb *s)
{
	size_t n = s->p ? (size_t)(s->end - s->p) : 0;
	if (n > 253 || memchr(s->p ? (const void *)s->p : "", 0, n))
		return NULL;
	return xstrndup(s->p ? (const char *)s->p : "", n);
}

/* The string of field want in message m (the last occurrence wins, as protobuf merges), or NULL. */
static int pb_find(struct pb m, uint32_t want, struct pb *out)
{
	bool found = false;
	while (m.p < m.end) {
		uint32_t f;
		struct pb sub;
		if (pb_next(&m, &f, &sub) < 0)
			return -1;
		if (f == want && sub.p) {
			*out = sub;
			found = true;
		}
	}
	return found ? 0 : -1;
}

int apisel_pb_kind_name(const void *data, size_t len, char **kind, char **name)
{
	*kind = *name = NULL;
	if (len < 4 || memcmp(data, "k8s\0", 4) != 0)
		return -1;
	struct pb env = { (const uint8_t *)data + 4, (const uint8_t *)data + len }, tm, raw, md, nm, k;
	/* runtime.Unknown: typeMeta 1 {apiVersion 1, kind 2}, raw 2 (the object: metadata 1 {name 1}) */
	if (pb_find(env, 1, &tm) < 0 || pb_find(tm, 2, &k) < 0 || pb_find(env, 2, &raw) < 0 ||
	    pb_find(raw, 1, &md) < 0 || pb_find(md, 1, &nm) < 0)
		return -1;
	*kind = pb_string(&k);
	*name = pb_string(&nm);
	if (*kind == NULL || *name == NULL) {
		free(*kind);
		free(*name);
		*kind = *name = NULL;
		return -1;
	}
	return 0;
}

/* ---- JSON merge patch ---- */

/* RFC 7386 (see apisel.h); target is changed in place when it is an object. */
json_object *apisel_merge_patch(json_object *target, json_object *patch)
{
	if (!json_object_is_type(patch, json_type_object)) {
		if (target)
			json_object_put(target);
		return patch ? json_object_get(patch) : NULL;
	}
	if (target == NULL || !json_object_is_type(target, json_type_object)) {
		if (target)
			json_object_put(target);
		target = json_object_new_object();
	}
	json_object_object_foreach(patch, k, v)
	{
		if (v == NULL) {
			json_object_object_del(target, k);
			continue;
		}
		json_object *cur = NULL;
		json_object_object_get_ex(target, k, &cur);
		json_object *res = apisel_merge_patch(cur ? json_object_get(cur) : NULL, v);
		json_object_object_add(target, k, res);
	}
	return target;
}


/* ---- JSON patch ---- */

#define PATCH_MAX_OPS 1024
#define PATCH_MAX_DEPTH 64

/* The tokens of a JSON pointer ("/a/b~1c/0"), unescaped (~1 '/', ~0 '~'); NULL when malformed. */
static char **pointer_tokens(const char *ptr, size_t *n)
{
	*n = 0;
	if (ptr == NULL || (*ptr && *ptr != '/'))
		return NULL;
	char **t = xcalloc(PATCH_MAX_DEPTH + 1, sizeof *t);
	for (const char *p = ptr; *p == '/';) {
		p++;
		size_t len = strcspn(p, "/");
		if (*n == PATCH_MAX_DEPTH)
			goto bad;
		char *s = xmalloc(len + 1), *o = s;
		for (size_t i = 0; i < len; i++) {
			if (p[i] != '~')
				*o++ = p[i];
			else if (i + 1 < len && (p[i + 1] == '0' || p[i + 1] == '1'))
				*o++ = p[++i] == '0' ? '~' : '/';
			else {
				free(s);
				goto bad;
			}
		}
		*o = '\0';
		t[(*n)++] = s;
		p += len;
	}
	return t;
bad:
	for (size_t i = 0; i < *n; i++)
		free(t[i]);
	free(t);
	return NULL;
}

/* An array index token: digits without a leading zero; -1 when not one. */
static long index_of(const char *s)
{
	if (*s == '\0' || strlen(s) > 9 || (s[0] == '0' && s[1]) || strspn(s, "0123456789") != strlen(s))
		return -1;
	return atol(s);
}

static json_object *child(json_object *o, const char *tok)
{
	json_object *c = NULL;
	if (json_object_is_type(o, json_type_object))
		return json_object_object_get_ex(o, tok, &c) ? c : NULL;
	if (json_object_is_type(o, json_type_array)) {
		long i = index_of(tok);
		return i >= 0 && (size_t)i < json_object_array_length(o) ? json_object_array_get_idx(o, (size_t)i) : NULL;
	}
	return NULL;
}

/* Removes element i of array a, keeping the others in order. */
static void array_del(json_object *a, size_t i)
{
	json_object_array_del_idx(a, i, 1);
}

/* Inserts v (consumed) at i of array a (i == length: appended). */
static void array_insert(json_object *a, size_t i, json_object *v)
{
	size_t n = json_object_array_length(a);
	json_object_array_add(a, NULL);
	for (size_t k = n; k > i; k--)
		json_object_array_put_idx(a, k, json_object_get(json_object_array_get_idx(a, k - 1)));
	json_object_array_put_idx(a, i, v);
}

static int patch_one(json_object **doc, json_object *op, char **err)
{
	json_object *jo, *jp, *jv = NULL;
	const char *name = json_object_is_type(op, json_type_object) && json_object_object_get_ex(op, "op", &jo)
				   ? json_object_get_string(jo) : NULL;
	const char *path = json_object_object_get_ex(op, "path", &jp) && json_object_is_type(jp, json_type_string)
				   ? json_object_get_string(jp) : NULL;
	bool has_value = json_object_object_get_ex(op, "value", &jv);
	if (name == NULL || path == NULL) {
		*err = xstrdup("an operation needs op and path");
		return -1;
	}
	bool add = strcmp(name, "add") == 0, rem = strcmp(name, "remove") == 0, rep = strcmp(name, "replace") == 0,
	     test = strcmp(name, "test") == 0;
	if (!add && !rem && !rep && !test) {
		*err = xasprintf("unsupported operation \"%s\" (add, remove, replace and test are)", name);
		return -1;
	}
	if ((add || rep || test) && !has_value) {
		*err = xasprintf("%s operation at %s has no value", name, path);
		return -1;
	}
	size_t n;
	char **t = pointer_tokens(path, &n);
	if (t == NULL) {
		*err = xasprintf("%s: not a JSON pointer", path);
		return -1;
	}
	int rc = -1;
	json_object *parent = NULL, *cur = *doc;
	for (size_t i = 0; i + 1 < n && cur; i++)
		cur = child(cur, t[i]);
	parent = n ? cur : NULL;
	const char *last = n ? t[n - 1] : NULL;
	json_object *target = n == 0 ? *doc : parent ? child(parent, last) : NULL;
	if (test) {
		/* a missing member tests equal to null (as Kubernetes' json-patch has it: virtctl's "test then add") */
		rc = json_object_equal(target, jv) ? 0 : -1;
		if (rc < 0)
			*err = xasprintf("test at %s failed", path);
		goto out;
	}
	if (n == 0) {
		if (rem) {
			*err = xstrdup("the whole document cannot be removed");
			goto out;
		}
		json_object_put(*doc);
		*doc = jv ? json_tokener_parse(json_object_to_json_string(jv)) : NULL;
		rc = 0;
		goto out;
	}
	if (parent == NULL || (!json_object_is_type(parent, json_type_object) && !json_object_is_type(parent, json_type_array))) {
		*err = xasprintf("%s: the parent does not exist", path);
		goto out;
	}
	json_object *val = jv ? json_tokener_parse(json_object_to_json_string(jv)) : NULL;
	if (json_object_is_type(parent, json_type_object)) {
		bool exists = json_object_object_get_ex(parent, last, NULL);
		if ((rem || rep) && !exists) {
			*err = xasprintf("%s: no such member", path);
			json_object_put(val);
			goto out;
		}
		if (rem)
			json_object_object_del(parent, last);
		else
			json_object_object_add(parent, last, val);
		rc = 0;
		goto out;
	}
	size_t len = json_object_array_length(parent);
	long i = add && strcmp(last, "-") == 0 ? (long)len : index_of(last);
	if (i < 0 || (size_t)i > len || (!add && (size_t)i == len)) {
		*err = xasprintf("%s: index out of range", path);
		json_object_put(val);
		goto out;
	}
	if (rem || rep)
		array_del(parent, (size_t)i);
	if (!rem)
		array_insert(parent, (size_t)i, val);
	rc = 0;
out:
	for (size_t k = 0; k < n; k++)
		free(t[k]);
	free(t);
	return rc;
}

json_object *apisel_json_patch(json_object *target, json_object *ops, char **err)
{
	*err = NULL;
	if (!json_object_is_type(ops, json_type_array) || json_object_array_length(ops) > PATCH_MAX_OPS) {
		*err = xstrdup("a JSON patch is an array of at most 1024 operations");
		json_object_put(target);
		return NULL;
	}
	for (size_t i = 0; i < json_object_array_length(ops); i++)
		if (patch_one(&target, json_object_array_get_idx(ops, i), err) < 0) {
			json_object_put(target);
			return NULL;
		}
	return target;
}

/* ---- Secrets and ConfigMaps in protobuf ---- */

static json_object *pb_jstr(const struct pb *s)
{
	return json_object_new_string_len(s->p ? (const char *)s->p : "", s->p ? (int)(s->end - s->p) : 0);
}

/* A map<string, string|bytes> entry (key 1, value 2) into o; bytes values as base64 (JSON's form). */
static int pb_map_entry(struct pb e, json_object *o, bool bytes)
{
	struct pb k = { 0 }, v = { 0 };
	while (e.p < e.end) {
		uint32_t f;
		struct pb sub;
		if (pb_next(&e, &f, &sub) < 0)
			return -1;
		if (f == 1)
			k = sub;
		else if (f == 2)
			v = sub;
	}
	char *key = pb_string(&k);
	if (key == NULL)
		return -1;
	if (bytes) {
		char *b = util_b64_encode(v.p ? v.p : (const uint8_t *)"", v.p ? (size_t)(v.end - v.p) : 0);
		json_object_object_add(o, key, json_object_new_string(b));
		free(b);
	} else
		json_object_object_add(o, key, pb_jstr(&v));
	free(key);
	return 0;
}

static void add_map(json_object *o, const char *k, json_object *m)
{
	if (json_object_object_length(m))
		json_object_object_add(o, k, m);
	else
		json_object_put(m);
}

json_object *apisel_pb_object(const void *data, size_t len)
{
	if (len < 4 || memcmp(data, "k8s\0", 4) != 0)
		return NULL;
	struct pb env = { (const uint8_t *)data + 4, (const uint8_t *)data + len }, tm, raw, av, k;
	if (pb_find(env, 1, &tm) < 0 || pb_find(tm, 2, &k) < 0 || pb_find(env, 2, &raw) < 0)
		return NULL;
	char *kind = pb_string(&k), *apiv = pb_find(tm, 1, &av) == 0 ? pb_string(&av) : xstrdup("v1");
	bool secret = kind && strcmp(kind, "Secret") == 0, cm = kind && strcmp(kind, "ConfigMap") == 0;
	json_object *o = NULL, *md = json_object_new_object(), *labels = json_object_new_object(),
		    *ann = json_object_new_object(), *d = json_object_new_object(), *d2 = json_object_new_object();
	if (!secret && !cm)
		goto out;
	o = json_object_new_object();
	json_object_object_add(o, "apiVersion", json_object_new_string(apiv ? apiv : "v1"));
	json_object_object_add(o, "kind", json_object_new_string(kind));
	/* Secret: metadata 1, data 2 (bytes), type 3, stringData 4, immutable 5;
	 * ConfigMap: metadata 1, data 2 (string), binaryData 3 (bytes), immutable 4 */
	struct pb m = raw;
	while (m.p < m.end) {
		uint32_t f;
		struct pb sub;
		const uint8_t *at = m.p;
		if (pb_next(&m, &f, &sub) < 0)
			goto bad;
		if (f == 1 && sub.p) {
			/* ObjectMeta: name 1, generateName 2, namespace 3, labels 11, annotations 12 */
			struct pb mm = sub;
			while (mm.p < mm.end) {
				uint32_t g;
				struct pb s2;
				if (pb_next(&mm, &g, &s2) < 0)
					goto bad;
				static const char *const names[] = { [1] = "name", [2] = "generateName", [3] = "namespace" };
				if (g >= 1 && g <= 3 && s2.p)
					json_object_object_add(md, names[g], pb_jstr(&s2));
				else if ((g == 11 || g == 12) && s2.p && pb_map_entry(s2, g == 11 ? labels : ann, false) < 0)
					goto bad;
			}
		} else if (f == 2 && sub.p) {
			if (pb_map_entry(sub, d, secret) < 0)
				goto bad;
		} else if (f == 3 && secret && sub.p)
			json_object_object_add(o, "type", pb_jstr(&sub));
		else if ((f == 4 && secret) || (f == 3 && cm)) {
			if (sub.p && pb_map_entry(sub, d2, cm) < 0)
				goto bad;
		} else if ((f == 5 && secret) || (f == 4 && cm)) {
			struct pb vb = { at, m.p };
			uint64_t key, v;
			if (pb_varint(&vb, &key) == 0 && (key & 7) == 0 && pb_varint(&vb, &v) == 0)
				json_object_object_add(o, "immutable", json_object_new_boolean(v != 0));
		}
	}
	add_map(md, "labels", json_object_get(labels));
	add_map(md, "annotations", json_object_get(ann));
	json_object_object_add(o, "metadata", json_object_get(md));
	add_map(o, "data", json_object_get(d));
	add_map(o, secret ? "stringData" : "binaryData", json_object_get(d2));
	goto out;
bad:
	json_object_put(o);
	o = NULL;
out:
	json_object_put(md);
	json_object_put(labels);
	json_object_put(ann);
	json_object_put(d);
	json_object_put(d2);
	free(kind);
	free(apiv);
	return o;
}
