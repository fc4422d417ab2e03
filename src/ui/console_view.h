/* console_view: a VM's serial console as a pane of the dashboard (`c` on a VM): a console session (consess)
 * drawn into the pane region, keys to the guest while focused, Ctrl+] gives focus back. */
#ifndef KVCON_UI_CONSOLE_VIEW_H
#define KVCON_UI_CONSOLE_VIEW_H

#include <stdbool.h>
#include <stddef.h>

#include "model/obj.h"

struct view;
struct consess;
struct consess_opts;

/* Opens the console of vm (a VM or VMI; the VMI of the same namespace/name) through its source's provider in a
 * new pane view; NULL with *err (caller frees) when the source has no serial console. */
struct view *console_view_open(struct obj *vm, char **err);
/* A console pane on any session target (o as consess_new takes it: a VMI of a source, or a ws://, unix: or tcp:
 * URL); label (already display-escaped) names it in the status row. NULL with *err (caller frees). */
struct view *console_view_new(const struct consess_opts *o, const char *label, char **err);
/* The session of a console pane; NULL when v is not one. */
struct consess *console_view_session(struct view *v);
/* A bracketed paste from the outer terminal, for v if it is a console view (sent to the guest, bracketed when the
 * guest asked for it; dropped in copy mode). Returns false when v is not a console view. */
bool console_view_paste(struct view *v, const char *text, size_t len);

#endif
