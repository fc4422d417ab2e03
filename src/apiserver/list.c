/* The engine service's reads: selecting a resource's objects (namespace, name, label and field selectors) in
 * namespace/name order, get, list with limit/continue (410 once the continue token is older than the watch ring),
 * and the server-side Table of each (the kinds' column tables of model/columns.c, or this file's own). */
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

/* ---- Table output ---- */

bool apis_wants_table(struct MHD_Connection *c)
{
	const char *a = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Accept");
	if (a == NULL)
		return false;
	size_t first = strcspn(a, ",");
	char *f = xstrndup(a, first);
	bool t = strstr(f, "as=Table") && strstr(f, "v=v1") && !strstr(f, "v=v1beta1");
	free(f);
	return t;
}

struct col {
	const char *name, *type, *format;
	int priority;
};

/* VirtualMachines, VMIs, pods and events: the kinds' column tables (model/columns.c); these have none */
static const struct col COLS_NS[] = { { "Name", "string", "name", 0 }, { "Status", "string", "", 0 },
				      { "Age", "string", "", 0 }, { 0 } };
static const struct col COLS_NODE[] = { { "Name", "string", "name", 0 },	{ "Status", "string", "", 0 },
					{ "Roles", "string", "", 0 },		{ "Age", "string", "", 0 },
					{ "Version", "string", "", 0 },		{ "Internal-IP", "string", "", 1 },
					{ "External-IP", "string", "", 1 },	{ "OS-Image", "string", "", 1 },
					{ "Kernel-Version", "string", "", 1 },	{ "Container-Runtime", "string", "", 1 },
					{ 0 } };
/* KubeVirt's additionalPrinterColumns for VirtualMachineInstanceMigration */
static const struct col COLS_VMIM[] = { { "Name", "string", "name", 0 }, { "Phase", "string", "", 0 },
					{ "VMI", "string", "", 0 }, { 0 } };
/* KubeVirt's additionalPrinterColumns for KubeVirt */
static const struct col COLS_KV[] = { { "Name", "string", "name", 0 }, { "Age", "date", "", 0 },
				      { "Phase", "string", "", 0 }, { 0 } };
/* KubeVirt's additionalPrinterColumns for VirtualMachineInstanceReplicaSet */
static const struct col COLS_VMIRS[] = { { "Name", "string", "name", 0 },   { "Desired", "integer", "", 0 },
					 { "Current", "integer", "", 0 }, { "Ready", "integer", "", 0 },
					 { "Age", "date", "", 0 },	  { 0 } };
/* kubectl's printers for claims, volumes and classes; CDI's additionalPrinterColumns for DataVolume */
static const struct col COLS_PVC[] = { { "Name", "string", "name", 0 },	   { "Status", "string", "", 0 },
				       { "Volume", "string", "", 0 },	   { "Capacity", "string", "", 0 },
				       { "Access Modes", "string", "", 0 }, { "StorageClass", "string", "", 0 },
				       { "Age", "string", "", 0 },	   { "VolumeMode", "string", "", 1 },
				       { 0 } };
static const struct col COLS_PV[] = { { "Name", "string", "name", 0 },	   { "Capacity", "string", "", 0 },
				      { "Access Modes", "string", "", 0 }, { "Reclaim Policy", "string", "", 0 },
				      { "Status", "string", "", 0 },	   { "Claim", "string", "", 0 },
				      { "StorageClass", "string", "", 0 }, { "Reason", "string", "", 0 },
				      { "Age", "string", "", 0 },	   { "VolumeMode", "string", "", 1 },
				      { 0 } };
static const struct col COLS_SC[] = { { "Name", "string", "name", 0 },		 { "Provisioner", "string", "", 0 },
				      { "ReclaimPolicy", "string", "", 0 },		 { "VolumeBindingMode", "string", "", 0 },
				      { "AllowVolumeExpansion", "string", "", 0 }, { "Age", "string", "", 0 },
				      { 0 } };
static const struct col COLS_DV[] = { { "Name", "string", "name", 0 },	{ "Phase", "string", "", 0 },
				      { "Progress", "string", "", 0 },	{ "Restarts", "integer", "", 0 },
				      { "Age", "date", "", 0 },		{ 0 } };
/* kubectl's printers for Secrets and ConfigMaps */
static const struct col COLS_SECRET[] = { { "Name", "string", "name", 0 }, { "Type", "string", "", 0 },
					  { "Data", "integer", "", 0 }, { "Age", "string", "", 0 }, { 0 } };
