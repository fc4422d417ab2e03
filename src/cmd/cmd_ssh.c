/* kvcon ssh and scp (see cmd_ssh.h): the client's argument vector, then exec. */
#include "cmd/cmd_ssh.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/args.h"
#include "core/buf.h"
#include "core/log.h"
#include "core/opts.h"
#include "core/xmalloc.h"
#include "model/pfspec.h"
#include "model/registry.h"

#define SSH_MAX_OPTS 32

struct ssh_args {
	const char *identity, *user, *command, *known;
	const char *opts[SSH_MAX_OPTS];
	int nopts;
	int port;
	bool recursive, preserve;
	const char *pos[3];
	int npos;
};

/* " 's'" (no space first when first): single-quoted for the shell ssh runs ProxyCommand with, '%' doubled for
 * ssh's own expansion */
static void shq(struct buf *b, const char *s, bool first)
{
	buf_add(b, first ? "'" : " '", first ? 1 : 2);
	for (; *s; s++) {
		if (*s == '\'')
			buf_add(b, "'\\''", 4);
		else if (*s == '%')
			buf_add(b, "%%", 2);
		else
			buf_add(b, s, 1);
	}
	buf_add(b, "'", 1);
}

/* "ProxyCommand=KVCON [--kubeconfig F] [--context C] [--source S] [-c URI]... port-forward --stdio=true KIND/NAME.NS
 * PORT": the global options that choose the source travel along. Caller frees. */
static char *proxy_command(const struct pf_target *t, const char *ns, int port)
{
	struct buf b;
	buf_init(&b);
	buf_printf(&b, "ProxyCommand=");
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	self[n > 0 ? n : 0] = '\0';
	shq(&b, n > 0 ? self : "kvcon", true);
	const struct kvcon_opts *g = opts_global();
	if (g->kubeconfig) {
		buf_printf(&b, " --kubeconfig");
		shq(&b, g->kubeconfig, false);
	}
	if (g->context) {
		buf_printf(&b, " --context");
		shq(&b, g->context, false);
	}
	if (g->source) {
		buf_printf(&b, " --source");
		shq(&b, g->source, false);
	}
	for (int i = 0; i < g->nuris; i++) { /* engine hosts: the proxy looks the VM up where this kvcon does */
		buf_printf(&b, " -c");
		shq(&b, g->uris[i], false);
	}
	if (g->no_engine)
		buf_printf(&b, " --no-engine");
	if (g->log) {
		buf_printf(&b, " --log-file");
		shq(&b, g->log, false);
	}
	/* the target's parts are DNS names (model/pfspec.c): nothing a shell would read */
	buf_printf(&b, " port-forward --stdio=true %s/%s.%s %d", t->kind == KIND_VM ? "vm" : "vmi", t->name, ns, port);
	buf_add(&b, "", 1);
	return b.data;
}

/* 0, 1 (help printed), or -1 (said why); the flags are the ssh and scp rows' (cmd/cmd.c) */
static int parse(int argc, char **argv, bool scp, struct ssh_args *a)
{
	memset(a, 0, sizeof *a);
	struct args g;
	int p = args_parse_verb(argc, argv, &g);
	if (p != ARGS_OK) {
		args_free(&g);
		return p == ARGS_HELP ? 1 : -1;
	}
	a->identity = args_get(&g, "--identity-file");
	a->user = args_get(&g, "--username");
	a->command = scp ? NULL : args_get(&g, "--command");
	a->known = args_get(&g, "--known-hosts");
	a->recursive = scp && args_bool(&g, "--recursive");
	a->preserve = scp && args_bool(&g, "--preserve");
	long port = args_num(&g, "--port", 22);
	for (int i = 0; i < g.nitems && p == ARGS_OK; i++) {
		if (strcmp(g.items[i].f->l, "--local-ssh-opts") != 0)
			continue;
		if (a->nopts == SSH_MAX_OPTS)
			p = args_usage_error(&g, "at most %d --local-ssh-opts", SSH_MAX_OPTS);
		else
			a->opts[a->nopts++] = g.items[i].val;
	}
	for (int i = 0; i < g.npos && i < 2; i++)
		a->pos[a->npos++] = g.pos[i];
	if (p != ARGS_OK)
		;
	else if (args_off(&g, "--local-ssh"))
		p = args_usage_error(&g, "kvcon has no built-in ssh client: only the local one (--local-ssh)");
	else if (port < 1 || port > 65535)
		p = args_usage_error(&g, "invalid port \"%ld\"", port);
	else if (g.npos != (scp ? 2 : 1))
		p = args_usage_error(&g, "accepts %d arg(s), received %d", scp ? 2 : 1, g.npos);
	args_free(&g);
	if (p != ARGS_OK)
		return -1;
	a->port = (int)port;
	char err[160];
	if (a->user) {
		struct pf_target probe;
		char tmp[128];
		snprintf(tmp, sizeof tmp, "%s@vmi/x", a->user);
		if (pf_target_parse(tmp, true, &probe, err, sizeof err) < 0) {
			log_eprintf("error: --username: %s\n", err);
			return -1;
		}
	}
	return 0;
}

