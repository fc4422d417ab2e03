/* The text pager. */
#include "ui/pager.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/xmalloc.h"
#include "ui/draw.h"
#include "ui/theme.h"
#include "ui/ui.h"

struct pager {
	unsigned id;
	char *title;
	char *text;
	char **lines;
	size_t n;
	size_t top;
	int page;
	int width; /* columns the text was last wrapped to */
	char *search;
	long hit; /* line of the current hit, -1 none */
	struct view *v;
	struct pager *next;
};

static struct pager *live;
static unsigned next_id;

static void split(struct pager *p, const char *text)
{
	free(p->text);
	free(p->lines);
	p->text = xstrdup(text ? text : "");
	p->n = 0;
	size_t cap = 64;
	p->lines = xmalloc(cap * sizeof *p->lines);
	char *s = p->text;
	for (;;) {
		if (p->n == cap) {
			cap *= 2;
			p->lines = xreallocarray(p->lines, cap, sizeof *p->lines);
		}
		p->lines[p->n++] = s;
		char *nl = strchr(s, '\n');
		if (nl == NULL)
			break;
		*nl = '\0';
		s = nl + 1;
	}
	if (p->n > 1 && p->lines[p->n - 1][0] == '\0')
		p->n--;
	if (p->top >= p->n)
		p->top = p->n ? p->n - 1 : 0;
}

/* Long lines wrap (continuations indented under their text) so a walkthrough or a message reads whole; the
 * scroll position stays in source lines, so search and paging are unchanged. */
static int indent_of(const char *line)
{
	int n = 0;
	while (line[n] == ' ' && n < 40)
		n++;
	return n + 2;
}

static int rows_of(const struct pager *p, size_t k)
{
	return (int)draw_wrap_rows(p->lines[k], p->width, indent_of(p->lines[k]), NULL, 0);
}

static void draw(struct view *v, const struct region *r)
{
	struct pager *p = v->priv;
	attrset((attr_t)theme_attr(THEME_BORDER));
	mvhline(r->y, r->x, ACS_HLINE, r->w);
	char title[256];
	snprintf(title, sizeof title, " %s ", p->title);
	draw_text(r->y, r->x + (r->w - draw_width(title)) / 2, r->w, theme_attr(THEME_TITLE_ACTIVE), title);
	int rows = r->h - 1;
	p->page = rows;
	p->width = r->w - 1;
	size_t k = p->top;
	for (int i = 0; i < rows;) {
		int y = r->y + 1 + i;
		if (k >= p->n) {
			draw_fill(y, r->x, r->w, theme_attr(THEME_NORMAL));
			i++;
			continue;
		}
		bool hit = p->hit >= 0 && (size_t)p->hit == k;
		int a = hit ? theme_attr(THEME_MATCH) : theme_attr(THEME_NORMAL);
		int need = rows_of(p, k);
		if (need > rows - i)
			need = rows - i;
		draw_clear_rect(y, r->x, need, r->w, theme_attr(THEME_NORMAL));
		i += draw_wrap(y, r->x + 1, r->w - 1, rows - i, indent_of(p->lines[k]), a, p->lines[k]);
		k++;
	}
}

/* The last top line that still fills the page (the end of the text at the bottom). */
static long max_top(const struct pager *p)
{
	int rows = 0, page = p->page > 0 ? p->page : 1;
	for (long k = (long)p->n - 1; k >= 0; k--) {
		rows += p->width > 0 ? rows_of(p, (size_t)k) : 1;
		if (rows > page)
			return k + 1;
	}
	return 0;
}

static void scroll_to(struct view *v, long line)
{
	struct pager *p = v->priv;
	long max = max_top(p);
	if (line > max)
		line = max;
	if (line < 0)
		line = 0;
	p->top = (size_t)line;
	view_dirty(v);
}

static void find(struct view *v, bool forward)
{
	struct pager *p = v->priv;
	if (p->search == NULL || p->n == 0)
		return;
	long start = p->hit >= 0 ? p->hit : (long)p->top - (forward ? 1 : 0);
	for (size_t i = 1; i <= p->n; i++) {
		long k = forward ? start + (long)i : start - (long)i;
		k = ((k % (long)p->n) + (long)p->n) % (long)p->n;
		if (strcasestr(p->lines[k], p->search)) {
			p->hit = k;
			if ((size_t)k < p->top || (size_t)k >= p->top + (size_t)p->page)
				scroll_to(v, k - p->page / 3);
			view_dirty(v);
			return;
		}
	}
	ui_error("not found: %s", p->search);
}

