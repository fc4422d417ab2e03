/* describe: an API object in kubectl describe's layout for custom resources (its generic
 * describer): Name, Namespace, Labels, Annotations, then every field of the object with camelCase keys turned
 * into "Title Words", keys sorted, maps and lists indented two spaces a level, columns aligned as Go's
 * tabwriter aligns them (a run of consecutive "Key:<tab>value" lines shares one column width), then the events
 * of the object, oldest first (newest last), with kubectl's Type/Reason/Age/From/Message table.
 * Used by `kvcon describe`, `kvcon bundle` and the dashboard's `e`. Every string is display-escaped. */
#include "model/describe.h"

#include <ctype.h>
#include <json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/buf.h"
#include "core/tabwriter.h"
#include "core/util.h"
#include "core/xmalloc.h"
#include "model/obj.h"

#define MAX_ANNOTATION_LEN 140

/* ---- output: kubectl's lines with their tabs, aligned by core/tabwriter at the end ---- */

struct tw {
	struct buf b;
};

/* cell (NULL: a line without a tab), tab, rest; takes both strings */
static void tw_add(struct tw *t, char *cell, char *rest)
{
	if (cell)
		buf_printf(&t->b, "%s\t", cell);
	buf_printf(&t->b, "%s\n", rest);
	free(cell);
	free(rest);
}

/* A line "indent + text" with no tab. */
static void tw_plain(struct tw *t, int level, const char *text)
{
	buf_printf(&t->b, "%*s%s\n", level * 2, "", text);
}

static void tw_kv(struct tw *t, int level, const char *key, const char *value)
{
	buf_printf(&t->b, "%*s%s:\t%s\n", level * 2, "", key, value);
}

static void tw_flush(struct tw *t, FILE *f)
{
	struct buf out;
	buf_init(&out);
	tabwriter_format(t->b.data ? t->b.data : "", t->b.len, 2, &out);
	if (out.len)
		fwrite(out.data, 1, out.len, f);
	buf_free(&out);
	buf_reset(&t->b);
}

/* ---- kubectl's generic describer ---- */

/* camelcase.Split + Title, with kubectl's acronyms; a key with other than letters and '-' stays as it is. */
static char *smart_label(const char *field)
{
	for (const char *p = field; *p; p++)
		if (!isalpha((unsigned char)*p) && *p != '-' && !((unsigned char)*p & 0x80))
			return util_escape_display(field);
	struct buf b;
	buf_init(&b);
	size_t n = strlen(field);
	size_t start = 0;
	/* split at lower->upper and at the last upper of an upper run followed by a lower (camelcase.Split) */
	for (size_t i = 1; i <= n; i++) {
		bool cut = i == n;
		if (!cut) {
			bool lo_prev = islower((unsigned char)field[i - 1]), up = isupper((unsigned char)field[i]);
			bool up_prev = isupper((unsigned char)field[i - 1]);
			bool lo_next = i + 1 < n && islower((unsigned char)field[i + 1]);
			bool dash = field[i] == '-' || field[i - 1] == '-';
			cut = (lo_prev && up) || (up_prev && up && lo_next) || dash;
		}
		if (!cut)
			continue;
		char part[128];
		snprintf(part, sizeof part, "%.*s", (int)(i - start), field + start);
		start = i;
		char upper[128];
		size_t k;
		for (k = 0; part[k]; k++)
			upper[k] = (char)toupper((unsigned char)part[k]);
		upper[k] = '\0';
		if (b.len && strcmp(part, "-") != 0 && b.data[b.len - 1] != '-')
			buf_add_char(&b, ' ');
		if (strcmp(upper, "API") == 0 || strcmp(upper, "URL") == 0 || strcmp(upper, "UID") == 0 ||
		    strcmp(upper, "OSB") == 0 || strcmp(upper, "GUID") == 0) {
			buf_add_str(&b, upper);
		} else {
			part[0] = (char)toupper((unsigned char)part[0]);
			buf_add_str(&b, part);
		}
	}
	if (b.data == NULL)
		buf_add_str(&b, "");
	return buf_steal(&b);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static char *scalar_text(struct json_object *v)
{
	if (v == NULL)
		return xstrdup("<nil>");
	switch (json_object_get_type(v)) {
	case json_type_string:
		return util_escape_display(json_object_get_string(v));
	case json_type_boolean:
		return xstrdup(json_object_get_boolean(v) ? "true" : "false");
	default:
		return xstrdup(json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN));
	}
}

