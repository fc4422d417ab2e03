/* `kvcon engine serve`: the engine as a single-host KubeVirt. One process opens the engine hosts, runs the
 * reconciler for good and serves the Kubernetes API for kubevirt.io/v1 VirtualMachine and
 * VirtualMachineInstance (and Migration), v1 Pod (the launchers), Event, Namespace and Node (one per host), the
 * engine's own KubeVirt CR (kubevirt/kubevirt: its status is the service's health), with libmicrohttpd
 * driven from kvcon's own loop (handlers run on the loop thread and read the engine's state directly). A unix
 * socket (0600) serves the local user; --https PORT serves 127.0.0.1 with a generated CA and bearer token, written
 * as a kubeconfig for kubectl. See docs/ENGINE-SERVICE.md. */
#ifndef KVCON_ENGINE_APISRV_H
#define KVCON_ENGINE_APISRV_H

int engine_serve_cmd(int argc, char **argv);

#endif
