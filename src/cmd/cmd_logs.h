/* kvcon logs: a container's log (the launcher of a VM or VMI, or a pod), streamed and escaped. */
#ifndef KVCON_CMD_CMD_LOGS_H
#define KVCON_CMD_CMD_LOGS_H

#include "model/obj.h"
#include "model/source.h"
#include "model/store.h"

int cmd_logs(int argc, char **argv);

/* The pod a log of ns/name is read from: the current launcher of the VM or VMI of that name, else the pod of
 * that name; *vm_name the VM it runs (NULL for other pods). NULL with *why (caller frees) when none. */
const struct pod *logs_resolve(const struct store *st, struct source *src, const char *ns, const char *name,
			       const char **vm_name, char **why);
/* "compute" when the pod has that container (a launcher), else NULL (the server's default). */
const char *logs_default_container(const struct pod *p);

#endif
