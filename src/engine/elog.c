/* Container logs of engine VMs (provider_ops open_log): the files of an execution read as a kubelet reads a
 * container's log. Container "compute" is QEMU's log, the part libvirt wrote since the execution's
 * "starting up" line (the previous instance is the part before it); "serial" is the execution's serial log
 * (the guest's bytes). A follow checks the file's size on a timer (a local file, as `tail -f` does) and ends
 * once the execution is over and the file no longer grows. Both files are in the run directory root gives QEMU's
 * account (or libvirt's log directory): opened with util_open_checked every time, never followed. */
#include "engine/elog.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/loop.h"
#include "core/util.h"
#include "core/xmalloc.h"
#include "engine/evm.h"

#define FOLLOW_TICK_MS 200
#define READ_MAX (64u << 20) /* the most of a log read at once: its last 64 MiB */
#define START_MARK ": starting up libvirt version:"

struct log_stream {
	struct source *src;
	char *ns, *vm, *path;
	char launcher[UID_LEN]; /* the execution followed */
	log_data_cb data;
	log_end_cb end;
	void *arg;
	char *first;            /* the selected part, delivered at the first tick */
	size_t first_len;
	off_t pos;              /* how far the file has been read (follow) */
	bool follow;
	struct loop_timer *timer;
};

/* Offsets of each line that starts an execution in QEMU's log. */
static size_t start_marks(const char *s, size_t len, size_t *out, size_t max)
{
	size_t n = 0;
	for (size_t i = 0; i < len;) {
		const char *nl = memchr(s + i, '\n', len - i);
		size_t e = nl ? (size_t)(nl - s) : len;
		if (memmem(s + i, e - i, START_MARK, strlen(START_MARK))) {
			if (n == max) {
				memmove(out, out + 1, (max - 1) * sizeof *out);
				n--;
			}
			out[n++] = i;
		}
		i = e + 1;
	}
	return n;
}

/* The last tail lines of [s, s+len). */
static const char *tail_of(const char *s, size_t len, long tail, size_t *outlen)
{
	if (tail < 0) {
		*outlen = len;
		return s;
	}
	size_t i = len;
	if (i > 0 && s[i - 1] == '\n')
		i--;
	long seen = 0;
	while (i > 0) {
		if (s[i - 1] == '\n' && ++seen == tail)
			break;
		i--;
	}
	if (tail == 0)
		i = len;
	*outlen = len - i;
	return s + i;
}

static void ls_free(struct log_stream *ls)
{
	loop_timer_cancel(ls->timer);
	free(ls->ns);
	free(ls->vm);
	free(ls->path);
	free(ls->first);
	free(ls);
}

static void tick(void *arg);

/* An execution's log, opened as util_open_checked does for a file QEMU's account could have planted: a regular
 * file of root or of the directory's owner (the account), no symlink, no FIFO. */
static int open_log(const char *path, char *why)
{
	const uid_t owners[] = { geteuid(), UTIL_OWNER_DIR };
	return util_open_checked(path, owners, 2, why);
}

static void finish(struct log_stream *ls, int status, const char *msg)
{
	ls->timer = NULL;
	ls->end(ls->arg, status, msg);
	ls_free(ls);
}

static void tick(void *arg)
{
	struct log_stream *ls = arg;
	ls->timer = NULL;
	if (ls->first) {
		char *f = ls->first;
		size_t n = ls->first_len;
		ls->first = NULL;
		bool go = n == 0 || ls->data(ls->arg, f, n);
		free(f);
		if (!go) {
			ls_free(ls);
			return;
		}
	}
	if (!ls->follow) {
		finish(ls, 0, NULL);
		return;
	}
	struct stat sb;
	bool grew = false;
	int fd = open_log(ls->path, NULL);
	if (fd >= 0 && fstat(fd, &sb) == 0 && sb.st_size > ls->pos && lseek(fd, ls->pos, SEEK_SET) == ls->pos) {
		char buf[16384];
		ssize_t got;
		while ((got = read(fd, buf, sizeof buf)) > 0) {
			ls->pos += (off_t)got;
			grew = true;
			if (!ls->data(ls->arg, buf, (size_t)got)) {
				close(fd);
				ls_free(ls);
				return;
			}
		}
	}
	if (fd >= 0)
		close(fd);
	struct evm *v = evm_find(ls->src, ls->ns, ls->vm);
	bool same = v && v->cur && strcmp(v->cur->launcher, ls->launcher) == 0 && evm_active(v);
	if (!same && !grew) {
		finish(ls, 0, NULL);
		return;
	}
	ls->timer = loop_timer_add(FOLLOW_TICK_MS, tick, ls);
}

