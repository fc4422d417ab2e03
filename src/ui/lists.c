/* The column tables of the VM, VMI, launcher pod and event lists (one row per column: title, widths, sort key,
 * cell formatter, comparator). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/loop.h"
#include "core/util.h"
#include "model/source.h"
#include "model/store.h"
#include "ui/table.h"
#include "ui/theme.h"

#define VM(o) ((const struct vm *)(o))
#define VMI(o) ((const struct vmi *)(o))
#define POD(o) ((const struct pod *)(o))
#define EV(o) ((const struct event *)(o))

static const char *nz(const char *s)
{
	return s && *s ? s : "";
}

static void put(char *buf, size_t len, const char *s)
{
	snprintf(buf, len, "%s", s ? s : "");
}

static void age(int64_t t, char *buf, size_t len)
{
	if (t <= 0) {
		put(buf, len, "<unknown>");
		return;
	}
	int64_t d = util_wall_s() - t;
	util_human_duration(d < 0 ? 0 : d, buf, len);
}

static int cmp_str(const char *a, const char *b)
{
	return strcmp(a ? a : "", b ? b : "");
}

static int cmp_i64(int64_t a, int64_t b)
{
	return a < b ? -1 : a > b;
}

/* ---- shared columns ---- */

static void c_ns(const struct store *st, const struct obj *o, char *b, size_t n, int *a)
{
	(void)st, (void)a;
	put(b, n, o->ns);
}
static int s_ns(const struct store *st, const struct obj *x, const struct obj *y)
{
	(void)st;
	return strcmp(x->ns, y->ns);
}
static void c_name(const struct store *st, const struct obj *o, char *b, size_t n, int *a)
{
	(void)st, (void)a;
	put(b, n, o->name);
}
static int s_name(const struct store *st, const struct obj *x, const struct obj *y)
{
	(void)st;
	int r = strcmp(x->name, y->name);
	return r ? r : strcmp(x->ns, y->ns);
}
static void c_source(const struct store *st, const struct obj *o, char *b, size_t n, int *a)
{
	(void)st, (void)a;
	put(b, n, o->src->name);
}
static void c_age(const struct store *st, const struct obj *o, char *b, size_t n, int *a)
{
	(void)st, (void)a;
	age(o->created, b, n);
}
static int s_age(const struct store *st, const struct obj *x, const struct obj *y)
{
	(void)st;
	return cmp_i64(y->created, x->created); /* youngest first */
}

/* ---- VMs ---- */

static const struct vmi *vm_vmi(const struct store *st, const struct obj *o)
{
	return (const struct vmi *)store_find(st, o->src, OBJ_VMI, o->ns, o->name);
}

static void c_vm_status(const struct store *st, const struct obj *o, char *b, size_t n, int *a)
{
	(void)st;
	const char *s = VM(o)->printable_status;
	put(b, n, nz(s));
	*a = theme_status_attr(s);
}
static int s_vm_status(const struct store *st, const struct obj *x, const struct obj *y)
{
	(void)st;
	return cmp_str(VM(x)->printable_status, VM(y)->printable_status);
}
static void c_vm_ready(const struct store *st, const struct obj *o, char *b, size_t n, int *a)
{
	(void)st;
	put(b, n, VM(o)->ready ? "True" : "False");
	*a = theme_status_attr(VM(o)->ready ? "True" : NULL);
}
static void c_vm_rs(const struct store *st, const struct obj *o, char *b, size_t n, int *a)
{
	(void)st, (void)a;
	put(b, n, nz(VM(o)->run_strategy));
}
static void c_vm_vmiphase(const struct store *st, const struct obj *o, char *b, size_t n, int *a)
{
	const struct vmi *v = vm_vmi(st, o);
	put(b, n, v ? nz(v->phase) : "");
	if (v)
		*a = theme_status_attr(v->phase);
}
static void c_vm_node(const struct store *st, const struct obj *o, char *b, size_t n, int *a)
{
	(void)a;
	const struct vmi *v = vm_vmi(st, o);
	put(b, n, v ? nz(v->node) : "");
}
static void c_vm_ip(const struct store *st, const struct obj *o, char *b, size_t n, int *a)
{
	(void)a;
	const struct vmi *v = vm_vmi(st, o);
	put(b, n, v ? nz(v->ip) : "");
}

