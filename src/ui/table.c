/* The generic list view: index maintenance, filter, sort, layout and drawing of rows. */
#include "ui/table.h"

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/loop.h"
#include "core/util.h"
#include "core/xmalloc.h"
#include "model/source.h"
#include "model/store.h"
#include "ui/actions.h"
#include "ui/draw.h"
#include "ui/screen.h"
#include "ui/theme.h"
#include "ui/sources.h"
#include "ui/ui.h"

#define CELL_MAX 256
#define PEND_MAX 16 /* rows a partial frame redraws at most; more and the list is drawn whole */
#define MATCH_CACHE_MS 5000 /* ages are part of the row text: text-filter verdicts are recomputed this often */

/* Which objects passed the text filter at the last index build, by object pointer, so that a re-sort under churn
 * formats only the rows that changed. A changed object is entered again as unknown: the store reports every new
 * object before the next build, so a freed pointer reused by a new object never reads an old verdict. The cache
 * starts over when the filter changes, when it would fill up, and every MATCH_CACHE_MS. */
enum { MC_UNKNOWN, MC_NO, MC_YES };
struct match_cache {
	const struct obj **key;
	uint8_t *val;
	size_t cap, used; /* cap is a power of two; 0 = no cache */
	uint64_t since;
	bool full;        /* an entry did not fit: start over at the next build */
};

/* Where each object is in the index (rows[]), by object pointer, so that a replaced or removed object's row is
 * found without a pass over 10,000 rows. Built with the index; a replaced object's entry moves to the new pointer;
 * a removal shifts the rows after it one place up without touching their entries, so an entry may say a row up to
 * `shift` (the removals since the build) places too far down: the row is looked for from there upwards. */
struct row_slot {
	const struct obj *key; /* NULL: empty */
	size_t pos;
};
struct row_index {
	struct row_slot *s;
	size_t cap; /* power of two; 0 = none */
	size_t shift;
};

struct tview {
	const struct table_spec *spec;
	struct obj **rows;
	size_t n, cap;
	size_t sel, top;
	int sort_col;
	bool desc;
	struct table_filter filt;
	bool stale;
	uint64_t last_build;
	size_t builds;
	struct loop_timer *timer;   /* next allowed rebuild, or the end of a flash */
	const char *built_ns;       /* namespace scope the index was built for ("" = all) */
	size_t built_sources;
	struct obj *sel_obj;        /* kept selected across re-sorts */
	int page;                   /* rows visible in the last frame */
	int body_y;                 /* first row line, relative to the region (mouse) */
	uint64_t last_press_ms;     /* double-click detection (ncurses reports presses only: mouseinterval 0) */
	size_t last_press_row;
	struct match_cache mc;
	struct row_index ix;
	/* The last frame's cells (its visible rows x columns) and what it was drawn for, so that a frame asked for by
	 * changes to a few rows on screen (pend[], marked by store_changed while nothing else marked the view: marks
	 * unchanged since) formats and draws only those rows. Anything else draws the list whole. */
	char *cells;
	int *cell_attr;
	size_t cells_cap;       /* cells allocated */
	bool drawn;             /* the last_* fields describe the last frame */
	struct region last_r;
	size_t last_top, last_sel, last_n, last_nvis;
	int64_t last_s;         /* the wall clock second its cells were made for (ages) */
	bool last_shown[32];
	int last_w[32];
	size_t pend[PEND_MAX];
	int npend;
	bool pend_over;         /* something else asked for the frame, or too many rows: draw whole */
	unsigned long pend_marks;
};

static size_t mc_slot(const struct match_cache *mc, const struct obj *o)
{
	uint64_t h = ((uint64_t)(uintptr_t)o >> 4) * 0x9e3779b97f4a7c15ull;
	size_t i = (size_t)(h >> 32) & (mc->cap - 1);
	while (mc->key[i] && mc->key[i] != o)
		i = (i + 1) & (mc->cap - 1);
	return i;
}

static int mc_get(const struct match_cache *mc, const struct obj *o)
{
	if (mc->cap == 0 || o == NULL)
		return MC_UNKNOWN;
	size_t i = mc_slot(mc, o);
	return mc->key[i] ? mc->val[i] : MC_UNKNOWN;
}

static void mc_put(struct match_cache *mc, const struct obj *o, int v)
{
	if (mc->cap == 0 || o == NULL)
		return;
	size_t i = mc_slot(mc, o);
	if (mc->key[i] == NULL) {
		if ((mc->used + 1) * 4 > mc->cap * 3) {
			mc->full = true;
			return;
		}
		mc->key[i] = o;
		mc->used++;
	}
	mc->val[i] = (uint8_t)v;
}

/* Empties the cache, sized for objects entries; cap 0 (objects 0) drops it. */
static void mc_reset(struct match_cache *mc, size_t objects)
{
	size_t cap = 0;
	if (objects) {
		cap = 64;
		while (cap < objects * 2)
			cap *= 2;
	}
	if (cap != mc->cap) {
		free(mc->key);
		free(mc->val);
		mc->key = cap ? xcalloc(cap, sizeof *mc->key) : NULL;
		mc->val = cap ? xcalloc(cap, sizeof *mc->val) : NULL;
		mc->cap = cap;
	} else if (cap) {
		memset(mc->key, 0, cap * sizeof *mc->key);
	}
	mc->used = 0;
	mc->full = false;
	mc->since = util_now_ms();
}

/* ---- row index ---- */

static size_t ri_home(const struct row_index *x, const struct obj *o)
{
	uint64_t h = ((uint64_t)(uintptr_t)o >> 4) * 0x9e3779b97f4a7c15ull;
	return (size_t)(h >> 32) & (x->cap - 1);
}

/* The slot of o, or the empty slot where it would go. */
static size_t ri_slot(const struct row_index *x, const struct obj *o)
{
	size_t i = ri_home(x, o);
	while (x->s[i].key && x->s[i].key != o)
		i = (i + 1) & (x->cap - 1);
	return i;
}

