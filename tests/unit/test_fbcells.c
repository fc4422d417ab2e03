/* Golden and property tests for console/fbcells: a test pattern with text is rendered at three pane sizes in true
 * colour, 256 colours and ASCII and compared with checked-in grids (tests/fixtures/fbcells/); damaged-rectangle
 * updates after seeded random changes must equal a full redraw; the escape sequences fbcells_emit() writes,
 * replayed on a model terminal, must show the grid. FBCELLS_UPDATE_GOLDEN=1 rewrites the golden files. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "console/fbcells.h"
#include "core/buf.h"
#include "core/util.h"
#include "core/xmalloc.h"
#include "t.h"

#define FBW 256
#define FBH 160

struct fb {
	uint8_t *pix;
	int w, h;
	size_t stride;
};

static struct fbc_src src_of(const struct fb *fb)
{
	return (struct fbc_src){fb->pix, fb->w, fb->h, fb->stride};
}

static void put(struct fb *fb, int x, int y, uint32_t rgb)
{
	if (x < 0 || y < 0 || x >= fb->w || y >= fb->h)
		return;
	uint8_t *p = fb->pix + (size_t)y * fb->stride + (size_t)x * 4;
	p[0] = (uint8_t)(rgb >> 16);
	p[1] = (uint8_t)(rgb >> 8);
	p[2] = (uint8_t)rgb;
	p[3] = 0xa5; /* the unused byte must not matter */
}

static void fill(struct fb *fb, int x, int y, int w, int h, uint32_t rgb)
{
	for (int j = y; j < y + h; j++)
		for (int i = x; i < x + w; i++)
			put(fb, i, j, rgb);
}

/* 5x7 glyphs, one row per byte, bit 4 = leftmost column */
static const struct {
	char c;
	uint8_t rows[7];
} font[] = {
    {'K', {0x11, 0x12, 0x14, 0x18, 0x14, 0x12, 0x11}}, {'V', {0x11, 0x11, 0x11, 0x11, 0x11, 0x0a, 0x04}},
    {'C', {0x0e, 0x11, 0x10, 0x10, 0x10, 0x11, 0x0e}}, {'O', {0x0e, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0e}},
    {'N', {0x11, 0x19, 0x15, 0x13, 0x11, 0x11, 0x11}}, {'0', {0x0e, 0x13, 0x15, 0x19, 0x11, 0x11, 0x0e}},
    {'1', {0x04, 0x0c, 0x04, 0x04, 0x04, 0x04, 0x0e}}, {'2', {0x0e, 0x11, 0x01, 0x02, 0x04, 0x08, 0x1f}},
    {'3', {0x1e, 0x01, 0x01, 0x0e, 0x01, 0x01, 0x1e}},
};

static void text(struct fb *fb, int x, int y, int scale, const char *s, uint32_t rgb)
{
	for (; *s; s++, x += 6 * scale) {
		for (size_t g = 0; g < sizeof font / sizeof font[0]; g++) {
			if (font[g].c != *s)
				continue;
			for (int r = 0; r < 7; r++)
				for (int c = 0; c < 5; c++)
					if (font[g].rows[r] & (0x10 >> c))
						fill(fb, x + c * scale, y + r * scale, scale, scale, rgb);
		}
	}
}

static struct fb *fb_new(int w, int h)
{
	struct fb *fb = xcalloc(1, sizeof *fb);
	fb->w = w;
	fb->h = h;
	fb->stride = (size_t)w * 4 + 12; /* a stride wider than the row, as servers' framebuffers may have */
	fb->pix = xcalloc(fb->stride, (size_t)h);
	return fb;
}

static void fb_free(struct fb *fb)
{
	if (fb) {
		free(fb->pix);
		free(fb);
	}
}

/* Colour bars, a gradient, a checkerboard, a grey ramp and text. */
static struct fb *pattern(void)
{
	static const uint32_t bars[8] = {0xffffff, 0xffff00, 0x00ffff, 0x00ff00,
					 0xff00ff, 0xff0000, 0x0000ff, 0x000000};
	struct fb *fb = fb_new(FBW, FBH);
	for (int i = 0; i < 8; i++)
		fill(fb, i * 32, 0, 32, 48, bars[i]);
	for (int x = 0; x < FBW; x++)
		fill(fb, x, 48, 1, 32, (uint32_t)x << 16 | (uint32_t)(255 - x));
	for (int y = 80; y < 112; y++)
		for (int x = 0; x < 128; x++)
			put(fb, x, y, ((x / 4 + y / 4) & 1) ? 0xffffff : 0x000000);
	for (int x = 128; x < FBW; x++) {
		uint32_t v = (uint32_t)((x - 128) / 16 * 36);
		fill(fb, x, 80, 1, 32, v << 16 | v << 8 | v);
	}
	fill(fb, 0, 112, FBW, 48, 0x102040);
	text(fb, 8, 116, 2, "KVCON VNC", 0xffffff);
	text(fb, 8, 140, 1, "0123 KVCON", 0xffd000);
	text(fb, 140, 136, 3, "0123", 0x40ff40);
	return fb;
}

