/* kvcon: argument parsing and subcommand dispatch only. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd_console.h"
#include "cmd/cmd_vnc.h"
#include "cmd/cmd_bundle.h"
#include "cmd/cmd_describe.h"
#include "cmd/cmd_logs.h"
#include "cmd/cmd_wait.h"
#include "core/log.h"
#include "core/kargs.h"
#include "core/opts.h"
#include "core/xmalloc.h"
#include "cmd/cmd_engine.h"
#include "cmd/cmd_diagnose.h"
#include "cmd/cmd_get.h"
#include "kube/kget.h"
#include "core/log.h"
#include "ui/ui.h"

#ifndef KVCON_VERSION
#define KVCON_VERSION "0.1.0"
#endif

static int cmd_version(int argc, char **argv);
static int cmd_help(int argc, char **argv);

/* Subcommands: one row each. */
static const struct cmd_entry commands[] = {
	{ "version", cmd_version, "[--client]", "client version, and the server's where a cluster is configured", NULL },
	{ "get", kube_cmd_get, "KIND[,KIND] [NAME...] [-o FMT] [-l SEL] [-w]",
	  "list objects like kubectl get (-o wide|json|yaml|name|jsonpath=|custom-columns=)", NULL },
	{ "help", cmd_help, "", "show this help", NULL },
	{ "console", concmd_main, "NS/NAME [--timeout S] [--log FILE]",
	  "the guest's serial console full-screen (Ctrl+] exits)", NULL },
	{ "vnc", vnccmd_main, "TARGET [--screenshot F.png|--proxy-only]", "the guest display in the terminal", NULL },
	{ "diagnose", kube_cmd_diagnose, "NS/NAME [-o text|json]", "walk a VM's four boundaries; exit 3 if one stalled", NULL },
	{ "describe", cmd_describe, "vm|vmi|pod NS/NAME", "the object and its events in kubectl describe's layout", NULL },
	{ "bundle", cmd_bundle, "NS/NAME [-o FILE.tar.gz]", "evidence tarball: objects, describe, events, logs, diagnosis",
	  NULL },
	{ "logs", cmd_logs, "NS/NAME [-c CONTAINER] [-f] [-p] [--since D] [--tail N]",
	  "a launcher's (VM, VMI) or pod's container log; engine: compute (QEMU), serial", "-c" },
	{ "wait", cmd_wait, "vm|vmi NS/NAME --for=WHAT [--timeout D]",
	  "wait (watch) for condition=C, jsonpath=...=V or delete, like kubectl wait", NULL },
	{ "lineage", kube_cmd_lineage, "NS/NAME [-o text|json]", "the executions (VMI, launchers, nodes) of a VM", NULL },
	{ "start", kube_cmd_action, "NS/NAME [--wait[=S]]", "start a VM", NULL },
	{ "stop", kube_cmd_action, "NS/NAME [--force] [--grace-period N] [--wait[=S]]", "stop a VM", NULL },
	{ "restart", kube_cmd_action, "NS/NAME [--force] [--grace-period N] [--wait[=S]]", "restart a VM", NULL },
	{ "pause", kube_cmd_action, "NS/NAME [--wait[=S]]", "pause a VM's guest", NULL },
	{ "unpause", kube_cmd_action, "NS/NAME [--wait[=S]]", "unpause a VM's guest", NULL },
	{ "softreboot", kube_cmd_action, "NS/NAME", "reboot the guest (guest agent, else ACPI), like virtctl soft-reboot",
	  NULL },
	{ "migrate", kube_cmd_action, "NS/NAME [--to NODE] [--abort] [--wait[=S]]", "live-migrate a VM", NULL },
	{ "engine", engine_cmd, "VERB ...", "the local libvirt engine (apply, get, start, stop, console, ...)", NULL },
};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

