/* A command-line session on one object, and the resolver of NS/NAME to its source (see session.h). Sources open
 * through the kube provider's constructor (kube_open_ex: a cluster, or the engine service over its socket);
 * everything after goes through the store and provider_ops. */
#include "cmd/session.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "core/buf.h"
#include "core/connect.h"
#include "core/log.h"
#include "core/loop.h"
#include "core/opts.h"
#include "core/util.h"
#include "core/xmalloc.h"
#include "service/service.h"
#include "service/settings.h"
#include "kube/http.h"
#include "kube/kube.h"
#include "model/chain.h"
#include "model/lineage.h"

#define SYNC_TIMEOUT_MS 30000
#define CLI_MAX_FAILURES 4

/* ---- opening the candidates ---- */

/* Ready when every kind asked is live; pods and events may be forbidden (the chain is then partial, and
 * diagnose says so), VMs and VMIs may not. 1 ready, 0 not yet, -1 failed (message in *msg). */
static int kube_ready(struct source *src, unsigned kinds, const char **msg)
{
	int ready = 1;
	for (int k = 0; k < OBJ_KIND_COUNT; k++) {
		if (kinds && !(kinds & KUBE_KIND_BIT(k)))
			continue;
		const struct watch_health *h = &src->health[k];
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
	return ready || kube_source_synced(src);
}

/* The kube context, watching ns alone (NULL: the context's namespace; -A does not widen a verb about one VM). */
static struct source *open_kube(struct store *st, unsigned kinds, const char *ns, char **err)
{
	struct kube_open_opts ko = { .kinds = kinds, .max_failures = CLI_MAX_FAILURES, .ns_set = true, .ns = ns,
				     .one_ns = true };
	struct source *src = kube_open_ex(st, NULL, &ko, err);
	if (src == NULL)
		return NULL;
	uint64_t deadline = util_now_ms() + SYNC_TIMEOUT_MS;
	const char *msg = NULL;
	int r;
	while ((r = kube_ready(src, kinds, &msg)) == 0) {
		if (util_now_ms() > deadline) {
			*err = xstrdup("timed out waiting for the cluster's lists");
			return NULL;
		}
		loop_once(200);
	}
	if (r < 0) {
		*err = xstrdup(msg);
		return NULL;
	}
	return src;
}

/* ---- the engine service ---- */

static int healthy(const char *sock)
{
	return kube_http_unix_healthy(sock, 3000);
}

/* -c HOST through the service of a set that holds HOST: every request under /kvcon-host/HOST (limited to it) */
static void service_limit(const char *host)
{
	if (host == NULL)
		return;
	char *prefix = xasprintf(ENGINE_SERVICE_HOST_PREFIX "%s", host);
	kube_config_unix_prefix(prefix);
	log_info("the engine service of the set holding host %s answers: going through it, limited to %s", host, host);
	free(prefix);
}

char *session_service_answering(char **err)
{
	*err = NULL;
	struct kvcon_opts *o = opts_global();
	if (o->no_engine)
		return NULL;
	char *host = NULL, *path = engine_service_ensure(o->uris, o->nuris, healthy, &host, err);
	service_limit(host);
	free(host);
	return path;
}


struct source *session_service_source(struct store *st, const char *path, const struct kube_open_opts *base,
				      char **err)
{
	struct kube_open_opts ko = { .max_failures = CLI_MAX_FAILURES, .all_namespaces = true };
	if (base)
		ko = *base;
	ko.unix_socket = path;
	ko.name = connect_engine_name();
	struct source *src = kube_open_ex(st, NULL, &ko, err);
	if (src) {
		struct kvcon_opts *o = opts_global();
		src->engine_uris = engine_service_uris(o->uris, o->nuris);
	}
	return src;
}

static void on_quit_signal(int sig, void *arg)
{
	(void)sig;
	(void)arg;
	loop_quit(130);
}

void session_cli_start(void)
{
	struct kvcon_opts *o = opts_global();
	loop_init();
	log_open(o->log);
	log_set_level(o->verbose ? LOG_DEBUG : LOG_INFO);
	log_set_stderr_level(o->verbose ? LOG_INFO : LOG_ERROR + 1);
	loop_signal(SIGINT, on_quit_signal, NULL);
	loop_signal(SIGTERM, on_quit_signal, NULL);
}

/* The message of a KubeVirt CR's Degraded condition when it is True (text: the CR as JSON), else NULL. Caller
 * frees. */
static char *service_degraded(const char *text)
{
	json_object *j = text ? json_tokener_parse(text) : NULL, *st, *conds;
	char *out = NULL;
	if (j && json_object_object_get_ex(j, "status", &st) && json_object_object_get_ex(st, "conditions", &conds) &&
	    json_object_is_type(conds, json_type_array))
		for (size_t i = 0; i < json_object_array_length(conds) && out == NULL; i++) {
			json_object *c = json_object_array_get_idx(conds, i), *t, *s, *m;
			if (json_object_object_get_ex(c, "type", &t) && json_object_object_get_ex(c, "status", &s) &&
			    json_object_object_get_ex(c, "message", &m) && util_str_eq(json_object_get_string(t), "Degraded") &&
			    util_str_eq(json_object_get_string(s), "True") && json_object_get_string_len(m) > 0)
				out = xstrdup(json_object_get_string(m));
		}
	json_object_put(j);
	return out;
}

void session_service_status(struct source *src, const char *path)
{
	char *text = kube_http_unix_get(path, "/apis/kubevirt.io/v1/namespaces/kubevirt/kubevirts/kubevirt", 3000);
	char *why = service_degraded(text);
	if (why) {
		char *notice = xasprintf("%s: %s", SESSION_DEGRADED, why);
		source_set_notice(src, notice);
		free(notice);
	}
	free(why);
	free(text);
}

/* The service of this root (started first with engine.service = auto): its kube source (named as the engine's
 * host), synced; NULL with *err when none answers and none could be started, or its lists did not come. */
static struct source *open_service(struct store *st, char **err)
{
	char *path = session_service_answering(err);
	if (path == NULL)
		return NULL;
	struct source *src = session_service_source(st, path, NULL, err);
	if (src == NULL) {
		free(path);
		return NULL;
	}
	log_info("the engine service answers on %s: going through it", path);
	session_service_status(src, path);
	free(path);
	uint64_t deadline = util_now_ms() + SYNC_TIMEOUT_MS;
	const char *msg = NULL;
	int r;
	while ((r = kube_ready(src, 0, &msg)) == 0) {
		if (util_now_ms() > deadline) {
			*err = xstrdup("timed out waiting for the engine service's lists");
			return NULL;
		}
		loop_once(100);
	}
	if (r < 0) {
		*err = xasprintf("the engine service: %s", msg);
		return NULL;
	}
	return src;
}

int session_open_engines(struct store *st, struct source ***hosts, char **err)
{
	*hosts = NULL;
	char *serr = NULL;
	struct source *svc = open_service(st, &serr);
	if (svc == NULL) {
		*err = serr ? serr : xstrdup("the engine service did not answer");
		return -1;
	}
	*hosts = xcalloc(1, sizeof **hosts);
	(*hosts)[0] = svc;
	return 1;
}

/* The namespace a bare NAME means on src: the context's on a cluster, else default (-n is in ns already). */
static const char *ns_on(const struct source *src, const char *ns)
{
	return ns ? ns : src->type == SOURCE_KUBE && src->ns_scope ? src->ns_scope : "default";
}

static bool has(struct store *st, struct source *src, const char *ns, const char *name)
{
	ns = ns_on(src, ns);
	return store_find(st, src, OBJ_VM, ns, name) || store_find(st, src, OBJ_VMI, ns, name);
}

static bool named(const struct source *src, const char *want)
{
	return strcmp(src->name, want) == 0 || (src->server && strcmp(src->server, want) == 0);
}

struct source *session_resolve(struct store *st, const char *ns, const char *name, unsigned kinds, bool must_exist,
			       char **err)
{
	struct kvcon_opts *o = opts_global();
	*err = NULL;
	/* the sources of the one rule (core/connect.h); --source naming the engine asks for it too */
	struct connect_plan plan;
	connect_plan(o, &plan);
	if (o->source && connect_is_engine_name(o->source) && !o->no_engine)
		plan.engine = true;
	struct source *kube = NULL, **hosts = NULL;
	int nhosts = 0;
	char *kerr = NULL;
	if (plan.kube) {
		kube = open_kube(st, kinds, ns, &kerr);
		/* a kubeconfig that is there but does not work is an error, not a reason to look elsewhere */
		if (kube == NULL && !plan.kube_optional) {
			*err = kerr;
			return NULL;
		}
		if (kube == NULL)
			log_info("no kube source (%s): looking on the engine", kerr ? kerr : "?");
	}
	if (plan.engine) {
		char *eerr = NULL;
		nhosts = session_open_engines(st, &hosts, &eerr);
		if (nhosts < 0) {
			if (kube == NULL || plan.engine_required) {
				*err = kube == NULL && kerr && !plan.engine_required
					       ? xasprintf("%s; and the local engine: %s", kerr, eerr) : xstrdup(eerr);
				free(eerr);
				free(kerr);
				free(hosts);
				return NULL;
			}
			log_info("the engine did not open (%s): the cluster only", eerr);
			free(eerr);
			nhosts = 0;
		}
	}
	free(kerr);
	struct source *cand[17];
	int nc = 0;
	if (kube)
		cand[nc++] = kube;
	for (int i = 0; i < nhosts && nc < 16; i++)
		cand[nc++] = hosts[i];
	free(hosts);
	struct source *found = NULL;
	struct buf where;
	buf_init(&where);
	int nfound = 0;
	for (int i = 0; i < nc; i++) {
		if (o->source && !named(cand[i], o->source))
			continue;
		if (o->source && found == NULL)
			found = cand[i]; /* the one asked for, even without the object (the caller says not found) */
		if (has(st, cand[i], ns, name)) {
			if (nfound == 0 || o->source)
				found = cand[i];
			buf_printf(&where, "%s%s %s", nfound ? ", " : "",
				   cand[i]->engine ? "engine host" : "context", cand[i]->name);
			nfound++;
		}
	}
	buf_add(&where, "", 0);
	if (o->source && found == NULL) {
		struct buf names;
		buf_init(&names);
		for (int i = 0; i < nc; i++)
			buf_printf(&names, "%s%s", i ? ", " : "", cand[i]->name);
		buf_add(&names, "", 0);
		*err = xasprintf("--source %s: no such context or engine host (open: %s)", o->source,
				 nc ? names.data : "none");
		buf_free(&names);
	} else if (nfound > 1 && !o->source) {
		*err = xasprintf("%s/%s exists in %s: say which with --source NAME", ns ? ns : "(default)", name,
				 where.data);
		found = NULL;
	} else if (found == NULL && !must_exist && nc > 0) {
		found = kube ? kube : cand[0];
	} else if (found == NULL) {
		const char *where_ns = ns ? ns : nc ? ns_on(cand[0], NULL) : "default";
		/* the cluster alone was read: say so when the local engine keeps a VM of that name (not opened) */
		bool engine_has = kube && nhosts == 0 && !o->no_engine && engine_has_record(where_ns, name);
		*err = xasprintf("VirtualMachine %s/%s not found in %s%s", where_ns, name,
				 nc == 0 ? "any source" : kube && nhosts ? "the cluster nor on the engine"
						     : kube ? "the cluster" : "the engine",
				 engine_has ? " (the local engine has one: --context engine)" : "");
	}
	buf_free(&where);
	return found;
}

/* The accelerator notice (KVM unusable, TCG forced), once per machine boot on the command line: a stamp in the
 * state directory holds the boot and the notices shown in it. The dashboard's header always shows it. */
void session_notice_once_text(const char *host, const char *notice)
{
	log_warn("engine: %s: %s", host, notice); /* the log keeps it every time */
	char *boot = util_read_file("/proc/sys/kernel/random/boot_id", NULL);
	char *state = util_state_dir();
	char *stamp = util_path_join(state, "engine-notice-shown");
	/* the notice's kind (its words before the first colon), not its details: "(probed earlier this boot)" */
	char *line = xasprintf("%.*s %s %.*s\n", boot ? (int)strcspn(boot, "\n") : 0, boot ? boot : "", host,
			       (int)strcspn(notice, ":"), notice);
	char *old = util_read_file(stamp, NULL);
	if (old == NULL || strstr(old, line) == NULL) {
		char *e = util_escape_display(notice);
		fprintf(stderr, "kvcon: %s: %s\n", host, e);
		free(e);
		/* one line per host and kind this boot; an older boot's lines go */
		bool same_boot = old && strncmp(old, line, strcspn(line, " ") + 1) == 0;
		char *text = xasprintf("%s%s", same_boot ? old : "", line);
		util_mkdir_p(state, 0700);
		util_write_file_atomic(stamp, text, strlen(text), 0644);
		free(text);
	}
	free(old);
	free(line);
	free(stamp);
	free(state);
	free(boot);
}

void session_notice_once(const struct source *src)
{
	if (src->notice)
		session_notice_once_text(src->name, src->notice);
}

/* ---- session ---- */

void session_close(struct session *s)
{
	lineage_free(s->lin);
	source_free_all();
	store_free(s->st);
	loop_fini();
	free(s->ns);
	free(s->name);
}

int session_open(struct session *s, const char *cmd, const char *ref)
{
	struct kvcon_opts *o = opts_global();
	memset(s, 0, sizeof *s);
	s->cmd = cmd;
	if (strchr(ref, '/')) {
		if (chain_parse_ref(ref, NULL, &s->ns, &s->name) < 0) {
			log_eprintf("error: '%s' is not NAMESPACE/NAME\n", ref);
			return EXIT_USAGE;
		}
	} else if (*ref == '\0') {
		log_eprintf("error: which VM? (NAMESPACE/NAME)\n");
		return EXIT_USAGE;
	} else {
		s->name = xstrdup(ref);
	}
	if (o->log)
		log_open(o->log);
	log_set_stderr_level(o->verbose ? LOG_INFO : LOG_ERROR + 1);
	loop_init();
	s->st = store_new();
	s->lin = lineage_new(s->st, NULL); /* before the first list: it records what the reflectors bring */
	char *err = NULL;
	/* a bare NAME: -n's namespace, else the one of the source that has it (the context's on a cluster) */
	const char *ns = s->ns ? s->ns : o->ns;
	s->src = session_resolve(s->st, ns, s->name, 0, false, &err);
	if (s->ns == NULL)
		s->ns = xstrdup(s->src ? ns_on(s->src, ns) : ns ? ns : "default");
	if (s->src == NULL) {
		char *e = util_escape_display(err);
		log_eprintf("error: %s\n", e);
		free(e);
		free(err);
		return EXIT_API;
	}
	s->engine = s->src->engine;
	if (s->src->type == SOURCE_KUBE)
		for (int k = OBJ_POD; k <= OBJ_EVENT; k++)
			if (s->src->health[k].state != WATCH_LIVE) {
				char *e = util_escape_display(s->src->health[k].message);
				log_eprintf("warning: %s: %s not listed (%s): the chain is partial\n", cmd,
					    k == OBJ_POD ? "launcher pods" : "events", e);
				free(e);
			}
	return EXIT_OK;
}

void session_not_found(const struct session *s)
{
	char *n = util_escape_display(s->name), *ns = util_escape_display(s->ns);
	/* a cluster alone was read: say so when the local engine keeps a VM of that name (not opened) */
	bool engine_has = !s->src->engine && !opts_global()->no_engine && engine_has_record(s->ns, s->name);
	log_eprintf("error: VirtualMachine %s/%s not found in %s %s%s\n", ns, n,
		    s->src->engine ? "engine host" : "context", s->src->name,
		    engine_has ? " (the local engine has one: --context engine)" : "");
	free(n);
	free(ns);
}
