/* The `i` view: the guest agent's report on a running VM (OS, hostname, interfaces, filesystems, users). */
#ifndef KVCON_UI_GUESTVIEW_H
#define KVCON_UI_GUESTVIEW_H

#include "model/obj.h"
#include "ui/view.h"

/* A pager filled when the four subresources have answered; NULL with *err (caller frees) for engine VMs. */
struct view *guestview_new(const struct obj *vm, char **err);

#endif
