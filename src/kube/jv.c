/* JSON values in arena memory (kube/jv.h): the arena, lookups, and copies to and from json-c trees. */
#include "kube/jv.h"

#include <json.h>
#include <stdlib.h>
#include <string.h>

#include "core/xmalloc.h"

#define JV_BLOCK (64 * 1024)
#define JV_ALIGN 8u /* pointers, int64 and double */

struct jv_block {
	struct jv_block *next;
	size_t used, size;
	max_align_t data[];
};

struct jv_arena {
	struct jv_block *first, *cur;
};

struct jv_arena *jv_arena_new(void)
{
	return xcalloc(1, sizeof(struct jv_arena));
}

void jv_arena_free(struct jv_arena *a)
{
	if (a == NULL)
		return;
	for (struct jv_block *b = a->first, *next; b; b = next) {
		next = b->next;
		free(b);
	}
	free(a);
}

void jv_arena_reset(struct jv_arena *a)
{
	if (a->first == NULL)
		return;
	/* a large value's blocks are not kept for the small ones that follow */
	for (struct jv_block *b = a->first->next, *next; b; b = next) {
		next = b->next;
		free(b);
	}
	a->first->next = NULL;
	a->first->used = 0;
	a->cur = a->first;
}

void *jv_alloc(struct jv_arena *a, size_t n)
{
	n = (n + JV_ALIGN - 1) & ~(size_t)(JV_ALIGN - 1);
	struct jv_block *b = a->cur;
	if (b == NULL || b->size - b->used < n) {
		if (b && b->next && b->next->size >= n) { /* a block released to a mark */
			b = b->next;
		} else {
			size_t size = n > JV_BLOCK ? n : JV_BLOCK;
			struct jv_block *nb = xmalloc(sizeof *nb + size);
			nb->size = size;
			nb->next = b ? b->next : NULL;
			if (b)
				b->next = nb;
			else
				a->first = nb;
			b = nb;
		}
		b->used = 0;
		a->cur = b;
	}
	void *p = (char *)b->data + b->used;
	b->used += n;
	return p;
}

struct jv_mark jv_arena_mark(const struct jv_arena *a)
{
	return (struct jv_mark){ a->cur, a->cur ? a->cur->used : 0 };
}

void jv_arena_release(struct jv_arena *a, struct jv_mark m)
{
	if (m.block == NULL) {
		if (a->first) {
			a->first->used = 0;
			a->cur = a->first;
		}
		return;
	}
	a->cur = m.block;
	a->cur->used = m.used;
}

struct jv *jv_new(struct jv_arena *a, enum jv_type type)
{
	struct jv *v = jv_alloc(a, sizeof *v);
	memset(v, 0, sizeof *v);
	v->type = (unsigned char)type;
	return v;
}

struct jv *jv_new_string(struct jv_arena *a, const char *s, size_t len)
{
	struct jv *v = jv_alloc(a, sizeof *v + len + 1);
	char *d = (char *)(v + 1);
	memcpy(d, s, len);
	d[len] = '\0';
	v->type = JV_STRING;
	v->b = false;
	v->n = (uint32_t)len;
	v->u.s = d;
	return v;
}

struct jv *jv_get(const struct jv *o, const char *key)
{
	if (o == NULL || o->type != JV_OBJECT)
		return NULL;
	/* a schema key is the pruner's string, often the very literal the decoder asks for (the linker merges equal
	 * string constants): the pointer is compared before the bytes */
	for (uint32_t i = 0; i < o->n; i++) {
		const char *k = o->u.m[i].key;
		if (k == key || (k[0] == key[0] && strcmp(k, key) == 0))
			return o->u.m[i].v;
	}
	return NULL;
}

struct jv *jv_from_json(struct jv_arena *a, struct json_object *o)
{
	if (o == NULL)
		return NULL;
	struct jv *v;
	switch (json_object_get_type(o)) {
	case json_type_boolean:
		v = jv_new(a, JV_BOOL);
		v->b = json_object_get_boolean(o);
		return v;
	case json_type_int:
		v = jv_new(a, JV_INT);
		v->u.i = json_object_get_int64(o);
		return v;
	case json_type_double:
		v = jv_new(a, JV_DOUBLE);
		v->u.d = json_object_get_double(o);
		return v;
	case json_type_string: {
		const char *s = json_object_get_string(o);
		return jv_new_string(a, s, (size_t)json_object_get_string_len(o));
	}
	case json_type_object: {
		v = jv_new(a, JV_OBJECT);
		size_t n = (size_t)json_object_object_length(o), i = 0;
		v->u.m = jv_alloc(a, (n ? n : 1) * sizeof *v->u.m);
		json_object_object_foreach(o, k, mv)
		{
			if (i == n)
				break;
			size_t kl = strlen(k);
			char *kc = jv_alloc(a, kl + 1);
			memcpy(kc, k, kl + 1);
			v->u.m[i].key = kc;
			v->u.m[i].v = jv_from_json(a, mv);
			i++;
		}
		v->n = (uint32_t)i;
		return v;
	}
	case json_type_array: {
		v = jv_new(a, JV_ARRAY);
		size_t n = json_object_array_length(o);
		v->u.a = jv_alloc(a, (n ? n : 1) * sizeof *v->u.a);
		for (size_t i = 0; i < n; i++)
			v->u.a[i] = jv_from_json(a, json_object_array_get_idx(o, i));
		v->n = (uint32_t)n;
		return v;
	}
	case json_type_null:
		break;
	}
	return NULL;
}

struct json_object *jv_to_json(const struct jv *v)
{
	if (v == NULL)
		return NULL;
	switch ((enum jv_type)v->type) {
	case JV_BOOL:
		return json_object_new_boolean(v->b);
	case JV_INT:
		return json_object_new_int64(v->u.i);
	case JV_DOUBLE:
		return json_object_new_double(v->u.d);
	case JV_STRING:
		return json_object_new_string_len(v->u.s, (int)v->n);
	case JV_OBJECT: {
		struct json_object *o = json_object_new_object();
		for (uint32_t i = 0; i < v->n; i++)
			json_object_object_add(o, v->u.m[i].key, jv_to_json(v->u.m[i].v));
		return o;
	}
	case JV_ARRAY: {
		struct json_object *o = json_object_new_array_ext((int)(v->n ? v->n : 1));
		for (uint32_t i = 0; i < v->n; i++)
			json_object_array_add(o, jv_to_json(v->u.a[i]));
		return o;
	}
	}
	return NULL;
}
