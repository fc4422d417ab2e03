/* The kube provider: a source per kubeconfig context, discovery of kubevirt.io/v1, one reflector per kind, and
 * provider_ops (lifecycle actions through KubeVirt's subresources, raw object fetches). */
#include "kube/kube.h"

#include <json.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/log.h"
#include "core/loop.h"
#include "core/opts.h"
#include "core/util.h"
#include "core/xmalloc.h"
#include "kube/http.h"
#include "kube/klog.h"
#include "kube/kconsole.h"
#include "kube/kubeconfig.h"
#include "kube/reflector.h"
#include "model/registry.h"

#define DISCOVERY_TIMEOUT_MS 15000
#define ACTION_TIMEOUT_MS 30000
#define DISCOVERY_RETRY_MAX_MS 30000

struct kube_act;

struct kube_src {
	struct source *src;
	struct store *st;
	struct kube_config *kc;
	struct kube_http *http;
	struct kube_reflector *refl[OBJ_KIND_COUNT];
	struct kube_open_opts opts;
	char *selector;
	char *ns;          /* scope, NULL: every namespace */
	char *fallback_ns; /* for a 403 on a cluster-wide list */
	struct kube_req *disc_req, *ver_req;
	struct loop_timer *disc_timer;
	struct kube_req *notice_req; /* an engine service's notices, read again (NOTICE_EVERY_MS) */
	struct loop_timer *notice_timer;
	int disc_failures;
	bool discovered;
	struct kube_act *acts;
};

struct kube_act {
	struct kube_src *ks;
	struct kube_req *req;
	enum action act;
	action_done_cb done;
	fetch_done_cb fdone;
	names_done_cb ndone;
	void *arg;
	char *ns, *name;
	uint32_t act_flags;       /* the request's (ENGINE_MIG_*) */
	char *vmim;               /* an offline migration: its object, read until it has ended */
	struct loop_timer *timer; /* the next read of it */
	struct kube_act *next, *prev;
};

static const struct provider_ops kube_ops;

static struct kube_src *ks_of(struct source *src)
{
	return src && src->ops == &kube_ops ? src->priv : NULL;
}

struct kube_http *kube_source_http(struct source *src)
{
	struct kube_src *ks = ks_of(src);
	return ks ? ks->http : NULL;
}

bool kube_source_synced(struct source *src)
{
	struct kube_src *ks = ks_of(src);
	if (ks == NULL || !ks->discovered)
		return false;
	for (int k = 0; k < OBJ_KIND_COUNT; k++)
		if (ks->refl[k] && !kube_reflector_synced(ks->refl[k]))
			return false;
	return true;
}

char *kube_object_path(enum obj_kind kind, const char *ns, const char *name)
{
	const struct kind_def *k = registry_kind_of_obj(kind);
	return k ? registry_kind_path(k, ns, name) : NULL;
}

/* --- discovery --------------------------------------------------------------------------------------- */

static void start_discovery(struct kube_src *ks);

static void set_all_health(struct kube_src *ks, enum watch_state s, const char *msg)
{
	for (int k = 0; k < OBJ_KIND_COUNT; k++)
		if (ks->opts.kinds & KUBE_KIND_BIT(k))
			source_set_health(ks->src, (enum obj_kind)k, s, msg);
}

static void start_reflectors(struct kube_src *ks)
{
	for (int k = 0; k < OBJ_KIND_COUNT; k++) {
		if (!(ks->opts.kinds & KUBE_KIND_BIT(k)) || ks->refl[k])
			continue;
		struct kube_reflector_cfg cfg = {
			.http = ks->http,
			.st = ks->st,
			.src = ks->src,
			.kind = (enum obj_kind)k,
			.ns = ks->ns,
			.fallback_ns = ks->fallback_ns,
			.selector = !ks->opts.selector_kinds || (ks->opts.selector_kinds & KUBE_KIND_BIT(k)) ? ks->selector
												     : NULL,
			.max_failures = ks->opts.max_failures,
			.page_limit = ks->opts.page_limit,
			.identity_only = ks->opts.identity_only,
			.watch_batch_ms = ks->opts.watch_batch_ms,
		};
		ks->refl[k] = kube_reflector_new(&cfg);
		kube_reflector_start(ks->refl[k]);
	}
}

