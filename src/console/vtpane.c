/* The libvterm-backed terminal pane: guest bytes in, damaged cells out to ncurses, keys back as terminal bytes,
 * plus scrollback, search and copy mode. libvterm owns the live screen; the pane keeps only the scrollback
 * (compact cells) and which cells need drawing (a span of columns per row). */
#include "console/vtpane.h"

#include <stdlib.h>
#include <string.h>
#include <vterm.h>
#include <wchar.h>
#include <wctype.h>

#include "console/vtmirror.h"
#include "core/buf.h"
#include "core/log.h"
#include "core/util.h"
#include "core/xmalloc.h"

/* From <term.h>, which cannot be included here: its capability macros (bell, lines...) clash with libvterm. */
extern int tigetflag(const char *capname);

/* libvterm 0.1.4 writes through a NULL pointer when a wide character arrives on a 1-column screen (found by
 * fuzz_vtpane): the emulated screen is never narrower than this. */
#define VTPANE_MIN_COLS 2

/* A cell as kept in scrollback and used for drawing: colours as (kind << 24 | value). */
enum { COL_DEFAULT = 0, COL_INDEXED = 1, COL_RGB = 2 };
enum { CA_BOLD = 1, CA_UNDERLINE = 2, CA_ITALIC = 4, CA_BLINK = 8, CA_REVERSE = 16, CA_STRIKE = 32 };

struct vtcell {
	uint32_t ch;    /* 0: blank; UINT32_MAX: right half of a wide character */
	uint32_t fg, bg;
	uint8_t attrs;
	uint8_t width;
	uint16_t zero; /* always 0: cells compare as memory (no padding bytes of unknown value) */
};
_Static_assert(sizeof(struct vtcell) == 16, "struct vtcell has no padding");

/* A scrollback line, compact (every scrolled line is written here, and 10,000 of them must stay cheap to keep in
 * memory and in cache): the code points, then runs of cells that share colours and attributes. */
struct sbrun {
	uint16_t start; /* first cell of the run */
	uint8_t attrs, width;
	uint32_t fg, bg;
};

struct sbline {
	uint32_t *mem;          /* n code points, then nruns struct sbrun */
	uint32_t cap;           /* bytes allocated (a recycled line keeps its allocation) */
	uint16_t n, nruns;
};

struct vtpane {
	VTerm *vt;
	VTermState *state;
	int rows, cols;
	/* the screens (primary, alternate): rows of cells through a row-pointer array, so scrolling the whole
	 * width moves pointers, not cells (libvterm's own screen layer moves every cell for every line) */
	struct vtcell **grid[2];
	int cur;              /* 0 primary, 1 alternate */
	struct vtcell pen;    /* the current pen, as a blank cell */
	vtpane_output_cb out;
	void *out_arg;
	/* scrollback ring, oldest at head */
	struct sbline *sb;
	size_t sb_cap, sb_head, sb_count;
	/* drawing */
	/* per screen row, the columns [c0, c1) to draw (clean when c0 >= c1): a key's echo draws the character and
	 * the cursor's cells, not the row */
	struct dspan {
		int c0, c1;
	} *dirty;
	bool all_dirty;
	bool input_pending; /* bytes went in since the last damage flush */
	int view_off;
	VTermPos cursor;
	bool cursor_visible;
	int drawn_cursor_row, drawn_cursor_col; /* where the cursor was drawn last, row -1 none */
	/* what the guest asked for (absorbed) */
	/* REP filter (see vtpane_input) */
	int rep_state;        /* 0 text, 1 after ESC, 2 inside CSI with only digits/';' so far */
	char rep_seq[256];    /* the CSI bytes held back */
	size_t rep_len;
	int rep_seps;         /* parameter separators in the held CSI */
	uint32_t last_ch;     /* the last graphic character written (0: none since creation) */
	char *title;
	bool altscreen;
	int mouse;
	/* the plain-text fast path (see vtpane_input) */
	bool fast;
	struct vtmirror mir;
	bool probing;         /* one character is going through libvterm to learn where it lands */
	int probe_glyphs, probe_row, probe_col, probe_width;
	bool probe_shift;     /* libvterm shifted cells right before printing: insert mode */
	uint64_t fast_cells, fast_desyncs;
	bool fed;             /* any guest bytes yet */
	bool margins_set;     /* the guest may have set a scroll region or left/right margins */
	bool cursor_saved;    /* the guest may have saved the cursor (see vtpane_resize) */
	bool c2_held;         /* the last chunk ended in 0xC2, not yet passed on (see vtpane_input) */
	uint16_t *run_starts; /* sb_push's scratch */
	size_t run_starts_cap;
	/* copy mode and search */
	bool cm_on, sel_on;
	size_t cm_line, sel_line;
	int cm_col, sel_col;
	char *copied;
	bool prompt_on;
	bool prompt_backward;
	struct buf prompt;
	char *needle;
	bool needle_backward;
	bool hl_on;
	size_t hl_line;
	int hl_col, hl_len;
	/* colour capability, sampled at draw time */
	int ncolors;
	bool direct;
	struct {
		uint32_t fg, bg;
		int pair;
	} pair_cache[256];
};

/* ---- cells and colours ---- */

static uint32_t pack_color(const VTermColor *c, bool fg)
{
	if (fg ? VTERM_COLOR_IS_DEFAULT_FG(c) : VTERM_COLOR_IS_DEFAULT_BG(c))
		return COL_DEFAULT << 24;
	if (VTERM_COLOR_IS_INDEXED(c))
		return (uint32_t)COL_INDEXED << 24 | c->indexed.idx;
	return (uint32_t)COL_RGB << 24 | (uint32_t)c->rgb.red << 16 | (uint32_t)c->rgb.green << 8 | c->rgb.blue;
}

static bool cell_blank(const struct vtcell *c)
{
	return (c->ch == 0 || c->ch == ' ') && c->bg >> 24 == COL_DEFAULT && !(c->attrs & (CA_REVERSE | CA_UNDERLINE));
}

/* xterm's 256-colour palette as RGB. */
static uint32_t palette_rgb(int idx)
{
	static const uint32_t base[16] = { 0x000000, 0xcd0000, 0x00cd00, 0xcdcd00, 0x0000ee, 0xcd00cd,
					   0x00cdcd, 0xe5e5e5, 0x7f7f7f, 0xff0000, 0x00ff00, 0xffff00,
					   0x5c5cff, 0xff00ff, 0x00ffff, 0xffffff };
	static const uint8_t lv[6] = { 0, 95, 135, 175, 215, 255 };
	if (idx < 16)
		return base[idx];
	if (idx < 232) {
		int i = idx - 16;
		return (uint32_t)lv[i / 36] << 16 | (uint32_t)lv[i / 6 % 6] << 8 | lv[i % 6];
	}
	uint32_t g = (uint32_t)(8 + 10 * (idx - 232));
	return g << 16 | g << 8 | g;
}

static int dist2(uint32_t a, uint32_t b)
{
	int dr = (int)(a >> 16 & 255) - (int)(b >> 16 & 255);
	int dg = (int)(a >> 8 & 255) - (int)(b >> 8 & 255);
	int db = (int)(a & 255) - (int)(b & 255);
	return 2 * dr * dr + 4 * dg * dg + 3 * db * db;
}

static int nearest_level(int v)
{
	static const uint8_t lv[6] = { 0, 95, 135, 175, 215, 255 };
	int best = 0;
	for (int i = 1; i < 6; i++)
		if (abs(v - lv[i]) < abs(v - lv[best]))
			best = i;
	return best;
}

static int nearest_256(uint32_t rgb)
{
	int r = nearest_level((int)(rgb >> 16 & 255)), g = nearest_level((int)(rgb >> 8 & 255)),
	    b = nearest_level((int)(rgb & 255));
	int cube = 16 + 36 * r + 6 * g + b;
	int avg = (int)(((rgb >> 16 & 255) + (rgb >> 8 & 255) + (rgb & 255)) / 3);
	int gi = avg < 8 ? 0 : avg > 238 ? 23 : (avg - 8 + 5) / 10;
	int gray = 232 + gi;
	return dist2(palette_rgb(gray), rgb) < dist2(palette_rgb(cube), rgb) ? gray : cube;
}

static int nearest_basic(uint32_t rgb, int n)
{
	int best = 0;
	for (int i = 1; i < n; i++)
		if (dist2(palette_rgb(i), rgb) < dist2(palette_rgb(best), rgb))
			best = i;
	return best;
}

/* A packed colour as a curses colour number for this terminal (-1 = the terminal's default). */
static int curses_color(const struct vtpane *p, uint32_t c)
{
	int kind = (int)(c >> 24);
	if (kind == COL_DEFAULT || p->ncolors < 8)
		return -1;
	uint32_t rgb;
	if (kind == COL_INDEXED) {
		int idx = (int)(c & 255);
		if (idx < 16 ? idx < p->ncolors : p->ncolors >= 256 && !p->direct)
			return idx;
		rgb = palette_rgb(idx);
	} else {
		rgb = c & 0xffffff;
	}
	if (p->direct)
		return (int)rgb;
	if (p->ncolors >= 256)
		return nearest_256(rgb);
	return nearest_basic(rgb, p->ncolors >= 16 ? 16 : 8);
}

