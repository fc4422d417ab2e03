/* List+watch reflector: the client-go Reflector's protocol on kvcon's loop, feeding the store directly. */
#include "kube/reflector.h"

#include <curl/curl.h>
#include <json.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/log.h"
#include "core/loop.h"
#include "core/util.h"
#include "core/xmalloc.h"
#include "kube/decode.h"
#include "kube/jprune.h"
#include "kube/jstream.h"

#define PAGE_LIMIT 500
#define LIST_TIMEOUT_MS 120000
#define BACKOFF_BASE_MS 250
#define BACKOFF_MAX_MS 30000
#define WATCH_EVENT_MAX (64u << 20)
#define AUTH_RETRY_MS 60000

static const struct resource {
	const char *group_path; /* "/apis/kubevirt.io/v1" */
	const char *plural;
	const char *selector;   /* fixed label selector, NULL none */
} resources[OBJ_KIND_COUNT] = {
	[OBJ_VM] = { "/apis/kubevirt.io/v1", "virtualmachines", NULL },
	[OBJ_VMI] = { "/apis/kubevirt.io/v1", "virtualmachineinstances", NULL },
	[OBJ_POD] = { "/api/v1", "pods", "kubevirt.io=virt-launcher" },
	[OBJ_EVENT] = { "/api/v1", "events", NULL },
};

enum phase { PH_IDLE, PH_LIST, PH_WATCH, PH_WAIT };

struct kube_reflector {
	struct kube_reflector_cfg cfg;
	char *ns;            /* current scope (owned) */
	char *fallback_ns;
	char *selector;      /* full selector, URL-escaped when used */
	enum phase phase;
	struct kube_req *req;
	struct loop_timer *timer;
	char *rv;            /* last resourceVersion seen */
	char *cont;          /* list continue token */
	bool marked;         /* this list has marked the store */
	size_t page_items;   /* items of the page being parsed handed over one by one */
	bool synced;
	bool need_list;    /* the next attempt lists (else it watches from rv) */
	bool answered;     /* the server has sent an HTTP status at least once */
	int failures;
	uint64_t watch_started_ms;
	uint64_t watch_events;
	bool relist_wanted;  /* set from the stream callback */
	char *stream_err;    /* set from the stream callback */
	struct kube_jstream *js;
	struct buf page;
	struct kube_reflector_stats stats;
};

static void start_list(struct kube_reflector *r);
static void start_watch(struct kube_reflector *r);

struct kube_reflector *kube_reflector_new(const struct kube_reflector_cfg *cfg)
{
	struct kube_reflector *r = xcalloc(1, sizeof *r);
	r->cfg = *cfg;
	r->ns = xstrdup0(cfg->ns);
	r->fallback_ns = xstrdup0(cfg->fallback_ns);
	const char *fixed = resources[cfg->kind].selector;
	if (fixed && cfg->selector && *cfg->selector)
		r->selector = xasprintf("%s,%s", fixed, cfg->selector);
	else if (fixed)
		r->selector = xstrdup(fixed);
	else if (cfg->selector && *cfg->selector)
		r->selector = xstrdup(cfg->selector);
	r->cfg.ns = r->cfg.fallback_ns = r->cfg.selector = NULL; /* use the owned copies */
	if (r->cfg.page_limit <= 0)
		r->cfg.page_limit = PAGE_LIMIT;
	r->js = kube_jstream_new(WATCH_EVENT_MAX);
	kube_jstream_set_schema(r->js, kube_jprune_schema(cfg->kind));
	buf_init(&r->page);
	return r;
}

void kube_reflector_free(struct kube_reflector *r)
{
	if (r == NULL)
		return;
	kube_http_cancel(r->req);
	loop_timer_cancel(r->timer);
	kube_jstream_free(r->js);
	buf_free(&r->page);
	free(r->ns);
	free(r->fallback_ns);
	free(r->selector);
	free(r->rv);
	free(r->cont);
	free(r->stream_err);
	free(r);
}

bool kube_reflector_synced(const struct kube_reflector *r)
{
	return r->synced;
}

const char *kube_reflector_ns(const struct kube_reflector *r)
{
	return r->ns;
}

const struct kube_reflector_stats *kube_reflector_stats(const struct kube_reflector *r)
{
	return &r->stats;
}

static const char *kind_name(const struct kube_reflector *r)
{
	return resources[r->cfg.kind].plural;
}

static void set_health(struct kube_reflector *r, enum watch_state s, const char *msg)
{
	source_set_health(r->cfg.src, r->cfg.kind, s, msg);
}