static void on_disc_timer(void *arg)
{
	struct kube_src *ks = arg;
	ks->disc_timer = NULL;
	start_discovery(ks);
}

static void version_done(void *arg, const struct kube_resp *resp)
{
	struct kube_src *ks = arg;
	ks->ver_req = NULL;
	if (resp->status != 200)
		return;
	struct json_object *o = json_tokener_parse(resp->body), *v;
	if (o && json_object_object_get_ex(o, "gitVersion", &v) && json_object_is_type(v, json_type_string)) {
		free(ks->src->version);
		ks->src->version = util_escape_display(json_object_get_string(v));
	}
	json_object_put(o);
}

static void disc_done(void *arg, const struct kube_resp *resp)
{
	struct kube_src *ks = arg;
	ks->disc_req = NULL;
	if (resp->status == 200) {
		ks->discovered = true;
		ks->disc_failures = 0;
		log_info("kube: %s: kubevirt.io/v1 is served by %s", ks->src->name, ks->src->server);
		start_reflectors(ks);
		if (ks->opts.no_version)
			return;
		struct kube_http_req q = {
			.path = "/apis/subresources.kubevirt.io/v1/version",
			.timeout_ms = DISCOVERY_TIMEOUT_MS,
			.on_done = version_done,
			.arg = ks,
		};
		ks->ver_req = kube_http_start(ks->http, &q);
		return;
	}
	char *msg;
	bool retry = true;
	if (resp->status == 404) {
		msg = xasprintf("KubeVirt (kubevirt.io/v1) is not served by %s", ks->src->server);
		retry = ks->opts.max_failures == 0;
	} else if (resp->status == 401) {
		char *m = kube_http_error_message(resp);
		msg = xasprintf("%s refused the credentials of user %s (context %s): %s (401): they are wrong or have "
				"expired; log in again, or renew the token or certificate in the kubeconfig",
				ks->src->server, ks->kc->user_name ? ks->kc->user_name : "-", ks->kc->context, m);
		free(m);
		retry = ks->opts.max_failures == 0;
	} else if (resp->status == 403) {
		char *m = kube_http_error_message(resp);
		msg = xasprintf("%s: %s", ks->src->server, m);
		free(m);
		retry = ks->opts.max_failures == 0;
	} else {
		char *m = kube_http_error_message(resp);
		if (resp->status == 0)
			msg = xasprintf("cannot reach %s (context %s): %s: is the cluster up, and is that the server the "
					"kubeconfig should name?",
					ks->src->server, ks->kc->context, m);
		else
			msg = xasprintf("cannot reach %s: %s", ks->src->server, m);
		free(m);
		ks->disc_failures++;
		/* a command gives up at the first server that did not answer (as kubectl does), and after a few
		 * server errors (each printed as it happens) */
		if (ks->opts.max_failures > 0 && (resp->status == 0 || ks->disc_failures >= ks->opts.max_failures * 2))
			retry = false;
	}
	log_warn("kube: %s: %s", ks->src->name, msg);
	enum watch_state st = retry ? WATCH_RECONNECTING : WATCH_ERROR;
	if (resp->status == 403 && !retry)
		st = WATCH_FORBIDDEN;
	set_all_health(ks, st, msg);
	free(msg);
	if (!retry)
		return;
	int shift = ks->disc_failures < 8 ? ks->disc_failures : 8;
	uint64_t ms = 250u << shift;
	if (resp->status == 404 || resp->status == 401 || resp->status == 403)
		ms = DISCOVERY_RETRY_MAX_MS;
	if (ms > DISCOVERY_RETRY_MAX_MS)
		ms = DISCOVERY_RETRY_MAX_MS;
	if (ks->opts.max_failures > 0 && ms > 4000)
		ms = 4000; /* a one-shot command retries within its own deadline */
	ms = ms / 2 + (uint64_t)(rand() % (int)(ms / 2 + 1));
	if (ks->opts.max_failures > 0) {
		/* a one-shot command says what it retries, as it happens */
		char *m = kube_http_error_message(resp);
		char *url = kube_http_url(ks->http, "/apis/kubevirt.io/v1");
		if (resp->status)
			log_eprintf("kvcon: retrying: %ld from %s (%d): %s\n", resp->status, url, ks->disc_failures, m);
		else
			log_eprintf("kvcon: retrying: no answer from %s (%d): %s\n", url, ks->disc_failures, m);
		free(url);
		free(m);
	}
	for (int k = 0; k < OBJ_KIND_COUNT; k++)
		ks->src->health[k].next_retry_ms = loop_now() + ms;
	ks->disc_timer = loop_timer_add(ms, on_disc_timer, ks);
}

