/* The dashboard's core: start-up (log, config, theme, sources), the frame (header, body, status line), the
 * status-line prompt and confirmations, global keys, and the one store listener that fans changes out. */
#include "ui/ui.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <wchar.h>

#include "core/intern.h"
#include "core/log.h"
#include "core/loop.h"
#include "core/opts.h"
#include "core/util.h"
#include "core/xmalloc.h"
#include "kube/cred.h"
#include "kube/http.h"
#include "model/chain.h"
#include "model/lineage.h"
#include "model/store.h"
#include "ui/cmdline.h"
#include "ui/console_view.h"
#include "ui/draw.h"
#include "ui/forwards.h"
#include "ui/header.h"
#include "ui/help.h"
#include "ui/nsctx.h"
#include "ui/screen.h"
#include "ui/sources.h"
#include "ui/table.h"
#include "ui/theme.h"
#include "ui/view.h"
#include "ui/vnc_view.h"

enum prompt_mode { PROMPT_NONE, PROMPT_TEXT, PROMPT_CONFIRM };

static uint64_t start_ms;

static struct {
	struct store *st;
	int listener;
	bool header_moved; /* a store change moved the header's counts since the last check (header_hook) */
	int header_hook;
	bool readonly;
	const char *ns; /* interned; NULL: all namespaces */
	char msg[512];
	bool msg_err;
	enum prompt_mode prompt;
	char label[128];
	char line[512];
	size_t len;
	void (*done)(void *arg, const char *text);
	const char *(*complete)(void *arg, const char *prefix, int i);
	void *arg;
	char comp_base[512]; /* what the user typed before cycling through completions */
	int comp_i;
	void (*yes)(void *arg);
	void (*free_arg)(void *arg);
	struct loop_timer *tick;
	bool too_small;
	int header_h;
	struct lineage *lineage;
	struct chain_index *chain_ix;
} U;

struct store *ui_store(void)
{
	return U.st;
}

struct lineage *ui_lineage(void)
{
	return U.lineage;
}

void ui_use_store(struct store *st)
{
	/* the header's VM counts and the namespace list follow the store through on_store; a new store starts them
	 * again (a freed store's address may come back with the same versions) */
	U.st = st;
	header_forget();
	nsctx_forget();
}

void ui_forget_source(struct source *src)
{
	/* Dropping a source's objects is not the end of their executions: without the lineage listening, the
	 * removals are not recorded (and persisted) as stops; a fresh recorder reloads the history from disk. */
	bool had = U.lineage != NULL;
	lineage_free(U.lineage);
	U.lineage = NULL;
	store_clear_source(U.st, src);
	forwards_stop_source(src);
	if (had) {
		U.lineage = lineage_new(U.st, NULL);
		lineage_set_paced(U.lineage);
		for (size_t i = 0; i < source_count(); i++)
			if (source_get(i) != src && !source_get(i)->closed)
				lineage_scan(U.lineage, source_get(i));
	}
}

void ui_dirty(void)
{
	screen_dirty();
}

bool ui_readonly(void)
{
	return U.readonly;
}

__attribute__((format(printf, 2, 0))) static void vmsg(bool err, const char *fmt, va_list ap)
{
	vsnprintf(U.msg, sizeof U.msg, fmt, ap);
	U.msg_err = err;
	log_msg(err ? LOG_WARN : LOG_INFO, "ui: %s", U.msg);
	screen_dirty();
}

void ui_message(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vmsg(false, fmt, ap);
	va_end(ap);
}

void ui_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vmsg(true, fmt, ap);
	va_end(ap);
}

const char *ui_namespace(void)
{
	return U.ns;
}

const char *ui_shown_namespace(void)
{
	if (U.ns)
		return U.ns;
	const char *ns = sources_narrowed_scope();
	return ns ? intern(ns) : NULL; /* interned: the header keeps it across frames, the source may free its own */
}

