/* Go's text/tabwriter as kubectl uses it (minwidth 0, padding 2, padded with spaces, no flags): text whose cells
 * end in tabs is aligned column by column; a column block is a run of consecutive lines that have a cell in
 * that column; a line without a tab, and a '\f', end every block. Widths count runes, as Go does. */
#ifndef KVCON_CORE_TABWRITER_H
#define KVCON_CORE_TABWRITER_H

#include <stddef.h>

#include "core/buf.h"

/* Formats in[0..len) into out (appended). */
void tabwriter_format(const char *in, size_t len, int padding, struct buf *out);

#endif