static void ri_put(struct row_index *x, const struct obj *o, size_t pos)
{
	x->s[ri_slot(x, o)] = (struct row_slot){ o, pos };
}

/* Linear probing with backward-shift deletion (no tombstones), as the store's indexes. */
static void ri_del(struct row_index *x, const struct obj *o)
{
	if (x->cap == 0)
		return;
	size_t mask = x->cap - 1, i = ri_slot(x, o);
	if (x->s[i].key == NULL)
		return;
	for (size_t j = i;;) {
		x->s[i].key = NULL;
		for (;;) {
			j = (j + 1) & mask;
			if (x->s[j].key == NULL)
				return;
			size_t home = ri_home(x, x->s[j].key);
			bool stays = i <= j ? (home > i && home <= j) : (home > i || home <= j);
			if (!stays)
				break;
		}
		x->s[i] = x->s[j];
		i = j;
	}
}

/* Indexes the rows of a fresh build. */
static void ri_build(struct row_index *x, struct obj *const *rows, size_t n)
{
	size_t cap = 64;
	while (cap < n * 2)
		cap *= 2;
	if (cap != x->cap) {
		free(x->s);
		x->s = xcalloc(cap, sizeof *x->s);
		x->cap = cap;
	} else {
		memset(x->s, 0, cap * sizeof *x->s);
	}
	x->shift = 0;
	for (size_t i = 0; i < n; i++)
		ri_put(x, rows[i], i);
}

static void ri_free(struct row_index *x)
{
	free(x->s);
	*x = (struct row_index){ 0 };
}

/* The row of o, or SIZE_MAX when it has none (filtered out, another namespace, added since the build). */
static size_t row_of(struct tview *t, const struct obj *o)
{
	struct row_index *x = &t->ix;
	if (x->cap == 0 || o == NULL)
		return SIZE_MAX;
	struct row_slot *e = &x->s[ri_slot(x, o)];
	if (e->key == NULL)
		return SIZE_MAX;
	size_t p = e->pos;
	for (size_t d = 0; d <= x->shift && d <= p; d++) {
		if (p - d < t->n && t->rows[p - d] == o) {
			e->pos = p - d;
			return p - d;
		}
	}
	return SIZE_MAX; /* not reached: an entry is removed with its row */
}

/* ---- filters ---- */

void table_filter_free(struct table_filter *f)
{
	free(f->text);
	for (int i = 0; i < f->nlabels; i++) {
		free(f->labels[i].key);
		free(f->labels[i].value);
	}
	free(f->labels);
	memset(f, 0, sizeof *f);
}

int table_filter_parse(const char *s, struct table_filter *f, char **err)
{
	memset(f, 0, sizeof *f);
	while (*s == ' ')
		s++;
	if (*s == '\0')
		return 0;
	f->active = true;
	if (strncmp(s, "-l", 2) == 0 && (s[2] == ' ' || s[2] == '\0')) {
		s += 2;
		while (*s == ' ')
			s++;
		if (*s == '\0') {
			*err = xstrdup("-l needs a label selector (key=value,key!=value,key)");
			table_filter_free(f);
			return -1;
		}
		char *copy = xstrdup(s);
		for (char *save = NULL, *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
			while (*t == ' ')
				t++;
			size_t tl = strlen(t);
			while (tl && t[tl - 1] == ' ')
				t[--tl] = '\0';
			struct table_label_req r = { 0 };
			char *ne = strstr(t, "!="), *eq = strchr(t, '=');
			if (ne) {
				r.key = xstrndup(t, (size_t)(ne - t));
				r.value = xstrdup(ne + 2);
				r.neg = true;
			} else if (eq) {
				const char *v = eq[1] == '=' ? eq + 2 : eq + 1;
				r.key = xstrndup(t, (size_t)(eq - t));
				r.value = xstrdup(v);
			} else if (t[0] == '!') {
				r.key = xstrdup(t + 1);
				r.neg = true;
			} else {
				r.key = xstrdup(t);
			}
			if (r.key[0] == '\0') {
				*err = xasprintf("bad label requirement '%s'", t); /* t points into copy */
				free(r.key);
				free(r.value);
				free(copy);
				table_filter_free(f);
				return -1;
			}
			f->labels = xreallocarray(f->labels, (size_t)f->nlabels + 1, sizeof *f->labels);
			f->labels[f->nlabels++] = r;
		}
		free(copy);
		return 0;
	}
	if (*s == '!') {
		f->negate = true;
		s++;
	}
	f->text = xstrdup(s);
	return 0;
}

bool table_filter_match(const struct table_filter *f, const struct obj *o, const char *rowtext)
{
	if (!f->active)
		return true;
	for (int i = 0; i < f->nlabels; i++) {
		const struct table_label_req *r = &f->labels[i];
		const char *v = obj_label(o, r->key);
		bool ok = r->value ? (v && strcmp(v, r->value) == 0) : v != NULL;
		if (ok == r->neg)
			return false;
	}
	if (f->text == NULL)
		return true;
	bool hit = strcasestr(rowtext ? rowtext : "", f->text) != NULL;
	return hit != f->negate;
}

/* ---- cells ---- */

/* A cell's text (model/columns.c) and its colour from the tone. */
/* now: the wall clock second the cells are drawn for (ages), read once per frame, sort or filter pass. */
static void cell_draw(const struct column *col, const struct store *st, int64_t now, const struct obj *o, char *buf,
		      size_t len, int *attr)
{
	struct col_ctx c = { .st = st, .now = now };
	buf[0] = '\0';
	switch (col->cell(&c, o, buf, len)) {
	case COL_TONE_STATUS: {
		char word[32];
		size_t n = strcspn(buf, " ");
		snprintf(word, sizeof word, "%.*s", (int)(n < sizeof word ? n : sizeof word - 1), buf);
		*attr = theme_status_attr(word);
		break;
	}
	case COL_TONE_WAIT:
		*attr = theme_attr(THEME_WAIT);
		break;
	case COL_TONE_BAD:
		*attr = theme_attr(THEME_BAD);
		break;
	case COL_TONE_NONE:
		break;
	}
}

