/* kapply: kubectl's client-side apply and delete of one object through the API (kube/kapply.h says the contract). */
#include "kube/kapply.h"

#include <ctype.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/loop.h"
#include "core/util.h"
#include "core/xmalloc.h"
#include "kube/http.h"
#include "model/registry.h"

#define LAST_APPLIED "kubectl.kubernetes.io/last-applied-configuration"

/* ---- Go's json.Marshal ---- */

static int cmp_keys(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void marshal_str(struct buf *b, const char *s, size_t len)
{
	buf_add_char(b, '"');
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '"' || c == '\\') {
			buf_add_char(b, '\\');
			buf_add_char(b, (char)c);
		} else if (c == '\n')
			buf_printf(b, "\\n");
		else if (c == '\r')
			buf_printf(b, "\\r");
		else if (c == '\t')
			buf_printf(b, "\\t");
		else if (c < 0x20 || c == '<' || c == '>' || c == '&')
			buf_printf(b, "\\u%04x", c);
		else if (c == 0xe2 && i + 2 < len && (unsigned char)s[i + 1] == 0x80 &&
			 ((unsigned char)s[i + 2] == 0xa8 || (unsigned char)s[i + 2] == 0xa9)) {
			buf_printf(b, "\\u202%c", (unsigned char)s[i + 2] == 0xa8 ? '8' : '9');
			i += 2;
		} else
			buf_add_char(b, (char)c);
	}
	buf_add_char(b, '"');
}