/* ---- golden files ---- */

static const char *fixture_dir(void)
{
	const char *root = getenv("KVCON_ROOT");
	static char path[4096];
	snprintf(path, sizeof path, "%s/tests/fixtures/fbcells", root ? root : ".");
	return path;
}

static void dump(const struct fbcells *f, enum fbc_colour mode, struct buf *out)
{
	const struct fbc_cell *g = fbcells_grid(f);
	int cols = fbcells_cols(f), rows = fbcells_rows(f);
	for (int r = 0; r < rows; r++) {
		for (int c = 0; c < cols; c++) {
			struct fbc_cell cell = g[r * cols + c];
			if (mode == FBC_TRUECOLOUR)
				buf_printf(out, "%s%06x:%06x", c ? " " : "", cell.fg, cell.bg);
			else if (mode == FBC_256)
				buf_printf(out, "%s%03d:%03d", c ? " " : "", fbcells_xterm256(cell.fg),
					   fbcells_xterm256(cell.bg));
			else
				buf_add_char(out, fbcells_ascii(cell));
		}
		buf_add_char(out, '\n');
	}
}

static void golden(const char *name, const struct fbcells *f, enum fbc_colour mode, const char *header)
{
	struct buf got;
	buf_init(&got);
	buf_printf(&got, "# %s\n", header);
	dump(f, mode, &got);
	char path[4200];
	snprintf(path, sizeof path, "%s/%s", fixture_dir(), name);
	if (getenv("FBCELLS_UPDATE_GOLDEN")) {
		util_mkdir_p(fixture_dir(), 0755);
		T_CHECK(util_write_file_atomic(path, got.data, got.len, 0644) == 0);
	} else {
		size_t len = 0;
		char *want = util_read_file(path, &len);
		T_CHECK(want != NULL);
		if (want) {
			bool same = len == got.len && memcmp(want, got.data, len) == 0;
			if (!same)
				fprintf(stderr, "golden mismatch: %s (FBCELLS_UPDATE_GOLDEN=1 rewrites it)\n", path);
			T_CHECK(same);
		}
		free(want);
	}
	buf_free(&got);
}

static void test_golden(void)
{
	static const struct {
		int cols, rows;
	} sizes[] = {{40, 12}, {80, 24}, {120, 40}};
	static const struct {
		enum fbc_colour mode;
		const char *name;
	} modes[] = {{FBC_TRUECOLOUR, "truecolour"}, {FBC_256, "256"}, {FBC_MONO, "ascii"}};
	struct fb *fb = pattern();
	struct fbc_src src = src_of(fb);
	for (size_t s = 0; s < 3; s++) {
		struct fbcells *f = fbcells_new();
		fbcells_layout(f, sizes[s].cols, sizes[s].rows, FBW, FBH, FBC_FIT, 0, 0);
		fbcells_full(f, &src);
		for (size_t m = 0; m < 3; m++) {
			char name[64], header[128];
			snprintf(name, sizeof name, "fit-%dx%d-%s.txt", sizes[s].cols, sizes[s].rows, modes[m].name);
			snprintf(header, sizeof header, "fbcells %dx%d cells, framebuffer %dx%d, fit, %s",
				 sizes[s].cols, sizes[s].rows, FBW, FBH, modes[m].name);
			golden(name, f, modes[m].mode, header);
		}
		fbcells_free(f);
	}
	/* 1:1 with a pan offset */
	struct fbcells *f = fbcells_new();
	fbcells_layout(f, 40, 12, FBW, FBH, FBC_ONE, 100, 110);
	fbcells_full(f, &src);
	int px, py;
	fbcells_pan(f, &px, &py);
	T_EQ_INT(px, 100);
	T_EQ_INT(py, 110);
	golden("one-40x12-pan100x110-truecolour.txt", f, FBC_TRUECOLOUR,
	       "fbcells 40x12 cells, framebuffer 256x160, 1:1 panned to 100,110, truecolour");
	fbcells_free(f);
	fb_free(fb);
}

/* ---- hand-checked facts (independent of the golden files) ---- */

