/* The UI's view interface. Everything the dashboard shows is a view: the lists, the VM view, help, the YAML
 * pager, and the panes other modules add (serial console, VNC). A view is a const table of callbacks plus its
 * own state. Views sit on a stack (enter pushes, esc pops); beside the stack top there may be panes (split
 * under the main view, or zoomed to the whole body), several of them as tabs.
 *
 * Drawing: a view draws into the region it is given, on stdscr, with ncurses (draw.h has width-aware helpers);
 * it must not touch cells outside its region and must not call refresh()/clear(). The UI draws once per loop
 * pass when something is dirty, at most ~30 frames a second (~10 when only the cluster's changes, passed on by
 * view_store_changed, ask for them): call view_dirty() (or ui_dirty()) from anywhere on the loop thread instead of
 * drawing.
 *
 * Input: keys reach the focused view first. A view whose `raw` flag is set (a console or VNC pane while focused)
 * receives every key, Esc, ':' and Ctrl+] included, and decides itself when to give focus back (return
 * VIEW_UNFOCUS, e.g. on Ctrl+]). Other views return VIEW_PASS for keys they do not handle, and the UI applies its
 * global keys (':', '/', '?', esc, q). */
#ifndef KVCON_UI_VIEW_H
#define KVCON_UI_VIEW_H

#include <curses.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/obj.h"

struct view;

/* A rectangle of the screen, in stdscr coordinates. */
struct region {
	int y, x, h, w;
};

/* Keys are ints: a Unicode code point as typed (control characters included: ctrl-k is 0x0b, Ctrl+] is 0x1d,
 * Esc is 0x1b), or an ncurses function key (KEY_UP, KEY_F(1), KEY_NPAGE, ...) wrapped as VKEY(code). */
#define VKEY_FN 0x40000000
#define VKEY(k) (VKEY_FN | (k))
#define VKEY_IS_FN(k) (((k)&VKEY_FN) != 0)
#define VKEY_CODE(k) ((k) & ~VKEY_FN)
#define VKEY_CTRL(c) ((c)&0x1f)
#define VKEY_ESC 0x1b

/* Mouse events, coordinates relative to the view's region. */
enum view_mouse_kind { VMOUSE_PRESS, VMOUSE_RELEASE, VMOUSE_CLICK, VMOUSE_DOUBLE, VMOUSE_WHEEL_UP, VMOUSE_WHEEL_DOWN,
		       VMOUSE_MOTION };
struct view_mouse {
	enum view_mouse_kind kind;
	int button; /* 1 left, 2 middle, 3 right; 0 for wheel/motion */
	int y, x;
	bool shift, ctrl, alt;
};

/* What a key or mouse handler did with the input. */
enum view_result {
	VIEW_PASS,    /* not mine: the UI applies its global keys */
	VIEW_DONE,    /* handled */
	VIEW_UNFOCUS, /* handled, and focus goes back to the main view (a pane releasing raw input) */
	VIEW_CLOSE,   /* handled, and this view goes away (popped, or its pane closed) */
};

/* One row of a view's key table: the keys it handles, for `?` help, the man page check and dispatch. */
struct view_key {
	int key;            /* 0 ends a table */
	const char *label;  /* as shown in help and the man page: "j", "ctrl-k", "PgDn", "shift-N" */
	const char *help;   /* one line */
	enum view_result (*fn)(struct view *v); /* NULL: documented only (the view's key() handles it) */
};

