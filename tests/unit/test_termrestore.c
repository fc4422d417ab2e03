/* Unit tests of src/core/termrestore: the bytes collected for a fixed terminal type, what is skipped, and that
 * they reach the fd they are written to (directly and through the fatal hook, once). */
#include <curses.h>
#include <fcntl.h>
#include <term.h>
#include <unistd.h>

#include "core/fatal.h"
#include "core/log.h"
#include "core/termrestore.h"
#include "t.h"

/* Reads what is waiting in a non-blocking pipe; returns the count (0 when nothing). */
static size_t drain(int fd, char *out, size_t cap)
{
	size_t n = 0;
	ssize_t r;
	while (n < cap && (r = read(fd, out + n, cap - n)) > 0)
		n += (size_t)r;
	return n;
}

static bool contains(const char *hay, size_t n, const char *needle)
{
	return memmem(hay, n, needle, strlen(needle)) != NULL;
}

int main(void)
{
	int p[2];
	T_CHECK(pipe(p) == 0);
	fcntl(p[0], F_SETFL, O_NONBLOCK);
	int err = 0;
	T_CHECK(setupterm("xterm-256color", p[1], &err) == OK);

	/* what the dashboard collects: raw strings first, then the terminal's own capabilities, in order */
	termrestore_begin(NULL);
	termrestore_add("\033[?1000l");
	termrestore_add("\033[?2004l");
	termrestore_add(NULL);
	termrestore_add((char *)-1);
	termrestore_add_cap("sgr0");
	termrestore_add_cap("kvcon-no-such-cap"); /* tigetstr gives (char *)-1: nothing added */
	termrestore_add_cap("rmcup");
	char want[256];
	snprintf(want, sizeof want, "\033[?1000l\033[?2004l%s%s", tigetstr("sgr0"), tigetstr("rmcup"));
	size_t len = 0;
	const char *b = termrestore_bytes(&len);
	T_EQ_INT(len, strlen(want));
	T_CHECK(memcmp(b, want, len) == 0);
	T_CHECK(contains(b, len, "\033[?1049l")); /* xterm's rmcup leaves the alternate screen */

	char got[512];
	termrestore_write(p[1], -1);
	size_t n = drain(p[0], got, sizeof got);
	T_EQ_INT(n, len);
	T_CHECK(n == len && memcmp(got, want, n) == 0);

	/* the fatal hook writes to fd 1, once; after disarm it writes nothing */
	int saved_out = dup(STDOUT_FILENO);
	dup2(p[1], STDOUT_FILENO);
	termrestore_arm();
	fatal_run_hook();
	fatal_run_hook();
	n = drain(p[0], got, sizeof got);
	T_EQ_INT(n, len);
	termrestore_arm();
	termrestore_disarm();
	fatal_run_hook();
	T_EQ_INT(drain(p[0], got, sizeof got), 0);
	dup2(saved_out, STDOUT_FILENO);
	close(saved_out);

	/* a new collection starts empty; what would overflow the buffer is left out, not cut */
	termrestore_begin(NULL);
	char big[200];
	memset(big, 'x', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	termrestore_add(big);
	termrestore_add(big);
	termrestore_add_cap("rmcup");
	b = termrestore_bytes(&len);
	T_EQ_INT(len, strlen(big) + strlen(tigetstr("rmcup")));
	T_CHECK(contains(b, len, "\033[?1049l"));

	close(p[0]);
	close(p[1]);
	return T_DONE();
}