struct log_stream *engine_log_open(struct source *src, const struct log_req *r, log_data_cb data, log_end_cb end,
				   void *arg, char **err)
{
	*err = NULL;
	const char *c = r->container && *r->container ? r->container : "compute";
	const char *vmname = r->vm ? r->vm : r->pod;
	struct evm *v = vmname ? evm_find(src, r->ns, vmname) : NULL;
	if (v == NULL || v->cur == NULL) {
		*err = xasprintf("no execution of %s/%s on this engine host", r->ns ? r->ns : "", vmname ? vmname : "?");
		return NULL;
	}
	bool serial = strcmp(c, "serial") == 0;
	if (!serial && strcmp(c, "compute") != 0) {
		*err = xasprintf("container %s is not valid for pod %s (the engine has: compute, serial)", c,
				 r->pod ? r->pod : vmname);
		return NULL;
	}
	if (r->since_s > 0) {
		*err = xstrdup("--since: the engine's QEMU and serial logs carry no time on every line; use --tail");
		return NULL;
	}
	const char *path = serial ? v->cur->serial_log : v->cur->log_path;
	if (path == NULL) {
		*err = xasprintf("%s/%s has no %s log%s", r->ns, vmname, serial ? "serial" : "QEMU",
				 serial && !v->m->serial_console ? " (autoattachSerialConsole: false)" : "");
		return NULL;
	}
	if (r->previous && serial) {
		*err = xasprintf("previous terminated container \"serial\" in pod \"%s\" not found (the engine keeps "
				 "only the current execution's serial log; the previous QEMU log is -c compute --previous)",
				 r->pod ? r->pod : vmname);
		return NULL;
	}
	size_t len = 0;
	off_t read_to = 0;
	char *s = NULL, why[UTIL_WHY_LEN];
	int fd = open_log(path, why);
	if (fd >= 0) {
		/* a bounded read: the last READ_MAX bytes of a log the guest can grow without end */
		struct stat sb;
		off_t from = 0;
		if (fstat(fd, &sb) == 0 && sb.st_size > (off_t)READ_MAX)
			from = sb.st_size - (off_t)READ_MAX;
		if (lseek(fd, from, SEEK_SET) == from && (s = util_read_fd(fd, READ_MAX, &len)) != NULL)
			read_to = from + (off_t)len;
		else
			snprintf(why, sizeof why, "%s", strerror(errno));
		close(fd);
	}
	if (s == NULL && !(fd < 0 && errno == ENOENT && !r->previous)) {
		*err = xasprintf("%s: %s", path, why);
		return NULL;
	}
	const char *part = s ? s : "";
	size_t plen = len;
	if (!serial) {
		size_t marks[2];
		size_t n = start_marks(part, len, marks, 2);
		if (r->previous) {
			if (n < 2) {
				*err = xasprintf("previous terminated container \"compute\" in pod \"%s\" not found",
						 r->pod ? r->pod : vmname);
				free(s);
				return NULL;
			}
			part += marks[0];
			plen = marks[1] - marks[0];
		} else if (n > 0) {
			part += marks[n - 1];
			plen = len - marks[n - 1];
		}
	}
	size_t tl;
	const char *t = tail_of(part, plen, r->tail_lines, &tl);
	struct log_stream *ls = xcalloc(1, sizeof *ls);
	ls->src = src;
	ls->ns = xstrdup(r->ns);
	ls->vm = xstrdup(vmname);
	ls->path = xstrdup(path);
	snprintf(ls->launcher, sizeof ls->launcher, "%s", v->cur->launcher);
	ls->data = data;
	ls->end = end;
	ls->arg = arg;
	ls->first = xmalloc(tl + 1);
	memcpy(ls->first, t, tl);
	ls->first_len = tl;
	ls->pos = read_to;
	ls->follow = r->follow && !r->previous;
	free(s);
	ls->timer = loop_timer_add(0, tick, ls);
	return ls;
}

void engine_log_close(struct log_stream *ls)
{
	if (ls)
		ls_free(ls);
}
