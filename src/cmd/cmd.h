/* The command table: one row per verb (name, aliases, synopsis, flags, what its operands are, run function), as
 * tmux's cmd_entry. Dispatch (main.c), `--help`/`kvcon help VERB`, and shell completion (`kvcon completion
 * bash|zsh`, the hidden `kvcon __complete`) are all generated from it: adding a verb is adding a row. */
#ifndef KVCON_CMD_CMD_H
#define KVCON_CMD_CMD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

struct kvcon_opts;

/* What a flag's value is; the parser (cmd/args.c) checks it before the verb runs. */
enum cmd_flag_type {
	CMD_FLAG_AUTO,     /* a switch when arg is NULL, else a string */
	CMD_FLAG_INT,      /* a whole number, 0 or more */
	CMD_FLAG_DURATION, /* the one duration type (karg_duration): 30s, 2m, 1h30m, or a bare number in unit_ms */
};

/* One flag of a verb (or a global option): declared once, parsed once (cmd/args.c), rendered once (cmd_usage). */
struct cmd_flag {
	const char *s;    /* short form ("-o"), NULL when none */
	const char *l;    /* long form ("--output") */
	const char *arg;  /* the value's name ("FMT"); NULL: a switch; a leading '[' : optional, --l=V only */
	const char *help; /* one line */
	const char *values; /* completion: the values it takes, space-separated; NULL: none known */
	enum cmd_flag_type type;
	long unit_ms;     /* CMD_FLAG_DURATION: what a bare number counts (virtctl's unit where virtctl has the flag) */
	bool hidden;      /* parsed, not shown (a global option a verb takes in kubectl's grouped forms: get -Aw) */
	/* A global option (cmd_globals): how main applies its value to the options (val NULL for a switch), at off
	 * (offsetof a field of struct kvcon_opts) for the shared setters; 0, or -1 with *err set. */
	int (*set)(struct kvcon_opts *o, const struct cmd_flag *f, const char *val, const char **err);
	size_t off;
	const char *becomes; /* a global option main leaves on the line as this word (--version: the version verb) */
};

/* What a verb's operands are, for completion. */
enum cmd_operand {
	CMD_OP_NONE,
	CMD_OP_KIND_NAMES, /* get: KIND[,KIND] then names of that kind */
	CMD_OP_KIND_REF,   /* describe, wait: vm|vmi|pod then NS/NAME */
	CMD_OP_VM_REF,     /* NS/NAME of a VM */
	CMD_OP_TARGET,     /* console, vnc: NS/NAME of a VM (or a URL/socket) */
	CMD_OP_VERB,       /* help: a verb */
	CMD_OP_WORDS,      /* a fixed word list (cmd_entry.words) */
};

struct cmd_entry {
	const char *name;
	const char *alias;   /* another name, or NULL */
	const char *args;    /* the synopsis after the name */
	const char *summary; /* one line */
	const struct cmd_flag *flags; /* its own flags, ended by a zero row; NULL: none */
	enum cmd_operand operand;
	const char *words;   /* CMD_OP_WORDS: the words, space-separated */
	const char *own;     /* short options it takes itself that are also global ones ("-c": logs' container, not
			      * --connect), space-separated; NULL: none */
	bool own_help;       /* prints its own --help (engine: its sub-verbs) */
	bool hidden;         /* not in --help nor completion (__complete) */
	int (*fn)(int argc, char **argv); /* argv[0] is the verb's name; global options removed */
	const struct cmd_entry *children; /* sub-verbs (`kvcon engine VERB`): rows named "engine VERB", ended by a
					   * zero row; their fn gets argv[0] = VERB; NULL: none */
};

/* The global options (accepted anywhere on the line), ended by a zero row; each row's set applies it. */
extern const struct cmd_flag cmd_globals[];

/* The verb named (or aliased) name; NULL when there is none. */
const struct cmd_entry *cmd_find(const char *name);
/* The verbs close to a mistyped name (kubectl's "Did you mean this?") into out (at most max); how many. */
size_t cmd_suggest(const char *name, const char **out, size_t max);
/* kvcon --help. */
void cmd_usage_all(FILE *f);
/* kvcon VERB --help / kvcon help VERB (a verb with children: each child's synopsis and summary). */
void cmd_usage(const struct cmd_entry *e, FILE *f);
/* The child of e named word (its name after "PARENT "), NULL when none. */
const struct cmd_entry *cmd_child(const struct cmd_entry *e, const char *word);
/* kubectl's "\nDid you mean this?\n\tWORD\n..." on stderr after an error about a mistyped word; nothing when n is 0. */
void cmd_print_suggestions(const char *const *words, size_t n);

#endif
