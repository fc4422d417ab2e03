/* The engine service's API server (src/apiserver/) without a network or libvirt: its resources from the registry,
 * names in paths, resourceVersions (a change bumps one, the same text does not), the watch ring and the oldest
 * resourceVersion a watch may start from (older ones are 410), the namespaces it lists and their objects, a
 * namespace's deletion, and Tables. Each check drives a handler's pure part through a struct apisrv of its own. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apiserver/dvimport.h"
#include "apiserver/dvsource.h"
#include "apiserver/internal.h"
#include "engine/apitls.h"
#include "core/intern.h"
#include "core/loop.h"
#include "core/xmalloc.h"
#include "engine/apisel.h"
#include "model/store.h"
#include "t.h"

static const char *jstrat(json_object *o, const char *path1, const char *path2)
{
	json_object *v = apis_jget(o, path1);
	return path2 ? apis_jgets(v, path2) : json_object_get_string(v);
}

/* RES[] is the registry's rows with this server's verbs */
static void test_resources(void)
{
	for (int r = 0; r < R_COUNT; r++) {
		const struct kind_def *k = registry_kind(RES[r].id);
		T_EQ_STR(RES[r].plural, k->plural);
		T_EQ_STR(RES[r].kind, k->kind);
		T_CHECK(RES[r].namespaced == k->namespaced);
		T_CHECK(strstr(RES[r].verbs, "get") != NULL && strstr(RES[r].verbs, "watch") != NULL);
	}
	T_EQ_STR(RES[R_VM].plural, "virtualmachines");
	T_EQ_STR(RES[R_VM].group, "kubevirt.io");
	T_EQ_STR(apis_api_version(R_VM), "kubevirt.io/v1");
	T_EQ_STR(apis_api_version(R_POD), "v1");
	T_EQ_STR(apis_api_version(R_NS), "v1");
	T_CHECK(strstr(RES[R_KV].verbs, "create") == NULL); /* the KubeVirt CR is read-only */
	T_CHECK(!RES[R_NS].namespaced && !RES[R_NODE].namespaced && RES[R_VMIM].namespaced);
	T_EQ_INT(apis_res_of_kind(OBJ_VM), R_VM);
	T_EQ_INT(apis_res_of_kind(OBJ_VMI), R_VMI);
	T_EQ_INT(apis_res_of_kind(OBJ_POD), R_POD);
	T_EQ_INT(apis_res_of_kind(OBJ_EVENT), R_EVENT);
}

static void test_names(void)
{
	T_CHECK(apis_valid_name("demo"));
	T_CHECK(apis_valid_name("a.b-c"));
	T_CHECK(!apis_valid_name("Demo"));
	T_CHECK(!apis_valid_name(""));
	T_CHECK(!apis_valid_name(NULL));
	T_CHECK(!apis_valid_name("a/b"));
	char longname[300];
	memset(longname, 'a', sizeof longname - 1);
	longname[sizeof longname - 1] = 0;
	T_CHECK(!apis_valid_name(longname));
}

static json_object *obj_named(const char *name, const char *label)
{
	json_object *j = json_object_new_object(), *md = json_object_new_object();
	json_object_object_add(md, "name", json_object_new_string(name));
	if (label) {
		json_object *l = json_object_new_object();
		json_object_object_add(l, "app", json_object_new_string(label));
		json_object_object_add(md, "labels", l);
	}
	json_object_object_add(j, "metadata", md);
	return j;
}

/* a new resourceVersion only when the object as served changed */
static void test_publish(void)
{
	struct apisrv srv = { 0 };
	char *body = NULL, *text = NULL;
	uint64_t rv = 0;
	T_CHECK(apis_publish(&srv, obj_named("a", "x"), &body, &text, &rv));
	T_EQ_INT(rv, 1);
	T_EQ_INT(srv.rv, 1);
	T_CHECK(strstr(text, "\"resourceVersion\":\"1\"") != NULL);
	T_CHECK(strstr(body, "resourceVersion") == NULL);
	T_CHECK(!apis_publish(&srv, obj_named("a", "x"), &body, &text, &rv));
	T_EQ_INT(rv, 1);
	T_EQ_INT(srv.rv, 1);
	srv.rv = 41; /* other objects changed meanwhile */
	T_CHECK(apis_publish(&srv, obj_named("a", "y"), &body, &text, &rv));
	T_EQ_INT(rv, 42);
	T_CHECK(strstr(text, "\"resourceVersion\":\"42\"") != NULL);
	free(body);
	free(text);
}

/* the ring keeps the last ring_size events; a watch from before the oldest kept one is 410 (rv < oldest_rv) */
static void test_ring(void)
{
	struct apisrv srv = { 0 };
	srv.ring_size = 4;
	srv.ring = xcalloc(srv.ring_size, sizeof *srv.ring);
	for (int i = 1; i <= 6; i++) {
		srv.rv = (uint64_t)i;
		apis_ring_push(&srv, R_VMIM, "MODIFIED", NULL, "{}");
	}
	T_EQ_INT(srv.count, 4);
	T_EQ_INT(srv.oldest_rv, 2);
	T_EQ_INT(srv.ring[srv.head].rv, 3); /* the oldest kept: a watch from 2 misses nothing */
	T_EQ_INT(srv.ring[(srv.head + srv.count - 1) % srv.ring_size].rv, 6);
	T_EQ_STR(srv.ring[srv.head].type, "MODIFIED");
	for (size_t i = 0; i < srv.count; i++)
		free(srv.ring[(srv.head + i) % srv.ring_size].text);
	free(srv.ring);
}

