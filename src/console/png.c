/* A minimal PNG writer: signature, IHDR, one IDAT (zlib stream of filter-0 scanlines), IEND. zlib is already in
 * the process through libvncclient; its crc32() covers the chunk checksums. */
#include "console/png.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "core/buf.h"
#include "core/util.h"
#include "core/xmalloc.h"

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static void chunk(struct buf *out, const char *type, const uint8_t *data, size_t len)
{
	uint8_t hdr[8];
	put32(hdr, (uint32_t)len);
	memcpy(hdr + 4, type, 4);
	buf_add(out, hdr, 8);
	buf_add(out, data, len);
	uLong crc = crc32(0L, (const Bytef *)type, 4);
	if (len)
		crc = crc32(crc, data, (uInt)len);
	uint8_t c[4];
	put32(c, (uint32_t)crc);
	buf_add(out, c, 4);
}

static int png_encode_rgbx(struct buf *out, const uint8_t *pix, int w, int h, size_t stride)
{
	if (w <= 0 || h <= 0 || w > 65535 || h > 65535 || pix == NULL)
		return -1;
	size_t row = (size_t)w * 3 + 1, raw_len = row * (size_t)h;
	uint8_t *raw = xmalloc(raw_len);
	for (int y = 0; y < h; y++) {
		uint8_t *d = raw + (size_t)y * row;
		const uint8_t *s = pix + (size_t)y * stride;
		*d++ = 0; /* filter: none */
		for (int x = 0; x < w; x++, s += 4) {
			*d++ = s[0];
			*d++ = s[1];
			*d++ = s[2];
		}
	}
	uLongf zlen = compressBound((uLong)raw_len);
	uint8_t *z = xmalloc(zlen);
	int rc = compress2(z, &zlen, raw, (uLong)raw_len, 6);
	free(raw);
	if (rc != Z_OK) {
		free(z);
		return -1;
	}
	static const uint8_t sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
	buf_add(out, sig, sizeof sig);
	uint8_t ihdr[13];
	put32(ihdr, (uint32_t)w);
	put32(ihdr + 4, (uint32_t)h);
	ihdr[8] = 8;  /* bit depth */
	ihdr[9] = 2;  /* colour type: RGB */
	ihdr[10] = 0; /* deflate */
	ihdr[11] = 0; /* adaptive filtering */
	ihdr[12] = 0; /* no interlace */
	chunk(out, "IHDR", ihdr, sizeof ihdr);
	chunk(out, "IDAT", z, zlen);
	chunk(out, "IEND", NULL, 0);
	free(z);
	return 0;
}

int png_write_rgbx(const char *path, const uint8_t *pix, int w, int h, size_t stride, char *why)
{
	struct buf b;
	buf_init(&b);
	int rc = png_encode_rgbx(&b, pix, w, h, stride);
	if (rc == 0) {
		rc = util_write_file_why(path, b.data, b.len, 0600, why); /* the guest's screen */
	} else {
		errno = EINVAL;
		if (why)
			snprintf(why, UTIL_WHY_LEN, "cannot encode a %dx%d image", w, h);
	}
	buf_free(&b);
	return rc;
}
