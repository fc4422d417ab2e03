/* The engine host's environment checks (hostenv.h): packages, accounts, the embedded root's lock, a remote
 * host's port, and what a guest needs of a minimal root (ptys, a mount-point root, /var/lock). */
#include "engine/hostenv.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <libvirt/libvirt.h>
#include <netdb.h>
#include <poll.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "core/buf.h"
#include "core/util.h"
#include "core/xmalloc.h"
#include "engine/embed.h"

#define QEMU_DRIVER_MODULE "libvirt_driver_qemu.so"
/* The account Debian's QEMU driver looks up (user and group) whatever qemu.conf says; checked only when the
 * installed driver carries the name, so another distribution's build is not held to it. */
#define DEBIAN_QEMU_ACCOUNT "libvirt-qemu"
/* libvirt's console lock directory (compiled in; /run/lock behind a symlink on Debian) */
#define LOCK_DIR "/var/lock"

/* ---- the embedded driver ---- */

/* Where libvirt loads its driver modules from: $LIBVIRT_DRIVER_DIR, else next to libvirt.so. Caller frees. */
static char *driver_dir(void)
{
	const char *e = getenv("LIBVIRT_DRIVER_DIR");
	if (e && *e)
		return xstrdup(e);
	Dl_info di;
	if (dladdr((void *)virConnectOpen, &di) == 0 || di.dli_fname == NULL || strchr(di.dli_fname, '/') == NULL)
		return xstrdup("/usr/lib/x86_64-linux-gnu/libvirt/connection-driver");
	const char *slash = strrchr(di.dli_fname, '/');
	return xasprintf("%.*s/libvirt/connection-driver", (int)(slash - di.dli_fname), di.dli_fname);
}

/* Whether the file contains s as a NUL-terminated string of its own (a compiled-in constant). */
static bool file_has_cstring(const char *path, const char *s)
{
	size_t len = 0;
	char *data = util_read_file(path, &len);
	if (data == NULL)
		return false;
	size_t n = strlen(s);
	bool found = false;
	for (char *p = data; !found && (p = memmem(p, len - (size_t)(p - data), s, n + 1)) != NULL; p++)
		found = p > data && p[-1] == '\0';
	free(data);
	return found;
}

/* The first executable NAME on $PATH (or /usr/bin:/bin). Caller frees; NULL when none. */
static char *find_in_path(const char *name)
{
	const char *path = getenv("PATH");
	char *copy = xstrdup(path && *path ? path : "/usr/bin:/bin");
	char *found = NULL, *save = NULL;
	for (char *d = strtok_r(copy, ":", &save); d && found == NULL; d = strtok_r(NULL, ":", &save)) {
		char *f = util_path_join(d, name);
		struct stat st;
		if (stat(f, &st) == 0 && S_ISREG(st.st_mode) && access(f, X_OK) == 0)
			found = f;
		else
			free(f);
	}
	free(copy);
	return found;
}

/* A value of ROOT/etc/qemu.conf ("key = value" lines, strings in double quotes), or NULL. Caller frees. */
static char *conf_value(const char *root, const char *key)
{
	char *path = xasprintf("%s/etc/qemu.conf", root);
	char *text = util_read_file(path, NULL), *val = NULL;
	free(path);
	for (char *line = text, *next; line && *line && val == NULL; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		line += strspn(line, " \t");
		size_t kl = strlen(key);
		if (strncmp(line, key, kl) != 0 || strchr(" \t=", line[kl]) == NULL)
			continue;
		char *v = line + kl + strspn(line + kl, " \t");
		if (*v != '=')
			continue;
		v++;
		v += strspn(v, " \t");
		if (*v == '"')
			val = xstrndup(v + 1, strcspn(v + 1, "\""));
		else
			val = xstrndup(v, strcspn(v, "#\r"));
	}
	free(text);
	return val;
}

/* A name libvirt looks up, rather than a number it takes as it is ("+0", "107"). */
static bool is_account_name(const char *s)
{
	return s && *s && *s != '+' && s[strspn(s, "0123456789")] != '\0';
}

