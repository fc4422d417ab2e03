/* kvcon describe vm|vmi|pod NS/NAME: the object in kubectl describe's layout for custom resources (its generic
 * describer): Name, Namespace, Labels, Annotations, then every field of the object with camelCase keys turned
 * into "Title Words", keys sorted, maps and lists indented two spaces a level, columns aligned as Go's
 * tabwriter aligns them (a run of consecutive "Key:<tab>value" lines shares one column width), then the events
 * of the object, oldest first (newest last), with kubectl's Type/Reason/Age/From/Message table.
 * The object comes from its source's provider (fetch_raw: the API object on a cluster, the engine's record
 * for an engine VM); events from the store the session listed. Every string is display-escaped. */
#include "cmd/cmd_describe.h"

#include <ctype.h>
#include <json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/session.h"
#include "core/buf.h"
#include "core/loop.h"
#include "core/opts.h"
#include "core/util.h"
#include "core/xmalloc.h"
#include "model/obj.h"

#define MAX_ANNOTATION_LEN 140

/* ---- Go's tabwriter, for one tab a line (cell, then the rest) ---- */

/* tabwriter measures cells in runes */
static int runes(const char *s)
{
	int n = 0;
	for (; *s; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}

struct tw_line {
	char *cell; /* NULL: the line has no tab (ends a block) */
	char *rest;
};

struct tw {
	struct tw_line *l;
	size_t n, cap;
};

static void tw_add(struct tw *t, char *cell, char *rest)
{
	if (t->n == t->cap) {
		t->cap = t->cap ? t->cap * 2 : 64;
		t->l = xreallocarray(t->l, t->cap, sizeof *t->l);
	}
	t->l[t->n].cell = cell;
	t->l[t->n].rest = rest;
	t->n++;
}

/* A line "indent + text" with no tab. */
static void tw_plain(struct tw *t, int level, const char *text)
{
	tw_add(t, NULL, xasprintf("%*s%s", level * 2, "", text));
}

static void tw_kv(struct tw *t, int level, const char *key, const char *value)
{
	tw_add(t, xasprintf("%*s%s:", level * 2, "", key), xstrdup(value));
}

static void tw_flush(struct tw *t, FILE *f)
{
	for (size_t i = 0; i < t->n;) {
		if (t->l[i].cell == NULL) {
			fprintf(f, "%s\n", t->l[i].rest);
			free(t->l[i].rest);
			i++;
			continue;
		}
		size_t j = i;
		int w = 0;
		while (j < t->n && t->l[j].cell) {
			int cw = runes(t->l[j].cell);
			if (cw > w)
				w = cw;
			j++;
		}
		for (size_t k = i; k < j; k++) {
			int cw = runes(t->l[k].cell);
			fprintf(f, "%s%*s%s\n", t->l[k].cell, w + 2 - cw, "", t->l[k].rest);
			free(t->l[k].cell);
			free(t->l[k].rest);
		}
		i = j;
	}
	t->n = 0;
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

/* ---- events ---- */

static int cmp_event(const void *a, const void *b)
{
	const struct event *x = *(const struct event *const *)a, *y = *(const struct event *const *)b;
	return x->last < y->last ? -1 : x->last > y->last;
}

static void print_events(FILE *f, const struct store *st, struct source *src, const char *ns, const char *name,
			 const char *uid, enum obj_kind kind)
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
		fprintf(f, "Events:       <none>\n");
		free(mine);
		return;
	}
	qsort(mine, k, sizeof *mine, cmp_event);
	/* five columns, aligned per column like tabwriter */
	const char *hdr[5] = { "Type", "Reason", "Age", "From", "Message" };
	const char *dash[5] = { "----", "------", "----", "----", "-------" };
	char *(*cells)[5] = xcalloc(k, sizeof *cells);
	int w[4] = { 4, 6, 4, 4 };
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
		for (int c = 0; c < 4; c++) {
			int cw = runes(cells[i][c]);
			if (cw > w[c])
				w[c] = cw;
		}
	}
	fprintf(f, "Events:\n");
	for (int row = -2; row < (int)k; row++) {
		const char *const *r = row == -2 ? hdr : row == -1 ? dash : (const char *const *)cells[row];
		fprintf(f, "  ");
		for (int c = 0; c < 4; c++)
			fprintf(f, "%s%*s", r[c], w[c] + 2 - runes(r[c]), "");
		fprintf(f, "%s\n", r[4]);
	}
	for (size_t i = 0; i < k; i++)
		for (int c = 0; c < 5; c++)
			free(cells[i][c]);
	free(cells);
	free(mine);
}

/* ---- the command ---- */