static int color_pair(struct vtpane *p, uint32_t fg, uint32_t bg)
{
	if (p->ncolors < 8 || (fg >> 24 == COL_DEFAULT && bg >> 24 == COL_DEFAULT))
		return 0;
	unsigned h = (fg * 2654435761u ^ bg * 40503u) & 255;
	if (p->pair_cache[h].pair > 0 && p->pair_cache[h].fg == fg && p->pair_cache[h].bg == bg)
		return p->pair_cache[h].pair;
	int pair = alloc_pair(curses_color(p, fg), curses_color(p, bg));
	if (pair < 0)
		pair = 0;
	p->pair_cache[h].fg = fg;
	p->pair_cache[h].bg = bg;
	p->pair_cache[h].pair = pair;
	return pair;
}

/* What may be drawn for a guest character: no controls, no bidi overrides, nothing unprintable. */
static wchar_t safe_char(uint32_t ch)
{
	if (ch == 0)
		return L' ';
	if (ch < 0x20 || (ch >= 0x7f && ch < 0xa0))
		return L'?';
	if ((ch >= 0x200e && ch <= 0x200f) || (ch >= 0x202a && ch <= 0x202e) || (ch >= 0x2066 && ch <= 0x2069) ||
	    ch == 0x061c || ch > 0x10ffff || (ch >= 0xd800 && ch <= 0xdfff))
		return (wchar_t)0xfffd;
	if (wcwidth((wchar_t)ch) < 0)
		return (wchar_t)0xfffd;
	return (wchar_t)ch;
}

/* ---- lines: scrollback and screen under one index ---- */

static size_t total_lines(const struct vtpane *p)
{
	return p->sb_count + (size_t)p->rows;
}

static const struct sbrun *sb_runs(const struct sbline *l)
{
	return (const struct sbrun *)(const void *)(l->mem + l->n);
}

/* Writes a scrollback line into out[0..min(n, cols)); the cells after it are left alone. */
static void sb_unpack(const struct sbline *l, struct vtcell *out, int cols)
{
	int n = l->n < cols ? l->n : cols;
	const struct sbrun *runs = sb_runs(l);
	for (int r = 0; r < l->nruns; r++) {
		int end = r + 1 < l->nruns ? runs[r + 1].start : l->n;
		if (end > n)
			end = n;
		for (int c = runs[r].start; c < end; c++) {
			out[c].ch = l->mem[c];
			out[c].fg = runs[r].fg;
			out[c].bg = runs[r].bg;
			out[c].attrs = runs[r].attrs;
			out[c].width = runs[r].width;
		}
	}
}

static bool same_look(const struct vtcell *a, const struct vtcell *b)
{
	return a->fg == b->fg && a->bg == b->bg && a->attrs == b->attrs && a->width == b->width;
}

/* Fills out[0..cols) with line abs (0 = oldest scrollback line). */
static void get_line(const struct vtpane *p, size_t abs, struct vtcell *out)
{
	static const struct vtcell blank = { 0, COL_DEFAULT << 24, COL_DEFAULT << 24, 0, 1, 0 };
	for (int c = 0; c < p->cols; c++)
		out[c] = blank;
	if (abs < p->sb_count) {
		sb_unpack(&p->sb[(p->sb_head + abs) % p->sb_cap], out, p->cols);
		return;
	}
	int row = (int)(abs - p->sb_count);
	if (row >= p->rows)
		return;
	memcpy(out, p->grid[p->cur][row], (size_t)p->cols * sizeof *out);
}

/* Appends the cells [c0, c1) of a line as UTF-8 (safe characters only). */
static void cells_text(struct buf *b, const struct vtcell *cells, int c0, int c1)
{
	for (int c = c0; c < c1; c++) {
		if (cells[c].ch == UINT32_MAX)
			continue;
		buf_add_utf8(b, (uint32_t)safe_char(cells[c].ch));
	}
}

static void trim_trailing(struct buf *b, size_t from)
{
	while (b->len > from && b->data[b->len - 1] == ' ')
		b->data[--b->len] = '\0';
}

char *vtpane_line_text(const struct vtpane *p, size_t abs)
{
	if (abs >= total_lines(p))
		return NULL;
	struct vtcell *cells = xcalloc((size_t)p->cols, sizeof *cells);
	get_line(p, abs, cells);
	struct buf b;
	buf_init(&b);
	cells_text(&b, cells, 0, p->cols);
	trim_trailing(&b, 0);
	free(cells);
	if (!b.data)
		return xstrdup("");
	return buf_steal(&b);
}

char *vtpane_screen_text(const struct vtpane *p)
{
	struct buf b;
	buf_init(&b);
	for (int r = 0; r < p->rows; r++) {
		char *l = vtpane_line_text(p, p->sb_count + (size_t)r);
		buf_add_str(&b, l);
		buf_add_char(&b, '\n');
		free(l);
	}
	return buf_steal(&b);
}

/* ---- libvterm callbacks ---- */

static void mark_rows(struct vtpane *p, int r0, int r1)
{
	if (r0 < 0)
		r0 = 0;
	if (r1 > p->rows)
		r1 = p->rows;
	for (int r = r0; r < r1; r++)
		p->dirty[r] = (struct dspan){ 0, p->cols };
}

/* Columns [c0, c1) of row r need drawing. */
static void mark_cells(struct vtpane *p, int r, int c0, int c1)
{
	if (r < 0 || r >= p->rows)
		return;
	if (c0 < 0)
		c0 = 0;
	if (c1 > p->cols)
		c1 = p->cols;
	if (c0 >= c1)
		return;
	struct dspan *d = &p->dirty[r];
	if (d->c0 >= d->c1) {
		d->c0 = c0;
		d->c1 = c1;
		return;
	}
	if (c0 < d->c0)
		d->c0 = c0;
	if (c1 > d->c1)
		d->c1 = c1;
}

static bool row_dirty(const struct vtpane *p, int r)
{
	return p->dirty[r].c0 < p->dirty[r].c1;
}

static const struct vtcell blank_cell = { 0, COL_DEFAULT << 24, COL_DEFAULT << 24, 0, 1, 0 };

/* A blank cell in the current pen's colours (erase uses the background colour, as xterm does). */
static struct vtcell erased(const struct vtpane *p)
{
	struct vtcell c = blank_cell;
	c.fg = p->pen.fg;
	c.bg = p->pen.bg;
	return c;
}

static void fill(struct vtcell *row, int c0, int c1, struct vtcell v)
{
	if (c1 <= c0)
		return;
	/* one cell, then copies of what is filled so far: a few memcpy calls instead of a store per cell (a full
	 * row is filled for every scrolled line) */
	row[c0] = v;
	for (int done = 1, n = c1 - c0; done < n;) {
		int k = done < n - done ? done : n - done;
		memcpy(&row[c0 + done], &row[c0], (size_t)k * sizeof *row);
		done += k;
	}
}

static struct vtcell **grid_new(int rows, int cols)
{
	struct vtcell **g = xcalloc((size_t)rows, sizeof *g);
	for (int r = 0; r < rows; r++) {
		g[r] = xmalloc((size_t)cols * sizeof **g);
		fill(g[r], 0, cols, blank_cell);
	}
	return g;
}

static void grid_free(struct vtcell **g, int rows)
{
	if (!g)
		return;
	for (int r = 0; r < rows; r++)
		free(g[r]);
	free(g);
}

/* Appends a screen row to the scrollback (trailing blanks trimmed), dropping the oldest line when full. */
static void sb_push(struct vtpane *p, const struct vtcell *cells, int cols)
{
	if (p->sb_cap == 0)
		return;
	int n = cols;
	/* most trailing cells are exactly the default blank: a cheap compare first */
	while (n > 0 && memcmp(&cells[n - 1], &blank_cell, sizeof blank_cell) == 0)
		n--;
	while (n > 0 && cell_blank(&cells[n - 1]))
		n--;
	struct sbline *l;
	if (p->sb_count == p->sb_cap) {
		l = &p->sb[p->sb_head];
		p->sb_head = (p->sb_head + 1) % p->sb_cap;
		if (p->cm_line > 0)
			p->cm_line--;
		if (p->sel_line > 0)
			p->sel_line--;
		if (p->hl_line > 0)
			p->hl_line--;
	} else {
		l = &p->sb[(p->sb_head + p->sb_count) % p->sb_cap];
		p->sb_count++;
	}
	/* keep the view still while the user reads history */
	if ((p->view_off > 0 || p->cm_on) && p->view_off < (int)p->sb_count)
		p->view_off++;
	if (n > UINT16_MAX)
		n = UINT16_MAX;
	if (p->run_starts_cap < (size_t)n) {
		free(p->run_starts);
		p->run_starts_cap = (size_t)n;
		p->run_starts = xmalloc(p->run_starts_cap * sizeof *p->run_starts);
	}
	int nruns = 0;
	for (int c = 0; c < n; c++)
		if (c == 0 || !same_look(&cells[c], &cells[c - 1]))
			p->run_starts[nruns++] = (uint16_t)c;
	size_t need = (size_t)n * sizeof *l->mem + (size_t)nruns * sizeof(struct sbrun);
	if (!l->mem || l->cap < need) {
		/* rounded up so recycled lines rarely need to grow */
		size_t cap = (need + 255) & ~(size_t)255;
		free(l->mem);
		l->mem = xmalloc(cap);
		l->cap = (uint32_t)cap;
	}
	l->n = (uint16_t)n;
	l->nruns = (uint16_t)nruns;
	struct sbrun *runs = (struct sbrun *)(void *)(l->mem + n);
	for (int c = 0; c < n; c++)
		l->mem[c] = cells[c].ch;
	for (int r = 0; r < nruns; r++) {
		const struct vtcell *c = &cells[p->run_starts[r]];
		runs[r].start = p->run_starts[r];
		runs[r].attrs = c->attrs;
		runs[r].width = c->width;
		runs[r].fg = c->fg;
		runs[r].bg = c->bg;
	}
}

