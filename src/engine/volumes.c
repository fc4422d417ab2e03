/* The engine's side of the service's storage (volumes.h): the gate a start waits at while a VM's claim is being
 * provisioned, and the reconciling of the VMs that waited once a claim is ready. */
#include "engine/volumes.h"

#include <stdbool.h>
#include <stdlib.h>

#include "core/hmap.h"
#include "core/intern.h"
#include "core/xmalloc.h"
#include "engine/engine_int.h"

static engine_volume_gate_fn gate;
static void *gate_arg;
static bool held;

char *engine_volume_dir(void)
{
	return esettings_dir("KVCON_ENGINE_VOLUMES", "volumes");
}

void engine_volume_gate(engine_volume_gate_fn fn, void *arg)
{
	gate = fn;
	gate_arg = arg;
	held = false;
}

void engine_volume_gate_hold(void)
{
	held = true;
}

const char *evol_waiting(const struct evm *v, bool start)
{
	if ((gate == NULL && !held) || v->m == NULL)
		return NULL;
	/* every claim is asked on a start (each WaitForFirstConsumer claim binds), the first wait answers */
	const char *first = NULL;
	for (int i = 0; i < v->m->nvols && (start || first == NULL); i++) {
		const struct mf_volume *vol = &v->m->vols[i];
		if (vol->type != MF_VOL_PVC)
			continue;
		const char *node = start && v->eh ? v->eh->src->name : NULL;
		const char *w = gate ? gate(gate_arg, v->m->ns, vol->claim, vol->dv, node) : "Provisioning";
		if (w && first == NULL)
			first = intern(w);
	}
	return first;
}

void engine_volumes_changed(void)
{
	for (int h = 0; h < engine_g.nhosts; h++) {
		struct ehost *eh = engine_g.hosts[h];
		struct evm **list = xcalloc(eh->vms.count + 1, sizeof *list);
		size_t n = 0;
		const char *key;
		void *val;
		for (size_t it = 0; hmap_next(&eh->vms, &it, &key, &val);)
			if (((struct evm *)val)->vol_wait || evol_waiting(val, false))
				list[n++] = val;
		for (size_t i = 0; i < n; i++)
			ereconcile(list[i]);
		free(list);
	}
}
