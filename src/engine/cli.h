/* `kvcon engine ...`: the engine's verbs on the command line (apply, get, start, stop, restart, pause, unpause,
 * delete, console, vnc, reconcile), mirroring the cluster verbs. */
#ifndef KVCON_ENGINE_CLI_H
#define KVCON_ENGINE_CLI_H

int engine_cmd(int argc, char **argv);

#endif
