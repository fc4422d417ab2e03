/* Namespace and context lists. The context list is small and read from the kubeconfig on every frame; the
 * namespace list comes from every VM, VMI and pod in the store, so it is kept: a count of objects per namespace
 * follows the store's changes, and the sorted list is rebuilt only when a namespace comes or goes. */
#include "ui/cmdline.h"
#include "ui/nsctx.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/hmap.h"
#include "core/intern.h"
#include "core/log.h"
#include "core/util.h"
#include "core/xmalloc.h"
#include "model/source.h"
#include "model/store.h"
#include "ui/draw.h"
#include "ui/listsel.h"
#include "ui/sources.h"
#include "ui/theme.h"
#include "ui/ui.h"
#include "ui/view.h"

struct nsctx {
	bool ctx;
	struct listsel l;
};

static const char **ns_names;
static size_t ns_n, ns_cap;

/* Namespaces the clusters listed (interned), including those with no VM yet; refreshed each time the list
 * opens. A source that may not list namespaces leaves a note, and its namespaces come from its objects. */
struct api_ns {
	size_t src;      /* the source that listed it (its names go when it closes or answers again) */
	const char *name; /* interned */
};
static struct api_ns *api_ns;
static size_t api_n, api_cap;
static uint64_t api_gen; /* bumped with every answer */
static char *api_note;
static struct view *ns_view; /* the open namespace list, redrawn when an answer arrives */

/* How many VMs, VMIs and pods each namespace has (interned name -> count as a pointer; absent: none), in step
 * with the store at versions ver[] (nsctx_store_changed applies each change; a change it missed shows as a
 * version it has not seen, and the next read counts again). set_gen moves when a namespace comes or goes. */
#define NS_KINDS OBJ_EVENT /* VM, VMI, pod */
static struct {
	const struct store *st;
	uint64_t ver[NS_KINDS];
	bool valid;
	struct hmap count;
	uint64_t set_gen;
	size_t scans;
} C;

/* What ns_names was built from: rebuilt when any of it moved. Sources only ever close and are only added, so
 * their number and the number closed say which sources' answers are shown. */
static struct {
	bool built;
	const struct store *st;
	uint64_t set_gen, api_gen;
	const char *cur;
	size_t nsrc, nclosed;
} L;

static int cmp_strp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void add_name(struct hmap *seen, const char *ns)
{
	if (ns == NULL || hmap_get(seen, ns))
		return;
	hmap_put(seen, ns, (void *)ns);
	if (ns_n == ns_cap) {
		ns_cap = ns_cap ? ns_cap * 2 : 16;
		ns_names = xreallocarray(ns_names, ns_cap, sizeof *ns_names);
	}
	ns_names[ns_n++] = ns;
}

/* Adds d (+1 or -1) to ns's count; false when it was not counted (the counts are wrong: count again). */
static bool count_add(const char *ns, int d)
{
	uintptr_t c = (uintptr_t)hmap_get(&C.count, ns);
	if (d < 0 && c == 0)
		return false;
	c = d < 0 ? c - 1 : c + 1;
	if (c == 0) {
		hmap_del(&C.count, ns);
		C.set_gen++;
	} else {
		if (hmap_put(&C.count, ns, (void *)c) == NULL)
			C.set_gen++;
	}
	return true;
}

static bool counts_current(const struct store *st)
{
	if (!C.valid || C.st != st)
		return false;
	for (int k = 0; k < NS_KINDS; k++)
		if (C.ver[k] != store_version(st, (enum obj_kind)k))
			return false;
	return true;
}

static void count_all(const struct store *st)
{
	if (counts_current(st))
		return;
	hmap_free(&C.count);
	hmap_init(&C.count);
	C.st = st;
	C.valid = true;
	C.set_gen++;
	C.scans++;
	for (int k = 0; k < NS_KINDS; k++)
		C.ver[k] = store_version(st, (enum obj_kind)k);
	for (size_t s = 0; s < source_count(); s++) {
		for (int k = 0; k < NS_KINDS; k++) {
			size_t cnt;
			struct obj *const *objs = store_objs(st, source_get(s), (enum obj_kind)k, &cnt);
			for (size_t i = 0; i < cnt; i++)
				count_add(objs[i]->ns, +1); /* interned */
		}
	}
}