static void start_discovery(struct kube_src *ks)
{
	struct kube_http_req q = {
		.path = "/apis/kubevirt.io/v1",
		.timeout_ms = DISCOVERY_TIMEOUT_MS,
		.on_done = disc_done,
		.arg = ks,
	};
	ks->disc_req = kube_http_start(ks->http, &q);
}

/* --- open -------------------------------------------------------------------------------------------- */

/* The engine service's notices (KVM unusable and guests under TCG, unreadable records): each node's
 * kvcon.io/notice annotation (docs/ENGINE-SERVICE.md) in body, the service's NodeList: the text alone for one
 * node, "NODE: text; ..." for several. NULL when there is none (or body is not a list). Caller frees. */
static char *engine_notice_of(const char *body)
{
	json_object *list = body ? json_tokener_parse(body) : NULL;
	json_object *items = NULL;
	if (list == NULL || !json_object_object_get_ex(list, "items", &items) ||
	    !json_object_is_type(items, json_type_array)) {
		json_object_put(list);
		return NULL;
	}
	struct buf b;
	buf_init(&b);
	size_t n = json_object_array_length(items), shown = 0;
	for (size_t i = 0; i < n; i++) {
		json_object *md = NULL, *an = NULL, *v = NULL, *nm = NULL;
		json_object *it = json_object_array_get_idx(items, i);
		if (!json_object_object_get_ex(it, "metadata", &md) || !json_object_object_get_ex(md, "annotations", &an) ||
		    !json_object_object_get_ex(an, "kvcon.io/notice", &v) || !json_object_is_type(v, json_type_string))
			continue;
		json_object_object_get_ex(md, "name", &nm);
		if (n > 1)
			buf_printf(&b, "%s%s: %s", shown ? "; " : "", nm ? json_object_get_string(nm) : "?",
				   json_object_get_string(v));
		else
			buf_add_str(&b, json_object_get_string(v));
		shown++;
	}
	json_object_put(list);
	if (shown == 0) {
		buf_free(&b);
		return NULL;
	}
	buf_add(&b, "", 1);
	return b.data;
}

/* The engine service's notices as its nodes say them now (engine_notice_of), read at open (once a boot on
 * stderr, as the engine in-process had them from its first connect). */
char *kube_engine_notice(const char *sock)
{
	char *body = kube_http_unix_get(sock, "/api/v1/nodes", 3000);
	char *notice = engine_notice_of(body);
	free(body);
	return notice;
}

/* An engine source opened with live_notice (the dashboard) reads its nodes' notices again every NOTICE_EVERY_MS
 * (the service syncs each host every 10 s): a record moved away clears the header's line, a host's new notice
 * shows. */
#define NOTICE_EVERY_MS 10000

static void notice_read(void *arg);

static void notice_done(void *arg, const struct kube_resp *resp)
{
	struct kube_src *ks = arg;
	ks->notice_req = NULL;
	if (resp->status == 200) {
		char *notice = engine_notice_of(resp->body);
		if (!util_str_eq(notice, ks->src->notice)) {
			if (notice)
				log_warn("kube: the engine service's notice: %s", notice);
			else
				log_info("kube: the engine service's notice is gone");
			source_set_notice(ks->src, notice);
		}
		free(notice);
	}
	ks->notice_timer = loop_timer_add(NOTICE_EVERY_MS, notice_read, ks);
}

static void notice_read(void *arg)
{
	struct kube_src *ks = arg;
	ks->notice_timer = NULL;
	struct kube_http_req q = { .path = "/api/v1/nodes", .timeout_ms = 5000, .on_done = notice_done, .arg = ks };
	ks->notice_req = kube_http_start(ks->http, &q);
}

