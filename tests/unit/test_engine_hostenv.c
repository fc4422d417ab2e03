/* Unit tests of the engine's environment checks (engine/hostenv.c) on a fake machine: a driver directory
 * ($LIBVIRT_DRIVER_DIR) with or without the QEMU module, a PATH with or without QEMU, an embedded root whose
 * qemu.conf names accounts, the root's pid-file lock held by a child, and remote URIs of every form against a
 * listening and a closed local port. The real e2e cases are tests/e2e/env_engine.sh. */
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/util.h"
#include "core/xmalloc.h"
#include "engine/hostenv.h"
#include "t.h"

static char dir[] = "/tmp/kvcon-hostenv.XXXXXX";

static void put(const char *path, const void *data, size_t len, mode_t mode)
{
	char *p = util_path_join(dir, path);
	char *slash = strrchr(p, '/');
	*slash = '\0';
	util_mkdir_p(p, 0755);
	*slash = '/';
	T_CHECK(util_write_file_atomic(p, data, len, mode) == 0);
	free(p);
}

/* hostenv_problem(uri) contains want (NULL: no problem) */
static void check(const char *uri, const char *want)
{
	char *msg = hostenv_problem(uri);
	if (want == NULL) {
		if (msg)
			fprintf(stderr, "%s: unexpected problem: %s\n", uri, msg);
		T_CHECK(msg == NULL);
	} else {
		if (msg == NULL || strstr(msg, want) == NULL)
			fprintf(stderr, "%s: wanted \"%s\" in \"%s\"\n", uri, want, msg ? msg : "(none)");
		T_CHECK(msg != NULL && strstr(msg, want) != NULL);
		T_CHECK(msg == NULL || strchr(msg, '\n') == NULL); /* one line */
	}
	free(msg);
}