/* default and the KubeVirt CR's namespace always, then those created through the API, sorted */
static void test_namespaces(void)
{
	struct apisrv srv = { 0 };
	char *names[] = { "zeta", "default", "alpha" };
	char *meta[] = { NULL, NULL, "{\"labels\":{\"team\":\"a\"},\"annotations\":{\"note\":\"n\"}}" };
	srv.nsx = names;
	srv.nsxmeta = meta;
	srv.nnsx = 3;
	size_t n;
	const char **ns = apis_namespaces(&srv, &n);
	T_EQ_INT(n, 4);
	if (n == 4) {
		T_EQ_STR(ns[0], "alpha");
		T_EQ_STR(ns[1], "default");
		T_EQ_STR(ns[2], KV_NS);
		T_EQ_STR(ns[3], "zeta");
	}
	free(ns);
	json_object *j = apis_ns_json(&srv, "alpha");
	T_EQ_STR(apis_jgets(j, "kind"), "Namespace");
	json_object *md = apis_jget(j, "metadata");
	T_EQ_STR(jstrat(md, "labels", "team"), "a");
	T_EQ_STR(jstrat(md, "labels", "kubernetes.io/metadata.name"), "alpha");
	T_EQ_STR(jstrat(md, "annotations", "note"), "n");
	T_EQ_STR(jstrat(j, "status", "phase"), "Active");
	json_object *z = apis_ns_json(&srv, "zeta");
	T_CHECK(apis_jget(apis_jget(z, "metadata"), "annotations") == NULL);

	/* its Table: the columns, the row's cells, the object as includeObject asks */
	json_object *t = apis_table_new(R_NS, 7, "tok", true);
	T_EQ_STR(apis_jgets(t, "kind"), "Table");
	T_EQ_STR(jstrat(t, "metadata", "resourceVersion"), "7");
	T_EQ_STR(jstrat(t, "metadata", "continue"), "tok");
	json_object *cols = apis_jget(t, "columnDefinitions");
	T_EQ_INT(json_object_array_length(cols), 3);
	T_EQ_STR(apis_jgets(json_object_array_get_idx(cols, 0), "name"), "Name");
	json_object *row = apis_table_row(R_NS, j, NULL);
	json_object *cells = apis_jget(row, "cells");
	T_EQ_INT(json_object_array_length(cells), 3);
	T_EQ_STR(json_object_get_string(json_object_array_get_idx(cells, 0)), "alpha");
	T_EQ_STR(json_object_get_string(json_object_array_get_idx(cells, 1)), "Active");
	T_EQ_STR(jstrat(row, "object", "kind"), "PartialObjectMetadata");
	json_object *none = apis_table_row(R_NS, j, "None"), *full = apis_table_row(R_NS, j, "Object");
	T_CHECK(apis_jget(none, "object") == NULL);
	T_EQ_STR(jstrat(full, "object", "kind"), "Namespace");
	json_object *nocols = apis_table_new(R_NS, 7, NULL, false);
	T_EQ_INT(json_object_array_length(apis_jget(nocols, "columnDefinitions")), 0);
	T_CHECK(apis_jget(apis_jget(nocols, "metadata"), "continue") == NULL);
	json_object_put(nocols);
	json_object_put(none);
	json_object_put(full);
	json_object_put(row);
	json_object_put(t);
	json_object_put(z);
	json_object_put(j);
}

/* a deleted namespace: Terminating with the namespace controller's conditions (what remains), listed while its
 * content goes through each kind's own delete (a replica set here), then gone from the list and its file, with a
 * DELETED event after its content's */
static void test_ns_deletion(void)
{
	char dir[] = "/tmp/kvcon-nsdel-XXXXXX", cmd[128];
	T_CHECK(mkdtemp(dir) != NULL);
	snprintf(cmd, sizeof cmd, "mkdir -p %s/kvcon/engine-data/vmirs", dir);
	T_EQ_INT(system(cmd), 0);
	char *old = getenv("XDG_STATE_HOME") ? xstrdup(getenv("XDG_STATE_HOME")) : NULL;
	setenv("XDG_STATE_HOME", dir, 1);
	struct apisrv srv = { 0 };
	srv.ring_size = 8;
	srv.ring = xcalloc(srv.ring_size, sizeof *srv.ring);
	srv.nsx = xcalloc(2, sizeof *srv.nsx);
	srv.nsxmeta = xcalloc(2, sizeof *srv.nsxmeta);
	srv.nsx[0] = xstrdup("apps");
	srv.nsxmeta[0] = xstrdup("{\"labels\":{\"team\":\"a\"},\"deletionTimestamp\":\"2026-01-01T00:00:00Z\"}");
	srv.nsx[1] = xstrdup("keep");
	srv.nnsx = 2;
	struct vmirs *rs = xcalloc(1, sizeof *rs);
	rs->ns = xstrdup("apps");
	rs->name = xstrdup("web");
	rs->obj = json_tokener_parse("{\"metadata\":{\"name\":\"web\",\"namespace\":\"apps\"},\"spec\":{}}");
	rs->text = xstrdup("{\"metadata\":{\"name\":\"web\",\"namespace\":\"apps\"}}");
	srv.vmirss = rs;
	T_CHECK(apis_ns_terminating(&srv, "apps"));
	T_CHECK(!apis_ns_terminating(&srv, "keep"));
	T_CHECK(!apis_ns_terminating(&srv, "default"));

	json_object *j = apis_ns_json(&srv, "apps"), *conds = apis_jget(apis_jget(j, "status"), "conditions");
	T_EQ_STR(jstrat(j, "status", "phase"), "Terminating");
	T_EQ_STR(jstrat(j, "metadata", "deletionTimestamp"), "2026-01-01T00:00:00Z");
	T_EQ_STR(jstrat(apis_jget(j, "metadata"), "labels", "team"), "a");
	T_EQ_STR(json_object_get_string(json_object_array_get_idx(apis_jget(apis_jget(j, "spec"), "finalizers"), 0)), "kubernetes");
	T_EQ_INT(json_object_array_length(conds), 5);
	json_object *remaining = json_object_array_get_idx(conds, 3);
	T_EQ_STR(apis_jgets(remaining, "type"), "NamespaceContentRemaining");
	T_EQ_STR(apis_jgets(remaining, "status"), "True");
	T_EQ_STR(apis_jgets(remaining, "message"),
		 "Some resources are remaining: virtualmachineinstancereplicasets.kubevirt.io has 1 resource instances");
	json_object *row = apis_table_row(R_NS, j, "None");
	T_EQ_STR(json_object_get_string(json_object_array_get_idx(apis_jget(row, "cells"), 1)), "Terminating");
	json_object_put(row);
	json_object_put(j);
	char *busy = apis_nsx_busy(&srv);
	T_EQ_STR(busy, "namespace apps: terminating");
	free(busy);

	apis_nsx_tick(&srv); /* the replica set goes (no members), then the empty namespace */
	T_CHECK(srv.vmirss == NULL);
	T_EQ_INT(srv.nnsx, 1);
	T_EQ_STR(srv.nsx[0], "keep");
	T_EQ_INT(srv.count, 2);
	const struct wev *e1 = &srv.ring[srv.head], *e2 = &srv.ring[(srv.head + 1) % srv.ring_size];
	T_EQ_INT(e1->r, R_VMIRS);
	T_EQ_STR(e1->type, "DELETED");
	T_EQ_INT(e2->r, R_NS);
	T_EQ_STR(e2->type, "DELETED");
	T_CHECK(e2->rv > e1->rv);
	json_object *gone = json_tokener_parse(e2->text);
	T_EQ_STR(jstrat(gone, "metadata", "name"), "apps");
	T_EQ_STR(jstrat(gone, "status", "phase"), "Terminating");
	T_EQ_STR(apis_jgets(json_object_array_get_idx(apis_jget(apis_jget(gone, "status"), "conditions"), 3), "reason"),
		 "ContentRemoved");
	json_object_put(gone);
	T_CHECK(apis_nsx_busy(&srv) == NULL);
	snprintf(cmd, sizeof cmd, "%s/kvcon/engine-namespaces", dir);
	FILE *f = fopen(cmd, "r");
	char line[64] = "";
	T_CHECK(f && fgets(line, sizeof line, f) != NULL);
	T_EQ_STR(line, "keep\n");
	T_CHECK(f && fgets(line, sizeof line, f) == NULL);
	if (f)
		fclose(f);

	for (size_t i = 0; i < srv.count; i++) {
		free(srv.ring[(srv.head + i) % srv.ring_size].text);
		obj_free(srv.ring[(srv.head + i) % srv.ring_size].o);
	}
	free(srv.ring);
	free(srv.nsx[0]);
	free(srv.nsx);
	free(srv.nsxmeta);
	if (old)
		setenv("XDG_STATE_HOME", old, 1);
	else
		unsetenv("XDG_STATE_HOME");
	free(old);
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	T_EQ_INT(system(cmd), 0);
}

