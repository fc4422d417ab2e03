/* kvcon port-forward (see cmd_portforward.h): operands, the source, then console/portfwd.c does the forwarding. */
#include "cmd/cmd_portforward.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/session.h"
#include "console/portfwd.h"
#include "core/kargs.h"
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

enum { OPT_ADDRESS, OPT_STDIO, OPT_HELP };

static const struct karg_opt opts[] = {
	{ 0, "address", KARG_VALUE, OPT_ADDRESS },
	{ 0, "stdio", KARG_FLAG, OPT_STDIO },
	{ 'h', "help", KARG_FLAG, OPT_HELP },
	{ 0 },
};

int cmd_portforward(int argc, char **argv)
{
	struct karg k;
	karg_init(&k, argc, argv, opts);
	const char *target = NULL, *address = "127.0.0.1";
	const char *ports[PF_MAX_PORTS];
	size_t nports = 0;
	bool stdio = false;
	int id;
	while ((id = karg_next(&k)) != KARG_END) {
		switch (id) {
		case KARG_ERR:
			log_eprintf("error: %s\n", k.err);
			return EXIT_USAGE;
		case OPT_ADDRESS:
			address = k.val;
			break;
		case OPT_STDIO:
			stdio = karg_bool(&k);
			break;
		case OPT_HELP:
			printf("usage: kvcon port-forward %s\n", registry_guest_verb(GV_PORT_FORWARD)->synopsis);
			return EXIT_OK;
		case KARG_POS:
			if (target == NULL) {
				target = k.val;
			} else if (nports < PF_MAX_PORTS) {
				ports[nports++] = k.val;
			} else {
				log_eprintf("error: at most %d ports\n", PF_MAX_PORTS);
				return EXIT_USAGE;
			}
			break;
		}
	}
	if (target == NULL || nports == 0) {
		log_eprintf("error: usage: kvcon port-forward %s\n", registry_guest_verb(GV_PORT_FORWARD)->synopsis);
		return EXIT_USAGE;
	}
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
	session_sources_close();
	source_free_all();
	store_free(st);
	return rc;
}
