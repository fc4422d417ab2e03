/* kvcon's local engine: runs KubeVirt VirtualMachine manifests on libvirt hosts, with KubeVirt's run
 * strategies, and feeds the store with the same objects a cluster would (VM, VMI = one execution, launcher pod
 * = the QEMU process, events). One source per host. Everything here runs on the loop thread; libvirt runs on
 * the engine's own threads (host.h). */
#ifndef KVCON_ENGINE_ENGINE_H
#define KVCON_ENGINE_ENGINE_H

#include <stdbool.h>
#include <stddef.h>

#include "model/store.h"
#include "service/settings.h" /* engine_setting, engine_has_record */

/* Opens a host (uri NULL: $KVCON_ENGINE_URI, else $LIBVIRT_DEFAULT_URI, else the embedded driver under
 * $XDG_STATE_HOME/kvcon/engine). Returns its source at once; it connects in the background
 * (source health says how far). NULL with *err (caller frees) when the URI is refused. */
struct source *engine_open(struct store *st, const char *uri, char **err);
/* What keeps this machine from opening uri (NULL: the default, as engine_open) as one line with its fix, or NULL.
 * Caller frees. Local checks are instant; a remote host's port is tried for up to 3 s. */
char *engine_check(const char *uri);
/* The source's host has connected and finished its first resync. */
bool engine_ready(const struct source *src);
/* The connection's last error when it is not connected (NULL otherwise). */
const char *engine_error(const struct source *src);
/* The same as one line for a status (with the domains left running), or NULL when every record reads. */
const char *engine_problems(const struct source *src);
/* No request in flight, no pending stop/restart/delete, every record written. */
bool engine_idle(void);
/* Why the engine must keep running (the engine service's idle exit, docs/ENGINE-SERVICE.md): a host not
 * connected, a request in flight or pending (stop with its grace period, restart, delete, pause, migration, the
 * image pull of a start), a running execution (its QEMU's death is reaped and, per run strategy, restarted), or
 * a VM the reconciler still has to start (Always, RerunOnFailure after a failure, a retry after a crash loop).
 * NULL when nothing needs reconciling. Caller frees. */
char *engine_needs_reconciler(void);
/* Stops every host's worker after its queued writes (call before exit). */
void engine_close_all(void);

/* Validates and stores a manifest (YAML or JSON) on the host of src, then reconciles. *result says
 * "created", "configured" or "unchanged". 0, or -1 with *err ("field.path: reason"). */
int engine_apply(struct source *src, const char *text, size_t len, char **result, char **err);
/* The same, saying where its executions may run: pin, on src's host alone (applied through that one host of an
 * engine set, `kvcon -c HOST`); else where the scheduler places each start among the set's hosts. */
int engine_apply_on(struct source *src, const char *text, size_t len, bool pin, char **result, char **err);

/* Extra flag for struct action_req.flags with ACT_DELETE: also delete the VM's volumes. */
#define ENGINE_DELETE_VOLUMES ACTION_DELETE_VOLUMES

/* The serial console of an engine VM, shared by every viewer: the bytes of the running execution since the
 * engine attached (a backlog of recent bytes first), then live bytes. cb gets len 0 when the console closes
 * (the execution ended); the subscription stays and follows the next execution. */
struct engine_console;
typedef void (*engine_console_cb)(void *arg, const char *data, size_t len);
struct engine_console *engine_console_open(struct source *src, const char *ns, const char *name,
					   engine_console_cb cb, void *arg, char **err);
void engine_console_write(struct engine_console *c, const char *data, size_t len);
void engine_console_close(struct engine_console *c);

/* The VM's VNC display as a connected socket (fd), via libvirt; cb runs once on the loop thread. */
typedef void (*engine_vnc_cb)(void *arg, int fd, const char *err);
int engine_vnc_open(struct source *src, const char *ns, const char *name, engine_vnc_cb cb, void *arg,
		    char **err);

/* A connection to TCP port of the VM's guest (udp: a UDP socket connected to the rule's port, a datagram each), as virt-handler dials it inside the pod: a hostfwd rule QEMU adds on
 * the pod network's (first masquerade) interface from a free 127.0.0.1 port (*host_port), declared in the
 * interface's ports or not, and connected through; cb(arg, fd, err) once on the loop thread. A guest port where
 * nothing listens accepts and closes at once (user-mode networking's answer). engine_portforward_drop removes
 * the rule when the stream ends. 0, or -1 with *err. */
int engine_portforward_open(struct source *src, const char *ns, const char *name, int port, bool udp,
			    engine_vnc_cb cb, void *arg, int *host_port, char **err);
void engine_portforward_drop(struct source *src, const char *ns, const char *name, int host_port, bool udp);

/* The guest agent's answer about the VMI's guest (what: engine/gagent.h's enum gagent_what, from the
 * subresource) as virt-api's JSON, read through libvirt from qemu-guest-agent: cb(arg, answer, NULL) or
 * cb(arg, NULL, err) once on the loop thread (answer: a reference the callback may keep). 0, or -1 with *err and
 * *code (404: no such running VMI, 409: no agent connected, virt-api's answer). */
struct json_object;
/* A Secret or ConfigMap of the engine service changed (apiserver/secrets.c): starts that waited for one go on,
 * running VMs' accessCredentials through the guest agent follow (engine/esecret.h). */
void engine_secrets_changed(void);

typedef void (*engine_agent_cb)(void *arg, struct json_object *answer, const char *err);
int engine_agent_query(struct source *src, const char *ns, const char *name, int what, engine_agent_cb cb, void *arg,
		       int *code, char **err);

/* The VM exists and its current execution is active (Pending, Scheduled or Running). */
bool engine_running(struct source *src, const char *ns, const char *name);

/* The image cache's directory ($XDG_STATE_HOME/kvcon/engine-data/imgcache). Caller frees. */
char *engine_image_cache(void);

/* The path of the current execution's serial log (the guest's bytes as QEMU wrote them), or NULL. */
const char *engine_serial_log(struct source *src, const char *ns, const char *name);

/* A host's Node as the engine places on it (enode.c): {metadata: {name, labels}, spec: {taints, unschedulable},
 * status: {capacity, allocatable}}: the labels a node has (kubernetes.io/hostname, os, arch,
 * kubevirt.io/schedulable) unless its owner changed them. A new reference (caller puts), NULL for no such host. */
struct json_object *engine_node_obj(const struct source *src);
/* Sets the owner's part of the Node (labels: an object of strings; taints: an array, or NULL; unschedulable),
 * stored on disk first ($XDG_STATE_HOME/kvcon/engine-data/nodes/NAME.json: temporary file, fsync, rename), then
 * the host's VMs reconciled against it (a start that waited may go ahead). 0, or -1 with *err (caller frees). */
int engine_node_set(struct source *src, struct json_object *labels, struct json_object *taints, bool unschedulable,
		    char **err);

/* Deletes the pod of a launcher a live migration left behind (a completed source: the Eviction API, kubectl
 * drain): it is no longer served, the execution's history keeps it. 0, or -1 when ns/name has no such launcher. */
int engine_delete_launcher(struct source *src, const char *ns, const char *name, const char *pod_uid);

/* Who this process is, written into each host's service.lock when it takes it (one engine process per host:
 * a second one for the same host is refused, naming the holder; label NULL: "no socket"), with the socket it
 * serves on (NULL: none), the host's URI and its name: how `kvcon -c URI` finds the service of a set that holds
 * URI (service/service.h). */
void engine_set_owner(const char *label, const char *socket);

#endif
