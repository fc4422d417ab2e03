/* The engine service's well-known socket per root (see service.h). */
#include "engine/service.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>

#include "core/buf.h"
#include "core/util.h"
#include "core/xmalloc.h"

char *engine_service_socket(char *const *uris, int n)
{
	/* the root as engine_open resolves it, with the state directory (where the records are) */
	char *state = util_state_dir();
	struct buf key;
	buf_init(&key);
	buf_printf(&key, "%s\n", state);
	if (n > 0) {
		for (int i = 0; i < n; i++)
			buf_printf(&key, "%s\n", uris[i]);
	} else {
		const char *e = getenv("KVCON_ENGINE_URI");
		if (e == NULL || *e == '\0')
			e = getenv("LIBVIRT_DEFAULT_URI");
		if (e && *e)
			buf_printf(&key, "%s\n", e);
		else
			buf_printf(&key, "qemu:///embed?root=%s/engine\n", state);
	}
	uint64_t h = 1469598103934665603ULL;
	for (size_t i = 0; i < key.len; i++)
		h = (h ^ (unsigned char)key.data[i]) * 1099511628211ULL;
	buf_free(&key);
	const char *rt = getenv("XDG_RUNTIME_DIR");
	char *dir = rt && *rt == '/' ? util_path_join(rt, "kvcon") : xstrdup(state);
	char *p = xasprintf("%s/engine-%016" PRIx64 ".sock", dir, h);
	free(dir);
	free(state);
	return p;
}
