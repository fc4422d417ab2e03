/* Opening the dashboard's sources and reading kvcon's config file. */
#include "ui/sources.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "core/config.h"
#include "core/connect.h"
#include "core/log.h"
#include "core/opts.h"
#include "core/xmalloc.h"
#include "model/source.h"
#include "service/service.h"
#include "kube/http.h"
#include "kube/kube.h"
#include "model/store.h"
#include "ui/ui.h"

static struct {
	char *theme;
	bool readonly;
	char *context;
} C;

/* The dashboard's keys of the config file (core/config.c parses it): the last theme and readonly lines win. */
static void apply_config(const struct config *cfg)
{
	for (size_t i = 0; i < config_count(cfg); i++) {
		const struct config_entry *e = config_at(cfg, i);
		if (strcmp(e->key, "theme") == 0) {
			free(C.theme);
			C.theme = xstrdup(e->value);
		} else if (strcmp(e->key, "readonly") == 0) {
			const char *v = e->value;
			C.readonly = strcasecmp(v, "true") == 0 || strcmp(v, "1") == 0 || strcasecmp(v, "yes") == 0;
		}
	}
}

int sources_parse_config(const char *text, char **err)
{
	struct config *cfg = config_parse(text, NULL, err);
	apply_config(cfg);
	config_free(cfg);
	return *err ? -1 : 0;
}

void sources_load_config(void)
{
	struct config *cfg = config_load(NULL); /* it logs a bad line */
	apply_config(cfg);
	config_free(cfg);
}

const char *sources_config_theme(void)
{
	return C.theme;
}

bool sources_config_readonly(void)
{
	return C.readonly;
}

/* The kube source in use (one context at a time), the engine's (its service) when open, and the store they feed. */
static struct source *kube_src;
static struct source *engine_src;
static struct store *the_store;
static char **ctx_names;
static const char **ctx_list; /* the kubeconfig's contexts, then the engine's */

size_t sources_live_count(void)
{
	size_t n = 0;
	for (size_t i = 0; i < source_count(); i++)
		if (!source_get(i)->closed)
			n++;
	return n;
}

/* The namespace scope the dashboard watches on the cluster once the user chose one (`:ns`, `:ctx`), passed down to
 * kube_open_ex instead of rewriting the global options: scope_set false: -n/-A as given. */
static struct {
	bool set;
	char *ns; /* NULL: the context's, or every namespace with all */
	bool all;
} scope;

static struct source *open_kube(const char *context, char **err)
{
	struct kube_open_opts ko = { .ns_set = scope.set, .ns = scope.ns, .one_ns = scope.set && !scope.all,
				     .all_namespaces = scope.set && scope.all, .watch_batch_ms = SOURCES_WATCH_BATCH_MS };
	struct source *src = kube_open_ex(the_store, context, &ko, err);
	if (src)
		kube_src = src;
	return src;
}

static void close_kube(void)
{
	if (kube_src == NULL)
		return;
	ui_forget_source(kube_src);
	source_close(kube_src);
	/* free the name for the context opened next (the registry keeps the retired entry) */
	free(kube_src->name);
	kube_src->name = xstrdup("(closed)");
	kube_src = NULL;
}

static int healthy(const char *sock)
{
	return kube_http_unix_healthy(sock, 3000);
}

/* The engine service of the root the dashboard would open (service/service.h, started on demand there): its API as
 * a kube source named as the engine's context; NULL with *err when none answers and none could be started. */
static struct source *open_service(struct store *st, char **err)
{
	struct kvcon_opts *o = opts_global();
	char *host = NULL, *path = engine_service_ensure(o->uris, o->nuris, healthy, &host, err);
	struct source *src = NULL;
	if (host) { /* -c HOST held by a set's service: through it, limited to HOST (service/service.h) */
		char *prefix = xasprintf(ENGINE_SERVICE_HOST_PREFIX "%s", host);
		kube_config_unix_prefix(prefix);
		free(prefix);
		free(host);
	}
	if (path) {
		struct kube_open_opts ko = {
			.unix_socket = path, .name = connect_engine_name(), .all_namespaces = true, .live_notice = true,
			.watch_batch_ms = SOURCES_WATCH_BATCH_MS,
		};
		src = kube_open_ex(st, NULL, &ko, err);
		if (src)
			src->engine_uris = engine_service_uris(o->uris, o->nuris);
		engine_src = src;
		if (src)
			log_info("ui: the engine service answers on %s: going through it", path);
	}
	free(path);
	return src;
}

