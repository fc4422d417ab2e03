/* kvcon get: kubectl-like listing from the store. The columns are the kind's table (model/columns.c), shared
 * with the dashboard; every cell from the cluster is escaped before it reaches the terminal. */
#include "cmd/cmd_get.h"

#include <json.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/buf.h"
#include "core/connect.h"
#include "core/log.h"
#include "core/loop.h"
#include "core/opts.h"
#include "core/util.h"
#include "core/xmalloc.h"
#include "cmd/args.h"
#include "cmd/cmd.h"
#include "cmd/session.h"
#include "kube/http.h"
#include "kube/kget.h"
#include "kube/kube.h"
#include "model/columns.h"
#include "model/objjson.h"
#include "model/registry.h"
#include "model/source.h"
#include "model/store.h"

#define CLI_MAX_FAILURES 4
#define GET_TIMEOUT_S 30 /* the first complete list, retries included */

enum out_fmt { OUT_TABLE, OUT_WIDE, OUT_JSON, OUT_NAME };

struct get_ctx {
	enum obj_kind kind;
	enum out_fmt fmt;
	bool all_ns;
	bool watch;
	long watch_for; /* seconds, -1 none */
	long timeout;   /* seconds for the first complete list */
	struct store *st;
	struct source *srcs[2]; /* the cluster and/or the engine service */
	int nsrc;
	bool header_done;
	size_t widths[COLUMNS_MAX]; /* -w: the columns' widths so far, as kubectl's watch keeps them */
	bool summary; /* -o summary: kvcon's flat JSON summary of the store's objects */
	int64_t now;
};

static void put(struct buf *out, const char *s)
{
	char *e = util_escape_display(s && *s ? s : "<none>");
	buf_add_str(out, e);
	free(e);
}

/* --- output ------------------------------------------------------------------------------------------ */

static int cmp_obj(const void *a, const void *b)
{
	const struct obj *x = *(const struct obj *const *)a, *y = *(const struct obj *const *)b;
	int c = strcmp(x->ns, y->ns);
	return c ? c : strcmp(x->name, y->name);
}

/* The kind's columns (model/columns.c), as kubectl prints a table. */
static void print_table(struct get_ctx *g, struct obj **objs, size_t n, bool header)
{
	/* beside a cluster, the engine's rows (its service's) say where they are from, as the list's table does */
	struct columns_print_opts po = { .wide = g->fmt == OUT_WIDE, .all_ns = g->all_ns, .header = header,
					 .source = g->nsrc > 1, .widths = g->watch ? g->widths : NULL };
	struct col_ctx c = { .st = g->st, .now = g->now };
	struct buf b;
	buf_init(&b);
	columns_print(columns_table(g->kind), (const struct obj *const *)objs, n, &po, &c, &b);
	if (b.len)
		fwrite(b.data, 1, b.len, stdout);
	buf_free(&b);
}

static void jadd_str(struct json_object *j, const char *k, const char *v)
{
	json_object_object_add(j, k, v ? json_object_new_string(v) : NULL);
}

static struct json_object *obj_json(const struct get_ctx *g, const struct obj *o)
{
	struct json_object *j = json_object_new_object();
	char t[32];
	jadd_str(j, "kind", obj_kind_title(o->kind));
	jadd_str(j, "namespace", o->ns);
	jadd_str(j, "name", o->name);
	jadd_str(j, "uid", o->uid);
	util_format_time(o->created, t, sizeof t);
	jadd_str(j, "created", o->created ? t : NULL);
	switch (o->kind) {
	case OBJ_VM: {
		const struct vm *v = (const struct vm *)o;
		jadd_str(j, "status", v->printable_status);
		jadd_str(j, "runStrategy", v->run_strategy);
		json_object_object_add(j, "ready", json_object_new_boolean(v->ready));
		break;
	}
	case OBJ_VMI: {
		const struct vmi *v = (const struct vmi *)o;
		jadd_str(j, "phase", v->phase);
		jadd_str(j, "node", v->node);
		jadd_str(j, "vmUid", v->vm_uid[0] ? v->vm_uid : NULL);
		jadd_str(j, "ip", v->ip);
		const struct cond *rc = cond_find(v->conds, v->nconds, "Ready");
		jadd_str(j, "ready", rc ? cond_status(rc) : NULL);
		break;
	}
	case OBJ_POD: {
		const struct pod *p = (const struct pod *)o;
		jadd_str(j, "phase", p->phase);
		jadd_str(j, "node", p->node);
		jadd_str(j, "vmiUid", p->vmi_uid[0] ? p->vmi_uid : NULL);
		jadd_str(j, "createdBy", pod_created_by(p)[0] ? pod_created_by(p) : NULL);
		jadd_str(j, "ip", p->ip);
		break;
	}
	case OBJ_EVENT: {
		const struct event *e = (const struct event *)o;
		jadd_str(j, "type", e->type);
		jadd_str(j, "reason", e->reason);
		jadd_str(j, "message", e->message);
		jadd_str(j, "involvedKind", e->inv_kind);
		jadd_str(j, "involvedName", e->inv_name);
		jadd_str(j, "involvedUid", e->inv_uid[0] ? e->inv_uid : NULL);
		json_object_object_add(j, "count", json_object_new_int(e->count));
		break;
	}
	default:
		break;
	}
	(void)g;
	return j;
}

