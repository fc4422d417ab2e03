/* The column tables of the VM, VMI, launcher pod and event kinds (model/columns.h) and kubectl's plain table
 * printer over them. Where the dashboard and `get` used to disagree, the text is kubectl's or KubeVirt's
 * printer column's. */
#include "model/columns.h"

#include <json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "core/xmalloc.h"
#include "model/podprint.h"
#include "model/source.h"
#include "model/store.h"

#define VM(o) ((const struct vm *)(o))
#define VMI(o) ((const struct vmi *)(o))
#define POD(o) ((const struct pod *)(o))
#define EV(o) ((const struct event *)(o))

static void put(char *buf, size_t len, const char *s)
{
	snprintf(buf, len, "%s", s ? s : "");
}

static void age(const struct col_ctx *c, int64_t t, char *buf, size_t len)
{
	if (t <= 0) {
		put(buf, len, "<unknown>");
		return;
	}
	int64_t d = c->now - t;
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

/* ---- cells over the API object (the server-side Table) ---- */

static struct json_object *jget(struct json_object *o, const char *k)
{
	struct json_object *v = NULL;
	return o && json_object_is_type(o, json_type_object) && json_object_object_get_ex(o, k, &v) ? v : NULL;
}
static const char *jgets(struct json_object *o, const char *k)
{
	struct json_object *v = jget(o, k);
	return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}
/* a string cell; NULL (a JSONPath that found nothing) without a value */
static struct json_object *jcell(const char *s)
{
	return s ? json_object_new_string(s) : NULL;
}
static struct json_object *jnone(const char *s)
{
	return json_object_new_string(s && *s ? s : "<none>");
}
/* a date column as the API server prints it: the age of the timestamp */
static struct json_object *jage(const char *ts, int64_t now)
{
	int64_t t;
	char b[32];
	if (ts == NULL || util_parse_time(ts, &t) < 0)
		return json_object_new_string("<unknown>");
	util_human_duration(now - t, b, sizeof b);
	return json_object_new_string(b);
}
/* a condition's status (KubeVirt's printer columns: .status.conditions[?(@.type=='T')].status) */
static struct json_object *jcond(struct json_object *o, const char *type)
{
	struct json_object *conds = jget(jget(o, "status"), "conditions");
	for (size_t i = 0; conds && json_object_is_type(conds, json_type_array) && i < json_object_array_length(conds); i++) {
		struct json_object *c = json_object_array_get_idx(conds, i);
		const char *t = jgets(c, "type");
		if (t && strcmp(t, type) == 0)
			return jcell(jgets(c, "status"));
	}
	return NULL;
}

static struct json_object *a_name(struct json_object *o, int64_t now)
{
	(void)now;
	return jcell(jgets(jget(o, "metadata"), "name"));
}
static struct json_object *a_age(struct json_object *o, int64_t now)
{
	return jage(jgets(jget(o, "metadata"), "creationTimestamp"), now);
}

/* ---- every kind ---- */

static enum col_tone c_ns(const struct col_ctx *c, const struct obj *o, char *b, size_t n)
{
	(void)c;
	put(b, n, o->ns);
	return COL_TONE_NONE;
}
static int s_ns(const struct obj *x, const struct obj *y)
{
	return strcmp(x->ns, y->ns);
}
static enum col_tone c_name(const struct col_ctx *c, const struct obj *o, char *b, size_t n)
{
	(void)c;
	put(b, n, o->name);
	return COL_TONE_NONE;
}
static int s_name(const struct obj *x, const struct obj *y)
{
	int r = strcmp(x->name, y->name);
	return r ? r : strcmp(x->ns, y->ns);
}
static enum col_tone c_source(const struct col_ctx *c, const struct obj *o, char *b, size_t n)
{
	(void)c;
	put(b, n, o->src ? o->src->name : "");
	return COL_TONE_NONE;
}
static enum col_tone c_age(const struct col_ctx *c, const struct obj *o, char *b, size_t n)
{
	age(c, o->created, b, n);
	return COL_TONE_NONE;
}
static int s_age(const struct obj *x, const struct obj *y)
{
	return cmp_i64(y->created, x->created); /* youngest first */
}

/* A condition's status, empty without the condition (KubeVirt's printer columns read them by JSONPath). */
static enum col_tone cond_cell(const struct cond *c, int nc, const char *type, char *b, size_t n)
{
	const struct cond *x = cond_find(c, nc, type);
	put(b, n, x ? cond_status(x) : "");
	return x && cond_status(x) ? COL_TONE_STATUS : COL_TONE_NONE;
}

/* ---- VMs ---- */

static const struct vmi *vm_vmi(const struct col_ctx *c, const struct obj *o)
{
	return c->st ? (const struct vmi *)store_find(c->st, o->src, OBJ_VMI, o->ns, o->name) : NULL;
}

static enum col_tone c_vm_status(const struct col_ctx *c, const struct obj *o, char *b, size_t n)
{
	(void)c;
	put(b, n, VM(o)->printable_status);
	return COL_TONE_STATUS;
}
static int s_vm_status(const struct obj *x, const struct obj *y)
{
	return cmp_str(VM(x)->printable_status, VM(y)->printable_status);
}
static enum col_tone c_vm_ready(const struct col_ctx *c, const struct obj *o, char *b, size_t n)
{
	(void)c;
	return cond_cell(VM(o)->conds, VM(o)->nconds, "Ready", b, n);
}
static enum col_tone c_vm_rs(const struct col_ctx *c, const struct obj *o, char *b, size_t n)
{
	(void)c;
	put(b, n, VM(o)->run_strategy);
	return COL_TONE_NONE;
}
static enum col_tone c_vm_vmiphase(const struct col_ctx *c, const struct obj *o, char *b, size_t n)
{
	const struct vmi *v = vm_vmi(c, o);
	put(b, n, v ? v->phase : "");
	return v ? COL_TONE_STATUS : COL_TONE_NONE;
}
static enum col_tone c_vm_node(const struct col_ctx *c, const struct obj *o, char *b, size_t n)
{
	const struct vmi *v = vm_vmi(c, o);
	put(b, n, v ? v->node : "");
	return COL_TONE_NONE;
}
static enum col_tone c_vm_ip(const struct col_ctx *c, const struct obj *o, char *b, size_t n)
{
	const struct vmi *v = vm_vmi(c, o);
	put(b, n, v ? v->ip : "");
	return COL_TONE_NONE;
}

static struct json_object *a_vm_status(struct json_object *o, int64_t now)
{
	(void)now;
	return jcell(jgets(jget(o, "status"), "printableStatus"));
}
static struct json_object *a_ready(struct json_object *o, int64_t now)
{
	(void)now;
	return jcond(o, "Ready");
}

enum { VM_NS, VM_NAME, VM_SOURCE, VM_STATUS, VM_READY, VM_RS, VM_VMIPHASE, VM_NODE, VM_IP, VM_AGE };

static const struct column vm_cols[] = {
	[VM_NS] = { "NAMESPACE", 9, 24, false, 'P', COL_ALL_NS, c_ns, s_ns },
	[VM_NAME] = { "NAME", 4, 48, false, 'N', 0, c_name, s_name, a_name },
	[VM_SOURCE] = { "SOURCE", 6, 20, false, 0, COL_MULTI_SOURCE, c_source, NULL },
	[VM_STATUS] = { "STATUS", 8, 24, false, 'U', 0, c_vm_status, s_vm_status, a_vm_status },
	[VM_READY] = { "READY", 5, 7, false, 'R', 0, c_vm_ready, NULL, a_ready },
	[VM_RS] = { "RUNSTRATEGY", 11, 14, false, 'T', COL_NONE, c_vm_rs, NULL },
	[VM_VMIPHASE] = { "VMI PHASE", 9, 14, false, 0, COL_JOINED, c_vm_vmiphase, NULL },
	[VM_NODE] = { "NODE", 4, 24, false, 'O', COL_JOINED, c_vm_node, NULL },
	[VM_IP] = { "IP", 2, 39, false, 'I', COL_JOINED, c_vm_ip, NULL },
	[VM_AGE] = { "AGE", 3, 8, true, 'A', 0, c_age, s_age, a_age },
};

/* KubeVirt's VirtualMachine printer columns */
static const struct col_pick vm_get[] = {
	{ VM_NAME, false }, { VM_AGE, false }, { VM_STATUS, false }, { VM_READY, false }, { VM_RS, true },
};

/* KubeVirt's additionalPrinterColumns of VirtualMachine */
static const struct api_pick vm_api[] = {
	{ VM_NAME, "Name", "string", "name", 0, NULL },	  { VM_AGE, "Age", "date", "", 0, NULL },
	{ VM_STATUS, "Status", "string", "", 0, NULL }, { VM_READY, "Ready", "string", "", 0, NULL },
};

/* ---- VMIs ---- */

static enum col_tone c_vmi_phase(const struct col_ctx *c, const struct obj *o, char *b, size_t n)
{
	(void)c;
	put(b, n, VMI(o)->phase);
	return COL_TONE_STATUS;
}
static int s_vmi_phase(const struct obj *x, const struct obj *y)
{
	return cmp_str(VMI(x)->phase, VMI(y)->phase);
}
static enum col_tone c_vmi_ip(const struct col_ctx *c, const struct obj *o, char *b, size_t n)
{
	(void)c;
	put(b, n, VMI(o)->ip);
	return COL_TONE_NONE;
}
static enum col_tone c_vmi_node(const struct col_ctx *c, const struct obj *o, char *b, size_t n)
{
	(void)c;
	put(b, n, VMI(o)->node);
	return COL_TONE_NONE;
}
static enum col_tone c_vmi_ready(const struct col_ctx *c, const struct obj *o, char *b, size_t n)
{
	(void)c;
	return cond_cell(VMI(o)->conds, VMI(o)->nconds, "Ready", b, n);
}
static enum col_tone c_vmi_lm(const struct col_ctx *c, const struct obj *o, char *b, size_t n)
{
	(void)c;
	return cond_cell(VMI(o)->conds, VMI(o)->nconds, "LiveMigratable", b, n);
}
static enum col_tone c_vmi_paused(const struct col_ctx *c, const struct obj *o, char *b, size_t n)
{
	(void)c;
	return cond_cell(VMI(o)->conds, VMI(o)->nconds, "Paused", b, n);
}
static enum col_tone c_vmi_mig(const struct col_ctx *c, const struct obj *o, char *b, size_t n)
{
	(void)c;
	const struct migration_state *m = vmi_mig(VMI(o));
	if (!m->present) {
		put(b, n, "");
		return COL_TONE_NONE;
	}
	const char *state = m->failed ? "Failed" : m->completed ? "Succeeded" : "Running";
	const char *src = m->source_node ? m->source_node : "", *dst = m->target_node ? m->target_node : "";
	if (!m->completed && !m->failed && m->progress_pct >= 0)
		snprintf(b, n, "%s %d%% %s->%s", state, m->progress_pct, src, dst);
	else
		snprintf(b, n, "%s %s->%s", state, src, dst);
	return COL_TONE_STATUS;
}

static struct json_object *a_vmi_phase(struct json_object *o, int64_t now)
{
	(void)now;
	return jcell(jgets(jget(o, "status"), "phase"));
}
static struct json_object *a_vmi_ip(struct json_object *o, int64_t now)
{
	(void)now;
	struct json_object *ifs = jget(jget(o, "status"), "interfaces");
	struct json_object *i0 = ifs && json_object_is_type(ifs, json_type_array) ? json_object_array_get_idx(ifs, 0) : NULL;
	return jcell(jgets(i0, "ipAddress"));
}
static struct json_object *a_vmi_node(struct json_object *o, int64_t now)
{
	(void)now;
	return jcell(jgets(jget(o, "status"), "nodeName"));
}
static struct json_object *a_vmi_lm(struct json_object *o, int64_t now)
{
	(void)now;
	return jcond(o, "LiveMigratable");
}
static struct json_object *a_vmi_paused(struct json_object *o, int64_t now)
{
	(void)now;
	return jcond(o, "Paused");
}

enum { VMI_NS, VMI_NAME, VMI_SOURCE, VMI_AGE, VMI_PHASE, VMI_IP, VMI_NODE, VMI_READY, VMI_LM, VMI_PAUSED, VMI_MIG };

static const struct column vmi_cols[] = {
	[VMI_NS] = { "NAMESPACE", 9, 24, false, 'P', COL_ALL_NS, c_ns, s_ns },
	[VMI_NAME] = { "NAME", 4, 48, false, 'N', 0, c_name, s_name, a_name },
	[VMI_SOURCE] = { "SOURCE", 6, 20, false, 0, COL_MULTI_SOURCE, c_source, NULL },
	[VMI_AGE] = { "AGE", 3, 8, true, 'A', 0, c_age, s_age, a_age },
	[VMI_PHASE] = { "PHASE", 5, 14, false, 'U', 0, c_vmi_phase, s_vmi_phase, a_vmi_phase },
	[VMI_IP] = { "IP", 2, 39, false, 'I', 0, c_vmi_ip, NULL, a_vmi_ip },
	[VMI_NODE] = { "NODENAME", 8, 24, false, 'O', 0, c_vmi_node, NULL, a_vmi_node },
	[VMI_READY] = { "READY", 5, 7, false, 'R', 0, c_vmi_ready, NULL, a_ready },
	[VMI_LM] = { "LIVE-MIGRATABLE", 15, 15, false, 0, 0, c_vmi_lm, NULL, a_vmi_lm },
	[VMI_PAUSED] = { "PAUSED", 6, 6, false, 0, 0, c_vmi_paused, NULL, a_vmi_paused },
	[VMI_MIG] = { "MIGRATION", 9, 40, false, 0, 0, c_vmi_mig, NULL },
};

/* KubeVirt's VirtualMachineInstance printer columns */
static const struct col_pick vmi_get[] = {
	{ VMI_NAME, false }, { VMI_AGE, false }, { VMI_PHASE, false }, { VMI_IP, false },
	{ VMI_NODE, false }, { VMI_READY, false }, { VMI_LM, true },   { VMI_PAUSED, true },
};

/* KubeVirt's additionalPrinterColumns of VirtualMachineInstance */
static const struct api_pick vmi_api[] = {
	{ VMI_NAME, "Name", "string", "name", 0, NULL },
	{ VMI_AGE, "Age", "date", "", 0, NULL },
	{ VMI_PHASE, "Phase", "string", "", 0, NULL },
	{ VMI_IP, "IP", "string", "", 0, NULL },
	{ VMI_NODE, "NodeName", "string", "", 0, NULL },
	{ VMI_READY, "Ready", "string", "", 0, NULL },
	{ VMI_LM, "Live-Migratable", "string", "", 1, NULL },
	{ VMI_PAUSED, "Paused", "string", "", 1, NULL },
};

/* ---- launcher pods ---- */

static enum col_tone c_pod_vmi(const struct col_ctx *c, const struct obj *o, char *b, size_t n)
{
	const struct obj *vmi = c->st && POD(o)->vmi_uid[0] ? store_get(c->st, o->src, OBJ_VMI, POD(o)->vmi_uid) : NULL;
	put(b, n, vmi ? vmi->name : POD(o)->vm_name);
	return COL_TONE_NONE;
}
/* STATUS, READY and RESTARTS are kubectl's printer's (model/podprint.h) */
static enum col_tone c_pod_status(const struct col_ctx *c, const struct obj *o, char *b, size_t n)
{
	(void)c;
	struct podprint pp;
	podprint_pod(POD(o), &pp);
	put(b, n, pp.status);
	return COL_TONE_STATUS;
}
static int s_pod_status(const struct obj *x, const struct obj *y)
{
	struct podprint a, b;
	podprint_pod(POD(x), &a);
	podprint_pod(POD(y), &b);
	return strcmp(a.status, b.status);
}
static enum col_tone c_pod_ready(const struct col_ctx *c, const struct obj *o, char *b, size_t n)
{
	(void)c;
	struct podprint pp;
	podprint_pod(POD(o), &pp);
	snprintf(b, n, "%d/%d", pp.ready, pp.total);
	return COL_TONE_NONE;
}
static enum col_tone c_pod_restarts(const struct col_ctx *c, const struct obj *o, char *b, size_t n)
{
	struct podprint pp;
	podprint_pod(POD(o), &pp);
	podprint_restarts(&pp, c->now, b, n);
	return pp.restarts > 0 ? COL_TONE_WAIT : COL_TONE_NONE;
}
static int s_pod_restarts(const struct obj *x, const struct obj *y)
{
	struct podprint a, b;
	podprint_pod(POD(x), &a);
	podprint_pod(POD(y), &b);
	return b.restarts - a.restarts;
}
static enum col_tone c_pod_node(const struct col_ctx *c, const struct obj *o, char *b, size_t n)
{
	(void)c;
	put(b, n, POD(o)->node);
	return COL_TONE_NONE;
}
static enum col_tone c_pod_ip(const struct col_ctx *c, const struct obj *o, char *b, size_t n)
{
	(void)c;
	put(b, n, POD(o)->ip);
	return COL_TONE_NONE;
}

/* kubectl's pod printer over the API object */
static struct json_object *a_pod_ready(struct json_object *o, int64_t now)
{
	(void)now;
	struct podprint pp;
	podprint_json(o, &pp);
	char b[32];
	snprintf(b, sizeof b, "%d/%d", pp.ready, pp.total);
	return json_object_new_string(b);
}
static struct json_object *a_pod_status(struct json_object *o, int64_t now)
{
	(void)now;
	struct podprint pp;
	podprint_json(o, &pp);
	return json_object_new_string(pp.status);
}
static struct json_object *a_pod_restarts(struct json_object *o, int64_t now)
{
	struct podprint pp;
	podprint_json(o, &pp);
	char b[48];
	podprint_restarts(&pp, now, b, sizeof b);
	return json_object_new_string(b);
}
static struct json_object *a_pod_ip(struct json_object *o, int64_t now)
{
	(void)now;
	return jnone(jgets(jget(o, "status"), "podIP"));
}
static struct json_object *a_pod_node(struct json_object *o, int64_t now)
{
	(void)now;
	return jnone(jgets(jget(o, "spec"), "nodeName"));
}
static struct json_object *a_none(struct json_object *o, int64_t now)
{
	(void)o;
	(void)now;
	return json_object_new_string("<none>");
}

enum { POD_NS, POD_NAME, POD_SOURCE, POD_VMI, POD_STATUS, POD_READY, POD_RESTARTS, POD_NODE, POD_AGE, POD_IP };

static const struct column pod_cols[] = {
	[POD_NS] = { "NAMESPACE", 9, 24, false, 'P', COL_ALL_NS, c_ns, s_ns },
	[POD_NAME] = { "NAME", 4, 56, false, 'N', 0, c_name, s_name, a_name },
	[POD_SOURCE] = { "SOURCE", 6, 20, false, 0, COL_MULTI_SOURCE, c_source, NULL },
	[POD_VMI] = { "VMI", 3, 40, false, 'I', COL_JOINED | COL_NONE, c_pod_vmi, NULL },
	[POD_STATUS] = { "STATUS", 6, 20, false, 'U', COL_NONE, c_pod_status, s_pod_status, a_pod_status },
	[POD_READY] = { "READY", 5, 7, false, 0, 0, c_pod_ready, NULL, a_pod_ready },
	[POD_RESTARTS] = { "RESTARTS", 8, 16, false, 'R', 0, c_pod_restarts, s_pod_restarts, a_pod_restarts },
	[POD_NODE] = { "NODE", 4, 24, false, 'O', COL_NONE, c_pod_node, NULL, a_pod_node },
	[POD_AGE] = { "AGE", 3, 8, true, 'A', 0, c_age, s_age, a_age },
	[POD_IP] = { "IP", 2, 39, false, 0, COL_GET_ONLY | COL_NONE, c_pod_ip, NULL, a_pod_ip },
};

/* kubectl's pod columns, then the VMI the launcher runs */
static const struct col_pick pod_get[] = {
	{ POD_NAME, false }, { POD_READY, false }, { POD_STATUS, false }, { POD_RESTARTS, false },
	{ POD_AGE, false },  { POD_VMI, false },   { POD_IP, true },	      { POD_NODE, true },
};

/* kubectl's built-in pod columns (the API server's Table) */
static const struct api_pick pod_api[] = {
	{ POD_NAME, "Name", "string", "name", 0, NULL },
	{ POD_READY, "Ready", "string", "", 0, NULL },
	{ POD_STATUS, "Status", "string", "", 0, NULL },
	{ POD_RESTARTS, "Restarts", "string", "", 0, NULL },
	{ POD_AGE, "Age", "string", "", 0, NULL },
	{ POD_IP, "IP", "string", "", 1, NULL },
	{ POD_NODE, "Node", "string", "", 1, NULL },
	{ -1, "Nominated Node", "string", "", 1, a_none },
	{ -1, "Readiness Gates", "string", "", 1, a_none },
};

/* ---- events ---- */

/* kubectl's LAST SEEN: lastTimestamp, else firstTimestamp (else the creation) */
static int64_t ev_last(const struct obj *o)
{
	return EV(o)->last ? EV(o)->last : EV(o)->first ? EV(o)->first : o->created;
}
static enum col_tone c_ev_last(const struct col_ctx *c, const struct obj *o, char *b, size_t n)
{
	age(c, ev_last(o), b, n);
	return COL_TONE_NONE;
}
static int s_ev_last(const struct obj *x, const struct obj *y)
{
	return cmp_i64(ev_last(y), ev_last(x)); /* newest first */
}
static enum col_tone c_ev_type(const struct col_ctx *c, const struct obj *o, char *b, size_t n)
{
	(void)c;
	put(b, n, EV(o)->type);
	return COL_TONE_STATUS;
}
static enum col_tone c_ev_reason(const struct col_ctx *c, const struct obj *o, char *b, size_t n)
{
	(void)c;
	put(b, n, EV(o)->reason);
	return EV(o)->type && strcmp(EV(o)->type, "Warning") == 0 ? COL_TONE_BAD : COL_TONE_NONE;
}
/* kubectl's OBJECT: the lower-cased kind, a slash, the name */
static enum col_tone c_ev_object(const struct col_ctx *c, const struct obj *o, char *b, size_t n)
{
	(void)c;
	snprintf(b, n, "%s/%s", EV(o)->inv_kind ? EV(o)->inv_kind : "", EV(o)->inv_name ? EV(o)->inv_name : "");
	for (char *p = b; *p && *p != '/'; p++)
		if (*p >= 'A' && *p <= 'Z')
			*p = (char)(*p - 'A' + 'a');
	return COL_TONE_NONE;
}
static enum col_tone c_ev_message(const struct col_ctx *c, const struct obj *o, char *b, size_t n)
{
	(void)c;
	put(b, n, EV(o)->message);
	return COL_TONE_NONE;
}
static enum col_tone c_ev_count(const struct col_ctx *c, const struct obj *o, char *b, size_t n)
{
	(void)c;
	snprintf(b, n, "%d", EV(o)->count);
	return COL_TONE_NONE;
}
static int s_ev_count(const struct obj *x, const struct obj *y)
{
	return EV(y)->count - EV(x)->count;
}

static struct json_object *a_ev_last(struct json_object *o, int64_t now)
{
	return jage(jgets(o, "lastTimestamp"), now);
}
static struct json_object *a_ev_first(struct json_object *o, int64_t now)
{
	return jage(jgets(o, "firstTimestamp"), now);
}
static struct json_object *a_ev_type(struct json_object *o, int64_t now)
{
	(void)now;
	return jcell(jgets(o, "type"));
}
static struct json_object *a_ev_reason(struct json_object *o, int64_t now)
{
	(void)now;
	return jcell(jgets(o, "reason"));
}
static struct json_object *a_ev_message(struct json_object *o, int64_t now)
{
	(void)now;
	return jcell(jgets(o, "message"));
}
static struct json_object *a_ev_object(struct json_object *o, int64_t now)
{
	(void)now;
	struct json_object *io = jget(o, "involvedObject");
	char b[300];
	snprintf(b, sizeof b, "%s/%s", jgets(io, "kind") ? jgets(io, "kind") : "", jgets(io, "name") ? jgets(io, "name") : "");
	for (char *p = b; *p && *p != '/'; p++)
		if (*p >= 'A' && *p <= 'Z')
			*p = (char)(*p - 'A' + 'a');
	return json_object_new_string(b);
}
static struct json_object *a_ev_count(struct json_object *o, int64_t now)
{
	(void)now;
	return json_object_new_int(json_object_get_int(jget(o, "count")));
}
static struct json_object *a_ev_subobject(struct json_object *o, int64_t now)
{
	(void)o;
	(void)now;
	return json_object_new_string("");
}
static struct json_object *a_ev_source(struct json_object *o, int64_t now)
{
	(void)now;
	struct json_object *src = jget(o, "source");
	const char *comp = jgets(src, "component"), *host = jgets(src, "host");
	char b[300];
	snprintf(b, sizeof b, "%s%s%s", comp ? comp : "", host ? ", " : "", host ? host : "");
	return json_object_new_string(b);
}

enum { EV_NS, EV_SOURCE, EV_LAST, EV_TYPE, EV_REASON, EV_OBJECT, EV_MESSAGE, EV_COUNT, EV_NAME };

static const struct column event_cols[] = {
	[EV_NS] = { "NAMESPACE", 9, 24, false, 'P', COL_ALL_NS, c_ns, s_ns },
	[EV_SOURCE] = { "SOURCE", 6, 20, false, 0, COL_MULTI_SOURCE, c_source, NULL },
	[EV_LAST] = { "LAST SEEN", 9, 9, true, 'A', 0, c_ev_last, s_ev_last, a_ev_last },
	[EV_TYPE] = { "TYPE", 7, 7, false, 'T', COL_NONE, c_ev_type, NULL, a_ev_type },
	[EV_REASON] = { "REASON", 6, 28, false, 'E', COL_NONE, c_ev_reason, NULL, a_ev_reason },
	[EV_OBJECT] = { "OBJECT", 6, 48, false, 'N', 0, c_ev_object, NULL, a_ev_object },
	[EV_MESSAGE] = { "MESSAGE", 7, 200, false, 0, COL_NONE, c_ev_message, NULL, a_ev_message },
	[EV_COUNT] = { "COUNT", 5, 6, true, 'C', 0, c_ev_count, s_ev_count, a_ev_count },
	[EV_NAME] = { "NAME", 4, 48, false, 0, COL_GET_ONLY, c_name, s_name, a_name },
};

/* kubectl's event columns */
static const struct col_pick event_get[] = {
	{ EV_LAST, false },   { EV_TYPE, false }, { EV_REASON, false },  { EV_OBJECT, false },
	{ EV_COUNT, true },   { EV_NAME, true },  { EV_MESSAGE, false },
};

/* kubectl's built-in event columns (the API server's Table) */
static const struct api_pick event_api[] = {
	{ EV_LAST, "Last Seen", "string", "", 0, NULL },
	{ EV_TYPE, "Type", "string", "", 0, NULL },
	{ EV_REASON, "Reason", "string", "", 0, NULL },
	{ EV_OBJECT, "Object", "string", "", 0, NULL },
	{ EV_MESSAGE, "Message", "string", "", 0, NULL },
	{ -1, "Subobject", "string", "", 1, a_ev_subobject },
	{ -1, "Source", "string", "", 1, a_ev_source },
	{ -1, "First Seen", "string", "", 1, a_ev_first },
	{ EV_COUNT, "Count", "integer", "", 1, NULL },
	{ EV_NAME, "Name", "string", "name", 1, NULL },
};

#define N(a) (sizeof(a) / sizeof((a)[0]))

const struct column_table columns_vm = {
	OBJ_VM, vm_cols, N(vm_cols), VM_NAME, vm_get, N(vm_get), VM_NS, vm_api, N(vm_api),
};
const struct column_table columns_vmi = {
	OBJ_VMI, vmi_cols, N(vmi_cols), VMI_NAME, vmi_get, N(vmi_get), VMI_NS, vmi_api, N(vmi_api),
};
const struct column_table columns_pod = {
	OBJ_POD, pod_cols, N(pod_cols), POD_NAME, pod_get, N(pod_get), POD_NS, pod_api, N(pod_api),
};
const struct column_table columns_event = {
	OBJ_EVENT, event_cols, N(event_cols), EV_LAST, event_get, N(event_get), EV_NS, event_api, N(event_api),
};

const struct column_table *columns_table(enum obj_kind kind)
{
	static const struct column_table *const tables[OBJ_KIND_COUNT] = {
		[OBJ_VM] = &columns_vm, [OBJ_VMI] = &columns_vmi, [OBJ_POD] = &columns_pod, [OBJ_EVENT] = &columns_event,
	};
	return (unsigned)kind < OBJ_KIND_COUNT ? tables[kind] : NULL;
}

const struct column *columns_find(const struct column_table *t, const char *title)
{
	for (size_t i = 0; t && i < t->ncols; i++)
		if (strcmp(t->cols[i].title, title) == 0)
			return &t->cols[i];
	return NULL;
}

/* ---- the server-side Table ---- */

struct json_object *columns_api_defs(const struct column_table *t)
{
	struct json_object *a = json_object_new_array();
	for (size_t i = 0; t && i < t->napi; i++) {
		const struct api_pick *p = &t->api[i];
		struct json_object *d = json_object_new_object();
		json_object_object_add(d, "name", json_object_new_string(p->name));
		json_object_object_add(d, "type", json_object_new_string(p->type));
		json_object_object_add(d, "format", json_object_new_string(p->format));
		json_object_object_add(d, "description", json_object_new_string(""));
		json_object_object_add(d, "priority", json_object_new_int(p->priority));
		json_object_array_add(a, d);
	}
	return a;
}

struct json_object *columns_api_cells(const struct column_table *t, struct json_object *o, int64_t now)
{
	struct json_object *a = json_object_new_array();
	for (size_t i = 0; t && i < t->napi; i++) {
		const struct api_pick *p = &t->api[i];
		struct json_object *(*fn)(struct json_object *, int64_t) = p->col >= 0 ? t->cols[p->col].api_cell : p->cell;
		json_object_array_add(a, fn ? fn(o, now) : NULL);
	}
	return a;
}

/* ---- kubectl's plain table ---- */

#define CELL_MAX 1024

static size_t width_of(const char *s)
{
	size_t w = 0;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		w += (*p & 0xc0) != 0x80; /* code points, close enough for alignment */
	return w;
}

void columns_print(const struct column_table *t, const struct obj *const *objs, size_t n,
		   const struct columns_print_opts *po, const struct col_ctx *c, struct buf *out)
{
	const struct column *use[COLUMNS_MAX];
	size_t ncols = 0;
	if (po->all_ns)
		use[ncols++] = &t->cols[t->ns_col];
	for (size_t i = 0; i < t->nget && ncols < N(use); i++)
		if (!t->get[i].wide || po->wide)
			use[ncols++] = &t->cols[t->get[i].col];
	for (size_t i = 0; po->source && i < t->ncols && ncols < N(use); i++)
		if (t->cols[i].flags & COL_MULTI_SOURCE) {
			use[ncols++] = &t->cols[i];
			break;
		}
	size_t rows = n + (po->header ? 1 : 0);
	char **cells = xcalloc(rows * ncols + 1, sizeof *cells);
	size_t *width = xcalloc(ncols + 1, sizeof *width);
	char tmp[CELL_MAX];
	for (size_t r = 0; r < rows; r++) {
		const struct obj *o = po->header ? (r ? objs[r - 1] : NULL) : objs[r];
		for (size_t k = 0; k < ncols; k++) {
			char *s;
			if (o == NULL) {
				s = xstrdup(use[k]->title);
			} else {
				tmp[0] = '\0';
				use[k]->cell(c, o, tmp, sizeof tmp);
				s = util_escape_display(tmp[0] == '\0' && (use[k]->flags & COL_NONE) ? "<none>" : tmp);
			}
			cells[r * ncols + k] = s;
			size_t w = width_of(s);
			if (w > width[k])
				width[k] = w;
		}
	}
	for (size_t k = 0; po->widths && k < ncols; k++) {
		if (po->widths[k] > width[k])
			width[k] = po->widths[k];
		po->widths[k] = width[k];
	}
	for (size_t r = 0; r < rows; r++) {
		size_t line = out->len;
		for (size_t k = 0; k < ncols; k++) {
			const char *s = cells[r * ncols + k];
			buf_add_str(out, s);
			if (k + 1 < ncols)
				for (size_t w = width_of(s); w < width[k] + 3; w++)
					buf_add_char(out, ' ');
			free(cells[r * ncols + k]);
		}
		while (out->len > line && out->data[out->len - 1] == ' ')
			out->data[--out->len] = '\0';
		buf_add_char(out, '\n');
	}
	free(cells);
	free(width);
}