static void test_facts(void)
{
	struct fb *fb = pattern();
	struct fbc_src src = src_of(fb);
	struct fbcells *f = fbcells_new();
	/* 80x24 cells are 80x48 subpixels; 256x160 at width 80 would be 50 high, so height-limited:
	 * th = 48, tw = 256*48/160 = 76.8 -> 77, ox = 1 */
	fbcells_layout(f, 80, 24, FBW, FBH, FBC_FIT, 0, 0);
	fbcells_full(f, &src);
	const struct fbc_cell *g = fbcells_grid(f);
	T_EQ_INT(g[0].fg, 0);		       /* letterbox column */
	T_EQ_INT(g[1].fg, 0xffffff);	       /* white bar */
	T_EQ_INT(g[79].fg, 0);		       /* right letterbox */
	T_EQ_INT(g[1 * 80 + 60].fg, 0x0000ff); /* blue bar at x = (60-1)*256/77 ~ 196 */
	/* the checkerboard averages to mid grey (4px squares, ~3.3px subpixels: not exact, but close) */
	struct fbc_cell ck = g[(24 * 90 / 160) * 80 + 10];
	int grey = (int)(ck.fg >> 8 & 0xff);
	T_CHECK(grey > 60 && grey < 200);
	/* 1:1: a subpixel is a pixel */
	fbcells_layout(f, 40, 12, FBW, FBH, FBC_ONE, 0, 0);
	fbcells_full(f, &src);
	g = fbcells_grid(f);
	T_EQ_INT(g[0].fg, 0xffffff);
	T_EQ_INT(g[39].bg, 0xffff00); /* x = 39 is in the yellow bar */
	/* pan is clamped */
	fbcells_layout(f, 40, 12, FBW, FBH, FBC_ONE, 10000, -5);
	int px, py;
	fbcells_pan(f, &px, &py);
	T_EQ_INT(px, FBW - 40);
	T_EQ_INT(py, 0);
	/* mouse mapping: the centre cell of a fit layout maps near the centre of the framebuffer */
	fbcells_layout(f, 80, 24, FBW, FBH, FBC_FIT, 0, 0);
	int x, y;
	T_CHECK(fbcells_cell_to_fb(f, 40, 12, 0, &x, &y));
	T_CHECK(x > 120 && x < 136 && y > 72 && y < 88);
	T_CHECK(!fbcells_cell_to_fb(f, 0, 0, 0, &x, &y)); /* letterbox */
	fbcells_free(f);
	fb_free(fb);
}

static void test_palette(void)
{
	/* exact palette entries map to themselves */
	for (int i = 16; i < 256; i++)
		T_EQ_INT(fbcells_xterm256(fbcells_xterm256_rgb((uint8_t)i)), i);
	/* the choice is as near as the brute-force nearest over 16..255 */
	uint32_t seed = 12345;
	int bad = 0;
	for (int n = 0; n < 20000; n++) {
		seed = seed * 1103515245u + 12345u;
		uint32_t rgb = seed >> 8 & 0xffffff;
		int r = (int)(rgb >> 16), g = (int)(rgb >> 8 & 0xff), b = (int)(rgb & 0xff);
		uint32_t best = UINT32_MAX;
		for (int i = 16; i < 256; i++) {
			uint32_t c = fbcells_xterm256_rgb((uint8_t)i);
			int dr = r - (int)(c >> 16), dg = g - (int)(c >> 8 & 0xff), db = b - (int)(c & 0xff);
			uint32_t d = (uint32_t)(dr * dr + dg * dg + db * db);
			if (d < best)
				best = d;
		}
		uint32_t c = fbcells_xterm256_rgb(fbcells_xterm256(rgb));
		int dr = r - (int)(c >> 16), dg = g - (int)(c >> 8 & 0xff), db = b - (int)(c & 0xff);
		if ((uint32_t)(dr * dr + dg * dg + db * db) != best)
			bad++;
	}
	T_EQ_INT(bad, 0);
	T_EQ_INT(fbcells_ascii((struct fbc_cell){0, 0}), ' ');
	T_EQ_INT(fbcells_ascii((struct fbc_cell){0xffffff, 0xffffff}), '@');
}

/* ---- incremental == full ---- */

static uint32_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return (uint32_t)(*s >> 11);
}

static bool grids_equal(const struct fbcells *a, const struct fbcells *b)
{
	size_t n = (size_t)fbcells_cols(a) * (size_t)fbcells_rows(a);
	return fbcells_cols(a) == fbcells_cols(b) && fbcells_rows(a) == fbcells_rows(b) &&
	       memcmp(fbcells_grid(a), fbcells_grid(b), n * sizeof(struct fbc_cell)) == 0;
}

