/* Unit tests of src/core: time parsing and formatting, escaping, hash map, buffers, atomic and checked files, the
 * loop. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/buf.h"
#include "core/hmap.h"
#include "core/intern.h"
#include "core/log.h"
#include "core/loop.h"
#include "core/util.h"
#include "core/xmalloc.h"
#include "t.h"

static void test_time(void)
{
	int64_t t = 0;
	T_EQ_INT(util_parse_time("1970-01-01T00:00:00Z", &t), 0);
	T_EQ_INT(t, 0);
	T_EQ_INT(util_parse_time("2024-02-29T12:34:56Z", &t), 0);
	T_EQ_INT(t, 1709210096);
	T_EQ_INT(util_parse_time("2024-02-29T12:34:56.123456Z", &t), 0);
	T_EQ_INT(t, 1709210096);
	T_EQ_INT(util_parse_time("2024-02-29T14:34:56+02:00", &t), 0);
	T_EQ_INT(t, 1709210096);
	T_EQ_INT(util_parse_time("2024-02-29 12:34", &t), -1);
	T_EQ_INT(util_parse_time("2024-13-01T00:00:00Z", &t), -1);
	T_EQ_INT(util_parse_time("2024-01-01T00:00:00Zjunk", &t), -1);
	T_EQ_INT(util_parse_time("", &t), -1);
	char b[32];
	util_format_time(1709210096, b, sizeof b);
	T_EQ_STR(b, "2024-02-29T12:34:56Z");
	static const struct {
		int64_t s;
		const char *want;
	} d[] = { { 0, "0s" },       { 59, "59s" },     { 119, "119s" }, { 125, "2m5s" },   { 600, "10m" },
		  { 3600 * 2 + 60, "121m" }, { 3600 * 3 + 60, "3h1m" }, { 3600 * 10, "10h" }, { 3600 * 50, "2d2h" }, { 86400 * 30, "30d" },
		  { 86400 * 800, "2y70d" } };
	for (size_t i = 0; i < sizeof d / sizeof d[0]; i++) {
		util_human_duration(d[i].s, b, sizeof b);
		T_EQ_STR(b, d[i].want);
	}
}

static void test_escape(void)
{
	char *s = util_escape_display("vm-\x1b]0;pwned\x07-ok");
	T_EQ_STR(s, "vm-\\e]0;pwned\\x07-ok");
	free(s);
	s = util_escape_display("caf\xc3\xa9-\xe6\x97\xa5\xe6\x9c\xac");
	T_EQ_STR(s, "caf\xc3\xa9-\xe6\x97\xa5\xe6\x9c\xac"); /* valid UTF-8 kept */
	free(s);
	s = util_escape_display("a\xc2\x9b" "b\xff\n"); /* C1 CSI, invalid byte, newline */
	T_EQ_STR(s, "a\\xc2\\x9bb\\xff\\n");
	free(s);
}

static void test_hmap(void)
{
	struct hmap m;
	hmap_init(&m);
	char keys[2000][16];
	for (int i = 0; i < 2000; i++) {
		snprintf(keys[i], sizeof keys[i], "k%d", i);
		T_CHECK(hmap_put(&m, keys[i], (void *)(intptr_t)(i + 1)) == NULL);
	}
	for (int i = 0; i < 2000; i += 2)
		T_EQ_INT((intptr_t)hmap_del(&m, keys[i]), i + 1);
	T_EQ_INT(m.count, 1000);
	int ok = 1;
	for (int i = 0; i < 2000; i++)
		ok &= (intptr_t)hmap_get(&m, keys[i]) == (i % 2 ? i + 1 : 0);
	T_CHECK(ok);
	size_t it = 0, seen = 0;
	while (hmap_next(&m, &it, NULL, NULL))
		seen++;
	T_EQ_INT(seen, 1000);
	hmap_free(&m);
	T_CHECK(intern("default") == intern("default"));
}