/* The users and groups the driver looks up that do not exist, as the commands that create them. */
static char *missing_accounts(const char *root, const char *module)
{
	const char *users[2] = { NULL }, *groups[2] = { NULL };
	int n = 0;
	char *cu = conf_value(root, "user"), *cg = conf_value(root, "group");
	if (file_has_cstring(module, DEBIAN_QEMU_ACCOUNT)) {
		users[n] = DEBIAN_QEMU_ACCOUNT;
		groups[n++] = DEBIAN_QEMU_ACCOUNT;
	}
	users[n] = is_account_name(cu) ? cu : NULL;
	groups[n++] = is_account_name(cg) ? cg : NULL;
	struct buf names, cmds;
	buf_init(&names);
	buf_init(&cmds);
	for (int i = 0; i < n; i++) {
		if (groups[i] && getgrnam(groups[i]) == NULL && (i == 0 || !util_str_eq(groups[i], groups[0]))) {
			buf_printf(&names, "%sgroup %s", names.len ? ", " : "", groups[i]);
			buf_printf(&cmds, "%sgroupadd -r %s", cmds.len ? "; " : "", groups[i]);
		}
	}
	for (int i = 0; i < n; i++) {
		if (users[i] && getpwnam(users[i]) == NULL && (i == 0 || !util_str_eq(users[i], users[0]))) {
			buf_printf(&names, "%suser %s", names.len ? ", " : "", users[i]);
			buf_printf(&cmds, "%suseradd -r%s%s -d /var/lib/libvirt -s /usr/sbin/nologin %s",
				   cmds.len ? "; " : "", groups[i] ? " -g " : "", groups[i] ? groups[i] : "", users[i]);
		}
	}
	char *msg = NULL;
	if (names.len) {
		char *e = util_escape_display(names.data), *c = util_escape_display(cmds.data);
		msg = xasprintf("libvirt's QEMU driver needs accounts that do not exist here (%s): run scripts/deps.sh "
				"as root, or: %s",
				e, c);
		free(e);
		free(c);
	}
	buf_free(&names);
	buf_free(&cmds);
	free(cu);
	free(cg);
	return msg;
}

/* The socket of `kvcon ... engine serve --socket SOCK` running as pid, else NULL (another program). Caller frees. */
static char *service_socket_of(int pid)
{
	char *cf = xasprintf("/proc/%d/cmdline", pid);
	size_t len = 0;
	char *c = util_read_file(cf, &len);
	free(cf);
	char *sock = NULL;
	bool engine = false, serve = false;
	for (size_t i = 0; c && i < len; i += strlen(c + i) + 1) {
		const char *a = c + i;
		if (strcmp(a, "engine") == 0)
			engine = true;
		else if (engine && strcmp(a, "serve") == 0)
			serve = true;
		else if (serve && strcmp(a, "--socket") == 0 && i + strlen(a) + 1 < len)
			sock = xstrdup(c + i + strlen(a) + 1);
	}
	free(c);
	return sock;
}

/* The pid of the process holding the driver's pid file lock of ROOT (libvirt admits one process per root), or 0. */
static int root_holder(const char *root)
{
	char *pf = xasprintf("%s/run/qemu/driver.pid", root);
	int fd = open(pf, O_RDWR | O_CLOEXEC);
	free(pf);
	if (fd < 0)
		return 0;
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	int pid = 0;
	if (fcntl(fd, F_GETLK, &fl) == 0 && fl.l_type != F_UNLCK)
		pid = fl.l_pid > 0 ? fl.l_pid : -1;
	if (pid < 0) { /* held from another pid namespace: the file still says who */
		char buf[32] = "";
		ssize_t r = pread(fd, buf, sizeof buf - 1, 0);
		pid = r > 0 ? atoi(buf) : -1;
	}
	close(fd);
	return pid;
}

