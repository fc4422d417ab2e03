/* A console session: one guest's serial console kept connected for as long as a pane shows it. It opens the
 * stream through the source's provider (or a fixed URL/socket), feeds guest bytes into a vtpane (and an
 * optional log file), sends keys back, waits for the VMI to be Running, reconnects with backoff when the stream
 * drops, and notices when the VMI is replaced (new UID): each of these is said in a marker line in the pane.
 * Owned by the dashboard's console pane (ui/console_view.c), which `kvcon console` shows full-screen (ui/panemain.c).
 * Loop thread only. */
#ifndef KVCON_CONSOLE_CONSESS_H
#define KVCON_CONSOLE_CONSESS_H

#include <stdbool.h>
#include <stdint.h>

#include "core/stream.h"
#include "console/vtpane.h"
#include "model/obj.h"
#include "model/source.h"
#include "model/store.h"

struct consess;

/* Opens a stream for a target that is not NS/NAME (ws:// URL, unix:PATH, tcp:HOST:PORT); NULL with *err. */
typedef struct stream *(*consess_open_fn)(const char *target, char **err);

struct consess_opts {
	struct store *st;      /* to follow the VMI (phase, UID); NULL: just connect */
	struct source *src;    /* whose provider opens the console; NULL when target is set */
	const char *ns, *name; /* the VMI */
	const char *target;    /* instead of src/ns/name: ws(s)://URL, unix:PATH, tcp:HOST:PORT */
	const char *log_path;  /* append every guest byte here (NULL: none) */
	int rows, cols;        /* initial pane size */
	size_t scrollback;     /* 0: VTPANE_SCROLLBACK_DEFAULT */
	bool no_reconnect;     /* end the session when the stream ends (tests, one-shot use) */
	bool view_only;        /* --readonly: nothing reaches the guest (keys, paste, the terminal's answers) */
};

enum consess_state {
	CONSESS_WAITING,      /* for the VMI to exist / be Running */
	CONSESS_CONNECTING,
	CONSESS_OPEN,
	CONSESS_BACKOFF,      /* reconnecting after a drop */
	CONSESS_ENDED,        /* no_reconnect and the stream ended, or a fatal error */
};

/* changed(arg) is called (on the loop thread) when the pane needs drawing or the state changed. */
struct consess *consess_new(const struct consess_opts *o, void (*changed)(void *arg), void *arg, char **err);
void consess_free(struct consess *cs);

struct vtpane *consess_pane(struct consess *cs);
enum consess_state consess_state(const struct consess *cs);
bool consess_view_only(const struct consess *cs);
/* One line for a status bar: "connected", "reconnecting in 2 s: connection reset", ... (escaped). */
const char *consess_status(const struct consess *cs);
/* The VMI UID last connected to ("" before). */
const char *consess_uid(const struct consess *cs);

/* A key from the UI (see vtpane_key); goes to the guest while connected. */
void consess_key(struct consess *cs, int ch, bool keycode, int mods);
void consess_paste(struct consess *cs, const char *text, size_t len);
void consess_resize(struct consess *cs, int rows, int cols);

/* Feed store changes (the UI's fan-out, or a store_listen in the CLI). */
void consess_store_changed(struct consess *cs, enum obj_kind kind, const struct obj *old, const struct obj *new_);

/* Bytes received from the guest so far. */
uint64_t consess_bytes_in(const struct consess *cs);

#endif
