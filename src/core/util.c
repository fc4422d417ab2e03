/* Small helpers shared by every module: time, paths, atomic and checked files, display escaping. */
#include "core/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/fatal.h"
#include "core/xmalloc.h"

uint64_t util_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

int64_t util_wall_s(void)
{
	return (int64_t)time(NULL);
}

static int digits(const char *s, int n, int *out)
{
	int v = 0;
	for (int i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	*out = v;
	return 0;
}

/* Days from 1970-01-01 to a civil date (proleptic Gregorian), after Howard Hinnant's well-known formula. */
static int64_t days_from_civil(int y, int m, int d)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	int64_t yoe = y - era * 400;
	int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

int util_parse_time(const char *s, int64_t *out)
{
	int y, mo, d, h, mi, sec;
	if (s == NULL || strlen(s) < 19)
		return -1;
	if (digits(s, 4, &y) || s[4] != '-' || digits(s + 5, 2, &mo) || s[7] != '-' || digits(s + 8, 2, &d) ||
	    (s[10] != 'T' && s[10] != 't' && s[10] != ' ') || digits(s + 11, 2, &h) || s[13] != ':' ||
	    digits(s + 14, 2, &mi) || s[16] != ':' || digits(s + 17, 2, &sec))
		return -1;
	if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60)
		return -1;
	const char *p = s + 19;
	if (*p == '.') {
		p++;
		if (*p < '0' || *p > '9')
			return -1;
		while (*p >= '0' && *p <= '9')
			p++;
	}
	int64_t off = 0;
	if (*p == 'Z' || *p == 'z') {
		p++;
	} else if (*p == '+' || *p == '-') {
		int oh, om;
		if (digits(p + 1, 2, &oh) || p[3] != ':' || digits(p + 4, 2, &om))
			return -1;
		off = (int64_t)(oh * 3600 + om * 60) * (*p == '-' ? -1 : 1);
		p += 6;
	} else {
		return -1;
	}
	if (*p != '\0')
		return -1;
	*out = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec - off;
	return 0;
}