/* JSON output is already free of C0 controls (json-c escapes them); DEL, C1 controls and stray bytes are
 * escaped too so that no string from the cluster can drive the terminal. Valid JSON for the same text. */
static void write_json_safe(const char *s)
{
	struct buf b;
	buf_init(&b);
	const unsigned char *p = (const unsigned char *)s;
	while (*p) {
		unsigned c = *p;
		if (c == 0x7f) {
			buf_add_str(&b, "\\u007f");
			p++;
		} else if (c == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f) {
			buf_printf(&b, "\\u00%02x", p[1]);
			p += 2;
		} else if (c < 0x80) {
			buf_add_char(&b, (char)c);
			p++;
		} else {
			size_t n = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 0;
			size_t k = 1;
			while (n && k < n && (p[k] & 0xc0) == 0x80)
				k++;
			if (n == 0 || k != n) {
				buf_add_str(&b, "\\ufffd");
				p++;
			} else {
				buf_add(&b, p, n);
				p += n;
			}
		}
	}
	buf_add_char(&b, '\n');
	if (b.len)
		fwrite(b.data, 1, b.len, stdout);
	buf_free(&b);
}

static void print_json(struct get_ctx *g, struct obj **objs, size_t n)
{
	struct json_object *arr = json_object_new_array();
	for (size_t i = 0; i < n; i++)
		json_object_array_add(arr, obj_json(g, objs[i]));
	write_json_safe(json_object_to_json_string_ext(arr, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED));
	json_object_put(arr);
}

static void print_names(struct get_ctx *g, struct obj **objs, size_t n)
{
	struct buf b;
	buf_init(&b);
	for (size_t i = 0; i < n; i++) {
		buf_reset(&b);
		char gr[96];
		buf_printf(&b, "%s/", registry_kind_gr(registry_kind_of_obj(g->kind), false, gr, sizeof gr));
		put(&b, objs[i]->name);
		buf_add_char(&b, '\n');
		if (b.len)
			fwrite(b.data, 1, b.len, stdout);
	}
	buf_free(&b);
}

static void print_objs(struct get_ctx *g, struct obj **objs, size_t n, bool header)
{
	g->now = util_wall_s();
	if (g->fmt == OUT_JSON)
		print_json(g, objs, n);
	else if (g->fmt == OUT_NAME)
		print_names(g, objs, n);
	else
		print_table(g, objs, n, header);
}

static int print_store(struct get_ctx *g)
{
	size_t n = 0;
	struct obj **objs = NULL;
	for (int i = 0; i < g->nsrc; i++) {
		size_t k;
		struct obj *const *arr = store_objs(g->st, g->srcs[i], g->kind, &k);
		objs = xreallocarray(objs, n + k + 1, sizeof *objs);
		if (k)
			memcpy(objs + n, arr, k * sizeof *objs);
		n += k;
	}
	qsort(objs, n, sizeof *objs, cmp_obj);
	if (n == 0 && g->fmt != OUT_JSON) {
		const char *ns = g->srcs[0]->ns_scope;
		if (g->all_ns || ns == NULL)
			log_eprintf("No resources found\n");
		else
			log_eprintf("No resources found in %s namespace.\n", ns);
	} else {
		print_objs(g, objs, n, true);
	}
	g->header_done = n > 0;
	free(objs);
	fflush(stdout);
	return 0;
}

/* -w: one row (or one JSON object per line) per change, as kubectl get -w. */
static void on_change(void *arg, enum obj_kind kind, const struct obj *old, const struct obj *new_)
{
	struct get_ctx *g = arg;
	if (kind != g->kind)
		return;
	const struct obj *o = new_ ? new_ : old;
	if (!(o->src == g->srcs[0] || (g->nsrc > 1 && o->src == g->srcs[1])))
		return;
	g->now = util_wall_s();
	if (g->fmt == OUT_JSON) {
		struct json_object *j = obj_json(g, o);
		json_object_object_add(j, "event", json_object_new_string(new_ == NULL ? "DELETED" : old ? "MODIFIED" : "ADDED"));
		write_json_safe(json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN));
		json_object_put(j);
	} else {
		struct obj *one = (struct obj *)o;
		print_objs(g, &one, 1, !g->header_done);
		g->header_done = true;
	}
	fflush(stdout);
}

