/* `:node`, `:vmim`, `:pvc`, `:dv` and `:vmirs`: cluster objects the store does not keep, listed from every kube source's API and listed
 * again every few seconds while shown. Nodes: Ready, schedulable for VMs (label kubevirt.io/schedulable and not
 * cordoned), the KVM capacity virt-handler advertises (allocatable devices.kubevirt.io/kvm), the CPU and memory
 * the node's pods request and its allocatable (model/noderes.c: `kubectl describe node`'s "Allocated resources",
 * from every namespace's pods not terminated) and how many VMIs the store has on each; enter shows the VMI list filtered to that node. Migrations: phase, VMI, source and
 * target node, start and duration; enter opens the VM's view. PVCs (status, volume, capacity, access modes,
 * storage class) and DataVolumes (phase, progress, restarts); enter shows the object's YAML. Replica sets
 * (VirtualMachineInstanceReplicaSet: desired, current, ready, and their members, the store's VMIs its selector
 * matches, each with its phase); enter shows the VMI list filtered by its name (the members' chains). Every string
 * from the cluster is escaped. */
#include "ui/clusterlist.h"

#include <curl/curl.h>
#include <json.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/util.h"
#include "core/xmalloc.h"
#include "kube/http.h"
#include "kube/kube.h"
#include "model/noderes.h"
#include "model/registry.h"
#include "model/source.h"
#include "model/store.h"
#include "ui/actions.h"
#include "ui/cmdline.h"
#include "ui/draw.h"
#include "ui/listsel.h"
#include "ui/pager.h"
#include "ui/table.h"
#include "ui/theme.h"
#include "ui/ui.h"
#include "ui/view.h"
#include "ui/yamlview.h"

#define REFRESH_S 3
#define NCOLS 10

enum clist_kind { CL_NODE, CL_VMIM, CL_PVC, CL_DV, CL_VMIRS, CL_COUNT };

struct crow {
	struct source *src;
	char *ns, *name, *vmi;     /* raw (for actions); cells are escaped */
	struct json_object *sel;   /* vmirs: spec.selector.matchLabels */
	char *cell[NCOLS];
	int64_t start;             /* vmim: started, for its duration; node: created */
	struct quantity alloc[2];  /* node: allocatable cpu, memory (else capacity, as kubectl) */
};

/* What the non-terminated pods on a node request (kubectl describe node's "Allocated resources") */
struct nodereq {
	struct source *src;
	char *node;
	struct quantity q[2]; /* cpu, memory */
};

struct clist {
	enum clist_kind kind;
	unsigned id;
	struct crow *rows;
	size_t n;
	struct listsel l;
	int pending;               /* requests in flight */
	uint64_t asked_ms;         /* when they were sent */
	int ticks;
	char note[256];
	bool round_failed;         /* a source failed in the round being gathered (else the note goes) */
	struct crow *next_rows;    /* the list being gathered */
	size_t next_n;
	struct nodereq *req, *next_req; /* nodes: the pods' requests per node, shown and being gathered */
	size_t nreq, next_nreq;
	char req_note[256];        /* nodes: why requests are unknown (the pods could not be listed) */
	char next_note_req[256];
	struct clist *next_live;
};

static struct clist *live;
static unsigned next_id;

static const char *const heads[CL_COUNT][NCOLS] = {
	{ "NAME", "STATUS", "SCHEDULABLE", "KVM", "CPU REQ", "CPU ALLOC", "MEM REQ", "MEM ALLOC", "VMS", "AGE" },
	{ "NAMESPACE", "NAME", "PHASE", "VMI", "SOURCE", "TARGET", "STARTED", "DURATION" },
	{ "NAMESPACE", "NAME", "STATUS", "VOLUME", "CAPACITY", "ACCESS MODES", "STORAGECLASS", "AGE" },
	{ "NAMESPACE", "NAME", "PHASE", "PROGRESS", "RESTARTS", "AGE" },
	{ "NAMESPACE", "NAME", "DESIRED", "CURRENT", "READY", "AGE", "MEMBERS" },
};
static const int ncols[CL_COUNT] = { 10, 8, 8, 6, 7 };
enum { RS_AGE = 5, RS_MEMBERS };
/* node columns filled when drawn */
enum { NODE_CPU_REQ = 4, NODE_CPU_ALLOC, NODE_MEM_REQ, NODE_MEM_ALLOC, NODE_VMS, NODE_AGE };
static const char *const titles[CL_COUNT] = { "Nodes", "Migrations", "PVCs", "DataVolumes", "VMIReplicaSets" };
/* each list's kind (model/registry.c: its path, whether it is namespaced) */
static const enum kind_id list_kind[CL_COUNT] = { KIND_NODE, KIND_VMIM, KIND_PVC, KIND_DV, KIND_VMIRS };

