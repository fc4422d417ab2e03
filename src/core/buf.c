/* A growable byte buffer, always NUL-terminated after its contents. */
#include "core/buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/xmalloc.h"

void buf_init(struct buf *b)
{
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
}

void buf_free(struct buf *b)
{
	free(b->data);
	buf_init(b);
}

void buf_reset(struct buf *b)
{
	b->len = 0;
	if (b->data)
		b->data[0] = '\0';
}

void buf_reserve(struct buf *b, size_t extra)
{
	if (b->len + extra + 1 <= b->cap)
		return;
	size_t cap = b->cap ? b->cap : 64;
	while (cap < b->len + extra + 1)
		cap *= 2;
	b->data = xrealloc(b->data, cap);
	b->cap = cap;
}

void buf_add(struct buf *b, const void *data, size_t len)
{
	buf_reserve(b, len);
	if (len)
		memcpy(b->data + b->len, data, len);
	b->len += len;
	b->data[b->len] = '\0';
}

void buf_add_str(struct buf *b, const char *s)
{
	buf_add(b, s, strlen(s));
}

void buf_add_char(struct buf *b, char c)
{
	buf_add(b, &c, 1);
}

void buf_printf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	buf_reserve(b, (size_t)n);
	va_start(ap, fmt);
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

void buf_consume(struct buf *b, size_t n)
{
	if (n >= b->len) {
		buf_reset(b);
		return;
	}
	memmove(b->data, b->data + n, b->len - n);
	b->len -= n;
	b->data[b->len] = '\0';
}

char *buf_steal(struct buf *b)
{
	char *d = b->data ? b->data : xstrdup("");
	buf_init(b);
	return d;
}

void buf_add_utf8(struct buf *b, uint32_t ch)
{
	char u[4];
	size_t n;
	if (ch < 0x80) {
		u[0] = (char)ch;
		n = 1;
	} else if (ch < 0x800) {
		u[0] = (char)(0xc0 | ch >> 6);
		u[1] = (char)(0x80 | (ch & 63));
		n = 2;
	} else if (ch < 0x10000) {
		u[0] = (char)(0xe0 | ch >> 12);
		u[1] = (char)(0x80 | (ch >> 6 & 63));
		u[2] = (char)(0x80 | (ch & 63));
		n = 3;
	} else {
		u[0] = (char)(0xf0 | ch >> 18);
		u[1] = (char)(0x80 | (ch >> 12 & 63));
		u[2] = (char)(0x80 | (ch >> 6 & 63));
		u[3] = (char)(0x80 | (ch & 63));
		n = 4;
	}
	buf_add(b, u, n);
}
