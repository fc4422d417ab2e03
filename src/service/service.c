/* The engine service as its clients see it (see service.h): its well-known socket per root, kvcon-engine beside
 * kvcon, and the one place a client starts it. */
#include "service/service.h"
#include "core/log.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/buf.h"
#include "core/util.h"
#include "core/xmalloc.h"
#include "service/settings.h"

#define ENGINE_SERVICE_READY_MS 120000 /* the embedded driver's first open probes QEMU (~1 min on a cold cache) */

char *engine_service_uris(char *const *uris, int n)
{
	struct buf b;
	buf_init(&b);
	if (n > 0) {
		for (int i = 0; i < n; i++)
			buf_printf(&b, "%s%s", i ? "\n" : "", uris[i]);
	} else {
		const char *e = getenv("KVCON_ENGINE_URI");
		if (e == NULL || *e == '\0')
			e = getenv("LIBVIRT_DEFAULT_URI");
		if (e && *e) {
			buf_printf(&b, "%s", e);
		} else {
			char *state = util_state_dir();
			buf_printf(&b, "qemu:///embed?root=%s/engine", state);
			free(state);
		}
	}
	buf_add(&b, "", 0);
	return buf_steal(&b);
}

/* Where a socket goes when the usual directory is too deep for sun_path: root's /run/kvcon-0 (as the guests'
 * display sockets, engine/domxml.c), else $XDG_RUNTIME_DIR/kvcon, else /tmp/kvcon-UID. Caller frees. */
static char *short_dir(void)
{
	const char *rt = getenv("XDG_RUNTIME_DIR");
	if (geteuid() == 0)
		return xstrdup("/run/kvcon-0");
	if (rt && *rt == '/' && strlen(rt) < 64)
		return util_path_join(rt, "kvcon");
	return xasprintf("/tmp/kvcon-%u", (unsigned)geteuid());
}

/* dir exists (made 0700 if not), is a directory of this user's and nobody else may write in it: a socket there is
 * the one our service made (in /tmp another user could have made the directory first) */
static bool private_dir(const char *dir)
{
	util_mkdir_p(dir, 0700);
	struct stat sb;
	if (lstat(dir, &sb) == 0 && S_ISDIR(sb.st_mode) && sb.st_uid == geteuid() && (sb.st_mode & 022) == 0)
		return true;
	log_warn("engine service: %s is not a private directory of this user's: not used for the socket", dir);
	return false;
}

char *engine_service_socket(char *const *uris, int n)
{
	/* the root as engine_open resolves it, with the state directory (where the records are) */
	char *state = util_state_dir();
	char *u = engine_service_uris(uris, n);
	struct buf key;
	buf_init(&key);
	buf_printf(&key, "%s\n%s\n", state, u);
	free(u);
	uint64_t h = 1469598103934665603ULL;
	for (size_t i = 0; i < key.len; i++)
		h = (h ^ (unsigned char)key.data[i]) * 1099511628211ULL;
	buf_free(&key);
	const char *rt = getenv("XDG_RUNTIME_DIR");
	char *dir = rt && *rt == '/' ? util_path_join(rt, "kvcon") : xstrdup(state);
	char *p = xasprintf("%s/engine-%016" PRIx64 ".sock", dir, h);
	free(dir);
	free(state);
	struct sockaddr_un sa;
	if (strlen(p) >= sizeof sa.sun_path) {
		/* too deep for a unix socket: a short directory of our own (the hash keeps roots apart) */
		char *base = short_dir();
		if (private_dir(base)) {
			free(p);
			p = xasprintf("%s/engine-%016" PRIx64 ".sock", base, h);
		}
		free(base);
	}
	return p;
}

enum engine_service_mode engine_service_mode(void)
{
	char *v = engine_setting("KVCON_ENGINE_SERVICE", "engine.service");
	/* "off" was the in-process engine, which is gone: it means what it always did for services, none started */
	enum engine_service_mode m = v && (strcmp(v, "use") == 0 || strcmp(v, "off") == 0) ? ENGINE_SERVICE_USE
											     : ENGINE_SERVICE_AUTO;
	free(v);
	return m;
}

