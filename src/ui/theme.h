/* Colour themes: `themes/NAME` files of `element = fg bg attrs` lines mapped to curses attributes.
 * NO_COLOR, terminals without colour and 8-colour terminals are handled here, not by the views. */
#ifndef KVCON_UI_THEME_H
#define KVCON_UI_THEME_H

#include <stdbool.h>
#include <stddef.h>

enum theme_elem {
	THEME_NORMAL,
	THEME_HEADER,       /* header values */
	THEME_HEADER_KEY,   /* header labels */
	THEME_LOGO,
	THEME_TITLE,        /* frame titles, pane tabs */
	THEME_TITLE_ACTIVE,
	THEME_HINT,
	THEME_TABLE_HEADER,
	THEME_SELECTED,
	THEME_FLASH,        /* a row whose state just changed */
	THEME_OK,           /* Running, Ready, progressed */
	THEME_WAIT,         /* Starting, Pending, Scheduling, waiting */
	THEME_BAD,          /* errors, failed, Warning events */
	THEME_OFF,          /* Stopped, not expected */
	THEME_CMDLINE,
	THEME_ERROR,        /* status line errors */
	THEME_READONLY,
	THEME_BORDER,
	THEME_BORDER_FOCUS,
	THEME_MATCH,        /* search hits in the pager */
	THEME_DIM,
	THEME_COUNT
};

/* Finds and loads a theme by name or path (see theme.c for the search path); NULL: the built-in default. */
int theme_load(const char *name, char **err);
/* Call after start_color (or with colour off): allocates pairs for the loaded theme. */
void theme_apply(bool color, int ncolors);
int theme_attr(enum theme_elem e);
/* The attr for a status word (Running, Pending, Failed, ...). */
int theme_status_attr(const char *status);

/* ---- test seams: exported for tests/ only, not to be called by kvcon itself (tests/check-exports.sh) ---- */
/* Parses theme text into attributes for the current terminal (colours as it supports them). Returns 0, or -1
 * with a message naming the line in err (caller frees). Unknown elements are errors; missing ones default. */
int theme_load_text(const char *text, const char *name, char **err);

#endif
