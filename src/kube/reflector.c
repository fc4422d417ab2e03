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
#include "kube/jv.h"
#include "model/registry.h"

#define PAGE_LIMIT 500
#define LIST_TIMEOUT_MS 120000
#define BACKOFF_BASE_MS 250
#define BACKOFF_MAX_MS 30000
#define AUTH_RETRY_MS 60000
#define CLI_BACKOFF_MAX_MS 4000  /* a one-shot command retries within its own deadline */
#define LIST_BATCH (64u << 10)  /* list bytes decoded per batch as they stream: a few milliseconds of work (the
                                  * pass budget of kube/http.c), few items cut by a batch end */
#define LIST_ENVELOPE_MAX (1u << 20)

enum phase { PH_IDLE, PH_LIST, PH_WATCH, PH_WAIT };
/* Where a streamed list response is: before its items array, inside it (items decoded one by one as they
 * arrive), after it; or a body without an items array, kept whole (an odd or broken response, small). */
enum list_part { LP_HEAD, LP_ITEMS, LP_TAIL, LP_WHOLE };

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
	struct buf page;     /* list bytes not decoded yet */
	struct buf env;      /* the list's envelope: everything but its items ("items":[] in place) */
	enum list_part lp;
	size_t list_bytes;   /* of the response so far */
	char *list_err;      /* set from the chunk callback: the response was refused (too big, malformed) */
	bool list_fatal;     /* list_err is a limit: not retried */
	const struct kube_jprune_node *item_schema;
	struct jv_arena *items; /* the list item being decoded */
	size_t list_max, object_max;
	size_t list_batch;
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
	const char *fixed = registry_kind_of_obj(cfg->kind)->selector;
	if (fixed && cfg->selector && *cfg->selector)
		r->selector = xasprintf("%s,%s", fixed, cfg->selector);
	else if (fixed)
		r->selector = xstrdup(fixed);
	else if (cfg->selector && *cfg->selector)
		r->selector = xstrdup(cfg->selector);
	r->cfg.ns = r->cfg.fallback_ns = r->cfg.selector = NULL; /* use the owned copies */
	if (r->cfg.page_limit <= 0)
		r->cfg.page_limit = PAGE_LIMIT;
	kube_limits(&r->list_max, &r->object_max);
	r->list_batch = LIST_BATCH;
	r->js = kube_jstream_new(r->object_max + 4096); /* an event: an object and its envelope */
	kube_jstream_set_schema(r->js, kube_jprune_schema(cfg->kind));
	for (const struct kube_jprune_node *n = kube_jprune_schema(cfg->kind); n && n->key; n++)
		if (strcmp(n->key, "items") == 0)
			r->item_schema = n->kids;
	r->items = jv_arena_new();
	buf_init(&r->page);
	buf_init(&r->env);
	return r;
}

