/* Unit tests of the screen's frame path (ui/screen.c) on a real pseudo-terminal: what one frame costs in system
 * calls. The test interposes poll, sigaction and write (ncurses calls them through the dynamic linker, so this
 * executable's definitions are the ones it reaches) and records them while kvcon's loop runs. Guest output that
 * arrives in a pass must be drawn before the loop polls again, in one write, with no typeahead check (a poll of
 * stdin) and no SIGTSTP juggling (sigaction) around doupdate, even when a key is waiting. */
#include <curses.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <locale.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "core/loop.h"
#include "core/util.h"
#include "t.h"
#include "ui/screen.h"

/* ---- the interposed calls ---- */

static bool recording;
static char events[256]; /* P: a poll of several fds (the loop's), p: a poll of stdin alone, s: a SIGTSTP
			  * sigaction, W: a write to the terminal, G: the guest's bytes taken in, K: a key */
static size_t nevents;

static void note(char c)
{
	if (recording && nevents + 1 < sizeof events)
		events[nevents++] = c;
}

int poll(struct pollfd *fds, nfds_t n, int timeout)
{
	static int (*real)(struct pollfd *, nfds_t, int);
	if (!real)
		real = (int (*)(struct pollfd *, nfds_t, int))dlsym(RTLD_NEXT, "poll");
	note(n == 1 && fds[0].fd == STDIN_FILENO ? 'p' : 'P');
	return real(fds, n, timeout);
}

int sigaction(int sig, const struct sigaction *sa, struct sigaction *old)
{
	static int (*real)(int, const struct sigaction *, struct sigaction *);
	if (!real)
		real = (int (*)(int, const struct sigaction *, struct sigaction *))dlsym(RTLD_NEXT, "sigaction");
	if (sig == SIGTSTP)
		note('s');
	return real(sig, sa, old);
}