static struct clist *find_id(unsigned id)
{
	for (struct clist *c = live; c; c = c->next_live)
		if (c->id == id)
			return c;
	return NULL;
}

static void reqs_free(struct nodereq *r, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(r[i].node);
	free(r);
}

static void rows_free(struct crow *r, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(r[i].ns);
		free(r[i].name);
		free(r[i].vmi);
		json_object_put(r[i].sel);
		for (int c = 0; c < NCOLS; c++)
			free(r[i].cell[c]);
	}
	free(r);
}

static const char *js(struct json_object *o, const char *a, const char *b, const char *c)
{
	const char *ks[3] = { a, b, c };
	for (int i = 0; i < 3 && ks[i] && o; i++)
		if (!json_object_is_type(o, json_type_object) || !json_object_object_get_ex(o, ks[i], &o))
			return NULL;
	return o && !json_object_is_type(o, json_type_object) && !json_object_is_type(o, json_type_array)
		       ? json_object_get_string(o)
		       : NULL;
}

static int64_t parse_ts(const char *s)
{
	struct tm tm = { 0 };
	if (s == NULL || strptime(s, "%Y-%m-%dT%H:%M:%S", &tm) == NULL)
		return 0;
	return (int64_t)timegm(&tm);
}

static char *esc(const char *s)
{
	return util_escape_display(s ? s : "");
}

static char *age_of(int64_t t)
{
	char b[32];
	if (t <= 0)
		return xstrdup("<unknown>");
	util_human_duration(util_wall_s() - t, b, sizeof b);
	return xstrdup(b);
}

static void node_row(struct crow *r, struct json_object *o)
{
	const char *ready = NULL;
	struct json_object *conds = NULL, *st = NULL;
	if (json_object_object_get_ex(o, "status", &st) && json_object_object_get_ex(st, "conditions", &conds))
		for (size_t i = 0; i < json_object_array_length(conds); i++) {
			struct json_object *c = json_object_array_get_idx(conds, i);
			if (util_str_eq(js(c, "type", NULL, NULL), "Ready"))
				ready = js(c, "status", NULL, NULL);
		}
	const char *unsched = js(o, "spec", "unschedulable", NULL);
	bool cordoned = util_str_eq(unsched, "true");
	char status[64];
	snprintf(status, sizeof status, "%s%s", util_str_eq(ready, "True") ? "Ready" : "NotReady",
		 cordoned ? ",SchedulingDisabled" : "");
	bool vm_ok = util_str_eq(js(o, "metadata", "labels", "kubevirt.io/schedulable"), "true");
	r->cell[0] = esc(r->name);
	r->cell[1] = xstrdup(status);
	r->cell[2] = xstrdup(vm_ok && !cordoned ? "true" : "false");
	const char *kvm = js(o, "status", "allocatable", "devices.kubevirt.io/kvm");
	r->cell[3] = esc(kvm ? kvm : "-");
	/* kubectl describe node: allocatable, or capacity when the node reports none */
	struct json_object *st2 = NULL, *alloc = NULL;
	json_object_object_get_ex(o, "status", &st2);
	if (!st2 || !json_object_object_get_ex(st2, "allocatable", &alloc) || json_object_object_length(alloc) == 0)
		alloc = st2 && json_object_object_get_ex(st2, "capacity", &alloc) ? alloc : NULL;
	quantity_parse(js(alloc, "cpu", NULL, NULL), &r->alloc[0]);
	quantity_parse(js(alloc, "memory", NULL, NULL), &r->alloc[1]);
	char q[64];
	quantity_format(&r->alloc[0], q, sizeof q);
	r->cell[NODE_CPU_ALLOC] = xstrdup(q);
	quantity_format(&r->alloc[1], q, sizeof q);
	r->cell[NODE_MEM_ALLOC] = xstrdup(q);
	/* CPU REQ, MEM REQ (the pods' requests), VMS (counted from the store) and AGE: when drawn */
	r->start = parse_ts(js(o, "metadata", "creationTimestamp", NULL));
}

/* The non-terminated pods' requests, added to their node's (in the API's order: the first term's format is
 * kept, as kubectl's sum keeps it) */
