/* `kvcon console`: one console session (consess) drawn full-screen with ncurses: the guest's screen above, one
 * status line below. Frames are drawn at most ~30 times a second from the loop, whatever the guest's rate. */
#include "cmd/cmd_console.h"

#include <curses.h>
#include <errno.h>
#include <getopt.h>
#include <locale.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "cmd/session.h"
#include "console/consess.h"
#include "console/paste.h"
#include "console/vtpane.h"
#include "core/log.h"
#include "core/loop.h"
#include "core/opts.h"
#include "core/termrestore.h"
#include "core/util.h"
#include "core/xmalloc.h"
#include "kube/kube.h"


#define FRAME_MS 33   /* sustained: ~30 frames a second at most */
#define FRAME_BURST 3 /* frames that may follow each other at once (a key's echo after the key's own frame) */
#define KEY_LEAVE 0x1d /* Ctrl+], as virtctl */

struct console_cmd {
	struct store *st;
	struct source *src;
	struct consess *cs;
	char *label;
	int timeout_s;
	uint64_t start_ms;
	bool dirty, full;
	uint64_t last_draw;
	double tokens; /* frame budget: refills at one per FRAME_MS, up to FRAME_BURST */
	struct loop_timer *draw_timer, *timeout_timer;
	struct loop_fd *in_h;
	int hook;
	int listen_id;
	int rc;
	char *exit_msg;
	bool curses_on;
	struct paste paste;
	unsigned long frames;
};

static struct console_cmd *C;

static void restore_terminal(void)
{
	if (C && C->curses_on) {
		endwin();
		/* a shell left in bracketed paste mode would get every later paste wrapped */
		fputs(PASTE_TERM_OFF, stdout);
		fflush(stdout);
		C->curses_on = false;
		termrestore_disarm();
	}
}

static void on_changed(void *arg)
{
	struct console_cmd *c = arg;
	c->dirty = true;
}

static void draw_status(struct console_cmd *c)
{
	const char *hint = vtpane_in_copy_mode(consess_pane(c->cs)) ? "copy mode: q leaves, v selects, y copies, p pastes, / ? search"
								     : "Ctrl+] exits  F12 copy mode  Shift+PgUp/PgDn scroll";
	char line[512];
	int off = vtpane_view_offset(consess_pane(c->cs));
	char scroll[48] = "";
	if (off)
		snprintf(scroll, sizeof scroll, " [-%d]", off);
	snprintf(line, sizeof line, " %s | %s%s | %s", c->label, consess_status(c->cs), scroll, hint);
	attr_t a = A_REVERSE;
	wattr_set(stdscr, a, 0, NULL);
	mvwhline(stdscr, LINES - 1, 0, ' ', COLS);
	/* the label and status are escaped already; addnstr clips to the width */
	mvwaddnstr(stdscr, LINES - 1, 0, line, COLS);
	wattr_set(stdscr, A_NORMAL, 0, NULL);
}

static void draw(void *arg)
{
	struct console_cmd *c = arg;
	c->draw_timer = NULL;
	if (!c->curses_on)
		return;
	struct vtpane *p = consess_pane(c->cs);
	if (!c->dirty && !c->full && !vtpane_dirty(p))
		return;
	uint64_t now = util_now_ms();
	c->tokens += (double)(now - c->last_draw) / FRAME_MS;
	if (c->tokens > FRAME_BURST)
		c->tokens = FRAME_BURST;
	c->last_draw = now;
	if (c->tokens < 1.0) {
		/* over budget: whatever arrives until the next token is drawn in one frame */
		if (!c->draw_timer)
			c->draw_timer = loop_timer_add((uint64_t)((1.0 - c->tokens) * FRAME_MS) + 1, draw, c);
		return;
	}
	c->tokens -= 1.0;
	vtpane_draw(p, stdscr, 0, 0, c->full);
	draw_status(c);
	c->dirty = c->full = false;
	wnoutrefresh(stdscr);
	doupdate();
	c->frames++;
}

static void on_hook(void *arg)
{
	struct console_cmd *c = arg;
	if (!c->draw_timer)
		draw(c);
}

static void quit(struct console_cmd *c, int rc, const char *msg)
{
	if (msg && !c->exit_msg)
		c->exit_msg = xstrdup(msg);
	c->rc = rc;
	loop_quit(rc);
}