static bool skipped(const char *path)
{
	static const char *const skip[] = { ".metadata.managedFields", ".metadata.name", ".metadata.namespace",
					    ".metadata.labels", ".metadata.annotations", NULL };
	for (int i = 0; skip[i]; i++)
		if (strcmp(path, skip[i]) == 0)
			return true;
	return false;
}

static void print_content(struct tw *t, int level, struct json_object *m, const char *prefix)
{
	size_t n = (size_t)json_object_object_length(m), k = 0;
	const char **keys = xcalloc(n ? n : 1, sizeof *keys);
	json_object_object_foreach(m, key, val)
	{
		(void)val;
		keys[k++] = key;
	}
	qsort(keys, k, sizeof *keys, cmp_str);
	for (size_t i = 0; i < k; i++) {
		struct json_object *v = json_object_object_get(m, keys[i]);
		char *path = xasprintf("%s.%s", prefix, keys[i]);
		if (skipped(path)) {
			free(path);
			continue;
		}
		char *label = smart_label(keys[i]);
		if (json_object_is_type(v, json_type_object)) {
			char *h = xasprintf("%s:", label);
			tw_plain(t, level, h);
			free(h);
			print_content(t, level + 1, v, path);
		} else if (json_object_is_type(v, json_type_array)) {
			char *h = xasprintf("%s:", label);
			tw_plain(t, level, h);
			free(h);
			for (size_t j = 0; j < json_object_array_length(v); j++) {
				struct json_object *c = json_object_array_get_idx(v, j);
				if (json_object_is_type(c, json_type_object)) {
					print_content(t, level + 1, c, path);
				} else {
					char *s = scalar_text(c);
					tw_plain(t, level + 1, s);
					free(s);
				}
			}
		} else if (json_object_is_type(v, json_type_string) && strchr(json_object_get_string(v), '\n')) {
			/* a newline ends the tabwriter line: the value's further lines start at column 0 */
			char *copy = xstrdup(json_object_get_string(v));
			char *nl = strchr(copy, '\n');
			*nl = '\0';
			char *first = util_escape_display(copy);
			tw_kv(t, level, label, first);
			free(first);
			for (char *p = nl + 1; p;) {
				char *e = strchr(p, '\n');
				if (e)
					*e = '\0';
				tw_add(t, NULL, util_escape_display(p));
				p = e ? e + 1 : NULL;
			}
			free(copy);
		} else {
			char *s = scalar_text(v);
			tw_kv(t, level, label, s);
			free(s);
		}
		free(label);
		free(path);
	}
	free(keys);
}

static void print_map_multiline(struct tw *t, const char *title, struct json_object *m, bool annotations)
{
	size_t n = m && json_object_is_type(m, json_type_object) ? (size_t)json_object_object_length(m) : 0, k = 0;
	const char **keys = xcalloc(n ? n : 1, sizeof *keys);
	if (n) {
		json_object_object_foreach(m, key, val)
		{
			(void)val;
			if (annotations && strcmp(key, "kubectl.kubernetes.io/last-applied-configuration") == 0)
				continue;
			keys[k++] = key;
		}
	}
	char *head = xasprintf("%s:", title);
	if (k == 0) {
		tw_add(t, head, xstrdup("<none>"));
		free(keys);
		return;
	}
	qsort(keys, k, sizeof *keys, cmp_str);
	for (size_t i = 0; i < k; i++) {
		char *key = util_escape_display(keys[i]);
		const char *raw = json_object_get_string(json_object_object_get(m, keys[i]));
		char *cell = i == 0 ? head : xstrdup("");
		if (!annotations) {
			char *val = util_escape_display(raw);
			tw_add(t, cell, xasprintf("%s=%s", key, val));
			free(val);
		} else {
			size_t rl = strlen(raw);
			while (rl > 0 && raw[rl - 1] == '\n')
				rl--;
			char *value = xstrndup(raw, rl);
			if (rl + strlen(keys[i]) + 2 > MAX_ANNOTATION_LEN || strchr(value, '\n')) {
				tw_add(t, cell, xasprintf("%s:", key));
				for (char *s = value; s;) {
					char *nl = strchr(s, '\n');
					if (nl)
						*nl = '\0';
					char *e = util_escape_display(s);
					if (strlen(e) > MAX_ANNOTATION_LEN - 2)
						strcpy(e + MAX_ANNOTATION_LEN - 2, "...");
					tw_add(t, xstrdup(""), xasprintf("  %s", e));
					free(e);
					s = nl ? nl + 1 : NULL;
				}
			} else {
				char *e = util_escape_display(value);
				tw_add(t, cell, xasprintf("%s: %s", key, e));
				free(e);
			}
			free(value);
		}
		free(key);
	}
	free(keys);
}

