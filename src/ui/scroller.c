/* Scrolling and search over a list of lines, for the pager and the log pane (see scroller.h). */
#include "ui/scroller.h"

#include <stdlib.h>
#include <string.h>

#include "core/xmalloc.h"
#include "ui/draw.h"
#include "ui/theme.h"
#include "ui/ui.h"
#include "ui/view.h"

void scroller_init(struct scroller *s)
{
	memset(s, 0, sizeof *s);
	s->hit = -1;
}

void scroller_free(struct scroller *s)
{
	free(s->search);
	s->search = NULL;
}

static int indent_of(const struct scroller *s, const char *line)
{
	if (!s->indent)
		return 0;
	int n = 0;
	while (line[n] == ' ' && n < 40)
		n++;
	return n + 2;
}

static int rows_of(const struct scroller *s, size_t k)
{
	if (!s->wrap || s->width <= 0)
		return 1;
	return (int)draw_wrap_rows(s->lines[k], s->width, indent_of(s, s->lines[k]), NULL, 0);
}

size_t scroller_max_top(const struct scroller *s)
{
	int rows = 0, page = s->page > 0 ? s->page : 1;
	for (size_t k = s->n; k > 0; k--) {
		rows += rows_of(s, k - 1);
		if (rows > page)
			return k;
	}
	return 0;
}

/* Shows line first, kept within 0..scroller_max_top. */
static void scroller_scroll_to(struct scroller *s, long line)
{
	long max = (long)scroller_max_top(s);
	if (line > max)
		line = max;
	if (line < 0)
		line = 0;
	s->top = (size_t)line;
}

bool scroller_find(struct scroller *s, bool forward)
{
	if (s->search == NULL || s->n == 0)
		return false;
	long n = (long)s->n;
	long start = s->hit >= 0 ? s->hit : (long)s->top - (forward ? 1 : 0);
	for (long i = 1; i <= n; i++) {
		long k = forward ? start + i : start - i;
		k = ((k % n) + n) % n;
		if (strcasestr(s->lines[k], s->search)) {
			s->hit = k;
			if ((size_t)k < s->top || (size_t)k >= s->top + (size_t)s->page)
				scroller_scroll_to(s, k - s->page / 3);
			return true;
		}
	}
	ui_error("not found: %s", s->search);
	return false;
}

void scroller_search(struct scroller *s, const char *text)
{
	free(s->search);
	s->search = xstrdup(text);
	s->hit = -1;
	scroller_find(s, true);
}

bool scroller_key(struct scroller *s, int k)
{
	switch (k) {
	case 'j':
	case VKEY(KEY_DOWN):
		scroller_scroll_to(s, (long)s->top + 1);
		return true;
	case 'k':
	case VKEY(KEY_UP):
		scroller_scroll_to(s, (long)s->top - 1);
		return true;
	case ' ':
	case VKEY(KEY_NPAGE):
	case VKEY_CTRL('f'):
		scroller_scroll_to(s, (long)s->top + s->page - 1);
		return true;
	case VKEY(KEY_PPAGE):
	case VKEY_CTRL('b'):
		scroller_scroll_to(s, (long)s->top - s->page + 1);
		return true;
	case 'g':
	case VKEY(KEY_HOME):
		scroller_scroll_to(s, 0);
		return true;
	case 'G':
	case VKEY(KEY_END):
		scroller_scroll_to(s, (long)s->n);
		return true;
	case 'n':
		scroller_find(s, true);
		return true;
	case 'N':
		scroller_find(s, false);
		return true;
	default:
		return false;
	}
}

bool scroller_mouse(struct scroller *s, const struct view_mouse *m)
{
	if (m->kind == VMOUSE_WHEEL_UP)
		scroller_scroll_to(s, (long)s->top - 3);
	else if (m->kind == VMOUSE_WHEEL_DOWN)
		scroller_scroll_to(s, (long)s->top + 3);
	else
		return false;
	return true;
}

void scroller_draw(struct scroller *s, int y, int x, int w, int rows, int margin)
{
	s->page = rows;
	s->width = w - margin;
	size_t k = s->top;
	for (int i = 0; i < rows;) {
		int row = y + i;
		if (k >= s->n) {
			draw_fill(row, x, w, theme_attr(THEME_NORMAL));
			i++;
			continue;
		}
		int a = s->hit >= 0 && (size_t)s->hit == k ? theme_attr(THEME_MATCH) : theme_attr(THEME_NORMAL);
		if (s->wrap) {
			int need = rows_of(s, k);
			if (need > rows - i)
				need = rows - i;
			draw_clear_rect(row, x, need, w, theme_attr(THEME_NORMAL));
			i += draw_wrap(row, x + margin, w - margin, rows - i, indent_of(s, s->lines[k]), a, s->lines[k]);
		} else {
			if (margin)
				draw_fill(row, x, margin, theme_attr(THEME_NORMAL));
			draw_cell(row, x + margin, w - margin, a, s->lines[k], false);
			i++;
		}
		k++;
	}
}
