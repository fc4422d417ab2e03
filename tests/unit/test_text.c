/* core/tabwriter.c held to Go's text/tabwriter on kubectl-shaped input, and core/linebuf.c: lines split across
 * feeds (a UTF-8 character cut in two stays whole), control bytes escaped, CR dropped, long lines cut. */
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/linebuf.h"
#include "core/tabwriter.h"
#include "t.h"

static char *tw(const char *in)
{
	struct buf b;
	buf_init(&b);
	tabwriter_format(in, strlen(in), 2, &b);
	buf_add_char(&b, '\0');
	return b.data;
}

static void test_tabwriter(void)
{
	char *s = tw("Name:\tx\nNamespace:\tdefault\n");
	T_EQ_STR(s, "Name:       x\nNamespace:  default\n");
	free(s);
	/* a line without a tab ends the block: widths start over */
	s = tw("a:\t1\nlonger key:\t2\nMetadata:\n  b:\t3\n");
	T_EQ_STR(s, "a:           1\nlonger key:  2\nMetadata:\n  b:  3\n");
	free(s);
	/* several columns, an empty cell, the last cell never padded */
	s = tw("  Type\tReason\tMessage\n  ----\t------\t-------\n  Normal\tStarted\tok \n");
	T_EQ_STR(s, "  Type    Reason   Message\n  ----    ------   -------\n  Normal  Started  ok \n");
	free(s);
	s = tw("Labels:\ta=b\n\tc=d\nAnnotations:\t<none>\n");
	T_EQ_STR(s, "Labels:       a=b\n              c=d\nAnnotations:  <none>\n");
	free(s);
	/* a form feed flushes: the next lines align on their own */
	s = tw("a:\t1\n\fvery long key:\t2\n");
	T_EQ_STR(s, "a:  1\nvery long key:  2\n");
	free(s);
	/* widths count runes, not bytes */
	s = tw("é:\t1\nab:\t2\n");
	T_EQ_STR(s, "é:   1\nab:  2\n"); /* é: is two runes (three bytes) */
	free(s);
	/* nested columns: column 1 aligns only over the lines that have it */
	s = tw("x\ty\tz\nxx\tyyyy\tz\nxxx\tq\n");
	T_EQ_STR(s, "x    y     z\nxx   yyyy  z\nxxx  q\n");
	free(s);
}

struct lines {
	char got[16][256];
	int n;
};

static void add(void *arg, const char *line, size_t len)
{
	struct lines *l = arg;
	if (l->n < 16)
		snprintf(l->got[l->n++], sizeof l->got[0], "%.*s", (int)len, line);
}

static void test_linebuf(void)
{
	struct linebuf lb;
	struct lines l = { .n = 0 };
	linebuf_init(&lb);
	linebuf_feed(&lb, "one\ntw", 6, add, &l);
	T_EQ_INT(l.n, 1);
	linebuf_feed(&lb, "o\r\nesc \x1b[2J bel \x07 \xc3", 19, add, &l);
	T_EQ_INT(l.n, 2);
	linebuf_feed(&lb, "\xa9 end\n", 6, add, &l); /* é split across two feeds */
	linebuf_feed(&lb, "no newline", 10, add, &l);
	T_EQ_INT(l.n, 3);
	linebuf_flush(&lb, add, &l);
	T_EQ_INT(l.n, 4);
	T_EQ_STR(l.got[0], "one");
	T_EQ_STR(l.got[1], "two");
	T_EQ_STR(l.got[2], "esc \\e[2J bel \\x07 \xc3\xa9 end");
	T_EQ_STR(l.got[3], "no newline");
	/* a line longer than LINEBUF_MAX comes out in pieces, none longer than the limit */
	char *big = malloc(LINEBUF_MAX * 2 + 10);
	memset(big, 'x', LINEBUF_MAX * 2 + 10);
	struct lines m = { .n = 0 };
	linebuf_feed(&lb, big, LINEBUF_MAX * 2 + 10, add, &m);
	T_EQ_INT(m.n, 2);
	T_EQ_INT(strlen(m.got[0]), 255); /* (the test keeps 255 bytes of each) */
	linebuf_flush(&lb, add, &m);
	T_EQ_INT(m.n, 3);
	free(big);
	linebuf_free(&lb);
}

int main(void)
{
	test_tabwriter();
	test_linebuf();
	return T_DONE();
}
