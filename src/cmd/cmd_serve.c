/* `kvcon engine serve [--socket PATH] [--https PORT] [--kubeconfig-out FILE] [--idle-exit SECONDS]`: the thin verb
 * around the API server (apiserver/apisrv.h). It parses the flags, opens the engine in this process (the only
 * command that does: every other one reaches the engine through this service), names itself as the holder of
 * each host's lock, and hands the store and sources to apisrv_serve. */
#include "cmd/cmd_serve.h"

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "apiserver/apisrv.h"
#include "cmd/cmd.h"
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

/* The pid of the service started on demand (engine/service.c: `engine serve --on-demand`) of this user that
 * serves sock, or 0: its SOCK.pid names a process of ours whose command line says so. */
static pid_t on_demand_pid(const char *sock)
{
	char *pf = xasprintf("%s.pid", sock);
	char *t = util_read_file(pf, NULL);
	free(pf);
	long pid = t ? atol(t) : 0;
	free(t);
	if (pid <= 1 || pid == (long)getpid())
		return 0;
	char cl[64];
	snprintf(cl, sizeof cl, "/proc/%ld/cmdline", pid);
	struct stat sb;
	size_t n = 0;
	char *cmd = stat(cl, &sb) == 0 && sb.st_uid == geteuid() ? util_read_file(cl, &n) : NULL;
	bool serve = false, demand = false;
	for (size_t i = 0; cmd && i < n; i += strlen(cmd + i) + 1) {
		serve |= strcmp(cmd + i, "serve") == 0;
		demand |= strcmp(cmd + i, "--on-demand") == 0;
	}
	free(cmd);
	return serve && demand ? (pid_t)pid : 0;
}

/* An explicit `engine serve` takes the root over from the service started on demand (asked to leave as on
 * SIGTERM; guests keep running) instead of being refused because that one holds it. 0, or -1 when it stays. */
static int take_over(const char *sock)
{
	pid_t pid = on_demand_pid(sock);
	if (pid == 0 || kill(pid, SIGTERM) < 0)
		return 0;
	log_eprintf("engine serve: the service started on demand (pid %ld) leaves for this one\n", (long)pid);
	for (int i = 0; i < 600; i++) { /* its queued writes first: up to a minute */
		if (kill(pid, 0) < 0 && errno == ESRCH)
			return 0;
		struct timespec ts = { 0, 100 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	log_eprintf("error: engine serve: the service started on demand (pid %ld) did not leave\n", (long)pid);
	return -1;
}

int engine_serve_cmd(int argc, char **argv)
{
	const char *sock = NULL, *kubeconfig = NULL;
	int port = -1, idle = 0, on_demand = 0;
	const struct cli_opt rows[] = { { "--socket", CLI_STR, &sock },
					{ "--on-demand", CLI_FLAG, &on_demand },
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
	if (!on_demand && take_over(spath) < 0) {
		free(spath);
		return EXIT_API;
	}
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
