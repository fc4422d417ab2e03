/* A gzip-compressed ustar archive written in one pass (kvcon bundle): regular files only, mode 0644, names up to
 * 255 bytes (prefix + name). Written to a temporary file (util_temp_open: a random name, 0600) and renamed into
 * place by tarball_close, over nothing or a regular file of the euid only (util_temp_commit). */
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