/* ---- kubectl's pod describer (describePod) ---- */

static struct json_object *jpath(struct json_object *o, const char *a, const char *b, const char *c)
{
	const char *ks[3] = { a, b, c };
	for (int i = 0; i < 3 && ks[i] && o; i++)
		if (!json_object_is_type(o, json_type_object) || !json_object_object_get_ex(o, ks[i], &o))
			return NULL;
	return o;
}

/* The escaped string at a path, "" when absent (caller frees). */
static char *jstr(struct json_object *o, const char *a, const char *b, const char *c)
{
	struct json_object *v = jpath(o, a, b, c);
	if (v == NULL || json_object_is_type(v, json_type_null))
		return xstrdup("");
	if (json_object_is_type(v, json_type_string))
		return util_escape_display(json_object_get_string(v));
	return xstrdup(json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN));
}

static size_t jlen(struct json_object *a)
{
	return a && json_object_is_type(a, json_type_array) ? json_object_array_length(a) : 0;
}

/* RFC 1123 with a numeric zone, in local time, as Go's time.RFC1123Z prints kubectl's times. */
static char *rfc1123z(const char *iso)
{
	struct tm tm = { 0 };
	if (iso == NULL || strptime(iso, "%Y-%m-%dT%H:%M:%S", &tm) == NULL)
		return xstrdup(iso ? iso : "");
	time_t t = timegm(&tm);
	struct tm lt;
	localtime_r(&t, &lt);
	char out[64];
	strftime(out, sizeof out, "%a, %d %b %Y %H:%M:%S %z", &lt);
	return xstrdup(out);
}

static void container_state(struct tw *t, const char *title, struct json_object *st)
{
	struct json_object *r = jpath(st, "running", NULL, NULL), *w = jpath(st, "waiting", NULL, NULL),
			   *x = jpath(st, "terminated", NULL, NULL);
	if (r) {
		buf_printf(&t->b, "    %s:\tRunning\n", title);
		char *s = rfc1123z(json_object_get_string(jpath(r, "startedAt", NULL, NULL)));
		buf_printf(&t->b, "      Started:\t%s\n", s);
		free(s);
	} else if (w) {
		buf_printf(&t->b, "    %s:\tWaiting\n", title);
		char *rs = jstr(w, "reason", NULL, NULL);
		if (*rs)
			buf_printf(&t->b, "      Reason:\t%s\n", rs);
		free(rs);
	} else if (x) {
		buf_printf(&t->b, "    %s:\tTerminated\n", title);
		char *rs = jstr(x, "reason", NULL, NULL), *ms = jstr(x, "message", NULL, NULL), *ec = jstr(x, "exitCode", NULL, NULL);
		if (*rs)
			buf_printf(&t->b, "      Reason:\t%s\n", rs);
		if (*ms)
			buf_printf(&t->b, "      Message:\t%s\n", ms);
		buf_printf(&t->b, "      Exit Code:\t%s\n", *ec ? ec : "0");
		struct json_object *sig = jpath(x, "signal", NULL, NULL);
		if (sig && json_object_get_int(sig) > 0)
			buf_printf(&t->b, "      Signal:\t%d\n", json_object_get_int(sig));
		char *st0 = rfc1123z(json_object_get_string(jpath(x, "startedAt", NULL, NULL)));
		char *fi = rfc1123z(json_object_get_string(jpath(x, "finishedAt", NULL, NULL)));
		buf_printf(&t->b, "      Started:\t%s\n      Finished:\t%s\n", st0, fi);
		free(st0);
		free(fi);
		free(rs);
		free(ms);
		free(ec);
	} else {
		buf_printf(&t->b, "    %s:\tWaiting\n", title);
	}
}

