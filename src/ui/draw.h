/* Width-aware drawing of untrusted text: every string from a cluster or a guest goes through here, shown escaped
 * (control characters and invalid UTF-8 as \e, \x1b, \u{...}), measured in terminal columns (wcwidth) and
 * clipped to a width, so it never drives the terminal and never spills over its cell. */
#ifndef KVCON_UI_DRAW_H
#define KVCON_UI_DRAW_H

#include <stdbool.h>
#include <stddef.h>

/* Columns s would take once escaped (unbounded). */
int draw_width(const char *s);

/* Word-wraps s (as displayed: escaped) into rows of at most maxw columns, continuation rows indented by indent
 * columns. Writes the byte offset in s where each row starts into starts (at most max) and returns the number
 * of rows (which may exceed max: only the count is then complete). Pure; unit-tested. */
size_t draw_wrap_rows(const char *s, int maxw, int indent, size_t *starts, size_t max);
/* Draws s wrapped over at most maxrows rows from (y, x); returns the rows used. */
int draw_wrap(int y, int x, int maxw, int maxrows, int indent, int attr, const char *s);

/* Draws s at (y, x), escaped and clipped to maxw columns, with attr; returns the columns used. */
int draw_text(int y, int x, int maxw, int attr, const char *s);
/* Draws s into a cell of exactly w columns (padded with spaces; right-aligned when right). */
void draw_cell(int y, int x, int w, int attr, const char *s, bool right);
/* Fills w columns with spaces in attr. */
void draw_fill(int y, int x, int w, int attr);
/* A list's title bar: a horizontal line of w columns at (y, x) in battr with title centred on it in tattr (every
 * list view has one: the store's lists and `:node`, `:vmim`, `:pvc`, `:dv`). */
void draw_title_bar(int y, int x, int w, int battr, int tattr, const char *title);
/* Fills a rectangle. */
void draw_clear_rect(int y, int x, int h, int w, int attr);

/* ---- test seams: exported for tests/ only, not to be called by kvcon itself (tests/check-exports.sh) ---- */
/* Makes s displayable and fits it into at most maxw columns (a final '~' marks a cut). Writes a NUL-terminated
 * string into out (outlen bytes) and returns the columns it takes. Pure: no curses needed (unit-tested). */
int draw_fit(const char *s, int maxw, char *out, size_t outlen);

#endif