long engine_service_idle_exit(void)
{
	char *v = engine_setting("KVCON_ENGINE_IDLE_EXIT", "engine.idle-exit");
	long s = ENGINE_SERVICE_IDLE_DEFAULT;
	if (v && *v) {
		char *end = NULL;
		errno = 0;
		long n = strtol(v, &end, 10);
		if (errno == 0 && end && *end == '\0' && n >= 0 && n <= 100L * 365 * 86400)
			s = n;
	}
	free(v);
	return s;
}

/* What a service that exited before it answered said last: the last "error:" line it wrote to its log after
 * offset `from` (*is_error set), else its last line, without the prefix; NULL when it wrote nothing. Caller
 * frees. */
static char *last_words(const char *logp, off_t from, bool *is_error)
{
	*is_error = false;
	int fd = open(logp, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	struct buf b;
	buf_init(&b);
	char chunk[4096];
	ssize_t r;
	if (lseek(fd, from, SEEK_SET) == from)
		while (b.len < (1u << 20) && (r = read(fd, chunk, sizeof chunk)) > 0)
			buf_add(&b, chunk, (size_t)r);
	close(fd);
	char *err = NULL, *last = NULL, *save = NULL;
	buf_add(&b, "", 1);
	for (char *l = strtok_r(b.data, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		if (util_has_prefix(l, "error: "))
			err = l + 7;
		else if (util_has_prefix(l, "kvcon: "))
			last = l + 7;
		else if (*l)
			last = l;
	}
	*is_error = err != NULL;
	char *out = err ? xstrdup(err) : last ? xstrdup(last) : NULL;
	buf_free(&b);
	return out;
}

char *engine_exe(char **err)
{
	char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n <= 0) {
		*err = xasprintf("cannot find kvcon's own executable: %s", strerror(errno));
		return NULL;
	}
	self[n] = '\0';
	char *slash = strrchr(self, '/');
	char *exe = xasprintf("%.*s/" ENGINE_EXE, slash ? (int)(slash - self) : 1, slash ? self : ".");
	if (access(exe, X_OK) < 0) {
		*err = xasprintf("%s: %s (the engine's executable is installed beside kvcon)", exe, strerror(errno));
		free(exe);
		return NULL;
	}
	return exe;
}

static long ms_since(const struct timespec *t0)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (now.tv_sec - t0->tv_sec) * 1000 + (now.tv_nsec - t0->tv_nsec) / 1000000;
}

