/* console_view: the serial console pane (see console_view.h). The session keeps the guest's screen in a vtpane;
 * the pane draws it into its own off-screen pad, damaged cells only, and copies the pad into the region. A frame
 * asked for by the session alone (guest output, such as a key's echo) copies only the pad rows drawn for it: the
 * region still holds the last frame (stdscr keeps a view's cells until the view is marked by something else,
 * view.h's marks). Any other frame puts every cell of the region back. The bottom row of the region is the
 * session's status line, written again only when its text changed or the region was drawn whole. */
#include "ui/console_view.h"

#include <curses.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "console/consess.h"
#include "console/vtpane.h"
#include "core/util.h"
#include "core/xmalloc.h"
#include "model/source.h"
#include "ui/draw.h"
#include "ui/ui.h"
#include "ui/view.h"

#define KEY_LEAVE 0x1d /* Ctrl+] */

struct console_view {
	struct view *view;
	struct consess *cs;
	WINDOW *pad;
	int prows, pcols;
	bool pad_full; /* the pad must be drawn whole (new, resized) */
	char *label;   /* "ns/name" */
	enum consess_state shown_state; /* the state the tab title shows */
	/* what the region on stdscr holds: drawn is set once a frame has put the whole region there; own_marks is
	 * the view's marks after the session's last change, over says something else marked the view before it */
	bool drawn, over;
	unsigned long own_marks;
	struct region drawn_r;
	char status[512]; /* the status row as drawn */
};

static void on_changed(void *arg)
{
	struct console_view *w = arg;
	if (!w->view)
		return;
	enum consess_state st = consess_state(w->cs);
	if (st != w->shown_state) {
		/* the tab title says the state: the tab line is redrawn with every view */
		w->shown_state = st;
		view_dirty(NULL);
	} else {
		/* the session's own change: the frame copies the rows the pane draws for it, unless something else
		 * had marked the view already (table.c's mark_row does the same) */
		bool own = !w->view->dirty || w->own_marks == w->view->marks;
		view_dirty(w->view);
		if (!own)
			w->over = true;
		w->own_marks = w->view->marks;
	}
}

/* The terminal part of a region: everything but the status row. */
static void term_size(const struct region *r, int *rows, int *cols)
{
	*rows = r->h > 1 ? r->h - 1 : 1;
	*cols = r->w > 0 ? r->w : 1;
}

/* Copies the pad rows vtpane_draw wrote (curses marks them touched) into the region, runs of rows at once. */
static void copy_drawn_rows(struct console_view *w, const struct region *r)
{
	for (int y = 0; y < w->prows;) {
		if (!is_linetouched(w->pad, y)) {
			y++;
			continue;
		}
		int y1 = y;
		while (y1 + 1 < w->prows && is_linetouched(w->pad, y1 + 1))
			y1++;
		copywin(w->pad, stdscr, y, 0, r->y + y, r->x, r->y + y1, r->x + w->pcols - 1, FALSE);
		y = y1 + 1;
	}
}

static bool region_same(const struct region *a, const struct region *b)
{
	return a->y == b->y && a->x == b->x && a->h == b->h && a->w == b->w;
}

static void console_view_draw(struct view *view, const struct region *r)
{
	struct console_view *w = view->priv;
	/* only the session marked the view since the last frame, which put the whole region on stdscr */
	bool partial = w->drawn && !w->over && w->own_marks == view->marks && region_same(&w->drawn_r, r);
	w->over = false;
	w->drawn = false;
	int rows, cols;
	term_size(r, &rows, &cols);
	if (r->h < 2 || r->w < 2) {
		draw_clear_rect(r->y, r->x, r->h, r->w, A_NORMAL);
		return;
	}
	struct vtpane *p = consess_pane(w->cs);
	int vr, vc;
	vtpane_size(p, &vr, &vc);
	if (vr != rows || vc != cols)
		consess_resize(w->cs, rows, cols);
	if (!w->pad || w->prows != rows || w->pcols != cols) {
		if (w->pad)
			delwin(w->pad);
		w->pad = newpad(rows, cols);
		w->prows = rows;
		w->pcols = cols;
		w->pad_full = true;
	}
	if (!w->pad)
		return;
	/* the pad's touched lines are the rows drawn since the last copy */
	untouchwin(w->pad);
	vtpane_draw(p, w->pad, 0, 0, w->pad_full);
	w->pad_full = false;
	if (partial)
		copy_drawn_rows(w, r);
	else
		copywin(w->pad, stdscr, 0, 0, r->y, r->x, r->y + rows - 1, r->x + cols - 1, FALSE);
	char status[sizeof w->status];
	int off = vtpane_view_offset(p);
	char scroll[48] = "";
	if (off)
		snprintf(scroll, sizeof scroll, " [-%d]", off);
	/* alone (full-screen `kvcon console`, no main view to go back to), Ctrl+] exits the command */
	const char *hint = vtpane_in_copy_mode(p) ? "copy mode: q leaves, v selects, y copies, p pastes, / ? search"
			   : view_depth() == 0 ? "Ctrl+] exits  F12 copy mode  Shift+PgUp/PgDn scroll"
					       : "Ctrl+] leaves  F12 copy mode  Shift+PgUp/PgDn scroll";
	snprintf(status, sizeof status, " %s | %s%s%s | %s", w->label,
		 consess_view_only(w->cs) ? "READ-ONLY: view only, nothing typed or pasted is sent | " : "",
		 consess_status(w->cs), scroll, hint);
	if (!partial || strcmp(status, w->status) != 0) {
		draw_cell(r->y + r->h - 1, r->x, r->w, A_REVERSE, status, false);
		memcpy(w->status, status, sizeof status);
	}
	w->drawn = true;
	w->drawn_r = *r;
}

