/* The header over every view: per source its context / host, cluster URL, user, KubeVirt version, namespace
 * scope and watch health per resource; VM counts by status; READ-ONLY. */
#ifndef KVCON_UI_HEADER_H
#define KVCON_UI_HEADER_H

#include <stdbool.h>
#include <stddef.h>

#include "model/obj.h"
#include "ui/view.h"

struct store;

/* Rows the header takes on a screen of this height. */
int header_height(int rows);
void header_draw(const struct region *r, const struct store *st, bool readonly, const char *ns);

/* The header's VM counts: how many VMs of namespace ns (NULL: all) have each printableStatus ("Unknown" when
 * empty). */
#define HEADER_MAX_STATUS 24
struct header_status {
	const char *status; /* interned */
	size_t n;
};
/* A store change (the dashboard's store listener calls it): the counts follow the VM's old and new status.
 * Returns whether the header may look different (its counts moved, or they are counted again at the next frame);
 * false for a change that leaves them as they were (another kind, the same status in the same namespace). */
bool header_store_changed(const struct store *st, enum obj_kind kind, const struct obj *old, const struct obj *new_);
/* Forgets the counts (another store is used from now on). */
void header_forget(void);
/* Whether the counts for ns differ from those the last header_draw showed (true when they must be counted again):
 * changes that moved them and moved them back before the frame need no frame. */
bool header_counts_moved(const struct store *st, const char *ns);

/* ---- test seams: exported for tests/ only, not to be called by kvcon itself (tests/check-exports.sh) ---- */
/* How many times the counts were computed over the whole store (for tests). */
size_t header_recounts(void);
/* Fills counts[HEADER_MAX_STATUS] most frequent first and returns the number of VMs. Counts over the store only
 * when the hook below missed a change (or ns, the store or the sources changed). */
size_t header_vm_counts(const struct store *st, const char *ns, struct header_status *counts, int *n);

#endif