struct source *kube_open_ex(struct store *st, const char *context, const struct kube_open_opts *o, char **err)
{
	struct kvcon_opts *g = opts_global();
	*err = NULL;
	const char *want_ns = o && o->ns_set ? o->ns : g->ns;
	bool all_ns = o && (o->all_namespaces || (!o->one_ns && g->all_ns));
	if (o == NULL)
		all_ns = g->all_ns;
	struct kube_config *kc = o && o->unix_socket
					 ? kube_config_unix(o->unix_socket, o->name ? o->name : "kvcon-engine", want_ns)
					 : kube_config_load(g->kubeconfig, context ? context : g->context, err);
	if (kc == NULL)
		return NULL;
	struct kube_http *http = kube_http_new(kc, err);
	if (http == NULL) {
		kube_config_free(kc);
		return NULL;
	}
	char *name = xstrdup(kc->context);
	for (int i = 2; source_find(name); i++) { /* the same context opened twice stays distinguishable */
		free(name);
		name = xasprintf("%s#%d", kc->context, i);
	}
	struct source *src = source_new(SOURCE_KUBE, name);
	free(name);
	src->engine = o && o->unix_socket;
	if (src->engine) {
		src->notice = kube_engine_notice(o->unix_socket);
		if (src->notice) /* kept in every client's log, as the engine in-process kept it */
			log_warn("kube: the engine service's notice: %s", src->notice);
	}
	struct kube_src *ks = xcalloc(1, sizeof *ks);
	ks->src = src;
	ks->st = st;
	ks->kc = kc;
	ks->http = http;
	if (o)
		ks->opts = *o;
	if (ks->opts.kinds == 0)
		ks->opts.kinds = KUBE_KINDS_ALL;
	ks->selector = xstrdup0(o ? o->selector : NULL);
	ks->opts.selector = NULL;
	ks->opts.unix_socket = ks->opts.name = ks->opts.ns = NULL; /* the caller's strings, used above only */
	if (src->engine && ks->opts.live_notice)
		ks->notice_timer = loop_timer_add(NOTICE_EVERY_MS, notice_read, ks);
	if (all_ns) {
		ks->ns = NULL;
		ks->fallback_ns = xstrdup(kc->ns);
	} else {
		ks->ns = xstrdup(want_ns && *want_ns ? want_ns : kc->ns);
	}
	src->ops = &kube_ops;
	src->priv = ks;
	src->server = xstrdup(kc->server);
	src->user = xstrdup0(kc->user_name);
	src->ns_scope = xstrdup0(ks->ns);
	src->readonly = g->readonly;
	set_all_health(ks, WATCH_LOADING, NULL);
	log_info("kube: context %s (%s), server %s, user %s, namespace %s", kc->context, kc->origin, kc->server,
		 kc->user_name ? kc->user_name : "-", ks->ns ? ks->ns : "(all)");
	start_discovery(ks);
	return src;
}


char **kube_context_names(size_t *n)
{
	char *err = NULL;
	char **names = kube_config_context_names(opts_global()->kubeconfig, n, &err);
	if (names == NULL) {
		log_warn("kube: %s", err);
		free(err);
		*n = 0;
		names = xcalloc(1, sizeof *names);
	}
	return names;
}

void kube_context_names_free(char **names)
{
	kube_config_names_free(names);
}

/* --- actions ----------------------------------------------------------------------------------------- */

static struct kube_act *act_new(struct kube_src *ks, enum action a, const char *ns, const char *name, void *arg)
{
	struct kube_act *x = xcalloc(1, sizeof *x);
	x->ks = ks;
	x->act = a;
	x->arg = arg;
	x->ns = xstrdup0(ns);
	x->name = xstrdup0(name);
	x->next = ks->acts;
	if (ks->acts)
		ks->acts->prev = x;
	ks->acts = x;
	return x;
}

static void act_free(struct kube_act *x)
{
	struct kube_src *ks = x->ks;
	if (x->prev)
		x->prev->next = x->next;
	else if (ks->acts == x)
		ks->acts = x->next;
	if (x->next)
		x->next->prev = x->prev;
	loop_timer_cancel(x->timer);
	free(x->ns);
	free(x->name);
	free(x->vmim);
	free(x);
}

static void act_finish(struct kube_act *x, const struct kube_resp *resp)
{
	x->req = NULL;
	if (resp->status >= 200 && resp->status < 300) {
		log_info("kube: %s %s/%s: done", action_name(x->act), x->ns, x->name);
		x->done(x->arg, 0, NULL);
	} else {
		char *m = kube_http_error_message(resp);
		log_warn("kube: %s %s/%s: %s", action_name(x->act), x->ns, x->name, m);
		x->done(x->arg, resp->status ? (int)resp->status : -1, m);
		free(m);
	}
	act_free(x);
}

