/* vnc_view: the VNC pane (see vnc_view.h). The session (console/vnc) renders the framebuffer into fbcells; this
 * view puts the cells on stdscr with curses: the upper half block with a colour pair per (top, bottom) colour,
 * in true colour when terminfo says the terminal has direct colour (TERM=xterm-direct and the like: curses has no
 * other way to emit RGB), else from xterm's 256-colour palette (alloc_pair keeps the pairs in use), or ASCII
 * density characters without colour. `kvcon vnc` full-screen writes its own escape sequences and also honours
 * COLORTERM. Keys go to the guest while the pane is focused; Ctrl+] gives focus back, F8 opens the send-key menu. */
#include "ui/vnc_view.h"

#include <curses.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rfb/keysym.h>

#include "console/fbcells.h"
#include "console/termkeys.h"
#include "console/vnc.h"
#include "core/util.h"
#include "core/xmalloc.h"
#include "model/source.h"
#include "ui/draw.h"
#include "ui/view.h"

struct vnc_view {
	struct view *view;
	struct vnc *v;
	struct fbcells *cells;
	char *label; /* "ns/name" as the cluster spells it: draw_cell escapes it */
	enum fbc_scale scale;
	int pan_x, pan_y;
	bool menu;
	bool closed;
	int mask; /* pointer buttons held */
	int cols, rows;
};

/* curses function keys -> keysyms (shifted variants carry Shift) */
static const struct {
	int key;
	uint32_t keysym;
	unsigned mods;
} fn_keys[] = {
    {KEY_UP, XK_Up, 0},
    {KEY_DOWN, XK_Down, 0},
    {KEY_LEFT, XK_Left, 0},
    {KEY_RIGHT, XK_Right, 0},
    {KEY_HOME, XK_Home, 0},
    {KEY_END, XK_End, 0},
    {KEY_PPAGE, XK_Page_Up, 0},
    {KEY_NPAGE, XK_Page_Down, 0},
    {KEY_IC, XK_Insert, 0},
    {KEY_DC, XK_Delete, 0},
    {KEY_BACKSPACE, XK_BackSpace, 0},
    {KEY_ENTER, XK_Return, 0},
    {KEY_BTAB, XK_Tab, TK_SHIFT},
    {KEY_SR, XK_Up, TK_SHIFT},
    {KEY_SF, XK_Down, TK_SHIFT},
    {KEY_SLEFT, XK_Left, TK_SHIFT},
    {KEY_SRIGHT, XK_Right, TK_SHIFT},
    {KEY_SHOME, XK_Home, TK_SHIFT},
    {KEY_SEND, XK_End, TK_SHIFT},
    {KEY_SDC, XK_Delete, TK_SHIFT},
};

static void send_key(struct vnc_view *w, uint32_t keysym, unsigned mods)
{
	uint32_t seq[4];
	int n = 0;
	if (mods & TK_CTRL)
		seq[n++] = XK_Control_L;
	if (mods & TK_ALT)
		seq[n++] = XK_Alt_L;
	if ((mods & TK_SHIFT) || termkeys_needs_shift(keysym))
		seq[n++] = XK_Shift_L;
	seq[n++] = keysym;
	vnc_key_combo(w->v, seq, n);
}

static void on_vnc(struct vnc *v, enum vnc_event ev, void *arg)
{
	struct vnc_view *w = arg;
	(void)v;
	if (ev == VNC_CLOSED)
		w->closed = true;
	view_dirty(w->view);
}

static void draw_status(struct vnc_view *w, const struct region *r)
{
	char text[512];
	int fw, fh;
	vnc_size(w->v, &fw, &fh);
	if (w->menu)
		snprintf(text, sizeof text, "send: %s | s fit/1:1  hjkl pan  Esc close", VNC_MENU_HELP);
	else if (w->closed)
		snprintf(text, sizeof text, "VNC %s: %s", w->label, *vnc_error(w->v) ? vnc_error(w->v) : "ended");
	else if (!vnc_is_connected(w->v))
		snprintf(text, sizeof text, "VNC %s: connecting...  Ctrl+] leave", w->label);
	else
		snprintf(text, sizeof text, "VNC %s  %dx%d  %s  F8 menu  Ctrl+] leave", w->label, fw, fh,
			 w->scale == FBC_FIT ? "fit" : "1:1");
	draw_cell(r->y + r->h - 1, r->x, r->w, A_REVERSE, text, false);
}

