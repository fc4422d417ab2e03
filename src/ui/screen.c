/* ncursesw ownership of the terminal, input from the loop, resize, paced frames, and restoring the terminal. */
#include "ui/screen.h"

#include <curses.h>
#include <errno.h>
#include <langinfo.h>
#include <locale.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "console/paste.h"
#include "core/buf.h"
#include "core/log.h"
#include "core/loop.h"
#include "core/termrestore.h"
#include "core/util.h"
#include "core/xmalloc.h"
#include "ui/theme.h"

static struct {
	bool active;
	struct screen_cbs cbs;
	struct termios saved_tio;
	bool have_tio;
	struct loop_fd *in;
	int hook;
	bool dirty, full;
	bool store_dirty; /* a frame the cluster's changes alone ask for (screen_dirty_store) */
	struct screen_pacer pacer;
	struct loop_timer *frame_timer;
	uint64_t frame_at; /* when it fires */
	unsigned long frames;
	bool color;
	SCREEN *scr;
	struct paste paste;
	/* an xterm SGR mouse report being read (ESC [ < b ; x ; y M|m) when ncurses does not decode them */
	int sgr_state; /* 0 none, 1 ESC, 2 ESC [, 3 ESC [ < (parameters follow) */
	char sgr[24];
	size_t sgr_len;
	/* the raw output hook (screen_raw_hook) */
	screen_raw_fn raw_fn;
	void *raw_arg;
	bool raw_all;
	struct buf raw_out;
	int drag_users; /* views that asked for screen_mouse_drags */
} S = { .hook = -1 };

static const char mouse_on[] = "\033[?1000h\033[?1006h";
static const char mouse_off[] = "\033[?1000l\033[?1002l\033[?1003l\033[?1006l\033[?1015l";

/* What the crash path writes, collected while it is safe to allocate: mouse reporting and bracketed paste off,
 * then the terminal's own way out of our modes. */
static void prepare_restore(void)
{
	termrestore_begin(S.have_tio ? &S.saved_tio : NULL);
	termrestore_add(mouse_off);
	termrestore_add(PASTE_TERM_OFF);
	termrestore_add_cap("sgr0");
	termrestore_add_cap("cnorm");
	termrestore_add_cap("rmkx");
	termrestore_add_cap("rmcup");
}

static int mouse_kind(mmask_t b, int *button)
{
	static const struct {
		mmask_t mask;
		int kind, button;
	} map[] = {
		{ BUTTON1_PRESSED, VMOUSE_PRESS, 1 },	 { BUTTON2_PRESSED, VMOUSE_PRESS, 2 },
		{ BUTTON3_PRESSED, VMOUSE_PRESS, 3 },	 { BUTTON1_RELEASED, VMOUSE_RELEASE, 1 },
		{ BUTTON2_RELEASED, VMOUSE_RELEASE, 2 }, { BUTTON3_RELEASED, VMOUSE_RELEASE, 3 },
		{ BUTTON1_CLICKED, VMOUSE_CLICK, 1 },	 { BUTTON2_CLICKED, VMOUSE_CLICK, 2 },
		{ BUTTON3_CLICKED, VMOUSE_CLICK, 3 },	 { BUTTON1_DOUBLE_CLICKED, VMOUSE_DOUBLE, 1 },
		{ BUTTON4_PRESSED, VMOUSE_WHEEL_UP, 0 }, { BUTTON5_PRESSED, VMOUSE_WHEEL_DOWN, 0 },
		{ REPORT_MOUSE_POSITION, VMOUSE_MOTION, 0 },
	};
	for (size_t i = 0; i < sizeof map / sizeof map[0]; i++) {
		if (b & map[i].mask) {
			*button = map[i].button;
			return map[i].kind;
		}
	}
	return -1;
}