static void add_pod_requests(struct clist *c, struct source *src, struct json_object *pod)
{
	const char *node = js(pod, "spec", "nodeName", NULL);
	if (node == NULL || *node == '\0')
		return;
	struct quantity q[2];
	noderes_pod_requests(pod, &q[0], &q[1]);
	struct nodereq *r = NULL;
	for (size_t i = 0; i < c->next_nreq && !r; i++)
		if (c->next_req[i].src == src && strcmp(c->next_req[i].node, node) == 0)
			r = &c->next_req[i];
	if (r == NULL) {
		c->next_req = xreallocarray(c->next_req, c->next_nreq + 1, sizeof *c->next_req);
		r = &c->next_req[c->next_nreq++];
		*r = (struct nodereq){ src, xstrdup(node), { { 0, 0, QTY_NONE }, { 0, 0, QTY_NONE } } };
	}
	for (int k = 0; k < 2; k++)
		if (q[k].fmt != QTY_NONE)
			quantity_add(&r->q[k], &q[k]);
}

static const struct nodereq *node_requests(const struct clist *c, const struct crow *row)
{
	for (size_t i = 0; i < c->nreq; i++)
		if (c->req[i].src == row->src && strcmp(c->req[i].node, row->name) == 0)
			return &c->req[i];
	return NULL;
}

static void vmim_row(struct crow *r, struct json_object *o)
{
	r->vmi = xstrdup0(js(o, "spec", "vmiName", NULL));
	r->cell[0] = esc(r->ns);
	r->cell[1] = esc(r->name);
	r->cell[2] = esc(js(o, "status", "phase", NULL));
	r->cell[3] = esc(r->vmi);
	/* KubeVirt 1.3+: status.migrationState on the migration itself; else the VMI's, when it is this one */
	const char *src = js(o, "status", "migrationState", "sourceNode");
	const char *dst = js(o, "status", "migrationState", "targetNode");
	int64_t start = parse_ts(js(o, "status", "migrationState", "startTimestamp"));
	int64_t end = parse_ts(js(o, "status", "migrationState", "endTimestamp"));
	const char *uid = js(o, "metadata", "uid", NULL);
	const struct vmi *v = r->vmi ? (const struct vmi *)store_find(ui_store(), r->src, OBJ_VMI, r->ns, r->vmi) : NULL;
	if (v && uid && vmi_mig(v)->present && strcmp(vmi_mig(v)->migration_uid, uid) == 0) {
		const struct migration_state *m = vmi_mig(v);
		src = src ? src : m->source_node;
		dst = dst ? dst : m->target_node;
		start = start ? start : m->start;
		end = end ? end : m->end;
	}
	struct json_object *pts = NULL, *st = NULL;
	if (json_object_object_get_ex(o, "status", &st) && json_object_object_get_ex(st, "phaseTransitionTimestamps", &pts))
		for (size_t i = 0; i < json_object_array_length(pts); i++) {
			struct json_object *p = json_object_array_get_idx(pts, i);
			const char *ph = js(p, "phase", NULL, NULL);
			int64_t t = parse_ts(js(p, "phaseTransitionTimestamp", NULL, NULL));
			if (!start && t)
				start = t; /* the first phase */
			if ((util_str_eq(ph, "Succeeded") || util_str_eq(ph, "Failed")) && t)
				end = t;
		}
	r->cell[4] = esc(src ? src : "-");
	r->cell[5] = esc(dst ? dst : "-");
	r->start = start;
	r->cell[6] = NULL; /* STARTED: when drawn */
	char d[32] = "-";
	if (start && end >= start)
		util_human_duration(end - start, d, sizeof d);
	else if (start)
		snprintf(d, sizeof d, "running");
	r->cell[7] = xstrdup(d);
}

static char *modes_text(struct json_object *o)
{
	struct json_object *st = NULL, *m = NULL;
	char buf[64] = "";
	if (json_object_object_get_ex(o, "status", &st) && json_object_object_get_ex(st, "accessModes", &m) &&
	    json_object_is_type(m, json_type_array))
		for (size_t i = 0; i < json_object_array_length(m); i++) {
			const char *v = json_object_get_string(json_object_array_get_idx(m, i));
			const char *a = util_str_eq(v, "ReadWriteOnce")	  ? "RWO"
					: util_str_eq(v, "ReadWriteMany") ? "RWX"
					: util_str_eq(v, "ReadOnlyMany")  ? "ROX"
					: util_str_eq(v, "ReadWriteOncePod") ? "RWOP"
									    : v;
			size_t l = strlen(buf);
			snprintf(buf + l, sizeof buf - l, "%s%s", l ? "," : "", a);
		}
	return esc(buf);
}

