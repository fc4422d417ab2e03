/* libFuzzer harness for the guest agent's answers (engine/gagent.c): what a guest's qemu-guest-agent sends is
 * untrusted. The first byte picks the subresource, the rest are the answers, NUL-separated. Whatever is built must
 * hold no string with a byte that could drive a terminal (C0, DEL, C1 in UTF-8) and none longer than the bound.
 * Seeds in tests/fuzz/corpus/gagent/. */
#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/gagent.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(json_object *j)
{
	switch (json_object_get_type(j)) {
	case json_type_string: {
		const unsigned char *s = (const unsigned char *)json_object_get_string(j);
		size_t n = strlen((const char *)s);
		if (n > GAGENT_STR_MAX * 4 + 16) /* escaping may grow a cut string */
			abort();
		for (size_t i = 0; i < n; i++)
			if (s[i] < 0x20 || s[i] == 0x7f || (s[i] == 0xc2 && i + 1 < n && s[i + 1] >= 0x80 && s[i + 1] <= 0x9f))
				abort();
		break;
	}
	case json_type_array:
		if (json_object_array_length(j) > GAGENT_ITEMS_MAX)
			abort();
		for (size_t i = 0; i < json_object_array_length(j); i++)
			check(json_object_array_get_idx(j, i));
		break;
	case json_type_object: {
		json_object_object_foreach(j, k, v) {
			(void)k;
			check(v);
		}
		break;
	}
	default:
		break;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > 65536)
		return 0;
	char *s = malloc(size);
	memcpy(s, data + 1, size - 1);
	s[size - 1] = '\0';
	const char *answers[8] = { 0 };
	int n = 0;
	for (size_t off = 0; off < size - 1 && n < 8; off += strlen(s + off) + 1)
		answers[n++] = s[off] == '-' && s[off + 1] == '\0' ? NULL : s + off; /* "-": that command failed */
	if (n == 0)
		answers[n++] = s;
	char *err = NULL;
	json_object *j = gagent_build((enum gagent_what)(data[0] % GA_COUNT), answers, 8, &err);
	if (j)
		check(j);
	else if (err == NULL)
		abort();
	json_object_put(j);
	free(err);
	free(s);
	return 0;
}
