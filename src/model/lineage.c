/* Lineage recorder (see lineage.h): a store listener keeping per VM the list of its executions, persisted as
 * JSON lines. The file is kvcon's own format, not API text, so json-c is used here only to write and read it. */
#include "model/lineage.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/hmap.h"
#include "core/intern.h"
#include "core/log.h"
#include "core/util.h"
#include "core/xmalloc.h"

#define LIN_MAX_EXECS 256     /* per VM, oldest dropped */
#define LIN_MAX_LAUNCHERS 32  /* per execution */
#define LIN_SETTLE_SECS 10    /* a VM update this soon after an end may still reclassify it */

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
	char *path;
	struct lin_exec **ex;
	size_t n;
	size_t file_lines;
};

struct lineage {
	struct store *st;
	char *dir;
	int listener;
	struct hmap vms;    /* key -> struct lin_vm */
	struct hmap by_vmi; /* "<source id>:<vmi uid>" -> struct lin_exec */
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
	char *s = sanitize(src->name), *n = sanitize(ns), *m = sanitize(name);
	char *p = xasprintf("%s/%s/%s_%s.jsonl", l->dir, s, n, m);
	free(s);
	free(n);
	free(m);
	return p;
}

/* ---- records ---- */

static struct json_object *exec_to_json(const struct lineage_exec *e)
{
	struct json_object *j = json_object_new_object();
	json_object_object_add(j, "vmi", json_object_new_string(e->vmi_uid));
	json_object_object_add(j, "vm", json_object_new_string(e->vm_uid));
	json_object_object_add(j, "start", json_object_new_int64(e->start));
	json_object_object_add(j, "end", json_object_new_int64(e->end));
	json_object_object_add(j, "how", json_object_new_string(lineage_end_name(e->how)));
	json_object_object_add(j, "phase", json_object_new_string(e->phase ? e->phase : ""));
	json_object_object_add(j, "node", json_object_new_string(e->node ? e->node : ""));
	json_object_object_add(j, "migrations", json_object_new_int(e->migrations));
	struct json_object *ls = json_object_new_array();
	for (int i = 0; i < e->nlaunchers; i++) {
		const struct lineage_launcher *la = &e->launchers[i];
		struct json_object *o = json_object_new_object();
		json_object_object_add(o, "uid", json_object_new_string(la->uid));
		json_object_object_add(o, "name", json_object_new_string(la->name ? la->name : ""));
		json_object_object_add(o, "node", json_object_new_string(la->node ? la->node : ""));
		json_object_object_add(o, "start", json_object_new_int64(la->start));
		json_object_object_add(o, "end", json_object_new_int64(la->end));
		json_object_object_add(o, "migrated", json_object_new_boolean(la->migrated));
		json_object_array_add(ls, o);
	}
	json_object_object_add(j, "launchers", ls);
	return j;
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

static void persist_line(struct lin_vm *v, const char *line, size_t len)
{
	char *dir = xstrdup(v->path);
	char *slash = strrchr(dir, '/');
	if (slash)
		*slash = '\0';
	if (util_mkdir_p(dir, 0700) < 0) {
		log_warn("lineage: cannot create %s: %s", dir, strerror(errno));
		free(dir);
		return;
	}
	free(dir);
	int fd = open(v->path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (fd < 0) {
		log_warn("lineage: cannot open %s: %s", v->path, strerror(errno));
		return;
	}
	/* one write() per record: with O_APPEND a record is never interleaved with another writer's */
	ssize_t w;
	do
		w = write(fd, line, len);
	while (w < 0 && errno == EINTR);
	if (w != (ssize_t)len)
		log_warn("lineage: short write to %s", v->path);
	close(fd);
	v->file_lines++;
}

static void persist(struct lin_exec *x)
{
	struct json_object *j = exec_to_json(&x->pub);
	size_t len;
	const char *s = json_object_to_json_string_length(j, JSON_C_TO_STRING_PLAIN, &len);
	char *line = xmalloc(len + 2);
	memcpy(line, s, len);
	line[len] = '\n';
	line[len + 1] = '\0';
	persist_line(x->vm, line, len + 1);
	free(line);
	json_object_put(j);
}

/* Rewrites the file with one line per execution (write-temp + rename). */
static void compact(struct lin_vm *v)
{
	struct buf b;
	buf_init(&b);
	for (size_t i = 0; i < v->n; i++) {
		struct json_object *j = exec_to_json(&v->ex[i]->pub);
		buf_add_str(&b, json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN));
		buf_add_char(&b, '\n');
		json_object_put(j);
	}
	if (util_write_file_atomic(v->path, b.data ? b.data : "", b.len, 0600) == 0)
		v->file_lines = v->n;
	buf_free(&b);
}

/* ---- per-VM state ---- */

static struct lin_exec *exec_new(struct lineage *l, struct lin_vm *v, const char *vmi_uid)
{
	struct lin_exec *x = xcalloc(1, sizeof *x);
	copy_uid(x->pub.vmi_uid, vmi_uid);
	snprintf(x->key, sizeof x->key, "%d:%s", v->src->id, vmi_uid);
	x->vm = v;
	if (v->n == LIN_MAX_EXECS) {
		struct lin_exec *old = v->ex[0];
		hmap_del(&l->by_vmi, old->key);
		exec_clear(&old->pub);
		free(old);
		memmove(v->ex, v->ex + 1, (v->n - 1) * sizeof *v->ex);
		v->n--;
	}
	v->ex = xreallocarray(v->ex, v->n + 1, sizeof *v->ex);
	v->ex[v->n++] = x;
	hmap_put(&l->by_vmi, x->key, x);
	return x;
}

static int exec_by_start(const void *a, const void *b)
{
	const struct lin_exec *x = *(struct lin_exec *const *)a, *y = *(struct lin_exec *const *)b;
	if (x->pub.start != y->pub.start)
		return x->pub.start < y->pub.start ? -1 : 1;
	return 0;
}

static void load(struct lineage *l, struct lin_vm *v)
{
	size_t len;
	char *text = util_read_file(v->path, &len);
	if (text == NULL)
		return;
	size_t lines = 0;
	for (char *p = text, *nl; p < text + len; p = nl + 1) {
		nl = memchr(p, '\n', (size_t)(text + len - p));
		if (nl == NULL)
			break; /* a torn last line (crash mid-write) is ignored */
		lines++;
		struct json_tokener *tok = json_tokener_new();
		struct json_object *j = json_tokener_parse_ex(tok, p, (int)(nl - p));
		json_tokener_free(tok);
		struct lineage_exec e = { .how = LIN_LOST };
		if (j && exec_from_json(&e, j) == 0) {
			char key[16 + UID_LEN];
			snprintf(key, sizeof key, "%d:%s", v->src->id, e.vmi_uid);
			struct lin_exec *x = hmap_get(&l->by_vmi, key);
			if (x == NULL)
				x = exec_new(l, v, e.vmi_uid);
			exec_clear(&x->pub);
			x->pub = e; /* the last line of a VMI UID wins */
		} else {
			exec_clear(&e);
		}
		json_object_put(j);
	}
	free(text);
	/* stable by start time; records of one execution share a start */
	qsort(v->ex, v->n, sizeof *v->ex, exec_by_start);
	v->file_lines = lines;
	if (lines > 2 * v->n + 64)
		compact(v);
}

static struct lin_vm *vm_get(struct lineage *l, struct source *src, const char *ns, const char *name)
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
	v->path = lineage_path(l, src, ns, name);
	hmap_put(&l->vms, v->key, v);
	load(l, v);
	return v;
}