static void pvc_row(struct crow *r, struct json_object *o)
{
	r->cell[0] = esc(r->ns);
	r->cell[1] = esc(r->name);
	r->cell[2] = esc(js(o, "status", "phase", NULL));
	r->cell[3] = esc(js(o, "spec", "volumeName", NULL));
	r->cell[4] = esc(js(o, "status", "capacity", "storage"));
	r->cell[5] = modes_text(o);
	r->cell[6] = esc(js(o, "spec", "storageClassName", NULL) ? js(o, "spec", "storageClassName", NULL) : "<unset>");
	r->start = parse_ts(js(o, "metadata", "creationTimestamp", NULL));
	r->cell[7] = NULL; /* AGE */
}

static void dv_row(struct crow *r, struct json_object *o)
{
	r->cell[0] = esc(r->ns);
	r->cell[1] = esc(r->name);
	r->cell[2] = esc(js(o, "status", "phase", NULL));
	r->cell[3] = esc(js(o, "status", "progress", NULL) ? js(o, "status", "progress", NULL) : "N/A");
	r->cell[4] = esc(js(o, "status", "restartCount", NULL) ? js(o, "status", "restartCount", NULL) : "0");
	r->start = parse_ts(js(o, "metadata", "creationTimestamp", NULL));
	r->cell[5] = NULL; /* AGE */
}

static void vmirs_row(struct crow *r, struct json_object *o)
{
	r->cell[0] = esc(r->ns);
	r->cell[1] = esc(r->name);
	const char *d = js(o, "spec", "replicas", NULL), *cur = js(o, "status", "replicas", NULL);
	const char *rd = js(o, "status", "readyReplicas", NULL);
	r->cell[2] = esc(d ? d : "1");
	r->cell[3] = esc(cur ? cur : "0");
	r->cell[4] = esc(rd ? rd : "0");
	r->start = parse_ts(js(o, "metadata", "creationTimestamp", NULL));
	struct json_object *spec = NULL, *sel = NULL, *ml = NULL;
	if (json_object_object_get_ex(o, "spec", &spec) && json_object_object_get_ex(spec, "selector", &sel) &&
	    json_object_object_get_ex(sel, "matchLabels", &ml) && json_object_is_type(ml, json_type_object))
		r->sel = json_object_get(ml);
	/* AGE and MEMBERS: when drawn (the store's VMIs) */
}

/* The replica set's members: the store's VMIs of its source and namespace that its selector matches (KubeVirt's
 * controller adopts by selector), each NAME:PHASE. */
static char *members_of(const struct crow *r)
{
	char b[512] = "";
	size_t n, k = 0, len = 0;
	struct obj *const *v = r->sel ? store_objs(ui_store(), r->src, OBJ_VMI, &n) : NULL;
	for (size_t i = 0; v && i < n; i++) {
		if (!util_str_eq(v[i]->ns, r->ns))
			continue;
		bool match = json_object_object_length(r->sel) > 0;
		json_object_object_foreach(r->sel, lk, lv)
		{
			match &= util_str_eq(obj_label(v[i], lk), json_object_get_string(lv));
		}
		if (!match)
			continue;
		const char *ph = ((const struct vmi *)v[i])->phase;
		if (len < sizeof b)
			len += (size_t)snprintf(b + len, sizeof b - len, "%s%s:%s", k ? " " : "", v[i]->name,
						ph && *ph ? ph : "Pending");
		k++;
	}
	if (k == 0)
		return xstrdup("-");
	return esc(b);
}

static int cmp_rows(const void *a, const void *b)
{
	const struct crow *x = a, *y = b;
	int c = strcmp(x->ns ? x->ns : "", y->ns ? y->ns : "");
	if (c == 0 && x->start != y->start && x->vmi) /* migrations: newest first */
		return x->start < y->start ? 1 : -1;
	return c ? c : strcmp(x->name, y->name);
}

struct lreq {
	unsigned id;
	struct source *src;
	bool pods; /* the nodes' pods (their requests), not the list's kind */
};

