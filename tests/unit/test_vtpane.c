/* Unit tests of console/vtpane: text, colours and attributes drawn into an off-screen ncurses pad, scrollback,
 * search, copy mode, keys to bytes, and guest escape sequences absorbed. */
#include <locale.h>
#include <stdio.h>

#include "console/vtpane.h"
#include "core/buf.h"
#include "fixture.h"
#include "t.h"

static struct buf sent;
static void on_out(const char *d, size_t n, void *arg)
{
	(void)arg;
	buf_add(&sent, d, n);
}

static void feed(struct vtpane *p, const char *s)
{
	vtpane_input(p, s, strlen(s));
}

/* The wide char and attributes drawn at (y, x) of the pad. */
static wchar_t cell_at(WINDOW *w, int y, int x, attr_t *a, int *pair)
{
	cchar_t cc;
	wchar_t wc[CCHARW_MAX + 1] = { 0 };
	attr_t at = 0;
	short ps = 0;
	int pr = 0;
	mvwin_wch(w, y, x, &cc);
	getcchar(&cc, wc, &at, &ps, &pr);
	if (a)
		*a = at;
	if (pair)
		*pair = pr ? pr : ps;
	return wc[0];
}

static void test_text_and_render(WINDOW *pad)
{
	struct vtpane *p = vtpane_new(10, 40, 100);
	feed(p, "hello \033[1;31mred\033[0m \033[38;5;200mX\033[38;2;10;200;30mY\033[0m\r\n");
	feed(p, "wide: \xe6\x97\xa5\xe6\x9c\xac end\r\n");
	feed(p, "\033(0lqqk\033(B box\r\n"); /* DEC line drawing */
	feed(p, "bidi \xe2\x80\xae" "abc\r\n");
	char *l0 = vtpane_line_text(p, 0);
	T_EQ_STR(l0, "hello red XY");
	free(l0);
	char *l1 = vtpane_line_text(p, 1);
	T_EQ_STR(l1, "wide: \xe6\x97\xa5\xe6\x9c\xac end");
	free(l1);
	char *l2 = vtpane_line_text(p, 2);
	T_EQ_STR(l2, "\xe2\x94\x8c\xe2\x94\x80\xe2\x94\x80\xe2\x94\x90 box");
	free(l2);
	T_CHECK(vtpane_dirty(p));
	T_CHECK(vtpane_draw(p, pad, 0, 0, true));
	T_CHECK(!vtpane_dirty(p));
	attr_t a;
	int pair;
	T_EQ_INT(cell_at(pad, 0, 0, &a, &pair), L'h');
	T_EQ_INT(cell_at(pad, 0, 6, &a, &pair), L'r');
	T_CHECK(a & A_BOLD);
	T_CHECK(pair > 0);
	short fg = 0, bg = 0;
	int efg = 0, ebg = 0;
	extended_pair_content(pair, &efg, &ebg);
	(void)fg, (void)bg;
	T_EQ_INT(efg, 1); /* red stays palette colour 1 */
	cell_at(pad, 0, 10, &a, &pair);
	extended_pair_content(pair, &efg, &ebg);
	T_EQ_INT(efg, 200); /* 256-colour index kept on a 256-colour terminal */
	cell_at(pad, 0, 11, &a, &pair);
	extended_pair_content(pair, &efg, &ebg);
	T_CHECK(efg >= 16 && efg < 256); /* true colour mapped into the 256 palette */
	T_EQ_INT(cell_at(pad, 1, 6, NULL, NULL), 0x65e5);
	T_EQ_INT(cell_at(pad, 1, 8, NULL, NULL), 0x672c);
	T_EQ_INT(cell_at(pad, 2, 0, NULL, NULL), 0x250c);
	/* the bidi override is never drawn */
	for (int x = 0; x < 40; x++)
		T_CHECK(cell_at(pad, 3, x, NULL, NULL) != 0x202e);
	T_EQ_INT(cell_at(pad, 3, 5, NULL, NULL), L'a');
	/* only damaged rows are drawn again */
	feed(p, "\033[8;1Hrow eight");
	mvwaddstr(pad, 0, 0, "ZZZZ"); /* row 0 is not damaged: must stay as the test left it */
	T_CHECK(vtpane_draw(p, pad, 0, 0, false));
	T_EQ_INT(cell_at(pad, 0, 0, NULL, NULL), L'Z');
	T_EQ_INT(cell_at(pad, 7, 0, NULL, NULL), L'r');
	/* and only the damaged cells of a row: a key's echo draws the character and the cursor's cells (and one on
	 * either side), not its row */
	mvwaddstr(pad, 7, 0, "QQQQQQQ");
	mvwaddstr(pad, 7, 15, "QQQQQ");
	feed(p, "!");
	T_CHECK(vtpane_draw(p, pad, 0, 0, false));
	T_EQ_INT(cell_at(pad, 7, 9, NULL, NULL), L'!');
	T_EQ_INT(cell_at(pad, 7, 10, &a, NULL), L' '); /* the cursor */
	T_CHECK(a & A_REVERSE);
	T_EQ_INT(cell_at(pad, 7, 0, NULL, NULL), L'Q');
	T_EQ_INT(cell_at(pad, 7, 6, NULL, NULL), L'Q');
	T_EQ_INT(cell_at(pad, 7, 15, NULL, NULL), L'Q');
	/* a combining mark alone in its cell (after a cursor move) is drawn on a blank there: curses would add it to
	 * the cell before and leave this one as it was */
	feed(p, "\033[9;40H\xcc\x81");
	mvwaddstr(pad, 8, 39, "Q");
	vtpane_draw(p, pad, 0, 0, false);
	T_CHECK(cell_at(pad, 8, 39, NULL, NULL) != L'Q');
	vtpane_free(p);
}

