/* What the pieces of the engine share (src/engine/ only; engine.h is the engine's API): a host's and a
 * request's state, the one set of open hosts, and each piece's functions for the others. Loop thread only.
 *   engine.c      open/close, the provider, consoles, VNC and port forwards, services for migrate.c
 *   (settings: directories, the config's engine.* keys, engine.host lines: service/settings.h, shared with kvcon)
 *   record.c      the records on disk (record.h)
 *   epublish.c    engine state -> store objects (VM, VMI, launcher pod, events)
 *   epull.c       containerDisk pulls and the image cache
 *   ereconcile.c  executions, the run-strategy reconciler, what the host workers report
 *   eactions.c    lifecycle actions, their waiters, engine_apply */
#ifndef KVCON_ENGINE_ENGINE_INT_H
#define KVCON_ENGINE_ENGINE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/hmap.h"
#include "engine/embed.h"
#include "engine/engine.h"
#include "engine/evm.h"
#include "engine/host.h"
#include "model/source.h"

#define RESYNC_MS 10000
#define AGENT_REFRESH_PASSES 3 /* the VMIs' guest agent status every third resync (30 s) */
#define RING_MAX (64 * 1024)
#define QUICK_FAILURE_S 60

enum preq_kind { PK_START, PK_STOP, PK_DESTROY, PK_PAUSE, PK_INSPECT, PK_WRITE, PK_UNDEFINE, PK_CONSOLE, PK_VNC,
		 PK_AGENT, PK_OTHER };

struct preq {
	int id;
	enum preq_kind kind;
	struct evm *v;
	engine_vnc_cb vnc_cb;
	engine_agent_cb agent_cb; /* PK_AGENT: the asker, or NULL for the VMI's status (agent_vm's execution agent_uid) */
	int agent_what;           /* enum gagent_what */
	char *agent_vm;           /* ns/name */
	char agent_uid[UID_LEN];
	void *arg;
	struct preq *next;
};

struct ehost {
	struct source *src;
	struct host *h;
	char *uri;
	bool up, synced, loaded;
	char *accel, *error;
	char *records_dir;
	int owner_fd;   /* the flock on the host's service.lock: one engine process per host (-1: none held) */
	char **bad;     /* unreadable records: "FILE: reason", kept on disk untouched, reported (engine_problems) */
	char **bad_uid; /* the VM row each one shows as */
	int nbad;
	struct embed_account acct; /* who QEMU runs as on an embedded root (acct.same otherwise) */
	struct hmap vms; /* ns/name -> evm */
	struct preq *reqs;
	/* its Node (enode.c): the owner's labels, taints and cordon (engine-data/nodes/NAME.json), and what it has */
	struct json_object *node_own;
	uint64_t mem_bytes;
	int cpus;
	/* the kvcon domains of the last sync (copies): where a domain moved behind kvcon's back is found */
	struct host_dom *seen;
	int nseen;
};

struct waiter {
	enum action act;
	action_done_cb done;
	void *arg;
	char old_uid[UID_LEN];
	struct waiter *next;
};

struct engine_console {
	struct loop_timer *backlog_timer;
	char *backlog;
	size_t backlog_len;
	struct evm *v;
	struct ehost *eh;
	char *key;
	engine_console_cb cb;
	void *arg;
	struct engine_console *next;
};

/* Every open host (engine_open) and the periodic resync. */
struct engine_g {
	struct store *st;
	struct ehost **hosts;
	int nhosts;
	struct loop_timer *resync;
};
extern struct engine_g engine_g;

/* engine.c */
bool exec_active(const struct exec *x);
struct evm *ehost_find_dom(struct ehost *eh, const char *dom);
char *ehost_own(struct ehost *eh, const char *dd, const char *hk);
int evm_send(struct evm *v, enum host_req_type type, enum preq_kind kind);
void ehost_set_health(struct ehost *eh, enum watch_state st, const char *msg);
void exec_set_phase(struct exec *x, const char *phase);
bool evm_strategy_is(const struct evm *v, const char *s);
struct preq *ehost_track(struct ehost *eh, int id, enum preq_kind kind, struct evm *v);
int64_t engine_wall_ms(void);
/* engine.c: the guest agent. eagent_status_refresh asks for what the VMI's status shows (guestOSInfo); eagent_reply
 * takes HM_AGENT_REPLY's answers (or a failure) to the asker or into the status, and frees p. */
