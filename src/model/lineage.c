/* Lineage recorder (see lineage.h): a store listener keeping per VM the list of its executions, persisted as
 * JSON lines. The file is kvcon's own format, not API text, so json-c is used here only to write and read it. */
#include "model/lineage.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/hmap.h"
#include "core/intern.h"
#include "core/log.h"
#include "core/loop.h"
#include "core/util.h"
#include "core/xmalloc.h"

#define LIN_MAX_EXECS 256     /* per VM, oldest dropped */
#define LIN_MAX_LAUNCHERS 32  /* per execution */
#define LIN_SETTLE_SECS 10    /* a VM update this soon after an end may still reclassify it */
#define LIN_SLICE_US 3000     /* paced (lineage_set_paced): work per loop pass on a history being read */
#define LIN_READ (1u << 20)   /* the history is read this much at a time */
#define LIN_BATCH (64u << 10) /* batched: records waiting for the end of the loop pass are written at this size */

struct lin_vm;

struct lin_exec {
	struct lineage_exec pub; /* first: the API hands out &pub */
	char key[16 + UID_LEN];  /* by_vmi index key: "<source id>:<vmi uid>" */
	struct lin_vm *vm;
	int64_t ended_seen;      /* wall clock when kvcon saw the end (for the settle window) */
};

struct lin_vm {
	char *key;               /* "<source id>/<ns>/<name>" */
	struct source *src;
	const char *ns;
	char *name;
	struct lin_exec **ex;
	size_t n;
};

/* One history file per source: one open descriptor, one read at first use (thousands of VMs would otherwise
 * mean thousands of file creations on the UI thread at the first list). */
struct lin_src {
	char *path;
	int fd;       /* O_APPEND, opened at the first record; -1 before */
	struct buf out; /* records not written yet (batched: until the end of the loop pass) */
	bool loaded;
	size_t lines; /* records in the file */
	/* paced: the file is read a slice per loop pass (its records are not known yet, so the source's changes
	 * are not applied meanwhile), then what the store holds is seen again, a slice per pass (CATCH_*) */
	enum { PACE_NONE, PACE_READ, PACE_CATCH_VMI, PACE_CATCH_POD } pace;
	struct source *src;
	int rfd;      /* the file while it is read; -1 once read whole (or absent) */
	bool had_file;
	char *text;   /* what has been read of it and not applied yet: [off, len) */
	size_t len, cap, off, execs;
	size_t scan;  /* next store object to see again */
};

/* A launcher pod seen before its VMI (the pod and VMI watches are independent streams). */
struct pend_pod {
	char uid[UID_LEN];
	char *name;
	const char *node;
	int64_t created;
};

struct pending {
	char key[16 + UID_LEN]; /* "<source id>:<vmi uid>" */
	struct pend_pod pods[4];
	int n;
};

struct lineage {
	struct store *st;
	char *dir;
	int listener;
	struct hmap vms;     /* key -> struct lin_vm */
	struct hmap by_vmi;  /* "<source id>:<vmi uid>" -> struct lin_exec */
	struct hmap by_uid;  /* "<vmi uid>" -> struct lin_exec, across sources (moves between engine hosts) */
	struct hmap pending; /* "<source id>:<vmi uid>" -> struct pending */
	struct lin_src *srcs; /* by source id */
	size_t nsrcs;
	bool paced;
	bool held; /* lineage_hold: no slice runs (the first frame is not drawn yet) */
	bool batched;        /* records are written at the end of each loop pass (on_pass_end) */
	int hook;            /* on_pass_end's loop hook, 0 when none */
	int64_t restart_seen; /* wall clock of the last end classified "restarted" (vm_seen's window), 0: none */
	struct loop_timer *step_t;
};

static const char *const end_names[] = { "running", "stopped", "restarted", "failed", "lost" };

const char *lineage_end_name(enum lineage_end e)
{
	return (unsigned)e <= LIN_LOST ? end_names[e] : "?";
}

static enum lineage_end end_from_name(const char *s)
{
	for (size_t i = 0; s && i < sizeof end_names / sizeof end_names[0]; i++)
		if (strcmp(s, end_names[i]) == 0)
			return (enum lineage_end)i;
	return LIN_LOST;
}

/* ---- paths ---- */

/* Source names are kubeconfig context names ("arn:aws:eks:...:cluster/x", "user@cluster") or host names: keep
 * [A-Za-z0-9._-], replace the rest, and add a hash when anything was replaced so two names cannot collide. */
static char *sanitize(const char *s)
{
	struct buf b;
	buf_init(&b);
	bool changed = false;
	for (const char *p = s; *p && b.len < 100; p++) {
		char c = *p;
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
			  c == '_' || (c == '.' && p != s);
		buf_add_char(&b, ok ? c : '_');
		changed |= !ok;
	}
	if (changed || b.len == 0 || strlen(s) > 100)
		buf_printf(&b, "-%08x", hmap_hash(s));
	return buf_steal(&b);
}

char *lineage_path(const struct lineage *l, const struct source *src, const char *ns, const char *name)
{
	(void)ns;
	(void)name;
	char *s = sanitize(src->name);
	char *p = xasprintf("%s/%s.jsonl", l->dir, s);
	free(s);
	return p;
}

/* ---- records ---- */

/* The records are kvcon's own lines, written here without building a json-c object per line (the dashboard
 * writes one per VMI change); they are read back with json-c. Strings are escaped as JSON requires: the quote,
 * the backslash and control bytes; other bytes (UTF-8) are written as they are, as json-c wrote them. */
