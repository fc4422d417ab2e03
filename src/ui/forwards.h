/* The dashboard's port forwards: shift-F on a VM (model/registry.c's port-forward row) asks for the ports and
 * starts a forward per port on 127.0.0.1 (console/portfwd.h); `:pf` lists them (VM, local and guest port,
 * connections, bytes) and ctrl-d there stops the selected one. They end with the dashboard. */
#ifndef KVCON_UI_FORWARDS_H
#define KVCON_UI_FORWARDS_H

#include "model/obj.h"
#include "model/source.h"
#include "ui/view.h"

/* Asks for "[LOCAL:]REMOTE ..." and starts the forwards of vm (a VM or VMI row's VM). */
void forwards_prompt(const struct obj *vm);
/* The :pf view. */
struct view *forwards_view_new(void);
/* Stops the forwards of src (going away); NULL: every forward (the dashboard ends). */
void forwards_stop_source(const struct source *src);
extern const struct view_key forwards_keys[];

#endif
