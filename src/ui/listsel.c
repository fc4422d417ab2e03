/* A list with a selected row (see listsel.h). */
#include "ui/listsel.h"

#include "ui/draw.h"
#include "ui/theme.h"
#include "ui/view.h"

void listsel_draw(struct listsel *l, size_t n, int y, int x, int w, int rows, listsel_row_fn fn, void *arg)
{
	l->page = rows;
	if (l->sel >= n)
		l->sel = n ? n - 1 : 0;
	if (l->sel < l->top)
		l->top = l->sel;
	if (rows > 0 && l->sel >= l->top + (size_t)rows)
		l->top = l->sel - (size_t)rows + 1;
	for (int i = 0; i < rows; i++) {
		size_t k = l->top + (size_t)i;
		if (k >= n) {
			draw_fill(y + i, x, w, theme_attr(THEME_NORMAL));
			continue;
		}
		int a = k == l->sel ? theme_attr(THEME_SELECTED) : theme_attr(THEME_NORMAL);
		draw_fill(y + i, x, w, a);
		fn(arg, k, y + i, x, w, a);
	}
}

static void step(struct listsel *l, long d, size_t n)
{
	long s = (long)l->sel + d;
	if (s < 0)
		s = 0;
	if (n && s >= (long)n)
		s = (long)n - 1;
	l->sel = (size_t)s;
}

bool listsel_key(struct listsel *l, int k, size_t n)
{
	long d;
	if (k == 'j' || k == VKEY(KEY_DOWN))
		d = 1;
	else if (k == 'k' || k == VKEY(KEY_UP))
		d = -1;
	else if (k == VKEY(KEY_NPAGE))
		d = l->page;
	else if (k == VKEY(KEY_PPAGE))
		d = -l->page;
	else if (k == 'g' || k == VKEY(KEY_HOME))
		d = -(long)n;
	else if (k == 'G' || k == VKEY(KEY_END))
		d = (long)n;
	else
		return false;
	step(l, d, n);
	return true;
}

bool listsel_mouse(struct listsel *l, const struct view_mouse *m, int y0, size_t n, bool *open)
{
	*open = false;
	if (m->kind == VMOUSE_WHEEL_UP || m->kind == VMOUSE_WHEEL_DOWN) {
		step(l, m->kind == VMOUSE_WHEEL_UP ? -1 : 1, n);
		return true;
	}
	if ((m->kind == VMOUSE_PRESS || m->kind == VMOUSE_CLICK || m->kind == VMOUSE_DOUBLE) && m->y >= y0) {
		l->sel = l->top + (size_t)(m->y - y0);
		*open = m->kind == VMOUSE_DOUBLE;
		return true;
	}
	return false;
}
