/* A minimal PNG writer (8-bit RGB, no interlace, zlib-compressed) for VNC screenshots; pure apart from the file it
 * writes. */
#ifndef KVCON_CONSOLE_PNG_H
#define KVCON_CONSOLE_PNG_H

#include <stddef.h>
#include <stdint.h>

struct buf;

/* Same, written atomically to path (util_write_file_why: an existing path must be a regular file of the euid).
 * Returns 0 or -1 with errno set and why (UTIL_WHY_LEN bytes, or NULL). */
int png_write_rgbx(const char *path, const uint8_t *pix, int w, int h, size_t stride, char *why);

#endif
