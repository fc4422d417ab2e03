/* Unit tests of bracketed paste: console/paste.c collects the keys between the paste start and end codes into text
 * (controls dropped, a length cap), and vtpane_paste sends it to the guest bracketed only when the guest enabled
 * DECSET 2004, with line ends as CR and the bracket sequences stripped from the text. */
#include <locale.h>
#include <stdio.h>

#include "console/paste.h"
#include "console/vtpane.h"
#include "core/buf.h"
#include "t.h"

static struct buf sent;
static void on_out(const char *d, size_t n, void *arg)
{
	(void)arg;
	buf_add(&sent, d, n);
}

static void test_collect(void)
{
	struct paste ps = {0};
	T_EQ_INT(paste_key(&ps, 'a', false), PASTE_NONE); /* outside a paste: an ordinary key */
	T_EQ_INT(paste_key(&ps, PASTE_KEY_END, true), PASTE_NONE);
	T_EQ_INT(paste_key(&ps, PASTE_KEY_BEGIN, true), PASTE_MORE);
	const int keys[] = {'l', 's', ' ', '-', 'l', '\r', 0x1b, '[', 'A', 0x00e9, 0x7f, '\t', 0x9b, 'x'};
	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
		T_EQ_INT(paste_key(&ps, keys[i], false), PASTE_MORE);
	T_EQ_INT(paste_key(&ps, KEY_UP, true), PASTE_MORE); /* a key ncurses decoded inside the text: dropped */
	T_EQ_INT(paste_key(&ps, KEY_ENTER, true), PASTE_MORE);
	T_EQ_INT(paste_key(&ps, PASTE_KEY_END, true), PASTE_DONE);
	T_EQ_STR(ps.text.data, "ls -l\r[A\xc3\xa9\tx\r");
	T_EQ_INT(paste_key(&ps, 'q', false), PASTE_NONE);
	/* a second paste starts empty; a huge one is cut */
	T_EQ_INT(paste_key(&ps, PASTE_KEY_BEGIN, true), PASTE_MORE);
	for (int i = 0; i < PASTE_MAX + 100; i++)
		paste_key(&ps, 'y', false);
	T_EQ_INT(paste_key(&ps, PASTE_KEY_END, true), PASTE_DONE);
	T_EQ_INT(ps.text.len, PASTE_MAX);
	paste_free(&ps);
}

static void test_to_guest(void)
{
	struct vtpane *p = vtpane_new(5, 40, 10);
	vtpane_set_output(p, on_out, NULL);
	/* the guest did not ask for bracketed paste: raw text, LF and CR LF as CR */
	buf_reset(&sent);
	vtpane_paste(p, "echo a\necho b\r\n", 15);
	T_EQ_STR(sent.data, "echo a\recho b\r");
	/* it asks (DECSET 2004): wrapped; an end marker inside the text is stripped */
	vtpane_input(p, "\033[?2004h", 8);
	buf_reset(&sent);
	const char *t = "rm -rf x\033[201~; echo pwned\n";
	vtpane_paste(p, t, strlen(t));
	T_EQ_STR(sent.data, "\033[200~rm -rf x; echo pwned\r\033[201~");
	/* and turns it off again */
	vtpane_input(p, "\033[?2004l", 8);
	buf_reset(&sent);
	vtpane_paste(p, "z", 1);
	T_EQ_STR(sent.data, "z");
	vtpane_free(p);
}

int main(void)
{
	setlocale(LC_ALL, "C.UTF-8");
	buf_init(&sent);
	test_collect();
	test_to_guest();
	buf_free(&sent);
	return T_DONE();
}