static void on_key_input(int fd, short revents, void *arg)
{
	(void)fd;
	(void)revents;
	struct console_cmd *c = arg;
	wint_t ch;
	int r;
	while ((r = wget_wch(stdscr, &ch)) != ERR) {
		bool keycode = r == KEY_CODE_YES;
		struct vtpane *p = consess_pane(c->cs);
		enum paste_result pr = paste_key(&c->paste, (int)ch, keycode);
		if (pr == PASTE_DONE && !vtpane_in_copy_mode(p))
			consess_paste(c->cs, c->paste.text.data ? c->paste.text.data : "", c->paste.text.len);
		if (pr != PASTE_NONE)
			continue;
		if (!keycode && ch == KEY_LEAVE) {
			quit(c, EXIT_OK, NULL);
			return;
		}
		if (keycode && ch == KEY_RESIZE)
			continue;
		if (keycode && ch == KEY_F(12)) {
			vtpane_copy_mode(p, !vtpane_in_copy_mode(p));
			c->dirty = true;
		} else if (keycode && (ch == KEY_SPREVIOUS || ch == KEY_SNEXT) && !vtpane_in_copy_mode(p)) {
			int rows, cols;
			vtpane_size(p, &rows, &cols);
			vtpane_scroll(p, ch == KEY_SPREVIOUS ? rows / 2 : -rows / 2);
			c->dirty = true;
		} else {
			/* a key for the guest changes nothing on screen until the guest answers */
			consess_key(c->cs, (int)ch, keycode, 0);
		}
	}
}

static void apply_size(struct console_cmd *c)
{
	struct winsize ws;
	if (ioctl(1, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 && ws.ws_col > 0)
		resize_term(ws.ws_row, ws.ws_col);
	consess_resize(c->cs, LINES > 1 ? LINES - 1 : 1, COLS);
	clear();
	c->full = true;
}

static void on_winch(int sig, void *arg)
{
	(void)sig;
	apply_size(arg);
}

static void on_term(int sig, void *arg)
{
	(void)sig;
	quit(arg, EXIT_OK, NULL);
}

static void on_timeout_check(void *arg)
{
	struct console_cmd *c = arg;
	c->timeout_timer = NULL;
	enum consess_state st = consess_state(c->cs);
	if (st == CONSESS_ENDED) {
		char msg[400];
		snprintf(msg, sizeof msg, "console %s", consess_status(c->cs));
		quit(c, consess_uid(c->cs)[0] || consess_bytes_in(c->cs) ? EXIT_OK : EXIT_API, msg);
		return;
	}
	bool never = !consess_uid(c->cs)[0] && st != CONSESS_OPEN;
	if (never && c->timeout_s > 0 && util_now_ms() - c->start_ms >= (uint64_t)c->timeout_s * 1000) {
		char msg[400];
		snprintf(msg, sizeof msg, "no console after %d s: %s", c->timeout_s, consess_status(c->cs));
		quit(c, EXIT_API, msg);
		return;
	}
	c->timeout_timer = loop_timer_add(200, on_timeout_check, c);
}

static void store_cb(void *arg, enum obj_kind kind, const struct obj *old, const struct obj *new_)
{
	struct console_cmd *c = arg;
	if (c->cs)
		consess_store_changed(c->cs, kind, old, new_);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: kvcon console NS/NAME|ws://URL|unix:PATH|tcp:HOST:PORT [--timeout MIN] [--log FILE]\n"
		   "  --timeout MIN wait at most MIN minutes (or 30s, 2m, 1h) for the VMI to be Running and the console "
		   "to open (default 5, 0: forever)\n"
		   "  --log FILE    append every byte the guest sends to FILE\n"
		   "Keys: Ctrl+] exits; F12 copy mode; Shift+PgUp/PgDn scroll back. A paste goes to the guest,\n"
		   "bracketed when the guest turned bracketed paste on.\n");
}

static bool is_vmi_target(const char *t)
{
	const char *slash = strchr(t, '/');
	return slash && slash != t && slash[1] && !strchr(slash + 1, '/') && !strchr(t, ':');
}

