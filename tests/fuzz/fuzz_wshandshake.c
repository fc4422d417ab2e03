/* libFuzzer harness for kube/ws.c's Upgrade answer parser: arbitrary bytes as the server's response head, whole
 * and as every prefix length the input names; a complete answer must stay complete with more bytes after it. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kube/ws.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ws_response r;
	const char *err;
	const char *proto = size && (data[0] & 1) ? "plain.kubevirt.io" : NULL;
	int rc = ws_parse_response((const char *)data, size, "dGhlIHNhbXBsZSBub25jZQ==", proto, &r, &err);
	if (rc < -1 || rc > 1 || (rc == -1 && !err))
		abort();
	if (rc == 1) {
		if (r.head_len > size || r.head_len < 4 || memcmp(data + r.head_len - 4, "\r\n\r\n", 4) != 0)
			abort();
		/* the same head with the rest cut off parses the same */
		struct ws_response r2;
		if (ws_parse_response((const char *)data, r.head_len, "dGhlIHNhbXBsZSBub25jZQ==", proto, &r2, &err) != 1 ||
		    r2.status != r.status || r2.head_len != r.head_len)
			abort();
	}
	return 0;
}