static char *embed_problem(const char *root)
{
	char *dir = driver_dir();
	char *module = util_path_join(dir, QEMU_DRIVER_MODULE);
	free(dir);
	char *msg = NULL;
	struct utsname u;
	char *qemu = NULL;
	if (access(module, R_OK) < 0) {
		char *e = util_escape_display(module);
		msg = xasprintf("libvirt's QEMU driver is not installed (no %s): install libvirt-daemon-driver-qemu "
				"(Debian), or run scripts/deps.sh as root",
				e);
		free(e);
		goto out;
	}
	char bin[96];
	snprintf(bin, sizeof bin, "qemu-system-%s", uname(&u) == 0 ? u.machine : "x86_64");
	qemu = find_in_path(bin);
	if (qemu == NULL && access("/usr/libexec/qemu-kvm", X_OK) < 0) {
		msg = xasprintf("QEMU is not installed (no %s on the PATH): install qemu-system-x86 (Debian), or run "
				"scripts/deps.sh as root",
				bin);
		goto out;
	}
	if (geteuid() == 0 && (msg = missing_accounts(root, module)) != NULL)
		goto out;
	int pid = root_holder(root);
	/* a holder on its way out (a service just stopped, whose threads still exit holding the lock) is waited
	 * for, 10 s at most: a command run right after the stop starts its own instead of failing */
	for (int i = 0; pid > 0 && i < 200 && util_pid_leaving(pid); i++) {
		usleep(50 * 1000);
		pid = root_holder(root);
	}
	if (pid != 0) {
		char comm[64] = "";
		char *cf = xasprintf("/proc/%d/comm", pid);
		char *c = pid > 0 ? util_read_file(cf, NULL) : NULL;
		free(cf);
		if (c)
			snprintf(comm, sizeof comm, "%.*s", (int)strcspn(c, "\n"), c);
		free(c);
		char *e = util_escape_display(root), *ec = util_escape_display(comm);
		char *svc = pid > 0 ? service_socket_of(pid) : NULL;
		if (svc) {
			/* kvcon reaches a root only through the service on its own well-known socket: one elsewhere
			 * (another state directory's, or an explicit --socket) keeps this one from starting */
			char *es = util_escape_display(svc);
			msg = xasprintf("the engine root %s is in use by the engine service on %s (pid %d), not the one "
					"this kvcon would start: the embedded driver admits one process at a time; stop that "
					"service first (kill %d)",
					e, es, pid, pid);
			free(es);
			free(svc);
		} else if (pid > 0)
			msg = xasprintf("the engine root %s is in use by %s (pid %d): the embedded driver admits one "
					"process at a time; quit it first",
					e, *ec ? ec : "another process", pid);
		else
			msg = xasprintf("the engine root %s is in use by another process: the embedded driver admits "
					"one process at a time; quit it first",
					e);
		free(e);
		free(ec);
	}
out:
	free(qemu);
	free(module);
	return msg;
}

/* ---- a remote host ---- */

struct remote {
	char host[256];
	char port[8];
	const char *daemon; /* what should be listening */
};

/* Host and port a remote URI connects to; false for a local one (no host, or a unix/ext transport). */
static bool remote_of(const char *uri, struct remote *r)
{
	const char *sep = strstr(uri, "://");
	if (sep == NULL)
		return false;
	const char *plus = memchr(uri, '+', (size_t)(sep - uri));
	char transport[16] = "";
	if (plus)
		snprintf(transport, sizeof transport, "%.*s", (int)(sep - plus - 1), plus + 1);
	const char *auth = sep + 3;
	size_t alen = strcspn(auth, "/?");
	const char *at = memchr(auth, '@', alen);
	if (at) {
		alen -= (size_t)(at + 1 - auth);
		auth = at + 1;
	}
	if (strcmp(transport, "unix") == 0 || strcmp(transport, "ext") == 0)
		return false;
	if (alen == 0 && transport[0] == '\0')
		return false; /* qemu:///system, qemu:///embed?...: this machine */
	int port;
	if (strcmp(transport, "tcp") == 0) {
		port = 16509;
		r->daemon = "libvirtd with TCP on (libvirtd --listen, listen_tcp = 1)";
	} else if (transport[0] == '\0' || strcmp(transport, "tls") == 0) {
		port = 16514;
		r->daemon = "libvirtd with TLS on (libvirtd --listen, listen_tls = 1)";
	} else if (strncmp(transport, "ssh", 3) == 0 || strncmp(transport, "libssh", 6) == 0) {
		port = 22;
		r->daemon = "sshd";
	} else
		return false;
	const char *h = auth, *hend = auth + alen, *pcolon;
	if (*h == '[') { /* [v6]:port */
		const char *close = memchr(h, ']', alen);
		if (close == NULL)
			return false;
		h++;
		pcolon = close + 1 < hend && close[1] == ':' ? close + 1 : NULL;
		hend = close;
	} else {
		pcolon = memchr(h, ':', alen);
		if (pcolon)
			hend = pcolon;
	}
	if (pcolon)
		port = atoi(pcolon + 1);
	if (hend == h)
		snprintf(r->host, sizeof r->host, "localhost");
	else
		snprintf(r->host, sizeof r->host, "%.*s", (int)(hend - h), h);
	snprintf(r->port, sizeof r->port, "%d", port);
	return true;
}