/* Takes the newest scrollback line back into row (cols wide). Returns false when there is none. */
static bool sb_pop(struct vtpane *p, struct vtcell *row, int cols)
{
	if (p->sb_count == 0)
		return false;
	struct sbline *l = &p->sb[(p->sb_head + p->sb_count - 1) % p->sb_cap];
	fill(row, 0, cols, blank_cell);
	sb_unpack(l, row, cols);
	l->n = 0; /* the allocation stays for reuse */
	l->nruns = 0;
	p->sb_count--;
	if (p->view_off > (int)p->sb_count)
		p->view_off = (int)p->sb_count;
	return true;
}

static void damage(struct vtpane *p, int r0, int r1)
{
	if (p->view_off > 0)
		p->all_dirty = true;
	mark_rows(p, r0, r1);
}

static void damage_cells(struct vtpane *p, int r, int c0, int c1)
{
	if (p->view_off > 0)
		p->all_dirty = true;
	mark_cells(p, r, c0, c1);
}

/* Writes the narrow characters s[0..n) into row r from col on, exactly as n calls of cb_putglyph would (the
 * fast path; the caller keeps them within the row). */
static void put_narrow_run(struct vtpane *p, int r, int col, const char *s, size_t n)
{
	/* with the halves of wide characters on either side blanked below */
	damage_cells(p, r, col - 1, col + (int)n + 1);
	struct vtcell *row = p->grid[p->cur][r];
	struct vtcell c = p->pen;
	c.width = 1;
	for (size_t k = 0; k < n; k++, col++) {
		struct vtcell *cell = &row[col];
		if (cell->width != 1 || cell->ch == UINT32_MAX) {
			/* overwriting half of a wide character blanks its other half */
			if (cell->ch == UINT32_MAX && col > 0)
				row[col - 1] = erased(p);
			if (cell->width == 2 && col + 1 < p->cols)
				row[col + 1] = erased(p);
		}
		c.ch = (uint8_t)s[k];
		*cell = c;
	}
	if (n)
		p->last_ch = (uint8_t)s[n - 1];
	p->fast_cells += n;
}

static int cb_putglyph(VTermGlyphInfo *info, VTermPos pos, void *user)
{
	struct vtpane *p = user;
	if (p->probing) {
		p->probe_glyphs++;
		p->probe_row = pos.row;
		p->probe_col = pos.col;
		p->probe_width = info->width;
	}
	if (pos.row < 0 || pos.row >= p->rows || pos.col < 0 || pos.col >= p->cols)
		return 1;
	struct vtcell *row = p->grid[p->cur][pos.row];
	int w = info->width == 2 ? 2 : 1;
	if (w == 1 && row[pos.col].width == 1 && row[pos.col].ch != UINT32_MAX) {
		/* the common case: a narrow character over a narrow one */
		row[pos.col] = p->pen;
		row[pos.col].ch = info->chars[0];
		p->last_ch = info->chars[0];
		damage_cells(p, pos.row, pos.col, pos.col + 1);
		return 1;
	}
	/* overwriting half of a wide character blanks its other half */
	if (row[pos.col].ch == UINT32_MAX && pos.col > 0)
		row[pos.col - 1] = erased(p);
	if (row[pos.col].width == 2 && pos.col + 1 < p->cols && w == 1)
		row[pos.col + 1] = erased(p);
	p->last_ch = info->chars[0];
	struct vtcell c = p->pen;
	c.ch = info->chars[0];
	c.width = (uint8_t)w;
	row[pos.col] = c;
	if (w == 2 && pos.col + 1 < p->cols) {
		if (pos.col + 2 < p->cols && row[pos.col + 1].width == 2)
			row[pos.col + 2] = erased(p);
		c.ch = UINT32_MAX;
		c.width = 1;
		row[pos.col + 1] = c;
	}
	damage_cells(p, pos.row, pos.col - 1, pos.col + 3);
	return 1;
}

static int cb_erase(VTermRect rect, int selective, void *user)
{
	(void)selective;
	struct vtpane *p = user;
	struct vtcell e = erased(p);
	for (int r = rect.start_row; r < rect.end_row && r < p->rows; r++)
		if (r >= 0) {
			fill(p->grid[p->cur][r], rect.start_col < 0 ? 0 : rect.start_col,
			     rect.end_col > p->cols ? p->cols : rect.end_col, e);
			damage_cells(p, r, rect.start_col, rect.end_col);
		}
	return 1;
}

static int cb_moverect(VTermRect dest, VTermRect src, void *user)
{
	struct vtpane *p = user;
	int h = src.end_row - src.start_row, w = src.end_col - src.start_col;
	/* libvterm can hand over columns outside the screen (left/right margins kept from a wider screen after a
	 * resize; found by test_vtfast under valgrind): only the part of the move inside the rows is done */
	int sc = src.start_col, dc = dest.start_col;
	if (sc < 0) {
		dc -= sc;
		w += sc;
		sc = 0;
	}
	if (dc < 0) {
		sc -= dc;
		w += dc;
		dc = 0;
	}
	if (sc + w > p->cols)
		w = p->cols - sc;
	if (dc + w > p->cols)
		w = p->cols - dc;
	if (w <= 0 || h <= 0)
		return 1;
	/* copy in the order that does not overwrite rows not yet copied */
	bool down = dest.start_row > src.start_row;
	for (int i = 0; i < h; i++) {
		int k = down ? h - 1 - i : i;
		int sr = src.start_row + k, dr = dest.start_row + k;
		if (sr < 0 || sr >= p->rows || dr < 0 || dr >= p->rows)
			continue;
		memmove(&p->grid[p->cur][dr][dc], &p->grid[p->cur][sr][sc], (size_t)w * sizeof(struct vtcell));
		damage_cells(p, dr, dc, dc + w);
	}
	return 1;
}

static int cb_erase_plain(VTermRect rect, int selective, void *user)
{
	return cb_erase(rect, selective, user);
}

static int cb_scrollrect(VTermRect rect, int downward, int rightward, void *user)
{
	struct vtpane *p = user;
	if (p->probing && rightward != 0)
		p->probe_shift = true;
	int top = rect.start_row, bot = rect.end_row, h = bot - top;
	if (rightward != 0 || rect.start_col != 0 || rect.end_col != p->cols || h <= 0 || top < 0 || bot > p->rows) {
		vterm_scroll_rect(rect, downward, rightward, cb_moverect, cb_erase_plain, p);
		return 1;
	}
	struct vtcell **g = p->grid[p->cur];
	struct vtcell e = erased(p);
	int n = downward > 0 ? downward : -downward;
	if (n > h)
		n = h;
	struct vtcell *tmp[n > 0 ? n : 1];
	if (downward > 0) {
		/* lines leave at the top: into the scrollback when they leave the primary screen */
		for (int i = 0; i < n; i++) {
			if (p->cur == 0 && top == 0)
				sb_push(p, g[top + i], p->cols);
			tmp[i] = g[top + i];
		}
		memmove(&g[top], &g[top + n], (size_t)(h - n) * sizeof *g);
		for (int i = 0; i < n; i++) {
			fill(tmp[i], 0, p->cols, e);
			g[bot - n + i] = tmp[i];
		}
	} else {
		for (int i = 0; i < n; i++)
			tmp[i] = g[bot - n + i];
		memmove(&g[top + n], &g[top], (size_t)(h - n) * sizeof *g);
		for (int i = 0; i < n; i++) {
			fill(tmp[i], 0, p->cols, e);
			g[top + i] = tmp[i];
		}
	}
	damage(p, top, bot);
	return 1;
}

static int cb_movecursor(VTermPos pos, VTermPos old, int visible, void *user)
{
	struct vtpane *p = user;
	mark_cells(p, old.row, old.col, old.col + 1);
	mark_cells(p, pos.row, pos.col, pos.col + 1);
	p->cursor = pos;
	p->cursor_visible = visible;
	return 1;
}

static int cb_initpen(void *user)
{
	struct vtpane *p = user;
	p->pen = blank_cell;
	return 1;
}

static int cb_setpenattr(VTermAttr attr, VTermValue *val, void *user)
{
	struct vtpane *p = user;
	static const struct {
		VTermAttr attr;
		uint8_t bit;
	} bits[] = { { VTERM_ATTR_BOLD, CA_BOLD },     { VTERM_ATTR_UNDERLINE, CA_UNDERLINE },
		     { VTERM_ATTR_ITALIC, CA_ITALIC }, { VTERM_ATTR_BLINK, CA_BLINK },
		     { VTERM_ATTR_REVERSE, CA_REVERSE }, { VTERM_ATTR_STRIKE, CA_STRIKE } };
	if (attr == VTERM_ATTR_FOREGROUND) {
		p->pen.fg = pack_color(&val->color, true);
		return 1;
	}
	if (attr == VTERM_ATTR_BACKGROUND) {
		p->pen.bg = pack_color(&val->color, false);
		return 1;
	}
	for (size_t i = 0; i < sizeof bits / sizeof bits[0]; i++) {
		if (bits[i].attr != attr)
			continue;
		/* underline is a number (single, double, curly); the rest booleans */
		bool on = attr == VTERM_ATTR_UNDERLINE ? val->number != 0 : val->boolean != 0;
		p->pen.attrs = (uint8_t)(on ? p->pen.attrs | bits[i].bit : p->pen.attrs & ~bits[i].bit);
	}
	return 1;
}

