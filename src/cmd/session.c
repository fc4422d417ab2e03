/* A command-line session on one object: opens the source that has NS/NAME (a kube context's namespace, or the
 * engine hosts of -c / the local engine when there is no kubeconfig), waits until its reflectors are live so the
 * store holds the object's chain (and the lineage recorder has seen it), and closes it again. Shared by every
 * verb that answers about one VM (diagnose, lineage, the actions, logs, describe, wait). */
#include "cmd/session.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/loop.h"
#include "core/opts.h"
#include "core/util.h"
#include "core/xmalloc.h"
#include "kube/kube.h"
#include "model/chain.h"
#include "model/lineage.h"
/* -c URI sessions run on engine hosts (the check keeps this file building without src/engine). */
#if __has_include("engine/engine.h")
#include "engine/engine.h"
#define CMD_HAVE_ENGINE 1
#endif

#define SYNC_TIMEOUT_MS 30000
#define CLI_MAX_FAILURES 4

/* ---- session ---- */

void session_close(struct session *s)
{
#ifdef CMD_HAVE_ENGINE
	if (s->engine) {
		/* let the engine carry out what was asked (a stop, a restart) before its workers stop */
		uint64_t deadline = util_now_ms() + 60000;
		while (!engine_idle() && util_now_ms() < deadline)
			loop_once(100);
		engine_close_all();
	}
#endif
	lineage_free(s->lin);
	source_free_all();
	store_free(s->st);
	loop_fini();
	free(s->ns);
	free(s->name);
}

/* Ready when every kind is live; pods and events may be forbidden (the chain is then partial, and diagnose
 * says so), VMs and VMIs may not. Returns 1 ready, 0 not yet, -1 failed (message in *msg). */
static int session_ready(const struct session *s, const char **msg)
{
	int ready = 1;
	for (int k = 0; k < OBJ_KIND_COUNT; k++) {
		const struct watch_health *h = &s->src->health[k];
		bool optional = k == OBJ_POD || k == OBJ_EVENT;
		if (h->state == WATCH_ERROR || h->state == WATCH_FORBIDDEN) {
			if (optional)
				continue;
			*msg = h->message ? h->message : watch_state_name(h->state);
			return -1;
		}
		if (h->state != WATCH_LIVE)
			ready = 0;
	}
	return ready || kube_source_synced(s->src);
}

/* -c URI...: the VM lives on one of the engine hosts; the session's source is the host that has it. With no
 * -c, the engine's default (the embedded driver), as the dashboard does without a kubeconfig. */
static int session_open_engine(struct session *s)
{
#ifdef CMD_HAVE_ENGINE
	struct kvcon_opts *o = opts_global();
	s->engine = true;
	int nuris = o->nuris > 0 ? o->nuris : 1;
	char *dflt = o->nuris > 0 ? NULL : engine_default_uri();
#define URI_AT(i) (o->nuris > 0 ? o->uris[(i)] : dflt)
	struct source **hosts = xcalloc((size_t)nuris, sizeof *hosts);
	int rc = EXIT_OK;
	for (int i = 0; i < nuris; i++) {
		char *err = NULL;
		hosts[i] = engine_open(s->st, URI_AT(i), &err);
		if (hosts[i] == NULL) {
			char *e = util_escape_display(err ? err : "refused");
			log_eprintf("kvcon %s: -c %s: %s\n", s->cmd, URI_AT(i), e);
			free(e);
			free(err);
			rc = EXIT_API;
			goto out;
		}
	}
	uint64_t deadline = util_now_ms() + SYNC_TIMEOUT_MS * 2;
	for (int i = 0; i < nuris; i++) {
		/* the first failure is the answer (the engine's errors name the host or the machine's problem) */
		while (!engine_ready(hosts[i]) && engine_error(hosts[i]) == NULL && util_now_ms() < deadline)
			loop_once(100);
		if (!engine_ready(hosts[i])) {
			const char *why = engine_error(hosts[i]);
			char *e = util_escape_display(why ? why : "timed out connecting");
			if (why)
				log_eprintf("error: %s\n", e);
			else
				log_eprintf("error: %s: %s\n", URI_AT(i), e);
			free(e);
			rc = EXIT_API;
			goto out;
		}
	}
	if (s->ns == NULL)
		s->ns = xstrdup(o->ns ? o->ns : "default");
	s->src = hosts[0];
	for (int i = 0; i < nuris; i++)
		if (store_find(s->st, hosts[i], OBJ_VM, s->ns, s->name) || store_find(s->st, hosts[i], OBJ_VMI, s->ns, s->name)) {
			s->src = hosts[i];
			break;
		}
out:
#undef URI_AT
	free(hosts);
	free(dflt);
	return rc;
#else
	log_eprintf("kvcon %s: -c: the local engine is not in this build\n", s->cmd);
	return EXIT_USAGE;
#endif
}

