/* libFuzzer harness for the watch-stream path: bytes split into chunks go through the reflector's line parser
 * (kube/jstream.c) and kube_reflector_apply into a store, as every kind, so broken framing, truncated events,
 * ERROR/BOOKMARK events and hostile objects are all exercised; the same bytes also go through the streamed list
 * decoder (kube_reflector_apply_list_chunked: items decoded as they arrive, in small batches). Seeds: tests/fuzz/corpus/watchstream/ (watch
 * streams captured from fakekube). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "kube/reflector.h"
#include "model/store.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct source *src;
	if (src == NULL)
		src = source_new(SOURCE_KUBE, "fuzz");
	if (size > 1 << 20)
		return 0;
	size_t chunk = size % 61 + 1; /* varying chunk boundaries, deterministic per input */
	for (int k = 0; k < OBJ_KIND_COUNT; k++) {
		struct store *st = store_new();
		struct kube_reflector_cfg cfg = { .st = st, .src = src, .kind = (enum obj_kind)k };
		struct kube_reflector *r = kube_reflector_new(&cfg);
		for (size_t off = 0; off < size; off += chunk) {
			size_t n = size - off < chunk ? size - off : chunk;
			if (kube_reflector_feed(r, (const char *)data + off, n) < 0)
				break;
		}
		char *err = NULL;
		kube_reflector_apply_list_chunked(r, (const char *)data, size, chunk, chunk * 3, &err);
		free(err);
		kube_reflector_free(r);
		store_free(st);
	}
	return 0;
}
