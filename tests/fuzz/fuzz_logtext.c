/* libFuzzer harness for text from outside on its way to the terminal: container and serial logs through
 * core/linebuf.c (fed whole, then byte by byte and in uneven pieces: the same lines must come out, and no line
 * may hold a byte that drives a terminal: C0, DEL, an ESC, a C1 control as UTF-8, or invalid UTF-8 left raw),
 * then those lines as tab-separated cells through core/tabwriter.c (kubectl describe's alignment: the output
 * holds no control byte but newlines). Seeds: tests/fuzz/corpus/logtext/. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/linebuf.h"
#include "core/tabwriter.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void collect(void *arg, const char *line, size_t len)
{
	struct buf *b = arg;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)line[i];
		if (c < 0x20 || c == 0x7f)
			abort(); /* a C0 control, ESC or DEL reached the output */
		if (c == 0xc2 && i + 1 < len && (unsigned char)line[i + 1] >= 0x80 && (unsigned char)line[i + 1] <= 0x9f)
			abort(); /* a C1 control (CSI, OSC, ...) as UTF-8 */
	}
	buf_add(b, line, len);
	buf_add_char(b, '\n');
}

static void run(const uint8_t *data, size_t size, size_t step, struct buf *out)
{
	struct linebuf lb;
	linebuf_init(&lb);
	for (size_t i = 0; i < size; i += step) {
		size_t n = size - i < step ? size - i : step;
		linebuf_feed(&lb, (const char *)data + i, n, collect, out);
	}
	linebuf_flush(&lb, collect, out);
	linebuf_free(&lb);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 16384) /* below LINEBUF_MAX: a whole line is never cut, so the splits cannot differ */
		return 0;
	struct buf whole, bytes, uneven;
	buf_init(&whole);
	buf_init(&bytes);
	buf_init(&uneven);
	run(data, size, size ? size : 1, &whole);
	run(data, size, 1, &bytes);
	run(data, size, 7, &uneven);
	if (whole.len != bytes.len || whole.len != uneven.len || (whole.len && (memcmp(whole.data, bytes.data, whole.len) != 0 ||
								      memcmp(whole.data, uneven.data, whole.len) != 0)))
		abort(); /* the lines depend on how the bytes arrived */
	/* the escaped lines as cells: every third space becomes a tab */
	for (size_t i = 0, k = 0; i < whole.len; i++)
		if (whole.data[i] == ' ' && ++k % 3 == 0)
			whole.data[i] = '\t';
	struct buf tw;
	buf_init(&tw);
	tabwriter_format(whole.data ? whole.data : "", whole.len, 2, &tw);
	for (size_t i = 0; i < tw.len; i++) {
		unsigned char c = (unsigned char)tw.data[i];
		if ((c < 0x20 && c != '\n') || c == 0x7f)
			abort();
	}
	buf_free(&tw);
	buf_free(&whole);
	buf_free(&bytes);
	buf_free(&uneven);
	return 0;
}