/* ---- layout ---- */

int table_layout(const struct column *cols, size_t ncols, const bool *shown, char *const *cells, size_t nrows,
		 int width, int sort_col, int *w)
{
	int total = 0, nshown = 0;
	for (size_t c = 0; c < ncols; c++) {
		w[c] = 0;
		if (!shown[c])
			continue;
		int m = draw_width(cols[c].title);
		if (m < cols[c].minw)
			m = cols[c].minw;
		for (size_t r = 0; r < nrows; r++) {
			int cw = draw_width(cells[r * ncols + c]);
			if (cw > m)
				m = cw;
		}
		if (cols[c].maxw && m > cols[c].maxw)
			m = cols[c].maxw;
		if ((int)c == sort_col && m < draw_width(cols[c].title) + 1)
			m = draw_width(cols[c].title) + 1; /* the sort arrow */
		w[c] = m;
		total += m;
		nshown++;
	}
	total += nshown > 0 ? (nshown - 1) * 2 : 0; /* two spaces between columns */
	/* too wide: shrink the widest columns first, never below their title or 4 columns */
	while (total > width) {
		size_t widest = ncols;
		for (size_t c = 0; c < ncols; c++) {
			int floor = draw_width(cols[c].title) + ((int)c == sort_col);
			if (floor > 4 && cols[c].maxw > 20)
				floor = 4; /* wide free-text columns give way first */
			if (w[c] > floor && (widest == ncols || w[c] > w[widest]))
				widest = c;
		}
		if (widest == ncols)
			break;
		w[widest]--;
		total--;
	}
	return total;
}

/* ---- index ---- */

static struct {
	const struct store *st;
	int64_t now;
	const struct column *col;
	bool desc;
	const struct column *name_col;
} sort_ctx;

static int cmp_text(const struct column *col, const struct obj *a, const struct obj *b)
{
	char ba[CELL_MAX], bb[CELL_MAX];
	int attr = 0;
	cell_draw(col, sort_ctx.st, sort_ctx.now, a, ba, sizeof ba, &attr);
	cell_draw(col, sort_ctx.st, sort_ctx.now, b, bb, sizeof bb, &attr);
	return strcmp(ba, bb);
}

static int cmp_rows(const void *pa, const void *pb)
{
	const struct obj *a = *(struct obj *const *)pa, *b = *(struct obj *const *)pb;
	const struct column *col = sort_ctx.col;
	int r = col->cmp ? col->cmp(a, b) : cmp_text(col, a, b);
	if (sort_ctx.desc)
		r = -r;
	if (r == 0) { /* stable, predictable order for ties: namespace, name, source */
		r = strcmp(a->ns, b->ns);
		if (r == 0)
			r = strcmp(a->name, b->name);
		if (r == 0)
			r = a->src->id - b->src->id;
	}
	return r;
}

static void row_text(const struct table_spec *spec, const struct store *st, int64_t now, const struct obj *o,
		     char *buf, size_t len)
{
	size_t off = 0;
	buf[0] = '\0';
	for (size_t c = 0; c < spec->tab->ncols && off + 2 < len; c++) {
		int attr = 0;
		if (spec->tab->cols[c].flags & COL_GET_ONLY)
			continue;
		cell_draw(&spec->tab->cols[c], st, now, o, buf + off, len - off, &attr);
		off += strlen(buf + off);
		if (off + 1 < len)
			buf[off++] = ' ';
		buf[off] = '\0';
	}
}

static bool ns_match(const struct obj *o, const char *ns)
{
	return ns == NULL || o->ns == ns || strcmp(o->ns, ns) == 0;
}

static void rebuild(struct tview *t)
{
	uint64_t t0 = util_now_ms();
	t->builds++;
	const struct store *st = ui_store();
	const char *ns = ui_namespace();
	t->n = 0;
	int64_t wall = util_wall_s();
	char text[2048];
	size_t formatted = 0;
	struct match_cache *mc = &t->mc;
	if (t->filt.text) {
		size_t total = 0;
		for (size_t s = 0; s < source_count(); s++) {
			size_t n;
			store_objs(st, source_get(s), t->spec->kind, &n);
			total += n;
		}
		if (mc->full || mc->cap == 0 || util_now_ms() - mc->since >= MATCH_CACHE_MS ||
		    (mc->used + total) * 4 > mc->cap * 3)
			mc_reset(mc, total + total / 2 + 1);
	} else if (mc->cap) {
		mc_reset(mc, 0);
	}
	for (size_t s = 0; s < source_count(); s++) {
		size_t n;
		struct obj *const *objs = store_objs(st, source_get(s), t->spec->kind, &n);
		if (t->n + n > t->cap) {
			t->cap = (t->n + n) * 5 / 4 + 16;
			t->rows = xreallocarray(t->rows, t->cap, sizeof *t->rows);
		}
		for (size_t i = 0; i < n; i++) {
			const struct obj *o = objs[i];
			if (!ns_match(o, ns))
				continue;
			if (t->filt.text) {
				int c = mc_get(mc, o);
				if (c == MC_UNKNOWN) {
					formatted++;
					row_text(t->spec, st, wall, o, text, sizeof text);
					c = table_filter_match(&t->filt, o, text) ? MC_YES : MC_NO;
					mc_put(mc, o, c);
				}
				if (c == MC_NO)
					continue;
			} else if (t->filt.active && !table_filter_match(&t->filt, o, NULL)) {
				continue;
			}
			t->rows[t->n++] = objs[i];
		}
	}
	sort_ctx.st = st;
	sort_ctx.now = wall;
	sort_ctx.col = &t->spec->tab->cols[t->sort_col];
	sort_ctx.desc = t->desc;
	if (t->n > 1)
		qsort(t->rows, t->n, sizeof *t->rows, cmp_rows);
	if (t->sel_obj) {
		for (size_t i = 0; i < t->n; i++) {
			if (t->rows[i] == t->sel_obj) {
				t->sel = i;
				break;
			}
		}
	}
	if (t->sel >= t->n)
		t->sel = t->n ? t->n - 1 : 0;
	t->sel_obj = t->n ? t->rows[t->sel] : NULL;
	ri_build(&t->ix, t->rows, t->n);
	t->stale = false;
	log_debug("ui: %s index rebuilt: %zu rows (%zu rows formatted for the filter) in %llu ms", t->spec->name,
		  t->n, formatted, (unsigned long long)(util_now_ms() - t0));
	t->last_build = util_now_ms();
	t->built_ns = ns ? ns : "";
	t->built_sources = source_count();
}