static void test_buf_and_files(void)
{
	struct buf b;
	buf_init(&b);
	buf_printf(&b, "%d-%s", 42, "x");
	buf_add_str(&b, "yz");
	buf_consume(&b, 3);
	T_EQ_STR(b.data, "xyz");
	buf_free(&b);
	char dir[] = "/tmp/kvcon-test-XXXXXX";
	T_CHECK(mkdtemp(dir) != NULL);
	char *p = xasprintf("%s/a/b/c.txt", dir);
	char *d = xasprintf("%s/a/b", dir);
	T_EQ_INT(util_mkdir_p(d, 0700), 0);
	T_EQ_INT(util_write_file_atomic(p, "hello", 5, 0600), 0);
	size_t n = 0;
	char *r = util_read_file(p, &n);
	T_EQ_STR(r, "hello");
	T_EQ_INT(n, 5);
	free(r);
	unlink(p);
	free(p);
	free(d);
}

static int fired[4];
static void timer_cb(void *arg)
{
	int *slot = arg;
	*slot = (int)(loop_now() & 0x7fffffff) | 1;
	if (slot == &fired[2])
		loop_quit(7);
}
static void post_cb(void *arg)
{
	*(int *)arg = 1;
}
static int got_sig;
static void sig_cb(int sig, void *arg)
{
	(void)arg;
	got_sig = sig;
}
static int pipe_reads;
static void pipe_cb(int fd, short rev, void *arg)
{
	(void)arg;
	char c;
	if (rev & POLLIN) {
		T_EQ_INT(read(fd, &c, 1), 1);
		pipe_reads++;
	}
}

static void test_loop(void)
{
	loop_init();
	int fds[2];
	T_EQ_INT(pipe(fds), 0);
	struct loop_fd *h = loop_fd_add(fds[0], POLLIN, pipe_cb, NULL);
	T_EQ_INT(write(fds[1], "x", 1), 1);
	struct loop_timer *cancelled = loop_timer_add(1, timer_cb, &fired[3]);
	loop_timer_cancel(cancelled);
	loop_timer_add(5, timer_cb, &fired[0]);
	loop_timer_add(10, timer_cb, &fired[1]);
	loop_timer_add(30, timer_cb, &fired[2]);
	loop_post(post_cb, &fired[3]);
	loop_signal(SIGUSR1, sig_cb, NULL);
	raise(SIGUSR1);
	T_EQ_INT(loop_run(), 7);
	T_CHECK(fired[0] && fired[1] && fired[2]);
	T_CHECK(fired[0] <= fired[1] && fired[1] <= fired[2]);
	T_EQ_INT(fired[3], 1); /* set by the post, not by the cancelled timer */
	T_EQ_INT(got_sig, SIGUSR1);
	T_EQ_INT(pipe_reads, 1);
	loop_fd_remove(h);
	close(fds[0]);
	close(fds[1]);
	loop_fini();
}

/* Files holding outside text are 0600 in 0700 directories whatever the umask; stderr messages and log lines are
 * escaped (issue 14 finding 7). */
