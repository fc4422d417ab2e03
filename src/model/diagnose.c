/* Diagnosis rules and the boundary walk (see diagnose.h). Each rule is a row: a match function that looks at
 * the chain and quotes what it saw, a summary, the next check and its command for each source type. */
#include "model/diagnose.h"

#include <json.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/opts.h"
#include "core/util.h"
#include "core/xmalloc.h"
#include "model/podprint.h"

struct diag_ctx {
	const struct chain *c;
	const struct vm *vm;
	const struct vmi *vmi;
	const struct pod *pod; /* the active launcher */
	int64_t now;
	const char *rs;        /* run strategy, "" when no VM */
	bool want_run;         /* Always / RerunOnFailure, or a Start request pending */
	bool want_stop;        /* Halted, or a Stop request pending */
	bool start_requested;
	struct json_object *storage; /* the storage chain (kube/storage.h), NULL when not read */
	/* filled by the matching rule */
	int64_t since;         /* when the observed state began, 0 unknown */
	bool moving;           /* progress is reported (a DataVolume importing): waiting, whatever the age */
	char *what;            /* {what}: the object and its state (escaped), NULL: the rule's fallback */
	const char *claim, *dv; /* {claim}, {dv} in commands (escaped already), NULL when unknown */
	struct diag_evidence *ev;
	size_t nev;
};

/* ---- small predicates ---- */

/* Phases may be unset (NULL from an engine object, "" from the API). */
#define PH(p) ((p) ? (p) : "")

static bool eq(const char *a, const char *b)
{
	return a && b && strcmp(a, b) == 0;
}

static bool one_of(const char *s, const char *const *set)
{
	for (; s && *set; set++)
		if (strcmp(s, *set) == 0)
			return true;
	return false;
}

static bool vm_status_is(const struct diag_ctx *x, const char *s)
{
	return x->vm && eq(x->vm->printable_status, s);
}

static bool vmi_phase_is(const struct diag_ctx *x, const char *s)
{
	return x->vmi && eq(x->vmi->phase, s);
}

/* The VMI has not reached Scheduled yet (phase unset, Pending or Scheduling). */
static bool vmi_preparing(const struct diag_ctx *x)
{
	static const char *const early[] = { "", "Pending", "Scheduling", NULL };
	return x->vmi && (x->vmi->phase == NULL || one_of(x->vmi->phase, early));
}

static const struct cond *vmi_cond(const struct diag_ctx *x, const char *type)
{
	return x->vmi ? cond_find(x->vmi->conds, x->vmi->nconds, type) : NULL;
}

static bool cond_false(const struct cond *c)
{
	return c && cond_status(c) && strcmp(cond_status(c), "True") != 0;
}

static int64_t latest(int64_t a, int64_t b)
{
	return a > b ? a : b;
}

/* ---- evidence ---- */

/* takes text; a line already quoted is not quoted again (two helpers may quote the same field) */
static void ev_add(struct diag_ctx *x, const struct obj *o, char *text)
{
	for (size_t i = 0; i < x->nev; i++)
		if (strcmp(x->ev[i].text, text) == 0) {
			free(text);
			return;
		}
	x->ev = xreallocarray(x->ev, x->nev + 1, sizeof *x->ev);
	x->ev[x->nev].obj = o;
	x->ev[x->nev].text = text;
	x->nev++;
}

/* Escaped copy, at most max bytes of input (long messages are cut for the walkthrough). */
static char *esc(const char *s, size_t max)
{
	if (s == NULL)
		return xstrdup("");
	size_t n = strnlen(s, max), cap = n * 4 + 8;
	char *out = xmalloc(cap);
	util_escape_display_n(s, n, out, cap);
	if (s[n] != '\0')
		strcat(out, "...");
	return out;
}

static void ago(int64_t now, int64_t t, char *buf, size_t len)
{
	if (t <= 0) {
		snprintf(buf, len, "time unknown");
		return;
	}
	char d[32];
	util_human_duration(now - t, d, sizeof d);
	snprintf(buf, len, "%s ago", d);
}

