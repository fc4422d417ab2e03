/* gzip + ustar writer for kvcon bundle (see tarball.h). */
#include "core/tarball.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "core/util.h"
#include "core/xmalloc.h"

struct tarball {
	char *path, *tmp;
	gzFile gz;
	int failed;
};

struct tarball *tarball_open(const char *path, char **err)
{
	struct tarball *t = xcalloc(1, sizeof *t);
	int fd = -1;
	t->path = xstrdup(path);
	char why[UTIL_WHY_LEN];
	if (util_target_check(path, why) < 0) { /* before minutes of collecting */
		*err = xasprintf("%s: %s", path, why);
		goto fail;
	}
	/* a random temporary name made O_EXCL, 0600 (the bundle holds the VM's logs and definition) */
	fd = util_temp_open(path, &t->tmp);
	if (fd < 0) {
		*err = xasprintf("%s: %s", path, strerror(errno ? errno : EIO));
		goto fail;
	}
	t->gz = gzdopen(fd, "wb9");
	if (t->gz == NULL) {
		*err = xasprintf("%s: %s", t->tmp, strerror(errno ? errno : EIO));
		close(fd);
		unlink(t->tmp);
		goto fail;
	}
	return t;
fail:
	free(t->path);
	free(t->tmp);
	free(t);
	return NULL;
}

static void put(struct tarball *t, const void *p, size_t n)
{
	if (!t->failed && n && gzwrite(t->gz, p, (unsigned)n) != (int)n)
		t->failed = 1;
}

/* width-1 octal digits and a NUL, as ustar wants its numbers */
static void octal(unsigned char *dst, int width, unsigned long long v)
{
	dst[width - 1] = '\0';
	for (int i = width - 2; i >= 0; i--, v >>= 3)
		dst[i] = (unsigned char)('0' + (v & 7));
}

int tarball_add(struct tarball *t, const char *name, const void *data, size_t len, int64_t mtime)
{
	unsigned char h[512];
	memset(h, 0, sizeof h);
	size_t nl = strlen(name);
	if (nl <= 100) {
		memcpy(h, name, nl);
	} else {
		/* split at a '/' so that the prefix (155) and the name (100) both fit */
		const char *cut = NULL;
		for (const char *p = name; *p; p++)
			if (*p == '/' && (size_t)(p - name) <= 155 && nl - (size_t)(p - name) - 1 <= 100)
				cut = p;
		if (cut == NULL || nl > 255) {
			t->failed = 1;
			return -1;
		}
		memcpy(h + 345, name, (size_t)(cut - name));
		memcpy(h, cut + 1, nl - (size_t)(cut - name) - 1);
	}
	octal(h + 100, 8, 0644);
	octal(h + 108, 8, 0);
	octal(h + 116, 8, 0);
	octal(h + 124, 12, (unsigned long long)len);
	octal(h + 136, 12, (unsigned long long)(mtime > 0 ? mtime : 0));
	h[156] = '0';
	memcpy(h + 257, "ustar", 6);
	memcpy(h + 263, "00", 2);
	memcpy(h + 265, "kvcon", 5);
	memcpy(h + 297, "kvcon", 5);
	memset(h + 148, ' ', 8);
	unsigned sum = 0;
	for (size_t i = 0; i < sizeof h; i++)
		sum += h[i];
	octal(h + 148, 7, sum);
	h[155] = ' ';
	put(t, h, sizeof h);
	put(t, data, len);
	static const unsigned char zero[512];
	if (len % 512)
		put(t, zero, 512 - len % 512);
	return t->failed ? -1 : 0;
}

int tarball_close(struct tarball *t, char **err)
{
	static const unsigned char zero[1024];
	put(t, zero, sizeof zero);
	int rc = 0;
	if (gzclose(t->gz) != Z_OK)
		t->failed = 1;
	char why[UTIL_WHY_LEN];
	if (t->failed) {
		*err = xasprintf("%s: write failed", t->tmp);
		unlink(t->tmp);
		rc = -1;
	} else if (util_temp_commit(t->tmp, t->path, why) < 0) { /* an existing path: a regular file of ours */
		*err = xasprintf("%s: %s", t->path, why);
		rc = -1;
	}
	free(t->path);
	free(t->tmp);
	free(t);
	return rc;
}