static enum view_result console_view_key(struct view *view, int key)
{
	struct console_view *w = view->priv;
	struct vtpane *p = consess_pane(w->cs);
	if (key == KEY_LEAVE)
		return VIEW_UNFOCUS;
	if (key == VKEY(KEY_F(12))) {
		vtpane_copy_mode(p, !vtpane_in_copy_mode(p));
		view_dirty(view);
		return VIEW_DONE;
	}
	if ((key == VKEY(KEY_SPREVIOUS) || key == VKEY(KEY_SNEXT)) && !vtpane_in_copy_mode(p)) {
		int rows, cols;
		vtpane_size(p, &rows, &cols);
		vtpane_scroll(p, key == VKEY(KEY_SPREVIOUS) ? rows / 2 : -rows / 2);
		view_dirty(view);
		return VIEW_DONE;
	}
	/* no frame for a key the guest gets: consess_key marks the view when the key changed the pane itself (copy
	 * mode, leaving the scrollback), and the guest's echo brings its own frame; a frame drawn for the key would
	 * hold the echo back by the time it takes (tests/bench/console_bench.sh measures the round trip) */
	if (VKEY_IS_FN(key))
		consess_key(w->cs, VKEY_CODE(key), true, 0);
	else
		consess_key(w->cs, key, false, 0);
	return VIEW_DONE;
}

static enum view_result console_view_mouse(struct view *view, const struct view_mouse *m)
{
	struct console_view *w = view->priv;
	if (m->kind == VMOUSE_WHEEL_UP || m->kind == VMOUSE_WHEEL_DOWN) {
		vtpane_scroll(consess_pane(w->cs), m->kind == VMOUSE_WHEEL_UP ? 3 : -3);
		view_dirty(view);
	}
	return VIEW_DONE;
}

static void console_view_title(struct view *view, char *buf, size_t len)
{
	struct console_view *w = view->priv;
	static const char *const marks[] = { "waiting", "connecting", "", "reconnecting", "ended" };
	enum consess_state st = consess_state(w->cs);
	const char *m = (unsigned)st < sizeof marks / sizeof marks[0] ? marks[st] : "";
	snprintf(buf, len, "console %s%s%s%s", w->label, *m ? " (" : "", m, *m ? ")" : "");
}

static void console_view_store_changed(struct view *view, enum obj_kind kind, const struct obj *old,
				       const struct obj *new_)
{
	struct console_view *w = view->priv;
	consess_store_changed(w->cs, kind, old, new_);
}

static void console_view_resize(struct view *view, const struct region *r)
{
	struct console_view *w = view->priv;
	int rows, cols;
	term_size(r, &rows, &cols);
	consess_resize(w->cs, rows, cols);
	w->pad_full = true;
}

static void console_view_destroy(struct view *view)
{
	struct console_view *w = view->priv;
	consess_free(w->cs);
	if (w->pad)
		delwin(w->pad);
	free(w->label);
	free(w);
}

static const struct view_key console_keys[] = {
	{ KEY_LEAVE, "Ctrl+]", "leave the console (focus back to the main view)", NULL },
	{ VKEY(KEY_F(12)), "F12", "copy mode: hjkl/arrows move, v select, y copy, / ? search, n N repeat, q leave", NULL },
	{ VKEY(KEY_SPREVIOUS), "Shift+PgUp", "scroll back half a screen", NULL },
	{ VKEY(KEY_SNEXT), "Shift+PgDn", "scroll forward half a screen", NULL },
	{ 0, NULL, NULL, NULL },
};

static const struct view_ops console_view_ops = {
	.name = "console",
	.draw = console_view_draw,
	.key = console_view_key,
	.mouse = console_view_mouse,
	.title = console_view_title,
	.store_changed = console_view_store_changed,
	.resize = console_view_resize,
	.destroy = console_view_destroy,
	.keys = console_keys,
};

bool console_view_paste(struct view *v, const char *text, size_t len)
{
	if (!v || v->ops != &console_view_ops)
		return false;
	struct console_view *w = v->priv;
	if (!vtpane_in_copy_mode(consess_pane(w->cs)))
		consess_paste(w->cs, text, len);
	view_dirty(v);
	return true;
}

struct view *console_view_new(const struct consess_opts *o, const char *label, char **err)
{
	struct console_view *w = xcalloc(1, sizeof *w);
	w->label = xstrdup(label);
	w->cs = consess_new(o, on_changed, w, err);
	if (!w->cs) {
		free(w->label);
		free(w);
		return NULL;
	}
	w->view = view_new(&console_view_ops, w);
	w->view->raw = true;
	w->view->pane = true;
	return w->view;
}

struct consess *console_view_session(struct view *v)
{
	if (!v || v->ops != &console_view_ops)
		return NULL;
	struct console_view *w = v->priv;
	return w->cs;
}

struct view *console_view_open(struct obj *vm, char **err)
{
	struct source *src = vm->src;
	if (src == NULL || src->ops == NULL || src->ops->open_console == NULL) {
		*err = xasprintf("%s has no serial console", src ? src->name : "this VM");
		return NULL;
	}
	char *label = xasprintf("%s/%s", vm->ns, vm->name);
	struct consess_opts o = {
		.st = ui_store(), .src = src, .ns = vm->ns, .name = vm->name, .rows = 24, .cols = 80,
		.view_only = ui_readonly(),
	};
	struct view *v = console_view_new(&o, label, err);
	free(label);
	return v;
}
