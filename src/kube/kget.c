/* kget: kubectl's output contract over the API's own objects (see kget.h). Pages are fetched one at a time
 * (limit=500, continue) on the loop; json/yaml/name stream each page's items as they arrive, the other formats
 * keep what they need (rows, or the items for jsonpath and --sort-by). */
#include "kube/kget.h"

#include <curl/curl.h>
#include <json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/jout.h"
#include "core/jsonpath.h"
#include "core/log.h"
#include "core/loop.h"
#include "core/opts.h"
#include "core/util.h"
#include "core/xmalloc.h"
#include "kube/http.h"
#include "kube/jprune.h"
#include "kube/jv.h"
#include "kube/kubeconfig.h"
#include "model/columns.h"
#include "model/registry.h"

#define PAGE_LIMIT 500
#define TABLE_ACCEPT "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"

/* --- state ---------------------------------------------------------------------------------------------- */

struct row {
	char **cells;      /* final cells, every column of the printed table */
	char *id;          /* NAMESPACE/NAME, for the SOURCE column (owned) */
	char *src;         /* the source's name (owned) */
	struct json_object *key; /* --sort-by value (owned ref), NULL when absent */
	size_t seq;
};

struct kg {
	const struct kget_opts *o;
	struct kube_config *kc;
	struct kube_http *http;
	const char *ns;     /* NULL with -A */
	bool all_ns;
	struct jsonpath *jp;       /* -o jsonpath */
	struct jsonpath *sort_jp;  /* --sort-by */
	struct jsonpath **cc_jp;   /* custom-columns */
	char **cc_head;
	int ncc;
	bool single;        /* one kind, one name: the object itself, not a List */
	bool prefix_kind;   /* several kinds: NAME as kind.group/name */
	size_t found;       /* objects printed or kept */
	int rc;
	bool streamed_open; /* the List's head was printed */
	struct jout_ylist *ylist;  /* -o yaml's List being written */
	bool watching;      /* -w: each object on its own, as it comes */
	char *rv;           /* the list's resourceVersion, then the last event's */
	struct json_object *items; /* kept items (jsonpath, --sort-by on json/yaml/name/custom-columns) */
	/* table of the current kind */
	struct row *rows;
	size_t nrows;
	char **head;
	int ncols;
	int tables_printed;
	struct buf out;
	struct jv_arena *arena; /* a list page's envelope, then its items one at a time */
	const char *row_src; /* the source of the rows table_page adds (NULL: the cluster) */
	bool extra_rows;     /* the current table has rows of another source */
};

static void flush_out(struct kg *g)
{
	if (g->out.len)
		fwrite(g->out.data, 1, g->out.len, stdout);
	buf_reset(&g->out);
}

/* --- HTTP ------------------------------------------------------------------------------------------------- */

struct fetch {
	bool done;
	long status;
	long retry_after;
	char *error;   /* message of a failure */
	char *reason;  /* the Status reason (NotFound, Forbidden, ...) */
	struct buf body;
};

static void fetch_done(void *arg, const struct kube_resp *r)
{
	struct fetch *f = arg;
	f->done = true;
	f->status = r->status;
	f->retry_after = r->retry_after;
	if (r->status >= 200 && r->status < 300) {
		/* a list page's body moved, not copied (two of them at once were a third of the peak) */
		buf_free(&f->body);
		if (r->collected && r->collected->data && r->body == r->collected->data) {
			f->body = *r->collected;
			buf_init(r->collected);
		} else {
			buf_add(&f->body, r->body ? r->body : "", r->len);
		}
		return;
	}
	f->error = kube_http_error_message(r);
	if (r->body && r->len) {
		struct json_object *j = json_tokener_parse(r->body);
		struct json_object *v;
		if (j && json_object_object_get_ex(j, "reason", &v) && json_object_is_type(v, json_type_string))
			f->reason = xstrdup(json_object_get_string(v));
		json_object_put(j);
	}
}

static void fetch_reset(struct fetch *f)
{
	free(f->error);
	free(f->reason);
	buf_free(&f->body);
	memset(f, 0, sizeof *f);
}

static struct kube_req *fetch_start(struct kg *g, const char *path, const char *accept, struct fetch *f)
{
	fetch_reset(f);
	struct kube_http_req q = { .path = path, .accept = accept, .timeout_ms = 60000, .on_done = fetch_done, .arg = f };
	return kube_http_start(g->http, &q);
}

/* GET path, retrying transport failures, 429 and 5xx until the deadline. Returns the final status (0: none).
 * started: the first attempt, already under way into f (the next page, fetched while this one prints). */
static long fetch_ex(struct kg *g, const char *path, const char *accept, struct fetch *f, uint64_t deadline,
		     struct kube_req *started)
{
	for (int attempt = 1;; attempt++) {
		struct kube_req *req = attempt == 1 && started ? started : fetch_start(g, path, accept, f);
		while (!f->done) {
			if (util_now_ms() >= deadline) {
				kube_http_cancel(req);
				f->done = true;
				f->status = 0;
				f->error = xasprintf("gave up after %ld s", g->o->timeout);
				return 0;
			}
			loop_once(200);
		}
		bool transient = f->status == 0 || f->status == 429 || f->status >= 500;
		if (!transient || util_now_ms() >= deadline)
			return f->status;
		char *url = kube_http_url(g->http, path);
		if (f->status)
			log_eprintf("kvcon: retrying: %ld from %s (%d): %s\n", f->status, url, attempt, f->error ? f->error : "");
		else
			log_eprintf("kvcon: retrying: no answer from %s (%d): %s\n", url, attempt, f->error ? f->error : "");
		free(url);
		uint64_t ms = f->retry_after > 0 ? (uint64_t)f->retry_after * 1000 : 250u << (attempt < 5 ? attempt : 5);
		uint64_t until = util_now_ms() + ms;
		if (until > deadline)
			until = deadline;
		while (util_now_ms() < until)
			loop_once((int)(until - util_now_ms()));
	}
}

static long fetch(struct kg *g, const char *path, const char *accept, struct fetch *f, uint64_t deadline)
{
	return fetch_ex(g, path, accept, f, deadline, NULL);
}

static char *esc(const char *s)
{
	return util_escape_display(s ? s : "");
}

static void report_error(struct kg *g, const struct fetch *f)
{
	char *m = esc(f->error ? f->error : "request failed");
	if (f->reason)
		log_eprintf("error: %s (%s)\n", m, f->reason);
	else
		log_eprintf("error: %s\n", m);
	free(m);
	g->rc = EXIT_API;
}

static char *api_path(struct kg *g, const struct kind_def *k, const char *name)
{
	struct buf b;
	buf_init(&b);
	buf_add_str(&b, k->base);
	if (k->namespaced && g->ns) {
		char *e = curl_easy_escape(NULL, g->ns, 0);
		buf_printf(&b, "/namespaces/%s", e);
		curl_free(e);
	}
	buf_printf(&b, "/%s", k->plural);
	if (name) {
		char *e = curl_easy_escape(NULL, name, 0);
		buf_printf(&b, "/%s", e);
		curl_free(e);
	}
	buf_add(&b, "", 0);
	return buf_steal(&b);
}