/* Path of the collection with the query so far ("?..."). */
static void collection_path(struct kube_reflector *r, struct buf *b)
{
	const struct resource *res = &resources[r->cfg.kind];
	if (r->ns)
		buf_printf(b, "%s/namespaces/%s/%s?", res->group_path, r->ns, res->plural);
	else
		buf_printf(b, "%s/%s?", res->group_path, res->plural);
	if (r->selector) {
		char *e = curl_easy_escape(NULL, r->selector, 0);
		buf_printf(b, "labelSelector=%s&", e);
		curl_free(e);
	}
}

static void on_timer(void *arg)
{
	struct kube_reflector *r = arg;
	r->timer = NULL;
	if (r->need_list || r->rv == NULL)
		start_list(r);
	else
		start_watch(r);
}

/* Schedules the next attempt after a failure: Retry-After when given, else jittered exponential backoff. */
static void retry_later(struct kube_reflector *r, long retry_after_s, const char *why)
{
	r->failures++;
	r->stats.failures++;
	r->phase = PH_WAIT;
	/* a server that answers (429, 5xx, a broken body) gets more patience than one that cannot be reached */
	int limit = r->cfg.max_failures * (r->answered ? 5 : 1);
	if (!r->synced && r->cfg.max_failures > 0 && r->failures >= limit) {
		set_health(r, WATCH_ERROR, why);
		log_warn("kube: %s: giving up after %d failures: %s", kind_name(r), r->failures, why);
		return;
	}
	uint64_t ms;
	if (retry_after_s >= 0) {
		ms = (uint64_t)retry_after_s * 1000;
		if (ms == 0)
			ms = 100;
	} else {
		int shift = r->failures - 1 < 16 ? r->failures - 1 : 16;
		uint64_t base = (uint64_t)BACKOFF_BASE_MS << shift;
		if (base > BACKOFF_MAX_MS)
			base = BACKOFF_MAX_MS;
		/* full jitter in [base/2, base) keeps reconnecting clients from stampeding together */
		ms = base / 2 + (uint64_t)(rand() % (int)(base / 2 + 1));
	}
	r->cfg.src->health[r->cfg.kind].next_retry_ms = loop_now() + ms;
	set_health(r, WATCH_RECONNECTING, why);
	log_info("kube: %s: retry in %llu ms: %s", kind_name(r), (unsigned long long)ms, why);
	r->timer = loop_timer_add(ms, on_timer, r);
}

/* 401/403 and other answers that retrying soon will not fix. */
static void fail_hard(struct kube_reflector *r, enum watch_state s, const char *msg)
{
	r->stats.failures++;
	r->phase = PH_WAIT;
	set_health(r, s, msg);
	log_warn("kube: %s: %s", kind_name(r), msg);
	if (r->cfg.max_failures > 0 && !r->synced)
		return; /* the CLI reports it; the dashboard keeps trying below */
	r->cfg.src->health[r->cfg.kind].next_retry_ms = loop_now() + AUTH_RETRY_MS;
	r->timer = loop_timer_add(AUTH_RETRY_MS, on_timer, r);
}

static void set_rv(struct kube_reflector *r, const char *rv)
{
	if (rv && *rv && !util_str_eq(rv, r->rv)) {
		free(r->rv);
		r->rv = xstrdup(rv);
	}
}

static const char *obj_rv(struct json_object *o)
{
	struct json_object *meta, *rv;
	if (o && json_object_object_get_ex(o, "metadata", &meta) && json_object_object_get_ex(meta, "resourceVersion", &rv) &&
	    json_object_is_type(rv, json_type_string))
		return json_object_get_string(rv);
	return NULL;
}

/* Decodes item and stores it. release (the tree item belongs to, or NULL) is put as soon as the object is
 * decoded, before the packed copy is allocated, so the store's objects and the parser's trees do not interleave
 * on the heap. */
static void upsert(struct kube_reflector *r, struct json_object *item, struct json_object *release)
{
	char *err = NULL;
	struct obj *t = kube_decode_scratch(r->cfg.kind, item, r->cfg.src, &err);
	json_object_put(release);
	if (t == NULL) {
		r->stats.skipped++;
		log_warn("kube: %s: skipped an object: %s", kind_name(r), err ? err : "undecodable");
		free(err);
		return;
	}
	store_upsert(r->cfg.st, obj_pack_copy(t));
}

/* --- list -------------------------------------------------------------------------------------------- */

/* First page of a (re)list: everything not seen again by the last page goes. */
static void page_begin(struct kube_reflector *r)
{
	if (r->marked)
		return;
	store_mark(r->cfg.st, r->cfg.src, r->cfg.kind, r->ns);
	r->marked = true;
	r->cfg.src->health[r->cfg.kind].loaded = 0;
}