static void listed(void *arg, const struct kube_resp *resp)
{
	struct lreq *q = arg;
	struct clist *c = find_id(q->id);
	if (c == NULL)
		goto out;
	c->pending--;
	if (q->pods) {
		struct json_object *o = resp->status == 200 ? json_tokener_parse(resp->body) : NULL, *items = NULL;
		if (o && json_object_object_get_ex(o, "items", &items) && json_object_is_type(items, json_type_array)) {
			for (size_t i = 0; i < json_object_array_length(items); i++)
				add_pod_requests(c, q->src, json_object_array_get_idx(items, i));
		} else {
			char *m = resp->status == 200 ? xstrdup("not a pod list") : kube_http_error_message(resp);
			char *e = esc(m);
			snprintf(c->next_note_req, sizeof c->next_note_req, "%s: requests unknown: %s", q->src->name, e);
			free(e);
			free(m);
		}
		json_object_put(o);
	} else if (resp->status != 200) {
		char *m = kube_http_error_message(resp);
		char *e = esc(m);
		snprintf(c->note, sizeof c->note, "%s: %s", q->src->name, e);
		c->round_failed = true;
		free(e);
		free(m);
	} else {
		struct json_object *o = json_tokener_parse(resp->body), *items = NULL;
		if (o && json_object_object_get_ex(o, "items", &items) && json_object_is_type(items, json_type_array)) {
			size_t n = json_object_array_length(items);
			c->next_rows = xreallocarray(c->next_rows, c->next_n + n + 1, sizeof *c->next_rows);
			for (size_t i = 0; i < n; i++) {
				struct json_object *it = json_object_array_get_idx(items, i);
				struct crow *r = &c->next_rows[c->next_n++];
				memset(r, 0, sizeof *r);
				r->src = q->src;
				r->ns = xstrdup0(js(it, "metadata", "namespace", NULL));
				r->name = xstrdup(js(it, "metadata", "name", NULL) ? js(it, "metadata", "name", NULL) : "?");
				if (c->kind == CL_NODE)
					node_row(r, it);
				else if (c->kind == CL_VMIM)
					vmim_row(r, it);
				else if (c->kind == CL_PVC)
					pvc_row(r, it);
				else if (c->kind == CL_VMIRS)
					vmirs_row(r, it);
				else
					dv_row(r, it);
			}
		}
		json_object_put(o);
	}
	if (c->pending == 0) {
		if (!c->round_failed)
			c->note[0] = '\0';
		c->round_failed = false;
		rows_free(c->rows, c->n);
		c->rows = c->next_rows;
		c->n = c->next_n;
		c->next_rows = NULL;
		c->next_n = 0;
		reqs_free(c->req, c->nreq);
		c->req = c->next_req;
		c->nreq = c->next_nreq;
		c->next_req = NULL;
		c->next_nreq = 0;
		memcpy(c->req_note, c->next_note_req, sizeof c->req_note);
		c->next_note_req[0] = '\0';
		if (c->n > 1)
			qsort(c->rows, c->n, sizeof *c->rows, cmp_rows);
		ui_dirty();
	}
out:
	free(q);
}

static void relist(struct clist *c)
{
	/* requests time out after 30 s; one that never answers was dropped with its source (a context switch) */
	if (c->pending && util_now_ms() - c->asked_ms < 35000)
		return;
	if (c->pending) {
		rows_free(c->next_rows, c->next_n);
		c->next_rows = NULL;
		c->next_n = 0;
		reqs_free(c->next_req, c->next_nreq);
		c->next_req = NULL;
		c->next_nreq = 0;
		c->pending = 0;
	}
	c->asked_ms = util_now_ms();
	int asked = 0;
	for (size_t i = 0; i < source_count(); i++) {
		struct source *s = source_get(i);
		if (s == NULL || s->closed || s->type != SOURCE_KUBE || kube_source_http(s) == NULL)
			continue;
		/* namespaced kinds: in the dashboard's namespace, or every one */
		char *ns = ui_namespace() ? curl_easy_escape(NULL, ui_namespace(), 0) : NULL;
		char *path = registry_kind_path(registry_kind(list_kind[c->kind]), ns, NULL);
		curl_free(ns);
		struct lreq *q = xcalloc(1, sizeof *q);
		q->id = c->id;
		q->src = s;
		struct kube_http_req r = { .path = path, .timeout_ms = 30000, .on_done = listed, .arg = q };
		kube_http_start(kube_source_http(s), &r);
		free(path);
		c->pending++;
		asked++;
		if (c->kind == CL_NODE) {
			/* what kubectl describe node sums: every namespace's pods not yet terminated */
			struct lreq *pq = xcalloc(1, sizeof *pq);
			*pq = (struct lreq){ c->id, s, true };
			struct kube_http_req pr = {
				.path = "/api/v1/pods?fieldSelector=status.phase%21%3DFailed%2Cstatus.phase%21%3DSucceeded",
				.timeout_ms = 30000, .on_done = listed, .arg = pq };
			kube_http_start(kube_source_http(s), &pr);
			c->pending++;
		}
	}
	if (asked == 0)
		snprintf(c->note, sizeof c->note, "no cluster: %s are listed from a kube context", titles[c->kind]);
}

