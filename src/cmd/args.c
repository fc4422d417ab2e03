/* args: the one flag parser of the command table (see args.h). */
#include "cmd/args.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/kargs.h"
#include "core/log.h"
#include "core/util.h"
#include "core/xmalloc.h"

#define ARGS_MAX_FLAGS 32

enum { ID_HELP = ARGS_MAX_FLAGS };

static const char *unit_name(long unit_ms)
{
	return unit_ms == 60000 ? "minutes" : unit_ms == 3600000 ? "hours" : unit_ms == 1 ? "milliseconds" : "seconds";
}

/* The value of f as given (checked by type) into it; -1 after printing why. */
static int check(const struct cmd_flag *f, const char *val, struct args_item *it)
{
	it->f = f;
	it->val = val;
	if (f->type == CMD_FLAG_INT) {
		char *end;
		long v = strtol(val, &end, 10);
		if (*val == '\0' || *end || v < 0) {
			char *e = util_escape_display(val);
			log_eprintf("error: invalid argument \"%s\" for \"%s\": %s takes a whole number\n", e, f->l, f->l);
			free(e);
			return -1;
		}
		it->num = v;
	} else if (f->type == CMD_FLAG_DURATION) {
		long unit = f->unit_ms > 0 ? f->unit_ms : 1000;
		if ((*val == '\0' || strcmp(val, "true") == 0) && f->arg && f->arg[0] == '[') {
			it->num = -1; /* --wait alone: the verb's default */
		} else if (karg_duration(val, unit, &it->num) < 0) {
			log_eprintf("error: %s takes %s (5), or a duration with its unit (30s, 2m, 1h)\n", f->l,
				    unit_name(unit));
			return -1;
		}
	}
	return 0;
}

int args_parse(const struct cmd_entry *e, int argc, char **argv, struct args *a)
{
	memset(a, 0, sizeof *a);
	a->e = e;
	a->items = xcalloc((size_t)argc + 1, sizeof *a->items);
	a->pos = xcalloc((size_t)argc + 1, sizeof *a->pos);
	struct karg_opt opts[ARGS_MAX_FLAGS + 2];
	int n = 0;
	for (const struct cmd_flag *f = e->flags; f && f->l && n < ARGS_MAX_FLAGS; f++, n++)
		opts[n] = (struct karg_opt){ f->s ? f->s[1] : 0, f->l + 2,
					     f->arg == NULL ? KARG_FLAG : f->arg[0] == '[' ? KARG_OPTIONAL : KARG_VALUE, n };
	opts[n++] = (struct karg_opt){ 'h', "help", KARG_FLAG, ID_HELP };
	opts[n] = (struct karg_opt){ 0, NULL, 0, 0 };
	struct karg k;
	karg_init(&k, argc, argv, opts);
	int id;
	while ((id = karg_next(&k)) != KARG_END) {
		if (id == KARG_ERR) {
			log_eprintf("error: %s\nSee 'kvcon %s --help' for usage.\n", k.err, e->name);
			return ARGS_ERR;
		}
		if (id == KARG_POS) {
			a->pos[a->npos++] = k.val;
			continue;
		}
		if (id == ID_HELP) {
			cmd_usage(e, stdout);
			return ARGS_HELP;
		}
		const struct cmd_flag *f = &e->flags[id];
		struct args_item *it = &a->items[a->nitems++];
		if ((f->arg == NULL || f->arg[0] == '[') && strcmp(k.val, "false") == 0) {
			*it = (struct args_item){ .f = f, .val = k.val, .num = -1, .off = true }; /* --flag=false */
			continue;
		}
		if (check(f, f->arg ? k.val : "", it) < 0)
			return ARGS_ERR;
	}
	return ARGS_OK;
}

static const struct cmd_entry none = { "", NULL, "", "", NULL, CMD_OP_NONE, NULL, NULL, false, true, NULL, NULL };

int args_parse_verb(int argc, char **argv, struct args *a)
{
	const struct cmd_entry *e = cmd_find(argv[0]);
	return args_parse(e ? e : &none, argc, argv, a);
}

int args_parse_sub(const char *parent, int argc, char **argv, struct args *a)
{
	const struct cmd_entry *p = cmd_find(parent), *e = p ? cmd_child(p, argv[0]) : NULL;
	return args_parse(e ? e : &none, argc, argv, a);
}

void args_free(struct args *a)
{
	free(a->items);
	free(a->pos);
	a->items = NULL;
	a->pos = NULL;
	a->nitems = a->npos = 0;
}

int args_usage_error(const struct args *a, const char *fmt, ...)
{
	char why[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof why, fmt, ap);
	va_end(ap);
	log_eprintf("error: %s\nSee 'kvcon %s --help' for usage.\n", why, a->e && a->e->name[0] ? a->e->name : "");
	return ARGS_ERR;
}

/* The last item of flag l, NULL when none or when the last says --l=false. */
static const struct args_item *last(const struct args *a, const char *l)
{
	for (int i = a->nitems - 1; i >= 0; i--)
		if (strcmp(a->items[i].f->l, l) == 0)
			return a->items[i].off ? NULL : &a->items[i];
	return NULL;
}

bool args_off(const struct args *a, const char *l)
{
	for (int i = a->nitems - 1; i >= 0; i--)
		if (strcmp(a->items[i].f->l, l) == 0)
			return a->items[i].off;
	return false;
}

const char *args_get(const struct args *a, const char *l)
{
	const struct args_item *it = last(a, l);
	return it ? it->val : NULL;
}

bool args_has(const struct args *a, const char *l)
{
	return last(a, l) != NULL;
}

bool args_bool(const struct args *a, const char *l)
{
	return last(a, l) != NULL;
}

long args_num(const struct args *a, const char *l, long def)
{
	const struct args_item *it = last(a, l);
	return it && it->num >= 0 ? it->num : def;
}