static int cb_settermprop(VTermProp prop, VTermValue *val, void *user)
{
	struct vtpane *p = user;
	switch (prop) {
	case VTERM_PROP_TITLE:
		free(p->title);
		p->title = util_escape_display(val->string ? val->string : "");
		break;
	case VTERM_PROP_ALTSCREEN:
		p->altscreen = val->boolean;
		p->cur = val->boolean ? 1 : 0;
		p->all_dirty = true;
		break;
	case VTERM_PROP_MOUSE:
		p->mouse = val->number;
		break;
	case VTERM_PROP_CURSORVISIBLE:
		p->cursor_visible = val->boolean;
		mark_cells(p, p->cursor.row, p->cursor.col, p->cursor.col + 1);
		break;
	default:
		break;
	}
	return 1; /* absorbed: nothing is passed to the real terminal */
}

static int cb_bell(void *user)
{
	(void)user;
	return 1;
}

/* Resizes both screens: no reflow; a shorter screen sends its top lines to the scrollback when the cursor would
 * fall off, a taller one takes lines back from it (as libvterm's screen layer does). */
static int cb_resize(int rows, int cols, VTermPos *delta, void *user)
{
	struct vtpane *p = user;
	int old_rows = p->rows, old_cols = p->cols;
	for (int b = 0; b < 2; b++) {
		struct vtcell **ng = grid_new(rows, cols);
		struct vtcell **og = p->grid[b];
		int shift = 0; /* old row shift: positive = lines pushed out at the top */
		if (rows < old_rows) {
			int crow = b == p->cur ? p->cursor.row : old_rows - 1;
			shift = crow >= rows ? crow - rows + 1 : 0;
			for (int r = 0; r < shift; r++)
				if (b == 0)
					sb_push(p, og[r], old_cols);
		}
		int pulled = 0;
		if (rows > old_rows && b == 0) {
			/* lines taken back from the scrollback (newest first) go above the old screen, oldest on top */
			int want = rows - old_rows;
			struct vtcell **popped = xcalloc((size_t)want, sizeof *popped);
			for (; pulled < want; pulled++) {
				popped[pulled] = xmalloc((size_t)cols * sizeof **popped);
				if (!sb_pop(p, popped[pulled], cols)) {
					free(popped[pulled]);
					break;
				}
			}
			for (int i = 0; i < pulled; i++) {
				free(ng[pulled - 1 - i]);
				ng[pulled - 1 - i] = popped[i];
			}
			free(popped);
		}
		int w = cols < old_cols ? cols : old_cols;
		for (int r = 0; r < old_rows - shift && r + pulled < rows; r++)
			memcpy(ng[r + pulled], og[r + shift], (size_t)w * sizeof **ng);
		grid_free(og, old_rows);
		p->grid[b] = ng;
		if (b == p->cur && delta) {
			delta->row = pulled - shift;
		}
	}
	p->rows = rows;
	p->cols = cols;
	free(p->dirty);
	p->dirty = xcalloc((size_t)rows, sizeof *p->dirty);
	p->all_dirty = true;
	if (p->view_off > (int)p->sb_count)
		p->view_off = (int)p->sb_count;
	return 1;
}

static int cb_setlineinfo(int row, const VTermLineInfo *newinfo, const VTermLineInfo *oldinfo, void *user)
{
	(void)row, (void)newinfo, (void)oldinfo, (void)user;
	return 1; /* double-width/height lines are drawn single */
}

static const VTermStateCallbacks state_cbs = {
	.putglyph = cb_putglyph,
	.movecursor = cb_movecursor,
	.scrollrect = cb_scrollrect,
	.moverect = cb_moverect,
	.erase = cb_erase,
	.initpen = cb_initpen,
	.setpenattr = cb_setpenattr,
	.settermprop = cb_settermprop,
	.bell = cb_bell,
	.resize = cb_resize,
	.setlineinfo = cb_setlineinfo,
};

static void on_vterm_output(const char *s, size_t len, void *user)
{
	struct vtpane *p = user;
	if (p->out)
		p->out(s, len, p->out_arg);
}

/* ---- life cycle ---- */

struct vtpane *vtpane_new(int rows, int cols, size_t scrollback_lines)
{
	struct vtpane *p = xcalloc(1, sizeof *p);
	p->rows = rows < 1 ? 1 : rows;
	p->cols = cols < VTPANE_MIN_COLS ? VTPANE_MIN_COLS : cols;
	p->vt = vterm_new(p->rows, p->cols);
	vterm_set_utf8(p->vt, 1);
	vterm_output_set_callback(p->vt, on_vterm_output, p);
	p->state = vterm_obtain_state(p->vt);
	p->grid[0] = grid_new(p->rows, p->cols);
	p->grid[1] = grid_new(p->rows, p->cols);
	p->pen = blank_cell;
	vterm_state_set_callbacks(p->state, &state_cbs, p);
	p->sb_cap = scrollback_lines;
	p->sb = xcalloc(p->sb_cap ? p->sb_cap : 1, sizeof *p->sb);
	p->dirty = xcalloc((size_t)p->rows, sizeof *p->dirty);
	p->all_dirty = true;
	p->cursor_visible = true;
	p->drawn_cursor_row = -1;
	p->drawn_cursor_col = 0;
	p->title = xstrdup("");
	buf_init(&p->prompt);
	vterm_state_reset(p->state, 1);
	vtmirror_init(&p->mir);
	const char *fp = getenv("KVCON_VT_FASTPATH");
	p->fast = !(fp && strcmp(fp, "0") == 0);
	return p;
}

void vtpane_free(struct vtpane *p)
{
	if (!p)
		return;
	vterm_free(p->vt);
	grid_free(p->grid[0], p->rows);
	grid_free(p->grid[1], p->rows);
	for (size_t i = 0; i < p->sb_cap; i++)
		free(p->sb[i].mem);
	free(p->sb);
	free(p->run_starts);
	free(p->dirty);
	free(p->title);
	free(p->copied);
	free(p->needle);
	buf_free(&p->prompt);
	free(p);
}

void vtpane_set_output(struct vtpane *p, vtpane_output_cb cb, void *arg)
{
	p->out = cb;
	p->out_arg = arg;
}

/* libvterm 0.1.4 loops forever on REP (CSI Pn b) when the last glyph it printed had width 0 or there was none
 * (found by fuzz_vtpane: "ESC[1b" first, or after a lone combining character): a few bytes from a guest would hang
 * kvcon. REP is therefore done here: the sequence is held back
 * while it is read and replaced by the last printed character repeated (up to the right margin, as REP stops
 * there), or dropped when there is none. Everything else passes through unchanged, in order. */
/* libvterm 0.1.4 also writes past its argument array on a CSI with 17 or more parameters (found by fuzzing; an
 * SGR with many attributes is enough): such a sequence is dropped whole. */
#define REP_MAX_SEPS 15

/* Every write into libvterm goes through here or region_write, so the mirror sees the same bytes in the same
 * writes. */
static void vt_write(struct vtpane *p, const char *b, size_t n)
{
	if (p->fast)
		vtmirror_feed(&p->mir, b, n);
	vterm_input_write(p->vt, b, n);
	if (p->fast)
		vtmirror_write_end(&p->mir);
}

static void rep_flush(struct vtpane *p)
{
	if (p->rep_len && p->rep_seps <= REP_MAX_SEPS)
		vt_write(p, p->rep_seq, p->rep_len);
	p->rep_len = 0;
	p->rep_seps = 0;
}

static void rep_expand(struct vtpane *p)
{
	/* the count is the first parameter: the digits after '[' (a leader or intermediates are skipped) */
	long n = 0;
	const char *q = memchr(p->rep_seq, '[', p->rep_len);
	size_t i = q ? (size_t)(q - p->rep_seq) + 1 : p->rep_len;
	while (i < p->rep_len && (p->rep_seq[i] < '0' || p->rep_seq[i] > '9') && p->rep_seq[i] != ';' &&
	       p->rep_seq[i] != ':')
		i++;
	for (; i < p->rep_len && p->rep_seq[i] >= '0' && p->rep_seq[i] <= '9'; i++)
		if (n < 100000)
			n = n * 10 + (p->rep_seq[i] - '0');
	if (n == 0)
		n = 1;
	p->rep_len = 0;
	p->rep_seps = 0;
	if (!p->last_ch)
		return;
	VTermPos cur;
	vterm_state_get_cursorpos(p->state, &cur);
	long room = p->cols - cur.col;
	if (n > room)
		n = room;
	struct buf b;
	buf_init(&b);
	for (long k = 0; k < n; k++)
		buf_add_utf8(&b, p->last_ch);
	if (b.len)
		vt_write(p, b.data, b.len);
	buf_free(&b);
}

static bool rep_c0(uint8_t c)
{
	/* C0 controls a terminal executes even in the middle of a sequence (not ESC, CAN, SUB, which end it) */
	return c > 0 && c < 0x20 && c != 0x1b && c != 0x18 && c != 0x1a;
}

/* Bytes libvterm's parser skips inside a sequence without leaving it: NUL, DEL and (in UTF-8 mode) 0x80-0xff. */
static bool rep_ignored(uint8_t c)
{
	return c == 0 || c >= 0x7f;
}

static void rep_hold_esc(struct vtpane *p)
{
	p->rep_seq[0] = 0x1b;
	p->rep_len = 1;
	p->rep_seps = 0;
	p->rep_state = 1;
}

