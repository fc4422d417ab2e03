/* The view stack, panes, layout of the body, and input routing to the focused view. */
#include "ui/view.h"

#include <stdlib.h>
#include <string.h>

#include "core/xmalloc.h"
#include "ui/actions.h"
#include "ui/draw.h"
#include "ui/screen.h"
#include "ui/theme.h"

#define MAX_STACK 32
#define MAX_PANES 16

static struct {
	struct view *stack[MAX_STACK];
	size_t depth;
	struct view *panes[MAX_PANES];
	size_t npanes;
	size_t active;      /* visible pane */
	bool zoomed;
	bool pane_focus;
	struct region body;
	struct region main_r, pane_r, tabs_r;
	bool tabs_dirty;
	bool drawing; /* inside view_draw_all: a view marking itself dirty there waits for the next change */
	bool store_changing; /* inside view_store_changed: the frame asked for is the cluster's (screen_dirty_store) */
} V;

struct view *view_new(const struct view_ops *ops, void *priv)
{
	struct view *v = xcalloc(1, sizeof *v);
	v->ops = ops;
	v->priv = priv;
	v->dirty = true;
	return v;
}

void view_free(struct view *v)
{
	if (v == NULL)
		return;
	if (v->ops->destroy)
		v->ops->destroy(v);
	free(v);
}

void view_dirty(struct view *v)
{
	/* a frame is due: views are also marked from asynchronous answers (a fetched YAML, a namespace list) */
	if (V.store_changing)
		screen_dirty_store();
	else if (!V.drawing)
		screen_dirty();
	if (v) {
		v->dirty = true;
		v->marks++;
		return;
	}
	for (size_t i = 0; i < V.depth; i++) {
		V.stack[i]->dirty = true;
		V.stack[i]->marks++;
	}
	for (size_t i = 0; i < V.npanes; i++) {
		V.panes[i]->dirty = true;
		V.panes[i]->marks++;
	}
	V.tabs_dirty = true;
}

static void set_focus(struct view *v, bool on)
{
	if (v && v->ops->focus)
		v->ops->focus(v, on);
}

struct view *view_focused(void)
{
	if (V.pane_focus && V.npanes)
		return V.panes[V.active];
	return V.depth ? V.stack[V.depth - 1] : NULL;
}

static void relayout(void)
{
	view_layout(&V.body);
	view_dirty(NULL);
}

void view_push(struct view *v)
{
	if (V.depth == MAX_STACK) {
		view_free(V.stack[1]); /* keep the root list; drop the oldest pushed view */
		memmove(&V.stack[1], &V.stack[2], (MAX_STACK - 2) * sizeof V.stack[0]);
		V.depth--;
	}
	set_focus(view_focused(), false);
	V.stack[V.depth++] = v;
	V.pane_focus = false;
	set_focus(v, true);
	relayout();
}

void view_pop(void)
{
	if (V.depth <= 1)
		return;
	struct view *v = V.stack[--V.depth];
	set_focus(v, false);
	view_free(v);
	set_focus(view_focused(), true);
	relayout();
}

struct view *view_top(void)
{
	return V.depth ? V.stack[V.depth - 1] : NULL;
}

size_t view_depth(void)
{
	return V.depth;
}

void view_replace_all(struct view *v)
{
	while (V.depth)
		view_free(V.stack[--V.depth]);
	V.stack[V.depth++] = v;
	V.pane_focus = false;
	set_focus(v, true);
	relayout();
}

void view_pane_open(struct view *v)
{
	if (V.npanes == MAX_PANES) {
		view_free(v);
		return;
	}
	set_focus(view_focused(), false);
	v->pane = true;
	V.panes[V.npanes] = v;
	V.active = V.npanes++;
	V.pane_focus = true;
	set_focus(v, true);
	relayout();
}

