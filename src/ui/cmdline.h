/* The `:` command line: a const table of commands (:vm, :vmi, :pod, :events, :ns, :ctx, :q, :help) with
 * completion of command names, namespaces, contexts and VM names. */
#ifndef KVCON_UI_CMDLINE_H
#define KVCON_UI_CMDLINE_H

#include <stddef.h>

struct cmdline_entry {
	const char *name;
	const char *aliases; /* space-separated; a kind's view takes its names from the registry (cmdline_aliases) */
	const char *args;    /* synopsis of the argument, "" when none */
	const char *help;
	int (*fn)(const char *arg); /* 0 ok, -1 (message already shown) */
	/* completes the argument: i-th candidate for prefix, NULL when no more */
	const char *(*complete)(const char *prefix, int i);
};

extern const struct cmdline_entry cmdline_cmds[];
extern const size_t cmdline_ncmds;

/* Runs a `:` command line ("vm", "ns default", ...). Returns 0, or -1 with a message shown. */
int cmdline_run(const char *line);
/* Prompt callbacks (ui_prompt). */
void cmdline_done(void *arg, const char *text);
const char *cmdline_complete(void *arg, const char *prefix, int i);

/* ---- test seams: exported for tests/ only, not to be called by kvcon itself (tests/check-exports.sh) ---- */
/* The row's other names: a kind's (model/registry.h: short names, singular, plural, kvcon's aliases) for the rows
 * that list one, else its aliases; space-separated, NULL when none. The result may live until the next call. */
const char *cmdline_aliases(const struct cmdline_entry *c);

#endif