void ui_set_namespace(const char *ns)
{
	if (ns && (strcmp(ns, "all") == 0 || strcmp(ns, "-A") == 0 || *ns == '\0'))
		ns = NULL;
	U.ns = ns ? intern(ns) : NULL;
	sources_namespace_changed(U.st, U.ns);
	view_dirty(NULL);
	screen_dirty();
}

/* ---- prompt and confirmation ---- */

static void prompt_end(void)
{
	if (U.prompt == PROMPT_CONFIRM && U.free_arg)
		U.free_arg(U.arg);
	U.prompt = PROMPT_NONE;
	U.free_arg = NULL;
	U.yes = NULL;
	U.done = NULL;
	U.complete = NULL;
	curs_set(0);
	screen_dirty();
}

void ui_prompt(const char *label, void (*done)(void *arg, const char *text),
	       const char *(*complete)(void *arg, const char *prefix, int i), void *arg)
{
	if (U.prompt != PROMPT_NONE)
		prompt_end();
	snprintf(U.label, sizeof U.label, "%s", label);
	U.line[0] = '\0';
	U.len = 0;
	U.done = done;
	U.complete = complete;
	U.arg = arg;
	U.comp_i = -1;
	U.prompt = PROMPT_TEXT;
	U.msg[0] = '\0';
	screen_dirty();
}

void ui_confirm(const char *question, void (*yes)(void *arg), void *arg, void (*free_arg)(void *arg))
{
	if (U.prompt != PROMPT_NONE)
		prompt_end();
	snprintf(U.label, sizeof U.label, "%s [y/N] ", question);
	U.yes = yes;
	U.arg = arg;
	U.free_arg = free_arg;
	U.prompt = PROMPT_CONFIRM;
	U.msg[0] = '\0';
	screen_dirty();
}

static void line_set(const char *s)
{
	snprintf(U.line, sizeof U.line, "%s", s);
	U.len = strlen(U.line);
}

static void prompt_key(int key)
{
	if (U.prompt == PROMPT_CONFIRM) {
		void (*yes)(void *) = U.yes;
		void *arg = U.arg;
		bool ok = key == 'y' || key == 'Y';
		U.yes = NULL;
		if (ok && yes)
			yes(arg);
		if (!ok)
			ui_message("cancelled");
		prompt_end();
		return;
	}
	if (key == VKEY_ESC || key == VKEY_CTRL('c') || key == VKEY_CTRL('g')) {
		prompt_end();
		return;
	}
	if (key == '\r' || key == '\n' || key == VKEY(KEY_ENTER)) {
		void (*done)(void *, const char *) = U.done;
		void *arg = U.arg;
		char text[sizeof U.line];
		memcpy(text, U.line, sizeof text);
		prompt_end();
		if (done)
			done(arg, text);
		return;
	}
	if (key == '\t' && U.complete) {
		if (U.comp_i < 0)
			memcpy(U.comp_base, U.line, sizeof U.comp_base);
		const char *c = U.complete(U.arg, U.comp_base, ++U.comp_i);
		if (c == NULL && U.comp_i > 0) { /* wrap around */
			U.comp_i = 0;
			c = U.complete(U.arg, U.comp_base, 0);
		}
		if (c)
			line_set(c);
		else
			U.comp_i = -1;
		screen_dirty();
		return;
	}
	U.comp_i = -1;
	if (key == VKEY(KEY_BACKSPACE) || key == 0x7f || key == 0x08) {
		if (U.len == 0) {
			prompt_end();
			return;
		}
		do
			U.len--;
		while (U.len > 0 && ((unsigned char)U.line[U.len] & 0xc0) == 0x80);
		U.line[U.len] = '\0';
	} else if (key == VKEY_CTRL('u')) {
		U.len = 0;
		U.line[0] = '\0';
	} else if (!VKEY_IS_FN(key) && key >= 0x20 && key != 0x7f) {
		char mb[8];
		mbstate_t ps;
		memset(&ps, 0, sizeof ps);
		size_t n = wcrtomb(mb, (wchar_t)key, &ps);
		if (n != (size_t)-1 && U.len + n < sizeof U.line) {
			memcpy(U.line + U.len, mb, n);
			U.len += n;
			U.line[U.len] = '\0';
		}
	}
	screen_dirty();
}