static void test_incremental(void)
{
	static const struct {
		int cols, rows, fbw, fbh;
		enum fbc_scale mode;
		int px, py;
	} lay[] = {
	    {200, 60, 1024, 768, FBC_FIT, 0, 0}, {80, 24, 720, 400, FBC_FIT, 0, 0},
	    {37, 11, 640, 480, FBC_FIT, 0, 0},	 {150, 50, 64, 48, FBC_FIT, 0, 0},  /* magnified */
	    {80, 24, 720, 400, FBC_ONE, 33, 17}, {120, 40, 100, 30, FBC_ONE, 0, 0}, /* fb smaller: centred */
	};
	uint64_t seed = 0x9e3779b97f4a7c15ull;
	for (size_t l = 0; l < sizeof lay / sizeof lay[0]; l++) {
		struct fb *fb = fb_new(lay[l].fbw, lay[l].fbh);
		struct fbc_src src = src_of(fb);
		struct fbcells *inc = fbcells_new();
		fbcells_layout(inc, lay[l].cols, lay[l].rows, fb->w, fb->h, lay[l].mode, lay[l].px, lay[l].py);
		fbcells_full(inc, &src);
		int mismatches = 0;
		for (int step = 0; step < 200; step++) {
			int w = (int)(rnd(&seed) % (unsigned)(fb->w / 3 + 1)) + 1;
			int h = (int)(rnd(&seed) % (unsigned)(fb->h / 3 + 1)) + 1;
			int x = (int)(rnd(&seed) % (unsigned)fb->w), y = (int)(rnd(&seed) % (unsigned)fb->h);
			if (rnd(&seed) % 2)
				fill(fb, x, y, w, h, rnd(&seed) & 0xffffff);
			else
				for (int j = y; j < y + h; j++)
					for (int i = x; i < x + w; i++)
						put(fb, i, j, rnd(&seed) & 0xffffff);
			/* the rectangle reported may hang over the edges, as a hostile server's would */
			fbcells_update(inc, &src, x, y, w + (int)(rnd(&seed) % 3) * 50, h);
			if (step % 20 == 19) {
				struct fbcells *full = fbcells_new();
				fbcells_layout(full, lay[l].cols, lay[l].rows, fb->w, fb->h, lay[l].mode, lay[l].px,
					       lay[l].py);
				fbcells_full(full, &src);
				if (!grids_equal(inc, full))
					mismatches++;
				fbcells_free(full);
			}
		}
		if (mismatches)
			fprintf(stderr, "layout %zu: %d mismatches\n", l, mismatches);
		T_EQ_INT(mismatches, 0);
		fbcells_free(inc);
		fb_free(fb);
	}
}

/* ---- the escape sequences, replayed ---- */

struct term {
	int cols, rows, r, c;
	long fg, bg;
	struct fbc_cell *cells; /* what is visible, in the same RGB terms (256: palette RGB) */
	char *chars;
};

static void term_put(struct term *t, char ch)
{
	if (t->r >= 0 && t->r < t->rows && t->c >= 0 && t->c < t->cols) {
		size_t i = (size_t)t->r * (size_t)t->cols + (size_t)t->c;
		t->chars[i] = ch;
		t->cells[i].fg = (uint32_t)(ch == ' ' ? t->bg : t->fg);
		t->cells[i].bg = (uint32_t)t->bg;
	}
	t->c++;
}

static void term_feed(struct term *t, const char *s, size_t len, enum fbc_colour mode)
{
	for (size_t i = 0; i < len;) {
		if (s[i] == '\033' && i + 1 < len && s[i + 1] == '[') {
			int p[16], np = 0, v = 0;
			size_t j = i + 2;
			for (; j < len && (s[j] == ';' || (s[j] >= '0' && s[j] <= '9')); j++) {
				if (s[j] == ';') {
					if (np < 16)
						p[np++] = v;
					v = 0;
				} else {
					v = v * 10 + (s[j] - '0');
				}
			}
			if (np < 16)
				p[np++] = v;
			if (s[j] == 'H') {
				t->r = p[0] - 1;
				t->c = np > 1 ? p[1] - 1 : 0;
			} else if (s[j] == 'm') {
				for (int k = 0; k < np; k++) {
					if (p[k] == 0)
						t->fg = t->bg = -1;
					else if ((p[k] == 38 || p[k] == 48) && k + 1 < np && p[k + 1] == 2 &&
						 k + 4 < np) {
						long rgb = (long)p[k + 2] << 16 | (long)p[k + 3] << 8 | p[k + 4];
						*(p[k] == 38 ? &t->fg : &t->bg) = rgb;
						k += 4;
					} else if ((p[k] == 38 || p[k] == 48) && k + 2 < np && p[k + 1] == 5) {
						long rgb = (long)fbcells_xterm256_rgb((uint8_t)p[k + 2]);
						*(p[k] == 38 ? &t->fg : &t->bg) = rgb;
						k += 2;
					}
				}
			}
			i = j + 1;
		} else if ((unsigned char)s[i] == 0xe2 && i + 2 < len) {
			term_put(t, '^');
			i += 3;
		} else {
			term_put(t, s[i]);
			i++;
		}
	}
	(void)mode;
}

