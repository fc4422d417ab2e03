/* A command-line session on one object (NS/NAME), and the one place that resolves NS/NAME to its source: the
 * kube context, and the engine hosts (-c URIs or the config's, else the default engine when no kubeconfig loads
 * or when the cluster lacks the name and kvcon has engine VMs here). --source NAME picks among them; a name
 * that exists in several sources without --source is an error that names them. Used by every verb about one VM. */
#ifndef KVCON_CMD_SESSION_H
#define KVCON_CMD_SESSION_H

#include <stdbool.h>

#include "model/source.h"
#include "model/store.h"

struct kube_open_opts;
struct lineage;

struct session {
	const char *cmd;
	bool engine;
	struct store *st;
	struct source *src;
	struct lineage *lin;
	char *ns, *name;
};

/* Parses ref (NS/NAME or NAME in -n's namespace), opens its source and waits until the lists are in. EXIT_OK,
 * or an exit code after printing why. session_close must be called either way. */
int session_open(struct session *s, const char *cmd, const char *ref);
void session_close(struct session *s);
/* Prints "VirtualMachine NS/NAME not found in ..." on stderr. */
void session_not_found(const struct session *s);

/* The resolver underneath, for verbs that keep their own store (console, vnc): opens the candidate sources
 * into st (kube reflectors of kinds, a KUBE_KIND_BIT mask, 0: all), waits for their lists, and returns the one
 * whose store has ns/name as a VM or VMI (ns NULL: the context's namespace on a cluster, default elsewhere).
 * When none has it: NULL with *err, or with must_exist false the cluster (which may create it later) when there
 * is one. The loop must be initialised. */
struct source *session_resolve(struct store *st, const char *ns, const char *name, unsigned kinds, bool must_exist,
			       char **err);
/* Opens the engine hosts (-c URIs and the config's, else the default engine) into st and waits until they have
 * resynced: the kube source of their engine service (`kvcon engine serve`, plain HTTP over the root's well-known
 * unix socket: service/service.h), hosts[0] (caller frees the array), so 1; or -1 with *err. kvcon reaches the
 * engine only through its service, which runs in kvcon-engine. */
int session_open_engines(struct store *st, struct source ***hosts, char **err);
/* The socket of the engine service of this root when one answers there (/healthz), after starting one with
 * engine.service = auto (caller frees); NULL with *err when none answers and none could be started (use, or the
 * service's own refusal); NULL with *err NULL with --no-engine. */
char *session_service_answering(char **err);
/* The service on path as a kube source in st (plain HTTP over the unix socket, named as this host): base's
 * kinds, selector, failures and namespaces (NULL: every kind, every namespace). Not waited for. */
struct source *session_service_source(struct store *st, const char *path, const struct kube_open_opts *base,
				      char **err);
/* The service's own state as its clients show it: the KubeVirt CR's Degraded condition (a host not ready, VM
 * records it cannot read, named by file) becomes src's notice ("the engine service is degraded: ..."), which
 * get prints and the dashboard's header shows. Blocking, at most 3 s. */
#define SESSION_DEGRADED "the engine service is degraded"

/* A source's notice (the engine service's Node kvcon.io/notice: KVM unusable, TCG forced), on stderr once per machine
 * boot per host and kind: a stamp in the state directory ($XDG_STATE_HOME/kvcon/engine-notice-shown) holds the
 * boot and the notices shown in it. The dashboard's header shows it always. */
void session_notice_once(const struct source *src);
void session_notice_once_text(const char *host, const char *notice);
void session_service_status(struct source *src, const char *path);
/* A verb's start: its log (--log-file, else the state directory's; -v: debug), errors only on stderr (-v adds
 * info), the event loop, and SIGINT or SIGTERM ending the loop with 130. */
void session_cli_start(void);

#endif
