/* kvcon wait vm|vmi NS/NAME --for=condition=C[=V] | --for=jsonpath='{...}'=VALUE | --for=delete [--timeout=DUR]:
 * kubectl wait's semantics, output and exit codes: "<kind>.kubevirt.io/NAME condition met" and 0 when the
 * condition holds, "error: timed out waiting for the condition on <plural>/NAME" and 1 when the timeout passes
 * first (default 30s), the API's NotFound (1) when the object does not exist (0 at once for --for=delete).
 *
 * The object is read once, then watched (a watch on its name from that resourceVersion), on a cluster as on the
 * engine service: each event's object is evaluated, nothing polls. */
#include "cmd/cmd_wait.h"

#include <curl/curl.h>
#include <json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cmd/args.h"
#include "cmd/session.h"
#include "core/buf.h"
#include "core/log.h"
#include "core/loop.h"
#include "core/opts.h"
#include "core/util.h"
#include "core/xmalloc.h"
#include "kube/http.h"
#include "kube/kube.h"
#include "model/obj.h"
#include "model/registry.h"

#define WAIT_DEFAULT_S 30

enum wait_for { FOR_CONDITION, FOR_JSONPATH, FOR_DELETE };

struct wait_args {
	enum obj_kind kind;
	const char *ref;
	enum wait_for what;
	char *cond, *want; /* condition name / jsonpath expression; the value wanted (NULL: condition "true") */
	bool want_any;     /* jsonpath without =VALUE: the field exists */
	double timeout_s;
};

/* The kind's row (wait takes VMs and VMIs: the kinds the store keeps that have conditions of their own) */
static const struct kind_def *kind_of(enum obj_kind k)
{
	return registry_kind_of_obj(k);
}

static bool set_kind(struct wait_args *a, const char *s, size_t n)
{
	char *w = xstrndup(s, n);
	const struct kind_def *k = registry_kind_find(w);
	free(w);
	if (k == NULL || !(k->id == KIND_VM || k->id == KIND_VMI))
		return false;
	a->kind = (enum obj_kind)k->obj;
	return true;
}

static int parse_for(struct wait_args *a, const char *v)
{
	if (strcmp(v, "delete") == 0) {
		a->what = FOR_DELETE;
		return 0;
	}
	if (util_has_prefix(v, "condition=")) {
		a->what = FOR_CONDITION;
		const char *c = v + 10;
		const char *eq = strchr(c, '=');
		a->cond = eq ? xstrndup(c, (size_t)(eq - c)) : xstrdup(c);
		a->want = xstrdup(eq ? eq + 1 : "true");
		return *a->cond ? 0 : -1;
	}
	if (util_has_prefix(v, "jsonpath=")) {
		a->what = FOR_JSONPATH;
		const char *p = v + 9;
		if (*p != '{')
			return -1;
		const char *close = strchr(p, '}');
		if (close == NULL)
			return -1;
		a->cond = xstrndup(p, (size_t)(close - p + 1));
		if (close[1] == '=') {
			const char *val = close + 2;
			size_t n = strlen(val);
			if (n >= 2 && (val[0] == '\'' || val[0] == '"') && val[n - 1] == val[0])
				a->want = xstrndup(val + 1, n - 2);
			else
				a->want = xstrdup(val);
		} else if (close[1] == '\0') {
			a->want_any = true;
		} else {
			return -1;
		}
		return 0;
	}
	return -1;
}

/* The flags are the command table's (cmd/cmd.c), parsed by its parser (cmd/args.c): --timeout is the one duration
 * type (a bare number: seconds). 0, 1 (--help printed), -1 (the error printed). */
