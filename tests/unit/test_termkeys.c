/* Unit tests for console/termkeys: terminal bytes -> X keysyms, modifiers, SGR mouse reports, Ctrl+] and F8;
 * sequences split at every byte boundary decode the same as whole. */
#include <stdio.h>
#include <string.h>

#include "console/termkeys.h"
#include "core/buf.h"
#include "t.h"

static void record(const struct termkeys_event *ev, void *arg)
{
	struct buf *b = arg;
	switch (ev->type) {
	case TK_KEY:
		buf_printf(b, "K%x/%u ", ev->keysym, ev->mods);
		break;
	case TK_MOUSE:
		buf_printf(b, "M%d,%d,%d,%c%s ", ev->col, ev->row, ev->button, ev->press ? 'p' : 'r',
			   ev->motion ? "m" : "");
		break;
	case TK_LEAVE:
		buf_add_str(b, "LEAVE ");
		break;
	case TK_MENU:
		buf_add_str(b, "MENU ");
		break;
	}
}

static char got[4096];

static const char *decode(const char *in, size_t len, size_t chunk)
{
	struct buf b;
	buf_init(&b);
	struct termkeys *k = termkeys_new(record, &b);
	for (size_t i = 0; i < len; i += chunk)
		termkeys_feed(k, (const uint8_t *)in + i, len - i < chunk ? len - i : chunk);
	termkeys_flush(k);
	termkeys_free(k);
	snprintf(got, sizeof got, "%s", b.data ? b.data : "");
	buf_free(&b);
	return got;
}

static void check(const char *in, const char *want)
{
	size_t len = strlen(in);
	T_EQ_STR(decode(in, len, len ? len : 1), want);
	/* the same, one byte at a time */
	T_EQ_STR(decode(in, len, 1), want);
}

int main(void)
{
	check("a", "K61/0 ");
	check("A", "K41/0 ");
	check("\r", "Kff0d/0 ");
	check("\t", "Kff09/0 ");
	check("\x7f", "Kff08/0 ");
	check("\x03", "K63/4 ");	      /* Ctrl+C */
	check("\x1d", "LEAVE ");	      /* Ctrl+] */
	check("\x1b", "Kff1b/0 ");	      /* a lone ESC, after the flush */
	check("\x1bx", "K78/2 ");	      /* Alt+x */
	check("\x1b[A", "Kff52/0 ");	      /* Up */
	check("\x1b[1;5D", "Kff51/4 ");	      /* Ctrl+Left */
	check("\x1bOP", "Kffbe/0 ");	      /* F1 (SS3) */
	check("\x1b[19~", "MENU ");	      /* F8 */
	check("\x1b[19;2~", "Kffc5/1 ");      /* Shift+F8 goes to the guest */
	check("\x1b[24~", "Kffc9/0 ");	      /* F12 */
	check("\x1b[3~", "Kffff/0 ");	      /* Delete */
	check("\x1b[6~", "Kff56/0 ");	      /* PgDn */
	check("\x1b[Z", "Kff09/1 ");	      /* Shift+Tab */
	check("\xc3\xa9", "Ke9/0 ");	      /* é: Latin-1 keysym */
	check("\xe2\x82\xac", "K10020ac/0 "); /* €: Unicode keysym */
	check("\xc0\x80"
	      "a",
	      "K61/0 ");			 /* overlong NUL: dropped */
	check("\x80x", "K78/0 ");		 /* a stray continuation byte: dropped */
	check("\xed\xa0\x80", "");		 /* a surrogate: dropped */
	check("\xc3(", "K28/0 ");		 /* a broken sequence: the lead byte goes, the rest stays */
	check("\x1b\xc3\xa9", "Kff1b/0 Ke9/0 "); /* ESC, then é */
	check("\x1b[<0;10;5M\x1b[<0;10;5m", "M9,4,0,p M9,4,0,r ");
	check("\x1b[<32;11;6M", "M10,5,0,pm ");
	check("\x1b[<35;1;1M", "M0,0,-1,pm "); /* motion, no button */
	check("\x1b[<64;3;3M", "M2,2,3,p ");   /* wheel up */
	check("\x1b[<65;3;3M", "M2,2,4,p ");   /* wheel down */
	check("ls -l\r", "K6c/0 K73/0 K20/0 K2d/0 K6c/0 Kff0d/0 ");
	/* junk never hangs or crashes: an endless CSI is dropped */
	char junk[300] = "\x1b[";
	memset(junk + 2, '1', sizeof junk - 3);
	junk[sizeof junk - 1] = '\0';
	decode(junk, strlen(junk), 7);
	T_CHECK(termkeys_needs_shift('A') && termkeys_needs_shift('>') && termkeys_needs_shift('$'));
	T_CHECK(!termkeys_needs_shift('a') && !termkeys_needs_shift('/') && !termkeys_needs_shift(0xff0d) &&
		!termkeys_needs_shift(0));
	return T_DONE();
}
