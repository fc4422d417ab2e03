/* fbcells: scales a framebuffer into half-block terminal cells (see fbcells.h).
 *
 * Geometry. The grid of cols x rows cells is a grid of cols x 2*rows "subpixels" (two a cell). The framebuffer is
 * mapped onto a target image of tw x th subpixels placed at (ox, oy) in that grid: fit scales it (aspect kept,
 * centred, black around it), 1:1 maps one pixel to one subpixel and pans. Area averaging is exact integer
 * arithmetic: along x, target column t covers the source interval [t*fbw, (t+1)*fbw) measured in units where a
 * source pixel is tw units wide; each source pixel weighs its overlap with that interval, so the weights of a
 * column add up to fbw (same along y). Integer weights make the result deterministic, which is what lets a
 * damaged-rectangle update reproduce a full redraw exactly and lets golden files be compared byte for byte.
 * subpixel() states the sum one subpixel at a time (1:1, and a source smaller than its layout, use it); a fit layout
 * takes compute_fit(), the same sums reordered for speed (tests/unit/test_fbcells.c holds it to a reference). */
#include "console/fbcells.h"

#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/xmalloc.h"

/* One target column (or row): the source pixels it averages and where their weights start. */
struct span {
	int start, n, w;
};

struct axis {
	struct span *spans; /* one per target subpixel along this axis */
	uint32_t *weights;
	size_t nweights;
	uint32_t total; /* sum of the weights of every span */
	uint32_t unit;	/* the weight of a source pixel wholly inside a span (the target size) */
};

struct fbcells {
	int cols, rows;
	int fbw, fbh;
	enum fbc_scale mode;
	int pan_x, pan_y;
	int tw, th, ox, oy;
	struct axis ax, ay;
	bool stale; /* layout changed: the next update is a full one */
	struct fbc_cell *cells;
	uint8_t *dirty;
	size_t ndirty;
	/* the fast fit path's scratch (see compute_fit): a target row's column sums (R, G, B arrays), two subpixel
	 * rows, and the reciprocal that replaces the division by the total weight */
	uint32_t *cs, *sub;
	uint64_t tot, recip;
};

struct fbcells *fbcells_new(void)
{
	struct fbcells *f = xcalloc(1, sizeof *f);
	f->stale = true;
	return f;
}

static void axis_free(struct axis *a)
{
	free(a->spans);
	free(a->weights);
	memset(a, 0, sizeof *a);
}

void fbcells_free(struct fbcells *f)
{
	if (f == NULL)
		return;
	axis_free(&f->ax);
	axis_free(&f->ay);
	free(f->cells);
	free(f->dirty);
	free(f->cs);
	free(f->sub);
	free(f);
}

/* Spans for mapping src source pixels onto dst target subpixels (dst may be larger: magnification). */
static void axis_build(struct axis *a, int src, int dst, bool identity)
{
	axis_free(a);
	if (src <= 0 || dst <= 0)
		return;
	a->spans = xreallocarray(NULL, (size_t)dst, sizeof *a->spans);
	if (identity) {
		a->weights = xmalloc(sizeof *a->weights);
		a->weights[0] = 1;
		for (int t = 0; t < dst; t++)
			a->spans[t] = (struct span){t, 1, 0};
		a->total = 1;
		return;
	}
	/* each span touches at most src/dst + 2 source pixels */
	size_t cap = (size_t)dst * ((size_t)src / (size_t)dst + 2);
	a->weights = xreallocarray(NULL, cap, sizeof *a->weights);
	uint64_t S = (uint64_t)src, D = (uint64_t)dst;
	for (int t = 0; t < dst; t++) {
		uint64_t lo = (uint64_t)t * S, hi = lo + S;	      /* in units of 1/dst source pixel */
		int i0 = (int)(lo / D), i1 = (int)((hi + D - 1) / D); /* [i0, i1) */
		struct span *sp = &a->spans[t];
		sp->start = i0;
		sp->n = i1 - i0;
		sp->w = (int)a->nweights;
		for (int i = i0; i < i1; i++) {
			uint64_t plo = (uint64_t)i * D, phi = plo + D;
			uint64_t l = plo > lo ? plo : lo, h = phi < hi ? phi : hi;
			a->weights[a->nweights++] = (uint32_t)(h - l);
		}
	}
	a->total = (uint32_t)S;
	a->unit = (uint32_t)D;
}

