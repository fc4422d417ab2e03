/* The header over every view: per source its context / host, cluster URL, user, KubeVirt version, namespace
 * scope and watch health per resource; VM counts by status; READ-ONLY. */
#ifndef KVCON_UI_HEADER_H
#define KVCON_UI_HEADER_H

#include <stdbool.h>

#include "model/obj.h"
#include "ui/view.h"

struct store;

/* Rows the header takes on a screen of this height. */
int header_height(int rows);
void header_draw(const struct region *r, const struct store *st, bool readonly, const char *ns);

#endif
