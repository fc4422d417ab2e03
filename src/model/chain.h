/* The execution chain of one VM: VM -> VMI (same namespace/name in the same source, owned by the VM's UID) ->
 * launcher pods (owned by the VMI's UID; pods that only carry the kubevirt.io/created-by label are kept apart as
 * owner mismatches) -> guest (AgentConnected, guest OS) -> the chain's events, merged and time-ordered.
 * Source-agnostic: engine objects join the same way. UI-agnostic: views, diagnose.c and the CLI read it.
 *
 * A chain borrows pointers into the store: it is valid until the next store change. Rebuild it when
 * store_version() of any kind moved. chain_build scans the source's pods and events (fine for one CLI call);
 * chain_build_ix uses an index kept by a store listener (for the UI; see BENCHMARKS.md for both). */
#ifndef KVCON_MODEL_CHAIN_H
#define KVCON_MODEL_CHAIN_H

#include <stdbool.h>
#include <stddef.h>

#include "model/obj.h"
#include "model/source.h"
#include "model/store.h"

struct chain_guest {
	bool agent_connected;      /* VMI condition AgentConnected is True */
	const struct cond *agent;  /* that condition, NULL when the VMI does not report it */
	const char *os;            /* guestOSInfo pretty name (owned by the VMI), NULL when unknown */
};

struct chain {
	struct source *src;
	const char *ns;               /* interned */
	char *name;                   /* owned */
	const struct vm *vm;          /* NULL when no such VM (a standalone VMI, or a deleted VM) */
	const struct vmi *vmi;        /* the VM's current execution, NULL when none */
	bool vmi_unowned;             /* vmi has no VirtualMachine owner reference (standalone or orphaned) */
	const struct vmi *vmi_foreign; /* a VMI of the same name owned by another VM UID (not this VM's) */

	/* Launcher pods owned by the VMI (controller owner UID == VMI UID), newest first. During a migration there
	 * are two (source and target). */
	const struct pod **pods;
	size_t npods;
	const struct pod *active;     /* the pod the VMI runs in now (activePods / node / newest), or NULL */
	/* Pods labelled kubevirt.io/created-by=<VMI UID> but not owned by the VMI: owner mismatch. */
	const struct pod **stray;
	size_t nstray;

	struct chain_guest guest;

	/* Events whose involvedObject is the VM, the VMI or one of the pods above (by UID; by kind/namespace/name
	 * when the event has no UID), ordered by last time seen, oldest first. */
	const struct event **events;
	size_t nevents;
};

/* Builds the chain of ns/name in src. Returns NULL only when neither a VM nor a VMI of that name exists.
 * Free with chain_free. Uses the store's chain_index when one exists (chain_index_new), else scans. */
struct chain *chain_build(const struct store *st, struct source *src, const char *ns, const char *name);
void chain_free(struct chain *c);

/* An index of launcher pods by owner and created-by UID and of events by involved object, kept current by a
 * store listener, so a chain is built without scanning the store (the dashboard rebuilds the chain of the VM on
 * screen on every store change). Create it once per store (it indexes what the store already holds); free it
 * before the store. */
struct chain_index;
struct chain_index *chain_index_new(struct store *st);
void chain_index_free(struct chain_index *ix); /* before store_free; NULL is ignored */

/* Parses "NS/NAME" (or "NAME" with default_ns) into newly allocated parts; -1 when malformed. */
int chain_parse_ref(const char *ref, const char *default_ns, char **ns, char **name);

/* The pod a log of ns/name is read from (kvcon logs, the log pane): the current launcher of the VM or VMI of
 * that name, else the pod of that name; *vm_name the VM it runs (NULL for other pods). NULL with *why (caller
 * frees) when there is none, saying why ("no VMI: the VM is not running"). */
const struct pod *chain_log_pod(const struct store *st, struct source *src, const char *ns, const char *name,
				const char **vm_name, char **why);
/* The pod's containers' names (interned, spec order; the statuses' when the spec's are unknown): at most max. */
int pod_container_names(const struct pod *p, const char **out, int max);
/* kubectl's container for logs: the kubectl.kubernetes.io/default-container annotation when it names a container
 * of the pod (KubeVirt's launchers: compute), else the first; NULL when none is known. *note (caller frees; NULL
 * when there is nothing to say) gets what kubectl says on stderr then: "Defaulted container "c" out of: a, b" or
 * "Default container name "x" not found in pod P". note may be NULL. */
const char *pod_default_container(const struct pod *p, char **note);

/* ---- test seams: exported for tests/ only, not to be called by kvcon itself (tests/check-exports.sh) ---- */
/* chain_build through the index: the same chain, in time proportional to the chain's own size. */
struct chain *chain_build_ix(const struct chain_index *ix, struct source *src, const char *ns, const char *name);

#endif
