/* The engine as a single-host KubeVirt: the Kubernetes API server of `kvcon engine serve`. It serves
 * kubevirt.io/v1 VirtualMachine and VirtualMachineInstance (and Migration), v1 Pod (the launchers), Event,
 * Namespace and Node (one per host), the engine's own KubeVirt CR (kubevirt/kubevirt: its status is the service's
 * health), with libmicrohttpd driven from kvcon's own loop (handlers run on the loop thread and read the engine's
 * state directly). A unix socket (0600) serves the local user; an HTTPS port serves 127.0.0.1 with a generated CA
 * and bearer token, written as a kubeconfig for kubectl. See docs/ENGINE-SERVICE.md. The verb that opens the
 * engine and calls apisrv_serve is cmd/cmd_serve.c. */
#ifndef KVCON_APISERVER_APISRV_H
#define KVCON_APISERVER_APISRV_H

#include <stddef.h>

struct source;
struct store;

struct apisrv_config {
	const char *socket;     /* the unix socket to listen on (its directory exists, private) */
	int https_port;         /* -1: engine.api-port / $KVCON_ENGINE_API_PORT, or none; 0: any free port */
	const char *kubeconfig; /* where the HTTPS kubeconfig goes; NULL: STATE/engine-kubeconfig */
	int idle_exit;          /* seconds without clients before the service ends; 0: never */
	struct store *st;       /* the engine's store and sources, opened by the caller */
	struct source **srcs;
	int nsrcs;
};

/* Listens, prints `socket:` (and `https:`, `kubeconfig:`) then `engine serving` on stdout, and serves until the
 * loop ends (SIGTERM, the idle exit). Returns the loop's code, or -1 with *err (caller frees) when it cannot
 * listen. */
int apisrv_serve(const struct apisrv_config *c, char **err);

#endif