static const struct table_col vm_cols[] = {
	{ "NAMESPACE", 9, 24, false, 'P', TABLE_COL_ALL_NS, c_ns, s_ns, false },
	{ "NAME", 4, 48, false, 'N', TABLE_COL_ALWAYS, c_name, s_name, false },
	{ "SOURCE", 6, 20, false, 0, TABLE_COL_MULTI_SOURCE, c_source, NULL, false },
	{ "STATUS", 8, 24, false, 'U', TABLE_COL_ALWAYS, c_vm_status, s_vm_status, false },
	{ "READY", 5, 5, false, 'R', TABLE_COL_ALWAYS, c_vm_ready, NULL, false },
	{ "RUNSTRATEGY", 11, 14, false, 'T', TABLE_COL_ALWAYS, c_vm_rs, NULL, false },
	{ "VMI PHASE", 9, 14, false, 0, TABLE_COL_ALWAYS, c_vm_vmiphase, NULL, true },
	{ "NODE", 4, 24, false, 'O', TABLE_COL_ALWAYS, c_vm_node, NULL, true },
	{ "IP", 2, 39, false, 'I', TABLE_COL_ALWAYS, c_vm_ip, NULL, true },
	{ "AGE", 3, 8, true, 'A', TABLE_COL_ALWAYS, c_age, s_age, false },
};

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
	.cols = vm_cols,
	.ncols = sizeof vm_cols / sizeof vm_cols[0],
	.default_sort = 1,
	.also = 1u << OBJ_VMI,
	.state_changed = vm_state_changed,
	.row_vm = vm_self,
};

/* ---- VMIs ---- */

static void cond_cell(const struct cond *c, int nc, const char *type, char *b, size_t n, int *a)
{
	const struct cond *x = cond_find(c, nc, type);
	put(b, n, x ? nz(x->status) : "");
	if (x)
		*a = theme_status_attr(x->status);
}
static void c_vmi_phase(const struct store *st, const struct obj *o, char *b, size_t n, int *a)
{
	(void)st;
	put(b, n, nz(VMI(o)->phase));
	*a = theme_status_attr(VMI(o)->phase);
}
static int s_vmi_phase(const struct store *st, const struct obj *x, const struct obj *y)
{
	(void)st;
	return cmp_str(VMI(x)->phase, VMI(y)->phase);
}
static void c_vmi_ip(const struct store *st, const struct obj *o, char *b, size_t n, int *a)
{
	(void)st, (void)a;
	put(b, n, nz(VMI(o)->ip));
}
static void c_vmi_node(const struct store *st, const struct obj *o, char *b, size_t n, int *a)
{
	(void)st, (void)a;
	put(b, n, nz(VMI(o)->node));
}
static void c_vmi_ready(const struct store *st, const struct obj *o, char *b, size_t n, int *a)
{
	(void)st;
	cond_cell(VMI(o)->conds, VMI(o)->nconds, "Ready", b, n, a);
}
static void c_vmi_lm(const struct store *st, const struct obj *o, char *b, size_t n, int *a)
{
	(void)st;
	cond_cell(VMI(o)->conds, VMI(o)->nconds, "LiveMigratable", b, n, a);
}
static void c_vmi_paused(const struct store *st, const struct obj *o, char *b, size_t n, int *a)
{
	(void)st;
	cond_cell(VMI(o)->conds, VMI(o)->nconds, "Paused", b, n, a);
}
static void c_vmi_mig(const struct store *st, const struct obj *o, char *b, size_t n, int *a)
{
	(void)st;
	const struct migration_state *m = vmi_mig(VMI(o));
	if (!m->present) {
		put(b, n, "");
		return;
	}
	const char *state = m->failed ? "Failed" : m->completed ? "Succeeded" : "Running";
	*a = theme_status_attr(state);
	if (!m->completed && !m->failed && m->progress_pct >= 0)
		snprintf(b, n, "%s %d%% %s->%s", state, m->progress_pct, nz(m->source_node), nz(m->target_node));
	else
		snprintf(b, n, "%s %s->%s", state, nz(m->source_node), nz(m->target_node));
}

