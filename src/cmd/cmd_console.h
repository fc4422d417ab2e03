/* cmd_console: `kvcon console TARGET [--timeout S] [--log FILE]`: a guest's serial console full-screen, without the
 * dashboard, like `virtctl console` (waits for the VMI to be Running; Ctrl+] leaves; the terminal is restored).
 * TARGET is NS/NAME (a VMI of the current kube context), or ws(s)://URL, unix:PATH, tcp:HOST:PORT. */
#ifndef KVCON_CMD_CMD_CONSOLE_H
#define KVCON_CMD_CMD_CONSOLE_H

#include "model/source.h"
#include "model/store.h"

/* The subcommand (argv[0] is "console"). */
int concmd_main(int argc, char **argv);

/* Finds the source serving NS/NAME when it is not a cluster's (the engine sets this; NULL: kube only).
 * Returns a source whose provider has open_console, or NULL with *err. */
extern struct source *(*concmd_find_source)(struct store *st, const char *ns, const char *name, char **err);

#endif