static void resources(struct tw *t, struct json_object *res, const char *which, const char *title)
{
	struct json_object *m = jpath(res, which, NULL, NULL);
	if (m == NULL || !json_object_is_type(m, json_type_object) || json_object_object_length(m) == 0)
		return;
	buf_printf(&t->b, "    %s:\n", title);
	size_t n = (size_t)json_object_object_length(m), k = 0;
	const char **keys = xcalloc(n, sizeof *keys);
	json_object_object_foreach(m, key, val)
	{
		(void)val;
		keys[k++] = key;
	}
	qsort(keys, k, sizeof *keys, cmp_str);
	for (size_t i = 0; i < k; i++) {
		char *kk = util_escape_display(keys[i]), *v = jstr(m, keys[i], NULL, NULL);
		buf_printf(&t->b, "      %s:\t%s\n", kk, v);
		free(kk);
		free(v);
	}
	free(keys);
}

static void describe_containers(struct tw *t, const char *label, struct json_object *cs, struct json_object *statuses)
{
	if (jlen(cs) == 0)
		return;
	buf_printf(&t->b, "%s:\n", label);
	for (size_t i = 0; i < jlen(cs); i++) {
		struct json_object *c = json_object_array_get_idx(cs, i), *st = NULL;
		const char *cname = json_object_get_string(jpath(c, "name", NULL, NULL));
		for (size_t j = 0; j < jlen(statuses); j++) {
			struct json_object *x = json_object_array_get_idx(statuses, j);
			if (util_str_eq(json_object_get_string(jpath(x, "name", NULL, NULL)), cname))
				st = x;
		}
		char *n = util_escape_display(cname), *img = jstr(c, "image", NULL, NULL);
		buf_printf(&t->b, "  %s:\n", n);
		if (st) {
			char *id = jstr(st, "containerID", NULL, NULL);
			buf_printf(&t->b, "    Container ID:\t%s\n", id);
			free(id);
		}
		buf_printf(&t->b, "    Image:\t%s\n", img);
		if (st) {
			char *id = jstr(st, "imageID", NULL, NULL);
			buf_printf(&t->b, "    Image ID:\t%s\n", id);
			free(id);
		}
		struct json_object *ports = jpath(c, "ports", NULL, NULL);
		struct buf pb, hb;
		buf_init(&pb);
		buf_init(&hb);
		for (size_t j = 0; j < jlen(ports); j++) {
			struct json_object *p = json_object_array_get_idx(ports, j);
			char *cp = jstr(p, "containerPort", NULL, NULL), *pr = jstr(p, "protocol", NULL, NULL);
			char *hp = jstr(p, "hostPort", NULL, NULL);
			buf_printf(&pb, "%s%s/%s", j ? ", " : "", cp, *pr ? pr : "TCP");
			buf_printf(&hb, "%s%s/%s", j ? ", " : "", *hp ? hp : "0", *pr ? pr : "TCP");
			free(cp);
			free(pr);
			free(hp);
		}
		buf_printf(&t->b, "    %s:\t%s\n", jlen(ports) > 1 ? "Ports" : "Port", pb.len ? pb.data : "<none>");
		buf_printf(&t->b, "    %s:\t%s\n", jlen(ports) > 1 ? "Host Ports" : "Host Port", hb.len ? hb.data : "<none>");
		buf_free(&pb);
		buf_free(&hb);
		static const char *const lists[2][2] = { { "command", "Command" }, { "args", "Args" } };
		for (int l = 0; l < 2; l++) {
			struct json_object *a = jpath(c, lists[l][0], NULL, NULL);
			if (jlen(a) == 0)
				continue;
			buf_printf(&t->b, "    %s:\n", lists[l][1]);
			for (size_t j = 0; j < jlen(a); j++) {
				char *copy = xstrdup(json_object_get_string(json_object_array_get_idx(a, j)));
				for (char *p = copy; p;) {
					char *nl = strchr(p, '\n');
					if (nl)
						*nl = '\0';
					char *e = util_escape_display(p);
					buf_printf(&t->b, "      %s\n", e);
					free(e);
					p = nl ? nl + 1 : NULL;
				}
				free(copy);
			}
		}
		if (st) {
			container_state(t, "State", jpath(st, "state", NULL, NULL));
			if (jpath(st, "lastState", "terminated", NULL))
				container_state(t, "Last State", jpath(st, "lastState", NULL, NULL));
			struct json_object *ready = jpath(st, "ready", NULL, NULL);
			buf_printf(&t->b, "    Ready:\t%s\n", ready && json_object_get_boolean(ready) ? "True" : "False");
			char *rc = jstr(st, "restartCount", NULL, NULL);
			buf_printf(&t->b, "    Restart Count:\t%s\n", *rc ? rc : "0");
			free(rc);
		}
		resources(t, jpath(c, "resources", NULL, NULL), "limits", "Limits");
		resources(t, jpath(c, "resources", NULL, NULL), "requests", "Requests");
		struct json_object *env = jpath(c, "env", NULL, NULL);
		buf_printf(&t->b, "    Environment:%s\n", jlen(env) ? "" : "\t<none>");
		for (size_t j = 0; j < jlen(env); j++) {
			struct json_object *e = json_object_array_get_idx(env, j);
			char *en = jstr(e, "name", NULL, NULL), *ev = jstr(e, "value", NULL, NULL);
			buf_printf(&t->b, "      %s:\t%s\n", en, jpath(e, "valueFrom", NULL, NULL) ? "<set from a source>" : ev);
			free(en);
			free(ev);
		}
		struct json_object *mounts = jpath(c, "volumeMounts", NULL, NULL);
		buf_printf(&t->b, "    Mounts:%s\n", jlen(mounts) ? "" : "\t<none>");
		for (size_t j = 0; j < jlen(mounts); j++) {
			struct json_object *m = json_object_array_get_idx(mounts, j), *ro = jpath(m, "readOnly", NULL, NULL);
			char *mp = jstr(m, "mountPath", NULL, NULL), *mn = jstr(m, "name", NULL, NULL);
			buf_printf(&t->b, "      %s from %s (%s)\n", mp, mn, ro && json_object_get_boolean(ro) ? "ro" : "rw");
			free(mp);
			free(mn);
		}
		free(n);
		free(img);
	}
}