static const struct table_col vmi_cols[] = {
	{ "NAMESPACE", 9, 24, false, 'P', TABLE_COL_ALL_NS, c_ns, s_ns, false },
	{ "NAME", 4, 48, false, 'N', TABLE_COL_ALWAYS, c_name, s_name, false },
	{ "SOURCE", 6, 20, false, 0, TABLE_COL_MULTI_SOURCE, c_source, NULL, false },
	{ "AGE", 3, 8, true, 'A', TABLE_COL_ALWAYS, c_age, s_age, false },
	{ "PHASE", 5, 14, false, 'U', TABLE_COL_ALWAYS, c_vmi_phase, s_vmi_phase, false },
	{ "IP", 2, 39, false, 'I', TABLE_COL_ALWAYS, c_vmi_ip, NULL, false },
	{ "NODENAME", 8, 24, false, 'O', TABLE_COL_ALWAYS, c_vmi_node, NULL, false },
	{ "READY", 5, 7, false, 'R', TABLE_COL_ALWAYS, c_vmi_ready, NULL, false },
	{ "LIVE-MIGRATABLE", 15, 15, false, 0, TABLE_COL_ALWAYS, c_vmi_lm, NULL, false },
	{ "PAUSED", 6, 6, false, 0, TABLE_COL_ALWAYS, c_vmi_paused, NULL, false },
	{ "MIGRATION", 9, 40, false, 0, TABLE_COL_ALWAYS, c_vmi_mig, NULL, false },
};

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
	.cols = vmi_cols,
	.ncols = sizeof vmi_cols / sizeof vmi_cols[0],
	.default_sort = 1,
	.state_changed = vmi_state_changed,
	.row_vm = vmi_vm,
};

/* ---- launcher pods ---- */

static void c_pod_vmi(const struct store *st, const struct obj *o, char *b, size_t n, int *a)
{
	(void)a;
	const struct obj *vmi = POD(o)->vmi_uid[0] ? store_get(st, o->src, OBJ_VMI, POD(o)->vmi_uid) : NULL;
	put(b, n, vmi ? vmi->name : nz(POD(o)->vm_name));
}
static void c_pod_phase(const struct store *st, const struct obj *o, char *b, size_t n, int *a)
{
	(void)st;
	const char *s = POD(o)->phase;
	/* a waiting container's reason says more than Pending (ErrImagePull, CrashLoopBackOff) */
	for (int i = 0; i < POD(o)->ncontainers; i++)
		if (POD(o)->containers[i].reason && POD(o)->containers[i].state &&
		    strcmp(POD(o)->containers[i].state, "running") != 0)
			s = POD(o)->containers[i].reason;
	if (o->deleted)
		s = "Terminating";
	put(b, n, nz(s));
	*a = theme_status_attr(s);
}
static int s_pod_phase(const struct store *st, const struct obj *x, const struct obj *y)
{
	(void)st;
	return cmp_str(POD(x)->phase, POD(y)->phase);
}
static void c_pod_ready(const struct store *st, const struct obj *o, char *b, size_t n, int *a)
{
	(void)st, (void)a;
	snprintf(b, n, "%d/%d", POD(o)->ready_containers, POD(o)->ncontainers);
}
static void c_pod_restarts(const struct store *st, const struct obj *o, char *b, size_t n, int *a)
{
	(void)st;
	snprintf(b, n, "%d", POD(o)->restarts);
	if (POD(o)->restarts > 0)
		*a = theme_attr(THEME_WAIT);
}
static int s_pod_restarts(const struct store *st, const struct obj *x, const struct obj *y)
{
	(void)st;
	return POD(y)->restarts - POD(x)->restarts;
}
static void c_pod_node(const struct store *st, const struct obj *o, char *b, size_t n, int *a)
{
	(void)st, (void)a;
	put(b, n, nz(POD(o)->node));
}

