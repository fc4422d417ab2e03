/* libFuzzer harness for console/vtpane: arbitrary guest bytes into the pane, drawn into an off-screen ncurses
 * pad after every chunk, with resizes, scrolling, search and copy mode driven by the input's first bytes.
 * Nothing drawn may be a control character. The same chunks also go into a pane without the plain-text fast
 * path: both must hold exactly the same cells, scrollback, cursor and modes (after every chunk, and after the
 * resize), and the fast path must never find libvterm out of step. */
#include <locale.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "console/vtpane.h"

static WINDOW *pad;

static void setup(void)
{
	setlocale(LC_ALL, "C.UTF-8");
	FILE *devnull = fopen("/dev/null", "w+");
	if (!newterm("xterm-256color", devnull, devnull))
		abort();
	start_color();
	use_default_colors();
	pad = newpad(70, 140);
}

static void sink(const char *d, size_t n, void *arg)
{
	(void)d, (void)n, (void)arg;
}

static void same(const struct vtpane *a, const struct vtpane *b)
{
	if (!vtpane_same(a, b))
		abort();
	uint64_t cells, desyncs;
	vtpane_fast_stats(a, &cells, &desyncs);
	if (desyncs)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!pad)
		setup();
	if (size < 4)
		return 0;
	int rows = 1 + data[0] % 60, cols = 1 + data[1] % 130;
	uint8_t ops = data[2], chunk = (uint8_t)(1 + data[3] % 64);
	data += 4;
	size -= 4;
	struct vtpane *p = vtpane_new(rows, cols, 200), *plain = vtpane_new(rows, cols, 200);
	vtpane_set_output(p, sink, NULL);
	vtpane_set_output(plain, sink, NULL);
	vtpane_set_fast_path(p, true);
	vtpane_set_fast_path(plain, false);
	size_t k = 0;
	for (size_t off = 0; off < size; off += chunk, k++) {
		size_t n = size - off < chunk ? size - off : chunk;
		vtpane_input(p, data + off, n);
		vtpane_input(plain, data + off, n);
		if (k < 32 || k % 8 == 0 || off + n >= size) /* every chunk early on, then often enough */
			same(p, plain);
		if ((ops & 64) && k == 4) {
			/* a resize in the middle of the stream (margins, a saved cursor, a pending wrap) */
			vtpane_resize(p, 1 + (rows * 3) % 40, 1 + (cols * 3) % 100);
			vtpane_resize(plain, 1 + (rows * 3) % 40, 1 + (cols * 3) % 100);
			same(p, plain);
		}
		if (ops & 1)
			vtpane_draw(p, pad, 0, 0, false);
	}
	if (ops & 2) {
		vtpane_resize(p, 1 + (rows * 7) % 60, 1 + (cols * 5) % 130);
		vtpane_resize(plain, 1 + (rows * 7) % 60, 1 + (cols * 5) % 130);
		/* and text after the resize, where the cursor and a pending wrap moved */
		static const char more[] = "after the resize: a long line of plain text\r\nand more text";
		vtpane_input(p, more, sizeof more - 1);
		vtpane_input(plain, more, sizeof more - 1);
		same(p, plain);
	}
	if (ops & 4)
		vtpane_scroll(p, (int)(ops % 50));
	if (ops & 8)
		vtpane_search(p, "a", ops & 16);
	if (ops & 32) {
		vtpane_copy_mode(p, true);
		vtpane_key(p, 'g', false, 0);
		vtpane_key(p, 'v', false, 0);
		vtpane_key(p, 'G', false, 0);
		vtpane_key(p, 'y', false, 0);
	}
	vtpane_key(p, KEY_UP, true, 0);
	vtpane_draw(p, pad, 0, 0, true);
	int r, c;
	vtpane_size(p, &r, &c);
	for (int y = 0; y < r; y++)
		for (int x = 0; x < c; x++) {
			cchar_t cc;
			wchar_t wc[CCHARW_MAX + 1] = { 0 };
			attr_t a;
			short pr;
			mvwin_wch(pad, y, x, &cc);
			getcchar(&cc, wc, &a, &pr, NULL);
			if (wc[0] && (wc[0] < 0x20 || (wc[0] >= 0x7f && wc[0] < 0xa0)))
				abort();
		}
	vtpane_free(p);
	vtpane_free(plain);
	return 0;
}
