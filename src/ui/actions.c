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
#include "ui/describeview.h"
#include "ui/sources.h"
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

/* Which actions ask first, and how the question is worded. */
static const struct {
	enum action act;
	const char *verb;
	bool confirm;
} action_rows[] = {
	{ ACT_START, "Start", false },	       { ACT_STOP, "Stop", true },     { ACT_FORCE_STOP, "Force stop (grace 0)", true },
	{ ACT_RESTART, "Restart", true },      { ACT_PAUSE, "Pause", true },   { ACT_UNPAUSE, "Unpause", false },
	{ ACT_MIGRATE, "Live-migrate", true }, { ACT_MIGRATE_ABORT, "Abort the migration of", true },
	{ ACT_DELETE, "Delete", true },          { ACT_SOFT_REBOOT, "Soft-reboot the guest of", true },
};

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
	/* the keys toggle: p on a paused guest unpauses; m during a migration aborts it (deletes the migration) */
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
	for (size_t i = 0; i < sizeof action_rows / sizeof action_rows[0]; i++) {
		if (action_rows[i].act != act)
			continue;
		if (action_rows[i].confirm) {
			char q[600];
			/* an engine's hosts are its service's nodes: the question names the host the VM runs on */
			const char *on = vm->src->engine && vmi && vmi->node && *vmi->node ? vmi->node
					 : sources_live_count() > 1				 ? vm->src->name
												 : NULL;
			snprintf(q, sizeof q, "%s VM %s/%s%s%s?", action_rows[i].verb, vm->ns, vm->name, on ? " on " : "",
				 on ? on : "");
			ui_confirm(q, run, p, pending_free);
			return;
		}
		break;
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

static enum view_result key_act(struct view *v, enum action a)
{
	struct obj *vm = v->ops->target_vm ? v->ops->target_vm(v) : NULL;
	if (vm == NULL)
		ui_error("no VM here");
	else
		ui_action(a, vm);
	return VIEW_DONE;
}

enum view_result ui_key_start(struct view *v)
{
	return key_act(v, ACT_START);
}

enum view_result ui_key_stop(struct view *v)
{
	return key_act(v, ACT_STOP);
}

enum view_result ui_key_force_stop(struct view *v)
{
	return key_act(v, ACT_FORCE_STOP);
}

enum view_result ui_key_restart(struct view *v)
{
	return key_act(v, ACT_RESTART);
}

enum view_result ui_key_pause(struct view *v)
{
	return key_act(v, ACT_PAUSE);
}

enum view_result ui_key_soft_reboot(struct view *v)
{
	return key_act(v, ACT_SOFT_REBOOT);
}

enum view_result ui_key_migrate(struct view *v)
{
	return key_act(v, ACT_MIGRATE);
}