/* One key or paste byte from ncurses, after the SGR mouse decoder let it through. */
static void deliver(wint_t ch, int rc)
{
	enum paste_result pr = paste_key(&S.paste, (int)ch, rc == KEY_CODE_YES);
	if (pr == PASTE_DONE && S.cbs.paste)
		S.cbs.paste(S.paste.text.data ? S.paste.text.data : "", S.paste.text.len);
	if (pr != PASTE_NONE)
		return; /* a paste is never taken as keys */
	if (rc == KEY_CODE_YES && ch == KEY_MOUSE) {
		MEVENT me;
		while (getmouse(&me) == OK) {
			struct view_mouse m = { .y = me.y, .x = me.x };
			int kind = mouse_kind(me.bstate, &m.button);
			log_debug("ui: mouse %d,%d bstate %#lx -> kind %d", me.y, me.x, (unsigned long)me.bstate, kind);
			if (kind < 0)
				continue;
			m.kind = (enum view_mouse_kind)kind;
			m.shift = (me.bstate & BUTTON_SHIFT) != 0;
			m.ctrl = (me.bstate & BUTTON_CTRL) != 0;
			m.alt = (me.bstate & BUTTON_ALT) != 0;
			if (S.cbs.mouse)
				S.cbs.mouse(&m);
		}
	} else if (rc == KEY_CODE_YES && ch == KEY_RESIZE) {
		return; /* handled through SIGWINCH */
	} else if (rc == KEY_CODE_YES) {
		if (S.cbs.key)
			S.cbs.key(VKEY((int)ch));
	} else if (S.cbs.key) {
		S.cbs.key((int)ch);
	}
}

/* Gives back as keys what the SGR decoder held (it was not a mouse report). */
static void sgr_flush(void)
{
	static const char lead[] = "\033[<";
	int held = S.sgr_state;
	size_t n = S.sgr_len;
	S.sgr_state = 0;
	S.sgr_len = 0;
	for (int i = 0; i < held; i++)
		deliver((wint_t)(unsigned char)lead[i], OK);
	for (size_t i = 0; i < n; i++)
		deliver((wint_t)(unsigned char)S.sgr[i], OK);
}

bool screen_sgr_mouse(const char *params, bool release, struct view_mouse *m)
{
	int b, x, y;
	char tail;
	if (sscanf(params, "%d;%d;%d%c", &b, &x, &y, &tail) != 3 || b < 0 || x < 1 || y < 1)
		return false;
	*m = (struct view_mouse){ .y = y - 1, .x = x - 1 };
	m->shift = (b & 4) != 0;
	m->alt = (b & 8) != 0;
	m->ctrl = (b & 16) != 0;
	int btn = b & 3;
	if (b & 64) {
		if (release || btn > 1)
			return false; /* wheel left/right */
		m->kind = btn == 0 ? VMOUSE_WHEEL_UP : VMOUSE_WHEEL_DOWN;
	} else if (b & 32) {
		m->kind = VMOUSE_MOTION;
	} else if (btn == 3) {
		return false;
	} else {
		m->kind = release ? VMOUSE_RELEASE : VMOUSE_PRESS;
		m->button = btn + 1;
	}
	return true;
}

/* A complete report held in S.sgr, ended by M or m. */
static void sgr_report(bool release)
{
	S.sgr[S.sgr_len] = '\0';
	struct view_mouse m;
	bool ok = screen_sgr_mouse(S.sgr, release, &m);
	S.sgr_state = 0;
	S.sgr_len = 0;
	if (ok && S.cbs.mouse)
		S.cbs.mouse(&m);
}

/* xterm SGR mouse reports (mode 1006, which screen_init asks for whatever terminfo says) arrive as plain
 * characters when ncurses decodes another format (terminfo's kmous is X10's ESC [ M) or none: read them here.
 * Returns true when ch was taken. */
static bool sgr_feed(wint_t ch, int rc)
{
	if (S.paste.active)
		return false;
	bool plain = rc != KEY_CODE_YES;
	switch (S.sgr_state) {
	case 0:
		if (!plain || ch != 0x1b)
			return false;
		S.sgr_state = 1;
		return true;
	case 1:
	case 2:
		if (plain && ch == (S.sgr_state == 1 ? '[' : '<')) {
			S.sgr_state++;
			return true;
		}
		break;
	default:
		if (plain && (ch == 'M' || ch == 'm')) {
			sgr_report(ch == 'm');
			return true;
		}
		if (plain && ((ch >= '0' && ch <= '9') || ch == ';') && S.sgr_len + 1 < sizeof S.sgr) {
			S.sgr[S.sgr_len++] = (char)ch;
			return true;
		}
		break;
	}
	sgr_flush();
	return false;
}

