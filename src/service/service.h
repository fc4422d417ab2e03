/* The engine service (`kvcon engine serve`, docs/ENGINE-SERVICE.md) as its clients see it: where the service of an
 * engine root listens by default, so that every kvcon process on that root finds it (one unix socket per root),
 * the executable that runs it (kvcon-engine, beside kvcon), and starting it on demand. Nothing here opens the
 * engine: kvcon links none of its libraries. */
#ifndef KVCON_SERVICE_SERVICE_H
#define KVCON_SERVICE_SERVICE_H

#include <stdbool.h>

/* $XDG_RUNTIME_DIR/kvcon/engine-HASH.sock (else the state directory's), HASH = FNV-1a of the state directory and
 * the engine URIs (uris[0..n), or the default as engine_open resolves it when n is 0); when that path is too long
 * for a unix socket, the same name in a short private directory (/run/kvcon-0 for root, $XDG_RUNTIME_DIR/kvcon,
 * else /tmp/kvcon-UID, used only when it is ours and writable by nobody else). Caller frees. */
char *engine_service_socket(char *const *uris, int n);
/* The engine URIs a service of uris[0..n) serves, one a line: uris, or the default as engine_open resolves it when
 * n is 0 (what `kvcon -c URI` names to reach the same service). Caller frees. */
char *engine_service_uris(char *const *uris, int n);

/* How kvcon reaches a root's service ($KVCON_ENGINE_SERVICE, else the config's engine.service); kvcon reaches the
 * engine only through it (docs/ENGINE-SERVICE.md). "use" (or "off", its old name): one that runs, never
 * starting one; anything else (the default, "auto"): one started on demand (engine_service_ensure) when none
 * answers. */
enum engine_service_mode { ENGINE_SERVICE_USE, ENGINE_SERVICE_AUTO };

/* The idle exit of a service started on demand, in seconds ($KVCON_ENGINE_IDLE_EXIT, else the config's
 * engine.idle-exit, else ENGINE_SERVICE_IDLE_DEFAULT; 0: never). */
#define ENGINE_SERVICE_IDLE_DEFAULT 300

/* A file of the service on socket sock under the state directory: STATE/PREFIX-HASH, HASH the FNV-1a of sock's
 * path (one per service root, whatever directory the socket is in): the HTTPS port it chose once
 * ("engine-api-port"), the kubeconfig of that port ("engine-kubeconfig"). Caller frees. */
char *engine_service_file(const char *state, const char *sock, const char *prefix);

/* The engine's executable: the engine service, its host work and its libraries (libvirt, libxml2, libmicrohttpd,
 * libarchive) are there, not in kvcon. */
#define ENGINE_EXE "kvcon-engine"
/* ENGINE_EXE in the directory of the running executable (/proc/self/exe), as `make install` puts it beside kvcon;
 * NULL with *err (caller frees) when it is not there or not executable. Caller frees. */
char *engine_exe(char **err);

/* The one place a client starts the engine service: the socket of the service of uris[0..n) when one answers
 * there (probe: a function returning true once /healthz answers), after starting one with engine.service = auto:
 * `kvcon-engine [-c URI]... engine serve --socket SOCK --idle-exit engine_service_idle_exit()` (engine_exe) detached
 * from the caller (its own session, stdio on $XDG_STATE_HOME/kvcon/engine-serve.log; the service writes its pid in
 * SOCK.pid), waited for up to 2 minutes (the embedded driver's first open probes QEMU). Starters of one root take
 * turns (a lock on SOCK.lock): the second finds the first one's service. Caller frees. NULL with *err when none
 * answers and none could be started: "use" mode, or what a service that exited before it answered said last (its
 * first check is engine_check's refusal: what to fix on this machine): its "error:" line in the log alone, else
 * its last line wrapped with the log's path. With one URI (-c HOST) that the service of a larger set holds, that
 * service's socket, and *host the host's name (caller frees; NULL otherwise): see ENGINE_SERVICE_HOST_PREFIX. */
char *engine_service_ensure(char *const *uris, int n, int (*probe)(const char *sock), char **host, char **err);

/* Where the requests of `kvcon -c HOST` go when engine_service_ensure found HOST held by an engine set's service
 * (*host set: that host's Node name): the set's socket, under this prefix and the host's name
 * (/kvcon-host/NAME/api/v1/...); the service answers there for that host alone: its objects, and the VMs applied
 * there run there (apiserver/apisrv.c). */
#define ENGINE_SERVICE_HOST_PREFIX "/kvcon-host/"

/* The pipe a starter gives the service it starts (engine_service_ensure): the service's end is fd
 * ENGINE_NOTIFY_FD, named by $KVCON_ENGINE_NOTIFY_FD. The starter sees the pipe's end (EOF) at once when the
 * service closes it, on serving or on exiting, however late its parent reaps it (a kill(pid, 0) of an exited
 * service answers until then: about a second under some inits). engine_service_notify_take: the service takes
 * it, close-on-exec so that no process it starts holds it, and unsets the variable (nothing, when the variable
 * is unset or does not name a pipe); engine_service_notify_ready: the service serves, the starter may go on. */
#define ENGINE_NOTIFY_FD 3
void engine_service_notify_take(void);
void engine_service_notify_ready(void);

/* ---- test seams: exported for tests/ only, not to be called by kvcon itself (tests/check-exports.sh) ---- */
long engine_service_idle_exit(void);
enum engine_service_mode engine_service_mode(void);

#endif
