/* libFuzzer harness for a DataVolume's source as the engine service reads it (apiserver/dvsource.c): the input is
 * a DataVolume spec as JSON (what a client sends, json-c's depth limit as the server's); dvs_parse accepts it or
 * says why, and an accepted source's fields hold what storage.c builds paths and pulls from. The step taken next
 * is asked for every state of the claim and the source, with the spec's "phase" string as the phase. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "apiserver/dvsource.h"
#include "apiserver/internal.h"
#include "core/xmalloc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 1 << 16)
		return 0;
	char *s = xstrndup((const char *)data, size);
	json_tokener *tok = json_tokener_new_ex(64);
	json_object *spec = json_tokener_parse_ex(tok, s, (int)size);
	json_tokener_free(tok);
	struct dvs d;
	char *why = NULL;
	int rc = dvs_parse(spec, "default", &d, &why);
	if ((rc == 0) != (why == NULL))
		abort();
	if (rc == 0 && d.kind == DVS_PVC && (!apis_valid_name(d.name) || d.ns == NULL || strchr(d.ns, '/')))
		abort();
	if (rc == 0 && (d.kind == DVS_HTTP || d.kind == DVS_REGISTRY) && (d.url == NULL || strncmp(d.url, "docker://", 9) == 0))
		abort();
	json_object *ph = apis_jget(spec, "phase");
	const char *phase = ph && json_object_is_type(ph, json_type_string) ? json_object_get_string(ph) : "";
	for (int c = DVS_CLAIM_PENDING; rc == 0 && c <= DVS_CLAIM_BOUND; c++)
		for (int src = DVS_SRC_READY; src <= DVS_SRC_IN_USE; src++) {
			struct dvs_step st = dvs_next(d.kind, phase, (enum dvs_claim)c, (enum dvs_src)src);
			if (st.phase == NULL || (st.act != DVS_WAIT && c != DVS_CLAIM_BOUND) ||
			    (st.act == DVS_START && strcmp(st.phase, dvs_phase(d.kind, true)) != 0))
				abort();
		}
	free(why);
	json_object_put(spec);
	free(s);
	return 0;
}
