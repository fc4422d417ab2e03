/* `kvcon engine serve [--socket PATH] [--https PORT] [--kubeconfig-out FILE] [--idle-exit SECONDS]`: the thin verb
 * around the API server (apiserver/apisrv.h). It parses the flags (its row in cmd/cmd.c, by cmd/args.c), opens the engine in this process (the only
 * command that does: every other one reaches the engine through this service), names itself as the holder of
 * each host's lock, and hands the store and sources to apisrv_serve. */
#include "cmd/cmd_serve.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apiserver/apisrv.h"
#include "cmd/args.h"
#include "cmd/cmd_engine.h"
#include "cmd/session.h"
#include "core/log.h"
#include "core/opts.h"
#include "core/util.h"
#include "core/xmalloc.h"
#include "engine/engine.h"

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
	struct args g;
	int rc = args_parse_sub("engine", argc, argv, &g);
	const char *sock = args_get(&g, "--socket"), *kubeconfig = args_get(&g, "--kubeconfig-out");
	long port = args_num(&g, "--https", -1);
	/* whole seconds (a duration is at most ten years); 500ms is 1 s, not never */
	long idle = (args_num(&g, "--idle-exit", 0) + 999) / 1000;
	if (rc == ARGS_OK && g.npos > 0)
		rc = args_usage_error(&g, "unexpected argument \"%s\"", g.pos[0]);
	else if (rc == ARGS_OK && port > 65535)
		rc = args_usage_error(&g, "--https %ld: not a port", port);
	args_free(&g); /* the values point into argv */
	if (rc != ARGS_OK)
		return rc == ARGS_HELP ? EXIT_OK : EXIT_USAGE;
	session_route(false); /* the service opens the engine itself, whoever else serves */
	char *spath = sock ? xstrdup(sock) : default_socket();
	{ /* who holds each host's lock (engine.c): a second service for one of these hosts names this one */
		char *label = xasprintf("engine serve on %s", spath);
		engine_set_owner(label);
		free(label);
	}
	rc = engine_cli_open();
	if (rc) {
		free(spath);
		return rc;
	}
	struct apisrv_config c = { .socket = spath, .https_port = (int)port, .kubeconfig = kubeconfig,
				   .idle_exit = (int)idle, .st = engine_cli_store() };
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
