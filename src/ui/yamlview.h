/* The `y` view: the object fetched again from its source (provider fetch_raw), JSON converted to YAML text with
 * libyaml's emitter, shown in the read-only pager. */
#ifndef KVCON_UI_YAMLVIEW_H
#define KVCON_UI_YAMLVIEW_H

#include <stddef.h>

#include "model/obj.h"
#include "ui/view.h"

/* YAML text for a JSON document (NULL with *err when the JSON does not parse). Caller frees. YAML input is
 * returned as is. */
char *yamlview_from_json(const char *json, size_t len, char **err);
/* Opens a pager for o and starts the fetch; the pager shows "fetching..." until the body arrives. */
struct view *yamlview_new(const struct obj *o);

#endif
