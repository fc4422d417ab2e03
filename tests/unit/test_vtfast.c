/* Differential tests of vtpane's plain-text fast path: the same byte streams, cut into the same chunks, go into a
 * pane with the fast path and one without; every cell of both screens, the scrollback, the cursor (the pane's and
 * libvterm's), the pen and the modes must be the same after every chunk, and the fast path must have been used.
 * Both panes are also drawn after every chunk, damaged cells only, into pads of their own; each pad must hold what
 * a drawing of the whole screen gives, cell for cell. */
#include <curses.h>
#include <locale.h>
#include <stdint.h>
#include <stdio.h>

#include "console/vtmirror.h"
#include "console/vtpane.h"
#include "core/buf.h"
#include "fixture.h"
#include "t.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint32_t rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return n ? (uint32_t)(rng % n) : 0;
}

static void add_text(struct buf *b, int n)
{
	static const char words[] =
	    "the quick brown fox jumps over the lazy dog 0123456789 [];:'\"#$%&()*+,-./<=>?@\\^_`{|}~";
	for (int i = 0; i < n; i++)
		buf_add_char(b, words[rnd(sizeof words - 1)]);
}

/* One random piece of terminal output; weights favour plain text and line ends, like real guests. */
static void add_token(struct buf *b)
{
	static const char *const fixed[] = {
	    "\r\n",
	    "\r\n",
	    "\r\n",
	    "\n",
	    "\r",
	    "\t",
	    "\b",
	    "\033[0m",
	    "\033[1;31m",
	    "\033[7m",
	    "\033[4h",
	    "\033[4l",
	    "\033[?7l",
	    "\033[?7h",
	    "\033[?6h",
	    "\033[?6l",
	    "\033[?1049h",
	    "\033[?1049l",
	    "\033[?47h",
	    "\033[?47l",
	    "\033(0",
	    "\033(B",
	    "\033)0",
	    "\033)B",
	    "\016",
	    "\017",
	    "\033n",
	    "\033o",
	    "\033N",
	    "\033O",
	    "\033*0",
	    "\0337",
	    "\0338",
	    "\033[s",
	    "\033[u",
	    "\033c",
	    "\033#6",
	    "\033#5",
	    "\033#8",
	    "\033D",
	    "\033M",
	    "\033E",
	    "\033]0;title\007",
	    "\033]2;other title\033\\",
	    "\033P1$r\033\\",
	    "\033_apc\033\\",
	    "\177",
	    "\000",
	    "\030",
	    "\032",
	    "\033[2J",
	    "\033[K",
	    "\033[1K",
	    "\033[J",
	    "\033[3X",
	    "\033[2@",
	    "\033[3P",
	    "\033[2L",
	    "\033[M",
	    "\033[H",
	    "\033[3;5r",
	    "\033[r",
	    "\033[2;20r",
	    "\033[S",
	    "\033[2T",
	    "\033[3b",
	    "\033[b",
	    "\xc3\xa9",
	    "\xe6\x97\xa5",
	    "\xf0\x9f\x98\x80",
	    "\xcc\x81",
	    "e\xcc\x81",
	    "\xe2\x94\x80",
	    "\xe2",
	    "\x94",
	    "\xff",
	    "\xc0\xaf",
	    "\033[?2004h",
	    "\033[?2004l",
	    "\033[20h",
	    "\033[20l",
	    "\033[?69h",
	    "\033[?69l",
	    "\033[2;30s",
	    "\033[6n",
	    "\033[?25l",
	    "\033[?25h",
	    "\033 G",
	    "\033 F",
	    "\033[1;2;3;4;5;6;7;8;9;10;11;12;13;14;15;16;17m",
	    "\033[5;10H\033[?6h",
	    "\033[?6;1h",
	    "\033[6h",
	    "\033[?6$h",
	    "\033[38;5;200m",
	    "\033[48;2;1;2;3m",
	    "\033[!p",
	    "\033H",
	    "\033[3g",
	    "\033[I",
	    "\033[Z",
	    "\033[100C",
	    "\033[100D",
	    "\033[0C",
	    "\033N\xc3\xa9",
	    "\033O\xe2",
	    "\xc2\x9b",
	    "\x9b",
	    "\033[1\"q",
	    "\033[0\"q",
	    "\033[?5h",
	    "\033[?5l",
	};
	uint32_t k = rnd(100);
	if (k < 45) {
		add_text(b, (int)(1 + rnd(k < 10 ? 400 : 90)));
	} else if (k < 55) {
		buf_printf(b, "\033[%u;%uH", rnd(70), rnd(140));
	} else if (k < 60) {
		buf_printf(b, "\033[%u%c", rnd(30), "ABCDGd`aeEF"[rnd(11)]);
	} else if (k < 66) {
		buf_printf(b, "\033[%u;%u;%um", rnd(110), 30 + rnd(10), 40 + rnd(10));
	} else {
		const char *t = fixed[rnd(sizeof fixed / sizeof fixed[0])];
		/* the table holds "\000" as a one-byte string */
		buf_add(b, t, *t ? strlen(t) : 1);
	}
}

