/* The VM view: four boundary panels, the chain's events, actions. */
#include "ui/vmview.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube/storage.h"
#include "core/buf.h"
#include "core/log.h"
#include "core/loop.h"
#include "core/util.h"
#include "core/xmalloc.h"
#include "model/chain.h"
#include "model/diagnose.h"
#include "model/lineage.h"
#include "model/source.h"
#include "model/store.h"
#include "ui/actions.h"
#include "ui/bundlerun.h"
#include "ui/draw.h"
#include "ui/guestview.h"
#include "ui/pager.h"
#include "ui/theme.h"
#include "ui/sources.h"
#include "ui/ui.h"

#define MAX_LINES 64

/* The storage chain read for the view's verdicts, in flight. The view may go first: it then clears v, and the
 * callback only frees this. */
struct storage_fetch {
	struct view *v;
};

struct vmview {
	struct source *src;
	char *ns, *name;
	int scroll; /* event list offset */
	/* the VM's storage chain (kube/storage.h), read without blocking the UI: the storage rules' headlines name
	 * the claim and the DataVolume from it; until it is in they say "a PVC of the VM" */
	struct json_object *storage;
	struct storage_fetch *fetch;
	char *storage_key;     /* the VM's status and VMI's phase when it was asked for */
	uint64_t storage_at;   /* when (util_now_ms) */
};

#define STORAGE_REFRESH_MS 15000 /* a DataVolume's progress moves without the VM's status changing */

struct panel {
	const char *title;
	const char *verdict;
	int nlines;
	struct {
		char text[512];
		int attr;
	} lines[MAX_LINES];
};