static void on_input(int fd, short revents, void *arg)
{
	(void)fd;
	(void)arg;
	if (revents & (POLLHUP | POLLERR | POLLNVAL)) {
		/* the terminal went away: nothing left to draw on */
		log_info("ui: terminal hung up");
		loop_fd_remove(S.in);
		S.in = NULL;
		if (S.cbs.quit)
			S.cbs.quit(SIGHUP);
		return;
	}
	wint_t ch;
	int rc;
	/* drain everything ncurses has buffered: one poll wake-up may carry a whole paste */
	while (S.active && (rc = get_wch(&ch)) != ERR) {
		if (!sgr_feed(ch, rc))
			deliver(ch, rc);
	}
	/* what a key changes is drawn on this pass, not after the pacer's interval: while lists load, frames are
	 * paced continuously and a key would otherwise wait up to a frame's interval behind them */
	screen_frame_soon();
	/* ncurses gave ESC (or ESC [) and nothing after it: the Escape key, or Alt+[; a report never stops there */
	if (S.sgr_state == 1 || S.sgr_state == 2)
		sgr_flush();
}

static void on_winch(int sig, void *arg)
{
	(void)sig;
	(void)arg;
	struct winsize ws;
	if (!S.active || ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) < 0 || ws.ws_row == 0 || ws.ws_col == 0)
		return;
	resize_term(ws.ws_row, ws.ws_col);
	if (S.cbs.resize)
		S.cbs.resize(LINES, COLS);
	screen_dirty_full();
}

static void on_quit_signal(int sig, void *arg)
{
	(void)arg;
	log_info("ui: signal %d, leaving", sig);
	if (S.cbs.quit)
		S.cbs.quit(sig);
	else
		loop_quit(0);
}

static void on_cont(int sig, void *arg)
{
	(void)sig;
	(void)arg;
	screen_dirty_full();
}

static void term_as_found(void);
static void term_resume(void);

/* SIGTSTP (`kill -TSTP`: in raw mode Ctrl+Z is a key for the guest): the terminal as found, stopped as the
 * default action stops, then curses' modes again and a full repaint. This handler, rather than ncurses' own, is
 * in place before newterm, so ncurses leaves SIGTSTP alone: its handler drew from inside the signal handler, and it
 * made every doupdate two sigaction calls (SIGTSTP ignored while drawing, then back). */
static void on_tstp(int sig, void *arg)
{
	(void)arg;
	bool active = S.active;
	if (active)
		term_as_found();
	signal(sig, SIG_DFL);
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, sig);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	raise(sig); /* returns after SIGCONT */
	loop_signal(sig, on_tstp, NULL);
	if (active && S.active)
		term_resume();
}

/* After curses has written its frame: the hook's own bytes, then the attributes curses believes (normal:
 * doupdate ends in them) and the cursor back where curses put it (curses moves relative to the cursor). While a
 * hook is set, stdscr is not leaveok: doupdate ends with the cursor at curscr's, not wherever the last cell
 * written left it (which curses alone would know). */
static void raw_output(bool full)
{
	buf_reset(&S.raw_out);
	S.raw_fn(S.raw_arg, &S.raw_out, full || S.raw_all);
	S.raw_all = false;
	if (S.raw_out.len == 0)
		return;
	int y, x;
	getyx(curscr, y, x);
	buf_printf(&S.raw_out, "\033[0m\033[%d;%dH", y + 1, x + 1);
	const char *p = S.raw_out.data;
	size_t left = S.raw_out.len;
	while (left > 0) {
		ssize_t n = write(STDOUT_FILENO, p, left);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			struct pollfd pfd = { .fd = STDOUT_FILENO, .events = POLLOUT };
			poll(&pfd, 1, 100);
			continue;
		}
		if (n <= 0)
			break; /* the terminal went away: the input side says so */
		p += n;
		left -= (size_t)n;
	}
}

