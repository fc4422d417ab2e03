/* The content-addressed image cache (layout and crash rules in imgcache.h). */
#include "engine/imgcache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/buf.h"
#include "core/util.h"
#include "core/xmalloc.h"
#include "engine/ociref.h"

static pthread_mutex_t root_mu = PTHREAD_MUTEX_INITIALIZER;
static char *cache_root;

void imgcache_set_root(const char *root)
{
	pthread_mutex_lock(&root_mu);
	free(cache_root);
	cache_root = root ? xstrdup(root) : NULL;
	pthread_mutex_unlock(&root_mu);
}

const char *imgcache_root(void)
{
	return cache_root;
}

/* A reference as a file name: bytes outside [A-Za-z0-9._-] as %XX (no '/', never "." or ".."). */
static char *ref_file(const char *root, const char *ref)
{
	struct buf b;
	buf_init(&b);
	buf_printf(&b, "%s/refs/", root);
	for (const unsigned char *p = (const unsigned char *)ref; *p; p++) {
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '-' ||
		    *p == '_' || (*p == '.' && p != (const unsigned char *)ref))
			buf_add_char(&b, (char)*p);
		else
			buf_printf(&b, "%%%02X", *p);
	}
	return buf_steal(&b);
}

static char *normalized(const char *ref)
{
	struct oci_ref r;
	char *err = NULL;
	if (oci_ref_parse(ref, &r, &err) < 0) {
		free(err);
		return NULL;
	}
	char *s = oci_ref_string(&r);
	oci_ref_free(&r);
	return s;
}

char *imgcache_disk(const char *root, const char *layer_digest)
{
	if (!oci_digest_valid(layer_digest))
		return NULL;
	static const char *exts[] = { "qcow2", "raw" };
	for (int i = 0; i < 2; i++) {
		char *p = xasprintf("%s/disks/sha256-%s.%s", root, layer_digest + 7, exts[i]);
		struct stat st;
		if (stat(p, &st) == 0 && S_ISREG(st.st_mode))
			return p;
		free(p);
	}
	return NULL;
}

/* Reads a reference file: "<manifest digest> <layer digest> <ext>". */
static int read_ref(const char *path, char **mdig, char **ldig)
{
	char *text = util_read_file(path, NULL);
	if (text == NULL)
		return -1;
	char m[80], l[80], e[8];
	int rc = -1;
	if (sscanf(text, "%79s %79s %7s", m, l, e) == 3 && oci_digest_valid(m) && oci_digest_valid(l)) {
		*mdig = xstrdup(m);
		*ldig = xstrdup(l);
		rc = 0;
	}
	free(text);
	return rc;
}

char *imgcache_lookup(const char *ref, char **digest)
{
	if (digest)
		*digest = NULL;
	pthread_mutex_lock(&root_mu);
	char *root = cache_root ? xstrdup(cache_root) : NULL;
	pthread_mutex_unlock(&root_mu);
	char *n = root ? normalized(ref) : NULL;
	char *out = NULL;
	if (n) {
		char *f = ref_file(root, n), *m = NULL, *l = NULL;
		if (read_ref(f, &m, &l) == 0) {
			out = imgcache_disk(root, l);
			if (out && digest)
				*digest = xstrdup(m);
		}
		free(f);
		free(m);
		free(l);
	}
	free(n);
	free(root);
	return out;
}

char *imgcache_hook(const char *ref)
{
	return imgcache_lookup(ref, NULL);
}

static int mkdirs(const char *root, char **err)
{
	static const char *subs[] = { "", "/disks", "/refs", "/tmp" };
	for (size_t i = 0; i < 4; i++) {
		char *d = xasprintf("%s%s", root, subs[i]);
		int rc = util_mkdir_p(d, 0700);
		if (rc < 0) {
			*err = xasprintf("image cache %s: %s", d, strerror(errno));
			free(d);
			return -1;
		}
		free(d);
	}
	return 0;
}

int imgcache_lock_shared(const char *root, char **err)
{
	if (mkdirs(root, err) < 0)
		return -1;
	char *p = xasprintf("%s/lock", root);
	int fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0 || flock(fd, LOCK_SH) < 0) {
		*err = xasprintf("image cache lock %s: %s", p, strerror(errno));
		if (fd >= 0)
			close(fd);
		fd = -1;
	}
	free(p);
	return fd;
}

int imgcache_tmp(const char *root, char **path, char **err)
{
	if (mkdirs(root, err) < 0)
		return -1;
	char *p = xasprintf("%s/tmp/pull-XXXXXX", root);
	int fd = mkostemp(p, O_CLOEXEC);
	if (fd < 0 || flock(fd, LOCK_EX) < 0) {
		*err = xasprintf("image cache %s: %s", p, strerror(errno));
		if (fd >= 0) {
			unlink(p);
			close(fd);
		}
		free(p);
		return -1;
	}
	*path = p;
	return fd;
}

