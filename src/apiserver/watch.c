/* The engine service's resourceVersions and watches: a store listener turns every change of an object as served
 * into a new resourceVersion and an event in a ring (KVCON_ENGINE_WATCH_HISTORY, 4096 by default); a watch from a
 * resourceVersion the ring no longer holds is 410 Expired. Watchers are suspended connections, woken when an event
 * arrives, a bookmark is due or the client leaves. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <microhttpd.h>
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "apiserver/internal.h"
#include "core/buf.h"
#include "core/hmap.h"
#include "core/intern.h"
#include "core/log.h"
#include "core/loop.h"
#include "core/opts.h"
#include "core/trust.h"
#include "core/util.h"
#include "core/version.h"
#include "core/xmalloc.h"
#include "core/ydoc.h"
#include "engine/apisel.h"
#include "engine/apitls.h"
#include "engine/engine.h"
#include "engine/evm.h"
#include "engine/manifest.h"
#include "engine/migrate.h"
#include "kube/wsframe.h"
#include "model/columns.h"
#include "model/objjson.h"
#include "model/registry.h"
#include "model/source.h"
#include "model/store.h"

#define BOOKMARK_MS 10000

/* ---- resource versions and the watch ring ---- */

void apis_cent_key(char *out, size_t len, const struct obj *o)
{
	snprintf(out, len, "%d/%s", (int)o->kind, o->uid);
}

void apis_ring_push(struct apisrv *srv, enum res r, const char *type, const struct obj *o, const char *text)
{
	if (srv->count == srv->ring_size) {
		struct wev *w = &srv->ring[srv->head];
		srv->oldest_rv = w->rv;
		obj_free(w->o);
		free(w->text);
		srv->head = (srv->head + 1) % srv->ring_size;
		srv->count--;
	}
	struct wev *w = &srv->ring[(srv->head + srv->count++) % srv->ring_size];
	w->rv = srv->rv;
	w->r = r;
	w->type = type;
	w->o = o ? obj_pack_copy(o) : NULL;
	w->text = xstrdup(text);
	w->from = NULL;
}


/* The served text of o, rebuilt; bumps the resourceVersion and records a watch event when it changed. */
/* Takes j (the object as served, without resourceVersion): when it differs from *body, the next resourceVersion
 * goes into *rv and j's metadata, the texts into *body and *text, and it returns true. */
static void published(struct apisrv *srv, json_object *j, char **text, uint64_t *rv)
{
	*rv = ++srv->rv;
	char rvs[24];
	snprintf(rvs, sizeof rvs, "%llu", (unsigned long long)*rv);
	json_object_object_add(apis_jobj(j, "metadata"), "resourceVersion", json_object_new_string(rvs));
	free(*text);
	*text = apis_jtext(j);
	json_object_put(j);
}

bool apis_publish(struct apisrv *srv, json_object *j, char **body, char **text, uint64_t *rv)
{
	char *b = apis_jtext(j);
	if (*body && strcmp(*body, b) == 0) {
		free(b);
		json_object_put(j);
		return false;
	}
	free(*body);
	*body = b;
	published(srv, j, text, rv);
	return true;
}

/* apis_publish for the store objects' entries, comparing digests: *summed and sum for *body. */
static bool publish_sum(struct apisrv *srv, json_object *j, unsigned char sum[APIS_SUM_LEN], bool *summed, char **text,
			uint64_t *rv)
{
	const char *b = json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	unsigned char s[EVP_MAX_MD_SIZE];
	unsigned int sl = 0;
	bool ok = EVP_Digest(b, strlen(b), s, &sl, EVP_sha256(), NULL) == 1 && sl == APIS_SUM_LEN;
	if (ok && *summed && memcmp(sum, s, APIS_SUM_LEN) == 0) {
		json_object_put(j);
		return false;
	}
	*summed = ok; /* without a digest every refresh is a change */
	if (ok)
		memcpy(sum, s, APIS_SUM_LEN);
	published(srv, j, text, rv);
	return true;
}

static void flush_gone(void *arg);