void screen_mouse_drags(bool on)
{
	if (!S.active)
		return;
	/* counted: several VNC panes may want drags */
	S.drag_users += on ? 1 : -1;
	if (S.drag_users != (on ? 1 : 0))
		return;
	/* the tracking modes exclude each other: leaving 1002 turns reporting off, 1000 turns it back on */
	fputs(on ? "\033[?1002h" : "\033[?1002l\033[?1000h", stdout);
	fflush(stdout);
}

void screen_raw_hook(screen_raw_fn fn, void *arg)
{
	if (fn != S.raw_fn || arg != S.raw_arg)
		S.raw_all = true;
	S.raw_fn = fn;
	S.raw_arg = arg;
	if (S.active)
		leaveok(stdscr, fn == NULL);
}

static void on_frame_timer(void *arg)
{
	(void)arg;
	S.frame_timer = NULL; /* the hook draws on this pass */
}

static void frame(void)
{
	S.dirty = S.store_dirty = false;
	bool full = S.full;
	S.full = false;
	if (full)
		clearok(curscr, TRUE); /* repaint every cell once (resize, after a suspend) */
	if (S.cbs.draw)
		S.cbs.draw(full);
	doupdate();
	if (S.raw_fn)
		raw_output(full);
	S.frames++;
	screen_pacer_spend(&S.pacer);
}

/* A pass in ms milliseconds draws, when it still has to: the sooner of two waits (a key's frame does not wait for
 * the cluster's). */
static void frame_later(uint64_t ms)
{
	uint64_t at = util_now_ms() + ms;
	if (S.frame_timer && S.frame_at <= at)
		return;
	if (S.frame_timer)
		loop_timer_cancel(S.frame_timer);
	S.frame_timer = loop_timer_add(ms, on_frame_timer, NULL);
	S.frame_at = at;
}

/* The buckets: credit earned at one millisecond a millisecond, up to SCREEN_BURST frames' worth each. */
static uint64_t earn(uint64_t credit, uint64_t earned, uint64_t frame_ms)
{
	return credit + earned > SCREEN_BURST * frame_ms ? SCREEN_BURST * frame_ms : credit + earned;
}

uint64_t screen_pacer_wait(struct screen_pacer *p, uint64_t now, bool cluster_only)
{
	uint64_t earned = now >= p->at ? now - p->at : 0;
	p->at = now;
	p->credit_ms = earn(p->credit_ms, earned, SCREEN_FRAME_MS);
	p->store_credit_ms = earn(p->store_credit_ms, earned, SCREEN_STORE_FRAME_MS);
	if (p->credit_ms < SCREEN_FRAME_MS)
		return SCREEN_FRAME_MS - p->credit_ms;
	if (cluster_only && p->store_credit_ms < SCREEN_STORE_FRAME_MS)
		return SCREEN_STORE_FRAME_MS - p->store_credit_ms;
	return 0;
}

void screen_pacer_spend(struct screen_pacer *p)
{
	p->credit_ms = p->credit_ms >= SCREEN_FRAME_MS ? p->credit_ms - SCREEN_FRAME_MS : 0;
	p->store_credit_ms = p->store_credit_ms >= SCREEN_STORE_FRAME_MS ? p->store_credit_ms - SCREEN_STORE_FRAME_MS : 0;
}

void screen_pacer_soon(struct screen_pacer *p)
{
	if (p->credit_ms < SCREEN_FRAME_MS)
		p->credit_ms = SCREEN_FRAME_MS;
	if (p->store_credit_ms < SCREEN_STORE_FRAME_MS)
		p->store_credit_ms = SCREEN_STORE_FRAME_MS;
}

/* Runs once per loop pass: draws only when dirty, paced (screen_pacer_wait) so that bursts of changes coalesce
 * while a frame after a quiet moment goes out at once: a key's frame and the guest's echo 0.3 ms later are two
 * frames, and the echo must not wait a whole frame interval behind the key's. */
static void frame_hook(void *arg)
{
	(void)arg;
	if (!S.active || !(S.dirty || S.store_dirty))
		return;
	uint64_t wait = screen_pacer_wait(&S.pacer, util_now_ms(), !S.dirty);
	if (wait > 0) {
		frame_later(wait);
		return;
	}
	frame();
}