/* The namespace scope or the set of sources changed since the index was built. */
static void check_scope(struct tview *t)
{
	const char *ns = ui_namespace();
	if (strcmp(t->built_ns, ns ? ns : "") != 0 || t->built_sources != source_count())
		t->stale = true;
}

static void on_timer(void *arg)
{
	struct view *v = arg;
	struct tview *t = v->priv;
	t->timer = NULL;
	view_dirty(v);
}

static void arm_timer(struct view *v, uint64_t ms)
{
	struct tview *t = v->priv;
	if (t->timer == NULL)
		t->timer = loop_timer_add(ms, on_timer, v);
}

/* Whether a replaced object keeps its place in the index: no filter to re-evaluate (a text filter's verdict on
 * the new object comes from the match cache at the next build), and the sort column orders it as before (a
 * status change in a list sorted by name, the common churn, needs no re-sort). */
static bool keeps_place(struct tview *t, const struct obj *old, const struct obj *new_)
{
	if (t->filt.active || t->filt.text || t->stale)
		return false;
	const struct column *col = &t->spec->tab->cols[t->sort_col];
	sort_ctx.st = ui_store();
	sort_ctx.now = util_wall_s();
	return (col->cmp ? col->cmp(old, new_) : cmp_text(col, old, new_)) == 0;
}

/* Whether row i was on screen at the last frame: a change to a row elsewhere needs no frame of the list. */
static bool row_visible(const struct tview *t, size_t i)
{
	return i != SIZE_MAX && i >= t->top && i < t->top + (size_t)t->page;
}

/* A change to row `at`, on screen, asks for a frame: of that row alone unless the view was already marked by
 * something else (then whole). */
static void mark_row(struct view *v, struct tview *t, size_t at)
{
	bool only_rows = !v->dirty || (t->npend > 0 && t->pend_marks == v->marks);
	view_dirty(v);
	if (!only_rows || t->pend_over || t->npend == PEND_MAX) {
		t->pend_over = true;
		return;
	}
	int i = 0;
	while (i < t->npend && t->pend[i] != at)
		i++;
	if (i == t->npend)
		t->pend[t->npend++] = at;
	t->pend_marks = v->marks;
}

/* While a source lists this kind, the loading line counts what arrives: every change shows. */
static bool loading_shown(const struct tview *t)
{
	for (size_t s = 0; s < source_count(); s++) {
		const struct watch_health *h = &source_get(s)->health[t->spec->kind];
		if (h->state == WATCH_LOADING && h->failed == WATCH_IDLE)
			return true;
	}
	return false;
}

static void store_changed(struct view *v, enum obj_kind kind, const struct obj *old, const struct obj *new_)
{
	struct tview *t = v->priv;
	if (kind != t->spec->kind) {
		if (t->spec->also & (1u << kind)) {
			/* the rows show fields of this kind: the VM list its VMI's (same name); in other lists an object
			 * that came or went may alter rows of other names (a pod's VMI column) */
			const struct obj *o = new_ ? new_ : old;
			const struct obj *row = NULL;
			if (t->spec->kind == OBJ_VM || (old && new_)) {
				row = store_find(ui_store(), o->src, t->spec->kind, o->ns, o->name);
				mc_put(&t->mc, row, MC_UNKNOWN);
			} else {
				t->mc.full = true;
			}
			if (t->filt.text || (t->spec->tab->cols[t->sort_col].flags & COL_JOINED))
				t->stale = true; /* the row may now match the filter, or no longer, or move */
			/* the VM list: only the VM of the VMI's name shows it; other lists join by UID (drawn whole) */
			size_t at = t->spec->kind == OBJ_VM ? row_of(t, row) : SIZE_MAX;
			if (t->spec->kind != OBJ_VM || t->stale || loading_shown(t))
				view_dirty(v);
			else if (row_visible(t, at))
				mark_row(v, t, at);
		}
		return;
	}
	bool kept = old && new_ && keeps_place(t, old, new_);
	if (new_)
		mc_put(&t->mc, new_, MC_UNKNOWN);
	size_t at = SIZE_MAX;
	if (old && new_) {
		/* a replaced object: fix its pointer in place (the old one is freed after this returns) */
		struct obj *nw = (struct obj *)new_;
		/* changed_ms is UI bookkeeping on the stored object: the row flashes when its state moved */
		if (t->spec->state_changed && t->spec->state_changed(old, new_))
			nw->changed_ms = (uint32_t)loop_now() | 1; /* truncated; never 0 (0: never changed) */
		else if (nw->changed_ms == 0)
			nw->changed_ms = old->changed_ms;
		at = row_of(t, old);
		if (at != SIZE_MAX) {
			t->rows[at] = nw;
			ri_del(&t->ix, old);
			ri_put(&t->ix, nw, at);
		}
		if (t->sel_obj == old)
			t->sel_obj = nw;
	} else if (old) {
		at = row_of(t, old);
		if (at != SIZE_MAX) {
			memmove(&t->rows[at], &t->rows[at + 1], (t->n - at - 1) * sizeof *t->rows);
			t->n--;
			ri_del(&t->ix, old);
			t->ix.shift++; /* the entries of the rows after it are one place too far down */
			if (at < t->sel && t->sel > 0)
				t->sel--;
		}
		if (t->sel_obj == old)
			t->sel_obj = NULL;
		if (t->sel >= t->n)
			t->sel = t->n ? t->n - 1 : 0;
	}
	if (!kept)
		t->stale = true;
	/* a row kept in place is drawn again only when it is on screen, and alone */
	if (t->stale || loading_shown(t))
		view_dirty(v);
	else if (row_visible(t, at))
		mark_row(v, t, at);
}