void util_format_time(int64_t t, char *buf, size_t len)
{
	time_t tt = (time_t)t;
	struct tm tm;
	gmtime_r(&tt, &tm);
	strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

void util_human_duration(int64_t s, char *buf, size_t len)
{
	if (s < -1) {
		snprintf(buf, len, "<invalid>");
		return;
	}
	if (s < 0)
		s = 0;
	int64_t m = s / 60, h = s / 3600, dd = h / 24, yy = dd / 365;
	if (s < 120)
		snprintf(buf, len, "%llds", (long long)s);
	else if (m < 10 && s % 60)
		snprintf(buf, len, "%lldm%llds", (long long)m, (long long)(s % 60));
	else if (m < 180)
		snprintf(buf, len, "%lldm", (long long)m);
	else if (h < 8 && m % 60)
		snprintf(buf, len, "%lldh%lldm", (long long)h, (long long)(m % 60));
	else if (h < 48)
		snprintf(buf, len, "%lldh", (long long)h);
	else if (h < 192 && h % 24)
		snprintf(buf, len, "%lldd%lldh", (long long)dd, (long long)(h % 24));
	else if (h < 24 * 365 * 2)
		snprintf(buf, len, "%lldd", (long long)dd);
	else if (yy < 8 && dd % 365)
		snprintf(buf, len, "%lldy%lldd", (long long)yy, (long long)(dd % 365));
	else
		snprintf(buf, len, "%lldy", (long long)yy);
}

char *util_home_dir(void)
{
	const char *home = getenv("HOME");
	if (home && *home == '/')
		return xstrdup(home);
	/* no $HOME (a system unit, env -i): the account's own, never a directory everyone can write */
	struct passwd pw, *res = NULL;
	char buf[4096];
	if (getpwuid_r(geteuid(), &pw, buf, sizeof buf, &res) == 0 && res && res->pw_dir && res->pw_dir[0] == '/')
		return xstrdup(res->pw_dir);
	return NULL;
}

static char *xdg_dir(const char *var, const char *fallback)
{
	const char *v = getenv(var);
	if (v && *v == '/')
		return util_path_join(v, "kvcon");
	char *home = util_home_dir();
	if (home == NULL) {
		fatal_run_hook();
		fprintf(stderr, "error: no home directory: $HOME is unset and uid %u has no passwd entry with one; "
				"set HOME or $%s\n", (unsigned)geteuid(), var);
		exit(1);
	}
	char *d = xasprintf("%s/%s/kvcon", strcmp(home, "/") == 0 ? "" : home, fallback);
	free(home);
	return d;
}

char *util_state_dir(void)
{
	return xdg_dir("XDG_STATE_HOME", ".local/state");
}

char *util_config_dir(void)
{
	return xdg_dir("XDG_CONFIG_HOME", ".config");
}

char *util_path_join(const char *a, const char *b)
{
	size_t la = strlen(a);
	if (la > 0 && a[la - 1] == '/')
		return xasprintf("%s%s", a, b);
	return xasprintf("%s/%s", a, b);
}

int util_mkdir_p(const char *path, mode_t mode)
{
	char *p = xstrdup(path);
	int rc = 0;
	for (char *s = p + 1; ; s++) {
		if (*s == '/' || *s == '\0') {
			char c = *s;
			*s = '\0';
			if (mkdir(p, mode) == 0) {
				/* ours: exactly mode, not what the umask left of it */
				if (chmod(p, mode) < 0) {
					rc = -1;
					goto out;
				}
			} else if (errno != EEXIST) {
				rc = -1;
				goto out;
			}
			*s = c;
			if (c == '\0')
				break;
		}
	}
out:
	free(p);
	return rc;
}

/* ---- files at paths someone else may have prepared ----
 * kvcon runs as root beside other users and writes where it is told (--log-file, console --log, --screenshot, the
 * bundle, --kubeconfig-out) and reads back what an unprivileged QEMU account wrote in the run directory root gave
 * it. A path may already hold a symlink, a FIFO, a hard link to a system file or a file another user made (and
 * keeps open). So: nothing is followed (O_NOFOLLOW, O_EXCL), every check is fstat of the descriptor opened (no
 * window between check and use), and a refusal says what was found in one line. */

static void why_set(char *why, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void why_set(char *why, const char *fmt, ...)
{
	if (why == NULL)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, UTIL_WHY_LEN, fmt, ap);
	va_end(ap);
}

static const char *kind_of(mode_t m)
{
	return S_ISDIR(m) ? "a directory" : S_ISFIFO(m) ? "a FIFO" : S_ISSOCK(m) ? "a socket" : S_ISCHR(m) ? "a character device"
	       : S_ISBLK(m) ? "a block device" : S_ISLNK(m) ? "a symlink (not followed)" : "not a regular file";
}

/* Refuses what fstat/lstat found at a path kvcon was given to write: anything but a regular file of the euid.
 * 0, or -1 with errno and why. */
static int refuse_target(const struct stat *st, char *why)
{
	if (S_ISLNK(st->st_mode)) {
		why_set(why, "a symlink (not followed)");
		errno = ELOOP;
		return -1;
	}
	if (!S_ISREG(st->st_mode)) {
		why_set(why, "not a regular file (%s)", kind_of(st->st_mode));
		errno = S_ISDIR(st->st_mode) ? EISDIR : EINVAL;
		return -1;
	}
	if (st->st_uid != geteuid()) {
		why_set(why, "owned by uid %lu, not by uid %lu (this kvcon)", (unsigned long)st->st_uid,
			(unsigned long)geteuid());
		errno = EPERM;
		return -1;
	}
	return 0;
}

static void why_errno(char *why)
{
	int e = errno;
	why_set(why, "%s", strerror(e));
	errno = e;
}

int util_open_private(const char *path, int extra, bool tighten, char *why)
{
	/* a new file: O_EXCL never follows a symlink nor takes over a name someone else made */
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | extra, 0600);
	if (fd >= 0) {
		if (fchmod(fd, 0600) < 0) { /* a umask cannot widen it, but a strange one may narrow it to 0400 */
			why_errno(why);
			int e = errno;
			close(fd);
			errno = e;
			return -1;
		}
		return fd;
	}
	if (errno != EEXIST) {
		why_errno(why);
		return -1;
	}
	/* an existing one: not followed, and O_NONBLOCK so that a FIFO planted there cannot hold kvcon (ENXIO without
	 * a reader; refused below with one) */
	fd = open(path, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC | extra);
	if (fd < 0) {
		if (errno == ELOOP) {
			why_set(why, "a symlink (not followed)");
			errno = ELOOP;
		} else if (errno == ENXIO || errno == EISDIR) {
			int e = errno;
			why_set(why, "not a regular file (%s)", e == EISDIR ? "a directory" : "a FIFO or socket");
			errno = e;
		} else {
			why_errno(why);
		}
		return -1;
	}
	struct stat st;
	if (fstat(fd, &st) < 0) {
		why_errno(why);
		goto refuse;
	}
	if (refuse_target(&st, why) < 0)
		goto refuse;
	if (st.st_nlink != 1) { /* a hard link to another file of the euid (/etc/shadow, for root) */
		why_set(why, "has %lu hard links", (unsigned long)st.st_nlink);
		errno = EPERM;
		goto refuse;
	}
	/* Writable by group or others: someone else may hold it open and read what kvcon appends, and fchmod cannot
	 * take back a descriptor opened earlier; only a file nobody else could open is private, so it is refused
	 * (the user fixes the mode or picks a new name). A file others can only read is what its owner chose to show,
	 * kept as it is, except kvcon's own log (tighten), whose mode older kvcons left to the umask. */
	if (st.st_mode & 022) {
		why_set(why, "mode %04o lets others write it (and hold it open): chmod go-w it or choose a new file",
			(unsigned)(st.st_mode & 07777));
		errno = EPERM;
		goto refuse;
	}
	if (tighten && (st.st_mode & 077))
		fchmod(fd, st.st_mode & 0700);
	int fl = fcntl(fd, F_GETFL);
	if (fl >= 0)
		fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
	return fd;
refuse:;
	int e = errno;
	close(fd);
	errno = e;
	return -1;
}

