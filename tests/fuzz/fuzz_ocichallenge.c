/* libFuzzer harness for the WWW-Authenticate parser (engine/oci.c oci_challenge_parse): arbitrary header values;
 * a parsed challenge's scheme is lower case and its fields are NUL-free strings. Seeds in
 * tests/fuzz/corpus/ocichallenge/ (Docker Hub's, quay.io's, distribution's Basic and Bearer challenges). */
#include <ctype.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/oci.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 1 << 16)
		return 0;
	char *s = malloc(size + 1);
	memcpy(s, data, size);
	s[size] = '\0';
	struct oci_challenge c;
	if (oci_challenge_parse(s, &c) == 0) {
		for (const char *p = c.scheme; *p; p++)
			if (isupper((unsigned char)*p))
				abort();
		oci_challenge_free(&c);
	}
	free(s);
	return 0;
}
