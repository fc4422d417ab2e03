/* libFuzzer harness for the Kubernetes object decoder (kube/decode.c): parses the input as JSON and decodes it
 * as every kind, so one corpus (tests/fuzz/corpus/decode/, seeded with KubeVirt's round-trip fixtures) covers
 * VMs, VMIs, pods and events. */
#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "kube/decode.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct source *src;
	if (src == NULL)
		src = source_new(SOURCE_KUBE, "fuzz");
	if (size > 1 << 20)
		return 0;
	struct json_tokener *tok = json_tokener_new_ex(64);
	struct json_object *j = json_tokener_parse_ex(tok, (const char *)data, (int)size);
	json_tokener_free(tok);
	if (j == NULL)
		return 0;
	uint64_t rv;
	kube_decode_rv(j, &rv);
	for (int k = 0; k < OBJ_KIND_COUNT; k++) {
		char *err = NULL;
		struct obj *o = kube_decode((enum obj_kind)k, j, src, &err);
		if (o)
			obj_heap_size(o);
		obj_free(o);
		free(err);
	}
	json_object_put(j);
	return 0;
}
