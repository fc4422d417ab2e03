/* cmd_ssh: `kvcon ssh` and `kvcon scp` as virtctl's with --local-ssh: the system's ssh or scp, run in kvcon's
 * place (exec), with ProxyCommand `kvcon port-forward --stdio TYPE/NAME.NS PORT` (cmd_portforward.h) and the
 * host named TYPE.NAME.NS, so ssh keeps the guest's key in its known_hosts under that name (or in --known-hosts
 * FILE). -i, -l, -p (the guest port, default 22), -c COMMAND (ssh), -r and --preserve (scp), -t/--local-ssh-opts
 * (repeatable, one argument each). */
#ifndef KVCON_CMD_CMD_SSH_H
#define KVCON_CMD_CMD_SSH_H

int cmd_ssh(int argc, char **argv);
int cmd_scp(int argc, char **argv);

#endif