void kube_reflector_free(struct kube_reflector *r)
{
	if (r == NULL)
		return;
	kube_http_cancel(r->req);
	loop_timer_cancel(r->timer);
	kube_jstream_free(r->js);
	jv_arena_free(r->items);
	buf_free(&r->page);
	buf_free(&r->env);
	free(r->list_err);
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

const struct kube_reflector_stats *kube_reflector_stats(const struct kube_reflector *r)
{
	return &r->stats;
}

static const char *kind_name(const struct kube_reflector *r)
{
	return registry_kind_of_obj(r->cfg.kind)->plural;
}

static void set_health(struct kube_reflector *r, enum watch_state s, const char *msg)
{
	source_set_health(r->cfg.src, r->cfg.kind, s, msg);
}

/* Path of the collection with the query so far ("?..."). */
static void collection_path(struct kube_reflector *r, struct buf *b)
{
	char *path = registry_kind_path(registry_kind_of_obj(r->cfg.kind), r->ns, NULL);
	buf_printf(b, "%s?", path);
	free(path);
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
static char *coll_url(struct kube_reflector *r);

/* A one-shot command (max_failures set) says on stderr what it retries, as it happens. */
static void report_retry(struct kube_reflector *r, long status, const char *why)
{
	if (r->cfg.max_failures <= 0)
		return;
	char *url = coll_url(r);
	char st[32];
	snprintf(st, sizeof st, "%ld", status);
	log_eprintf("kvcon: retrying: %s from %s (%d): %s\n", status ? st : "no answer", url, r->failures, why);
	free(url);
}

static void retry_later(struct kube_reflector *r, long retry_after_s, const char *why, long status)
{
	r->failures++;
	r->stats.failures++;
	r->phase = PH_WAIT;
	/* a server that answers (429, 5xx, a broken body) gets more patience than one that cannot be reached */
	int limit = r->cfg.max_failures * (r->answered ? 2 : 1);
	if (!r->synced && r->cfg.max_failures > 0 && r->failures >= limit) {
		set_health(r, WATCH_ERROR, why);
		log_warn("kube: %s: giving up after %d failures: %s", kind_name(r), r->failures, why);
		return;
	}
	report_retry(r, status, why);
	uint64_t cap = r->cfg.max_failures > 0 ? CLI_BACKOFF_MAX_MS : BACKOFF_MAX_MS;
	uint64_t ms;
	if (retry_after_s >= 0) {
		ms = (uint64_t)retry_after_s * 1000;
		if (ms == 0)
			ms = 100;
		if (ms > cap && r->cfg.max_failures > 0)
			ms = cap;
	} else {
		int shift = r->failures - 1 < 16 ? r->failures - 1 : 16;
		uint64_t base = (uint64_t)BACKOFF_BASE_MS << shift;
		if (base > cap)
			base = cap;
		/* full jitter in [base/2, base) keeps reconnecting clients from stampeding together */
		ms = base / 2 + (uint64_t)(rand() % (int)(base / 2 + 1));
	}
	r->cfg.src->health[r->cfg.kind].next_retry_ms = loop_now() + ms;
	set_health(r, WATCH_RECONNECTING, why);
	log_info("kube: %s: retry in %llu ms: %s", kind_name(r), (unsigned long long)ms, why);
	r->timer = loop_timer_add(ms, on_timer, r);
}

/* A limit was reached: reported, never retried (the same request would cost the same again). */
static void give_up(struct kube_reflector *r, const char *msg)
{
	r->stats.failures++;
	r->phase = PH_WAIT;
	set_health(r, WATCH_ERROR, msg);
	log_warn("kube: %s: %s; not retried", kind_name(r), msg);
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

static const char *obj_rv(const struct jv *o)
{
	struct jv *rv = jv_get(jv_get(o, "metadata"), "resourceVersion");
	return jv_is(rv, JV_STRING) ? rv->u.s : NULL;
}

/* Decodes item and stores it (its tree lives in an arena: it costs the heap nothing between the store's
 * objects). */
static void upsert(struct kube_reflector *r, const struct jv *item)
{
	char *err = NULL;
	struct obj *t = kube_decode_jv(r->cfg.kind, item, r->cfg.src, &err);
	if (t == NULL) {
		r->stats.skipped++;
		log_warn("kube: %s: skipped an object: %s", kind_name(r), err ? err : "undecodable");
		free(err);
		return;
	}
	store_upsert(r->cfg.st, r->cfg.identity_only ? obj_pack_identity(t) : obj_pack_copy(t));
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
static void page_item(void *arg, struct jv *item)
{
	struct kube_reflector *r = arg;
	page_begin(r);
	upsert(r, item);
	r->page_items++;
}

static int apply_page(struct kube_reflector *r, const char *body, size_t len, char **err)
{
	r->page_items = 0;
	struct jv *root = kube_jstream_parse_each(r->js, body, len, page_item, r, err);
	if (root == NULL) {
		free(*err);
		*err = NULL;
	}
	int rc = -1;
	struct jv *items, *meta, *v;
	if (!jv_is(root, JV_OBJECT)) {
		*err = xasprintf("the %s list is not valid JSON", kind_name(r));
		goto out;
	}
	/* items: an array or null, present */
	bool has_items = false;
	for (uint32_t i = 0; i < root->n; i++)
		if (strcmp(root->u.m[i].key, "items") == 0)
			has_items = root->u.m[i].v == NULL || root->u.m[i].v->type == JV_ARRAY;
	if (!has_items) {
		*err = xasprintf("the %s list has no items", kind_name(r));
		goto out;
	}
	items = jv_get(root, "items");
	page_begin(r);
	size_t n = jv_len(items);
	for (size_t i = 0; i < n; i++)
		upsert(r, jv_idx(items, i));
	/* items left in the tree: json-c parsed the page whole (the first ones may have been handed over before the
	 * pruner gave up, and are applied again) */
	r->cfg.src->health[r->cfg.kind].loaded += n > r->page_items ? n : r->page_items;
	free(r->cont);
	r->cont = NULL;
	if ((meta = jv_get(root, "metadata")) != NULL) {
		if (jv_is(v = jv_get(meta, "continue"), JV_STRING) && *v->u.s)
			r->cont = xstrdup(v->u.s);
		if (jv_is(v = jv_get(meta, "resourceVersion"), JV_STRING))
			set_rv(r, v->u.s);
	}
	rc = 0;
out:
	return rc;
}

/* The collection's URL without the query, for messages. Caller frees. */
static char *coll_url(struct kube_reflector *r)
{
	char *path = registry_kind_path(registry_kind_of_obj(r->cfg.kind), r->ns, NULL);
	char *url = r->cfg.http ? kube_http_url(r->cfg.http, path) : xstrdup(path);
	free(path);
	return url;
}

static void list_fail(struct kube_reflector *r, bool fatal_, char *msg)
{
	if (r->list_err == NULL) {
		r->list_err = msg;
		r->list_fatal = fatal_;
	} else {
		free(msg);
	}
}

static bool is_space(char c)
{
	return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

/* Finds the '[' that opens the list's top-level "items" array. Returns its offset; -2 when the bytes end
 * before it; -1 when the body has no items array (or not one that opens here: null, another type). */
static ssize_t find_items(const char *s, size_t n)
{
	int depth = 0;
	for (size_t i = 0; i < n;) {
		char c = s[i];
		if (c == '"') {
			size_t start = ++i;
			while (i < n && s[i] != '"')
				i += s[i] == '\\' ? 2 : 1;
			if (i >= n)
				return -2;
			size_t klen = i - start;
			i++;
			if (depth != 1 || klen != 5 || memcmp(s + start, "items", 5) != 0)
				continue;
			size_t j = i;
			while (j < n && is_space(s[j]))
				j++;
			if (j < n && s[j] != ':')
				continue; /* a value "items" */
			if (j < n)
				j++;
			while (j < n && is_space(s[j]))
				j++;
			if (j >= n)
				return -2;
			return s[j] == '[' ? (ssize_t)j : -1;
		}
		if (c == '{' || c == '[') {
			depth++;
		} else if (c == '}' || c == ']') {
			if (--depth <= 0)
				return -1;
		}
		i++;
	}
	return -2;
}

/* Decodes what has arrived of a list response: each whole item is pruned, decoded and stored as soon as it is
 * complete, so a response costs memory for one item at a time, not for the body. final: nothing more comes. */
static size_t list_process_bytes(struct kube_reflector *r, const char *d, size_t len, bool final)
{
	size_t off = 0;
	if (r->list_err)
		return 0;
	if (r->lp == LP_HEAD) {
		ssize_t at = find_items(d, len);
		if (at == -1 || (at == -2 && final)) {
			r->lp = LP_WHOLE; /* no items array: keep the (small) body whole for apply_page's verdict */
		} else if (at >= 0) {
			buf_add(&r->env, d, (size_t)at + 1);
			off = (size_t)at + 1;
			r->lp = LP_ITEMS;
		} else if (len > LIST_ENVELOPE_MAX) {
			list_fail(r, false, xasprintf("the %s list has no items before byte %zu", kind_name(r), len));
			return 0;
		}
	}
	while (r->lp == LP_ITEMS) {
		while (off < len && (is_space(d[off]) || d[off] == ','))
			off++;
		if (off == len)
			break;
		if (d[off] == ']') {
			buf_add_char(&r->env, ']');
			off++;
			r->lp = LP_TAIL;
			break;
		}
		if (d[off] != '{') {
			list_fail(r, false, xasprintf("the %s list is not valid JSON", kind_name(r)));
			return 0;
		}
		struct jv *v = NULL;
		jv_arena_reset(r->items);
		ssize_t used = -1;
		if (r->item_schema)
			used = kube_jprune_jv(r->item_schema, d + off, len - off, r->items, &v, NULL, NULL);
		if (used <= 0) {
			v = NULL;
			/* cut by the batch's end, or something only json-c reads: find the item's end, then json-c */
			struct kube_jscan st = { 0 };
			ssize_t n = kube_jscan(&st, d + off, len - off);
			if (n < 0) {
				list_fail(r, false, xasprintf("the %s list is not valid JSON", kind_name(r)));
				return 0;
			}
			used = n;
			if (n > 0) {
				char *err = NULL;
				v = kube_jstream_parse(r->js, d + off, (size_t)n, false, &err);
				if (v == NULL) {
					list_fail(r, false, xasprintf("the %s list is not valid JSON: %s", kind_name(r), err));
					free(err);
					return 0;
				}
			}
		}
		if (used == 0 || (size_t)used > r->object_max) {
			size_t have = used ? (size_t)used : len - off;
			if (have > r->object_max) {
				char *url = coll_url(r);
				list_fail(r, true, xasprintf("an object in the list response from %s exceeds %zu MiB "
							     "(KVCON_OBJECT_MAX_MIB)",
							     url, r->object_max >> 20));
				free(url);
				return 0;
			}
			break; /* the rest of the item is still to come */
		}
		off += (size_t)used;
		if (v == NULL)
			continue;
		page_begin(r);
		upsert(r, v);
		r->page_items++;
	}
	if (r->lp == LP_TAIL || r->lp == LP_WHOLE) {
		buf_add(&r->env, d + off, len - off);
		off = len;
		if (r->env.len > (r->lp == LP_TAIL ? LIST_ENVELOPE_MAX : r->list_max)) {
			list_fail(r, false, xasprintf("the %s list's envelope is too large", kind_name(r)));
			return 0;
		}
	}
	return off;
}

/* The same on the bytes kept so far. */
static void list_process(struct kube_reflector *r, bool final)
{
	size_t off = list_process_bytes(r, r->page.data ? r->page.data : "", r->page.len, final);
	if (r->list_err == NULL)
		buf_consume(&r->page, off);
}

static void list_begin(struct kube_reflector *r)
{
	buf_reset(&r->page);
	buf_reset(&r->env);
	r->lp = LP_HEAD;
	r->list_bytes = 0;
	r->page_items = 0;
	free(r->list_err);
	r->list_err = NULL;
	r->list_fatal = false;
}

/* The response is complete: its envelope gives the continue token and resourceVersion. */
static int list_end(struct kube_reflector *r, char **err)
{
	list_process(r, true);
	if (r->list_err) {
		*err = r->list_err;
		r->list_err = NULL;
		return -1;
	}
	if (r->lp == LP_WHOLE) {
		int rc = apply_page(r, r->env.data ? r->env.data : "", r->env.len, err);
		buf_reset(&r->env);
		return rc;
	}
	if (r->lp != LP_TAIL || r->page.len > 0) {
		*err = xasprintf("the %s list is not valid JSON (it ends inside its items)", kind_name(r));
		return -1;
	}
	size_t items = r->page_items;
	int rc = apply_page(r, r->env.data, r->env.len, err);
	buf_reset(&r->env);
	if (rc == 0)
		r->cfg.src->health[r->cfg.kind].loaded += items;
	return rc;
}

/* A chunk of a list response, as it streams: decoded in batches, within the response limit. */
static bool list_feed(struct kube_reflector *r, const char *data, size_t len)
{
	r->list_bytes += len;
	if (r->list_bytes > r->list_max) {
		char *url = coll_url(r);
		list_fail(r, true, xasprintf("list response from %s exceeds %zu MiB (KVCON_LIST_MAX_MIB)", url,
					     r->list_max >> 20));
		free(url);
		return false;
	}
	if (r->page.len == 0 && len >= r->list_batch) {
		/* a large chunk is decoded where it is: only an item it cuts is copied */
		size_t used = list_process_bytes(r, data, len, false);
		if (r->list_err == NULL)
			buf_add(&r->page, data + used, len - used);
	} else {
		buf_add(&r->page, data, len);
		if (r->page.len >= r->list_batch)
			list_process(r, false);
	}
	return r->list_err == NULL;
}

int kube_reflector_apply_list(struct kube_reflector *r, const char *body, size_t len)
{
	char *err = NULL;
	list_begin(r);
	int rc = list_feed(r, body, len) ? list_end(r, &err) : -1;
	if (rc < 0 && err == NULL) {
		err = r->list_err;
		r->list_err = NULL;
	}
	if (rc < 0)
		log_warn("kube: %s: %s", kind_name(r), err ? err : "unusable list");
	free(err);
	buf_reset(&r->page);
	return rc;
}

int kube_reflector_apply_list_chunked(struct kube_reflector *r, const char *body, size_t len, size_t chunk,
				      size_t batch, char **err)
{
	*err = NULL;
	r->list_batch = batch ? batch : LIST_BATCH;
	list_begin(r);
	int rc = 0;
	for (size_t off = 0; off < len && rc == 0; off += chunk)
		if (!list_feed(r, body + off, len - off < chunk ? len - off : chunk))
			rc = -1;
	if (rc == 0)
		rc = list_end(r, err);
	if (rc < 0 && *err == NULL) {
		*err = r->list_err;
		r->list_err = NULL;
	}
	buf_reset(&r->page);
	r->list_batch = LIST_BATCH;
	return rc;
}

static bool list_chunk(void *arg, const char *data, size_t len)
{
	return list_feed(arg, data, len);
}

static void list_done(void *arg, const struct kube_resp *resp)
{
	struct kube_reflector *r = arg;
	r->req = NULL;
	r->answered = r->answered || resp->status != 0;
	if (r->list_err && r->list_fatal) {
		/* a limit: fetching it again would only cost the same again */
		char *m = r->list_err;
		r->list_err = NULL;
		buf_reset(&r->page);
		buf_reset(&r->env);
		free(r->cont);
		r->cont = NULL;
		r->marked = false;
		give_up(r, m);
		free(m);
		return;
	}
	if (resp->status == 200 && !resp->aborted) {
		char *err = NULL;
		int rc = list_end(r, &err);
		buf_reset(&r->page);
		if (rc < 0) {
			free(r->cont);
			r->cont = NULL;
			r->marked = false;
			retry_later(r, -1, err, resp->status);
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
	char *msg = resp->status == 200 && r->list_err ? xstrdup(r->list_err) : kube_http_error_message(resp);
	buf_reset(&r->page);
	buf_reset(&r->env);
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
		r->cfg.src->ns_narrowed = true;
		log_warn("kube: %s", notice);
		free(notice);
		start_list(r);
	} else if (resp->status == 401) {
		fail_hard(r, WATCH_ERROR, msg);
	} else if (resp->status == 403) {
		fail_hard(r, WATCH_FORBIDDEN, msg);
	} else if (resp->status == 404) {
		char *m = xasprintf("%s: %s is not served", msg, kind_name(r));
		fail_hard(r, WATCH_ERROR, m);
		free(m);
	} else {
		r->marked = r->marked && r->cont != NULL;
		retry_later(r, resp->status == 429 ? resp->retry_after : -1, msg, resp->status);
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
	list_begin(r);
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

/* One watch event (its tree stays the caller's). */
static int apply_event(struct kube_reflector *r, const struct jv *ev)
{
	struct jv *t = jv_get(ev, "type"), *obj = jv_get(ev, "object");
	if (!jv_is(t, JV_STRING) || !jv_is(obj, JV_OBJECT)) {
		log_warn("kube: %s: ignored a watch event without type/object", kind_name(r));
		return -1;
	}
	const char *type = t->u.s;
	if (strcmp(type, "ADDED") == 0 || strcmp(type, "MODIFIED") == 0) {
		upsert(r, obj);
	} else if (strcmp(type, "DELETED") == 0) {
		char *err = NULL;
		const struct obj *o = kube_decode_jv(r->cfg.kind, obj, r->cfg.src, &err);
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
		/* a Status: read as json-c reads it (a code may be a string), and its text for the message */
		struct json_object *status = jv_to_json(obj), *code;
		long c = json_object_object_get_ex(status, "code", &code) ? (long)json_object_get_int(code) : 0;
		if (c == 410) {
			json_object_put(status);
			return 1;
		}
		struct kube_resp fake = { .status = c ? c : 500, .body = json_object_to_json_string(status) };
		fake.len = strlen(fake.body);
		free(r->stream_err);
		r->stream_err = kube_http_error_message(&fake);
		json_object_put(status);
		return -1;
	} else {
		log_warn("kube: %s: ignored a watch event of type '%.32s'", kind_name(r), type);
		return 0;
	}
	set_rv(r, obj_rv(obj));
	r->stats.events++;
	r->watch_events++;
	return 0;
}

int kube_reflector_apply(struct kube_reflector *r, struct json_object *ev)
{
	struct jv_arena *a = jv_arena_new();
	int rc = apply_event(r, jv_from_json(a, ev));
	jv_arena_free(a);
	return rc;
}

static bool on_event(void *arg, struct jv *ev)
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
	if (kube_reflector_feed(r, data, len) < 0) {
		if (kube_jstream_too_big(r->js)) {
			/* the same event would come again on every resume: a limit, not retried */
			char *url = coll_url(r);
			free(r->stream_err);
			r->stream_err = xasprintf("an object in the watch from %s exceeds %zu MiB (KVCON_OBJECT_MAX_MIB)", url,
						  r->object_max >> 20);
			r->list_fatal = true;
			free(url);
		}
		return false;
	}
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
		if (r->list_fatal) {
			r->list_fatal = false;
			give_up(r, m);
		} else {
			retry_later(r, -1, m, resp->status);
		}
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
			retry_later(r, -1, "the watch ended at once", resp->status);
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
		retry_later(r, resp->status == 429 ? resp->retry_after : -1, msg, resp->status);
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
		.batch_ms = r->cfg.watch_batch_ms,
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