/* ---- `/` filter ---- */

static void filter_done(void *arg, const char *text)
{
	(void)arg;
	struct view *v = view_top();
	if (!table_view_spec(v))
		return;
	char *err = NULL;
	if (table_view_set_filter(v, text, &err) < 0)
		ui_error("filter: %s", err);
	free(err);
}

/* ---- global keys ---- */

static enum view_result g_command(struct view *v)
{
	(void)v;
	ui_prompt(":", cmdline_done, cmdline_complete, NULL);
	return VIEW_DONE;
}

static enum view_result g_filter(struct view *v)
{
	(void)v;
	if (!table_view_spec(view_top())) {
		ui_error("/ filters the lists (the pager and the VM view have their own search)");
		return VIEW_DONE;
	}
	ui_prompt("/", filter_done, NULL, NULL);
	return VIEW_DONE;
}

static enum view_result g_help(struct view *v)
{
	(void)v;
	view_push(help_view_new(view_focused()));
	return VIEW_DONE;
}

static enum view_result g_back(struct view *v)
{
	(void)v;
	struct view *top = view_top();
	if (view_pane_count() && view_focused() != top) {
		view_focus_pane(false);
	} else if (view_depth() > 1) {
		view_pop();
	} else if (table_view_spec(top)) {
		char *err = NULL;
		table_view_set_filter(top, "", &err);
		free(err);
	}
	return VIEW_DONE;
}

static enum view_result g_quit(struct view *v)
{
	(void)v;
	loop_quit(0);
	return VIEW_DONE;
}

static enum view_result g_tab(struct view *v)
{
	(void)v;
	if (view_pane_count())
		view_focus_pane(view_focused() == view_top());
	return VIEW_DONE;
}

static enum view_result g_zoom(struct view *v)
{
	(void)v;
	if (view_pane_count())
		view_pane_zoom(!view_pane_zoomed());
	return VIEW_DONE;
}

static enum view_result g_next_pane(struct view *v)
{
	(void)v;
	view_pane_next();
	return VIEW_DONE;
}

static enum view_result g_close_pane(struct view *v)
{
	(void)v;
	struct view *p = view_pane_active();
	if (p)
		view_pane_close(p);
	return VIEW_DONE;
}

static enum view_result g_redraw(struct view *v)
{
	(void)v;
	screen_dirty_full();
	return VIEW_DONE;
}

const struct view_key ui_global_keys[] = {
	{ ':', ":", "command line (:vm, :vmi, :pod, :events, :ns, :ctx, :q; tab completes)", g_command },
	{ '/', "/", "filter the list: /text, /!text (negated), /-l key=value (labels)", g_filter },
	{ '?', "?", "help for the current view", g_help },
	{ VKEY_ESC, "esc", "back: close the view, leave a pane, clear the filter", g_back },
	{ '\t', "tab", "move focus between the main view and the pane", g_tab },
	{ 'z', "z", "zoom the pane to the whole screen and back", g_zoom },
	{ ']', "]", "next pane (tab) when several are open", g_next_pane },
	{ 'x', "x", "close the pane", g_close_pane },
	{ VKEY_CTRL('l'), "ctrl-l", "redraw the screen", g_redraw },
	{ VKEY_CTRL('c'), "ctrl-c", "quit", g_quit },
	{ 0, NULL, NULL, NULL },
};

