/* A string-keyed hash map (open addressing, linear probing, tombstones on delete). */
#include "core/hmap.h"

#include <stdlib.h>
#include <string.h>

#include "core/xmalloc.h"

static const char TOMB[] = "";

uint32_t hmap_hash(const char *s)
{
	uint32_t h = 2166136261u; /* FNV-1a */
	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 16777619u;
	}
	return h ? h : 1;
}

void hmap_init(struct hmap *m)
{
	memset(m, 0, sizeof *m);
}

void hmap_free(struct hmap *m)
{
	free(m->slots);
	hmap_init(m);
}

static struct hmap_slot *find(const struct hmap *m, const char *key, uint32_t h)
{
	if (m->cap == 0)
		return NULL;
	size_t mask = m->cap - 1;
	for (size_t i = h & mask;; i = (i + 1) & mask) {
		struct hmap_slot *s = &m->slots[i];
		if (s->key == NULL)
			return NULL;
		if (s->key != TOMB && s->hash == h && strcmp(s->key, key) == 0)
			return s;
	}
}

static void grow(struct hmap *m)
{
	struct hmap_slot *old = m->slots;
	size_t oldcap = m->cap;
	size_t cap = oldcap ? oldcap : 16;
	while ((m->count + 1) * 4 >= cap * 3)
		cap *= 2;
	if (cap == oldcap && m->tombs == 0)
		cap *= 2;
	m->slots = xcalloc(cap, sizeof *m->slots);
	m->cap = cap;
	m->tombs = 0;
	size_t mask = cap - 1;
	for (size_t i = 0; i < oldcap; i++) {
		if (old[i].key == NULL || old[i].key == TOMB)
			continue;
		size_t j = old[i].hash & mask;
		while (m->slots[j].key != NULL)
			j = (j + 1) & mask;
		m->slots[j] = old[i];
	}
	free(old);
}

void *hmap_get(const struct hmap *m, const char *key)
{
	struct hmap_slot *s = find(m, key, hmap_hash(key));
	return s ? s->value : NULL;
}

void *hmap_put(struct hmap *m, const char *key, void *value)
{
	uint32_t h = hmap_hash(key);
	struct hmap_slot *s = find(m, key, h);
	if (s) {
		void *old = s->value;
		s->key = key;
		s->value = value;
		return old;
	}
	if ((m->count + m->tombs + 1) * 4 >= m->cap * 3)
		grow(m);
	size_t mask = m->cap - 1;
	size_t i = h & mask;
	while (m->slots[i].key != NULL && m->slots[i].key != TOMB)
		i = (i + 1) & mask;
	if (m->slots[i].key == TOMB)
		m->tombs--;
	m->slots[i].key = key;
	m->slots[i].value = value;
	m->slots[i].hash = h;
	m->count++;
	return NULL;
}

void *hmap_del(struct hmap *m, const char *key)
{
	struct hmap_slot *s = find(m, key, hmap_hash(key));
	if (s == NULL)
		return NULL;
	void *old = s->value;
	s->key = TOMB;
	s->value = NULL;
	m->count--;
	m->tombs++;
	return old;
}

int hmap_next(const struct hmap *m, size_t *iter, const char **key, void **value)
{
	for (; *iter < m->cap; (*iter)++) {
		struct hmap_slot *s = &m->slots[*iter];
		if (s->key != NULL && s->key != TOMB) {
			if (key)
				*key = s->key;
			if (value)
				*value = s->value;
			(*iter)++;
			return 1;
		}
	}
	return 0;
}