/* ---- the plain-text fast path ----
 * libvterm spends most of its time on plain text: parsing every byte, decoding, one putglyph call per character.
 * A run of printable ASCII that libvterm would print as itself (vtmirror_plain: ground state, identity character
 * set, a new text run) is written here instead, one row segment at a time: its first character still goes
 * through libvterm (which resolves a pending wrap, insert mode, a single shift, a half-received UTF-8 sequence,
 * and tells where it landed), the characters after it go straight into the row with the current pen, and a
 * relative cursor move (CUF) brings libvterm's cursor to where it would be; the next character is again a probe.
 * The run's last character is left in the byte stream so that it starts libvterm's next text run exactly where
 * the whole run would have ended (combining characters, REP, a UTF-8 sequence right after it). The result is the
 * same, cell for cell, as feeding libvterm everything (tests/unit/test_vtpane.c and fuzz_vtpane compare both). */
#define FAST_MIN_RUN 8

/* Writes d[start..x) into libvterm; the mirror has seen d[start..*mpos) already. */
static void region_write(struct vtpane *p, const char *d, size_t start, size_t *mpos, size_t x)
{
	if (x <= start)
		return;
	if (p->fast && *mpos < x)
		vtmirror_feed(&p->mir, d + *mpos, x - *mpos);
	*mpos = x;
	vterm_input_write(p->vt, d + start, x - start);
	if (p->fast)
		vtmirror_write_end(&p->mir);
}

/* Handles a run r[0..n) of printable ASCII (libvterm in ground state, all bytes before it written). Returns how
 * many characters were consumed; the rest (at least the last one) goes to libvterm as usual. */
static size_t fast_run(struct vtpane *p, const char *r, size_t n)
{
	size_t k = 0;
	while (k + 1 < n) {
		p->probing = true;
		p->probe_glyphs = 0;
		p->probe_shift = false;
		/* one ASCII character and a write boundary: the mirror's state does not change */
		vterm_input_write(p->vt, r + k, 1);
		p->probing = false;
		k++;
		if (p->probe_glyphs == 0 || p->probe_shift || p->probe_width != 1)
			break;
		VTermPos pos;
		vterm_state_get_cursorpos(p->state, &pos);
		if (pos.row != p->probe_row || pos.col != p->probe_col + 1 || pos.row < 0 || pos.row >= p->rows)
			continue; /* at the right margin: the next character wraps (or not), libvterm decides */
		const VTermLineInfo *li = vterm_state_get_lineinfo(p->state, pos.row);
		if (li && li->doublewidth)
			break; /* half as many columns: leave the row to libvterm */
		size_t m = n - 1 - k, room = (size_t)(p->cols - 1 - pos.col);
		if (m > room)
			m = room;
		if (m == 0)
			continue;
		put_narrow_run(p, pos.row, pos.col, r + k, m);
		k += m;
		char cuf[24] = "\033[", *e = cuf + sizeof cuf;
		size_t l = 0;
		*--e = 'C';
		for (size_t v = m; v; v /= 10, l++)
			*--e = (char)('0' + v % 10);
		memmove(cuf + 2, e, l + 1);
		vterm_input_write(p->vt, cuf, l + 3);
		VTermPos now;
		vterm_state_get_cursorpos(p->state, &now);
		if (now.row != pos.row || now.col != pos.col + (int)m) {
			/* the mirror was wrong about something (a bug): the cells are right, libvterm's cursor is not
			 * where the text would have left it; stop taking the fast path for this pane */
			log_warn("vtpane: fast path out of step at %d,%d (libvterm at %d,%d); disabled", pos.row,
				 pos.col + (int)m, now.row, now.col);
			p->fast_desyncs++;
			p->fast = false;
			break;
		}
	}
	return k;
}

void vtpane_input(struct vtpane *p, const void *data, size_t len)
{
	if (!len)
		return;
	p->fed = true;
	const char *d = data;
	size_t start = 0; /* start of the run of bytes passed through as they are */
	size_t mpos = 0;  /* how far into that run the mirror has read */
	size_t i = 0;
	if (p->c2_held) {
		/* the previous chunk ended in 0xC2 (see below) */
		p->c2_held = false;
		if ((uint8_t)d[0] >= 0x80 && (uint8_t)d[0] < 0xa0)
			start = mpos = i = 1;
		else
			vt_write(p, "\xc2", 1);
	}
	for (; i < len; i++) {
		uint8_t c = (uint8_t)d[i];
		if (p->rep_state == 0) {
			if (c == 0x1b) {
				region_write(p, d, start, &mpos, i);
				rep_hold_esc(p);
				start = mpos = i + 1;
			} else if (c == 0xc2 && (i + 1 == len || ((uint8_t)d[i + 1] >= 0x80 && (uint8_t)d[i + 1] < 0xa0))) {
				/* U+0080-U+009F in UTF-8: libvterm 0.1.4 prints C1 controls as glyphs of width -1, moving its
				 * cursor left past column 0, and a tab stop set there is written before its array (heap
				 * corruption; found by test_vtfast). They are dropped; a 0xC2 ending the chunk waits for the
				 * next byte. */
				region_write(p, d, start, &mpos, i);
				if (i + 1 == len) {
					p->c2_held = true;
					start = mpos = len;
					break;
				}
				i++;
				start = mpos = i + 1;
			} else if (p->fast && c >= 0x20 && c < 0x7f) {
				size_t j = i + 1;
				while (j < len && (uint8_t)d[j] >= 0x20 && (uint8_t)d[j] < 0x7f)
					j++;
				if (j - i >= FAST_MIN_RUN) {
					vtmirror_feed(&p->mir, d + mpos, i - mpos);
					mpos = i;
					if (vtmirror_plain(&p->mir)) {
						region_write(p, d, start, &mpos, i);
						start = mpos = i + fast_run(p, d + i, j - i);
					}
				}
				i = j - 1;
			}
			continue;
		}
		/* inside ESC (state 1) or a CSI (state 2): the bytes are held until it is clear whether a REP ends it.
		 * Conservative where libvterm is lenient: ESC, intermediates, then [ starts a CSI too, and any CSI
		 * whose final byte is b counts as REP. */
		start = mpos = i + 1;
		if (rep_c0(c)) {
			vt_write(p, d + i, 1);
			continue;
		}
		if (rep_ignored(c))
			continue;
		bool hold = p->rep_state == 1 ? (c >= 0x20 && c <= 0x2f) || c == '[' : c >= 0x20 && c <= 0x3f;
		if (hold) {
			if (p->rep_state == 1 && c == '[')
				p->rep_state = 2;
			else if (p->rep_state == 2 && (c == ';' || c == ':'))
				p->rep_seps++;
			/* an absurdly long sequence is cut (passing it on could end in a REP) */
			if (p->rep_len < sizeof p->rep_seq)
				p->rep_seq[p->rep_len++] = (char)c;
			continue;
		}
		if (p->rep_state == 2 && c == 'b') {
			rep_expand(p);
			p->rep_state = 0;
			continue;
		}
		if (c == 0x1b) {
			/* ESC abandons the sequence in progress: drop what was held (flushing a lone ESC would leave
			 * libvterm waiting to pair it with whatever comes next) */
			rep_hold_esc(p);
			continue;
		}
		/* not REP: give back what was held; this byte goes on as usual */
		if (p->rep_state == 2 && (c == 'r' || c == 's'))
			p->margins_set = true; /* DECSTBM or DECSLRM (see vtpane_resize) */
		if ((p->rep_state == 1 && p->rep_len == 1 && c == '7') || (p->rep_state == 2 && c == 'h'))
			p->cursor_saved = true; /* DECSC, or a mode such as 1048/1049 that saves the cursor */
		bool dropped = p->rep_state == 2 && p->rep_seps > REP_MAX_SEPS;
		rep_flush(p);
		p->rep_state = 0;
		if (dropped && c >= 0x40 && c <= 0x7e)
			continue; /* the final byte of a dropped sequence goes with it */
		start = mpos = i;
	}
	if (p->rep_state == 0)
		region_write(p, d, start, &mpos, len);
	p->input_pending = true;
}

void vtpane_set_fast_path(struct vtpane *p, bool on)
{
	if (on && !p->fast)
		p->mir.tainted = p->mir.tainted || p->fed; /* it has not seen what libvterm has */
	p->fast = on;
}

void vtpane_fast_stats(const struct vtpane *p, uint64_t *cells, uint64_t *desyncs)
{
	*cells = p->fast_cells;
	*desyncs = p->fast_desyncs;
}

static char *dump_hex(char *o, uint32_t v, int digits)
{
	for (int i = digits - 1; i >= 0; i--)
		*o++ = "0123456789abcdef"[v >> (4 * i) & 15];
	return o;
}

static void dump_cells(struct buf *b, const struct vtcell *cells, int n)
{
	char tmp[40];
	for (int c = 0; c < n; c++) {
		char *o = tmp;
		*o++ = ' ';
		o = dump_hex(o, cells[c].ch, 8);
		o = dump_hex(o, cells[c].fg, 8);
		o = dump_hex(o, cells[c].bg, 8);
		o = dump_hex(o, cells[c].attrs, 2);
		o = dump_hex(o, cells[c].width, 1);
		buf_add(b, tmp, (size_t)(o - tmp));
	}
	buf_add_char(b, '\n');
}

char *vtpane_dump(const struct vtpane *p)
{
	struct buf b;
	buf_init(&b);
	VTermPos vc;
	vterm_state_get_cursorpos(p->state, &vc);
	buf_printf(&b, "size %dx%d screen %d cursor %d,%d vterm %d,%d visible %d alt %d mouse %d last %x\n", p->rows,
		   p->cols, p->cur, p->cursor.row, p->cursor.col, vc.row, vc.col, p->cursor_visible, p->altscreen,
		   p->mouse, p->last_ch);
	buf_printf(&b, "pen %x/%x/%x title %s\n", p->pen.fg, p->pen.bg, p->pen.attrs, p->title);
	buf_printf(&b, "scrollback %zu\n", p->sb_count);
	for (size_t i = 0; i < p->sb_count; i++) {
		const struct sbline *l = &p->sb[(p->sb_head + i) % p->sb_cap];
		struct vtcell *cells = xcalloc(l->n ? l->n : 1, sizeof *cells);
		sb_unpack(l, cells, l->n);
		buf_printf(&b, "sb %zu:", i);
		dump_cells(&b, cells, l->n);
		free(cells);
	}
	for (int s = 0; s < 2; s++)
		for (int r = 0; r < p->rows; r++) {
			buf_printf(&b, "%c%d:", s ? 'a' : 'p', r);
			dump_cells(&b, p->grid[s][r], p->cols);
		}
	return buf_steal(&b);
}