static void on_key(int key)
{
	if (U.prompt != PROMPT_NONE) {
		prompt_key(key);
		return;
	}
	if (!U.msg_err || key != VKEY_ESC)
		U.msg[0] = '\0';
	struct view *f = view_focused();
	if (f && f->raw) {
		view_key_dispatch(key);
		screen_dirty();
		return;
	}
	if (U.too_small && key != VKEY_CTRL('c'))
		return;
	if (view_key_dispatch(key) == VIEW_PASS) {
		const struct view_key *k = view_key_find(ui_global_keys, key);
		if (k && k->fn)
			k->fn(view_top());
	}
	screen_dirty();
}

/* A bracketed paste: into the focused console (to the guest) or VNC display (typed on its keyboard), typed into an open text prompt (printable
 * characters only: a line end would submit it), otherwise dropped; never taken as key commands. */
static void on_paste(const char *text, size_t len)
{
	if (U.prompt == PROMPT_TEXT) {
		mbstate_t ps;
		memset(&ps, 0, sizeof ps);
		for (size_t i = 0; i < len && U.prompt == PROMPT_TEXT;) {
			wchar_t wc;
			size_t n = mbrtowc(&wc, text + i, len - i, &ps);
			if (n == (size_t)-1 || n == (size_t)-2 || n == 0) {
				memset(&ps, 0, sizeof ps);
				i++;
				continue;
			}
			if (wc >= 0x20 && wc != 0x7f)
				prompt_key((int)wc);
			i += n;
		}
	} else if (U.prompt == PROMPT_NONE) {
		if (!console_view_paste(view_focused(), text, len))
			vnc_view_paste(view_focused(), text, len);
	}
	screen_dirty();
}

static void on_mouse(const struct view_mouse *m)
{
	if (U.prompt != PROMPT_NONE || U.too_small)
		return;
	view_mouse_dispatch(m);
	screen_dirty();
}

static void layout(int rows, int cols)
{
	U.too_small = cols < SCREEN_MIN_W || rows < SCREEN_MIN_H;
	U.header_h = header_height(rows);
	struct region body = { U.header_h, 0, rows - U.header_h - 1, cols };
	if (body.h < 1)
		body.h = 1;
	view_layout(&body);
}

static void on_resize(int rows, int cols)
{
	layout(rows, cols);
}

static void draw_status(int y, int w)
{
	if (U.prompt == PROMPT_TEXT) {
		int a = theme_attr(THEME_CMDLINE);
		draw_fill(y, 0, w, a);
		int x = draw_text(y, 0, w, a, U.label);
		/* keep the end of a long line visible */
		const char *s = U.line;
		while (draw_width(s) > w - x - 1 && *s)
			s++;
		x += draw_text(y, x, w - x, a, s);
		curs_set(1);
		move(y, x < w ? x : w - 1);
		leaveok(stdscr, FALSE);
		return;
	}
	leaveok(stdscr, TRUE);
	if (U.prompt == PROMPT_CONFIRM) {
		draw_cell(y, 0, w, theme_attr(THEME_ERROR), U.label, false);
		return;
	}
	if (U.msg[0]) {
		draw_cell(y, 0, w, theme_attr(U.msg_err ? THEME_ERROR : THEME_NORMAL), U.msg, false);
		return;
	}
	/* breadcrumbs: the stack of views, then a hint */
	int x = 0;
	draw_fill(y, 0, w, theme_attr(THEME_NORMAL));
	struct view *top = view_top();
	char t[96] = "";
	if (top && top->ops->title)
		top->ops->title(top, t, sizeof t);
	char crumb[128];
	snprintf(crumb, sizeof crumb, " <%s> ", t);
	x += draw_text(y, x, w - x, theme_attr(THEME_TITLE_ACTIVE), crumb);
	const char *hint = "  ?:help  ::command  /:filter  esc:back  ctrl-c:quit";
	draw_text(y, x, w - x, theme_attr(THEME_HINT), hint);
}

/* Until the first rows are on screen: the first objects of the kind the top view shows are drawn on the next
 * pass, whatever the pacer's credit (the rest of their page and other kinds' lists are decoded after it). */