static void act_done(void *arg, const struct kube_resp *resp)
{
	act_finish(arg, resp);
}

/* migrate-abort, step 2: the VirtualMachineInstanceMigration is deleted. */
static void abort_list_done(void *arg, const struct kube_resp *resp)
{
	struct kube_act *x = arg;
	x->req = NULL;
	if (resp->status != 200) {
		act_finish(x, resp);
		return;
	}
	struct json_object *root = json_tokener_parse(resp->body), *items;
	char *target = NULL;
	if (root && json_object_object_get_ex(root, "items", &items) && json_object_is_type(items, json_type_array)) {
		for (size_t i = 0; i < json_object_array_length(items) && !target; i++) {
			struct json_object *it = json_object_array_get_idx(items, i), *spec, *vmi, *st, *ph, *meta, *nm;
			if (!json_object_object_get_ex(it, "spec", &spec) || !json_object_object_get_ex(spec, "vmiName", &vmi) ||
			    !json_object_is_type(vmi, json_type_string) || strcmp(json_object_get_string(vmi), x->name) != 0)
				continue;
			const char *phase = "";
			if (json_object_object_get_ex(it, "status", &st) && json_object_object_get_ex(st, "phase", &ph) &&
			    json_object_is_type(ph, json_type_string))
				phase = json_object_get_string(ph);
			if (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0)
				continue;
			if (json_object_object_get_ex(it, "metadata", &meta) && json_object_object_get_ex(meta, "name", &nm) &&
			    json_object_is_type(nm, json_type_string))
				target = xstrdup(json_object_get_string(nm));
		}
	}
	json_object_put(root);
	if (target == NULL) {
		char *m = xasprintf("no migration in progress for %s/%s", x->ns, x->name);
		x->done(x->arg, -1, m);
		free(m);
		act_free(x);
		return;
	}
	char *path = registry_kind_path(registry_kind(KIND_VMIM), x->ns, target);
	free(target);
	struct kube_http_req q = {
		.method = "DELETE", .path = path, .timeout_ms = ACTION_TIMEOUT_MS, .on_done = act_done, .arg = x
	};
	x->req = kube_http_start(x->ks->http, &q);
	free(path);
}

/* The JSON body of a subresource call (StopOptions.gracePeriod, RestartOptions.gracePeriodSeconds,
 * MigrateOptions.addedNodeSelector). Caller frees. */
static char *act_body(const struct action_req *req)
{
	struct json_object *b = json_object_new_object();
	if (req->act == ACT_FORCE_STOP)
		json_object_object_add(b, "gracePeriod", json_object_new_int(req->grace_period > 0 ? req->grace_period : 0));
	else if (req->act == ACT_STOP && req->grace_period >= 0)
		json_object_object_add(b, "gracePeriod", json_object_new_int(req->grace_period));
	else if (req->act == ACT_RESTART && req->grace_period >= 0)
		json_object_object_add(b, "gracePeriodSeconds", json_object_new_int(req->grace_period));
	else if (req->act == ACT_MIGRATE && req->target && *req->target) {
		struct json_object *sel = json_object_new_object();
		json_object_object_add(sel, "kubernetes.io/hostname", json_object_new_string(req->target));
		json_object_object_add(b, "addedNodeSelector", sel);
	}
	char *s = xstrdup(json_object_to_json_string_ext(b, JSON_C_TO_STRING_PLAIN));
	json_object_put(b);
	return s;
}

/* A migration with the engine's options: a VirtualMachineInstanceMigration (generateName
 * kubevirt-migrate-vm-, as virt-api names the subresource's) whose kvcon.io/ annotations carry them (the engine
 * service validates them; docs/ENGINE-SERVICE.md). Caller frees. */
