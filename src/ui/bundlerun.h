/* `b` in the VM view: kvcon bundle of the VM in a child process, its end reported on the status line. */
#ifndef KVCON_UI_BUNDLERUN_H
#define KVCON_UI_BUNDLERUN_H

#include "model/obj.h"

/* Starts it; 0, or -1 with *err (caller frees): engine VMs (the dashboard holds the engine), no state dir. */
int bundlerun_start(const struct obj *vm, char **err);

#endif
