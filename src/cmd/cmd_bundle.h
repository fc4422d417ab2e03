/* kvcon bundle: the evidence about one VM as a tarball, secrets left out. */
#ifndef KVCON_CMD_CMD_BUNDLE_H
#define KVCON_CMD_CMD_BUNDLE_H

int cmd_bundle(int argc, char **argv);

#endif