static bool first_painted;

/* The lineage's history (megabytes at 100,000 VMs) is not read before the first rows are drawn, nor later than
 * LINEAGE_HOLD_MS after start (an empty cluster, or no rows to draw) */
#define LINEAGE_HOLD_MS 300
static struct loop_timer *lineage_release_t;

static void on_lineage_release(void *arg)
{
	(void)arg;
	lineage_release_t = NULL; /* a timer that fired is the loop's to free */
	if (U.lineage)
		lineage_hold(U.lineage, false);
}

static void on_draw(bool full)
{
	int rows = LINES, cols = COLS;
	if (full)
		layout(rows, cols);
	if (U.too_small) {
		erase();
		char m[64];
		snprintf(m, sizeof m, "kvcon needs %dx%d (now %dx%d)", SCREEN_MIN_W, SCREEN_MIN_H, cols, rows);
		draw_text(rows / 2, 0, cols, theme_attr(THEME_BAD), m);
		wnoutrefresh(stdscr);
		return;
	}
	header_draw(&(struct region){ 0, 0, U.header_h, cols }, U.st, U.readonly, ui_shown_namespace());
	view_draw_all(full);
	if (first_painted && lineage_release_t) { /* its first slice runs on the next pass, after this frame is written */
		loop_timer_cancel(lineage_release_t);
		on_lineage_release(NULL);
	}
	draw_status(rows - 1, cols);
	wnoutrefresh(stdscr);
}

static void on_quit(int sig)
{
	(void)sig;
	loop_quit(0);
}

static void on_tick(void *arg)
{
	(void)arg;
	U.tick = loop_timer_add(1000, on_tick, NULL);
	view_tick_all();
	screen_dirty();
}

static void first_rows_soon(enum obj_kind kind)
{
	const struct table_spec *spec = table_view_spec(view_top());
	if (first_painted || spec == NULL || spec->kind != kind || store_count(U.st, kind) == 0)
		return;
	first_painted = true;
	screen_frame_soon();
	kube_http_yield(); /* this pass decodes no more: the frame comes first */
}

/* A provider reported progress. */
static void on_health(struct source *src, enum obj_kind kind)
{
	(void)src;
	screen_dirty();
	first_rows_soon(kind);
}

/* End of a loop pass, before the frame's hook: counts that moved and came back within the pass need no frame. */
static void header_hook(void *arg)
{
	(void)arg;
	if (U.header_moved) {
		U.header_moved = false;
		if (header_counts_moved(U.st, ui_shown_namespace()))
			screen_dirty_store();
	}
}

static void on_store(void *arg, enum obj_kind kind, const struct obj *old, const struct obj *new_)
{
	(void)arg;
	static bool first_vm_logged;
	if (!first_vm_logged && kind == OBJ_VM && new_) {
		/* with "first rows drawn" in the log: how much of the first paint is kvcon's own time */
		first_vm_logged = true;
		log_info("ui: first VM object in the store %llu ms after start",
			 (unsigned long long)(util_now_ms() - start_ms));
	}
	bool header = header_store_changed(U.st, kind, old, new_);
	nsctx_store_changed(U.st, kind, old, new_);
	view_store_changed(kind, old, new_); /* a view that shows the change asks for its frame (view_dirty) */
	/* the header: its VM counts, and while a list loads, the count received (not the health hook's) */
	const struct obj *o = new_ ? new_ : old;
	if (o && o->src && o->src->health[kind].state == WATCH_LOADING)
		screen_dirty_store();
	else if (header)
		U.header_moved = true; /* a frame if they still differ from those drawn at the end of the pass */
	if (!first_painted && new_)
		first_rows_soon(kind);
}