void apis_cache_free(struct apisrv *srv)
{
	const char *k;
	void *v;
	for (size_t it = 0; hmap_next(&srv->cache, &it, &k, &v);) {
		struct cent *c = v;
		free(c->text);
		free(c);
	}
	hmap_free(&srv->cache);
}

struct cent *apis_refresh(struct apisrv *srv, const struct obj *o, bool notify)
{
	char key[UID_LEN + 4];
	apis_cent_key(key, sizeof key, o);
	struct cent *c = hmap_get(&srv->cache, key);
	json_object *j = apis_vmirs_filter(srv, o, apis_obj_to_json(o)); /* a replica set's members: its VMIs only */
	if (j == NULL)
		return c;
	struct source *from = NULL;
	for (struct gone **g = &srv->gone; c == NULL && *g; g = &(*g)->next)
		if (strcmp((*g)->c->key, key) == 0) { /* back in the same turn: a move, not a deletion */
			struct gone *x = *g;
			*g = x->next;
			c = x->c;
			from = x->o->src != o->src ? x->o->src : NULL;
			hmap_put(&srv->cache, c->key, c);
			obj_free(x->o);
			free(x->text);
			free(x);
			break;
		}
	/* a new object (another UID) under the name of one removed this turn (a restart's next VMI, its launcher):
	 * the old one's DELETED goes first, as a watch on a cluster sees it, or a client keyed by name would drop
	 * the new one */
	for (struct gone *g = srv->gone; c == NULL && g; g = g->next)
		if (g->o->kind == o->kind && util_str_eq(g->o->ns, o->ns) && util_str_eq(g->o->name, o->name)) {
			flush_gone(srv);
			break;
		}
	if (from) { /* moved between hosts, perhaps the same text: an event all the same, for watches of one host */
		c->summed = false;
	}
	bool added = c == NULL;
	if (c == NULL) {
		c = xcalloc(1, sizeof *c);
		memcpy(c->key, key, sizeof key);
		hmap_put(&srv->cache, c->key, c);
	}
	if (publish_sum(srv, j, c->sum, &c->summed, &c->text, &c->rv) && notify) {
		apis_ring_push(srv, apis_res_of_kind(o->kind), added ? "ADDED" : "MODIFIED", o, c->text);
		srv->ring[(srv->head + srv->count - 1) % srv->ring_size].from = from;
		apis_wake_watchers(srv);
	}
	return c;
}


static void on_vmi_changed(void *arg)
{
	struct apisrv *srv = arg;
	srv->vmim_posted = false;
	apis_vmims_update(srv);
}

/* The DELETED events of the objects removed during the last loop turn that did not come back. */
static void flush_gone(void *arg)
{
	struct apisrv *srv = arg;
	srv->gone_posted = false;
	struct gone *g = srv->gone;
	srv->gone = NULL;
	/* oldest first, as they were removed */
	struct gone *rev = NULL;
	while (g) {
		struct gone *n = g->next;
		g->next = rev;
		rev = g;
		g = n;
	}
	for (g = rev; g;) {
		struct gone *n = g->next;
		srv->rv++;
		json_object *j = json_tokener_parse(g->text);
		if (j) {
			char rv[24];
			snprintf(rv, sizeof rv, "%llu", (unsigned long long)srv->rv);
			json_object_object_add(apis_jobj(j, "metadata"), "resourceVersion", json_object_new_string(rv));
			char *text = apis_jtext(j);
			json_object_put(j);
			apis_ring_push(srv, apis_res_of_kind(g->o->kind), "DELETED", g->o, text);
			free(text);
		}
		obj_free(g->o);
		free(g->text);
		free(g->c->text);
		free(g->c);
		free(g);
		g = n;
	}
	apis_wake_watchers(srv);
}

/* The served texts of the objects the store held before the server listened (the engine's records, loaded when its
 * hosts connected) are built here, a slice of at most WARM_SLICE_MS a loop pass, rather than by the first list
 * (100,000 VMs: 4 s of it) or the first watch; a request meanwhile builds what it needs itself. */