/* ---- drawing ---- */

static bool col_shown(const struct column *c)
{
	if (c->flags & COL_GET_ONLY)
		return false;
	if (c->flags & COL_ALL_NS)
		return ui_shown_namespace() == NULL;
	if (c->flags & COL_MULTI_SOURCE)
		return sources_live_count() > 1;
	return true;
}

static void draw_title(struct tview *t, const struct region *r)
{
	char title[256];
	const char *ns = ui_shown_namespace();
	int n = snprintf(title, sizeof title, " %s(%s)[%zu] ", t->spec->title, ns ? ns : "all", t->n);
	if (t->filt.active && n > 0 && (size_t)n < sizeof title) {
		char ftxt[128] = "";
		if (t->filt.nlabels) {
			size_t o = 0;
			for (int i = 0; i < t->filt.nlabels && o + 2 < sizeof ftxt; i++)
				o += (size_t)snprintf(ftxt + o, sizeof ftxt - o, "%s%s%s%s", i ? "," : "-l ",
						      t->filt.labels[i].key,
						      t->filt.labels[i].value ? (t->filt.labels[i].neg ? "!=" : "=") : "",
						      t->filt.labels[i].value ? t->filt.labels[i].value : "");
		} else {
			snprintf(ftxt, sizeof ftxt, "%s%s", t->filt.negate ? "!" : "", t->filt.text);
		}
		snprintf(title + n, sizeof title - (size_t)n, "</%s> ", ftxt);
	}
	draw_title_bar(r->y, r->x, r->w, theme_attr(THEME_BORDER), theme_attr(THEME_TITLE_ACTIVE), title);
}

static void loading_line(struct tview *t, char *buf, size_t len)
{
	buf[0] = '\0';
	for (size_t s = 0; s < source_count(); s++) {
		struct source *src = source_get(s);
		const struct watch_health *h = &src->health[t->spec->kind];
		if (h->state == WATCH_LOADING && h->failed == WATCH_IDLE) { /* after a failure: the body says which */
			snprintf(buf, len, "loading %ss from %s: %zu received...", obj_kind_name(t->spec->kind), src->name,
				 h->loaded);
			return;
		}
	}
}

/* Why the list is empty, for one source (or, src NULL, for all of them, each live): unreachable, forbidden,
 * failing otherwise, still loading, or truly empty; four different texts, so that a server that is down never
 * reads as a namespace without VMs. */
static void empty_line(const struct tview *t, const struct source *src, char *buf, size_t len)
{
	const char *what = t->spec->title, *ns = ui_shown_namespace();
	const struct watch_health *h = src ? &src->health[t->spec->kind] : NULL;
	enum watch_state s = h ? (h->state == WATCH_LOADING || h->state == WATCH_IDLE ? h->failed : h->state) : WATCH_LIVE;
	char *msg = util_escape_display(h && h->message ? h->message : "");
	/* the source is named when there are several */
	char who[160] = "";
	if (src && sources_live_count() > 1)
		snprintf(who, sizeof who, "%s: ", src->name);
	switch (s) {
	case WATCH_RECONNECTING: {
		uint64_t now = loop_now();
		if (h->state == WATCH_RECONNECTING && h->next_retry_ms > now)
			snprintf(buf, len, "%sunreachable, retrying in %llus: %s", who,
				 (unsigned long long)((h->next_retry_ms - now + 999) / 1000), msg);
		else
			snprintf(buf, len, "%sunreachable, retrying now: %s", who, msg);
		break;
	}
	case WATCH_FORBIDDEN:
		snprintf(buf, len, "%sforbidden: this user may not list %s%s%s: %s", who, what, ns ? " in namespace " : "",
			 ns ? ns : "", msg);
		break;
	case WATCH_ERROR:
		snprintf(buf, len, "%scannot list %s: %s", who, what, msg);
		break;
	case WATCH_IDLE:
	case WATCH_LOADING:
		snprintf(buf, len, "%sloading %s from %s...", who, what, src->name);
		break;
	default:
		snprintf(buf, len, "no %s%s%s%s", what, t->filt.active ? " matching the filter" : "",
			 ns ? " in namespace " : " in any namespace", ns ? ns : "");
		break;
	}
	free(msg);
}

static bool region_same(const struct region *a, const struct region *b)
{
	return a->y == b->y && a->x == b->x && a->h == b->h && a->w == b->w;
}

/* Row i of the window (its cells in t->cells) at line y. */
static void draw_row(struct tview *t, const struct region *r, size_t i, const int *w, uint64_t now,
		     uint64_t *next_flash_end)
{
	const struct table_spec *spec = t->spec;
	size_t nc = spec->tab->ncols;
	int y = r->y + 2 + (int)i;
	const struct obj *o = t->rows[t->top + i];
	bool selected = t->top + i == t->sel;
	/* changed_ms holds loop_now()'s low 32 bits: the age is their unsigned difference (right across a wrap) */
	uint32_t age = (uint32_t)now - o->changed_ms;
	bool flash = o->changed_ms && age < TABLE_FLASH_MS;
	uint64_t flash_end = now + (TABLE_FLASH_MS - age);
	if (flash && (*next_flash_end == 0 || flash_end < *next_flash_end))
		*next_flash_end = flash_end;
	int rowattr = selected ? theme_attr(THEME_SELECTED) : flash ? theme_attr(THEME_FLASH) : theme_attr(THEME_NORMAL);
	draw_fill(y, r->x, r->w, rowattr);
	int x = r->x + 1;
	for (size_t c = 0; c < nc; c++) {
		if (!w[c])
			continue;
		int a = t->cell_attr[i * nc + c];
		draw_cell(y, x, w[c], selected || flash || !a ? rowattr : a, t->cells + (i * nc + c) * CELL_MAX,
			  spec->tab->cols[c].right);
		x += w[c] + 2;
	}
}

