/* Lifecycle actions from the dashboard: read-only guard, confirmation naming the VM for destructive ones, the
 * provider call, and the API's own Status message on failure. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/xmalloc.h"
#include "model/registry.h"
#include "model/source.h"
#include "model/store.h"
#include "ui/actions.h"
#include "ui/describeview.h"
#include "ui/forwards.h"
#include "ui/sshrun.h"
#include "ui/sources.h"
#include "ui/table.h"
#include "ui/ui.h"
#include "ui/view.h"
#include "ui/vmview.h"
#include "ui/yamlview.h"

struct pending {
	enum action act;
	struct source *src;
	char *ns, *name;
};

static void pending_free(void *arg)
{
	struct pending *p = arg;
	free(p->ns);
	free(p->name);
	free(p);
}

static void done(void *arg, int status, const char *message)
{
	struct pending *p = arg;
	if (status != 0)
		ui_error("%s %s/%s failed: %s%s(%d)", action_name(p->act), p->ns, p->name, message ? message : "",
			 message ? " " : "", status);
	else
		ui_message("%s %s/%s: accepted", action_name(p->act), p->ns, p->name);
	pending_free(p);
}

static void run(void *arg)
{
	struct pending *p = arg;
	struct action_req req = { .act = p->act, .ns = p->ns, .name = p->name, .grace_period = -1 };
	if (p->act == ACT_FORCE_STOP)
		req.grace_period = 0;
	struct pending *copy = xcalloc(1, sizeof *copy);
	copy->act = p->act;
	copy->src = p->src;
	copy->ns = xstrdup(p->ns);
	copy->name = xstrdup(p->name);
	char *err = NULL;
	log_info("ui: %s %s/%s on %s", action_name(p->act), p->ns, p->name, p->src->name);
	if (p->src->ops == NULL || p->src->ops->action == NULL) {
		ui_error("%s: source %s has no actions", action_name(p->act), p->src->name);
		pending_free(copy);
	} else if (p->src->ops->action(p->src, &req, done, copy, &err) < 0) {
		ui_error("%s %s/%s refused: %s", action_name(p->act), p->ns, p->name, err ? err : "");
		pending_free(copy);
	} else {
		ui_message("%s %s/%s: sent", action_name(p->act), p->ns, p->name);
	}
	free(err);
}

/* Runs a lifecycle action on a VM through its source's provider: readonly check, confirmation for destructive
 * ones (naming the VM), the API's Status message on error. */
static void ui_action(enum action act, const struct obj *vm)
{
	if (vm == NULL)
		return;
	/* the keys toggle: p on a paused guest is ACT_UNPAUSE; m during a migration aborts it (deletes the migration) */
	const struct vmi *vmi = (const struct vmi *)store_find(ui_store(), vm->src, OBJ_VMI, vm->ns, vm->name);
	if (act == ACT_PAUSE && vmi && cond_is_true(vmi->conds, vmi->nconds, "Paused"))
		act = ACT_UNPAUSE;
	if (act == ACT_MIGRATE && vmi && vmi_mig(vmi)->present && !vmi_mig(vmi)->completed && !vmi_mig(vmi)->failed)
		act = ACT_MIGRATE_ABORT;
	if (action_is_mutating(act) && (ui_readonly() || vm->src->readonly)) {
		ui_error("READ-ONLY: %s %s/%s refused", action_name(act), vm->ns, vm->name);
		return;
	}
	struct pending *p = xcalloc(1, sizeof *p);
	p->act = act;
	p->src = vm->src;
	p->ns = xstrdup(vm->ns);
	p->name = xstrdup(vm->name);
	const struct action_def *ad = registry_action(act);
	if (ad && ad->confirm) {
		char q[600];
		/* an engine's hosts are its service's nodes: the question names the host the VM runs on */
		const char *on = vm->src->engine && vmi && vmi->node && *vmi->node ? vmi->node
				 : sources_live_count() > 1				 ? vm->src->name
											 : NULL;
		snprintf(q, sizeof q, "%s VM %s/%s%s%s?", ad->confirm, vm->ns, vm->name, on ? " on " : "", on ? on : "");
		ui_confirm(q, run, p, pending_free);
		return;
	}
	run(p);
	pending_free(p);
}

void ui_open_yaml(const struct obj *o)
{
	if (o)
		view_push(yamlview_new(o));
}

void ui_open_describe(const struct obj *o)
{
	if (o == NULL)
		return;
	char *err = NULL;
	struct view *v = describeview_new(o, &err);
	if (v)
		view_push(v);
	else
		ui_error("%s", err ? err : "describe failed");
	free(err);
}

void ui_open_vm(const struct obj *vm)
{
	if (vm)
		view_push(vmview_new(vm));
}

enum view_result ui_action_key(struct view *v, int key)
{
	const struct guest_verb_def *gv = registry_guest_verb_key(key);
	if (gv && gv->id == GV_PORT_FORWARD && v->ops->target_vm) {
		struct obj *vm = v->ops->target_vm(v);
		if (vm == NULL)
			ui_error("no VM here");
		else
			forwards_prompt(vm);
		return VIEW_DONE;
	}
	if (gv && gv->id == GV_SSH && v->ops->target_vm) {
		struct obj *vm = v->ops->target_vm(v);
		if (vm == NULL)
			ui_error("no VM here");
		else
			sshrun_prompt(vm);
		return VIEW_DONE;
	}
	const struct action_def *ad = registry_action_key(key);
	if (ad == NULL || v->ops->target_vm == NULL)
		return VIEW_PASS;
	/* the row's own kind: a list's selected object, else (the VM view) the VM */
	const struct obj *row = table_view_spec(v) ? table_view_selected(v) : NULL;
	const struct kind_def *k = registry_kind_of_obj(row ? row->kind : OBJ_VM);
	if (row && !registry_action_applies(ad, k->id)) {
		ui_error("%s does not apply to %ss", ad->name, k->title);
		return VIEW_DONE;
	}
	struct obj *vm = v->ops->target_vm(v);
	if (vm == NULL)
		ui_error("no VM here");
	else
		ui_action(ad->act, vm);
	return VIEW_DONE;
}