/* ---- classification ---- */

static bool vm_wants_run(const struct vm *vm)
{
	if (vm == NULL)
		return false;
	const char *last = NULL;
	for (int i = 0; i < vm->nscr; i++)
		last = vm->scr[i].action;
	if (last && strcmp(last, "Stop") == 0)
		return false;
	if (last && strcmp(last, "Start") == 0)
		return true;
	return util_str_eq(vm->run_strategy, "Always") || util_str_eq(vm->run_strategy, "RerunOnFailure");
}

static enum lineage_end classify(const struct lineage_exec *e, const struct vm *vm)
{
	if (util_str_eq(e->phase, "Failed"))
		return LIN_FAILED;
	if (util_str_eq(e->phase, "Succeeded"))
		return LIN_STOPPED;
	return vm_wants_run(vm) ? LIN_RESTARTED : LIN_STOPPED;
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
	(void)l;
	x->pub.how = how;
	if (x->pub.end == 0)
		x->pub.end = at ? at : util_wall_s();
	x->ended_seen = util_wall_s();
	for (int i = 0; i < x->pub.nlaunchers; i++)
		if (x->pub.launchers[i].end == 0)
			x->pub.launchers[i].end = x->pub.end;
}

/* ---- applying changes ---- */

static bool launcher_update(struct lin_exec *x, const struct pod *p)
{
	struct lineage_launcher *la = NULL;
	for (int i = 0; i < x->pub.nlaunchers; i++)
		if (strcmp(x->pub.launchers[i].uid, p->o.uid) == 0)
			la = &x->pub.launchers[i];
	bool changed = false;
	if (la == NULL) {
		if (x->pub.nlaunchers >= LIN_MAX_LAUNCHERS)
			return false;
		x->pub.launchers = xreallocarray(x->pub.launchers, (size_t)x->pub.nlaunchers + 1, sizeof *la);
		la = &x->pub.launchers[x->pub.nlaunchers++];
		memset(la, 0, sizeof *la);
		copy_uid(la->uid, p->o.uid);
		la->name = xstrdup(p->o.name);
		la->start = p->o.created ? p->o.created : util_wall_s();
		changed = true;
	}
	if (p->node && la->node != p->node) {
		la->node = intern(p->node);
		changed = true;
	}
	return changed;
}

