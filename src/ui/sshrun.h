/* The dashboard's ssh key (model/registry.c's ssh row): asks for the user and ssh's options, then hands the terminal
 * over to `kvcon ssh` (this binary, the dashboard's own connection options) and comes back when it ends
 * (screen_run). */
#ifndef KVCON_UI_SSHRUN_H
#define KVCON_UI_SSHRUN_H

#include "model/obj.h"

/* Asks "[USER] [OPTIONS]" (Enter: root) and runs ssh into vm's guest (a VM or VMI row's VM). */
void sshrun_prompt(const struct obj *vm);

#endif