static const struct col COLS_CM[] = { { "Name", "string", "name", 0 }, { "Data", "integer", "", 0 },
				      { "Age", "string", "", 0 }, { 0 } };
static const struct col *const COLS[R_COUNT] = { [R_NS] = COLS_NS,   [R_NODE] = COLS_NODE, [R_VMIM] = COLS_VMIM,
						 [R_KV] = COLS_KV,   [R_VMIRS] = COLS_VMIRS, [R_PVC] = COLS_PVC,
						 [R_PV] = COLS_PV,   [R_SC] = COLS_SC,   [R_DV] = COLS_DV,
						 [R_SECRET] = COLS_SECRET, [R_CM] = COLS_CM };

/* an integer field as a cell, null when absent (kubectl prints <none>) */
static json_object *int_cell(json_object *o, const char *key)
{
	json_object *v = apis_jget(o, key);
	return v ? json_object_new_int(json_object_get_int(v)) : NULL;
}

static json_object *columns_json(enum res r)
{
	if (RES[r].obj_kind >= 0)
		return columns_api_defs(columns_table((enum obj_kind)RES[r].obj_kind));
	json_object *a = json_object_new_array();
	for (const struct col *c = COLS[r]; c->name; c++) {
		json_object *d = json_object_new_object();
		json_object_object_add(d, "name", apis_jstr(c->name));
		json_object_object_add(d, "type", apis_jstr(c->type));
		json_object_object_add(d, "format", apis_jstr(c->format));
		json_object_object_add(d, "description", apis_jstr(""));
		json_object_object_add(d, "priority", json_object_new_int(c->priority));
		json_object_array_add(a, d);
	}
	return a;
}

static json_object *age_cell(const char *ts)
{
	int64_t t;
	char b[32];
	if (ts == NULL || util_parse_time(ts, &t) < 0)
		return apis_jstr("<unknown>");
	util_human_duration(util_wall_s() - t, b, sizeof b);
	return apis_jstr(b);
}

static json_object *cond_cell(json_object *o, const char *type)
{
	json_object *conds = apis_jget(apis_jget(o, "status"), "conditions");
	for (size_t i = 0; conds && json_object_is_type(conds, json_type_array) && i < json_object_array_length(conds); i++) {
		json_object *c = json_object_array_get_idx(conds, i);
		if (util_str_eq(apis_jgets(c, "type"), type))
			return apis_jstr(apis_jgets(c, "status"));
	}
	return NULL;
}

static json_object *row_cells(enum res r, json_object *o)
{
	if (RES[r].obj_kind >= 0)
		return columns_api_cells(columns_table((enum obj_kind)RES[r].obj_kind), o, util_wall_s());
	json_object *a = json_object_new_array(), *md = apis_jget(o, "metadata"), *st = apis_jget(o, "status");
	const char *name = apis_jgets(md, "name"), *created = apis_jgets(md, "creationTimestamp");
#define CELL(x) json_object_array_add(a, (x))
	switch (r) {
	case R_VM:
	case R_VMI:
	case R_POD:
	case R_EVENT:
		break; /* columns_api_cells, above */
	case R_NS:
		CELL(apis_jstr(name));
		CELL(apis_jstr(apis_jgets(st, "phase")));
		CELL(age_cell(created));
		break;
	case R_NODE: {
		json_object *rc = cond_cell(o, "Ready");
		CELL(apis_jstr(name));
		json_object *un = apis_jget(apis_jget(o, "spec"), "unschedulable");
		bool cordoned = un && json_object_get_boolean(un); /* kubectl's printer: ",SchedulingDisabled" */
		const char *ready = util_str_eq(json_object_get_string(rc), "True") ? "Ready" : "NotReady";
		char status[40];
		snprintf(status, sizeof status, "%s%s", ready, cordoned ? ",SchedulingDisabled" : "");
		CELL(apis_jstr(status));
		json_object_put(rc);
		CELL(apis_jstr("<none>"));
		CELL(age_cell(created));
		CELL(apis_jstr(apis_jgets(apis_jget(st, "nodeInfo"), "kubeletVersion")));
		CELL(apis_jstr("<none>"));
		CELL(apis_jstr("<none>"));
		CELL(apis_jstr("<unknown>"));
		CELL(apis_jstr("<unknown>"));
		CELL(apis_jstr("libvirt"));
		break;
	}
	case R_VMIM:
		CELL(apis_jstr(name));
		CELL(apis_jstr(apis_jgets(st, "phase")));
		CELL(apis_jstr(apis_jgets(apis_jget(o, "spec"), "vmiName")));
		break;
	case R_KV:
		CELL(apis_jstr(name));
		CELL(age_cell(created));
		CELL(apis_jstr(apis_jgets(st, "phase")));
		break;
	case R_VMIRS:
		CELL(apis_jstr(name));
		CELL(int_cell(apis_jget(o, "spec"), "replicas"));
		CELL(int_cell(st, "replicas"));
		CELL(int_cell(st, "readyReplicas"));
		CELL(age_cell(created));
		break;
	case R_PVC:
	case R_PV:
	case R_SC:
	case R_DV:
	case R_SECRET:
	case R_CM:
		if (r == R_SECRET || r == R_CM)
			apis_secrets_cells(r, o, a);
		else
			apis_storage_cells(r, o, a);
		for (size_t i = 0; i < json_object_array_length(a); i++)
			if (json_object_array_get_idx(a, i) == NULL) /* a date column of its own: the age */
				json_object_array_put_idx(a, i, age_cell(created));
		break;
	case R_COUNT:
		break;
	}
#undef CELL
	return a;
}

