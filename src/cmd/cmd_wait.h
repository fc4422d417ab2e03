/* kvcon wait: kubectl wait for VMs and VMIs (conditions, jsonpath, delete), on the watch. */
#ifndef KVCON_CMD_CMD_WAIT_H
#define KVCON_CMD_CMD_WAIT_H

int cmd_wait(int argc, char **argv);

#endif
