/* The storage chain of a cluster VM (volume -> DataVolume -> PVC -> PV) and its first broken link, for diagnose. */
#ifndef KVCON_CMD_STORAGE_H
#define KVCON_CMD_STORAGE_H

#include <json.h>
#include <stdbool.h>

#include "core/buf.h"
#include "model/source.h"

/* A JSON array, one object per DataVolume/PVC volume of the VM's template: volume, type, dataVolume {name,
 * phase, progress, owners}, pvc {name, phase, capacity, accessModes, storageClass, owners}, pv {name, phase,
 * capacity, reclaimPolicy}, brokenLink + reason (the first broken link), migration (a RWO claim of a running
 * VM). Every string escaped. Blocks on the loop until the GETs are answered. NULL with *err (caller frees). */
struct json_object *storage_chain(struct source *src, const char *ns, const char *vm, bool running, char **err);
/* The chain as diagnose's "Storage" section (nothing when the VM has no such volumes). */
void storage_format_text(struct json_object *chain, struct buf *out);

/* GET an API path from a cluster source, waiting on the loop: the parsed object, or NULL with *status (404: it
 * does not exist) and, for other failures, *err (caller frees). */
struct json_object *storage_get_json(struct source *src, const char *path, long *status, char **err);

#endif