bool vtpane_same(const struct vtpane *a, const struct vtpane *b)
{
	VTermPos ca, cb;
	vterm_state_get_cursorpos(a->state, &ca);
	vterm_state_get_cursorpos(b->state, &cb);
	if (a->rows != b->rows || a->cols != b->cols || a->cur != b->cur || a->cursor.row != b->cursor.row ||
	    a->cursor.col != b->cursor.col || ca.row != cb.row || ca.col != cb.col ||
	    a->cursor_visible != b->cursor_visible || a->altscreen != b->altscreen || a->mouse != b->mouse ||
	    a->last_ch != b->last_ch || a->pen.fg != b->pen.fg || a->pen.bg != b->pen.bg ||
	    a->pen.attrs != b->pen.attrs || strcmp(a->title, b->title) != 0 || a->sb_count != b->sb_count)
		return false;
	bool same = true;
	struct vtcell *la = NULL, *lb = NULL;
	size_t cap = 0;
	for (size_t i = 0; same && i < a->sb_count; i++) {
		const struct sbline *x = &a->sb[(a->sb_head + i) % a->sb_cap], *y = &b->sb[(b->sb_head + i) % b->sb_cap];
		if (x->n != y->n) {
			same = false;
			break;
		}
		if (x->n == 0) /* two empty lines */
			continue;
		if (x->n > cap) {
			cap = x->n;
			la = xreallocarray(la, cap, sizeof *la);
			lb = xreallocarray(lb, cap, sizeof *lb);
		}
		memset(la, 0, x->n * sizeof *la); /* sb_unpack leaves cells without a run, and zero, alone */
		memset(lb, 0, x->n * sizeof *lb);
		sb_unpack(x, la, x->n);
		sb_unpack(y, lb, y->n);
		same = memcmp(la, lb, x->n * sizeof *la) == 0;
	}
	free(la);
	free(lb);
	for (int sc = 0; same && sc < 2; sc++)
		for (int r = 0; same && r < a->rows; r++)
			same = memcmp(a->grid[sc][r], b->grid[sc][r], (size_t)a->cols * sizeof(struct vtcell)) == 0;
	return same;
}

void vtpane_note(struct vtpane *p, const char *text)
{
	char *esc = util_escape_display(text);
	struct buf b;
	buf_init(&b);
	/* a fresh line, reverse video, then back to normal: kvcon's own words, visibly apart from the guest's */
	buf_printf(&b, "\r\n\033[0;7m%s\033[0m\r\n", esc);
	vtpane_input(p, b.data, b.len);
	buf_free(&b);
	free(esc);
}

void vtpane_resize(struct vtpane *p, int rows, int cols)
{
	if (rows < 1)
		rows = 1;
	if (cols < VTPANE_MIN_COLS)
		cols = VTPANE_MIN_COLS;
	if (rows == p->rows && cols == p->cols)
		return;
	bool shrinks = rows < p->rows || cols < p->cols;
	/* libvterm calls cb_resize, which resizes the screens and the damage map */
	vterm_set_size(p->vt, rows, cols);
	if (p->margins_set || (shrinks && p->cursor_saved)) {
		/* libvterm 0.1.4 keeps a scroll region's top and a left margin that are now outside the screen, and the
		 * next line feed then moves a negative number of bytes (heap corruption; found by test_vtfast): the
		 * margins go back to the whole screen, as xterm does on a resize, and the cursor stays where it was */
		VTermPos pos;
		vterm_state_get_cursorpos(p->state, &pos);
		char seq[64];
		int n = snprintf(seq, sizeof seq, "\033[r\033[s\033[%d;%dH%s", pos.row + 1, pos.col + 1,
				 shrinks && p->cursor_saved ? "\0337" : "");
		/* likewise a saved cursor (DECSC, the alternate screen's) outside the smaller screen: DECRC would put
		 * libvterm's cursor there and the next DECDWL writes past its line array, so the saved cursor becomes
		 * the current one */
		vt_write(p, seq, (size_t)n);
		p->margins_set = false;
	}
}

void vtpane_size(const struct vtpane *p, int *rows, int *cols)
{
	*rows = p->rows;
	*cols = p->cols;
}

bool vtpane_dirty(const struct vtpane *p)
{
	if (p->all_dirty || p->input_pending)
		return true;
	for (int r = 0; r < p->rows; r++)
		if (row_dirty(p, r))
			return true;
	return false;
}

/* ---- drawing ---- */

static bool between(size_t l, int c, size_t l0, int c0, size_t l1, int c1)
{
	if (l < l0 || l > l1)
		return false;
	if (l == l0 && c < c0)
		return false;
	if (l == l1 && c > c1)
		return false;
	return true;
}

/* Draws columns [c0, c1) of a row, and a cell more on either side (from the start of a wide character there), so
 * that curses meets the halves of wide characters at the edges in the order a whole row's drawing would. */
static void draw_row(struct vtpane *p, WINDOW *win, int y, int x, int row, struct vtcell *cells, int c0, int c1)
{
	size_t top = total_lines(p) - (size_t)p->rows - (size_t)p->view_off;
	size_t abs = top + (size_t)row;
	get_line(p, abs, cells);
	size_t s0l = 0, s1l = 0;
	int s0c = 0, s1c = 0;
	if (p->cm_on && p->sel_on) {
		bool fwd = p->sel_line < p->cm_line || (p->sel_line == p->cm_line && p->sel_col <= p->cm_col);
		s0l = fwd ? p->sel_line : p->cm_line;
		s0c = fwd ? p->sel_col : p->cm_col;
		s1l = fwd ? p->cm_line : p->sel_line;
		s1c = fwd ? p->cm_col : p->sel_col;
	}
	bool live_cursor = p->view_off == 0 && !p->cm_on && p->cursor_visible && row == p->cursor.row;
	c0 = c0 > 0 ? c0 - 1 : 0;
	c1 = c1 < p->cols ? c1 + 1 : p->cols;
	if (c0 > 0 && cells[c0].ch == UINT32_MAX)
		c0--;
	for (int c = c0; c < c1; c++) {
		struct vtcell *cell = &cells[c];
		if (cell->ch == UINT32_MAX) {
			if (c > 0 && cells[c - 1].width == 2 && cells[c - 1].ch != UINT32_MAX)
				continue; /* curses drew it with its left half */
			/* the right half of a wide character that is gone (a move or erase split it): a blank, else the
			 * cell would keep whatever was drawn there before */
			cell->ch = 0;
		}
		attr_t a = A_NORMAL;
		if (cell->attrs & CA_BOLD)
			a |= A_BOLD;
		if (cell->attrs & CA_UNDERLINE)
			a |= A_UNDERLINE;
		if (cell->attrs & CA_ITALIC)
			a |= A_ITALIC;
		if (cell->attrs & CA_BLINK)
			a |= A_BLINK;
		bool rev = cell->attrs & CA_REVERSE;
		if (live_cursor && c == p->cursor.col)
			rev = !rev;
		if (p->cm_on && abs == p->cm_line && c == p->cm_col)
			rev = !rev;
		else if (p->cm_on && p->sel_on && between(abs, c, s0l, s0c, s1l, s1c))
			rev = !rev;
		if (p->hl_on && abs == p->hl_line && c >= p->hl_col && c < p->hl_col + p->hl_len)
			a |= A_STANDOUT | A_BOLD;
		if (rev)
			a |= A_REVERSE;
		int pair = color_pair(p, cell->fg, cell->bg);
		wchar_t w[3] = { safe_char(cell->ch), 0, 0 };
		int cw = wcwidth(w[0]);
		if (cw == 2 && c + 1 >= p->cols)
			w[0] = L' '; /* a wide character cut by the right edge */
		if (cw == 0) { /* a combining mark alone in its cell: on a blank, or curses would add it to the cell
				* before and leave this one as it was */
			w[1] = w[0];
			w[0] = L' ';
		}
		cchar_t cc;
		setcchar(&cc, w, a, 0, &pair);
		mvwadd_wch(win, y, x + c, &cc);
		if (cw != 2 && cell->width == 2 && c + 1 < p->cols) {
			/* a wide character replaced by a narrow one keeps its two columns */
			wchar_t sp[2] = { L' ', 0 };
			setcchar(&cc, sp, a, 0, &pair);
			mvwadd_wch(win, y, x + c + 1, &cc);
		}
	}
}

static void draw_prompt(struct vtpane *p, WINDOW *win, int y, int x)
{
	struct buf b;
	buf_init(&b);
	buf_printf(&b, "%c%s", p->prompt_backward ? '?' : '/', p->prompt.data ? p->prompt.data : "");
	char *esc = util_escape_display(b.data);
	wattr_set(win, A_REVERSE, 0, NULL);
	mvwhline(win, y + p->rows - 1, x, ' ', p->cols);
	mvwaddnstr(win, y + p->rows - 1, x, esc, p->cols);
	wattr_set(win, A_NORMAL, 0, NULL);
	free(esc);
	buf_free(&b);
}

