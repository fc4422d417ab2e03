/* kvcon logs: a container's log (the launcher of a VM or VMI, or a pod), streamed and escaped. */
#ifndef KVCON_CMD_CMD_LOGS_H
#define KVCON_CMD_CMD_LOGS_H

int cmd_logs(int argc, char **argv);

#endif