static char *vmim_body(const struct action_req *req)
{
	struct json_object *b = json_object_new_object(), *md = json_object_new_object(),
			   *an = json_object_new_object(), *spec = json_object_new_object();
	json_object_object_add(b, "apiVersion", json_object_new_string("kubevirt.io/v1"));
	json_object_object_add(b, "kind", json_object_new_string("VirtualMachineInstanceMigration"));
	json_object_object_add(md, "generateName", json_object_new_string("kubevirt-migrate-vm-"));
	if (req->mig_uri && *req->mig_uri)
		json_object_object_add(an, "kvcon.io/migrate-uri", json_object_new_string(req->mig_uri));
	char n[32];
	if (req->timeout > 0) {
		snprintf(n, sizeof n, "%d", req->timeout);
		json_object_object_add(an, "kvcon.io/migration-timeout", json_object_new_string(n));
	}
	if (req->bandwidth > 0) {
		snprintf(n, sizeof n, "%lu", req->bandwidth);
		json_object_object_add(an, "kvcon.io/migration-bandwidth", json_object_new_string(n));
	}
	char fl[64] = "";
	static const struct {
		uint32_t flag;
		const char *name;
	} names[] = { { ENGINE_MIG_AUTO_CONVERGE, "auto-converge" },
		      { ENGINE_MIG_POSTCOPY, "postcopy" },
		      { ENGINE_MIG_COPY_STORAGE, "copy-storage" },
		      { ENGINE_MIG_OFFLINE, "offline" } };
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (req->flags & names[i].flag)
			snprintf(fl + strlen(fl), sizeof fl - strlen(fl), "%s%s", fl[0] ? "," : "", names[i].name);
	if (fl[0])
		json_object_object_add(an, "kvcon.io/migration-options", json_object_new_string(fl));
	json_object_object_add(md, "annotations", an);
	json_object_object_add(b, "metadata", md);
	json_object_object_add(spec, "vmiName", json_object_new_string(req->name));
	if (req->target && *req->target) {
		struct json_object *sel = json_object_new_object();
		json_object_object_add(sel, "kubernetes.io/hostname", json_object_new_string(req->target));
		json_object_object_add(spec, "addedNodeSelector", sel);
	}
	json_object_object_add(b, "spec", spec);
	char *s = xstrdup(json_object_to_json_string_ext(b, JSON_C_TO_STRING_PLAIN));
	json_object_put(b);
	return s;
}

static void vmim_read(void *arg, const struct kube_resp *resp);

static void vmim_reread(void *arg)
{
	struct kube_act *x = arg;
	x->timer = NULL;
	char *path = registry_kind_path(registry_kind(KIND_VMIM), x->ns, x->vmim);
	struct kube_http_req q = { .path = path, .timeout_ms = ACTION_TIMEOUT_MS, .on_done = vmim_read, .arg = x };
	x->req = kube_http_start(x->ks->http, &q);
	free(path);
}

/* The migration object created (or read again): a migration the engine refused is Failed, its condition's
 * message the error (as the subresource's 409). A live one is done once created (its VMI's migrationState
 * follows it); an offline one (no VMI) once its object says Succeeded, read every 200 ms. */
static void vmim_read(void *arg, const struct kube_resp *resp)
{
	struct kube_act *x = arg;
	x->req = NULL;
	struct json_object *o = resp->status == 201 || (resp->status == 200 && x->vmim) ? json_tokener_parse(resp->body)
										       : NULL;
	struct json_object *st, *ph, *conds, *md, *nm;
	const char *phase = o && json_object_object_get_ex(o, "status", &st) &&
				    json_object_object_get_ex(st, "phase", &ph) && json_object_is_type(ph, json_type_string)
			    ? json_object_get_string(ph)
			    : "";
	if (o && x->vmim == NULL && (x->act_flags & ENGINE_MIG_OFFLINE) && json_object_object_get_ex(o, "metadata", &md) &&
	    json_object_object_get_ex(md, "name", &nm) && json_object_is_type(nm, json_type_string))
		x->vmim = xstrdup(json_object_get_string(nm));
	if (o && x->vmim && strcmp(phase, "Succeeded") != 0 && strcmp(phase, "Failed") != 0) {
		json_object_put(o);
		x->timer = loop_timer_add(200, vmim_reread, x);
		return;
	}
	if (o && strcmp(phase, "Failed") == 0) {
		const char *why = "refused";
		struct json_object *c0, *msg;
		if (json_object_object_get_ex(st, "conditions", &conds) && json_object_is_type(conds, json_type_array) &&
		    (c0 = json_object_array_get_idx(conds, 0)) && json_object_object_get_ex(c0, "message", &msg) &&
		    json_object_is_type(msg, json_type_string))
			why = json_object_get_string(msg);
		x->req = NULL;
		log_warn("kube: %s %s/%s: %s", action_name(x->act), x->ns, x->name, why);
		x->done(x->arg, 409, why);
		json_object_put(o);
		act_free(x);
		return;
	}
	if (o)
		json_object_put(o);
	act_finish(x, resp);
}

