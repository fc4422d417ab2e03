/* The text pager. */
#include "ui/pager.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/xmalloc.h"
#include "ui/draw.h"
#include "ui/scroller.h"
#include "ui/theme.h"
#include "ui/ui.h"

struct pager {
	unsigned id;
	char *title;
	char *text;
	char **lines;
	struct scroller sc; /* over lines: wrapped, continuations indented under their text */
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
	size_t n = 0, cap = 64;
	p->lines = xmalloc(cap * sizeof *p->lines);
	char *s = p->text;
	for (;;) {
		if (n == cap) {
			cap *= 2;
			p->lines = xreallocarray(p->lines, cap, sizeof *p->lines);
		}
		p->lines[n++] = s;
		char *nl = strchr(s, '\n');
		if (nl == NULL)
			break;
		*nl = '\0';
		s = nl + 1;
	}
	if (n > 1 && p->lines[n - 1][0] == '\0')
		n--;
	p->sc.lines = p->lines;
	p->sc.n = n;
	if (p->sc.top >= n)
		p->sc.top = n ? n - 1 : 0;
	if (p->sc.hit >= (long)n)
		p->sc.hit = -1;
}

/* Long lines wrap (continuations indented under their text) so a walkthrough or a message reads whole; the
 * scroll position stays in source lines, so search and paging are unchanged. */
static void draw(struct view *v, const struct region *r)
{
	struct pager *p = v->priv;
	attrset((attr_t)theme_attr(THEME_BORDER));
	mvhline(r->y, r->x, ACS_HLINE, r->w);
	char title[256];
	snprintf(title, sizeof title, " %s ", p->title);
	draw_text(r->y, r->x + (r->w - draw_width(title)) / 2, r->w, theme_attr(THEME_TITLE_ACTIVE), title);
	scroller_draw(&p->sc, r->y + 1, r->x, r->w, r->h - 1, 1);
}

static void search_done(void *arg, const char *text)
{
	struct view *v = pager_find((unsigned)(uintptr_t)arg);
	if (v == NULL || *text == '\0')
		return;
	struct pager *p = v->priv;
	scroller_search(&p->sc, text);
	view_dirty(v);
}

static enum view_result key(struct view *v, int k)
{
	struct pager *p = v->priv;
	if (scroller_key(&p->sc, k)) {
		view_dirty(v);
		return VIEW_DONE;
	}
	switch (k) {
	case '/':
		ui_prompt("search: ", search_done, NULL, (void *)(uintptr_t)p->id);
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
	if (!scroller_mouse(&p->sc, m))
		return VIEW_PASS;
	view_dirty(v);
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
	scroller_free(&p->sc);
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
	scroller_init(&p->sc);
	p->sc.wrap = p->sc.indent = true;
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

