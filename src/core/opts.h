/* Global command-line options, accepted anywhere on the command line (as kubectl and virsh do), and the
 * exit codes. main.c strips the global options before a subcommand parses its own. */
#ifndef KVCON_CORE_OPTS_H
#define KVCON_CORE_OPTS_H

#include <stdbool.h>

struct kvcon_opts {
	char *kubeconfig;   /* --kubeconfig FILE */
	char *context;      /* --context NAME: the kube context (core/connect.c splits the engine's name out) */
	bool engine_ctx;    /* --context named the local engine ("engine" or this host's name) */
	char *ns;           /* -n/--namespace NS */
	bool all_ns;        /* -A/--all-namespaces */
	char **uris;        /* -c/--connect URI (repeatable): engine hosts */
	int nuris;
	bool uris_config;   /* uris are the config file's engine hosts (what the engine is), not -c (which selects it) */
	bool readonly;      /* --readonly */
	char *theme;        /* --theme NAME */
	char *log;          /* --log-file FILE */
	int verbose;        /* -v (repeatable) */
	bool no_engine;     /* --no-engine: never open the embedded default */
	char *source;       /* --source NAME: the context or engine host a verb acts on */
	bool engine_only;   /* `kvcon engine VERB`: names resolve on the engine hosts only */
};

/* The options parsed by main (defaults zero). */
struct kvcon_opts *opts_global(void);

/* Exit codes shared by every subcommand. */
/* Usage errors exit 1 as kubectl, virtctl and virsh do. */
enum { EXIT_OK = 0, EXIT_API = 1, EXIT_USAGE = 1, EXIT_STALLED = 3 };

#endif
