/* Interned strings: one hash map of canonical copies. */
#include "core/intern.h"

#include <stdlib.h>
#include <string.h>

#include "core/hmap.h"
#include "core/xmalloc.h"

static struct hmap pool;

const char *intern(const char *s)
{
	if (s == NULL)
		return NULL;
	const char *hit = hmap_get(&pool, s);
	if (hit)
		return hit;
	char *copy = xstrdup(s);
	hmap_put(&pool, copy, copy);
	return copy;
}

const char *intern_n(const char *s, size_t n)
{
	char stackbuf[128];
	if (n < sizeof stackbuf) {
		memcpy(stackbuf, s, n);
		stackbuf[n] = '\0';
		return intern(stackbuf);
	}
	char *tmp = xstrndup(s, n);
	const char *r = intern(tmp);
	free(tmp);
	return r;
}
