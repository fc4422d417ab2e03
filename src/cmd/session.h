/* A command-line session on one object (NS/NAME): the source that has it, opened and listed until its
 * reflectors are live, with the store and the lineage recorder. Used by the verbs about one VM. */
#ifndef KVCON_CMD_SESSION_H
#define KVCON_CMD_SESSION_H

#include <stdbool.h>

#include "model/source.h"
#include "model/store.h"

struct lineage;

struct session {
	const char *cmd;
	bool engine;
	struct store *st;
	struct source *src;
	struct lineage *lin;
	char *ns, *name;
};

/* Parses ref (NS/NAME or NAME in -n's namespace), opens its source and waits until the lists are in. EXIT_OK,
 * or an exit code after printing why. session_close must be called either way. */
int session_open(struct session *s, const char *cmd, const char *ref);
void session_close(struct session *s);
/* Prints "VirtualMachine NS/NAME not found in ..." on stderr. */
void session_not_found(const struct session *s);

#endif