void screen_frame_soon(void)
{
	screen_pacer_soon(&S.pacer);
}

unsigned long screen_frames(void)
{
	return S.frames;
}

void screen_dirty(void)
{
	S.dirty = true;
}

void screen_dirty_store(void)
{
	S.store_dirty = true;
}

void screen_dirty_full(void)
{
	S.dirty = true;
	S.full = true;
}

/* ncursesw draws UTF-8 only under a UTF-8 locale: use the user's, else C.UTF-8. */
static void ensure_utf8_locale(void)
{
	setlocale(LC_ALL, "");
	const char *cs = nl_langinfo(CODESET);
	if (cs && strcmp(cs, "UTF-8") == 0)
		return;
	if (setlocale(LC_CTYPE, "C.UTF-8") == NULL)
		log_warn("ui: no UTF-8 locale; non-ASCII names will be shown escaped");
}

int screen_init(const struct screen_cbs *cbs, const char *theme, char **theme_err)
{
	if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
		log_eprintf("error: the dashboard needs a terminal (use `kvcon get` for scripts)\n");
		return -1;
	}
	S.cbs = *cbs;
	ensure_utf8_locale();
	S.have_tio = tcgetattr(STDIN_FILENO, &S.saved_tio) == 0;
	if (getenv("ESCDELAY") == NULL)
		set_escdelay(25);
	loop_signal(SIGTSTP, on_tstp, NULL); /* before newterm: see on_tstp */
	S.scr = newterm(NULL, stdout, stdin);
	if (S.scr == NULL) {
		signal(SIGTSTP, SIG_DFL);
		log_eprintf("error: cannot use terminal type '%s'\n", getenv("TERM") ? getenv("TERM") : "");
		return -1;
	}
	/* no typeahead check: kvcon reads the keyboard from its loop, and ncurses polled stdin twice in every
	 * doupdate, flushing half a frame (an extra write) whenever a key was waiting */
	typeahead(-1);
	/* ncurses (6.4) flushes its output after every cursor movement of a doupdate until the screen has once been
	 * suspended and resumed (its endwin state stays "initial"): a frame of N scattered changes was N write()s,
	 * and a guest's echo reached the terminal after a write of the cursor move alone. One endwin and doupdate
	 * now, before anything is drawn, make every frame one write(). */
	endwin();
	doupdate();
	S.active = true;
	S.frames = 0;
	S.pacer = (struct screen_pacer){ .at = util_now_ms() };
	screen_pacer_soon(&S.pacer); /* the first paint at once */
	prepare_restore();
	termrestore_arm();
	log_capture_stderr();
	raw();
	noecho();
	nonl();
	keypad(stdscr, TRUE);
	nodelay(stdscr, TRUE);
	meta(stdscr, TRUE);
	curs_set(0);
	leaveok(stdscr, TRUE);
	mouseinterval(0); /* press/release reported as they come; clicks are synthesised by the views */
	mousemask(ALL_MOUSE_EVENTS, NULL);
	/* xterm's SGR reports (no 223-column limit), whatever terminfo says: where ncurses would decode SGR itself
	 * (kmous ESC [ <) it leaves them to on_input, which decodes drags too (screen_mouse_drags) */
	const char *kmous = tigetstr("kmous");
	if (kmous && kmous != (char *)-1 && strcmp(kmous, "\033[<") == 0)
		keyok(KEY_MOUSE, FALSE);
	fputs(mouse_on, stdout);
	fflush(stdout);
	paste_terminal_on();
	S.color = false;
	const char *nc = getenv("NO_COLOR");
	if (has_colors() && !(nc && *nc)) {
		start_color();
		use_default_colors();
		S.color = true;
	}
	if (theme_load(theme, theme_err) < 0)
		log_warn("ui: %s", theme_err && *theme_err ? *theme_err : "theme not loaded");
	theme_apply(S.color, S.color ? COLORS : 0);
	bkgdset(' ' | (chtype)theme_attr(THEME_NORMAL));
	S.in = loop_fd_add(STDIN_FILENO, POLLIN, on_input, NULL);
	loop_signal(SIGWINCH, on_winch, NULL);
	loop_signal(SIGTERM, on_quit_signal, NULL);
	loop_signal(SIGHUP, on_quit_signal, NULL);
	loop_signal(SIGINT, on_quit_signal, NULL);
	loop_signal(SIGCONT, on_cont, NULL);
	S.hook = loop_hook_add(frame_hook, NULL);
	S.dirty = S.full = true;
	log_info("ui: terminal %dx%d, %s, %d colours", COLS, LINES, termname(), S.color ? COLORS : 0);
	return 0;
}