static void describe_volumes(struct tw *t, struct json_object *vols)
{
	if (jlen(vols) == 0) {
		buf_add_str(&t->b, "Volumes:\t<none>\n");
		return;
	}
	buf_add_str(&t->b, "Volumes:\n");
	for (size_t i = 0; i < jlen(vols); i++) {
		struct json_object *v = json_object_array_get_idx(vols, i), *x;
		char *n = jstr(v, "name", NULL, NULL);
		buf_printf(&t->b, "  %s:\n", n);
		free(n);
		if ((x = jpath(v, "emptyDir", NULL, NULL))) {
			char *m = jstr(x, "medium", NULL, NULL), *sl = jstr(x, "sizeLimit", NULL, NULL);
			buf_printf(&t->b, "    Type:\tEmptyDir (a temporary directory that shares a pod's lifetime)\n"
					  "    Medium:\t%s\n    SizeLimit:\t%s\n", m, *sl ? sl : "<unset>");
			free(m);
			free(sl);
		} else if ((x = jpath(v, "persistentVolumeClaim", NULL, NULL))) {
			char *cn = jstr(x, "claimName", NULL, NULL);
			struct json_object *ro = jpath(x, "readOnly", NULL, NULL);
			buf_printf(&t->b, "    Type:\tPersistentVolumeClaim (a reference to a PersistentVolumeClaim in the same "
					  "namespace)\n    ClaimName:\t%s\n    ReadOnly:\t%s\n",
				   cn, ro && json_object_get_boolean(ro) ? "true" : "false");
			free(cn);
		} else if ((x = jpath(v, "hostPath", NULL, NULL))) {
			char *hp = jstr(x, "path", NULL, NULL), *ty = jstr(x, "type", NULL, NULL);
			buf_printf(&t->b, "    Type:\tHostPath (bare host directory volume)\n    Path:\t%s\n    HostPathType:\t%s\n",
				   hp, ty);
			free(hp);
			free(ty);
		} else {
			buf_add_str(&t->b, "  <unknown>\n");
		}
	}
}