/* One item of a list page, as the pruner builds it: decoded and stored at once. */
static void page_item(void *arg, struct json_object *item)
{
	struct kube_reflector *r = arg;
	page_begin(r);
	upsert(r, item, item);
	r->page_items++;
}

static int apply_page(struct kube_reflector *r, const char *body, size_t len, char **err)
{
	r->page_items = 0;
	struct json_object *root = kube_jstream_parse_each(r->js, body, len, page_item, r, err);
	if (root == NULL) {
		free(*err);
		*err = NULL;
	}
	int rc = -1;
	struct json_object *items, *meta, *v;
	if (root == NULL || !json_object_is_type(root, json_type_object)) {
		*err = xasprintf("the %s list is not valid JSON", kind_name(r));
		goto out;
	}
	if (!json_object_object_get_ex(root, "items", &items) ||
	    !(json_object_is_type(items, json_type_array) || json_object_is_type(items, json_type_null))) {
		*err = xasprintf("the %s list has no items", kind_name(r));
		goto out;
	}
	page_begin(r);
	size_t n = json_object_is_type(items, json_type_array) ? json_object_array_length(items) : 0;
	for (size_t i = 0; i < n; i++)
		upsert(r, json_object_array_get_idx(items, i), NULL);
	/* items left in the tree: json-c parsed the page whole (the first ones may have been handed over before the
	 * pruner gave up, and are applied again) */
	r->cfg.src->health[r->cfg.kind].loaded += n > r->page_items ? n : r->page_items;
	free(r->cont);
	r->cont = NULL;
	if (json_object_object_get_ex(root, "metadata", &meta)) {
		if (json_object_object_get_ex(meta, "continue", &v) && json_object_is_type(v, json_type_string) &&
		    *json_object_get_string(v))
			r->cont = xstrdup(json_object_get_string(v));
		if (json_object_object_get_ex(meta, "resourceVersion", &v) && json_object_is_type(v, json_type_string))
			set_rv(r, json_object_get_string(v));
	}
	rc = 0;
out:
	json_object_put(root);
	return rc;
}

int kube_reflector_apply_list(struct kube_reflector *r, const char *body, size_t len)
{
	char *err = NULL;
	int rc = apply_page(r, body, len, &err);
	if (rc < 0)
		log_warn("kube: %s: %s", kind_name(r), err ? err : "unusable list");
	free(err);
	return rc;
}

/* List pages stream into one buffer kept across pages: growing a fresh multi-megabyte buffer per page right
 * after freeing a page's JSON tree makes glibc consolidate its free lists each time (most of the CPU). */
static bool list_chunk(void *arg, const char *data, size_t len)
{
	struct kube_reflector *r = arg;
	buf_add(&r->page, data, len);
	return true;
}

static void list_done(void *arg, const struct kube_resp *resp)
{
	struct kube_reflector *r = arg;
	r->req = NULL;
	r->answered = r->answered || resp->status != 0;
	if (resp->status == 200) {
		char *err = NULL;
		int rc = apply_page(r, r->page.data ? r->page.data : "", r->page.len, &err);
		buf_reset(&r->page);
		if (rc < 0) {
			free(r->cont);
			r->cont = NULL;
			r->marked = false;
			retry_later(r, -1, err);
			free(err);
			return;
		}
		if (r->cont) {
			set_health(r, WATCH_LOADING, NULL);
			start_list(r);
			return;
		}
		size_t gone = store_sweep(r->cfg.st, r->cfg.src, r->cfg.kind, r->ns);
		r->marked = false;
		r->synced = true;
		r->need_list = false;
		r->failures = 0;
		r->stats.lists++;
		log_info("kube: %s: listed %zu (swept %zu) at resourceVersion %s", kind_name(r),
			 r->cfg.src->health[r->cfg.kind].loaded, gone, r->rv ? r->rv : "?");
		set_health(r, WATCH_LIVE, NULL);
		start_watch(r);
		return;
	}
	char *msg = kube_http_error_message(resp);
	buf_reset(&r->page);
	if (resp->status == 410 && r->cont) {
		/* the continue token expired: list again from the start */
		free(r->cont);
		r->cont = NULL;
		r->marked = false;
		log_info("kube: %s: continue token expired, relisting", kind_name(r));
		r->timer = loop_timer_add(0, on_timer, r);
	} else if (resp->status == 403 && r->ns == NULL && r->fallback_ns) {
		r->ns = r->fallback_ns;
		r->fallback_ns = NULL;
		free(r->cont);
		r->cont = NULL;
		r->marked = false;
		char *notice = xasprintf("cannot list %s in all namespaces (%s); showing namespace %s", kind_name(r),
					 msg, r->ns);
		source_set_notice(r->cfg.src, notice);
		free(r->cfg.src->ns_scope);
		r->cfg.src->ns_scope = xstrdup(r->ns);
		log_warn("kube: %s", notice);
		free(notice);
		start_list(r);
	} else if (resp->status == 401) {
		fail_hard(r, WATCH_ERROR, msg);
	} else if (resp->status == 403) {
		fail_hard(r, WATCH_FORBIDDEN, msg);
	} else if (resp->status == 404) {
		char *m = xasprintf("%s: %s is not served", msg, resources[r->cfg.kind].plural);
		fail_hard(r, WATCH_ERROR, m);
		free(m);
	} else {
		r->marked = r->marked && r->cont != NULL;
		retry_later(r, resp->status == 429 ? resp->retry_after : -1, msg);
	}
	free(msg);
}