int ui_run(struct store *st)
{
	if (start_ms == 0)
		start_ms = util_now_ms();
	struct kvcon_opts *o = opts_global();
	ui_use_store(st);
	U.readonly = U.readonly || o->readonly;
	if (U.ns == NULL && !o->all_ns && (o->ns || sources_kube_scope()))
		U.ns = intern(o->ns ? o->ns : sources_kube_scope());
	loop_init();
	U.listener = store_listen(st, on_store, NULL);
	U.header_hook = loop_hook_add(header_hook, NULL); /* before screen_init's: it may ask for this pass's frame */
	/* the lineage hears every change from now on; what is already in the store is recorded once its history
	 * is read (a slice per pass) */
	U.lineage = lineage_new(st, NULL);
	lineage_set_paced(U.lineage); /* its history is read a slice per pass, from the first frame on */
	lineage_hold(U.lineage, true);
	lineage_release_t = loop_timer_add(LINEAGE_HOLD_MS, on_lineage_release, NULL);
	U.chain_ix = chain_index_new(st); /* chain_build (the VM view, every frame) then avoids store scans */
	for (size_t i = 0; i < source_count(); i++)
		lineage_scan(U.lineage, source_get(i));
	const char *theme = o->theme;
	if (theme == NULL)
		theme = getenv("KVCON_THEME");
	if (theme == NULL || *theme == '\0')
		theme = sources_config_theme();
	char *terr = NULL;
	struct screen_cbs cbs = { on_key, on_mouse, on_resize, on_draw, on_quit, on_paste };
	if (screen_init(&cbs, theme, &terr) < 0) {
		lineage_free(U.lineage);
		U.lineage = NULL;
		chain_index_free(U.chain_ix);
		U.chain_ix = NULL;
		store_unlisten(st, U.listener);
		loop_hook_remove(U.header_hook);
		return EXIT_USAGE;
	}
	if (terr)
		ui_error("theme: %s", terr);
	free(terr);
	view_replace_all(table_view_new(&table_vm_spec));
	layout(LINES, COLS);
	U.tick = loop_timer_add(1000, on_tick, NULL);
	source_set_health_hook(on_health);
	int rc = loop_run();
	source_set_health_hook(NULL);
	loop_timer_cancel(U.tick);
	U.tick = NULL;
	loop_timer_cancel(lineage_release_t);
	lineage_release_t = NULL;
	if (U.prompt != PROMPT_NONE)
		prompt_end();
	screen_fini();
	forwards_stop_source(NULL); /* the forwards end with the dashboard */
	view_free_all();
	lineage_free(U.lineage);
	U.lineage = NULL;
	chain_index_free(U.chain_ix);
	U.chain_ix = NULL;
	store_unlisten(st, U.listener);
	loop_hook_remove(U.header_hook);
	return rc;
}

uint64_t ui_start_ms(void)
{
	return start_ms;
}

int ui_main(void)
{
	start_ms = util_now_ms();
	struct kvcon_opts *o = opts_global();
	/* before any source opens (the engine would start libvirt for nothing) */
	if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
		log_eprintf("error: the dashboard needs a terminal (use `kvcon get` for scripts)\n");
		return EXIT_USAGE;
	}
	if (log_open(o->log) < 0)
		log_eprintf("warning: cannot open the log file; continuing without\n");
	kube_cred_set_interactive(false); /* the dashboard owns the terminal: exec plugins get none */
	log_set_level(o->verbose > 0 ? LOG_DEBUG : LOG_INFO);
	sources_load_config();
	U.readonly = o->readonly || sources_config_readonly();
	struct store *st = store_new();
	loop_init();
	char *err = NULL;
	if (sources_open(st, &err) < 0) {
		char *e = util_escape_display(err ? err : "no source could be opened");
		log_eprintf("error: %s\n", e);
		free(e);
		free(err);
		store_free(st);
		return EXIT_API;
	}
	free(err);
	int rc = ui_run(st);
	sources_free();
	source_free_all();
	store_free(st);
	loop_fini();
	return rc;
}
