/* KubeVirt-shaped API objects built from the store's compact objects (for the engine, which has no API server):
 * VirtualMachine, VirtualMachineInstance, Pod. */
#ifndef KVCON_MODEL_OBJJSON_H
#define KVCON_MODEL_OBJJSON_H

#include <json.h>

#include "model/obj.h"

/* A new JSON object (json_object_put it), NULL for other kinds. */
struct json_object *objjson_new(const struct obj *o);

#endif