int util_temp_open(const char *path, char **tmp)
{
	/* mkostemp: a random name, O_CREAT|O_EXCL (no symlink followed, no name taken over), mode 0600 */
	*tmp = xasprintf("%s.tmp.XXXXXX", path);
	int fd = mkostemp(*tmp, O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		free(*tmp);
		*tmp = NULL;
		errno = e;
	}
	return fd;
}

int util_target_check(const char *path, char *why)
{
	struct stat st;
	if (lstat(path, &st) == 0)
		return refuse_target(&st, why);
	if (errno == ENOENT)
		return 0;
	why_errno(why);
	return -1;
}

int util_temp_commit(char *tmp, const char *path, char *why)
{
	/* An existing target is replaced only when it is a regular file of the euid. rename never follows a symlink at
	 * path and the new inode is ours (0600 until the content was there), so a race with this lstat can at worst
	 * unlink what someone put there since; the check is what tells the user that the name was taken. */
	int rc = -1;
	if (util_target_check(path, why) < 0)
		goto out;
	if (rename(tmp, path) < 0) {
		why_errno(why);
		goto out;
	}
	char *dir = xstrdup(path);
	char *slash = strrchr(dir, '/');
	if (slash) {
		*slash = '\0';
		util_fsync_dir(*dir ? dir : "/");
	}
	free(dir);
	rc = 0;
out:
	if (rc < 0) {
		int e = errno;
		unlink(tmp);
		errno = e;
	}
	return rc;
}