/* --- values ---------------------------------------------------------------------------------------------- */

static const char *jstr(struct json_object *j, const char *k1, const char *k2)
{
	struct json_object *v;
	if (j == NULL || !json_object_object_get_ex(j, k1, &v))
		return NULL;
	if (k2 && (v == NULL || !json_object_object_get_ex(v, k2, &v)))
		return NULL;
	return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

static void name_prefix(const struct kind_def *k, struct buf *b)
{
	buf_add_str(b, k->singular);
	if (*k->group)
		buf_printf(b, ".%s", k->group);
	buf_add_char(b, '/');
}

/* The list items carry no apiVersion/kind for built-in kinds; kubectl prints them with both. */
static void complete_item(const struct kind_def *k, struct json_object *it)
{
	if (!json_object_is_type(it, json_type_object))
		return;
	if (!json_object_object_get_ex(it, "apiVersion", NULL)) {
		char *av = *k->group ? xasprintf("%s/%s", k->group, k->version) : xstrdup(k->version);
		json_object_object_add(it, "apiVersion", json_object_new_string(av));
		free(av);
	}
	if (!json_object_object_get_ex(it, "kind", NULL))
		json_object_object_add(it, "kind", json_object_new_string(k->kind));
}

static int key_cmp(struct json_object *x, struct json_object *y)
{
	if (x == NULL || y == NULL)
		return x ? 1 : y ? -1 : 0;
	json_type tx = json_object_get_type(x), ty = json_object_get_type(y);
	bool nx = tx == json_type_int || tx == json_type_double, ny = ty == json_type_int || ty == json_type_double;
	if (nx && ny) {
		if (tx == json_type_int && ty == json_type_int) {
			int64_t a = json_object_get_int64(x), b = json_object_get_int64(y);
			return a < b ? -1 : a > b;
		}
		double a = json_object_get_double(x), b = json_object_get_double(y);
		return a < b ? -1 : a > b;
	}
	if (tx == json_type_string && ty == json_type_string)
		return strcmp(json_object_get_string(x), json_object_get_string(y)); /* kubectl: byte order */
	if (tx != ty)
		return tx < ty ? -1 : 1;
	struct buf a, b;
	buf_init(&a);
	buf_init(&b);
	jout_json(&a, x, 0, 0);
	jout_json(&b, y, 0, 0);
	buf_add(&a, "", 0);
	buf_add(&b, "", 0);
	int c = strcmp(a.data, b.data);
	buf_free(&a);
	buf_free(&b);
	return c;
}

static struct json_object *sort_key(struct kg *g, struct json_object *obj)
{
	if (g->sort_jp == NULL || obj == NULL)
		return NULL;
	struct json_object *v[1];
	if (jsonpath_values(g->sort_jp, obj, v, 1) == 0 || v[0] == NULL)
		return NULL;
	return json_object_get(v[0]);
}

static int row_cmp(const void *a, const void *b)
{
	const struct row *x = a, *y = b;
	int c = key_cmp(x->key, y->key);
	return c ? c : (x->seq < y->seq ? -1 : x->seq > y->seq);
}

/* --- tables ----------------------------------------------------------------------------------------------- */

static size_t width_of(const char *s)
{
	size_t w = 0;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		w += (*p & 0xc0) != 0x80;
	return w;
}

/* Go's text/tabwriter as kubectl sets it up (minwidth 6, padding 3, the last cell not padded). */
static void print_grid(struct kg *g, char **head, struct row *rows, size_t n, int ncols)
{
	size_t *w = xcalloc((size_t)ncols, sizeof *w);
	for (int c = 0; c < ncols; c++) {
		if (head)
			w[c] = width_of(head[c]);
		for (size_t r = 0; r < n; r++) {
			size_t x = width_of(rows[r].cells[c]);
			if (x > w[c])
				w[c] = x;
		}
		w[c] = w[c] + 3 < 6 ? 6 : w[c] + 3;
	}
	for (size_t r = 0; r < n + (head ? 1 : 0); r++) {
		char **cells = head ? (r == 0 ? head : rows[r - 1].cells) : rows[r].cells;
		for (int c = 0; c < ncols; c++) {
			buf_add_str(&g->out, cells[c]);
			if (c + 1 < ncols)
				for (size_t k = width_of(cells[c]); k < w[c]; k++)
					buf_add_char(&g->out, ' ');
		}
		buf_add_char(&g->out, '\n');
		if (g->out.len > 65536)
			flush_out(g);
	}
	flush_out(g);
	free(w);
}

static void rows_free(struct kg *g)
{
	for (size_t r = 0; r < g->nrows; r++) {
		for (int c = 0; c < g->ncols; c++)
			free(g->rows[r].cells[c]);
		free(g->rows[r].cells);
		free(g->rows[r].id);
		free(g->rows[r].src);
		json_object_put(g->rows[r].key);
	}
	free(g->rows);
	g->rows = NULL;
	g->nrows = 0;
	if (g->head)
		for (int c = 0; c < g->ncols; c++)
			free(g->head[c]);
	free(g->head);
	g->head = NULL;
	g->ncols = 0;
	g->extra_rows = false;
}

static int id_cmp(const void *a, const void *b)
{
	const struct row *const *x = a, *const *y = b;
	return strcmp((*x)->id ? (*x)->id : "", (*y)->id ? (*y)->id : "");
}

/* A name listed by two sources (a cluster and an engine host, say): the table gets a last SOURCE column. */
static void source_column(struct kg *g)
{
	if (!g->extra_rows || g->nrows < 2)
		return;
	struct row **by = xcalloc(g->nrows, sizeof *by);
	for (size_t r = 0; r < g->nrows; r++)
		by[r] = &g->rows[r];
	qsort(by, g->nrows, sizeof *by, id_cmp);
	bool dup = false;
	for (size_t r = 1; r < g->nrows && !dup; r++)
		dup = by[r]->id && by[r - 1]->id && strcmp(by[r]->id, by[r - 1]->id) == 0;
	free(by);
	if (!dup)
		return;
	for (size_t r = 0; r < g->nrows; r++) {
		g->rows[r].cells = xreallocarray(g->rows[r].cells, (size_t)g->ncols + 1, sizeof *g->rows[r].cells);
		g->rows[r].cells[g->ncols] = esc(g->rows[r].src ? g->rows[r].src : "");
	}
	if (g->head) {
		g->head = xreallocarray(g->head, (size_t)g->ncols + 1, sizeof *g->head);
		g->head[g->ncols] = xstrdup("SOURCE");
	}
	g->ncols++;
}

static void flush_table(struct kg *g)
{
	if (g->nrows == 0) {
		rows_free(g);
		return;
	}
	source_column(g);
	if (g->sort_jp)
		qsort(g->rows, g->nrows, sizeof *g->rows, row_cmp);
	if (g->tables_printed++ > 0)
		fputc('\n', stdout);
	print_grid(g, g->o->no_headers ? NULL : g->head, g->rows, g->nrows, g->ncols);
	rows_free(g);
}

static char *upper(const char *s)
{
	char *u = xstrdup(s);
	for (char *p = u; *p; p++)
		if (*p >= 'a' && *p <= 'z')
			*p = (char)(*p - 'a' + 'A');
	return u;
}

static void add_row(struct kg *g, char **cells, struct json_object *key)
{
	g->rows = xreallocarray(g->rows, g->nrows + 1, sizeof *g->rows);
	g->rows[g->nrows] = (struct row){ .cells = cells, .key = key, .seq = g->nrows };
	g->nrows++;
}

static char *labels_text(struct json_object *md)
{
	struct json_object *l;
	if (md == NULL || !json_object_object_get_ex(md, "labels", &l) || !json_object_is_type(l, json_type_object) ||
	    json_object_object_length(l) == 0)
		return xstrdup("<none>");
	struct json_object *keys = json_object_new_array();
	json_object_object_foreach(l, k, v)
	{
		(void)v;
		json_object_array_add(keys, json_object_new_string(k));
	}
	size_t n = json_object_array_length(keys);
	const char **ks = xcalloc(n, sizeof *ks);
	for (size_t i = 0; i < n; i++)
		ks[i] = json_object_get_string(json_object_array_get_idx(keys, i));
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && strcmp(ks[j - 1], ks[j]) > 0; j--) {
			const char *t = ks[j];
			ks[j] = ks[j - 1];
			ks[j - 1] = t;
		}
	struct buf b;
	buf_init(&b);
	for (size_t i = 0; i < n; i++) {
		const char *lv = jstr(l, ks[i], NULL);
		buf_printf(&b, "%s%s=%s", i ? "," : "", ks[i], lv ? lv : "");
	}
	buf_add(&b, "", 0);
	free(ks);
	json_object_put(keys);
	char *e = esc(b.data);
	buf_free(&b);
	return e;
}

