/* Owner and mode checks of the paths kvcon believes: its config file, its state, cache and runtime directories and
 * the files it reads back from them (trust.h says what is trusted and why). */
#include "core/trust.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/util.h"
#include "core/xmalloc.h"

static char *says(const char *p, const char *what)
{
	char *e = util_escape_display(p), *s = xasprintf("%s: %s", e, what);
	free(e);
	return s;
}

/* One component of a resolved path. leaf: the checked path itself; holder: the directory that holds it. */
static int judge(const char *p, const struct stat *st, bool leaf, bool holder, char **why)
{
	uid_t me = geteuid();
	char what[160];
	if (!leaf && !S_ISDIR(st->st_mode)) {
		*why = says(p, "is not a directory");
		return -1;
	}
	if (st->st_uid != 0 && st->st_uid != me) {
		snprintf(what, sizeof what, "owned by uid %u, not root or uid %u (another user could have written it)",
			 (unsigned)st->st_uid, (unsigned)me);
		*why = says(p, what);
		return -1;
	}
	if (st->st_mode & (S_IWGRP | S_IWOTH)) {
		/* /tmp above a private directory: others cannot rename or remove what they do not own there */
		bool sticky_ok = !leaf && !holder && (st->st_mode & S_ISVTX) && st->st_uid == 0;
		if (!sticky_ok) {
			snprintf(what, sizeof what, "mode %04o lets %s write it%s", (unsigned)(st->st_mode & 07777),
				 (st->st_mode & S_IWOTH) ? "others" : "the group",
				 (st->st_mode & S_ISVTX) && S_ISDIR(st->st_mode)
					 ? " (a shared sticky directory may only be further up, above a private one)"
					 : "");
			*why = says(p, what);
			return -1;
		}
	}
	return 0;
}

/* Checks the resolved, existing path r and every directory above it up to /; the leaf's lstat in *leaf_st. With
 * in_holder, r is the directory that holds what is checked (a link, a name not there yet), not the leaf itself. */
static int check_chain(const char *r, bool in_holder, struct stat *leaf_st, char **why)
{
	char *p = xstrdup(r);
	bool leaf = !in_holder, holder = in_holder;
	int rc = -1;
	for (;;) {
		struct stat st;
		if (lstat(p, &st) < 0) {
			char what[96];
			snprintf(what, sizeof what, "cannot be examined (%s)", strerror(errno));
			*why = says(p, what);
			goto out;
		}
		if (S_ISLNK(st.st_mode)) { /* realpath resolved it a moment ago: someone is changing it */
			*why = says(p, "became a symbolic link while it was checked");
			goto out;
		}
		if (leaf && leaf_st)
			*leaf_st = st;
		if (judge(p, &st, leaf, holder, why) < 0)
			goto out;
		char *s = strrchr(p, '/');
		if (s == NULL || (s == p && p[1] == '\0'))
			break;
		if (s == p)
			p[1] = '\0';
		else
			*s = '\0';
		holder = leaf;
		leaf = false;
	}
	rc = 0;
out:
	free(p);
	return rc;
}

static char *parent_of(const char *path)
{
	char *d = xstrdup(path);
	char *s = strrchr(d, '/');
	if (s == NULL) {
		free(d);
		return xstrdup(".");
	}
	if (s == d)
		s[1] = '\0';
	else
		*s = '\0';
	return d;
}

/* trust_check, also giving the resolved path (caller frees) and the leaf's lstat when TRUST_OK. */
static enum trust_result check(const char *path, struct stat *leaf_st, char **resolved, char **why)
{
	char *r = realpath(path, NULL);
	*why = NULL;
	if (r == NULL && errno == ENOENT) {
		/* the deepest directory that exists decides whether creating the rest below it is safe */
		char *a = parent_of(path);
		for (;;) {
			char *ra = realpath(a, NULL);
			if (ra) {
				int rc = check_chain(ra, true, NULL, why);
				free(ra);
				free(a);
				return rc < 0 ? TRUST_REFUSED : TRUST_MISSING;
			}
			if (errno != ENOENT || strcmp(a, "/") == 0 || strcmp(a, ".") == 0)
				break;
			char *up = parent_of(a);
			free(a);
			a = up;
		}
		free(a);
	}
	if (r == NULL) {
		char what[96];
		snprintf(what, sizeof what, "cannot be examined (%s)", strerror(errno));
		*why = says(path, what);
		return TRUST_REFUSED;
	}
	int rc = check_chain(r, false, leaf_st, why);
	struct stat ls;
	if (rc == 0 && lstat(path, &ls) == 0 && S_ISLNK(ls.st_mode)) {
		/* the link itself: whoever can write the directory holding it chooses what it points at */
		char *d = parent_of(path), *rd = realpath(d, NULL);
		if (rd == NULL) {
			*why = says(d, "cannot be examined");
			rc = -1;
		} else {
			rc = check_chain(rd, true, NULL, why);
		}
		free(rd);
		free(d);
	}
	if (rc < 0) {
		free(r);
		return TRUST_REFUSED;
	}
	if (resolved)
		*resolved = r;
	else
		free(r);
	return TRUST_OK;
}

