/* kvcon describe: a VM, VMI or pod in kubectl describe's layout, with its events (newest last). */
#ifndef KVCON_CMD_CMD_DESCRIBE_H
#define KVCON_CMD_CMD_DESCRIBE_H

int cmd_describe(int argc, char **argv);

#endif
