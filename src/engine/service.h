/* Where the engine service (`kvcon engine serve`, docs/ENGINE-SERVICE.md) of an engine root listens by default,
 * so that every kvcon process on that root finds it: one unix socket per root. */
#ifndef KVCON_ENGINE_SERVICE_H
#define KVCON_ENGINE_SERVICE_H

/* $XDG_RUNTIME_DIR/kvcon/engine-HASH.sock (else the state directory's), HASH = FNV-1a of the state directory and
 * the engine URIs (uris[0..n), or the default as engine_open resolves it when n is 0). Caller frees. */
char *engine_service_socket(char *const *uris, int n);

/* How kvcon uses a service ($KVCON_ENGINE_SERVICE, else the config's engine.service): "off" never, "auto" starts
 * one on demand (engine_service_spawn) when none answers, anything else (the default) uses one that runs. */
enum engine_service_mode { ENGINE_SERVICE_USE, ENGINE_SERVICE_OFF, ENGINE_SERVICE_AUTO };
enum engine_service_mode engine_service_mode(void);

/* Starts `kvcon [-c URI]... engine serve` (this executable) detached from the caller (its own session, stdio on
 * $XDG_STATE_HOME/kvcon/engine-serve.log, its pid in SOCKET.pid), then waits up to timeout_ms until /healthz
 * answers on sock (probe: a function returning true once it does). 0, or -1 with *err. */
int engine_service_spawn(char *const *uris, int n, const char *sock, int (*probe)(const char *sock),
			 long timeout_ms, char **err);

#endif