/* a migration's row: KubeVirt's printer columns */
static void test_vmim_table(void)
{
	json_object *m = json_tokener_parse("{\"kind\":\"VirtualMachineInstanceMigration\",\"metadata\":{\"name\":\"mig1\","
					    "\"namespace\":\"default\"},\"spec\":{\"vmiName\":\"demo\"},"
					    "\"status\":{\"phase\":\"Running\"}}");
	json_object *row = apis_table_row(R_VMIM, m, "Metadata"), *cells = apis_jget(row, "cells");
	T_EQ_INT(json_object_array_length(cells), 3);
	T_EQ_STR(json_object_get_string(json_object_array_get_idx(cells, 0)), "mig1");
	T_EQ_STR(json_object_get_string(json_object_array_get_idx(cells, 1)), "Running");
	T_EQ_STR(json_object_get_string(json_object_array_get_idx(cells, 2)), "demo");
	json_object_put(row);
	json_object_put(m);
}

/* a replica set's row: KubeVirt's printer columns (NAME DESIRED CURRENT READY AGE), integers, null when absent */
static void test_vmirs_table(void)
{
	json_object *m = json_tokener_parse("{\"kind\":\"VirtualMachineInstanceReplicaSet\",\"metadata\":{\"name\":\"web\","
					    "\"namespace\":\"default\",\"creationTimestamp\":\"2020-01-01T00:00:00Z\"},"
					    "\"spec\":{\"replicas\":3},\"status\":{\"replicas\":2}}");
	json_object *row = apis_table_row(R_VMIRS, m, "Metadata"), *cells = apis_jget(row, "cells");
	T_EQ_INT(json_object_array_length(cells), 5);
	T_EQ_STR(json_object_get_string(json_object_array_get_idx(cells, 0)), "web");
	T_EQ_INT(json_object_get_int(json_object_array_get_idx(cells, 1)), 3);
	T_CHECK(json_object_is_type(json_object_array_get_idx(cells, 1), json_type_int));
	T_EQ_INT(json_object_get_int(json_object_array_get_idx(cells, 2)), 2);
	T_CHECK(json_object_array_get_idx(cells, 3) == NULL); /* no readyReplicas */
	T_CHECK(strchr(json_object_get_string(json_object_array_get_idx(cells, 4)), 'y') != NULL); /* years */
	json_object *t = apis_table_new(R_VMIRS, 1, NULL, true), *defs = apis_jget(t, "columnDefinitions");
	T_EQ_INT(json_object_array_length(defs), 5);
	T_EQ_STR(apis_jgets(json_object_array_get_idx(defs, 1), "name"), "Desired");
	T_EQ_STR(apis_jgets(json_object_array_get_idx(defs, 1), "type"), "integer");
	json_object_put(t);
	json_object_put(row);
	json_object_put(m);
}

/* the events of the service's own controllers (a replica set's): on their object as kubectl describe selects them,
 * a repeat counted on the last one as client-go's recorder aggregates, at most APIS_EVLOG_MAX kept, all gone with
 * their object */
