/* cmd_console: `kvcon console TARGET [--timeout MIN] [--log FILE]`: a guest's serial console full-screen, without
 * the dashboard, like `virtctl console` (waits for the VMI to be Running; Ctrl+] leaves; the terminal is restored).
 * TARGET is NS/NAME (a VMI of a cluster or an engine VM, resolved by cmd/session.c), or ws(s)://URL, unix:PATH,
 * tcp:HOST:PORT. */
#ifndef KVCON_CMD_CMD_CONSOLE_H
#define KVCON_CMD_CMD_CONSOLE_H

#include <stdbool.h>

#include "model/source.h"
#include "model/store.h"

/* The subcommand (argv[0] is "console"). With --expect RE / --send LINE (in order) or --wait-stop it runs
 * console_script instead of the full-screen console. */
int cmd_console(int argc, char **argv);

/* The scripted console of VM ns/name (cmd/cmd_conscript.c): the guest's output on stdout (escaped); steps opt[i]
 * "--expect" (an extended regular expression, matched after the previous match) or "--send" (a line typed) with
 * val[i]; wait_stop then waits until the execution ended. timeout_s 0: forever. Exit status 1 on timeout. */
int console_script(const char *ns, const char *name, const char *const *opt, const char *const *val, int n,
		   bool wait_stop, int timeout_s, const char *logfile);

/* Why the console of VM ns/name in src has nothing to wait for: the VM will not run (runStrategy Halted, Manual or
 * Once without a start asked) and has no execution under way. The error's text, naming the VM's state and the
 * command that starts it (caller frees); NULL while a console may come (the VM is starting, or runs). */
char *console_not_running(const struct store *st, struct source *src, const char *ns, const char *name);

#endif