static void test_emit(void)
{
	struct fb *fb = pattern();
	struct fbc_src src = src_of(fb);
	static const enum fbc_colour modes[] = {FBC_TRUECOLOUR, FBC_256, FBC_MONO};
	uint64_t seed = 42;
	for (size_t m = 0; m < 3; m++) {
		struct fbcells *f = fbcells_new();
		int cols = 70, rows = 20, top = 2, left = 3;
		fbcells_layout(f, cols, rows, FBW, FBH, FBC_FIT, 0, 0);
		fbcells_full(f, &src);
		struct term t = {cols + left, rows + top, 0, 0, -1, -1, NULL, NULL};
		t.cells = xcalloc((size_t)t.cols * (size_t)t.rows, sizeof *t.cells);
		t.chars = xcalloc((size_t)t.cols * (size_t)t.rows, 1);
		struct buf out;
		buf_init(&out);
		size_t n = fbcells_emit(f, &out, top, left, modes[m], false);
		T_CHECK(n == out.len && n > 0);
		T_EQ_INT(fbcells_ndirty(f), 0);
		term_feed(&t, out.data, out.len, modes[m]);
		/* random updates, each emitted incrementally onto the same terminal */
		size_t incr = 0;
		for (int step = 0; step < 30; step++) {
			int x = (int)(rnd(&seed) % FBW), y = (int)(rnd(&seed) % FBH);
			fill(fb, x, y, 20, 12, rnd(&seed) & 0xffffff);
			fbcells_update(f, &src, x, y, 20, 12);
			buf_reset(&out);
			incr += fbcells_emit(f, &out, top, left, modes[m], false);
			term_feed(&t, out.data, out.len, modes[m]);
		}
		T_EQ_INT(fbcells_emit(f, &out, top, left, modes[m], false), 0); /* nothing changed: nothing written */
		/* the model terminal shows the grid */
		int wrong = 0;
		const struct fbc_cell *g = fbcells_grid(f);
		for (int r = 0; r < rows; r++) {
			for (int c = 0; c < cols; c++) {
				size_t ti = (size_t)(r + top) * (size_t)t.cols + (size_t)(c + left);
				struct fbc_cell want = g[r * cols + c];
				if (modes[m] == FBC_MONO) {
					wrong += t.chars[ti] != fbcells_ascii(want);
					continue;
				}
				if (modes[m] == FBC_256) {
					want.fg = fbcells_xterm256_rgb(fbcells_xterm256(want.fg));
					want.bg = fbcells_xterm256_rgb(fbcells_xterm256(want.bg));
				}
				wrong += t.cells[ti].fg != want.fg || t.cells[ti].bg != want.bg;
			}
		}
		T_EQ_INT(wrong, 0);
		/* nothing was written outside the pane */
		int outside = 0;
		for (int r = 0; r < t.rows; r++)
			for (int c = 0; c < t.cols; c++)
				if ((r < top || c < left) && t.chars[(size_t)r * (size_t)t.cols + (size_t)c])
					outside++;
		T_EQ_INT(outside, 0);
		/* incremental output is cheaper than 30 full redraws */
		buf_reset(&out);
		size_t full = fbcells_emit(f, &out, top, left, modes[m], true);
		T_CHECK(incr < 30 * full);
		buf_free(&out);
		free(t.cells);
		free(t.chars);
		fbcells_free(f);
	}
	fb_free(fb);
}

/* ---- the fast path against a reference written from the definition ---- */

/* Area averaging as the header defines it, one subpixel at a time with plain division: fit scales the
 * framebuffer into tw x th subpixels (aspect kept, centred), target column t averages the source interval
 * [t*fbw, (t+1)*fbw) in units where a pixel is tw wide (rows alike), rounded half up; 1:1 copies a pixel. */
struct ref {
	int cols, rows, tw, th, ox, oy;
	struct fbc_cell *cells;
};

