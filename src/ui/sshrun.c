/* The dashboard's ssh key (see sshrun.h). */
#include "ui/sshrun.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/opts.h"
#include "core/util.h"
#include "core/xmalloc.h"
#include "model/registry.h"
#include "model/source.h"
#include "ui/screen.h"
#include "ui/ui.h"

#define SSH_WORDS 16

struct ask {
	struct source *src;
	char *ns, *name;
	bool vmi;
};

static struct ask *asking; /* ui_prompt has no free callback: the question lives until the next one */

static void ask_free(struct ask *a)
{
	if (a == NULL)
		return;
	free(a->ns);
	free(a->name);
	free(a);
}

static bool user_ok(const char *u)
{
	return *u && *u != '-' && strlen(u) <= 64 &&
	       strspn(u, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == strlen(u);
}

static void start(void *arg, const char *text)
{
	struct ask *a = arg;
	if (text == NULL || a == NULL)
		return;
	char *copy = xstrdup(text), *save = NULL, *words[SSH_WORDS];
	int nw = 0;
	for (char *w = strtok_r(copy, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
		if (nw == SSH_WORDS) {
			ui_error("ssh: at most %d words", SSH_WORDS);
			free(copy);
			return;
		}
		words[nw++] = w;
	}
	const char *user = "root";
	int first = 0;
	if (nw > 0 && words[0][0] != '-') {
		size_t n = strlen(words[0]);
		if (n > 1 && words[0][n - 1] == '@')
			words[0][n - 1] = '\0';
		user = words[first++];
	}
	if (!user_ok(user)) {
		char *e = util_escape_display(user);
		ui_error("ssh: \"%s\" is not a user name", e);
		free(e);
		free(copy);
		return;
	}
	/* this binary with the dashboard's connection options, the VM's source named when there are several */
	char self[PATH_MAX];
	ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
	if (sl <= 0) {
		ui_error("ssh: cannot find kvcon's own binary");
		free(copy);
		return;
	}
	self[sl] = '\0';
	const struct kvcon_opts *g = opts_global();
	char *argv[24 + SSH_WORDS + 16], *own[4] = { 0 };
	int n = 0;
	argv[n++] = self;
	if (g->kubeconfig)
		argv[n++] = "--kubeconfig", argv[n++] = g->kubeconfig;
	if (g->context)
		argv[n++] = "--context", argv[n++] = g->context;
	for (int i = 0; i < g->nuris && !g->uris_config && i < 8; i++)
		argv[n++] = "-c", argv[n++] = g->uris[i];
	if (g->no_engine)
		argv[n++] = "--no-engine";
	if (g->log)
		argv[n++] = "--log-file", argv[n++] = g->log;
	if (source_count() > 1 && a->src && a->src->name)
		argv[n++] = "--source", argv[n++] = a->src->name;
	argv[n++] = (char *)registry_guest_verb(GV_SSH)->name;
	/* the names are the store's: DNS labels, nothing a command line would read */
	argv[n++] = own[0] = xasprintf("%s@%s/%s.%s", user, a->vmi ? "vmi" : "vm", a->name, a->ns);
	for (int i = first; i < nw; i++)
		argv[n++] = words[i];
	argv[n] = NULL;
	char *err = NULL;
	int st = screen_run(argv, &err);
	if (st < 0)
		ui_error("ssh: %s", err ? err : "failed");
	else if (WIFEXITED(st) && WEXITSTATUS(st) != 0)
		ui_error("ssh into %s/%s ended with status %d", a->ns, a->name, WEXITSTATUS(st));
	else
		ui_message("ssh into %s/%s ended", a->ns, a->name);
	free(err);
	free(own[0]);
	free(copy);
}

void sshrun_prompt(const struct obj *vm)
{
	if (vm == NULL)
		return;
	ask_free(asking);
	asking = xcalloc(1, sizeof *asking);
	asking->src = vm->src;
	asking->ns = xstrdup(vm->ns);
	asking->name = xstrdup(vm->name);
	asking->vmi = vm->kind == OBJ_VMI;
	char label[600];
	char *l = util_escape_display(vm->name);
	snprintf(label, sizeof label, "ssh into %s as [USER] [-i KEY] [-p PORT] [-t OPT]... (Enter: root): ", l);
	free(l);
	ui_prompt(label, start, NULL, asking);
}
