/* The storage chain of a cluster VM (volume -> DataVolume -> PVC -> PV) and its first broken link, for diagnose. */
#ifndef KVCON_KUBE_STORAGE_H
#define KVCON_KUBE_STORAGE_H

#include <json.h>
#include <stdbool.h>

#include "core/buf.h"
#include "model/source.h"

/* A JSON array, one object per DataVolume/PVC volume of the VM's template: volume, type, dataVolume {name,
 * phase, progress, message (why it failed), owners}, pvc {name, phase, capacity, accessModes, storageClass,
 * owners}, pv {name, phase, capacity, reclaimPolicy}, brokenLink + reason (the first broken link), migration
 * (a RWO claim of a running VM). Every string escaped. Blocks on the loop until the GETs are answered. NULL with *err (caller frees). */
struct json_object *storage_chain(struct source *src, const char *ns, const char *vm, bool running, char **err);
/* The same without waiting: cb gets the chain (NULL with err) on the loop thread, once; the job is gone then. NULL
 * with *err when src is not a cluster. storage_chain_cancel stops it (no callback). */
struct storage_job;
typedef void (*storage_done_cb)(void *arg, struct json_object *chain, const char *err);
struct storage_job *storage_chain_start(struct source *src, const char *ns, const char *vm, bool running,
					storage_done_cb cb, void *arg, char **err);
/* The chain as diagnose's "Storage" section (nothing when the VM has no such volumes). */
void storage_format_text(struct json_object *chain, struct buf *out);

/* GET an API path from a cluster source, waiting on the loop: the parsed object, or NULL with *status (404: it
 * does not exist) and, for other failures, *err (caller frees). */
struct json_object *storage_get_json(struct source *src, const char *path, long *status, char **err);

#endif
