/* kargs: kubectl's option forms over a table of options. */
#include "core/kargs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void karg_init(struct karg *k, int argc, char **argv, const struct karg_opt *opts)
{
	memset(k, 0, sizeof *k);
	k->argc = argc;
	k->argv = argv;
	k->opts = opts;
	k->i = 1;
}

static const struct karg_opt *find_long(const struct karg_opt *opts, const char *name, size_t len)
{
	for (const struct karg_opt *o = opts; o->long_name || o->short_name; o++)
		if (o->long_name && strlen(o->long_name) == len && strncmp(o->long_name, name, len) == 0)
			return o;
	return NULL;
}

static const struct karg_opt *find_short(const struct karg_opt *opts, char c)
{
	for (const struct karg_opt *o = opts; o->long_name || o->short_name; o++)
		if (o->short_name == c)
			return o;
	return NULL;
}

/* One short option at s (after '-' or inside a group); sets *rest to the flags that follow it. */
static int short_opt(struct karg *k, const char *s, const char **rest, bool strict)
{
	const struct karg_opt *o = find_short(k->opts, s[0]);
	snprintf(k->err, sizeof k->err, "unknown shorthand flag: '%c' in -%s", s[0], s);
	if (o == NULL)
		return strict ? KARG_ERR : KARG_POS;
	static char name[3] = "-x";
	name[1] = s[0];
	k->name = name;
	*rest = NULL;
	if (o->has_arg == KARG_FLAG) {
		if (s[1] == '=') {
			k->val = s + 2;
			if (strcmp(k->val, "true") != 0 && strcmp(k->val, "false") != 0) {
				snprintf(k->err, sizeof k->err, "invalid argument \"%.60s\" for \"-%c\": want true or false",
					 k->val, s[0]);
				return KARG_ERR;
			}
		} else {
			k->val = "true";
			if (s[1])
				*rest = s + 1;
		}
		return o->id;
	}
	if (s[1] == '=')
		k->val = s + 2;
	else if (s[1])
		k->val = s + 1;
	else if (k->i < k->argc)
		k->val = k->argv[k->i++];
	else {
		snprintf(k->err, sizeof k->err, "flag needs an argument: '%c' in -%c", s[0], s[0]);
		return KARG_ERR;
	}
	return o->id;
}

int karg_next(struct karg *k)
{
	k->err[0] = '\0';
	if (k->rest) {
		const char *s = k->rest;
		return short_opt(k, s, &k->rest, true);
	}
	if (k->i >= k->argc)
		return KARG_END;
	const char *a = k->argv[k->i++];
	k->val = a;
	if (k->dashdash || a[0] != '-' || a[1] == '\0')
		return KARG_POS;
	if (strcmp(a, "--") == 0) {
		k->dashdash = true;
		return karg_next(k);
	}
	if (a[1] == '-') {
		const char *name = a + 2, *eq = strchr(name, '=');
		size_t len = eq ? (size_t)(eq - name) : strlen(name);
		const struct karg_opt *o = find_long(k->opts, name, len);
		if (o == NULL) {
			snprintf(k->err, sizeof k->err, "unknown flag: --%.*s", (int)(len > 80 ? 80 : len), name);
			return KARG_ERR;
		}
		k->name = a;
		if (o->has_arg == KARG_OPTIONAL) {
			k->val = eq ? eq + 1 : "";
		} else if (o->has_arg == KARG_FLAG) {
			k->val = eq ? eq + 1 : "true";
			if (strcmp(k->val, "true") != 0 && strcmp(k->val, "false") != 0) {
				snprintf(k->err, sizeof k->err, "invalid argument \"%.60s\" for \"--%s\": want true or false",
					 k->val, o->long_name);
				return KARG_ERR;
			}
		} else if (eq) {
			k->val = eq + 1;
		} else if (k->i < k->argc) {
			k->val = k->argv[k->i++];
		} else {
			snprintf(k->err, sizeof k->err, "flag needs an argument: --%s", o->long_name);
			return KARG_ERR;
		}
		return o->id;
	}
	return short_opt(k, a + 1, &k->rest, true);
}

int karg_duration(const char *s, long unit_ms, long *ms)
{
	const double max = 10.0 * 365 * 86400 * 1000;
	char *end;
	if (s == NULL || *s == '\0' || *s == '-' || *s == '+')
		return -1;
	double v = strtod(s, &end), total = 0;
	if (end == s)
		return -1;
	if (*end == '\0') { /* a bare number: the flag's unit */
		total = v * (double)unit_ms;
	} else {
		while (*s) {
			v = strtod(s, &end);
			if (end == s || v < 0 || *s == '-' || *s == '+')
				return -1;
			s = end;
			double mul;
			if (strncmp(s, "ms", 2) == 0)
				mul = 1, s += 2;
			else if (*s == 'h')
				mul = 3600000, s++;
			else if (*s == 'm')
				mul = 60000, s++;
			else if (*s == 's')
				mul = 1000, s++;
			else
				return -1;
			total += v * mul;
		}
	}
	if (!(total >= 0 && total <= max))
		return -1;
	*ms = (long)(total + 0.5);
	return 0;
}

int karg_match_one(const struct karg_opt *opts, int argc, char **argv, int *i, const char **val, char *err,
		   int errlen)
{
	const char *a = argv[*i];
	if (a[0] != '-' || a[1] == '\0' || strcmp(a, "--") == 0)
		return KARG_POS;
	const struct karg_opt *o;
	const char *inl = NULL;
	if (a[1] == '-') {
		const char *name = a + 2, *eq = strchr(name, '=');
		o = find_long(opts, name, eq ? (size_t)(eq - name) : strlen(name));
		if (eq)
			inl = eq + 1;
	} else {
		o = find_short(opts, a[1]);
		if (o && a[2]) {
			if (o->has_arg == KARG_FLAG)
				return KARG_POS; /* a group of flags: the command's own parser takes it */
			inl = a[2] == '=' ? a + 3 : a + 2;
		}
	}
	if (o == NULL)
		return KARG_POS;
	if (o->has_arg == KARG_FLAG) {
		*val = inl ? inl : "true";
		(*i)++;
		return o->id;
	}
	if (inl) {
		*val = inl;
		(*i)++;
		return o->id;
	}
	if (*i + 1 >= argc) {
		snprintf(err, (size_t)errlen, "flag needs an argument: %s", a);
		return KARG_ERR;
	}
	*val = argv[*i + 1];
	*i += 2;
	return o->id;
}
