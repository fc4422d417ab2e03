/* Table-driven JSON fields (see ejson.h). */
#include "engine/ejson.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/intern.h"
#include "core/xmalloc.h"
#include "model/obj.h"

#define AT(obj, f, type) ((type *)(void *)((char *)(obj) + (f)->off))
#define AT_C(obj, f, type) ((const type *)(const void *)((const char *)(obj) + (f)->off))

void ejson_put(json_object *o, const void *obj, const struct ejson_field *f, size_t n)
{
	for (size_t i = 0; i < n; i++, f++) {
		json_object *v = NULL;
		switch (f->type) {
		case EJ_STR:
		case EJ_ISTR:
		case EJ_STRN: {
			const char *s = *AT_C(obj, f, char *);
			if (s == NULL && f->type != EJ_STRN)
				continue;
			v = s ? json_object_new_string(s) : NULL;
			break;
		}
		case EJ_UID:
			v = json_object_new_string(AT_C(obj, f, char));
			break;
		case EJ_I64:
			v = json_object_new_int64(*AT_C(obj, f, int64_t));
			break;
		case EJ_U64:
			v = json_object_new_int64((int64_t)*AT_C(obj, f, uint64_t));
			break;
		case EJ_INT:
			v = json_object_new_int64(*AT_C(obj, f, int));
			break;
		case EJ_BOOL:
			v = json_object_new_boolean(*AT_C(obj, f, bool));
			break;
		}
		json_object_object_add(o, f->key, v);
	}
}

json_object *ejson_child(json_object *o, const char *key, json_type type)
{
	json_object *v;
	return json_object_object_get_ex(o, key, &v) && json_object_is_type(v, type) ? v : NULL;
}

const char *ejson_str(json_object *o, const char *key)
{
	json_object *v = ejson_child(o, key, json_type_string);
	return v ? json_object_get_string(v) : NULL;
}

void ejson_get(void *obj, json_object *o, const struct ejson_field *f, size_t n)
{
	for (size_t i = 0; i < n; i++, f++) {
		json_object *v = NULL;
		bool has = json_object_object_get_ex(o, f->key, &v);
		const char *s = ejson_str(o, f->key);
		switch (f->type) {
		case EJ_STR:
		case EJ_STRN:
			*AT(obj, f, char *) = xstrdup0(s ? s : f->def);
			break;
		case EJ_ISTR:
			s = s ? s : f->def;
			*AT(obj, f, const char *) = s ? intern(s) : NULL;
			break;
		case EJ_UID:
			snprintf(AT(obj, f, char), UID_LEN, "%s", s ? s : "");
			break;
		case EJ_I64:
			*AT(obj, f, int64_t) = has ? json_object_get_int64(v) : 0;
			break;
		case EJ_U64:
			*AT(obj, f, uint64_t) = has ? (uint64_t)json_object_get_int64(v) : 0;
			break;
		case EJ_INT:
			*AT(obj, f, int) = has ? (int)json_object_get_int64(v) : 0;
			break;
		case EJ_BOOL:
			*AT(obj, f, bool) = has && json_object_get_boolean(v);
			break;
		}
	}
}

json_object *ejson_array(const void *base, size_t stride, int n, const struct ejson_field *f, size_t nf)
{
	json_object *a = json_object_new_array();
	for (int i = 0; i < n; i++) {
		json_object *e = json_object_new_object();
		ejson_put(e, (const char *)base + (size_t)i * stride, f, nf);
		json_object_array_add(a, e);
	}
	return a;
}
