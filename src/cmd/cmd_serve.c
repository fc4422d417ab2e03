/* `kvcon engine serve [--socket PATH] [--https PORT] [--kubeconfig-out FILE] [--idle-exit SECONDS]`: the engine
 * service runs in kvcon-engine (src/engine_main.c: the engine and its libraries are there, not in kvcon). This verb
 * parses its flags from its row in cmd/cmd.c (cmd/args.c), then execs kvcon-engine in this process's place with
 * them in their plain form (whole numbers) and the global options that matter to it (-c, --log-file, -v,
 * --readonly), so that the service's pid, stdio and exit status are this command's. */
#include "cmd/cmd_serve.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/args.h"
#include "core/log.h"
#include "core/opts.h"
#include "core/xmalloc.h"
#include "service/service.h"

int engine_serve_cmd(int argc, char **argv)
{
	struct args g;
	int rc = args_parse_sub("engine", argc, argv, &g);
	const char *sock = args_get(&g, "--socket"), *kubeconfig = args_get(&g, "--kubeconfig-out");
	long port = args_num(&g, "--https", -1);
	/* whole seconds (a duration is at most ten years); 500ms is 1 s, not never */
	long idle = (args_num(&g, "--idle-exit", 0) + 999) / 1000;
	bool idle_given = args_has(&g, "--idle-exit");
	if (rc == ARGS_OK && g.npos > 0)
		rc = args_usage_error(&g, "unexpected argument \"%s\"", g.pos[0]);
	else if (rc == ARGS_OK && port > 65535)
		rc = args_usage_error(&g, "--https %ld: not a port", port);
	args_free(&g); /* the values point into argv */
	if (rc != ARGS_OK)
		return rc == ARGS_HELP ? EXIT_OK : EXIT_USAGE;
	struct kvcon_opts *o = opts_global();
	char *err = NULL, *exe = engine_exe(&err);
	if (exe == NULL) {
		log_eprintf("error: engine serve: %s\n", err);
		free(err);
		return EXIT_API;
	}
	/* kvcon-engine [-c URI]... [--log-file FILE] [--v=N] [--readonly] engine serve [FLAGS] */
	char **av = xcalloc((size_t)o->nuris * 2 + 20, sizeof *av);
	char verbose[32], portw[32], idlew[32];
	int n = 0;
	av[n++] = exe;
	for (int i = 0; i < o->nuris; i++) {
		av[n++] = (char *)"-c";
		av[n++] = o->uris[i];
	}
	if (o->log) {
		av[n++] = (char *)"--log-file";
		av[n++] = o->log;
	}
	if (o->verbose > 0) {
		snprintf(verbose, sizeof verbose, "--v=%d", o->verbose);
		av[n++] = verbose;
	}
	if (o->readonly)
		av[n++] = (char *)"--readonly";
	av[n++] = (char *)"engine";
	av[n++] = (char *)"serve";
	if (sock) {
		av[n++] = (char *)"--socket";
		av[n++] = (char *)sock;
	}
	if (port >= 0) {
		snprintf(portw, sizeof portw, "%ld", port);
		av[n++] = (char *)"--https";
		av[n++] = portw;
	}
	if (kubeconfig) {
		av[n++] = (char *)"--kubeconfig-out";
		av[n++] = (char *)kubeconfig;
	}
	if (idle_given) {
		snprintf(idlew, sizeof idlew, "%ld", idle);
		av[n++] = (char *)"--idle-exit";
		av[n++] = idlew;
	}
	fflush(NULL);
	execv(exe, av);
	log_eprintf("error: engine serve: %s: %s\n", exe, strerror(errno));
	free(av);
	free(exe);
	return EXIT_API;
}
