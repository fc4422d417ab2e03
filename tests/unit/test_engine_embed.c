/* The embedded root's preparation (engine/embed.c): qemu.conf written once, rewritten when the account changes,
 * a file of the user's own kept; a 0700 directory opened to one account for search only (an ACL entry), still
 * closed to every other user; a run directory owned by the account. Run as root (as the suite is) with the
 * accounts "nobody" and "daemon" standing in for QEMU's account and for everyone else. And what a kvcon killed
 * during libvirt's capability probe leaves in the root, ended before the next open (test_reap_probes). */
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "core/util.h"
#include "core/xmalloc.h"
#include "engine/embed.h"
#include "t.h"

/* whether account a may do MODE on path (a child becomes it) */
static bool can(const struct embed_account *a, const char *path, int mode)
{
	pid_t pid = fork();
	if (pid == 0) {
		if (setgroups(0, NULL) < 0 || setgid(a->gid) < 0 || setuid(a->uid) < 0)
			_exit(2);
		_exit(access(path, mode) == 0 ? 0 : 1);
	}
	int st;
	waitpid(pid, &st, 0);
	return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* A child standing for a QEMU probe: its command line carries arg (the probe's "-qmp unix:MONITOR,..." value). */
static pid_t fake_probe(const char *arg)
{
	pid_t pid = fork();
	if (pid == 0) {
		execl("/bin/sh", "sh", "-c", "sleep 60; :", arg, (char *)NULL);
		_exit(127);
	}
	/* until its command line is the shell's (after exec) */
	char path[64], buf[256];
	snprintf(path, sizeof path, "/proc/%ld/cmdline", (long)pid);
	for (int i = 0; i < 1000; i++) {
		int fd = open(path, O_RDONLY);
		ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf) : -1;
		if (fd >= 0)
			close(fd);
		if (n > 3 && memcmp(buf, "sh", 3) == 0)
			break;
		usleep(1000);
	}
	return pid;
}

/* The -qmp value of a probe whose directory is ROOT/lib/qemu/NAME (caller frees). */
static char *probe_arg(const char *root, const char *name)
{
	return xasprintf("unix:%s/lib/qemu/%s/qmp.monitor,server=on,wait=off", root, name);
}

/* That directory with its pid file naming pid. */
static void fake_qmp_dir(const char *root, const char *name, pid_t pid)
{
	char *dir = xasprintf("%s/lib/qemu/%s", root, name), *pf = xasprintf("%s/qmp.pid", dir);
	util_mkdir_p(dir, 0700);
	char text[32];
	int len = snprintf(text, sizeof text, "%ld\n", (long)pid);
	T_EQ_INT(util_write_file_atomic(pf, text, (size_t)len, 0600), 0);
	free(pf);
	free(dir);
}

static bool gone(pid_t pid)
{
	int st;
	return waitpid(pid, &st, 0) == pid && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL;
}

/* embed_reap_probes: what a kvcon killed during libvirt's capability probe left (the probe's QEMU, daemonized,
 * and its qmp-* directory) is ended before the next open; a pid file naming some other process ends nothing; a
 * root whose driver lock another process holds is not touched. */
static void test_reap_probes(void)
{
	char tmpl[] = "/tmp/kvcon-embed-reap.XXXXXX";
	char *root = mkdtemp(tmpl);
	T_CHECK(root != NULL);
	char *run = xasprintf("%s/run/qemu", root), *pidf = xasprintf("%s/driver.pid", run);
	util_mkdir_p(run, 0700);
	util_write_file_atomic(pidf, "1\n", 2, 0600);
	T_EQ_INT(embed_reap_probes("/nonexistent/kvcon-root"), 0);

	/* held by another process (a live driver): its probes are its own */
	char *arg = probe_arg(root, "qmp-AAAAAA");
	pid_t probe = fake_probe(arg);
	fake_qmp_dir(root, "qmp-AAAAAA", probe);
	int ready[2];
	T_EQ_INT(pipe(ready), 0);
	pid_t holder = fork();
	if (holder == 0) {
		int fd = open(pidf, O_RDWR);
		struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
		char c = fcntl(fd, F_SETLK, &fl) == 0 ? 'y' : 'n';
		if (write(ready[1], &c, 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	char c = 0;
	T_EQ_INT((int)read(ready[0], &c, 1), 1);
	T_CHECK(c == 'y');
	T_EQ_INT(embed_reap_probes(root), 0);
	T_EQ_INT(kill(probe, 0), 0);
	char *dir = xasprintf("%s/lib/qemu/qmp-AAAAAA", root);
	T_EQ_INT(access(dir, F_OK), 0);
	kill(holder, SIGKILL);
	waitpid(holder, NULL, 0);
	close(ready[0]);
	close(ready[1]);

	/* the holder gone: the probe is ended and its directory removed; a pid file naming another process (a pid
	 * used again) ends nothing, its directory goes */
	pid_t other = fake_probe("unix:/elsewhere/qmp.monitor,server=on,wait=off");
	fake_qmp_dir(root, "qmp-BBBBBB", other);
	T_EQ_INT(embed_reap_probes(root), 1);
	T_CHECK(gone(probe));
	T_EQ_INT(kill(other, 0), 0);
	T_CHECK(access(dir, F_OK) < 0);
	char *dir2 = xasprintf("%s/lib/qemu/qmp-BBBBBB", root);
	T_CHECK(access(dir2, F_OK) < 0);
	T_EQ_INT(embed_reap_probes(root), 0);
	kill(other, SIGKILL);
	waitpid(other, NULL, 0);

	char *cmd = xasprintf("rm -rf '%s'", root);
	T_EQ_INT(system(cmd), 0);
	free(cmd);
	free(dir2);
	free(dir);
	free(arg);
	free(pidf);
	free(run);
}

int main(void)
{
	test_reap_probes();
	if (geteuid() != 0) { /* not root: QEMU runs as the caller, whatever the setting */
		struct embed_account me;
		char *e = NULL;
		T_EQ_INT(embed_account_resolve("libvirt-qemu:kvm", &me, &e), 0);
		T_CHECK(me.same && me.uid == geteuid());
		char *text = embed_conf_text(&me);
		T_CHECK(strstr(text, "user =") == NULL && strstr(text, "stdio_handler = \"file\"\n"));
		free(text);
		embed_account_clear(&me);
		return T_DONE();
	}
	char tmpl[] = "/tmp/kvembed.XXXXXX";
	char *t = mkdtemp(tmpl);
	T_CHECK(t != NULL);
	chmod(t, 0700);
	char *err = NULL;
	struct embed_account q, other;
	T_EQ_INT(embed_account_resolve("nobody", &q, &err), 0);
	T_EQ_INT(embed_account_resolve("daemon", &other, &err), 0);
	T_CHECK(!q.same && q.uid != 0);
	T_CHECK(embed_account_resolve("kvcon-no-such-account", &(struct embed_account){ 0 }, &err) < 0);
	T_CHECK(err && strstr(err, "'kvcon-no-such-account', does not exist"));
	free(err);
	err = NULL;

	/* a stand-in for /dev/kvm: root's only, then the account may read and write it */
	char *kvm = util_path_join(t, "kvm");
	util_write_file_atomic(kvm, "", 0, 0600);
	embed_kvm_path = kvm;

	/* qemu.conf: written for the account, kept when unchanged, rewritten when the account changes */
	char *root = util_path_join(t, "state/kvcon/engine");
	char *conf = util_path_join(root, "etc/qemu.conf");
	T_EQ_INT(embed_prepare(root, "nobody", &err), 0);
	char *text = util_read_file(conf, NULL);
	T_CHECK(text && strstr(text, "user = \"nobody\"\n") && strstr(text, "dynamic_ownership = 1\n"));
	free(text);
	struct stat st1, st2;
	stat(conf, &st1);
	T_EQ_INT(embed_prepare(root, "nobody", &err), 0);
	stat(conf, &st2);
	T_EQ_INT(st1.st_ino, st2.st_ino); /* not rewritten */
	T_EQ_INT(embed_prepare(root, "root", &err), 0);
	text = util_read_file(conf, NULL);
	T_CHECK(text && strstr(text, "user = \"root\"\n") && strstr(text, "dynamic_ownership = 0\n"));
	free(text);
	util_write_file_atomic(conf, "user = \"someone\"\n", 17, 0644); /* the user's own file */
	T_EQ_INT(embed_prepare(root, "nobody", &err), 0);
	text = util_read_file(conf, NULL);
	T_EQ_STR(text, "user = \"someone\"\n");
	free(text);

	/* the account reaches the root through 0700 directories; the other account does not; nothing is listable */
	T_CHECK(can(&q, root, X_OK));
	T_CHECK(!can(&other, root, X_OK));
	T_CHECK(!can(&q, t, R_OK));
	T_CHECK(getxattr(t, "system.posix_acl_access", NULL, 0) > 0);
	struct stat st;
	stat(t, &st);
	T_EQ_INT(st.st_mode & 07, 0);
	/* still private for the engine's checks (domxml private_dir): a search-only entry for one account */
	T_CHECK(embed_dir_private(t, st.st_mode));
	char *plain = util_path_join(t, "plain");
	mkdir(plain, 0750); /* no ACL: the owning group may read, not private */
	chmod(plain, 0750);
	stat(plain, &st);
	T_CHECK(!embed_dir_private(plain, st.st_mode));
	chmod(plain, 0700);
	stat(plain, &st);
	T_CHECK(embed_dir_private(plain, st.st_mode));
	free(plain);

	T_CHECK(can(&q, kvm, R_OK | W_OK));
	T_CHECK(!can(&other, kvm, R_OK));

	/* a run directory: the account's, 0700 */
	char *run = util_path_join(t, "state/kvcon/engine-data/run/u1");
	T_EQ_INT(embed_own_dir(&q, run, &err), 0);
	stat(run, &st);
	T_EQ_INT(st.st_uid, q.uid);
	T_EQ_INT(st.st_mode & 0777, 0700);
	T_CHECK(can(&q, run, W_OK | X_OK));
	T_CHECK(!can(&other, run, X_OK));

	char *cmd = xasprintf("rm -rf '%s'", t);
	T_EQ_INT(system(cmd), 0);
	free(cmd);
	free(run);
	free(kvm);
	free(conf);
	free(root);
	embed_account_clear(&q);
	embed_account_clear(&other);
	return T_DONE();
}
