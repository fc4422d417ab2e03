/* `kvcon engine serve`: the verb that runs the engine service (apiserver/apisrv.h). */
#ifndef KVCON_CMD_CMD_SERVE_H
#define KVCON_CMD_CMD_SERVE_H

int engine_serve_cmd(int argc, char **argv);

#endif
