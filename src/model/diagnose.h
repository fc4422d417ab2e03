/* Diagnosis of one VM's chain: walks the four boundaries (VM -> VMI -> launcher -> guest) from the outside in,
 * gives each a verdict, names the first boundary that has not progressed, quotes the evidence (fields,
 * conditions read whole, events) and says what to check next, with the equivalent command (kubectl/virtctl
 * for cluster sources, kvcon engine/virsh for engine sources).
 *
 * The rules are one const table (diagnose.c), one row per observation. Per boundary, rules are tried in table
 * order and the first stall/stop rule that matches decides the verdict; note rules (observations that do not
 * stop the walk: RestartRequired, a failed migration, no guest agent) are all reported. The walk stops at the
 * first boundary that is waiting, failed or not expected; the boundaries after it are "not reached" (or "not
 * expected" after an intentional stop). UI-agnostic: every text is plain, escaped for display, no curses. */
#ifndef KVCON_MODEL_DIAGNOSE_H
#define KVCON_MODEL_DIAGNOSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "model/chain.h"

enum diag_boundary { DIAG_VM, DIAG_VMI, DIAG_LAUNCHER, DIAG_GUEST, DIAG_NBOUNDARY };

enum diag_verdict {
	DIAG_PROGRESSED,   /* this boundary did its part */
	DIAG_WAITING,      /* not yet: still within the time such a step normally takes */
	DIAG_FAILED,       /* stalled or broken */
	DIAG_NOT_EXPECTED, /* intentionally absent (a halted VM has no VMI: not an outage) */
	DIAG_NOT_REACHED,  /* an earlier boundary has not progressed */
};

enum diag_rule_kind {
	DIAG_STALL, /* decides the boundary's verdict and stops the walk (waiting or failed) */
	DIAG_STOP,  /* the boundary is intentionally not running: not expected from here on */
	DIAG_NOTE,  /* reported; the boundary still progresses */
};

struct diag_ctx; /* diagnose.c */

struct diag_rule {
	const char *id;                 /* stable name, e.g. "launcher-unschedulable" (fixtures are named after it) */
	enum diag_boundary boundary;
	enum diag_rule_kind kind;
	enum diag_verdict verdict;      /* stalls: DIAG_FAILED / DIAG_WAITING; stops: this boundary's own verdict
					 * (the VM boundary of a halted VM has progressed), the next ones are
					 * DIAG_NOT_EXPECTED */
	int stuck_after;                /* seconds; >0: DIAG_WAITING until the state is this old, then verdict */
	bool (*match)(struct diag_ctx *x); /* adds evidence as it matches */
	const char *summary;            /* one line; {name} {ns} {vmi} {pod} {node} {rs} {phase} expanded, and
					 * {what}: the object and its state as the matching rule saw them */
	const char *next;               /* what to check next (plain words) */
	const char *cmd_kube;           /* the equivalent kubectl/virtctl command(s), '\n'-separated */
	const char *cmd_engine;         /* the same for engine sources (kvcon engine / virsh) */
	const char *status;             /* the VM printableStatus values this rule explains, space-separated;
					 * NULL for none in particular (every one of the 17 has a rule) */
	const char *what0;              /* {what} when the rule could not name the object (storage not read) */
};

struct diag_evidence {
	const struct obj *obj; /* the object quoted (borrowed from the store, as the chain), NULL for general text */
	char *text;            /* escaped for display */
};

struct diag_finding {
	const struct diag_rule *rule;
	enum diag_verdict verdict;   /* for notes: DIAG_PROGRESSED */
	char *summary;               /* expanded, escaped */
	char *cmd;                   /* expanded command(s) for this source type, '\n'-separated */
	struct diag_evidence *ev;
	size_t nev;
};

struct diag {
	enum diag_verdict verdict[DIAG_NBOUNDARY];
	int decided_by[DIAG_NBOUNDARY]; /* index into findings of the rule that decided it, -1 when none */
	int first_stalled;              /* the first boundary waiting or failed, -1 when none */
	bool stopped;                   /* intentionally not running (halted, finished, paused) */
	struct diag_finding *findings;  /* in walk order, notes included */
	size_t nfindings;
	int64_t now;
};

/* The same with the VM's storage chain (kube/storage.h's JSON array, borrowed; NULL: not read): the storage
 * rules' headlines then name the claim and its storage class, the DataVolume and its progress. */
struct json_object;
struct diag *diag_run_storage(const struct chain *c, struct json_object *storage, int64_t now);
void diag_free(struct diag *d);

/* 0 (EXIT_OK) when every boundary progressed or the VM is intentionally stopped, 3 (EXIT_STALLED) otherwise. */
int diag_exit_code(const struct diag *d);

/* The plain-text walkthrough (the CLI's `-o text` and the TUI's `d` pane). */
void diag_format_text(const struct diag *d, const struct chain *c, struct buf *out);

const char *diag_boundary_name(enum diag_boundary b); /* "VM", "VMI", "launcher", "guest" */
const char *diag_verdict_name(enum diag_verdict v);   /* "progressed", "waiting", "failed", ... */

/* ---- test seams: exported for tests/ only, not to be called by kvcon itself (tests/check-exports.sh) ---- */
/* The finding of a rule id, or NULL when it did not fire. */
const struct diag_finding *diag_find(const struct diag *d, const char *rule_id);
/* The rule table, for tests and documentation. */
const struct diag_rule *diag_rules(size_t *n);
/* Diagnoses a chain at wall-clock time now (epoch seconds; tests pass a fixed one). Free with diag_free. */
struct diag *diag_run(const struct chain *c, int64_t now);

#endif