static void put_str(struct buf *b, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	buf_add_char(b, '"');
	const char *run = s;
	for (const char *p = s;; p++) {
		unsigned char c = (unsigned char)*p;
		if (c >= 0x20 && c != '"' && c != '\\')
			continue;
		buf_add(b, run, (size_t)(p - run));
		if (c == '\0')
			break;
		char esc[6] = { '\\', (char)c };
		size_t n = 2;
		if (c == '\n')
			esc[1] = 'n';
		else if (c == '\t')
			esc[1] = 't';
		else if (c == '\r')
			esc[1] = 'r';
		else if (c < 0x20) {
			esc[1] = 'u', esc[2] = '0', esc[3] = '0', esc[4] = hex[c >> 4], esc[5] = hex[c & 15];
			n = 6;
		}
		buf_add(b, esc, n);
		run = p + 1;
	}
	buf_add_char(b, '"');
}

static void put_int(struct buf *b, int64_t v)
{
	char d[24];
	size_t i = sizeof d;
	uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
	do
		d[--i] = (char)('0' + u % 10);
	while ((u /= 10) != 0);
	if (v < 0)
		d[--i] = '-';
	buf_add(b, d + i, sizeof d - i);
}

/* One record: the full state of an execution, with its VM's ns and name, and its newline. */
static void exec_line(struct buf *b, const struct lineage_exec *e, const char *ns, const char *name)
{
	buf_add_str(b, "{\"ns\":");
	put_str(b, ns);
	buf_add_str(b, ",\"name\":");
	put_str(b, name);
	buf_add_str(b, ",\"vmi\":");
	put_str(b, e->vmi_uid);
	buf_add_str(b, ",\"vm\":");
	put_str(b, e->vm_uid);
	buf_add_str(b, ",\"start\":");
	put_int(b, e->start);
	buf_add_str(b, ",\"end\":");
	put_int(b, e->end);
	buf_add_str(b, ",\"how\":");
	put_str(b, lineage_end_name(e->how));
	buf_add_str(b, ",\"phase\":");
	put_str(b, e->phase ? e->phase : "");
	buf_add_str(b, ",\"node\":");
	put_str(b, e->node ? e->node : "");
	buf_add_str(b, ",\"migrations\":");
	put_int(b, e->migrations);
	buf_add_str(b, ",\"launchers\":[");
	for (int i = 0; i < e->nlaunchers; i++) {
		const struct lineage_launcher *la = &e->launchers[i];
		buf_add_str(b, i ? ",{\"uid\":" : "{\"uid\":");
		put_str(b, la->uid);
		buf_add_str(b, ",\"name\":");
		put_str(b, la->name ? la->name : "");
		buf_add_str(b, ",\"node\":");
		put_str(b, la->node ? la->node : "");
		buf_add_str(b, ",\"start\":");
		put_int(b, la->start);
		buf_add_str(b, ",\"end\":");
		put_int(b, la->end);
		buf_add_str(b, la->migrated ? ",\"migrated\":true" : ",\"migrated\":false");
		if (la->attempt)
			buf_add_str(b, ",\"attempt\":true");
		buf_add_char(b, '}');
	}
	buf_add_str(b, "]}\n");
}