/* Formats row i of the window into t->cells. */
static void format_row(struct tview *t, size_t i, const bool *shown, int64_t wall)
{
	const struct table_spec *spec = t->spec;
	size_t nc = spec->tab->ncols;
	const struct store *st = ui_store();
	for (size_t c = 0; c < nc; c++) {
		char *b = t->cells + (i * nc + c) * CELL_MAX;
		t->cell_attr[i * nc + c] = 0;
		b[0] = '\0';
		if (shown[c])
			cell_draw(&spec->tab->cols[c], st, wall, t->rows[t->top + i], b, CELL_MAX, &t->cell_attr[i * nc + c]);
	}
}

static void draw(struct view *v, const struct region *r)
{
	struct tview *t = v->priv;
	const struct table_spec *spec = t->spec;
	uint64_t now = loop_now();
	int64_t wall = util_wall_s();
	/* only rows marked by store_changed since the last frame, and nothing else: a partial frame if the window
	 * is as it was */
	bool partial = t->drawn && t->npend > 0 && !t->pend_over && t->pend_marks == v->marks;
	int npend = t->npend;
	size_t pend[PEND_MAX];
	memcpy(pend, t->pend, sizeof pend);
	t->npend = 0;
	t->pend_over = false;
	t->drawn = false;
	check_scope(t);
	if (t->stale) {
		uint64_t due = t->last_build + 1000 / TABLE_RESORT_HZ;
		/* an empty index is rebuilt at once: the first page must paint without waiting */
		if (t->last_build == 0 || now >= due || t->n == 0)
			rebuild(t);
		else
			arm_timer(v, due - now);
		partial = false;
	}
	if (r->h < 1)
		return;
	if (!partial)
		draw_title(t, r);
	if (r->h < 2)
		return;
	char progress[160];
	loading_line(t, progress, sizeof progress);
	int rows_h = r->h - 2 - (progress[0] ? 1 : 0);
	if (rows_h < 0)
		rows_h = 0;
	t->page = rows_h;
	t->body_y = 2;
	/* window: keep the selection visible */
	if (t->sel < t->top)
		t->top = t->sel;
	if (rows_h > 0 && t->sel >= t->top + (size_t)rows_h)
		t->top = t->sel - (size_t)rows_h + 1;
	if (t->top + (size_t)rows_h > t->n)
		t->top = t->n > (size_t)rows_h ? t->n - (size_t)rows_h : 0;
	size_t nvis = t->n - t->top < (size_t)rows_h ? t->n - t->top : (size_t)rows_h;
	size_t nc = spec->tab->ncols;
	size_t ncs = nc < 32 ? nc : 32; /* columns a frame knows (every table has far fewer) */
	bool shown[32];
	int w[32];
	for (size_t c = 0; c < ncs; c++)
		shown[c] = col_shown(&spec->tab->cols[c]);
	if (partial)
		partial = !progress[0] && region_same(&t->last_r, r) && t->last_top == t->top && t->last_sel == t->sel &&
			  t->last_n == t->n && t->last_nvis == nvis && t->last_s == wall &&
			  memcmp(t->last_shown, shown, ncs * sizeof *shown) == 0;
	for (int k = 0; partial && k < npend; k++)
		partial = pend[k] >= t->top && pend[k] < t->top + nvis;
	if (nvis * nc + 1 > t->cells_cap) {
		t->cells_cap = nvis * nc + 1;
		t->cells = xreallocarray(t->cells, t->cells_cap, CELL_MAX);
		t->cell_attr = xreallocarray(t->cell_attr, t->cells_cap, sizeof *t->cell_attr);
	}
	if (partial) {
		for (int k = 0; k < npend; k++)
			format_row(t, pend[k] - t->top, shown, wall);
	} else {
		for (size_t i = 0; i < nvis; i++)
			format_row(t, i, shown, wall);
	}
	char *cells[nvis * nc + 1];
	for (size_t k = 0; k <= nvis * nc; k++)
		cells[k] = t->cells + k * CELL_MAX;
	table_layout(spec->tab->cols, nc, shown, cells, nvis, r->w - 2, t->sort_col, w);
	uint64_t next_flash_end = 0;
	if (partial && memcmp(t->last_w, w, ncs * sizeof *w) == 0) {
		/* the same columns: the marked rows alone */
		for (int k = 0; k < npend; k++)
			draw_row(t, r, pend[k] - t->top, w, now, &next_flash_end);
	} else {
		/* header */
		int hattr = theme_attr(THEME_TABLE_HEADER);
		draw_fill(r->y + 1, r->x, r->w, theme_attr(THEME_NORMAL));
		int x = r->x + 1;
		for (size_t c = 0; c < nc; c++) {
			if (!w[c])
				continue;
			char head[64];
			const char *arrow = (int)c == t->sort_col ? (t->desc ? "↓" : "↑") : "";
			snprintf(head, sizeof head, "%s%s", spec->tab->cols[c].title, arrow);
			draw_cell(r->y + 1, x, w[c], hattr, head, spec->tab->cols[c].right);
			x += w[c] + 2;
		}
		for (int i = 0; i < rows_h; i++) {
			if ((size_t)i < nvis)
				draw_row(t, r, (size_t)i, w, now, &next_flash_end);
			else
				draw_fill(r->y + 2 + i, r->x, r->w, theme_attr(THEME_NORMAL));
		}
	}
	if (progress[0])
		draw_cell(r->y + r->h - 1, r->x, r->w, theme_attr(THEME_WAIT), progress, false);
	if (t->n == 0 && rows_h > 0) {
		/* say why the list is empty rather than show nothing: a line per source that is not live, or one that
		 * says the sources have none */
		char why[768];
		int y = r->y + 2;
		for (size_t s = 0; s < source_count() && y < r->y + 2 + rows_h; s++) {
			const struct source *src = source_get(s);
			if (src->closed || src->health[spec->kind].state == WATCH_LIVE)
				continue;
			empty_line(t, src, why, sizeof why);
			const struct watch_health *h = &src->health[spec->kind];
			bool bad = (h->state != WATCH_LOADING && h->state != WATCH_IDLE) || h->failed != WATCH_IDLE;
			y += draw_wrap(y, r->x + 1, r->w - 2, r->y + 2 + rows_h - y, 2, theme_attr(bad ? THEME_BAD : THEME_WAIT),
				       why);
		}
		if (y == r->y + 2) {
			empty_line(t, NULL, why, sizeof why);
			draw_text(y, r->x + 1, r->w - 1, theme_attr(THEME_DIM), why);
		}
	}
	static bool first_rows_logged;
	if (nvis && !first_rows_logged) {
		first_rows_logged = true;
		log_info("ui: first rows drawn %llu ms after start (%zu rows in the index)",
			 (unsigned long long)(util_now_ms() - ui_start_ms()), t->n);
	}
	t->drawn = nc <= 32;
	t->last_r = *r;
	t->last_top = t->top;
	t->last_sel = t->sel;
	t->last_n = t->n;
	t->last_nvis = nvis;
	t->last_s = wall;
	memcpy(t->last_shown, shown, ncs * sizeof *shown);
	memcpy(t->last_w, w, ncs * sizeof *w);
	if (next_flash_end)
		arm_timer(v, next_flash_end > now ? next_flash_end - now + 1 : 1);
}