static void test_private_files_and_escaped_output(void)
{
	char dir[] = "/tmp/kvcon-priv-XXXXXX";
	T_CHECK(mkdtemp(dir) != NULL);
	mode_t old = umask(0);
	char *sub = xasprintf("%s/a/b", dir);
	T_EQ_INT(util_mkdir_p(sub, 0700), 0);
	struct stat st;
	T_CHECK(stat(sub, &st) == 0 && (st.st_mode & 0777) == 0700);
	char *f = xasprintf("%s/log", sub);
	int fd = util_open_private(f, O_APPEND, false, NULL);
	T_CHECK(fd >= 0 && fstat(fd, &st) == 0 && (st.st_mode & 0777) == 0600);
	close(fd);
	/* an existing file keeps its mode, unless tightened (kvcon's own log) */
	chmod(f, 0644);
	fd = util_open_private(f, O_APPEND, false, NULL);
	T_CHECK(fd >= 0 && fstat(fd, &st) == 0 && (st.st_mode & 0777) == 0644);
	close(fd);
	fd = util_open_private(f, O_APPEND, true, NULL);
	T_CHECK(fd >= 0 && fstat(fd, &st) == 0 && (st.st_mode & 0777) == 0600);
	close(fd);
	umask(0277); /* a umask that would leave the directory unusable */
	char *sub2 = xasprintf("%s/c", dir);
	T_EQ_INT(util_mkdir_p(sub2, 0700), 0);
	T_CHECK(stat(sub2, &st) == 0 && (st.st_mode & 0777) == 0700);
	umask(old);
	/* log_eprintf: every line escaped, the newlines between them kept; the log file: one line per message */
	char *ef = xasprintf("%s/stderr", dir);
	fflush(stderr);
	int saved = dup(2), efd = open(ef, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	dup2(efd, 2);
	log_eprintf("kvcon: server '%s' is bad\nsecond \x9b line\n", "\033]0;pwned\007");
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	close(efd);
	char *got = util_read_file(ef, NULL);
	T_EQ_STR(got, "kvcon: server '\\e]0;pwned\\x07' is bad\nsecond \\x9b line\n");
	free(got);
	char *lf = xasprintf("%s/kvcon.log", dir);
	T_EQ_INT(log_open(lf), 0);
	log_warn("from the cluster: %s", "a\nfake line \033[2J");
	log_close();
	got = util_read_file(lf, NULL);
	T_CHECK(got && strstr(got, "warn: from the cluster: a\\nfake line \\e[2J\n") && strchr(got, '\033') == NULL);
	T_CHECK(stat(lf, &st) == 0 && (st.st_mode & 0777) == 0600);
	free(got);
	free(lf);
	free(ef);
	free(f);
	free(sub);
	free(sub2);
}

/* Files at paths someone else prepared (issue 23 findings 3 and 6): one row per thing found at the path, for the
 * three ways kvcon meets such a path. Another user's files need root (chown to nobody); as a user those rows are
 * skipped. */
enum prep { P_NONE, P_OWN, P_OWN_0644, P_OWN_0666, P_OTHER, P_SYMLINK, P_FIFO, P_DIR, P_HARDLINK, P_THIRD };

#define NOBODY 65534
#define THIRD 65533

/* Puts at path what row p names; secret is a file the symlink and the hard link point at. */
static void prepare(const char *path, enum prep p, const char *secret)
{
	int fd;
	switch (p) {
	case P_NONE:
		break;
	case P_OWN:
	case P_OWN_0644:
	case P_OWN_0666:
	case P_OTHER:
	case P_THIRD:
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
		T_CHECK(fd >= 0 && write(fd, "old\n", 4) == 4);
		close(fd);
		chmod(path, p == P_OWN_0644 ? 0644 : p == P_OWN ? 0600 : 0666);
		if (p == P_OTHER || p == P_THIRD)
			T_EQ_INT(chown(path, p == P_OTHER ? NOBODY : THIRD, NOBODY), 0);
		break;
	case P_SYMLINK:
		T_EQ_INT(symlink(secret, path), 0);
		break;
	case P_FIFO:
		T_EQ_INT(mkfifo(path, 0666), 0);
		break;
	case P_DIR:
		T_EQ_INT(mkdir(path, 0755), 0);
		break;
	case P_HARDLINK:
		T_EQ_INT(link(secret, path), 0);
		break;
	}
}

static void test_files_at_given_paths(void)
{
	bool root = geteuid() == 0;
	char dir[] = "/tmp/kvcon-given-XXXXXX";
	T_CHECK(mkdtemp(dir) != NULL);
	chmod(dir, 01777); /* a sticky shared directory, as /tmp */
	char *secret = xasprintf("%s/secret", dir);
	util_write_file_atomic(secret, "secret\n", 7, 0600);
	static const struct {
		enum prep p;
		bool needs_root;
		bool append_ok, replace_ok; /* util_open_private (logs), util_write_file_why (screenshot, bundle) */
		const char *why;            /* in the refusal */
	} rows[] = {
		{ P_NONE, false, true, true, NULL },
		{ P_OWN, false, true, true, NULL },
		{ P_OWN_0644, false, true, true, NULL },
		{ P_OWN_0666, false, false, true, "mode 0666 lets others write it" },
		{ P_OTHER, true, false, false, "owned by uid 65534, not by uid 0" },
		{ P_SYMLINK, false, false, false, "a symlink (not followed)" },
		{ P_FIFO, false, false, false, "not a regular file" },
		{ P_DIR, false, false, false, "not a regular file" },
		{ P_HARDLINK, false, false, true, "has 2 hard links" },
	};
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		if (rows[i].needs_root && !root)
			continue;
		for (int way = 0; way < 2; way++) {
			char *path = xasprintf("%s/given-%zu-%d", dir, i, way), why[UTIL_WHY_LEN] = "";
			prepare(path, rows[i].p, secret);
			bool ok;
			if (way == 0) {
				int fd = util_open_private(path, O_APPEND, false, why);
				ok = fd >= 0 && write(fd, "new\n", 4) == 4;
				if (fd >= 0)
					close(fd);
			} else {
				ok = util_write_file_why(path, "new\n", 4, 0600, why) == 0;
			}
			bool want = way == 0 ? rows[i].append_ok : rows[i].replace_ok;
			if (ok != want || (!ok && rows[i].why && strstr(why, rows[i].why) == NULL))
				fprintf(stderr, "row %zu way %d: ok %d, why \"%s\"\n", i, way, ok, why);
			T_EQ_INT(ok, want);
			if (!ok && rows[i].why)
				T_CHECK(strstr(why, rows[i].why) != NULL);
			struct stat st;
			if (ok && way == 0 && rows[i].p == P_NONE)
				T_CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600);
			if (ok && way == 0 && rows[i].p == P_OWN_0644) /* a mode its owner chose is kept */
				T_CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0644);
			if (!ok && (rows[i].p == P_OTHER || rows[i].p == P_OWN_0666)) { /* nothing written */
				char *t = util_read_file(path, NULL);
				T_EQ_STR(t, "old\n");
				free(t);
			}
			if (rows[i].p == P_HARDLINK && ok) /* replaced: the link is gone, the file it shared kept */
				T_CHECK(lstat(path, &st) == 0 && st.st_nlink == 1);
			char *t = util_read_file(secret, NULL);
			T_EQ_STR(t, "secret\n");
			free(t);
			if (rows[i].p == P_DIR)
				rmdir(path);
			else
				unlink(path);
			free(path);
		}
	}
	/* kvcon's own log (tighten): its group and other read bits go */
	char *own = xasprintf("%s/own.log", dir);
	prepare(own, P_OWN_0644, secret);
	int fd = util_open_private(own, O_APPEND, true, NULL);
	struct stat st;
	T_CHECK(fd >= 0 && fstat(fd, &st) == 0 && (st.st_mode & 0777) == 0600);
	close(fd);
	/* pre-created temporary names: the old guessable X.tmp.<pid> as a symlink to the secret and many X.tmp.* files
	 * another user made; the write takes none of them and leaves none of its own behind */
	char *x = xasprintf("%s/kc", dir), *guess = xasprintf("%s/kc.tmp.%ld", dir, (long)getpid());
	T_EQ_INT(symlink(secret, guess), 0);
	for (int i = 0; i < 64; i++) {
		char *n = xasprintf("%s/kc.tmp.%06d", dir, i);
		prepare(n, root ? P_OTHER : P_OWN_0666, secret);
		free(n);
	}
	T_EQ_INT(util_write_file_why(x, "token\n", 6, 0640, NULL), 0);
	char *t = util_read_file(x, NULL);
	T_EQ_STR(t, "token\n");
	free(t);
	T_CHECK(stat(x, &st) == 0 && (st.st_mode & 0777) == 0640 && st.st_uid == geteuid());
	t = util_read_file(secret, NULL);
	T_EQ_STR(t, "secret\n");
	free(t);
	int left = 0;
	DIR *d = opendir(dir);
	for (struct dirent *de; d && (de = readdir(d));)
		left += strncmp(de->d_name, "kc.tmp.", 7) == 0;
	closedir(d);
	T_EQ_INT(left, 65); /* the planted ones only */
	free(x);
	free(guess);
	free(own);

	/* what root reads back from a run directory given to QEMU's account */
	char *run = xasprintf("%s/run", dir);
	T_EQ_INT(mkdir(run, 0700), 0);
	if (root)
		T_EQ_INT(chown(run, NOBODY, NOBODY), 0);
	static const struct {
		enum prep p;
		bool needs_root, ok;
		const char *why;
	} reads[] = {
		{ P_OWN, false, true, NULL },
		{ P_OTHER, true, true, NULL }, /* the account's own serial log */
		{ P_THIRD, true, false, "owned by uid 65533" },
		{ P_SYMLINK, false, false, "a symlink (not followed)" },
		{ P_FIFO, false, false, "not a regular file (a FIFO)" },
		{ P_DIR, false, false, "not a regular file (a directory)" },
	};
	const uid_t owners[] = { geteuid(), UTIL_OWNER_DIR };
	for (size_t i = 0; i < sizeof reads / sizeof reads[0]; i++) {
		if (reads[i].needs_root && !root)
			continue;
		char *path = xasprintf("%s/serial.log", run), why[UTIL_WHY_LEN] = "";
		prepare(path, reads[i].p, secret);
		size_t n = 0;
		char *s = util_read_file_checked(path, owners, 2, 1024, &n, why);
		if ((s != NULL) != reads[i].ok)
			fprintf(stderr, "read row %zu: %s\n", i, why);
		T_EQ_INT(s != NULL, reads[i].ok);
		if (s)
			T_CHECK(strcmp(s, "old\n") == 0 && n == 4);
		if (!s && reads[i].why)
			T_CHECK(strstr(why, reads[i].why) != NULL);
		free(s);
		if (reads[i].p == P_DIR)
			rmdir(path);
		else
			unlink(path);
		free(path);
	}
	/* bounded: a file past max is refused, not read to the end */
	char *big = xasprintf("%s/domain.xml", run);
	prepare(big, P_OWN, secret);
	char why[UTIL_WHY_LEN] = "";
	T_CHECK(util_read_file_checked(big, owners, 2, 3, NULL, why) == NULL && errno == EFBIG);
	T_CHECK(strstr(why, "larger than 3 bytes") != NULL);
	unlink(big);
	free(big);
	rmdir(run);
	free(run);
	char *rm = xasprintf("rm -rf '%s'", dir);
	T_EQ_INT(system(rm), 0);
	free(rm);
	free(secret);
}

