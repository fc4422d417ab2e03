/* JSON values in arena memory: the tree the pruner builds for the decoder on the watch and list paths (one bump
 * allocation per value instead of json-c's object, hash table and value mallocs; the whole tree goes at once with
 * jv_arena_reset), or a copy of a json-c tree where json-c parsed the bytes.
 *
 * Contract: a tree lives in its arena until the arena is reset or released to an earlier mark. JSON null is a NULL
 * pointer (as json-c has it). Object members keep their order, each key once (a repeated key's later value replaces
 * the earlier one in place, as json-c's tokener does). Strings are NUL-terminated; one may hold an escaped NUL
 * (\u0000, counted in n), so a reader that stops at the first NUL takes strnlen(s, n). */
#ifndef KVCON_KUBE_JV_H
#define KVCON_KUBE_JV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum jv_type { JV_BOOL, JV_INT, JV_DOUBLE, JV_STRING, JV_OBJECT, JV_ARRAY };

struct jv;
struct jv_member {
	const char *key;
	struct jv *v; /* NULL: null */
};

struct jv {
	unsigned char type; /* enum jv_type */
	bool b;
	uint32_t n; /* string bytes, object members, array elements */
	union {
		int64_t i;
		double d;
		const char *s;
		struct jv_member *m;
		struct jv **a; /* elements, NULL for null */
	} u;
};

struct jv_arena;
struct jv_arena *jv_arena_new(void);
void jv_arena_free(struct jv_arena *a);
/* Frees every tree of the arena (its first block stays for the next). */
void jv_arena_reset(struct jv_arena *a);
/* Uninitialised memory for n bytes, aligned for any jv part. */
void *jv_alloc(struct jv_arena *a, size_t n);
/* A position to go back to: what was allocated after it goes (for one item of a list at a time). */
struct jv_mark {
	void *block;
	size_t used;
};
struct jv_mark jv_arena_mark(const struct jv_arena *a);
void jv_arena_release(struct jv_arena *a, struct jv_mark m);

/* Builders: the parts live in a. */
struct jv *jv_new(struct jv_arena *a, enum jv_type type);
struct jv *jv_new_string(struct jv_arena *a, const char *s, size_t len);

/* The member key of object o (NULL when o is not an object, the key is absent or its value null). */
struct jv *jv_get(const struct jv *o, const char *key);
/* The element i of array a, NULL when out of range or null. */
static inline struct jv *jv_idx(const struct jv *a, size_t i)
{
	return a && a->type == JV_ARRAY && i < a->n ? a->u.a[i] : NULL;
}
/* Elements of an array (0 for anything else). */
static inline size_t jv_len(const struct jv *a)
{
	return a && a->type == JV_ARRAY ? a->n : 0;
}
static inline bool jv_is(const struct jv *v, enum jv_type t)
{
	return v != NULL && v->type == t;
}

/* json-c trees in and out (the paths json-c parses, and the tests that hold the pruner to json-c). */
struct json_object;
struct jv *jv_from_json(struct jv_arena *a, struct json_object *o);
/* A new json-c tree (json_object_put it); NULL for null. */
struct json_object *jv_to_json(const struct jv *v);

#endif