static char *label_value(struct json_object *md, const char *key)
{
	struct json_object *l;
	if (md && json_object_object_get_ex(md, "labels", &l))
		return esc(jstr(l, key, NULL));
	return xstrdup("");
}

static char *cell_text(struct json_object *c)
{
	if (c == NULL)
		return xstrdup("");
	if (json_object_is_type(c, json_type_string))
		return esc(json_object_get_string(c));
	struct buf b;
	buf_init(&b);
	jsonpath_value_text(&b, c, NULL);
	buf_add(&b, "", 0);
	char *e = esc(b.data);
	buf_free(&b);
	return e;
}

/* One page of a server-side Table. */
static void table_page(struct kg *g, const struct kind_def *k, struct json_object *t)
{
	struct json_object *defs, *rows;
	if (!json_object_object_get_ex(t, "columnDefinitions", &defs) || !json_object_object_get_ex(t, "rows", &rows) ||
	    !json_object_is_type(defs, json_type_array) || !json_object_is_type(rows, json_type_array))
		return;
	size_t nd = json_object_array_length(defs);
	bool wide = g->o->fmt == KGET_WIDE;
	int name_col = -1;
	if (g->head == NULL) {
		int n = 0;
		g->head = xcalloc(nd + (size_t)g->o->nlabel_cols + 3, sizeof *g->head);
		if (g->all_ns && k->namespaced)
			g->head[n++] = xstrdup("NAMESPACE");
		for (size_t i = 0; i < nd; i++) {
			struct json_object *d = json_object_array_get_idx(defs, i), *pr;
			if (!wide && json_object_object_get_ex(d, "priority", &pr) && json_object_get_int(pr) != 0)
				continue;
			g->head[n++] = upper(jstr(d, "name", NULL) ? jstr(d, "name", NULL) : "");
		}
		for (int i = 0; i < g->o->nlabel_cols; i++) {
			const char *lk = g->o->label_cols[i], *sl = strrchr(lk, '/');
			g->head[n++] = upper(sl ? sl + 1 : lk);
		}
		if (g->o->show_labels)
			g->head[n++] = xstrdup("LABELS");
		g->ncols = n;
	}
	for (size_t i = 0; i < nd; i++) {
		const char *f = jstr(json_object_array_get_idx(defs, i), "format", NULL);
		if (f && strcmp(f, "name") == 0) {
			name_col = (int)i;
			break;
		}
	}
	size_t nr = json_object_array_length(rows);
	for (size_t r = 0; r < nr; r++) {
		struct json_object *row = json_object_array_get_idx(rows, r), *cells, *obj = NULL, *md = NULL;
		if (!json_object_object_get_ex(row, "cells", &cells) || !json_object_is_type(cells, json_type_array))
			continue;
		json_object_object_get_ex(row, "object", &obj);
		if (obj)
			json_object_object_get_ex(obj, "metadata", &md);
		char **out = xcalloc((size_t)g->ncols, sizeof *out);
		int n = 0;
		if (g->all_ns && k->namespaced)
			out[n++] = esc(jstr(md, "namespace", NULL));
		for (size_t i = 0; i < nd && n < g->ncols; i++) {
			struct json_object *d = json_object_array_get_idx(defs, i), *pr;
			if (!wide && json_object_object_get_ex(d, "priority", &pr) && json_object_get_int(pr) != 0)
				continue;
			char *c = cell_text(json_object_array_get_idx(cells, i));
			if ((int)i == name_col && g->prefix_kind) {
				struct buf b;
				buf_init(&b);
				name_prefix(k, &b);
				buf_add_str(&b, c);
				free(c);
				c = buf_steal(&b);
			}
			out[n++] = c;
		}
		for (int i = 0; i < g->o->nlabel_cols && n < g->ncols; i++)
			out[n++] = label_value(md, g->o->label_cols[i]);
		if (g->o->show_labels && n < g->ncols)
			out[n++] = labels_text(md);
		while (n < g->ncols)
			out[n++] = xstrdup("");
		add_row(g, out, sort_key(g, obj));
		struct row *added = &g->rows[g->nrows - 1];
		const char *rns = jstr(md, "namespace", NULL);
		struct json_object *nc = name_col >= 0 ? json_object_array_get_idx(cells, (size_t)name_col) : NULL;
		added->id = xasprintf("%s/%s", rns ? rns : g->ns ? g->ns : "", nc ? json_object_get_string(nc) : "");
		added->src = g->row_src ? xstrdup(g->row_src) : g->kc ? xstrdup(g->kc->context) : NULL;
		g->found++;
	}
}

/* --- objects --------------------------------------------------------------------------------------------- */

static void list_head(struct kg *g)
{
	if (g->streamed_open)
		return;
	g->streamed_open = true;
	if (g->o->fmt == KGET_JSON)
		buf_add_str(&g->out, "{\n    \"apiVersion\": \"v1\",\n    \"items\": [");
	else if (g->o->fmt == KGET_YAML)
		g->ylist = jout_yaml_list_begin(&g->out);
}

