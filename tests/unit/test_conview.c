/* Unit tests of the console pane's frames (ui/console_view.c) over a real session: a unix-socket peer writes the
 * guest's bytes, the loop hands them to the pane. A frame asked for by the session alone copies only the pad rows
 * drawn for it; every such frame must leave the region exactly as a frame drawn whole would. */
#include <curses.h>
#include <locale.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "console/consess.h"
#include "console/vtpane.h"
#include "core/buf.h"
#include "core/loop.h"
#include "core/util.h"
#include "fixture.h"
#include "t.h"
#include "ui/console_view.h"
#include "ui/view.h"

#define ROWS 12
#define COLS 50

static uint64_t rng = 0x2545f4914f6cdd1dull;

static uint32_t rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng % n);
}

struct cellv {
	wchar_t ch[CCHARW_MAX];
	attr_t a;
	short pair;
};

/* The region's cells as stdscr holds them. */
static void snapshot(struct cellv *out)
{
	for (int y = 0; y < ROWS; y++)
		for (int x = 0; x < COLS; x++) {
			cchar_t cc;
			struct cellv *c = &out[y * COLS + x];
			memset(c, 0, sizeof *c);
			if (mvwin_wch(stdscr, y, x, &cc) == OK)
				getcchar(&cc, c->ch, &c->a, &c->pair, NULL);
		}
}

static int differing_cells(const struct cellv *a, const struct cellv *b)
{
	int n = 0;
	for (int i = 0; i < ROWS * COLS; i++)
		n += memcmp(&a[i], &b[i], sizeof a[i]) != 0;
	return n;
}

static int touched_rows(void)
{
	int n = 0;
	for (int y = 0; y < ROWS; y++)
		n += is_linetouched(stdscr, y) == TRUE;
	return n;
}

static struct consess *cs;
static int peer = -1;

/* Sends bytes as the guest and runs the loop until the session took them all in. */
static void guest(const char *s, size_t n)
{
	uint64_t want = consess_bytes_in(cs) + n;
	T_EQ_INT(write(peer, s, n), (long)n);
	uint64_t until = util_now_ms() + 5000;
	while (consess_bytes_in(cs) < want && util_now_ms() < until)
		loop_once(50);
	T_EQ_INT(consess_bytes_in(cs), want);
}

static void guest_str(const char *s)
{
	guest(s, strlen(s));
}

/* A random piece of guest output: text, line ends, colours, cursor moves, erases, a wide character. */
static void random_output(struct buf *b)
{
	static const char *const seq[] = { "\r\n", "\033[31m", "\033[0m", "\033[1;44m", "\033[H", "\033[5;7H",
					   "\033[K", "\033[2J", "\033[1K", "\b", "\t", "\xe6\x97\xa5", "\033[3A",
					   "\033[10C", "\033[?25l", "\033[?25h", "\033[2;8r", "\033[r", "\033M", "\033[2@" };
	int n = 1 + (int)rnd(6);
	for (int i = 0; i < n; i++) {
		if (rnd(3) == 0) {
			buf_add_str(b, seq[rnd(sizeof seq / sizeof seq[0])]);
		} else {
			int len = 1 + (int)rnd(rnd(4) == 0 ? 70 : 4);
			for (int k = 0; k < len; k++)
				buf_add_char(b, (char)('a' + rnd(26)));
		}
	}
}