void view_pane_close(struct view *v)
{
	for (size_t i = 0; i < V.npanes; i++) {
		if (V.panes[i] != v)
			continue;
		bool was_focused = view_focused() == v;
		memmove(&V.panes[i], &V.panes[i + 1], (V.npanes - i - 1) * sizeof V.panes[0]);
		V.npanes--;
		view_free(v);
		if (V.active >= V.npanes)
			V.active = V.npanes ? V.npanes - 1 : 0;
		if (V.npanes == 0) {
			V.pane_focus = false;
			V.zoomed = false;
		}
		if (was_focused)
			set_focus(view_focused(), true);
		relayout();
		return;
	}
}

struct view *view_pane_active(void)
{
	return V.npanes ? V.panes[V.active] : NULL;
}

size_t view_pane_count(void)
{
	return V.npanes;
}

void view_pane_next(void)
{
	if (V.npanes < 2)
		return;
	bool f = V.pane_focus;
	if (f)
		set_focus(V.panes[V.active], false);
	V.active = (V.active + 1) % V.npanes;
	if (f)
		set_focus(V.panes[V.active], true);
	relayout();
}

void view_pane_zoom(bool on)
{
	V.zoomed = on && V.npanes;
	relayout();
}

bool view_pane_zoomed(void)
{
	return V.zoomed;
}

void view_focus_pane(bool on)
{
	on = on && V.npanes;
	if (on == V.pane_focus)
		return;
	set_focus(view_focused(), false);
	V.pane_focus = on;
	set_focus(view_focused(), true);
	view_dirty(NULL);
}

static bool region_eq(const struct region *a, const struct region *b)
{
	return a->y == b->y && a->x == b->x && a->h == b->h && a->w == b->w;
}

static void place(struct view *v, const struct region *r)
{
	if (!region_eq(&v->r, r)) {
		v->r = *r;
		if (v->ops->resize)
			v->ops->resize(v, r);
	}
	v->dirty = true;
	v->marks++;
}

void view_layout(const struct region *body)
{
	V.body = *body;
	struct region m = *body, p = { 0, 0, 0, 0 }, t = { 0, 0, 0, 0 };
	if (V.npanes) {
		/* a tab line over the pane: its title(s) and how to leave it */
		int ph = V.zoomed ? body->h : body->h / 2;
		if (ph < 3)
			ph = body->h;
		if (V.zoomed && V.depth == 0 && V.npanes == 1) {
			/* a pane alone (full-screen `kvcon console`): no tab line, the pane has every cell */
			p = *body;
		} else {
			t = (struct region){ body->y + body->h - ph, body->x, 1, body->w };
			p = (struct region){ t.y + 1, body->x, ph - 1, body->w };
		}
		m.h = body->h - ph;
	}
	V.main_r = m;
	V.pane_r = p;
	V.tabs_r = t;
	if (V.depth && m.h > 0)
		place(V.stack[V.depth - 1], &m);
	if (V.npanes)
		place(V.panes[V.active], &p);
	V.tabs_dirty = true;
}

static void draw_tabs(void)
{
	const struct region *r = &V.tabs_r;
	int x = r->x;
	draw_fill(r->y, r->x, r->w, theme_attr(THEME_TITLE));
	for (size_t i = 0; i < V.npanes && x < r->x + r->w; i++) {
		char title[128] = "";
		if (V.panes[i]->ops->title)
			V.panes[i]->ops->title(V.panes[i], title, sizeof title);
		else
			snprintf(title, sizeof title, "%s", V.panes[i]->ops->name);
		int a = theme_attr(i == V.active ? THEME_TITLE_ACTIVE : THEME_TITLE);
		char lbl[160];
		snprintf(lbl, sizeof lbl, " %zu:%s ", i + 1, title);
		x += draw_text(r->y, x, r->x + r->w - x, a, lbl);
	}
	const char *hint = V.pane_focus && V.panes[V.active]->raw ? " Ctrl+] leaves " : " tab: focus  z: zoom ";
	int hw = draw_width(hint);
	if (x + hw <= r->x + r->w)
		draw_text(r->y, r->x + r->w - hw, hw, theme_attr(THEME_HINT), hint);
}

