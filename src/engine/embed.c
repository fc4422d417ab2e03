/* The embedded driver's root made ready before it is opened, and the unprivileged account QEMU runs as there. */
#include "engine/embed.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "core/log.h"
#include "core/util.h"
#include "core/xmalloc.h"

#define CONF_MARK "# written by kvcon"

/* Texts earlier versions wrote: kvcon's own owns them too (rewritten when the account changes). */
static const char *const legacy_conf[] = {
	"user = \"root\"\ngroup = \"root\"\ndynamic_ownership = 0\nremember_owner = 0\nsecurity_driver = \"none\"\n"
	"stdio_handler = \"file\"\ncgroup_controllers = [ ]\n",
	"stdio_handler = \"file\"\ncgroup_controllers = [ ]\n",
};

void embed_account_clear(struct embed_account *a)
{
	free(a->user);
	free(a->group);
	free(a->groups);
	memset(a, 0, sizeof *a);
}

int embed_account_resolve(const char *spec, struct embed_account *a, char **err)
{
	memset(a, 0, sizeof *a);
	if (geteuid() != 0) {
		a->same = true; /* libvirt runs QEMU as the caller */
		a->uid = geteuid();
		a->gid = getegid();
		return 0;
	}
	if (spec == NULL || *spec == '\0')
		spec = EMBED_DEFAULT_USER ":" EMBED_DEFAULT_GROUP;
	size_t ul = strcspn(spec, ":");
	char *user = xstrndup(spec, ul);
	char *group = spec[ul] == ':' && spec[ul + 1] ? xstrdup(spec + ul + 1) : NULL;
	/* the _r forms: the worker threads of several hosts may resolve at once */
	char buf[4096];
	struct passwd pwd, *pw = NULL;
	struct group grp, *gr = NULL;
	if (getpwnam_r(user, &pwd, buf, sizeof buf, &pw) != 0 || pw == NULL) {
		*err = xasprintf("the account QEMU runs as, '%s', does not exist: create it (scripts/deps.sh does) or name "
				 "another with engine.qemu-user",
				 user);
		goto fail;
	}
	a->uid = pw->pw_uid;
	a->gid = pw->pw_gid;
	if (group) {
		if (getgrnam_r(group, &grp, buf, sizeof buf, &gr) != 0 || gr == NULL) {
			*err = xasprintf("the group QEMU runs as, '%s' (engine.qemu-user), does not exist", group);
			goto fail;
		}
		a->gid = gr->gr_gid;
	} else {
		group = getgrgid_r(a->gid, &grp, buf, sizeof buf, &gr) == 0 && gr ? xstrdup(gr->gr_name)
										  : xasprintf("%u", (unsigned)a->gid);
	}
	a->user = user;
	a->group = group;
	a->same = a->uid == 0;
	int n = 16;
	for (int tries = 0; tries < 4; tries++) {
		free(a->groups);
		a->groups = xcalloc((size_t)n, sizeof *a->groups);
		int got = n;
		if (getgrouplist(a->user, a->gid, a->groups, &got) >= 0) {
			a->ngroups = got;
			break;
		}
		n = got > n ? got : n * 2;
	}
	return 0;
fail:
	free(user);
	free(group);
	return -1;
}

char *embed_conf_text(const struct embed_account *a)
{
	/* stdio_handler file: there is no virtlogd for an embedded driver; no cgroups: a process, not a service */
	const char *tail = "stdio_handler = \"file\"\ncgroup_controllers = [ ]\n";
	if (geteuid() != 0)
		return xasprintf(CONF_MARK ": QEMU runs as the calling user\n%s", tail);
	if (a->same) /* root by choice: as before, no relabelling */
		return xasprintf(CONF_MARK ": QEMU runs as root (engine.qemu-user)\nuser = \"root\"\ngroup = \"root\"\n"
				 "dynamic_ownership = 0\nremember_owner = 0\nsecurity_driver = \"none\"\n%s",
				 tail);
	/* libvirt's DAC driver gives the account every file the guest uses while it runs, and root after. Not
	 * remember_owner: its reference count lives in the file's xattrs, and a QEMU that dies while no kvcon holds
	 * the root (or an image shared by hard links between roots) leaves a count that later refuses the file
	 * ("Setting different DAC user or group ... already in use"). No SELinux/AppArmor driver on these hosts. */
	return xasprintf(CONF_MARK ": QEMU runs as an unprivileged account (engine.qemu-user)\nuser = \"%s\"\n"
			 "group = \"%s\"\ndynamic_ownership = 1\nremember_owner = 0\nsecurity_driver = \"none\"\n%s",
			 a->user, a->group, tail);
}

