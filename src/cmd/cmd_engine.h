/* `kvcon engine ...`: the engine's verbs on the command line (apply, serve, pull, reconcile, migrate, drain), and
 * get, console, vnc and the actions (model/registry.c): the top-level verbs on the engine only. Each goes through
 * the engine service; serve and pull are kvcon-engine's, exec'd (service/service.h). */
#ifndef KVCON_CMD_CMD_ENGINE_H
#define KVCON_CMD_CMD_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct kvcon_opts;
struct source;
struct store;

int cmd_engine(int argc, char **argv);

/* For the verbs in other files (cmd_engine_migrate.c): the engine service open and its lists read, and done. */
int engine_cli_open(void);
int engine_cli_close(int rc);
struct source **engine_cli_sources(int *n);
struct store *engine_cli_store(void);
const char *engine_cli_ns(void);
/* No -c: the engine hosts of the config file ($XDG_CONFIG_HOME/kvcon/config, `engine.host = URI ...`) become the -c list,
 * for the dashboard and every command alike. */
void engine_cli_config_hosts(struct kvcon_opts *o);
/* What an asynchronous engine call answered: a callback fills it (done set). */
struct cli_reply {
	bool done;
	int status, fd;
	char *msg; /* owned */
};
void engine_cli_reply(void *reply, int status, const char *msg); /* an action_done_cb */
/* cmd_engine_migrate.c */
int migrate_cmd(int argc, char **argv);
int drain_cmd(int argc, char **argv);
/* The engine's verbs, rows of the command table (cmd/cmd.c: child rows of `engine`); argv[0] is the sub-verb. */
int cmd_engine_apply(int argc, char **argv);
int cmd_engine_get(int argc, char **argv);
int cmd_engine_console(int argc, char **argv);
int cmd_engine_vnc(int argc, char **argv);
int cmd_engine_pull(int argc, char **argv);
int cmd_engine_reconcile(int argc, char **argv);
int cmd_engine_action(int argc, char **argv);
int cmd_engine_kubeconfig(int argc, char **argv); /* cmd_kubeconfig.c */

#endif