/* The terminal as found: curses' modes left, the cursor shown, and (ncurses leaves xterm mouse reporting on in some
 * terminals) mouse reporting and bracketed paste said off explicitly, the saved termios back. */
static void term_as_found(void)
{
	mousemask(0, NULL);
	curs_set(1);
	endwin();
	fputs(mouse_off, stdout);
	fputs(PASTE_TERM_OFF, stdout);
	fflush(stdout);
	if (S.have_tio)
		tcsetattr(STDIN_FILENO, TCSAFLUSH, &S.saved_tio);
}

/* After term_as_found: curses' modes again, the mouse and bracketed paste, everything repainted. */
static void term_resume(void)
{
	reset_prog_mode();
	curs_set(0);
	mousemask(ALL_MOUSE_EVENTS, NULL);
	fputs(mouse_on, stdout);
	fflush(stdout);
	paste_terminal_on();
	clearok(curscr, TRUE);
	S.dirty = S.full = true;
	screen_frame_soon();
}

void screen_fini(void)
{
	if (S.hook >= 0)
		loop_hook_remove(S.hook);
	S.hook = -1;
	if (S.frame_timer)
		loop_timer_cancel(S.frame_timer);
	S.frame_timer = NULL;
	if (S.in)
		loop_fd_remove(S.in);
	S.in = NULL;
	if (!S.active)
		return;
	log_info("ui: %lu frames drawn", S.frames);
	term_as_found();
	S.active = false;
	termrestore_disarm();
	delscreen(S.scr);
	S.scr = NULL;
	S.raw_fn = NULL;
	S.raw_arg = NULL;
	S.drag_users = 0;
	S.sgr_state = 0;
	S.sgr_len = 0;
	buf_free(&S.raw_out);
	log_release_stderr();
	paste_free(&S.paste);
}

int screen_run(char *const argv[], char **err)
{
	if (!S.active) {
		*err = xstrdup("no terminal to hand over");
		return -1;
	}
	term_as_found(); /* for the program */
	int tty = isatty(STDIN_FILENO) ? STDIN_FILENO : -1;
	pid_t pid = fork();
	if (pid == 0) {
		/* its own process group in the foreground: ctrl-c is the program's, not the dashboard's */
		setpgid(0, 0);
		if (tty >= 0) {
			signal(SIGTTOU, SIG_IGN);
			tcsetpgrp(tty, getpgrp());
		}
		static const int dfl[] = { SIGINT, SIGQUIT, SIGTERM, SIGHUP, SIGPIPE, SIGTTOU, SIGTTIN, SIGTSTP,
					   SIGWINCH, SIGCHLD, SIGCONT };
		for (size_t i = 0; i < sizeof dfl / sizeof dfl[0]; i++)
			signal(dfl[i], SIG_DFL);
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		dup2(STDOUT_FILENO, STDERR_FILENO); /* the log has stderr: the program's messages are the user's */
		execv(argv[0], argv);
		_exit(127);
	}
	int status = -1;
	if (pid < 0) {
		*err = xasprintf("cannot start %s: %s", argv[0], strerror(errno));
	} else {
		setpgid(pid, pid);
		if (tty >= 0)
			tcsetpgrp(tty, pid);
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
		if (tty >= 0) { /* the terminal back to the dashboard's group */
			void (*old)(int) = signal(SIGTTOU, SIG_IGN);
			tcsetpgrp(tty, getpgrp());
			signal(SIGTTOU, old);
		}
	}
	term_resume();
	return pid < 0 ? -1 : status;
}
