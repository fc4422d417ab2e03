/* `kvcon engine serve`: exec's kvcon-engine (src/engine_main.c), which runs the engine service. */
#ifndef KVCON_CMD_CMD_SERVE_H
#define KVCON_CMD_CMD_SERVE_H

int engine_serve_cmd(int argc, char **argv);

#endif
