/* Terminal-restore bytes for the fatal hook: collected beforehand, written async-signal-safely. */
#include "core/termrestore.h"

#include <curses.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <term.h>
#include <unistd.h>

#include "core/fatal.h"
#include "core/log.h"

static struct {
	char seq[256];
	size_t len;
	struct termios tio;
	bool have_tio;
	volatile sig_atomic_t armed;
} R;

void termrestore_begin(const struct termios *tio)
{
	R.len = 0;
	R.have_tio = tio != NULL;
	if (tio)
		R.tio = *tio;
}

void termrestore_add(const char *s)
{
	if (s == NULL || s == (char *)-1)
		return;
	size_t n = strlen(s);
	if (R.len + n < sizeof R.seq) {
		memcpy(R.seq + R.len, s, n);
		R.len += n;
	}
}

void termrestore_add_cap(const char *cap)
{
	termrestore_add(tigetstr((char *)cap));
}

const char *termrestore_bytes(size_t *len)
{
	*len = R.len;
	return R.seq;
}

void termrestore_write(int out_fd, int tty_fd)
{
	ssize_t w = write(out_fd, R.seq, R.len); /* nothing to do about a failure here */
	(void)w;
	if (R.have_tio)
		tcsetattr(tty_fd, TCSAFLUSH, &R.tio);
}

/* Runs from fatal() and the crash handlers. */
static void restore_hook(void)
{
	if (!R.armed)
		return;
	R.armed = 0;
	termrestore_write(STDOUT_FILENO, STDIN_FILENO);
}

void termrestore_arm(void)
{
	R.armed = 1;
	fatal_set_hook(restore_hook);
	log_install_crash_handlers();
}

void termrestore_disarm(void)
{
	R.armed = 0;
	fatal_set_hook(NULL);
}
