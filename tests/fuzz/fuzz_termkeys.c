/* libFuzzer harness for console/termkeys: arbitrary terminal input, fed whole and in chunks whose sizes come from
 * the input itself; both ways must report the same events (a key sequence split across reads decodes the same),
 * and every event must be well formed. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "console/termkeys.h"
#include "core/buf.h"

static void record(const struct termkeys_event *ev, void *arg)
{
	struct buf *b = arg;
	if (ev->type == TK_MOUSE && (ev->button < -1 || ev->button > 4))
		abort();
	if (ev->type == TK_KEY && ev->keysym == 0 && !(ev->mods & TK_CTRL))
		abort();
	buf_printf(b, "%d:%x:%u:%d:%d:%d:%d:%d;", (int)ev->type, ev->keysym, ev->mods, ev->col, ev->row, ev->button,
		   ev->press, ev->motion);
}

static void run(const uint8_t *d, size_t n, const uint8_t *sizes, size_t nsizes, struct buf *out)
{
	struct termkeys *k = termkeys_new(record, out);
	size_t off = 0, i = 0;
	while (off < n) {
		size_t c = nsizes ? (size_t)sizes[i++ % nsizes] % 17 + 1 : n;
		if (c > n - off)
			c = n - off;
		termkeys_feed(k, d + off, c);
		off += c;
	}
	termkeys_flush(k);
	termkeys_free(k);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct buf whole, chunked;
	buf_init(&whole);
	buf_init(&chunked);
	run(data, size, NULL, 0, &whole);
	run(data, size, data, size < 16 ? size : 16, &chunked);
	/* a lone ESC at a chunk boundary is still pending, not flushed: the two runs must agree exactly */
	if (whole.len != chunked.len || (whole.len && memcmp(whole.data, chunked.data, whole.len) != 0))
		abort();
	buf_free(&whole);
	buf_free(&chunked);
	return 0;
}