static void test_absorbed_sequences(WINDOW *pad)
{
	struct vtpane *p = vtpane_new(5, 30, 100);
	feed(p, "before");
	feed(p, "\033]0;PWNED\007\033]52;c;cHduZWQ=\007\033[?1049h\033[?1000h");
	T_EQ_STR(vtpane_title(p), "PWNED");
	T_CHECK(vtpane_altscreen(p));
	T_CHECK(vtpane_mouse_mode(p) != 0);
	feed(p, "in alt");
	vtpane_draw(p, pad, 0, 0, true);
	char *t = vtpane_screen_text(p);
	T_CHECK(strstr(t, "in alt") != NULL);
	T_CHECK(strstr(t, "before") == NULL);
	T_CHECK(strchr(t, '\033') == NULL);
	free(t);
	feed(p, "\033[?1049l");
	t = vtpane_screen_text(p);
	T_CHECK(strstr(t, "before") != NULL);
	free(t);
	/* nothing drawn is a control character */
	for (int y = 0; y < 5; y++)
		for (int x = 0; x < 30; x++) {
			wchar_t w = cell_at(pad, y, x, NULL, NULL);
			T_CHECK(w >= 0x20 && !(w >= 0x7f && w < 0xa0));
		}
	/* a title with an escape in it is stored escaped */
	feed(p, "\033]2;a\033[31mb\007");
	T_CHECK(strchr(vtpane_title(p), '\033') == NULL);
	vtpane_free(p);
}