bool vtpane_draw(struct vtpane *p, WINDOW *win, int y, int x, bool full)
{
	p->input_pending = false;
	p->ncolors = has_colors() ? COLORS : 0;
	p->direct = p->ncolors >= 0x1000000 && tigetflag("RGB") > 0;
	if (full || p->all_dirty || p->cm_on || p->hl_on)
		mark_rows(p, 0, p->rows);
	/* the cursor cell of the previous frame (the cursor may have moved without damage) */
	mark_cells(p, p->drawn_cursor_row, p->drawn_cursor_col, p->drawn_cursor_col + 1);
	mark_cells(p, p->cursor.row, p->cursor.col, p->cursor.col + 1);
	bool drew = false;
	struct vtcell *cells = xcalloc((size_t)p->cols, sizeof *cells);
	for (int r = 0; r < p->rows; r++) {
		if (!row_dirty(p, r))
			continue;
		draw_row(p, win, y + r, x, r, cells, p->dirty[r].c0, p->dirty[r].c1);
		p->dirty[r] = (struct dspan){ 0, 0 };
		drew = true;
	}
	free(cells);
	p->drawn_cursor_row = p->cursor.row;
	p->drawn_cursor_col = p->cursor.col;
	p->all_dirty = false;
	if (p->prompt_on) {
		draw_prompt(p, win, y, x);
		mark_rows(p, p->rows - 1, p->rows);
	}
	return drew;
}

/* ---- keys ---- */

struct keymap {
	int key;
	VTermKey vk;
	int mod;
};

static const struct keymap keys[] = {
	{ KEY_UP, VTERM_KEY_UP, 0 },           { KEY_DOWN, VTERM_KEY_DOWN, 0 },
	{ KEY_LEFT, VTERM_KEY_LEFT, 0 },       { KEY_RIGHT, VTERM_KEY_RIGHT, 0 },
	{ KEY_HOME, VTERM_KEY_HOME, 0 },       { KEY_END, VTERM_KEY_END, 0 },
	{ KEY_PPAGE, VTERM_KEY_PAGEUP, 0 },    { KEY_NPAGE, VTERM_KEY_PAGEDOWN, 0 },
	{ KEY_IC, VTERM_KEY_INS, 0 },          { KEY_DC, VTERM_KEY_DEL, 0 },
	{ KEY_BACKSPACE, VTERM_KEY_BACKSPACE, 0 }, { KEY_ENTER, VTERM_KEY_ENTER, 0 },
	{ KEY_BTAB, VTERM_KEY_TAB, VTERM_MOD_SHIFT }, { KEY_SR, VTERM_KEY_UP, VTERM_MOD_SHIFT },
	{ KEY_SF, VTERM_KEY_DOWN, VTERM_MOD_SHIFT }, { KEY_SLEFT, VTERM_KEY_LEFT, VTERM_MOD_SHIFT },
	{ KEY_SRIGHT, VTERM_KEY_RIGHT, VTERM_MOD_SHIFT }, { KEY_SHOME, VTERM_KEY_HOME, VTERM_MOD_SHIFT },
	{ KEY_SEND, VTERM_KEY_END, VTERM_MOD_SHIFT }, { KEY_SDC, VTERM_KEY_DEL, VTERM_MOD_SHIFT },
	{ KEY_SIC, VTERM_KEY_INS, VTERM_MOD_SHIFT }, { KEY_A1, VTERM_KEY_HOME, 0 },
	{ KEY_C1, VTERM_KEY_END, 0 },          { KEY_A3, VTERM_KEY_PAGEUP, 0 },
	{ KEY_C3, VTERM_KEY_PAGEDOWN, 0 },
};

/* ncurses names modified cursor keys "kUP5" (ctrl-up) and so on; the digit is 1 + shift|alt<<1|ctrl<<2. */
static const struct {
	const char *name;
	VTermKey vk;
} named[] = {
	{ "kUP", VTERM_KEY_UP },   { "kDN", VTERM_KEY_DOWN }, { "kLFT", VTERM_KEY_LEFT }, { "kRIT", VTERM_KEY_RIGHT },
	{ "kHOM", VTERM_KEY_HOME }, { "kEND", VTERM_KEY_END }, { "kDC", VTERM_KEY_DEL },   { "kIC", VTERM_KEY_INS },
	{ "kPRV", VTERM_KEY_PAGEUP }, { "kNXT", VTERM_KEY_PAGEDOWN },
};

static bool send_keycode(struct vtpane *p, int ch, int mods)
{
	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
		if (keys[i].key == ch) {
			vterm_keyboard_key(p->vt, keys[i].vk, (VTermModifier)(keys[i].mod | mods));
			return true;
		}
	}
	if (ch >= KEY_F(1) && ch <= KEY_F(48)) {
		/* xterm terminfo: F13-F24 are shift+F1-F12, F25-F36 ctrl, F37-F48 ctrl+shift */
		int n = ch - KEY_F(0) - 1;
		static const int fmods[4] = { 0, VTERM_MOD_SHIFT, VTERM_MOD_CTRL, VTERM_MOD_CTRL | VTERM_MOD_SHIFT };
		vterm_keyboard_key(p->vt, VTERM_KEY_FUNCTION(n % 12 + 1), (VTermModifier)(fmods[n / 12] | mods));
		return true;
	}
	const char *name = keyname(ch);
	if (!name)
		return false;
	for (size_t i = 0; i < sizeof named / sizeof named[0]; i++) {
		size_t l = strlen(named[i].name);
		if (strncmp(name, named[i].name, l) == 0 && name[l] >= '2' && name[l] <= '8' && name[l + 1] == '\0') {
			int m = name[l] - '1';
			int vm = ((m & 1) ? VTERM_MOD_SHIFT : 0) | ((m & 2) ? VTERM_MOD_ALT : 0) | ((m & 4) ? VTERM_MOD_CTRL : 0);
			vterm_keyboard_key(p->vt, named[i].vk, (VTermModifier)(vm | mods));
			return true;
		}
	}
	return false;
}

static void copy_key(struct vtpane *p, int ch, bool keycode);

bool vtpane_key(struct vtpane *p, int ch, bool keycode, int mods)
{
	if (p->cm_on) {
		copy_key(p, ch, keycode);
		return true;
	}
	if (p->view_off) {
		p->view_off = 0; /* typing returns to the live screen, like tmux */
		p->all_dirty = true;
	}
	if (p->hl_on) {
		p->hl_on = false;
		p->all_dirty = true;
	}
	if (keycode)
		return send_keycode(p, ch, mods);
	if (ch == 0x7f || ch == 0x08) {
		vterm_keyboard_key(p->vt, VTERM_KEY_BACKSPACE, (VTermModifier)mods);
		return true;
	}
	if (ch == '\n' || ch == '\r') {
		vterm_keyboard_key(p->vt, VTERM_KEY_ENTER, (VTermModifier)mods);
		return true;
	}
	if (ch == '\t') {
		vterm_keyboard_key(p->vt, VTERM_KEY_TAB, (VTermModifier)mods);
		return true;
	}
	if (ch == 0x1b) {
		vterm_keyboard_key(p->vt, VTERM_KEY_ESCAPE, (VTermModifier)mods);
		return true;
	}
	if (ch < 0 || ch > 0x10ffff)
		return false;
	if (ch < 0x20 && (mods & VTPANE_MOD_ALT)) {
		/* Alt+Ctrl+letter: ESC then the control byte */
		char b[2] = { 0x1b, (char)ch };
		on_vterm_output(b, 2, p);
		return true;
	}
	vterm_keyboard_unichar(p->vt, (uint32_t)ch, (VTermModifier)mods);
	return true;
}

void vtpane_paste(struct vtpane *p, const char *text, size_t len)
{
	/* bracketed (ESC[200~ ... ESC[201~) only when the guest turned DECSET 2004 on: libvterm knows */
	vterm_keyboard_start_paste(p->vt);
	/* pasted text goes out as typed bytes; line ends as CR as a terminal sends them; the bracket sequences
	 * themselves never pass (text could otherwise end the paste early and be taken as typed commands) */
	struct buf b;
	buf_init(&b);
	for (size_t i = 0; i < len; i++) {
		if (text[i] == '\033' && len - i >= 6 &&
		    (memcmp(text + i, "\033[200~", 6) == 0 || memcmp(text + i, "\033[201~", 6) == 0)) {
			i += 5;
			continue;
		}
		if (text[i] == '\r' && i + 1 < len && text[i + 1] == '\n')
			continue; /* CR LF: one line end */
		buf_add_char(&b, text[i] == '\n' ? '\r' : text[i]);
	}
	if (b.len)
		on_vterm_output(b.data, b.len, p);
	buf_free(&b);
	vterm_keyboard_end_paste(p->vt);
}

/* ---- scrollback view, search, copy mode ---- */

void vtpane_scroll(struct vtpane *p, int delta)
{
	long v = (long)p->view_off + delta;
	if (v < 0)
		v = 0;
	if (v > (long)p->sb_count)
		v = (long)p->sb_count;
	if (v != p->view_off) {
		p->view_off = (int)v;
		p->all_dirty = true;
	}
}

int vtpane_view_offset(const struct vtpane *p)
{
	return p->view_off;
}

size_t vtpane_scrollback_count(const struct vtpane *p)
{
	return p->sb_count;
}

/* Scrolls so that line abs is visible. */
static void show_line(struct vtpane *p, size_t abs)
{
	size_t top = total_lines(p) - (size_t)p->rows - (size_t)p->view_off;
	if (abs < top)
		p->view_off += (int)(top - abs);
	else if (abs >= top + (size_t)p->rows)
		p->view_off -= (int)(abs - (top + (size_t)p->rows) + 1);
	if (p->view_off < 0)
		p->view_off = 0;
	p->all_dirty = true;
}

