/* `kvcon engine serve [--socket PATH] [--https PORT] [--kubeconfig-out FILE] [--idle-exit SECONDS]`: the engine
 * service runs in kvcon-engine (src/engine_main.c: the engine and its libraries are there, not in kvcon), exec'd
 * here in this process's place with the same arguments and the global options that matter to it (-c, --log-file,
 * -v, --readonly), so that the service's pid, stdio and exit status are this command's. */
#include "cmd/cmd_serve.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/log.h"
#include "core/opts.h"
#include "core/xmalloc.h"
#include "service/service.h"

int engine_serve_cmd(int argc, char **argv)
{
	struct kvcon_opts *o = opts_global();
	char *err = NULL, *exe = engine_exe(&err);
	if (exe == NULL) {
		log_eprintf("error: engine serve: %s\n", err);
		free(err);
		return EXIT_API;
	}
	/* kvcon-engine [-c URI]... [--log-file FILE] [--v=N] [--readonly] engine serve ARGS (argv[0] is "serve") */
	char **av = xcalloc((size_t)argc + (size_t)o->nuris * 2 + 8, sizeof *av);
	char verbose[32];
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
	for (int i = 1; i < argc; i++)
		av[n++] = argv[i];
	fflush(NULL);
	execv(exe, av);
	log_eprintf("error: engine serve: %s: %s\n", exe, strerror(errno));
	free(av);
	free(exe);
	return EXIT_API;
}