static size_t vms_on(const struct crow *r)
{
	size_t n, k = 0;
	struct obj *const *v = store_objs(ui_store(), r->src, OBJ_VMI, &n);
	for (size_t i = 0; i < n; i++)
		if (util_str_eq(((const struct vmi *)v[i])->node, r->name))
			k++;
	return k;
}

struct drawing {
	struct clist *c;
	char *(*cells)[NCOLS];
	const int *w;
	int first, ncol;
};

static void draw_row(void *arg, size_t k, int y, int x0, int width, int attr)
{
	struct drawing *d = arg;
	int x = x0 + 1;
	for (int col = d->first; col < d->ncol && x < x0 + width; col++) {
		draw_text(y, x, x0 + width - x, attr, d->cells[k][col]);
		x += d->w[col] + 2;
	}
}

static void draw(struct view *v, const struct region *r)
{
	struct clist *c = v->priv;
	int ncol = ncols[c->kind];
	/* the cells of every row, the ones computed now included */
	char *(*cells)[NCOLS] = xcalloc(c->n + 1, sizeof *cells);
	int w[NCOLS] = { 0 };
	for (int k = 0; k < ncol; k++)
		w[k] = (int)strlen(heads[c->kind][k]);
	for (size_t i = 0; i < c->n; i++) {
		struct crow *row = &c->rows[i];
		for (int k = 0; k < ncol; k++) {
			const struct nodereq *nr = c->kind == CL_NODE ? node_requests(c, row) : NULL;
			static const struct nodereq none = { NULL, NULL, { { 0, 0, QTY_NONE }, { 0, 0, QTY_NONE } } };
			char t[96];
			if (row->cell[k]) {
				cells[i][k] = xstrdup(row->cell[k]);
			} else if (c->kind == CL_NODE && (k == NODE_CPU_REQ || k == NODE_MEM_REQ)) {
				int res = k == NODE_CPU_REQ ? 0 : 1;
				if (c->req_note[0] && nr == NULL)
					snprintf(t, sizeof t, "?");
				else
					noderes_cell(&(nr ? nr : &none)->q[res], &row->alloc[res], res == 0, t, sizeof t);
				cells[i][k] = xstrdup(t);
			} else if (c->kind == CL_NODE && k == NODE_VMS) {
				cells[i][k] = xasprintf("%zu", vms_on(row));
			} else if (c->kind == CL_VMIRS && k == RS_MEMBERS) {
				cells[i][k] = members_of(row);
			} else {
				cells[i][k] = age_of(row->start);
			}
			int cw = draw_width(cells[i][k]);
			if (cw > w[k])
				w[k] = cw;
		}
	}
	/* in one namespace the NAMESPACE column goes, as in the other lists */
	bool namespaced = registry_kind(list_kind[c->kind])->namespaced;
	const char *ns = namespaced ? ui_shown_namespace() : NULL;
	int first = ns ? 1 : 0;
	/* the title bar every list has: " PVCs(ns-00)[2] ", " Nodes[3] " */
	char t[160];
	if (namespaced)
		snprintf(t, sizeof t, " %s(%s)[%zu] ", titles[c->kind], ns ? ns : "all", c->n);
	else
		snprintf(t, sizeof t, " %s[%zu] ", titles[c->kind], c->n);
	draw_title_bar(r->y, r->x, r->w, theme_attr(THEME_BORDER), theme_attr(THEME_TITLE_ACTIVE), t);
	draw_fill(r->y + 1, r->x, r->w, theme_attr(THEME_TABLE_HEADER));
	int x = r->x + 1;
	for (int k = first; k < ncol && x < r->x + r->w; k++) {
		draw_text(r->y + 1, x, r->x + r->w - x, theme_attr(THEME_TABLE_HEADER), heads[c->kind][k]);
		x += w[k] + 2;
	}
	struct drawing d = { c, cells, w, first, ncol };
	listsel_draw(&c->l, c->n, r->y + 2, r->x, r->w, r->h - 3, draw_row, &d);
	if (c->n == 0 && r->h > 3) {
		/* as the store's lists: loading, failing (the note, below) or truly empty */
		char why[160];
		if (c->pending || c->asked_ms == 0)
			snprintf(why, sizeof why, "loading %s...", titles[c->kind]);
		else if (c->note[0])
			snprintf(why, sizeof why, "cannot list %s (below)", titles[c->kind]);
		else
			snprintf(why, sizeof why, "no %s%s%s", titles[c->kind], !namespaced ? "" : ns ? " in namespace " : " in any namespace",
				 ns ? ns : "");
		draw_text(r->y + 2, r->x + 1, r->w - 1, theme_attr(c->note[0] ? THEME_BAD : THEME_DIM), why);
	}
	draw_fill(r->y + r->h - 1, r->x, r->w, theme_attr(THEME_NORMAL));
	if (c->note[0] || c->req_note[0])
		draw_text(r->y + r->h - 1, r->x + 1, r->w - 1, theme_attr(THEME_ERROR), c->note[0] ? c->note : c->req_note);
	for (size_t i = 0; i < c->n; i++)
		for (int k = 0; k < ncol; k++)
			free(cells[i][k]);
	free(cells);
}