struct view_ops {
	const char *name; /* short kind: "vm", "vmi", "vmview", "console", "vnc", ... */
	/* Draws the whole region (every cell of it: the UI does not clear regions between frames). */
	void (*draw)(struct view *v, const struct region *r);
	/* A key for this view (after its key table found no row, or always when v->raw). NULL: VIEW_PASS. */
	enum view_result (*key)(struct view *v, int key);
	enum view_result (*mouse)(struct view *v, const struct view_mouse *m);
	/* Title for the view's frame / breadcrumbs, into buf. */
	void (*title)(struct view *v, char *buf, size_t len);
	/* Store change notification (the UI's one store listener fans out to every live view). May be NULL. */
	void (*store_changed)(struct view *v, enum obj_kind kind, const struct obj *old, const struct obj *new_);
	/* The region changed size (the view may resize a vterm / rescale a framebuffer). May be NULL. */
	void (*resize)(struct view *v, const struct region *r);
	/* Focus gained (true) or lost. May be NULL. */
	void (*focus)(struct view *v, bool on);
	/* Called once per second while visible (ages, spinners). May be NULL. */
	void (*tick)(struct view *v);
	void (*destroy)(struct view *v);
	/* The VM the lifecycle keys act on (the registry's action keys, ui_action_key); NULL when the view has none. */
	struct obj *(*target_vm)(struct view *v);
	const struct view_key *keys; /* terminated by a zero row; may be NULL */
};

struct view {
	const struct view_ops *ops;
	void *priv;
	bool raw;         /* receives every key while focused (panes) */
	bool dirty;
	unsigned long marks; /* bumped whenever it is marked dirty or drawn whole: a view that redraws only parts it
			      * marked itself can tell whether anything else asked for the frame */
	bool pane;        /* lives in the pane area rather than on the stack */
	struct region r;  /* the region it was last drawn into */
};

/* A new view of these ops owning priv (freed by ops->destroy). */
struct view *view_new(const struct view_ops *ops, void *priv);
/* Calls ops->destroy and frees. NULL is ignored. */
void view_free(struct view *v);

/* Marks a view (NULL: everything) for redraw at the next frame. */
void view_dirty(struct view *v);

/* The stack of main views: push takes ownership and focuses it; pop frees the top (never the last one). */
void view_push(struct view *v);
void view_pop(void);
struct view *view_top(void);
size_t view_depth(void);
/* Replaces the whole stack by v (switching lists with ':'). */
void view_replace_all(struct view *v);

/* Panes (console, VNC): open takes ownership, shows it split under the main view, and focuses it; several
 * panes are tabs (one visible). zoom: the visible pane takes the whole body. */
void view_pane_open(struct view *v);
void view_pane_close(struct view *v);
struct view *view_pane_active(void);
size_t view_pane_count(void);
void view_pane_next(void);
void view_pane_zoom(bool on);
bool view_pane_zoomed(void);
/* Moves keyboard focus to the visible pane (true) or the main view (false). */
void view_focus_pane(bool on);
struct view *view_focused(void);

/* Opens a pane for a VM: one row per kind of pane; the console and VNC modules fill in `open` in panes.c.
 * open returns a new view (pane), or NULL with *err set (caller frees). */
struct view_pane_entry {
	int key;            /* the key in VM and list views: 'c', 'v' */
	const char *label;
	const char *help;
	struct view *(*open)(struct obj *vm, char **err);
	bool row;           /* in lists, open gets the row's own object (a pod, a VMI), not the row's VM */
};
extern const struct view_pane_entry view_panes[];
extern const size_t view_npanes;

/* Layout of the body (everything under the header, above the status line): main view and pane regions. */
void view_layout(const struct region *body);
/* Draws every dirty view (the UI's frame). Returns true when anything was drawn. */
bool view_draw_all(bool force);
/* Routes a key / mouse event to the focused view; returns what the view did. */
enum view_result view_key_dispatch(int key);
enum view_result view_mouse_dispatch(const struct view_mouse *m);
/* Fans a store change out to every live view. */
void view_store_changed(enum obj_kind kind, const struct obj *old, const struct obj *new_);
void view_tick_all(void);
/* Frees every view (UI shutdown). */
void view_free_all(void);

/* Looks a key up in a key table; NULL when absent. */
const struct view_key *view_key_find(const struct view_key *keys, int key);

#endif
