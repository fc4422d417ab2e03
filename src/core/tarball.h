/* A gzip-compressed ustar archive written in one pass (kvcon bundle): regular files only, mode 0644, names up to
 * 255 bytes (prefix + name). Written to a temporary file and renamed into place by tarball_close. */
#ifndef KVCON_CORE_TARBALL_H
#define KVCON_CORE_TARBALL_H

#include <stddef.h>
#include <stdint.h>

struct tarball;

/* NULL with *err (caller frees). */
struct tarball *tarball_open(const char *path, char **err);
/* Adds a file. 0, or -1 (the error is kept for tarball_close). */
int tarball_add(struct tarball *t, const char *name, const void *data, size_t len, int64_t mtime);
/* Ends the archive, flushes and renames it into place; 0, or -1 with *err. Frees t either way. */
int tarball_close(struct tarball *t, char **err);

#endif