static const struct table_col pod_cols[] = {
	{ "NAMESPACE", 9, 24, false, 'P', TABLE_COL_ALL_NS, c_ns, s_ns, false },
	{ "NAME", 4, 56, false, 'N', TABLE_COL_ALWAYS, c_name, s_name, false },
	{ "SOURCE", 6, 20, false, 0, TABLE_COL_MULTI_SOURCE, c_source, NULL, false },
	{ "VMI", 3, 40, false, 'I', TABLE_COL_ALWAYS, c_pod_vmi, NULL, true },
	{ "PHASE", 5, 20, false, 'U', TABLE_COL_ALWAYS, c_pod_phase, s_pod_phase, false },
	{ "READY", 5, 7, false, 0, TABLE_COL_ALWAYS, c_pod_ready, NULL, false },
	{ "RESTARTS", 8, 8, true, 'R', TABLE_COL_ALWAYS, c_pod_restarts, s_pod_restarts, false },
	{ "NODE", 4, 24, false, 'O', TABLE_COL_ALWAYS, c_pod_node, NULL, false },
	{ "AGE", 3, 8, true, 'A', TABLE_COL_ALWAYS, c_age, s_age, false },
};

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
	.cols = pod_cols,
	.ncols = sizeof pod_cols / sizeof pod_cols[0],
	.default_sort = 1,
	.also = 1u << OBJ_VMI,
	.state_changed = pod_state_changed,
	.row_vm = pod_vm,
};

/* ---- events ---- */

static int64_t ev_last(const struct obj *o)
{
	return EV(o)->last ? EV(o)->last : EV(o)->first ? EV(o)->first : o->created;
}
static void c_ev_last(const struct store *st, const struct obj *o, char *b, size_t n, int *a)
{
	(void)st, (void)a;
	age(ev_last(o), b, n);
}
static int s_ev_last(const struct store *st, const struct obj *x, const struct obj *y)
{
	(void)st;
	return cmp_i64(ev_last(y), ev_last(x)); /* newest first */
}
static void c_ev_type(const struct store *st, const struct obj *o, char *b, size_t n, int *a)
{
	(void)st;
	put(b, n, nz(EV(o)->type));
	*a = theme_status_attr(EV(o)->type);
}
static void c_ev_reason(const struct store *st, const struct obj *o, char *b, size_t n, int *a)
{
	(void)st;
	put(b, n, nz(EV(o)->reason));
	if (EV(o)->type && strcmp(EV(o)->type, "Warning") == 0)
		*a = theme_attr(THEME_BAD);
}
static void c_ev_object(const struct store *st, const struct obj *o, char *b, size_t n, int *a)
{
	(void)st, (void)a;
	snprintf(b, n, "%s/%s", nz(EV(o)->inv_kind), nz(EV(o)->inv_name));
}
static void c_ev_message(const struct store *st, const struct obj *o, char *b, size_t n, int *a)
{
	(void)st, (void)a;
	put(b, n, nz(EV(o)->message));
}
static void c_ev_count(const struct store *st, const struct obj *o, char *b, size_t n, int *a)
{
	(void)st, (void)a;
	snprintf(b, n, "%d", EV(o)->count);
}
static int s_ev_count(const struct store *st, const struct obj *x, const struct obj *y)
{
	(void)st;
	return EV(y)->count - EV(x)->count;
}

static const struct table_col event_cols[] = {
	{ "NAMESPACE", 9, 24, false, 'P', TABLE_COL_ALL_NS, c_ns, s_ns, false },
	{ "SOURCE", 6, 20, false, 0, TABLE_COL_MULTI_SOURCE, c_source, NULL, false },
	{ "LAST SEEN", 9, 9, true, 'A', TABLE_COL_ALWAYS, c_ev_last, s_ev_last, false },
	{ "TYPE", 7, 7, false, 'T', TABLE_COL_ALWAYS, c_ev_type, NULL, false },
	{ "REASON", 6, 28, false, 'E', TABLE_COL_ALWAYS, c_ev_reason, NULL, false },
	{ "OBJECT", 6, 48, false, 'N', TABLE_COL_ALWAYS, c_ev_object, NULL, false },
	{ "MESSAGE", 7, 200, false, 0, TABLE_COL_ALWAYS, c_ev_message, NULL, false },
	{ "COUNT", 5, 6, true, 'C', TABLE_COL_ALWAYS, c_ev_count, s_ev_count, false },
};

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
	.cols = event_cols,
	.ncols = sizeof event_cols / sizeof event_cols[0],
	.default_sort = 2,
	.row_vm = event_vm,
};