/* includeObject: None, Metadata (the default) or Object. */
json_object *apis_table_row(enum res r, json_object *o, const char *include)
{
	json_object *row = json_object_new_object();
	json_object_object_add(row, "cells", row_cells(r, o));
	if (util_str_eq(include, "Object"))
		json_object_object_add(row, "object", json_object_get(o));
	else if (!util_str_eq(include, "None")) {
		json_object *p = json_object_new_object();
		json_object_object_add(p, "kind", apis_jstr("PartialObjectMetadata"));
		json_object_object_add(p, "apiVersion", apis_jstr("meta.k8s.io/v1"));
		json_object *md = apis_jget(o, "metadata");
		json_object_object_add(p, "metadata", md ? json_object_get(md) : json_object_new_object());
		json_object_object_add(row, "object", p);
	}
	return row;
}

json_object *apis_table_new(enum res r, uint64_t rv, const char *cont, bool columns)
{
	json_object *t = json_object_new_object(), *md = json_object_new_object();
	char b[24];
	snprintf(b, sizeof b, "%llu", (unsigned long long)rv);
	json_object_object_add(t, "kind", apis_jstr("Table"));
	json_object_object_add(t, "apiVersion", apis_jstr("meta.k8s.io/v1"));
	json_object_object_add(md, "resourceVersion", apis_jstr(b));
	if (cont)
		json_object_object_add(md, "continue", apis_jstr(cont));
	json_object_object_add(t, "metadata", md);
	json_object_object_add(t, "columnDefinitions", columns ? columns_json(r) : json_object_new_array());
	json_object_object_add(t, "rows", json_object_new_array());
	return t;
}

/* ---- selecting objects ---- */

static const char *label_of(void *arg, const char *k)
{
	struct lookup *l = arg;
	if (l->o)
		return obj_label(l->o, k);
	return apis_jgets(apis_jget(apis_jget(l->j, "metadata"), "labels"), k);
}

/* The fields kubectl selects on: every kind's metadata.name/namespace; events' involvedObject (kubectl describe),
 * pods' spec.nodeName and status.phase. */
static const char *field_of(void *arg, const char *k)
{
	struct lookup *l = arg;
	if (strcmp(k, "metadata.name") == 0)
		return l->name;
	if (strcmp(k, "metadata.namespace") == 0)
		return l->ns;
	if (l->o && l->o->kind == OBJ_EVENT) {
		const struct event *e = (const struct event *)l->o;
		if (strcmp(k, "involvedObject.name") == 0)
			return e->inv_name;
		if (strcmp(k, "involvedObject.namespace") == 0)
			return e->inv_ns ? e->inv_ns : l->o->ns;
		if (strcmp(k, "involvedObject.uid") == 0)
			return e->inv_uid;
		if (strcmp(k, "involvedObject.kind") == 0)
			return e->inv_kind;
		if (strcmp(k, "involvedObject.apiVersion") == 0)
			return "kubevirt.io/v1";
		if (strcmp(k, "type") == 0)
			return e->type;
		if (strcmp(k, "reason") == 0)
			return e->reason;
	}
	if (l->o && l->o->kind == OBJ_POD) {
		const struct pod *p = (const struct pod *)l->o;
		if (strcmp(k, "spec.nodeName") == 0)
			return p->node ? p->node : "";
		if (strcmp(k, "status.phase") == 0)
			return p->phase ? p->phase : "";
	}
	return NULL;
}