/* The VMI moved from node `from` to `to` (same UID): a completed live migration. */
static void migrated(struct lin_exec *x, const struct vmi *vmi, const char *from)
{
	int64_t at = vmi->mig.present && vmi->mig.end ? vmi->mig.end : util_wall_s();
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

static void vmi_seen(struct lineage *l, const struct vmi *vmi)
{
	char key[16 + UID_LEN];
	snprintf(key, sizeof key, "%d:%s", vmi->o.src->id, vmi->o.uid);
	struct lin_exec *x = hmap_get(&l->by_vmi, key);
	bool changed = false;
	if (x == NULL) {
		struct lin_vm *v = vm_get(l, vmi->o.src, vmi->o.ns, vmi->o.name);
		x = hmap_get(&l->by_vmi, key); /* the history may know it */
		/* executions still open under another UID have been replaced */
		const struct vm *vm = vm_of(l, v);
		for (size_t i = 0; i < v->n; i++) {
			struct lin_exec *o = v->ex[i];
			if (o != x && o->pub.how == LIN_RUNNING) {
				enum lineage_end how = util_str_eq(o->pub.phase, "Failed") ? LIN_FAILED
						       : util_str_eq(o->pub.phase, "Succeeded") ? LIN_STOPPED
						       : vm_wants_run(vm) ? LIN_RESTARTED : LIN_LOST;
				end_exec(l, o, how, vmi->o.created);
				persist(o);
			}
		}
		if (x == NULL) {
			x = exec_new(l, v, vmi->o.uid);
			x->pub.start = vmi->o.created ? vmi->o.created : util_wall_s();
			changed = true;
		}
		/* pods seen before their VMI (watches are independent) */
		size_t n;
		struct obj *const *pods = store_objs(l->st, vmi->o.src, OBJ_POD, &n);
		for (size_t i = 0; i < n; i++) {
			const struct pod *p = (const struct pod *)pods[i];
			if (strcmp(p->vmi_uid, vmi->o.uid) == 0)
				changed |= launcher_update(x, p);
		}
	}
	if (vmi->vm_uid[0] && strcmp(x->pub.vm_uid, vmi->vm_uid) != 0) {
		copy_uid(x->pub.vm_uid, vmi->vm_uid);
		changed = true;
	}
	if (x->pub.phase != vmi->phase && vmi->phase && *vmi->phase) {
		x->pub.phase = vmi->phase;
		changed = true;
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
		end_exec(l, x, util_str_eq(vmi->phase, "Failed") ? LIN_FAILED : LIN_STOPPED, phase_time(vmi, vmi->phase));
		changed = true;
	}
	if (changed)
		persist(x);
}

static void vmi_gone(struct lineage *l, const struct vmi *vmi)
{
	char key[16 + UID_LEN];
	snprintf(key, sizeof key, "%d:%s", vmi->o.src->id, vmi->o.uid);
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
	persist(x);
}

static void pod_seen(struct lineage *l, const struct pod *p)
{
	if (p->vmi_uid[0] == '\0')
		return;
	char key[16 + UID_LEN];
	snprintf(key, sizeof key, "%d:%s", p->o.src->id, p->vmi_uid);
	struct lin_exec *x = hmap_get(&l->by_vmi, key);
	if (x && x->pub.how == LIN_RUNNING && launcher_update(x, p))
		persist(x);
}

static void pod_gone(struct lineage *l, const struct pod *p)
{
	char key[16 + UID_LEN];
	snprintf(key, sizeof key, "%d:%s", p->o.src->id, p->vmi_uid);
	struct lin_exec *x = p->vmi_uid[0] ? hmap_get(&l->by_vmi, key) : NULL;
	for (int i = 0; x && i < x->pub.nlaunchers; i++) {
		struct lineage_launcher *la = &x->pub.launchers[i];
		if (strcmp(la->uid, p->o.uid) == 0 && la->end == 0) {
			la->end = util_wall_s();
			persist(x);
		}
	}
}

/* A VM update just after an execution ended may carry the intent that ended it: the VM and VMI watches are
 * independent streams, so the Halted of a stop can arrive after the VMI's deletion, which was then taken for a
 * restart. Only that direction is corrected, within a short window: a start right after a stop must not turn
 * the stop into a restart. */
static void vm_seen(struct lineage *l, const struct vm *vm)
{
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
		enum lineage_end how = classify(&x->pub, vm);
		if (how == LIN_STOPPED) {
			x->pub.how = how;
			persist(x);
		}
	}
}

static void on_change(void *arg, enum obj_kind kind, const struct obj *old, const struct obj *new_)
{
	struct lineage *l = arg;
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
	l->listener = store_listen(st, on_change, l);
	return l;
}

void lineage_free(struct lineage *l)
{
	if (l == NULL)
		return;
	store_unlisten(l->st, l->listener);
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
		free(v->path);
		free(v->key);
		free(v);
	}
	hmap_free(&l->vms);
	hmap_free(&l->by_vmi);
	free(l->dir);
	free(l);
}

void lineage_scan(struct lineage *l, struct source *src)
{
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
				persist(x);
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
		for (int k = 0; k < e->nlaunchers; k++) {
			const struct lineage_launcher *la = &e->launchers[k];
			char *name = util_escape_display(la->name);
			buf_printf(out, "%s%s (%s%s)", k ? " -> " : "", name, la->node ? la->node : "unscheduled",
				   la->migrated ? ", migrated" : "");
			free(name);
		}
		if (e->nlaunchers == 0)
			buf_add_str(out, "-");
		if (e->migrations)
			buf_printf(out, "  [%d migration%s]", e->migrations, e->migrations > 1 ? "s" : "");
		buf_add_char(out, '\n');
	}
}
