/* Text from outside (container logs, serial logs) split into lines and made safe for a terminal: complete
 * lines are handed out display-escaped (util_escape_display_n: ESC, C0/C1 controls and invalid UTF-8 shown
 * as \e, \x9b, ...), one trailing CR dropped. A UTF-8 character split across two feeds stays whole. A line
 * longer than LINEBUF_MAX is handed out in pieces. */
#ifndef KVCON_CORE_LINEBUF_H
#define KVCON_CORE_LINEBUF_H

#include <stddef.h>

#include "core/buf.h"

#define LINEBUF_MAX 65536

/* line is the escaped text without its newline, NUL-terminated, valid during the call. */
typedef void (*linebuf_cb)(void *arg, const char *line, size_t len);

struct linebuf {
	struct buf pend; /* bytes of the unfinished line */
	char *esc;       /* scratch for the escaped line */
	size_t esc_cap;
};

void linebuf_init(struct linebuf *lb);
void linebuf_free(struct linebuf *lb);
/* Hands every complete line of data (after what is pending) to cb. */
void linebuf_feed(struct linebuf *lb, const char *data, size_t len, linebuf_cb cb, void *arg);
/* Hands out the unfinished line, if any (the stream ended). */
void linebuf_flush(struct linebuf *lb, linebuf_cb cb, void *arg);

#endif
