/* Port forwards to a guest, shared by `kvcon port-forward` (cmd/cmd_portforward.c) and the dashboard's shift-F and
 * :pf (ui/forwards.c). A forward belongs to one VM or VMI of one source; it listens on local TCP ports (or takes
 * stdin/stdout as its one connection) and gives every accepted connection a stream of its own to the guest port
 * (provider_ops.open_portforward: KubeVirt's portforward subresource, the engine service's on the engine). Bytes
 * are pumped both ways with at most PORTFWD_HIGH waiting in either direction of a connection (its source is not
 * read meanwhile) and at most PORTFWD_MAX_CONNS connections at once. A guest port that refuses ends that
 * connection (reported), never the forward. Everything runs on the loop thread. */
#ifndef KVCON_CONSOLE_PORTFWD_H
#define KVCON_CONSOLE_PORTFWD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/pfspec.h"
#include "model/source.h"

#define PORTFWD_MAX_CONNS 64
#define PORTFWD_HIGH (1u << 20)

struct portfwd;

struct portfwd_stats {
	size_t open;          /* connections open now */
	uint64_t total;       /* connections accepted so far */
	uint64_t failed;      /* of them, refused by the guest's side (dial error, 4xx) */
	uint64_t bytes_in;    /* from the guest */
	uint64_t bytes_out;   /* to the guest */
};

/* A connection's failure, in the server's words (not escaped: the callee escapes for its terminal). */
typedef void (*portfwd_report_cb)(void *arg, int guest_port, const char *reason);

/* A forward to kind (KIND_VM, KIND_VMI) ns/name of src; NULL with *err (caller frees) when src forwards nothing.
 * report may be NULL. */
struct portfwd *portfwd_new(struct source *src, int kind, const char *ns, const char *name, portfwd_report_cb report,
			    void *arg, char **err);
/* Listens on addr:port->local (0: any free port): the port bound, or -1 with *err (caller frees). */
int portfwd_listen(struct portfwd *f, const char *addr, const struct pf_port *port, char **err);
/* The one connection on stdin/stdout to port->remote; done(arg, rc) once it ended (rc 0, or 1 when the guest's
 * side refused or failed). After stdin ends, the guest's answer still goes to stdout for a second. */
void portfwd_stdio(struct portfwd *f, const struct pf_port *port, void (*done)(void *arg, int rc), void *arg);
void portfwd_stats(const struct portfwd *f, struct portfwd_stats *st);
/* Closes the listeners and every connection at once. NULL is ignored. */
void portfwd_free(struct portfwd *f);

#endif