static int clampi_t(int v, int lo, int hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

static void ref_geometry(struct ref *rf, int cols, int rows, int fbw, int fbh, enum fbc_scale mode, int px, int py)
{
	int H = 2 * rows;
	rf->cols = cols;
	rf->rows = rows;
	if (mode == FBC_ONE) {
		px = fbw > cols ? clampi_t(px, 0, fbw - cols) : 0;
		py = fbh > H ? clampi_t(py, 0, fbh - H) : 0;
		rf->tw = fbw;
		rf->th = fbh;
		rf->ox = fbw <= cols ? (cols - fbw) / 2 : -px;
		rf->oy = fbh <= H ? (H - fbh) / 2 : -py;
	} else if ((int64_t)fbw * H <= (int64_t)fbh * cols) {
		rf->th = H;
		rf->tw = clampi_t((int)(((int64_t)fbw * H + fbh / 2) / fbh), 1, cols);
		rf->ox = (cols - rf->tw) / 2;
		rf->oy = 0;
	} else {
		rf->tw = cols;
		rf->th = clampi_t((int)(((int64_t)fbh * cols + fbw / 2) / fbw), 1, H);
		rf->ox = 0;
		rf->oy = (H - rf->th) / 2;
	}
}

/* how much of source pixel i lies in target t's interval (src pixels onto dst targets) */
static uint64_t overlap(int64_t t, int64_t i, int64_t src, int64_t dst)
{
	int64_t lo = t * src, hi = lo + src, plo = i * dst, phi = plo + dst;
	int64_t l = plo > lo ? plo : lo, h = phi < hi ? phi : hi;
	return h > l ? (uint64_t)(h - l) : 0;
}

static uint32_t ref_subpixel(const struct ref *rf, const struct fb *fb, enum fbc_scale mode, int sx, int sy)
{
	int tx = sx - rf->ox, ty = sy - rf->oy;
	if (tx < 0 || ty < 0 || tx >= rf->tw || ty >= rf->th)
		return 0;
	if (mode == FBC_ONE) {
		const uint8_t *p = fb->pix + (size_t)ty * fb->stride + (size_t)tx * 4;
		return (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
	}
	uint64_t sum[3] = {0, 0, 0};
	int i0 = (int)((int64_t)tx * fb->w / rf->tw), i1 = (int)(((int64_t)tx + 1) * fb->w / rf->tw) + 1;
	int j0 = (int)((int64_t)ty * fb->h / rf->th), j1 = (int)(((int64_t)ty + 1) * fb->h / rf->th) + 1;
	for (int j = j0; j < j1 && j < fb->h; j++) {
		uint64_t wy = overlap(ty, j, fb->h, rf->th);
		for (int i = i0; i < i1 && i < fb->w; i++) {
			uint64_t w = wy * overlap(tx, i, fb->w, rf->tw);
			const uint8_t *p = fb->pix + (size_t)j * fb->stride + (size_t)i * 4;
			for (int k = 0; k < 3; k++)
				sum[k] += w * p[k];
		}
	}
	uint64_t tot = (uint64_t)fb->w * (uint64_t)fb->h;
	uint32_t rgb = 0;
	for (int k = 0; k < 3; k++)
		rgb = rgb << 8 | (uint32_t)((sum[k] + tot / 2) / tot);
	return rgb;
}

static void ref_render(struct ref *rf, const struct fb *fb, enum fbc_scale mode)
{
	for (int r = 0; r < rf->rows; r++)
		for (int c = 0; c < rf->cols; c++)
			rf->cells[r * rf->cols + c] = (struct fbc_cell){ref_subpixel(rf, fb, mode, c, 2 * r),
									ref_subpixel(rf, fb, mode, c, 2 * r + 1)};
}

/* The escape sequences as the first emitter wrote them with printf: a cursor move before a cell unless the cell
 * follows the last one written on its row, SGR only for the colours that change, a flat cell as a space. */
static void ref_emit(struct buf *out, const struct fbc_cell *cells, const uint8_t *dirty, int cols, int rows, int top,
		     int left, enum fbc_colour mode)
{
	long fg = -1, bg = -1;
	int er = -1, ec = -1;
	if (mode == FBC_MONO)
		buf_add_str(out, "\033[0m");
	for (int r = 0; r < rows; r++) {
		for (int c = 0; c < cols; c++) {
			if (!dirty[r * cols + c])
				continue;
			if (er != r || ec != c)
				buf_printf(out, "\033[%d;%dH", top + r + 1, left + c + 1);
			er = r;
			ec = c + 1;
			struct fbc_cell cell = cells[r * cols + c];
			if (mode == FBC_MONO) {
				buf_add_char(out, fbcells_ascii(cell));
				continue;
			}
			long f = cell.fg, b = cell.bg;
			if (mode == FBC_256) {
				f = fbcells_xterm256(cell.fg);
				b = fbcells_xterm256(cell.bg);
			}
			bool flat = f == b, set_fg = !flat && f != fg, set_bg = b != bg;
			if (set_fg || set_bg) {
				buf_add_str(out, "\033[");
				for (int k = 0; k < 2; k++) {
					long v = k ? b : f;
					if (!(k ? set_bg : set_fg))
						continue;
					if (k && set_fg)
						buf_add_char(out, ';');
					if (mode == FBC_TRUECOLOUR)
						buf_printf(out, "%d;2;%ld;%ld;%ld", k ? 48 : 38, v >> 16 & 0xff,
							   v >> 8 & 0xff, v & 0xff);
					else
						buf_printf(out, "%d;5;%ld", k ? 48 : 38, v);
				}
				buf_add_char(out, 'm');
				if (set_fg)
					fg = f;
				bg = b;
			}
			buf_add_str(out, flat ? " " : "\xe2\x96\x80");
		}
	}
	buf_add_str(out, "\033[0m");
}

/* random content in a rectangle: noise, a flat fill or a gradient; the unused byte random too */
static void scribble(struct fb *fb, uint64_t *seed, int x, int y, int w, int h)
{
	unsigned kind = rnd(seed) % 3;
	uint32_t base = rnd(seed) & 0xffffff;
	for (int j = y; j < y + h && j < fb->h; j++)
		for (int i = x; i < x + w && i < fb->w; i++) {
			uint32_t v = kind == 0 ? rnd(seed) : kind == 1 ? base : base + (uint32_t)(i * 3 + j * 0x10100);
			uint8_t *p = fb->pix + (size_t)j * fb->stride + (size_t)i * 4;
			p[0] = (uint8_t)(v >> 16);
			p[1] = (uint8_t)(v >> 8);
			p[2] = (uint8_t)v;
			p[3] = (uint8_t)(v >> 24);
		}
}

/* Random layouts, frames and damage rectangles: after every update the grid equals the reference cell for cell
 * and the bytes emitted equal the reference emitter's for the cells that changed. */
static void test_reference(void)
{
	static const struct {
		int cols, rows, fbw, fbh;
		enum fbc_scale mode;
	} fixed[] = {
	    {200, 60, 1024, 768, FBC_FIT}, /* the benchmark's */
	    {80, 24, 720, 400, FBC_FIT},   /* the VGA text console */
	    {7, 3, 8000, 40, FBC_FIT},	   /* over 1,000 pixels a span across */
	    {3, 2, 41, 8000, FBC_FIT},	   /* 2,000 rows a span: the 16-bit column sums taken in chunks */
	    {33, 5, 1023, 767, FBC_FIT},   /* odd widths: a pixel left over after the pairs */
	    {150, 50, 64, 48, FBC_FIT},	   /* magnified */
	    {61, 17, 1, 1, FBC_FIT},
	    {40, 12, 300, 200, FBC_ONE},
	};
	uint64_t seed = 0x2545f4914f6cdd1dull;
	int bad_cells = 0, bad_bytes = 0, cases = 0;
	for (int n = 0; n < 40; n++) {
		int cols, rows, fbw, fbh;
		enum fbc_scale mode = FBC_FIT;
		if (n < (int)(sizeof fixed / sizeof fixed[0])) {
			cols = fixed[n].cols, rows = fixed[n].rows, fbw = fixed[n].fbw, fbh = fixed[n].fbh;
			mode = fixed[n].mode;
		} else {
			cols = 1 + (int)(rnd(&seed) % 130);
			rows = 1 + (int)(rnd(&seed) % 45);
			fbw = 1 + (int)(rnd(&seed) % (rnd(&seed) % 2 ? 640 : 90));
			fbh = 1 + (int)(rnd(&seed) % (rnd(&seed) % 2 ? 480 : 70));
			if (rnd(&seed) % 5 == 0)
				mode = FBC_ONE;
		}
		struct fb *fb = fb_new(fbw, fbh);
		struct fbc_src src = src_of(fb);
		/* all white with the unused byte set: the largest sums the lanes hold */
		for (int j = 0; j < fbh; j++)
			memset(fb->pix + (size_t)j * fb->stride, 0xff, (size_t)fbw * 4);
		int px = (int)(rnd(&seed) % 200), py = (int)(rnd(&seed) % 200);
		struct fbcells *f = fbcells_new();
		fbcells_layout(f, cols, rows, fbw, fbh, mode, px, py);
		struct ref rf;
		ref_geometry(&rf, cols, rows, fbw, fbh, mode, px, py);
		size_t ncells = (size_t)cols * (size_t)rows;
		rf.cells = xcalloc(ncells, sizeof *rf.cells);
		struct fbc_cell *prev = xcalloc(ncells, sizeof *prev); /* what the terminal shows */
		uint8_t *dirty = xcalloc(ncells, 1);
		struct buf got, want;
		buf_init(&got);
		buf_init(&want);
		for (int step = 0; step < 8; step++) {
			if (step == 0) {
				fbcells_full(f, &src);
			} else {
				int nrect = 1 + (int)(rnd(&seed) % 4);
				for (int k = 0; k < nrect; k++) {
					int w = 1 + (int)(rnd(&seed) % (unsigned)(rnd(&seed) % 3 ? fbw / 4 + 1 : fbw));
					int h = 1 + (int)(rnd(&seed) % (unsigned)(rnd(&seed) % 3 ? fbh / 4 + 1 : fbh));
					int x = (int)(rnd(&seed) % (unsigned)fbw),
					    y = (int)(rnd(&seed) % (unsigned)fbh);
					scribble(fb, &seed, x, y, w, h);
					/* the damage reported may be larger than the change and hang over the edges */
					int grow = (int)(rnd(&seed) % 3);
					fbcells_update(f, &src, x - grow, y - grow, w + 2 * grow, h + 2 * grow);
				}
			}
			ref_render(&rf, fb, mode);
			cases++;
			if (memcmp(fbcells_grid(f), rf.cells, ncells * sizeof *rf.cells) != 0) {
				bad_cells++;
				fprintf(stderr, "reference: %dx%d cells, %dx%d fb, mode %d, step %d: grid differs\n",
					cols, rows, fbw, fbh, (int)mode, step);
			}
			enum fbc_colour cm = (enum fbc_colour)(rnd(&seed) % 3);
			bool all = step == 0 || rnd(&seed) % 8 == 0;
			for (size_t i = 0; i < ncells; i++)
				dirty[i] = all || prev[i].fg != rf.cells[i].fg || prev[i].bg != rf.cells[i].bg;
			int top = (int)(rnd(&seed) % 5), left = (int)(rnd(&seed) % 5);
			buf_reset(&got);
			buf_reset(&want);
			fbcells_emit(f, &got, top, left, cm, all);
			bool any = false;
			for (size_t i = 0; i < ncells; i++)
				any |= dirty[i];
			if (any)
				ref_emit(&want, rf.cells, dirty, cols, rows, top, left, cm);
			if (got.len != want.len || memcmp(got.data, want.data, got.len) != 0) {
				bad_bytes++;
				fprintf(stderr, "reference: %dx%d cells, %dx%d fb, colours %d, step %d: bytes differ\n",
					cols, rows, fbw, fbh, (int)cm, step);
			}
			memcpy(prev, rf.cells, ncells * sizeof *prev);
		}
		buf_free(&got);
		buf_free(&want);
		free(dirty);
		free(prev);
		free(rf.cells);
		fbcells_free(f);
		fb_free(fb);
	}
	T_EQ_INT(bad_cells, 0);
	T_EQ_INT(bad_bytes, 0);
	T_CHECK(cases == 40 * 8);
}

static void test_degenerate(void)
{
	struct fbcells *f = fbcells_new();
	struct fbc_src none = {NULL, 0, 0, 0};
	fbcells_layout(f, 10, 5, 0, 0, FBC_FIT, 0, 0);
	fbcells_full(f, &none);
	fbcells_update(f, &none, 0, 0, 100, 100);
	T_EQ_INT(fbcells_grid(f)[0].fg, 0);
	fbcells_layout(f, 0, 0, 100, 100, FBC_FIT, 0, 0);
	fbcells_full(f, &none);
	struct buf out;
	buf_init(&out);
	T_EQ_INT(fbcells_emit(f, &out, 0, 0, FBC_TRUECOLOUR, true), 0);
	/* a source smaller than the layout (a resize in flight) is never read out of bounds */
	struct fb *small = fb_new(10, 10);
	struct fbc_src s = src_of(small);
	fbcells_layout(f, 40, 12, 1000, 1000, FBC_FIT, 0, 0);
	fbcells_full(f, &s);
	fbcells_update(f, &s, -50, -50, 5000, 5000);
	buf_free(&out);
	fb_free(small);
	fbcells_free(f);
	fbcells_free(NULL);
	T_CHECK(1);
}

/* The menu's view keys shared by the pane and `kvcon vnc`: s toggles the scale, hjkl pan by steps of the view. */
static void test_view_keys(void)
{
	enum fbc_scale sc = FBC_FIT;
	int px = 0, py = 0;
	T_CHECK(fbcells_view_key('s', 80, 24, &sc, &px, &py));
	T_EQ_INT(sc, FBC_ONE);
	T_CHECK(fbcells_view_key('l', 80, 24, &sc, &px, &py));
	T_CHECK(fbcells_view_key('j', 80, 24, &sc, &px, &py));
	T_EQ_INT(px, 20);
	T_EQ_INT(py, 12);
	T_CHECK(fbcells_view_key('h', 80, 24, &sc, &px, &py));
	T_CHECK(fbcells_view_key('k', 3, 1, &sc, &px, &py)); /* tiny views still move by one */
	T_EQ_INT(px, 0);
	T_EQ_INT(py, 11);
	T_CHECK(!fbcells_view_key('x', 80, 24, &sc, &px, &py));
	T_CHECK(fbcells_view_key('s', 80, 24, &sc, &px, &py));
	T_EQ_INT(sc, FBC_FIT);
}

int main(void)
{
	test_view_keys();
	test_golden();
	test_facts();
	test_palette();
	test_incremental();
	test_emit();
	test_reference();
	test_degenerate();
	return T_DONE();
}
