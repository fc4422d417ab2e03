/* Live migration of engine VMs between libvirt hosts: pre-flight checks, a peer-to-peer migration run by a
 * thread of its own (its own connections to both hosts) that polls libvirt's job stats, and the VM's engine
 * state (manifest, execution record) moved to the target when it succeeds. The state is KubeVirt's
 * migrationState, so the four-boundary view, diagnosis and lineage read it as they read a cluster's. */
#ifndef KVCON_ENGINE_MIGRATE_H
#define KVCON_ENGINE_MIGRATE_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

#include "model/obj.h"
#include "model/source.h"
#include "service/settings.h"

/* Options of one migration (migrate.c, from an ACT_MIGRATE request). */
struct migrate_opts {
	const char *target;     /* host name (source name) or URI; NULL: the only other host */
	const char *mig_uri;    /* the target's URI as the source host reaches it; NULL: from the config */
	bool offline;           /* a stopped VM: move its definition and record only */
	bool auto_converge, postcopy, copy_storage;
	unsigned long bandwidth; /* MiB/s, 0 unlimited */
	int timeout;             /* s, 0 none: abort when not done by then */
	const char *uid;         /* the migrationUid to use (a VirtualMachineInstanceMigration's); NULL: a new one */
};

/* struct action_req.flags with ACT_MIGRATE: ENGINE_MIG_* (model/source.h) */

#define MIG_MAX_PREV 8

/* A launcher the execution left behind on another host (the source pod of a completed migration). */
struct mig_launcher {
	char uid[UID_LEN];
	char *node;
	int pid;
	int64_t started, ended;
	bool deleted; /* its pod was deleted (evicted: kubectl drain): no longer served, still in the history */
};

struct mig_job;

/* The migration state of one execution (struct exec's mig), KubeVirt's vocabulary; persisted in the record. */
struct emig {
	char uid[UID_LEN];                 /* migrationUid */
	char target_launcher[UID_LEN];     /* the launcher UID the execution takes on the target */
	char *source_node, *target_node;
	int64_t start, end;
	bool completed, failed, abort_requested;
	char *abort_status;                /* Succeeded, Failed, Aborting, or NULL */
	char *mode;                        /* PreCopy, PostCopy */
	char *failure_reason;
	struct mig_launcher prev[MIG_MAX_PREV];
	int nprev;
	/* live, from the job stats */
	int progress_pct;
	uint64_t processed, remaining, total, dirty_rate;
	int iteration;
	int64_t downtime_ms, elapsed_ms;   /* expected downtime while running, the real one when completed */
	struct mig_job *job;               /* runtime: the thread running it (or settling one a killed process left) */
};

struct evm;
struct exec;
struct vmi;

/* the config's engine.host lines: migrate_uri_for, migrate_uri_configured, migrate_config_hosts (service/settings.h) */

/* ---- hooks called by the engine's pieces (engine_int.h) and record.c ---- */

/* ACT_MIGRATE / ACT_MIGRATE_ABORT of the engine provider. */
int migrate_action(struct source *src, const struct action_req *req, action_done_cb done, void *arg, char **err);
/* A migration of v is running, or one that an earlier process started is not settled yet: lifecycle events and
 * resyncs of the source must not end its execution, and the reconciler waits. */
bool migrate_busy(const struct evm *v);
/* Settles the migrations that an earlier process recorded as started and did not see end (it was killed): a
 * thread asks both hosts where the domain is once libvirt's own job is over, then the record moves to the target
 * (completed) or stays (failed). Called at every host's sync; does nothing while a host is not connected. */
void migrate_resume_all(void);
/* Fills the VMI's migrationState and active pods, and publishes the launchers the execution left behind. */
void migrate_publish(struct evm *v, struct vmi *vi);
/* Removes those launchers' pods from the store (the execution is archived or the VM moves away). */
void migrate_unpublish(struct evm *v, const struct exec *x);

void emig_free(struct emig *m);
json_object *emig_json(const struct emig *m);
struct emig *emig_from(json_object *o);

/* ---- test seams: exported for tests/ only, not to be called by kvcon itself (tests/check-exports.sh) ---- */
/* What a failed live migration says (aborted: by request, or abort_why such as a --timeout; err: libvirt's). */
char *migrate_failure_text(bool aborted, const char *abort_why, const char *err);
/* A VMI's migrationState as KubeVirt writes it (plus the engine's job figures), for `engine get -o json`. */
json_object *migrate_state_json(const struct migration_state *m);

#endif
