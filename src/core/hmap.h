/* A string-keyed hash map (open addressing, linear probing). Keys are borrowed: they must live as long as
 * their entry (typically the key points into the value). */
#ifndef KVCON_CORE_HMAP_H
#define KVCON_CORE_HMAP_H

#include <stddef.h>
#include <stdint.h>

struct hmap_slot {
	const char *key;
	void *value;
	uint32_t hash;
};

struct hmap {
	struct hmap_slot *slots;
	size_t cap;   /* power of two */
	size_t count;
	size_t tombs;
};

void hmap_init(struct hmap *m);
void hmap_free(struct hmap *m); /* frees the table, not keys or values */
void *hmap_get(const struct hmap *m, const char *key);
/* Inserts or replaces; returns the previous value or NULL. */
void *hmap_put(struct hmap *m, const char *key, void *value);
void *hmap_del(struct hmap *m, const char *key);
uint32_t hmap_hash(const char *s);

/* Iteration: for (size_t i = 0; hmap_next(m, &i, &k, &v); ) ... ; do not insert while iterating. */
int hmap_next(const struct hmap *m, size_t *iter, const char **key, void **value);

#endif
