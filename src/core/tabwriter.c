/* Go's text/tabwriter, the part kubectl's describe output relies on (see tabwriter.h). */
#include "core/tabwriter.h"

#include <stdlib.h>
#include <string.h>

#include "core/xmalloc.h"

struct cell {
	const char *s;
	size_t len;
	int width;
};

struct line {
	struct cell *c;
	int n; /* cells; the last one is the text after the last tab */
};

struct tw {
	struct line *l;
	int n;
	int *widths;
	int nw;
	int padding;
	struct buf *out;
};

static int runes(const char *s, size_t n)
{
	int r = 0;
	for (size_t i = 0; i < n; i++)
		r += ((unsigned char)s[i] & 0xc0) != 0x80;
	return r;
}

static void write_lines(struct tw *t, int line0, int line1)
{
	for (int i = line0; i < line1; i++) {
		const struct line *ln = &t->l[i];
		for (int j = 0; j < ln->n; j++) {
			const struct cell *c = &ln->c[j];
			buf_add(t->out, c->s, c->len);
			if (j < t->nw && j < ln->n - 1)
				for (int k = c->width; k < t->widths[j]; k++)
					buf_add_char(t->out, ' ');
		}
		buf_add_char(t->out, '\n');
	}
}

static void format(struct tw *t, int line0, int line1)
{
	int column = t->nw;
	for (int this = line0; this < line1; this++) {
		if (column >= t->l[this].n - 1)
			continue;
		write_lines(t, line0, this);
		line0 = this;
		int width = 0;
		for (; this < line1; this++) {
			const struct line *ln = &t->l[this];
			if (column >= ln->n - 1)
				break;
			int w = ln->c[column].width + t->padding;
			if (w > width)
				width = w;
		}
		t->widths = xreallocarray(t->widths, (size_t)t->nw + 1, sizeof *t->widths);
		t->widths[t->nw++] = width;
		format(t, line0, this);
		t->nw--;
		line0 = this;
	}
	write_lines(t, line0, line1);
}

static void flush(struct tw *t)
{
	format(t, 0, t->n);
	for (int i = 0; i < t->n; i++)
		free(t->l[i].c);
	t->n = 0;
}

void tabwriter_format(const char *in, size_t len, int padding, struct buf *out)
{
	struct tw t = { .padding = padding, .out = out };
	int cap = 0;
	size_t i = 0;
	while (i < len) {
		if (in[i] == '\f') {
			flush(&t);
			i++;
			continue;
		}
		size_t e = i;
		while (e < len && in[e] != '\n' && in[e] != '\f')
			e++;
		if (t.n == cap) {
			cap = cap ? cap * 2 : 64;
			t.l = xreallocarray(t.l, (size_t)cap, sizeof *t.l);
		}
		struct line *ln = &t.l[t.n++];
		ln->n = 0;
		ln->c = NULL;
		int ccap = 0;
		size_t s = i;
		for (size_t k = i; k <= e; k++) {
			if (k < e && in[k] != '\t')
				continue;
			if (ln->n == ccap) {
				ccap = ccap ? ccap * 2 : 4;
				ln->c = xreallocarray(ln->c, (size_t)ccap, sizeof *ln->c);
			}
			ln->c[ln->n].s = in + s;
			ln->c[ln->n].len = k - s;
			ln->c[ln->n].width = runes(in + s, k - s);
			ln->n++;
			s = k + 1;
		}
		if (ln->n == 1)
			flush(&t); /* a line without a tab ends every block */
		i = e < len && in[e] == '\n' ? e + 1 : e;
	}
	flush(&t);
	free(t.l);
	free(t.widths);
}