static void list_tail(struct kg *g)
{
	if (g->o->fmt == KGET_JSON) {
		if (!g->streamed_open)
			buf_add_str(&g->out, "{\n    \"apiVersion\": \"v1\",\n    \"items\": [],\n");
		else
			buf_add_str(&g->out, g->found ? "\n    ],\n" : "],\n");
		buf_add_str(&g->out, "    \"kind\": \"List\",\n    \"metadata\": {\n        \"resourceVersion\": \"\"\n    }\n}\n");
	} else if (g->o->fmt == KGET_YAML) {
		list_head(g);
		if (g->ylist)
			jout_yaml_list_end(g->ylist);
		g->ylist = NULL;
	}
	flush_out(g);
}

/* fmt.Sprint of a decoded JSON value, as kubectl's custom-columns prints it: map[k:v ...] (sorted keys),
 * [a b], <nil>. */
static void go_sprint(struct buf *b, struct json_object *v, int depth)
{
	if (v == NULL) {
		buf_add_str(b, "<nil>");
		return;
	}
	if (depth > 64)
		return;
	if (json_object_is_type(v, json_type_array)) {
		buf_add_char(b, '[');
		for (size_t i = 0; i < json_object_array_length(v); i++) {
			if (i)
				buf_add_char(b, ' ');
			go_sprint(b, json_object_array_get_idx(v, i), depth + 1);
		}
		buf_add_char(b, ']');
	} else if (json_object_is_type(v, json_type_object)) {
		size_t n = (size_t)json_object_object_length(v), k = 0;
		const char **keys = xcalloc(n ? n : 1, sizeof *keys);
		json_object_object_foreach(v, key, val)
		{
			(void)val;
			keys[k++] = key;
		}
		for (size_t i = 1; i < k; i++)
			for (size_t j = i; j > 0 && strcmp(keys[j - 1], keys[j]) > 0; j--) {
				const char *t = keys[j];
				keys[j] = keys[j - 1];
				keys[j - 1] = t;
			}
		buf_add_str(b, "map[");
		for (size_t i = 0; i < k; i++) {
			buf_printf(b, "%s%s:", i ? " " : "", keys[i]);
			go_sprint(b, json_object_object_get(v, keys[i]), depth + 1);
		}
		buf_add_char(b, ']');
		free(keys);
	} else {
		jsonpath_value_text(b, v, NULL);
	}
}

static void custom_row(struct kg *g, struct json_object *it)
{
	char **cells = xcalloc((size_t)g->ncc, sizeof *cells);
	struct json_object *vals[64];
	for (int c = 0; c < g->ncc; c++) {
		size_t n = jsonpath_values(g->cc_jp[c], it, vals, 64);
		struct buf b;
		buf_init(&b);
		if (n == 0)
			buf_add_str(&b, "<none>");
		for (size_t i = 0; i < n && i < 64; i++) {
			if (i)
				buf_add_char(&b, ',');
			go_sprint(&b, vals[i], 0);
		}
		buf_add(&b, "", 0);
		cells[c] = esc(b.data);
		buf_free(&b);
	}
	g->ncols = g->ncc;
	add_row(g, cells, NULL);
}

static void jsonpath_failed(struct kg *g, const char *err)
{
	char *t = esc(g->o->fmt_arg), *e = esc(err);
	log_eprintf("error: error executing jsonpath \"%s\": Error executing template: %s\n", t, e);
	free(t);
	free(e);
	g->rc = EXIT_API;
}

/* One object in the chosen format (items kept for jsonpath/--sort-by are printed at the end). */
static void emit_item(struct kg *g, const struct kind_def *k, struct json_object *it)
{
	complete_item(k, it);
	enum kget_fmt f = g->o->fmt;
	if (g->watching && f == KGET_JSONPATH) {
		char *err = NULL;
		if (jsonpath_print(g->jp, it, &g->out, jout_text, &err) < 0)
			jsonpath_failed(g, err);
		free(err);
		g->found++;
		flush_out(g);
		return;
	}
	if (g->watching && f == KGET_CUSTOM) {
		custom_row(g, it);
		print_grid(g, g->o->no_headers || g->found ? NULL : g->cc_head, g->rows, g->nrows, g->ncc);
		rows_free(g);
		g->found++;
		return;
	}
	if (g->watching && f == KGET_YAML && g->found)
		buf_add_str(&g->out, "---\n");
	if (f == KGET_JSONPATH || (g->sort_jp && f != KGET_CUSTOM)) {
		json_object_array_add(g->items, json_object_get(it));
		g->found++;
		return;
	}
	if (f == KGET_CUSTOM) {
		custom_row(g, it);
		g->rows[g->nrows - 1].key = sort_key(g, it);
		g->found++;
		return;
	}
	if (f == KGET_NAME) {
		name_prefix(k, &g->out);
		char *e = esc(jstr(it, "metadata", "name"));
		buf_add_str(&g->out, e);
		free(e);
		buf_add_char(&g->out, '\n');
	} else if (g->single) {
		if (f == KGET_JSON) {
			jout_json(&g->out, it, 4, 0);
			buf_add_char(&g->out, '\n');
		} else {
			jout_yaml(&g->out, it);
		}
	} else {
		list_head(g);
		if (f == KGET_JSON) {
			buf_add_str(&g->out, g->found ? ",\n        " : "\n        ");
			jout_json(&g->out, it, 4, 8);
		} else if (g->ylist) {
			jout_yaml_list_item(g->ylist, it);
		}
	}
	g->found++;
	if (g->out.len > 65536)
		flush_out(g);
}

/* --- objects of other sources (the engine's) -------------------------------------------------------------- */

/* The Table columns of the kinds another source (the engine) serves: their column tables' (model/columns.c), as
 * the engine service serves them. */
static struct json_object *extra_defs(const struct kind_def *k)
{
	return k->obj >= 0 ? columns_api_defs(columns_table((enum obj_kind)k->obj)) : NULL;
}

/* The other sources' objects of kind k (name: one, NULL: all) into the output. Returns how many. */
static size_t run_extra(struct kg *g, const struct kind_def *k, const char *name)
{
	if (g->o->extra == NULL)
		return 0;
	struct json_object *arr = g->o->extra(g->o->extra_arg, k, g->all_ns ? NULL : g->ns, name);
	size_t n = arr ? json_object_array_length(arr) : 0;
	bool table = g->o->fmt == KGET_TABLE || g->o->fmt == KGET_WIDE;
	struct json_object *defs = table && n ? extra_defs(k) : NULL;
	for (size_t i = 0; i < n; i++) {
		struct json_object *e = json_object_array_get_idx(arr, i), *obj = NULL, *cells = NULL;
		json_object_object_get_ex(e, "object", &obj);
		json_object_object_get_ex(e, "cells", &cells);
		if (obj == NULL)
			continue;
		if (!table) {
			emit_item(g, k, obj);
			continue;
		}
		if (defs == NULL || cells == NULL)
			continue;
		/* one row of a Table, as a server would send it */
		struct json_object *t = json_object_new_object(), *rows = json_object_new_array(),
				   *row = json_object_new_object();
		json_object_object_add(t, "columnDefinitions", json_object_get(defs));
		json_object_object_add(row, "cells", json_object_get(cells));
		json_object_object_add(row, "object", json_object_get(obj));
		json_object_array_add(rows, row);
		json_object_object_add(t, "rows", rows);
		g->row_src = jstr(e, "source", NULL);
		g->extra_rows = true;
		table_page(g, k, t);
		g->row_src = NULL;
		json_object_put(t);
	}
	json_object_put(defs);
	json_object_put(arr);
	flush_out(g);
	return n;
}