static bool field_supported(enum res r, const char *k)
{
	if (strcmp(k, "metadata.name") == 0 || strcmp(k, "metadata.namespace") == 0)
		return true;
	if (r == R_EVENT)
		return util_has_prefix(k, "involvedObject.") || strcmp(k, "type") == 0 || strcmp(k, "reason") == 0;
	if (r == R_POD)
		return strcmp(k, "spec.nodeName") == 0 || strcmp(k, "status.phase") == 0;
	return false;
}

bool apis_matches(const struct filter *f, struct lookup *l)
{
	if (f->ns && strcmp(f->ns, l->ns) != 0)
		return false;
	if (f->name && strcmp(f->name, l->name) != 0)
		return false;
	return apisel_match(f->ls, label_of, l) && apisel_match(f->fs, field_of, l);
}

static int cmp_item(const void *a, const void *b)
{
	return strcmp(((const struct item *)a)->key, ((const struct item *)b)->key);
}

static void add_item(struct item **items, size_t *n, const char *ns, const char *name, char *text)
{
	*items = xreallocarray(*items, *n + 1, sizeof **items);
	(*items)[*n].key = xasprintf("%s/%s", ns, name);
	(*items)[*n].text = text;
	(*items)[*n].j = NULL;
	(*n)++;
}

void apis_items_free(struct item *items, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(items[i].key);
		free(items[i].text);
		if (items[i].j)
			json_object_put(items[i].j);
	}
	free(items);
}

/* Every object of r that f selects, sorted by namespace/name. */
struct item *apis_select_items(struct apisrv *srv, enum res r, const struct filter *f, size_t *n)
{
	struct item *items = NULL;
	*n = 0;
	if (RES[r].obj_kind >= 0) {
		for (int s = 0; s < srv->nsrcs; s++) {
			size_t cnt;
			struct obj *const *objs = store_objs(srv->st, srv->srcs[s], (enum obj_kind)RES[r].obj_kind, &cnt);
			for (size_t i = 0; i < cnt; i++) {
				struct lookup l = { .o = objs[i], .ns = objs[i]->ns, .name = objs[i]->name };
				if (!apis_matches(f, &l))
					continue;
				char key[UID_LEN + 4];
				apis_cent_key(key, sizeof key, objs[i]);
				struct cent *c = hmap_get(&srv->cache, key); /* the listener keeps it current */
				if (c == NULL)
					c = apis_refresh(srv, objs[i], false);
				if (c)
					add_item(&items, n, objs[i]->ns, objs[i]->name, xstrdup(c->text));
			}
		}
	} else if (r == R_NS) {
		size_t nn;
		const char **names = apis_namespaces(srv, &nn);
		for (size_t i = 0; i < nn; i++) {
			json_object *j = apis_ns_json(srv, names[i]);
			struct lookup l = { .j = j, .ns = "", .name = names[i] };
			if (apis_matches(f, &l))
				add_item(&items, n, "", names[i], apis_jtext(j));
			json_object_put(j);
		}
		free(names);
	} else if (r == R_KV) {
		apis_kv_refresh(srv);
		json_object *j = json_tokener_parse(srv->kv.text);
		struct lookup l = { .j = j, .ns = KV_NS, .name = KV_NAME };
		if (j && apis_matches(f, &l))
			add_item(&items, n, KV_NS, KV_NAME, xstrdup(srv->kv.text));
		if (j)
			json_object_put(j);
	} else if (r == R_VMIRS) {
		for (struct vmirs *rs = srv->vmirss; rs; rs = rs->next) {
			if (rs->text == NULL)
				continue;
			json_object *j = json_tokener_parse(rs->text);
			struct lookup l = { .j = j, .ns = rs->ns, .name = rs->name };
			if (j && apis_matches(f, &l))
				add_item(&items, n, rs->ns, rs->name, xstrdup(rs->text));
			if (j)
				json_object_put(j);
		}
	} else if (r == R_PVC || r == R_PV || r == R_SC || r == R_DV || r == R_SECRET || r == R_CM) {
		const char *ons, *oname, *text;
		bool sec = r == R_SECRET || r == R_CM;
		for (size_t i = 0; (text = sec ? apis_secrets_text_at(srv, r, i, &ons, &oname)
					       : apis_storage_text_at(srv, r, i, &ons, &oname)) != NULL; i++) {
			json_object *j = json_tokener_parse(text);
			struct lookup l = { .j = j, .ns = ons, .name = oname };
			if (j && apis_matches(f, &l))
				add_item(&items, n, ons, oname, xstrdup(text));
			if (j)
				json_object_put(j);
		}
	} else if (r == R_VMIM) {
		for (struct vmim *m = srv->vmims; m; m = m->next) {
			if (m->text == NULL)
				continue;
			json_object *j = json_tokener_parse(m->text);
			struct lookup l = { .j = j, .ns = m->ns, .name = m->name };
			if (j && apis_matches(f, &l))
				add_item(&items, n, m->ns, m->name, xstrdup(m->text));
			if (j)
				json_object_put(j);
		}
	} else {
		for (int s = 0; s < srv->nsrcs; s++) {
			json_object *j = apis_node_json(srv, srv->srcs[s]);
			struct lookup l = { .j = j, .ns = "", .name = srv->srcs[s]->name };
			if (apis_matches(f, &l))
				add_item(&items, n, "", srv->srcs[s]->name, apis_jtext(j));
			json_object_put(j);
		}
	}
	if (*n > 1)
		qsort(items, *n, sizeof *items, cmp_item);
	return items;
}