int util_write_file_why(const char *path, const void *data, size_t len, mode_t mode, char *why)
{
	char *tmp = NULL;
	int rc = -1, fd = util_temp_open(path, &tmp);
	if (fd < 0) {
		why_errno(why);
		return -1;
	}
	const char *p = data;
	while (len > 0) {
		ssize_t w = write(fd, p, len);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			goto fail;
		}
		p += w;
		len -= (size_t)w;
	}
	/* the mode the caller asked for, once the content is there (mkostemp made it 0600) */
	if (fchmod(fd, mode & 07777) < 0 || fsync(fd) < 0)
		goto fail;
	int c = close(fd);
	fd = -1;
	if (c < 0)
		goto fail;
	rc = util_temp_commit(tmp, path, why);
	free(tmp);
	return rc;
fail:
	why_errno(why);
	int e = errno;
	if (fd >= 0)
		close(fd);
	unlink(tmp);
	free(tmp);
	errno = e;
	return -1;
}

int util_write_file_atomic(const char *path, const void *data, size_t len, mode_t mode)
{
	return util_write_file_why(path, data, len, mode, NULL);
}

int util_open_checked(const char *path, const uid_t *owners, size_t nowners, char *why)
{
	char *dir = xstrdup(path), *slash = strrchr(dir, '/');
	const char *base = path;
	int fd = -1, dfd;
	if (slash) {
		*slash = '\0';
		base = slash + 1;
		dfd = open(*dir ? dir : "/", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	} else {
		dfd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	}
	struct stat ds, st;
	if (dfd < 0 || fstat(dfd, &ds) < 0) {
		why_errno(why);
		goto out;
	}
	/* O_NONBLOCK: a FIFO there must not hold the reader (refused below) */
	fd = openat(dfd, base, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ELOOP)
			why_set(why, "a symlink (not followed)");
		else
			why_errno(why);
		goto out;
	}
	if (fstat(fd, &st) < 0) {
		why_errno(why);
		goto bad;
	}
	if (!S_ISREG(st.st_mode)) {
		why_set(why, "not a regular file (%s)", kind_of(st.st_mode));
		errno = S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
		goto bad;
	}
	/* In a directory only the euid can write, whatever is there was put there by it (libvirt relabels a serial
	 * log for its QEMU user in a root's directory); elsewhere the file's owner must be one expected. */
	bool ok = ds.st_uid == geteuid() && !(ds.st_mode & 022);
	for (size_t i = 0; i < nowners && !ok; i++)
		ok = st.st_uid == (owners[i] == UTIL_OWNER_DIR ? ds.st_uid : owners[i]);
	if (!ok) {
		why_set(why, "owned by uid %lu, which was not expected to write it", (unsigned long)st.st_uid);
		errno = EPERM;
		goto bad;
	}
	int fl = fcntl(fd, F_GETFL);
	if (fl >= 0)
		fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
	goto out;
bad:;
	int e = errno;
	close(fd);
	fd = -1;
	errno = e;
out:
	if (dfd >= 0) {
		int e2 = errno;
		close(dfd);
		errno = e2;
	}
	free(dir);
	return fd;
}

char *util_read_fd(int fd, size_t max, size_t *lenp)
{
	size_t cap = 4096, len = 0;
	char *buf = xmalloc(cap);
	for (;;) {
		if (cap - len < 2) {
			cap *= 2;
			buf = xrealloc(buf, cap);
		}
		size_t want = cap - len - 1;
		if (want > max - len)
			want = max - len;
		if (want == 0)
			break;
		ssize_t r = read(fd, buf + len, want);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			int e = errno;
			free(buf);
			errno = e;
			return NULL;
		}
		if (r == 0)
			break;
		len += (size_t)r;
	}
	buf[len] = '\0';
	if (lenp)
		*lenp = len;
	return buf;
}

char *util_read_file_checked(const char *path, const uid_t *owners, size_t nowners, size_t max, size_t *len,
			     char *why)
{
	int fd = util_open_checked(path, owners, nowners, why);
	if (fd < 0)
		return NULL;
	size_t n = 0;
	char *s = util_read_fd(fd, max < SIZE_MAX ? max + 1 : max, &n); /* one byte past max tells a file too big */
	int e = errno;
	close(fd);
	if (s && n > max) {
		free(s);
		s = NULL;
		e = EFBIG;
		why_set(why, "larger than %zu bytes", max);
	} else if (s == NULL) {
		why_set(why, "%s", strerror(e));
	} else if (len) {
		*len = n;
	}
	errno = e;
	return s;
}