/* The query's selectors and one more parameter (key=val), each escaped and only when set; q is then a C string. */
static void add_params(struct buf *q, const struct kg *g, const char *key, const char *val)
{
	const char *params[][2] = { { "labelSelector", g->o->selector }, { "fieldSelector", g->o->field_selector },
				    { key, val } };
	for (size_t i = 0; i < 3; i++)
		if (params[i][1] && *params[i][1]) {
			char *e = curl_easy_escape(NULL, params[i][1], 0);
			buf_printf(q, "&%s=%s", params[i][0], e);
			curl_free(e);
		}
	buf_add(q, "", 0);
}

/* The list request of one page (cont: its continue token, NULL for the first). Caller frees. */
static char *list_query(struct kg *g, const char *base, bool table, const char *cont)
{
	struct buf q;
	buf_init(&q);
	buf_printf(&q, "%s?limit=%d", base, PAGE_LIMIT);
	if (table && (g->sort_jp || g->o->nlabel_cols || g->o->show_labels || g->all_ns))
		buf_add_str(&q, g->sort_jp ? "&includeObject=Object" : "&includeObject=Metadata");
	add_params(&q, g, "continue", cont);
	return buf_steal(&q);
}

/* A list page as json-c's tree (json_object_put it), its resourceVersion kept; NULL with the error said. */
static struct json_object *page_parse(struct kg *g, const struct kind_def *k, const struct buf *body)
{
	struct json_tokener *tok = json_tokener_new_ex(JSON_TOKENER_DEFAULT_DEPTH);
	struct json_object *page = json_tokener_parse_ex(tok, body->data ? body->data : "", (int)body->len);
	json_tokener_free(tok);
	if (page == NULL) {
		log_eprintf("error: the server's list of %s is not JSON\n", k->plural);
		g->rc = EXIT_API;
		return NULL;
	}
	const char *prv = jstr(page, "metadata", "resourceVersion");
	if (g->rv == NULL && prv)
		g->rv = xstrdup(prv);
	return page;
}

static const char *jv_text(const struct jv *v)
{
	return jv_is(v, JV_STRING) ? v->u.s : NULL;
}

/* A list page's envelope read by the pruner, the items skipped: its resourceVersion kept and its continue token
 * (*cont, caller frees; NULL when none). False when the pruner refuses the bytes: json-c parses the page. */
static bool page_envelope(struct kg *g, const struct buf *body, char **cont)
{
	struct jv *env = NULL;
	*cont = NULL;
	if (kube_jprune_jv(kube_jprune_list_schema(false), body->data ? body->data : "", body->len, g->arena, &env,
			   NULL, NULL) <= 0 ||
	    !jv_is(env, JV_OBJECT)) {
		jv_arena_reset(g->arena);
		return false;
	}
	struct jv *md = jv_get(env, "metadata");
	const char *prv = jv_text(jv_get(md, "resourceVersion")), *c = jv_text(jv_get(md, "continue"));
	if (g->rv == NULL && prv)
		g->rv = xstrdup(prv);
	if (c)
		*cont = xstrdup(c);
	jv_arena_reset(g->arena);
	return true;
}

struct page_print {
	struct kg *g;
	const struct kind_def *k;
	bool more; /* the next page downloads meanwhile */
	size_t n;  /* items printed */
};

static void page_item(void *arg, struct jv *item)
{
	struct page_print *pp = arg;
	struct json_object *it = jv_to_json(item);
	emit_item(pp->g, pp->k, it);
	json_object_put(it);
	if ((++pp->n & 31) == 0 && pp->more)
		loop_once(0);
}

/* Prints a page's items one at a time as the pruner builds them (each item's tree, then the next's: the page's
 * text and one item in memory, not the page's tree). Where the pruner refuses the bytes (a number json-c reads
 * as a double, say) json-c parses the page and its items not printed yet follow. False when it is not JSON. */
static bool page_items(struct kg *g, const struct kind_def *k, const struct buf *body, bool more)
{
	struct page_print pp = { g, k, more, 0 };
	struct jv *unused = NULL;
	/* names are all -o name prints (--sort-by reads the whole object) */
	const struct kube_jprune_node *schema = g->o->fmt == KGET_NAME && g->sort_jp == NULL ? kube_jprune_names_schema()
											      : kube_jprune_list_schema(true);
	ssize_t n = kube_jprune_jv(schema, body->data ? body->data : "", body->len, g->arena, &unused, page_item, &pp);
	jv_arena_reset(g->arena);
	if (n > 0)
		return true;
	size_t printed = pp.n;
	struct json_object *page = page_parse(g, k, body), *items;
	if (page == NULL)
		return false;
	if (json_object_object_get_ex(page, "items", &items) && json_object_is_type(items, json_type_array))
		for (size_t i = printed; i < json_object_array_length(items); i++)
			emit_item(g, k, json_object_array_get_idx(items, i));
	json_object_put(page);
	return true;
}