/* status.qosClass, else what the kubelet computes (GetPodQOS: no cpu/memory anywhere BestEffort; limits for both
 * on every container with equal requests Guaranteed; Burstable otherwise). */
static const char *pod_qos(struct json_object *spec)
{
	bool any = false, guaranteed = true;
	static const char *const lists[2] = { "containers", "initContainers" };
	static const char *const res[2] = { "cpu", "memory" };
	for (int l = 0; l < 2; l++) {
		struct json_object *cs = jpath(spec, lists[l], NULL, NULL);
		for (size_t i = 0; i < jlen(cs); i++) {
			struct json_object *r = jpath(json_object_array_get_idx(cs, i), "resources", NULL, NULL);
			for (int k = 0; k < 2; k++) {
				struct json_object *lim = jpath(r, "limits", res[k], NULL), *req = jpath(r, "requests", res[k], NULL);
				if (lim || req)
					any = true;
				if (lim == NULL || (req && strcmp(json_object_get_string(req), json_object_get_string(lim)) != 0))
					guaranteed = false;
			}
		}
	}
	return !any ? "BestEffort" : guaranteed ? "Guaranteed" : "Burstable";
}

static void describe_pod(struct tw *t, struct json_object *o)
{
	struct json_object *spec = jpath(o, "spec", NULL, NULL), *status = jpath(o, "status", NULL, NULL);
	struct json_object *md = jpath(o, "metadata", NULL, NULL);
	char *v;
	if (jpath(spec, "priority", NULL, NULL)) {
		v = jstr(spec, "priority", NULL, NULL);
		buf_printf(&t->b, "Priority:\t%s\n", v);
		free(v);
	}
	v = jstr(spec, "priorityClassName", NULL, NULL);
	if (*v)
		buf_printf(&t->b, "Priority Class Name:\t%s\n", v);
	free(v);
	v = jstr(spec, "runtimeClassName", NULL, NULL);
	if (*v)
		buf_printf(&t->b, "Runtime Class Name:\t%s\n", v);
	free(v);
	v = jstr(spec, "serviceAccountName", NULL, NULL);
	if (*v)
		buf_printf(&t->b, "Service Account:\t%s\n", v);
	free(v);
	char *node = jstr(spec, "nodeName", NULL, NULL), *hip = jstr(status, "hostIP", NULL, NULL);
	if (*node)
		buf_printf(&t->b, "Node:\t%s/%s\n", node, hip);
	else
		buf_add_str(&t->b, "Node:\t<none>\n");
	free(node);
	free(hip);
	if (jpath(status, "startTime", NULL, NULL)) {
		v = rfc1123z(json_object_get_string(jpath(status, "startTime", NULL, NULL)));
		buf_printf(&t->b, "Start Time:\t%s\n", v);
		free(v);
	}
	print_map_multiline(t, "Labels", md ? json_object_object_get(md, "labels") : NULL, false);
	print_map_multiline(t, "Annotations", md ? json_object_object_get(md, "annotations") : NULL, true);
	char *phase = jstr(status, "phase", NULL, NULL);
	if (jpath(md, "deletionTimestamp", NULL, NULL) && strcmp(phase, "Failed") != 0 && strcmp(phase, "Succeeded") != 0) {
		buf_add_str(&t->b, "Status:\tTerminating\n");
	} else {
		buf_printf(&t->b, "Status:\t%s\n", phase);
	}
	free(phase);
	v = jstr(status, "reason", NULL, NULL);
	if (*v)
		buf_printf(&t->b, "Reason:\t%s\n", v);
	free(v);
	v = jstr(status, "message", NULL, NULL);
	if (*v)
		buf_printf(&t->b, "Message:\t%s\n", v);
	free(v);
	v = jstr(status, "podIP", NULL, NULL);
	buf_printf(&t->b, "IP:\t%s\n", v);
	free(v);
	struct json_object *ips = jpath(status, "podIPs", NULL, NULL);
	if (jlen(ips) == 0) {
		buf_add_str(&t->b, "IPs:\t<none>\n");
	} else {
		buf_add_str(&t->b, "IPs:\n");
		for (size_t i = 0; i < jlen(ips); i++) {
			v = jstr(json_object_array_get_idx(ips, i), "ip", NULL, NULL);
			buf_printf(&t->b, "  IP:\t%s\n", v);
			free(v);
		}
	}
	struct json_object *owners = jpath(md, "ownerReferences", NULL, NULL);
	for (size_t i = 0; i < jlen(owners); i++) {
		struct json_object *r = json_object_array_get_idx(owners, i), *ctl = jpath(r, "controller", NULL, NULL);
		if (ctl && json_object_get_boolean(ctl)) {
			char *k = jstr(r, "kind", NULL, NULL), *n = jstr(r, "name", NULL, NULL);
			buf_printf(&t->b, "Controlled By:\t%s/%s\n", k, n);
			free(k);
			free(n);
			break;
		}
	}
	v = jstr(status, "nominatedNodeName", NULL, NULL);
	if (*v)
		buf_printf(&t->b, "NominatedNodeName:\t%s\n", v);
	free(v);
	describe_containers(t, "Init Containers", jpath(spec, "initContainers", NULL, NULL),
			    jpath(status, "initContainerStatuses", NULL, NULL));
	struct json_object *cs = jpath(spec, "containers", NULL, NULL);
	if (jlen(cs) == 0)
		buf_add_str(&t->b, "Containers: <none>\n");
	describe_containers(t, "Containers", cs, jpath(status, "containerStatuses", NULL, NULL));
	struct json_object *conds = jpath(status, "conditions", NULL, NULL);
	if (jlen(conds)) {
		buf_add_str(&t->b, "Conditions:\n  Type\tStatus\n");
		for (size_t i = 0; i < jlen(conds); i++) {
			struct json_object *c = json_object_array_get_idx(conds, i);
			char *ty = jstr(c, "type", NULL, NULL), *st = jstr(c, "status", NULL, NULL);
			buf_printf(&t->b, "  %s \t%s \n", ty, st);
			free(ty);
			free(st);
		}
	}
	describe_volumes(t, jpath(spec, "volumes", NULL, NULL));
	v = jstr(status, "qosClass", NULL, NULL);
	buf_printf(&t->b, "QoS Class:\t%s\n", *v ? v : pod_qos(spec));
	free(v);
	print_map_multiline(t, "Node-Selectors", jpath(spec, "nodeSelector", NULL, NULL), false);
	struct json_object *tols = jpath(spec, "tolerations", NULL, NULL);
	buf_add_str(&t->b, "Tolerations:\t");
	if (jlen(tols) == 0)
		buf_add_str(&t->b, "<none>\n");
	for (size_t i = 0; i < jlen(tols); i++) { /* kubectl sorts them by key (sort.Slice: not stable) */
		struct json_object *x = json_object_array_get_idx(tols, i);
		char *key = jstr(x, "key", NULL, NULL), *val = jstr(x, "value", NULL, NULL), *eff = jstr(x, "effect", NULL, NULL);
		char *op = jstr(x, "operator", NULL, NULL);
		if (i)
			buf_add_str(&t->b, "\t");
		buf_add_str(&t->b, key);
		if (*val)
			buf_printf(&t->b, "=%s", val);
		if (*eff)
			buf_printf(&t->b, ":%s", eff);
		if (strcmp(op, "Exists") == 0 && !*val)
			buf_add_str(&t->b, *key || *eff ? " op=Exists" : "op=Exists");
		if (jpath(x, "tolerationSeconds", NULL, NULL)) {
			char *ts = jstr(x, "tolerationSeconds", NULL, NULL);
			buf_printf(&t->b, " for %ss", ts);
			free(ts);
		}
		buf_add_str(&t->b, "\n");
		free(key);
		free(val);
		free(eff);
		free(op);
	}
}