static void vnc_view_draw(struct view *view, const struct region *r)
{
	struct vnc_view *w = view->priv;
	if (r->h < 2 || r->w < 1)
		return;
	int rows = r->h - 1;
	vnc_render(w->v, w->cells, r->w, rows, w->scale, w->pan_x, w->pan_y);
	fbcells_pan(w->cells, &w->pan_x, &w->pan_y);
	fbcells_clear_dirty(w->cells);
	const struct fbc_cell *g = fbcells_grid(w->cells);
	bool colour = has_colors() && COLORS >= 256 && !(getenv("NO_COLOR") && *getenv("NO_COLOR"));
	/* a direct-colour terminfo (xterm-direct, COLORS 2^24): colour numbers are 0xRRGGBB */
	bool direct = colour && COLORS >= 0x1000000;
	for (int y = 0; y < rows; y++) {
		for (int x = 0; x < r->w; x++) {
			struct fbc_cell c = g[y * r->w + x];
			cchar_t cc;
			if (!colour) {
				wchar_t ch[2] = {(wchar_t)fbcells_ascii(c), 0};
				setcchar(&cc, ch, A_NORMAL, 0, NULL);
			} else {
				int fg = direct ? (int)c.fg : fbcells_xterm256(c.fg);
				int bg = direct ? (int)c.bg : fbcells_xterm256(c.bg);
				int pair = alloc_pair(fg, bg);
				wchar_t ch[2] = {fg == bg ? L' ' : (wchar_t)0x2580, 0};
				setcchar(&cc, ch, A_NORMAL, 0, pair > 0 ? &pair : NULL);
			}
			mvadd_wch(r->y + y, r->x + x, &cc);
		}
	}
	draw_status(w, r);
}

static enum view_result menu_key(struct vnc_view *w, int key)
{
	w->menu = false;
	if (!VKEY_IS_FN(key) && vnc_menu_send(w->v, key))
		return VIEW_DONE;
	fbcells_view_key(key, w->view->r.w, w->view->r.h, &w->scale, &w->pan_x, &w->pan_y);
	return VIEW_DONE;
}

static enum view_result vnc_view_key(struct view *view, int key)
{
	struct vnc_view *w = view->priv;
	view_dirty(view);
	if (key == 0x1d) /* Ctrl+] */
		return VIEW_UNFOCUS;
	if (key == VKEY(KEY_F(8))) {
		w->menu = !w->menu;
		return VIEW_DONE;
	}
	if (w->menu)
		return menu_key(w, key);
	if (w->closed)
		return key == 'q' || key == VKEY_ESC ? VIEW_CLOSE : VIEW_DONE;
	if (VKEY_IS_FN(key)) {
		int code = VKEY_CODE(key);
		if (code >= KEY_F(1) && code <= KEY_F(12)) {
			send_key(w, (uint32_t)(XK_F1 + code - KEY_F(1)), 0);
			return VIEW_DONE;
		}
		for (size_t i = 0; i < sizeof fn_keys / sizeof fn_keys[0]; i++)
			if (fn_keys[i].key == code) {
				send_key(w, fn_keys[i].keysym, fn_keys[i].mods);
				return VIEW_DONE;
			}
		return VIEW_DONE;
	}
	/* the same mapping as the terminal decoder: one byte or code point */
	if (key == 0x0d || key == 0x0a)
		send_key(w, XK_Return, 0);
	else if (key == 0x09)
		send_key(w, XK_Tab, 0);
	else if (key == 0x7f || key == 0x08)
		send_key(w, XK_BackSpace, 0);
	else if (key == VKEY_ESC)
		send_key(w, XK_Escape, 0);
	else if (key == 0)
		send_key(w, ' ', TK_CTRL);
	else if (key < 0x1b)
		send_key(w, (uint32_t)('a' + key - 1), TK_CTRL);
	else if (key < 0x20)
		send_key(w, (uint32_t) "\\]^_"[key - 0x1c], TK_CTRL);
	else
		send_key(w, key < 0x100 ? (uint32_t)key : 0x01000000u | (uint32_t)key, 0);
	return VIEW_DONE;
}

