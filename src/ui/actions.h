/* The dashboard's actions on a row (ui/actions.c): the lifecycle action keys of the registry (read-only guard,
 * confirmation naming the VM for destructive ones) and opening a row's VM view, YAML or describe. */
#ifndef KVCON_UI_ACTIONS_H
#define KVCON_UI_ACTIONS_H

#include "ui/view.h"

struct obj;

/* The lifecycle action whose dashboard key is key (model/registry.c) on the view's ops->target_vm, when the action
 * applies to the kind of the view's row (a pod's row: it says the action does not apply to pods). VIEW_PASS when
 * key is no action's or the view has no target_vm. Every view with a target_vm takes these keys (view.c). */
enum view_result ui_action_key(struct view *v, int key);
/* Opens the VM view for a VM (enter, `:vm ns/name`). */
void ui_open_vm(const struct obj *vm);
/* Opens the YAML pager for an object (y). */
void ui_open_yaml(const struct obj *o);
/* Opens the object described as kubectl describe shows it, with its events (e); says why for other rows. */
void ui_open_describe(const struct obj *o);

#endif
