/* `b` in the VM view: `kvcon bundle` of the VM run as a child process (the gathering blocks on the API while
 * it waits for logs and objects; the dashboard must not), into $XDG_STATE_HOME/kvcon/bundles/. Its output goes
 * to a file next to the bundle, never to the terminal; a timer notices the end and says where the tarball is. */
#include "ui/bundlerun.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/loop.h"
#include "core/opts.h"
#include "core/util.h"
#include "core/xmalloc.h"
#include "model/source.h"
#include "ui/ui.h"

#define POLL_MS 300

struct brun {
	pid_t pid;
	char *out, *log;
};

static void check(void *arg)
{
	struct brun *b = arg;
	int st;
	pid_t r = waitpid(b->pid, &st, WNOHANG);
	if (r == 0) {
		loop_timer_add(POLL_MS, check, b);
		return;
	}
	if (r == b->pid && WIFEXITED(st) && WEXITSTATUS(st) == 0) {
		char *e = util_escape_display(b->out);
		ui_message("bundle written: %s", e);
		free(e);
	} else {
		char *e = util_escape_display(b->log);
		ui_error("bundle failed: see %s", e);
		free(e);
	}
	ui_dirty();
	free(b->out);
	free(b->log);
	free(b);
}

int bundlerun_start(const struct obj *vm, char **err)
{
	struct source *src = vm->src;
	if (src == NULL || src->type != SOURCE_KUBE) {
		*err = xstrdup("the engine is held by this dashboard: run kvcon bundle NS/NAME from a shell");
		return -1;
	}
	char *dir = util_state_dir();
	char *bdir = util_path_join(dir, "bundles");
	free(dir);
	if (util_mkdir_p(bdir, 0700) < 0) {
		*err = xasprintf("%s: cannot create it", bdir);
		free(bdir);
		return -1;
	}
	char stamp[32];
	time_t now = time(NULL);
	struct tm tm;
	gmtime_r(&now, &tm);
	strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
	struct brun *b = xcalloc(1, sizeof *b);
	b->out = xasprintf("%s/kvcon-bundle-%s-%s-%s.tar.gz", bdir, vm->ns, vm->name, stamp);
	b->log = xasprintf("%s.log", b->out);
	free(bdir);
	for (char *p = strrchr(b->out, '/') + 1; *p; p++)
		if (*p == '/')
			*p = '_';
	char *ref = xasprintf("%s/%s", vm->ns, vm->name);
	struct kvcon_opts *o = opts_global();
	const char *argv[12];
	int n = 0;
	argv[n++] = "kvcon";
	if (o->kubeconfig) {
		argv[n++] = "--kubeconfig";
		argv[n++] = o->kubeconfig;
	}
	argv[n++] = "--context";
	argv[n++] = src->name;
	argv[n++] = "--no-engine";
	argv[n++] = "bundle";
	argv[n++] = ref;
	argv[n++] = "-o";
	argv[n++] = b->out;
	argv[n] = NULL;
	int logfd = open(b->log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	pid_t pid = logfd < 0 ? -1 : fork();
	if (pid == 0) {
		int nul = open("/dev/null", O_RDONLY);
		dup2(nul, 0);
		dup2(logfd, 1);
		dup2(logfd, 2);
		setsid(); /* no terminal: the child never writes to the dashboard's screen */
		signal(SIGPIPE, SIG_DFL);
		execv("/proc/self/exe", (char *const *)argv);
		_exit(127);
	}
	if (logfd >= 0)
		close(logfd);
	free(ref);
	if (pid < 0) {
		*err = xasprintf("cannot start kvcon bundle (%s)", logfd < 0 ? "no log file" : "fork failed");
		free(b->out);
		free(b->log);
		free(b);
		return -1;
	}
	b->pid = pid;
	loop_timer_add(POLL_MS, check, b);
	return 0;
}