static long compared, differences, draw_differences;

/* The pads a pane is drawn into: damaged cells after every chunk (inc), the whole screen when compared (ref). */
struct pads {
	WINDOW *inc, *ref;
};

static void pads_new(struct pads *d, int rows, int cols)
{
	if (d->inc)
		delwin(d->inc);
	if (d->ref)
		delwin(d->ref);
	d->inc = newpad(rows, cols);
	d->ref = newpad(rows, cols);
}

static void pads_free(struct pads *d)
{
	delwin(d->inc);
	delwin(d->ref);
	d->inc = d->ref = NULL;
}

/* Draws the damage into inc; when check, the whole screen into ref too and returns the differing cells. */
static int pads_draw(struct vtpane *p, struct pads *d, bool check)
{
	vtpane_draw(p, d->inc, 0, 0, false);
	if (!check)
		return 0;
	int rows, cols, n = 0;
	vtpane_size(p, &rows, &cols);
	delwin(d->ref); /* from a blank pad: what the cells say, whatever was drawn before */
	d->ref = newpad(rows, cols);
	vtpane_draw(p, d->ref, 0, 0, true);
	for (int y = 0; y < rows; y++)
		for (int x = 0; x < cols; x++) {
			cchar_t a, b;
			wchar_t wa[CCHARW_MAX] = { 0 }, wb[CCHARW_MAX] = { 0 };
			attr_t aa = 0, ab = 0;
			short pa = 0, pb = 0;
			if (mvwin_wch(d->inc, y, x, &a) == OK)
				getcchar(&a, wa, &aa, &pa, NULL);
			if (mvwin_wch(d->ref, y, x, &b) == OK)
				getcchar(&b, wb, &ab, &pb, NULL);
			n += memcmp(wa, wb, sizeof wa) != 0 || aa != ab || pa != pb;
		}
	return n;
}

/* Feeds data in the given chunk sizes (0: random 1..97) into a fast and a plain pane and compares them after
 * every chunk. */
static bool resize_often; /* diff_run resizes both panes now and then */

