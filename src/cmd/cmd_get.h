/* `kvcon get vm|vmi|pod|event`: list (and watch) KubeVirt objects like kubectl get, through the same reflectors
 * and store the dashboard uses. */
#ifndef KVCON_CMD_CMD_GET_H
#define KVCON_CMD_CMD_GET_H

int cmd_get(int argc, char **argv);

#endif
