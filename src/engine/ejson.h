/* The engine's JSON fields as tables: one row per field (key, type, offset in the struct), so a struct is written
 * (ejson_put) and read back (ejson_get) from the same rows and the record's writer and reader cannot drift apart.
 * Used for the VM record (record.c) and the migration state (migrate.c). */
#ifndef KVCON_ENGINE_EJSON_H
#define KVCON_ENGINE_EJSON_H

#include <json-c/json.h>
#include <stddef.h>

enum ejson_type {
	EJ_STR,  /* char * (owned when read): omitted when NULL; read as a copy, or a copy of def when absent */
	EJ_STRN, /* as EJ_STR, but written as null when NULL */
	EJ_ISTR, /* const char *, interned when read (def when absent) */
	EJ_UID,  /* char[UID_LEN]: always written; "" when absent */
	EJ_I64,  /* int64_t */
	EJ_U64,  /* uint64_t */
	EJ_INT,  /* int */
	EJ_BOOL, /* bool */
};

struct ejson_field {
	const char *key;
	enum ejson_type type;
	size_t off;
	const char *def; /* EJ_STR, EJ_ISTR: the value read when the key is absent */
};

#define EJSON_ROWS(t) (t), (sizeof(t) / sizeof((t)[0]))

/* Adds the fields of obj to the JSON object o, in table order. */
void ejson_put(json_object *o, const void *obj, const struct ejson_field *f, size_t n);
/* Fills the fields of obj from o (absent or mistyped keys read as 0, false, def). */
void ejson_get(void *obj, json_object *o, const struct ejson_field *f, size_t n);
/* A new JSON array of n objects, element i written from base + i * stride. */
json_object *ejson_array(const void *base, size_t stride, int n, const struct ejson_field *f, size_t nf);
/* Member key of o when it has that type, else NULL. */
json_object *ejson_child(json_object *o, const char *key, json_type type);
/* String member key of o, or NULL. */
const char *ejson_str(json_object *o, const char *key);

#endif