/* ---- events ---- */

static int cmp_event(const void *a, const void *b)
{
	const struct event *x = *(const struct event *const *)a, *y = *(const struct event *const *)b;
	return x->last < y->last ? -1 : x->last > y->last;
}

/* Flushes main first (kubectl's w.Flush()), unless there are no events: "Events: <none>" joins its last block. */
static void print_events(FILE *f, struct tw *main_tw, const struct store *st, struct source *src, const char *ns,
			 const char *name, const char *uid, enum obj_kind kind)
{
	size_t n;
	struct obj *const *all = store_objs(st, src, OBJ_EVENT, &n);
	const struct event **mine = xcalloc(n ? n : 1, sizeof *mine);
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		const struct event *e = (const struct event *)all[i];
		if (strcmp(e->o.ns, ns) != 0)
			continue;
		if (e->inv_uid[0] ? strcmp(e->inv_uid, uid) == 0
				  : util_str_eq(e->inv_name, name) && util_str_eq(e->inv_kind, obj_kind_title(kind)))
			mine[k++] = e;
	}
	if (k == 0) {
		tw_kv(main_tw, 0, "Events", "<none>");
		tw_flush(main_tw, f);
		free(mine);
		return;
	}
	tw_flush(main_tw, f);
	qsort(mine, k, sizeof *mine, cmp_event);
	struct tw t;
	buf_init(&t.b);
	buf_add_str(&t.b, "Events:\n  Type\tReason\tAge\tFrom\tMessage\n  ----\t------\t----\t----\t-------\n");
	char *(*cells)[5] = xcalloc(k, sizeof *cells);
	int64_t now = util_wall_s();
	for (size_t i = 0; i < k; i++) {
		const struct event *e = mine[i];
		char first[32], last[32];
		util_human_duration(now - (e->first ? e->first : e->last), first, sizeof first);
		util_human_duration(now - e->last, last, sizeof last);
		char *age = e->count > 1 ? xasprintf("%s (x%d over %s)", last, e->count, first) : xstrdup(first);
		cells[i][0] = util_escape_display(e->type);
		cells[i][1] = util_escape_display(e->reason);
		cells[i][2] = age;
		cells[i][3] = util_escape_display(e->component);
		char *msg = util_escape_display(e->message);
		size_t ml = strlen(msg);
		while (ml > 0 && msg[ml - 1] == ' ')
			msg[--ml] = '\0';
		cells[i][4] = msg;
		buf_printf(&t.b, "  %s\t%s\t%s\t%s\t%s\n", cells[i][0], cells[i][1], cells[i][2], cells[i][3], cells[i][4]);
	}
	tw_flush(&t, f);
	buf_free(&t.b);
	for (size_t i = 0; i < k; i++)
		for (int c = 0; c < 5; c++)
			free(cells[i][c]);
	free(cells);
	free(mine);
}