static bool mig_has_opts(const struct action_req *req)
{
	return req->act == ACT_MIGRATE && (req->flags || (req->mig_uri && *req->mig_uri) || req->timeout > 0 ||
					   req->bandwidth > 0);
}

static int kube_action(struct source *src, const struct action_req *req, action_done_cb done, void *arg, char **err)
{
	struct kube_src *ks = ks_of(src);
	*err = NULL;
	if ((unsigned)req->act >= ACT_COUNT || ks == NULL) {
		*err = xstrdup("unknown action");
		return -1;
	}
	if (action_is_mutating(req->act) && (src->readonly || opts_global()->readonly)) {
		*err = xasprintf("read-only mode (--readonly): %s %s/%s refused", action_name(req->act), req->ns, req->name);
		return -1;
	}
	if (req->ns == NULL || req->name == NULL || *req->ns == '\0' || *req->name == '\0') {
		*err = xstrdup("an action needs a namespace and a name");
		return -1;
	}
	if (mig_has_opts(req) && !src->engine) {
		*err = xstrdup("the migration's options (bandwidth, timeout, migrate URI, auto-converge, postcopy, "
			       "copy-storage, offline) are the kvcon engine's: a KubeVirt cluster has no field for them");
		return -1;
	}
	struct kube_act *x = act_new(ks, req->act, req->ns, req->name, arg);
	x->done = done;
	char *path = NULL, *body = NULL;
	struct kube_http_req q = { .timeout_ms = ACTION_TIMEOUT_MS, .on_done = act_done, .arg = x };
	if (req->act == ACT_MIGRATE_ABORT) {
		path = registry_kind_path(registry_kind(KIND_VMIM), req->ns, NULL);
		q.on_done = abort_list_done;
	} else if (mig_has_opts(req)) {
		path = registry_kind_path(registry_kind(KIND_VMIM), req->ns, NULL);
		body = vmim_body(req);
		q.method = "POST";
		q.body = body;
		q.body_len = strlen(body);
		q.on_done = vmim_read;
		x->act_flags = req->flags;
	} else if (req->act == ACT_DELETE) {
		char *p = kube_object_path(OBJ_VM, req->ns, req->name);
		/* deleteVolumes: the engine service's extension (a cluster is never sent it: cmd_action refuses) */
		bool dv = (req->flags & ACTION_DELETE_VOLUMES) != 0;
		if (req->grace_period >= 0)
			path = xasprintf("%s?gracePeriodSeconds=%d%s", p, req->grace_period, dv ? "&deleteVolumes=true" : "");
		else
			path = xasprintf("%s%s", p, dv ? "?deleteVolumes=true" : "");
		free(p);
		q.method = "DELETE";
	} else {
		const struct action_def *ad = registry_action(req->act);
		path = registry_subresource_path(registry_kind(ad->on), req->ns, req->name, ad->subresource);
		body = act_body(req);
		q.method = "PUT";
		q.body = body;
		q.body_len = strlen(body);
	}
	q.path = path;
	log_info("kube: %s %s/%s on %s", action_name(req->act), req->ns, req->name, src->name);
	x->req = kube_http_start(ks->http, &q);
	free(path);
	free(body);
	return 0;
}

static void fetch_done(void *arg, const struct kube_resp *resp)
{
	struct kube_act *x = arg;
	x->req = NULL;
	if (resp->status == 200) {
		x->fdone(x->arg, 0, resp->body, resp->len);
	} else {
		char *m = kube_http_error_message(resp);
		x->fdone(x->arg, resp->status ? (int)resp->status : -1, m, strlen(m));
		free(m);
	}
	act_free(x);
}

static int kube_fetch_raw(struct source *src, enum obj_kind kind, const char *ns, const char *name,
			  fetch_done_cb done, void *arg, char **err)
{
	struct kube_src *ks = ks_of(src);
	*err = NULL;
	char *path = ks ? kube_object_path(kind, ns, name) : NULL;
	if (path == NULL) {
		*err = xstrdup("cannot fetch this object");
		return -1;
	}
	struct kube_act *x = act_new(ks, ACT_COUNT, ns, name, arg);
	x->fdone = done;
	struct kube_http_req q = { .path = path, .timeout_ms = ACTION_TIMEOUT_MS, .on_done = fetch_done, .arg = x };
	x->req = kube_http_start(ks->http, &q);
	free(path);
	return 0;
}

