/* vnc: a VNC (RFB) client session built on libvncclient, driven so that kvcon's UI thread never blocks.
 * The session reaches the server over a core/stream (the KubeVirt `vnc` WebSocket, the engine's display
 * socket) through a socketpair kvcon pumps, or over its own socket (unix:PATH, tcp:HOST:PORT). The framebuffer is
 * handed to the UI as damaged rectangles that vnc_render() turns into fbcells. */
#ifndef KVCON_CONSOLE_VNC_H
#define KVCON_CONSOLE_VNC_H

#include <stdbool.h>
#include <stdint.h>

#include "console/fbcells.h"

struct stream;
struct vnc;

struct vnc_opts {
	const char *password; /* VncAuth password; NULL when none was given */
	bool view_only;	      /* never send keys or pointer events */
	int quality;	      /* -1: lossless encodings only (default); 0..9: allow JPEG in Tight at this quality */
};

enum vnc_event {
	VNC_CONNECTED, /* handshake done: vnc_size() and vnc_desktop_name() are known */
	VNC_FRAME,     /* a framebuffer update arrived: call vnc_render() (coalesced: one per loop pass at most) */
	VNC_BELL,
	VNC_CLOSED, /* final: vnc_error() says why ("" after vnc_free or a clean end) */
};

/* Runs on the loop thread. Never called after vnc_free(). */
typedef void (*vnc_event_cb)(struct vnc *v, enum vnc_event ev, void *arg);

/* Over a stream the caller opened; the session takes ownership of it (freed with the session). */
struct vnc *vnc_new_stream(struct stream *s, const struct vnc_opts *o, vnc_event_cb cb, void *arg);
/* Connects by itself to "unix:PATH" or "tcp:HOST:PORT" (on the session's thread). NULL with *err (caller frees)
 * when the target is malformed. */
struct vnc *vnc_connect(const char *target, const struct vnc_opts *o, vnc_event_cb cb, void *arg, char **err);
/* Ends the session; no callback after this returns. Never blocks. NULL is ignored. */
void vnc_free(struct vnc *v);

bool vnc_is_connected(const struct vnc *v);
const char *vnc_error(const struct vnc *v);
const char *vnc_desktop_name(const struct vnc *v);
/* The current framebuffer size (0x0 before VNC_CONNECTED). */
void vnc_size(struct vnc *v, int *w, int *h);
/* FramebufferUpdate messages received so far, and when the last one arrived (util_now_ms). */
uint64_t vnc_updates(struct vnc *v, uint64_t *last_ms);

/* Brings f up to date with the framebuffer for a grid of cols x rows cells: only the damaged cells when the
 * layout is unchanged. Returns true when some cell changed. */
bool vnc_render(struct vnc *v, struct fbcells *f, int cols, int rows, enum fbc_scale mode, int pan_x, int pan_y);
/* Writes the current framebuffer as PNG (png_write_rgbx). 0, or -1 (errno set, EAGAIN before the first frame;
 * why as png_write_rgbx's, unless EAGAIN). */
int vnc_screenshot(struct vnc *v, const char *path, char *why);

/* Press and release keysyms in order, then release in reverse (Ctrl+Alt+Del is {Control_L, Alt_L, Delete}). */
void vnc_key_combo(struct vnc *v, const uint32_t *keysyms, int n);
void vnc_pointer(struct vnc *v, int x, int y, int mask);
/* The send-key menu's keys (after F8): 'd' Ctrl+Alt+Del, '1'..'9' '0' '-' '=' Ctrl+Alt+F1..F12, 'p' Print,
 * 'f' F8 itself. Returns false for any other key (the caller's own menu keys). */
bool vnc_menu_send(struct vnc *v, int key);
/* The menu's text, for status lines. */
#define VNC_MENU_HELP "d Ctrl+Alt+Del  1-9 0 - = Ctrl+Alt+F1..F12  p Print  f F8"

/* ---- test seams: exported for tests/ only, not to be called by kvcon itself (tests/check-exports.sh) ---- */
/* Over an already connected socket; takes ownership of fd. */
struct vnc *vnc_new_fd(int fd, const struct vnc_opts *o, vnc_event_cb cb, void *arg);

#endif
