/* kvcon: global options and dispatch through the command table (src/cmd/cmd.c); no command code here. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "cmd/cmd_engine.h"
#include "core/config.h"
#include "core/kargs.h"
#include "core/log.h"
#include "core/opts.h"
#include "core/util.h"
#include "core/xmalloc.h"
#include "ui/ui.h"

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

/* Removes global options from argv (anywhere, "--" stops), leaving the subcommand and its own arguments; each is
 * applied by its row of cmd_globals (cmd/cmd.c). Returns the new argc, or -1 on a usage error. */
static int parse_globals(int argc, char **argv, struct kvcon_opts *o)
{
	struct karg_opt opts[32];
	int nopts = 0;
	for (const struct cmd_flag *g = cmd_globals; g->l && nopts < 31; g++, nopts++)
		opts[nopts] = (struct karg_opt){ g->s ? g->s[1] : 0, g->l + 2, g->arg ? KARG_VALUE : KARG_FLAG, nopts };
	opts[nopts] = (struct karg_opt){ 0, NULL, 0, 0 };
	int out = 0;
	const struct cmd_entry *sub = NULL; /* the subcommand, once seen */
	for (int i = 0; i < argc;) {
		const char *a = argv[i];
		if (strcmp(a, "--") == 0) {
			while (i < argc)
				argv[out++] = argv[i++];
			break;
		}
		if (own_option(sub, a)) {
			argv[out++] = argv[i++];
			continue;
		}
		if (verbosity(argc, argv, &i, o)) {
			i++;
			continue;
		}
		const char *val = NULL, *err = NULL;
		char why[160];
		int id = karg_match_one(opts, argc, argv, &i, &val, why, sizeof why);
		if (id == KARG_ERR) {
			log_eprintf("error: %s\n", why);
			return -1;
		}
		if (id == KARG_POS) {
			if (out == 0 && a[0] != '-')
				sub = cmd_find(a);
			argv[out++] = argv[i++];
			continue;
		}
		const struct cmd_flag *g = &cmd_globals[id];
		if (g->becomes) {
			argv[out++] = (char *)g->becomes;
			continue;
		}
		if (g->arg == NULL && strcmp(val, "true") != 0) {
			if (strcmp(val, "false") == 0)
				continue; /* --readonly=false: as if not given */
			log_eprintf("error: invalid argument \"%s\" for \"%s\": want true or false\n", val, g->l);
			return -1;
		}
		if (g->set(o, g, g->arg ? val : NULL, &err) < 0) {
			log_eprintf("error: %s\n", err);
			return -1;
		}
	}
	argv[out] = NULL;
	return out;
}

/* The config file's `readonly = true` (the last readonly line wins; true, yes or 1). */
static bool config_readonly(void)
{
	struct config *cfg = config_load(NULL); /* it logs a bad line */
	bool ro = false;
	for (size_t i = 0; i < config_count(cfg); i++) {
		const struct config_entry *c = config_at(cfg, i);
		if (strcmp(c->key, "readonly") == 0)
			ro = strcasecmp(c->value, "true") == 0 || strcmp(c->value, "1") == 0 || strcasecmp(c->value, "yes") == 0;
	}
	config_free(cfg);
	return ro;
}

/* GnuTLS's documented opt-out of its implicit initialisation (gnutls.h: GNUTLS_SKIP_GLOBAL_INIT). kvcon never calls
 * GnuTLS: libcurl's TLS is OpenSSL's, and GnuTLS is mapped only because libcurl's LDAP and RTMP libraries link it
 * (each initialises it itself before using it). Its constructor's work (every algorithm registered, the PKIX ASN.1
 * tables parsed) was 1.2 MiB of every run's RSS (issue 28). */
int _gnutls_global_init_skip(void);
int _gnutls_global_init_skip(void)
{
	return 1;
}

int main(int argc, char **argv)
{
	struct kvcon_opts *o = opts_global();
	/* completion sees the words as typed (a trailing "-n" is what is being completed, not an error) */
	if (argc > 1 && strcmp(argv[1], "__complete") == 0)
		return cmd_find("__complete")->fn(argc - 1, argv + 1);
	int n = parse_globals(argc - 1, argv + 1, o);
	if (n < 0)
		return EXIT_USAGE;
	if (o->log) {
		/* --log-file is checked once, here, for every command: a path that holds what kvcon may not write into
		 * (another user's file, a symlink, a FIFO) is an error before anything runs, where each command's
		 * log_open would go on without a log */
		char why[UTIL_WHY_LEN];
		int fd = util_open_private(o->log, O_APPEND, false, why);
		if (fd < 0) {
			log_eprintf("error: %s: %s\n", o->log, why);
			return EXIT_USAGE;
		}
		close(fd);
	}
	char **args = argv + 1;
	if (n > 0 && (strcmp(args[0], "-h") == 0 || strcmp(args[0], "--help") == 0)) {
		cmd_usage_all(stdout);
		return EXIT_OK;
	}
	/* before anything reads the config (engine hosts) or the state: both another user may have written */
	char *terr = NULL;
	if (config_trust_check(&terr) < 0) {
		log_eprintf("error: %s\n", terr);
		free(terr);
		return EXIT_API;
	}
	engine_cli_config_hosts(o);
	if (n == 0)
		return ui_main();
	const struct cmd_entry *e = cmd_find(args[0]);
	if (e == NULL) {
		/* kubectl's words, and its suggestion of the verbs close to the one typed */
		log_eprintf("error: unknown command \"%s\" for \"kvcon\"\n", args[0]);
		const char *close[4];
		size_t nc = cmd_suggest(args[0], close, 4);
		cmd_print_suggestions(close, nc);
		if (nc == 0)
			log_eprintf("Run 'kvcon --help' for usage.\n");
		return EXIT_USAGE;
	}
	/* readonly means the same from the flag and the config file, for every verb as for the dashboard; the engine
	 * service itself is not a client (it serves clients that each check their own) */
	if (!o->readonly && !(strcmp(e->name, "engine") == 0 && n > 1 && strcmp(args[1], "serve") == 0))
		o->readonly = config_readonly();
	if (!e->own_help)
		for (int i = 1; i < n && strcmp(args[i], "--") != 0; i++)
			if (strcmp(args[i], "-h") == 0 || strcmp(args[i], "--help") == 0) {
				cmd_usage(e, stdout);
				return EXIT_OK;
			}
	return e->fn(n, args);
}
