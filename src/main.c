/* kvcon: argument parsing and subcommand dispatch only. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "console/concmd.h"
#include "console/vnccmd.h"
#include "core/log.h"
#include "core/opts.h"
#include "core/xmalloc.h"
#include "engine/cli.h"
#include "kube/cmd_diagnose.h"
#include "kube/cmd_get.h"
#include "ui/ui.h"

#ifndef KVCON_VERSION
#define KVCON_VERSION "0.1.0"
#endif

static int cmd_version(int argc, char **argv);
static int cmd_help(int argc, char **argv);

/* Subcommands: one row each. */
static const struct cmd_entry commands[] = {
	{ "version", cmd_version, "", "print kvcon's version" },
	{ "get", kube_cmd_get, "vm|vmi|pod|event [-l SEL] [-o FMT] [-w] [--watch-for S] [--timeout S]",
	  "list KubeVirt objects like kubectl get (-o table|wide|json|name)" },
	{ "help", cmd_help, "", "show this help" },
	{ "console", concmd_main, "NS/NAME [--timeout S] [--log FILE]",
	  "the guest's serial console full-screen (Ctrl+] exits)" },
	{ "vnc", vnccmd_main, "TARGET [--screenshot F.png|--proxy-only]", "the guest display in the terminal" },
	{ "diagnose", kube_cmd_diagnose, "NS/NAME [-o text|json]", "walk a VM's four boundaries; exit 3 if one stalled" },
	{ "lineage", kube_cmd_lineage, "NS/NAME [-o text|json]", "the executions (VMI, launchers, nodes) of a VM" },
	{ "start", kube_cmd_action, "NS/NAME [--wait[=S]]", "start a VM" },
	{ "stop", kube_cmd_action, "NS/NAME [--force] [--grace-period N] [--wait[=S]]", "stop a VM" },
	{ "restart", kube_cmd_action, "NS/NAME [--force] [--grace-period N] [--wait[=S]]", "restart a VM" },
	{ "pause", kube_cmd_action, "NS/NAME [--wait[=S]]", "pause a VM's guest" },
	{ "unpause", kube_cmd_action, "NS/NAME [--wait[=S]]", "unpause a VM's guest" },
	{ "migrate", kube_cmd_action, "NS/NAME [--to NODE] [--abort] [--wait[=S]]", "live-migrate a VM" },
	{ "engine", engine_cmd, "VERB ...", "the local libvirt engine (apply, get, start, stop, console, ...)" },
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
	{ "-v", "--verbose", 0, "           more logging (repeatable)" },
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
	(void)argc;
	(void)argv;
	printf("kvcon %s\n", KVCON_VERSION);
	return EXIT_OK;
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
}

/* Removes global options from argv (anywhere, "--" stops), leaving the subcommand and its own arguments.
 * Returns the new argc, or -1 on a usage error. */
static int parse_globals(int argc, char **argv, struct kvcon_opts *o)
{
	int out = 0;
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--") == 0) {
			while (i < argc)
				argv[out++] = argv[i++];
			break;
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
		}
		if (g == NGLOBALS) {
			argv[out++] = argv[i];
			continue;
		}
		if (strcmp(globals[g].l, "--help") == 0) {
			argv[out++] = argv[i];
			continue;
		}
		if (globals[g].arg && val == NULL) {
			if (i + 1 >= argc) {
				log_eprintf("kvcon: %s needs a value\n", a);
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
	if (n < 0) {
		usage(stderr);
		return EXIT_USAGE;
	}
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
	log_eprintf("kvcon: unknown command '%s'\n", args[0]);
	usage(stderr);
	return EXIT_USAGE;
}
