/* libFuzzer harness for the engine service's request parsing (engine/apisel.c): the first byte picks a label
 * selector, a field selector, a continue token, a resourceVersion or a protobuf object (kind and name); the rest is
 * the parameter or body as a client sends it. A parsed selector is also matched against a fixed label set. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/xmalloc.h"
#include "engine/apisel.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *get(void *arg, const char *key)
{
	(void)arg;
	if (strcmp(key, "kubevirt.io") == 0)
		return "virt-launcher";
	if (strcmp(key, "metadata.name") == 0)
		return "demo";
	return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > 1 << 16)
		return 0;
	char *s = xstrndup((const char *)data + 1, size - 1);
	char *err = NULL, *last = NULL;
	uint64_t rv;
	switch (data[0] % 5) {
	case 4: {
		char *kind = NULL, *name = NULL;
		if (apisel_pb_kind_name(data + 1, size - 1, &kind, &name) == 0 && (!kind || !name))
			abort();
		free(kind);
		free(name);
		break;
	}
	case 0:
	case 1: {
		struct apisel *sel = apisel_parse(s, data[0] % 5 == 1, &err);
		if (sel)
			apisel_match(sel, get, NULL);
		apisel_free(sel);
		break;
	}
	case 2:
		if (apisel_continue_decode(s, &rv, &last) == 0) {
			char *again = apisel_continue_encode(rv, last);
			if (strcmp(again, s) != 0)
				abort(); /* a token that decodes encodes back to itself */
			free(again);
		}
		break;
	default:
		apisel_rv_parse(s, &rv);
		break;
	}
	free(last);
	free(err);
	free(s);
	return 0;
}
