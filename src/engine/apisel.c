/* Selectors, continue tokens and resourceVersions of the engine service (see apisel.h). */
#include "engine/apisel.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "core/buf.h"
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