bool view_draw_all(bool force)
{
	bool drew = false;
	V.drawing = true;
	struct view *top = view_top();
	if (top && V.main_r.h > 0 && (force || top->dirty)) {
		top->dirty = false;
		top->marks += force;
		top->r = V.main_r;
		top->ops->draw(top, &V.main_r);
		drew = true;
	}
	if (V.npanes) {
		struct view *p = V.panes[V.active];
		if ((force || V.tabs_dirty) && V.tabs_r.h > 0) {
			V.tabs_dirty = false;
			draw_tabs();
			drew = true;
		}
		if (force || p->dirty) {
			p->dirty = false;
			p->marks += force;
			p->ops->draw(p, &V.pane_r);
			drew = true;
		}
	}
	V.drawing = false;
	return drew;
}

const struct view_key *view_key_find(const struct view_key *keys, int key)
{
	for (const struct view_key *k = keys; k && k->key; k++)
		if (k->key == key)
			return k;
	return NULL;
}

static void apply_result(struct view *v, enum view_result r)
{
	if (r == VIEW_UNFOCUS) {
		view_focus_pane(false);
	} else if (r == VIEW_CLOSE) {
		if (v->pane)
			view_pane_close(v);
		else if (v == view_top())
			view_pop();
	}
}

enum view_result view_key_dispatch(int key)
{
	struct view *v = view_focused();
	if (v == NULL)
		return VIEW_PASS;
	enum view_result r = VIEW_PASS;
	const struct view_key *k = v->raw ? NULL : view_key_find(v->ops->keys, key);
	if (k && k->fn)
		r = k->fn(v);
	else if (!v->raw && v->ops->target_vm && (r = ui_action_key(v, key)) != VIEW_PASS)
		; /* a lifecycle action's key (model/registry.c) */
	else if (v->ops->key)
		r = v->ops->key(v, key);
	if (r == VIEW_PASS && !v->raw && v->pane && key == '\t') {
		view_focus_pane(false);
		return VIEW_DONE;
	}
	apply_result(v, r);
	return r;
}

static bool inside(const struct region *r, int y, int x)
{
	return y >= r->y && y < r->y + r->h && x >= r->x && x < r->x + r->w;
}

enum view_result view_mouse_dispatch(const struct view_mouse *m)
{
	struct view *v = NULL;
	struct region r;
	if (V.npanes && inside(&V.pane_r, m->y, m->x)) {
		v = V.panes[V.active];
		r = V.pane_r;
		if (!V.pane_focus && (m->kind == VMOUSE_CLICK || m->kind == VMOUSE_PRESS))
			view_focus_pane(true);
	} else if (V.depth && inside(&V.main_r, m->y, m->x)) {
		v = V.stack[V.depth - 1];
		r = V.main_r;
		if (V.pane_focus && (m->kind == VMOUSE_CLICK || m->kind == VMOUSE_PRESS))
			view_focus_pane(false);
	}
	if (v == NULL || v->ops->mouse == NULL)
		return VIEW_PASS;
	struct view_mouse rel = *m;
	rel.y -= r.y;
	rel.x -= r.x;
	enum view_result res = v->ops->mouse(v, &rel);
	apply_result(v, res);
	return res;
}

void view_store_changed(enum obj_kind kind, const struct obj *old, const struct obj *new_)
{
	V.store_changing = true;
	for (size_t i = 0; i < V.depth; i++)
		if (V.stack[i]->ops->store_changed)
			V.stack[i]->ops->store_changed(V.stack[i], kind, old, new_);
	for (size_t i = 0; i < V.npanes; i++)
		if (V.panes[i]->ops->store_changed)
			V.panes[i]->ops->store_changed(V.panes[i], kind, old, new_);
	V.store_changing = false;
}

void view_tick_all(void)
{
	struct view *top = view_top();
	if (top && top->ops->tick)
		top->ops->tick(top);
	struct view *p = view_pane_active();
	if (p && p->ops->tick)
		p->ops->tick(p);
}

void view_free_all(void)
{
	while (V.npanes)
		view_free(V.panes[--V.npanes]);
	while (V.depth)
		view_free(V.stack[--V.depth]);
	V.pane_focus = V.zoomed = false;
	V.active = 0;
}
