/* Small helpers shared by every module: time, paths, atomic files, display escaping. */
#include "core/util.h"

#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/log.h"
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
		log_run_fatal_hook();
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

int util_open_private(const char *path, int extra, bool tighten)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | extra, 0600);
	if (fd >= 0) {
		if (fchmod(fd, 0600) < 0) { /* a umask cannot widen it, but a strange one may narrow it to 0400 */
			int e = errno;
			close(fd);
			errno = e;
			return -1;
		}
		return fd;
	}
	if (errno != EEXIST)
		return -1;
	fd = open(path, O_WRONLY | O_CLOEXEC | extra);
	if (fd < 0)
		return -1;
	struct stat st;
	if (tighten && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() && (st.st_mode & 077))
		fchmod(fd, st.st_mode & 0700);
	return fd;
}

int util_write_file_atomic(const char *path, const void *data, size_t len, mode_t mode)
{
	char *tmp = xasprintf("%s.tmp.%ld", path, (long)getpid());
	int rc = -1, fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	if (fd < 0)
		goto out;
	const char *p = data;
	while (len > 0) {
		ssize_t w = write(fd, p, len);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			close(fd);
			unlink(tmp);
			goto out;
		}
		p += w;
		len -= (size_t)w;
	}
	if (fsync(fd) < 0 || close(fd) < 0) {
		unlink(tmp);
		goto out;
	}
	if (rename(tmp, path) < 0) {
		unlink(tmp);
		goto out;
	}
	char *dir = xstrdup(path);
	char *slash = strrchr(dir, '/');
	if (slash) {
		*slash = '\0';
		int dfd = open(*dir ? dir : "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd >= 0) {
			fsync(dfd);
			close(dfd);
		}
	}
	free(dir);
	rc = 0;
out:
	free(tmp);
	return rc;
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