static const char *jstr(struct json_object *o, const char *k)
{
	struct json_object *v;
	if (!json_object_object_get_ex(o, k, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

static int64_t jint(struct json_object *o, const char *k)
{
	struct json_object *v;
	if (!json_object_object_get_ex(o, k, &v) || !json_object_is_type(v, json_type_int))
		return 0;
	return json_object_get_int64(v);
}

static void copy_uid(char dst[UID_LEN], const char *s)
{
	snprintf(dst, UID_LEN, "%s", s ? s : "");
}

static const char *intern_nonempty(const char *s)
{
	return s && *s ? intern_n(s, strnlen(s, 128)) : NULL;
}

/* Fills e from one line's object; -1 when it is not a lineage record. */
static int exec_from_json(struct lineage_exec *e, struct json_object *j)
{
	const char *vmi = jstr(j, "vmi");
	if (!json_object_is_type(j, json_type_object) || vmi == NULL || *vmi == '\0' || strlen(vmi) >= UID_LEN)
		return -1;
	copy_uid(e->vmi_uid, vmi);
	copy_uid(e->vm_uid, jstr(j, "vm"));
	e->start = jint(j, "start");
	e->end = jint(j, "end");
	e->how = end_from_name(jstr(j, "how"));
	e->phase = intern_nonempty(jstr(j, "phase"));
	e->node = intern_nonempty(jstr(j, "node"));
	e->migrations = (int)jint(j, "migrations");
	struct json_object *ls;
	if (json_object_object_get_ex(j, "launchers", &ls) && json_object_is_type(ls, json_type_array)) {
		size_t n = json_object_array_length(ls);
		if (n > LIN_MAX_LAUNCHERS)
			n = LIN_MAX_LAUNCHERS;
		e->launchers = n ? xcalloc(n, sizeof *e->launchers) : NULL;
		for (size_t i = 0; i < n; i++) {
			struct json_object *o = json_object_array_get_idx(ls, i);
			if (o == NULL || !json_object_is_type(o, json_type_object) || jstr(o, "uid") == NULL)
				continue;
			struct lineage_launcher *la = &e->launchers[e->nlaunchers++];
			copy_uid(la->uid, jstr(o, "uid"));
			la->name = xstrndup(jstr(o, "name") ? jstr(o, "name") : "", 253);
			la->node = intern_nonempty(jstr(o, "node"));
			la->start = jint(o, "start");
			la->end = jint(o, "end");
			struct json_object *m;
			la->migrated = json_object_object_get_ex(o, "migrated", &m) && json_object_get_boolean(m);
			la->attempt = json_object_object_get_ex(o, "attempt", &m) && json_object_get_boolean(m);
		}
	}
	return 0;
}

static void exec_clear(struct lineage_exec *e)
{
	for (int i = 0; i < e->nlaunchers; i++)
		free(e->launchers[i].name);
	free(e->launchers);
	e->launchers = NULL;
	e->nlaunchers = 0;
}

/* The by_vmi key of a source's VMI UID: "<source id>:<vmi uid>" (as snprintf would cut it; per change, so no
 * format parsing). */
static void exec_key(char key[16 + UID_LEN], int src_id, const char *uid)
{
	char d[12];
	size_t i = sizeof d, o = 0;
	unsigned u = src_id < 0 ? 0u - (unsigned)src_id : (unsigned)src_id;
	do
		d[--i] = (char)('0' + u % 10);
	while ((u /= 10) != 0);
	if (src_id < 0)
		key[o++] = '-';
	while (i < sizeof d)
		key[o++] = d[i++];
	key[o++] = ':';
	size_t n = strnlen(uid, 16 + UID_LEN - 1 - o);
	memcpy(key + o, uid, n);
	key[o + n] = '\0';
}

static struct lin_src *src_slot(struct lineage *l, const struct source *src)
{
	size_t id = (size_t)src->id;
	if (id >= l->nsrcs) {
		l->srcs = xreallocarray(l->srcs, id + 1, sizeof *l->srcs);
		for (size_t i = l->nsrcs; i <= id; i++)
			l->srcs[i] = (struct lin_src){ .fd = -1, .rfd = -1 };
		l->nsrcs = id + 1;
	}
	return &l->srcs[id];
}

/* Writes what src's records wait in (one write() for all of them: with O_APPEND whole records are never
 * interleaved with another writer's). */
static void flush_src(struct lineage *l, struct lin_src *ls)
{
	if (ls->out.len == 0)
		return;
	if (ls->fd < 0) {
		if (util_mkdir_p(l->dir, 0700) < 0) {
			log_warn("lineage: cannot create %s: %s", l->dir, strerror(errno));
			buf_reset(&ls->out);
			return;
		}
		char why[UTIL_WHY_LEN];
		ls->fd = util_open_private(ls->path, O_APPEND, true, why); /* no symlink, FIFO or foreign file */
		if (ls->fd < 0) {
			log_warn("lineage: cannot open %s: %s", ls->path, why);
			buf_reset(&ls->out);
			return;
		}
	}
	size_t off = 0;
	while (off < ls->out.len) {
		ssize_t w = write(ls->fd, ls->out.data + off, ls->out.len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			log_warn("lineage: cannot write %s: %s", ls->path, w < 0 ? strerror(errno) : "short write");
			break;
		}
		off += (size_t)w;
	}
	buf_reset(&ls->out);
}

/* A record is queued: written at once, or (batched) with the loop pass's others at its end. */
static void queued(struct lineage *l, struct lin_src *ls)
{
	ls->lines++;
	if (!l->batched || ls->out.len >= LIN_BATCH)
		flush_src(l, ls);
}

static void persist(struct lineage *l, struct lin_exec *x)
{
	struct lin_src *ls = src_slot(l, x->vm->src);
	exec_line(&ls->out, &x->pub, x->vm->ns, x->vm->name);
	queued(l, ls);
}

/* End of a loop pass (batched): the pass's records reach the files before the loop sleeps. */
static void on_pass_end(void *arg)
{
	struct lineage *l = arg;
	for (size_t i = 0; i < l->nsrcs; i++)
		flush_src(l, &l->srcs[i]);
}

/* Rewrites a source's file with one line per execution (write-temp + rename). */
static void compact(struct lineage *l, const struct source *src)
{
	struct lin_src *ls = src_slot(l, src);
	struct buf b;
	buf_init(&b);
	size_t n = 0;
	const char *k;
	void *val;
	for (size_t it = 0; hmap_next(&l->vms, &it, &k, &val);) {
		struct lin_vm *v = val;
		if (v->src != src)
			continue;
		for (size_t i = 0; i < v->n; i++, n++)
			exec_line(&b, &v->ex[i]->pub, v->ns, v->name);
	}
	flush_src(l, ls); /* records still waiting reach the old file first (the new one holds their state) */
	if (util_write_file_atomic(ls->path, b.data ? b.data : "", b.len, 0600) == 0) {
		ls->lines = n;
		if (ls->fd >= 0) { /* the descriptor points at the replaced file */
			close(ls->fd);
			ls->fd = -1;
		}
	}
	buf_free(&b);
}

/* ---- per-VM state ---- */

static struct lin_exec *exec_new(struct lineage *l, struct lin_vm *v, const char *vmi_uid)
{
	struct lin_exec *x = xcalloc(1, sizeof *x);
	copy_uid(x->pub.vmi_uid, vmi_uid);
	exec_key(x->key, v->src->id, vmi_uid);
	x->vm = v;
	if (v->n == LIN_MAX_EXECS) {
		struct lin_exec *old = v->ex[0];
		hmap_del(&l->by_vmi, old->key);
		if (hmap_get(&l->by_uid, old->pub.vmi_uid) == old)
			hmap_del(&l->by_uid, old->pub.vmi_uid);
		exec_clear(&old->pub);
		free(old);
		memmove(v->ex, v->ex + 1, (v->n - 1) * sizeof *v->ex);
		v->n--;
	}
	v->ex = xreallocarray(v->ex, v->n + 1, sizeof *v->ex);
	v->ex[v->n++] = x;
	hmap_put(&l->by_vmi, x->key, x);
	hmap_put(&l->by_uid, x->pub.vmi_uid, x);
	return x;
}

/* Takes x out of its VM's list (it is not freed). */
static void exec_unlink(struct lineage *l, struct lin_exec *x)
{
	struct lin_vm *v = x->vm;
	for (size_t i = 0; i < v->n; i++)
		if (v->ex[i] == x) {
			memmove(v->ex + i, v->ex + i + 1, (v->n - i - 1) * sizeof *v->ex);
			v->n--;
			break;
		}
	hmap_del(&l->by_vmi, x->key);
	if (hmap_get(&l->by_uid, x->pub.vmi_uid) == x)
		hmap_del(&l->by_uid, x->pub.vmi_uid);
}

static int exec_by_start(const void *a, const void *b)
{
	const struct lin_exec *x = *(struct lin_exec *const *)a, *y = *(struct lin_exec *const *)b;
	if (x->pub.start != y->pub.start)
		return x->pub.start < y->pub.start ? -1 : 1;
	return 0;
}

static struct lin_vm *vm_lookup(struct lineage *l, struct source *src, const char *ns, const char *name)
{
	char *key = xasprintf("%d/%s/%s", src->id, ns, name);
	struct lin_vm *v = hmap_get(&l->vms, key);
	if (v) {
		free(key);
		return v;
	}
	v = xcalloc(1, sizeof *v);
	v->key = key;
	v->src = src;
	v->ns = intern(ns);
	v->name = xstrdup(name);
	hmap_put(&l->vms, v->key, v);
	return v;
}

static uint64_t now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static void load_begin(struct lineage *l, struct source *src)
{
	struct lin_src *ls = src_slot(l, src);
	free(ls->path);
	ls->path = lineage_path(l, src, NULL, NULL);
	ls->src = src;
	ls->rfd = open(ls->path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	ls->had_file = ls->rfd >= 0;
	ls->len = ls->off = ls->lines = ls->execs = 0;
}

/* The next part of the file after what is left of the text (a line cut by the last read); false at its end. */
static bool read_more(struct lin_src *ls)
{
	if (ls->rfd < 0)
		return false;
	if (ls->off) {
		memmove(ls->text, ls->text + ls->off, ls->len - ls->off);
		ls->len -= ls->off;
		ls->off = 0;
	}
	if (ls->cap < ls->len + LIN_READ) {
		ls->cap = ls->len + LIN_READ;
		ls->text = xrealloc(ls->text, ls->cap);
	}
	ssize_t r;
	do
		r = read(ls->rfd, ls->text + ls->len, LIN_READ);
	while (r < 0 && errno == EINTR);
	if (r <= 0) {
		close(ls->rfd);
		ls->rfd = -1;
		return false;
	}
	ls->len += (size_t)r;
	return true;
}

/* Applies the history's lines from where the last call stopped until the end or, with deadline_us, until that
 * time; true at the end. The last line of each VMI UID wins; a torn last line is ignored. */
static bool load_lines(struct lineage *l, struct source *src, uint64_t deadline_us)
{
	struct lin_src *ls = src_slot(l, src);
	size_t first = ls->lines;
	for (;;) {
		if (ls->off == ls->len || memchr(ls->text + ls->off, '\n', ls->len - ls->off) == NULL) {
			if (!read_more(ls)) {
				ls->off = ls->len; /* a torn last line (crash mid-write) is ignored */
				return true;
			}
			continue;
		}
		if (deadline_us && (ls->lines & 31) == 0 && ls->lines > first && now_us() >= deadline_us)
			return false;
		char *p = ls->text + ls->off;
		char *nl = memchr(p, '\n', ls->len - ls->off);
		ls->off = (size_t)(nl + 1 - ls->text);
		ls->lines++;
		struct json_tokener *tok = json_tokener_new();
		struct json_object *j = json_tokener_parse_ex(tok, p, (int)(nl - p));
		json_tokener_free(tok);
		struct lineage_exec e = { .how = LIN_LOST };
		const char *ns = j ? jstr(j, "ns") : NULL, *name = j ? jstr(j, "name") : NULL;
		struct json_object *moved = NULL;
		if (ns && name && *name && j && json_object_object_get_ex(j, "moved", &moved) &&
		    json_object_get_boolean(moved) && exec_from_json(&e, j) == 0) {
			/* the execution went on on another host (source): it is that host's history now */
			char key[16 + UID_LEN];
			exec_key(key, src->id, e.vmi_uid);
			struct lin_exec *x = hmap_get(&l->by_vmi, key);
			if (x) {
				exec_unlink(l, x);
				exec_clear(&x->pub);
				free(x);
			}
			exec_clear(&e);
		} else if (ns && name && *name && exec_from_json(&e, j) == 0) {
			char key[16 + UID_LEN];
			exec_key(key, src->id, e.vmi_uid);
			struct lin_exec *x = hmap_get(&l->by_vmi, key);
			if (x == NULL) {
				x = exec_new(l, vm_lookup(l, src, ns, name), e.vmi_uid);
				ls->execs++;
			}
			exec_clear(&x->pub);
			x->pub = e;
		} else {
			exec_clear(&e);
		}
		json_object_put(j);
	}
}

static void load_end(struct lineage *l, struct source *src)
{
	struct lin_src *ls = src_slot(l, src);
	ls->loaded = true;
	free(ls->text);
	ls->text = NULL;
	ls->len = ls->cap = ls->off = 0;
	if (ls->rfd >= 0)
		close(ls->rfd);
	ls->rfd = -1;
	if (!ls->had_file)
		return;
	const char *k;
	void *val;
	for (size_t it = 0; hmap_next(&l->vms, &it, &k, &val);) {
		struct lin_vm *v = val;
		if (v->src == src && v->n > 1) /* by start time; records of one execution share a start */
			qsort(v->ex, v->n, sizeof *v->ex, exec_by_start);
	}
	if (ls->lines > 2 * ls->execs + 64)
		compact(l, src);
}

/* Reads a source's history once, at once. */
static void load(struct lineage *l, struct source *src)
{
	load_begin(l, src);
	load_lines(l, src, 0);
	load_end(l, src);
}

static struct lin_vm *vm_get(struct lineage *l, struct source *src, const char *ns, const char *name)
{
	struct lin_src *ls = src_slot(l, src);
	if (!ls->loaded && ls->pace == PACE_READ) {
		/* asked for now (a VM's history is shown): the rest of the file at once */
		load_lines(l, src, 0);
		load_end(l, src);
		ls->pace = PACE_CATCH_VMI;
		ls->scan = 0;
	} else if (!ls->loaded) {
		load(l, src);
	}
	return vm_lookup(l, src, ns, name);
}

/* ---- classification ---- */

/* How an execution that just ended ended, from its last phase and the VM's intent at that moment. A VMI that
 * reaches Succeeded because it is being deleted (stop, restart) is judged by the intent too: restarted when the
 * VM still wants to run (it will be replaced by a new VMI UID), stopped otherwise. */
static enum lineage_end classify(const struct lineage_exec *e, const struct vm *vm)
{
	if (util_str_eq(e->phase, "Failed"))
		return LIN_FAILED;
	if (vm == NULL)
		return LIN_STOPPED;
	const char *last = NULL;
	for (int i = 0; i < vm->nscr; i++)
		last = vm->scr[i].action;
	if (util_str_eq(last, "Stop"))
		return LIN_STOPPED;
	if (util_str_eq(last, "Start"))
		return LIN_RESTARTED;
	bool always = util_str_eq(vm->run_strategy, "Always");
	if (util_str_eq(e->phase, "Succeeded")) /* RerunOnFailure respects a guest shutdown */
		return always ? LIN_RESTARTED : LIN_STOPPED;
	return always || util_str_eq(vm->run_strategy, "RerunOnFailure") ? LIN_RESTARTED : LIN_STOPPED;
}

static const struct vm *vm_of(struct lineage *l, const struct lin_vm *v)
{
	return (const struct vm *)store_find(l->st, v->src, OBJ_VM, v->ns, v->name);
}

static int64_t phase_time(const struct vmi *vmi, const char *phase)
{
	for (int i = vmi->nphases - 1; i >= 0; i--)
		if (util_str_eq(vmi->phases[i].phase, phase))
			return vmi->phases[i].at;
	return 0;
}

static void end_exec(struct lineage *l, struct lin_exec *x, enum lineage_end how, int64_t at)
{
	x->pub.how = how;
	if (x->pub.end == 0)
		x->pub.end = at ? at : util_wall_s();
	x->ended_seen = util_wall_s();
	if (how == LIN_RESTARTED)
		l->restart_seen = x->ended_seen;
	for (int i = 0; i < x->pub.nlaunchers; i++)
		if (x->pub.launchers[i].end == 0)
			x->pub.launchers[i].end = x->pub.end;
}

/* ---- applying changes ---- */

static bool launcher_update(struct lin_exec *x, const char *uid, const char *name, const char *node,
			    int64_t created)
{
	struct lineage_launcher *la = NULL;
	for (int i = 0; i < x->pub.nlaunchers; i++)
		if (strcmp(x->pub.launchers[i].uid, uid) == 0)
			la = &x->pub.launchers[i];
	bool changed = false;
	if (la == NULL) {
		if (x->pub.nlaunchers >= LIN_MAX_LAUNCHERS)
			return false;
		x->pub.launchers = xreallocarray(x->pub.launchers, (size_t)x->pub.nlaunchers + 1, sizeof *la);
		/* in the order they started, whatever order the lists and watches deliver them in (a service lists
		 * the launcher a migration left behind after the new one) */
		int64_t st = created ? created : util_wall_s();
		int at = x->pub.nlaunchers;
		while (at > 0 && x->pub.launchers[at - 1].start > st)
			at--;
		memmove(&x->pub.launchers[at + 1], &x->pub.launchers[at],
			sizeof *la * (size_t)(x->pub.nlaunchers - at));
		x->pub.nlaunchers++;
		la = &x->pub.launchers[at];
		memset(la, 0, sizeof *la);
		copy_uid(la->uid, uid);
		la->name = xstrdup(name);
		la->start = st;
		changed = true;
	}
	if (node && la->node != node) {
		la->node = intern(node);
		changed = true;
	}
	return changed;
}

static void pending_drop(struct lineage *l, struct pending *pe)
{
	hmap_del(&l->pending, pe->key);
	for (int i = 0; i < pe->n; i++)
		free(pe->pods[i].name);
	free(pe);
}

/* The VMI moved from node `from` to `to` (same UID): a completed live migration. */
static void migrated(struct lin_exec *x, const struct vmi *vmi, const char *from)
{
	int64_t at = vmi_mig(vmi)->present && vmi_mig(vmi)->end ? vmi_mig(vmi)->end : util_wall_s();
	x->pub.migrations++;
	for (int i = 0; i < x->pub.nlaunchers; i++) {
		struct lineage_launcher *la = &x->pub.launchers[i];
		if (la->node && strcmp(la->node, from) == 0 && !la->migrated) {
			la->migrated = true;
			if (la->end == 0)
				la->end = at;
		}
	}
}

/* The same VMI UID under another source: the execution moved between engine hosts (a live migration between
 * two libvirt hosts, each a source). It continues under the new source; the old source's file gets a tombstone
 * so a reload does not show it there too. */
static void exec_move(struct lineage *l, struct lin_exec *x, struct lin_vm *to)
{
	struct lin_src *ls = src_slot(l, x->vm->src);
	buf_add_str(&ls->out, "{\"ns\":");
	put_str(&ls->out, x->vm->ns);
	buf_add_str(&ls->out, ",\"name\":");
	put_str(&ls->out, x->vm->name);
	buf_add_str(&ls->out, ",\"vmi\":");
	put_str(&ls->out, x->pub.vmi_uid);
	buf_add_str(&ls->out, ",\"moved\":true,\"to\":");
	put_str(&ls->out, to->src->name);
	buf_add_str(&ls->out, "}\n");
	queued(l, ls);
	exec_unlink(l, x);
	x->vm = to;
	exec_key(x->key, to->src->id, x->pub.vmi_uid);
	to->ex = xreallocarray(to->ex, to->n + 1, sizeof *to->ex);
	to->ex[to->n++] = x;
	qsort(to->ex, to->n, sizeof *to->ex, exec_by_start);
	hmap_put(&l->by_vmi, x->key, x);
	hmap_put(&l->by_uid, x->pub.vmi_uid, x);
	if (x->pub.how != LIN_RUNNING) { /* the old host saw it go: that was the move, not an end */
		x->pub.how = LIN_RUNNING;
		x->pub.end = 0;
	}
}

static void vmi_seen(struct lineage *l, const struct vmi *vmi)
{
	char key[16 + UID_LEN];
	exec_key(key, vmi->o.src->id, vmi->o.uid);
	struct lin_exec *x = hmap_get(&l->by_vmi, key);
	bool changed = false;
	if (x == NULL) {
		struct lin_vm *v = vm_get(l, vmi->o.src, vmi->o.ns, vmi->o.name);
		x = hmap_get(&l->by_vmi, key); /* the history may know it */
		struct lin_exec *elsewhere = x ? NULL : hmap_get(&l->by_uid, vmi->o.uid);
		if (elsewhere && elsewhere->vm->src != vmi->o.src && elsewhere->vm->ns == v->ns &&
		    strcmp(elsewhere->vm->name, v->name) == 0) {
			exec_move(l, elsewhere, v);
			x = elsewhere;
			changed = true;
		}
		/* executions still open under another UID have been replaced */
		for (size_t i = 0; i < v->n; i++) {
			struct lin_exec *o = v->ex[i];
			if (o != x && o->pub.how == LIN_RUNNING) {
				/* its end was not seen (kvcon was not watching): only a recorded failure is known */
				end_exec(l, o, util_str_eq(o->pub.phase, "Failed") ? LIN_FAILED : LIN_LOST, vmi->o.created);
				persist(l, o);
			}
		}
		if (x == NULL) {
			x = exec_new(l, v, vmi->o.uid);
			x->pub.start = vmi->o.created ? vmi->o.created : util_wall_s();
			changed = true;
		}
		/* pods seen before their VMI (watches are independent) */
		struct pending *pe = hmap_get(&l->pending, key);
		for (int i = 0; pe && i < pe->n; i++)
			changed |= launcher_update(x, pe->pods[i].uid, pe->pods[i].name, pe->pods[i].node,
						   pe->pods[i].created);
		if (pe)
			pending_drop(l, pe);
	}
	if (vmi->vm_uid[0] && strcmp(x->pub.vm_uid, vmi->vm_uid) != 0) {
		copy_uid(x->pub.vm_uid, vmi->vm_uid);
		changed = true;
	}
	if (x->pub.phase != vmi->phase && vmi->phase && *vmi->phase) {
		x->pub.phase = vmi->phase;
		changed = true;
	}
	/* a failed migration: its target launcher was an attempt, the execution stayed on the source */
	const struct migration_state *ms = vmi_mig(vmi);
	for (int i = 0; ms->present && ms->failed && ms->target_pod && i < x->pub.nlaunchers; i++) {
		struct lineage_launcher *la = &x->pub.launchers[i];
		if (!la->attempt && la->name && strcmp(la->name, ms->target_pod) == 0) {
			la->attempt = true;
			changed = true;
		}
	}
	/* a node change of the same execution is a completed migration */
	const char *was = x->pub.node;
	if (vmi->node && was && strcmp(was, vmi->node) != 0 && x->pub.how == LIN_RUNNING) {
		migrated(x, vmi, was);
		changed = true;
	}
	if (vmi->node && x->pub.node != vmi->node) {
		x->pub.node = intern(vmi->node);
		changed = true;
	}
	/* marked lost (the watch missed it) but it is here and not finished: still running */
	if (x->pub.how == LIN_LOST && vmi->o.deleted == 0 && !util_str_eq(vmi->phase, "Failed") &&
	    !util_str_eq(vmi->phase, "Succeeded")) {
		x->pub.how = LIN_RUNNING;
		x->pub.end = 0;
		changed = true;
	}
	if (x->pub.how == LIN_RUNNING && (util_str_eq(vmi->phase, "Failed") || util_str_eq(vmi->phase, "Succeeded"))) {
		end_exec(l, x, classify(&x->pub, vm_of(l, x->vm)), phase_time(vmi, vmi->phase));
		changed = true;
	}
	if (changed)
		persist(l, x);
}

static void vmi_gone(struct lineage *l, const struct vmi *vmi)
{
	char key[16 + UID_LEN];
	exec_key(key, vmi->o.src->id, vmi->o.uid);
	struct lin_exec *x = hmap_get(&l->by_vmi, key);
	if (x == NULL || x->pub.how != LIN_RUNNING)
		return;
	x->pub.phase = vmi->phase && *vmi->phase ? vmi->phase : x->pub.phase;
	int64_t at = phase_time(vmi, "Failed");
	if (at == 0)
		at = phase_time(vmi, "Succeeded");
	if (at == 0)
		at = vmi->o.deleted;
	end_exec(l, x, classify(&x->pub, vm_of(l, x->vm)), at);
	persist(l, x);
}

static void pod_seen(struct lineage *l, const struct pod *p)
{
	if (p->vmi_uid[0] == '\0')
		return;
	char key[16 + UID_LEN];
	exec_key(key, p->o.src->id, p->vmi_uid);
	struct lin_exec *x = hmap_get(&l->by_vmi, key);
	if (x) {
		if (x->pub.how == LIN_RUNNING && launcher_update(x, p->o.uid, p->o.name, p->node, p->o.created))
			persist(l, x);
		return;
	}
	struct pending *pe = hmap_get(&l->pending, key);
	if (pe == NULL) {
		pe = xcalloc(1, sizeof *pe);
		snprintf(pe->key, sizeof pe->key, "%s", key);
		hmap_put(&l->pending, pe->key, pe);
	}
	struct pend_pod *pp = NULL;
	for (int i = 0; i < pe->n; i++)
		if (strcmp(pe->pods[i].uid, p->o.uid) == 0)
			pp = &pe->pods[i];
	if (pp == NULL) {
		if (pe->n == (int)(sizeof pe->pods / sizeof pe->pods[0]))
			return;
		pp = &pe->pods[pe->n++];
		copy_uid(pp->uid, p->o.uid);
		pp->name = xstrdup(p->o.name);
	}
	pp->node = p->node ? intern(p->node) : NULL;
	pp->created = p->o.created;
}

static void pod_gone(struct lineage *l, const struct pod *p)
{
	char key[16 + UID_LEN];
	exec_key(key, p->o.src->id, p->vmi_uid);
	struct lin_exec *x = p->vmi_uid[0] ? hmap_get(&l->by_vmi, key) : NULL;
	struct pending *pe = x == NULL && p->vmi_uid[0] ? hmap_get(&l->pending, key) : NULL;
	for (int i = 0; pe && i < pe->n; i++) {
		if (strcmp(pe->pods[i].uid, p->o.uid) == 0) {
			free(pe->pods[i].name);
			pe->pods[i] = pe->pods[--pe->n];
			if (pe->n == 0)
				pending_drop(l, pe);
			break;
		}
	}
	for (int i = 0; x && i < x->pub.nlaunchers; i++) {
		struct lineage_launcher *la = &x->pub.launchers[i];
		if (strcmp(la->uid, p->o.uid) == 0 && la->end == 0) {
			la->end = util_wall_s();
			persist(l, x);
		}
	}
}

/* A VM update just after an execution ended may carry the intent that ended it: the VM and VMI watches are
 * independent streams, so the Halted of a stop can arrive after the VMI's deletion, which was then taken for a
 * restart. Only that direction is corrected, within a short window: a start right after a stop must not turn
 * the stop into a restart. */
static void vm_seen(struct lineage *l, const struct vm *vm)
{
	if (l->restart_seen == 0 || util_wall_s() - l->restart_seen > LIN_SETTLE_SECS)
		return; /* no restart within the window: nothing to correct (no lookup per VM change) */
	char key[256];
	snprintf(key, sizeof key, "%d/%s/%s", vm->o.src->id, vm->o.ns, vm->o.name);
	struct lin_vm *v = hmap_get(&l->vms, key);
	int64_t now = util_wall_s();
	for (size_t i = 0; v && i < v->n; i++) {
		struct lin_exec *x = v->ex[i];
		if (x->pub.how != LIN_RESTARTED || i + 1 < v->n) /* a newer execution proves the restart */
			continue;
		if (now - x->ended_seen > LIN_SETTLE_SECS || x->ended_seen == 0)
			continue;
		const char *last = vm->nscr ? vm->scr[vm->nscr - 1].action : NULL;
		if (util_str_eq(vm->run_strategy, "Halted") || util_str_eq(last, "Stop")) {
			x->pub.how = LIN_STOPPED;
			persist(l, x);
		}
	}
}

static void on_step(void *arg);

/* One loop pass's slice of the paced sources' work: reading their histories, then seeing what the store holds
 * again (changes were not applied while the history was read). */
static void on_step(void *arg)
{
	struct lineage *l = arg;
	l->step_t = NULL;
	if (l->held)
		return; /* lineage_hold(l, false) schedules it again */
	uint64_t deadline = now_us() + LIN_SLICE_US;
	bool more = false;
	for (size_t i = 0; i < l->nsrcs; i++) {
		struct lin_src *ls = &l->srcs[i];
		if (ls->pace == PACE_READ && now_us() < deadline && load_lines(l, ls->src, deadline)) {
			load_end(l, ls->src);
			ls->pace = PACE_CATCH_VMI;
			ls->scan = 0;
		}
		while ((ls->pace == PACE_CATCH_VMI || ls->pace == PACE_CATCH_POD) && now_us() < deadline) {
			enum obj_kind kind = ls->pace == PACE_CATCH_VMI ? OBJ_VMI : OBJ_POD;
			size_t n;
			struct obj *const *objs = store_objs(l->st, ls->src, kind, &n);
			/* the store may have changed since the last slice: an object moved behind the scan is seen at
			 * its next change */
			for (; ls->scan < n && ((ls->scan & 63) != 0 || now_us() < deadline); ls->scan++) {
				if (kind == OBJ_VMI)
					vmi_seen(l, (const struct vmi *)objs[ls->scan]);
				else
					pod_seen(l, (const struct pod *)objs[ls->scan]);
			}
			if (ls->scan < n)
				break;
			ls->pace = kind == OBJ_VMI ? PACE_CATCH_POD : PACE_NONE;
			ls->scan = 0;
		}
		more |= ls->pace != PACE_NONE;
	}
	if (more)
		l->step_t = loop_timer_add(0, on_step, l);
}

/* Paced: true while src's history is being read (its changes wait for the catch-up); the first change of a
 * source starts the reading. */
static bool paced_wait(struct lineage *l, struct source *src)
{
	if (!l->paced)
		return false;
	struct lin_src *ls = src_slot(l, src);
	if (ls->loaded)
		return false;
	if (ls->pace == PACE_NONE) {
		load_begin(l, src);
		ls->pace = PACE_READ;
		if (l->step_t == NULL && !l->held)
			l->step_t = loop_timer_add(0, on_step, l);
	}
	return true;
}

static void on_change(void *arg, enum obj_kind kind, const struct obj *old, const struct obj *new_)
{
	struct lineage *l = arg;
	const struct obj *o = new_ ? new_ : old;
	if ((kind == OBJ_VMI || kind == OBJ_POD) && o && paced_wait(l, o->src))
		return;
	switch (kind) {
	case OBJ_VMI:
		if (new_)
			vmi_seen(l, (const struct vmi *)new_);
		else if (old)
			vmi_gone(l, (const struct vmi *)old);
		break;
	case OBJ_POD:
		if (new_)
			pod_seen(l, (const struct pod *)new_);
		else if (old)
			pod_gone(l, (const struct pod *)old);
		break;
	case OBJ_VM:
		if (new_)
			vm_seen(l, (const struct vm *)new_);
		break;
	default:
		break;
	}
}

/* ---- API ---- */

struct lineage *lineage_new(struct store *st, const char *dir)
{
	struct lineage *l = xcalloc(1, sizeof *l);
	l->st = st;
	if (dir) {
		l->dir = xstrdup(dir);
	} else {
		char *state = util_state_dir();
		l->dir = util_path_join(state, "lineage");
		free(state);
	}
	hmap_init(&l->vms);
	hmap_init(&l->by_vmi);
	hmap_init(&l->by_uid);
	hmap_init(&l->pending);
	l->listener = store_listen(st, on_change, l);
	return l;
}

void lineage_free(struct lineage *l)
{
	if (l == NULL)
		return;
	store_unlisten(l->st, l->listener);
	loop_timer_cancel(l->step_t);
	if (l->hook)
		loop_hook_remove(l->hook);
	on_pass_end(l); /* what waits is written */
	const char *k;
	void *val;
	for (size_t it = 0; hmap_next(&l->vms, &it, &k, &val);) {
		struct lin_vm *v = val;
		for (size_t i = 0; i < v->n; i++) {
			exec_clear(&v->ex[i]->pub);
			free(v->ex[i]);
		}
		free(v->ex);
		free(v->name);
		free(v->key);
		free(v);
	}
	hmap_free(&l->vms);
	hmap_free(&l->by_vmi);
	hmap_free(&l->by_uid);
	for (size_t it = 0; hmap_next(&l->pending, &it, &k, &val);) {
		struct pending *pe = val;
		for (int i = 0; i < pe->n; i++)
			free(pe->pods[i].name);
		free(pe);
	}
	hmap_free(&l->pending);
	for (size_t i = 0; i < l->nsrcs; i++) {
		if (l->srcs[i].fd >= 0)
			close(l->srcs[i].fd);
		free(l->srcs[i].path);
		free(l->srcs[i].text);
		buf_free(&l->srcs[i].out);
		if (l->srcs[i].rfd >= 0)
			close(l->srcs[i].rfd);
	}
	free(l->srcs);
	free(l->dir);
	free(l);
}

void lineage_set_paced(struct lineage *l)
{
	l->paced = true;
	if (!l->batched) {
		l->batched = true;
		l->hook = loop_hook_add(on_pass_end, l);
	}
}

void lineage_hold(struct lineage *l, bool hold)
{
	l->held = hold;
	if (hold || l->step_t)
		return;
	for (size_t i = 0; i < l->nsrcs; i++)
		if (l->srcs[i].pace != PACE_NONE) {
			l->step_t = loop_timer_add(0, on_step, l);
			return;
		}
}

void lineage_scan(struct lineage *l, struct source *src)
{
	if (paced_wait(l, src))
		return; /* the catch-up after the reading sees them */
	size_t n;
	struct obj *const *vmis = store_objs(l->st, src, OBJ_VMI, &n);
	for (size_t i = 0; i < n; i++)
		vmi_seen(l, (const struct vmi *)vmis[i]);
}

const struct lineage_exec *const *lineage_get(struct lineage *l, struct source *src, const char *ns,
					      const char *name, size_t *n)
{
	struct lin_vm *v = vm_get(l, src, ns, name);
	const struct vmi *cur = (const struct vmi *)store_find(l->st, src, OBJ_VMI, ns, name);
	if (cur)
		vmi_seen(l, cur);
	if (src->health[OBJ_VMI].state == WATCH_LIVE) {
		for (size_t i = 0; i < v->n; i++) {
			struct lin_exec *x = v->ex[i];
			if (x->pub.how == LIN_RUNNING && (cur == NULL || strcmp(cur->o.uid, x->pub.vmi_uid) != 0)) {
				x->pub.how = LIN_LOST; /* its end is not known */
				persist(l, x);
			}
		}
	}
	*n = v->n;
	return (const struct lineage_exec *const *)v->ex;
}

static void fmt_time(int64_t t, char *buf, size_t len)
{
	if (t == 0)
		snprintf(buf, len, "-");
	else
		util_format_time(t, buf, len);
}

void lineage_format_text(const struct lineage_exec *const *ex, size_t n, int64_t now, struct buf *out)
{
	if (n == 0) {
		buf_add_str(out, "no executions recorded\n");
		return;
	}
	buf_printf(out, "%-3s %-36s %-20s %-20s %-9s %-10s %s\n", "#", "VMI UID", "STARTED", "ENDED", "HOW", "DURATION",
		   "LAUNCHERS (node)");
	for (size_t i = 0; i < n; i++) {
		const struct lineage_exec *e = ex[i];
		char s[32], en[32], dur[32] = "-";
		fmt_time(e->start, s, sizeof s);
		fmt_time(e->end, en, sizeof en);
		if (e->start && (e->end || e->how == LIN_RUNNING))
			util_human_duration((e->end ? e->end : now) - e->start, dur, sizeof dur);
		buf_printf(out, "%-3zu %-36s %-20s %-20s %-9s %-10s ", i + 1, e->vmi_uid, s, en, lineage_end_name(e->how),
			   dur);
		bool first = true;
		for (int k = 0; k < e->nlaunchers; k++) { /* the moves; a failed migration's target is not one */
			const struct lineage_launcher *la = &e->launchers[k];
			if (la->attempt)
				continue;
			char *name = util_escape_display(la->name);
			buf_printf(out, "%s%s (%s%s)", first ? "" : " -> ", name, la->node ? la->node : "unscheduled",
				   la->migrated ? ", migrated" : "");
			first = false;
			free(name);
		}
		for (int k = 0; k < e->nlaunchers; k++) {
			const struct lineage_launcher *la = &e->launchers[k];
			if (!la->attempt)
				continue;
			char *name = util_escape_display(la->name);
			buf_printf(out, "  [migration to %s failed: %s]", la->node ? la->node : "unscheduled", name);
			free(name);
		}
		if (e->nlaunchers == 0)
			buf_add_str(out, "-");
		if (e->migrations)
			buf_printf(out, "  [%d migration%s]", e->migrations, e->migrations > 1 ? "s" : "");
		buf_add_char(out, '\n');
	}
}
