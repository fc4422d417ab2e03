/* A terminal pane: guest bytes go through libvterm (UTF-8, colours up to true colour, attributes, line drawing,
 * wide characters, alternate screen); damaged cells are redrawn into an ncurses window region; keys become the
 * bytes a terminal would send. Scrollback (>= 10,000 lines) with search and a keyboard copy mode.
 * Nothing the guest sends reaches the real terminal: titles, OSC 52, mode switches and mouse modes are absorbed
 * by libvterm; kvcon only ever draws printable cells (control and bidi-override characters are replaced).
 * libvterm 0.1.4 is used for parsing and terminal state only: the cell grid is the pane's own (libvterm's screen
 * layer moves every cell per scrolled line), and the two ways a guest could hang or crash it (REP after a
 * zero-width glyph, CSIs with 17+ parameters) are filtered out of the byte stream first (see vtpane_input). */
#ifndef KVCON_CONSOLE_VTPANE_H
#define KVCON_CONSOLE_VTPANE_H

#include <curses.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct vtpane;

/* Bytes the pane wants sent to the guest (typed keys, answers to the guest's terminal queries). */
typedef void (*vtpane_output_cb)(const char *data, size_t len, void *arg);

#define VTPANE_SCROLLBACK_DEFAULT 10000

/* Modifier bits for vtpane_key (same values as libvterm's VTermModifier). */
enum { VTPANE_MOD_SHIFT = 1, VTPANE_MOD_ALT = 2, VTPANE_MOD_CTRL = 4 };

struct vtpane *vtpane_new(int rows, int cols, size_t scrollback_lines);
void vtpane_free(struct vtpane *p);
void vtpane_set_output(struct vtpane *p, vtpane_output_cb cb, void *arg);

/* Guest bytes. Only marks damage: drawing happens in vtpane_draw. */
void vtpane_input(struct vtpane *p, const void *data, size_t len);
/* Writes a line of kvcon's own text into the pane (a marker such as "[reconnected]"), escaped, on a new line. */
void vtpane_note(struct vtpane *p, const char *text);
void vtpane_resize(struct vtpane *p, int rows, int cols);
void vtpane_size(const struct vtpane *p, int *rows, int *cols);

/* Draws the pane at (y, x) of win: only damaged cells (a span of columns per row) unless full (after the window
 * was cleared or moved). Returns true when anything was drawn. */
bool vtpane_draw(struct vtpane *p, WINDOW *win, int y, int x, bool full);
bool vtpane_dirty(const struct vtpane *p);

/* A key from wget_wch: keycode says whether ch is a KEY_* code. mods: VTPANE_MOD_* (Alt when the UI saw ESC
 * first). In copy mode the key drives copy mode instead. Returns true when the key was used. */
bool vtpane_key(struct vtpane *p, int ch, bool keycode, int mods);
/* Pasted text: bracketed (ESC[200~ ... ESC[201~) when the guest enabled bracketed paste. */
void vtpane_paste(struct vtpane *p, const char *text, size_t len);

/* Scrollback view: lines scrolled back from the live screen (0 = live). */
void vtpane_scroll(struct vtpane *p, int delta);
int vtpane_view_offset(const struct vtpane *p);

/* Copy mode: a cursor over scrollback and screen; arrows/hjkl/PgUp/PgDn/g/G move, v starts a selection,
 * y or Enter copies it (vtpane_copied), p pastes the last copy into the guest, / and ? search, n/N repeat,
 * q or Esc leaves. */
void vtpane_copy_mode(struct vtpane *p, bool on);
bool vtpane_in_copy_mode(const struct vtpane *p);

/* ---- test seams: exported for tests/ only, not to be called by kvcon itself (tests/check-exports.sh) ---- */
bool vtpane_altscreen(const struct vtpane *p);
/* The last copied text (owned by the pane; NULL when none). */
const char *vtpane_copied(const struct vtpane *p);
bool vtpane_cursor(const struct vtpane *p, int *row, int *col); /* false when the cursor is hidden */
/* Everything the pane holds, as text (both screens cell by cell with colours and attributes, scrollback, cursor,
 * modes, title): for tests that compare two panes. Caller frees. */
char *vtpane_dump(const struct vtpane *p);
/* Whether a and b hold the same as their vtpane_dump would say, compared in place (no text made: the fuzz
 * harness and test_vtfast compare two panes after every chunk). */
bool vtpane_same(const struct vtpane *a, const struct vtpane *b);
void vtpane_fast_stats(const struct vtpane *p, uint64_t *cells, uint64_t *desyncs);
/* One line of text (UTF-8, trailing blanks trimmed); abs 0 is the oldest scrollback line, scrollback_count()
 * the top screen row. Caller frees; NULL when out of range. */
char *vtpane_line_text(const struct vtpane *p, size_t abs);
/* What the guest asked for (absorbed, never passed on): for a status line and tests. */
const char *vtpane_title(const struct vtpane *p); /* escaped; "" when none */
int vtpane_mouse_mode(const struct vtpane *p);
/* The screen (not scrollback) as text, rows joined by '\n'. Caller frees. */
char *vtpane_screen_text(const struct vtpane *p);
size_t vtpane_scrollback_count(const struct vtpane *p);
/* Searches scrollback + screen for text from the current view (backward = towards older lines); scrolls the
 * match into view and highlights it. Returns true when found. */
bool vtpane_search(struct vtpane *p, const char *needle, bool backward);
/* Plain printable ASCII bypasses libvterm when that gives the same cells (on by default; KVCON_VT_FASTPATH=0 in
 * the environment turns it off). For tests and benchmarks: switching it on after input has gone in leaves it
 * unused. cells: characters written by the fast path; desyncs: times it found libvterm out of step (a bug). */
void vtpane_set_fast_path(struct vtpane *p, bool on);

#endif
