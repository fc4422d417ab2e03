/* The engine's own state of one VM (loop thread only): the stored manifest, its run strategy as changed by
 * start/stop, the current execution (the engine's VMI, whose launcher is the QEMU process), the past
 * executions and the engine's events. record.c turns it into the JSON record kept under the state dir. */
#ifndef KVCON_ENGINE_EVM_H
#define KVCON_ENGINE_EVM_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/manifest.h"
#include "model/obj.h"

#define EVM_MAX_PHASES 8
#define EVM_MAX_HISTORY 20
#define EVM_MAX_EVENTS 40
#define EVM_PAUSE 1
#define EVM_UNPAUSE 2

struct exec {
	char uid[UID_LEN];       /* the VMI UID: new at every start, kept by migration */
	char launcher[UID_LEN];  /* the launcher (QEMU process) UID: new at every start and migration */
	const char *phase;       /* Pending, Scheduled, Running, Succeeded, Failed (interned) */
	struct phase_time phases[EVM_MAX_PHASES];
	int nphases;
	char *node;
	int pid;
	int64_t created, started, ended;
	char *cmdline, *log_path, *serial_log, *run_dir;
	char *how;               /* how it ended: Stopped, ShutdownByGuest, Crashed, FailedCreate, ... */
	char *message;
	char *images;            /* pulled containerDisks: "VOLUME IMAGE IMAGEID" lines (IMAGEID repo@sha256:...) */
	char *net;               /* the pod network: "ip IFACE ADDRESS" and
				  * "port IFACE NAME|- TCP|UDP GUESTPORT HOSTPORT" (on 127.0.0.1) lines */
	char *pull_msg;          /* runtime: the pull's progress while the execution waits for its images */
	uint64_t generation;     /* the VM generation it runs */
	char *manifest;          /* the VM's manifest when this execution was created: its VMI's spec */
	bool paused, agent, stop_by_us, tcg;
	char *guest_os, *agent_version; /* runtime: the guest agent's guest-get-osinfo (pretty name) and version */
	char *agent_ifs;                /* runtime: the guest agent's "IFNAME ADDRESS" lines */
	/* runtime: accessCredentials through the guest agent (ecreds.c): what was last propagated ("k USER KEY" and
	 * "p USER HASH" lines), the AccessCredentialsSynchronized condition (0 none yet, 1 True, -1 False with
	 * creds_msg), a propagation under way */
	char *creds_done, *creds_msg;
	int creds;
	bool creds_busy;
	struct emig *mig;        /* migrationState (migrate.h), NULL when never migrated */
};

struct evm_event {
	char uid[UID_LEN];
	const char *type, *reason;  /* interned */
	char *message;
	bool on_vmi;                /* involved object: the VMI (else the VM) */
	bool on_pod;                /* involved object: the launcher pod inv_uid (FailedScheduling, FailedMount) */
	char inv_uid[UID_LEN];
	int64_t first, last;
	int count;
};

struct evm_past {
	char uid[UID_LEN], launcher[UID_LEN];
	char *node, *how;
	int64_t started, ended;
};

struct ehost;
struct loop_timer;
struct engine_console;
struct waiter;

