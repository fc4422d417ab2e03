/* Unit tests of the embedded driver's QEMU reaper (engine/host.c, host_reap_qemu_zombies) with stand-ins named
 * qemu-system-x86_64 (a symlink to sleep, so the kernel names them qemu-system-x86): a QEMU that another thread
 * forked and waits for (libvirt's capability probe before its -daemonize returns) is left to that thread even when
 * the pass runs while it lies a zombie; an orphan the child subreaper adopted (a daemonized QEMU) is reaped; a
 * zombie of another name is left alone. Each zombie is polled for in /proc, never waited for by time. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/util.h"
#include "core/xmalloc.h"
#include "engine/host.h"
#include "t.h"

static char dir[] = "/tmp/kvcon-reaper.XXXXXX";
static char *qemu; /* the stand-in */

/* The process's state letter and parent from /proc/PID/stat; 0 when it is gone. */
static char proc_state(pid_t pid, long *ppid)
{
	char path[64], buf[512];
	snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
	FILE *f = fopen(path, "r");
	if (f == NULL)
		return 0;
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	char *rp = strrchr(buf, ')');
	char st = 0;
	long pp = 0;
	if (rp == NULL || sscanf(rp + 1, " %c %ld", &st, &pp) != 2)
		return 0;
	if (ppid)
		*ppid = pp;
	return st;
}

/* Polls until pid is a zombie whose parent is this process (up to 20 s). */
static bool until_zombie(pid_t pid)
{
	for (int i = 0; i < 20000; i++) {
		long pp = 0;
		if (proc_state(pid, &pp) == 'Z' && pp == (long)getpid())
			return true;
		usleep(1000);
	}
	return false;
}

static pid_t spawn_qemu(void)
{
	pid_t pid = fork();
	if (pid == 0) {
		execl(qemu, "qemu-system-x86_64", "0", (char *)NULL);
		_exit(127);
	}
	return pid;
}

/* --- a libvirt thread's own QEMU ------------------------------------------------------------------------ */

struct prober {
	int go[2];   /* main -> thread: the passes are done, wait now */
	pid_t pid;   /* the QEMU it forked */
	pid_t got;   /* its waitpid's result */
	int status, err;
};

static void *prober_main(void *arg)
{
	struct prober *p = arg;
	char c;
	__atomic_store_n(&p->pid, spawn_qemu(), __ATOMIC_SEQ_CST);
	if (read(p->go[0], &c, 1) != 1)
		return NULL;
	p->got = waitpid(p->pid, &p->status, 0);
	p->err = p->got < 0 ? errno : 0;
	return NULL;
}

static void test_thread_child_left_to_its_thread(void)
{
	struct prober p = { .pid = 0 };
	T_CHECK(pipe(p.go) == 0);
	pthread_t t;
	T_CHECK(pthread_create(&t, NULL, prober_main, &p) == 0);
	while (__atomic_load_n(&p.pid, __ATOMIC_SEQ_CST) == 0)
		usleep(1000);
	T_CHECK(p.pid > 0);
	T_CHECK(until_zombie(p.pid));
	/* the pass runs while the thread has not waited yet (libvirt's thread not scheduled, under load) */
	for (int i = 0; i < 3; i++)
		host_reap_qemu_zombies();
	T_EQ_INT(proc_state(p.pid, NULL), 'Z');
	T_CHECK(write(p.go[1], "x", 1) == 1);
	pthread_join(t, NULL);
	T_EQ_INT(p.got, p.pid);
	T_EQ_INT(p.err, 0);
	T_CHECK(WIFEXITED(p.status) && WEXITSTATUS(p.status) == 0);
	close(p.go[0]);
	close(p.go[1]);
}

/* --- a daemonized QEMU, adopted --------------------------------------------------------------------------- */

struct daemonizer {
	int out[2]; /* the daemon's pid, from the intermediate */
	pid_t daemon;
};

static void *daemonizer_main(void *arg)
{
	struct daemonizer *d = arg;
	pid_t mid = fork();
	if (mid == 0) {
		/* QEMU's -daemonize: the first process exits once the daemon runs */
		pid_t q = spawn_qemu();
		ssize_t w = write(d->out[1], &q, sizeof q);
		_exit(w == (ssize_t)sizeof q ? 0 : 1);
	}
	waitpid(mid, NULL, 0);
	if (read(d->out[0], &d->daemon, sizeof d->daemon) != (ssize_t)sizeof d->daemon)
		d->daemon = -1;
	return NULL;
}

static void test_orphan_reaped(void)
{
	struct daemonizer d = { .daemon = 0 };
	T_CHECK(pipe(d.out) == 0);
	pthread_t t;
	T_CHECK(pthread_create(&t, NULL, daemonizer_main, &d) == 0);
	pthread_join(t, NULL);
	T_CHECK(d.daemon > 0);
	/* adopted by this process (a child subreaper), as a zombie once it ends */
	T_CHECK(until_zombie(d.daemon));
	host_reap_qemu_zombies();
	T_EQ_INT(proc_state(d.daemon, NULL), 0);
	errno = 0;
	T_CHECK(waitpid(d.daemon, NULL, WNOHANG) < 0 && errno == ECHILD);
	close(d.out[0]);
	close(d.out[1]);
}

static void test_other_names_left(void)
{
	pid_t pid = fork();
	if (pid == 0)
		_exit(3);
	T_CHECK(until_zombie(pid));
	host_reap_qemu_zombies();
	int st = 0;
	T_EQ_INT(waitpid(pid, &st, WNOHANG), pid);
	T_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 3);
}

int main(void)
{
	T_CHECK(mkdtemp(dir) != NULL);
	qemu = xasprintf("%s/qemu-system-x86_64", dir);
	const char *sleep_bin = access("/usr/bin/sleep", X_OK) == 0 ? "/usr/bin/sleep" : "/bin/sleep";
	T_CHECK(symlink(sleep_bin, qemu) == 0);
	T_CHECK(prctl(PR_SET_CHILD_SUBREAPER, 1L, 0L, 0L, 0L) == 0);
	test_thread_child_left_to_its_thread();
	test_orphan_reaped();
	test_other_names_left();
	unlink(qemu);
	rmdir(dir);
	free(qemu);
	return T_DONE();
}