char *util_read_file(const char *path, size_t *lenp)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	size_t cap = 4096, len = 0;
	char *buf = xmalloc(cap);
	for (;;) {
		if (cap - len < 2) {
			cap *= 2;
			buf = xrealloc(buf, cap);
		}
		ssize_t r = read(fd, buf + len, cap - len - 1);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			int e = errno;
			free(buf);
			close(fd);
			errno = e;
			return NULL;
		}
		if (r == 0)
			break;
		len += (size_t)r;
	}
	close(fd);
	buf[len] = '\0';
	if (lenp)
		*lenp = len;
	return buf;
}

/* Length of the valid UTF-8 sequence at s (at most n bytes), or 0 when invalid. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
	unsigned c = s[0];
	size_t need;
	unsigned min;
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		need = 2;
		min = 0x80;
	} else if (c >= 0xe0 && c <= 0xef) {
		need = 3;
		min = 0x800;
	} else if (c >= 0xf0 && c <= 0xf4) {
		need = 4;
		min = 0x10000;
	} else {
		return 0;
	}
	if (n < need)
		return 0;
	unsigned cp = c & (0xff >> (need + 1));
	for (size_t i = 1; i < need; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	if (cp >= 0x80 && cp < 0xa0) /* C1 controls */
		return 0;
	return need;
}

size_t util_escape_display_n(const char *s, size_t slen, char *out, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t o = 0, i = 0;
	if (len == 0)
		return 0;
	while (i < slen) {
		char tmp[8];
		const char *piece = tmp;
		size_t plen;
		unsigned c = p[i];
		size_t seq = utf8_seq(p + i, slen - i);
		if (c >= 0x20 && c < 0x7f) {
			tmp[0] = (char)c;
			plen = 1;
			seq = 1;
		} else if (c >= 0x80 && seq > 0) {
			piece = (const char *)p + i;
			plen = seq;
		} else {
			seq = 1;
			if (c == 0x1b)
				plen = (size_t)snprintf(tmp, sizeof tmp, "\\e");
			else if (c == '\n')
				plen = (size_t)snprintf(tmp, sizeof tmp, "\\n");
			else if (c == '\t')
				plen = (size_t)snprintf(tmp, sizeof tmp, "\\t");
			else if (c == '\r')
				plen = (size_t)snprintf(tmp, sizeof tmp, "\\r");
			else
				plen = (size_t)snprintf(tmp, sizeof tmp, "\\x%02x", c);
		}
		if (o + plen >= len)
			break;
		memcpy(out + o, piece, plen);
		o += plen;
		i += seq;
	}
	out[o] = '\0';
	return o;
}

char *util_escape_display(const char *s)
{
	if (s == NULL)
		return xstrdup("");
	size_t n = strlen(s), cap = n * 4 + 1;
	char *out = xmalloc(cap);
	util_escape_display_n(s, n, out, cap);
	return out;
}

void util_uuid_v4(char out[37])
{
	unsigned char b[16];
	if (getrandom(b, sizeof b, 0) != (ssize_t)sizeof b) {
		for (size_t i = 0; i < sizeof b; i++)
			b[i] = (unsigned char)(rand() & 0xff);
	}
	b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
	b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
	snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2],
		 b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

bool util_str_eq(const char *a, const char *b)
{
	if (a == NULL || b == NULL)
		return a == b;
	return strcmp(a, b) == 0;
}