#define WARM_SLICE_MS 5
static void warm(void *arg)
{
	struct apisrv *srv = arg;
	if (srv->warm.done) /* built, or the server stopped (state_free) */
		return;
	uint64_t until = util_now_ms() + WARM_SLICE_MS;
	for (; srv->warm.kind < OBJ_KIND_COUNT; srv->warm.kind++, srv->warm.src = 0) {
		for (; srv->warm.src < srv->nsrcs; srv->warm.src++, srv->warm.i = 0) {
			size_t n;
			struct obj *const *objs = store_objs(srv->st, srv->srcs[srv->warm.src], srv->warm.kind, &n);
			for (; srv->warm.i < n; srv->warm.i++) {
				char key[UID_LEN + 4];
				apis_cent_key(key, sizeof key, objs[srv->warm.i]);
				if (hmap_get(&srv->cache, key) == NULL) {
					apis_refresh(srv, objs[srv->warm.i], false);
					srv->warm.built++;
				}
				if ((srv->warm.i & 63) == 63 && util_now_ms() >= until) {
					srv->warm.i++;
					loop_post(warm, srv);
					return;
				}
			}
		}
	}
	log_info("engine serve: the texts of %zu objects built in %llu ms", srv->warm.built,
		 (unsigned long long)(util_now_ms() - srv->warm.since));
	srv->warm.done = true;
}

void apis_warm_start(struct apisrv *srv)
{
	memset(&srv->warm, 0, sizeof srv->warm);
	srv->warm.since = util_now_ms();
	loop_post(warm, srv);
}

void apis_on_store(void *arg, enum obj_kind kind, const struct obj *old, const struct obj *new_)
{
	struct apisrv *srv = arg;
	apis_order_note(srv, kind, old, new_);
	if (kind == OBJ_VMI && srv->vmims && !srv->vmim_posted) { /* read once the store is done with this change */
		srv->vmim_posted = true;
		loop_post(on_vmi_changed, srv);
	}
	if (new_) {
		apis_refresh(srv, new_, true);
		return;
	}
	char key[UID_LEN + 4];
	apis_cent_key(key, sizeof key, old);
	struct cent *c = hmap_del(&srv->cache, key);
	if (c) { /* its DELETED once this turn is over, unless it comes back (refresh) */
		struct gone *g = xcalloc(1, sizeof *g);
		g->c = c;
		g->o = obj_pack_copy(old);
		g->text = xstrdup(c->text);
		g->next = srv->gone;
		srv->gone = g;
		if (!srv->gone_posted) {
			srv->gone_posted = true;
			loop_post(flush_gone, srv);
		}
		return;
	}
	json_object *j = apis_vmirs_filter(srv, old, apis_obj_to_json(old));
	if (j == NULL) /* never served (a replica set's member VM) */
		return;
	srv->rv++;
	char *text = NULL;
	if (j) {
		char rv[24];
		snprintf(rv, sizeof rv, "%llu", (unsigned long long)srv->rv);
		json_object_object_add(apis_jobj(j, "metadata"), "resourceVersion", json_object_new_string(rv));
		text = apis_jtext(j);
		json_object_put(j);
	}
	if (text)
		apis_ring_push(srv, apis_res_of_kind(old->kind), "DELETED", old, text);
	free(text);
	apis_wake_watchers(srv);
}

/* ---- watch ---- */

static void watcher_event(struct apisrv *srv, struct watcher *w, const char *type, const char *text)
{
	if (w->table) {
		json_object *o = json_tokener_parse(text);
		json_object *t = apis_table_new(w->r, srv->rv, NULL, !w->sent_columns);
		w->sent_columns = true;
		json_object_array_add(apis_jget(t, "rows"), apis_table_row(w->r, o, "Metadata"));
		json_object_put(o);
		char *tt = apis_jtext(t);
		json_object_put(t);
		buf_printf(&w->out, "{\"type\":\"%s\",\"object\":%s}\n", type, tt);
		free(tt);
	} else
		buf_printf(&w->out, "{\"type\":\"%s\",\"object\":%s}\n", type, text);
}