/* Lists (or gets) one kind, page by page. */
static void run_kind(struct kg *g, const struct kind_def *k, uint64_t deadline)
{
	bool table = g->o->fmt == KGET_TABLE || g->o->fmt == KGET_WIDE;
	const char *accept = table ? TABLE_ACCEPT : NULL;
	struct fetch f = { 0 };
	if (g->o->nnames > 0) {
		for (int i = 0; i < g->o->nnames; i++) {
			if (g->http == NULL) {
				if (run_extra(g, k, g->o->names[i]) == 0) {
					char *e = esc(g->o->names[i]);
					log_eprintf("Error from server (NotFound): %s%s%s \"%s\" not found\n", k->plural,
						    *k->group ? "." : "", k->group, e);
					free(e);
					g->rc = EXIT_API;
				}
				continue;
			}
			char *p = api_path(g, k, g->o->names[i]);
			char *full = table && g->sort_jp ? xasprintf("%s?includeObject=Object", p) : xstrdup(p);
			long st = fetch(g, full, accept, &f, deadline);
			free(full);
			free(p);
			size_t more = run_extra(g, k, g->o->names[i]);
			if (st == 404 && more > 0) {
				fetch_reset(&f); /* another source has it */
				continue;
			}
			if (st != 200) {
				report_error(g, &f);
				continue;
			}
			struct json_object *j = json_tokener_parse(f.body.data ? f.body.data : "");
			if (j == NULL) {
				log_eprintf("error: the server's answer for %s is not JSON\n", k->plural);
				g->rc = EXIT_API;
				continue;
			}
			if (table)
				table_page(g, k, j);
			else
				emit_item(g, k, j);
			json_object_put(j);
		}
		fetch_reset(&f);
		return;
	}
	if (g->http == NULL) {
		run_extra(g, k, NULL);
		return;
	}
	char *base = api_path(g, k, NULL);
	struct fetch f2 = { 0 };
	struct fetch *cur = &f, *nxt = &f2;
	struct kube_req *started = NULL;
	char *path = list_query(g, base, table, NULL);
	for (;;) {
		long st = fetch_ex(g, path, accept, cur, deadline, started);
		started = NULL;
		if (st != 200) {
			report_error(g, cur);
			break;
		}
		/* the objects' formats print each item as the pruner builds it; tables (and pages the pruner refuses)
		 * go through json-c's tree of the page */
		struct fetch *got = cur;
		struct json_object *page = NULL;
		char *cont = NULL;
		bool streamed = !table && page_envelope(g, &got->body, &cont);
		if (!streamed) {
			page = page_parse(g, k, &got->body);
			if (page == NULL)
				break;
			const char *c = jstr(page, "metadata", "continue");
			cont = c ? xstrdup(c) : NULL;
		}
		bool more = cont && *cont;
		if (more) {
			/* the next page downloads while this one prints */
			free(path);
			path = list_query(g, base, table, cont);
			started = fetch_start(g, path, accept, nxt);
			cur = nxt;
			nxt = got;
		}
		free(cont);
		if (streamed) {
			bool ok = page_items(g, k, &got->body, more);
			fetch_reset(got);
			if (!ok)
				break;
		} else {
			fetch_reset(got);
			if (table) {
				table_page(g, k, page);
			} else {
				struct json_object *items;
				if (json_object_object_get_ex(page, "items", &items) &&
				    json_object_is_type(items, json_type_array))
					for (size_t i = 0; i < json_object_array_length(items); i++) {
						emit_item(g, k, json_object_array_get_idx(items, i));
						if (more && (i & 31) == 31)
							loop_once(0);
					}
			}
			json_object_put(page);
		}
		flush_out(g);
		if (!more)
			break;
	}
	if (started && !cur->done)
		kube_http_cancel(started); /* a page that failed to print while the next one came */
	free(path);
	fetch_reset(nxt);
	free(base);
	fetch_reset(&f);
	run_extra(g, k, NULL);
}

/* --- -w ------------------------------------------------------------------------------------------------ */

struct wstate {
	struct kg *g;
	const struct kind_def *k;
	struct kube_http *http; /* the server watched */
	char **rv;              /* its last resourceVersion */
	struct kube_req *req;
	struct buf line;
	bool ended;
	uint64_t again_at;      /* the server closed the watch: when to start it again */
	char *err;
};

static void w_line(struct wstate *w, const char *s, size_t len)
{
	struct json_tokener *tok = json_tokener_new_ex(JSON_TOKENER_DEFAULT_DEPTH);
	struct json_object *ev = json_tokener_parse_ex(tok, s, (int)len);
	json_tokener_free(tok);
	struct json_object *obj;
	const char *type = jstr(ev, "type", NULL);
	if (ev == NULL || type == NULL || !json_object_object_get_ex(ev, "object", &obj) || obj == NULL) {
		json_object_put(ev);
		return;
	}
	if (strcmp(type, "ERROR") == 0) {
		if (w->err == NULL)
			w->err = xstrdup(jstr(obj, "message", NULL) ? jstr(obj, "message", NULL) : "the watch ended in error");
	} else {
		const char *rv = jstr(obj, "metadata", "resourceVersion");
		if (rv) {
			free(*w->rv);
			*w->rv = xstrdup(rv);
		}
		if (strcmp(type, "BOOKMARK") != 0)
			emit_item(w->g, w->k, obj);
		flush_out(w->g);
		fflush(stdout);
	}
	json_object_put(ev);
}

static bool w_chunk(void *arg, const char *data, size_t len)
{
	struct wstate *w = arg;
	buf_add(&w->line, data, len);
	size_t start = 0;
	for (size_t i = 0; i < w->line.len; i++)
		if (w->line.data[i] == '\n') {
			if (i > start)
				w_line(w, w->line.data + start, i - start);
			start = i + 1;
		}
	buf_consume(&w->line, start);
	return w->err == NULL;
}

static void w_done(void *arg, const struct kube_resp *r)
{
	struct wstate *w = arg;
	w->ended = true;
	w->req = NULL;
	if (w->err == NULL && !r->aborted && (r->status < 200 || r->status >= 300) && r->status != 0) {
		w->err = kube_http_error_message(r);
	}
}

static void w_start(struct wstate *w, const char *base)
{
	struct kg *g = w->g;
	buf_reset(&w->line);
	struct buf q;
	buf_init(&q);
	buf_printf(&q, "%s?watch=1&allowWatchBookmarks=true", base);
	add_params(&q, g, "resourceVersion", *w->rv);
	w->ended = false;
	w->again_at = 0;
	struct kube_http_req r = { .path = q.data, .on_chunk = w_chunk, .on_done = w_done, .arg = w };
	w->req = kube_http_start(w->http, &r);
	buf_free(&q);
}

/* Watches one kind on every server (the cluster, the engine service) at once, each from its list's
 * resourceVersion, printing every event's object as it comes, until --watch-for ends or a watch fails (410 Gone
 * included: rc 1). A watch the server closes starts again from its last resourceVersion after a breath. */
static void watch_kind(struct kg *g, const struct kind_def *k, struct kube_http **https, char **rvs, int n)
{
	uint64_t end = g->o->watch_for >= 0 ? util_now_ms() + (uint64_t)g->o->watch_for * 1000 : UINT64_MAX;
	char *base = api_path(g, k, NULL);
	g->watching = true;
	struct wstate *ws = xcalloc((size_t)n, sizeof *ws);
	for (int i = 0; i < n; i++) {
		ws[i] = (struct wstate){ .g = g, .k = k, .http = https[i], .rv = &rvs[i] };
		buf_init(&ws[i].line);
		w_start(&ws[i], base);
	}
	char *err = NULL;
	while (err == NULL && util_now_ms() < end) {
		uint64_t left = end - util_now_ms();
		loop_once(left < 500 ? (int)left : 500);
		for (int i = 0; i < n && err == NULL; i++) {
			struct wstate *w = &ws[i];
			if (w->err) {
				err = w->err;
				w->err = NULL;
			} else if (w->ended && w->again_at == 0) {
				w->again_at = util_now_ms() + 500;
			} else if (w->ended && util_now_ms() >= w->again_at) {
				w_start(w, base);
			}
		}
	}
	for (int i = 0; i < n; i++) {
		if (ws[i].req && !ws[i].ended)
			kube_http_cancel(ws[i].req);
		buf_free(&ws[i].line);
		free(ws[i].err);
	}
	free(ws);
	if (err) {
		char *e = esc(err);
		log_eprintf("error: %s\n", e);
		free(e);
		free(err);
		g->rc = EXIT_API;
	}
	free(base);
}