/* "[USER@]KIND.NAME.NS": the host name ssh sees (and keeps the key under) */
static void host_name(struct buf *b, const struct pf_target *t, const char *user, const char *ns)
{
	const char *u = t->user[0] ? t->user : user;
	buf_printf(b, "%s%s%s.%s.%s", u ? u : "", u ? "@" : "", t->kind == KIND_VM ? "vm" : "vmi", t->name, ns);
}

static int run(const char *client, bool scp, const struct ssh_args *a, const struct pf_target *t, const char *ns,
	       const char *const *tail, int ntail)
{
	const char *argv[16 + 2 * SSH_MAX_OPTS];
	int n = 0;
	char *proxy = proxy_command(t, ns, a->port);
	char *known = a->known ? xasprintf("UserKnownHostsFile=%s", a->known) : NULL;
	argv[n++] = client;
	argv[n++] = "-o";
	argv[n++] = proxy;
	for (int i = 0; i < a->nopts; i++)
		argv[n++] = a->opts[i];
	if (a->identity) {
		argv[n++] = "-i";
		argv[n++] = a->identity;
	}
	if (known) {
		argv[n++] = "-o";
		argv[n++] = known;
	}
	if (scp && a->recursive)
		argv[n++] = "-r";
	if (scp && a->preserve)
		argv[n++] = "-p";
	if (!scp)
		argv[n++] = "--";
	for (int i = 0; i < ntail; i++)
		argv[n++] = tail[i];
	argv[n] = NULL;
	if (opts_global()->verbose > 0) {
		struct buf b;
		buf_init(&b);
		for (int i = 0; i < n; i++)
			buf_printf(&b, "%s%s", i ? " " : "", argv[i]);
		buf_add(&b, "", 1);
		log_eprintf("running: %s\n", b.data);
		buf_free(&b);
	}
	fflush(stdout);
	execvp(client, (char *const *)argv);
	log_eprintf("error: cannot run %s: %s\n", client, strerror(errno));
	free(proxy);
	free(known);
	return EXIT_API;
}

static const char *ns_of(const struct pf_target *t)
{
	const struct kvcon_opts *g = opts_global();
	return t->ns[0] ? t->ns : g->ns ? g->ns : "default";
}

int cmd_ssh(int argc, char **argv)
{
	struct ssh_args a;
	int p = parse(argc, argv, false, &a);
	if (p != 0)
		return p > 0 ? EXIT_OK : EXIT_USAGE;
	struct pf_target t;
	char err[160];
	if (pf_target_parse(a.pos[0], true, &t, err, sizeof err) < 0) {
		log_eprintf("error: %s\n", err);
		return EXIT_USAGE;
	}
	const char *ns = ns_of(&t);
	struct buf host;
	buf_init(&host);
	host_name(&host, &t, a.user, ns);
	buf_add(&host, "", 1);
	const char *tail[2] = { host.data, a.command };
	int rc = run("ssh", false, &a, &t, ns, tail, a.command ? 2 : 1);
	buf_free(&host);
	return rc;
}

int cmd_scp(int argc, char **argv)
{
	struct ssh_args a;
	int p = parse(argc, argv, true, &a);
	if (p != 0)
		return p > 0 ? EXIT_OK : EXIT_USAGE;
	struct pf_target t, ti;
	const char *path = NULL, *pi;
	int remote = -1;
	char err[160];
	for (int i = 0; i < 2; i++) {
		int r = pf_scp_operand(a.pos[i], &ti, &pi, err, sizeof err);
		if (r < 0) {
			log_eprintf("error: %s\n", err);
			return EXIT_USAGE;
		}
		if (r == 1) {
			if (remote >= 0) {
				log_eprintf("error: copying from a guest to a guest is not supported\n");
				return EXIT_USAGE;
			}
			remote = i;
			t = ti;
			path = pi;
		}
	}
	if (remote < 0) {
		log_eprintf("error: one of SRC and DST must be a guest: [USER@]TYPE/NAME[.NS]:PATH\n");
		return EXIT_USAGE;
	}
	const char *ns = ns_of(&t);
	struct buf host;
	buf_init(&host);
	host_name(&host, &t, a.user, ns);
	buf_printf(&host, ":%s", path);
	buf_add(&host, "", 1);
	const char *tail[2];
	tail[remote] = host.data;
	tail[1 - remote] = a.pos[1 - remote];
	int rc = run("scp", true, &a, &t, ns, tail, 2);
	buf_free(&host);
	return rc;
}