static void test_events(void)
{
	struct apisrv srv = { 0 };
	struct source *src = source_new(SOURCE_ENGINE, "host");
	srv.st = store_new();
	srv.srcs = &src;
	srv.nsrcs = 1;
	struct apis_evlog log = { 0 };
	const char *uid = "0f8b3f0a-1111-4222-8333-944445555666";
	apis_event_record(&srv, &log, "VirtualMachineInstanceReplicaSet", "default", "web", uid, "Normal",
			  "SuccessfulCreate", "virtualmachinereplicaset-controller",
			  "Started the virtual machine by creating the new virtual machine instance webbcdfg");
	size_t n;
	struct obj *const *evs = store_objs(srv.st, src, OBJ_EVENT, &n);
	T_EQ_INT(n, 1);
	json_object *j = apis_obj_to_json(evs[0]);
	json_object *io = apis_jget(j, "involvedObject");
	T_EQ_STR(apis_jgets(io, "kind"), "VirtualMachineInstanceReplicaSet");
	T_EQ_STR(apis_jgets(io, "apiVersion"), "kubevirt.io/v1");
	T_EQ_STR(apis_jgets(io, "name"), "web");
	T_EQ_STR(apis_jgets(io, "namespace"), "default");
	T_EQ_STR(apis_jgets(io, "uid"), uid);
	T_EQ_STR(apis_jgets(j, "reason"), "SuccessfulCreate");
	T_EQ_STR(apis_jgets(j, "type"), "Normal");
	T_EQ_STR(jstrat(j, "source", "component"), "virtualmachinereplicaset-controller");
	T_EQ_INT(json_object_get_int(apis_jget(j, "count")), 1);
	json_object_put(j);
	/* the same again: one event, count 2; another message: a second event */
	apis_event_record(&srv, &log, "VirtualMachineInstanceReplicaSet", "default", "web", uid, "Normal",
			  "SuccessfulCreate", "virtualmachinereplicaset-controller",
			  "Started the virtual machine by creating the new virtual machine instance webbcdfg");
	evs = store_objs(srv.st, src, OBJ_EVENT, &n);
	T_EQ_INT(n, 1);
	T_EQ_INT(((const struct event *)evs[0])->count, 2);
	apis_event_record(&srv, &log, "VirtualMachineInstanceReplicaSet", "default", "web", uid, "Warning",
			  "FailedCreate", "virtualmachinereplicaset-controller", "Error creating virtual machine instance: x");
	evs = store_objs(srv.st, src, OBJ_EVENT, &n);
	T_EQ_INT(n, 2);
	/* bounded: the oldest go */
	for (int i = 0; i < APIS_EVLOG_MAX + 5; i++) {
		char msg[64];
		snprintf(msg, sizeof msg, "Paused %d", i);
		apis_event_record(&srv, &log, "VirtualMachineInstanceReplicaSet", "default", "web", uid, "Normal",
				  "SuccessfulPaused", "virtualmachinereplicaset-controller", msg);
	}
	evs = store_objs(srv.st, src, OBJ_EVENT, &n);
	T_EQ_INT(n, APIS_EVLOG_MAX);
	T_EQ_INT(log.n, APIS_EVLOG_MAX);
	T_CHECK(store_get(srv.st, src, OBJ_EVENT, log.uids[0]) != NULL);
	apis_evlog_drop(&srv, &log);
	evs = store_objs(srv.st, src, OBJ_EVENT, &n);
	T_EQ_INT(n, 0);
	T_EQ_INT(log.n, 0);
	store_free(srv.st);
	source_free_all();
}

static struct obj *list_vm(struct source *src, const char *ns, int i, const char *app)
{
	struct obj *o = obj_new(OBJ_VM);
	o->src = src;
	o->ns = intern(ns);
	o->name = xasprintf("vm-%05d", i);
	snprintf(o->uid, sizeof o->uid, "00000000-0000-4000-8000-%012d", i);
	if (app)
		obj_label_add(o, "app", app);
	return o;
}

/* a store object's entry (a digest of what was served, not a copy): a refresh of the same object takes no
 * resourceVersion, a change takes one */
static void test_refresh(void)
{
	struct apisrv srv = { 0 };
	struct source *src = source_new(SOURCE_ENGINE, "host");
	srv.ring_size = 4;
	srv.ring = xcalloc(srv.ring_size, sizeof *srv.ring);
	hmap_init(&srv.cache);
	struct obj *a = list_vm(src, "a", 1, NULL), *b = list_vm(src, "a", 1, "web");
	struct cent *c = apis_refresh(&srv, a, false);
	T_EQ_INT(srv.rv, 1);
	T_CHECK(c && c->summed && c->rv == 1 && strstr(c->text, "\"resourceVersion\":\"1\"") != NULL);
	T_CHECK(apis_refresh(&srv, a, true) == c);
	T_EQ_INT(srv.rv, 1);
	T_EQ_INT(srv.count, 0); /* no watch event */
	apis_refresh(&srv, b, true);
	T_EQ_INT(c->rv, 2);
	T_CHECK(strstr(c->text, "\"web\"") != NULL && strstr(c->text, "\"resourceVersion\":\"2\"") != NULL);
	T_EQ_INT(srv.count, 1);
	c->summed = false; /* a move between hosts: an event all the same */
	apis_refresh(&srv, b, true);
	T_EQ_INT(c->rv, 3);
	T_EQ_INT(srv.count, 2);
	for (size_t i = 0; i < srv.count; i++) {
		obj_free(srv.ring[i].o);
		free(srv.ring[i].text);
	}
	free(srv.ring);
	free(c->text);
	free(c);
	hmap_free(&srv.cache);
	obj_free(a);
	obj_free(b);
	source_free_all();
}

/* Pages through f's selection with limit, as a client follows continue tokens, checking each page against the
 * whole selection sorted (apis_select_items, the reference) from the same place: the same objects, in order, the
 * count of those left, and, without a selector, no more index entries looked at than the page holds and one. */
static void list_check(struct apisrv *srv, const struct filter *f, size_t limit)
{
	size_t n;
	struct item *all = apis_select_items(srv, R_VM, f, &n);
	bool selector = f->ls && f->ls->n > 0;
	size_t got = 0, pages = 0;
	char *after = NULL;
	bool ok = true;
	do { /* stops at the first difference (a page that never ends would loop) */
		struct page p;
		apis_page(srv, R_VM, f, after, limit, &p);
		for (size_t i = 0; ok && i < p.n; i++)
			ok = got + i < n && strcmp(p.text[i], all[got + i].text) == 0;
		got += p.n;
		ok = ok && p.more == (got < n) && p.remaining == (!p.more ? 0 : selector ? -1 : (long)(n - got));
		if (!selector)
			ok = ok && p.visited <= p.n + 1;
		free(after);
		after = p.more ? xstrdup(p.key) : NULL;
		apis_page_free(&p);
	} while (ok && after && ++pages <= n);
	T_CHECK(ok);
	T_EQ_INT(got, n);
	free(after);
	apis_items_free(all, n);
}

/* a test's server on one engine source, with an empty store, cache and watch ring */
static void srv_init(struct apisrv *srv, struct source **src)
{
	srv->st = store_new();
	srv->srcs = src;
	srv->nsrcs = 1;
	srv->ring_size = 16;
	srv->ring = xcalloc(srv->ring_size, sizeof *srv->ring);
	hmap_init(&srv->cache);
}