static void test_scrollback_search_copy(void)
{
	struct vtpane *p = vtpane_new(24, 80, VTPANE_SCROLLBACK_DEFAULT);
	struct buf b;
	buf_init(&b);
	for (int i = 0; i < 12000; i++)
		buf_printf(&b, "line %05d\r\n", i);
	vtpane_input(p, b.data, b.len);
	buf_free(&b);
	T_EQ_INT(vtpane_scrollback_count(p), VTPANE_SCROLLBACK_DEFAULT);
	/* the oldest kept line: 12000 lines + the empty last row, screen 24 */
	char *first = vtpane_line_text(p, 0);
	T_EQ_STR(first, "line 01977");
	free(first);
	T_CHECK(vtpane_search(p, "LINE 05000", true));
	T_CHECK(vtpane_view_offset(p) > 0);
	vtpane_scroll(p, -1000000);
	T_EQ_INT(vtpane_view_offset(p), 0);
	vtpane_scroll(p, 50);
	T_EQ_INT(vtpane_view_offset(p), 50);
	/* copy mode: select two lines and copy */
	vtpane_copy_mode(p, true);
	T_CHECK(vtpane_in_copy_mode(p));
	vtpane_key(p, 'g', false, 0);
	vtpane_key(p, 'v', false, 0);
	vtpane_key(p, 'j', false, 0);
	vtpane_key(p, '$', false, 0);
	vtpane_key(p, 'y', false, 0);
	T_CHECK(!vtpane_in_copy_mode(p));
	T_EQ_STR(vtpane_copied(p), "line 01977\nline 01978");
	/* copy mode search prompt */
	vtpane_copy_mode(p, true);
	vtpane_key(p, '?', false, 0);
	const char *q = "line 11990";
	for (const char *c = q; *c; c++)
		vtpane_key(p, *c, false, 0);
	vtpane_key(p, '\r', false, 0);
	vtpane_key(p, 'y', false, 0);
	T_EQ_STR(vtpane_copied(p), "line 11990");
	/* p pastes the copy into the guest */
	vtpane_set_output(p, on_out, NULL);
	buf_init(&sent);
	vtpane_copy_mode(p, true);
	vtpane_key(p, 'p', false, 0);
	T_CHECK(!vtpane_in_copy_mode(p));
	T_EQ_STR(sent.data, "line 11990");
	buf_free(&sent);
	/* new output while scrolled back keeps the view on the same lines */
	vtpane_scroll(p, 10);
	int off = vtpane_view_offset(p);
	feed(p, "more\r\n");
	T_EQ_INT(vtpane_view_offset(p), off + 1);
	vtpane_free(p);
}

static void test_keys(void)
{
	struct vtpane *p = vtpane_new(5, 20, 10);
	vtpane_set_output(p, on_out, NULL);
	buf_init(&sent);
	vtpane_key(p, 'a', false, 0);
	vtpane_key(p, 0xe9, false, 0);
	vtpane_key(p, KEY_UP, true, 0);
	vtpane_key(p, '\r', false, 0);
	vtpane_key(p, 0x7f, false, 0);
	vtpane_key(p, 3, false, 0);
	vtpane_key(p, 'x', false, VTPANE_MOD_ALT);
	vtpane_key(p, KEY_F(1), true, 0);
	vtpane_key(p, KEY_F(5), true, 0);
	T_EQ_STR(sent.data, "a\xc3\xa9\033[A\r\x7f\x03\033x\033OP\033[15~");
	/* application cursor keys after DECCKM */
	buf_reset(&sent);
	feed(p, "\033[?1h");
	vtpane_key(p, KEY_UP, true, 0);
	T_EQ_STR(sent.data, "\033OA");
	/* bracketed paste only when the guest asked for it */
	buf_reset(&sent);
	vtpane_paste(p, "ls\n", 3);
	T_EQ_STR(sent.data, "ls\r");
	buf_reset(&sent);
	feed(p, "\033[?2004h");
	vtpane_paste(p, "ls\n", 3);
	T_EQ_STR(sent.data, "\033[200~ls\r\033[201~");
	/* a terminal query from the guest is answered to the guest, not to the real terminal */
	buf_reset(&sent);
	feed(p, "\033[6n");
	T_CHECK(sent.len > 0 && sent.data[0] == '\033');
	buf_free(&sent);
	vtpane_free(p);
}