static bool conf_is_ours(const char *text)
{
	if (util_has_prefix(text, CONF_MARK) || util_has_prefix(text, "# written by tests/lab/embed-warm.sh") ||
	    util_has_prefix(text, "# written by scripts/embed-warm.sh"))
		return true;
	for (size_t i = 0; i < sizeof legacy_conf / sizeof legacy_conf[0]; i++)
		if (strcmp(text, legacy_conf[i]) == 0)
			return true;
	return false;
}

static int write_conf(const char *root, const struct embed_account *a, char **err)
{
	char *etc = util_path_join(root, "etc");
	char *conf = util_path_join(etc, "qemu.conf");
	char *want = embed_conf_text(a);
	char *have = util_read_file(conf, NULL);
	int rc = 0;
	if (have && strcmp(have, want) == 0)
		goto out;
	if (have && !conf_is_ours(have)) {
		log_info("engine: %s is not kvcon's: kept as it is", conf);
		goto out;
	}
	util_mkdir_p(etc, 0755);
	if (util_write_file_atomic(conf, want, strlen(want), 0644) < 0) {
		*err = xasprintf("%s: %s", conf, strerror(errno));
		rc = -1;
	} else
		log_info("engine: wrote %s (%s)", conf, have ? "the account changed" : "new root");
out:
	free(have);
	free(want);
	free(conf);
	free(etc);
	return rc;
}

/* ---- the account's way to a directory ---- */

/* Index+1 of the first of dirs[0..n) (each the parent of the next) the account cannot search; 0 when it can
 * search all. The check runs in a child that becomes the account, so the kernel answers (modes, ACLs). */
static int first_blocked(const struct embed_account *a, char *const dirs[], int n, int mode)
{
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		if (setgroups((size_t)a->ngroups, a->groups) < 0 || setgid(a->gid) < 0 || setuid(a->uid) < 0)
			_exit(255);
		for (int i = 0; i < n; i++)
			if (access(dirs[i], mode) < 0)
				_exit(i + 1);
		_exit(0);
	}
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	if (!WIFEXITED(st) || WEXITSTATUS(st) == 255)
		return -1;
	return WEXITSTATUS(st);
}

/* POSIX ACL in its xattr form (linux/posix_acl_xattr.h): a version word, then sorted entries. */
#define ACL_XATTR "system.posix_acl_access"
#define ACL_VERSION 2
enum { TAG_USER_OBJ = 1, TAG_USER = 2, TAG_GROUP_OBJ = 4, TAG_GROUP = 8, TAG_MASK = 16, TAG_OTHER = 32 };
struct acl_ent {
	uint16_t tag, perm;
	uint32_t id;
};

static int ent_cmp(const void *x, const void *y)
{
	const struct acl_ent *a = x, *b = y;
	if (a->tag != b->tag)
		return a->tag < b->tag ? -1 : 1;
	return a->id < b->id ? -1 : a->id > b->id;
}

/* Adds PERM (r=4 w=2 x=1) for user UID to PATH's access ACL (starting from its mode bits when it has none),
 * keeping the rest. */
static int acl_add(const char *dir, uid_t uid, uint16_t perm)
{
	struct stat st;
	if (stat(dir, &st) < 0)
		return -1;
	struct acl_ent e[64];
	int n = 0;
	unsigned char buf[4 + sizeof e];
	ssize_t len = getxattr(dir, ACL_XATTR, buf, sizeof buf);
	if (len >= 4 && (size_t)(len - 4) % 8 == 0) {
		for (ssize_t off = 4; off < len; off += 8) {
			memcpy(&e[n].tag, buf + off, 2);
			memcpy(&e[n].perm, buf + off + 2, 2);
			memcpy(&e[n].id, buf + off + 4, 4);
			n++;
		}
	} else {
		if (len < 0 && errno != ENODATA && errno != ENOTSUP)
			return -1;
		e[n++] = (struct acl_ent){ TAG_USER_OBJ, (uint16_t)((st.st_mode >> 6) & 7), UINT32_MAX };
		e[n++] = (struct acl_ent){ TAG_GROUP_OBJ, (uint16_t)((st.st_mode >> 3) & 7), UINT32_MAX };
		e[n++] = (struct acl_ent){ TAG_OTHER, (uint16_t)(st.st_mode & 7), UINT32_MAX };
	}
	bool have_user = false, have_mask = false;
	uint16_t group_obj = 0;
	for (int i = 0; i < n; i++) {
		if (e[i].tag == TAG_USER && e[i].id == (uint32_t)uid) {
			e[i].perm |= perm;
			have_user = true;
		}
		if (e[i].tag == TAG_MASK) {
			e[i].perm |= perm;
			have_mask = true;
		}
		if (e[i].tag == TAG_GROUP_OBJ)
			group_obj = e[i].perm;
	}
	if (!have_user && n < 62)
		e[n++] = (struct acl_ent){ TAG_USER, perm, (uint32_t)uid };
	if (!have_mask && n < 63) /* the mask bounds named entries and the owning group: theirs, plus PERM */
		e[n++] = (struct acl_ent){ TAG_MASK, (uint16_t)(group_obj | perm), UINT32_MAX };
	qsort(e, (size_t)n, sizeof e[0], ent_cmp);
	uint32_t v = ACL_VERSION;
	memcpy(buf, &v, 4);
	for (int i = 0; i < n; i++) {
		memcpy(buf + 4 + i * 8, &e[i].tag, 2);
		memcpy(buf + 4 + i * 8 + 2, &e[i].perm, 2);
		memcpy(buf + 4 + i * 8 + 4, &e[i].id, 4);
	}
	return setxattr(dir, ACL_XATTR, buf, 4 + (size_t)n * 8, 0);
}

