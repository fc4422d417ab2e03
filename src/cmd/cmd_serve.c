/* `kvcon engine serve [--socket PATH] [--https PORT] [--kubeconfig-out FILE] [--idle-exit SECONDS]`: the thin verb
 * around the API server (apiserver/apisrv.h). It parses the flags, opens the engine in this process (the only
 * command that does: every other one reaches the engine through this service), names itself as the holder of
 * each host's lock, and hands the store and sources to apisrv_serve. */
#include "cmd/cmd_serve.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apiserver/apisrv.h"
#include "cmd/cmd.h"
#include "cmd/cmd_engine.h"
#include "cmd/session.h"
#include "core/log.h"
#include "core/opts.h"
#include "core/util.h"
#include "core/xmalloc.h"
#include "engine/engine.h"
#include "engine/volumes.h"

/* The root's well-known socket (cmd/session.h), where kvcon's own commands look for the service. */
static char *default_socket(void)
{
	char *p = session_service_socket();
	char *dir = xstrndup(p, (size_t)(strrchr(p, '/') - p));
	util_mkdir_p(dir, 0700);
	free(dir);
	return p;
}

int engine_serve_cmd(int argc, char **argv)
{
	const char *sock = NULL, *kubeconfig = NULL;
	int port = -1, idle = 0;
	const struct cli_opt rows[] = { { "--socket", CLI_STR, &sock },
					{ "--https", CLI_INT, &port },
					{ "--kubeconfig-out", CLI_STR, &kubeconfig },
					{ "--idle-exit", CLI_INT, &idle } };
	int rc = engine_cli_args(argc, argv, CLI_ROWS(rows), NULL, NULL);
	if (rc)
		return rc;
	if (idle < 0) {
		log_eprintf("error: engine serve: --idle-exit %d: not a number of seconds\n", idle);
		return EXIT_USAGE;
	}
	if (port > 65535) {
		log_eprintf("error: engine serve: %d: not a port\n", port);
		return EXIT_USAGE;
	}
	session_route(false); /* the service opens the engine itself, whoever else serves */
	char *spath = sock ? xstrdup(sock) : default_socket();
	{ /* who holds each host's lock (engine.c): a second service for one of these hosts names this one */
		char *label = xasprintf("engine serve on %s", spath);
		engine_set_owner(label);
		free(label);
	}
	engine_volume_gate_hold(); /* starts of VMs with claims wait for the service's storage (apiserver/storage.c) */
	rc = engine_cli_open();
	if (rc) {
		free(spath);
		return rc;
	}
	struct apisrv_config c = { .socket = spath, .https_port = port, .kubeconfig = kubeconfig,
				   .idle_exit = idle, .st = engine_cli_store() };
	c.srcs = engine_cli_sources(&c.nsrcs);
	char *err = NULL;
	rc = apisrv_serve(&c, &err);
	free(spath);
	if (rc < 0) {
		log_eprintf("error: engine serve: %s\n", err);
		free(err);
		return engine_cli_close(EXIT_API, 0);
	}
	return engine_cli_close(rc == 130 ? 0 : rc, 0);
}
