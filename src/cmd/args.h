/* args: the one flag parser of the command table (tmux's args_parse): a verb's flags are its cmd_entry's rows
 * (cmd/cmd.c), parsed here in kubectl's forms (core/kargs.c: -o json, -ojson, --output=json, -fp, --) with their
 * values checked by type (numbers, the one duration type) before the verb runs; errors are "error: ..." and a
 * usage error exits 1. Every value points into argv or is a number; nothing is copied but the lists. */
#ifndef KVCON_CMD_ARGS_H
#define KVCON_CMD_ARGS_H

#include <stdbool.h>

#include "cmd/cmd.h"

struct args_item {
	const struct cmd_flag *f;
	const char *val;  /* as given ("" for a switch or an --flag=V flag given bare) */
	long num;         /* CMD_FLAG_INT: the number; CMD_FLAG_DURATION: milliseconds */
	bool off;         /* --flag=false (a switch, or an optional value): as if not given, but said */
};

struct args {
	const struct cmd_entry *e;
	struct args_item *items; /* every flag given, in order (--expect/--send steps keep theirs) */
	int nitems;
	const char **pos;        /* the operands */
	int npos;
};

enum { ARGS_OK = 0, ARGS_HELP = 1, ARGS_ERR = -1 };

/* Parses argv (argv[0]: the verb's name) against e's flags (and -h/--help). ARGS_OK; ARGS_HELP after printing
 * e's usage on stdout; ARGS_ERR after printing "error: ..." on stderr (the caller exits EXIT_USAGE). args_free
 * either way. */
int args_parse(const struct cmd_entry *e, int argc, char **argv, struct args *a);
/* The verb's own row for argv[0] (cmd_find), for args_parse. */
int args_parse_verb(int argc, char **argv, struct args *a);
/* The same for a sub-verb: the child row argv[0] of the verb parent (`kvcon engine VERB`). */
int args_parse_sub(const char *parent, int argc, char **argv, struct args *a);
void args_free(struct args *a);

/* "error: WHY\nSee 'kvcon VERB --help' for usage." on stderr (a verb's own check of its operands); ARGS_ERR. */
int args_usage_error(const struct args *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The last value given for the flag of long name l ("--timeout"): NULL when not given (or given =false). */
const char *args_get(const struct args *a, const char *l);
bool args_has(const struct args *a, const char *l);
/* A switch: given (and not =false). */
bool args_bool(const struct args *a, const char *l);
/* The flag was last given as --flag=false (kubectl delete's --wait=false, whose default is to wait). */
bool args_off(const struct args *a, const char *l);
/* A number or a duration (milliseconds): the last given, else def. */
long args_num(const struct args *a, const char *l, long def);

#endif