static void marshal(struct buf *b, json_object *o)
{
	switch (json_object_get_type(o)) {
	case json_type_null:
		buf_printf(b, "null");
		break;
	case json_type_object: {
		size_t n = (size_t)json_object_object_length(o), k = 0;
		const char **keys = xcalloc(n ? n : 1, sizeof *keys);
		json_object_object_foreach(o, key, val)
		{
			(void)val;
			keys[k++] = key;
		}
		qsort(keys, n, sizeof *keys, cmp_keys);
		buf_add_char(b, '{');
		for (size_t i = 0; i < n; i++) {
			if (i)
				buf_add_char(b, ',');
			marshal_str(b, keys[i], strlen(keys[i]));
			buf_add_char(b, ':');
			marshal(b, json_object_object_get(o, keys[i]));
		}
		buf_add_char(b, '}');
		free(keys);
		break;
	}
	case json_type_array:
		buf_add_char(b, '[');
		for (size_t i = 0; i < json_object_array_length(o); i++) {
			if (i)
				buf_add_char(b, ',');
			marshal(b, json_object_array_get_idx(o, i));
		}
		buf_add_char(b, ']');
		break;
	case json_type_string:
		marshal_str(b, json_object_get_string(o), (size_t)json_object_get_string_len(o));
		break;
	default:
		buf_printf(b, "%s", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
		break;
	}
}

char *kapply_marshal(json_object *obj)
{
	struct buf b;
	buf_init(&b);
	marshal(&b, obj);
	buf_add_char(&b, '\n');
	return buf_steal(&b);
}

/* ---- the three-way JSON merge patch (k8s.io/apimachinery/pkg/util/jsonmergepatch) ---- */

static bool jequal(json_object *a, json_object *b)
{
	if (a == NULL || b == NULL)
		return a == b;
	return json_object_equal(a, b) != 0;
}

/* RFC 7386's CreateMergePatch(a, b): what turns a into b (nulls delete). Both objects. */
static json_object *merge_diff(json_object *a, json_object *b)
{
	json_object *p = json_object_new_object();
	json_object_object_foreach(b, k, bv)
	{
		json_object *av = NULL;
		bool has = a && json_object_object_get_ex(a, k, &av);
		if (!has)
			json_object_object_add(p, k, json_object_get(bv));
		else if (json_object_is_type(av, json_type_object) && json_object_is_type(bv, json_type_object)) {
			json_object *sub = merge_diff(av, bv);
			if (json_object_object_length(sub))
				json_object_object_add(p, k, sub);
			else
				json_object_put(sub);
		} else if (!jequal(av, bv))
			json_object_object_add(p, k, json_object_get(bv));
	}
	if (a == NULL)
		return p;
	json_object_object_foreach(a, k2, av2)
	{
		(void)av2;
		if (!json_object_object_get_ex(b, k2, NULL))
			json_object_object_add(p, k2, NULL);
	}
	return p;
}

/* keepOrDeleteNullInObj: only the deletions (keep_null) or only the rest. */
static json_object *filter_null(json_object *m, bool keep_null)
{
	json_object *f = json_object_new_object();
	json_object_object_foreach(m, k, v)
	{
		if (v == NULL) {
			if (keep_null)
				json_object_object_add(f, k, NULL);
		} else if (json_object_is_type(v, json_type_object)) {
			if (json_object_object_length(v) == 0) {
				if (!keep_null) /* an explicitly empty map is a value */
					json_object_object_add(f, k, json_object_get(v));
				continue;
			}
			json_object *sub = filter_null(v, keep_null);
			if (json_object_object_length(sub))
				json_object_object_add(f, k, sub);
			else
				json_object_put(sub);
		} else if (!keep_null)
			json_object_object_add(f, k, json_object_get(v));
	}
	return f;
}

/* RFC 7386's MergePatch(doc, patch) on two patches: patch's entries over doc's (patch holds no nulls). */
static void merge_into(json_object *doc, json_object *patch)
{
	json_object_object_foreach(patch, k, pv)
	{
		json_object *dv = NULL;
		if (json_object_is_type(pv, json_type_object) && json_object_object_get_ex(doc, k, &dv) &&
		    json_object_is_type(dv, json_type_object))
			merge_into(dv, pv);
		else
			json_object_object_add(doc, k, json_object_get(pv));
	}
}

json_object *kapply_patch3(json_object *original, json_object *modified, json_object *current)
{
	json_object *add = merge_diff(current, modified), *adds = filter_null(add, false);
	json_object *del = merge_diff(original, modified), *dels = filter_null(del, true);
	json_object_put(add);
	json_object_put(del);
	merge_into(dels, adds);
	json_object_put(adds);
	return dels;
}

/* ---- requests ---- */

struct call {
	bool done;
	long status;
	char *body, *msg, *reason;
};

static void call_done(void *arg, const struct kube_resp *r)
{
	struct call *c = arg;
	c->done = true;
	c->status = r->status;
	c->body = r->body ? xstrndup(r->body, r->len) : NULL;
	if (r->status < 200 || r->status > 299) {
		c->msg = kube_http_error_message(r);
		json_object *s = c->body ? json_tokener_parse(c->body) : NULL, *reason;
		if (s && json_object_object_get_ex(s, "reason", &reason) && json_object_is_type(reason, json_type_string))
			c->reason = xstrdup(json_object_get_string(reason));
		json_object_put(s);
	}
}

static void call(struct kube_http *h, const char *method, const char *path, const char *body, const char *ctype,
		 long timeout_ms, struct call *c)
{
	memset(c, 0, sizeof *c);
	struct kube_http_req q = { .method = method, .path = path, .body = body, .body_len = body ? strlen(body) : 0,
				   .content_type = ctype, .timeout_ms = timeout_ms, .on_done = call_done, .arg = c };
	struct kube_req *r = kube_http_start(h, &q);
	uint64_t until = util_now_ms() + (uint64_t)timeout_ms + 5000;
	while (!c->done && util_now_ms() < until && !loop_quitting())
		loop_once(100);
	if (!c->done) {
		kube_http_cancel(r); /* no callback into this frame later */
		c->msg = xstrdup("the server did not answer");
	}
}

static void call_free(struct call *c)
{
	free(c->body);
	free(c->msg);
	free(c->reason);
}

/* kubectl's "Error from server (REASON): error when VERBING "FILE": MESSAGE" */
static char *server_error(const struct call *c, const char *what, const char *source)
{
	if (c->status == 0)
		return xasprintf("error when %s \"%s\": %s", what, source, c->msg ? c->msg : "no answer");
	return xasprintf("Error from server (%s): error when %s \"%s\": %s", c->reason ? c->reason : "InternalError",
			 what, source, c->msg ? c->msg : "refused");
}

/* The object's kind row, name and namespace, or -1 with kubectl's error. */
static int identify(json_object *obj, const struct kapply_opts *o, const struct kind_def **kd, const char **name,
		    const char **ns, char **err)
{
	json_object *md, *v;
	const char *api = json_object_object_get_ex(obj, "apiVersion", &v) ? json_object_get_string(v) : NULL;
	const char *kind = json_object_object_get_ex(obj, "kind", &v) ? json_object_get_string(v) : NULL;
	*name = json_object_object_get_ex(obj, "metadata", &md) && json_object_object_get_ex(md, "name", &v) &&
			json_object_is_type(v, json_type_string)
		? json_object_get_string(v) : "";
	*ns = md && json_object_object_get_ex(md, "namespace", &v) && json_object_is_type(v, json_type_string) &&
			*json_object_get_string(v)
		? json_object_get_string(v) : o->ns;
	if (api == NULL || !*api || kind == NULL || !*kind) {
		*err = xasprintf("error validating \"%s\": error validating data: [%s%s%s]; if you choose to ignore these "
				 "errors, turn validation off with --validate=false", o->source,
				 api && *api ? "" : "apiVersion not set", (api && *api) || (kind && *kind) ? "" : ", ",
				 kind && *kind ? "" : "kind not set");
		return -1;
	}
	*kd = NULL;
	for (int k = 0; k < KIND_COUNT && *kd == NULL; k++) {
		const struct kind_def *d = registry_kind((enum kind_id)k);
		char gv[128];
		snprintf(gv, sizeof gv, "%s%s%s", d->group, *d->group ? "/" : "", d->version);
		if (strcmp(d->kind, kind) == 0 && strcmp(gv, api) == 0)
			*kd = d;
	}
	if (*kd == NULL) {
		*err = xasprintf("resource mapping not found for name: \"%s\" namespace: \"%s\" from \"%s\": no matches for "
				 "kind \"%s\" in version \"%s\"\nensure CRDs are installed first", *name,
				 md && json_object_object_get_ex(md, "namespace", &v) ? json_object_get_string(v) : "",
				 o->source, kind, api);
		return -1;
	}
	if (!**name) {
		*err = xasprintf("error when retrieving current configuration of:\nResource: \"%s\", GroupVersionKind: "
				 "\"%s, Kind=%s\"\nName: \"\", Namespace: \"%s\"\nfrom server for: \"%s\": resource name "
				 "may not be empty", (*kd)->plural, api, kind, (*kd)->namespaced ? *ns : "", o->source);
		return -1;
	}
	if (!(*kd)->namespaced)
		*ns = NULL;
	return 0;
}

/* "virtualmachine.kubevirt.io" / "namespace" */
static char *type_name(const struct kind_def *kd)
{
	char *s = xasprintf("%s%s%s", kd->kind, *kd->group ? "." : "", kd->group);
	for (char *p = s; *p && *p != '.'; p++)
		*p = (char)tolower((unsigned char)*p);
	return s;
}

static const char *dry_suffix(enum kapply_dry d)
{
	return d == KAPPLY_DRY_CLIENT ? " (dry run)" : d == KAPPLY_DRY_SERVER ? " (server dry run)" : "";
}

/* The annotations map of obj's metadata, made when absent. */
static json_object *annotations(json_object *obj)
{
	json_object *md, *a;
	if (!json_object_object_get_ex(obj, "metadata", &md) || !json_object_is_type(md, json_type_object)) {
		md = json_object_new_object();
		json_object_object_add(obj, "metadata", md);
	}
	if (!json_object_object_get_ex(md, "annotations", &a) || !json_object_is_type(a, json_type_object)) {
		a = json_object_new_object();
		json_object_object_add(md, "annotations", a);
	}
	return a;
}

int kapply_apply(struct kube_http *h, json_object *obj, const struct kapply_opts *o, char **line, char **err)
{
	const struct kind_def *kd;
	const char *name, *ns;
	*line = *err = NULL;
	if (identify(obj, o, &kd, &name, &ns, err) < 0)
		return -1;
	/* modified: the object as given, its namespace filled in, annotated with its own text (without the
	 * annotation: GetModifiedConfiguration) */
	json_object *mod = NULL;
	json_object_deep_copy(obj, &mod, NULL);
	if (ns) {
		json_object *md;
		json_object_object_get_ex(mod, "metadata", &md);
		json_object_object_add(md, "namespace", json_object_new_string(ns));
	}
	json_object *an = annotations(mod);
	json_object_object_del(an, LAST_APPLIED);
	char *text = kapply_marshal(mod);
	json_object_object_add(an, LAST_APPLIED, json_object_new_string(text));
	free(text);

	char *tn = type_name(kd), *path = registry_kind_path(kd, ns, name), *coll = registry_kind_path(kd, ns, NULL);
	const char *q = o->dry == KAPPLY_DRY_SERVER ? "?dryRun=All&fieldManager=kubectl-client-side-apply&fieldValidation=Strict"
						    : "?fieldManager=kubectl-client-side-apply&fieldValidation=Strict";
	struct call g, w = { 0 };
	int rc = -1;
	call(h, "GET", path, NULL, NULL, o->timeout_ms, &g);
	if (g.status == 404) {
		if (o->dry == KAPPLY_DRY_CLIENT)
			rc = 0;
		else {
			char *p = xasprintf("%s%s", coll, q);
			call(h, "POST", p, json_object_to_json_string_ext(mod, JSON_C_TO_STRING_PLAIN), NULL, o->timeout_ms, &w);
			free(p);
			if (w.status == 200 || w.status == 201)
				rc = 0;
			else
				*err = server_error(&w, "creating", o->source);
		}
		if (rc == 0)
			*line = xasprintf("%s/%s created%s", tn, name, dry_suffix(o->dry));
	} else if (g.status == 200) {
		json_object *cur = json_tokener_parse(g.body ? g.body : ""), *orig = NULL, *md, *ca, *la;
		if (cur && json_object_object_get_ex(cur, "metadata", &md) && json_object_object_get_ex(md, "annotations", &ca) &&
		    json_object_object_get_ex(ca, LAST_APPLIED, &la) && json_object_is_type(la, json_type_string))
			orig = json_tokener_parse(json_object_get_string(la));
		else if (o->dry != KAPPLY_DRY_CLIENT)
			fprintf(stderr, "Warning: resource %s/%s is missing the %s annotation which is required by kubectl apply. "
				"kubectl apply should only be used on resources created declaratively by either kubectl create "
				"--save-config or kubectl apply. The missing annotation will be patched automatically.\n",
				kd->plural, name, LAST_APPLIED);
		json_object *patch = kapply_patch3(orig, mod, cur);
		if (o->dry == KAPPLY_DRY_CLIENT) {
			rc = 0;
			*line = xasprintf("%s/%s configured%s", tn, name, dry_suffix(o->dry));
		} else if (json_object_object_length(patch) == 0) {
			rc = 0;
			*line = xasprintf("%s/%s unchanged%s", tn, name, dry_suffix(o->dry));
		} else {
			char *p = xasprintf("%s%s", path, q);
			call(h, "PATCH", p, json_object_to_json_string_ext(patch, JSON_C_TO_STRING_PLAIN),
			     strstr(kd->group, "kubevirt.io") != NULL ? "application/merge-patch+json" /* CRDs */
									: "application/strategic-merge-patch+json",
			     o->timeout_ms, &w);
			free(p);
			if (w.status == 200 || w.status == 201) {
				rc = 0;
				*line = xasprintf("%s/%s configured%s", tn, name, dry_suffix(o->dry));
			} else
				*err = server_error(&w, "applying patch to", o->source);
		}
		json_object_put(patch);
		json_object_put(orig);
		json_object_put(cur);
	} else {
		*err = g.status == 0 ? xasprintf("%s", g.msg ? g.msg : "no answer")
				     : xasprintf("Error from server (%s): error when retrieving current configuration of:\n"
						 "Resource: \"%s\", GroupVersionKind: \"%s, Kind=%s\"\nName: \"%s\", Namespace: "
						 "\"%s\"\nfrom server for: \"%s\": %s", g.reason ? g.reason : "InternalError",
						 kd->plural, json_object_get_string(json_object_object_get(obj, "apiVersion")),
						 kd->kind, name, ns ? ns : "", o->source, g.msg ? g.msg : "refused");
	}
	call_free(&g);
	call_free(&w);
	free(tn);
	free(path);
	free(coll);
	json_object_put(mod);
	return rc;
}

int kapply_delete(struct kube_http *h, json_object *obj, const struct kapply_opts *o, char **line, char **err)
{
	const struct kind_def *kd;
	const char *name, *ns;
	*line = *err = NULL;
	if (identify(obj, o, &kd, &name, &ns, err) < 0)
		return -1;
	char *tn = type_name(kd), *path = registry_kind_path(kd, ns, name);
	struct call w = { 0 };
	int rc = -1;
	if (o->dry == KAPPLY_DRY_CLIENT) {
		*line = xasprintf("%s \"%s\" deleted%s", tn, name, dry_suffix(o->dry));
		rc = 0;
		goto out;
	}
	char *p = xasprintf("%s%s", path, o->dry == KAPPLY_DRY_SERVER ? "?dryRun=All" : "");
	call(h, "DELETE", p, "{\"kind\":\"DeleteOptions\",\"apiVersion\":\"v1\",\"propagationPolicy\":\"Background\"}",
	     NULL, o->timeout_ms, &w);
	free(p);
	if (w.status == 200 || w.status == 202) {
		rc = 0;
		*line = xasprintf("%s \"%s\" deleted%s", tn, name, dry_suffix(o->dry));
	} else if (w.status == 404 && o->ignore_not_found)
		rc = 0;
	else
		*err = server_error(&w, "deleting", o->source);
out:
	call_free(&w);
	free(tn);
	free(path);
	return rc;
}

int kapply_create(struct kube_http *h, json_object *obj, const struct kapply_opts *o, char **line, char **err)
{
	const struct kind_def *kd;
	const char *name, *ns;
	*line = *err = NULL;
	if (identify(obj, o, &kd, &name, &ns, err) < 0)
		return -1;
	char *tn = type_name(kd), *coll = registry_kind_path(kd, ns, NULL);
	char *p = xasprintf("%s%s", coll, o->dry == KAPPLY_DRY_SERVER ? "?dryRun=All&fieldManager=kubectl-create"
								  : "?fieldManager=kubectl-create");
	struct call w = { 0 };
	int rc = -1;
	if (o->dry != KAPPLY_DRY_CLIENT)
		call(h, "POST", p, json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PLAIN), NULL, o->timeout_ms, &w);
	if (o->dry == KAPPLY_DRY_CLIENT || w.status == 200 || w.status == 201) {
		rc = 0;
		*line = xasprintf("%s/%s created%s", tn, name, dry_suffix(o->dry));
	} else if (w.status == 0)
		*err = xasprintf("%s", w.msg ? w.msg : "no answer");
	else
		*err = xasprintf("Error from server (%s): %s", w.reason ? w.reason : "InternalError",
				 w.msg ? w.msg : "refused");
	call_free(&w);
	free(p);
	free(tn);
	free(coll);
	return rc;
}

char *kapply_path(json_object *obj, const char *ns)
{
	const struct kind_def *kd;
	const char *name, *dns;
	char *err = NULL;
	struct kapply_opts o = { .ns = ns, .source = "" };
	if (identify(obj, &o, &kd, &name, &dns, &err) < 0) {
		free(err);
		return NULL;
	}
	return registry_kind_path(kd, dns, name);
}