/* ---- the order of a store kind's objects, and pages of it ---- */

static int cmp_oent(const void *a, const void *b);

/* The position of the entry (key, src, uid) (absent: -1), or with find false the position where it goes. */
static long order_pos(const struct apis_order *ord, const struct oent *e, bool find)
{
	size_t lo = 0, hi = ord->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (cmp_oent(&ord->e[mid], e) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!find)
		return (long)lo;
	for (size_t i = lo; i < ord->n && cmp_oent(&ord->e[i], e) == 0; i++)
		if (strcmp(ord->e[i].uid, e->uid) == 0)
			return (long)i;
	return -1;
}

/* An object that came goes into its place, one that went leaves it (a binary search and a move of the entries
 * after it: a kubectl apply of 1,000 VMs beside 100,000 gets each one's 404 first, which must not sort 100,000
 * each time); an order not built yet is built on its first read. */
void apis_order_note(struct apisrv *srv, enum obj_kind kind, const struct obj *old, const struct obj *new_)
{
	struct apis_order *ord = &srv->order[kind];
	if (!ord->valid || (old && new_ && old->src == new_->src && old->ns == new_->ns &&
			    strcmp(old->uid, new_->uid) == 0 && strcmp(old->name, new_->name) == 0))
		return;
	if (old) {
		struct oent e = { .src = old->src };
		e.key = xasprintf("%s/%s", old->ns, old->name);
		memcpy(e.uid, old->uid, sizeof e.uid);
		long i = order_pos(ord, &e, true);
		free(e.key);
		if (i < 0) { /* never seen: rebuilt at the next read */
			ord->valid = false;
			return;
		}
		free(ord->e[i].key);
		memmove(&ord->e[i], &ord->e[i + 1], (ord->n - (size_t)i - 1) * sizeof *ord->e);
		ord->n--;
	}
	if (new_) {
		struct oent e = { .src = new_->src };
		e.key = xasprintf("%s/%s", new_->ns, new_->name);
		memcpy(e.uid, new_->uid, sizeof e.uid);
		long i = order_pos(ord, &e, false);
		if (ord->n == ord->cap) {
			ord->cap = ord->cap ? ord->cap * 2 : 64;
			ord->e = xreallocarray(ord->e, ord->cap, sizeof *ord->e);
		}
		memmove(&ord->e[i + 1], &ord->e[i], (ord->n - (size_t)i) * sizeof *ord->e);
		ord->e[i] = e;
		ord->n++;
	}
}

static void order_clear(struct apis_order *ord)
{
	for (size_t i = 0; i < ord->n; i++)
		free(ord->e[i].key);
	free(ord->e);
	ord->e = NULL;
	ord->n = ord->cap = 0;
	ord->valid = false;
}