static void pl(struct panel *p, int attr, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void pl(struct panel *p, int attr, const char *fmt, ...)
{
	if (p->nlines >= MAX_LINES)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(p->lines[p->nlines].text, sizeof p->lines[0].text, fmt, ap);
	va_end(ap);
	p->lines[p->nlines++].attr = attr;
}

static const char *nz(const char *s)
{
	return s && *s ? s : "-";
}

static void ago(int64_t t, char *b, size_t n)
{
	if (t <= 0) {
		snprintf(b, n, "-");
		return;
	}
	char d[32];
	util_human_duration(util_wall_s() - t, d, sizeof d);
	snprintf(b, n, "%s ago", d);
}

static void conds(struct panel *p, const struct cond *c, int n)
{
	for (int i = 0; i < n; i++) {
		char a[40];
		ago(c[i].last_transition, a, sizeof a);
		pl(p, theme_status_attr(cond_status(&c[i])), "%s=%s %s %s", nz(c[i].type), nz(cond_status(&c[i])),
		   c[i].reason ? c[i].reason : "", a);
		if (c[i].message && *c[i].message)
			pl(p, theme_attr(THEME_DIM), "  %s", c[i].message);
	}
}

static void vm_panel(struct panel *p, const struct vm *vm)
{
	p->title = "VM";
	if (vm == NULL) {
		pl(p, theme_attr(THEME_BAD), "no VirtualMachine");
		return;
	}
	pl(p, theme_status_attr(vm->printable_status), "status: %s", nz(vm->printable_status));
	pl(p, 0, "runStrategy: %s%s", nz(vm->run_strategy), vm->running_field ? " (spec.running)" : "");
	pl(p, 0, "ready: %s", vm->ready ? "true" : "false");
	pl(p, 0, "uid: %s", vm->o.uid);
	for (int i = 0; i < vm->nscr; i++)
		pl(p, theme_attr(THEME_WAIT), "stateChangeRequest: %s %s", nz(vm->scr[i].action), vm->scr[i].uid);
	if (vm_start_failure(vm)->failures) {
		char a[40];
		ago(vm_start_failure(vm)->retry_after, a, sizeof a);
		pl(p, theme_attr(THEME_BAD), "startFailure: %d, retry after %s", vm_start_failure(vm)->failures, a);
	}
	conds(p, vm->conds, vm->nconds);
}

static void vmi_panel(struct panel *p, const struct vmi *vmi)
{
	p->title = "VMI";
	if (vmi == NULL) {
		pl(p, theme_attr(THEME_OFF), "no VirtualMachineInstance");
		return;
	}
	pl(p, theme_status_attr(vmi->phase), "phase: %s", nz(vmi->phase));
	pl(p, 0, "uid: %s", vmi->o.uid);
	pl(p, 0, "node: %s", nz(vmi->node));
	const struct vmi_net *net = vmi_net(vmi);
	for (int i = 0; i < vmi->nips; i++)
		if (net->ip_ifaces && net->ip_ifaces[i])
			pl(p, 0, "ip: %s (%s)", vmi->ips[i], net->ip_ifaces[i]);
		else
			pl(p, 0, "ip: %s", vmi->ips[i]);
	for (int i = 0; i < net->nfwds; i++) {
		const struct port_fwd *f = &net->fwds[i];
		pl(p, 0, "port: %s%s%d/%s <- 127.0.0.1:%d", f->name ? f->name : "", f->name ? " " : "", f->port, f->proto,
		   f->host_port);
	}
	const struct migration_state *m = vmi_mig(vmi);
	if (m->present) {
		const char *st = m->failed ? "Failed" : m->completed ? "Succeeded" : m->abort_requested ? "Aborting" : "Running";
		char took[32] = "";
		if (m->start > 0)
			util_human_duration((m->end > 0 ? m->end : util_wall_s()) - m->start, took, sizeof took);
		pl(p, theme_status_attr(st), "migration: %s %s -> %s %s%s", st, nz(m->source_node), nz(m->target_node),
		   took[0] ? "after " : "", took);
		if (m->mode)
			pl(p, theme_attr(THEME_DIM), "  mode %s%s%s", m->mode, m->abort_status ? ", abort " : "",
			   m->abort_status ? m->abort_status : "");
		if (m->progress_pct >= 0 && !m->completed && !m->failed) {
			char bar[21];
			int fill = m->progress_pct > 100 ? 20 : m->progress_pct / 5;
			for (int i = 0; i < 20; i++)
				bar[i] = i < fill ? '#' : '-';
			bar[20] = '\0';
			pl(p, theme_attr(THEME_WAIT), "  progress [%s] %d%%", bar, m->progress_pct);
			if (m->data_processed || m->data_remaining) /* the engine's job stats */
				pl(p, theme_attr(THEME_DIM), "  %llu MiB sent, %llu MiB left, dirty %.1f MiB/s, pass %d, "
							     "downtime ~%lld ms",
				   (unsigned long long)(m->data_processed >> 20), (unsigned long long)(m->data_remaining >> 20),
				   (double)m->dirty_rate / 1048576.0, m->iteration, (long long)m->downtime_ms);
		}
		if (m->completed && m->downtime_ms > 0)
			pl(p, theme_attr(THEME_DIM), "  downtime %lld ms", (long long)m->downtime_ms);
		if (m->failure_reason)
			pl(p, theme_attr(THEME_BAD), "  %s", m->failure_reason);
	}
	/* the timeline after the migration: an in-flight migration must stay visible in a short panel */
	for (int i = 0; i < vmi->nphases; i++) {
		char t[32];
		util_format_time(vmi->phases[i].at, t, sizeof t);
		pl(p, theme_attr(THEME_DIM), "  %-10s %s", nz(vmi->phases[i].phase), t);
	}
	for (int i = 0; i < vmi->nactive; i++)
		pl(p, theme_attr(THEME_DIM), "activePod %s on %s", vmi->active[i].uid, nz(vmi->active[i].node));
	conds(p, vmi->conds, vmi->nconds);
}

static void pod_panel(struct panel *p, const struct pod *pod, const struct vmi *vmi)
{
	p->title = "launcher pod";
	if (pod == NULL) {
		pl(p, theme_attr(vmi ? THEME_WAIT : THEME_OFF), "no launcher pod");
		return;
	}
	pl(p, 0, "%s", pod->o.name);
	pl(p, 0, "uid: %s", pod->o.uid);
	if (vmi && strcmp(pod->vmi_uid, vmi->o.uid) != 0)
		pl(p, theme_attr(THEME_BAD), "OWNER MISMATCH: not owned by VMI %s", vmi->o.uid);
	else
		pl(p, theme_attr(THEME_OK), "owned by VMI %s", pod->vmi_uid);
	pl(p, theme_status_attr(pod->phase), "phase: %s%s%s", nz(pod->phase), pod->reason ? " " : "",
	   pod->reason ? pod->reason : "");
	pl(p, 0, "node: %s", nz(pod->node));
	for (int i = 0; i < pod->ncontainers; i++) {
		const struct container_status *c = &pod->containers[i];
		pl(p, theme_status_attr(c->reason ? c->reason : c->ready ? "Ready" : NULL), "%s: %s %s restarts %d",
		   nz(c->name), nz(c->state), c->reason ? c->reason : "", c->restarts);
		if (c->message && c->state && strcmp(c->state, "running") != 0) /* a pull's progress, a failure */
			pl(p, theme_status_attr(c->reason), "  %s", c->message);
		if (c->image_id)
			pl(p, 0, "  imageID: %s", c->image_id);
	}
}

static void guest_panel(struct panel *p, const struct vmi *vmi)
{
	p->title = "guest";
	if (vmi == NULL) {
		pl(p, theme_attr(THEME_OFF), "no guest");
		return;
	}
	const struct cond *a = cond_find(vmi->conds, vmi->nconds, "AgentConnected");
	const char *as = a ? cond_status(a) : NULL;
	pl(p, theme_status_attr(as), "AgentConnected: %s", a ? nz(as) : "not reported");
	pl(p, 0, "os: %s", nz(vmi->guest_os));
	if (vmi->agent_version)
		pl(p, 0, "agent: %s", vmi->agent_version);
}

static void draw_panel(const struct panel *p, int y, int x, int h, int w)
{
	if (h < 2 || w < 4)
		return;
	int b = theme_attr(THEME_BORDER);
	attrset((attr_t)b);
	mvhline(y, x, ACS_HLINE, w);
	char t[96];
	snprintf(t, sizeof t, " %s ", p->title);
	int used = draw_text(y, x + 1, w - 2, theme_attr(THEME_TITLE_ACTIVE), t);
	if (p->verdict) {
		snprintf(t, sizeof t, " %s ", p->verdict);
		draw_text(y, x + 1 + used, w - 2 - used, theme_status_attr(p->verdict), t);
	}
	/* values wrap (continuations indented under their line) rather than being cut: uids, reasons and
	 * messages are what the operator came to read */
	draw_clear_rect(y + 1, x, h - 1, w, theme_attr(THEME_NORMAL));
	for (int i = 0, row = 0; i < p->nlines && row < h - 1; i++) {
		int lead = 0;
		while (p->lines[i].text[lead] == ' ')
			lead++;
		row += draw_wrap(y + 1 + row, x + 1, w - 2, h - 1 - row, lead + 2,
				 p->lines[i].attr ? p->lines[i].attr : theme_attr(THEME_NORMAL), p->lines[i].text);
	}
}

/* A section under the panels: a title rule, then lines wrapped at words, continuations indented by indent (the
 * newest at the bottom: when they do not all fit, the oldest shown keeps only its first rows, cut with '~'). */
static void draw_lines(const char *title, int y, int x, int h, int w, int indent, char **lines, const int *attrs,
		       size_t n)
{
	if (h < 1)
		return;
	attrset((attr_t)theme_attr(THEME_BORDER));
	mvhline(y, x, ACS_HLINE, w);
	draw_text(y, x + 1, w - 2, theme_attr(THEME_TITLE_ACTIVE), title);
	int rows = h - 1, used = 0, first = 0; /* first: the rows of the oldest line shown */
	draw_clear_rect(y + 1, x, rows, w, theme_attr(THEME_NORMAL));
	size_t start = n;
	while (start > 0 && used < rows) {
		first = (int)draw_wrap_rows(lines[start - 1], w - 2, indent, NULL, 0);
		used += first;
		start--;
	}
	if (used > rows) /* it does not fit whole: it gets the rows left */
		first -= used - rows;
	int row = 0;
	for (size_t k = start; k < n && row < rows; k++) {
		int attr = attrs && attrs[k] ? attrs[k] : theme_attr(THEME_NORMAL);
		row += draw_wrap(y + 1 + row, x + 1, w - 2, k == start ? first : rows - row, indent, attr, lines[k]);
	}
}

static void draw_events(const struct chain *ch, int y, int x, int h, int w)
{
	size_t n = ch ? ch->nevents : 0;
	char **lines = xcalloc(n + 1, sizeof *lines);
	int *attrs = xcalloc(n + 1, sizeof *attrs);
	for (size_t i = 0; i < n; i++) {
		const struct event *e = ch->events[i];
		char a[32], cnt[24] = "";
		int64_t t = e->last ? e->last : e->first ? e->first : e->o.created;
		util_human_duration(util_wall_s() - t, a, sizeof a);
		if (e->count > 1)
			snprintf(cnt, sizeof cnt, " (x%d)", e->count);
		lines[i] = xasprintf("%-6s %-7s %-22s %s/%s: %s%s", a, nz(e->type), nz(e->reason), nz(e->inv_kind),
				     nz(e->inv_name), nz(e->message), cnt);
		attrs[i] = e->type && strcmp(e->type, "Warning") == 0 ? theme_attr(THEME_BAD) : 0;
	}
	char title[64];
	snprintf(title, sizeof title, " events[%zu] ", n);
	draw_lines(title, y, x, h, w, 15, lines, attrs, n); /* continuations under the reason */
	for (size_t i = 0; i < n; i++)
		free(lines[i]);
	free(lines);
	free(attrs);
}

/* The executions seen for this VM, one line each (the full table is `kvcon lineage`): stop+start is a new VMI
 * UID; a live migration keeps it and adds a launcher on the next node. */
static void draw_lineage(struct vmview *vv, int y, int x, int h, int w)
{
	size_t n = 0;
	const struct lineage_exec *const *ex =
		ui_lineage() ? lineage_get(ui_lineage(), vv->src, vv->ns, vv->name, &n) : NULL;
	char **lines = xcalloc(n + 1, sizeof *lines);
	int *attrs = xcalloc(n + 1, sizeof *attrs);
	int64_t now = util_wall_s();
	for (size_t i = 0; i < n; i++) {
		const struct lineage_exec *e = ex[i];
		struct buf b;
		buf_init(&b);
		char dur[32] = "-";
		if (e->start)
			util_human_duration((e->end ? e->end : now) - e->start, dur, sizeof dur);
		buf_printf(&b, "#%zu %s %-9s %-7s", i + 1, e->vmi_uid, lineage_end_name(e->how), dur);
		int moves = 0;
		for (int k = 0; k < e->nlaunchers; k++) /* the nodes it ran on; a failed migration's target is not one */
			if (!e->launchers[k].attempt)
				buf_printf(&b, "%s%s", moves++ ? " -> " : "  on ",
					   e->launchers[k].node ? e->launchers[k].node : "unscheduled");
		for (int k = 0; k < e->nlaunchers; k++)
			if (e->launchers[k].attempt)
				buf_printf(&b, "  (migration to %s failed)",
					   e->launchers[k].node ? e->launchers[k].node : "unscheduled");
		if (e->migrations)
			buf_printf(&b, "  [%d migration%s]", e->migrations, e->migrations > 1 ? "s" : "");
		lines[i] = buf_steal(&b);
		attrs[i] = theme_status_attr(e->how == LIN_RUNNING ? "Running" : e->how == LIN_FAILED ? "Failed" : "Stopped");
	}
	char title[64];
	snprintf(title, sizeof title, " lineage[%zu] ", n);
	draw_lines(title, y, x, h, w, 3, lines, attrs, n);
	for (size_t i = 0; i < n; i++)
		free(lines[i]);
	free(lines);
	free(attrs);
}

static void storage_fetched(void *arg, struct json_object *chain, const char *err)
{
	struct storage_fetch *f = arg;
	if (f->v) {
		struct vmview *vv = f->v->priv;
		vv->fetch = NULL;
		if (chain) {
			json_object_put(vv->storage);
			vv->storage = json_object_get(chain);
			view_dirty(f->v);
		} else {
			log_info("vm view %s/%s: storage not read: %s", vv->ns, vv->name, err ? err : "?");
		}
	}
	free(f);
}

/* Asks for the storage chain again when the VM's status or its VMI's phase changed, or every
 * STORAGE_REFRESH_MS; one request at a time, answered on the loop (storage_fetched). */
static void storage_refresh(struct view *v)
{
	struct vmview *vv = v->priv;
	const struct vm *vm = (const struct vm *)store_find(ui_store(), vv->src, OBJ_VM, vv->ns, vv->name);
	if (vv->fetch || vm == NULL)
		return;
	const struct vmi *vmi = (const struct vmi *)store_find(ui_store(), vv->src, OBJ_VMI, vv->ns, vv->name);
	char *key = xasprintf("%s/%s", nz(vm->printable_status), vmi ? nz(vmi->phase) : "-");
	uint64_t now = util_now_ms();
	if (vv->storage_key && strcmp(key, vv->storage_key) == 0 && now - vv->storage_at < STORAGE_REFRESH_MS) {
		free(key);
		return;
	}
	free(vv->storage_key);
	vv->storage_key = key;
	vv->storage_at = now;
	struct storage_fetch *f = xcalloc(1, sizeof *f);
	f->v = v;
	char *err = NULL;
	if (storage_chain_start(vv->src, vv->ns, vv->name, vmi && util_str_eq(vmi->phase, "Running"), storage_fetched,
				f, &err) == NULL) {
		log_info("vm view %s/%s: storage not read: %s", vv->ns, vv->name, err ? err : "?");
		free(f);
	} else {
		vv->fetch = f;
	}
	free(err);
}

static void draw(struct view *v, const struct region *r)
{
	struct vmview *vv = v->priv;
	const struct store *st = ui_store();
	/* the chain borrows from the store: built per frame (cheap for one VM) and freed before returning */
	struct chain *ch = chain_build(st, vv->src, vv->ns, vv->name);
	const struct vm *vm = ch ? ch->vm : NULL;
	const struct vmi *vmi = ch ? ch->vmi : NULL;
	const struct pod *pod = ch ? ch->active : NULL;
	if (pod == NULL && ch && ch->npods)
		pod = ch->pods[0];
	static struct panel P[4];
	memset(P, 0, sizeof P);
	vm_panel(&P[0], vm);
	vmi_panel(&P[1], vmi);
	pod_panel(&P[2], pod, vmi);
	for (size_t i = 0; ch && i < ch->nstray; i++)
		pl(&P[2], theme_attr(THEME_BAD), "OWNER MISMATCH: %s has created-by=%s but another owner",
		   ch->stray[i]->o.name, vmi ? vmi->o.uid : "?");
	if (ch && ch->npods > 1)
		pl(&P[2], theme_attr(THEME_WAIT), "%zu launcher pods (migration)", ch->npods);
	guest_panel(&P[3], vmi);
	/* each boundary's verdict from the diagnosis of the chain */
	struct diag *dg = ch ? diag_run_storage(ch, vv->storage, util_wall_s()) : NULL;
	for (int b = 0; dg && b < DIAG_NBOUNDARY && b < 4; b++) {
		P[b].verdict = diag_verdict_name(dg->verdict[b]);
		int fi = dg->decided_by[b];
		if (fi >= 0 && (size_t)fi < dg->nfindings && dg->findings[fi].summary) {
			/* the deciding rule's summary first: why this boundary stopped */
			memmove(&P[b].lines[1], &P[b].lines[0], (MAX_LINES - 1) * sizeof P[b].lines[0]);
			if (P[b].nlines < MAX_LINES)
				P[b].nlines++;
			snprintf(P[b].lines[0].text, sizeof P[b].lines[0].text, "%s", dg->findings[fi].summary);
			P[b].lines[0].attr = theme_attr(dg->verdict[b] == DIAG_FAILED ? THEME_BAD : THEME_WAIT);
		}
	}
	diag_free(dg);
	attrset((attr_t)theme_attr(THEME_BORDER));
	mvhline(r->y, r->x, ACS_HLINE, r->w);
	char t[600];
	snprintf(t, sizeof t, " VM %s/%s%s%s ", vv->ns, vv->name, sources_live_count() > 1 ? " @" : "",
		 sources_live_count() > 1 ? vv->src->name : "");
	draw_text(r->y, r->x + (r->w - draw_width(t)) / 2, r->w, theme_attr(THEME_TITLE_ACTIVE), t);
	int body_y = r->y + 1, body_h = r->h - 1;
	/* under the panels: the lineage (a few lines) and the chain's events */
	int lower = body_h >= 16 ? body_h * 2 / 5 : body_h >= 10 ? 4 : 0;
	int lin_h = lower >= 8 ? lower / 3 : 0;
	int ev_h = lower - lin_h;
	int ph = body_h - lower;
	/* four across only when each panel gets ~50 columns; a 2x2 grid otherwise, stacked when narrow */
	int cols = r->w >= 200 ? 4 : r->w >= 60 ? 2 : 1;
	int rows = 4 / cols;
	int pw = r->w / cols, each_h = ph / rows;
	for (int i = 0; i < 4; i++) {
		int cx = i % cols, cy = i / cols;
		int w = cx == cols - 1 ? r->w - cx * pw : pw;
		int h = cy == rows - 1 ? ph - cy * each_h : each_h;
		draw_panel(&P[i], body_y + cy * each_h, r->x + cx * pw, h, w);
	}
	if (lin_h > 0)
		draw_lineage(vv, body_y + ph, r->x, lin_h, r->w);
	if (ev_h > 0)
		draw_events(ch, body_y + ph + lin_h, r->x, ev_h, r->w);
	chain_free(ch);
}

static struct obj *current_vm(struct view *v)
{
	struct vmview *vv = v->priv;
	return store_find(ui_store(), vv->src, OBJ_VM, vv->ns, vv->name);
}

static enum view_result k_yaml(struct view *v)
{
	struct obj *vm = current_vm(v);
	if (vm)
		ui_open_yaml(vm);
	return VIEW_DONE;
}
static enum view_result k_describe(struct view *v)
{
	struct obj *vm = current_vm(v);
	if (vm)
		ui_open_describe(vm);
	else
		ui_error("the VM is gone");
	return VIEW_DONE;
}
static enum view_result k_guest(struct view *v)
{
	struct obj *vm = current_vm(v);
	if (vm == NULL) {
		ui_error("the VM is gone");
		return VIEW_DONE;
	}
	char *err = NULL;
	struct view *g = guestview_new(vm, &err);
	if (g)
		view_push(g);
	else
		ui_error("guest: %s", err ? err : "not available");
	free(err);
	return VIEW_DONE;
}

static enum view_result k_bundle(struct view *v)
{
	struct obj *vm = current_vm(v);
	if (vm == NULL) {
		ui_error("the VM is gone");
		return VIEW_DONE;
	}
	char *err = NULL;
	if (bundlerun_start(vm, &err) == 0)
		ui_message("gathering the evidence bundle of %s/%s...", vm->ns, vm->name);
	else
		ui_error("bundle: %s", err ? err : "failed");
	free(err);
	return VIEW_DONE;
}

struct walk_storage {
	unsigned pager;
	struct source *src; /* a closed source stays allocated until the UI ends */
	char *ns, *name;
};

static void walk_storage_done(void *arg, struct json_object *chain, const char *err)
{
	struct walk_storage *w = arg;
	struct view *pg = pager_find(w->pager);
	struct chain *ch = pg ? chain_build(ui_store(), w->src, w->ns, w->name) : NULL;
	if (ch) {
		struct buf b;
		buf_init(&b);
		/* the diagnosis again, its storage headlines naming the claim, then the storage section */
		struct diag *dg = diag_run_storage(ch, chain, util_wall_s());
		diag_format_text(dg, ch, &b);
		diag_free(dg);
		if (chain)
			storage_format_text(chain, &b);
		else
			buf_printf(&b, "\nStorage: not read (%s)\n", err ? err : "?");
		pager_set_text(pg, b.data ? b.data : "");
		buf_free(&b);
		chain_free(ch);
	}
	free(w->ns);
	free(w->name);
	free(w);
}

static enum view_result k_diag(struct view *v)
{
	struct vmview *vv = v->priv;
	struct chain *ch = chain_build(ui_store(), vv->src, vv->ns, vv->name);
	if (ch == NULL) {
		ui_error("the VM is gone");
		return VIEW_DONE;
	}
	/* the storage chain comes from the API: a cluster's DataVolumes, PVCs and PVs, or the engine service's
	 * volume files (its kvcon-storage subresource). The view's last chain names the claim at once; the pager
	 * shows a fresh one when the answers are in. */
	bool storage = ch->vm != NULL;
	const char *reading = vv->src->engine ? "\nStorage: reading the VM's volume files from the engine...\n"
					      : "\nStorage: reading the VM's DataVolumes, PVCs and PVs...\n";
	struct buf b;
	buf_init(&b);
	struct diag *dg = diag_run_storage(ch, vv->storage, util_wall_s());
	diag_format_text(dg, ch, &b);
	diag_free(dg);
	if (storage)
		buf_add_str(&b, reading);
	char title[600];
	snprintf(title, sizeof title, "walkthrough %s/%s", vv->ns, vv->name);
	struct view *pg = pager_new(title, b.data ? b.data : "");
	view_push(pg);
	if (storage) {
		struct walk_storage *w = xcalloc(1, sizeof *w);
		w->pager = pager_id(pg);
		w->src = vv->src;
		w->ns = xstrdup(vv->ns);
		w->name = xstrdup(vv->name);
		char *err = NULL;
		if (storage_chain_start(vv->src, vv->ns, vv->name, ch->vmi && util_str_eq(ch->vmi->phase, "Running"),
					walk_storage_done, w, &err) == NULL)
			walk_storage_done(w, NULL, err); /* says why, instead of "reading" for ever */
		free(err);
	}
	buf_free(&b);
	chain_free(ch);
	return VIEW_DONE;
}

static const struct view_key vm_keys[] = {
	{ 'd', "d", "troubleshooting walkthrough: the first stalled boundary, evidence, next check", k_diag },
	{ 'y', "y", "the VM as YAML", k_yaml },
	{ 'e', "e", "the VM described: fields, conditions, volumes, events newest last (kubectl describe)", k_describe },
	{ 'i', "i", "guest details from the guest agent: OS, hostname, interfaces, filesystems, users", k_guest },
	{ 'b', "b", "evidence bundle (kvcon bundle) into $XDG_STATE_HOME/kvcon/bundles/, in the background", k_bundle },
	{ 0, NULL, NULL, NULL },
};

static enum view_result key(struct view *v, int k)
{
	for (size_t i = 0; i < view_npanes; i++) {
		if (k != view_panes[i].key)
			continue;
		struct obj *vm = current_vm(v);
		if (vm == NULL) {
			ui_error("the VM is gone");
		} else if (view_panes[i].open == NULL) {
			ui_error("%s is not available in this build", view_panes[i].label);
		} else {
			char *err = NULL;
			struct view *p = view_panes[i].open(vm, &err);
			if (p)
				view_pane_open(p);
			else
				ui_error("%s: %s", view_panes[i].label, err ? err : "failed");
			free(err);
		}
		return VIEW_DONE;
	}
	return VIEW_PASS;
}

static void title(struct view *v, char *buf, size_t len)
{
	struct vmview *vv = v->priv;
	snprintf(buf, len, "vm %s/%s", vv->ns, vv->name);
}

static void store_changed(struct view *v, enum obj_kind kind, const struct obj *old, const struct obj *new_)
{
	(void)kind;
	struct vmview *vv = v->priv;
	const struct obj *o = new_ ? new_ : old;
	if (o->src == vv->src && strcmp(o->ns, vv->ns) == 0)
		view_dirty(v);
}

static void tick(struct view *v)
{
	storage_refresh(v);
	view_dirty(v);
}

static void destroy(struct view *v)
{
	struct vmview *vv = v->priv;
	if (vv->fetch)
		vv->fetch->v = NULL; /* its answer is dropped */
	json_object_put(vv->storage);
	free(vv->storage_key);
	free(vv->ns);
	free(vv->name);
	free(vv);
}

static const struct view_ops vmview_ops = {
	.name = "vmview",
	.draw = draw,
	.key = key,
	.title = title,
	.store_changed = store_changed,
	.tick = tick,
	.destroy = destroy,
	.target_vm = current_vm,
	.keys = vm_keys,
};

struct view *vmview_new(const struct obj *vm)
{
	struct vmview *vv = xcalloc(1, sizeof *vv);
	vv->src = vm->src;
	vv->ns = xstrdup(vm->ns);
	vv->name = xstrdup(vm->name);
	struct view *v = view_new(&vmview_ops, vv);
	storage_refresh(v); /* asked for at once: the first verdicts then name the claim within a round trip */
	return v;
}

bool vmview_is(const struct view *v)
{
	return v && v->ops == &vmview_ops;
}

const struct view_key *vmview_keys(void)
{
	return vm_keys;
}
