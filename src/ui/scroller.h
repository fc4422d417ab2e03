/* The scrolling and search that the text pager (ui/pager.c) and the log pane (ui/log_view.c) share: a list of
 * lines, the first one shown, the page of the last draw, long lines cut or wrapped, `/` search with n and N.
 * The owner keeps the lines (the scroller points at them) and marks its view dirty after a handled key. */
#ifndef KVCON_UI_SCROLLER_H
#define KVCON_UI_SCROLLER_H

#include <stdbool.h>
#include <stddef.h>

struct scroller {
	char **lines;  /* the owner's */
	size_t n;
	size_t top;    /* first line shown */
	int page;      /* rows of the last draw */
	int width;     /* columns the text was last drawn in */
	bool wrap;     /* wrap long lines (else cut at the edge) */
	bool indent;   /* wrapped continuations indented under their text (else at the left edge) */
	char *search;  /* owned: the last `/` text */
	long hit;      /* line of the current match, -1 none */
};

void scroller_init(struct scroller *s);
void scroller_free(struct scroller *s); /* the search text; not the lines */
/* The last top line that still fills the page (the end of the text at the bottom). */
size_t scroller_max_top(const struct scroller *s);
/* Sets the search text (text copied) and finds its first match after the top. */
void scroller_search(struct scroller *s, const char *text);
/* The next (or previous) match of the search text, case-insensitive, wrapping around; brought into the page.
 * False (and a "not found" error in the status line) when there is none. */
bool scroller_find(struct scroller *s, bool forward);
/* j k Down Up, space PgDn ctrl-f, PgUp ctrl-b, g G Home End, n N: true when k was one of them. */
bool scroller_key(struct scroller *s, int k);
/* The wheel: true when m was one. */
struct view_mouse;
bool scroller_mouse(struct scroller *s, const struct view_mouse *m);
/* Draws rows lines from the top at (y, x) in w columns, the text margin columns in; sets page and width. */
void scroller_draw(struct scroller *s, int y, int x, int w, int rows, int margin);

#endif