static int sync_dir(const char *dir)
{
	int d = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (d < 0)
		return -1;
	int rc = fsync(d);
	close(d);
	return rc;
}

int imgcache_commit_disk(const char *root, const char *tmp, int fd, const char *layer_digest, const char *ext,
			 char **err)
{
	if (!oci_digest_valid(layer_digest) || (strcmp(ext, "qcow2") != 0 && strcmp(ext, "raw") != 0)) {
		*err = xstrdup("image cache: bad layer digest or disk format");
		return -1;
	}
	char *dst = xasprintf("%s/disks/sha256-%s.%s", root, layer_digest + 7, ext);
	char *dir = xasprintf("%s/disks", root);
	int rc = -1;
	if (fchmod(fd, 0644) < 0 || fsync(fd) < 0 || rename(tmp, dst) < 0 || sync_dir(dir) < 0)
		*err = xasprintf("image cache %s: %s", dst, strerror(errno));
	else
		rc = 0;
	free(dst);
	free(dir);
	return rc;
}

int imgcache_set_ref(const char *root, const char *ref, const char *manifest_digest, const char *layer_digest,
		     const char *ext, char **err)
{
	if (mkdirs(root, err) < 0)
		return -1;
	char *n = normalized(ref);
	if (n == NULL) {
		*err = xasprintf("image cache: \"%s\" is not an image reference", ref);
		return -1;
	}
	char *f = ref_file(root, n);
	char *text = xasprintf("%s %s %s\n", manifest_digest, layer_digest, ext);
	int rc = util_write_file_atomic(f, text, strlen(text), 0644);
	if (rc < 0)
		*err = xasprintf("image cache %s: %s", f, strerror(errno));
	free(text);
	free(f);
	free(n);
	return rc < 0 ? -1 : 0;
}

static bool in_list(char *const *list, int n, const char *s)
{
	for (int i = 0; i < n; i++)
		if (strcmp(list[i], s) == 0)
			return true;
	return false;
}

int imgcache_sweep(const char *const *refs, int nrefs, int *removed)
{
	*removed = 0;
	pthread_mutex_lock(&root_mu);
	char *root = cache_root ? xstrdup(cache_root) : NULL;
	pthread_mutex_unlock(&root_mu);
	if (root == NULL)
		return 0;
	char *lp = xasprintf("%s/lock", root);
	int lfd = open(lp, O_RDWR | O_CLOEXEC);
	free(lp);
	if (lfd < 0) {
		free(root);
		return 0; /* never pulled into */
	}
	if (flock(lfd, LOCK_EX | LOCK_NB) < 0) {
		close(lfd);
		free(root);
		return 1; /* a pull runs: next time */
	}
	/* the reference files in use, and the layers they keep */
	char **keep = xcalloc((size_t)nrefs + 1, sizeof *keep);
	int nkeep = 0;
	for (int i = 0; i < nrefs; i++) {
		char *n = normalized(refs[i]);
		if (n)
			keep[nkeep++] = ref_file(root, n);
		free(n);
	}
	char **layers = NULL;
	int nlayers = 0;
	char *rd = xasprintf("%s/refs", root);
	DIR *d = opendir(rd);
	struct dirent *de;
	while (d && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		char *f = util_path_join(rd, de->d_name), *m = NULL, *l = NULL;
		if (!in_list(keep, nkeep, f) || read_ref(f, &m, &l) < 0) {
			if (unlink(f) == 0)
				(*removed)++;
		} else {
			layers = xreallocarray(layers, (size_t)nlayers + 1, sizeof *layers);
			layers[nlayers++] = xasprintf("sha256-%s", l + 7);
		}
		free(m);
		free(l);
		free(f);
	}
	if (d)
		closedir(d);
	free(rd);
	char *dd = xasprintf("%s/disks", root);
	d = opendir(dd);
	while (d && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		char *stem = xstrdup(de->d_name);
		char *dot = strchr(stem, '.');
		if (dot)
			*dot = '\0';
		if (!in_list(layers, nlayers, stem)) {
			char *f = util_path_join(dd, de->d_name);
			if (unlink(f) == 0)
				(*removed)++;
			free(f);
		}
		free(stem);
	}
	if (d)
		closedir(d);
	free(dd);
	/* temporary files: only those no process holds (their writer died) */
	char *td = xasprintf("%s/tmp", root);
	d = opendir(td);
	while (d && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		char *f = util_path_join(td, de->d_name);
		int fd = open(f, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0 && unlink(f) == 0)
			(*removed)++;
		if (fd >= 0)
			close(fd);
		free(f);
	}
	if (d)
		closedir(d);
	free(td);
	for (int i = 0; i < nkeep; i++)
		free(keep[i]);
	free(keep);
	for (int i = 0; i < nlayers; i++)
		free(layers[i]);
	free(layers);
	close(lfd);
	free(root);
	return 0;
}
