/* A mirror of the parts of libvterm 0.1.x's parser and state that decide how it treats printable ASCII: the
 * parser state (ground, escape, CSI, string), whether the last byte continued a text run, which character set
 * GL maps ASCII through, and origin mode. The pane feeds it exactly the bytes it gives libvterm, in the same
 * writes, and writes plain-text runs into its own grid itself only while vtmirror_plain says libvterm would
 * print them unchanged (see vtpane.c). Where it cannot follow libvterm exactly it errs towards "not plain". */
#ifndef KVCON_CONSOLE_VTMIRROR_H
#define KVCON_CONSOLE_VTMIRROR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct vtmirror {
	uint8_t state;	   /* parser state (see vtmirror.c) */
	bool in_text;	   /* the last byte was text in ground state, in this write */
	bool origin;	   /* DECOM may be on */
	bool tainted;	   /* started after bytes it did not see: never plain */
	uint8_t gl;	   /* G0..G3 invoked into GL */
	bool g_other[4];   /* G0..G3 may map ASCII to something else (DEC graphics, UK) */
	uint8_t nintermed; /* intermediates of the escape or CSI in progress */
	char intermed0;	   /* the first one */
	uint8_t nleader;   /* CSI leader bytes (<=>?) */
	char leader0;
	uint8_t nargs; /* CSI parameters started */
	long arg0;     /* the first parameter, -1 when missing */
};

void vtmirror_init(struct vtmirror *m);
/* Bytes as libvterm receives them, in order, all within one vterm_input_write. */
void vtmirror_feed(struct vtmirror *m, const char *d, size_t n);
/* The end of a vterm_input_write: a text run never continues into the next write. */
void vtmirror_write_end(struct vtmirror *m);
/* True when printable ASCII arriving now, at the start of a write, would start a new text run that libvterm
 * prints as the same code points: ground state, identity character set in GL, and origin mode off (the pane
 * repositions libvterm's cursor with a relative move, which origin mode would clamp to the margins). */
bool vtmirror_plain(const struct vtmirror *m);

#endif