static int engine_service_spawn(char *const *uris, int n, const char *sock, int (*probe)(const char *sock),
				long timeout_ms, char **err)
{
	char *exe = engine_exe(err);
	if (exe == NULL)
		return -1;
	int np[2] = { -1, -1 }; /* the notify pipe (ENGINE_NOTIFY_FD) */
	char *state = util_state_dir();
	util_mkdir_p(state, 0700);
	char *slash = strrchr(sock, '/');
	char *sdir = slash ? xstrndup(sock, (size_t)(slash - sock)) : xstrdup(".");
	util_mkdir_p(sdir, 0700);
	free(sdir);
	/* one starter at a time per root: a second kvcon waits here, then finds the first one's service */
	char *lockp = xasprintf("%s.lock", sock);
	int lfd = open(lockp, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	free(lockp);
	if (lfd >= 0)
		while (flock(lfd, LOCK_EX) < 0 && errno == EINTR)
			;
	if (probe(sock)) {
		if (lfd >= 0)
			close(lfd);
		free(state);
		free(exe);
		return 0;
	}
	/* what keeps this machine from running the root (engine_check: no QEMU, the root held by another process, a
	 * -c host that refuses) is the service's first check, said as its error line before it touches anything */
	char *logp = util_path_join(state, "engine-serve.log");
	struct stat lst;
	off_t log_from = stat(logp, &lst) == 0 ? lst.st_size : 0;
	char idle[32];
	snprintf(idle, sizeof idle, "%ld", engine_service_idle_exit());
	char **argv = xcalloc((size_t)n * 2 + 8, sizeof *argv);
	int k = 0;
	argv[k++] = exe;
	for (int i = 0; i < n; i++) {
		argv[k++] = (char *)"-c";
		argv[k++] = uris[i];
	}
	argv[k++] = (char *)"engine";
	argv[k++] = (char *)"serve";
	argv[k++] = (char *)"--socket";
	argv[k++] = (char *)sock;
	argv[k++] = (char *)"--idle-exit";
	argv[k++] = idle;
	argv[k++] = (char *)"--on-demand"; /* an explicit `engine serve` may take its place */
	int pp[2];
	if (pipe2(pp, O_CLOEXEC) < 0) {
		*err = xasprintf("pipe: %s", strerror(errno));
		goto fail;
	}
	if (pipe2(np, O_CLOEXEC) < 0) {
		*err = xasprintf("pipe: %s", strerror(errno));
		close(pp[0]);
		close(pp[1]);
		np[0] = -1;
		goto fail;
	}
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		*err = xasprintf("fork: %s", strerror(errno));
		close(pp[0]);
		close(pp[1]);
		close(np[0]);
		close(np[1]);
		np[0] = -1;
		goto fail;
	}
	if (pid == 0) {
		/* the middle child: a new session, and the service as its child, so that nobody waits for it; the
		 * service's pid goes back on the pipe (the service writes SOCKET.pid itself once it listens) */
		setsid();
		pid_t g = fork();
		if (g != 0) {
			long gl = (long)g;
			ssize_t wr = write(pp[1], &gl, sizeof gl);
			_exit(g < 0 || wr != (ssize_t)sizeof gl ? 1 : 0);
		}
		int in = open("/dev/null", O_RDONLY | O_CLOEXEC);
		int out = util_open_private(logp, O_APPEND, true, NULL); /* no symlink, FIFO or foreign file */
		if (in >= 0)
			dup2(in, 0);
		if (out >= 0) {
			dup2(out, 1);
			dup2(out, 2);
		}
		for (int fd = 3; fd < 1024; fd++) /* none of the caller's connections, terminal or lock */
			if (fd != np[1])
				close(fd);
		/* but the notify pipe, as ENGINE_NOTIFY_FD without close-on-exec (dup2 clears it) */
		if (np[1] == ENGINE_NOTIFY_FD)
			fcntl(np[1], F_SETFD, 0);
		else if (dup2(np[1], ENGINE_NOTIFY_FD) == ENGINE_NOTIFY_FD)
			close(np[1]);
		char fdnum[16];
		snprintf(fdnum, sizeof fdnum, "%d", ENGINE_NOTIFY_FD);
		setenv("KVCON_ENGINE_NOTIFY_FD", fdnum, 1);
		execv(exe, argv);
		_exit(127);
	}
	close(pp[1]);
	close(np[1]);
	long spid = 0;
	ssize_t rd;
	while ((rd = read(pp[0], &spid, sizeof spid)) < 0 && errno == EINTR)
		;
	close(pp[0]);
	int st = 0;
	waitpid(pid, &st, 0);
	if (rd != (ssize_t)sizeof spid || spid <= 0) {
		*err = xstrdup("could not start the engine service (fork)");
		goto fail;
	}
	/* the embedded driver's first open may probe QEMU for a minute: wait for the service's answer */
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	bool ended = false; /* the notify pipe's end: the service serves, or it exited */
	for (;;) {
		if (probe(sock))
			break;
		/* a service that could not start (the root in use, a bad URI) says why in its log; one that does not
		 * know the notify pipe (an older kvcon-engine) ends the wait only by its pid */
		if ((ended || !util_pid_running((pid_t)spid)) && !probe(sock)) {
			/* its own error line is what the engine refused and how to fix it (what the engine in-process
			 * said): the user sees that alone, as from any command; anything else with where to read more */
			bool is_error;
			char *said = last_words(logp, log_from, &is_error);
			*err = said && is_error ? xstrdup(said)
			       : said ? xasprintf("the engine service could not start: %s (its log: %s)", said, logp)
				      : xasprintf("the engine service exited before it answered on %s (its log: %s)", sock,
						  logp);
			free(said);
			goto fail;
		}
		if (ms_since(&t0) > timeout_ms) {
			*err = xasprintf("the engine service started on demand did not answer on %s within %ld s (see %s)", sock,
					 timeout_ms / 1000, logp);
			goto fail;
		}
		if (ended) {
			struct timespec nap = { 0, 100 * 1000 * 1000 };
			nanosleep(&nap, NULL);
		} else {
			/* the pipe's end at once, else another look every 100 ms */
			struct pollfd pf = { .fd = np[0], .events = POLLIN };
			char b;
			if (poll(&pf, 1, 100) > 0 && read(np[0], &b, 1) <= 0)
				ended = true;
		}
	}
	close(np[0]);
	free(argv);
	free(logp);
	free(state);
	free(exe);
	if (lfd >= 0)
		close(lfd);
	return 0;
fail:
	if (np[0] >= 0)
		close(np[0]);
	free(exe);
	free(argv);
	free(logp);
	free(state);
	if (lfd >= 0)
		close(lfd);
	return -1;
}