static int parse_custom(struct kg *g, const char *spec, char **err)
{
	char *s = xstrdup(spec);
	char *save = NULL;
	for (char *part = strtok_r(s, ",", &save); part; part = strtok_r(NULL, ",", &save)) {
		char *colon = strchr(part, ':');
		if (colon == NULL) {
			*err = xasprintf("unexpected custom-columns spec: %s, expected <header>:<json-path-expr>", part);
			free(s);
			return -1;
		}
		*colon = '\0';
		struct jsonpath *jp = jsonpath_parse_relaxed(colon + 1, err);
		if (jp == NULL) {
			free(s);
			return -1;
		}
		g->cc_jp = xreallocarray(g->cc_jp, (size_t)g->ncc + 1, sizeof *g->cc_jp);
		g->cc_head = xreallocarray(g->cc_head, (size_t)g->ncc + 1, sizeof *g->cc_head);
		g->cc_jp[g->ncc] = jp;
		g->cc_head[g->ncc++] = xstrdup(part);
	}
	free(s);
	if (g->ncc == 0) {
		*err = xstrdup("custom-columns format specified but no custom columns given");
		return -1;
	}
	return 0;
}

static void kg_free(struct kg *g)
{
	jsonpath_free(g->jp);
	jsonpath_free(g->sort_jp);
	for (int i = 0; i < g->ncc; i++) {
		jsonpath_free(g->cc_jp[i]);
		free(g->cc_head[i]);
	}
	free(g->cc_jp);
	free(g->cc_head);
	json_object_put(g->items);
	free(g->rv);
	rows_free(g);
	buf_free(&g->out);
	jv_arena_free(g->arena);
}

static int prepare(struct kg *g, const struct kget_opts *o, char **err)
{
	memset(g, 0, sizeof *g);
	g->o = o;
	buf_init(&g->out);
	g->arena = jv_arena_new();
	*err = NULL;
	if (o->fmt == KGET_JSONPATH && (g->jp = jsonpath_parse(o->fmt_arg, err)) == NULL) {
		char *m = xasprintf("error parsing jsonpath %s, %s", o->fmt_arg, *err);
		free(*err);
		*err = m;
		return -1;
	}
	if (o->fmt == KGET_CUSTOM && parse_custom(g, o->fmt_arg, err) < 0)
		return -1;
	if (o->sort_by && *o->sort_by && (g->sort_jp = jsonpath_parse_relaxed(o->sort_by, err)) == NULL) {
		char *m = xasprintf("couldn't parse --sort-by %s: %s", o->sort_by, *err);
		free(*err);
		*err = m;
		return -1;
	}
	return 0;
}

char *kget_check(const struct kget_opts *o)
{
	struct kg g;
	char *err;
	prepare(&g, o, &err);
	kg_free(&g);
	return err;
}

static void print_kept(struct kg *g)
{
	enum kget_fmt f = g->o->fmt;
	size_t n = json_object_array_length(g->items);
	if (g->sort_jp && n > 1) {
		struct row *r = xcalloc(n, sizeof *r);
		for (size_t i = 0; i < n; i++)
			r[i] = (struct row){ .key = sort_key(g, json_object_array_get_idx(g->items, i)), .seq = i };
		qsort(r, n, sizeof *r, row_cmp);
		struct json_object *sorted = json_object_new_array_ext((int)n);
		for (size_t i = 0; i < n; i++) {
			json_object_array_add(sorted, json_object_get(json_object_array_get_idx(g->items, r[i].seq)));
			json_object_put(r[i].key);
		}
		free(r);
		json_object_put(g->items);
		g->items = sorted;
	}
	if (f == KGET_JSONPATH) {
		struct json_object *root;
		if (g->single && n == 1) {
			root = json_object_get(json_object_array_get_idx(g->items, 0));
		} else {
			root = json_object_new_object();
			json_object_object_add(root, "apiVersion", json_object_new_string("v1"));
			json_object_object_add(root, "items", json_object_get(g->items));
			json_object_object_add(root, "kind", json_object_new_string("List"));
			struct json_object *md = json_object_new_object();
			json_object_object_add(md, "resourceVersion", json_object_new_string(""));
			json_object_object_add(root, "metadata", md);
		}
		char *err = NULL;
		if (jsonpath_print(g->jp, root, &g->out, jout_text, &err) < 0)
			jsonpath_failed(g, err);
		free(err);
		json_object_put(root);
		flush_out(g);
		return;
	}
	/* json/yaml/name with --sort-by: print the kept items in order */
	size_t found = g->found;
	g->found = 0;
	struct json_object *items = g->items;
	g->items = NULL;
	const struct kget_opts *o = g->o;
	struct kget_opts plain = *o;
	plain.sort_by = NULL;
	g->o = &plain;
	struct jsonpath *sj = g->sort_jp;
	g->sort_jp = NULL;
	for (size_t i = 0; i < n; i++) {
		struct json_object *it = json_object_array_get_idx(items, i);
		const char *kind = jstr(it, "kind", NULL);
		const struct kind_def *k = registry_kind(KIND_VM);
		for (int x = 0; x < KIND_COUNT; x++)
			if (kind && strcmp(registry_kind((enum kind_id)x)->kind, kind) == 0)
				k = registry_kind((enum kind_id)x);
		emit_item(g, k, it);
	}
	g->sort_jp = sj;
	g->o = o;
	g->found = found;
	g->items = items;
	flush_out(g);
}

