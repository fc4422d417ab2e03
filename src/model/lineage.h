/* Lineage: every execution a VM has had while kvcon watched. A store listener notes each VMI UID (an execution),
 * its launcher pods (UID, name, node, start, end) and how it ended: stopped (the VM's intent was to stop, or the
 * guest shut down), restarted (replaced by a new VMI UID while the VM still wanted to run), failed (last phase
 * Failed), or lost (gone while kvcon was not watching). A live migration keeps the execution (same VMI UID) and
 * adds a launcher on the new node; the old launcher is marked "migrated".
 *
 * Persisted per source as JSON lines in DIR/<source-name-sanitized>.jsonl (DIR defaults to
 * $XDG_STATE_HOME/kvcon/lineage): each line is the full state of one execution (with its VM's ns and name),
 * appended in whole records on an O_APPEND descriptor (at once; paced, a loop pass's records in one write() at
 * the pass's end); the file is read once, at the source's first use, and the last line per VMI UID wins, so
 * history survives kvcon restarts and crashes (a torn last line is ignored).
 * Files with many superseded lines are compacted on load (write-temp + rename).
 * Source-agnostic (engine executions are VMIs too) and UI-agnostic. UI thread only.
 * An execution that moves to another source with the same VMI UID (a live migration between two engine hosts)
 * continues there, with a launcher on the new host; the old host's file gets a tombstone for it. History is
 * kept per source: the older executions stay in the old host's lineage. */
#ifndef KVCON_MODEL_LINEAGE_H
#define KVCON_MODEL_LINEAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "model/obj.h"
#include "model/source.h"
#include "model/store.h"

enum lineage_end {
	LIN_RUNNING,   /* the VMI still exists and has not finished */
	LIN_STOPPED,   /* stopped on purpose, or the guest shut down (phase Succeeded) */
	LIN_RESTARTED, /* replaced by a new VMI UID while the VM kept its running intent */
	LIN_FAILED,    /* phase Failed */
	LIN_LOST,      /* gone while kvcon was not watching: the end is not known */
};

struct lineage_launcher {
	char uid[UID_LEN];
	char *name;
	const char *node;   /* interned; NULL until scheduled */
	int64_t start, end; /* epoch seconds; end 0 while the pod exists */
	bool migrated;      /* the execution moved away from this launcher (live migration source) */
	bool attempt;       /* the target of a migration that failed: the execution never left the source */
};

struct lineage_exec {
	char vmi_uid[UID_LEN];
	char vm_uid[UID_LEN];
	int64_t start;      /* VMI creationTimestamp */
	int64_t end;        /* 0 while running; else the terminal phase time, deletionTimestamp or when seen gone */
	enum lineage_end how;
	const char *phase;  /* last phase seen (interned) */
	const char *node;   /* the VMI's node last seen (interned) */
	int migrations;     /* completed moves to another node */
	struct lineage_launcher *launchers; /* oldest first */
	int nlaunchers;
};

struct lineage;

/* Creates the recorder and registers it as a store listener. dir NULL: $XDG_STATE_HOME/kvcon/lineage. */
struct lineage *lineage_new(struct store *st, const char *dir);
/* Unregisters and frees (the files stay). NULL is ignored. */
void lineage_free(struct lineage *l);

/* The executions of src's ns/name, oldest first (history loaded from disk on first use). Executions still open
 * whose VMI is gone from the store are closed as "lost" once src's VMI watch is live. The array is valid until
 * the next store change or lineage call. */
const struct lineage_exec *const *lineage_get(struct lineage *l, struct source *src, const char *ns,
					      const char *name, size_t *n);

/* Records the current state of every VMI of src already in the store (call once a source's first list has
 * landed when the lineage was created after the store filled). */
void lineage_scan(struct lineage *l, struct source *src);
/* For a process with a running loop (the dashboard): a source's history file is read in slices of a few
 * milliseconds per loop pass, from its first VMI or pod on, instead of at once inside that change (a large history
 * would hold the first frame), and what the store holds is seen again after it; until then the source's VMI and
 * pod changes are not recorded (an execution that starts and ends within that time is missed). The records of a
 * loop pass are written together at its end (one write() per file; a kill -9 loses at most that pass's, as it
 * loses the watch events the pass had not applied yet: docs/ARCHITECTURE.md). */
void lineage_set_paced(struct lineage *l);
/* Paced: while held, no history is read (the sources' changes wait for the catch-up as while reading); released,
 * the reading goes on a slice per pass. The dashboard holds it until its first rows are on the terminal. */
void lineage_hold(struct lineage *l, bool hold);

const char *lineage_end_name(enum lineage_end e); /* "running", "stopped", "restarted", "failed", "lost" */

/* Plain-text table of a VM's executions (the CLI's `kvcon lineage` and the VM view), times as RFC 3339. */
void lineage_format_text(const struct lineage_exec *const *ex, size_t n, int64_t now, struct buf *out);

/* ---- test seams: exported for tests/ only, not to be called by kvcon itself (tests/check-exports.sh) ---- */
/* The file a VM's lineage lives in: its source's file (caller frees). */
char *lineage_path(const struct lineage *l, const struct source *src, const char *ns, const char *name);

#endif