static void test_resize(WINDOW *pad)
{
	struct vtpane *p = vtpane_new(5, 20, 100);
	for (int i = 0; i < 10; i++) {
		char l[32];
		snprintf(l, sizeof l, "r%d\r\n", i);
		feed(p, l);
	}
	vtpane_resize(p, 8, 30);
	int r, c;
	vtpane_size(p, &r, &c);
	T_EQ_INT(r, 8);
	T_EQ_INT(c, 30);
	T_CHECK(vtpane_draw(p, pad, 0, 0, true));
	vtpane_resize(p, 3, 10);
	vtpane_draw(p, pad, 0, 0, true);
	char *t = vtpane_screen_text(p);
	T_CHECK(strstr(t, "r9") != NULL);
	free(t);
	vtpane_resize(p, 5, 40);
	vtpane_note(p, "[reconnected \033]0;x\007]");
	t = vtpane_screen_text(p);
	T_CHECK(strstr(t, "[reconnec") != NULL);
	free(t);
	vtpane_free(p);
}

/* REP (CSI Pn b) is done by the pane: libvterm 0.1.4 hangs on it before any character was printed. */
static void test_rep(void)
{
	struct vtpane *p = vtpane_new(5, 20, 10);
	feed(p, "\033[1b\033[b\033[3:1b\033[99999999999999999999b"); /* nothing printed yet: dropped, no hang */
	/* a lone combining character (a zero-width glyph), and junk bytes libvterm skips between ESC and [ */
	feed(p, "\xcc\x81\033[1b\033\x9b[2b\033\x80\x7f[3b\033\001[4b\xcc\033 [b\033 [?1b\xcc\033\033[b[b\r");
	feed(p, "x\033[3bY\033[1;2:3b\r\n");
	char *l = vtpane_line_text(p, 0);
	T_EQ_STR(l, "xxxxYY");
	free(l);
	feed(p, "ab\033[100b"); /* stops at the right margin, as REP does */
	l = vtpane_line_text(p, 1);
	T_EQ_STR(l, "abbbbbbbbbbbbbbbbbbb");
	free(l);
	vtpane_free(p);
	/* a CSI with too many parameters (libvterm 0.1.4 overflows on it) is dropped whole; 16 are fine */
	p = vtpane_new(3, 20, 10);
	feed(p, "\033[1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1mA");
	feed(p, "\033[38;5::::::::::::::::::::\007\007mB\033[1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;4mC\r\n");
	l = vtpane_line_text(p, 0);
	T_EQ_STR(l, "ABC");
	free(l);
	vtpane_free(p);
	/* the same input whole and byte by byte gives the same screen (the held-back CSI bytes keep their order) */
	const char *in = "\033[1;31mred\033[0m \033[38;2;1;2;3mrgb\033[0m\r\nz\033[2b\033[?25l\033[2;5H!\033[1\nb"
			 "\033[K\033]0;t\007\033[3;1Hq\033[;2b\033[1 q\033[4m_\033[0m";
	struct vtpane *a = vtpane_new(6, 30, 10), *b = vtpane_new(6, 30, 10);
	feed(a, in);
	for (const char *c = in; *c; c++)
		vtpane_input(b, c, 1);
	char *ta = vtpane_screen_text(a), *tb = vtpane_screen_text(b);
	T_EQ_STR(ta, tb);
	T_CHECK(strstr(ta, "zzz") != NULL);
	free(ta);
	free(tb);
	vtpane_free(a);
	vtpane_free(b);
}

/* A scroll region and left/right margins set by the guest, then the pane shrinks below them: line feeds and
 * inserted characters must not take libvterm outside its arrays (it keeps the old top and left margins), and the
 * cursor stays where it was. */
