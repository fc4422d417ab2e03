/* vnc_view: the VNC pane (see vnc_view.h). The session (console/vnc) renders the framebuffer into fbcells; this
 * view puts the cells on the screen in the colour mode it resolved once curses owns the terminal: with curses, the
 * upper half block with a colour pair per (top, bottom) colour, in true colour when terminfo says the terminal has
 * direct colour (TERM=xterm-direct and the like), from xterm's 256-colour palette (alloc_pair keeps the pairs in
 * use), or ASCII density characters without colour; or, for a pane that owns the screen (`kvcon vnc`) in a mode
 * curses cannot draw (COLORTERM=truecolor under a 256-colour terminfo), as fbcells' own escape sequences written
 * after curses' update (screen_raw_hook) over cells it keeps blank. Keys go to the guest while the pane is
 * focused; Ctrl+] gives focus back, F8 opens the send-key menu. */
#include "ui/vnc_view.h"

#include <curses.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <term.h>

#include <rfb/keysym.h>

#include "console/termkeys.h"
#include "console/vnc.h"
#include "core/loop.h"
#include "core/util.h"
#include "core/xmalloc.h"
#include "model/source.h"
#include "ui/draw.h"
#include "ui/screen.h"
#include "ui/ui.h"
#include "ui/view.h"