void apis_order_free(struct apisrv *srv)
{
	for (int k = 0; k < OBJ_KIND_COUNT; k++)
		order_clear(&srv->order[k]);
}

/* by key, then by the source's position in the server's list (a name on two hosts: the order is stable) */
static int cmp_oent(const void *a, const void *b)
{
	const struct oent *x = a, *y = b;
	int c = strcmp(x->key, y->key);
	return c ? c : (x->src > y->src) - (x->src < y->src);
}

/* The order of kind, built from every host's objects (a request routed to one host filters by source). */
static struct apis_order *order_get(struct apisrv *srv, enum obj_kind kind)
{
	struct apis_order *ord = &srv->order[kind];
	if (ord->valid)
		return ord;
	order_clear(ord);
	struct source **srcs = srv->only ? srv->all_srcs : srv->srcs;
	int nsrcs = srv->only ? srv->all_n : srv->nsrcs;
	size_t total = 0;
	for (int s = 0; s < nsrcs; s++) {
		size_t cnt;
		store_objs(srv->st, srcs[s], kind, &cnt);
		total += cnt;
	}
	ord->cap = total ? total : 1;
	ord->e = xcalloc(ord->cap, sizeof *ord->e);
	for (int s = 0; s < nsrcs; s++) {
		size_t cnt;
		struct obj *const *objs = store_objs(srv->st, srcs[s], kind, &cnt);
		for (size_t i = 0; i < cnt; i++) {
			struct oent *e = &ord->e[ord->n++];
			e->key = xasprintf("%s/%s", objs[i]->ns, objs[i]->name);
			e->src = srcs[s];
			memcpy(e->uid, objs[i]->uid, sizeof e->uid);
		}
	}
	if (ord->n > 1)
		qsort(ord->e, ord->n, sizeof *ord->e, cmp_oent);
	ord->valid = true;
	ord->builds++;
	return ord;
}