static const struct {
	const char *names[4];
	enum obj_kind kind;
	const char *gr;
} kinds[] = {
	{ { "vm", "vms", "virtualmachine", "virtualmachines" }, OBJ_VM, "virtualmachines.kubevirt.io" },
	{ { "vmi", "vmis", "virtualmachineinstance", "virtualmachineinstances" }, OBJ_VMI,
	  "virtualmachineinstances.kubevirt.io" },
	{ { "pod", "pods", "po", "launcher" }, OBJ_POD, "pods" },
};

static int find_kind(const char *s, size_t n)
{
	for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
		for (int j = 0; j < 4; j++)
			if (strlen(kinds[i].names[j]) == n && strncmp(kinds[i].names[j], s, n) == 0)
				return (int)i;
	return -1;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: kvcon describe vm|vmi|pod NAMESPACE/NAME   (or KIND/NAME -n NAMESPACE)\n"
		   "The object in kubectl describe's layout, then its events (newest last).\n");
}

struct fetch {
	bool done;
	int status;
	char *body;
};

static void fetched(void *arg, int status, const char *body, size_t len)
{
	struct fetch *x = arg;
	x->done = true;
	x->status = status;
	x->body = xstrndup(body ? body : "", len);
}

int describe_text(const struct store *st, struct source *src, enum obj_kind kind, const char *ns_, const char *name_,
		  const char *json, FILE *f)
{
	struct json_object *o = json_tokener_parse(json);
	if (o == NULL || !json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		return -1;
	}
	struct tw t = { 0 };
	struct json_object *md = json_object_object_get(o, "metadata");
	char *name = util_escape_display(name_), *ns = util_escape_display(ns_);
	tw_kv(&t, 0, "Name", name);
	tw_kv(&t, 0, "Namespace", ns);
	free(name);
	free(ns);
	print_map_multiline(&t, "Labels", md ? json_object_object_get(md, "labels") : NULL, false);
	print_map_multiline(&t, "Annotations", md ? json_object_object_get(md, "annotations") : NULL, true);
	print_content(&t, 0, o, "");
	tw_flush(&t, f);
	free(t.l);
	struct json_object *uid = md ? json_object_object_get(md, "uid") : NULL;
	const struct obj *so = store_find(st, src, kind, ns_, name_);
	print_events(f, st, src, ns_, name_, uid ? json_object_get_string(uid) : so ? so->uid : "", kind);
	json_object_put(o);
	return 0;
}

int cmd_describe(int argc, char **argv)
{
	int ki = -1;
	const char *ref = NULL;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			usage(stdout);
			return EXIT_OK;
		}
		if (a[0] == '-' && a[1]) {
			fprintf(stderr, "error: unknown flag: %s\n", a);
			return EXIT_API;
		}
		const char *sl = strchr(a, '/');
		if (ki < 0 && sl && find_kind(a, (size_t)(sl - a)) >= 0) {
			ki = find_kind(a, (size_t)(sl - a));
			ref = sl + 1;
		} else if (ki < 0) {
			ki = find_kind(a, strlen(a));
			if (ki < 0) {
				fprintf(stderr, "error: the server doesn't have a resource type \"%s\" (kvcon describe: vm, vmi, pod)\n", a);
				return EXIT_API;
			}
		} else if (ref == NULL) {
			ref = a;
		} else {
			fprintf(stderr, "error: unexpected argument '%s'\n", a);
			return EXIT_API;
		}
	}
	if (ki < 0 || ref == NULL) {
		usage(stderr);
		return EXIT_API;
	}
	enum obj_kind kind = kinds[ki].kind;
	struct session s;
	struct fetch x = { 0 };
	int rc = session_open(&s, "describe", ref);
	if (rc != EXIT_OK)
		goto out;
	char *err = NULL;
	if (s.src->ops == NULL || s.src->ops->fetch_raw == NULL ||
	    s.src->ops->fetch_raw(s.src, kind, s.ns, s.name, fetched, &x, &err) < 0) {
		fprintf(stderr, "error: %s\n", err ? err : "this source cannot fetch objects");
		free(err);
		rc = EXIT_API;
		goto out;
	}
	while (!x.done)
		loop_once(1000);
	if (x.status == 404) {
		char *n = util_escape_display(s.name);
		fprintf(stderr, "Error from server (NotFound): %s \"%s\" not found\n", kinds[ki].gr, n);
		free(n);
		rc = EXIT_API;
		goto out;
	}
	if (x.status != 0) {
		char *e = util_escape_display(x.body);
		fprintf(stderr, "error: %s\n", e);
		free(e);
		rc = EXIT_API;
		goto out;
	}
	if (describe_text(s.st, s.src, kind, s.ns, s.name, x.body, stdout) < 0) {
		fprintf(stderr, "error: the object is not JSON\n");
		rc = EXIT_API;
	}
out:
	free(x.body);
	session_close(&s);
	return rc;
}