static int clampi(int v, int lo, int hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

void fbcells_layout(struct fbcells *f, int cols, int rows, int fb_w, int fb_h, enum fbc_scale mode, int pan_x,
		    int pan_y)
{
	cols = cols > 0 ? cols : 0;
	rows = rows > 0 ? rows : 0;
	fb_w = fb_w > 0 ? fb_w : 0;
	fb_h = fb_h > 0 ? fb_h : 0;
	int H = 2 * rows;
	if (mode == FBC_ONE) {
		pan_x = fb_w > cols ? clampi(pan_x, 0, fb_w - cols) : 0;
		pan_y = fb_h > H ? clampi(pan_y, 0, fb_h - H) : 0;
	} else {
		pan_x = pan_y = 0;
	}
	if (!f->stale && cols == f->cols && rows == f->rows && fb_w == f->fbw && fb_h == f->fbh && mode == f->mode &&
	    pan_x == f->pan_x && pan_y == f->pan_y)
		return;
	bool resized = cols != f->cols || rows != f->rows || f->cells == NULL;
	f->cols = cols;
	f->rows = rows;
	f->fbw = fb_w;
	f->fbh = fb_h;
	f->mode = mode;
	f->pan_x = pan_x;
	f->pan_y = pan_y;
	if (fb_w == 0 || fb_h == 0 || cols == 0 || rows == 0) {
		f->tw = f->th = 0;
		f->ox = f->oy = 0;
	} else if (mode == FBC_ONE) {
		f->tw = fb_w;
		f->th = fb_h;
		f->ox = fb_w <= cols ? (cols - fb_w) / 2 : -pan_x;
		f->oy = fb_h <= H ? (H - fb_h) / 2 : -pan_y;
	} else if ((int64_t)fb_w * H <= (int64_t)fb_h * cols) {
		f->th = H;
		f->tw = (int)(((int64_t)fb_w * H + fb_h / 2) / fb_h);
		f->tw = clampi(f->tw, 1, cols);
		f->ox = (cols - f->tw) / 2;
		f->oy = 0;
	} else {
		f->tw = cols;
		f->th = (int)(((int64_t)fb_h * cols + fb_w / 2) / fb_w);
		f->th = clampi(f->th, 1, H);
		f->ox = 0;
		f->oy = (H - f->th) / 2;
	}
	axis_build(&f->ax, fb_w, f->tw, mode == FBC_ONE);
	axis_build(&f->ay, fb_h, f->th, mode == FBC_ONE);
	free(f->cs);
	free(f->sub);
	f->cs = xreallocarray(NULL, 3 * (size_t)fb_w + 1, sizeof *f->cs);
	f->sub = xreallocarray(NULL, 2 * (size_t)cols + 1, sizeof *f->sub);
	f->tot = (uint64_t)f->ax.total * f->ay.total;
	f->recip = f->tot ? ((uint64_t)1 << 56) / f->tot : 0;
	if (resized) {
		size_t n = (size_t)cols * (size_t)rows;
		free(f->cells);
		free(f->dirty);
		f->cells = xcalloc(n ? n : 1, sizeof *f->cells);
		f->dirty = xcalloc(n ? n : 1, 1);
		f->ndirty = 0;
	}
	f->stale = true;
}

/* The colour of subpixel (sx, sy) of the grid. */
static uint32_t subpixel(const struct fbcells *f, const struct fbc_src *src, int sx, int sy)
{
	int tx = sx - f->ox, ty = sy - f->oy;
	if (tx < 0 || ty < 0 || tx >= f->tw || ty >= f->th || src->pix == NULL)
		return 0;
	const struct span *xs = &f->ax.spans[tx], *ys = &f->ay.spans[ty];
	if (xs->start + xs->n > src->w || ys->start + ys->n > src->h)
		return 0; /* the source is smaller than the layout says: never read outside it */
	if (f->mode == FBC_ONE) {
		const uint8_t *p = src->pix + (size_t)ys->start * src->stride + (size_t)xs->start * 4;
		return (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
	}
	uint64_t r = 0, g = 0, b = 0;
	const uint32_t *wx = f->ax.weights + xs->w, *wy = f->ay.weights + ys->w;
	for (int j = 0; j < ys->n; j++) {
		const uint8_t *p = src->pix + (size_t)(ys->start + j) * src->stride + (size_t)xs->start * 4;
		uint64_t rr = 0, gg = 0, bb = 0;
		for (int i = 0; i < xs->n; i++, p += 4) {
			rr += (uint64_t)p[0] * wx[i];
			gg += (uint64_t)p[1] * wx[i];
			bb += (uint64_t)p[2] * wx[i];
		}
		r += rr * wy[j];
		g += gg * wy[j];
		b += bb * wy[j];
	}
	uint64_t tot = (uint64_t)f->ax.total * f->ay.total, half = tot / 2;
	return (uint32_t)((r + half) / tot) << 16 | (uint32_t)((g + half) / tot) << 8 | (uint32_t)((b + half) / tot);
}

static void compute_cell(struct fbcells *f, const struct fbc_src *src, int col, int row)
{
	struct fbc_cell c = {subpixel(f, src, col, 2 * row), subpixel(f, src, col, 2 * row + 1)};
	size_t i = (size_t)row * (size_t)f->cols + (size_t)col;
	if (c.fg == f->cells[i].fg && c.bg == f->cells[i].bg)
		return;
	f->cells[i] = c;
	if (!f->dirty[i]) {
		f->dirty[i] = 1;
		f->ndirty++;
	}
}

/* ---- the fast fit path ----
 *
 * The same sums as subpixel(), reordered so that no pixel costs a division or a call. The weights are separable
 * (wx[i] * wy[j]): for one target row, each source column is first summed down the rows the target row covers
 * (column sums, one 32-bit word a channel: 255 * fbh < 2^32), then each target column sums its span of column
 * sums. Along either axis a pixel wholly inside a span weighs exactly the span's unit (the target size), so only a
 * span's first and last pixels are multiplied; down the columns the rows between are added two pixels a 64-bit
 * word, each channel in its own 16-bit lane. The final rounding divides by a constant: a 2^56 reciprocal and one
 * correction step give exactly (sum + tot/2) / tot. */

#define FIT_MAX_H 16843008	      /* 255 * fbh < 2^32: a column sum fits a 32-bit word (lane) */
#define PAIR_LO 0x000000ff000000ffull /* byte 0 of both pixels of a pair */
#define PAIR_RB 0x00ff00ff00ff00ffull /* R and B of both pixels, 16-bit lanes */
#define PAIR_16 0x0000ffff0000ffffull /* the low 16-bit lane of both 32-bit halves */

/* Column sums of target row ty for source columns [xa, xb) into f->cs (R, G, B arrays of fbw words). */
static void fit_cols(struct fbcells *f, const struct fbc_src *src, int ty, int xa, int xb)
{
	const struct span *ys = &f->ay.spans[ty];
	const uint32_t *wy = f->ay.weights + ys->w;
	int n = ys->n;
	uint64_t wt = wy[0], wb = n >= 2 ? wy[n - 1] : 0, unit = f->ay.unit;
	size_t stride = src->stride;
	const uint8_t *row0 = src->pix + (size_t)ys->start * stride;
	uint32_t *cr = f->cs, *cg = cr + f->fbw, *cb = cg + f->fbw;
	int x = xa;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	/* two pixels a word: channel c of pixel 0 in bits 0..31, of pixel 1 in bits 32..63 */
	for (; x + 2 <= xb; x += 2) {
		const uint8_t *p = row0 + (size_t)x * 4;
		uint64_t q, R, G, B;
		memcpy(&q, p, 8);
		R = wt * (q & PAIR_LO);
		G = wt * (q >> 8 & PAIR_LO);
		B = wt * (q >> 16 & PAIR_LO);
		if (n >= 2) {
			memcpy(&q, p + (size_t)(n - 1) * stride, 8);
			R += wb * (q & PAIR_LO);
			G += wb * (q >> 8 & PAIR_LO);
			B += wb * (q >> 16 & PAIR_LO);
		}
		for (int j = 1; j < n - 1;) {
			/* the rows between, unweighted, at most 256 at a time so that no 16-bit lane overflows */
			int e = n - 1 - j > 256 ? j + 256 : n - 1;
			uint64_t rb = 0, g = 0;
			for (; j < e; j++) {
				memcpy(&q, p + (size_t)j * stride, 8);
				rb += q & PAIR_RB;
				g += q >> 8 & PAIR_LO;
			}
			R += unit * (rb & PAIR_16);
			B += unit * (rb >> 16 & PAIR_16);
			G += unit * g;
		}
		cr[x] = (uint32_t)R;
		cr[x + 1] = (uint32_t)(R >> 32);
		cg[x] = (uint32_t)G;
		cg[x + 1] = (uint32_t)(G >> 32);
		cb[x] = (uint32_t)B;
		cb[x + 1] = (uint32_t)(B >> 32);
	}
#endif
	for (; x < xb; x++) {
		const uint8_t *p = row0 + (size_t)x * 4;
		uint32_t r = 0, g = 0, b = 0;
		for (int j = 0; j < n; j++, p += stride) {
			uint32_t w = wy[j];
			r += w * p[0];
			g += w * p[1];
			b += w * p[2];
		}
		cr[x] = r;
		cg[x] = g;
		cb[x] = b;
	}
}

/* (x + tot/2) / tot for one channel's weighted sum x < 255.5 * tot: with m = floor(2^56 / tot), x * m < 2^64 and
 * x * m / 2^56 falls short of x / tot by less than one, so one correction makes it exact. */
static inline uint32_t div_tot(const struct fbcells *f, uint64_t x)
{
	x += f->tot / 2;
	uint64_t q = x * f->recip >> 56;
	if (x - q * f->tot >= f->tot)
		q++;
	return (uint32_t)q;
}

/* Target row ty's colours for target columns [ta, tb) into out[ta..tb). */
static void fit_row(struct fbcells *f, const struct fbc_src *src, int ty, int ta, int tb, uint32_t *out)
{
	const struct span *sp = f->ax.spans;
	int xa = sp[ta].start, xb = sp[tb - 1].start + sp[tb - 1].n;
	fit_cols(f, src, ty, xa, xb);
	const uint32_t *cr = f->cs, *cg = cr + f->fbw, *cb = cg + f->fbw, *wts = f->ax.weights;
	uint64_t unit = f->ax.unit;
	for (int t = ta; t < tb; t++) {
		int i = sp[t].start, n = sp[t].n;
		const uint32_t *w = wts + sp[t].w;
		uint64_t R = (uint64_t)w[0] * cr[i], G = (uint64_t)w[0] * cg[i], B = (uint64_t)w[0] * cb[i];
		if (n >= 2) {
			int l = i + n - 1;
			R += (uint64_t)w[n - 1] * cr[l];
			G += (uint64_t)w[n - 1] * cg[l];
			B += (uint64_t)w[n - 1] * cb[l];
		}
		if (n >= 3) {
			uint64_t r = 0, g = 0, b = 0;
			for (int k = i + 1; k < i + n - 1; k++) {
				r += cr[k];
				g += cg[k];
				b += cb[k];
			}
			R += unit * r;
			G += unit * g;
			B += unit * b;
		}
		out[t] = div_tot(f, R) << 16 | div_tot(f, G) << 8 | div_tot(f, B);
	}
}

/* compute_cells for a fit layout whose source is as large as the layout says. */
static void compute_fit(struct fbcells *f, const struct fbc_src *src, int c0, int c1, int r0, int r1)
{
	int ta = clampi(c0 - f->ox, 0, f->tw), tb = clampi(c1 - f->ox, 0, f->tw);
	for (int r = r0; r < r1; r++) {
		for (int k = 0; k < 2; k++) {
			/* the subpixel row, indexed by column: letterbox black around the target columns */
			uint32_t *sub = f->sub + (size_t)k * (size_t)f->cols;
			int ty = 2 * r + k - f->oy;
			bool inside = ty >= 0 && ty < f->th && ta < tb;
			int a = inside ? ta + f->ox : c1, b = inside ? tb + f->ox : c1;
			for (int c = c0; c < a; c++)
				sub[c] = 0;
			for (int c = b; c < c1; c++)
				sub[c] = 0;
			if (inside)
				fit_row(f, src, ty, ta, tb, sub + f->ox);
		}
		const uint32_t *top = f->sub, *bot = f->sub + f->cols;
		struct fbc_cell *cells = f->cells + (size_t)r * (size_t)f->cols;
		uint8_t *dirty = f->dirty + (size_t)r * (size_t)f->cols;
		for (int c = c0; c < c1; c++) {
			if (top[c] == cells[c].fg && bot[c] == cells[c].bg)
				continue;
			cells[c].fg = top[c];
			cells[c].bg = bot[c];
			if (!dirty[c]) {
				dirty[c] = 1;
				f->ndirty++;
			}
		}
	}
}

static void compute_cells(struct fbcells *f, const struct fbc_src *src, int c0, int c1, int r0, int r1)
{
	if (f->mode == FBC_FIT && src->pix != NULL && f->tw > 0 && f->th > 0 && f->fbh <= FIT_MAX_H &&
	    src->w >= f->fbw && src->h >= f->fbh) {
		compute_fit(f, src, c0, c1, r0, r1);
		return;
	}
	for (int r = r0; r < r1; r++)
		for (int c = c0; c < c1; c++)
			compute_cell(f, src, c, r);
}

/* Marks every cell to be drawn again. */
static void touch_all(struct fbcells *f)
{
	size_t n = (size_t)f->cols * (size_t)f->rows;
	if (f->dirty)
		memset(f->dirty, 1, n);
	f->ndirty = n;
}

void fbcells_full(struct fbcells *f, const struct fbc_src *src)
{
	if (f->cells == NULL)
		return;
	if (f->stale)
		touch_all(f);
	f->stale = false;
	compute_cells(f, src, 0, f->cols, 0, f->rows);
}

/* Target subpixels [*lo, *hi) whose source interval meets source pixels [a, b). */
static void target_range(const struct fbcells *f, int a, int b, int src, int dst, int *lo, int *hi)
{
	if (f->mode == FBC_ONE) {
		*lo = a;
		*hi = b;
		return;
	}
	*lo = (int)((int64_t)a * dst / src);
	*hi = (int)(((int64_t)b * dst + src - 1) / src);
}

void fbcells_update(struct fbcells *f, const struct fbc_src *src, int x, int y, int w, int h)
{
	if (f->stale) {
		fbcells_full(f, src);
		return;
	}
	if (f->cells == NULL || f->tw == 0 || f->th == 0)
		return;
	int x1 = clampi(x + (w > 0 ? w : 0), 0, f->fbw), y1 = clampi(y + (h > 0 ? h : 0), 0, f->fbh);
	x = clampi(x, 0, f->fbw);
	y = clampi(y, 0, f->fbh);
	if (x >= x1 || y >= y1)
		return;
	int tx0, tx1, ty0, ty1;
	target_range(f, x, x1, f->fbw, f->tw, &tx0, &tx1);
	target_range(f, y, y1, f->fbh, f->th, &ty0, &ty1);
	int c0 = clampi(tx0 + f->ox, 0, f->cols), c1 = clampi(tx1 + f->ox, 0, f->cols);
	int s0 = clampi(ty0 + f->oy, 0, 2 * f->rows), s1 = clampi(ty1 + f->oy, 0, 2 * f->rows);
	compute_cells(f, src, c0, c1, s0 / 2, (s1 + 1) / 2);
}

int fbcells_cols(const struct fbcells *f)
{
	return f->cols;
}

int fbcells_rows(const struct fbcells *f)
{
	return f->rows;
}

const struct fbc_cell *fbcells_grid(const struct fbcells *f)
{
	return f->cells;
}

void fbcells_pan(const struct fbcells *f, int *pan_x, int *pan_y)
{
	*pan_x = f->pan_x;
	*pan_y = f->pan_y;
}

size_t fbcells_ndirty(const struct fbcells *f)
{
	return f->ndirty;
}

void fbcells_clear_dirty(struct fbcells *f)
{
	if (f->dirty)
		memset(f->dirty, 0, (size_t)f->cols * (size_t)f->rows);
	f->ndirty = 0;
}

/* ---- colour reduction ---- */

static const uint8_t cube_level[6] = {0, 95, 135, 175, 215, 255};

static int cube_index(int v)
{
	/* nearest of the six levels; the midpoints between them */
	if (v < 48)
		return 0;
	if (v < 115)
		return 1;
	return (v - 35) / 40 < 5 ? (v - 35) / 40 : 5;
}

static uint32_t sqdist(int r, int g, int b, uint32_t rgb)
{
	int dr = r - (int)(rgb >> 16 & 0xff), dg = g - (int)(rgb >> 8 & 0xff), db = b - (int)(rgb & 0xff);
	return (uint32_t)(dr * dr + dg * dg + db * db);
}

static inline uint32_t xterm256_rgb(uint8_t idx)
{
	static const uint32_t sys[16] = {0x000000, 0x800000, 0x008000, 0x808000, 0x000080, 0x800080,
					 0x008080, 0xc0c0c0, 0x808080, 0xff0000, 0x00ff00, 0xffff00,
					 0x0000ff, 0xff00ff, 0x00ffff, 0xffffff};
	if (idx < 16)
		return sys[idx];
	if (idx >= 232) {
		uint32_t v = 8 + 10u * (idx - 232u);
		return v << 16 | v << 8 | v;
	}
	int i = idx - 16;
	return (uint32_t)cube_level[i / 36] << 16 | (uint32_t)cube_level[i / 6 % 6] << 8 | cube_level[i % 6];
}

uint32_t fbcells_xterm256_rgb(uint8_t idx)
{
	return xterm256_rgb(idx);
}

uint8_t fbcells_xterm256(uint32_t rgb)
{
	int r = (int)(rgb >> 16 & 0xff), g = (int)(rgb >> 8 & 0xff), b = (int)(rgb & 0xff);
	/* the nearest cube colour is the nearest level per channel (the distance is separable) */
	uint8_t cube = (uint8_t)(16 + 36 * cube_index(r) + 6 * cube_index(g) + cube_index(b));
	/* the nearest grey (8 + 10k) is the one nearest the channels' mean: k = round(((r+g+b)/3 - 8) / 10) */
	int sum = r + g + b, k = sum < 24 ? 0 : (sum - 24 + 15) / 30;
	k = clampi(k, 0, 23);
	uint8_t grey = (uint8_t)(232 + k);
	return sqdist(r, g, b, xterm256_rgb(grey)) < sqdist(r, g, b, xterm256_rgb(cube)) ? grey : cube;
}

char fbcells_ascii(struct fbc_cell c)
{
	static const char ramp[] = " .:-=+*#%@";
	uint32_t y = 0;
	for (int k = 0; k < 2; k++) {
		uint32_t v = k ? c.bg : c.fg;
		y += 299 * (v >> 16 & 0xff) + 587 * (v >> 8 & 0xff) + 114 * (v & 0xff);
	}
	y /= 2000; /* 0..255 */
	return ramp[y * 10 / 256];
}

/* ---- terminal output ----
 *
 * A full frame is tens of thousands of colour changes, so the bytes are written straight into the buffer, a row
 * reserved at a time (EMIT_CELL_MAX bytes a cell at most), with a hand-written decimal formatter. */

/* the longest cell: "\033[38;2;255;255;255;48;2;255;255;255m" and U+2580, or a cursor move and a plain cell */
#define EMIT_CELL_MAX 64
#define EMIT_CUP_MAX 32

static const char digits2[] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
			      "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
			      "8081828384858687888990919293949596979899";

/* Decimal of v at o; returns the end. */
static inline char *put_num(char *o, unsigned v)
{
	if (v < 10) {
		*o++ = (char)('0' + v);
		return o;
	}
	if (v < 100) {
		memcpy(o, digits2 + 2 * v, 2);
		return o + 2;
	}
	if (v < 1000) {
		*o++ = (char)('0' + v / 100);
		memcpy(o, digits2 + 2 * (v % 100), 2);
		return o + 2;
	}
	char tmp[12];
	int n = 0;
	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (n)
		*o++ = tmp[--n];
	return o;
}

static inline char *put_lit(char *o, const char *s, size_t n)
{
	memcpy(o, s, n);
	return o + n;
}

struct emitter {
	enum fbc_colour mode;
	int64_t fg, bg; /* current SGR colours (RGB or palette index), -1 unknown */
	/* 256 colours: the last colour looked up in the palette (flat areas repeat it) */
	uint32_t memo_rgb;
	int memo_idx;
};

static inline int64_t palette(struct emitter *e, uint32_t rgb)
{
	if (e->memo_idx < 0 || e->memo_rgb != rgb) {
		e->memo_rgb = rgb;
		e->memo_idx = fbcells_xterm256(rgb);
	}
	return e->memo_idx;
}

static inline char *emit_colour(const struct emitter *e, char *o, bool fgnd, int64_t v)
{
	o = put_lit(o, fgnd ? "38;" : "48;", 3);
	if (e->mode == FBC_TRUECOLOUR) {
		o = put_lit(o, "2;", 2);
		o = put_num(o, (unsigned)(v >> 16 & 0xff));
		*o++ = ';';
		o = put_num(o, (unsigned)(v >> 8 & 0xff));
		*o++ = ';';
		return put_num(o, (unsigned)(v & 0xff));
	}
	o = put_lit(o, "5;", 2);
	return put_num(o, (unsigned)v);
}

static inline char *emit_cell(struct emitter *e, char *o, struct fbc_cell c)
{
	if (e->mode == FBC_MONO) {
		*o++ = fbcells_ascii(c);
		return o;
	}
	int64_t fg = c.fg, bg = c.bg;
	if (e->mode == FBC_256) {
		fg = palette(e, c.fg);
		bg = palette(e, c.bg);
	}
	/* a flat cell is a space on the background: fewer bytes, and the foreground need not change */
	bool flat = fg == bg;
	bool set_fg = !flat && fg != e->fg, set_bg = bg != e->bg;
	if (set_fg || set_bg) {
		o = put_lit(o, "\033[", 2);
		if (set_fg)
			o = emit_colour(e, o, true, fg);
		if (set_fg && set_bg)
			*o++ = ';';
		if (set_bg)
			o = emit_colour(e, o, false, bg);
		*o++ = 'm';
		if (set_fg)
			e->fg = fg;
		e->bg = bg;
	}
	if (flat)
		*o++ = ' ';
	else
		o = put_lit(o, "\xe2\x96\x80", 3); /* U+2580 UPPER HALF BLOCK */
	return o;
}

size_t fbcells_emit(struct fbcells *f, struct buf *out, int top, int left, enum fbc_colour mode, bool all)
{
	size_t before = out->len;
	struct emitter e = {mode, -1, -1, 0, -1};
	if (f->cells == NULL || f->cols == 0 || f->rows == 0 || (!all && f->ndirty == 0))
		return 0;
	if (mode == FBC_MONO)
		buf_add_str(out, "\033[0m");
	int ecol = -1; /* the cursor's column on this row after the last cell written, -1 unknown */
	for (int r = 0; r < f->rows; r++) {
		const uint8_t *d = f->dirty + (size_t)r * (size_t)f->cols;
		const struct fbc_cell *cr = f->cells + (size_t)r * (size_t)f->cols;
		/* an incremental update touches a few cells: memchr skips the clean ones a word at a time */
		const uint8_t *first = all ? d : memchr(d, 1, (size_t)f->cols);
		if (first == NULL)
			continue;
		buf_reserve(out, (size_t)f->cols * (EMIT_CELL_MAX + EMIT_CUP_MAX) + EMIT_CUP_MAX);
		char *o = out->data + out->len;
		ecol = -1;
		for (int c = (int)(first - d); c < f->cols; c++) {
			if (!all && !d[c]) {
				const uint8_t *next = memchr(d + c, 1, (size_t)(f->cols - c));
				if (next == NULL)
					break;
				c = (int)(next - d);
			}
			if (ecol != c) {
				o = put_lit(o, "\033[", 2);
				o = put_num(o, (unsigned)(top + r + 1));
				*o++ = ';';
				o = put_num(o, (unsigned)(left + c + 1));
				*o++ = 'H';
			}
			o = emit_cell(&e, o, cr[c]);
			ecol = c + 1;
		}
		out->len = (size_t)(o - out->data);
	}
	buf_add_str(out, "\033[0m");
	fbcells_clear_dirty(f);
	return out->len - before;
}

bool fbcells_cell_to_fb(const struct fbcells *f, int col, int row, int half, int *x, int *y)
{
	*x = *y = 0;
	if (f->tw == 0 || f->th == 0)
		return false;
	int tx = col - f->ox, ty = 2 * row + (half ? 1 : 0) - f->oy;
	bool inside = tx >= 0 && ty >= 0 && tx < f->tw && ty < f->th;
	tx = clampi(tx, 0, f->tw - 1);
	ty = clampi(ty, 0, f->th - 1);
	/* the centre of the target subpixel, in source pixels */
	*x = clampi((int)(((int64_t)(2 * tx + 1) * f->fbw) / (2 * (int64_t)f->tw)), 0, f->fbw - 1);
	*y = clampi((int)(((int64_t)(2 * ty + 1) * f->fbh) / (2 * (int64_t)f->th)), 0, f->fbh - 1);
	return inside;
}

bool fbcells_colour_parse(const char *name, enum fbc_colour *mode)
{
	static const struct {
		const char *name;
		enum fbc_colour mode;
	} names[] = { { "truecolor", FBC_TRUECOLOUR }, { "truecolour", FBC_TRUECOLOUR }, { "24bit", FBC_TRUECOLOUR },
		      { "256", FBC_256 },		{ "mono", FBC_MONO },		    { "ascii", FBC_MONO } };
	for (size_t i = 0; name && i < sizeof names / sizeof names[0]; i++) {
		if (strcmp(name, names[i].name) == 0) {
			*mode = names[i].mode;
			return true;
		}
	}
	return false;
}

bool fbcells_view_key(int key, int cols, int rows, enum fbc_scale *scale, int *pan_x, int *pan_y)
{
	static const struct {
		int key, dx, dy;
	} pans[] = { { 'h', -1, 0 }, { 'l', 1, 0 }, { 'k', 0, -1 }, { 'j', 0, 1 } };
	if (key == 's') {
		*scale = *scale == FBC_FIT ? FBC_ONE : FBC_FIT;
		return true;
	}
	for (size_t i = 0; i < sizeof pans / sizeof pans[0]; i++) {
		if (pans[i].key == key) {
			*pan_x += pans[i].dx * (cols / 4 > 1 ? cols / 4 : 1);
			*pan_y += pans[i].dy * (rows / 2 > 1 ? rows / 2 : 1);
			return true;
		}
	}
	return false;
}