/* a test's server taken down: its listener, store, order, cached texts, watch ring and sources */
static void srv_done(struct apisrv *srv, int lid)
{
	store_unlisten(srv->st, lid);
	store_free(srv->st);
	apis_order_free(srv);
	apis_cache_free(srv);
	for (size_t i = 0; i < srv->count; i++) {
		obj_free(srv->ring[(srv->head + i) % srv->ring_size].o);
		free(srv->ring[(srv->head + i) % srv->ring_size].text);
	}
	free(srv->ring);
	source_free_all();
}

/* lists page through each kind's order: every limit, namespace (one that prefixes another's name too) and selector
 * gives the pages the whole sorted selection gives; a page looks at its own entries only; the order is built once
 * for all the pages, kept when an object changes (the change is served) and rebuilt when one comes or goes */
static void test_list_pages(void)
{
	struct apisrv srv = { 0 };
	struct source *src = source_new(SOURCE_ENGINE, "host");
	srv_init(&srv, &src);
	int lid = store_listen(srv.st, apis_on_store, &srv);
	const char *nss[] = { "b", "a", "b-x" };
	const int N = 2000;
	for (int k = 0; k < N; k++) { /* in no order */
		int i = (k * 7919) % N;
		store_upsert(srv.st, list_vm(src, nss[i % 3], i, i % 4 ? NULL : "web"));
	}
	char *err = NULL;
	struct apisel *web = apisel_parse("app=web", false, &err), *none = apisel_parse(NULL, false, &err);
	struct filter every = { .ls = none }, in_b = { .ns = "b", .ls = none }, sel = { .ls = web };
	struct filter sel_b = { .ns = "b", .ls = web }, missing = { .ns = "c", .ls = none };
	size_t limits[] = { 0, 1, 7, 500, 1999, 2000, 2001 };
	for (size_t i = 0; i < sizeof limits / sizeof limits[0]; i++) {
		list_check(&srv, &every, limits[i]);
		list_check(&srv, &in_b, limits[i]);
		list_check(&srv, &sel, limits[i]);
		list_check(&srv, &sel_b, limits[i]);
		list_check(&srv, &missing, limits[i]);
	}
	T_EQ_INT(srv.order[OBJ_VM].builds, 1);
	/* the namespaces in use, found in the order (a create asks whether its namespace exists) */
	T_CHECK(apis_ns_exists(&srv, "b") && apis_ns_exists(&srv, "b-x") && apis_ns_exists(&srv, "a"));
	T_CHECK(apis_ns_exists(&srv, "default") && !apis_ns_exists(&srv, "c") && !apis_ns_exists(&srv, "b-"));
	size_t nn;
	const char **names = apis_namespaces(&srv, &nn);
	T_EQ_INT(nn, 5);
	if (nn == 5) {
		T_EQ_STR(names[0], "a");
		T_EQ_STR(names[1], "b");
		T_EQ_STR(names[2], "b-x");
		T_EQ_STR(names[3], "default");
		T_EQ_STR(names[4], KV_NS);
	}
	free(names);
	T_EQ_INT(srv.order[OBJ_VM].builds, 1);
	/* get: one name, by binary search */
	struct filter one = { .ns = "b-x", .name = "vm-00005" }, other_ns = { .ns = "b", .name = "vm-00005" };
	struct page p;
	apis_page(&srv, R_VM, &one, NULL, 1, &p);
	T_EQ_INT(p.n, 1);
	T_CHECK(p.visited <= 1);
	T_CHECK(p.n == 1 && strstr(p.text[0], "\"vm-00005\"") && strstr(p.text[0], "\"b-x\""));
	apis_page_free(&p);
	apis_page(&srv, R_VM, &other_ns, NULL, 1, &p);
	T_EQ_INT(p.n, 0);
	apis_page_free(&p);
	/* a change (a label added) keeps the order and is served; objects that come and go (a recreated one under a
	 * new UID too) are put in and taken out, with a get of each between (kubectl apply), never rebuilding it */
	store_upsert(srv.st, list_vm(src, "b-x", 5, "web"));
	list_check(&srv, &sel, 50);
	for (int k = 0; k < 300; k++) {
		int i = N + (k * 37) % 300;
		store_upsert(srv.st, list_vm(src, nss[k % 3], i, k % 2 ? "web" : NULL));
		char uid[UID_LEN];
		snprintf(uid, sizeof uid, "00000000-0000-4000-8000-%012d", (k * 13) % N);
		store_remove(srv.st, src, OBJ_VM, uid);
		struct filter by_name = { .ns = nss[(k + 1) % 3], .name = "vm-01000" };
		apis_page(&srv, R_VM, &by_name, NULL, 1, &p);
		apis_page_free(&p);
	}
	struct obj *again = list_vm(src, "a", 1, "web"); /* vm-00001 recreated: another UID */
	again->uid[0] = 'f';
	store_upsert(srv.st, again);
	T_EQ_INT(srv.order[OBJ_VM].builds, 1);
	list_check(&srv, &every, 500);
	list_check(&srv, &sel, 3);
	list_check(&srv, &in_b, 7);
	T_EQ_INT(srv.order[OBJ_VM].builds, 1);
	/* the same pages as an order built afresh */
	size_t n;
	struct item *all = apis_select_items(&srv, R_VM, &every, &n);
	apis_order_free(&srv);
	apis_page(&srv, R_VM, &every, NULL, 0, &p);
	T_EQ_INT(p.n, n);
	for (size_t i = 0; i < p.n && i < n; i++)
		T_CHECK(strcmp(p.text[i], all[i].text) == 0);
	apis_page_free(&p);
	apis_items_free(all, n);
	apisel_free(web);
	apisel_free(none);
	srv_done(&srv, lid);
}

/* the objects the store held before the server listened (the engine's records) get their texts on the loop, in
 * slices, each once: the first list then builds none (no resourceVersion taken) */