/* --- command ----------------------------------------------------------------------------------------- */

/* kubectl's error for a kind it does not know, and kvcon's suggestion of the kinds close to it */
static void unknown_kind(const char *s)
{
	char *e = util_escape_display(s);
	log_eprintf("error: the server doesn't have a resource type \"%s\"\n", e);
	free(e);
	const char *close[4];
	cmd_print_suggestions(close, registry_kind_suggest(s, close, 4));
}

struct get_args {
	struct kget_opts ko;
	struct buf sel;
	char *kinds_arg;
};

static int parse_output(const char *val, struct get_ctx *g, struct kget_opts *ko)
{
	static const struct {
		const char *name;
		enum out_fmt fmt;
		enum kget_fmt kf;
	} formats[] = {
		{ "table", OUT_TABLE, KGET_TABLE }, { "wide", OUT_WIDE, KGET_WIDE },	{ "json", OUT_TABLE, KGET_JSON },
		{ "yaml", OUT_TABLE, KGET_YAML },   { "name", OUT_NAME, KGET_NAME },	{ "summary", OUT_JSON, KGET_TABLE },
	};
	for (size_t f = 0; f < sizeof formats / sizeof formats[0]; f++)
		if (strcmp(val, formats[f].name) == 0) {
			g->fmt = formats[f].fmt;
			ko->fmt = formats[f].kf;
			g->summary = strcmp(val, "summary") == 0;
			return 0;
		}
	if (util_has_prefix(val, "jsonpath=") || util_has_prefix(val, "custom-columns=")) {
		bool jp = val[0] == 'j';
		ko->fmt = jp ? KGET_JSONPATH : KGET_CUSTOM;
		ko->fmt_arg = strchr(val, '=') + 1;
		return 0;
	}
	log_eprintf("error: unable to match a printer suitable for the output format \"%s\", allowed formats are: "
		    "custom-columns,json,jsonpath,name,summary,wide,yaml\n", val);
	return -1;
}

/* The flags are the command table's (cmd/cmd.c: f_get), parsed by its parser (cmd/args.c); -A and -n are the
 * global options, there as hidden rows for kubectl's grouped forms (-Aw) that main leaves in place. */
