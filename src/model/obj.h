/* Source-agnostic objects: VM, VMI, launcher pod and event, as compact structs holding only what kvcon shows.
 * Both providers (kube/ decoding API JSON, engine/ describing libvirt domains) produce these.
 * Strings of low cardinality (namespace, node, phase, reason, ...) are interned (core/intern.h) and never freed;
 * the others are owned by the object and freed by obj_free(). */
#ifndef KVCON_MODEL_OBJ_H
#define KVCON_MODEL_OBJ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct source;

enum obj_kind { OBJ_VM, OBJ_VMI, OBJ_POD, OBJ_EVENT, OBJ_KIND_COUNT };

#define UID_LEN 37 /* canonical UUID text plus NUL */

/* A condition's status: a byte, not a pointer (32 bytes a condition, not 40). */
enum cond_status { COND_UNSET, COND_TRUE, COND_FALSE, COND_UNKNOWN };

/* A condition is always read whole. type/reason interned; message owned. lastProbeTime is not kept (nothing shows
 * it). */
struct cond {
	const char *type;
	const char *reason;
	char *message;
	uint32_t last_transition; /* epoch seconds (32 bits hold them until 2106), 0 unknown */
	uint8_t stat;             /* enum cond_status: read with cond_status() */
};

/* Fields every object has, ordered so that nothing pads (104 bytes: tens of thousands are held). */
struct obj {
	struct source *src;
	const char *ns;   /* interned; "" for cluster-scoped */
	char *name;
	char *labels;     /* packed (obj.c), NULL when none: read with obj_label / obj_label_next */
	uint64_t generation;
	uint64_t rv;      /* resourceVersion when numeric (as etcd's are), else 0 */
	uint32_t created; /* creationTimestamp, epoch seconds (32 bits hold them until 2106): obj_epoch() */
	uint32_t deleted; /* deletionTimestamp when terminating, else 0 */
	/* store bookkeeping */
	uint32_t changed_ms; /* loop_now() when last changed, truncated (rows flash; compare by unsigned difference) */
	uint32_t slot;    /* position in the store's dense array */
	uint8_t kind;     /* enum obj_kind */
	uint8_t flags;    /* OBJ_F_* */
	char uid[UID_LEN];
};

/* Epoch seconds as the 32 bits objects keep them: clamped to [0, 2106]. */
static inline uint32_t obj_epoch(int64_t s)
{
	return s <= 0 ? 0 : s >= (int64_t)UINT32_MAX ? UINT32_MAX : (uint32_t)s;
}

#define OBJ_F_MARK 0x1u /* mark-and-sweep on relist */
#define OBJ_F_PACKED 0x2u /* obj_pack: every owned part lives in the object's one allocation */

struct state_change { /* VM status.stateChangeRequests[] */
	const char *action; /* Start, Stop */
	char uid[UID_LEN];
};

/* VM status.startFailure: rare, so out of the struct (vm_start_failure()). */
struct start_failure {
	int64_t retry_after; /* retryAfterTimestamp */
	int failures;        /* consecutiveFailCount */
	char vmi[UID_LEN];   /* lastFailedVMIUID */
};

/* The kinds' structs are ordered by alignment (pointers, 8-byte, 4-byte, bytes) so that nothing pads. */
struct vm {
	struct obj o;
	const char *run_strategy;     /* Always, RerunOnFailure, Once, Manual, Halted; spec.running mapped */
	const char *printable_status; /* 17 values, see KUBEVIRT.md */
	struct cond *conds;
	struct state_change *scr;
	char *instancetype;           /* spec.instancetype.name, owned */
	char *memory;                 /* template memory guest or requests, e.g. "256Mi", owned */
	struct start_failure *sf;     /* NULL without status.startFailure: read through vm_start_failure() */
	uint64_t desired_generation, observed_generation;
	int nconds;
	int nscr;
	int cpu_cores;                /* template domain.cpu.cores (for the engine and the detail view) */
	bool running_field;           /* spec.running was used (deprecated) */
	bool run_conflict;            /* both spec.running and spec.runStrategy set (the API rejects it) */
	bool ready;                   /* status.ready */
	bool created_vmi;             /* status.created */
};

struct phase_time {
	const char *phase;
	int64_t at;
};