/* The service of an engine set that holds uri: each host's service.lock (engine-data/hosts/KEY/service.lock,
 * written by the engine process that holds it: engine.c's ehost_own) names its URI, its Node's name and the
 * socket its service answers on. That socket when it answers (*host: the host's name), else NULL. Caller frees
 * both. */
static char *set_service_for(const char *uri, int (*probe)(const char *sock), char **host)
{
	char *dd = esettings_data_dir(), *dir = util_path_join(dd, "hosts");
	free(dd);
	DIR *d = opendir(dir);
	char *found = NULL;
	uid_t me = geteuid();
	for (struct dirent *e; d && found == NULL && (e = readdir(d));) {
		if (e->d_name[0] == '.')
			continue;
		char *lp = xasprintf("%s/%s/service.lock", dir, e->d_name), why[UTIL_WHY_LEN];
		char *text = util_read_file_checked(lp, &me, 1, 4096, NULL, why);
		free(lp);
		const char *sock = NULL, *name = NULL;
		bool same = false;
		char *save = NULL;
		for (char *l = text ? strtok_r(text, "\n", &save) : NULL; l; l = strtok_r(NULL, "\n", &save)) {
			if (util_has_prefix(l, "socket "))
				sock = l + 7;
			else if (util_has_prefix(l, "host "))
				name = l + 5;
			else if (util_has_prefix(l, "uri "))
				same = strcmp(l + 4, uri) == 0;
		}
		bool plain = name && *name && strlen(name) <= 253; /* a path segment of the requests: a host name */
		for (const char *c = name; plain && *c; c++)
			plain = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
				strchr("-._~", *c);
		if (same && sock && *sock == '/' && plain && access(sock, F_OK) == 0 && probe(sock)) {
			found = xstrdup(sock);
			*host = xstrdup(name);
		}
		free(text);
	}
	if (d)
		closedir(d);
	free(dir);
	return found;
}

char *engine_service_ensure(char *const *uris, int n, int (*probe)(const char *sock), char **host, char **err)
{
	*err = NULL;
	*host = NULL;
	char *path = engine_service_socket(uris, n);
	if (access(path, F_OK) == 0 && probe(path))
		return path;
	/* -c HOST when a set's service holds HOST: through that service, limited to HOST (a service of HOST alone
	 * would be refused: one engine process per host) */
	char *set = n == 1 ? set_service_for(uris[0], probe, host) : NULL;
	if (set) {
		free(path);
		return set;
	}
	if (engine_service_mode() != ENGINE_SERVICE_AUTO)
		*err = xasprintf("no engine service answers on %s (engine.service = use): start one with `kvcon engine "
				 "serve`, or set engine.service = auto",
				 path);
	else if (engine_service_spawn(uris, n, path, probe, ENGINE_SERVICE_READY_MS, err) == 0)
		return path;
	free(path);
	return NULL;
}

char *engine_service_file(const char *state, const char *sock, const char *prefix)
{
	uint64_t h = 1469598103934665603ull;
	for (const unsigned char *p = (const unsigned char *)sock; *p; p++)
		h = (h ^ *p) * 1099511628211ull;
	char *name = xasprintf("%s-%016llx", prefix, (unsigned long long)h);
	char *path = util_path_join(state, name);
	free(name);
	return path;
}

static int notify_fd = -1; /* the service's end of its starter's notify pipe, while it has not served yet */

void engine_service_notify_take(void)
{
	const char *e = getenv("KVCON_ENGINE_NOTIFY_FD");
	struct stat st;
	if (e && atoi(e) == ENGINE_NOTIFY_FD && fstat(ENGINE_NOTIFY_FD, &st) == 0 && S_ISFIFO(st.st_mode) &&
	    fcntl(ENGINE_NOTIFY_FD, F_SETFD, FD_CLOEXEC) == 0)
		notify_fd = ENGINE_NOTIFY_FD;
	unsetenv("KVCON_ENGINE_NOTIFY_FD");
}

void engine_service_notify_ready(void)
{
	if (notify_fd >= 0)
		close(notify_fd);
	notify_fd = -1;
}