static bool watcher_matches(struct watcher *w, const struct wev *e)
{
	if (e->r != w->r)
		return false;
	if (w->only && e->o && e->o->src != w->only && e->from != w->only)
		return false;
	struct filter f = { .ns = w->ns, .name = w->name, .ls = w->ls, .fs = w->fs };
	if (e->o == NULL) { /* a migration, the KubeVirt CR or a Node: its text says the rest */
		json_object *j = json_tokener_parse(e->text), *md = apis_jget(j, "metadata");
		struct lookup l = { .j = j, .ns = apis_jgets(md, "namespace"), .name = apis_jgets(md, "name") };
		bool ok = j && (l.ns || !RES[e->r].namespaced) && l.name && apis_matches(&f, &l) &&
			  (w->only == NULL || e->r != R_NODE || util_str_eq(l.name, w->only->name));
		if (j)
			json_object_put(j);
		return ok;
	}
	struct lookup l = { .o = e->o, .ns = e->o->ns, .name = e->o->name };
	return apis_matches(&f, &l);
}

/* Moves the ring's events after w->rv into w's output. */
static void watcher_fill(struct apisrv *srv, struct watcher *w)
{
	for (size_t i = 0; i < srv->count; i++) {
		const struct wev *e = &srv->ring[(srv->head + i) % srv->ring_size];
		if (e->rv <= w->rv)
			continue;
		/* a watch of one host (kvcon -c HOST) sees an object moved between hosts leave or arrive */
		bool moved = w->only && e->from && e->o;
		if (watcher_matches(w, e))
			watcher_event(srv, w, !moved ? e->type : w->only == e->from ? "DELETED" : "ADDED", e->text);
		w->rv = e->rv;
	}
	if (w->rv < srv->rv)
		w->rv = srv->rv;
}

static void watcher_bookmark(struct watcher *w)
{
	buf_printf(&w->out,
		   "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"%s\",\"apiVersion\":\"%s\",\"metadata\":"
		   "{\"resourceVersion\":\"%llu\"}}}\n",
		   w->table ? "Table" : RES[w->r].kind, w->table ? "meta.k8s.io/v1" : apis_api_version(w->r),
		   (unsigned long long)w->rv);
}

void apis_wake(struct watcher *w)
{
	loop_fd_remove(w->gone);
	w->gone = NULL;
	if (w->suspended) {
		w->suspended = false;
		MHD_resume_connection(w->c);
	}
}

void apis_wake_watchers(struct apisrv *srv)
{
	for (struct watcher *w = srv->watchers; w; w = w->next)
		apis_wake(w);
}

/* A suspended watch's socket turned readable: a client that left (EOF) ends the watch now, not at the next
 * event or bookmark written to it. Departed clients (every kvcon command lists and watches) otherwise pile up to
 * the connection limit, and new connections, a console's too, wait in the listen queue meanwhile. */
static void watch_peer(int fd, short revents, void *arg)
{
	struct watcher *w = arg;
	char b;
	ssize_t n = recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
	if (n > 0 && !(revents & (POLLHUP | POLLERR))) { /* bytes from the client (pipelined): MHD reads them */
		loop_fd_remove(w->gone);
		w->gone = NULL;
		return;
	}
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) && !(revents & (POLLHUP | POLLERR)))
		return;
	w->ended = true;
	apis_wake(w);
}

static ssize_t watch_read(void *cls, uint64_t pos, char *out, size_t max)
{
	(void)pos;
	struct watcher *w = cls;
	struct apisrv *srv = w->srv;
	if (w->out.len == 0 && !w->ended) {
		watcher_fill(srv, w);
		uint64_t now = util_now_ms();
		if (w->out.len == 0 && w->bookmarks && now >= w->next_bookmark_ms) {
			watcher_bookmark(w);
			w->next_bookmark_ms = now + BOOKMARK_MS;
		}
		if (w->deadline_ms && now >= w->deadline_ms)
			w->ended = true;
	}
	if (w->out.len == 0) {
		if (w->ended)
			return MHD_CONTENT_READER_END_OF_STREAM;
		w->suspended = true;
		MHD_suspend_connection(w->c);
		const union MHD_ConnectionInfo *ci = MHD_get_connection_info(w->c, MHD_CONNECTION_INFO_CONNECTION_FD);
		if (ci && ci->connect_fd != MHD_INVALID_SOCKET && w->gone == NULL)
			w->gone = loop_fd_add(ci->connect_fd, POLLIN, watch_peer, w);
		return 0;
	}
	size_t n = w->out.len < max ? w->out.len : max;
	memcpy(out, w->out.data, n);
	buf_consume(&w->out, n);
	return (ssize_t)n;
}