static void ev_text(struct diag_ctx *x, const struct obj *o, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void ev_text(struct diag_ctx *x, const struct obj *o, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	ev_add(x, o, xvasprintf(fmt, ap));
	va_end(ap);
}

static void ev_field(struct diag_ctx *x, const struct obj *o, const char *field, const char *value)
{
	char *n = esc(o->name, 256), *v = esc(value, 512);
	ev_text(x, o, "%s %s/%s %s: \"%s\"", obj_kind_title(o->kind), o->ns, n, field, v);
	free(n);
	free(v);
}

static void ev_cond(struct diag_ctx *x, const struct obj *o, const struct cond *c)
{
	if (c == NULL)
		return;
	char when[48];
	ago(x->now, c->last_transition, when, sizeof when);
	char *n = esc(o->name, 256), *r = esc(c->reason, 128), *m = esc(c->message, 1024);
	ev_text(x, o, "%s %s/%s condition %s=%s reason=%s (%s): \"%s\"", obj_kind_title(o->kind), o->ns, n, c->type,
		cond_status(c) ? cond_status(c) : "?", c->reason ? r : "-", when, m);
	free(n);
	free(r);
	free(m);
}

static void ev_event(struct diag_ctx *x, const struct event *e)
{
	char when[48];
	ago(x->now, e->last, when, sizeof when);
	char *n = esc(e->inv_name, 256), *m = esc(e->message, 1024), *r = esc(e->reason, 128);
	ev_text(x, &e->o, "event %s %s on %s/%s x%d, last %s (%s): \"%s\"", e->type ? e->type : "?", r,
		e->inv_kind ? e->inv_kind : "?", n, e->count, when, e->component ? e->component : "?", m);
	free(n);
	free(m);
	free(r);
}

/* Quotes the chain's events about object o (NULL: any) whose reason is in reasons (NULL: every Warning), newest
 * last, at most max. Returns how many were quoted. */
static int ev_events(struct diag_ctx *x, const struct obj *o, const char *const *reasons, int max)
{
	const struct chain *c = x->c;
	int found = 0;
	size_t start = c->nevents;
	/* walk back from the newest to find at most max, then quote them oldest first */
	while (start > 0 && found < max) {
		const struct event *e = c->events[start - 1];
		bool obj_ok = o == NULL || strcmp(e->inv_uid, o->uid) == 0 ||
			      (e->inv_uid[0] == '\0' && eq(e->inv_name, o->name));
		bool reason_ok = reasons ? one_of(e->reason, reasons) : eq(e->type, "Warning");
		if (obj_ok && reason_ok)
			found++;
		start--;
	}
	int quoted = 0;
	for (size_t i = start; i < c->nevents && quoted < found; i++) {
		const struct event *e = c->events[i];
		bool obj_ok = o == NULL || strcmp(e->inv_uid, o->uid) == 0 ||
			      (e->inv_uid[0] == '\0' && eq(e->inv_name, o->name));
		bool reason_ok = reasons ? one_of(e->reason, reasons) : eq(e->type, "Warning");
		if (obj_ok && reason_ok) {
			ev_event(x, e);
			quoted++;
		}
	}
	return quoted;
}

static void ev_run_strategy(struct diag_ctx *x)
{
	if (x->vm == NULL)
		return;
	ev_field(x, &x->vm->o, "spec.runStrategy", x->vm->run_strategy);
	if (x->vm->printable_status)
		ev_field(x, &x->vm->o, "status.printableStatus", x->vm->printable_status);
}

static void ev_phase(struct diag_ctx *x)
{
	if (x->vmi == NULL)
		return;
	ev_field(x, &x->vmi->o, "status.phase", x->vmi->phase);
	if (x->vmi->reason)
		ev_field(x, &x->vmi->o, "status.reason", x->vmi->reason);
}

/* ---- the storage chain (strings escaped by kube/storage.c) ---- */

static const char *sget(struct json_object *o, const char *a, const char *b)
{
	if (o && a && !json_object_object_get_ex(o, a, &o))
		return NULL;
	if (o && b && !json_object_object_get_ex(o, b, &o))
		return NULL;
	return o && json_object_is_type(o, json_type_string) ? json_object_get_string(o) : NULL;
}

/* The first volume whose DataVolume (dv true) or claim is in one of phases (NULL: any phase but the good one). */
static struct json_object *vol_with(const struct diag_ctx *x, bool dv, const char *const *phases)
{
	size_t n = x->storage && json_object_is_type(x->storage, json_type_array) ? json_object_array_length(x->storage) : 0;
	for (size_t i = 0; i < n; i++) {
		struct json_object *v = json_object_array_get_idx(x->storage, i);
		const char *ph = sget(v, dv ? "dataVolume" : "pvc", "phase");
		if (ph && (phases ? one_of(ph, phases) : !eq(ph, dv ? "Succeeded" : "Bound")))
			return v;
	}
	return NULL;
}

static bool suffix(const char *s, const char *suf)
{
	size_t a = s ? strlen(s) : 0, b = strlen(suf);
	return a >= b && strcmp(s + a - b, suf) == 0;
}

static void what_set(struct diag_ctx *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void what_set(struct diag_ctx *x, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	free(x->what);
	x->what = xvasprintf(fmt, ap);
	va_end(ap);
}

/* The DataVolume of volume v: {what}, {dv}, its evidence; moving when it reports progress while in progress. */
static void dv_found(struct diag_ctx *x, struct json_object *v)
{
	const char *name = sget(v, "dataVolume", "name"), *ph = sget(v, "dataVolume", "phase");
	const char *pr = sget(v, "dataVolume", "progress"), *msg = sget(v, "dataVolume", "message");
	bool progress = pr && *pr && strcmp(pr, "N/A") != 0;
	x->dv = name;
	x->moving = progress && suffix(ph, "InProgress");
	what_set(x, "DataVolume %s/%s is %s%s%s%s%s%s", x->c->ns, name ? name : "?", ph && *ph ? ph : "without a phase",
		 progress ? " (" : "", progress ? pr : "", progress ? ")" : "", msg && *msg ? ": " : "",
		 msg && *msg ? msg : "");
	ev_text(x, NULL, "volume %s: DataVolume %s/%s status.phase \"%s\"%s%s",
		sget(v, "volume", NULL) ? sget(v, "volume", NULL) : "?", x->c->ns, name ? name : "?", ph ? ph : "",
		progress ? ", status.progress " : "", progress ? pr : "");
	if (msg && *msg)
		ev_text(x, NULL, "DataVolume %s/%s: \"%s\"", x->c->ns, name ? name : "?", msg);
}

/* The claim of volume v: {what}, {claim}, its evidence. */
static void pvc_found(struct diag_ctx *x, struct json_object *v)
{
	const char *name = sget(v, "pvc", "name"), *ph = sget(v, "pvc", "phase"), *sc = sget(v, "pvc", "storageClass");
	x->claim = name;
	if (eq(ph, "(missing)"))
		what_set(x, "PVC %s/%s does not exist", x->c->ns, name ? name : "?");
	else
		what_set(x, "PVC %s/%s (storage class %s) is %s", x->c->ns, name ? name : "?", sc ? sc : "(default)",
			 ph && *ph ? ph : "without a phase");
	const char *why = sget(v, "reason", NULL);
	ev_text(x, NULL, "volume %s: %s", sget(v, "volume", NULL) ? sget(v, "volume", NULL) : "?", why ? why : x->what);
}

/* ---- VM boundary rules ---- */

static bool m_vm_absent(struct diag_ctx *x)
{
	if (x->vm != NULL || x->vmi == NULL)
		return false;
	ev_text(x, &x->vmi->o, "VirtualMachineInstance %s/%s has no VirtualMachine of the same name%s", x->vmi->o.ns,
		x->c->name, x->vmi->vm_uid[0] ? " (its owner was deleted)" : "");
	return true;
}

static bool m_vm_run_conflict(struct diag_ctx *x)
{
	if (x->vm == NULL || !x->vm->run_conflict)
		return false;
	ev_text(x, &x->vm->o, "VirtualMachine %s/%s sets both spec.running and spec.runStrategy (%s)", x->vm->o.ns,
		x->c->name, PH(x->vm->run_strategy));
	return true;
}

static bool m_vm_vmi_foreign(struct diag_ctx *x)
{
	const struct vmi *f = x->c->vmi_foreign;
	if (f == NULL)
		return false;
	ev_text(x, &f->o, "VirtualMachineInstance %s/%s uid %s is owned by VirtualMachine uid %s, not by this VM (uid %s)",
		f->o.ns, x->c->name, f->o.uid, f->vm_uid, x->vm ? x->vm->o.uid : "?");
	return true;
}

static bool m_vm_bad_strategy(struct diag_ctx *x)
{
	static const char *const known[] = { "Always", "RerunOnFailure", "Once", "Manual", "Halted", NULL };
	if (x->vm == NULL || one_of(x->vm->run_strategy, known))
		return false;
	ev_field(x, &x->vm->o, "spec.runStrategy", x->vm->run_strategy);
	return true;
}

static bool m_vm_terminating(struct diag_ctx *x)
{
	if (x->vm == NULL || x->vm->o.deleted == 0)
		return false;
	char t[32];
	util_format_time(x->vm->o.deleted, t, sizeof t);
	ev_text(x, &x->vm->o, "VirtualMachine %s/%s metadata.deletionTimestamp: %s", x->vm->o.ns, x->c->name, t);
	if (x->vmi)
		ev_text(x, &x->vmi->o, "its VirtualMachineInstance (uid %s, phase %s) still exists", x->vmi->o.uid,
			PH(x->vmi->phase));
	ev_events(x, &x->vm->o, NULL, 3);
	x->since = x->vm->o.deleted;
	return true;
}

/* The VM's start failures with the time of the next attempt (KubeVirt's crash-loop back-off). */
static void ev_start_failure(struct diag_ctx *x)
{
	const struct start_failure *f = x->vm ? vm_start_failure(x->vm) : NULL;
	if (f == NULL || f->failures <= 0)
		return;
	char t[32] = "unknown", when[48] = "";
	if (f->retry_after) {
		util_format_time(f->retry_after, t, sizeof t);
		int64_t d = f->retry_after - x->now;
		char h[32];
		util_human_duration(d < 0 ? -d : d, h, sizeof h);
		snprintf(when, sizeof when, d >= 0 ? " (next attempt in %s)" : " (%s ago)", h);
	}
	ev_text(x, &x->vm->o, "VirtualMachine %s/%s status.startFailure: consecutiveFailCount=%d, retryAfterTimestamp=%s%s%s%s",
		x->vm->o.ns, x->c->name, f->failures, t, when, f->vmi[0] ? ", lastFailedVMIUID=" : "", f->vmi);
}

static bool m_vm_manual_recovery(struct diag_ctx *x)
{
	const struct cond *c = x->vm ? cond_find(x->vm->conds, x->vm->nconds, "ManualRecoveryRequired") : NULL;
	if (c == NULL || !eq(cond_status(c), "True"))
		return false;
	ev_cond(x, &x->vm->o, c);
	ev_events(x, &x->vm->o, NULL, 3);
	return true;
}

static void since_vm(struct diag_ctx *x)
{
	x->since = x->vm->o.created;
	for (int i = 0; i < x->vm->nconds; i++)
		x->since = latest(x->since, x->vm->conds[i].last_transition);
}

/* DataVolumes being imported or cloned: no VMI yet, and that is expected while their progress moves. */
static bool m_vm_provisioning(struct diag_ctx *x)
{
	if (x->vm == NULL || x->vmi != NULL || !vm_status_is(x, "Provisioning"))
		return false;
	ev_run_strategy(x);
	struct json_object *v = vol_with(x, true, NULL);
	if (v)
		dv_found(x, v);
	ev_events(x, &x->vm->o, NULL, 3);
	since_vm(x);
	return true;
}

/* A DataVolume waiting for its data to be uploaded (virtctl image-upload). */
static bool m_vm_waiting_for_receiver(struct diag_ctx *x)
{
	if (x->vm == NULL || x->vmi != NULL || !vm_status_is(x, "WaitingForReceiver"))
		return false;
	ev_run_strategy(x);
	struct json_object *v = vol_with(x, true, NULL);
	if (v)
		dv_found(x, v);
	ev_events(x, &x->vm->o, NULL, 3);
	return true;
}

/* The claims are not bound yet (a Pending PVC: no provisioner, a storage class that does not exist, or
 * WaitForFirstConsumer): no VMI yet. */
static bool m_vm_volume_binding(struct diag_ctx *x)
{
	if (x->vm == NULL || x->vmi != NULL || !vm_status_is(x, "WaitingForVolumeBinding"))
		return false;
	ev_run_strategy(x);
	struct json_object *v = vol_with(x, false, NULL);
	if (v)
		pvc_found(x, v);
	ev_events(x, &x->vm->o, NULL, 3);
	since_vm(x);
	return true;
}

static bool m_vm_datavolume_error(struct diag_ctx *x)
{
	if (x->vm == NULL || x->vmi != NULL || !vm_status_is(x, "DataVolumeError"))
		return false;
	ev_run_strategy(x);
	struct json_object *v = vol_with(x, true, NULL);
	if (v)
		dv_found(x, v);
	x->moving = false;
	ev_cond(x, &x->vm->o, cond_find(x->vm->conds, x->vm->nconds, "Failure"));
	ev_events(x, &x->vm->o, NULL, 3);
	return true;
}

static bool m_vm_pvc_not_found(struct diag_ctx *x)
{
	static const char *const missing[] = { "(missing)", NULL };
	if (x->vm == NULL || x->vmi != NULL || !vm_status_is(x, "ErrorPvcNotFound"))
		return false;
	ev_run_strategy(x);
	struct json_object *v = vol_with(x, false, missing);
	if (v)
		pvc_found(x, v);
	ev_cond(x, &x->vm->o, cond_find(x->vm->conds, x->vm->nconds, "Failure"));
	ev_events(x, &x->vm->o, NULL, 3);
	return true;
}

static bool m_vm_crashloop(struct diag_ctx *x)
{
	const struct start_failure *f = x->vm ? vm_start_failure(x->vm) : NULL;
	if (f == NULL || x->vmi != NULL || f->failures <= 0 || !x->want_run)
		return false; /* a VM stopped after its crash loop is halted, not looping */
	char next[64] = "";
	if (f->retry_after > x->now) {
		char h[32];
		util_human_duration(f->retry_after - x->now, h, sizeof h);
		snprintf(next, sizeof next, ", next attempt in %s", h);
	}
	what_set(x, "%d failed starts in a row%s", f->failures, next);
	ev_start_failure(x);
	ev_run_strategy(x);
	ev_events(x, NULL, NULL, 3);
	return true;
}

static bool m_vm_halted(struct diag_ctx *x)
{
	if (x->vm == NULL || x->vmi != NULL || !eq(x->rs, "Halted") || x->start_requested)
		return false;
	ev_field(x, &x->vm->o, "spec.runStrategy", x->vm->run_strategy);
	ev_text(x, &x->vm->o, "no VirtualMachineInstance %s/%s: none is expected", x->vm->o.ns, x->c->name);
	return true;
}

static bool m_vm_manual_stopped(struct diag_ctx *x)
{
	static const char *const manual[] = { "Manual", "Once", NULL };
	if (x->vm == NULL || x->vmi != NULL || !one_of(x->rs, manual) || x->start_requested)
		return false;
	ev_field(x, &x->vm->o, "spec.runStrategy", x->vm->run_strategy);
	ev_text(x, &x->vm->o, "no VirtualMachineInstance and no start request pending");
	return true;
}

static bool m_vm_start_requested(struct diag_ctx *x)
{
	if (x->vm == NULL || x->vmi != NULL || !x->start_requested)
		return false;
	ev_run_strategy(x);
	ev_text(x, &x->vm->o, "VirtualMachine %s/%s status.stateChangeRequests has a Start request not yet acted on",
		x->vm->o.ns, x->c->name);
	ev_cond(x, &x->vm->o, cond_find(x->vm->conds, x->vm->nconds, "Failure"));
	ev_events(x, &x->vm->o, NULL, 3);
	return true;
}

static bool m_vm_no_vmi(struct diag_ctx *x)
{
	static const char *const run[] = { "Always", "RerunOnFailure", NULL };
	if (x->vm == NULL || x->vmi != NULL || !one_of(x->rs, run))
		return false;
	ev_run_strategy(x);
	ev_text(x, &x->vm->o, "no VirtualMachineInstance %s/%s although runStrategy %s wants one", x->vm->o.ns,
		x->c->name, x->rs);
	const struct cond *f = cond_find(x->vm->conds, x->vm->nconds, "Failure");
	ev_cond(x, &x->vm->o, f);
	ev_events(x, &x->vm->o, NULL, 3);
	x->since = x->vm->o.created;
	for (int i = 0; i < x->vm->nconds; i++)
		x->since = latest(x->since, x->vm->conds[i].last_transition);
	return true;
}

static bool m_vm_stopping(struct diag_ctx *x)
{
	if (x->vm == NULL || x->vmi == NULL || !x->want_stop)
		return false;
	what_set(x, "VMI %s (phase %s)", x->vmi->o.uid, PH(x->vmi->phase)[0] ? x->vmi->phase : "unset");
	ev_run_strategy(x);
	ev_text(x, &x->vmi->o, "VirtualMachineInstance %s/%s (uid %s, phase %s) still exists", x->vmi->o.ns,
		x->c->name, x->vmi->o.uid, PH(x->vmi->phase));
	if (x->vmi->o.deleted) {
		char t[32];
		util_format_time(x->vmi->o.deleted, t, sizeof t);
		ev_text(x, &x->vmi->o, "its metadata.deletionTimestamp: %s", t);
	}
	ev_events(x, NULL, NULL, 3);
	x->since = x->vmi->o.deleted;
	return true;
}

static bool m_vm_restart_required(struct diag_ctx *x)
{
	const struct cond *c = x->vm ? cond_find(x->vm->conds, x->vm->nconds, "RestartRequired") : NULL;
	if (c == NULL || !eq(cond_status(c), "True"))
		return false;
	ev_cond(x, &x->vm->o, c);
	return true;
}

/* ---- VMI boundary rules ---- */

static bool m_vmi_terminating(struct diag_ctx *x)
{
	if (x->vmi == NULL || x->vmi->o.deleted == 0)
		return false;
	char t[32];
	util_format_time(x->vmi->o.deleted, t, sizeof t);
	ev_text(x, &x->vmi->o, "VirtualMachineInstance %s/%s (uid %s) metadata.deletionTimestamp: %s", x->vmi->o.ns,
		x->c->name, x->vmi->o.uid, t);
	ev_phase(x);
	ev_run_strategy(x);
	ev_events(x, &x->vmi->o, NULL, 3);
	x->since = x->vmi->o.deleted;
	return true;
}

static bool m_vmi_migration_failed(struct diag_ctx *x)
{
	const struct migration_state *m = x->vmi ? vmi_mig(x->vmi) : NULL;
	if (m == NULL || !m->present || !(m->failed || eq(m->abort_status, "Failed")))
		return false;
	char *r = esc(m->failure_reason, 1024);
	ev_text(x, &x->vmi->o, "status.migrationState: %s -> %s, failed=%s, abortStatus=%s, failureReason=\"%s\"",
		m->source_node ? m->source_node : "?", m->target_node ? m->target_node : "?",
		m->failed ? "true" : "false", m->abort_status ? m->abort_status : "-", r);
	free(r);
	static const char *const reasons[] = { "Migrated", "MigrationFailed", "FailedMigration", NULL };
	ev_events(x, &x->vmi->o, reasons, 3);
	return true;
}

static bool m_vmi_migrating(struct diag_ctx *x)
{
	const struct migration_state *m = x->vmi ? vmi_mig(x->vmi) : NULL;
	if (m == NULL || !m->present || m->completed || m->failed || m->end != 0 || m->start == 0)
		return false;
	char when[48];
	ago(x->now, m->start, when, sizeof when);
	ev_text(x, &x->vmi->o, "status.migrationState: %s -> %s started %s, mode %s%s", m->source_node ? m->source_node : "?",
		m->target_node ? m->target_node : "?", when, m->mode ? m->mode : "?",
		m->abort_requested ? ", abort requested" : "");
	if (m->progress_pct >= 0) /* engine migrations report libvirt's job statistics */
		ev_text(x, &x->vmi->o, "progress %d%%: %llu MiB processed, %llu MiB remaining, dirty rate %llu MiB/s",
			m->progress_pct, (unsigned long long)(m->data_processed >> 20),
			(unsigned long long)(m->data_remaining >> 20), (unsigned long long)(m->dirty_rate >> 20));
	return true;
}

static bool m_vmi_unknown(struct diag_ctx *x)
{
	if (!vmi_phase_is(x, "Unknown"))
		return false;
	ev_phase(x);
	if (x->vmi->node)
		ev_field(x, &x->vmi->o, "status.nodeName", x->vmi->node);
	ev_events(x, NULL, NULL, 3);
	return true;
}

static const struct phase_time *phase_at(const struct vmi *v, const char *phase)
{
	for (int i = v ? v->nphases - 1 : -1; i >= 0; i--)
		if (eq(v->phases[i].phase, phase))
			return &v->phases[i];
	return NULL;
}

static bool m_vmi_ended_restart(struct diag_ctx *x)
{
	bool always = eq(x->rs, "Always"), rerun = eq(x->rs, "RerunOnFailure");
	if (!((vmi_phase_is(x, "Succeeded") && always) || (vmi_phase_is(x, "Failed") && (always || rerun))))
		return false;
	/* the engine keeps the failed VMI through the back-off (KubeVirt deletes it): the back-off is said too */
	char next[64] = "";
	const struct start_failure *f = x->vm ? vm_start_failure(x->vm) : NULL;
	if (f && f->retry_after > x->now) {
		char h[32];
		util_human_duration(f->retry_after - x->now, h, sizeof h);
		snprintf(next, sizeof next, ", next attempt in %s", h);
	}
	if (f && f->failures > 0)
		what_set(x, "%s; %d failed starts in a row%s", x->vmi->phase, f->failures, next);
	else
		what_set(x, "%s", x->vmi->phase);
	ev_phase(x);
	ev_run_strategy(x);
	ev_start_failure(x);
	ev_events(x, NULL, NULL, 3);
	const struct phase_time *p = phase_at(x->vmi, x->vmi->phase);
	x->since = p ? p->at : 0;
	return true;
}

static bool m_vmi_failed(struct diag_ctx *x)
{
	if (!vmi_phase_is(x, "Failed"))
		return false;
	ev_phase(x);
	ev_run_strategy(x);
	ev_events(x, NULL, NULL, 3);
	return true;
}

static bool m_vmi_succeeded(struct diag_ctx *x)
{
	if (!vmi_phase_is(x, "Succeeded"))
		return false;
	ev_phase(x);
	ev_run_strategy(x);
	return true;
}

static bool m_vmi_pvc_not_found(struct diag_ctx *x)
{
	const struct cond *s = vmi_cond(x, "Synchronized");
	bool by_cond = cond_false(s) && s->reason && (strstr(s->reason, "PvcNotFound") || strstr(s->reason, "PVCNotFound"));
	if (!vmi_preparing(x) || !(vm_status_is(x, "ErrorPvcNotFound") || by_cond))
		return false;
	if (vm_status_is(x, "ErrorPvcNotFound"))
		ev_field(x, &x->vm->o, "status.printableStatus", x->vm->printable_status);
	static const char *const missing[] = { "(missing)", NULL };
	struct json_object *v = vol_with(x, false, missing);
	if (v)
		pvc_found(x, v);
	ev_cond(x, &x->vmi->o, s);
	static const char *const reasons[] = { "FailedPvcNotFound", "FailedCreate", NULL };
	ev_events(x, NULL, reasons, 3);
	return true;
}

static bool m_vmi_datavolume_error(struct diag_ctx *x)
{
	if (!vmi_preparing(x) || !vm_status_is(x, "DataVolumeError"))
		return false;
	ev_field(x, &x->vm->o, "status.printableStatus", x->vm->printable_status);
	struct json_object *v = vol_with(x, true, NULL);
	if (v)
		dv_found(x, v);
	x->moving = false;
	ev_cond(x, &x->vmi->o, vmi_cond(x, "DataVolumesReady"));
	ev_events(x, NULL, NULL, 3);
	return true;
}

static bool m_vmi_volume_binding(struct diag_ctx *x)
{
	const struct cond *dv = vmi_cond(x, "DataVolumesReady");
	if (!vmi_preparing(x) || !(vm_status_is(x, "WaitingForVolumeBinding") || cond_false(dv)))
		return false;
	if (vm_status_is(x, "WaitingForVolumeBinding"))
		ev_field(x, &x->vm->o, "status.printableStatus", x->vm->printable_status);
	struct json_object *v = vol_with(x, false, NULL);
	if (v)
		pvc_found(x, v);
	else if ((v = vol_with(x, true, NULL)) != NULL)
		dv_found(x, v);
	ev_cond(x, &x->vmi->o, dv);
	ev_events(x, NULL, NULL, 3);
	x->since = dv ? dv->last_transition : x->vmi->o.created;
	return true;
}

static bool m_vmi_pod_create_failed(struct diag_ctx *x)
{
	const struct cond *s = vmi_cond(x, "Synchronized");
	if (!vmi_preparing(x) || x->c->npods || x->c->nstray || !cond_false(s))
		return false;
	ev_phase(x);
	ev_cond(x, &x->vmi->o, s);
	static const char *const reasons[] = { "FailedCreate", NULL };
	ev_events(x, &x->vmi->o, reasons, 3);
	return true;
}

static bool m_vmi_no_launcher(struct diag_ctx *x)
{
	if (!vmi_preparing(x) || x->c->npods || x->c->nstray)
		return false;
	ev_phase(x);
	ev_text(x, &x->vmi->o, "no virt-launcher pod owned by VirtualMachineInstance uid %s", x->vmi->o.uid);
	ev_events(x, &x->vmi->o, NULL, 3);
	x->since = x->vmi->o.created;
	return true;
}

static bool m_vmi_phase_other(struct diag_ctx *x)
{
	static const char *const known[] = { "", "Pending", "Scheduling", "Scheduled", "Running", NULL };
	if (x->vmi == NULL || x->vmi->phase == NULL || one_of(x->vmi->phase, known))
		return false;
	ev_phase(x);
	return true;
}

/* ---- launcher boundary rules ---- */

static void ev_pod_state(struct diag_ctx *x, const struct pod *p)
{
	char *n = esc(p->o.name, 256), rs[48];
	struct podprint pp;
	podprint_pod(p, &pp);
	podprint_restarts(&pp, x->now, rs, sizeof rs);
	char *ps = esc(pp.status, 96);
	ev_text(x, &p->o, "Pod %s/%s (uid %s) status.phase: \"%s\"%s%s; kubectl get pod: READY %d/%d, STATUS %s, RESTARTS %s",
		p->o.ns, n, p->o.uid, PH(p->phase), p->node ? ", node " : ", not scheduled", p->node ? p->node : "",
		pp.ready, pp.total, ps, rs);
	free(ps);
	free(n);
}

static bool m_launcher_owner_mismatch(struct diag_ctx *x)
{
	if (x->c->npods > 0 || x->c->nstray == 0)
		return false;
	for (size_t i = 0; i < x->c->nstray; i++) {
		const struct pod *p = x->c->stray[i];
		char *n = esc(p->o.name, 256);
		ev_text(x, &p->o, "Pod %s/%s is labelled kubevirt.io/created-by=%s but its controller owner is %s%s",
			p->o.ns, n, pod_created_by(p), p->vmi_uid[0] ? "VirtualMachineInstance uid " : "",
			p->vmi_uid[0] ? p->vmi_uid : p->owner_kind_other ? p->owner_kind_other : "(none)");
		free(n);
	}
	return true;
}

static bool m_launcher_not_seen(struct diag_ctx *x)
{
	if (x->c->npods > 0)
		return false;
	ev_phase(x);
	ev_text(x, x->vmi ? &x->vmi->o : NULL, "no launcher pod owned by this VMI is visible (%d listed in status.activePods)",
		x->vmi ? x->vmi->nactive : 0);
	return true;
}

static bool m_launcher_failed(struct diag_ctx *x)
{
	const struct pod *p = x->pod;
	if (p == NULL || !(eq(p->phase, "Failed") || eq(p->phase, "Succeeded")))
		return false;
	ev_pod_state(x, p);
	if (p->reason)
		ev_field(x, &p->o, "status.reason", p->reason);
	if (p->message)
		ev_field(x, &p->o, "status.message", p->message);
	ev_events(x, &p->o, NULL, 3);
	return true;
}

static bool m_launcher_unschedulable(struct diag_ctx *x)
{
	const struct pod *p = x->pod;
	if (p == NULL || !eq(p->phase, "Pending") || p->node)
		return false;
	const struct cond *sc = cond_find(p->conds, p->nconds, "PodScheduled");
	static const char *const reasons[] = { "FailedScheduling", NULL };
	bool by_event = false;
	for (size_t i = 0; i < x->c->nevents && !by_event; i++)
		by_event = strcmp(x->c->events[i]->inv_uid, p->o.uid) == 0 && eq(x->c->events[i]->reason, "FailedScheduling");
	if (!cond_false(sc) && !by_event && !vm_status_is(x, "ErrorUnschedulable"))
		return false;
	ev_pod_state(x, p);
	ev_cond(x, &p->o, sc);
	ev_events(x, &p->o, reasons, 2);
	/* the scheduler's own words: the newest FailedScheduling event, else the PodScheduled condition */
	const char *why = sc && sc->message ? sc->message : NULL;
	for (size_t i = 0; i < x->c->nevents; i++)
		if (strcmp(x->c->events[i]->inv_uid, p->o.uid) == 0 && eq(x->c->events[i]->reason, "FailedScheduling") &&
		    x->c->events[i]->message)
			why = x->c->events[i]->message;
	if (why) {
		char *w = esc(why, 240);
		what_set(x, "%s", w);
		free(w);
	}
	if (vm_status_is(x, "ErrorUnschedulable"))
		ev_field(x, &x->vm->o, "status.printableStatus", x->vm->printable_status);
	return true;
}

static const struct container_status *waiting_with(const struct pod *p, const char *const *reasons, bool negate)
{
	for (int i = 0; p && i < p->ncontainers; i++) {
		const struct container_status *cs = &p->containers[i];
		if (!eq(cs->state, "waiting") || cs->reason == NULL)
			continue;
		if (one_of(cs->reason, reasons) != negate)
			return cs;
	}
	return NULL;
}

static void ev_container(struct diag_ctx *x, const struct pod *p, const struct container_status *cs)
{
	char *n = esc(p->o.name, 256), *m = esc(cs->message, 1024);
	char last[96] = "";
	if (cs->last_reason)
		snprintf(last, sizeof last, ", last terminated: %s (exit %d)", cs->last_reason, cs->last_exit_code);
	ev_text(x, &p->o, "Pod %s/%s %scontainer %s: %s %s, restarts %d%s: \"%s\"", p->o.ns, n, cs->init ? "init " : "",
		cs->name ? cs->name : "?", cs->state ? cs->state : "?", cs->reason ? cs->reason : "-", cs->restarts, last,
		m);
	free(n);
	free(m);
}

static bool m_launcher_image_pull(struct diag_ctx *x)
{
	static const char *const pull[] = { "ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull",
					    NULL };
	const struct container_status *cs = waiting_with(x->pod, pull, false);
	bool by_status = x->pod && (vm_status_is(x, "ErrImagePull") || vm_status_is(x, "ImagePullBackOff"));
	if (cs == NULL && !by_status)
		return false;
	if (cs && cs->image) {
		char *im = esc(cs->image, 512), *cn = esc(cs->name, 128);
		what_set(x, "image %s (container %s: %s)", im, cn, cs->reason);
		free(im);
		free(cn);
	}
	if (cs)
		ev_container(x, x->pod, cs);
	else
		ev_field(x, &x->vm->o, "status.printableStatus", x->vm->printable_status);
	static const char *const reasons[] = { "Failed", "BackOff", "ErrImagePull", NULL };
	ev_events(x, &x->pod->o, reasons, 2);
	return true;
}

static bool m_launcher_crashloop(struct diag_ctx *x)
{
	static const char *const crash[] = { "CrashLoopBackOff", NULL };
	const struct container_status *cs = waiting_with(x->pod, crash, false);
	if (cs == NULL && !(x->pod && vm_status_is(x, "CrashLoopBackOff")))
		return false;
	if (cs) {
		char *cn = esc(cs->name, 128);
		what_set(x, "container %s, restarted %d times%s%s", cn, cs->restarts, cs->last_reason ? ", last: " : "",
			 cs->last_reason ? cs->last_reason : "");
		free(cn);
		ev_container(x, x->pod, cs);
	} else {
		ev_field(x, &x->vm->o, "status.printableStatus", x->vm->printable_status);
	}
	ev_start_failure(x);
	static const char *const reasons[] = { "BackOff", NULL };
	ev_events(x, &x->pod->o, reasons, 2);
	return true;
}

static bool m_launcher_container_error(struct diag_ctx *x)
{
	static const char *const normal[] = { "ContainerCreating", "PodInitializing", NULL };
	const struct container_status *cs = waiting_with(x->pod, normal, true);
	if (cs == NULL)
		return false;
	ev_container(x, x->pod, cs);
	ev_events(x, &x->pod->o, NULL, 2);
	return true;
}

/* kubelet's words when a volume's object does not exist: MountVolume.SetUp failed for volume "VOL" : KIND "NAME"
 * not found (KIND secret or configmap); true with each part copied into its buffer (a part too long: false). */
static bool mount_missing(const char *m, char *vol, char *kind, char *name, size_t cap)
{
	static const char head[] = "MountVolume.SetUp failed for volume \"";
	if (m == NULL || strncmp(m, head, sizeof head - 1) != 0)
		return false;
	const char *p = m + sizeof head - 1, *q = strchr(p, '"');
	if (q == NULL || (size_t)(q - p) >= cap || strncmp(q, "\" : ", 4) != 0)
		return false;
	snprintf(vol, cap, "%.*s", (int)(q - p), p);
	p = q + 4;
	q = strchr(p, ' ');
	if (q == NULL || (size_t)(q - p) >= cap || q[1] != '"')
		return false;
	snprintf(kind, cap, "%.*s", (int)(q - p), p);
	p = q + 2;
	q = strchr(p, '"');
	if (q == NULL || (size_t)(q - p) >= cap || strcmp(q, "\" not found") != 0)
		return false;
	snprintf(name, cap, "%.*s", (int)(q - p), p);
	return eq(kind, "secret") || eq(kind, "configmap");
}

/* A launcher on its node that kubelet cannot start because a Secret or ConfigMap its volumes name does not exist:
 * nothing changes until someone creates it (kubelet keeps retrying the mount, the pod stays ContainerCreating). */
static bool m_launcher_mount_missing(struct diag_ctx *x)
{
	const struct pod *p = x->pod;
	if (p == NULL || !eq(p->phase, "Pending") || p->node == NULL)
		return false;
	const struct event *found = NULL;
	char vol[256], kind[256], name[256];
	for (size_t i = x->c->nevents; i > 0 && found == NULL; i--) { /* the newest */
		const struct event *e = x->c->events[i - 1];
		if (strcmp(e->inv_uid, p->o.uid) == 0 && eq(e->reason, "FailedMount") &&
		    mount_missing(e->message, vol, kind, name, sizeof vol))
			found = e;
	}
	if (found == NULL)
		return false;
	char *n = esc(name, 253), *v = esc(vol, 253);
	what_set(x, "%s %s/%s (volume %s) does not exist", eq(kind, "secret") ? "Secret" : "ConfigMap", x->c->ns, n, v);
	free(n);
	free(v);
	ev_pod_state(x, p);
	for (int i = 0; i < p->ncontainers; i++)
		if (eq(p->containers[i].state, "waiting"))
			ev_container(x, p, &p->containers[i]);
	ev_event(x, found);
	x->since = found->first;
	return true;
}

/* A Pending launcher without a node and without the scheduler's refusal (yet): the scheduler has not placed it. */
static bool m_launcher_scheduling(struct diag_ctx *x)
{
	const struct pod *p = x->pod;
	if (p == NULL || !eq(p->phase, "Pending") || p->node)
		return false;
	ev_pod_state(x, p);
	ev_cond(x, &p->o, cond_find(p->conds, p->nconds, "PodScheduled"));
	ev_events(x, &p->o, NULL, 3);
	x->since = p->o.created;
	return true;
}

static bool m_launcher_creating(struct diag_ctx *x)
{
	const struct pod *p = x->pod;
	if (p == NULL || !eq(p->phase, "Pending") || p->node == NULL)
		return false;
	ev_pod_state(x, p);
	for (int i = 0; i < p->ncontainers; i++)
		if (eq(p->containers[i].state, "waiting"))
			ev_container(x, p, &p->containers[i]);
	ev_events(x, &p->o, NULL, 3);
	const struct cond *sc = cond_find(p->conds, p->nconds, "PodScheduled");
	x->since = sc && sc->last_transition ? sc->last_transition : p->o.created;
	return true;
}

static bool m_launcher_domain_starting(struct diag_ctx *x)
{
	static const char *const before[] = { "", "Pending", "Scheduling", "Scheduled", NULL };
	const struct pod *p = x->pod;
	if (p == NULL || !eq(p->phase, "Running") || x->vmi == NULL || !one_of(x->vmi->phase, before))
		return false;
	ev_pod_state(x, p);
	ev_phase(x);
	ev_cond(x, &x->vmi->o, vmi_cond(x, "Synchronized"));
	ev_events(x, &x->vmi->o, NULL, 3);
	const struct cond *ready = cond_find(p->conds, p->nconds, "ContainersReady");
	x->since = ready && ready->last_transition ? ready->last_transition : p->o.created;
	return true;
}

static bool m_launcher_phase_other(struct diag_ctx *x)
{
	if (x->pod == NULL || eq(x->pod->phase, "Running"))
		return false;
	ev_pod_state(x, x->pod);
	return true;
}

/* ---- guest boundary rules ---- */

static bool m_guest_paused(struct diag_ctx *x)
{
	const struct cond *c = vmi_cond(x, "Paused");
	if (!(c && eq(cond_status(c), "True")) && !vm_status_is(x, "Paused"))
		return false;
	if (c)
		ev_cond(x, &x->vmi->o, c);
	else
		ev_field(x, &x->vm->o, "status.printableStatus", x->vm->printable_status);
	return true;
}

static bool m_guest_not_ready(struct diag_ctx *x)
{
	const struct cond *c = vmi_cond(x, "Ready");
	if (!cond_false(c))
		return false;
	ev_cond(x, &x->vmi->o, c);
	if (x->pod)
		ev_cond(x, &x->pod->o, cond_find(x->pod->conds, x->pod->nconds, "Ready"));
	ev_events(x, NULL, NULL, 2);
	x->since = c->last_transition;
	return true;
}

static bool m_guest_agent_missing(struct diag_ctx *x)
{
	if (x->vmi == NULL || x->c->guest.agent_connected)
		return false;
	if (x->c->guest.agent)
		ev_cond(x, &x->vmi->o, x->c->guest.agent);
	else
		ev_text(x, &x->vmi->o, "VirtualMachineInstance %s/%s has no AgentConnected condition", x->vmi->o.ns,
			x->c->name);
	return true;
}

static bool m_guest_agent_unsupported(struct diag_ctx *x)
{
	const struct cond *c = vmi_cond(x, "AgentVersionNotSupported");
	if (!(c && eq(cond_status(c), "True")))
		return false;
	ev_cond(x, &x->vmi->o, c);
	return true;
}

/* ---- the table ---- */

#define DESCRIBE_VM "kubectl -n {ns} describe vm {name}"
#define DESCRIBE_VMI "kubectl -n {ns} describe vmi {name}"
#define DESCRIBE_POD "kubectl -n {ns} describe pod {pod}"
#define EVENTS "kubectl -n {ns} get events --sort-by=.lastTimestamp"
#define ENGINE_GET "kvcon -c '{uri}' -n {ns} engine get vm {name}"
/* the engine service serves the launcher's two logs: compute (QEMU's) and serial (the guest's) */
#define ENGINE_LOGS "kvcon -c '{uri}' -n {ns} logs {name} --tail=50"
#define ENGINE_SERIAL "kvcon -c '{uri}' -n {ns} logs {name} -c serial --tail=50"

static const struct diag_rule rules[] = {
	/* VM: management intent */
	{ "vm-absent", DIAG_VM, DIAG_NOTE, DIAG_PROGRESSED, 0, m_vm_absent,
	  "the VMI {name} has no VirtualMachine: nothing will restart it once it ends",
	  "whether the VMI was created on its own or its VM was deleted", "kubectl -n {ns} get vm,vmi {name}",
	  ENGINE_GET, NULL, NULL },
	{ "vm-run-conflict", DIAG_VM, DIAG_NOTE, DIAG_PROGRESSED, 0, m_vm_run_conflict,
	  "the VM sets both spec.running and spec.runStrategy; the API rejects such updates",
	  "remove the deprecated spec.running", "kubectl -n {ns} get vm {name} -o jsonpath='{.spec}'",
	  "kvcon -c '{uri}' -n {ns} engine get vm {name} -o json", NULL, NULL },
	{ "vm-vmi-foreign", DIAG_VM, DIAG_STALL, DIAG_FAILED, 0, m_vm_vmi_foreign,
	  "a VMI named {name} exists but belongs to another VirtualMachine UID",
	  "the VMI's ownerReferences against the VM's UID (a recreated VM, or a VMI created by hand)",
	  "kubectl -n {ns} get vmi {name} -o jsonpath='{.metadata.ownerReferences}'\n"
	  "kubectl -n {ns} get vm {name} -o jsonpath='{.metadata.uid}'",
	  ENGINE_GET, NULL, NULL },
	{ "vm-bad-strategy", DIAG_VM, DIAG_STALL, DIAG_FAILED, 0, m_vm_bad_strategy,
	  "the VM's runStrategy {rs} is not one KubeVirt knows", "spec.runStrategy (Always, RerunOnFailure, Once, Manual, Halted)",
	  "kubectl -n {ns} get vm {name} -o jsonpath='{.spec.runStrategy}'", "kvcon -c '{uri}' -n {ns} engine get vm {name} -o json", NULL, NULL },
	{ "vm-terminating", DIAG_VM, DIAG_STALL, DIAG_FAILED, 300, m_vm_terminating,
	  "the VM is being deleted", "finalizers and the VMI that still has to go",
	  "kubectl -n {ns} get vm {name} -o jsonpath='{.metadata.finalizers}'\n" DESCRIBE_VMI,
	  ENGINE_GET, "Terminating", NULL },
	{ "vm-manual-recovery", DIAG_VM, DIAG_STALL, DIAG_FAILED, 0, m_vm_manual_recovery,
	  "the VM needs manual recovery: KubeVirt will not restart its VMI on its own",
	  "the condition's message (a VMI stranded on an unreachable node, volumes still attached there)",
	  DESCRIBE_VM "\nkubectl get nodes", ENGINE_GET, NULL, NULL },
	/* storage first (no VMI until the disks are there): waiting while a DataVolume's progress moves */
	{ "vm-provisioning", DIAG_VM, DIAG_STALL, DIAG_FAILED, 1800, m_vm_provisioning,
	  "the VM waits for its disks: {what}; its VMI is created once they are ready",
	  "the DataVolume's progress and its importer or clone pod",
	  "kubectl -n {ns} get dv {dv}\nkubectl -n {ns} describe dv {dv}\nkubectl -n {ns} get pods", ENGINE_GET,
	  "Provisioning", "a DataVolume is being imported, cloned or uploaded" },
	{ "vm-waiting-for-receiver", DIAG_VM, DIAG_STALL, DIAG_WAITING, 0, m_vm_waiting_for_receiver,
	  "the VM waits for an upload: {what}", "upload the disk image, or check CDI's upload proxy",
	  "kubectl -n {ns} get dv {dv}\nvirtctl -n {ns} image-upload dv {dv} --image-path=FILE", ENGINE_GET,
	  "WaitingForReceiver", "a DataVolume waits for its data to be uploaded" },
	{ "vm-volume-binding", DIAG_VM, DIAG_STALL, DIAG_FAILED, 300, m_vm_volume_binding,
	  "the VM waits for its claim to be bound: {what}",
	  "the claim's events (ProvisioningFailed, WaitForFirstConsumer) and its storage class: does it exist, does "
	  "its provisioner run",
	  "kubectl -n {ns} describe pvc {claim}\nkubectl get storageclass",
	  "kvcon -c '{uri}' -n {ns} engine get vm {name} -o json", "WaitingForVolumeBinding", "a PVC of the VM is not Bound" },
	{ "vm-datavolume-error", DIAG_VM, DIAG_STALL, DIAG_FAILED, 0, m_vm_datavolume_error,
	  "a DataVolume of the VM failed: {what}", "the DataVolume's conditions and its importer pod's log",
	  "kubectl -n {ns} describe dv {dv}\nkubectl -n {ns} get pods -l app=containerized-data-importer",
	  "kvcon -c '{uri}' -n {ns} engine get vm {name} -o json", "DataVolumeError",
	  "a DataVolume failed (import, clone or upload)" },
	{ "vm-pvc-not-found", DIAG_VM, DIAG_STALL, DIAG_FAILED, 0, m_vm_pvc_not_found,
	  "the VM uses a claim that does not exist: {what}", "the claims named in the VM's volumes",
	  "kubectl -n {ns} get vm {name} -o jsonpath='{.spec.template.spec.volumes}'\nkubectl -n {ns} get pvc",
	  "kvcon -c '{uri}' -n {ns} engine get vm {name} -o json", "ErrorPvcNotFound", "a PersistentVolumeClaim of the VM" },
	{ "vm-crashloop", DIAG_VM, DIAG_STALL, DIAG_FAILED, 0, m_vm_crashloop,
	  "the VM keeps failing to start ({what}): KubeVirt backs off before the next attempt",
	  "why the last executions failed: the VM's events and the failed launcher's logs",
	  DESCRIBE_VM "\n" EVENTS, ENGINE_GET "\n" ENGINE_LOGS, "CrashLoopBackOff", NULL },
	{ "vm-halted", DIAG_VM, DIAG_STOP, DIAG_PROGRESSED, 0, m_vm_halted,
	  "the VM is stopped on purpose (runStrategy Halted): no VMI is expected",
	  "nothing is wrong; start it if it should run", "virtctl -n {ns} start {name}", "kvcon -c '{uri}' -n {ns} engine start {name}",
	  "Stopped", NULL },
	{ "vm-manual-stopped", DIAG_VM, DIAG_STOP, DIAG_PROGRESSED, 0, m_vm_manual_stopped,
	  "the VM is not running and runStrategy {rs} does not start it on its own",
	  "nothing is wrong; start it if it should run", "virtctl -n {ns} start {name}", "kvcon -c '{uri}' -n {ns} engine start {name}",
	  "Stopped", NULL },
	{ "vm-start-requested", DIAG_VM, DIAG_STALL, DIAG_WAITING, 0, m_vm_start_requested,
	  "a start was requested but no VMI exists yet", "virt-controller's progress: the VM's conditions and events",
	  DESCRIBE_VM "\n" EVENTS, ENGINE_GET, NULL, NULL },
	{ "vm-no-vmi", DIAG_VM, DIAG_STALL, DIAG_FAILED, 60, m_vm_no_vmi,
	  "runStrategy {rs} wants a running VMI but none exists: the VM boundary is stalled",
	  "the VM's Failure condition and events (admission, quota, a missing instancetype or DataVolume)",
	  DESCRIBE_VM "\n" EVENTS, ENGINE_GET, NULL, NULL },
	{ "vm-stopping", DIAG_VM, DIAG_STALL, DIAG_FAILED, 300, m_vm_stopping,
	  "the VM is stopping: its {what} has not gone away yet",
	  "the VMI's shutdown: the guest may ignore the ACPI request until the grace period ends",
	  DESCRIBE_VMI "\nvirtctl -n {ns} stop {name} --force --grace-period 0",
	  "kvcon -c '{uri}' -n {ns} engine stop {name} --force", "Stopping", NULL },
	{ "vm-restart-required", DIAG_VM, DIAG_NOTE, DIAG_PROGRESSED, 0, m_vm_restart_required,
	  "the VM's spec changed in a way that needs a restart to reach the running VMI",
	  "restart when convenient", "virtctl -n {ns} restart {name}", "kvcon -c '{uri}' -n {ns} engine restart {name}", NULL, NULL },

	/* VMI: the execution */
	{ "vmi-terminating", DIAG_VMI, DIAG_STALL, DIAG_FAILED, 300, m_vmi_terminating,
	  "the VMI is being deleted (a restart or a stop in progress)",
	  "the launcher pod's termination and virt-handler on the node",
	  DESCRIBE_VMI "\nkubectl -n {ns} get pods -l kubevirt.io/created-by={vmiuid} -o wide", ENGINE_GET, NULL, NULL },
	{ "vmi-migration-failed", DIAG_VMI, DIAG_NOTE, DIAG_PROGRESSED, 0, m_vmi_migration_failed,
	  "the last live migration failed; the VMI stays on its source node",
	  "the migration object and the target launcher's logs",
	  "kubectl -n {ns} get vmim -l kubevirt.io/vmi-name={name}\n" DESCRIBE_VMI,
	  "kvcon -c '{uri}' -n {ns} engine get vm {name}", NULL, NULL },
	{ "vmi-migrating", DIAG_VMI, DIAG_NOTE, DIAG_PROGRESSED, 0, m_vmi_migrating, "a live migration is in progress",
	  "its progress", "kubectl -n {ns} get vmim -l kubevirt.io/vmi-name={name} -w", "kvcon -c '{uri}' -n {ns} engine get vm {name}",
	  "Migrating", NULL },
	{ "vmi-unknown", DIAG_VMI, DIAG_STALL, DIAG_FAILED, 0, m_vmi_unknown,
	  "the VMI's phase is Unknown: virt-handler lost track of it (node {node} unreachable?)",
	  "the node's Ready condition and virt-handler on it",
	  "kubectl get node {node}\nkubectl -n kubevirt get pods -o wide --field-selector spec.nodeName={node}",
	  "kvcon -c '{uri}' get nodes\n" ENGINE_GET, "Unknown", NULL },
	{ "vmi-ended-restart", DIAG_VMI, DIAG_STALL, DIAG_FAILED, 120, m_vmi_ended_restart,
	  "the VMI ended ({what}) and runStrategy {rs} should replace it",
	  "why it ended (the events) and whether the VM is backing off",
	  DESCRIBE_VMI "\n" DESCRIBE_VM, ENGINE_GET "\n" ENGINE_LOGS, "CrashLoopBackOff", NULL },
	{ "vmi-failed", DIAG_VMI, DIAG_STALL, DIAG_FAILED, 0, m_vmi_failed,
	  "the VMI failed and runStrategy {rs} does not restart it", "why it failed: events, launcher logs",
	  DESCRIBE_VMI "\n" EVENTS, ENGINE_GET "\n" ENGINE_LOGS, NULL, NULL },
	{ "vmi-succeeded", DIAG_VMI, DIAG_STOP, DIAG_NOT_EXPECTED, 0, m_vmi_succeeded,
	  "the guest shut down and runStrategy {rs} leaves it stopped", "nothing is wrong; start it again if needed",
	  "virtctl -n {ns} start {name}", "kvcon -c '{uri}' -n {ns} engine start {name}", NULL, NULL },
	{ "vmi-pvc-not-found", DIAG_VMI, DIAG_STALL, DIAG_FAILED, 0, m_vmi_pvc_not_found,
	  "the VM uses a claim that does not exist: {what}", "the claims named in the VM's volumes",
	  "kubectl -n {ns} get vm {name} -o jsonpath='{.spec.template.spec.volumes}'\nkubectl -n {ns} get pvc",
	  "kvcon -c '{uri}' -n {ns} engine get vm {name} -o json", "ErrorPvcNotFound", "a PersistentVolumeClaim of the VM" },
	{ "vmi-datavolume-error", DIAG_VMI, DIAG_STALL, DIAG_FAILED, 0, m_vmi_datavolume_error,
	  "a DataVolume of the VM failed: {what}", "the DataVolume's conditions and importer pod",
	  "kubectl -n {ns} get dv {dv}\nkubectl -n {ns} describe dv {dv}", "kvcon -c '{uri}' -n {ns} engine get vm {name} -o json",
	  "DataVolumeError", "a DataVolume failed (import, clone or upload)" },
	{ "vmi-volume-binding", DIAG_VMI, DIAG_STALL, DIAG_FAILED, 300, m_vmi_volume_binding,
	  "the VMI waits for its volumes to be bound or populated: {what}", "the PVCs' phase and the storage class provisioner",
	  "kubectl -n {ns} get pvc,dv\nkubectl -n {ns} describe pvc {claim}", "kvcon -c '{uri}' -n {ns} engine get vm {name} -o json",
	  "WaitingForVolumeBinding", "a PVC or DataVolume of the VM is not ready" },
	{ "vmi-pod-create-failed", DIAG_VMI, DIAG_STALL, DIAG_FAILED, 0, m_vmi_pod_create_failed,
	  "virt-controller could not create the launcher pod", "the Synchronized condition's message (quota, admission, policy)",
	  DESCRIBE_VMI "\nkubectl -n {ns} get resourcequota", ENGINE_GET, NULL, NULL },
	{ "vmi-no-launcher", DIAG_VMI, DIAG_STALL, DIAG_FAILED, 120, m_vmi_no_launcher,
	  "the VMI is {phase} and no launcher pod exists yet", "virt-controller's logs and the VMI's events",
	  DESCRIBE_VMI "\nkubectl -n kubevirt logs -l kubevirt.io=virt-controller --tail=50", ENGINE_GET, "Starting", NULL },
	{ "vmi-phase-other", DIAG_VMI, DIAG_STALL, DIAG_WAITING, 0, m_vmi_phase_other,
	  "the VMI is in phase {phase}", "the VMI's conditions", DESCRIBE_VMI, ENGINE_GET, NULL, NULL },

	/* launcher: the virt-launcher pod (engine: the QEMU process) */
	{ "launcher-owner-mismatch", DIAG_LAUNCHER, DIAG_STALL, DIAG_FAILED, 0, m_launcher_owner_mismatch,
	  "a launcher pod names this VMI in its created-by label but is not owned by it",
	  "the pod's ownerReferences: match the owner UID, not the label, before acting on the pod",
	  "kubectl -n {ns} get pods -l kubevirt.io/created-by={vmiuid} "
	  "-o custom-columns=NAME:.metadata.name,OWNER_KIND:.metadata.ownerReferences[0].kind,OWNER:.metadata.ownerReferences[0].uid",
	  "kvcon -c '{uri}' -n {ns} engine get vm {name}", NULL, NULL },
	{ "launcher-not-seen", DIAG_LAUNCHER, DIAG_STALL, DIAG_FAILED, 0, m_launcher_not_seen,
	  "the VMI is {phase} but its launcher pod is not visible", "whether launcher pods can be listed (RBAC) in {ns}",
	  "kubectl -n {ns} get pods -l kubevirt.io=virt-launcher -o wide\nkubectl auth can-i list pods -n {ns}",
	  "kvcon -c '{uri}' -n {ns} get pods -l kubevirt.io=virt-launcher -o wide\n" ENGINE_GET, NULL, NULL },
	{ "launcher-failed", DIAG_LAUNCHER, DIAG_STALL, DIAG_FAILED, 0, m_launcher_failed,
	  "the launcher pod {pod} ended ({phase})", "the pod's status reason (eviction, OOM) and the compute container's log",
	  DESCRIBE_POD "\nkubectl -n {ns} logs {pod} -c compute --tail=50", ENGINE_LOGS, NULL, NULL },
	{ "launcher-unschedulable", DIAG_LAUNCHER, DIAG_STALL, DIAG_FAILED, 0, m_launcher_unschedulable,
	  "the launcher pod {pod} cannot be scheduled: {what}",
	  "why the scheduler rejects it: node resources, selectors, taints, devices.kubevirt.io/kvm capacity",
	  DESCRIBE_POD "\nkubectl describe nodes", "kvcon -c '{uri}' get nodes -o wide\n" ENGINE_LOGS,
	  "ErrorUnschedulable", "the scheduler found no node for it" },
	{ "launcher-image-pull", DIAG_LAUNCHER, DIAG_STALL, DIAG_FAILED, 0, m_launcher_image_pull,
	  "the launcher pod {pod} cannot pull {what}",
	  "the image name, the registry's reachability and pull secrets", DESCRIBE_POD,
	  "kvcon -c '{uri}' -n {ns} engine get vm {name} -o json", "ErrImagePull ImagePullBackOff",
	  "an image (a containerDisk or the launcher image)" },
	{ "launcher-crashloop", DIAG_LAUNCHER, DIAG_STALL, DIAG_FAILED, 0, m_launcher_crashloop,
	  "a container of the launcher pod {pod} keeps crashing ({what})", "the crashed container's previous log",
	  "kubectl -n {ns} logs {pod} -c compute --previous --tail=50\n" DESCRIBE_POD,
	  "kvcon -c '{uri}' -n {ns} logs {name} --previous --tail=50\n" ENGINE_LOGS, "CrashLoopBackOff",
	  "its restarts below" },
	{ "launcher-mount-missing", DIAG_LAUNCHER, DIAG_STALL, DIAG_FAILED, 0, m_launcher_mount_missing,
	  "the launcher pod {pod} cannot start on {node}: {what}",
	  "the name in the VM's volumes or accessCredentials; create the object and the pod goes on",
	  "kubectl -n {ns} get secret,configmap\n" DESCRIBE_POD,
	  "kvcon -c '{uri}' -n {ns} get secret\nkvcon -c '{uri}' -n {ns} get configmap", NULL, NULL },
	{ "launcher-container-error", DIAG_LAUNCHER, DIAG_STALL, DIAG_FAILED, 0, m_launcher_container_error,
	  "a container of the launcher pod {pod} cannot start", "the container's waiting reason and message",
	  DESCRIBE_POD, ENGINE_LOGS, NULL, NULL },
	{ "launcher-scheduling", DIAG_LAUNCHER, DIAG_STALL, DIAG_FAILED, 120, m_launcher_scheduling,
	  "the launcher pod {pod} is not scheduled yet: no node was chosen for it",
	  "the pod's events (FailedScheduling) and the nodes' allocatable resources", DESCRIBE_POD "\nkubectl describe nodes",
	  ENGINE_LOGS, "Starting", NULL },
	{ "launcher-creating", DIAG_LAUNCHER, DIAG_STALL, DIAG_FAILED, 300, m_launcher_creating,
	  "the launcher pod {pod} is scheduled on {node} but its containers are not running yet",
	  "the pod's events (volume mounts and attachments, image pulls)", DESCRIBE_POD, ENGINE_LOGS, "Starting", NULL },
	{ "launcher-domain-starting", DIAG_LAUNCHER, DIAG_STALL, DIAG_FAILED, 300, m_launcher_domain_starting,
	  "the launcher pod {pod} runs but the VMI is still {phase}: the domain has not started",
	  "the compute container's log and virt-handler on {node}",
	  "kubectl -n {ns} logs {pod} -c compute --tail=50\n" DESCRIBE_VMI, ENGINE_LOGS, "Starting", NULL },
	{ "launcher-phase-other", DIAG_LAUNCHER, DIAG_STALL, DIAG_WAITING, 0, m_launcher_phase_other,
	  "the launcher pod {pod} is not running", "the pod's status", DESCRIBE_POD, ENGINE_LOGS, NULL, NULL },

	/* guest: the OS inside */
	{ "guest-paused", DIAG_GUEST, DIAG_STOP, DIAG_NOT_EXPECTED, 0, m_guest_paused,
	  "the guest is paused on purpose", "nothing is wrong; unpause it to resume", "virtctl -n {ns} unpause vm {name}",
	  "kvcon -c '{uri}' -n {ns} engine unpause {name}", "Paused", NULL },
	{ "guest-not-ready", DIAG_GUEST, DIAG_STALL, DIAG_FAILED, 300, m_guest_not_ready,
	  "the VMI runs but is not Ready", "the readiness probe and the guest itself (serial console)",
	  DESCRIBE_VMI "\nvirtctl -n {ns} console {name}",
	  ENGINE_SERIAL "\nkvcon -c '{uri}' -n {ns} engine console {name}", "Running", NULL },
	{ "guest-agent-missing", DIAG_GUEST, DIAG_NOTE, DIAG_PROGRESSED, 0, m_guest_agent_missing,
	  "no guest agent is connected: the guest's health can only be seen on its console",
	  "the console; install or start qemu-guest-agent in the guest for guest OS details",
	  "virtctl -n {ns} console {name}", "kvcon -c '{uri}' -n {ns} engine console {name}", NULL, NULL },
	{ "guest-agent-unsupported", DIAG_GUEST, DIAG_NOTE, DIAG_PROGRESSED, 0, m_guest_agent_unsupported,
	  "the guest agent's version is not supported by this KubeVirt", "update qemu-guest-agent in the guest",
	  "virtctl -n {ns} guestosinfo {name}", "kvcon -c '{uri}' -n {ns} engine console {name}", NULL, NULL },
};
#define NRULES (sizeof rules / sizeof rules[0])

const struct diag_rule *diag_rules(size_t *n)
{
	*n = NRULES;
	return rules;
}

const char *diag_boundary_name(enum diag_boundary b)
{
	static const char *const names[DIAG_NBOUNDARY] = { "VM", "VMI", "launcher", "guest" };
	return (unsigned)b < DIAG_NBOUNDARY ? names[b] : "?";
}

const char *diag_verdict_name(enum diag_verdict v)
{
	static const char *const names[] = { "progressed", "waiting", "failed", "not expected", "not reached" };
	return (unsigned)v <= DIAG_NOT_REACHED ? names[v] : "?";
}

/* ---- template expansion ---- */

static void expand(struct buf *out, const char *tmpl, const struct diag_ctx *x)
{
	const struct chain *c = x->c;
	static const char *const keys[] = { "ns",  "name", "vmi", "vmiuid", "pod",   "node",
					    "rs",  "phase", "uri", "log",   "what", "claim", "dv" };
	for (const char *p = tmpl; *p;) {
		if (*p == '{') {
			const char *end = strchr(p, '}');
			size_t i, klen = end ? (size_t)(end - p - 1) : 0;
			for (i = 0; end && i < sizeof keys / sizeof keys[0]; i++)
				if (strlen(keys[i]) == klen && strncmp(p + 1, keys[i], klen) == 0)
					break;
			if (end && i < sizeof keys / sizeof keys[0]) {
				const char *v = NULL;
				switch (i) {
				case 0: v = c->ns; break;
				case 1: v = c->name; break;
				case 2: v = c->name; break;
				case 3: v = x->vmi ? x->vmi->o.uid : NULL; break;
				case 4: v = x->pod ? x->pod->o.name : NULL; break;
				case 5: v = x->pod && x->pod->node ? x->pod->node : x->vmi ? x->vmi->node : NULL; break;
				case 6: v = x->rs; break;
				case 7:
					v = x->pod && (eq(x->pod->phase, "Failed") || eq(x->pod->phase, "Succeeded"))
						    ? x->pod->phase
						    : x->vmi ? (PH(x->vmi->phase)[0] ? x->vmi->phase : "Pending") : NULL;
					break;
				case 8:
					v = c->src ? c->src->server : NULL;
					if (c->src && c->src->engine_uris) { /* every URI of the service: -c 'A' -c 'B' */
						for (const char *u = c->src->engine_uris, *nl; *u; u = nl ? nl + 1 : "") {
							nl = strchr(u, '\n');
							char *part = xstrndup(u, nl ? (size_t)(nl - u) : strlen(u));
							char *e = esc(part, 512);
							buf_printf(out, "%s%s", u == c->src->engine_uris ? "" : "' -c '", e);
							free(e);
							free(part);
						}
						p = end + 1;
						continue;
					}
					break;
				case 9: v = x->pod ? x->pod->log_path : NULL; break;
				case 10: /* escaped by the rule already */
				case 11:
				case 12:
					buf_add_str(out, i == 10 ? x->what : i == 11 ? (x->claim ? x->claim : "")
										: (x->dv ? x->dv : ""));
					p = end + 1;
					continue;
				}
				char *e = esc(v ? v : (i == 4 ? "<launcher-pod>" : "?"), 512);
				buf_add_str(out, e);
				free(e);
				p = end + 1;
				continue;
			}
		}
		buf_add_char(out, *p++);
	}
}

static char *expand_new(const char *tmpl, const struct diag_ctx *x)
{
	struct buf b;
	buf_init(&b);
	expand(&b, tmpl ? tmpl : "", x);
	if (b.data == NULL)
		return xstrdup("");
	return buf_steal(&b);
}

/* ---- the walk ---- */

static void ctx_init(struct diag_ctx *x, const struct chain *c, int64_t now)
{
	memset(x, 0, sizeof *x);
	x->c = c;
	x->vm = c->vm;
	x->vmi = c->vmi;
	x->pod = c->active;
	x->now = now;
	x->rs = c->vm && c->vm->run_strategy ? c->vm->run_strategy : "";
	bool start = false, stop = false;
	/* the last request wins: a restart is [Stop, Start] */
	for (int i = 0; c->vm && i < c->vm->nscr; i++) {
		start = eq(c->vm->scr[i].action, "Start");
		stop = eq(c->vm->scr[i].action, "Stop");
	}
	x->start_requested = start;
	x->want_run = eq(x->rs, "Always") || eq(x->rs, "RerunOnFailure") || start;
	x->want_stop = (eq(x->rs, "Halted") && !start) || stop;
}

static void record(struct diag *d, struct diag_ctx *x, const struct diag_rule *r, enum diag_verdict v)
{
	d->findings = xreallocarray(d->findings, d->nfindings + 1, sizeof *d->findings);
	struct diag_finding *f = &d->findings[d->nfindings++];
	f->rule = r;
	f->verdict = v;
	f->summary = expand_new(r->summary, x);
	bool engine = x->c->src && x->c->src->engine;
	f->cmd = expand_new(engine ? r->cmd_engine : r->cmd_kube, x);
	f->ev = x->ev;
	f->nev = x->nev;
	x->ev = NULL;
	x->nev = 0;
}

static void drop_evidence(struct diag_ctx *x)
{
	for (size_t i = 0; i < x->nev; i++)
		free(x->ev[i].text);
	free(x->ev);
	x->ev = NULL;
	x->nev = 0;
}

struct diag *diag_run(const struct chain *c, int64_t now)
{
	return diag_run_storage(c, NULL, now);
}

struct diag *diag_run_storage(const struct chain *c, struct json_object *storage, int64_t now)
{
	struct diag *d = xcalloc(1, sizeof *d);
	struct diag_ctx x;
	ctx_init(&x, c, now);
	x.storage = storage;
	d->now = now;
	d->first_stalled = -1;
	enum diag_verdict after = DIAG_PROGRESSED; /* what boundaries get once the walk stopped */
	for (int b = 0; b < DIAG_NBOUNDARY; b++) {
		d->decided_by[b] = -1;
		if (after != DIAG_PROGRESSED) {
			d->verdict[b] = after;
			continue;
		}
		d->verdict[b] = DIAG_PROGRESSED;
		for (size_t i = 0; i < NRULES; i++) {
			const struct diag_rule *r = &rules[i];
			if ((int)r->boundary != b)
				continue;
			if (r->kind != DIAG_NOTE && d->decided_by[b] >= 0)
				continue; /* the first deciding rule of a boundary wins; notes are all reported */
			x.since = 0;
			x.moving = false;
			free(x.what);
			x.what = NULL;
			x.claim = x.dv = NULL;
			if (!r->match(&x)) {
				drop_evidence(&x);
				continue;
			}
			if (x.what == NULL)
				x.what = xstrdup(r->what0 ? r->what0 : "?");
			if (r->kind == DIAG_NOTE) {
				record(d, &x, r, DIAG_PROGRESSED);
				continue;
			}
			enum diag_verdict v = r->verdict;
			if (r->kind == DIAG_STALL && r->stuck_after > 0 && (x.since == 0 || now - x.since < r->stuck_after))
				v = DIAG_WAITING;
			if (r->kind == DIAG_STALL && x.moving)
				v = DIAG_WAITING; /* its progress moves: not stuck, however long it takes */
			record(d, &x, r, v);
			d->verdict[b] = v;
			d->decided_by[b] = (int)d->nfindings - 1;
		}
		const struct diag_rule *dr = d->decided_by[b] >= 0 ? d->findings[d->decided_by[b]].rule : NULL;
		if (dr && dr->kind == DIAG_STOP) {
			d->stopped = true;
			after = DIAG_NOT_EXPECTED;
		} else if (d->verdict[b] != DIAG_PROGRESSED) {
			d->first_stalled = b;
			after = DIAG_NOT_REACHED;
		}
	}
	free(x.what);
	return d;
}

void diag_free(struct diag *d)
{
	if (d == NULL)
		return;
	for (size_t i = 0; i < d->nfindings; i++) {
		struct diag_finding *f = &d->findings[i];
		free(f->summary);
		free(f->cmd);
		for (size_t k = 0; k < f->nev; k++)
			free(f->ev[k].text);
		free(f->ev);
	}
	free(d->findings);
	free(d);
}

int diag_exit_code(const struct diag *d)
{
	return d->first_stalled >= 0 ? EXIT_STALLED : EXIT_OK;
}

const struct diag_finding *diag_find(const struct diag *d, const char *rule_id)
{
	for (size_t i = 0; i < d->nfindings; i++)
		if (strcmp(d->findings[i].rule->id, rule_id) == 0)
			return &d->findings[i];
	return NULL;
}

/* ---- text walkthrough ---- */

static void boundary_state(struct buf *out, const struct chain *c, int b)
{
	char *n;
	switch (b) {
	case DIAG_VM:
		if (c->vm)
			buf_printf(out, "runStrategy %s, status %s", PH(c->vm->run_strategy),
				   c->vm->printable_status ? c->vm->printable_status : "-");
		else
			buf_add_str(out, "no VirtualMachine");
		break;
	case DIAG_VMI:
		if (c->vmi)
			buf_printf(out, "uid %s, phase %s%s%s", c->vmi->o.uid, PH(c->vmi->phase)[0] ? c->vmi->phase : "(unset)",
				   c->vmi->node ? " on " : "", c->vmi->node ? c->vmi->node : "");
		else
			buf_add_str(out, "no VirtualMachineInstance");
		break;
	case DIAG_LAUNCHER:
		if (c->active) {
			struct podprint pp; /* kubectl's STATUS and READY (ErrImagePull, not the phase Pending) */
			podprint_pod(c->active, &pp);
			n = esc(c->active->o.name, 256);
			char *ps = esc(pp.status[0] ? pp.status : "(unset)", 96);
			buf_printf(out, "%s %s, %s %d/%d%s", c->src && c->src->engine ? "process" : "pod", n, ps, pp.ready,
				   pp.total, c->npods > 1 ? " (+ older/migration pods)" : "");
			free(ps);
			free(n);
		} else {
			buf_add_str(out, "no launcher");
		}
		break;
	case DIAG_GUEST:
		if (c->vmi == NULL) {
			buf_add_str(out, "-");
			break;
		}
		n = esc(c->guest.os, 256);
		buf_printf(out, "agent %s%s%s", c->guest.agent_connected ? "connected" : "not connected",
			   c->guest.os ? ", " : "", c->guest.os ? n : "");
		free(n);
		break;
	}
}

static void format_finding(struct buf *out, const struct diag_finding *f)
{
	buf_printf(out, "  [%s] %s\n", f->rule->id, f->summary);
	for (size_t i = 0; i < f->nev; i++)
		buf_printf(out, "      - %s\n", f->ev[i].text);
	buf_printf(out, "    next: %s\n", f->rule->next);
	for (const char *p = f->cmd; p && *p;) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		buf_printf(out, "      $ %.*s\n", (int)len, p);
		p += len + (nl ? 1 : 0);
	}
}

void diag_format_text(const struct diag *d, const struct chain *c, struct buf *out)
{
	char *n = esc(c->name, 256);
	buf_printf(out, "%s %s/%s (%s %s)\n\n", c->vm ? "VirtualMachine" : "VirtualMachineInstance", c->ns, n,
		   c->src && c->src->engine ? "engine" : "context", c->src ? c->src->name : "?");
	free(n);
	for (int b = 0; b < DIAG_NBOUNDARY; b++) {
		buf_printf(out, "  %-9s %-13s ", diag_boundary_name((enum diag_boundary)b), diag_verdict_name(d->verdict[b]));
		boundary_state(out, c, b);
		buf_add_char(out, '\n');
	}
	buf_add_char(out, '\n');
	if (d->first_stalled >= 0) {
		const struct diag_finding *f = &d->findings[d->decided_by[d->first_stalled]];
		buf_printf(out, "First boundary that has not progressed: %s (%s)\n",
			   diag_boundary_name((enum diag_boundary)d->first_stalled), diag_verdict_name(f->verdict));
		format_finding(out, f);
	} else if (d->stopped) {
		buf_add_str(out, "Intentionally not running:\n");
		for (int b = 0; b < DIAG_NBOUNDARY; b++)
			if (d->decided_by[b] >= 0)
				format_finding(out, &d->findings[d->decided_by[b]]);
	} else {
		buf_add_str(out, "Every boundary has progressed.\n");
	}
	bool notes = false;
	for (size_t i = 0; i < d->nfindings; i++) {
		if (d->findings[i].rule->kind != DIAG_NOTE)
			continue;
		if (!notes)
			buf_add_str(out, "\nNotes:\n");
		notes = true;
		format_finding(out, &d->findings[i]);
	}
	if (c->nevents > 0) {
		buf_add_str(out, "\nEvents of the chain (oldest first):\n");
		size_t from = c->nevents > 15 ? c->nevents - 15 : 0;
		for (size_t i = from; i < c->nevents; i++) {
			const struct event *e = c->events[i];
			char when[48];
			ago(d->now, e->last, when, sizeof when);
			char *m = esc(e->message, 512), *in = esc(e->inv_name, 256), *r = esc(e->reason, 128);
			buf_printf(out, "  %-10s %-7s %-22s %s/%s: %s\n", when, e->type ? e->type : "?", r,
				   e->inv_kind ? e->inv_kind : "?", in, m);
			free(m);
			free(in);
			free(r);
		}
	}
}