static void start_list(struct kube_reflector *r)
{
	struct buf b;
	buf_init(&b);
	collection_path(r, &b);
	buf_printf(&b, "limit=%d", r->cfg.page_limit);
	if (r->cont) {
		char *e = curl_easy_escape(NULL, r->cont, 0);
		buf_printf(&b, "&continue=%s", e);
		curl_free(e);
	} else {
		r->marked = false;
		if (r->cfg.src->health[r->cfg.kind].state != WATCH_LOADING)
			set_health(r, WATCH_LOADING, NULL);
	}
	r->phase = PH_LIST;
	buf_reset(&r->page);
	struct kube_http_req q = {
		.path = b.data,
		.timeout_ms = LIST_TIMEOUT_MS,
		.on_chunk = list_chunk,
		.on_done = list_done,
		.arg = r,
	};
	r->req = kube_http_start(r->cfg.http, &q);
	buf_free(&b);
}

/* --- watch ------------------------------------------------------------------------------------------- */

/* kube_reflector_apply on an event it owns (and releases as early as it can). */
static int apply_event(struct kube_reflector *r, struct json_object *ev)
{
	struct json_object *t, *obj;
	int rc = 0;
	if (!json_object_is_type(ev, json_type_object) || !json_object_object_get_ex(ev, "type", &t) ||
	    !json_object_is_type(t, json_type_string) || !json_object_object_get_ex(ev, "object", &obj) ||
	    !json_object_is_type(obj, json_type_object)) {
		log_warn("kube: %s: ignored a watch event without type/object", kind_name(r));
		rc = -1;
		goto out;
	}
	const char *type = json_object_get_string(t);
	if (strcmp(type, "ADDED") == 0 || strcmp(type, "MODIFIED") == 0) {
		char *rv = xstrdup0(obj_rv(obj));
		upsert(r, obj, ev);
		ev = NULL;
		set_rv(r, rv);
		free(rv);
		r->stats.events++;
		r->watch_events++;
		return 0;
	} else if (strcmp(type, "DELETED") == 0) {
		char *err = NULL;
		const struct obj *o = kube_decode_scratch(r->cfg.kind, obj, r->cfg.src, &err);
		if (o) {
			if (store_remove(r->cfg.st, r->cfg.src, r->cfg.kind, o->uid) < 0) {
				/* unknown UID: drop whatever holds the name, it cannot outlive its deletion */
				struct obj *same = store_find(r->cfg.st, r->cfg.src, r->cfg.kind, o->ns, o->name);
				if (same)
					store_remove(r->cfg.st, r->cfg.src, r->cfg.kind, same->uid);
			}
		} else {
			r->stats.skipped++;
			log_warn("kube: %s: undecodable DELETED event: %s", kind_name(r), err ? err : "?");
			free(err);
		}
	} else if (strcmp(type, "BOOKMARK") == 0) {
		/* only the resourceVersion matters */
	} else if (strcmp(type, "ERROR") == 0) {
		struct json_object *code;
		long c = json_object_object_get_ex(obj, "code", &code) ? (long)json_object_get_int(code) : 0;
		if (c == 410) {
			rc = 1;
			goto out;
		}
		struct kube_resp fake = { .status = c ? c : 500, .body = json_object_to_json_string(obj) };
		fake.len = strlen(fake.body);
		free(r->stream_err);
		r->stream_err = kube_http_error_message(&fake);
		rc = -1;
		goto out;
	} else {
		log_warn("kube: %s: ignored a watch event of type '%.32s'", kind_name(r), type);
		goto out;
	}
	set_rv(r, obj_rv(obj));
	r->stats.events++;
	r->watch_events++;
out:
	json_object_put(ev);
	return rc;
}

