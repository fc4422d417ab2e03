/* vnccmd: `kvcon vnc TARGET`: the guest's display full-screen in the terminal, a headless screenshot
 * (--screenshot FILE.png) or a local proxy for an external viewer (--proxy-only, like virtctl vnc). */
#ifndef KVCON_CMD_CMD_VNC_H
#define KVCON_CMD_CMD_VNC_H

#include "console/fbcells.h"

struct stream;

/* The subcommand (argv[0] is "vnc"). */
int vnccmd_main(int argc, char **argv);

/* Colour mode for the display: --colors, NO_COLOR, COLORTERM, then terminfo's colour count. */
enum fbc_colour vnccmd_detect_colour(const char *forced);

/* Opens the stream for a NS/NAME target another way (tests, embedders); NULL (the default): the sources the
 * dashboard would open: the engine hosts with -c URI, else the kubeconfig's cluster (the VMI's vnc subresource
 * WebSocket), else, with no kubeconfig at all, the local engine. */
extern struct stream *(*vnccmd_open_vm)(const char *ns, const char *name, char **err);

#endif