bool embed_dir_private(const char *path, mode_t mode)
{
	if (mode & 07)
		return false;
	unsigned char buf[4 + 64 * 8];
	ssize_t len = getxattr(path, ACL_XATTR, buf, sizeof buf);
	if (len < 4 || (size_t)(len - 4) % 8 != 0)
		return (mode & 070) == 0;
	for (ssize_t off = 4; off < len; off += 8) {
		struct acl_ent e;
		memcpy(&e.tag, buf + off, 2);
		memcpy(&e.perm, buf + off + 2, 2);
		if (((e.tag == TAG_GROUP_OBJ || e.tag == TAG_GROUP || e.tag == TAG_OTHER) && e.perm) ||
		    (e.tag == TAG_USER && (e.perm & ~1)))
			return false;
	}
	return true;
}

int embed_reach(const struct embed_account *a, const char *dir, char **err)
{
	if (a->same)
		return 0;
	/* "/", "/a", "/a/b", ... DIR */
	char *path = realpath(dir, NULL);
	if (path == NULL) {
		*err = xasprintf("%s: %s", dir, strerror(errno));
		return -1;
	}
	int n = 1;
	for (char *s = path + 1; *s; s++)
		n += *s == '/';
	char **dirs = xcalloc((size_t)n + 1, sizeof *dirs);
	int k = 0;
	dirs[k++] = xstrdup("/");
	for (char *s = path + 1; *s; s++)
		if (s[1] == '/' || s[1] == '\0')
			dirs[k++] = xstrndup(path, (size_t)(s - path) + 1);
	int rc = 0, last = 0, i;
	while ((i = first_blocked(a, dirs, k, X_OK)) != 0) {
		if (i < 0 || i == last) {
			*err = xasprintf("the account QEMU runs as (%s) cannot reach %s%s", a->user,
					 i > 0 ? dirs[i - 1] : dir, i == last ? " (a search ACL entry did not help)" : "");
			rc = -1;
			break;
		}
		if (acl_add(dirs[i - 1], a->uid, 1) < 0) {
			*err = xasprintf("cannot let the account QEMU runs as (%s) reach %s: %s", a->user, dirs[i - 1],
					 strerror(errno));
			rc = -1;
			break;
		}
		log_info("engine: %s may now search %s (ACL user:%s:--x)", a->user, dirs[i - 1], a->user);
		last = i;
	}
	for (int j = 0; j < k; j++)
		free(dirs[j]);
	free(dirs);
	free(path);
	return rc;
}

int embed_own_dir(const struct embed_account *a, const char *dir, char **err)
{
	if (util_mkdir_p(dir, 0700) < 0) {
		*err = xasprintf("%s: %s", dir, strerror(errno));
		return -1;
	}
	if (a->same)
		return 0;
	char *parent = xstrdup(dir);
	char *slash = strrchr(parent, '/');
	if (slash && slash != parent)
		*slash = '\0';
	int rc = embed_reach(a, parent, err);
	free(parent);
	if (rc == 0 && (chown(dir, a->uid, a->gid) < 0 || chmod(dir, 0700) < 0)) {
		*err = xasprintf("%s: %s", dir, strerror(errno));
		rc = -1;
	}
	return rc;
}

