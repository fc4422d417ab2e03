/* An image pull's progress on the command line, as the engine service reports it: the waiting message of the
 * VM's launcher pod (ContainerCreating, "pulling image "REF": 12.0 MiB of 300 MiB"), as kubelet's pod would carry
 * it. Any verb that waits for a VM to start (engine start, restart, apply of an Always VM) calls pull_show_tick
 * from its wait loop and pull_show_end after it. */
#ifndef KVCON_CMD_PULLSHOW_H
#define KVCON_CMD_PULLSHOW_H

#include <stdint.h>

#include "model/source.h"
#include "model/store.h"

struct pull_show {
	char *last;  /* the line printed last, owned */
	uint64_t at; /* when (util_now_ms) */
};

/* Prints the pull progress of VM ns/name on src (the message of a waiting ContainerCreating container of one
 * of its launcher pods in st) on stderr, escaped, when it changed, at most once a second. */
void pull_show_tick(struct pull_show *ps, const struct store *st, struct source *src, const char *ns,
		    const char *name);
/* Forgets the last line (frees it). */
void pull_show_end(struct pull_show *ps);

#endif