static void test_warm(void)
{
	loop_init();
	struct apisrv srv = { 0 };
	struct source *src = source_new(SOURCE_ENGINE, "host");
	srv_init(&srv, &src);
	const int N = 3000;
	for (int i = 0; i < N; i++)
		store_upsert(srv.st, list_vm(src, i % 2 ? "a" : "b", i, NULL));
	int lid = store_listen(srv.st, apis_on_store, &srv);
	apis_warm_start(&srv);
	T_EQ_INT(srv.cache.count, 0); /* nothing before the loop runs */
	for (int pass = 0; pass < 100000 && !srv.warm.done; pass++)
		loop_once(0);
	T_CHECK(srv.warm.done);
	T_EQ_INT(srv.warm.built, N);
	T_EQ_INT(srv.cache.count, N);
	T_EQ_INT(srv.rv, N);
	struct filter every = { 0 };
	struct page p;
	apis_page(&srv, R_VM, &every, NULL, 0, &p);
	T_EQ_INT(p.n, N);
	T_EQ_INT(srv.rv, N);
	apis_page_free(&p);
	srv_done(&srv, lid);
	loop_fini();
}

/* the HTTPS port a root's service chose: recorded per socket, read back, garbage refused */
static void test_port_record(void)
{
	char dir[] = "/tmp/kvcon-port.XXXXXX";
	T_CHECK(mkdtemp(dir) != NULL);
	char *err = NULL;
	T_EQ_INT(apitls_port_read(dir, "/run/a.sock"), -1);
	T_EQ_INT(apitls_port_write(dir, "/run/a.sock", 41455, &err), 0);
	T_EQ_INT(apitls_port_write(dir, "/run/b.sock", 6443, &err), 0);
	T_EQ_INT(apitls_port_read(dir, "/run/a.sock"), 41455);
	T_EQ_INT(apitls_port_read(dir, "/run/b.sock"), 6443);
	T_EQ_INT(apitls_port_write(dir, "/run/a.sock", 41456, &err), 0);
	T_EQ_INT(apitls_port_read(dir, "/run/a.sock"), 41456);
	char cmd[128];
	snprintf(cmd, sizeof cmd, "for f in %s/engine-api-port-*; do echo 70000 >\"$f\"; done", dir);
	T_EQ_INT(system(cmd), 0);
	T_EQ_INT(apitls_port_read(dir, "/run/a.sock"), -1);
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	T_EQ_INT(system(cmd), 0);
	free(err);
}

/* the storage kinds: their groups and versions, how a request's path finds them, their rows as kubectl prints them */
static void test_storage(void)
{
	T_EQ_STR(apis_api_version(R_DV), "cdi.kubevirt.io/v1beta1");
	T_EQ_STR(apis_api_version(R_SC), "storage.k8s.io/v1");
	T_EQ_STR(apis_api_version(R_PVC), "v1");
	T_EQ_INT(apis_res_find("cdi.kubevirt.io", "v1beta1", "datavolumes"), R_DV);
	T_EQ_INT(apis_res_find("cdi.kubevirt.io", "v1", "datavolumes"), R_COUNT);
	T_EQ_INT(apis_res_find(NULL, "v1", "persistentvolumeclaims"), R_PVC);
	T_EQ_INT(apis_res_find("kubevirt.io", "v1", "persistentvolumeclaims"), R_COUNT);
	T_EQ_INT(apis_res_find("storage.k8s.io", "v1", "storageclasses"), R_SC);
	T_CHECK(RES[R_PVC].namespaced && !RES[R_PV].namespaced && !RES[R_SC].namespaced && RES[R_DV].namespaced);
	T_CHECK(strstr(RES[R_SC].verbs, "create") == NULL && strstr(RES[R_PV].verbs, "create") == NULL);

	json_object *pvc = json_tokener_parse(
		"{\"metadata\":{\"name\":\"data\",\"namespace\":\"default\"},\"spec\":{\"volumeName\":\"pvc-1\","
		"\"storageClassName\":\"local\",\"volumeMode\":\"Filesystem\"},\"status\":{\"phase\":\"Bound\","
		"\"capacity\":{\"storage\":\"1Gi\"},\"accessModes\":[\"ReadWriteOnce\",\"ReadOnlyMany\"]}}");
	json_object *row = apis_table_row(R_PVC, pvc, "None"), *cells = apis_jget(row, "cells");
	const char *want[] = { "data", "Bound", "pvc-1", "1Gi", "RWO,ROX", "local", "<unknown>", "Filesystem" };
	T_EQ_INT(json_object_array_length(cells), 8);
	for (size_t i = 0; i < 8; i++)
		T_EQ_STR(json_object_get_string(json_object_array_get_idx(cells, i)), want[i]);
	json_object_put(row);
	json_object_object_add(apis_jget(pvc, "metadata"), "deletionTimestamp", json_object_new_string("2026-01-01T00:00:00Z"));
	row = apis_table_row(R_PVC, pvc, "None");
	T_EQ_STR(json_object_get_string(json_object_array_get_idx(apis_jget(row, "cells"), 1)), "Terminating");
	json_object_put(row);
	json_object_put(pvc);

	json_object *dv = json_tokener_parse("{\"metadata\":{\"name\":\"root\"},\"status\":{\"phase\":\"ImportInProgress\","
					     "\"progress\":\"37.50%\",\"restartCount\":2}}");
	row = apis_table_row(R_DV, dv, "None");
	cells = apis_jget(row, "cells");
	T_EQ_INT(json_object_array_length(cells), 5);
	T_EQ_STR(json_object_get_string(json_object_array_get_idx(cells, 1)), "ImportInProgress");
	T_EQ_STR(json_object_get_string(json_object_array_get_idx(cells, 2)), "37.50%");
	T_EQ_INT(json_object_get_int(json_object_array_get_idx(cells, 3)), 2);
	json_object_put(row);
	json_object_put(dv);

	json_object *sc = json_tokener_parse("{\"metadata\":{\"name\":\"local\",\"annotations\":{"
					     "\"storageclass.kubernetes.io/is-default-class\":\"true\"}},\"provisioner\":\"kvcon.io/local\","
					     "\"reclaimPolicy\":\"Delete\",\"volumeBindingMode\":\"Immediate\"}");
	row = apis_table_row(R_SC, sc, "None");
	T_EQ_STR(json_object_get_string(json_object_array_get_idx(apis_jget(row, "cells"), 0)), "local (default)");
	T_EQ_STR(json_object_get_string(json_object_array_get_idx(apis_jget(row, "cells"), 4)), "false");
	json_object_put(row);
	json_object_put(sc);

	/* checksums a DataVolume may name */
	T_CHECK(dvimport_checksum_ok("sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789ABCDEF"));
	T_CHECK(dvimport_checksum_ok("md5:0123456789abcdef0123456789abcdef"));
	T_CHECK(!dvimport_checksum_ok("sha256:0123"));
	T_CHECK(!dvimport_checksum_ok("sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdeg"));
	T_CHECK(!dvimport_checksum_ok("sha3:0123456789abcdef0123456789abcdef"));
	T_CHECK(!dvimport_checksum_ok("0123456789abcdef0123456789abcdef"));
	T_CHECK(!dvimport_checksum_ok(NULL));
	T_CHECK(!dvimport_checksum_ok("sha:"));
}