struct migration_state {
	bool present;
	const char *source_node, *target_node; /* interned */
	char *source_pod, *target_pod;
	char migration_uid[UID_LEN];
	int64_t start, end;
	bool completed, failed, abort_requested;
	const char *abort_status; /* Succeeded, Failed, Aborting */
	const char *mode;         /* PreCopy, PostCopy, Paused */
	char *failure_reason;
	int progress_pct;         /* engine: from job stats; -1 unknown */
	uint64_t data_processed, data_remaining, dirty_rate; /* engine job stats, bytes and bytes/s */
	int iteration;                /* engine job stats: memory pass */
	int64_t downtime_ms;          /* engine: expected downtime while running, the real one once completed */
};

struct active_pod {
	char uid[UID_LEN];
	const char *node;
};

/* A guest port the engine forwards from the host (interfaces[].ports on the pod network); strings interned. */
struct port_fwd {
	const char *iface, *name, *proto; /* name NULL when unnamed; proto "TCP" or "UDP" */
	int port, host_port;              /* the guest's port; the host's, on 127.0.0.1 */
};

/* What kvcon's engine says of a VMI's network (KubeVirt's VMIs have none of it): out of the struct (vmi_net()). */
struct vmi_net {
	const char **ip_ifaces;    /* the interface of each of the VMI's ips (interned), or NULL */
	const char **ip_guest_ifs; /* the guest's interface name of each of ips the guest agent reports (interned; NULL
				    * entries), or NULL: interfaceName, infoSource "domain, guest-agent" */
	struct port_fwd *fwds;     /* forwarded ports */
	int nfwds;
};

struct vmi {
	struct obj o;
	const char *phase;           /* "" when unset */
	const char *reason;          /* status.reason (e.g. NodeUnresponsive), NULL when unset */
	const char *node;
	char *ip;                    /* status.interfaces[0].ipAddress */
	char **ips;                  /* every interface address (owned) */
	struct vmi_net *net;         /* engine: NULL when it says nothing of the network; read through vmi_net() */
	struct cond *conds;
	struct phase_time *phases;
	char *guest_os;              /* guestOSInfo.prettyName or name + version */
	char *agent_version;
	struct active_pod *active;
	struct migration_state *mig; /* NULL without status.migrationState: read through vmi_mig() */
	const char *eviction;        /* spec.evictionStrategy */
	int nips;
	int nconds;
	int nphases;
	int nactive;
	bool software_emulation;
	char vm_uid[UID_LEN];        /* ownerReferences kind VirtualMachine */
};

struct container_status {
	const char *name;
	const char *state;  /* waiting, running, terminated */
	const char *reason; /* ContainerCreating, CrashLoopBackOff, ErrImagePull, Completed, ... */
	char *message;
	const char *last_reason;  /* lastState.terminated.reason (why a CrashLoopBackOff container died) */
	const char *image, *image_id; /* interned: image as written, imageID (repo@sha256:...) once pulled */
	uint32_t started;         /* epoch seconds, 0 unknown */
	int restarts;
	int exit_code;
	int last_exit_code;
	int signal;               /* state.terminated.signal */
	uint32_t last_finished;   /* lastState.terminated.finishedAt: the last restart (kubectl's RESTARTS age) */
	bool ready;
	bool started_flag;        /* status "started" (a restartable init container counts once started) */
	bool restartable;         /* an init container whose spec says restartPolicy: Always (a sidecar) */
	bool init;                /* from initContainerStatuses */
};

struct pod {
	struct obj o;
	const char *owner_kind_other; /* when the controller owner is not a VMI: its kind (interned), else NULL */
	const char *vm_name;        /* label vm.kubevirt.io/name (deprecated; shown only) */
	const char *phase;
	const char *node;
	const char *reason;         /* pod status.reason (Evicted, ...) */
	char *message;
	struct cond *conds;         /* PodScheduled, Initialized, ContainersReady, Ready */
	struct container_status *containers;
	const char *spec_names;     /* spec.containers' names, each ending in '\n' (interned), NULL unknown */
	const char *spec_init_names; /* spec.initContainers' names, the same way */
	const char *default_container; /* annotation kubectl.kubernetes.io/default-container (interned), NULL none */
	char *ip;
	/* engine launcher: the QEMU process */
	char *cmdline;
	char *log_path;
	int pid;                    /* served as the annotation POD_QEMU_PID_ANNOTATION */
	int nconds;
	int ncontainers;
	int ready_containers;
	int spec_containers;        /* len(spec.containers): READY's denominator, as kubectl prints it */
	int spec_init_containers;   /* len(spec.initContainers): kubectl's Init:I/N */
	int restarts;
	char vmi_uid[UID_LEN];      /* ownerReferences kind VirtualMachineInstance (controller) */
};

