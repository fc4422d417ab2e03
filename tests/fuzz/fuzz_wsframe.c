/* libFuzzer harness for kube/wsframe: arbitrary bytes as a server stream, fed whole and in chunks whose sizes
 * come from the input itself; both ways must produce the same events (same bytes, same outcome). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "kube/wsframe.h"

struct acc {
	struct buf b;
};

static int acc_cb(void *arg, const struct wsframe_event *ev)
{
	struct acc *a = arg;
	uint8_t tag[4] = { (uint8_t)ev->type, (uint8_t)ev->opcode, (uint8_t)(ev->last ? 1 : 0), 0 };
	/* Data may arrive in pieces when the input is chunked: only the bytes and the end of each message are
	 * comparable, so a data event adds its bytes and, when last, the tag after them. */
	if (ev->len)
		buf_add(&a->b, ev->data, ev->len);
	if (ev->type != WSFRAME_DATA || ev->last)
		buf_add(&a->b, tag, sizeof tag);
	if (ev->type == WSFRAME_CLOSE)
		buf_printf(&a->b, "%d", ev->close_code);
	return 0;
}

static long run(const uint8_t *d, size_t n, size_t chunk, int role, struct acc *a, int *code)
{
	struct wsframe_parser p;
	wsframe_parser_init(&p, role ? WSFRAME_SERVER : WSFRAME_CLIENT);
	p.max_frame = 4096;
	p.max_message = 8192;
	long total = 0;
	for (size_t off = 0; off < n;) {
		size_t k = chunk && chunk < n - off ? chunk : n - off;
		long r = wsframe_feed(&p, d + off, k, acc_cb, a);
		if (r < 0) {
			*code = p.err_code;
			return -1;
		}
		total += r;
		if ((size_t)r < k)
			break;
		off += k;
	}
	*code = 0;
	return total;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	size_t chunk = (size_t)(data[0] % 17) + 1;
	int role = data[1] & 1;
	data += 2;
	size -= 2;
	struct acc a1, a2;
	buf_init(&a1.b);
	buf_init(&a2.b);
	int c1, c2;
	long r1 = run(data, size, 0, role, &a1, &c1);
	long r2 = run(data, size, chunk, role, &a2, &c2);
	/* Both ways must agree on success or failure and the close code. On success they must deliver the same
	 * bytes; after a violation, how much of the bad message was already delivered depends on chunking (a
	 * text chunk is handed over before a later invalid UTF-8 byte is seen), so only the code is compared. */
	if ((r1 < 0) != (r2 < 0) || c1 != c2)
		abort();
	if (r1 >= 0 && (r1 != r2 || a1.b.len != a2.b.len || (a1.b.len && memcmp(a1.b.data, a2.b.data, a1.b.len))))
		abort();
	buf_free(&a1.b);
	buf_free(&a2.b);
	return 0;
}
