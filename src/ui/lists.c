/* The VM, VMI, launcher pod and event lists: each kind's column table (model/columns.c, shared with `kvcon get`),
 * which state changes make a row flash, and the VM a row stands for. */
#include <string.h>

#include "model/columns.h"
#include "model/store.h"
#include "ui/table.h"

#define VM(o) ((const struct vm *)(o))
#define VMI(o) ((const struct vmi *)(o))
#define POD(o) ((const struct pod *)(o))
#define EV(o) ((const struct event *)(o))

/* ---- VMs ---- */

static bool vm_state_changed(const struct obj *a, const struct obj *b)
{
	return VM(a)->printable_status != VM(b)->printable_status || VM(a)->ready != VM(b)->ready ||
	       VM(a)->run_strategy != VM(b)->run_strategy;
}

static struct obj *vm_self(const struct store *st, const struct obj *o)
{
	(void)st;
	return (struct obj *)o;
}

const struct table_spec table_vm_spec = {
	.name = "vm",
	.title = "VirtualMachines",
	.kind = OBJ_VM,
	.tab = &columns_vm,
	.also = 1u << OBJ_VMI,
	.state_changed = vm_state_changed,
	.row_vm = vm_self,
};

/* ---- VMIs ---- */

static bool vmi_state_changed(const struct obj *a, const struct obj *b)
{
	return VMI(a)->phase != VMI(b)->phase || VMI(a)->node != VMI(b)->node ||
	       vmi_mig(VMI(a))->present != vmi_mig(VMI(b))->present || vmi_mig(VMI(a))->completed != vmi_mig(VMI(b))->completed;
}

static struct obj *vmi_vm(const struct store *st, const struct obj *o)
{
	struct obj *vm = store_find(st, o->src, OBJ_VM, o->ns, o->name);
	return vm;
}

const struct table_spec table_vmi_spec = {
	.name = "vmi",
	.title = "VirtualMachineInstances",
	.kind = OBJ_VMI,
	.tab = &columns_vmi,
	.state_changed = vmi_state_changed,
	.row_vm = vmi_vm,
};

/* ---- launcher pods ---- */

static bool pod_state_changed(const struct obj *a, const struct obj *b)
{
	return POD(a)->phase != POD(b)->phase || POD(a)->ready_containers != POD(b)->ready_containers ||
	       POD(a)->restarts != POD(b)->restarts;
}

static struct obj *pod_vm(const struct store *st, const struct obj *o)
{
	const struct obj *vmi = POD(o)->vmi_uid[0] ? store_get(st, o->src, OBJ_VMI, POD(o)->vmi_uid) : NULL;
	if (vmi)
		return store_find(st, o->src, OBJ_VM, vmi->ns, vmi->name);
	if (POD(o)->vm_name)
		return store_find(st, o->src, OBJ_VM, o->ns, POD(o)->vm_name);
	return NULL;
}

const struct table_spec table_pod_spec = {
	.name = "pod",
	.title = "LauncherPods",
	.kind = OBJ_POD,
	.tab = &columns_pod,
	.also = 1u << OBJ_VMI,
	.state_changed = pod_state_changed,
	.row_vm = pod_vm,
};

/* ---- events ---- */

static struct obj *event_vm(const struct store *st, const struct obj *o)
{
	const struct event *e = EV(o);
	if (e->inv_name == NULL || e->inv_kind == NULL)
		return NULL;
	const char *ns = e->inv_ns ? e->inv_ns : o->ns;
	if (strcmp(e->inv_kind, "VirtualMachine") == 0 || strcmp(e->inv_kind, "VirtualMachineInstance") == 0)
		return store_find(st, o->src, OBJ_VM, ns, e->inv_name);
	if (strcmp(e->inv_kind, "Pod") == 0) {
		const struct obj *pod = store_find(st, o->src, OBJ_POD, ns, e->inv_name);
		if (pod) {
			const struct obj *vmi = POD(pod)->vmi_uid[0] ? store_get(st, o->src, OBJ_VMI, POD(pod)->vmi_uid) : NULL;
			if (vmi)
				return store_find(st, o->src, OBJ_VM, vmi->ns, vmi->name);
		}
	}
	return NULL;
}

const struct table_spec table_event_spec = {
	.name = "events",
	.title = "Events",
	.kind = OBJ_EVENT,
	.tab = &columns_event,
	.row_vm = event_vm,
};
