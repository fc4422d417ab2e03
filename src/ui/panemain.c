/* panemain: one pane zoomed on the dashboard's screen (see panemain.h). */
#include "ui/panemain.h"

#include <curses.h>
#include <stdbool.h>
#include <stdlib.h>

#include "core/loop.h"
#include "ui/console_view.h"
#include "ui/screen.h"
#include "ui/view.h"
#include "ui/vnc_view.h"

static void layout(int rows, int cols)
{
	struct region body = { 0, 0, rows > 0 ? rows : 1, cols > 0 ? cols : 1 };
	view_layout(&body);
}

static void on_key(int key)
{
	enum view_result r = view_key_dispatch(key);
	/* the pane gave focus back (Ctrl+]) or went away: there is no main view to go back to */
	if (r == VIEW_UNFOCUS || r == VIEW_CLOSE || view_pane_count() == 0)
		loop_quit(0);
	/* no screen_dirty here: a view marks itself when a key changed it (view_dirty), and a key for the guest
	 * changes nothing until its echo arrives */
}

static void on_mouse(const struct view_mouse *m)
{
	view_mouse_dispatch(m);
	screen_dirty();
}

static void on_resize(int rows, int cols)
{
	layout(rows, cols);
}

static void on_draw(bool full)
{
	if (full) {
		layout(LINES, COLS);
		erase();
	}
	view_draw_all(full);
	wnoutrefresh(stdscr);
}

static void on_quit(int sig)
{
	(void)sig;
	loop_quit(0);
}

static void on_paste(const char *text, size_t len)
{
	if (!console_view_paste(view_pane_active(), text, len))
		vnc_view_paste(view_pane_active(), text, len);
	screen_dirty();
}

int panemain_run(struct view *v)
{
	struct screen_cbs cbs = { on_key, on_mouse, on_resize, on_draw, on_quit, on_paste };
	char *terr = NULL;
	int r = screen_init(&cbs, NULL, &terr);
	free(terr);
	if (r < 0) {
		view_free(v);
		return -1;
	}
	view_pane_open(v);
	view_pane_zoom(true);
	layout(LINES, COLS);
	int rc = loop_run();
	screen_fini();
	return rc;
}

void panemain_close(void)
{
	view_free_all();
}

unsigned long panemain_frames(void)
{
	return screen_frames();
}