/* ---- keys ---- */

static void move_sel(struct view *v, long delta)
{
	struct tview *t = v->priv;
	check_scope(t);
	if (t->stale)
		rebuild(t); /* a key acts on the current rows, not the last frame's */
	if (t->n == 0)
		return;
	long s = (long)t->sel + delta;
	if (s < 0)
		s = 0;
	if (s >= (long)t->n)
		s = (long)t->n - 1;
	t->sel = (size_t)s;
	t->sel_obj = t->rows[t->sel];
	view_dirty(v);
}

static enum view_result k_down(struct view *v)
{
	move_sel(v, 1);
	return VIEW_DONE;
}
static enum view_result k_up(struct view *v)
{
	move_sel(v, -1);
	return VIEW_DONE;
}
static enum view_result k_pgdn(struct view *v)
{
	struct tview *t = v->priv;
	move_sel(v, t->page > 1 ? t->page - 1 : 1);
	return VIEW_DONE;
}
static enum view_result k_pgup(struct view *v)
{
	struct tview *t = v->priv;
	move_sel(v, -(t->page > 1 ? t->page - 1 : 1));
	return VIEW_DONE;
}
static enum view_result k_home(struct view *v)
{
	move_sel(v, -(long)((struct tview *)v->priv)->n);
	return VIEW_DONE;
}
static enum view_result k_end(struct view *v)
{
	move_sel(v, (long)((struct tview *)v->priv)->n);
	return VIEW_DONE;
}

static struct obj *selected_vm(struct view *v)
{
	struct tview *t = v->priv;
	struct obj *o = table_view_selected(v);
	if (o == NULL)
		return NULL;
	return t->spec->row_vm ? t->spec->row_vm(ui_store(), o) : NULL;
}

static enum view_result k_enter(struct view *v)
{
	struct obj *o = table_view_selected(v);
	if (o == NULL)
		return VIEW_DONE;
	struct obj *vm = selected_vm(v);
	if (vm)
		ui_open_vm(vm);
	else
		ui_open_yaml(o);
	return VIEW_DONE;
}

static enum view_result k_yaml(struct view *v)
{
	struct obj *o = table_view_selected(v);
	if (o)
		ui_open_yaml(o);
	return VIEW_DONE;
}


static enum view_result k_describe(struct view *v)
{
	struct obj *o = table_view_selected(v);
	if (o)
		ui_open_describe(o);
	return VIEW_DONE;
}

static const struct view_key table_keys[] = {
	{ 'j', "j", "next row", k_down },
	{ VKEY(KEY_DOWN), "Down", "next row", k_down },
	{ 'k', "k", "previous row", k_up },
	{ VKEY(KEY_UP), "Up", "previous row", k_up },
	{ VKEY(KEY_NPAGE), "PgDn", "next page", k_pgdn },
	{ VKEY_CTRL('f'), "ctrl-f", "next page", k_pgdn },
	{ VKEY(KEY_PPAGE), "PgUp", "previous page", k_pgup },
	{ VKEY_CTRL('b'), "ctrl-b", "previous page", k_pgup },
	{ 'g', "g", "first row", k_home },
	{ VKEY(KEY_HOME), "Home", "first row", k_home },
	{ 'G', "G", "last row", k_end },
	{ VKEY(KEY_END), "End", "last row", k_end },
	{ '\r', "enter", "open the VM view of the row's VM (YAML for other rows)", k_enter },
	{ 'y', "y", "show the object as YAML", k_yaml },
	{ 'e', "e", "describe the object: fields, conditions, volumes, owners, events (kubectl describe)", k_describe },
	{ 'N', "shift-N", "sort by NAME (again: reverse)", NULL },
	{ 'P', "shift-P", "sort by NAMESPACE", NULL },
	{ 'U', "shift-U", "sort by STATUS / PHASE (S is stop)", NULL },
	{ 'A', "shift-A", "sort by AGE / LAST SEEN", NULL },
	{ 'O', "shift-O", "sort by NODE", NULL },
	{ 'R', "shift-R", "sort by READY / RESTARTS", NULL },
	{ 'T', "shift-T", "sort by RUNSTRATEGY / TYPE", NULL },
	{ 'I', "shift-I", "sort by IP / VMI", NULL },
	{ 'C', "shift-C", "sort by COUNT", NULL },
	{ 'E', "shift-E", "sort by REASON", NULL },
	{ 0, NULL, NULL, NULL },
};