static int parse(int argc, char **argv, struct wait_args *a)
{
	memset(a, 0, sizeof *a);
	a->kind = OBJ_KIND_COUNT;
	struct args g;
	int p = args_parse_verb(argc, argv, &g);
	if (p != ARGS_OK) {
		args_free(&g);
		return p == ARGS_HELP ? 1 : -1;
	}
	a->timeout_s = (double)args_num(&g, "--timeout", WAIT_DEFAULT_S * 1000) / 1000.0;
	const char *v = args_get(&g, "--for");
	int rc = 0;
	if (v && parse_for(a, v) < 0) {
		char *e = util_escape_display(v);
		log_eprintf("error: unrecognized condition: \"%s\"\n", e);
		free(e);
		rc = -1;
	}
	for (int i = 0; i < g.npos && rc == 0; i++) {
		const char *s = g.pos[i];
		if (a->kind == OBJ_KIND_COUNT && strchr(s, '/') && set_kind(a, s, (size_t)(strchr(s, '/') - s))) {
			a->ref = strchr(s, '/') + 1; /* vmi/NAME, namespace from -n */
		} else if (a->kind == OBJ_KIND_COUNT) {
			if (!set_kind(a, s, strlen(s))) {
				char *e = util_escape_display(s);
				log_eprintf("error: the server doesn't have a resource type \"%s\" (kvcon wait: vm, vmi)\n", e);
				free(e);
				rc = -1;
			}
		} else if (a->ref == NULL) {
			a->ref = s;
		} else {
			char *e = util_escape_display(s);
			log_eprintf("error: unexpected argument '%s'\n", e);
			free(e);
			rc = -1;
		}
	}
	if (rc == 0 && (a->kind == OBJ_KIND_COUNT || a->ref == NULL)) {
		log_eprintf("error: which object? (vm|vmi NAMESPACE/NAME)\n");
		rc = -1;
	}
	if (rc == 0 && v == NULL) {
		log_eprintf("error: --for must be set\n");
		rc = -1;
	}
	args_free(&g);
	return rc;
}

/* ---- JSONPath (the part kubectl wait uses: fields, [N], [?(@.f=="v")]) ---- */

static struct json_object *jp_eval(struct json_object *o, const char *expr)
{
	const char *p = expr;
	if (*p == '{')
		p++;
	if (*p == '$')
		p++;
	while (o && *p && *p != '}') {
		if (*p == '.') {
			p++;
			size_t n = strcspn(p, ".[}");
			char *k = xstrndup(p, n);
			struct json_object *next = NULL;
			if (!json_object_is_type(o, json_type_object) || !json_object_object_get_ex(o, k, &next))
				next = NULL;
			free(k);
			o = next;
			p += n;
		} else if (*p == '[') {
			const char *close = strchr(p, ']');
			if (close == NULL || !json_object_is_type(o, json_type_array))
				return NULL;
			if (p[1] == '?') { /* [?(@.key=="value")] */
				const char *at = strstr(p, "@.");
				const char *eq = at ? strstr(at, "==") : NULL;
				if (at == NULL || eq == NULL || eq > close)
					return NULL;
				char *key = xstrndup(at + 2, (size_t)(eq - at - 2));
				const char *vs = eq + 2;
				char q = *vs;
				const char *ve = (q == '"' || q == '\'') ? strchr(vs + 1, q) : strchr(vs, ')');
				if (ve == NULL) {
					free(key);
					return NULL;
				}
				char *val = (q == '"' || q == '\'') ? xstrndup(vs + 1, (size_t)(ve - vs - 1))
								   : xstrndup(vs, (size_t)(ve - vs));
				struct json_object *hit = NULL;
				for (size_t i = 0; i < json_object_array_length(o) && !hit; i++) {
					struct json_object *e = json_object_array_get_idx(o, i), *f;
					if (json_object_is_type(e, json_type_object) && json_object_object_get_ex(e, key, &f) &&
					    strcmp(json_object_get_string(f), val) == 0)
						hit = e;
				}
				free(key);
				free(val);
				close = strchr(ve, ']');
				if (close == NULL)
					return NULL;
				o = hit;
			} else {
				long idx = strtol(p + 1, NULL, 10);
				if (idx < 0)
					idx += (long)json_object_array_length(o);
				o = idx >= 0 && (size_t)idx < json_object_array_length(o) ? json_object_array_get_idx(o, (size_t)idx)
											   : NULL;
			}
			p = close + 1;
		} else {
			return NULL;
		}
	}
	return o;
}