int describe_text(const struct store *st, struct source *src, enum obj_kind kind, const char *ns_, const char *name_,
		  const char *json, FILE *f)
{
	struct json_object *o = json_tokener_parse(json);
	if (o == NULL || !json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		return -1;
	}
	struct tw t;
	buf_init(&t.b);
	struct json_object *md = json_object_object_get(o, "metadata");
	char *name = util_escape_display(name_), *ns = util_escape_display(ns_);
	tw_kv(&t, 0, "Name", name);
	tw_kv(&t, 0, "Namespace", ns);
	free(name);
	free(ns);
	if (kind == OBJ_POD) {
		describe_pod(&t, o);
	} else {
		print_map_multiline(&t, "Labels", md ? json_object_object_get(md, "labels") : NULL, false);
		print_map_multiline(&t, "Annotations", md ? json_object_object_get(md, "annotations") : NULL, true);
		print_content(&t, 0, o, "");
	}
	struct json_object *uid = md ? json_object_object_get(md, "uid") : NULL;
	const struct obj *so = store_find(st, src, kind, ns_, name_);
	print_events(f, &t, st, src, ns_, name_, uid ? json_object_get_string(uid) : so ? so->uid : "", kind);
	buf_free(&t.b);
	json_object_put(o);
	return 0;
}