/* Connects to r with a deadline: 0, or an errno (ETIMEDOUT when nothing answered); *gai for a name failure. */
static int try_connect(const struct remote *r, int *gai)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res = NULL;
	*gai = getaddrinfo(r->host, r->port, &hints, &res);
	if (*gai != 0)
		return -1;
	int err = ETIMEDOUT;
	uint64_t until = util_now_ms() + HOSTENV_CONNECT_MS;
	for (struct addrinfo *a = res; a && err != 0 && util_now_ms() < until; a = a->ai_next) {
		int fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
		if (fd < 0) {
			err = errno;
			continue;
		}
		if (connect(fd, a->ai_addr, a->ai_addrlen) == 0)
			err = 0;
		else if (errno != EINPROGRESS)
			err = errno;
		else {
			struct pollfd p = { .fd = fd, .events = POLLOUT };
			int left = (int)(until - util_now_ms());
			if (poll(&p, 1, left > 0 ? left : 0) <= 0)
				err = ETIMEDOUT;
			else {
				socklen_t sl = sizeof err;
				if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &sl) < 0)
					err = errno;
			}
		}
		close(fd);
	}
	freeaddrinfo(res);
	return err;
}

static char *remote_problem(const char *uri, const struct remote *r)
{
	int gai = 0;
	int err = try_connect(r, &gai);
	if (err == 0)
		return NULL;
	char *u = util_escape_display(uri), *h = util_escape_display(r->host), *msg;
	if (gai != 0)
		msg = xasprintf("%s: cannot resolve the host name %s (%s): check the URI", u, h, gai_strerror(gai));
	else if (err == ECONNREFUSED)
		msg = xasprintf("%s: connection refused by %s port %s: is %s running there?", u, h, r->port, r->daemon);
	else if (err == ETIMEDOUT)
		msg = xasprintf("%s: no answer from %s port %s within %d s: is the host up, and the port open?", u, h,
				r->port, HOSTENV_CONNECT_MS / 1000);
	else
		msg = xasprintf("%s: cannot reach %s port %s (%s): check the address and the network", u, h, r->port,
				strerror(err));
	free(u);
	free(h);
	return msg;
}

/* ---- a daemon on this machine ---- */

/* The unix socket a local daemon URI connects to (?socket=, else the system daemon's), or NULL for other URIs
 * (qemu:///session starts its own daemon). Caller frees. */
static char *daemon_socket(const char *uri)
{
	const char *sock = strstr(uri, "socket=");
	if (sock && (util_has_prefix(uri, "qemu:///") || util_has_prefix(uri, "qemu+unix:///")))
		return xstrndup(sock + 7, strcspn(sock + 7, "&"));
	if (strcmp(uri, "qemu:///system") == 0 || strcmp(uri, "qemu+unix:///system") == 0) {
		/* libvirt 9 tries the modular daemon's socket first */
		if (access("/run/libvirt/virtqemud-sock", F_OK) == 0)
			return xstrdup("/run/libvirt/virtqemud-sock");
		return xstrdup("/run/libvirt/libvirt-sock");
	}
	return NULL;
}