/* enter on a PVC or DataVolume: the object as YAML, fetched again */
static void yaml_fetched(void *arg, const struct kube_resp *resp)
{
	struct view *v = pager_find((unsigned)(uintptr_t)arg);
	if (v == NULL)
		return;
	char *err = NULL;
	char *y = resp->status == 200 ? yamlview_from_json(resp->body, resp->len, &err) : NULL;
	if (y == NULL && err == NULL)
		err = kube_http_error_message(resp);
	pager_set_text(v, y ? y : err);
	free(y);
	free(err);
}

static void open_yaml(struct clist *c, const struct crow *r)
{
	char title[600];
	snprintf(title, sizeof title, "%s %s/%s (YAML)", registry_kind(list_kind[c->kind])->kind,
		 r->ns ? r->ns : "", r->name);
	struct view *v = pager_new(title, "fetching...");
	char *ns = curl_easy_escape(NULL, r->ns ? r->ns : "", 0), *nm = curl_easy_escape(NULL, r->name, 0);
	char *path = registry_kind_path(registry_kind(list_kind[c->kind]), ns, nm);
	curl_free(ns);
	curl_free(nm);
	struct kube_http_req q = { .path = path, .timeout_ms = 30000, .on_done = yaml_fetched,
				   .arg = (void *)(uintptr_t)pager_id(v) };
	kube_http_start(kube_source_http(r->src), &q);
	free(path);
	view_push(v);
}

/* The VMI list, filtered by name (a copy: the list this row is in may be gone once the command ran). */
static void vmis_filtered(const char *name)
{
	char *n = xstrdup(name);
	if (cmdline_run("vmi") == 0) {
		char *err = NULL;
		if (table_view_set_filter(view_top(), n, &err) < 0)
			ui_error("filter: %s", err ? err : "?");
		free(err);
	}
	free(n);
}

static enum view_result key(struct view *v, int k)
{
	struct clist *c = v->priv;
	if (listsel_key(&c->l, k, c->n)) {
		view_dirty(v);
		return VIEW_DONE;
	}
	if (k == '\r' && c->l.sel < c->n) {
		struct crow *r = &c->rows[c->l.sel];
		if (c->kind == CL_NODE) {
			vmis_filtered(r->name);
		} else if (c->kind == CL_PVC || c->kind == CL_DV) {
			open_yaml(c, r);
		} else if (c->kind == CL_VMIRS) {
			/* its members (named after it) in the VMI list, each row a chain VMI -> launcher -> guest */
			vmis_filtered(r->name);
		} else {
			struct obj *vm = r->vmi ? store_find(ui_store(), r->src, OBJ_VM, r->ns, r->vmi) : NULL;
			if (vm)
				ui_open_vm(vm);
			else
				ui_error("no VM %s/%s in the store (not watched, or gone)", r->ns ? r->ns : "", r->vmi ? r->vmi : "");
		}
		return VIEW_DONE;
	} else if (k == 'r') {
		relist(c);
		return VIEW_DONE;
	}
	return VIEW_PASS;
}

static enum view_result mouse(struct view *v, const struct view_mouse *m)
{
	struct clist *c = v->priv;
	bool open;
	if (!listsel_mouse(&c->l, m, 2, c->n, &open))
		return VIEW_PASS;
	view_dirty(v);
	return open ? key(v, '\r') : VIEW_DONE;
}