int cmd_console(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "timeout", required_argument, NULL, 't' },
		{ "log", required_argument, NULL, 'l' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct console_cmd c = { .timeout_s = 300, .listen_id = -1, .rc = EXIT_OK };
	const char *log_path = NULL;
	int opt;
	optind = 1;
	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		if (opt == 't') {
			/* minutes, as virtctl console counts them; a unit (30s, 2m, 1h) says otherwise */
			char *end;
			long v = strtol(optarg, &end, 10);
			long mult = *end == '\0' || strcmp(end, "m") == 0 ? 60 : strcmp(end, "s") == 0 ? 1
								  : strcmp(end, "h") == 0 ? 3600 : 0;
			if (end == optarg || mult == 0 || v < 0 || v > 10L * 365 * 24 * 3600 / mult) {
				log_eprintf("error: --timeout takes minutes (5), or a duration with its unit (30s, 2m, 1h)\n");
				return EXIT_USAGE;
			}
			c.timeout_s = (int)(v * mult);
		} else if (opt == 'l') {
			log_path = optarg;
		} else if (opt == 'h') {
			usage(stdout);
			return EXIT_OK;
		} else {
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (optind != argc - 1) {
		usage(stderr);
		return EXIT_USAGE;
	}
	const char *target = argv[optind];
	if (!isatty(0) || !isatty(1)) {
		log_eprintf("kvcon console: needs a terminal on stdin and stdout\n");
		return EXIT_USAGE;
	}
	setlocale(LC_ALL, "");
	signal(SIGPIPE, SIG_IGN);
	loop_init();
	log_open(opts_global()->log);
	struct consess_opts co = { .log_path = log_path };
	char *ns = NULL, *err = NULL;
	if (is_vmi_target(target)) {
		const char *slash = strchr(target, '/');
		ns = xstrndup(target, (size_t)(slash - target));
		co.ns = ns;
		co.name = slash + 1;
		c.st = store_new();
		/* watch only this namespace's VMIs: the phase and UID are all the console needs */
		struct kvcon_opts *g = opts_global();
		free(g->ns);
		g->ns = xstrdup(ns);
		g->all_ns = false;
		c.src = session_resolve(c.st, co.ns, co.name, KUBE_KIND_BIT(OBJ_VMI), false, &err);
		if (!c.src) {
			log_eprintf("error: %s\n", err ? err : "no source");
			session_sources_close();
			free(err);
			free(ns);
			store_free(c.st);
			return EXIT_API;
		}
		co.st = c.st;
		co.src = c.src;
		c.listen_id = store_listen(c.st, store_cb, &c);
		c.label = xasprintf("%s/%s", ns, co.name);
	} else {
		co.target = target;
		co.no_reconnect = false;
		c.label = util_escape_display(target);
	}
	char *esc = util_escape_display(c.label);
	free(c.label);
	c.label = esc;
	/* curses owns the screen from here: library chatter goes to the log */
	C = &c;
	struct termios tio;
	bool have_tio = tcgetattr(STDIN_FILENO, &tio) == 0;
	log_capture_stderr();
	initscr();
	c.curses_on = true;
	/* what fatal() and the crash handlers write to give the terminal back, collected while it is safe to allocate */
	termrestore_begin(have_tio ? &tio : NULL);
	termrestore_add(PASTE_TERM_OFF);
	termrestore_add_cap("sgr0");
	termrestore_add_cap("cnorm");
	termrestore_add_cap("rmkx");
	termrestore_add_cap("rmcup");
	termrestore_arm();
	raw();
	noecho();
	nonl();
	keypad(stdscr, TRUE);
	nodelay(stdscr, TRUE);
	set_escdelay(25);
	curs_set(0);
	if (has_colors()) {
		start_color();
		use_default_colors();
	}
	paste_terminal_on();
	co.rows = LINES > 1 ? LINES - 1 : 1;
	co.cols = COLS;
	c.cs = consess_new(&co, on_changed, &c, &err);
	int rc = EXIT_OK;
	if (!c.cs) {
		restore_terminal();
		log_release_stderr();
		log_eprintf("kvcon console: %s\n", err);
		free(err);
		rc = EXIT_USAGE;
		goto out;
	}
	c.start_ms = util_now_ms();
	c.full = true;
	c.in_h = loop_fd_add(0, POLLIN, on_key_input, &c);
	c.hook = loop_hook_add(on_hook, &c);
	loop_signal(SIGWINCH, on_winch, &c);
	loop_signal(SIGTERM, on_term, &c);
	loop_signal(SIGHUP, on_term, &c);
	c.timeout_timer = loop_timer_add(200, on_timeout_check, &c);
	rc = loop_run();
	loop_fd_remove(c.in_h);
	loop_hook_remove(c.hook);
	loop_timer_cancel(c.timeout_timer);
	loop_timer_cancel(c.draw_timer);
	restore_terminal();
	log_release_stderr();
	log_info("console: %lu frames drawn in %.1f s, %llu guest bytes", c.frames,
		 (double)(util_now_ms() - c.start_ms) / 1000.0, (unsigned long long)consess_bytes_in(c.cs));
	if (c.exit_msg)
		log_eprintf("kvcon console: %s\n", c.exit_msg);
out:
	consess_free(c.cs);
	if (c.st && c.listen_id >= 0)
		store_unlisten(c.st, c.listen_id);
	session_sources_close();
	source_free_all();
	store_free(c.st);
	free(c.exit_msg);
	free(c.label);
	free(ns);
	paste_free(&c.paste);
	C = NULL;
	return rc;
}
