/* One libvirt host of the engine: a connection owned by its own worker thread, which executes requests in
 * order and reports back to the loop thread with loop_post. libvirt's event loop runs on one shared thread
 * (the embedded driver needs it); domain lifecycle events and console bytes are forwarded from there.
 * No libvirt call is made on the loop (UI) thread. Reconnects with backoff when the connection closes. */
#ifndef KVCON_ENGINE_HOST_H
#define KVCON_ENGINE_HOST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/domxml.h"

#define HOST_UID_LEN 37

/* What the worker saw of one domain. */
struct host_dom {
	char *name;
	char uuid[HOST_UID_LEN];
	int state, reason;          /* virDomainState and its reason */
	int pid;                    /* QEMU pid when known (local hosts), else 0 */
	int64_t started;            /* QEMU start time (epoch s) when known */
	char *cmdline, *log_path;   /* when known */
	char vm[HOST_UID_LEN], vmi[HOST_UID_LEN], launcher[HOST_UID_LEN]; /* from kvcon's domain metadata */
};

enum host_msg_type {
	HM_UP,        /* connected: hostname, version, accel, note */
	HM_DOWN,      /* connection lost or failed: text; a retry follows */
	HM_SYNC,      /* every kvcon domain of the host: doms */
	HM_LIFECYCLE, /* dom, event, detail (virDomainEventType and detail) */
	HM_AGENT,     /* dom, event (1 connected, 0 not) */
	HM_DONE,      /* a request finished: req_id, status (0 ok), text, doms[0] when it inspected one */
	HM_CONSOLE,   /* dom, data/len; len 0 = the console closed */
	HM_VNC,       /* req_id, fd (-1 with text on failure) */
	HM_AGENT_REPLY, /* req_id; data/len: the answers of RQ_AGENT, each ended by a NUL (empty: that one failed);
			 * text when the first failed (libvirt's message) */
};

struct host_msg {
	enum host_msg_type type;
	struct host *h;
	char *text;
	char *dom;
	int event, detail;
	int req_id, status;
	struct host_dom *doms;
	int ndoms;
	char *data;
	size_t len;
	int fd;
	char *hostname, *version, *accel, *note;
	unsigned long long mem_kib; /* HM_UP: the host's memory (virNodeGetInfo), 0 unknown */
	int cpus;                   /* HM_UP: its CPUs, 0 unknown */
	int *ports; /* HM_DONE of RQ_START: the forwarded host ports in use, in the plan's order (nports) */
	int nports;
};

typedef void (*host_msg_cb)(void *arg, struct host_msg *m); /* m is freed after the callback */

enum host_req_type {
	RQ_SYNC,
	RQ_START,     /* plan: prepare files, define, start paused, attach console, resume */
	RQ_SHUTDOWN,  /* ACPI power button */
	RQ_DESTROY,
	RQ_SUSPEND,
	RQ_REBOOT,    /* the guest reboots: agent or ACPI, libvirt's default */
	RQ_RESUME,
	RQ_UNDEFINE,
	RQ_INSPECT,
	RQ_WRITE,     /* atomic file write: path, data, len */
	RQ_UNLINK,    /* path */
	RQ_RMTREE,    /* path (a directory kvcon made) */
	RQ_CONSOLE,   /* attach the console of dom (no-op when attached) */
	RQ_CONSOLE_SEND, /* data, len */
	RQ_VNC,       /* open the display: HM_VNC with an fd */
	RQ_PORTFWD,   /* data: HMP hostfwd_add; len: its 127.0.0.1 port, connected to: HM_VNC with the fd */
	RQ_PORTFWD_DROP, /* data: HMP hostfwd_remove */
	RQ_AGENT,     /* data: guest agent commands, each ended by a NUL, len bytes: HM_AGENT_REPLY */
};

struct host_req {
	enum host_req_type type;
	int id;
	char *dom;
	struct domxml_plan *plan;
	char *path;
	char *data;
	size_t len;
	bool udp; /* RQ_PORTFWD: a UDP socket connected to the rule's port */
};

struct host;

/* Starts the worker (it connects at once). accel: "kvm" or "tcg" forces the accelerator, NULL/"auto" probes.
 * qemu_user: engine.qemu-user for an embedded root (engine/embed.h), NULL for the default. */
struct host *host_new(const char *uri, const char *accel, const char *qemu_user, host_msg_cb cb, void *arg);
/* Drains queued requests, stops the worker and joins it. NULL is ignored. */
void host_free(struct host *h);
/* Queues a request (takes ownership of r and its strings). Returns its id. */
int host_request(struct host *h, struct host_req *r);
/* Convenience: a request of one type about dom. */
int host_simple(struct host *h, enum host_req_type type, const char *dom);

/* ---- test seams: exported for tests/ only, not to be called by kvcon itself (tests/check-exports.sh) ---- */
/* Whether KVM actually runs a guest here: kvcon's probe guest (engine/kvmprobe.h) runs to its end under
 * -accel kvm within its time budget. The verdict and its reason are cached for this boot (and this probe
 * version) in cache_file when not NULL; *why (caller frees) says what failed. */
bool host_kvm_works(const char *cache_file, char **why);
/* One pass of the embedded driver's QEMU reaper (a thread runs it every 20 ms once a host connects): waits for
 * the QEMU zombies among the main thread's children (the orphans a child subreaper adopts), never for a child of
 * another thread (libvirt's own, which it waits for). Allocation-free. */
void host_reap_qemu_zombies(void);

#endif