static void ns_list_done(void *arg, const struct kube_resp *resp)
{
	struct kube_act *x = arg;
	x->req = NULL;
	if (resp->status != 200) {
		char *m = kube_http_error_message(resp);
		x->ndone(x->arg, resp->status ? (int)resp->status : -1, NULL, 0, m);
		free(m);
		act_free(x);
		return;
	}
	struct json_object *o = json_tokener_parse(resp->body), *items = NULL;
	if (o == NULL || !json_object_object_get_ex(o, "items", &items) || !json_object_is_type(items, json_type_array)) {
		x->ndone(x->arg, -1, NULL, 0, "the namespace list is not a NamespaceList");
		goto out;
	}
	size_t n = json_object_array_length(items), k = 0;
	const char **names = xcalloc(n ? n : 1, sizeof *names);
	for (size_t i = 0; i < n; i++) {
		struct json_object *meta, *name;
		if (json_object_object_get_ex(json_object_array_get_idx(items, i), "metadata", &meta) &&
		    json_object_object_get_ex(meta, "name", &name) && json_object_is_type(name, json_type_string))
			names[k++] = json_object_get_string(name);
	}
	x->ndone(x->arg, 0, names, k, NULL);
	free(names);
out:
	json_object_put(o);
	act_free(x);
}

static int kube_list_namespaces(struct source *src, names_done_cb done, void *arg, char **err)
{
	struct kube_src *ks = ks_of(src);
	*err = NULL;
	if (ks == NULL) {
		*err = xstrdup("not a cluster");
		return -1;
	}
	struct kube_act *x = act_new(ks, ACT_COUNT, NULL, NULL, arg);
	x->ndone = done;
	struct kube_http_req q = {
		.path = "/api/v1/namespaces",
		.timeout_ms = ACTION_TIMEOUT_MS,
		.on_done = ns_list_done,
		.arg = x,
	};
	x->req = kube_http_start(ks->http, &q);
	return 0;
}

static void kube_destroy(struct source *src)
{
	struct kube_src *ks = ks_of(src);
	if (ks == NULL)
		return;
	for (int k = 0; k < OBJ_KIND_COUNT; k++)
		kube_reflector_free(ks->refl[k]);
	kube_http_cancel(ks->disc_req);
	kube_http_cancel(ks->ver_req);
	loop_timer_cancel(ks->disc_timer);
	kube_http_cancel(ks->notice_req);
	loop_timer_cancel(ks->notice_timer);
	while (ks->acts) {
		kube_http_cancel(ks->acts->req);
		act_free(ks->acts);
	}
	kube_http_free(ks->http);
	kube_config_free(ks->kc);
	free(ks->selector);
	free(ks->ns);
	free(ks->fallback_ns);
	free(ks);
	src->priv = NULL;
}

/* The streams of a cluster source, opened over its client (kube/kconsole.c, kube/klog.c) */
static struct stream *open_console(struct source *src, const char *ns, const char *name, char **err)
{
	return kube_console_open(kube_source_http(src), src->name, ns, name, err);
}

static struct stream *open_vnc(struct source *src, const char *ns, const char *name, char **err)
{
	return kube_vnc_open(kube_source_http(src), src->name, ns, name, err);
}

static struct stream *open_portforward(struct source *src, int kind, const char *ns, const char *name, int port,
				       bool udp, char **err)
{
	return kube_portforward_open(kube_source_http(src), src->name, kind, ns, name, port, udp, err);
}

static struct log_stream *open_log(struct source *src, const struct log_req *r, log_data_cb data, log_end_cb end,
				   void *arg, char **err)
{
	return kube_log_open(kube_source_http(src), r, data, end, arg, err);
}

static const struct provider_ops kube_ops = {
	.type = "kube",
	.action = kube_action,
	.open_console = open_console,
	.open_vnc = open_vnc,
	.open_portforward = open_portforward,
	.fetch_raw = kube_fetch_raw,
	.list_namespaces = kube_list_namespaces,
	.open_log = open_log,
	.close_log = kube_log_close,
	.destroy = kube_destroy,
};
