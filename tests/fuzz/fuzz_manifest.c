/* libFuzzer harness for the engine's manifest parser (core/ydoc.c + engine/manifest.c): arbitrary bytes as
 * YAML or JSON, validated as a VirtualMachine, and when accepted turned into domain XML. Seeds in
 * tests/fuzz/corpus/manifest/ (KubeVirt's examples and the demo VM). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "engine/domxml.h"
#include "engine/manifest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 1 << 20)
		return 0;
	char *err = NULL;
	struct manifest *m = manifest_parse((const char *)data, size, &err);
	free(err);
	if (m == NULL)
		return 0;
	struct domxml_env env = { .image_dir = "/nonexistent", .volume_dir = "/vols", .run_dir = "/run/x",
				  .bridge = "br0", .domain_type = "qemu", .dom_name = "ns_name", .vm_uid = "u",
				  .vmi_uid = "v", .launcher_uid = "l" };
	err = NULL;
	struct domxml_plan *p = domxml_build(m, &env, &err);
	free(err);
	domxml_plan_free(p);
	manifest_free(m);
	return 0;
}