int kube_reflector_apply(struct kube_reflector *r, struct json_object *ev)
{
	return apply_event(r, json_object_get(ev));
}

static bool on_event(void *arg, struct json_object *ev)
{
	struct kube_reflector *r = arg;
	int rc = apply_event(r, ev);
	if (rc == 1) {
		r->relist_wanted = true;
		return false;
	}
	if (rc < 0 && r->stream_err)
		return false;
	return true;
}

int kube_reflector_feed(struct kube_reflector *r, const char *data, size_t len)
{
	char *err = NULL;
	int rc = kube_jstream_feed(r->js, data, len, on_event, r, &err);
	if (rc < 0) {
		free(r->stream_err);
		r->stream_err = err;
		return -1;
	}
	return 0;
}

static bool watch_chunk(void *arg, const char *data, size_t len)
{
	struct kube_reflector *r = arg;
	if (r->cfg.src->health[r->cfg.kind].state != WATCH_LIVE) {
		r->failures = 0;
		set_health(r, WATCH_LIVE, NULL);
	}
	if (kube_reflector_feed(r, data, len) < 0)
		return false;
	return !r->relist_wanted && r->stream_err == NULL;
}

static void relist(struct kube_reflector *r)
{
	r->stats.relists++;
	r->need_list = true;
	free(r->cont);
	r->cont = NULL;
	start_list(r);
}

static void watch_done(void *arg, const struct kube_resp *resp)
{
	struct kube_reflector *r = arg;
	r->req = NULL;
	r->answered = r->answered || resp->status != 0;
	bool partial = kube_jstream_partial(r->js);
	kube_jstream_reset(r->js);
	if (r->relist_wanted || resp->status == 410) {
		r->relist_wanted = false;
		log_info("kube: %s: resourceVersion %s expired (410), relisting", kind_name(r), r->rv ? r->rv : "?");
		relist(r);
		return;
	}
	if (r->stream_err) {
		char *m = r->stream_err;
		r->stream_err = NULL;
		retry_later(r, -1, m);
		free(m);
		return;
	}
	if (resp->status == 200 && !partial) {
		/* the server ended the watch (timeoutSeconds): renew at once, unless it ends them immediately */
		bool quick = loop_now() - r->watch_started_ms < 1000 && r->watch_events == 0;
		if (!quick) {
			r->failures = 0;
			start_watch(r);
		} else {
			retry_later(r, -1, "the watch ended at once");
		}
		return;
	}
	char *msg = resp->status == 200 ? xstrdup("the watch stream was cut mid-event") : kube_http_error_message(resp);
	if ((resp->status == 0 || resp->status == 200) && r->watch_events > 0) {
		/* the stream made progress before it broke: resume from the last applied event at once (backing
		 * off here would fall behind a busy server); a stream that breaks before any event backs off */
		log_info("kube: %s: watch broke after %llu events (%s), resuming", kind_name(r),
			 (unsigned long long)r->watch_events, msg);
		r->failures = 0;
		r->timer = loop_timer_add(0, on_timer, r);
		free(msg);
		return;
	}
	if (resp->status == 401)
		fail_hard(r, WATCH_ERROR, msg);
	else if (resp->status == 403)
		fail_hard(r, WATCH_FORBIDDEN, msg);
	else
		retry_later(r, resp->status == 429 ? resp->retry_after : -1, msg);
	free(msg);
}

static void start_watch(struct kube_reflector *r)
{
	struct buf b;
	buf_init(&b);
	collection_path(r, &b);
	/* servers end watches after timeoutSeconds; spread renewals as client-go does (5-10 minutes) */
	int timeout = 300 + rand() % 300;
	char *rv = curl_easy_escape(NULL, r->rv ? r->rv : "", 0);
	buf_printf(&b, "watch=1&allowWatchBookmarks=true&resourceVersion=%s&timeoutSeconds=%d", rv, timeout);
	curl_free(rv);
	r->phase = PH_WATCH;
	r->relist_wanted = false;
	free(r->stream_err);
	r->stream_err = NULL;
	r->watch_started_ms = loop_now();
	r->watch_events = 0;
	r->stats.watches++;
	kube_jstream_reset(r->js);
	struct kube_http_req q = {
		.path = b.data,
		.timeout_ms = (long)(timeout + 30) * 1000,
		.on_chunk = watch_chunk,
		.on_done = watch_done,
		.arg = r,
	};
	r->req = kube_http_start(r->cfg.http, &q);
	buf_free(&b);
}

void kube_reflector_start(struct kube_reflector *r)
{
	if (r->phase != PH_IDLE)
		return;
	r->need_list = true;
	start_list(r);
}
