/* libFuzzer harness for the engine service's request parsing (engine/apisel.c): the first byte picks a label
 * selector, a field selector, a continue token, a resourceVersion, a protobuf object's kind and name, a protobuf
 * Secret or ConfigMap as JSON, a JSON patch ([TARGET, OPS]) or a LabelSelector object ({matchLabels,
 * matchExpressions}); the rest is the parameter or body as a client sends it. A parsed selector is also matched
 * against a fixed label set; a LabelSelector printed (apisel_format) parses back to one that matches the same. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

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
	switch (data[0] % 7) {
	case 5: { /* a Secret or ConfigMap in protobuf: an object, or NULL */
		json_object *o = apisel_pb_object(data + 1, size - 1);
		if (o && !json_object_is_type(o, json_type_object))
			abort();
		json_object_put(o);
		break;
	}
	case 6: { /* [TARGET, OPS]: the patched target, or NULL with a reason */
		json_object *a = json_tokener_parse(s);
		if (a && json_object_is_type(a, json_type_array) && json_object_array_length(a) == 2) {
			json_object *t = json_object_get(json_object_array_get_idx(a, 0));
			json_object *got = apisel_json_patch(t, json_object_array_get_idx(a, 1), &err);
			if ((got == NULL) != (err != NULL))
				abort();
			json_object_put(got);
		} else if (a && json_object_is_type(a, json_type_object)) { /* a LabelSelector */
			struct apisel *sel = apisel_from_json(a, &err);
			if ((sel == NULL) != (err != NULL))
				abort();
			if (sel) {
				char *text = apisel_format(sel), *err2 = NULL;
				struct apisel *back = apisel_parse(text, false, &err2);
				if (back == NULL || back->n != sel->n || apisel_match(back, get, NULL) != apisel_match(sel, get, NULL))
					abort(); /* its printed form is the same selector */
				apisel_free(back);
				free(err2);
				free(text);
			}
			apisel_free(sel);
		}
		json_object_put(a);
		break;
	}
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
		struct apisel *sel = apisel_parse(s, data[0] % 7 == 1, &err);
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