static int parse_args(int argc, char **argv, struct get_ctx *g, struct get_args *a)
{
	struct kvcon_opts *go = opts_global();
	struct kget_opts *ko = &a->ko;
	struct args p;
	int rc = args_parse_verb(argc, argv, &p);
	if (rc != ARGS_OK) {
		args_free(&p);
		if (rc == ARGS_HELP)
			exit(EXIT_OK);
		return -1;
	}
	for (int i = 0; i < p.npos; i++) {
		if (a->kinds_arg == NULL) {
			a->kinds_arg = xstrdup(p.pos[i]);
		} else {
			ko->names = xreallocarray(ko->names, (size_t)ko->nnames + 1, sizeof *ko->names);
			ko->names[ko->nnames++] = xstrdup(p.pos[i]);
		}
	}
	for (int i = 0; i < p.nitems; i++) {
		const char *l = p.items[i].f->l, *val = p.items[i].val;
		if (strcmp(l, "--output") == 0) {
			if (parse_output(val, g, ko) < 0) {
				args_free(&p);
				return -1;
			}
		} else if (strcmp(l, "--selector") == 0) { /* repeated: the last one counts, as in kubectl */
			buf_reset(&a->sel);
			buf_add_str(&a->sel, val);
		} else if (strcmp(l, "--field-selector") == 0) {
			ko->field_selector = val;
		} else if (strcmp(l, "--all-namespaces") == 0) {
			go->all_ns = true; /* -A in a group (-Aw): main's option, as if given alone */
		} else if (strcmp(l, "--namespace") == 0) {
			free(go->ns);
			go->ns = xstrdup(val);
		} else if (strcmp(l, "--label-columns") == 0) {
			char *s = xstrdup(val), *save = NULL;
			for (char *t = strtok_r(s, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
				ko->label_cols = xreallocarray(ko->label_cols, (size_t)ko->nlabel_cols + 1, sizeof *ko->label_cols);
				ko->label_cols[ko->nlabel_cols++] = xstrdup(t);
			}
			free(s);
		}
	}
	ko->no_headers = args_bool(&p, "--no-headers");
	ko->show_labels = args_bool(&p, "--show-labels");
	ko->sort_by = args_get(&p, "--sort-by");
	g->watch = args_bool(&p, "--watch");
	g->watch_for = args_has(&p, "--watch-for") ? (args_num(&p, "--watch-for", 0) + 999) / 1000 : -1;
	g->timeout = (args_num(&p, "--timeout", GET_TIMEOUT_S * 1000L) + 999) / 1000;
	args_free(&p);
	if (g->timeout < 1) {
		log_eprintf("error: --timeout must be more than 0\n");
		return -1;
	}
	if (a->kinds_arg == NULL) {
		log_eprintf("error: you must specify the type of resource to get (kvcon help get lists the kinds)\n");
		return -1;
	}
	/* KIND/NAME forms (vm/a vmi/b) as kubectl takes them: then every argument is one */
	if (strchr(a->kinds_arg, '/')) {
		int n = ko->nnames + 1;
		char **all = xcalloc((size_t)n, sizeof *all);
		all[0] = a->kinds_arg;
		for (int i = 0; i < ko->nnames; i++)
			all[i + 1] = ko->names[i];
		free(ko->names);
		ko->names = xcalloc((size_t)n, sizeof *ko->names);
		ko->nnames = 0;
		ko->pairs = true;
		int bad = 0;
		for (int i = 0; i < n; i++) {
			char *slash = strchr(all[i], '/');
			const struct kind_def *kk = slash ? (*slash = '\0', registry_kind_find(all[i])) : NULL;
			if (bad == 0 && (slash == NULL || slash[1] == '\0')) {
				char *e = util_escape_display(all[i]);
				log_eprintf("error: arguments in resource/name form must have a single resource and name: %s\n", e);
				free(e);
				bad = 1;
			} else if (bad == 0 && kk == NULL) {
				unknown_kind(all[i]);
				bad = 1;
			} else if (bad == 0 && ko->nkinds < KGET_MAX_KINDS) {
				ko->kinds[ko->nkinds++] = kk;
				ko->names[ko->nnames++] = xstrdup(slash + 1);
			}
			free(all[i]); /* all[0] is kinds_arg */
		}
		free(all);
		a->kinds_arg = xstrdup("");
		if (bad)
			return -1;
	} else {
		char *save = NULL;
		for (char *t = strtok_r(a->kinds_arg, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
			const struct kind_def *kk = registry_kind_find(t);
			if (kk == NULL) {
				unknown_kind(t);
				return -1;
			}
			if (ko->nkinds < KGET_MAX_KINDS)
				ko->kinds[ko->nkinds++] = kk;
		}
	}
	if (ko->nkinds == 0) {
		log_eprintf("error: you must specify the type of resource to get\n");
		return -1;
	}
	if (go->all_ns && ko->nnames > 0) {
		log_eprintf("error: a resource cannot be retrieved by name across all namespaces\n");
		return -1;
	}
	if (ko->nkinds > 1 && ko->nnames > 0 && !ko->pairs) {
		log_eprintf("error: there is no need to specify a resource type as a separate argument when passing "
			    "arguments in resource/name form\n");
		return -1;
	}
	ko->selector = a->sel.len ? a->sel.data : NULL;
	ko->timeout = g->timeout;
	g->kind = ko->kinds[0]->obj >= 0 ? (enum obj_kind)ko->kinds[0]->obj : OBJ_KIND_COUNT;
	char *err = kget_check(ko);
	if (err) {
		log_eprintf("error: %s\n", err);
		free(err);
		return -1;
	}
	return 0;
}

/* --- engine hosts: their VMs, VMIs and launcher pods beside the cluster's (kget's extra objects) ---------- */

struct engine_set {
	struct store *st;
	struct source **hosts;
	int n;
	const char *selector; /* -l, applied here (the engine has no API server to do it) */
};

/* Which sources get reads: the one rule of core/connect.h (with a kubeconfig, its context alone, as kubectl; the
 * engine when asked for, or when there is no kubeconfig). */
static struct connect_plan plan(void)
{
	struct connect_plan p;
	connect_plan(opts_global(), &p);
	return p;
}

static bool engine_wanted(void)
{
	return plan().engine;
}

/* -l for the engine's objects: kubectl's equality forms (k=v, k==v, k!=v, k, !k), comma-separated, ANDed. */
static bool selector_matches(const struct obj *o, const char *sel)
{
	if (sel == NULL || *sel == '\0')
		return true;
	char *copy = xstrdup(sel), *save = NULL;
	bool ok = true;
	for (char *t = strtok_r(copy, ",", &save); t && ok; t = strtok_r(NULL, ",", &save)) {
		while (*t == ' ')
			t++;
		char *ne = strstr(t, "!="), *eq = strchr(t, '=');
		if (t[0] == '!') {
			ok = obj_label(o, t + 1) == NULL;
		} else if (ne) {
			*ne = '\0';
			const char *v = obj_label(o, t);
			ok = v == NULL || strcmp(v, ne + 2) != 0;
		} else if (eq) {
			*eq = '\0';
			const char *want = eq[1] == '=' ? eq + 2 : eq + 1, *v = obj_label(o, t);
			ok = v && strcmp(v, want) == 0;
		} else {
			ok = obj_label(o, t) != NULL;
		}
	}
	free(copy);
	return ok;
}

static int obj_cmp_ns_name(const void *a, const void *b)
{
	const struct obj *x = *(const struct obj *const *)a, *y = *(const struct obj *const *)b;
	int c = strcmp(x->ns, y->ns);
	return c ? c : strcmp(x->name, y->name);
}

/* The engine's VMs, VMIs and launcher pods; every other kind it serves (events, storage) comes through its
 * service's API. */
static bool engine_store_serves(const struct kind_def *kd)
{
	return kd->obj >= 0 && kd->obj != OBJ_EVENT;
}

static struct json_object *engine_objects(void *arg, const struct kind_def *kd, const char *ns, const char *name)
{
	struct engine_set *e = arg;
	if (!engine_store_serves(kd))
		return NULL;
	enum obj_kind kind = (enum obj_kind)kd->obj;
	struct json_object *arr = NULL;
	int64_t now = util_wall_s();
	for (int h = 0; h < e->n; h++) {
		size_t n;
		struct obj *const *objs = store_objs(e->st, e->hosts[h], kind, &n);
		/* the store's order is its own: sort by namespace, then name, as a server lists them */
		const struct obj **sorted = xcalloc(n ? n : 1, sizeof *sorted);
		size_t k = 0;
		for (size_t i = 0; i < n; i++)
			if ((ns == NULL || strcmp(objs[i]->ns, ns) == 0) && (name == NULL || strcmp(objs[i]->name, name) == 0) &&
			    selector_matches(objs[i], e->selector))
				sorted[k++] = objs[i];
		qsort(sorted, k, sizeof *sorted, obj_cmp_ns_name);
		for (size_t i = 0; i < k; i++) {
			struct json_object *o = objjson_new(sorted[i]);
			if (o == NULL)
				continue;
			struct json_object *x = json_object_new_object();
			json_object_object_add(x, "source", json_object_new_string(e->hosts[h]->name));
			json_object_object_add(x, "object", o);
			/* KubeVirt's table cells (every column, the wide ones too), as the engine service serves them */
			json_object_object_add(x, "cells", columns_api_cells(columns_table(sorted[i]->kind), o, now));
			if (arr == NULL)
				arr = json_object_new_array();
			json_object_array_add(arr, x);
		}
		free(sorted);
	}
	return arr;
}

/* -w and --watch-for on the engine go through its service, as on a cluster (a watch on an in-process engine
 * would hold the root for as long as it runs). The service's socket (caller frees), or NULL: no engine to watch
 * (*rc EXIT_OK; a warning when the engine was only implied beside a cluster), or an error printed (*rc EXIT_API). */
static char *engine_watch_socket(int *rc)
{
	*rc = EXIT_OK;
	if (!engine_wanted())
		return NULL;
	char *err = NULL;
	char *path = session_service_answering(&err);
	if (path) {
		log_info("the engine service answers on %s: going through it", path);
		return path;
	}
	/* asked for (its context, -c, the config's hosts) or all there is: an error (session_service_answering's
	 * words name the service or the engine's own refusal) */
	char *e = util_escape_display(err ? err : "it did not answer");
	log_eprintf("error: %s\n", e);
	*rc = EXIT_API;
	free(e);
	free(err);
	return NULL;
}

/* The engine service's KubeVirt CR names the VM records it cannot read (condition RecordsReadable False, its
 * message the files and reasons): `kvcon engine get` says so on stderr, as the rows say RecordUnreadable. */
struct kv_fetch {
	bool done;
	char *body;
};

static void kv_fetched(void *arg, const struct kube_resp *r)
{
	struct kv_fetch *f = arg;
	f->done = true;
	if (r->status == 200 && r->body)
		f->body = xstrndup(r->body, r->len);
}

static void warn_unreadable(const char *sock)
{
	char *err = NULL;
	struct kube_config *kc = kube_config_unix(sock, "kvcon-engine", NULL);
	struct kube_http *h = kube_http_new(kc, &err);
	struct kv_fetch f = { 0 };
	struct kube_http_req q = { .path = "/apis/kubevirt.io/v1/namespaces/kubevirt/kubevirts/kubevirt",
				   .timeout_ms = 10000, .on_done = kv_fetched, .arg = &f };
	struct kube_req *r = h ? kube_http_start(h, &q) : NULL;
	uint64_t until = util_now_ms() + 12000;
	while (r && !f.done && util_now_ms() < until)
		loop_once(50);
	if (r && !f.done)
		kube_http_cancel(r);
	struct json_object *o = f.body ? json_tokener_parse(f.body) : NULL, *st, *conds;
	if (o && json_object_object_get_ex(o, "status", &st) && json_object_object_get_ex(st, "conditions", &conds) &&
	    json_object_is_type(conds, json_type_array)) {
		for (size_t i = 0; i < json_object_array_length(conds); i++) {
			struct json_object *c = json_object_array_get_idx(conds, i), *t, *v, *m;
			if (json_object_object_get_ex(c, "type", &t) && util_str_eq(json_object_get_string(t), "RecordsReadable") &&
			    json_object_object_get_ex(c, "status", &v) && util_str_eq(json_object_get_string(v), "False") &&
			    json_object_object_get_ex(c, "message", &m)) {
				char *e = util_escape_display(json_object_get_string(m));
				log_eprintf("warning: %s (their QEMUs, if any, are left running)\n", e);
				free(e);
			}
		}
	}
	json_object_put(o);
	free(f.body);
	free(err);
	kube_http_free(h);
	kube_config_free(kc);
}

/* kget on the cluster (when there is one) and the engine hosts (when wanted). */
static int run_kget(struct kget_opts *ko)
{
	struct engine_set e = { .selector = ko->selector };
	int rc;
	char *esock = NULL; /* the service, for the kinds the store does not keep */
	const char *hn = connect_engine_name();
	struct connect_plan p = plan();
	if (!p.kube) {
		/* the engine alone (`kvcon engine get`, --context engine, -c): its service read as a cluster is (its
		 * objects, tables, events) */
		char *sock = engine_watch_socket(&rc);
		if (sock == NULL)
			return rc;
		ko->engine_socket = sock;
		ko->engine_name = hn;
		ko->engine_only = true;
		rc = kget_run(ko);
		if (!ko->watch) {
			warn_unreadable(sock);
			char *notice = kube_engine_notice(sock); /* its host's (KVM, TCG): once a boot */
			if (notice)
				session_notice_once_text(hn, notice);
			free(notice);
		}
		free(sock);
		ko->engine_socket = NULL;
		source_free_all();
		return rc;
	}
	if (ko->watch) {
		/* -w: the engine's objects through its service's API, watched as a cluster's */
		char *sock = engine_watch_socket(&rc);
		if (sock == NULL && rc != EXIT_OK)
			return rc;
		if (sock) {
			ko->engine_socket = sock;
			ko->engine_name = hn;
			ko->cluster_optional = p.kube_optional;
		}
		rc = kget_run(ko);
		free(sock);
		ko->engine_socket = NULL;
		source_free_all();
		return rc;
	}
	if (!ko->field_selector && engine_wanted()) {
		char *err = NULL;
		e.st = store_new();
		e.n = session_open_engines(e.st, &e.hosts, &err);
		if (e.n < 0) {
			char *m = util_escape_display(err);
			log_eprintf("error: %s\n", m);
			free(m);
			free(err);
			rc = EXIT_API;
			goto out;
		}
		for (int i = 0; i < e.n; i++)
			if (e.hosts[i]->notice && util_has_prefix(e.hosts[i]->notice, SESSION_DEGRADED)) {
				/* the service's own state (degraded: unreadable records, by file) */
				char *m = util_escape_display(e.hosts[i]->notice);
				log_eprintf("warning: %s\n", m);
				free(m);
			} else if (e.hosts[i]->notice) {
				session_notice_once(e.hosts[i]); /* its host's (KVM, TCG): once a boot */
			}
		ko->extra = engine_objects;
		ko->extra_arg = &e;
		ko->extra_serves = engine_store_serves;
		ko->cluster_optional = p.kube_optional;
		bool others = false; /* a kind the store does not keep: listed through the service */
		for (int i = 0; i < ko->nkinds; i++)
			others |= !engine_store_serves(ko->kinds[i]);
		if (others) {
			esock = engine_watch_socket(&rc);
			if (esock == NULL && rc != EXIT_OK)
				goto out;
			ko->engine_socket = esock;
			ko->engine_name = hn;
		}
	}
	rc = kget_run(ko);
out:
	ko->engine_socket = NULL;
	free(esock);
	source_free_all();
	store_free(e.st);
	free(e.hosts);
	return rc;
}

/* The store (and its reflectors) serves the plain tables of one of its four kinds, -w and --watch-for with tables
 * and names, and -o summary; every other form (-o wide included: the server's columns, as kubectl) reads the
 * API's own objects (kget): --watch-for with them prints the objects as they are when its seconds have passed. */
static bool use_store(const struct get_ctx *g, const struct get_args *a)
{
	const struct kget_opts *ko = &a->ko;
	if (g->summary)
		return true;
	if (g->watch) /* -w: tables and names from the store, the API's objects' formats from kget */
		return ko->fmt == KGET_TABLE || ko->fmt == KGET_WIDE || ko->fmt == KGET_NAME;
	if (g->watch_for >= 0)
		return ko->nkinds == 1 && g->kind < OBJ_KIND_COUNT && ko->nnames == 0 &&
		       (ko->fmt == KGET_TABLE || ko->fmt == KGET_WIDE || ko->fmt == KGET_NAME);
	if (engine_wanted()) /* the engine's objects join through kget */
		return false;
	return ko->nkinds == 1 && g->kind < OBJ_KIND_COUNT && ko->nnames == 0 &&
	       (ko->fmt == KGET_TABLE || ko->fmt == KGET_NAME) && !ko->field_selector &&
	       !ko->no_headers && !ko->show_labels && ko->nlabel_cols == 0 && !ko->sort_by;
}

static void get_args_free(struct get_args *a)
{
	for (int i = 0; i < a->ko.nnames; i++)
		free(a->ko.names[i]);
	free(a->ko.names);
	for (int i = 0; i < a->ko.nlabel_cols; i++)
		free(a->ko.label_cols[i]);
	free(a->ko.label_cols);
	buf_free(&a->sel);
	free(a->kinds_arg);
}

static bool failed(const struct get_ctx *g, unsigned kinds_mask, const char **msg)
{
	for (int i = 0; i < g->nsrc; i++)
		for (int k = 0; k < OBJ_KIND_COUNT; k++) {
			if (!(kinds_mask & KUBE_KIND_BIT(k)))
				continue;
			const struct watch_health *h = &g->srcs[i]->health[k];
			if (h->state == WATCH_ERROR || h->state == WATCH_FORBIDDEN) {
				*msg = h->message ? h->message : watch_state_name(h->state);
				return true;
			}
		}
	return false;
}

static bool synced(const struct get_ctx *g)
{
	for (int i = 0; i < g->nsrc; i++)
		if (!kube_source_synced(g->srcs[i]))
			return false;
	return true;
}

static void on_deadline(void *arg)
{
	(void)arg;
	loop_quit(0);
}

/* json-c builds and frees a tree of small nodes per object; with glibc's fastbins every later large allocation
 * then consolidates them, which cost half of the CPU of a 10,000-object list (tcache still serves the small
 * allocations). A list page's body (0.6 MiB of 500 VMs) is mapped and unmapped on its own: glibc's threshold would
 * otherwise rise to the first page freed and put the next ones in the heap, where a realloc copies and the freed
 * pages stay (0.5-0.7 MiB of the peak of -o json at 10,000 VMs, varying from run to run). */
static void malloc_tune(void)
{
	mallopt(M_MXFAST, 0);
	mallopt(M_MMAP_THRESHOLD, 128 * 1024);
}

int cmd_get(int argc, char **argv)
{
	struct get_ctx g = { .watch_for = -1, .timeout = GET_TIMEOUT_S };
	struct get_args a = { 0 };
	char *selector = NULL;
	int rc = EXIT_OK;
	buf_init(&a.sel);
	if (parse_args(argc, argv, &g, &a) < 0) {
		get_args_free(&a);
		return EXIT_USAGE;
	}
	struct kvcon_opts *o = opts_global();
	a.ko.watch = g.watch;
	a.ko.watch_for = g.watch_for;
	if (!use_store(&g, &a) && g.watch && (a.ko.nkinds > 1 || a.ko.nnames > 0)) {
		log_eprintf("error: -w watches one kind (no names)\n");
		get_args_free(&a);
		return EXIT_USAGE;
	}
	if (!use_store(&g, &a)) {
		if (o->log)
			log_open(o->log);
		log_set_stderr_level(o->verbose ? LOG_INFO : LOG_ERROR + 1);
		malloc_tune();
		loop_init();
		if (g.watch_for >= 0 && !g.watch) {
			/* --watch-for without -w: the state once its seconds have passed, in any format (the store's
			 * forms apply the watch's events; the API's own objects are listed then) */
			uint64_t end = util_now_ms() + (uint64_t)g.watch_for * 1000;
			while (util_now_ms() < end && !loop_quitting()) {
				uint64_t left = end - util_now_ms();
				loop_once(left < 500 ? (int)left : 500);
			}
			a.ko.watch_for = -1;
		}
		rc = run_kget(&a.ko);
		loop_fini();
		get_args_free(&a);
		return rc;
	}
	if (g.kind >= OBJ_KIND_COUNT || a.ko.nkinds > 1 || a.ko.nnames > 0 ||
	    !(a.ko.fmt == KGET_TABLE || a.ko.fmt == KGET_WIDE || a.ko.fmt == KGET_NAME)) {
		log_eprintf("error: -w with a table or names, and --watch-for, take one kind of vm, vmi, pod or event "
			    "(no names)\n");
		get_args_free(&a);
		return EXIT_USAGE;
	}
	selector = a.ko.selector ? xstrdup(a.ko.selector) : NULL;
	get_args_free(&a);
	g.all_ns = o->all_ns;
	if (o->log)
		log_open(o->log);
	log_set_stderr_level(o->verbose ? LOG_INFO : LOG_ERROR + 1);
	malloc_tune();
	loop_init();
	g.st = store_new();
	unsigned mask = KUBE_KIND_BIT(g.kind);
	if (g.kind == OBJ_POD && (g.fmt == OUT_TABLE || g.fmt == OUT_WIDE))
		mask |= KUBE_KIND_BIT(OBJ_VMI); /* the VMI column names the owner */
	/* names: the objects' identity is all that is printed */
	struct kube_open_opts ko = { .kinds = mask, .selector = selector, .selector_kinds = KUBE_KIND_BIT(g.kind),
				     .max_failures = CLI_MAX_FAILURES, .identity_only = g.fmt == OUT_NAME,
				     .no_version = true };
	char *err = NULL;
	/* a watch takes the engine's objects from its service; a cluster beside it when there is one */
	char *sock = NULL;
	if (g.watch || g.watch_for >= 0) {
		sock = engine_watch_socket(&rc);
		if (rc != EXIT_OK)
			goto out;
	}
	struct connect_plan p = plan();
	if (p.kube && !(sock && p.kube_optional)) {
		g.srcs[g.nsrc] = kube_open_ex(g.st, NULL, &ko, &err);
		if (g.srcs[g.nsrc] == NULL) {
			char *e = util_escape_display(err);
			log_eprintf("error: %s\n", e);
			free(e);
			free(err);
			rc = EXIT_API;
			goto out;
		}
		g.nsrc++;
	}
	if (sock) {
		g.srcs[g.nsrc] = session_service_source(g.st, sock, &ko, &err);
		if (g.srcs[g.nsrc] == NULL) {
			char *e = util_escape_display(err);
			log_eprintf("error: the engine service: %s\n", e);
			free(e);
			free(err);
			rc = EXIT_API;
			goto out;
		}
		session_service_status(g.srcs[g.nsrc], sock); /* its Degraded condition, said below */
		g.nsrc++;
	}
	const char *msg = NULL;
	uint64_t give_up = util_now_ms() + (uint64_t)g.timeout * 1000;
	while (!synced(&g)) {
		if (util_now_ms() >= give_up) {
			const char *why = "the lists are not complete";
			for (int i = 0; i < g.nsrc; i++)
				for (int k = 0; k < OBJ_KIND_COUNT; k++)
					if ((mask & KUBE_KIND_BIT(k)) && g.srcs[i]->health[k].message)
						why = g.srcs[i]->health[k].message;
			log_eprintf("error: gave up after %ld s: %s\n", g.timeout, why);
			rc = EXIT_API;
			goto out;
		}
		if (failed(&g, mask, &msg)) {
			char *e = util_escape_display(msg);
			log_eprintf("error: %s\n", e);
			free(e);
			rc = EXIT_API;
			goto out;
		}
		loop_once(200);
	}
	for (int i = 0; i < g.nsrc; i++)
		if (g.srcs[i]->notice && g.srcs[i]->engine && !util_has_prefix(g.srcs[i]->notice, SESSION_DEGRADED)) {
			session_notice_once(g.srcs[i]); /* the engine host's (KVM, TCG): once a boot */
		} else if (g.srcs[i]->notice) {
			char *e = util_escape_display(g.srcs[i]->notice);
			log_eprintf("error: %s\n", e);
			free(e);
		}
	if (g.watch_for < 0 && !g.watch) {
		print_store(&g);
		goto out;
	}
	if (g.watch) {
		print_store(&g);
		store_listen(g.st, on_change, &g);
	}
	if (g.watch_for >= 0)
		loop_timer_add((uint64_t)g.watch_for * 1000, on_deadline, NULL);
	loop_run();
	if (!g.watch) {
		print_store(&g);
		if (failed(&g, mask, &msg)) {
			char *e = util_escape_display(msg);
			log_eprintf("error: the watch ended in error: %s\n", e);
			free(e);
			rc = EXIT_API;
		}
	}
out:
	source_free_all();
	store_free(g.st);
	loop_fini();
	free(selector);
	free(sock);
	return rc;
}