/* Global options; `arg` says whether it takes a value. */
static const struct {
	const char *s, *l;
	int arg;
	const char *help;
} globals[] = {
	{ NULL, "--kubeconfig", 1, "FILE      kubeconfig to use (default: $KUBECONFIG, ~/.kube/config)" },
	{ NULL, "--context", 1, "NAME         kubeconfig context" },
	{ "-n", "--namespace", 1, "NS      namespace (default: the context's)" },
	{ "-A", "--all-namespaces", 0, "    every namespace" },
	{ "-c", "--connect", 1, "URI       libvirt host for the engine (repeatable; default: embedded QEMU)" },
	{ NULL, "--no-engine", 0, "         do not open the local engine" },
	{ NULL, "--readonly", 0, "          refuse every mutating action" },
	{ NULL, "--theme", 1, "NAME           colour theme (default, dark, light, mono)" },
	{ NULL, "--log-file", 1, "FILE        log file (default: $XDG_STATE_HOME/kvcon/kvcon.log)" },
	{ "-v", "--v", 1, "N                log verbosity (-v N, --v=N; -v alone: 1)" },
	{ NULL, "--verbose", 0, "           more logging (repeatable)" },
	{ NULL, "--version", 0, "           the same as the version command" },
	{ "-h", "--help", 0, "              this help" },
};
#define NGLOBALS (sizeof globals / sizeof globals[0])

static void usage(FILE *f)
{
	fprintf(f, "usage: kvcon [global options]                 open the dashboard\n"
		   "       kvcon [global options] COMMAND [args]\n\ncommands:\n");
	for (size_t i = 0; i < NCOMMANDS; i++) {
		char left[96];
		snprintf(left, sizeof left, "%s %s", commands[i].name, commands[i].args);
		fprintf(f, "  %-40s %s\n", left, commands[i].summary);
	}
	fprintf(f, "\nglobal options:\n");
	for (size_t i = 0; i < NGLOBALS; i++)
		fprintf(f, "  %s%s%s %s\n", globals[i].s ? globals[i].s : "   ", globals[i].s ? ", " : " ",
			globals[i].l, globals[i].help);
	fprintf(f, "\nSee kvcon(1) for keys, views and commands.\n");
}

static int cmd_version(int argc, char **argv)
{
	bool client_only = false;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--client") == 0 || strcmp(argv[i], "--client=true") == 0) {
			client_only = true;
		} else {
			log_eprintf("error: unknown flag: %s\n", argv[i]);
			return EXIT_USAGE;
		}
	}
	printf("Client Version: v%s\n", KVCON_VERSION);
	fflush(stdout);
	if (client_only)
		return EXIT_OK;
	char *ver = NULL, *err = NULL;
	int rc = kget_server_version(&ver, &err);
	if (rc == 0)
		printf("Server Version: %s\n", ver);
	else if (rc < 0)
		log_eprintf("error: %s\n", err);
	/* rc 1: no cluster configured; the client version is all there is */
	free(ver);
	free(err);
	return rc < 0 ? EXIT_API : EXIT_OK;
}

static int cmd_help(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	usage(stdout);
	return EXIT_OK;
}

static void set_global(struct kvcon_opts *o, size_t g, const char *val)
{
	const char *l = globals[g].l;
	if (strcmp(l, "--kubeconfig") == 0)
		o->kubeconfig = xstrdup(val);
	else if (strcmp(l, "--context") == 0)
		o->context = xstrdup(val);
	else if (strcmp(l, "--namespace") == 0)
		o->ns = xstrdup(val);
	else if (strcmp(l, "--all-namespaces") == 0)
		o->all_ns = true;
	else if (strcmp(l, "--connect") == 0) {
		o->uris = xreallocarray(o->uris, (size_t)o->nuris + 1, sizeof *o->uris);
		o->uris[o->nuris++] = xstrdup(val);
	} else if (strcmp(l, "--no-engine") == 0)
		o->no_engine = true;
	else if (strcmp(l, "--readonly") == 0)
		o->readonly = true;
	else if (strcmp(l, "--theme") == 0)
		o->theme = xstrdup(val);
	else if (strcmp(l, "--log-file") == 0)
		o->log = xstrdup(val);
	else if (strcmp(l, "--verbose") == 0)
		o->verbose++;
	else if (strcmp(l, "--v") == 0)
		o->verbose = atoi(val);
}

/* -v N, -vN, -v=N, --v=N, --v N as kubectl; a bare -v (not followed by a number) or -vv... count up. Returns true
 * when argv[*i] was a verbosity option (consumed). */
