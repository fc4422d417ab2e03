/* A list with a selected row, as the namespace and context pickers (ui/nsctx.c) and the cluster lists
 * (ui/clusterlist.c) draw it: the selection kept in view, rows filled in the selected or normal colours, the
 * movement keys and the mouse. The owner draws each row's text and handles enter. */
#ifndef KVCON_UI_LISTSEL_H
#define KVCON_UI_LISTSEL_H

#include <stdbool.h>
#include <stddef.h>

struct view_mouse;

struct listsel {
	size_t sel, top;
	int page; /* rows of the last draw */
};

/* Draws one row's text at (y, x) in w columns, in attr (its background is filled already). */
typedef void (*listsel_row_fn)(void *arg, size_t k, int y, int x, int w, int attr);

/* Rows top.. of n at y (rows of them, w columns from x), after keeping sel within n and in view; rows past the
 * end are blank. */
void listsel_draw(struct listsel *l, size_t n, int y, int x, int w, int rows, listsel_row_fn fn, void *arg);
/* j k Down Up, PgDn PgUp, g G Home End over n rows: true when k was one of them (the caller redraws). */
bool listsel_key(struct listsel *l, int k, size_t n);
/* The wheel moves the selection; a press or click on a row (the first at view row y0) selects it, and a double
 * click also sets *open. True when m was one of them (the caller redraws). */
bool listsel_mouse(struct listsel *l, const struct view_mouse *m, int y0, size_t n, bool *open);

#endif