int sources_open(struct store *st, char **err)
{
	struct kvcon_opts *o = opts_global();
	the_store = st;
	/* the one rule of core/connect.h, as kvcon get and every verb */
	struct connect_plan plan;
	connect_plan(o, &plan);
	struct source *k = NULL;
	if (plan.kube) {
		char *kerr = NULL;
		k = open_kube(o->context, &kerr);
		if (k == NULL && plan.kube_present) {
			/* a kubeconfig that is there, or a context named: failing to use it is an error, not a fallback */
			*err = kerr;
			return -1;
		}
		if (k == NULL)
			log_info("ui: no kube source: %s", kerr ? kerr : "?");
		free(kerr);
	}
	if (plan.engine) {
		char *serr = NULL;
		if (open_service(st, &serr) == NULL) {
			if (!plan.engine_required)
				*err = xasprintf("no kubeconfig (~/.kube/config or $KUBECONFIG), and the local engine cannot "
						 "open: %s",
						 serr ? serr : "?");
			else /* asked for: what the command line says (cmd/session.c), word for word */
				*err = serr ? xstrdup(serr) : xstrdup("the engine service did not answer");
			free(serr);
			return -1;
		}
	}
	if (sources_live_count() == 0) {
		*err = xstrdup("no kubeconfig (~/.kube/config or $KUBECONFIG) and no engine (--no-engine): set $KUBECONFIG "
			       "or --kubeconfig, or leave out --no-engine for the local engine");
		return -1;
	}
	log_info("ui: %zu sources", sources_live_count());
	return 0;
}

const char *sources_kube_scope(void)
{
	return kube_src ? kube_src->ns_scope : NULL;
}

const char *sources_narrowed_scope(void)
{
	const char *ns = NULL;
	for (size_t i = 0; i < source_count(); i++) {
		const struct source *src = source_get(i);
		if (src->closed)
			continue;
		if (src->ns_scope == NULL || (ns && strcmp(ns, src->ns_scope) != 0))
			return NULL;
		ns = src->ns_scope;
	}
	return ns;
}

void sources_namespace_changed(struct store *st, const char *ns)
{
	(void)st;
	if (kube_src == NULL || kube_src->ns_scope == NULL)
		return; /* watching every namespace: the lists filter */
	if (ns && strcmp(ns, kube_src->ns_scope) == 0)
		return;
	if (ns == NULL && kube_src->ns_narrowed)
		return; /* all was asked already, and the server allows this one namespace: asking again changes nothing */
	/* watching one namespace: watch the new scope instead */
	free(scope.ns);
	scope.ns = ns ? xstrdup(ns) : NULL;
	scope.all = ns == NULL;
	scope.set = true;
	char *context = xstrdup(kube_src->name), *err = NULL;
	close_kube();
	if (open_kube(context, &err) == NULL)
		ui_error("namespace %s: %s", ns ? ns : "all", err ? err : "cannot open the context");
	free(err);
	free(context);
}

const char *const *sources_context_names(size_t *n)
{
	if (ctx_names)
		kube_context_names_free(ctx_names);
	ctx_names = kube_context_names(n);
	/* the local engine is a context of its own (core/connect.h), listed last */
	free(ctx_list);
	ctx_list = xcalloc(*n + 2, sizeof *ctx_list);
	for (size_t i = 0; i < *n; i++)
		ctx_list[i] = ctx_names[i];
	if (!opts_global()->no_engine)
		ctx_list[(*n)++] = "engine";
	return ctx_list;
}

const char *sources_current_context(void)
{
	if (kube_src)
		return kube_src->name;
	return engine_src && !engine_src->closed ? "engine" : NULL;
}

/* The engine as the context: the kube source closed, the engine's service opened (when it is not yet). */
static int set_engine_context(char **err)
{
	if (engine_src == NULL || engine_src->closed) {
		engine_src = NULL;
		if (open_service(the_store, err) == NULL)
			return -1;
	}
	close_kube();
	ui_set_namespace(NULL);
	return 0;
}

static void close_engine(void)
{
	if (engine_src == NULL || engine_src->closed)
		return;
	ui_forget_source(engine_src);
	source_close(engine_src);
	engine_src = NULL;
}

int sources_set_context(const char *name, char **err)
{
	if (connect_is_engine_name(name) && !opts_global()->no_engine)
		return set_engine_context(err);
	size_t n;
	const char *const *names = sources_context_names(&n);
	size_t i;
	for (i = 0; i < n; i++)
		if (strcmp(names[i], name) == 0)
			break;
	if (i == n) {
		*err = xstrdup("no such context in the kubeconfig");
		return -1;
	}
	/* the new context's own namespace, unless every namespace was asked for */
	if (!scope.set)
		scope.all = opts_global()->all_ns;
	free(scope.ns);
	scope.ns = NULL;
	scope.set = true;
	close_kube();
	if (open_kube(name, err) == NULL)
		return -1;
	close_engine(); /* one context at a time: several only when asked on the command line */
	ui_set_namespace(kube_src->ns_scope);
	return 0;
}

void sources_free(void)
{
	if (ctx_names)
		kube_context_names_free(ctx_names);
	ctx_names = NULL;
	free(ctx_list);
	ctx_list = NULL;
	free(scope.ns);
	memset(&scope, 0, sizeof scope);
	kube_src = NULL;
	engine_src = NULL;
}
