/* libFuzzer harness for the image reference, registries configuration and auth file parsers (engine/oci.c).
 * The first byte picks: reference (oci_ref_parse; its normal form must parse back to itself), configuration
 * lines (oci_regconf_parse, then endpoints for a few references: hosts and repositories stay valid), or an auth
 * file (oci_auth_from_json). Seeds in tests/fuzz/corpus/ociref/. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/oci.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > 1 << 16)
		return 0;
	char *s = malloc(size);
	memcpy(s, data + 1, size - 1);
	s[size - 1] = '\0';
	char *err = NULL;
	switch (data[0] % 3) {
	case 0: {
		struct oci_ref r, r2;
		if (oci_ref_parse(s, &r, &err) == 0) {
			char *n = oci_ref_string(&r), *e2 = NULL;
			if (oci_ref_parse(n, &r2, &e2) < 0)
				abort();
			char *n2 = oci_ref_string(&r2);
			if (strcmp(n, n2) != 0)
				abort();
			free(n2);
			free(n);
			oci_ref_free(&r2);
			oci_ref_free(&r);
		}
		break;
	}
	case 1: {
		struct oci_regconf *c = oci_regconf_parse(s, &err);
		static const char *refs[] = { "quay.io/containerdisks/fedora:latest", "busybox", "localhost:5000/a/b@sha256:"
					      "0000000000000000000000000000000000000000000000000000000000000000" };
		for (int i = 0; c && i < 3; i++) {
			struct oci_ref r;
			char *e = NULL;
			if (oci_ref_parse(refs[i], &r, &e) < 0)
				abort();
			struct oci_endpoint *eps = NULL;
			int n = oci_endpoints(c, &r, &eps);
			for (int k = 0; k < n; k++)
				if (eps[k].host == NULL || eps[k].host[0] == '\0' || strchr(eps[k].host, '/'))
					abort();
			oci_endpoints_free(eps, n);
			oci_ref_free(&r);
		}
		oci_regconf_free(c);
		break;
	}
	default:
		free(oci_auth_from_json(s, size - 1, "quay.io", "containerdisks/fedora"));
		break;
	}
	free(err);
	free(s);
	return 0;
}