bool util_has_prefix(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

char *util_b64_encode(const void *data, size_t n)
{
	static const char t[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const unsigned char *in = data;
	char *out = xmalloc(4 * ((n + 2) / 3) + 1), *o = out;
	for (size_t i = 0; i < n; i += 3) {
		unsigned v = (unsigned)in[i] << 16;
		if (i + 1 < n)
			v |= (unsigned)in[i + 1] << 8;
		if (i + 2 < n)
			v |= in[i + 2];
		*o++ = t[(v >> 18) & 63];
		*o++ = t[(v >> 12) & 63];
		*o++ = i + 1 < n ? t[(v >> 6) & 63] : '=';
		*o++ = i + 2 < n ? t[v & 63] : '=';
	}
	*o = '\0';
	return out;
}

static int b64_value(unsigned char c, unsigned flags)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+' || (c == '-' && (flags & UTIL_B64_URLSAFE)))
		return 62;
	if (c == '/' || (c == '_' && (flags & UTIL_B64_URLSAFE)))
		return 63;
	return -1;
}

char *util_b64_decode(const char *in, size_t inlen, size_t *outlen, unsigned flags)
{
	char *out = xmalloc(inlen / 4 * 3 + 4);
	size_t o = 0, chars = 0, pad = 0;
	uint32_t acc = 0;
	int bits = 0;
	for (size_t i = 0; i < inlen; i++) {
		unsigned char c = (unsigned char)in[i];
		if (c == '\r' || c == '\n' || ((c == ' ' || c == '\t') && !(flags & UTIL_B64_PADDED)))
			continue;
		chars++;
		if (c == '=') {
			pad++;
			continue;
		}
		int v = b64_value(c, flags);
		if (v < 0 || pad) {
			free(out);
			return NULL;
		}
		acc = (acc << 6) | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[o++] = (char)((acc >> bits) & 0xff);
		}
	}
	if (pad > 2 || bits >= 6 || ((flags & UTIL_B64_PADDED) && chars % 4)) {
		free(out);
		return NULL;
	}
	out[o] = '\0';
	if (outlen)
		*outlen = o;
	return out;
}

/* Whether the task whose stat file is path is alive (not a zombie, not dead); -1 when it cannot be read. */
static int task_alive(const char *path)
{
	char st[512];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, st, sizeof st - 1);
	close(fd);
	if (n <= 0)
		return 0;
	st[n] = '\0';
	char *rp = strrchr(st, ')'); /* the state follows the command's name, which may hold anything */
	return rp == NULL || rp[1] != ' ' || (rp[2] != 'Z' && rp[2] != 'X');
}

/* Whether a thread of process pid other than its leader is alive. */
static bool other_thread_alive(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%ld/task", (long)pid);
	DIR *d = opendir(path);
	struct dirent *de;
	bool any = false;
	while (d && !any && (de = readdir(d))) {
		if (de->d_name[0] == '.' || strtol(de->d_name, NULL, 10) == (long)pid)
			continue;
		char tp[96];
		snprintf(tp, sizeof tp, "/proc/%ld/task/%.20s/stat", (long)pid, de->d_name);
		any = task_alive(tp) > 0;
	}
	if (d)
		closedir(d);
	return any;
}

/* The leader's state: 1 alive, 0 a zombie (or gone), -1 no /proc to tell. */
static int leader_alive(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
	return task_alive(path);
}

bool util_pid_running(pid_t pid)
{
	int alive = leader_alive(pid);
	if (alive < 0)
		return pid > 0 && kill(pid, 0) == 0; /* no /proc: the signal's answer */
	/* a zombie leader: its other threads may still be exiting, and they hold the process's files (and its
	 * fcntl locks: an engine root's driver.pid) until the last one is gone */
	return alive || other_thread_alive(pid);
}

bool util_pid_leaving(pid_t pid)
{
	return pid > 0 && leader_alive(pid) == 0 && other_thread_alive(pid);
}

void util_fsync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
}

int util_run_quiet(char *const argv[], const char *what, char **err)
{
	pid_t pid = fork();
	if (pid < 0) {
		*err = xasprintf("fork: %s", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		int fd = open("/dev/null", O_RDWR);
		if (fd >= 0) {
			dup2(fd, 0);
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execvp(argv[0], argv);
		_exit(127);
	}
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
		return 0;
	*err = xasprintf("%s failed (%s %d)", what ? what : argv[0], WIFEXITED(st) ? "exit" : "signal",
			 WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
	return -1;
}