static enum view_result key(struct view *v, int k)
{
	struct tview *t = v->priv;
	for (size_t i = 0; i < view_npanes; i++) {
		if (k != view_panes[i].key)
			continue;
		struct obj *vm = view_panes[i].row ? table_view_selected(v) : selected_vm(v);
		if (vm == NULL) {
			ui_error(view_panes[i].row ? "no row selected" : "no VM for this row");
		} else if (view_panes[i].open == NULL) {
			ui_error("%s is not available in this build", view_panes[i].label);
		} else {
			char *err = NULL;
			struct view *p = view_panes[i].open(vm, &err);
			if (p)
				view_pane_open(p);
			else
				ui_error("%s: %s", view_panes[i].label, err ? err : "failed");
			free(err);
		}
		return VIEW_DONE;
	}
	if (k >= 'A' && k <= 'Z') {
		for (size_t c = 0; c < t->spec->tab->ncols; c++) {
			if (t->spec->tab->cols[c].sort_key != k || !col_shown(&t->spec->tab->cols[c]))
				continue;
			if (t->sort_col == (int)c)
				t->desc = !t->desc;
			else
				t->sort_col = (int)c, t->desc = false;
			t->stale = true;
			t->last_build = 0; /* the user asked: re-sort now */
			view_dirty(v);
			return VIEW_DONE;
		}
	}
	return VIEW_PASS;
}

static enum view_result mouse(struct view *v, const struct view_mouse *m)
{
	struct tview *t = v->priv;
	switch (m->kind) {
	case VMOUSE_WHEEL_UP:
		move_sel(v, -3);
		return VIEW_DONE;
	case VMOUSE_WHEEL_DOWN:
		move_sel(v, 3);
		return VIEW_DONE;
	case VMOUSE_PRESS:
	case VMOUSE_CLICK:
	case VMOUSE_DOUBLE: {
		int row = m->y - t->body_y;
		if (row < 0 || row >= t->page || t->top + (size_t)row >= t->n)
			return VIEW_DONE;
		t->sel = t->top + (size_t)row;
		t->sel_obj = t->rows[t->sel];
		view_dirty(v);
		uint64_t now = util_now_ms();
		bool press = m->kind == VMOUSE_PRESS || m->kind == VMOUSE_CLICK; /* a fast click comes merged */
		bool twice = press && t->last_press_row == t->sel && now - t->last_press_ms < 400;
		if (press) {
			t->last_press_ms = twice ? 0 : now;
			t->last_press_row = t->sel;
		}
		if (m->kind == VMOUSE_DOUBLE || twice)
			return k_enter(v);
		return VIEW_DONE;
	}
	default:
		return VIEW_PASS;
	}
}

static void title(struct view *v, char *buf, size_t len)
{
	struct tview *t = v->priv;
	snprintf(buf, len, "%s", t->spec->title);
}

static void tick(struct view *v)
{
	view_dirty(v); /* ages move */
}

static void destroy(struct view *v)
{
	struct tview *t = v->priv;
	loop_timer_cancel(t->timer);
	table_filter_free(&t->filt);
	mc_reset(&t->mc, 0);
	ri_free(&t->ix);
	free(t->cells);
	free(t->cell_attr);
	free(t->rows);
	free(t);
}

static const struct view_ops table_ops = {
	.name = "list",
	.draw = draw,
	.key = key,
	.mouse = mouse,
	.title = title,
	.store_changed = store_changed,
	.tick = tick,
	.destroy = destroy,
	.target_vm = selected_vm,
	.keys = table_keys,
};

const struct view_key *table_view_keys(void)
{
	return table_keys;
}

struct view *table_view_new(const struct table_spec *spec)
{
	struct tview *t = xcalloc(1, sizeof *t);
	t->spec = spec;
	t->sort_col = spec->tab->default_sort;
	t->desc = spec->default_desc;
	t->stale = true;
	t->built_ns = "";
	return view_new(&table_ops, t);
}

const struct table_spec *table_view_spec(const struct view *v)
{
	return v && v->ops == &table_ops ? ((const struct tview *)v->priv)->spec : NULL;
}

struct obj *table_view_selected(struct view *v)
{
	struct tview *t = v->priv;
	check_scope(t);
	if (t->stale)
		rebuild(t);
	return t->n && t->sel < t->n ? t->rows[t->sel] : NULL;
}

int table_view_set_filter(struct view *v, const char *text, char **err)
{
	struct tview *t = v->priv;
	struct table_filter f;
	if (table_filter_parse(text, &f, err) < 0)
		return -1;
	table_filter_free(&t->filt);
	t->filt = f;
	t->mc.full = true; /* verdicts of the previous filter */
	t->stale = true;
	t->last_build = 0;
	t->sel = 0;
	t->top = 0;
	view_dirty(v);
	return 0;
}

void table_view_select(struct view *v, const struct obj *o)
{
	struct tview *t = v->priv;
	rebuild(t);
	for (size_t i = 0; i < t->n; i++) {
		if (t->rows[i] == o) {
			t->sel = i;
			t->sel_obj = t->rows[i];
		}
	}
	view_dirty(v);
}

struct obj *table_view_row(struct view *v, size_t i)
{
	struct tview *t = v->priv;
	check_scope(t);
	if (t->stale)
		rebuild(t);
	return i < t->n ? t->rows[i] : NULL;
}

struct obj *table_view_row_now(struct view *v, size_t i)
{
	struct tview *t = v->priv;
	return i < t->n ? t->rows[i] : NULL;
}

size_t table_view_builds(const struct view *v)
{
	return ((const struct tview *)v->priv)->builds;
}

size_t table_view_rows(struct view *v)
{
	struct tview *t = v->priv;
	check_scope(t);
	if (t->stale)
		rebuild(t);
	return t->n;
}
