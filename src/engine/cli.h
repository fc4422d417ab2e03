/* `kvcon engine ...`: the engine's verbs on the command line (apply, get, start, stop, restart, pause, unpause,
 * delete, console, vnc, reconcile), mirroring the cluster verbs. */
#ifndef KVCON_ENGINE_CLI_H
#define KVCON_ENGINE_CLI_H

#include <stdbool.h>
#include <stdint.h>

struct kvcon_opts;
struct source;
struct store;

int engine_cmd(int argc, char **argv);

/* For the verbs in other files (migcli.c): open every host and wait for them, leave after converging. */
int engine_cli_open(void);
int engine_cli_close(int rc, uint64_t converge_ms);
bool engine_cli_run_until(bool (*cond)(void *), void *arg, uint64_t timeout_ms);
struct source **engine_cli_sources(int *n);
struct store *engine_cli_store(void);
const char *engine_cli_ns(void);
/* No -c: the engine hosts of the config file ($XDG_CONFIG_HOME/kvcon/config, `engine.host = URI ...`) become the -c list,
 * for the dashboard and every command alike. */
void engine_cli_config_hosts(struct kvcon_opts *o);
/* migcli.c */
int migrate_cmd(int argc, char **argv);
int drain_cmd(int argc, char **argv);

#endif