void nsctx_store_changed(const struct store *st, enum obj_kind kind, const struct obj *old, const struct obj *new_)
{
	if ((int)kind >= NS_KINDS || !C.valid)
		return;
	if (C.st != st || !store_in_step(st, kind, &C.ver[kind])) {
		C.valid = false;
		return;
	}
	if (old && new_ && old->ns == new_->ns)
		return; /* the usual update */
	if ((old && !count_add(old->ns, -1)) || (new_ && !count_add(new_->ns, +1)))
		C.valid = false;
}

void nsctx_forget(void)
{
	C.valid = false;
	C.st = NULL;
}

size_t nsctx_scans(void)
{
	return C.scans;
}

const char *const *nsctx_namespaces(size_t *n)
{
	const struct store *st = ui_store();
	if (st)
		count_all(st);
	size_t nclosed = 0;
	for (size_t s = 0; s < source_count(); s++)
		nclosed += source_get(s)->closed;
	const char *cur = ui_namespace();
	if (L.built && L.st == st && L.set_gen == C.set_gen && L.api_gen == api_gen && L.cur == cur &&
	    L.nsrc == source_count() && L.nclosed == nclosed) {
		*n = ns_n;
		return ns_names;
	}
	L.built = true;
	L.st = st;
	L.set_gen = C.set_gen;
	L.api_gen = api_gen;
	L.cur = cur;
	L.nsrc = source_count();
	L.nclosed = nclosed;
	struct hmap seen;
	hmap_init(&seen);
	ns_n = 0;
	add_name(&seen, "all");
	if (st) {
		const char *k;
		void *v;
		for (size_t it = 0; hmap_next(&C.count, &it, &k, &v);)
			add_name(&seen, k);
	}
	for (size_t i = 0; i < api_n; i++)
		if (!source_get(api_ns[i].src)->closed)
			add_name(&seen, api_ns[i].name);
	add_name(&seen, cur);
	hmap_free(&seen);
	if (ns_n > 2)
		qsort(ns_names + 1, ns_n - 1, sizeof *ns_names, cmp_strp);
	*n = ns_n;
	return ns_names;
}

static void namespaces_listed(void *arg, int status, const char *const *names, size_t n, const char *message)
{
	size_t id = (size_t)(uintptr_t)arg;
	struct source *src = source_get(id);
	if (status != 0) {
		char *m = util_escape_display(message ? message : "failed");
		free(api_note);
		api_note = xasprintf("%s: namespaces from its objects only (%s)", src ? src->name : "?", m);
		free(m);
	} else {
		size_t k = 0;
		for (size_t i = 0; i < api_n; i++)
			if (api_ns[i].src != id)
				api_ns[k++] = api_ns[i];
		api_n = k;
	}
	for (size_t i = 0; i < n; i++) {
		if (api_n == api_cap) {
			api_cap = api_cap ? api_cap * 2 : 16;
			api_ns = xreallocarray(api_ns, api_cap, sizeof *api_ns);
		}
		api_ns[api_n++] = (struct api_ns){ id, intern(names[i]) };
	}
	api_gen++;
	if (ns_view)
		view_dirty(ns_view);
}

void nsctx_refresh(void)
{
	/* the previous answers stay shown until the new ones come (no flicker); a closed source's are not shown */
	free(api_note);
	api_note = NULL;
	for (size_t i = 0; i < source_count(); i++) {
		struct source *src = source_get(i);
		if (src->closed || src->ops == NULL || src->ops->list_namespaces == NULL)
			continue;
		char *err = NULL;
		if (src->ops->list_namespaces(src, namespaces_listed, (void *)(uintptr_t)i, &err) < 0) {
			log_warn("ui: %s: cannot list namespaces: %s", src->name, err);
			free(err);
		}
	}
}

static const char *const *items(struct nsctx *c, size_t *n)
{
	if (c->ctx)
		return sources_context_names(n);
	return nsctx_namespaces(n);
}

static bool is_current(struct nsctx *c, const char *name)
{
	if (c->ctx)
		return sources_current_context() && strcmp(sources_current_context(), name) == 0;
	const char *cur = ui_namespace();
	return cur ? strcmp(cur, name) == 0 : strcmp(name, "all") == 0;
}

