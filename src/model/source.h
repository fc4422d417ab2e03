/* Sources and providers: where objects come from (a kubeconfig context, or an engine host) and how actions,
 * consoles and raw fetches reach them. kube/ and engine/ implement struct provider_ops; the UI and the CLI only
 * ever go through it. */
#ifndef KVCON_MODEL_SOURCE_H
#define KVCON_MODEL_SOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/obj.h"

struct stream; /* core/stream.h */
struct json_object;

enum source_type { SOURCE_KUBE, SOURCE_ENGINE };

enum watch_state {
	WATCH_IDLE,         /* not started */
	WATCH_LOADING,      /* listing (pages arriving) */
	WATCH_LIVE,         /* watching */
	WATCH_RECONNECTING, /* backing off; next_retry_ms says when */
	WATCH_FORBIDDEN,    /* 403 */
	WATCH_ERROR,        /* other failure; message says which */
};

struct watch_health {
	enum watch_state state;
	uint64_t next_retry_ms; /* monotonic, when RECONNECTING */
	size_t loaded;          /* objects received by the current list */
	char *message;          /* owned; the API's Status message or a transport error */
	enum watch_state failed; /* the last failure (RECONNECTING, FORBIDDEN, ERROR) since the kind was last LIVE,
				  * else IDLE: while it lists again (LOADING) its message is kept, so that an empty
				  * list can say the source is unreachable or forbidden rather than loading */
};

enum action {
	ACT_START,
	ACT_STOP,
	ACT_FORCE_STOP,
	ACT_RESTART,
	ACT_PAUSE,
	ACT_UNPAUSE,
	ACT_MIGRATE,
	ACT_MIGRATE_ABORT,
	ACT_DELETE,
	ACT_SOFT_REBOOT,  /* the guest reboots (agent, else ACPI); the VMI stays */
	ACT_COUNT
};

struct action_req {
	enum action act;
	const char *ns;
	const char *name;
	int grace_period;       /* -1: the server's default */
	const char *target;     /* migrate: target node/host, NULL: any */
	uint32_t flags;         /* ACTION_DELETE_VOLUMES, or provider-specific (engine migration options) */
	const char *uid;        /* migrate: the migrationUid to use (the engine's; NULL: a new one) */
	const char *mig_uri;    /* migrate: the target's URI as the source host reaches it (engine; NULL: config) */
	int timeout;            /* migrate: abort when not done within this many s (engine; 0: none) */
	unsigned long bandwidth; /* migrate: MiB/s (engine; 0: unlimited) */
};

/* action_req.flags with ACT_DELETE: the VM's volumes go too (an engine VM's disks; the engine service takes it as
 * the query parameter deleteVolumes=true, an extension of the API: docs/ENGINE-SERVICE.md). */
#define ACTION_DELETE_VOLUMES 0x1u

/* Flags for struct action_req.flags with ACT_MIGRATE, the engine's options (the UI's `m` passes none: live,
 * unlimited). Through the engine service they travel as kvcon.io/ annotations of the migration object. */
#define ENGINE_MIG_AUTO_CONVERGE 0x100u
#define ENGINE_MIG_POSTCOPY 0x200u
#define ENGINE_MIG_COPY_STORAGE 0x400u
#define ENGINE_MIG_OFFLINE 0x800u

/* status 0 on success; otherwise an HTTP status or -1, with the API's own message. */
typedef void (*action_done_cb)(void *arg, int status, const char *message);
typedef void (*fetch_done_cb)(void *arg, int status, const char *body, size_t len);
/* status 0: names[0..n) (valid only during the call); otherwise the API's message. */
typedef void (*names_done_cb)(void *arg, int status, const char *const *names, size_t n, const char *message);

struct source;

/* A container log request (kubectl logs' options). The cluster reads pods/log; the engine reads the files of
 * an execution: container "compute" is QEMU's log (what the launcher's compute container shows on a
 * cluster), "serial" the guest's serial log. */
struct log_req {
	const char *ns;
	const char *pod;        /* the launcher pod (cluster) */
	const char *vm;         /* the VM/VMI the pod runs, when known (the engine finds its files by it) */
	const char *container;  /* NULL: the server's default (a pod of one container) */
	bool follow;            /* stream new lines until the container instance ends */
	bool previous;          /* the previous (terminated) instance */
	bool timestamps;
	long tail_lines;        /* -1: all */
	long since_s;           /* 0: all */
};
/* Log bytes as they arrive, raw (the reader escapes them); return false to stop (end is then not called). */
typedef bool (*log_data_cb)(void *arg, const char *data, size_t len);
/* The end: status 0 when the log ended (a follow whose container instance ended), otherwise an HTTP status
 * or -1 with the API's message. Called once, on the loop thread; the handle is invalid afterwards. */