struct vnc_view {
	struct view *view;
	struct vnc *v;
	struct fbcells *cells;
	char *label;  /* "ns/name" as the cluster spells it (escaped when drawn); NULL: the desktop's name */
	char *colors; /* the forced colour mode's name, or NULL */
	bool own_screen, view_only;
	bool colour_known, raw, hooked, drags;
	enum fbc_colour colour;
	enum fbc_scale scale;
	int pan_x, pan_y;
	bool menu;
	bool closed;
	int mask; /* pointer buttons held */
	struct loop_timer *esc_timer; /* an Escape that may still turn out to be Alt+key */
	void (*ended)(void *arg, const char *why);
	void *ended_arg;
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

/* ncurses' extended keys with modifiers, by terminfo name ("kUP5": Ctrl+Up): xterm's modifier parameter 2..8 */
static const struct {
	const char *name;
	uint32_t keysym;
} mod_keys[] = {
    {"kUP", XK_Up},   {"kDN", XK_Down},	    {"kLFT", XK_Left},	  {"kRIT", XK_Right}, {"kHOM", XK_Home},
    {"kEND", XK_End}, {"kPRV", XK_Page_Up}, {"kNXT", XK_Page_Down}, {"kIC", XK_Insert}, {"kDC", XK_Delete},
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
	view_dirty(w->view);
	if (ev == VNC_CLOSED && !w->closed) {
		w->closed = true;
		if (w->ended)
			w->ended(w->ended_arg, vnc_error(v));
	}
}

/* ---- colour ---- */

/* The colour mode, once curses owns the terminal: forced, else NO_COLOR, COLORTERM (own screen only), terminfo's
 * RGB flag and colour count; then whether curses can draw it (COLORS is 0 when colour is off). */
static void resolve_colour(struct vnc_view *w)
{
	if (w->colour_known)
		return;
	w->colour_known = true;
	enum fbc_colour m = FBC_MONO;
	const char *nc = getenv("NO_COLOR"), *ct = getenv("COLORTERM");
	int tcolors = tigetnum("colors"), rgb = tigetflag("RGB");
	if (w->colors && fbcells_colour_parse(w->colors, &m))
		;
	else if (nc && *nc)
		m = FBC_MONO;
	else if (w->own_screen && ct && (strcmp(ct, "truecolor") == 0 || strcmp(ct, "24bit") == 0))
		m = FBC_TRUECOLOUR;
	else if (rgb > 0 || tcolors >= 1 << 24)
		m = FBC_TRUECOLOUR;
	else if (tcolors >= 256)
		m = FBC_256;
	int have = has_colors() ? COLORS : 0;
	bool curses_can = m == FBC_MONO || (m == FBC_256 && have >= 256) || have >= 1 << 24;
	if (!curses_can && !w->own_screen)
		m = have >= 256 ? FBC_256 : FBC_MONO;
	w->colour = m;
	w->raw = !curses_can && w->own_screen;
}

static void raw_emit(void *arg, struct buf *out, bool all)
{
	struct vnc_view *w = arg;
	fbcells_emit(w->cells, out, w->view->r.y, w->view->r.x, w->colour, all);
}

static void draw_cells_curses(struct vnc_view *w, const struct region *r, int rows)
{
	const struct fbc_cell *g = fbcells_grid(w->cells);
	bool colour = w->colour != FBC_MONO;
	bool direct = w->colour == FBC_TRUECOLOUR; /* colour numbers are 0xRRGGBB */
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
	fbcells_clear_dirty(w->cells);
}

/* ---- drawing ---- */

static void draw_status(struct vnc_view *w, const struct region *r)
{
	char text[512];
	int fw, fh;
	vnc_size(w->v, &fw, &fh);
	char *name = w->label ? xasprintf("VNC %s", w->label) : xstrdup(vnc_desktop_name(w->v));
	if (w->menu)
		snprintf(text, sizeof text, "send: %s | s fit/1:1  hjkl pan  q leave  Esc close", VNC_MENU_HELP);
	else if (w->closed)
		snprintf(text, sizeof text, "%s: %s", w->label ? name : "VNC",
			 *vnc_error(w->v) ? vnc_error(w->v) : "ended");
	else if (!vnc_is_connected(w->v))
		snprintf(text, sizeof text, "%s: connecting...  Ctrl+] leave", w->label ? name : "VNC");
	else
		snprintf(text, sizeof text, "%s  %dx%d  %s%s  F8 menu  Ctrl+] leave", name, fw, fh,
			 w->scale == FBC_FIT ? "fit" : "1:1",
			 w->view_only ? "  READ-ONLY: view only, no keys or pointer sent" : "");
	free(name);
	/* draw_cell escapes what came from outside (the desktop name, the error) */
	draw_cell(r->y + r->h - 1, r->x, r->w, A_REVERSE, text, false);
}

static void vnc_view_draw(struct view *view, const struct region *r)
{
	struct vnc_view *w = view->priv;
	if (r->h < 2 || r->w < 1)
		return;
	resolve_colour(w);
	if (!w->drags) {
		screen_mouse_drags(true); /* a drag on the display is a drag on the guest */
		w->drags = true;
	}
	int rows = r->h - 1;
	vnc_render(w->v, w->cells, r->w, rows, w->scale, w->pan_x, w->pan_y);
	fbcells_pan(w->cells, &w->pan_x, &w->pan_y);
	if (w->raw) {
		/* blank on stdscr, the same blank every frame (attributes set: the status row leaves reverse on), so
		 * curses never writes there; the hook draws the picture after curses' update */
		for (int y = 0; y < rows; y++)
			draw_fill(r->y + y, r->x, r->w, A_NORMAL);
		screen_raw_hook(raw_emit, w);
		w->hooked = true;
	} else {
		draw_cells_curses(w, r, rows);
	}
	draw_status(w, r);
}

/* ---- keys ---- */

static enum view_result menu_key(struct vnc_view *w, int key)
{
	w->menu = false;
	if (key == 'q')
		return VIEW_UNFOCUS; /* leave, as Ctrl+] */
	if (!VKEY_IS_FN(key) && !w->view_only && vnc_menu_send(w->v, key))
		return VIEW_DONE;
	fbcells_view_key(key, w->view->r.w, w->view->r.h, &w->scale, &w->pan_x, &w->pan_y);
	return VIEW_DONE;
}

/* A key code ncurses made of a modified cursor key (kUP5 ...): its keysym and modifiers; false for others. */
static bool modified_key(int code, uint32_t *keysym, unsigned *mods)
{
	const char *name = keyname(code);
	if (name == NULL)
		return false;
	for (size_t i = 0; i < sizeof mod_keys / sizeof mod_keys[0]; i++) {
		size_t n = strlen(mod_keys[i].name);
		if (strncmp(name, mod_keys[i].name, n) == 0 && name[n] >= '2' && name[n] <= '8' && !name[n + 1]) {
			int m = name[n] - '1'; /* xterm: 1 + (shift 1 | alt 2 | ctrl 4) */
			*keysym = mod_keys[i].keysym;
			*mods = (m & 1 ? TK_SHIFT : 0) | (m & 2 ? TK_ALT : 0) | (m & 4 ? TK_CTRL : 0);
			return true;
		}
	}
	return false;
}

/* A plain key (one byte or code point) to the guest, with mods (Alt when it came after an Escape). */
static void send_plain(struct vnc_view *w, int key, unsigned mods)
{
	/* the same mapping as the terminal decoder: one byte or code point */
	if (key == 0x0d || key == 0x0a)
		send_key(w, XK_Return, mods);
	else if (key == 0x09)
		send_key(w, XK_Tab, mods);
	else if (key == 0x7f || key == 0x08)
		send_key(w, XK_BackSpace, mods);
	else if (key == VKEY_ESC)
		send_key(w, XK_Escape, mods);
	else if (key == 0)
		send_key(w, ' ', mods | TK_CTRL);
	else if (key < 0x1b)
		send_key(w, (uint32_t)('a' + key - 1), mods | TK_CTRL);
	else if (key < 0x20)
		send_key(w, (uint32_t) "\\]^_"[key - 0x1c], mods | TK_CTRL);
	else
		send_key(w, key < 0x100 ? (uint32_t)key : 0x01000000u | (uint32_t)key, mods);
}

/* An Escape with nothing after it in the same read: the Escape key itself. */
static void esc_alone(void *arg)
{
	struct vnc_view *w = arg;
	w->esc_timer = NULL;
	if (!w->closed && !w->view_only)
		send_key(w, XK_Escape, 0);
}

static enum view_result vnc_view_key(struct view *view, int key)
{
	struct vnc_view *w = view->priv;
	view_dirty(view);
	/* ncurses hands Alt+x over as Escape then x at once: an Escape is held until the loop has read everything
	 * that came with it */
	bool alt = false;
	if (w->esc_timer) {
		loop_timer_cancel(w->esc_timer);
		w->esc_timer = NULL;
		if (VKEY_IS_FN(key) || key == 0x1d || key == VKEY_ESC || w->menu)
			esc_alone(w);
		else
			alt = true;
	}
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
	if (w->view_only)
		return VIEW_DONE;
	if (VKEY_IS_FN(key)) {
		int code = VKEY_CODE(key);
		uint32_t keysym;
		unsigned mods;
		if (code >= KEY_F(1) && code <= KEY_F(12)) {
			send_key(w, (uint32_t)(XK_F1 + code - KEY_F(1)), 0);
			return VIEW_DONE;
		}
		for (size_t i = 0; i < sizeof fn_keys / sizeof fn_keys[0]; i++)
			if (fn_keys[i].key == code) {
				send_key(w, fn_keys[i].keysym, fn_keys[i].mods);
				return VIEW_DONE;
			}
		if (modified_key(code, &keysym, &mods))
			send_key(w, keysym, mods);
		return VIEW_DONE;
	}
	if (key == VKEY_ESC && !alt) {
		w->esc_timer = loop_timer_add(0, esc_alone, w);
		return VIEW_DONE;
	}
	send_plain(w, key, alt ? TK_ALT : 0);
	return VIEW_DONE;
}

static enum view_result vnc_view_mouse(struct view *view, const struct view_mouse *m)
{
	struct vnc_view *w = view->priv;
	if (w->closed || w->menu || w->view_only || m->y >= view->r.h - 1)
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
	char *esc = util_escape_display(w->label ? w->label : vnc_desktop_name(w->v));
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
	if (w->hooked)
		screen_raw_hook(NULL, NULL);
	if (w->drags)
		screen_mouse_drags(false);
	loop_timer_cancel(w->esc_timer);
	vnc_free(w->v);
	fbcells_free(w->cells);
	free(w->label);
	free(w->colors);
	free(w);
}

static const struct view_key vnc_view_keys[] = {
    {0x1d, "Ctrl+]", "give the keyboard back to the dashboard (kvcon vnc: leave)", NULL},
    {VKEY(KEY_F(8)), "F8", "send-key menu: " VNC_MENU_HELP ", s fit/1:1, hjkl pan, q leave, Esc close", NULL},
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

bool vnc_view_paste(struct view *v, const char *text, size_t len)
{
	if (!v || v->ops != &vnc_view_ops)
		return false;
	struct vnc_view *w = v->priv;
	if (w->closed || w->menu || w->view_only)
		return true;
	/* typed, code point by code point (a VNC server has no paste of its own) */
	for (size_t i = 0; i < len;) {
		unsigned char c = (unsigned char)text[i];
		uint32_t cp = c;
		size_t n = c < 0x80 ? 1 : c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;
		if (n > 1 && i + n <= len) {
			cp = c & (0x7f >> n);
			for (size_t k = 1; k < n; k++)
				cp = cp << 6 | ((unsigned char)text[i + k] & 0x3f);
		} else {
			n = 1;
		}
		if (cp == '\n' && i > 0 && text[i - 1] == '\r')
			; /* CR LF is one Return */
		else
			send_plain(w, (int)cp, 0);
		i += n;
	}
	view_dirty(v);
	return true;
}

struct view *vnc_view_new(const struct vnc_view_opts *o, char **err)
{
	struct vnc_view *w = xcalloc(1, sizeof *w);
	struct vnc_opts vo = {.password = o->password, .view_only = o->view_only, .quality = o->quality};
	if (o->direct)
		w->v = vnc_connect(o->direct, &vo, on_vnc, w, err);
	else if (o->stream)
		w->v = vnc_new_stream(o->stream, &vo, on_vnc, w);
	else
		*err = xstrdup("no VNC display to open");
	if (w->v == NULL) {
		free(w);
		return NULL;
	}
	w->label = o->label ? xstrdup(o->label) : NULL;
	w->colors = o->colors ? xstrdup(o->colors) : NULL;
	w->own_screen = o->own_screen;
	w->view_only = o->view_only;
	w->scale = o->scale;
	w->ended = o->ended;
	w->ended_arg = o->arg;
	w->cells = fbcells_new();
	w->view = view_new(&vnc_view_ops, w);
	w->view->raw = true;
	w->view->pane = true;
	return w->view;
}

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
	char *label = xasprintf("%s/%s", vm->ns, vm->name);
	struct vnc_view_opts o = {.stream = s,
				  .label = label,
				  .password = getenv("KVCON_VNC_PASSWORD"),
				  .scale = FBC_FIT,
				  .view_only = ui_readonly(),
				  .quality = -1};
	struct view *v = vnc_view_new(&o, err);
	free(label);
	return v;
}
