/* `kvcon apply -f`, `kvcon delete -f` (else the delete action), `kvcon create namespace NAME`: kubectl's verbs on
 * manifests, against the cluster or the engine service (cmd/cmd_apply.c). */
#ifndef KVCON_CMD_CMD_APPLY_H
#define KVCON_CMD_CMD_APPLY_H

int cmd_apply(int argc, char **argv);
int cmd_create(int argc, char **argv);
int cmd_delete(int argc, char **argv);
/* The API these verbs (and cordon, uncordon, drain: cmd/cmd_node.c) act on: the cluster of the kubeconfig, or the
 * engine service, as core/connect.c's rule says; NULL with *err (caller frees). */
struct kube_config;
struct kube_config *cmd_apply_target(char **err);

#endif