static void test_resize_margins(void)
{
	struct vtpane *p = vtpane_new(20, 40, 100);
	feed(p, "\033[10;15r\033[?69h\033[20;30s\033[?69l\033[3;7Hxy");
	vtpane_resize(p, 4, 10);
	int row, col;
	vtpane_cursor(p, &row, &col);
	T_EQ_INT(row, 2);
	T_EQ_INT(col, 8);
	feed(p, "\r\na\r\nb\r\nc\r\nd\033[2@\033[?69h\033[3P\033[L\033[M");
	char *l = vtpane_line_text(p, vtpane_scrollback_count(p) + 2);
	T_EQ_STR(l, "c"); /* the inserted line at the bottom pushed "d" out */
	free(l);
	vtpane_free(p);
	/* a cursor saved low on a tall screen, restored after the screen shrank, stays on the screen */
	p = vtpane_new(24, 60, 100);
	feed(p, "\033[20;50H\0337\033[1;1Htop");
	vtpane_resize(p, 5, 20);
	feed(p, "\0338\033#6wide line\r\n");
	vtpane_cursor(p, &row, &col);
	T_CHECK(row >= 0 && row < 5);
	T_CHECK(col >= 0 && col < 20);
	vtpane_free(p);
}

/* C1 controls encoded in UTF-8 (U+0080-U+009F) never move the cursor backwards (libvterm prints them with width
 * -1: the cursor went left of column 0 and a tab stop set there was written before libvterm's array), also when
 * the two bytes arrive in different chunks. */
static void test_c1_in_utf8(void)
{
	struct vtpane *p = vtpane_new(5, 10, 10);
	feed(p, "ab\xc2\x9b\xc2\x85\xc2\x80\xc2\x9f\xc2\x9b\xc2\x9b");
	feed(p, "\xc2");
	feed(p, "\x9b\033H\xc2");
	feed(p, "\xa9x");
	int row, col;
	vtpane_cursor(p, &row, &col);
	T_EQ_INT(row, 0);
	T_EQ_INT(col, 4);
	char *l = vtpane_line_text(p, 0);
	T_EQ_STR(l, "ab\xc2\xa9x");
	free(l);
	vtpane_free(p);
}

/* vtpane_same says what comparing vtpane_dump's texts says: equal panes, then a difference in the scrollback's
 * colours, on the screen, in the title */
static void test_same(void)
{
	static const char *const tails[] = { "\033[31mred\r\n", "x", "\033]2;t\007" };
	for (size_t i = 0; i < sizeof tails / sizeof tails[0]; i++) {
		struct vtpane *a = vtpane_new(3, 20, 50), *b = vtpane_new(3, 20, 50);
		const char *common = "one\r\ntwo\r\n\033[1mthree\033[0m\r\nfour\r\n";
		vtpane_input(a, common, strlen(common));
		vtpane_input(b, common, strlen(common));
		char *da = vtpane_dump(a), *db = vtpane_dump(b);
		T_CHECK(vtpane_same(a, b) && strcmp(da, db) == 0);
		free(da);
		free(db);
		const char *more = i == 0 ? "\033[32mred\r\n" : i == 1 ? "y" : "\033]2;u\007";
		vtpane_input(a, tails[i], strlen(tails[i]));
		vtpane_input(b, more, strlen(more));
		if (i == 0) { /* then scrolled into the scrollback, where only the colour differs */
			vtpane_input(a, "\r\n\r\n\r\n", 6);
			vtpane_input(b, "\r\n\r\n\r\n", 6);
		}
		da = vtpane_dump(a);
		db = vtpane_dump(b);
		T_CHECK(!vtpane_same(a, b) && strcmp(da, db) != 0);
		free(da);
		free(db);
		vtpane_free(a);
		vtpane_free(b);
	}
}

int main(void)
{
	fixture_curses();
	WINDOW *pad = newpad(30, 90);
	test_text_and_render(pad);
	test_absorbed_sequences(pad);
	test_scrollback_search_copy();
	test_keys();
	test_resize(pad);
	test_rep();
	test_same();
	test_resize_margins();
	test_c1_in_utf8();
	delwin(pad);
	fixture_curses_end();
	return T_DONE();
}