/* libvirt probes QEMU's capabilities keeping root's access to /dev/kvm, but judges its cache by whether the
 * account can open /dev/kvm: when only root can, every lookup finds the cache outdated and probes again (seconds
 * each, a dozen times for one start). So the account gets /dev/kvm as udev's rule gives it to group kvm on a
 * usual Debian host: where it cannot open it, one ACL entry user:ACCOUNT:rw- (a device node, reset at boot). */
const char *embed_kvm_path = "/dev/kvm";

static void kvm_access(const struct embed_account *a)
{
	char *dev[] = { (char *)embed_kvm_path };
	if (a->same || access(dev[0], F_OK) < 0 || first_blocked(a, dev, 1, R_OK | W_OK) == 0)
		return;
	if (acl_add(dev[0], a->uid, 6) < 0)
		log_warn("engine: cannot give %s %s (%s): every start probes QEMU again; make it root:%s 0660", a->user,
			 dev[0], strerror(errno), EMBED_DEFAULT_GROUP);
	else
		log_info("engine: %s may now use %s (ACL user:%s:rw-)", a->user, dev[0], a->user);
}

int embed_prepare(const char *root, const char *spec, char **err)
{
	struct embed_account a;
	if (embed_account_resolve(spec, &a, err) < 0)
		return -1;
	int rc = -1;
	if (util_mkdir_p(root, 0700) < 0) {
		*err = xasprintf("%s: %s", root, strerror(errno));
		goto out;
	}
	if (write_conf(root, &a, err) < 0 || embed_reach(&a, root, err) < 0)
		goto out;
	kvm_access(&a);
	rc = 0;
out:
	embed_account_clear(&a);
	return rc;
}

/* Whether process pid runs with an argument that begins with prefix. */
static bool proc_has_arg(long pid, const char *prefix)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%ld/cmdline", pid);
	size_t len = 0;
	char *c = util_read_file(path, &len);
	bool found = false;
	for (size_t i = 0; c && i < len && !found; i += strlen(c + i) + 1)
		found = strncmp(c + i, prefix, strlen(prefix)) == 0;
	free(c);
	return found;
}

int embed_reap_probes(const char *root)
{
	char *pf = xasprintf("%s/run/qemu/driver.pid", root), *lib = xasprintf("%s/lib/qemu", root);
	int n = 0, fd = open(pf, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	DIR *d = fd >= 0 && fcntl(fd, F_SETLK, &fl) == 0 ? opendir(lib) : NULL; /* held: a live driver's probes */
	struct dirent *de;
	while (d && (de = readdir(d))) {
		if (strncmp(de->d_name, "qmp-", 4) != 0 || strchr(de->d_name, '/'))
			continue;
		char *dir = xasprintf("%s/%s", lib, de->d_name), *pidf = xasprintf("%s/qmp.pid", dir);
		char *mon = xasprintf("%s/qmp.monitor", dir), *arg = xasprintf("unix:%s,", mon);
		/* written by the probe QEMU as the account, in a directory libvirt gave it: a regular file of root or
		 * of the account (the directory's owner), not followed, a few bytes */
		const uid_t owners[] = { geteuid(), UTIL_OWNER_DIR };
		char *text = util_read_file_checked(pidf, owners, 2, 64, NULL, NULL);
		long pid = text ? strtol(text, NULL, 10) : 0;
		/* the probe's own command line names this directory's monitor: a recycled pid is left alone */
		if (pid > 1 && proc_has_arg(pid, arg) && kill((pid_t)pid, SIGKILL) == 0) {
			log_warn("engine: %s: ended QEMU pid %ld, a capability probe left by a kvcon killed while libvirt "
				 "probed",
				 root, pid);
			n++;
			/* dead (a zombie's command line is empty) within moments; its directory goes below */
			for (int i = 0; i < 200 && proc_has_arg(pid, arg); i++)
				usleep(5000);
		}
		if (pid <= 1 || !proc_has_arg(pid, arg)) {
			unlink(pidf);
			unlink(mon);
			rmdir(dir);
		}
		free(text);
		free(arg);
		free(mon);
		free(pidf);
		free(dir);
	}
	if (d)
		closedir(d);
	if (fd >= 0)
		close(fd);
	free(lib);
	free(pf);
	return n;
}

char *embed_uri_root(const char *uri)
{
	if (!util_has_prefix(uri, "qemu:///embed?"))
		return NULL;
	const char *r = strstr(uri, "root=");
	if (r == NULL)
		return NULL;
	r += 5;
	return xstrndup(r, strcspn(r, "&"));
}