static void diff_run(const char *data, size_t len, int rows, int cols, size_t chunk, uint64_t *fast_cells)
{
	struct vtpane *f = vtpane_new(rows, cols, 50), *s = vtpane_new(rows, cols, 50);
	vtpane_set_fast_path(f, true);
	vtpane_set_fast_path(s, false);
	struct pads pf = { 0 }, ps = { 0 };
	unsigned chunks = 0;
	pads_new(&pf, rows, cols);
	pads_new(&ps, rows, cols);
	struct buf ops; /* what happened, written out with the input when the panes differ */
	buf_init(&ops);
	buf_printf(&ops, "new %d %d\n", rows, cols);
	for (size_t off = 0; off < len;) {
		size_t n = chunk ? chunk : 1 + rnd(97);
		if (n > len - off)
			n = len - off;
		vtpane_input(f, data + off, n);
		vtpane_input(s, data + off, n);
		buf_printf(&ops, "in %zu\n", n);
		off += n;
		if (resize_often && rnd(12) == 0) {
			/* a new size in the middle of the stream (a pending wrap, the cursor, margins all move) */
			int nr = 1 + (int)rnd(30), nc = 2 + (int)rnd(90);
			vtpane_resize(f, nr, nc);
			vtpane_resize(s, nr, nc);
			int vr, vc; /* the pane's size (it keeps a minimum) */
			vtpane_size(f, &vr, &vc);
			pads_new(&pf, vr, vc);
			pads_new(&ps, vr, vc);
			buf_printf(&ops, "resize %d %d\n", nr, nc);
			rows = nr;
			cols = nc;
		}
		/* compared often on small screens, every ~1 kB on big ones, and at the end */
		bool check = !(rows * cols > 200 && off / 1024 == (off - n) / 1024 && off < len);
		/* the drawings too, and every 16th chunk in between */
		bool dcheck = check || ++chunks % 16 == 0;
		int dcf = pads_draw(f, &pf, dcheck), dcs = pads_draw(s, &ps, dcheck);
		if ((dcf || dcs) && draw_differences++ < 3)
			fprintf(stderr, "drawn damage differs from the whole screen: %d / %d cells, %dx%d chunk %zu after %zu bytes\n",
				dcf, dcs, rows, cols, chunk, off);
		if (!check)
			continue;
		compared++;
		if (vtpane_same(f, s))
			continue;
		char *df = vtpane_dump(f), *ds = vtpane_dump(s);
		/* vtpane_same and the dumps must agree (the dumps say how they differ) */
		T_CHECK(strcmp(df, ds) != 0);
		if (differences++ < 3) {
			fprintf(stderr, "fast path differs: %dx%d chunk %zu after %zu bytes\n", rows, cols, chunk, off);
			FILE *o = fopen("/tmp/vtfast-input.bin", "wb");
			if (o) {
				fwrite(data, 1, off, o);
				fclose(o);
			}
			o = fopen("/tmp/vtfast-ops.txt", "w");
			if (o) {
				fputs(ops.data, o);
				fclose(o);
			}
		}
		free(df);
		free(ds);
		break;
	}
	buf_free(&ops);
	uint64_t cells, desyncs;
	vtpane_fast_stats(f, &cells, &desyncs);
	T_EQ_INT(desyncs, 0);
	*fast_cells += cells;
	pads_free(&pf);
	pads_free(&ps);
	vtpane_free(f);
	vtpane_free(s);
}

/* Random streams, several sizes of screen (very narrow ones too) and chunkings. */
static void test_random_streams(void)
{
	static const int sizes[][2] = {{24, 80}, {5, 10}, {3, 2}, {10, 3}, {60, 130}, {1, 40}, {8, 9}};
	uint64_t fast = 0;
	differences = 0;
	/* VTFAST_ROUNDS=N runs more (the default keeps make asan quick) */
	const char *env = getenv("VTFAST_ROUNDS");
	int rounds = env ? atoi(env) : 49;
	for (int round = 0; round < rounds; round++) {
		struct buf b;
		buf_init(&b);
		int tokens = 20 + (int)rnd(300);
		for (int t = 0; t < tokens; t++)
			add_token(&b);
		const int *sz = sizes[round % 7];
		static const size_t chunks[] = {0, 1, 2, 3, 7, 64, 4096};
		diff_run(b.data, b.len, sz[0], sz[1], chunks[(round / 7 + round) % 7], &fast);
		buf_free(&b);
	}
	T_EQ_INT(differences, 0);
	T_EQ_INT(draw_differences, 0);
	T_CHECK(fast > 10000); /* the fast path really ran */
}

/* Random streams again, with the panes resized in the middle. */
static void test_random_resizes(void)
{
	const char *env = getenv("VTFAST_ROUNDS");
	int rounds = env ? atoi(env) / 2 : 20;
	uint64_t fast = 0;
	differences = 0;
	resize_often = true;
	for (int round = 0; round < rounds; round++) {
		struct buf b;
		buf_init(&b);
		int tokens = 20 + (int)rnd(300);
		for (int t = 0; t < tokens; t++)
			add_token(&b);
		diff_run(b.data, b.len, 10 + (int)rnd(20), 20 + (int)rnd(80), round % 2 ? 0 : 16, &fast);
		buf_free(&b);
	}
	resize_often = false;
	T_EQ_INT(differences, 0);
	T_EQ_INT(draw_differences, 0);
	T_CHECK(fast > 1000);
}

