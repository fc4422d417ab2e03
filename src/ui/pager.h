/* A read-only text pager view (help, YAML, the diagnosis walkthrough): scrolling, `/` search with n/N, wrapped
 * lines never, long lines cut; text shown escaped. */
#ifndef KVCON_UI_PAGER_H
#define KVCON_UI_PAGER_H

#include "ui/view.h"

/* A pager showing a copy of text. Its id stays valid for pager_find() until the view is freed. */
struct view *pager_new(const char *title, const char *text);
unsigned pager_id(struct view *v);
/* The live pager with this id, or NULL once it was closed (asynchronous fetches check before filling it). */
struct view *pager_find(unsigned id);
void pager_set_text(struct view *v, const char *text);
const struct view_key *pager_keys_table(void);

#endif
