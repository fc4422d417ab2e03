/* `kvcon apply -f`, `kvcon delete -f` (else the delete action), `kvcon create namespace NAME`: kubectl's verbs on
 * manifests, against the cluster or the engine service (cmd/cmd_apply.c). */
#ifndef KVCON_CMD_CMD_APPLY_H
#define KVCON_CMD_CMD_APPLY_H

int cmd_apply(int argc, char **argv);
int cmd_create(int argc, char **argv);
int cmd_delete(int argc, char **argv);

#endif