static void watch_free(void *cls)
{
	struct watcher *w = cls;
	struct apisrv *srv = w->srv;
	loop_fd_remove(w->gone);
	for (struct watcher **p = &srv->watchers; *p; p = &(*p)->next)
		if (*p == w) {
			*p = w->next;
			break;
		}
	free(w->ns);
	free(w->name);
	apisel_free(w->ls);
	apisel_free(w->fs);
	buf_free(&w->out);
	free(w);
}

enum MHD_Result apis_watch(struct apisrv *srv, struct MHD_Connection *c, enum res r, const char *ns, const char *name)
{
	struct filter f = { .ns = ns, .name = name };
	char *err = NULL;
	if (apis_parse_filter(c, r, &f, &err) < 0) {
		apis_filter_free(&f);
		enum MHD_Result rc = apis_send_status(c, 400, "BadRequest", R_COUNT, NULL, "%s", err);
		free(err);
		return rc;
	}
	uint64_t rv;
	if (apisel_rv_parse(apis_arg(c, "resourceVersion"), &rv) < 0) {
		apis_filter_free(&f);
		return apis_send_status(c, 400, "BadRequest", R_COUNT, NULL, "resourceVersion: not a resource version");
	}
	if (rv > 0 && (rv < srv->oldest_rv || rv > srv->rv)) {
		apis_filter_free(&f);
		return apis_send_status(c, 410, "Expired", R_COUNT, NULL, "too old resource version: %llu (%llu)",
				   (unsigned long long)rv, (unsigned long long)srv->oldest_rv);
	}
	struct watcher *w = xcalloc(1, sizeof *w);
	w->srv = srv;
	w->c = c;
	w->r = r;
	w->ns = xstrdup0(ns);
	w->name = xstrdup0(name);
	w->ls = f.ls;
	w->fs = f.fs;
	w->only = srv->only;
	w->table = apis_wants_table(c);
	const char *bm = apis_arg(c, "allowWatchBookmarks");
	w->bookmarks = bm && (strcmp(bm, "true") == 0 || strcmp(bm, "1") == 0);
	w->next_bookmark_ms = util_now_ms() + BOOKMARK_MS;
	const char *ts = apis_arg(c, "timeoutSeconds");
	if (ts && atol(ts) > 0)
		w->deadline_ms = util_now_ms() + (uint64_t)atol(ts) * 1000;
	buf_init(&w->out);
	if (rv == 0) {
		/* a watch from "now" starts with the current objects as ADDED, as the API server's does */
		struct filter ff = { .ns = ns, .name = name, .ls = w->ls, .fs = w->fs };
		if (RES[r].obj_kind >= 0) { /* the served texts themselves, in the lists' order */
			struct page p;
			apis_page(srv, r, &ff, NULL, 0, &p);
			for (size_t i = 0; i < p.n; i++)
				watcher_event(srv, w, "ADDED", p.text[i]);
			apis_page_free(&p);
		} else {
			size_t n;
			struct item *items = apis_select_items(srv, r, &ff, &n);
			for (size_t i = 0; i < n; i++)
				watcher_event(srv, w, "ADDED", items[i].text);
			apis_items_free(items, n);
		}
		w->rv = srv->rv;
	} else
		w->rv = rv;
	w->next = srv->watchers;
	srv->watchers = w;
	struct MHD_Response *resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64 * 1024, watch_read, w,
								       watch_free);
	MHD_add_response_header(resp, "Content-Type", "application/json");
	MHD_add_response_header(resp, "Cache-Control", "no-cache, private");
	enum MHD_Result rc = MHD_queue_response(c, 200, resp);
	MHD_destroy_response(resp);
	return rc;
}