int kget_run(const struct kget_opts *o)
{
	struct kg g;
	char *err = NULL;
	if (prepare(&g, o, &err) < 0) {
		log_eprintf("error: %s\n", err);
		free(err);
		kg_free(&g);
		return EXIT_API;
	}
	struct kvcon_opts *go = opts_global();
	const char *want_ns = o->ns_set ? o->ns : go->ns;
	bool want_all = o->ns_set ? o->ns == NULL : go->all_ns;
	if (o->engine_only && o->engine_socket)
		g.kc = kube_config_unix(o->engine_socket, o->engine_name ? o->engine_name : "kvcon-engine", want_ns);
	else
		g.kc = kube_config_load(go->kubeconfig, go->context, &err);
	if (g.kc == NULL && (o->extra || (o->watch && o->engine_socket)) && o->cluster_optional) {
		/* no cluster: the other sources' objects only */
		log_info("get: no kube source (%s)", err);
		free(err);
		err = NULL;
	} else if (g.kc == NULL) {
		log_eprintf("error: %s\n", err);
		free(err);
		kg_free(&g);
		return EXIT_API;
	}
	g.http = g.kc ? kube_http_new(g.kc, &err) : NULL;
	if (g.kc && g.http == NULL) {
		log_eprintf("error: %s\n", err);
		free(err);
		kube_config_free(g.kc);
		kg_free(&g);
		return EXIT_API;
	}
	/* the engine's service is one more server: -w lists and watches through its API, a plain get lists there the
	 * kinds the extra objects lack */
	struct kube_config *ekc = NULL;
	struct kube_http *ehttp = NULL;
	char *erv = NULL;
	if (o->engine_socket && !o->engine_only) {
		ekc = kube_config_unix(o->engine_socket, o->engine_name ? o->engine_name : "kvcon-engine", want_ns);
		ehttp = kube_http_new(ekc, &err);
		if (ehttp == NULL) {
			log_eprintf("error: %s\n", err);
			free(err);
			kube_config_free(ekc);
			kube_http_free(g.http);
			kube_config_free(g.kc);
			kg_free(&g);
			return EXIT_API;
		}
	}
	g.all_ns = want_all && o->nnames == 0;
	g.ns = g.all_ns ? NULL : (want_ns && *want_ns ? want_ns : g.kc ? g.kc->ns : "default");
	g.single = (o->nkinds == 1 && o->nnames == 1) || o->watch;
	g.watching = o->watch; /* the listed objects print one by one too, as kubectl get -w does */
	if (!o->pairs)
		g.prefix_kind = o->nkinds > 1;
	g.items = json_object_new_array();
	uint64_t deadline = util_now_ms() + (uint64_t)(o->timeout > 0 ? o->timeout : 30) * 1000;
	bool table = o->fmt == KGET_TABLE || o->fmt == KGET_WIDE;
	if (o->pairs && table && g.http) {
		/* kubectl prefixes names with their kind only when the objects it got are of several kinds */
		struct json_object **got = xcalloc((size_t)o->nkinds, sizeof *got);
		const struct kind_def *first = NULL;
		for (int i = 0; i < o->nkinds; i++) {
			struct fetch f = { 0 };
			char *p = api_path(&g, o->kinds[i], o->names[i]);
			char *full = g.sort_jp ? xasprintf("%s?includeObject=Object", p) : xstrdup(p);
			if (fetch(&g, full, TABLE_ACCEPT, &f, deadline) == 200)
				got[i] = json_tokener_parse(f.body.data ? f.body.data : "");
			else
				report_error(&g, &f);
			fetch_reset(&f);
			free(full);
			free(p);
			if (got[i] && first == NULL)
				first = o->kinds[i];
			if (got[i] && o->kinds[i] != first)
				g.prefix_kind = true;
		}
		for (int i = 0; i < o->nkinds; i++) {
			if (got[i] == NULL)
				continue;
			table_page(&g, o->kinds[i], got[i]);
			json_object_put(got[i]);
			int n = i + 1;
			while (n < o->nkinds && got[n] == NULL)
				n++;
			if (n >= o->nkinds || o->kinds[n] != o->kinds[i])
				flush_table(&g);
		}
		free(got);
	}
	for (int i = 0; i < o->nkinds && !(o->pairs && table && g.http); i++) {
		struct kget_opts one = *o;
		if (o->pairs) {
			/* KIND/NAME: one get each; a table per run of the same kind */
			one.names = o->names + i;
			one.nnames = 1;
			g.o = &one;
		}
		/* a kind the extra objects lack: the engine service's list (after the cluster's, when there is one) */
		bool eng = ehttp && !o->watch && o->extra_serves && !o->extra_serves(o->kinds[i]);
		if (g.http || !eng)
			run_kind(&g, o->kinds[i], deadline);
		if (eng) {
			struct kube_http *ch = g.http;
			char *crv = g.rv;
			g.http = ehttp;
			g.rv = NULL;
			run_kind(&g, o->kinds[i], deadline);
			free(g.rv);
			g.http = ch;
			g.rv = crv;
		}
		g.o = o;
		if (table && !(o->pairs && i + 1 < o->nkinds && o->kinds[i + 1] == o->kinds[i]))
			flush_table(&g);
	}
	if (ehttp && o->watch && g.rc == 0) {
		/* the engine's list (its own resourceVersion), after the cluster's */
		struct kube_http *ch = g.http;
		char *crv = g.rv;
		g.http = ehttp;
		g.rv = NULL;
		run_kind(&g, o->kinds[0], deadline);
		erv = g.rv;
		g.http = ch;
		g.rv = crv;
	}
	if (o->watch && g.rc == 0 && (g.http || ehttp)) {
		struct kube_http *https[2];
		char *rvs[2];
		int n = 0;
		if (g.http) {
			https[n] = g.http;
			rvs[n++] = g.rv;
			g.rv = NULL;
		}
		if (ehttp) {
			https[n] = ehttp;
			rvs[n++] = erv;
			erv = NULL;
		}
		fflush(stdout);
		watch_kind(&g, o->kinds[0], https, rvs, n);
		for (int i = 0; i < n; i++)
			free(rvs[i]);
	}
	free(erv);
	if (o->fmt == KGET_CUSTOM && g.nrows && !o->watch) {
		if (g.sort_jp)
			qsort(g.rows, g.nrows, sizeof *g.rows, row_cmp);
		print_grid(&g, o->no_headers ? NULL : g.cc_head, g.rows, g.nrows, g.ncc);
	} else if (!o->watch && (o->fmt == KGET_JSONPATH || (g.sort_jp && !table && o->fmt != KGET_CUSTOM))) {
		print_kept(&g);
	}
	if (!g.single && (o->fmt == KGET_JSON || o->fmt == KGET_YAML))
		list_tail(&g);
	flush_out(&g);
	if (g.found == 0 && g.rc == 0 && o->nnames == 0 &&
	    (table || o->fmt == KGET_NAME || o->fmt == KGET_CUSTOM)) {
		bool ns_scoped = false;
		for (int i = 0; i < o->nkinds; i++)
			ns_scoped |= o->kinds[i]->namespaced;
		if (g.ns && ns_scoped) {
			char *e = esc(g.ns);
			log_eprintf("No resources found in %s namespace.\n", e);
			free(e);
		} else {
			log_eprintf("No resources found\n");
		}
	}
	fflush(stdout);
	int rc = g.rc;
	kube_http_free(ehttp);
	kube_config_free(ekc);
	kube_http_free(g.http);
	kube_config_free(g.kc);
	kg_free(&g);
	return rc;
}

int kget_server_version(char **version, char **err)
{
	struct kvcon_opts *go = opts_global();
	*version = NULL;
	*err = NULL;
	struct kube_config *kc = kube_config_load(go->kubeconfig, go->context, err);
	if (kc == NULL)
		return 1;
	struct kg g = { 0 };
	struct kget_opts o = { .timeout = 10 };
	g.o = &o;
	g.http = kube_http_new(kc, err);
	if (g.http == NULL) {
		kube_config_free(kc);
		return -1;
	}
	loop_init();
	struct fetch f = { 0 };
	long st = fetch(&g, "/version", NULL, &f, util_now_ms() + 10000);
	int rc = 0;
	if (st != 200) {
		char *url = kube_http_url(g.http, "/version");
		*err = xasprintf("cannot get the server version from %s: %s", url, f.error ? f.error : "no answer");
		free(url);
		rc = -1;
	} else {
		struct json_object *j = json_tokener_parse(f.body.data ? f.body.data : "");
		const char *v = jstr(j, "gitVersion", NULL);
		if (v)
			*version = esc(v);
		else {
			*err = xstrdup("the server's /version has no gitVersion");
			rc = -1;
		}
		json_object_put(j);
	}
	fetch_reset(&f);
	kube_http_free(g.http);
	kube_config_free(kc);
	loop_fini();
	return rc;
}
