/* libFuzzer harness for console/rfbgate.c: the input is a script of chunks, each for the viewer or the display
 * (first byte: side in bit 0, chunk length in the other bits). Whatever the peers send, the gate never relays a
 * byte to the display before the viewer answered the challenge for the password, never sends the display anything
 * before its version line was answered, and a failed gate stays failed. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "console/rfbgate.h"
#include "core/buf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct buf tv, td;
	buf_init(&tv);
	buf_init(&td);
	struct rfbgate *g = rfbgate_new("Secret12", size && (data[0] & 0x80) ? "kv-s3cret" : NULL, &tv);
	bool authed = false, failed = false;
	size_t i = 0;
	while (i < size) {
		bool viewer = !(data[i] & 1);
		size_t n = data[i] >> 1;
		i++;
		if (n > size - i)
			n = size - i;
		enum rfbgate_step st = viewer ? rfbgate_from_viewer(g, data + i, n, &tv, &td)
					      : rfbgate_from_display(g, data + i, n, &tv, &td);
		i += n;
		if (failed && st != RFBGATE_FAIL)
			abort();
		if (st == RFBGATE_FAIL) {
			failed = true;
			if (rfbgate_error(g)[0] == '\0')
				abort();
		}
		if (st == RFBGATE_OPEN_DISPLAY)
			authed = true;
		/* a random script cannot answer a random challenge (2^-64): nothing may reach the display */
		if (!authed && td.len != 0)
			abort();
		if (st == RFBGATE_RELAY && !authed)
			abort();
	}
	rfbgate_free(g);
	buf_free(&tv);
	buf_free(&td);
	return 0;
}
