/* A growable byte buffer, always NUL-terminated after its contents. */
#ifndef KVCON_CORE_BUF_H
#define KVCON_CORE_BUF_H

#include <stddef.h>
#include <stdint.h>

struct buf {
	char *data;
	size_t len;
	size_t cap;
};

void buf_init(struct buf *b);
void buf_free(struct buf *b); /* releases the storage; the struct can be reused after buf_init */
void buf_reset(struct buf *b); /* empties, keeps capacity */
void buf_reserve(struct buf *b, size_t extra);
void buf_add(struct buf *b, const void *data, size_t len);
void buf_add_str(struct buf *b, const char *s);
void buf_add_char(struct buf *b, char c);
void buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Removes the first n bytes. */
void buf_consume(struct buf *b, size_t n);
/* Hands the storage to the caller (who frees it) and empties the buffer. */
char *buf_steal(struct buf *b);

/* Appends the code point ch as UTF-8 (1 to 4 bytes). */
void buf_add_utf8(struct buf *b, uint32_t ch);

#endif