struct drawing {
	struct nsctx *c;
	const char *const *names;
};

static void draw_row(void *arg, size_t k, int y, int x, int w, int attr)
{
	struct drawing *d = arg;
	char line[512];
	snprintf(line, sizeof line, "%s%s", d->names[k], is_current(d->c, d->names[k]) ? "  (current)" : "");
	draw_text(y, x + 1, w - 1, attr, line);
}

static void draw(struct view *v, const struct region *r)
{
	struct nsctx *c = v->priv;
	size_t n;
	const char *const *names = items(c, &n);
	char title[64];
	snprintf(title, sizeof title, " %s[%zu] ", c->ctx ? "Contexts" : "Namespaces", n);
	attrset((attr_t)theme_attr(THEME_BORDER));
	mvhline(r->y, r->x, ACS_HLINE, r->w);
	draw_text(r->y, r->x + (r->w - draw_width(title)) / 2, r->w, theme_attr(THEME_TITLE_ACTIVE), title);
	if (r->h < 2)
		return;
	draw_fill(r->y + 1, r->x, r->w, theme_attr(THEME_NORMAL));
	draw_text(r->y + 1, r->x + 1, r->w - 1, theme_attr(THEME_TABLE_HEADER), "NAME");
	if (!c->ctx && api_note && r->w > 8)
		draw_text(r->y + 1, r->x + 7, r->w - 7, theme_attr(THEME_TABLE_HEADER), api_note);
	struct drawing d = { c, names };
	listsel_draw(&c->l, n, r->y + 2, r->x, r->w, r->h - 2, draw_row, &d);
}

static enum view_result key(struct view *v, int k)
{
	struct nsctx *c = v->priv;
	size_t n;
	const char *const *names = items(c, &n);
	if (listsel_key(&c->l, k, n)) {
		view_dirty(v);
		return VIEW_DONE;
	}
	if (k != '\r')
		return VIEW_PASS;
	if (c->l.sel < n) {
		char cmd[600];
		snprintf(cmd, sizeof cmd, "%s %s", c->ctx ? "ctx" : "ns", names[c->l.sel]);
		if (cmdline_run(cmd) == 0)
			cmdline_run("vm");
	}
	return VIEW_DONE;
}

static enum view_result mouse(struct view *v, const struct view_mouse *m)
{
	struct nsctx *c = v->priv;
	size_t n;
	items(c, &n);
	bool open;
	if (!listsel_mouse(&c->l, m, 2, n, &open))
		return VIEW_PASS;
	view_dirty(v);
	return open ? key(v, '\r') : VIEW_DONE;
}

static void title(struct view *v, char *buf, size_t len)
{
	struct nsctx *c = v->priv;
	snprintf(buf, len, "%s", c->ctx ? "Contexts" : "Namespaces");
}

static void store_changed(struct view *v, enum obj_kind kind, const struct obj *old, const struct obj *new_)
{
	(void)kind;
	if (!old || !new_)
		view_dirty(v);
}

static void destroy(struct view *v)
{
	if (v == ns_view)
		ns_view = NULL;
	free(v->priv);
}

static const struct view_key nsctx_keys[] = {
	{ '\r', "enter", "switch to the selected namespace / context", NULL },
	{ 0, NULL, NULL, NULL },
};

static const struct view_ops nsctx_ops = {
	.name = "nsctx",
	.draw = draw,
	.key = key,
	.mouse = mouse,
	.title = title,
	.store_changed = store_changed,
	.destroy = destroy,
	.keys = nsctx_keys,
};

static struct view *make(bool ctx)
{
	struct nsctx *c = xcalloc(1, sizeof *c);
	c->ctx = ctx;
	size_t n;
	const char *const *names = items(c, &n);
	for (size_t i = 0; i < n; i++)
		if (is_current(c, names[i]))
			c->l.sel = i;
	return view_new(&nsctx_ops, c);
}

struct view *nsctx_ns_view_new(void)
{
	nsctx_refresh();
	ns_view = make(false);
	return ns_view;
}

struct view *nsctx_ctx_view_new(void)
{
	return make(true);
}
