/* `kvcon cordon|uncordon NODE` and `kvcon drain NODE`: kubectl's node verbs, on the cluster or the engine service
 * (cmd/cmd_node.c). */
#ifndef KVCON_CMD_CMD_NODE_H
#define KVCON_CMD_CMD_NODE_H

/* cordon and uncordon (argv[0] says which) */
int cmd_cordon(int argc, char **argv);
int cmd_drain(int argc, char **argv);

#endif