int main(void)
{
	setenv("LINES", "12", 1);
	setenv("COLUMNS", "50", 1);
	fixture_curses();
	loop_init();
	char dir[] = "/tmp/kvcon-conview.XXXXXX";
	T_CHECK(mkdtemp(dir) != NULL);
	char path[100], target[120];
	snprintf(path, sizeof path, "%s/g.sock", dir);
	snprintf(target, sizeof target, "unix:%s", path);
	int ls = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
	T_EQ_INT(bind(ls, (struct sockaddr *)&sa, sizeof sa), 0);
	T_EQ_INT(listen(ls, 1), 0);

	struct consess_opts o = { .target = target, .rows = ROWS - 1, .cols = COLS, .no_reconnect = true };
	char *err = NULL;
	struct view *v = console_view_new(&o, "test", &err);
	T_CHECK(v != NULL);
	if (!v)
		return T_DONE();
	cs = console_view_session(v);
	view_pane_open(v);
	view_pane_zoom(true);
	view_layout(&(struct region){ 0, 0, ROWS, COLS });
	/* the session connects from the loop */
	uint64_t until = util_now_ms() + 5000;
	while (consess_state(cs) != CONSESS_OPEN && util_now_ms() < until)
		loop_once(50);
	T_EQ_INT(consess_state(cs), CONSESS_OPEN);
	peer = accept(ls, NULL, NULL);
	T_CHECK(peer >= 0);
	view_draw_all(true);

	static struct cellv part[ROWS * COLS], whole[ROWS * COLS];
	/* a key's echo: the frame touches the cursor's row alone (the status row did not change) */
	guest_str("login: ");
	view_draw_all(false);
	untouchwin(stdscr);
	guest_str("r");
	T_CHECK(view_draw_all(false));
	T_EQ_INT(touched_rows(), 1);
	T_CHECK(is_linetouched(stdscr, 0));
	snapshot(part);
	view_draw_all(true);
	snapshot(whole);
	T_EQ_INT(differing_cells(part, whole), 0);
	T_CHECK((mvinch(0, 7) & A_CHARTEXT) == (chtype)'r');

	/* random guest output, several frames of the session's own in a row, then compared with a frame drawn whole */
	int partial_frames = 0, rounds = 300;
	for (int round = 0; round < rounds; round++) {
		int frames = 1 + (int)rnd(5);
		for (int f = 0; f < frames; f++) {
			struct buf b;
			buf_init(&b);
			random_output(&b);
			guest(b.data, b.len);
			buf_free(&b);
			untouchwin(stdscr);
			view_draw_all(false);
			partial_frames += touched_rows() < ROWS;
		}
		snapshot(part);
		view_draw_all(true);
		snapshot(whole);
		int d = differing_cells(part, whole);
		T_EQ_INT(d, 0);
		if (d)
			break;
	}
	T_CHECK(partial_frames > rounds); /* most frames were partial */

	/* scrolled back, new lines move the view's offset: the status row ("[-N]") changes in a frame of the
	 * session's own */
	guest_str("\033[r\033[2J\033[H");
	for (int i = 0; i < 30; i++)
		guest_str("line\r\n");
	vtpane_scroll(consess_pane(cs), 3);
	view_dirty(v);
	view_draw_all(false);
	guest_str("more\r\nmore\r\n");
	untouchwin(stdscr);
	view_draw_all(false);
	T_CHECK(is_linetouched(stdscr, ROWS - 1));
	snapshot(part);
	view_draw_all(true);
	snapshot(whole);
	T_EQ_INT(differing_cells(part, whole), 0);
	char status[COLS + 1] = "";
	mvinnstr(ROWS - 1, 0, status, COLS);
	T_CHECK(strstr(status, "[-5]") != NULL);
	vtpane_scroll(consess_pane(cs), -5);
	view_dirty(v);

	/* something else wrote into the region and marked the view: the next frame puts the whole region back, also
	 * when the session's change comes after the mark (or before it) */
	for (int order = 0; order < 3; order++) {
		view_draw_all(false);
		snapshot(whole);
		if (order == 1)
			guest_str("x\b");
		mvaddstr(5, 3, "ZZZZZZZZ");
		view_dirty(order == 2 ? NULL : v);
		if (order != 1)
			guest_str("y\b");
		view_draw_all(false);
		snapshot(part);
		T_CHECK((mvinch(5, 3) & A_CHARTEXT) != (chtype)'Z');
		view_draw_all(true);
		snapshot(whole);
		T_EQ_INT(differing_cells(part, whole), 0);
	}

	close(peer);
	view_free_all();
	loop_fini();
	close(ls);
	unlink(path);
	rmdir(dir);
	fixture_curses_end();
	return T_DONE();
}