enum trust_result trust_check(const char *path, char **why)
{
	char *w = NULL;
	enum trust_result rc = check(path, NULL, NULL, &w);
	if (why)
		*why = w;
	else
		free(w);
	return rc;
}

static char *read_fd(int fd, size_t *lenp)
{
	size_t cap = 4096, len = 0;
	char *buf = xmalloc(cap);
	for (;;) {
		if (cap - len < 2)
			buf = xrealloc(buf, cap *= 2);
		ssize_t n = read(fd, buf + len, cap - len - 1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			free(buf);
			return NULL;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	if (lenp)
		*lenp = len;
	return buf;
}

int trust_dir_open(const char *path, char **why)
{
	struct stat want, got;
	char *w = NULL;
	*why = NULL;
	enum trust_result tr = check(path, &want, NULL, &w);
	if (tr != TRUST_OK) {
		*why = w;
		errno = tr == TRUST_MISSING ? ENOENT : EPERM;
		return -1;
	}
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (fstat(fd, &got) < 0 || got.st_dev != want.st_dev || got.st_ino != want.st_ino) {
		*why = says(path, "was replaced while it was checked");
		close(fd);
		errno = EPERM;
		return -1;
	}
	return fd;
}

/* What every read checks of the file it opened (the file that was checked, when want is given; a regular file;
 * judged as a file of the trusted tree, by its real path): its text, or NULL with *w saying why (NULL: errno). */
static char *read_opened(int fd, const char *path, const char *real, const struct stat *want, size_t *len, char **w)
{
	struct stat got;
	if (fstat(fd, &got) < 0)
		return NULL;
	if (want && (got.st_dev != want->st_dev || got.st_ino != want->st_ino))
		*w = says(path, "was replaced while it was checked");
	else if (!S_ISREG(got.st_mode))
		*w = says(path, "is not a regular file");
	else if (judge(real, &got, true, false, w) == 0)
		return read_fd(fd, len);
	return NULL;
}

/* A read's end: w handed out (or freed), errno EPERM when refused, else e. */
static char *read_end(char *text, char *w, int e, char **why)
{
	if (why)
		*why = w;
	else
		free(w);
	errno = w ? EPERM : e;
	return text;
}

char *trust_read_at(int dirfd, const char *dir, const char *name, size_t *len, char **why)
{
	char *path = util_path_join(dir, name), *w = NULL, *text = NULL;
	int e = EPERM;
	if (strchr(name, '/') || strcmp(name, ".") == 0 || strcmp(name, "..") == 0 || *name == '\0') {
		w = says(path, "is not a name in its directory");
	} else {
		int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0 && errno == ELOOP) {
			w = says(path, "is a symbolic link");
		} else if (fd < 0) {
			e = errno;
		} else {
			text = read_opened(fd, path, path, NULL, len, &w);
			e = errno;
			close(fd);
		}
	}
	free(path);
	return read_end(text, w, e, why);
}

char *trust_read_file(const char *path, size_t *len, char **why)
{
	struct stat want;
	char *r = NULL, *w = NULL, *text = NULL;
	enum trust_result tr = check(path, &want, &r, &w);
	if (tr != TRUST_OK)
		return read_end(NULL, w, tr == TRUST_MISSING ? ENOENT : EPERM, why);
	int e;
	int fd = open(r, O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		e = errno;
	} else {
		text = read_opened(fd, path, r, &want, len, &w);
		e = errno;
		close(fd);
	}
	free(r);
	return read_end(text, w, e, why);
}
