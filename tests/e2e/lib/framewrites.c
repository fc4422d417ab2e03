/* framewrites.so: an LD_PRELOAD probe for tests/e2e/ui_onewrite.sh. Counts the write()s to the terminal (fd 1) made
 * while each doupdate() runs and appends one line per frame, "FRAME <writes> <bytes>", to $FRAMEWRITES_LOG.
 * Not part of kvcon: the test builds it. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static ssize_t (*real_write)(int, const void *, size_t);
static int (*real_doupdate)(void);
static int in_frame, writes;
static size_t bytes;

ssize_t write(int fd, const void *buf, size_t n)
{
	if (real_write == NULL)
		real_write = (ssize_t(*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
	if (in_frame && fd == STDOUT_FILENO) {
		writes++;
		bytes += n;
	}
	return real_write(fd, buf, n);
}

int doupdate(void)
{
	if (real_doupdate == NULL)
		real_doupdate = (int (*)(void))dlsym(RTLD_NEXT, "doupdate");
	in_frame = 1;
	writes = 0;
	bytes = 0;
	int rc = real_doupdate();
	in_frame = 0;
	const char *path = getenv("FRAMEWRITES_LOG");
	if (path && writes > 0) {
		char line[64];
		int len = snprintf(line, sizeof line, "FRAME %d %zu\n", writes, bytes);
		int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
		if (fd >= 0) {
			if (real_write(fd, line, (size_t)len) < 0) {
				/* the test sees the frame missing */
			}
			close(fd);
		}
	}
	return rc;
}