static bool verbosity(int argc, char **argv, int *i, struct kvcon_opts *o)
{
	const char *a = argv[*i];
	if (strcmp(a, "-v") == 0 || strcmp(a, "--v") == 0) {
		const char *n = *i + 1 < argc ? argv[*i + 1] : NULL;
		if (n && n[0] >= '0' && n[0] <= '9' && strspn(n, "0123456789") == strlen(n)) {
			o->verbose = atoi(n);
			*i += 1;
		} else {
			o->verbose++;
		}
		return true;
	}
	if (strncmp(a, "--v=", 4) == 0 || strncmp(a, "-v=", 3) == 0) {
		o->verbose = atoi(strchr(a, '=') + 1);
		return true;
	}
	if (a[0] == '-' && a[1] == 'v' && a[2]) {
		if (strspn(a + 2, "0123456789") == strlen(a + 2)) {
			o->verbose = atoi(a + 2);
			return true;
		}
		if (strspn(a + 1, "v") == strlen(a + 1)) {
			o->verbose += (int)strlen(a + 1);
			return true;
		}
	}
	return false;
}

/* Removes global options from argv (anywhere, "--" stops), leaving the subcommand and its own arguments.
 * Returns the new argc, or -1 on a usage error. */
static bool own_option(const struct cmd_entry *sub, const char *a)
{
	if (sub == NULL || sub->own == NULL || a[0] != '-' || a[1] == '-' || a[1] == '\0')
		return false;
	for (const char *p = sub->own; *p;) {
		size_t n = strcspn(p, " ");
		if (strncmp(a, p, n) == 0 && (a[n] == '\0' || n == 2))
			return true;
		p += n + (p[n] == ' ');
	}
	return false;
}

static int parse_globals(int argc, char **argv, struct kvcon_opts *o)
{
	int out = 0;
	const struct cmd_entry *sub = NULL; /* the subcommand, once seen */
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--") == 0) {
			while (i < argc)
				argv[out++] = argv[i++];
			break;
		}
		if (own_option(sub, a)) {
			argv[out++] = argv[i];
			continue;
		}
		if (verbosity(argc, argv, &i, o))
			continue;
		if (strcmp(a, "--version") == 0) {
			argv[out++] = (char *)"version";
			continue;
		}
		size_t g;
		const char *val = NULL;
		for (g = 0; g < NGLOBALS; g++) {
			const char *l = globals[g].l;
			size_t ll = strlen(l);
			if ((globals[g].s && strcmp(a, globals[g].s) == 0) || strcmp(a, l) == 0)
				break;
			if (globals[g].arg && strncmp(a, l, ll) == 0 && a[ll] == '=') {
				val = a + ll + 1;
				break;
			}
			/* -nNS and -n=NS */
			if (globals[g].arg && globals[g].s && strncmp(a, globals[g].s, 2) == 0 && a[2]) {
				val = a[2] == '=' ? a + 3 : a + 2;
				break;
			}
		}
		if (g == NGLOBALS) {
			if (out == 0 && a[0] != '-')
				for (size_t c = 0; c < NCOMMANDS; c++)
					if (strcmp(a, commands[c].name) == 0)
						sub = &commands[c];
			argv[out++] = argv[i];
			continue;
		}
		if (strcmp(globals[g].l, "--help") == 0) {
			argv[out++] = argv[i];
			continue;
		}
		if (globals[g].arg && val == NULL) {
			if (i + 1 >= argc) {
				log_eprintf("error: flag needs an argument: %s\n", a);
				return -1;
			}
			val = argv[++i];
		}
		set_global(o, g, val);
	}
	argv[out] = NULL;
	return out;
}

int main(int argc, char **argv)
{
	struct kvcon_opts *o = opts_global();
	int n = parse_globals(argc - 1, argv + 1, o);
	if (n < 0)
		return EXIT_USAGE;
	engine_cli_config_hosts(o);
	char **args = argv + 1;
	if (n > 0 && (strcmp(args[0], "-h") == 0 || strcmp(args[0], "--help") == 0)) {
		usage(stdout);
		return EXIT_OK;
	}
	if (n == 0)
		return ui_main();
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (strcmp(args[0], commands[i].name) == 0)
			return commands[i].fn(n, args);
	log_eprintf("error: unknown command \"%s\" for \"kvcon\"\nRun 'kvcon --help' for usage.\n", args[0]);
	return EXIT_USAGE;
}
