/* Where the engine service (`kvcon engine serve`, docs/ENGINE-SERVICE.md) of an engine root listens by default,
 * so that every kvcon process on that root finds it: one unix socket per root. */
#ifndef KVCON_ENGINE_SERVICE_H
#define KVCON_ENGINE_SERVICE_H

/* $XDG_RUNTIME_DIR/kvcon/engine-HASH.sock (else the state directory's), HASH = FNV-1a of the state directory and
 * the engine URIs (uris[0..n), or the default as engine_open resolves it when n is 0). Caller frees. */
char *engine_service_socket(char *const *uris, int n);

#endif
