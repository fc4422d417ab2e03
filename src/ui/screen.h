/* The terminal: ncursesw set-up and restore on every exit path (normal, fatal, crash signals, SIGTERM/SIGHUP),
 * keyboard and mouse input read from the loop without blocking, resize, and frame pacing (draw once per loop
 * pass, only when dirty, at most SCREEN_FPS frames a second on average, SCREEN_BURST of them at once after a quiet
 * moment so that a key's frame does not hold back the echo's; frames that only the cluster's changes ask for at
 * most SCREEN_STORE_FPS a second on average, SCREEN_BURST of them at once after a quiet moment). */
#ifndef KVCON_UI_SCREEN_H
#define KVCON_UI_SCREEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ui/view.h"

#define SCREEN_FPS 30
#define SCREEN_STORE_FPS 10
#define SCREEN_BURST 3
#define SCREEN_FRAME_MS ((uint64_t)(1000 / SCREEN_FPS))
#define SCREEN_STORE_FRAME_MS ((uint64_t)(1000 / SCREEN_STORE_FPS))
#define SCREEN_MIN_W 40
#define SCREEN_MIN_H 10

struct screen_cbs {
	void (*key)(int key);                         /* one key (view.h encoding) */
	void (*mouse)(const struct view_mouse *m);    /* absolute screen coordinates */
	void (*resize)(int rows, int cols);
	void (*draw)(bool full);                      /* a frame: draw into stdscr; full after resize/clear */
	void (*quit)(int sig);                        /* SIGTERM, SIGHUP, SIGINT */
	void (*paste)(const char *text, size_t len);  /* a bracketed paste (NULL: dropped), see console/paste.h */
};

/* Takes the terminal (alternate screen, raw keys, mouse), sends stderr to the log and registers the restore
 * hooks. Returns 0, or -1 with a message on stderr when stdin/stdout is not a terminal. */
int screen_init(const struct screen_cbs *cbs, const char *theme, char **theme_err);
/* Gives the terminal back exactly as found. Idempotent, safe on every path. */
void screen_fini(void);

/* Hands the terminal over to a program (argv[0] a path, no shell) as a shell runs a job in the foreground: curses
 * leaves (the terminal as found), the program runs in its own process group holding the terminal with stdin,
 * stdout and stderr on it, and once it ends the dashboard takes the terminal back and repaints. The loop waits
 * meanwhile. Returns the program's wait status, or -1 with *err (caller frees) when it could not run. */
int screen_run(char *const argv[], char **err);

/* Something changed: a frame is due (paced). full: repaint every cell (after a resize). */
void screen_dirty(void);
void screen_dirty_full(void);
/* The cluster changed something shown: a frame is due, paced at SCREEN_STORE_FPS (a watch under churn changes
 * rows far faster than they can be read; a key, a console's output or the tick still draw at SCREEN_FPS). */
void screen_dirty_store(void);
/* The next pass draws (when dirty) whatever the pacers' credit: a key's answer, the first rows. */
void screen_frame_soon(void);
/* Output curses cannot make (true colour where terminfo has none): after each frame's update, fn appends escape
 * sequences to out for cells its view keeps blank on stdscr (curses then never writes there); all: the terminal was
 * repainted (or the hook is new), draw every cell, else only what changed. One hook at a time, for a view that stays
 * visible (the zoomed pane of panemain); NULL removes it. screen_fini removes it too. */
struct buf;
typedef void (*screen_raw_fn)(void *arg, struct buf *out, bool all);
void screen_raw_hook(screen_raw_fn fn, void *arg);
/* Mouse motion with a button held (xterm's button-event tracking, 1002) reported as VMOUSE_MOTION: on for a view
 * that follows drags (the VNC pane), off again (press and release only, 1000) when the last such view goes. */
void screen_mouse_drags(bool on);
/* The frame pacer: two token buckets of drawing credit in milliseconds, earned at one a millisecond up to
 * SCREEN_BURST frames' worth each. A frame spends SCREEN_FRAME_MS of the first and SCREEN_STORE_FRAME_MS of the
 * second; only a frame that the cluster's changes alone ask for waits for the second. */
struct screen_pacer {
	uint64_t credit_ms, store_credit_ms, at;
};
/* Frames drawn since screen_init. */
unsigned long screen_frames(void);

/* ---- test seams: exported for tests/ only, not to be called by kvcon itself (tests/check-exports.sh) ---- */
/* An xterm SGR mouse report's parameters ("b;x;y", 1-based cells) and its final byte (m: release) as a view event
 * in screen coordinates; false for what the views take no event for (wheel left/right, a release of no button). */
bool screen_sgr_mouse(const char *params, bool release, struct view_mouse *m);
/* At now (ms): 0 when a frame may be drawn, else the milliseconds until it may. */
uint64_t screen_pacer_wait(struct screen_pacer *p, uint64_t now, bool cluster_only);
/* A frame was drawn. */
void screen_pacer_spend(struct screen_pacer *p);
/* The next frame goes out whatever the credit (screen_frame_soon). */
void screen_pacer_soon(struct screen_pacer *p);

#endif