struct evm {
	struct ehost *eh;
	char *key;                  /* ns/name */
	char *text;                 /* manifest as applied */
	struct manifest *m;
	char uid[UID_LEN];
	uint64_t generation;
	int64_t created;
	char *run_strategy;         /* live value (virtctl start/stop patch it) */
	bool req_start, req_stop;   /* KubeVirt's stateChangeRequests for Manual / RerunOnFailure */
	int failures;               /* consecutive quick failures (crash loop backoff) */
	int64_t retry_after;        /* epoch s; 0 none */
	char *start_error;          /* last start failure, for printableStatus */
	const char *vol_wait;       /* interned: the printableStatus of a start waiting for a claim (volumes.c) */
	/* accepted requests not yet carried out, stored before the engine acts on them (docs/ENGINE-SERVICE.md,
	 * "Durable intent") and resumed when another process loads the record */
	bool restart, deleting, delete_volumes;
	bool stopping;              /* a stop (or the stop of a restart or delete) is under way */
	int64_t stop_deadline;      /* epoch ms: power off when the guest has not stopped by then */
	int pause_req;              /* EVM_PAUSE or EVM_UNPAUSE asked, not yet seen done; 0 none */
	/* an offline migration under way: the target host's name and records directory, stored in the source's
	 * record before the record moves (evm_move_offline); a loaded record with them finishes the move */
	char *moving_to, *moving_dir;
	/* applied through one host of an engine set (kvcon -c HOST beside the set's service): its executions start on
	 * the host its record is on, not where the scheduler would place them */
	bool pinned;
	struct exec *cur;
	struct evm_past *past;
	int npast;
	struct evm_event *events;
	int nevents;
	/* runtime only */
	int inflight;               /* requests on the worker about this VM */
	bool stop_unsent;           /* the stop intent's shutdown/destroy is not sent yet (a loaded record) */
	bool undefining;            /* a delete's undefine is on the worker: the record goes when it is done */
	int64_t away_until;         /* migrated away behind kvcon's back: wait (epoch s) for a host to report it */
	bool forget_me;             /* gone with its record (another kvcon process moved it): dropped at the sync */
	/* a start that waits, its VMI Scheduling and launcher pod Pending: the node does not admit it (enode.c; the
	 * scheduler's message, the pod unscheduled) or, sched_mount, a Secret or ConfigMap it names does not exist
	 * (ecreds.c; kubelet's FailedMount, the pod on the node, ContainerCreating). The UIDs of the VMI and pod that
	 * wait are the execution's when the obstacle goes */
	char *sched_msg;
	bool sched_mount;
	char sched_uid[UID_LEN], sched_launcher[UID_LEN];
	int64_t sched_since;
	struct loop_timer *grace_timer, *retry_timer;
	struct waiter *waiters;
	char *ring;                 /* the console's recent bytes */
	size_t ring_len;
	struct engine_console *consoles;
};

struct exec *exec_new(void);
void exec_free(struct exec *x);
void evm_free(struct evm *v);

/* engine.c's services for migrate.c (loop thread). */
struct source;
struct store;
struct host;
struct ehost *ehost_of_source(const struct source *src);
struct ehost **ehost_all(int *n);
/* The host's VMs (caller frees the array). */
struct evm **ehost_vms(struct ehost *eh, int *n);
struct source *ehost_source(const struct ehost *eh);
const char *ehost_uri(const struct ehost *eh);
bool ehost_ready(const struct ehost *eh);
/* enode.c: the scheduler's message when v may not run on eh now (cordon, taints, selectors, resources, pod
 * anti-affinity), else NULL; caller frees. */
char *enode_unschedulable_on(const struct evm *v, struct ehost *eh);
struct store *evm_store(void);
struct evm *evm_find(struct source *src, const char *ns, const char *name);
bool evm_active(const struct evm *v);
char *evm_dom_name(const struct evm *v);
void evm_publish(struct evm *v);
void evm_persist(struct evm *v);
/* The same for an accepted request: 0, or -1 with *err (caller frees) when the record could not be stored. */
int evm_persist_err(struct evm *v, char **err);
void evm_event(struct evm *v, const char *type, const char *reason, const char *msg);
void evm_inspect(struct evm *v);
/* Moves v (record, store objects, consoles) to host dst; the execution keeps its UID. */
void evm_move(struct evm *v, struct ehost *dst);
/* The same for a stopped VM (offline migration), durably: the intent (target host and its records directory) is
 * stored and fsync'd in the source's record first, then the record is written on the target and the source's
 * removed; a process killed in between finds the intent when it loads the source's records and finishes the
 * move (exactly one record, on the target). 0, or -1 with *err (caller frees) when the intent could not be
 * stored (nothing moved). */
int evm_move_offline(struct evm *v, struct ehost *dst, char **err);

#endif
