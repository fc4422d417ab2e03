/* The `e` view: a VM, VMI or pod described in kubectl describe's layout (with its events), in the pager. */
#ifndef KVCON_UI_DESCRIBEVIEW_H
#define KVCON_UI_DESCRIBEVIEW_H

#include "model/obj.h"
#include "ui/view.h"

/* A pager filled once the object is fetched; NULL with *err (caller frees) for other kinds of rows. */
struct view *describeview_new(const struct obj *o, char **err);

#endif