int session_open(struct session *s, const char *cmd, const char *ref)
{
	struct kvcon_opts *o = opts_global();
	memset(s, 0, sizeof *s);
	s->cmd = cmd;
	if (strchr(ref, '/')) {
		if (chain_parse_ref(ref, NULL, &s->ns, &s->name) < 0) {
			log_eprintf("kvcon %s: '%s' is not NAMESPACE/NAME\n", cmd, ref);
			return EXIT_USAGE;
		}
		free(o->ns);
		o->ns = xstrdup(s->ns); /* watch the VM's own namespace */
	} else if (*ref == '\0') {
		log_eprintf("kvcon %s: which VM? (NAMESPACE/NAME)\n", cmd);
		return EXIT_USAGE;
	} else {
		s->name = xstrdup(ref);
	}
	o->all_ns = false;
	if (o->log)
		log_open(o->log);
	log_set_stderr_level(o->verbose ? LOG_INFO : LOG_ERROR + 1);
	loop_init();
	s->st = store_new();
	s->lin = lineage_new(s->st, NULL); /* before the first list: it records what the reflectors bring */
	if (o->nuris > 0)
		return session_open_engine(s);
	struct kube_open_opts ko = { .max_failures = CLI_MAX_FAILURES };
	char *err = NULL;
	s->src = kube_open_ex(s->st, NULL, &ko, &err);
#ifdef CMD_HAVE_ENGINE
	if (s->src == NULL && !o->context && !o->kubeconfig && !o->no_engine) {
		/* no kubeconfig at all: the local engine, as the dashboard opens it */
		log_info("%s: no kube source (%s): using the local engine", cmd, err ? err : "?");
		free(err);
		return session_open_engine(s);
	}
#endif
	if (s->src == NULL) {
		char *e = util_escape_display(err);
		log_eprintf("kvcon %s: %s\n", cmd, e);
		free(e);
		free(err);
		return EXIT_API;
	}
	if (s->ns == NULL)
		s->ns = xstrdup(s->src->ns_scope ? s->src->ns_scope : "default");
	uint64_t deadline = util_now_ms() + SYNC_TIMEOUT_MS;
	const char *msg = NULL;
	int r;
	while ((r = session_ready(s, &msg)) == 0) {
		if (util_now_ms() > deadline) {
			log_eprintf("kvcon %s: timed out waiting for the cluster's lists\n", cmd);
			return EXIT_API;
		}
		loop_once(200);
	}
	if (r < 0) {
		char *e = util_escape_display(msg);
		log_eprintf("kvcon %s: %s\n", cmd, e);
		free(e);
		return EXIT_API;
	}
	for (int k = OBJ_POD; k <= OBJ_EVENT; k++)
		if (s->src->health[k].state != WATCH_LIVE) {
			char *e = util_escape_display(s->src->health[k].message);
			log_eprintf("kvcon %s: warning: %s not listed (%s): the chain is partial\n", cmd,
				k == OBJ_POD ? "launcher pods" : "events", e);
			free(e);
		}
	return EXIT_OK;
}

void session_not_found(const struct session *s)
{
	char *n = util_escape_display(s->name), *ns = util_escape_display(s->ns);
	log_eprintf("kvcon %s: VirtualMachine %s/%s not found in %s %s\n", s->cmd, ns, n,
		s->src->type == SOURCE_ENGINE ? "engine host" : "context", s->src->name);
	free(n);
	free(ns);
}
