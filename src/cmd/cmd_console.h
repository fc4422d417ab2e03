/* cmd_console: `kvcon console TARGET [--timeout MIN] [--log FILE]`: a guest's serial console full-screen, without
 * the dashboard, like `virtctl console` (waits for the VMI to be Running; Ctrl+] leaves; the terminal is restored).
 * TARGET is NS/NAME (a VMI of a cluster or an engine VM, resolved by cmd/session.c), or ws(s)://URL, unix:PATH,
 * tcp:HOST:PORT. */
#ifndef KVCON_CMD_CMD_CONSOLE_H
#define KVCON_CMD_CMD_CONSOLE_H

/* The subcommand (argv[0] is "console"). */
int cmd_console(int argc, char **argv);

#endif