static enum view_result vnc_view_mouse(struct view *view, const struct view_mouse *m)
{
	struct vnc_view *w = view->priv;
	if (w->closed || m->y >= view->r.h - 1)
		return VIEW_DONE;
	int x, y;
	fbcells_cell_to_fb(w->cells, m->x, m->y, 0, &x, &y);
	int bit = m->button >= 1 && m->button <= 3 ? 1 << (m->button - 1) : 0;
	switch (m->kind) {
	case VMOUSE_PRESS:
		w->mask |= bit;
		vnc_pointer(w->v, x, y, w->mask);
		break;
	case VMOUSE_RELEASE:
		w->mask &= ~bit;
		vnc_pointer(w->v, x, y, w->mask);
		break;
	case VMOUSE_CLICK:
	case VMOUSE_DOUBLE:
		vnc_pointer(w->v, x, y, w->mask | bit);
		vnc_pointer(w->v, x, y, w->mask);
		break;
	case VMOUSE_WHEEL_UP:
	case VMOUSE_WHEEL_DOWN: {
		int wheel = m->kind == VMOUSE_WHEEL_UP ? 1 << 3 : 1 << 4;
		vnc_pointer(w->v, x, y, w->mask | wheel);
		vnc_pointer(w->v, x, y, w->mask);
		break;
	}
	case VMOUSE_MOTION:
		vnc_pointer(w->v, x, y, w->mask);
		break;
	}
	return VIEW_DONE;
}

static void vnc_view_title(struct view *view, char *buf, size_t len)
{
	struct vnc_view *w = view->priv;
	char *esc = util_escape_display(w->label);
	snprintf(buf, len, "vnc %s", esc);
	free(esc);
}

static void vnc_view_resize(struct view *view, const struct region *r)
{
	(void)r;
	view_dirty(view);
}

static void vnc_view_destroy(struct view *view)
{
	struct vnc_view *w = view->priv;
	vnc_free(w->v);
	fbcells_free(w->cells);
	free(w->label);
	free(w);
}

static const struct view_key vnc_view_keys[] = {
    {0x1d, "Ctrl+]", "give the keyboard back to the dashboard", NULL},
    {VKEY(KEY_F(8)), "F8", "send-key menu: " VNC_MENU_HELP ", s fit/1:1, hjkl pan", NULL},
    {0, NULL, NULL, NULL},
};

static const struct view_ops vnc_view_ops = {
    .name = "vnc",
    .draw = vnc_view_draw,
    .key = vnc_view_key,
    .mouse = vnc_view_mouse,
    .title = vnc_view_title,
    .resize = vnc_view_resize,
    .destroy = vnc_view_destroy,
    .keys = vnc_view_keys,
};

struct view *vnc_view_open(struct obj *vm, char **err)
{
	struct source *src = vm->src;
	if (src == NULL || src->ops == NULL || src->ops->open_vnc == NULL) {
		*err = xstrdup("this VM's source has no VNC display");
		return NULL;
	}
	struct stream *s = src->ops->open_vnc(src, vm->ns, vm->name, err);
	if (s == NULL)
		return NULL;
	struct vnc_view *w = xcalloc(1, sizeof *w);
	w->label = xasprintf("%s/%s", vm->ns, vm->name);
	w->cells = fbcells_new();
	w->scale = FBC_FIT;
	struct vnc_opts o = {.password = getenv("KVCON_VNC_PASSWORD"), .quality = -1};
	w->v = vnc_new_stream(s, &o, on_vnc, w);
	w->view = view_new(&vnc_view_ops, w);
	w->view->raw = true;
	w->view->pane = true;
	return w->view;
}