/* The first entry whose key is >= key (strict: > key). */
static size_t order_bound(const struct apis_order *ord, const char *key, bool strict)
{
	size_t lo = 0, hi = ord->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(ord->e[mid].key, key);
		if (c < 0 || (strict && c == 0))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static bool src_served(const struct apisrv *srv, const struct source *src)
{
	for (int s = 0; s < srv->nsrcs; s++)
		if (srv->srcs[s] == src)
			return true;
	return false;
}

void apis_page(struct apisrv *srv, enum res r, const struct filter *f, const char *after, size_t limit, struct page *p)
{
	enum obj_kind kind = (enum obj_kind)RES[r].obj_kind;
	struct apis_order *ord = order_get(srv, kind);
	memset(p, 0, sizeof *p);
	/* the range f's namespace and name allow: "NS/" up to "NS0" ('0' follows '/'), or "NS/NAME" itself */
	size_t lo = 0, hi = ord->n;
	if (f->ns) {
		char *k = f->name ? xasprintf("%s/%s", f->ns, f->name) : xasprintf("%s/", f->ns);
		lo = order_bound(ord, k, false);
		if (f->name)
			hi = order_bound(ord, k, true);
		else {
			k[strlen(k) - 1] = '0';
			hi = order_bound(ord, k, false);
		}
		free(k);
	}
	if (after) {
		size_t a = order_bound(ord, after, true);
		if (a > lo)
			lo = a;
	}
	bool counted = (f->ls == NULL || f->ls->n == 0) && (f->fs == NULL || f->fs->n == 0);
	p->text = xcalloc(limit && limit < hi - lo ? limit : (hi > lo ? hi - lo : 1), sizeof *p->text);
	size_t i;
	for (i = lo; i < hi; i++) {
		const struct oent *e = &ord->e[i];
		if (!src_served(srv, e->src))
			continue;
		p->visited++;
		const struct obj *o = store_get(srv->st, e->src, kind, e->uid);
		if (o == NULL)
			continue;
		struct lookup l = { .o = o, .ns = o->ns, .name = o->name };
		if (!apis_matches(f, &l))
			continue;
		char ck[UID_LEN + 4];
		apis_cent_key(ck, sizeof ck, o);
		struct cent *c = hmap_get(&srv->cache, ck); /* the listener keeps it current */
		if (c == NULL)
			c = apis_refresh(srv, o, false);
		if (c == NULL) /* never served (a replica set's member) */
			continue;
		if (limit && p->n == limit) {
			p->more = true;
			break;
		}
		p->text[p->n++] = c->text;
		p->key = e->key;
	}
	p->remaining = -1;
	if (p->more && counted) {
		/* without a selector every served entry left is an object of the list (a replica set's member VM is not
		 * served: counted all the same, as the count is the API server's estimate too) */
		p->remaining = 0;
		for (; i < hi; i++)
			p->remaining += src_served(srv, ord->e[i].src);
	} else if (!p->more)
		p->remaining = 0;
}

/* The namespaces of kind's objects, each once (added to *out, *n of them): a binary search per namespace. */
void apis_order_namespaces(struct apisrv *srv, enum obj_kind kind, const char ***out, size_t *n)
{
	struct apis_order *ord = order_get(srv, kind);
	size_t i = 0;
	while (i < ord->n) {
		const char *key = ord->e[i].key, *slash = strchr(key, '/');
		size_t nl = slash ? (size_t)(slash - key) : strlen(key);
		if (!src_served(srv, ord->e[i].src) || nl == 0) {
			i++;
			continue;
		}
		const struct obj *o = store_get(srv->st, ord->e[i].src, kind, ord->e[i].uid);
		size_t x;
		for (x = 0; o && x < *n && strcmp((*out)[x], o->ns) != 0; x++)
			;
		if (o && x == *n) {
			*out = xreallocarray(*out, *n + 2, sizeof **out);
			(*out)[(*n)++] = o->ns; /* interned */
		}
		char *next = xasprintf("%.*s0", (int)nl, key); /* past "NS/...": '0' follows '/' */
		size_t j = order_bound(ord, next, false);
		free(next);
		i = j > i ? j : i + 1;
	}
}

/* Whether kind has an object in namespace ns (a binary search). */
bool apis_order_has_ns(struct apisrv *srv, enum obj_kind kind, const char *ns)
{
	struct apis_order *ord = order_get(srv, kind);
	char *k = xasprintf("%s/", ns);
	size_t kl = strlen(k);
	bool found = false;
	for (size_t i = order_bound(ord, k, false); !found && i < ord->n && strncmp(ord->e[i].key, k, kl) == 0; i++)
		found = src_served(srv, ord->e[i].src);
	free(k);
	return found;
}

void apis_page_free(struct page *p)
{
	free(p->text);
	p->text = NULL;
}

int apis_parse_filter(struct MHD_Connection *c, enum res r, struct filter *f, char **err)
{
	f->ls = apisel_parse(apis_arg(c, "labelSelector"), false, err);
	if (f->ls == NULL)
		return -1;
	f->fs = apisel_parse(apis_arg(c, "fieldSelector"), true, err);
	if (f->fs == NULL)
		return -1;
	for (size_t i = 0; i < f->fs->n; i++)
		if (!field_supported(r, f->fs->reqs[i].key)) {
			*err = xasprintf("field label not supported: %s", f->fs->reqs[i].key);
			return -1;
		}
	return 0;
}

void apis_filter_free(struct filter *f)
{
	apisel_free(f->ls);
	apisel_free(f->fs);
}

/* ---- get and list ---- */

enum MHD_Result apis_get_one(struct apisrv *srv, struct MHD_Connection *c, enum res r, const char *ns, const char *name)
{
	struct filter f = { .ns = RES[r].namespaced ? ns : NULL, .name = name };
	if (RES[r].obj_kind >= 0) { /* a binary search of the kind's order */
		struct page p;
		apis_page(srv, r, &f, NULL, 1, &p);
		char *text = p.n ? xstrdup(p.text[0]) : NULL;
		apis_page_free(&p);
		if (text == NULL)
			return apis_not_found(c, r, name);
		if (!apis_wants_table(c))
			return apis_send_text(c, 200, text, "application/json");
		json_object *o = json_tokener_parse(text);
		json_object *t = apis_table_new(r, srv->rv, NULL, true);
		json_object_array_add(apis_jget(t, "rows"), apis_table_row(r, o, apis_arg(c, "includeObject")));
		json_object_put(o);
		free(text);
		return apis_send_json(c, 200, t);
	}
	size_t n;
	struct item *items = apis_select_items(srv, r, &f, &n);
	if (n == 0) {
		apis_items_free(items, n);
		return apis_not_found(c, r, name);
	}
	enum MHD_Result rc;
	if (apis_wants_table(c)) {
		json_object *o = json_tokener_parse(items[0].text);
		json_object *t = apis_table_new(r, srv->rv, NULL, true);
		json_object_array_add(apis_jget(t, "rows"), apis_table_row(r, o, apis_arg(c, "includeObject")));
		json_object_put(o);
		rc = apis_send_json(c, 200, t);
	} else {
		rc = apis_send_text(c, 200, items[0].text, "application/json");
		items[0].text = NULL;
	}
	apis_items_free(items, n);
	return rc;
}

enum MHD_Result apis_list(struct apisrv *srv, struct MHD_Connection *c, enum res r, const char *ns)
{
	struct filter f = { .ns = ns };
	char *err = NULL;
	if (apis_parse_filter(c, r, &f, &err) < 0) {
		apis_filter_free(&f);
		enum MHD_Result rc = apis_send_status(c, 400, "BadRequest", R_COUNT, NULL, "%s", err);
		free(err);
		return rc;
	}
	const char *lim = apis_arg(c, "limit"), *cont = apis_arg(c, "continue");
	long limit = lim ? strtol(lim, NULL, 10) : 0;
	char *after = NULL;
	uint64_t crv = 0;
	if (cont && *cont && apisel_continue_decode(cont, &crv, &after) < 0) {
		apis_filter_free(&f);
		return apis_send_status(c, 400, "BadRequest", R_COUNT, NULL, "invalid continue token");
	}
	if (cont && *cont && crv < srv->oldest_rv) {
		free(after);
		apis_filter_free(&f);
		return apis_send_status(c, 410, "Expired", R_COUNT, NULL,
				   "The provided continue parameter is too old to display a consistent list result. You "
				   "can start a new list without the continue parameter.");
	}
	/* the page: a store kind's from its order; the others' (a few objects each) selected and sorted whole */
	struct page p;
	size_t n = 0;
	struct item *items = NULL;
	if (RES[r].obj_kind >= 0)
		apis_page(srv, r, &f, after, limit > 0 ? (size_t)limit : 0, &p);
	else {
		items = apis_select_items(srv, r, &f, &n);
		size_t start = 0;
		if (after)
			while (start < n && strcmp(items[start].key, after) <= 0)
				start++;
		memset(&p, 0, sizeof p);
		p.text = xcalloc(n - start + 1, sizeof *p.text);
		for (size_t i = start; i < n && !p.more; i++) {
			if (limit > 0 && p.n == (size_t)limit) {
				p.more = true;
				p.remaining = (long)(n - i);
				break;
			}
			p.text[p.n++] = items[i].text;
			p.key = items[i].key;
		}
	}
	apis_filter_free(&f);
	free(after);
	char *next = p.more ? apisel_continue_encode(crv ? crv : srv->rv, p.key) : NULL;
	enum MHD_Result rc;
	if (apis_wants_table(c)) {
		json_object *t = apis_table_new(r, srv->rv, next, true), *rows = apis_jget(t, "rows");
		const char *inc = apis_arg(c, "includeObject");
		for (size_t i = 0; i < p.n; i++) {
			json_object *o = json_tokener_parse(p.text[i]);
			json_object_array_add(rows, apis_table_row(r, o, inc));
			json_object_put(o);
		}
		if (next && p.remaining >= 0)
			json_object_object_add(apis_jget(t, "metadata"), "remainingItemCount",
					       json_object_new_int64((int64_t)p.remaining));
		rc = apis_send_json(c, 200, t);
	} else {
		struct buf b;
		buf_init(&b);
		buf_printf(&b, "{\"kind\":\"%sList\",\"apiVersion\":\"%s\",\"metadata\":{\"resourceVersion\":\"%llu\"",
			   RES[r].kind, apis_api_version(r), (unsigned long long)srv->rv);
		if (next)
			buf_printf(&b, ",\"continue\":\"%s\"", next);
		if (next && p.remaining >= 0)
			buf_printf(&b, ",\"remainingItemCount\":%ld", p.remaining);
		buf_add_str(&b, "},\"items\":[");
		for (size_t i = 0; i < p.n; i++) {
			if (i > 0)
				buf_add_char(&b, ',');
			buf_add_str(&b, p.text[i]);
		}
		buf_add_str(&b, "]}");
		buf_add_char(&b, 0);
		rc = apis_send_text(c, 200, buf_steal(&b), "application/json");
	}
	free(next);
	apis_page_free(&p);
	apis_items_free(items, n);
	return rc;
}