/* dvs_parse on a DataVolume spec's text: the kind, or -1 with the 422's cause containing want. out points into the
 * parsed spec, kept until the next call (dvs_of(NULL, ...) frees it). */
static int dvs_of(const char *spec_json, struct dvs *out, const char *want)
{
	static json_object *kept;
	json_object_put(kept);
	kept = NULL;
	if (spec_json == NULL)
		return -1;
	json_object *spec = kept = json_tokener_parse(spec_json);
	char *why = NULL;
	int rc = dvs_parse(spec, "default", out, &why);
	if (want)
		T_CHECK(why != NULL && strstr(why, want) != NULL);
	else
		T_CHECK(why == NULL);
	if (why && !want)
		fprintf(stderr, "  %s: %s\n", spec_json, why);
	int kind = rc < 0 ? -1 : (int)out->kind;
	if (rc == 0 && out->kind == DVS_REGISTRY)
		T_CHECK(strncmp(out->url, "docker://", 9) != 0);
	free(why);
	return kind;
}

/* DataVolume sources: what the engine takes, what it refuses and why */
static void test_dv_sources(void)
{
	struct dvs d;
	T_EQ_INT(dvs_of("{\"source\":{\"blank\":{}}}", &d, NULL), DVS_BLANK);
	T_EQ_INT(dvs_of("{\"source\":{\"http\":{\"url\":\"https://x/disk.img\"}}}", &d, NULL), DVS_HTTP);
	T_EQ_INT(dvs_of("{\"source\":{\"http\":{\"url\":\"file:///etc/shadow\"}}}", &d, "http.url"), -1);
	T_EQ_INT(dvs_of("{\"source\":{\"http\":{\"url\":\"http://x/d\",\"secretRef\":\"s\"}}}", &d, "secretRef"), -1);
	T_EQ_INT(dvs_of("{\"source\":{\"registry\":{\"url\":\"docker://127.0.0.1:5000/kv/disk:v1\"}}}", &d, NULL),
		 DVS_REGISTRY);
	T_EQ_STR(d.url, "127.0.0.1:5000/kv/disk:v1");
	T_EQ_INT(dvs_of("{\"source\":{\"registry\":{\"url\":\"docker://quay.io/c/f:1\",\"pullMethod\":\"node\"}}}", &d,
			NULL),
		 DVS_REGISTRY);
	T_EQ_INT(dvs_of("{\"source\":{\"registry\":{\"url\":\"docker://q/f:1\",\"pullMethod\":\"x\"}}}", &d, "pullMethod"),
		 -1);
	T_EQ_INT(dvs_of("{\"source\":{\"registry\":{\"url\":\"oci-archive:///tmp/a.tar\"}}}", &d, "docker://"), -1);
	T_EQ_INT(dvs_of("{\"source\":{\"registry\":{\"url\":\"quay.io/c/f:1\"}}}", &d, "docker://"), -1);
	T_EQ_INT(dvs_of("{\"source\":{\"registry\":{\"url\":\"docker://Bad Name/x\"}}}", &d, "not an image reference"), -1);
	T_EQ_INT(dvs_of("{\"source\":{\"registry\":{\"url\":\"docker://q/f:1\",\"secretRef\":\"s\"}}}", &d, "secretRef"), -1);
	T_EQ_INT(dvs_of("{\"source\":{\"registry\":{\"url\":\"docker://q/f:1\",\"certConfigMap\":\"c\"}}}", &d,
			"certConfigMap"),
		 -1);
	T_EQ_INT(dvs_of("{\"source\":{\"registry\":{\"imageStream\":\"is\"}}}", &d, "imageStream"), -1);
	T_EQ_INT(dvs_of("{\"source\":{\"pvc\":{\"namespace\":\"team\",\"name\":\"golden\"}}}", &d, NULL), DVS_PVC);
	T_EQ_STR(d.ns, "team");
	T_EQ_STR(d.name, "golden");
	T_EQ_INT(dvs_of("{\"source\":{\"pvc\":{\"name\":\"golden\"}}}", &d, NULL), DVS_PVC);
	T_EQ_STR(d.ns, "default"); /* the DataVolume's own */
	T_EQ_INT(dvs_of("{\"source\":{\"pvc\":{\"name\":\"../../etc\"}}}", &d, "pvc.name"), -1);
	T_EQ_INT(dvs_of("{\"source\":{\"pvc\":{\"namespace\":\"a/b\",\"name\":\"x\"}}}", &d, "pvc.namespace"), -1);
	T_EQ_INT(dvs_of("{\"source\":{\"pvc\":{}}}", &d, "pvc.name"), -1);
	T_EQ_INT(dvs_of("{\"source\":{\"s3\":{\"url\":\"s3://b/k\"}}}", &d, "spec.source.s3: Unsupported"), -1);
	T_EQ_INT(dvs_of("{\"source\":{\"blank\":{},\"http\":{\"url\":\"http://x\"}}}", &d, "exactly one source"), -1);
	T_EQ_INT(dvs_of("{}", &d, "exactly one source"), -1);
	T_EQ_INT(dvs_of("{\"source\":{\"registry\":\"docker://q/f\"}}", &d, "an object"), -1);
	dvs_of(NULL, &d, NULL); /* the last spec freed */
}

