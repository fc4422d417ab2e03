/* vnc_view: a VNC display as a pane: the dashboard's (`v` on a VM) and, zoomed alone on the dashboard's screen
 * (ui/panemain.c), full-screen `kvcon vnc`. */
#ifndef KVCON_UI_VNC_VIEW_H
#define KVCON_UI_VNC_VIEW_H

#include <stdbool.h>
#include <stddef.h>

#include "console/fbcells.h"
#include "model/obj.h"

struct stream;
struct view;

struct vnc_view_opts {
	struct stream *stream; /* the display's byte stream (taken, even on failure); NULL when direct is set */
	const char *direct;    /* unix:PATH or tcp:HOST:PORT: the session connects by itself */
	const char *label;     /* names the display in the status row ("ns/name"); NULL: the desktop's own name */
	const char *password;  /* VncAuth password (copied); NULL: none */
	const char *colors;    /* colour mode (fbcells_colour_parse's names); NULL: detected */
	/* the pane is the whole screen for its whole life (kvcon vnc): colour detection honours COLORTERM, and a mode
	 * curses cannot draw (true colour without a direct-colour terminfo, 256 colours beyond terminfo's) is written
	 * as escape sequences through screen_raw_hook; else such a mode falls back to what curses can draw */
	bool own_screen;
	enum fbc_scale scale;
	bool view_only; /* never send keys or pointer events */
	int quality;	/* -1: lossless encodings only; 0..9: JPEG allowed at this quality */
	/* the session ended (server gone, authentication refused, connection failed): why ("" for a clean end).
	 * Called once, on the loop thread; the pane stays open (and says why) until closed. NULL: nobody asks. */
	void (*ended)(void *arg, const char *why);
	void *arg;
};

/* Opens the VM's display through its source's provider (open_vnc) in a new pane view, as the dashboard shows it;
 * NULL with *err (caller frees) when the provider has no VNC. */
struct view *vnc_view_open(struct obj *vm, char **err);
/* A VNC pane on any display (o as above); NULL with *err (caller frees) when the session cannot start. */
struct view *vnc_view_new(const struct vnc_view_opts *o, char **err);
/* A bracketed paste from the outer terminal, typed on the guest's keyboard when v is a VNC view (dropped when it
 * is view-only or the send-key menu is open). Returns false when v is not a VNC view. */
bool vnc_view_paste(struct view *v, const char *text, size_t len);

#endif
