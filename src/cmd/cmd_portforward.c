/* kvcon port-forward (see cmd_portforward.h): operands, the source, then console/portfwd.c does the forwarding. */
#include "cmd/cmd_portforward.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/args.h"
#include "cmd/session.h"
#include "console/portfwd.h"
#include "core/log.h"
#include "core/loop.h"
#include "core/opts.h"
#include "core/xmalloc.h"
#include "kube/kube.h"
#include "model/pfspec.h"
#include "model/registry.h"
#include "model/store.h"

#define PF_MAX_PORTS 16
#define PF_MAX_ADDRS 4

static void report(void *arg, int guest_port, const char *reason)
{
	(void)arg;
	/* the server's words, escaped by log_eprintf */
	log_eprintf("error: guest port %d: %s\n", guest_port, reason);
}

static void stdio_done(void *arg, int rc)
{
	(void)arg;
	loop_quit(rc);
}

int cmd_portforward(int argc, char **argv)
{
	struct args fa;
	int p = args_parse_verb(argc, argv, &fa);
	if (p != ARGS_OK) {
		args_free(&fa);
		return p == ARGS_HELP ? EXIT_OK : EXIT_USAGE;
	}
	const char *address = args_get(&fa, "--address") ? args_get(&fa, "--address") : "127.0.0.1";
	bool stdio = args_bool(&fa, "--stdio");
	const char *target = fa.npos > 0 ? fa.pos[0] : NULL;
	const char *ports[PF_MAX_PORTS];
	size_t nports = fa.npos > 1 ? (size_t)fa.npos - 1 : 0;
	int bad = nports > PF_MAX_PORTS ? args_usage_error(&fa, "at most %d ports", PF_MAX_PORTS)
		  : nports == 0	  ? args_usage_error(&fa, "a TYPE/NAME and at least one port are required")
				  : 0;
	for (size_t i = 0; !bad && i < nports; i++)
		ports[i] = fa.pos[i + 1];
	args_free(&fa); /* the values point into argv */
	if (bad)
		return EXIT_USAGE;
	char err[160];
	struct pf_target t;
	if (pf_target_parse(target, false, &t, err, sizeof err) < 0) {
		log_eprintf("error: %s\n", err);
		return EXIT_USAGE;
	}
	struct pf_port pp[PF_MAX_PORTS];
	for (size_t i = 0; i < nports; i++) {
		if (pf_port_parse(ports[i], &pp[i], err, sizeof err) < 0) {
			log_eprintf("error: %s\n", err);
			return EXIT_USAGE;
		}
		if (pp[i].udp && stdio) {
			log_eprintf("error: --stdio forwards a TCP port, not udp/%d\n", pp[i].remote);
			return EXIT_USAGE;
		}
	}
	if (stdio && nports != 1) {
		log_eprintf("error: --stdio forwards exactly one port\n");
		return EXIT_USAGE;
	}
	char *addrs[PF_MAX_ADDRS];
	size_t naddrs = 0;
	for (const char *a = address; *a && naddrs < PF_MAX_ADDRS;) {
		size_t n = strcspn(a, ",");
		if (n)
			addrs[naddrs++] = xstrndup(a, n);
		a += n + (a[n] == ',');
	}

	signal(SIGPIPE, SIG_IGN);
	session_cli_start();
	struct store *st = store_new();
	struct kvcon_opts *g = opts_global();
	const char *ns = t.ns[0] ? t.ns : g->ns;
	if (ns) {
		/* watch only that namespace: whether the source has the VMI is all that is needed */
		char *keep = xstrdup(ns);
		free(g->ns);
		g->ns = keep;
		g->all_ns = false;
		ns = g->ns;
	}
	char *rerr = NULL;
	int rc = EXIT_OK;
	struct portfwd *f = NULL;
	struct source *src =
		session_resolve(st, ns, t.name, KUBE_KIND_BIT(OBJ_VMI) | KUBE_KIND_BIT(OBJ_VM), false, &rerr);
	if (src == NULL) {
		log_eprintf("error: %s\n", rerr ? rerr : "no source");
		rc = EXIT_API;
		goto out;
	}
	if (ns == NULL)
		ns = src->type == SOURCE_KUBE && src->ns_scope ? src->ns_scope : "default";
	f = portfwd_new(src, (int)t.kind, ns, t.name, report, NULL, &rerr);
	if (f == NULL) {
		log_eprintf("error: %s\n", rerr);
		rc = EXIT_API;
		goto out;
	}
	if (stdio) {
		portfwd_stdio(f, &pp[0], stdio_done, NULL);
	} else {
		for (size_t i = 0; i < nports; i++)
			for (size_t a = 0; a < naddrs; a++) {
				int bound = portfwd_listen(f, addrs[a], &pp[i], &rerr);
				if (bound < 0) {
					log_eprintf("error: %s\n", rerr);
					rc = EXIT_API;
					goto out;
				}
				printf("Forwarding from %s:%d -> %d\n", addrs[a], bound, pp[i].remote);
			}
		fflush(stdout);
	}
	rc = loop_run();
out:
	portfwd_free(f);
	for (size_t a = 0; a < naddrs; a++)
		free(addrs[a]);
	free(rerr);
	source_free_all();
	store_free(st);
	return rc;
}
