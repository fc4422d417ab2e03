/* kargs: the lexer of kvcon's one flag parser (cmd/args.c, over the command table's rows; main's global options
 * through karg_match_one), taking the forms kubectl (pflag) takes:
 *     -o json   -o=json   -ojson   --output json   --output=json   -nNS   -Aw (combined flags)
 *     --flag   --flag=true|false   --   (ends the options)
 * args.c describes a verb's options in a table and calls karg_next until KARG_END:
 *     struct karg k; karg_init(&k, argc, argv, opts);  // argv[0] is skipped
 *     while ((id = karg_next(&k)) != KARG_END) { ...k.val...; KARG_POS: k.val is a positional argument }
 * KARG_ERR leaves the message (caller does not free) in k.err. No verb calls it directly. */
#ifndef KVCON_CORE_KARGS_H
#define KVCON_CORE_KARGS_H

#include <stdbool.h>

enum { KARG_FLAG = 0, KARG_VALUE = 1, KARG_OPTIONAL = 2 /* --flag or --flag=VALUE (val "" without) */ };
enum { KARG_END = -1, KARG_POS = -2, KARG_ERR = -3 };

struct karg_opt {
	char short_name;       /* 0: none */
	const char *long_name; /* without "--"; NULL: none (a table ends with both unset) */
	int has_arg;           /* KARG_FLAG or KARG_VALUE */
	int id;                /* >= 0, returned by karg_next */
};

struct karg {
	int argc;
	char **argv;
	const struct karg_opt *opts;
	int i;             /* next argv index */
	const char *rest;  /* the rest of a combined short-flag group ("-Aw": "w") */
	bool dashdash;     /* after "--": everything is positional */
	const char *val;   /* the value of the option (a flag: "true"/"false"), or the positional argument */
	const char *name;  /* the option as written ("-o", "--output") for messages */
	char err[160];
};

void karg_init(struct karg *k, int argc, char **argv, const struct karg_opt *opts);
int karg_next(struct karg *k);
/* The one duration type: Go's forms as kubectl and virtctl take them (30s, 2m, 1h30m, 1.5h, 500ms), or a bare
 * number counted in unit_ms (virtctl's unit for the flag: console --timeout counts minutes). 0 with *ms, or -1
 * (empty, negative, unknown unit, more than ten years). */
int karg_duration(const char *s, long unit_ms, long *ms);

/* Matches argv[*i] alone against opts without consuming anything it does not know (main's global options, which
 * may appear anywhere). Returns the option's id and advances *i past it and its value (*val), KARG_POS when
 * argv[*i] is not one of opts, or KARG_ERR with err filled (a missing value). */
int karg_match_one(const struct karg_opt *opts, int argc, char **argv, int *i, const char **val, char *err,
		   int errlen);

#endif
