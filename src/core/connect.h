/* connect: the one rule that turns the options into sources, the same for the dashboard, `kvcon get` and every
 * verb (docs/ARCHITECTURE.md, "Which sources a command reads"):
 *   - `kvcon engine VERB`: the engine alone;
 *   - --context names contexts (comma-separated); the local engine is a context of its own, named "engine" or
 *     by this host's name (as its rows' SOURCE says): those named are the sources;
 *   - -c URI: those engine hosts, plus the cluster when --context or --kubeconfig name one (the config's engine
 *     hosts are what "the engine" is, not a choice of it);
 *   - otherwise, with a kubeconfig, its current context alone, exactly as kubectl; without one, the engine
 *     (unless --no-engine).
 * Several sources at once only when asked; their rows then carry a SOURCE column. Nothing here opens anything:
 * the callers open what the plan says (cmd/session.c, cmd/cmd_get.c, ui/sources.c), the engine through its
 * service (engine_service_ensure). */
#ifndef KVCON_CORE_CONNECT_H
#define KVCON_CORE_CONNECT_H

#include <stdbool.h>

#include "core/opts.h"

struct connect_plan {
	bool kube;            /* open the kube context (o->context, else the kubeconfig's current one) */
	bool kube_present;    /* a kubeconfig is there (or named): failing to use it is an error, not a fallback */
	bool kube_optional;   /* no kubeconfig is there and the engine is opened: failing to load one is no error */
	bool engine;          /* open the engine (its service: o->uris, else the default engine) */
	bool engine_required; /* the engine was asked for: its failure is an error, not a warning */
};

/* The sources o asks for. */
void connect_plan(const struct kvcon_opts *o, struct connect_plan *p);
/* Whether name names the local engine as a context: "engine", or this host's name. */
bool connect_is_engine_name(const char *name);
/* The local engine's context name as its rows show it: this host's name. Static storage. */
const char *connect_engine_name(void);
/* Splits a --context value (comma-separated) into o: the engine's names set o->engine_ctx, the other one is the
 * kube context (o->context). -1 with *err (static) when it names two kube contexts or none at all. */
int connect_set_context(struct kvcon_opts *o, const char *value, const char **err);

#endif