static void search_done(void *arg, const char *text)
{
	struct view *v = pager_find((unsigned)(uintptr_t)arg);
	if (v == NULL || *text == '\0')
		return;
	struct pager *p = v->priv;
	free(p->search);
	p->search = xstrdup(text);
	p->hit = -1;
	find(v, true);
}

static enum view_result key(struct view *v, int k)
{
	struct pager *p = v->priv;
	switch (k) {
	case 'j':
	case VKEY(KEY_DOWN):
		scroll_to(v, (long)p->top + 1);
		return VIEW_DONE;
	case 'k':
	case VKEY(KEY_UP):
		scroll_to(v, (long)p->top - 1);
		return VIEW_DONE;
	case ' ':
	case VKEY(KEY_NPAGE):
	case VKEY_CTRL('f'):
		scroll_to(v, (long)p->top + p->page - 1);
		return VIEW_DONE;
	case VKEY(KEY_PPAGE):
	case VKEY_CTRL('b'):
		scroll_to(v, (long)p->top - p->page + 1);
		return VIEW_DONE;
	case 'g':
	case VKEY(KEY_HOME):
		scroll_to(v, 0);
		return VIEW_DONE;
	case 'G':
	case VKEY(KEY_END):
		scroll_to(v, (long)p->n);
		return VIEW_DONE;
	case '/':
		ui_prompt("search: ", search_done, NULL, (void *)(uintptr_t)p->id);
		return VIEW_DONE;
	case 'n':
		find(v, true);
		return VIEW_DONE;
	case 'N':
		find(v, false);
		return VIEW_DONE;
	case 'q':
		return VIEW_CLOSE;
	default:
		return VIEW_PASS;
	}
}

static enum view_result mouse(struct view *v, const struct view_mouse *m)
{
	struct pager *p = v->priv;
	if (m->kind == VMOUSE_WHEEL_UP)
		scroll_to(v, (long)p->top - 3);
	else if (m->kind == VMOUSE_WHEEL_DOWN)
		scroll_to(v, (long)p->top + 3);
	else
		return VIEW_PASS;
	return VIEW_DONE;
}

static void title(struct view *v, char *buf, size_t len)
{
	struct pager *p = v->priv;
	snprintf(buf, len, "%s", p->title);
}

static void destroy(struct view *v)
{
	struct pager *p = v->priv;
	for (struct pager **pp = &live; *pp; pp = &(*pp)->next) {
		if (*pp == p) {
			*pp = p->next;
			break;
		}
	}
	free(p->title);
	free(p->text);
	free(p->lines);
	free(p->search);
	free(p);
}

static const struct view_key pager_keys[] = {
	{ 'j', "j", "scroll down (also Down)", NULL },
	{ 'k', "k", "scroll up (also Up)", NULL },
	{ ' ', "space", "next page (also PgDn, ctrl-f)", NULL },
	{ VKEY(KEY_PPAGE), "PgUp", "previous page (also ctrl-b)", NULL },
	{ 'g', "g", "top", NULL },
	{ 'G', "G", "bottom", NULL },
	{ '/', "/", "search (case-insensitive)", NULL },
	{ 'n', "n", "next match", NULL },
	{ 'N', "N", "previous match", NULL },
	{ 'q', "q", "close (also esc)", NULL },
	{ 0, NULL, NULL, NULL },
};

static const struct view_ops pager_ops = {
	.name = "pager",
	.draw = draw,
	.key = key,
	.mouse = mouse,
	.title = title,
	.destroy = destroy,
	.keys = pager_keys,
};

const struct view_key *pager_keys_table(void)
{
	return pager_keys;
}

struct view *pager_new(const char *title_, const char *text)
{
	struct pager *p = xcalloc(1, sizeof *p);
	p->id = ++next_id;
	p->title = xstrdup(title_);
	p->hit = -1;
	split(p, text);
	p->next = live;
	live = p;
	p->v = view_new(&pager_ops, p);
	return p->v;
}

unsigned pager_id(struct view *v)
{
	return ((struct pager *)v->priv)->id;
}

struct view *pager_find(unsigned id)
{
	for (struct pager *p = live; p; p = p->next)
		if (p->id == id)
			return p->v;
	return NULL;
}

void pager_set_text(struct view *v, const char *text)
{
	split(v->priv, text);
	view_dirty(v);
}

