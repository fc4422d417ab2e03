/* vnc_view: the VNC display of a VM as a pane of the dashboard (`v` on a VM). */
#ifndef KVCON_UI_VNC_VIEW_H
#define KVCON_UI_VNC_VIEW_H

#include "model/obj.h"

struct view;

/* Opens the VM's display through its source's provider (open_vnc) in a new pane view; NULL with *err (caller
 * frees) when the provider has no VNC. */
struct view *vnc_view_open(struct obj *vm, char **err);

#endif
