/* kvcon describe: a VM, VMI or pod in kubectl describe's layout, with its events (newest last). */
#ifndef KVCON_CMD_CMD_DESCRIBE_H
#define KVCON_CMD_CMD_DESCRIBE_H

#include <stdio.h>

#include "model/obj.h"
#include "model/source.h"

struct session;

int cmd_describe(int argc, char **argv);
/* The describe text of an object (its JSON as the source serves it) and the session store's events about it.
 * 0, or -1 when json is not an object. */
int describe_text(struct source *src, const struct session *s, enum obj_kind kind, const char *json, FILE *f);

#endif
