/* Opening the dashboard's sources and reading kvcon's config file. */
#include "ui/sources.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "core/config.h"
#include "core/log.h"
#include "core/opts.h"
#include "core/xmalloc.h"
#include "model/source.h"
#include "engine/engine.h"
#include "engine/service.h"
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

/* The kube source in use (one context at a time) and the store it feeds. */
static struct source *kube_src;
static struct store *the_store;
static char **ctx_names;

size_t sources_live_count(void)
{
	size_t n = 0;
	for (size_t i = 0; i < source_count(); i++)
		if (!source_get(i)->closed)
			n++;
	return n;
}

static struct source *open_kube(const char *context, char **err)
{
	struct source *src = kube_open(the_store, context, err);
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

/* The engine service of the root the dashboard would open (engine/service.h): its API as a kube source named as
 * the host. One is started on demand (engine.service = auto; up to 2 minutes: the embedded driver's first open
 * probes QEMU); NULL with *err when none answers and none could be started. */
static struct source *open_service(struct store *st, char **err)
{
	struct kvcon_opts *o = opts_global();
	char *path = engine_service_socket(o->uris, o->nuris);
	struct source *src = NULL;
	bool up = access(path, F_OK) == 0 && kube_http_unix_healthy(path, 3000);
	if (!up && engine_service_mode() == ENGINE_SERVICE_AUTO)
		up = engine_service_spawn(o->uris, o->nuris, path, healthy, 120000, err) == 0;
	else if (!up)
		*err = xasprintf("no engine service answers on %s (engine.service = use): start one with `kvcon engine "
				 "serve`, or set engine.service = auto",
				 path);
	if (up) {
		char hn[256] = "localhost";
		gethostname(hn, sizeof hn - 1);
		struct kube_open_opts ko = {
			.unix_socket = path, .name = hn, .all_namespaces = true, .live_notice = true
		};
		src = kube_open_ex(st, NULL, &ko, err);
		if (src)
			src->engine_uris = engine_service_uris(o->uris, o->nuris);
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
	bool kube_asked = o->context || o->kubeconfig;
	char *kerr = NULL;
	struct source *k = open_kube(o->context, &kerr);
	if (k == NULL && kube_asked) {
		/* the user named a kubeconfig or context: failing to use it is an error, not a fallback */
		*err = kerr;
		return -1;
	}
	if (k == NULL)
		log_info("ui: no kube source: %s", kerr ? kerr : "?");
	free(kerr);
	/* the local engine (every -c URI, or the embedded default when there is no cluster and no -c), through its
	 * service */
	if (!o->no_engine && (o->nuris > 0 || k == NULL)) {
		char *serr = NULL;
		if (open_service(st, &serr) == NULL) {
			if (o->nuris == 0 && k == NULL)
				*err = xasprintf("no kubeconfig (~/.kube/config or $KUBECONFIG), and the local engine cannot "
						 "open: %s",
						 serr ? serr : "?");
			else /* -c asked for the engine: what the command line says (cmd/session.c), word for word */
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
	/* watching one namespace: watch the new scope instead */
	struct kvcon_opts *o = opts_global();
	free(o->ns);
	o->ns = ns ? xstrdup(ns) : NULL;
	o->all_ns = ns == NULL;
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
	return (const char *const *)ctx_names;
}

const char *sources_current_context(void)
{
	return kube_src ? kube_src->name : NULL;
}

int ui_set_context(const char *name, char **err)
{
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
	struct kvcon_opts *o = opts_global();
	free(o->ns);
	o->ns = NULL;
	close_kube();
	if (open_kube(name, err) == NULL)
		return -1;
	ui_set_namespace(kube_src->ns_scope);
	return 0;
}

void sources_free(void)
{
	engine_close_all();
	if (ctx_names)
		kube_context_names_free(ctx_names);
	ctx_names = NULL;
	kube_src = NULL;
}
