/* An API object (JSON) in kubectl describe's layout, with the store's events about it. */
#ifndef KVCON_MODEL_DESCRIBE_H
#define KVCON_MODEL_DESCRIBE_H

#include <stdio.h>

#include "model/obj.h"
#include "model/source.h"
#include "model/store.h"

/* The describe text of ns/name (its JSON as the source serves it) and the store's events about it, into f (the
 * dashboard's `e` writes it to a memory stream). 0, or -1 when json is not an object. */
int describe_text(const struct store *st, struct source *src, enum obj_kind kind, const char *ns, const char *name,
		  const char *json, FILE *f);

#endif