ssize_t write(int fd, const void *b, size_t n)
{
	static ssize_t (*real)(int, const void *, size_t);
	if (!real)
		real = (ssize_t(*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
	if (fd == STDOUT_FILENO)
		note('W');
	return real(fd, b, n);
}

/* ---- a dashboard of one line ---- */

static char shown[64] = "ready";
static int keys;

static void on_key(int key)
{
	(void)key;
	keys++;
	note('K');
}

static void on_draw(bool full)
{
	(void)full;
	mvaddstr(3, 5, shown);
	wnoutrefresh(stdscr);
}

static int guest_pipe[2];
static int master = -1;

static void on_guest(int fd, short revents, void *arg)
{
	(void)revents;
	(void)arg;
	char b[32];
	ssize_t n = read(fd, b, sizeof b - 1);
	if (n > 0) {
		b[n] = '\0';
		snprintf(shown, sizeof shown, "guest %s", b);
		note('G');
		screen_dirty();
		/* a key typed meanwhile: waiting on stdin while the frame is drawn */
		if (write(master, "k", 1) != 1)
			note('!');
	}
}

static void drain(void)
{
	char b[4096];
	while (read(master, b, sizeof b) > 0)
		;
}

/* Frames a pacer allows while a change comes every 5 ms for ms milliseconds (cluster_only: the cluster's alone). */
static int paced_frames(struct screen_pacer *p, uint64_t *now, uint64_t ms, bool cluster_only)
{
	int frames = 0;
	for (uint64_t end = *now + ms; *now < end; *now += 5)
		if (screen_pacer_wait(p, *now, cluster_only) == 0) {
			screen_pacer_spend(p);
			frames++;
		}
	return frames;
}

/* The pacer on a clock of its own: a key's or a console's changes at SCREEN_FPS, the cluster's at SCREEN_STORE_FPS,
 * a burst of either at once after a quiet moment, and a key's frame never held behind the cluster's wait. */
static void test_pacer(void)
{
	struct screen_pacer p = { .at = 1000 };
	uint64_t now = 1000;
	screen_pacer_soon(&p);
	T_EQ_INT((int)screen_pacer_wait(&p, now, true), 0); /* the first frame at once */
	now += 2000;                                    /* a quiet moment: full buckets */
	int f = paced_frames(&p, &now, 2000, true);
	T_CHECK(f >= 2 * SCREEN_STORE_FPS && f <= 2 * SCREEN_STORE_FPS + SCREEN_BURST);
	/* right after a frame of the cluster's: its next waits, a key's frame is not held behind it */
	while (screen_pacer_wait(&p, now, true) > 0)
		now += 5;
	screen_pacer_spend(&p);
	T_CHECK(screen_pacer_wait(&p, now, true) > SCREEN_FRAME_MS);
	now += SCREEN_FRAME_MS;
	T_EQ_INT((int)screen_pacer_wait(&p, now, false), 0);
	now += 2000;
	f = paced_frames(&p, &now, 2000, false);
	T_CHECK(f >= 2 * SCREEN_FPS - 2 && f <= 2 * SCREEN_FPS + SCREEN_BURST);
	/* after a quiet moment the cluster's change is drawn at once, and SCREEN_BURST of them */
	now += 1000;
	f = 0;
	while (screen_pacer_wait(&p, now, true) == 0 && f < 10) {
		screen_pacer_spend(&p);
		f++;
	}
	T_EQ_INT(f, SCREEN_BURST);
	/* the first rows: at once, whatever the credit */
	screen_pacer_soon(&p);
	T_EQ_INT((int)screen_pacer_wait(&p, now, true), 0);
}

int main(void)
{
	test_pacer();
	setlocale(LC_ALL, "C.UTF-8");
	setenv("TERM", "xterm-256color", 1);
	unsetenv("KVCON_LOG");
	master = posix_openpt(O_RDWR | O_NOCTTY);
	T_CHECK(master >= 0 && grantpt(master) == 0 && unlockpt(master) == 0);
	int slave = master >= 0 ? open(ptsname(master), O_RDWR | O_NOCTTY) : -1;
	T_CHECK(slave >= 0);
	if (slave < 0)
		return T_DONE();
	struct winsize ws = { .ws_row = 24, .ws_col = 80 };
	ioctl(master, TIOCSWINSZ, &ws);
	fcntl(master, F_SETFL, O_NONBLOCK);
	int saved_in = dup(STDIN_FILENO), saved_out = dup(STDOUT_FILENO);
	dup2(slave, STDIN_FILENO);
	dup2(slave, STDOUT_FILENO);
	loop_init();
	T_CHECK(pipe(guest_pipe) == 0);
	struct screen_cbs cbs = { .key = on_key, .draw = on_draw };
	char *terr = NULL;
	int rc = screen_init(&cbs, NULL, &terr);
	loop_fd_add(guest_pipe[0], POLLIN, on_guest, NULL);
	uint64_t until = util_now_ms() + 5000;
	while (rc == 0 && screen_frames() < 1 && util_now_ms() < until)
		loop_once(10);
	unsigned long f0 = screen_frames();
	/* a quiet moment: the pacer has credit for the next frames at once */
	uint64_t quiet = util_now_ms() + 3 * 1000 / SCREEN_FPS;
	while (util_now_ms() < quiet)
		loop_once(5);
	drain();

	/* the guest's echo with a key waiting on stdin while the frame is drawn */
	recording = true;
	T_EQ_INT(write(guest_pipe[1], "x", 1), 1);
	until = util_now_ms() + 5000;
	while (screen_frames() < f0 + 1 && util_now_ms() < until)
		loop_once(50);
	until = util_now_ms() + 5000;
	while (keys == 0 && util_now_ms() < until) /* the poll after the frame, and the key */
		loop_once(50);
	recording = false;
	unsigned long frames = screen_frames() - f0;
	char out[4096] = "";
	ssize_t nout = read(master, out, sizeof out - 1);
	if (nout > 0)
		out[nout] = '\0';
	screen_fini();
	loop_fini();
	dup2(saved_in, STDIN_FILENO);
	dup2(saved_out, STDOUT_FILENO);
	close(saved_in);
	close(saved_out);
	close(slave);
	close(master);

	T_EQ_INT(rc, 0);
	T_CHECK(frames >= 1);
	T_CHECK(strstr(out, "guest x") != NULL);
	events[nevents] = '\0';
	fprintf(stderr, "calls while the echo came in: %s\n", events);
	/* the guest's bytes, then the frame in one write, before the loop polls again */
	const char *g = strchr(events, 'G');
	T_CHECK(g != NULL && strncmp(g, "GWP", 3) == 0);
	T_CHECK(strchr(events, 's') == NULL); /* no sigaction(SIGTSTP) around doupdate */
	/* stdin is polled only by ncurses' reading of the key (before and after the byte), never while drawing */
	T_CHECK(g == NULL || strchr(g, 'K') != NULL);
	int stdin_polls = 0;
	for (const char *e = events; *e; e++)
		stdin_polls += *e == 'p';
	T_CHECK(stdin_polls <= 2);
	T_EQ_INT(keys, 1);
	return T_DONE();
}