/* The engine service's launcher pods: the QEMU's pid (decimal), an annotation (KubeVirt's pods have none). */
#define POD_QEMU_PID_ANNOTATION "kvcon.io/qemu-pid"

struct event {
	struct obj o;
	const char *type;        /* Normal, Warning */
	const char *reason;
	char *message;
	const char *inv_kind;    /* involvedObject */
	char *inv_name;
	const char *inv_ns;
	const char *component;   /* source.component / reportingController */
	int count;
	uint32_t first, last;    /* firstTimestamp/lastTimestamp (or eventTime / series), epoch seconds */
	char inv_uid[UID_LEN];
};

/* Allocation by kind, zeroed, o.kind set. */
struct obj *obj_new(enum obj_kind kind);
void obj_free(struct obj *o);
const char *obj_kind_name(enum obj_kind kind); /* "vm", "vmi", "pod", "event" */
const char *obj_kind_title(enum obj_kind kind); /* "VirtualMachine", ... */

/* A copy of o in one allocation (struct, strings and arrays together: no per-part malloc overhead or
 * fragmentation in a store of tens of thousands); o is left alone (its parts may live anywhere, e.g. in a
 * decoder's scratch memory). Packed objects are read-only: build a new one to change an owned part. */
struct obj *obj_pack_copy(const struct obj *o);
/* The same of o's identity alone (struct obj's fields: source, namespace, name, uid, times, resourceVersion; no
 * labels), its kind's own fields zero: what get -o name keeps of each of tens of thousands (a VM of the benchmark
 * 0.3 KiB instead of 0.4). */
struct obj *obj_pack_identity(const struct obj *o);

/* The VM's start failure, or a shared empty one (no failures) when it has none. */
const struct start_failure *vm_start_failure(const struct vm *v);
/* The VM's start failure to fill in, allocated on first use (not on packed objects). */
struct start_failure *vm_start_failure_set(struct vm *v);
/* The engine's view of the VMI's network, or a shared empty one (no interface names, no forwarded ports). */
const struct vmi_net *vmi_net(const struct vmi *v);
/* The VMI's network to fill in, allocated on first use (not on packed objects). */
struct vmi_net *vmi_net_set(struct vmi *v);
/* The VMI's migration state, or a shared empty one (present false, progress_pct -1) when it has none. */
const struct migration_state *vmi_mig(const struct vmi *v);
/* The VMI's migration state to fill in, allocated on first use (not on packed objects). */
struct migration_state *vmi_mig_set(struct vmi *v);
/* Labels: packs "k","v" pairs; lookup returns the value or NULL. */
void obj_label_add(struct obj *o, const char *k, const char *v);
const char *obj_label(const struct obj *o, const char *k);
/* A launcher pod's label kubevirt.io/created-by (the VMI it was made for) when it reads as a UID (letters, digits
 * and dashes, shorter than UID_LEN), else "". */
const char *pod_created_by(const struct pod *p);
/* Iteration: for (const char *it = NULL, *k, *v; obj_label_next(o, &it, &k, &v);) ... */
/* The packed labels of n pairs into dst (NULL: only measures); returns the bytes, terminator included. */
size_t obj_labels_encode(char *dst, const char *const *keys, const char *const *values, size_t n);
bool obj_label_next(const struct obj *o, const char **it, const char **key, const char **value);

/* Whether KubeVirt will (re)create a VMI for vm without being asked again: runStrategy Always, RerunOnFailure
 * while its last VMI did not succeed, or a Start request pending (the last of status.stateChangeRequests wins).
 * vmi: the VM's current VMI, NULL when none. A halted VM has nothing to wait for (kvcon console says so). */
bool vm_will_run(const struct vm *vm, const struct vmi *vmi);

/* Condition helpers. */
/* "True", "False", "Unknown", or NULL when unset. */
const char *cond_status(const struct cond *c);
/* The status of a status text: unset for NULL, Unknown for any other text than True or False (the API allows no
 * other). */
uint8_t cond_status_of(const char *s);
const struct cond *cond_find(const struct cond *conds, int n, const char *type);
bool cond_is_true(const struct cond *conds, int n, const char *type);

/* Approximate heap bytes held by an object (for the store's memory figures). */
size_t obj_heap_size(const struct obj *o);

#endif