static void *wait_pipe(void *arg)
{
	char b;
	while (read(*(int *)arg, &b, 1) > 0) {
	}
	return NULL;
}

/* util_pid_running: a process that exited is not running, zombie or not (the starter of a service waits on it) */
static void test_pid_running(void)
{
	T_CHECK(util_pid_running(getpid()));
	pid_t c = fork();
	if (c == 0)
		_exit(0);
	T_CHECK(c > 0);
	siginfo_t si;
	/* exited, not reaped: a zombie, which kill(c, 0) still answers for */
	T_CHECK(waitid(P_PID, (id_t)c, &si, WEXITED | WNOWAIT) == 0);
	T_CHECK(kill(c, 0) == 0);
	T_CHECK(!util_pid_running(c));
	waitpid(c, NULL, 0);
	T_CHECK(!util_pid_running(c));
	/* a leader that left before its other thread (a zombie in /proc/PID/stat) is running while that thread runs:
	 * the thread holds the process's files and locks */
	int fds[2];
	T_CHECK(pipe(fds) == 0);
	c = fork();
	if (c == 0) {
		close(fds[1]);
		pthread_t th;
		if (pthread_create(&th, NULL, wait_pipe, &fds[0]) != 0)
			_exit(1);
		pthread_exit(NULL);
	}
	close(fds[0]);
	char path[64], st[256];
	snprintf(path, sizeof path, "/proc/%ld/stat", (long)c);
	bool zombie_leader = false;
	for (int i = 0; i < 5000 && !zombie_leader; i++) { /* until the leader has left */
		FILE *f = fopen(path, "r");
		char *rp = f && fgets(st, sizeof st, f) ? strrchr(st, ')') : NULL;
		zombie_leader = rp && rp[1] == ' ' && rp[2] == 'Z';
		if (f)
			fclose(f);
		if (!zombie_leader)
			usleep(1000);
	}
	T_CHECK(zombie_leader);
	T_CHECK(util_pid_running(c));
	T_CHECK(util_pid_leaving(c)); /* on its way out: what the engine's start waits for */
	T_CHECK(!util_pid_leaving(getpid()));
	close(fds[1]); /* the thread returns, the process exits */
	T_CHECK(waitid(P_PID, (id_t)c, &si, WEXITED | WNOWAIT) == 0);
	T_CHECK(!util_pid_running(c));
	T_CHECK(!util_pid_leaving(c)); /* gone: nothing to wait for */
	waitpid(c, NULL, 0);
}

