/* The VM view: one VM across its four boundaries (VM, VMI, launcher pod, guest) side by side or stacked, each
 * with its verdict, the chain's merged events under them, the lineage, `d` for the walkthrough, and the action
 * and pane keys. */
#ifndef KVCON_UI_VMVIEW_H
#define KVCON_UI_VMVIEW_H

#include <stdbool.h>

#include "model/obj.h"
#include "ui/view.h"

struct view *vmview_new(const struct obj *vm);
bool vmview_is(const struct view *v);
const struct view_key *vmview_keys(void);

#endif