/* A realistic stream (coloured log lines, a wrap at the last column, a scroll region, tabs, UTF-8, line drawing,
 * the alternate screen) cut into two at every byte. */
static void test_every_split(void)
{
	struct buf b;
	buf_init(&b);
	buf_add_str(&b, "[    0.000000] Linux version 6.1.0 (gcc 12.2.0)\r\n"
			"\033[1;32m[  OK  ]\033[0m Started \033[38;5;33mjournald\033[0m.service - Journal Service.\r\n"
			"a line that is exactly as long as the screen is wide, forty!"
			"and this continues on the next line after the wrap\r\n"
			"\tcol\ttabs\tand\ttext after them\r\n"
			"caf\xc3\xa9 na\xc3\xafve \xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e and more ascii after it\r\n"
			"\033(0lqqqqqqqqqqqqqk\033(B box drawing then ascii again\r\n"
			"\033[2;6r\033[6;1Hinside the scroll region line one\r\nline two\r\nline three\r\n\033[r"
			"\033[?1049h\033[H\033[2Jalternate screen text that is long enough\033[?1049l"
			"back on the primary screen with more text\r\n"
			"\033[4hinserted text in insert mode\033[4l then normal\r\n"
			"e\xcc\x81 combining after ascii and aaaaaaaaaaaaaaaa\xcc\x81 again\r\n");
	uint64_t fast = 0;
	differences = 0;
	for (size_t cut = 1; cut < b.len; cut++) {
		struct vtpane *f = vtpane_new(12, 60, 50), *s = vtpane_new(12, 60, 50);
		vtpane_set_fast_path(s, false);
		vtpane_input(f, b.data, cut);
		vtpane_input(s, b.data, cut);
		vtpane_input(f, b.data + cut, b.len - cut);
		vtpane_input(s, b.data + cut, b.len - cut);
		compared++;
		if (!vtpane_same(f, s) && differences++ < 3)
			fprintf(stderr, "fast path differs when cut at %zu\n", cut);
		uint64_t cells, desyncs;
		vtpane_fast_stats(f, &cells, &desyncs);
		T_EQ_INT(desyncs, 0);
		fast += cells;
		vtpane_free(f);
		vtpane_free(s);
	}
	buf_free(&b);
	T_EQ_INT(differences, 0);
	T_CHECK(fast > 1000);
}

/* The fast path writes what libvterm would: text lands with the pen, wraps at the last column, scrolls into the
 * scrollback; DEC line drawing and insert mode are left to libvterm. */
static void test_known_results(void)
{
	struct vtpane *p = vtpane_new(3, 10, 10);
	const char *s = "\033[31mabcdefghijKLMNOPQRST\r\nline three\r\nfour";
	vtpane_input(p, s, strlen(s));
	char *l0 = vtpane_line_text(p, 0), *l3 = vtpane_line_text(p, 3);
	T_EQ_STR(l0, "abcdefghij");
	T_EQ_STR(l3, "four");
	free(l0);
	free(l3);
	uint64_t cells, desyncs;
	vtpane_fast_stats(p, &cells, &desyncs);
	T_CHECK(cells > 10);
	T_EQ_INT(desyncs, 0);
	vtpane_free(p);

	p = vtpane_new(3, 40, 10);
	s = "\033(0qqqqqqqqqqqq\033(B";
	vtpane_input(p, s, strlen(s));
	l0 = vtpane_line_text(p, 0);
	T_EQ_STR(l0, "\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80"
		     "\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80");
	free(l0);
	s = "\r\033[4hXXXXXXXXXX\033[4l";
	vtpane_input(p, s, strlen(s));
	l0 = vtpane_line_text(p, 0);
	T_EQ_STR(l0, "XXXXXXXXXX\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80"
		     "\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80");
	free(l0);
	vtpane_free(p);
}

/* Streams aimed at the corners: left/right margins (DECLRMM), origin mode inside margins, autowrap off, insert
 * mode at the right edge, a wide character ending a row, DECDWL rows, tab stops, REP after text. */
