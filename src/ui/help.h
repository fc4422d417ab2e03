/* `?`: help generated from the key tables (the view's, the panes', the global ones) and the command table, so
 * it cannot drift from what the keys do; the man page is checked against the same tables (tests/unit). */
#ifndef KVCON_UI_HELP_H
#define KVCON_UI_HELP_H

#include "core/buf.h"
#include "ui/view.h"

extern const struct view_key ui_global_keys[];

struct view *help_view_new(struct view *for_view);

/* ---- test seams: exported for tests/ only, not to be called by kvcon itself (tests/check-exports.sh) ---- */
/* Help text for view v (NULL: every table kvcon has), appended to out. */
void help_text(struct view *v, struct buf *out);

#endif
