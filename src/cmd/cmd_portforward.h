/* cmd_portforward: `kvcon port-forward TYPE/NAME[.NS] [PROTO/]LOCAL[:REMOTE]... [--address ADDR] [--stdio]`, as
 * virtctl port-forward: local TCP ports (on 127.0.0.1 unless --address) whose every accepted connection becomes a
 * stream of its own to the guest port through the VM's or VMI's portforward subresource (provider_ops
 * .open_portforward); a guest port where nothing listens ends that connection, not the forward; the listening
 * ports close when the command ends (Ctrl+C). --stdio forwards the one port's one connection on stdin/stdout
 * (ssh's ProxyCommand, cmd/cmd_ssh.c). */
#ifndef KVCON_CMD_CMD_PORTFORWARD_H
#define KVCON_CMD_CMD_PORTFORWARD_H

int cmd_portforward(int argc, char **argv);

#endif