void eagent_status_refresh(struct evm *v);
/* Sends guest agent commands (JSON texts) to v's execution; cb gets a JSON array of their answers (the whole
 * {"return": ...} texts, null for one that failed) and the error of the first. 0, or -1 when the host is closed. */
int eagent_send_raw(struct evm *v, char *const *cmds, int n, engine_agent_cb cb, void *arg);
/* ecreds.c: Secrets at start (cloud-init's secretRef and networkDataSecretRef, Secret and ConfigMap volumes,
 * accessCredentials with noCloud) and accessCredentials through the guest agent. ecreds_missing: what a start
 * waits for (kubelet's FailedMount message, caller frees), or NULL; ecreds_resolve fills v->m's volumes for one
 * build (0, or -1 with *err), ecreds_release clears them after it; ecreds_sync propagates the credentials of a
 * running execution whose agent is connected when their Secrets changed. */
char *ecreds_missing(const struct evm *v);
int ecreds_resolve(struct evm *v, char **err);
void ecreds_release(struct evm *v);
void ecreds_sync(struct evm *v);
void eagent_reply(struct preq *p, const char *data, size_t len, const char *err);

/* epublish.c */
struct pod;
struct evm_event;
void epublish_event_obj(struct evm *v, const struct evm_event *e);
void epublish_remove_exec(struct evm *v, const struct exec *x);
__attribute__((format(printf, 5, 6))) void evm_add_event(struct evm *v, const char *type, const char *reason,
							 bool on_vmi, const char *fmt, ...);
void evm_sched_event(struct evm *v, const char *msg);
void epublish_unscheduled_remove(struct evm *v);
void epublish_bad(struct ehost *eh, const char *file, const char *why, const char *uid, const struct host_dom *d);

/* epull.c */
bool epull_local_image(const char *imgs, const char *ref);
void epull_containers(const struct evm *v, struct pod *p);
void epull_cancel(const struct evm *v);
bool epull_reason(const char *how);
bool epull_begin(struct evm *v);
void epull_sweep(void);
/* After an apply replaced old (NULL: a create) by new_ (NULL: old was deleted): a sweep when old used an image
 * new_ does not, or when one is due (the first change since the start; a pull ran during the last sweep). A create,
 * or the delete of a VM without a containerDisk, sweeps nothing otherwise: a walk of every VM's volumes was 60% of a
 * create beside 100,000 VMs. */
void epull_sweep_after(const struct manifest *old, const struct manifest *new_);

/* ereconcile.c */
struct mf_iface;
void evm_console_deliver(struct evm *v, const char *data, size_t len);
void evm_end_exec(struct evm *v, bool failed, const char *how, const char *message);
void evm_issue_stop(struct evm *v);
void evm_stop_intent(struct evm *v, int grace);
void ereconcile_on_msg(void *arg, struct host_msg *m);
const struct mf_iface *evm_pod_iface(const struct evm *v);
void ereconcile(struct evm *v);
/* volumes.c: the printableStatus a start of v waits with for a claim (interned), or NULL: it may go ahead */
const char *evol_waiting(const struct evm *v, bool start);
void ereconcile_resync_fire(void *arg);
void evm_start_build(struct evm *v);
bool evm_want_running(const struct evm *v);

/* enode.c: the host's Node. enode_load reads the owner's part once the host has its name; enode_place is the
 * scheduler's choice of the host a start of v goes to (*to), among the set's connected hosts (v's own alone when
 * v->pinned), or NULL in *to and the scheduler's message when none admits it now (caller frees). */
void enode_load(struct ehost *eh);
char *enode_place(const struct evm *v, struct ehost **to);

/* eactions.c */
void eactions_check_waiters(struct evm *v);
void eactions_complete(struct waiter *w, int status, const char *msg);
int eactions_action(struct source *src, const struct action_req *req, action_done_cb done, void *arg, char **err);

#endif
