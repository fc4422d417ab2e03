/* libFuzzer harness for the OCI/Docker manifest and index parser (engine/oci.c oci_manifest_parse): arbitrary
 * bytes with each of the Content-Types a registry may send; an accepted manifest has only verifiable digests.
 * Seeds in tests/fuzz/corpus/ocimanifest/ (OCI and Docker v2 manifests and indexes). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "engine/oci.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *types[] = { NULL, "application/vnd.oci.image.index.v1+json",
				       "application/vnd.docker.distribution.manifest.v2+json; charset=utf-8" };
	if (size > 1 << 20)
		return 0;
	for (int t = 0; t < 3; t++) {
		struct oci_manifest m;
		char *err = NULL;
		if (oci_manifest_parse((const char *)data, size, types[t], &m, &err) == 0) {
			for (int i = 0; i < m.nitems; i++)
				if (!oci_digest_valid(m.items[i].digest) || m.items[i].size < 0)
					abort();
			(void)oci_index_pick(&m);
			oci_manifest_free(&m);
		}
		free(err);
	}
	return 0;
}