/* the one base64 decoder: round trips with the encoder, padding, whitespace, the URL-safe alphabet, and what each
 * mode refuses */
static void test_b64(void)
{
	unsigned char all[256];
	for (int i = 0; i < 256; i++)
		all[i] = (unsigned char)i;
	for (size_t n = 0; n <= sizeof all; n += n < 8 ? 1 : 61) {
		char *e = util_b64_encode(all, n);
		size_t m = 99;
		char *d = util_b64_decode(e, strlen(e), &m, UTIL_B64_PADDED);
		T_CHECK(d != NULL && m == n && memcmp(d, all, n) == 0 && d[n] == '\0');
		free(d);
		free(e);
	}
	struct {
		const char *in;
		unsigned flags;
		const char *out; /* NULL: refused */
	} cases[] = {
		{ "aGVsbG8=", UTIL_B64_PADDED, "hello" },
		{ "aGVs\r\nbG8=", UTIL_B64_PADDED, "hello" },
		{ "aGVs bG8=", UTIL_B64_PADDED, NULL },  /* Go's StdEncoding skips CR and LF only */
		{ "aGVs bG8=", 0, "hello" },
		{ "aGVsbG8", UTIL_B64_PADDED, NULL },    /* unpadded */
		{ "aGVsbG8", 0, "hello" },
		{ "aGVsbA==", 0, "hell" },
		{ "aGVsbA===", 0, NULL },                /* three pads */
		{ "aGVs=bG8=", 0, NULL },                /* padding inside */
		{ "aGVsb", 0, NULL },                    /* a lone sixth of a byte */
		{ "aGV*bG8=", 0, NULL },
		{ "_-8=", 0, NULL },
		{ "_-8=", UTIL_B64_URLSAFE, "\xff\xef" },
		{ "", UTIL_B64_PADDED, "" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		size_t m = 0;
		char *d = util_b64_decode(cases[i].in, strlen(cases[i].in), &m, cases[i].flags);
		if (cases[i].out == NULL)
			T_CHECK(d == NULL);
		else
			T_CHECK(d != NULL && m == strlen(cases[i].out) && memcmp(d, cases[i].out, m) == 0);
		free(d);
	}
	/* the length given, not the string's end: a NUL inside is not base64 */
	T_CHECK(util_b64_decode("aGVs\0bG8=", 9, NULL, 0) == NULL);
}

int main(void)
{
	test_b64();
	test_pid_running();
	test_files_at_given_paths();
	test_private_files_and_escaped_output();
	test_time();
	test_escape();
	test_hmap();
	test_buf_and_files();
	test_loop();
	return T_DONE();
}
