/* cmd_vnc: `kvcon vnc TARGET`: the guest's display full-screen in the terminal, a headless screenshot
 * (--screenshot FILE.png) or a local proxy for an external viewer (--proxy-only, like virtctl vnc). */
#ifndef KVCON_CMD_CMD_VNC_H
#define KVCON_CMD_CMD_VNC_H

/* The subcommand (argv[0] is "vnc"). */
int cmd_vnc(int argc, char **argv);

#endif