/* Does obj (a whole API object) meet the condition? */
static bool met(const struct wait_args *a, struct json_object *obj)
{
	if (a->what == FOR_DELETE)
		return false;
	if (a->what == FOR_CONDITION) {
		struct json_object *st, *conds;
		if (!json_object_object_get_ex(obj, "status", &st) || !json_object_object_get_ex(st, "conditions", &conds) ||
		    !json_object_is_type(conds, json_type_array))
			return false;
		for (size_t i = 0; i < json_object_array_length(conds); i++) {
			struct json_object *c = json_object_array_get_idx(conds, i), *t, *s;
			if (json_object_object_get_ex(c, "type", &t) && strcasecmp(json_object_get_string(t), a->cond) == 0 &&
			    json_object_object_get_ex(c, "status", &s))
				return strcasecmp(json_object_get_string(s), a->want) == 0;
		}
		return false;
	}
	struct json_object *v = jp_eval(obj, a->cond);
	if (v == NULL)
		return false;
	if (a->want_any)
		return true;
	if (json_object_is_type(v, json_type_object) || json_object_is_type(v, json_type_array))
		return false;
	return strcmp(json_object_get_string(v), a->want) == 0;
}

/* ---- cluster: get, then watch ---- */

struct kwait {
	const struct wait_args *a;
	struct kube_http *h;
	struct kube_req *req;
	char *ns, *name, *rv;
	struct buf pend;
	int result;      /* -1 waiting, 0 met, 1 failed (message printed), 2 deleted before the wait began */
	bool gone;       /* the object does not exist */
	bool stream_end; /* the watch ended: start again */
};

static void handle_object(struct kwait *w, struct json_object *obj)
{
	struct json_object *md, *rv;
	if (json_object_object_get_ex(obj, "metadata", &md) && json_object_object_get_ex(md, "resourceVersion", &rv)) {
		free(w->rv);
		w->rv = xstrdup(json_object_get_string(rv));
	}
	if (met(w->a, obj))
		w->result = 0;
}

static bool watch_chunk(void *arg, const char *data, size_t len)
{
	struct kwait *w = arg;
	buf_add(&w->pend, data, len);
	char *nl;
	while (w->result < 0 && (nl = memchr(w->pend.data, '\n', w->pend.len)) != NULL) {
		size_t n = (size_t)(nl - w->pend.data);
		struct json_tokener *tok = json_tokener_new();
		struct json_object *ev = json_tokener_parse_ex(tok, w->pend.data, (int)n);
		json_tokener_free(tok);
		buf_consume(&w->pend, n + 1);
		struct json_object *type, *obj;
		if (ev && json_object_object_get_ex(ev, "type", &type) && json_object_object_get_ex(ev, "object", &obj)) {
			const char *t = json_object_get_string(type);
			if (strcmp(t, "DELETED") == 0) {
				w->gone = true;
				if (w->a->what == FOR_DELETE)
					w->result = 0;
			} else if (strcmp(t, "ERROR") == 0) {
				w->stream_end = true; /* 410 Expired and the like: read again */
				free(w->rv);
				w->rv = NULL;
			} else if (strcmp(t, "BOOKMARK") == 0) {
				struct json_object *md, *rv;
				if (json_object_object_get_ex(obj, "metadata", &md) &&
				    json_object_object_get_ex(md, "resourceVersion", &rv)) {
					free(w->rv);
					w->rv = xstrdup(json_object_get_string(rv));
				}
			} else {
				w->gone = false;
				handle_object(w, obj);
			}
		}
		json_object_put(ev);
	}
	return w->result < 0 && !w->stream_end;
}

static void watch_done(void *arg, const struct kube_resp *resp)
{
	struct kwait *w = arg;
	w->req = NULL;
	if (w->result >= 0)
		return;
	if (resp->status != 0 && (resp->status < 200 || resp->status >= 300)) {
		char *m = kube_http_error_message(resp);
		char *e = util_escape_display(m);
		fprintf(stderr, "error: %s\n", e);
		free(e);
		free(m);
		w->result = 1;
		return;
	}
	w->stream_end = true;
}

static void start_get(struct kwait *w);