typedef void (*log_end_cb)(void *arg, int status, const char *message);
struct log_stream;

struct provider_ops {
	const char *type; /* "kube", "engine" */
	/* Asynchronous: done is called later on the loop thread (never before this returns). Returns 0 when
	 * the request was sent, -1 when refused at once (done is not called; *err set, caller frees). */
	int (*action)(struct source *src, const struct action_req *req, action_done_cb done, void *arg, char **err);
	/* Opens the guest's serial console / VNC display as a byte stream; NULL with *err (caller frees). */
	struct stream *(*open_console)(struct source *src, const char *ns, const char *name, char **err);
	struct stream *(*open_vnc)(struct source *src, const char *ns, const char *name, char **err);
	/* One connection to a guest port through the portforward subresource of the VM or VMI (kind an enum
	 * kind_id of model/registry.h: KIND_VM or KIND_VMI), udp or tcp; NULL with *err. NULL op: not offered. */
	struct stream *(*open_portforward)(struct source *src, int kind, const char *ns, const char *name, int port,
					   bool udp, char **err);
	/* Fetches the object's full representation (JSON or YAML text) for the YAML view. */
	int (*fetch_raw)(struct source *src, enum obj_kind kind, const char *ns, const char *name, fetch_done_cb done,
			 void *arg, char **err);
	/* Lists the namespaces the provider knows, including empty ones (a kube context's Namespace objects).
	 * NULL when the provider has none beyond its objects' own. Asynchronous like action; a source that is
	 * destroyed first never calls done. */
	int (*list_namespaces)(struct source *src, names_done_cb done, void *arg, char **err);
	/* Opens a container log: data arrives through data (never before this returns), then end. NULL with
	 * *err (caller frees) when refused at once. */
	struct log_stream *(*open_log)(struct source *src, const struct log_req *req, log_data_cb data,
				       log_end_cb end, void *arg, char **err);
	/* Stops a log before its end (no callback follows). Not from inside its own callbacks. NULL is ignored. */
	void (*close_log)(struct log_stream *ls);
	/* The VM's storage chain as a JSON array (kube/storage.h's shape), for a provider that answers it from
	 * its own records (the engine); NULL: the cluster's API objects are read instead. */
	struct json_object *(*storage_json)(struct source *src, const char *ns, const char *name);
	void (*destroy)(struct source *src);
};

struct source {
	int id;                    /* index in the registry, also the store's table */
	enum source_type type;
	char *name;                /* context name or engine host name */
	char *server;              /* cluster URL or libvirt URI */
	char *user;                /* kubeconfig user (never a token) */
	char *version;             /* KubeVirt version, or libvirt/QEMU version */
	char *ns_scope;            /* namespace watched, NULL for all namespaces */
	bool ns_narrowed;          /* all namespaces were asked for; the server allowed only ns_scope */
	char *notice;              /* one-line notice for the header (403 fallback, TCG fallback), owned */
	bool readonly;
	bool engine;               /* an engine: the service's API (a kube source on its socket) or, in the service,
				    * an engine host: said as "engine HOST", its VMs acted on with kvcon's verbs */
	char *engine_uris;         /* engine service (client side): the libvirt URIs it serves, one a line, as -c
				    * names them (the commands kvcon suggests reach the same service); owned */
	bool closed;               /* retired by source_close (context switch): no objects, not shown */
	struct watch_health health[OBJ_KIND_COUNT];
	const struct provider_ops *ops;
	void *priv;                /* the provider's own state */
};

/* The registry of sources (UI thread only). */
struct source *source_new(enum source_type type, const char *name);
size_t source_count(void);
struct source *source_get(size_t i);
struct source *source_find(const char *name);
void source_set_notice(struct source *src, const char *notice);
void source_set_health(struct source *src, enum obj_kind kind, enum watch_state state, const char *message);
/* Called after every source_set_health (a provider reports progress: e.g. a list page applied). The dashboard
 * paints its first rows from here, without waiting for the rest of the loop pass. NULL: none. */
void source_set_health_hook(void (*hook)(struct source *src, enum obj_kind kind));
/* Retires a source (calls ops->destroy, sets closed). Its id stays reserved: the store indexes tables by id.
 * The caller clears its objects from the store first. */
void source_close(struct source *src);
/* Destroys every source (calls ops->destroy). */
void source_free_all(void);

const char *watch_state_name(enum watch_state s);

#endif