static void title(struct view *v, char *buf, size_t len)
{
	struct clist *c = v->priv;
	snprintf(buf, len, "%s[%zu]", titles[c->kind], c->n);
}

static void tick(struct view *v)
{
	struct clist *c = v->priv;
	if (++c->ticks % REFRESH_S == 0)
		relist(c);
	view_dirty(v); /* ages */
}

static void store_changed(struct view *v, enum obj_kind kind, const struct obj *old, const struct obj *new_)
{
	(void)old;
	(void)new_;
	if (kind == OBJ_VMI)
		view_dirty(v); /* VMs per node, migration states */
}

static void destroy(struct view *v)
{
	struct clist *c = v->priv;
	for (struct clist **pp = &live; *pp; pp = &(*pp)->next_live)
		if (*pp == c) {
			*pp = c->next_live;
			break;
		}
	rows_free(c->rows, c->n);
	rows_free(c->next_rows, c->next_n);
	reqs_free(c->req, c->nreq);
	reqs_free(c->next_req, c->next_nreq);
	free(c);
}

static const struct view_key node_keys[] = {
	{ '\r', "enter", "the VMIs on the selected node (the VMI list filtered by its name)", NULL },
	{ 'r', "r", "list again now (also every few seconds)", NULL },
	{ 0, NULL, NULL, NULL },
};
static const struct view_key storage_keys[] = {
	{ '\r', "enter", "the selected object as YAML", NULL },
	{ 'r', "r", "list again now (also every few seconds)", NULL },
	{ 0, NULL, NULL, NULL },
};
static const struct view_key vmirs_keys[] = {
	{ '\r', "enter", "its members in the VMI list (filtered by the replica set's name)", NULL },
	{ 'r', "r", "list again now (also every few seconds)", NULL },
	{ 0, NULL, NULL, NULL },
};
static const struct view_key vmim_keys[] = {
	{ '\r', "enter", "the migrated VM's view", NULL },
	{ 'r', "r", "list again now (also every few seconds)", NULL },
	{ 0, NULL, NULL, NULL },
};

const struct view_key *clusterlist_node_keys(void)
{
	return node_keys;
}

const struct view_key *clusterlist_vmim_keys(void)
{
	return vmim_keys;
}

const struct view_key *clusterlist_vmirs_keys(void)
{
	return vmirs_keys;
}

const struct view_key *clusterlist_storage_keys(void)
{
	return storage_keys;
}

static const struct view_ops node_ops = {
	.name = "node", .draw = draw, .key = key, .mouse = mouse, .title = title, .tick = tick,
	.store_changed = store_changed, .destroy = destroy, .keys = node_keys,
};
static const struct view_ops vmim_ops = {
	.name = "vmim", .draw = draw, .key = key, .mouse = mouse, .title = title, .tick = tick,
	.store_changed = store_changed, .destroy = destroy, .keys = vmim_keys,
};
static const struct view_ops pvc_ops = {
	.name = "pvc", .draw = draw, .key = key, .mouse = mouse, .title = title, .tick = tick, .destroy = destroy, .keys = storage_keys,
};
static const struct view_ops vmirs_ops = {
	.name = "vmirs", .draw = draw, .key = key, .mouse = mouse, .title = title, .tick = tick,
	.store_changed = store_changed, .destroy = destroy, .keys = vmirs_keys,
};
static const struct view_ops dv_ops = {
	.name = "dv", .draw = draw, .key = key, .mouse = mouse, .title = title, .tick = tick, .destroy = destroy, .keys = storage_keys,
};

static struct view *make(enum clist_kind kind)
{
	struct clist *c = xcalloc(1, sizeof *c);
	c->kind = kind;
	c->id = ++next_id;
	c->next_live = live;
	live = c;
	static const struct view_ops *const ops[CL_COUNT] = { &node_ops, &vmim_ops, &pvc_ops, &dv_ops, &vmirs_ops };
	struct view *v = view_new(ops[kind], c);
	relist(c);
	return v;
}

struct view *clusterlist_nodes_new(void)
{
	return make(CL_NODE);
}

struct view *clusterlist_vmims_new(void)
{
	return make(CL_VMIM);
}

struct view *clusterlist_pvcs_new(void)
{
	return make(CL_PVC);
}

struct view *clusterlist_dvs_new(void)
{
	return make(CL_DV);
}

struct view *clusterlist_vmirs_new(void)
{
	return make(CL_VMIRS);
}
