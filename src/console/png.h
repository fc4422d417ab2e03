/* A minimal PNG writer (8-bit RGB, no interlace, zlib-compressed) for VNC screenshots; pure apart from the file it
 * writes. */
#ifndef KVCON_CONSOLE_PNG_H
#define KVCON_CONSOLE_PNG_H

#include <stddef.h>
#include <stdint.h>

struct buf;

/* Same, written atomically to path. Returns 0 or -1 with errno set. */
int png_write_rgbx(const char *path, const uint8_t *pix, int w, int h, size_t stride);

#endif