static void test_corners(void)
{
	static const char *const streams[] = {
	    "\033[?69h\033[5;20s\033[3;5Hthe text inside the left and right margins wraps where libvterm says\r\n"
	    "more text after the line end, long enough to wrap twice at forty columns or so\033[?69l after",
	    "\033[?69h\033[10;30s\033[?6h\033[2;3Hin origin mode with margins the text is long enough to wrap"
	    "\033[?6l\033[?69l\r\nplain again",
	    "\033[?7l\033[1;30Hno autowrap: this text runs into the right edge and keeps overwriting it\033[?7h"
	    "\r\nwrap on again with a line that is much longer than the screen is wide, really it is",
	    "\033[1;35H\033[4hinserted at the edge of the screen\033[4l more text",
	    "\033[1;38H\xe6\x97\xa5"
	    "after a wide character at the end of the row comes text",
	    "\033#6double width row with a long text that wraps on it\r\n\033#3top half\r\n\033#4bottom half",
	    "\033[3g\033[1;9H\033H\033[1;17H\033H\rtab\tstops\tmoved\tand text after them\r\n",
	    "plain text before a repeat\033[5b and after it\033[2b more text\r\n",
	    "\033[2;4r\033[4;1Hscrolling inside a small region with a line longer than the screen width\r\n\033[r",
	    /* G0's decoder holds half a UTF-8 sequence, SS2 sends the next character through G2: the one after it
	     * gets G0's U+FFFD first (found by this test) */
	    ",\xf0\033N8 ye 8e4 and more text",
	};
	uint64_t fast = 0;
	differences = 0;
	static const size_t chunks[] = {0, 1, 5, 4096};
	for (size_t i = 0; i < sizeof streams / sizeof streams[0]; i++)
		for (size_t k = 0; k < sizeof chunks / sizeof chunks[0]; k++)
			diff_run(streams[i], strlen(streams[i]), 6, 40, chunks[k], &fast);
	T_EQ_INT(differences, 0);
	T_CHECK(fast > 500);
}

/* The mirror follows libvterm's parser: strings, CSIs ending early, charsets and origin mode. */
static void test_mirror(void)
{
	struct vtmirror m;
	vtmirror_init(&m);
	T_CHECK(vtmirror_plain(&m));
	const char *steps[][2] = {
	    {"\033]0;title", "n"}, {"\007", "y"},	{"\033]0;t\033\\", "y"},
	    {"\033[1;2", "n"},	   {"m", "y"},		{"\033(0", "n"},
	    {"\033(B", "y"},	   {"\033)0\016", "n"}, {"\017", "y"},
	    {"\033[?6h", "n"},	   {"\033[?6l", "y"},	{"\033[6 ?6h\033c", "y"},
	    {"\033[1?", "y"},	   {"\xc3", "n"},	{"\r", "y"},
	    {"\033P", "n"},	   {"\030", "y"},	{"\033n", "y"},
	    {"\033*0", "n"},	   {"\033c", "y"},	{"\033[?6;1h", "n"},
	    {"\033[??6l", "n"},	   {"\033[?6$l", "n"},	{"\033[?6l", "y"},
	};
	for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
		vtmirror_feed(&m, steps[i][0], strlen(steps[i][0]));
		bool want = steps[i][1][0] == 'y';
		if (vtmirror_plain(&m) != want)
			fprintf(stderr, "mirror step %zu (%s)\n", i, steps[i][0] + 1);
		T_CHECK(vtmirror_plain(&m) == want);
	}
	/* a write boundary ends a text run */
	vtmirror_feed(&m, "\xc3\xa9", 2);
	T_CHECK(!vtmirror_plain(&m));
	vtmirror_write_end(&m);
	T_CHECK(vtmirror_plain(&m));
}

int main(void)
{
	fixture_curses();
	/* VTFAST_SEED=N explores other random streams */
	const char *seed = getenv("VTFAST_SEED");
	if (seed && atoll(seed))
		rng ^= (uint64_t)atoll(seed) * 0x2545f4914f6cdd1dull;
	test_mirror();
	test_known_results();
	test_every_split();
	test_corners();
	test_random_streams();
	test_random_resizes();
	fprintf(stderr, "%ld pane states compared\n", compared);
	fixture_curses_end();
	return T_DONE();
}