static void start_watch(struct kwait *w)
{
	char *ns = curl_easy_escape(NULL, w->ns, 0);
	char *sel = xasprintf("metadata.name=%s", w->name);
	char *esel = curl_easy_escape(NULL, sel, 0);
	char *coll = registry_kind_path(kind_of(w->a->kind), ns, NULL);
	char *path = xasprintf("%s?fieldSelector=%s&watch=true&allowWatchBookmarks=true&timeoutSeconds=300&resourceVersion=%s",
			       coll, esel, w->rv ? w->rv : "0");
	free(coll);
	curl_free(ns);
	curl_free(esel);
	free(sel);
	buf_reset(&w->pend);
	w->stream_end = false;
	struct kube_http_req q = { .path = path, .on_chunk = watch_chunk, .on_done = watch_done, .arg = w };
	w->req = kube_http_start(w->h, &q);
	free(path);
}

static void get_done(void *arg, const struct kube_resp *resp)
{
	struct kwait *w = arg;
	w->req = NULL;
	if (resp->status == 404) {
		w->gone = true;
		if (w->a->what == FOR_DELETE) {
			w->result = 2; /* absent from the start: kubectl says nothing */
			return;
		}
		char *n = util_escape_display(w->name), gr[96];
		fprintf(stderr, "Error from server (NotFound): %s \"%s\" not found\n",
			registry_kind_gr(kind_of(w->a->kind), true, gr, sizeof gr), n);
		free(n);
		w->result = 1;
		return;
	}
	if (resp->status != 200) {
		char *m = kube_http_error_message(resp);
		char *e = util_escape_display(m);
		fprintf(stderr, "error: %s\n", e);
		free(e);
		free(m);
		w->result = 1;
		return;
	}
	struct json_object *obj = json_tokener_parse(resp->body);
	if (obj == NULL) {
		fprintf(stderr, "error: the server's object is not JSON\n");
		w->result = 1;
		return;
	}
	w->gone = false;
	handle_object(w, obj);
	json_object_put(obj);
	if (w->result < 0)
		start_watch(w);
}

static void start_get(struct kwait *w)
{
	char *ns = curl_easy_escape(NULL, w->ns, 0), *name = curl_easy_escape(NULL, w->name, 0);
	char *path = kube_object_path(w->a->kind, ns, name);
	curl_free(ns);
	curl_free(name);
	struct kube_http_req q = { .path = path, .timeout_ms = 30000, .on_done = get_done, .arg = w };
	w->req = kube_http_start(w->h, &q);
	free(path);
}

static int wait_cluster(struct session *s, const struct wait_args *a)
{
	struct kwait w = { .a = a, .h = kube_source_http(s->src), .ns = s->ns, .name = s->name, .result = -1 };
	buf_init(&w.pend);
	if (w.h == NULL) {
		fprintf(stderr, "error: not a cluster\n");
		return EXIT_API;
	}
	uint64_t deadline = util_now_ms() + (uint64_t)(a->timeout_s * 1000);
	start_get(&w);
	while (w.result < 0 && util_now_ms() < deadline) {
		if (w.stream_end && w.req == NULL) {
			if (w.rv)
				start_watch(&w);
			else
				start_get(&w);
		}
		uint64_t left = deadline - util_now_ms();
		loop_once(left > 1000 ? 1000 : (int)left + 1);
	}
	kube_http_cancel(w.req);
	buf_free(&w.pend);
	free(w.rv);
	return w.result < 0 ? -1 : w.result;
}

int cmd_wait(int argc, char **argv)
{
	struct wait_args a;
	int p = parse(argc, argv, &a);
	if (p != 0) {
		free(a.cond);
		free(a.want);
		return p > 0 ? EXIT_OK : EXIT_USAGE;
	}
	struct session s;
	int rc = session_open(&s, "wait", a.ref);
	if (rc != EXIT_OK)
		goto out;
	int r = wait_cluster(&s, &a); /* a cluster, or the engine service's API */
	const struct kind_def *k = kind_of(a.kind);
	char *n = util_escape_display(s.name), gr[96];
	if (r == 0 || r == 2) {
		if (r == 0)
			printf("%s/%s condition met\n", registry_kind_gr(k, false, gr, sizeof gr), n);
		rc = EXIT_OK;
	} else if (r < 0) {
		fprintf(stderr, "error: timed out waiting for the condition on %s/%s\n", k->plural, n);
		rc = EXIT_API;
	} else {
		rc = EXIT_API;
	}
	free(n);
out:
	session_close(&s);
	free(a.cond);
	free(a.want);
	return rc;
}