static void embedded(void)
{
	char *root = util_path_join(dir, "root"), *uri = xasprintf("qemu:///embed?root=%s", root);
	char *drv = util_path_join(dir, "drv"), *bin = util_path_join(dir, "bin");
	char *nobin = util_path_join(dir, "nobin");
	util_mkdir_p(drv, 0755);
	util_mkdir_p(nobin, 0755);
	char *path = xstrdup(getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
	setenv("LIBVIRT_DRIVER_DIR", drv, 1);
	setenv("PATH", bin, 1);
	check(uri, "libvirt's QEMU driver is not installed (no ");
	/* a module without Debian's compiled-in account name (another distribution's build) */
	static const char module[] = "\x7f"
				     "ELF\0qemu\0/var/lock\0";
	put("drv/libvirt_driver_qemu.so", module, sizeof module, 0644);
	check(uri, "QEMU is not installed (no qemu-system-");
	struct utsname u;
	uname(&u);
	char *q = xasprintf("bin/qemu-system-%s", u.machine);
	put(q, "#!/bin/sh\n", 10, 0755);
	free(q);
	setenv("PATH", nobin, 1);
	check(uri, "QEMU is not installed");
	setenv("PATH", bin, 1);
	put("root/etc/qemu.conf", "user = \"root\"\ngroup = \"root\"\n", 28, 0644);
	check(uri, NULL);
	if (geteuid() == 0) {
		/* qemu.conf's names are looked up too, except numbers libvirt takes as they are */
		static const char conf[] = "# kvcon\nuser = \"kvunit-nobody\"   # who QEMU runs as\n"
					   "group=\"kvunit-none\"\n";
		put("root/etc/qemu.conf", conf, sizeof conf - 1, 0644);
		check(uri, "(group kvunit-none, user kvunit-nobody): run scripts/deps.sh as root, or: groupadd -r "
			   "kvunit-none; useradd -r -g kvunit-none -d /var/lib/libvirt -s /usr/sbin/nologin "
			   "kvunit-nobody");
		put("root/etc/qemu.conf", "user = \"+0\"\ngroup = \"0\"\n", 24, 0644);
		check(uri, NULL);
		/* Debian's module: its account is looked up too, whatever qemu.conf says */
		static const char debian[] = "\x7f"
					     "ELF\0qemu\0libvirt-qemu\0/var/lock\0";
		put("drv/libvirt_driver_qemu.so", debian, sizeof debian, 0644);
		bool have = getpwnam("libvirt-qemu") && getgrnam("libvirt-qemu");
		check(uri, have ? NULL : "libvirt-qemu");
		put("drv/libvirt_driver_qemu.so", module, sizeof module, 0644);
	}
	/* the driver's pid file locked by another process: named with its pid */
	put("root/run/qemu/driver.pid", "", 0, 0644);
	int gate[2], ready[2];
	T_CHECK(pipe(gate) == 0 && pipe(ready) == 0);
	pid_t child = fork();
	if (child == 0) {
		char *pf = util_path_join(root, "run/qemu/driver.pid");
		int fd = open(pf, O_RDWR);
		struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
		char c;
		close(gate[1]);
		if (fd < 0 || fcntl(fd, F_SETLK, &fl) < 0)
			_exit(1);
		(void)!write(ready[1], "x", 1);
		(void)!read(gate[0], &c, 1); /* until the parent closes its end */
		_exit(0);
	}
	close(gate[0]);
	close(ready[1]);
	char c = 0;
	T_CHECK(read(ready[0], &c, 1) == 1);
	close(ready[0]);
	char *cf = xasprintf("/proc/%d/comm", (int)child), *comm = util_read_file(cf, NULL);
	char *want = xasprintf("is in use by %.*s (pid %d): the embedded driver admits one process",
			       comm ? (int)strcspn(comm, "\n") : 0, comm ? comm : "", (int)child);
	check(uri, want);
	free(want);
	free(comm);
	free(cf);
	close(gate[1]);
	int st;
	waitpid(child, &st, 0);
	T_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	check(uri, NULL); /* released with its process */
	/* what a guest needs: this machine has it */
	char *g = hostenv_guest_problem(uri);
	if (g)
		fprintf(stderr, "guest problem on this machine: %s\n", g);
	T_CHECK(g == NULL);
	free(g);
	T_CHECK(hostenv_guest_problem("qemu+tcp://host/system") == NULL);
	setenv("PATH", path, 1);
	unsetenv("LIBVIRT_DRIVER_DIR");
	free(path);
	free(root);
	free(uri);
	free(drv);
	free(bin);
	free(nobin);
}

static void remote(void)
{
	int ls = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof sa;
	T_CHECK(bind(ls, (struct sockaddr *)&sa, sizeof sa) == 0 && listen(ls, 8) == 0);
	getsockname(ls, (struct sockaddr *)&sa, &sl);
	int open_port = ntohs(sa.sin_port);
	int closed = socket(AF_INET, SOCK_STREAM, 0); /* bound, not listening: refuses */
	sa.sin_port = 0;
	T_CHECK(bind(closed, (struct sockaddr *)&sa, sizeof sa) == 0);
	getsockname(closed, (struct sockaddr *)&sa, &sl);
	int closed_port = ntohs(sa.sin_port);
	char u[128], w[256];

	snprintf(u, sizeof u, "qemu+tcp://127.0.0.1:%d/system", open_port);
	check(u, NULL);
	snprintf(u, sizeof u, "qemu+ssh://someone@127.0.0.1:%d/system?keyfile=/k", open_port);
	check(u, NULL);
	snprintf(u, sizeof u, "qemu+tcp://127.0.0.1:%d/system", closed_port);
	snprintf(w, sizeof w, "%s: connection refused by 127.0.0.1 port %d: is libvirtd with TCP on", u, closed_port);
	check(u, w);
	snprintf(u, sizeof u, "qemu+tls://127.0.0.1:%d/system", closed_port);
	check(u, "(libvirtd --listen, listen_tls = 1) running there?");
	snprintf(u, sizeof u, "qemu+libssh2://me@127.0.0.1:%d/system", closed_port);
	check(u, "is sshd running there?");
	snprintf(u, sizeof u, "qemu://[::1]:%d/system", closed_port);
	check(u, "port "); /* refused, or no IPv6 here: either way one line naming the port */
	/* (a name that does not resolve is tests/e2e/env_engine.sh's: no DNS lookups in unit tests) */
	/* local URIs: nothing to connect to */
	check("qemu+unix:///system?socket=/nonexistent/libvirt-sock",
	      "qemu+unix:///system?socket=/nonexistent/libvirt-sock: no libvirt daemon answers on "
	      "/nonexistent/libvirt-sock (No such file or directory): start it");
	check("qemu:///session", NULL);
	check("qemu+ext:///system?command=/bin/true", NULL);
	close(ls);
	close(closed);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	if (mkdtemp(dir) == NULL)
		return 1;
	embedded();
	remote();
	char *rm = xasprintf("rm -rf '%s'", dir);
	T_CHECK(system(rm) == 0);
	free(rm);
	return T_DONE();
}
