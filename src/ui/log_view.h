/* log_view: a container's log as a pane of the dashboard (`l` on a VM, VMI or pod): follow, wrap, search,
 * container and previous-instance choice; every line escaped. */
#ifndef KVCON_UI_LOG_VIEW_H
#define KVCON_UI_LOG_VIEW_H

#include "model/obj.h"
#include "ui/view.h"

/* Opens the log of o (a VM or VMI: its current launcher; a pod: itself) in a new pane view; NULL with *err
 * (caller frees) saying why there is nothing to show (no launcher, the VM is not running, not a pod). */
struct view *log_view_open(struct obj *o, char **err);
const struct view_key *log_view_keys(void);

#endif
