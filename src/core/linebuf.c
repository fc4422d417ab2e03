/* Lines of outside text, escaped for the terminal (see linebuf.h). */
#include "core/linebuf.h"

#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "core/xmalloc.h"

void linebuf_init(struct linebuf *lb)
{
	buf_init(&lb->pend);
	lb->esc = NULL;
	lb->esc_cap = 0;
}

void linebuf_free(struct linebuf *lb)
{
	buf_free(&lb->pend);
	free(lb->esc);
	lb->esc = NULL;
	lb->esc_cap = 0;
}

static void emit(struct linebuf *lb, const char *s, size_t n, linebuf_cb cb, void *arg)
{
	if (n > 0 && s[n - 1] == '\r')
		n--;
	size_t need = n * 4 + 1; /* the widest escape (\xNN) is 4 bytes a byte */
	if (need > lb->esc_cap) {
		lb->esc_cap = need;
		lb->esc = xrealloc(lb->esc, need);
	}
	size_t o = util_escape_display_n(s, n, lb->esc, lb->esc_cap);
	cb(arg, lb->esc, o);
}

/* How many bytes of s end in a complete UTF-8 sequence (a trailing partial one is held back). */
static size_t utf8_whole(const char *s, size_t n)
{
	size_t back = 0;
	while (back < 3 && back < n && ((unsigned char)s[n - 1 - back] & 0xc0) == 0x80)
		back++;
	if (back < n) {
		unsigned char lead = (unsigned char)s[n - 1 - back];
		size_t want = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
		if (want > back + 1)
			return n - back - 1;
	}
	return n;
}

void linebuf_feed(struct linebuf *lb, const char *data, size_t len, linebuf_cb cb, void *arg)
{
	while (len > 0) {
		const char *nl = memchr(data, '\n', len);
		size_t take = nl ? (size_t)(nl - data) : len;
		if (lb->pend.len == 0 && nl) {
			emit(lb, data, take, cb, arg);
		} else {
			buf_add(&lb->pend, data, take);
			if (nl) {
				emit(lb, lb->pend.data, lb->pend.len, cb, arg);
				buf_reset(&lb->pend);
			} else {
				while (lb->pend.len >= LINEBUF_MAX) {
					size_t w = utf8_whole(lb->pend.data, LINEBUF_MAX);
					emit(lb, lb->pend.data, w, cb, arg);
					buf_consume(&lb->pend, w);
				}
			}
		}
		if (!nl)
			break;
		data = nl + 1;
		len -= take + 1;
	}
}

void linebuf_flush(struct linebuf *lb, linebuf_cb cb, void *arg)
{
	if (lb->pend.len > 0) {
		emit(lb, lb->pend.data, lb->pend.len, cb, arg);
		buf_reset(&lb->pend);
	}
}