static char *daemon_problem(const char *uri, const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof sa.sun_path)
		return NULL; /* libvirt will say */
	memcpy(sa.sun_path, path, strlen(path) + 1);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int err = fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0 ? 0 : errno;
	if (fd >= 0)
		close(fd);
	if (err == 0 || err == EACCES || err == EPERM)
		return NULL; /* there; libvirt reports what access it gets */
	char *u = util_escape_display(uri), *p = util_escape_display(path);
	char *msg = xasprintf("%s: no libvirt daemon answers on %s (%s): start it (libvirtd -d, or systemctl start "
			      "libvirtd), or leave out -c for kvcon's embedded engine",
			      u, p, strerror(err));
	free(u);
	free(p);
	return msg;
}

char *hostenv_problem(const char *uri)
{
	char *root = embed_uri_root(uri), *sock, *msg = NULL;
	struct remote r;
	if (root)
		msg = embed_problem(root);
	else if ((sock = daemon_socket(uri)) != NULL) {
		msg = daemon_problem(uri, sock);
		free(sock);
	} else if (remote_of(uri, &r))
		msg = remote_problem(uri, &r);
	free(root);
	return msg;
}

/* ---- what a guest needs of this machine ---- */

/* A pseudo-terminal pair can be made and its terminal side opened, as QEMU's "pty" chardev does. */
static int pty_works(void)
{
	int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (m < 0)
		return errno;
	int err = 0;
	char *name = NULL;
	if (grantpt(m) < 0 || unlockpt(m) < 0 || (name = ptsname(m)) == NULL)
		err = errno ? errno : EIO;
	else {
		int s = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
		if (s < 0)
			err = errno;
		else
			close(s);
	}
	close(m);
	return err;
}

/* "/" is a mount point of this mount namespace (a chroot into a plain directory is not). */
static bool root_is_mount(void)
{
	char *mi = util_read_file("/proc/self/mountinfo", NULL);
	if (mi == NULL)
		return true; /* no /proc: nothing to say here */
	bool found = false;
	for (char *line = mi, *next; line && *line && !found; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		/* id parent major:minor root mountpoint ... */
		char mp[8];
		found = sscanf(line, "%*s %*s %*s %*s %7s", mp) == 1 && strcmp(mp, "/") == 0;
	}
	free(mi);
	return found;
}

char *hostenv_guest_problem(const char *uri)
{
	char *root = embed_uri_root(uri);
	if (root == NULL)
		return NULL;
	char *msg = NULL, *ns = conf_value(root, "namespaces"), *er = util_escape_display(root);
	bool mount_ns = geteuid() == 0 && !(ns && ns[strspn(ns, "[ ]")] == '\0');
	free(ns);
	int err = pty_works();
	struct stat st;
	if (err)
		msg = xasprintf("cannot start guests: no usable pseudo-terminal here (%s), and QEMU's serial console "
				"needs one: mount a devpts of this root's own (mount -t devpts -o "
				"newinstance,ptmxmode=0666 devpts /dev/pts; mount --bind /dev/pts/ptmx /dev/ptmx)",
				strerror(err));
	else if (mount_ns && !root_is_mount())
		msg = xasprintf("cannot start guests: / is not a mount point, and libvirt gives each guest a mount "
				"namespace made from it: bind-mount the root onto itself before entering it (mount "
				"--bind ROOT ROOT), or set namespaces = [ ] in %s/etc/qemu.conf",
				er);
	else if (stat(LOCK_DIR "/", &st) < 0 || access(LOCK_DIR "/", W_OK) < 0)
		msg = xasprintf("cannot start guests: %s is missing or not writable (%s), and libvirt locks each "
				"guest's console there: mkdir -p /run/lock (where %s points on Debian)",
				LOCK_DIR, strerror(errno), LOCK_DIR);
	free(er);
	free(root);
	return msg;
}