/* CDI's phases: the step a DataVolume takes for each state of its claim and its source */
static void test_dv_phases(void)
{
	struct dvs_step s;
	/* the claim first: Pending, WaitForFirstConsumer (its class binds on first use) */
	s = dvs_next(DVS_HTTP, "", DVS_CLAIM_PENDING, DVS_SRC_READY);
	T_EQ_INT(s.act, DVS_WAIT);
	T_EQ_STR(s.phase, "Pending");
	T_CHECK(s.reason == NULL);
	s = dvs_next(DVS_REGISTRY, "Pending", DVS_CLAIM_WFFC, DVS_SRC_READY);
	T_EQ_INT(s.act, DVS_WAIT);
	T_EQ_STR(s.phase, "WaitForFirstConsumer");
	/* bound: blank succeeds, imports are scheduled, an import a stopped service left restarts */
	s = dvs_next(DVS_BLANK, "Pending", DVS_CLAIM_BOUND, DVS_SRC_READY);
	T_EQ_INT(s.act, DVS_SUCCEED);
	T_EQ_STR(s.phase, "Succeeded");
	s = dvs_next(DVS_REGISTRY, "WaitForFirstConsumer", DVS_CLAIM_BOUND, DVS_SRC_READY);
	T_EQ_INT(s.act, DVS_START);
	T_EQ_STR(s.phase, "ImportScheduled");
	s = dvs_next(DVS_HTTP, "ImportScheduled", DVS_CLAIM_BOUND, DVS_SRC_READY);
	T_EQ_INT(s.act, DVS_START);
	s = dvs_next(DVS_REGISTRY, "ImportInProgress", DVS_CLAIM_BOUND, DVS_SRC_READY);
	T_EQ_INT(s.act, DVS_RESTART);
	T_EQ_STR(s.phase, "ImportInProgress");
	T_EQ_STR(dvs_phase(DVS_REGISTRY, false), "ImportInProgress");
	/* clones: a missing source waits (before the claim: CloneWithoutSource), one in use waits Scheduled */
	s = dvs_next(DVS_PVC, "", DVS_CLAIM_PENDING, DVS_SRC_MISSING);
	T_EQ_INT(s.act, DVS_WAIT);
	T_EQ_STR(s.phase, "Pending");
	T_EQ_STR(s.reason, "CloneWithoutSource");
	s = dvs_next(DVS_PVC, "Pending", DVS_CLAIM_BOUND, DVS_SRC_MISSING);
	T_EQ_STR(s.reason, "CloneWithoutSource");
	s = dvs_next(DVS_PVC, "Pending", DVS_CLAIM_BOUND, DVS_SRC_IN_USE);
	T_EQ_INT(s.act, DVS_WAIT);
	T_EQ_STR(s.phase, "CloneScheduled");
	T_EQ_STR(s.reason, "CloneSourceInUse");
	s = dvs_next(DVS_PVC, "CloneScheduled", DVS_CLAIM_BOUND, DVS_SRC_READY);
	T_EQ_INT(s.act, DVS_START);
	T_EQ_STR(s.phase, "CloneScheduled");
	s = dvs_next(DVS_PVC, "CloneInProgress", DVS_CLAIM_BOUND, DVS_SRC_READY);
	T_EQ_INT(s.act, DVS_RESTART);
	T_EQ_STR(s.phase, "CloneInProgress");
	s = dvs_next(DVS_PVC, "Pending", DVS_CLAIM_WFFC, DVS_SRC_READY);
	T_EQ_STR(s.phase, "WaitForFirstConsumer");
	T_EQ_STR(dvs_component(DVS_PVC), "datavolume-pvc-clone-controller");
	T_EQ_STR(dvs_component(DVS_REGISTRY), "datavolume-import-controller");
}

/* Secrets and ConfigMaps: core v1, their Tables as kubectl prints them (the data's number of keys, never values) */
static void test_secrets(void)
{
	T_EQ_INT(apis_res_find(NULL, "v1", "secrets"), R_SECRET);
	T_EQ_INT(apis_res_find(NULL, "v1", "configmaps"), R_CM);
	T_CHECK(RES[R_SECRET].namespaced && RES[R_CM].namespaced && strstr(RES[R_SECRET].verbs, "patch") != NULL);
	T_CHECK(RES[R_SECRET].short1 == NULL);
	T_EQ_STR(RES[R_CM].short1, "cm");
	json_object *sec = json_tokener_parse("{\"metadata\":{\"name\":\"keys\"},\"type\":\"kubernetes.io/ssh-auth\","
					      "\"data\":{\"ssh-privatekey\":\"c2VjcmV0\",\"x\":\"eQ==\"}}");
	json_object *row = apis_table_row(R_SECRET, sec, "None"), *cells = apis_jget(row, "cells");
	T_EQ_INT(json_object_array_length(cells), 4);
	T_EQ_STR(json_object_get_string(json_object_array_get_idx(cells, 0)), "keys");
	T_EQ_STR(json_object_get_string(json_object_array_get_idx(cells, 1)), "kubernetes.io/ssh-auth");
	T_EQ_INT(json_object_get_int(json_object_array_get_idx(cells, 2)), 2);
	T_EQ_STR(json_object_get_string(json_object_array_get_idx(cells, 3)), "<unknown>"); /* no creationTimestamp */
	T_CHECK(strstr(json_object_to_json_string(row), "c2VjcmV0") == NULL);                 /* no value in the row */
	json_object_put(row);
	json_object_put(sec);
	json_object *cm = json_tokener_parse("{\"metadata\":{\"name\":\"conf\",\"creationTimestamp\":\"2026-01-01T00:00:00Z\"},"
					     "\"data\":{\"a\":\"b\"},\"binaryData\":{\"c\":\"AA==\"}}");
	row = apis_table_row(R_CM, cm, "None");
	cells = apis_jget(row, "cells");
	T_EQ_INT(json_object_array_length(cells), 3);
	T_EQ_INT(json_object_get_int(json_object_array_get_idx(cells, 1)), 2);
	T_CHECK(strcmp(json_object_get_string(json_object_array_get_idx(cells, 2)), "<unknown>") != 0);
	json_object_put(row);
	json_object_put(cm);
	json_object *cols = apis_table_new(R_SECRET, 1, NULL, true);
	T_CHECK(strstr(json_object_to_json_string(cols), "\"Type\"") != NULL);
	json_object_put(cols);
}

int main(void)
{
	test_secrets();
	test_resources();
	test_names();
	test_publish();
	test_events();
	test_refresh();
	test_list_pages();
	test_warm();
	test_ring();
	test_namespaces();
	test_ns_deletion();
	test_vmim_table();
	test_vmirs_table();
	test_port_record();
	test_storage();
	test_dv_sources();
	test_dv_phases();
	return T_DONE();
}