/* Case-insensitive match of needle (code points) at cells[c...]; returns the match width in cells or 0. */
static int match_at(const struct vtcell *cells, int cols, int c, const wchar_t *nd, size_t nn)
{
	int k = c;
	for (size_t i = 0; i < nn; i++) {
		while (k < cols && cells[k].ch == UINT32_MAX)
			k++;
		if (k >= cols)
			return 0;
		wchar_t w = cells[k].ch ? (wchar_t)cells[k].ch : L' ';
		if (towlower((wint_t)w) != towlower((wint_t)nd[i]))
			return 0;
		k++;
	}
	return k - c;
}

static bool search_from(struct vtpane *p, size_t line, int col, bool backward)
{
	if (!p->needle || !p->needle[0])
		return false;
	wchar_t nd[256];
	mbstate_t st;
	memset(&st, 0, sizeof st);
	const char *src = p->needle;
	size_t nn = mbsrtowcs(nd, &src, 255, &st);
	if (nn == (size_t)-1 || nn == 0)
		return false;
	struct vtcell *cells = xcalloc((size_t)p->cols, sizeof *cells);
	size_t total = total_lines(p);
	bool found = false;
	for (size_t step = 0; step <= total && !found; step++) {
		size_t l;
		if (backward) {
			if (step > line)
				break;
			l = line - step;
		} else {
			l = line + step;
			if (l >= total)
				break;
		}
		get_line(p, l, cells);
		if (backward) {
			int start = step == 0 ? col - 1 : p->cols - 1;
			for (int c = start; c >= 0 && !found; c--) {
				int w = match_at(cells, p->cols, c, nd, nn);
				if (w) {
					found = true;
					p->hl_line = l, p->hl_col = c, p->hl_len = w;
				}
			}
		} else {
			int start = step == 0 ? col + 1 : 0;
			for (int c = start; c < p->cols && !found; c++) {
				int w = match_at(cells, p->cols, c, nd, nn);
				if (w) {
					found = true;
					p->hl_line = l, p->hl_col = c, p->hl_len = w;
				}
			}
		}
	}
	free(cells);
	if (found) {
		p->hl_on = true;
		if (p->cm_on) {
			p->cm_line = p->hl_line;
			p->cm_col = p->hl_col;
		}
		show_line(p, p->hl_line);
	}
	return found;
}

bool vtpane_search(struct vtpane *p, const char *needle, bool backward)
{
	free(p->needle);
	p->needle = xstrdup(needle);
	p->needle_backward = backward;
	size_t line;
	int col;
	if (p->hl_on) {
		line = p->hl_line;
		col = p->hl_col;
	} else if (p->cm_on) {
		line = p->cm_line;
		col = p->cm_col;
	} else {
		/* from the bottom of the view going back, or from its top going forward */
		size_t top = total_lines(p) - (size_t)p->rows - (size_t)p->view_off;
		line = backward ? top + (size_t)p->rows - 1 : top;
		col = backward ? p->cols : -1;
	}
	return search_from(p, line, col, backward);
}

void vtpane_copy_mode(struct vtpane *p, bool on)
{
	if (on == p->cm_on)
		return;
	p->cm_on = on;
	p->sel_on = false;
	p->prompt_on = false;
	p->all_dirty = true;
	if (on) {
		size_t top = total_lines(p) - (size_t)p->rows - (size_t)p->view_off;
		p->cm_line = p->view_off ? top : p->sb_count + (size_t)(p->cursor.row >= 0 ? p->cursor.row : 0);
		p->cm_col = p->view_off ? 0 : p->cursor.col;
	} else {
		p->view_off = 0;
		p->hl_on = false;
	}
}

bool vtpane_in_copy_mode(const struct vtpane *p)
{
	return p->cm_on;
}

const char *vtpane_copied(const struct vtpane *p)
{
	return p->copied;
}

static void copy_selection(struct vtpane *p)
{
	size_t l0 = p->sel_line, l1 = p->cm_line;
	int c0 = p->sel_col, c1 = p->cm_col;
	if (!p->sel_on) {
		l0 = l1 = p->cm_line;
		c0 = 0;
		c1 = p->cols - 1;
	} else if (l0 > l1 || (l0 == l1 && c0 > c1)) {
		size_t tl = l0;
		l0 = l1, l1 = tl;
		int tc = c0;
		c0 = c1, c1 = tc;
	}
	struct buf b;
	buf_init(&b);
	struct vtcell *cells = xcalloc((size_t)p->cols, sizeof *cells);
	for (size_t l = l0; l <= l1; l++) {
		get_line(p, l, cells);
		size_t mark = b.len;
		cells_text(&b, cells, l == l0 ? c0 : 0, l == l1 ? c1 + 1 : p->cols);
		trim_trailing(&b, mark);
		if (l != l1)
			buf_add_char(&b, '\n');
	}
	free(cells);
	free(p->copied);
	p->copied = b.data ? buf_steal(&b) : xstrdup("");
}

static void cm_move(struct vtpane *p, long dl, int dc)
{
	long l = (long)p->cm_line + dl;
	long max = (long)total_lines(p) - 1;
	p->cm_line = (size_t)(l < 0 ? 0 : l > max ? max : l);
	int c = p->cm_col + dc;
	p->cm_col = c < 0 ? 0 : c >= p->cols ? p->cols - 1 : c;
	show_line(p, p->cm_line);
}

static void prompt_key(struct vtpane *p, int ch, bool keycode)
{
	if (!keycode && (ch == '\n' || ch == '\r')) {
		p->prompt_on = false;
		if (p->prompt.len)
			vtpane_search(p, p->prompt.data, p->prompt_backward);
		p->all_dirty = true;
	} else if (!keycode && ch == 0x1b) {
		p->prompt_on = false;
		p->all_dirty = true;
	} else if ((keycode && ch == KEY_BACKSPACE) || (!keycode && (ch == 0x7f || ch == 0x08))) {
		while (p->prompt.len && ((uint8_t)p->prompt.data[p->prompt.len - 1] & 0xc0) == 0x80)
			p->prompt.len--;
		if (p->prompt.len)
			p->prompt.len--;
		p->prompt.data[p->prompt.len] = '\0';
	} else if (!keycode && ch >= 0x20 && p->prompt.len < 200) {
		buf_add_utf8(&p->prompt, (uint32_t)ch);
	}
}

static void copy_key(struct vtpane *p, int ch, bool keycode)
{
	if (p->prompt_on) {
		prompt_key(p, ch, keycode);
		return;
	}
	p->all_dirty = true;
	int page = p->rows > 1 ? p->rows - 1 : 1;
	if (keycode) {
		switch (ch) {
		case KEY_UP: cm_move(p, -1, 0); break;
		case KEY_DOWN: cm_move(p, 1, 0); break;
		case KEY_LEFT: cm_move(p, 0, -1); break;
		case KEY_RIGHT: cm_move(p, 0, 1); break;
		case KEY_PPAGE: cm_move(p, -page, 0); break;
		case KEY_NPAGE: cm_move(p, page, 0); break;
		case KEY_HOME: cm_move(p, 0, -p->cols); break;
		case KEY_END: cm_move(p, 0, p->cols); break;
		case KEY_ENTER: copy_selection(p); vtpane_copy_mode(p, false); break;
		default: break;
		}
		return;
	}
	switch (ch) {
	case 'k': cm_move(p, -1, 0); break;
	case 'j': cm_move(p, 1, 0); break;
	case 'h': cm_move(p, 0, -1); break;
	case 'l': cm_move(p, 0, 1); break;
	case '0': cm_move(p, 0, -p->cols); break;
	case '$': cm_move(p, 0, p->cols); break;
	case 'g': cm_move(p, -(long)total_lines(p), 0); break;
	case 'G': cm_move(p, (long)total_lines(p), 0); break;
	case 0x02: cm_move(p, -page, 0); break; /* ctrl-b */
	case 0x06: cm_move(p, page, 0); break;  /* ctrl-f */
	case 'v':
	case ' ':
		p->sel_on = !p->sel_on;
		p->sel_line = p->cm_line;
		p->sel_col = p->cm_col;
		break;
	case 'y':
	case '\n':
	case '\r':
		copy_selection(p);
		vtpane_copy_mode(p, false);
		break;
	case '/':
	case '?':
		p->prompt_on = true;
		p->prompt_backward = ch == '?';
		buf_reset(&p->prompt);
		break;
	case 'n':
	case 'N':
		if (p->needle)
			search_from(p, p->cm_line, p->cm_col, ch == 'N' ? !p->needle_backward : p->needle_backward);
		break;
	case 'p':
		/* the last copied text into the guest, as a paste */
		vtpane_copy_mode(p, false);
		if (p->copied && *p->copied)
			vtpane_paste(p, p->copied, strlen(p->copied));
		break;
	case 'q':
	case 0x1b:
		vtpane_copy_mode(p, false);
		break;
	default:
		break;
	}
}

/* ---- what the guest asked for ---- */

const char *vtpane_title(const struct vtpane *p)
{
	return p->title;
}

bool vtpane_altscreen(const struct vtpane *p)
{
	return p->altscreen;
}

int vtpane_mouse_mode(const struct vtpane *p)
{
	return p->mouse;
}

bool vtpane_cursor(const struct vtpane *p, int *row, int *col)
{
	*row = p->cursor.row;
	*col = p->cursor.col;
	return p->cursor_visible;
}
