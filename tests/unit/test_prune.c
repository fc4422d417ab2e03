/* Pruning before parsing (kube/jprune.c) must never change what the decoder sees. This test records every key
 * the decoder looks up (through the decoder's lookup hook) while
 * decoding the fixtures, and fails naming any key missing from kube_jprune_keys; it also decodes pruned and full
 * objects and compares the results. When the decoder starts reading a new field, this test says which key to add. */
#include <dirent.h>
#include <json.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/util.h"
#include "core/xmalloc.h"
#include "kube/decode.h"
#include "kube/jprune.h"
#include "kube/jstream.h"
#include "kube/jv.h"
#include "t.h"

static bool recording;
static char missing[64][128];
static int nmissing;
static const struct kube_jprune_node *schema; /* the kind's, while decoding a watch event's object */

/* Where each JSON object of the tree being decoded sits ("object/status"), to check each lookup against the
 * schema at the place it happens. */
static struct {
	const struct jv *o;
	char path[256];
} places[4096];
static int nplaces;

static void map_places(const struct jv *o, const char *path)
{
	if (o == NULL)
		return;
	if (o->type == JV_ARRAY) {
		for (size_t i = 0; i < jv_len(o); i++)
			map_places(jv_idx(o, i), path);
		return;
	}
	if (o->type != JV_OBJECT || nplaces >= 4096)
		return;
	places[nplaces].o = o;
	snprintf(places[nplaces].path, sizeof places[0].path, "%s", path);
	nplaces++;
	for (uint32_t i = 0; i < o->n; i++) {
		char sub[256];
		snprintf(sub, sizeof sub, "%s%s%s", path, *path ? "/" : "", o->u.m[i].key);
		map_places(o->u.m[i].v, sub);
	}
}

static void add_missing(const char *what)
{
	for (int i = 0; i < nmissing; i++)
		if (strcmp(missing[i], what) == 0)
			return;
	if (nmissing < 64)
		snprintf(missing[nmissing++], sizeof missing[0], "%s", what);
}

static void record(const struct jv *o, const char *key)
{
	if (!recording || key == NULL)
		return;
	if (kube_jprune_class(key, strlen(key)) == 0)
		add_missing(key);
	for (int i = 0; schema && i < nplaces; i++) {
		if (places[i].o != o)
			continue;
		char path[512];
		snprintf(path, sizeof path, "%s%s%s", places[i].path, places[i].path[0] ? "/" : "", key);
		if (!kube_jprune_keeps(schema, path))
			add_missing(path);
		break;
	}
}

/* every member lookup the decoder makes */
void kube_decode_lookup_hook(const struct jv *o, const char *key)
{
	record(o, key);
}

/* kube_jstream_parse's tree as a json-c tree of its own (the stream's next value reuses the arena) */
static struct json_object *parse_json(struct kube_jstream *js, const char *json, size_t len, bool prune, char **err)
{
	return jv_to_json(kube_jstream_parse(js, json, len, prune, err));
}

static struct source *src;

static void fp_str(struct buf *b, const char *s)
{
	buf_printf(b, "%s|", s ? s : "(null)");
}

static void fp_conds(struct buf *b, const struct cond *c, int n)
{
	for (int i = 0; i < n; i++) {
		fp_str(b, c[i].type);
		fp_str(b, cond_status(&c[i]));
		fp_str(b, c[i].reason);
		fp_str(b, c[i].message);
		buf_printf(b, "%lld|", (long long)c[i].last_transition);
	}
}

/* The decoded content as text (every field, strings by value), for comparing two decodes. */
static char *fingerprint(const struct obj *o)
{
	struct buf b;
	buf_init(&b);
	buf_printf(&b, "%s|%s|%s|%lld,%lld,%llu,%llu|", o->ns, o->name, o->uid, (long long)o->created,
		   (long long)o->deleted, (unsigned long long)o->generation, (unsigned long long)o->rv);
	for (const char *it = NULL, *k, *v; obj_label_next(o, &it, &k, &v);)
		buf_printf(&b, "%s=%s|", k, v);
	if (o->kind == OBJ_VM) {
		const struct vm *v = (const struct vm *)o;
		fp_str(&b, v->run_strategy);
		fp_str(&b, v->printable_status);
		buf_printf(&b, "%d%d%d%d|", v->running_field, v->run_conflict, v->ready, v->created_vmi);
		fp_conds(&b, v->conds, v->nconds);
		for (int i = 0; i < v->nscr; i++)
			buf_printf(&b, "%s:%s|", v->scr[i].action, v->scr[i].uid);
		const struct start_failure *sf = vm_start_failure(v);
		buf_printf(&b, "%d,%lld,%s,%llu,%llu,%d|", sf->failures, (long long)sf->retry_after, sf->vmi,
			   (unsigned long long)v->desired_generation,
			   (unsigned long long)v->observed_generation, v->cpu_cores);
		fp_str(&b, v->instancetype);
		fp_str(&b, v->memory);
	} else if (o->kind == OBJ_VMI) {
		const struct vmi *v = (const struct vmi *)o;
		buf_printf(&b, "%s|", v->vm_uid);
		fp_str(&b, v->phase);
		fp_str(&b, v->reason);
		fp_str(&b, v->node);
		fp_str(&b, v->eviction);
		buf_printf(&b, "%d|", v->software_emulation);
		fp_conds(&b, v->conds, v->nconds);
		fp_str(&b, v->ip);
		for (int i = 0; i < v->nips; i++)
			fp_str(&b, v->ips[i]);
		for (int i = 0; i < v->nphases; i++)
			buf_printf(&b, "%s=%lld|", v->phases[i].phase, (long long)v->phases[i].at);
		fp_str(&b, v->guest_os);
		fp_str(&b, v->agent_version);
		for (int i = 0; i < v->nactive; i++)
			buf_printf(&b, "%s@%s|", v->active[i].uid, v->active[i].node ? v->active[i].node : "");
		const struct migration_state *m = vmi_mig(v);
		buf_printf(&b, "%d|", m->present);
		fp_str(&b, m->source_pod);
		fp_str(&b, m->target_pod);
		fp_str(&b, m->failure_reason);
		fp_str(&b, m->source_node);
		fp_str(&b, m->target_node);
		fp_str(&b, m->abort_status);
		fp_str(&b, m->mode);
		buf_printf(&b, "%s,%lld,%lld|", m->migration_uid, (long long)m->start, (long long)m->end);
		buf_printf(&b, "%d%d%d|", m->completed, m->failed, m->abort_requested);
	} else if (o->kind == OBJ_POD) {
		const struct pod *p = (const struct pod *)o;
		buf_printf(&b, "%s|%s|", p->vmi_uid, pod_created_by(p));
		fp_str(&b, p->owner_kind_other);
		fp_str(&b, p->vm_name);
		fp_str(&b, p->phase);
		fp_str(&b, p->node);
		fp_str(&b, p->reason);
		fp_conds(&b, p->conds, p->nconds);
		fp_str(&b, p->message);
		fp_str(&b, p->ip);
		buf_printf(&b, "%d,%d,%d|", p->ready_containers, p->spec_containers, p->restarts);
		for (int i = 0; i < p->ncontainers; i++) {
			const struct container_status *c = &p->containers[i];
			fp_str(&b, c->name);
			fp_str(&b, c->state);
			fp_str(&b, c->reason);
			fp_str(&b, c->message);
			fp_str(&b, c->last_reason);
			buf_printf(&b, "%d,%d,%d,%lld,%d,%d|", c->restarts, c->ready, c->exit_code, (long long)c->started,
				   c->init, c->last_exit_code);
		}
	} else {
		const struct event *e = (const struct event *)o;
		fp_str(&b, e->type);
		fp_str(&b, e->reason);
		fp_str(&b, e->message);
		fp_str(&b, e->inv_kind);
		fp_str(&b, e->inv_name);
		fp_str(&b, e->inv_ns);
		fp_str(&b, e->component);
		buf_printf(&b, "%s|%d,%lld,%lld|", e->inv_uid, e->count, (long long)e->first, (long long)e->last);
	}
	return buf_steal(&b);
}
static int compared;

/* Decodes json parsed whole, pruned by key name, and pruned by the kind's schema: all three must agree. */
static void compare_decodes(enum obj_kind kind, const char *json, size_t len, const char *what)
{
	struct kube_jstream *js = kube_jstream_new(1 << 24);
	char *err = NULL;
	struct json_object *full = parse_json(js, json, len, false, &err), *by_schema_obj = NULL;
	free(err);
	err = NULL;
	struct json_object *by_name = parse_json(js, json, len, true, &err);
	free(err);
	err = NULL;
	/* the schema prunes what the reflector is fed: a bare object goes in a watch event */
	kube_jstream_set_schema(js, kube_jprune_schema(kind));
	bool bare = full && !json_object_object_get_ex(full, "object", NULL);
	char *wrapped = bare ? xasprintf("{\"type\":\"ADDED\",\"object\":%.*s}", (int)len, json) : NULL;
	/* the watch path's own tree (the pruner's, in the stream's arena) decoded as it is, before the copies */
	struct jv *direct = kube_jstream_parse(js, bare ? wrapped : json, bare ? strlen(wrapped) : len, true, &err);
	free(err);
	err = NULL;
	struct obj *d = direct ? kube_decode_jv(kind, jv_get(direct, "object"), src, NULL) : NULL;
	char *fd = d ? fingerprint(d) : NULL;
	struct json_object *by_schema = parse_json(js, bare ? wrapped : json, bare ? strlen(wrapped) : len, true, &err);
	free(wrapped);
	free(err);
	kube_jstream_free(js);
	if (bare && by_schema && !json_object_object_get_ex(by_schema, "object", &by_schema_obj))
		by_schema_obj = NULL;
	if (full == NULL || by_name == NULL || by_schema == NULL) {
		T_CHECK(full == NULL && by_name == NULL && by_schema == NULL);
		free(fd);
		json_object_put(full);
		json_object_put(by_name);
		json_object_put(by_schema);
		return;
	}
	/* a watch event: decode its object (the schema's paths start at the event) */
	struct json_object *fo = full, *x, *pruned[2] = { by_name, bare ? by_schema_obj : by_schema };
	bool event = json_object_object_get_ex(full, "object", &x);
	if (event) {
		fo = x;
		for (int i = 0; i < 2; i++)
			json_object_object_get_ex(pruned[i], "object", &pruned[i]);
	}
	/* the decoder reads a jv tree: the places are that tree's */
	struct jv_arena *arena = jv_arena_new();
	struct jv *fo_jv = jv_from_json(arena, fo);
	nplaces = 0;
	map_places(fo_jv, "object");
	schema = kube_jprune_schema(kind);
	recording = true;
	char *e1 = NULL;
	struct obj *a = kube_decode_jv(kind, fo_jv, src, &e1);
	a = a ? obj_pack_copy(a) : NULL;
	recording = false;
	jv_arena_free(arena);
	schema = NULL;
	char *fa = a ? fingerprint(a) : NULL;
	if (a && fd) {
		T_EQ_STR(fa, fd);
		if (strcmp(fa, fd) != 0)
			fprintf(stderr, "  (%s, the pruner's tree decoded directly)\n", what);
	}
	free(fd);
	for (int i = 0; i < 2; i++) {
		char *e2 = NULL;
		struct obj *b = kube_decode(kind, pruned[i], src, &e2);
		T_CHECK((a == NULL) == (b == NULL));
		T_EQ_STR(e1 ? e1 : "", e2 ? e2 : "");
		if (a && b) {
			compared++;
			char *fb = fingerprint(b);
			T_EQ_STR(fa, fb);
			if (strcmp(fa, fb) != 0)
				fprintf(stderr, "  (%s, %s)\n", what, i ? "pruned by schema" : "pruned by key name");
			free(fb);
		}
		obj_free(b);
		free(e2);
	}
	free(fa);
	obj_free(a);
	free(e1);
	json_object_put(full);
	json_object_put(by_name);
	json_object_put(by_schema);
}

static enum obj_kind kind_of_file(const char *name)
{
	if (strstr(name, "VirtualMachineInstance") || strstr(name, "vmi"))
		return OBJ_VMI;
	if (strstr(name, "VirtualMachine") || strstr(name, "vm-"))
		return OBJ_VM;
	if (strstr(name, "pod"))
		return OBJ_POD;
	return OBJ_EVENT;
}

static void run_dir(const char *dir, bool lines)
{
	DIR *d = opendir(dir);
	if (d == NULL) {
		fprintf(stderr, "%s: missing\n", dir);
		t_failures++;
		return;
	}
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char *p = util_path_join(dir, e->d_name);
		size_t len;
		char *text = util_read_file(p, &len);
		enum obj_kind k = kind_of_file(e->d_name);
		if (text && lines) {
			for (char *s = text, *nl; *s; s = nl + 1) {
				nl = strchr(s, '\n');
				if (nl == NULL)
					break;
				compare_decodes(k, s, (size_t)(nl - s), p);
			}
		} else if (text) {
			compare_decodes(k, text, len, p);
		}
		free(text);
		free(p);
	}
	closedir(d);
}

/* The tree the pruner builds in one pass: what json-c parses from the pruned text (tests/fuzz/fuzz_jprune.c holds
 * the two to that on every input), and what only json-c reads is refused, so the stream parses the original. */
static void test_prune_tree(const struct kube_jprune_node *vmi)
{
	const char ev[] = "{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"name\":\"a\\\"\\u00e9\\ud83d\\ude00\","
			  "\"name\":\"b\",\"labels\":{\"k\\u0041\":\"v\",\"e\":{}},\"generation\":-12},\"spec\":{\"x\":1},"
			  "\"status\":{\"phase\":\"Running\",\"conditions\":[],\"migrationState\":{}}}}";
	struct json_object *root = NULL, *t = NULL, *x = NULL;
	T_EQ_INT(kube_jprune_tree(vmi, ev, strlen(ev), &root), strlen(ev));
	T_CHECK(json_object_object_get_ex(root, "object", &t) && json_object_object_get_ex(t, "metadata", &x));
	T_EQ_STR(json_object_get_string(json_object_object_get(x, "name")), "b"); /* a repeated key: the last wins */
	T_EQ_INT(json_object_get_int64(json_object_object_get(x, "generation")), -12);
	struct json_object *labels = json_object_object_get(x, "labels");
	T_EQ_STR(json_object_get_string(json_object_object_get(labels, "kA")), "v"); /* escaped free-form key */
	T_CHECK(json_object_object_get_ex(labels, "e", NULL)); /* kept whole: empty members too */
	T_CHECK(!json_object_object_get_ex(t, "spec", NULL));   /* nothing kept: dropped */
	struct json_object *st = json_object_object_get(t, "status");
	T_CHECK(!json_object_object_get_ex(st, "conditions", NULL));
	T_CHECK(json_object_object_get_ex(st, "migrationState", NULL));
	json_object_put(root);
	/* a string escaped as UTF-8 */
	const char utf[] = "{\"object\":{\"metadata\":{\"name\":\"\\u00e9\\u4e2d\\ud83d\\ude00\\n\"}}}";
	root = NULL;
	T_CHECK(kube_jprune_tree(vmi, utf, strlen(utf), &root) > 0);
	x = json_object_object_get(json_object_object_get(json_object_object_get(root, "object"), "metadata"), "name");
	T_EQ_STR(json_object_get_string(x), "\xc3\xa9\xe4\xb8\xad\xf0\x9f\x98\x80\n");
	json_object_put(root);
	/* refused, for json-c to read: a double, an int64 overflow, unpaired surrogates, an unknown escape, a lenient
	 * literal, a NUL byte in a string; a cut value is told apart */
	const char *refused[] = {
		"{\"object\":{\"metadata\":{\"generation\":1.5}}}",
		"{\"object\":{\"metadata\":{\"generation\":9223372036854775808}}}",
		"{\"object\":{\"metadata\":{\"name\":\"\\ud800\"}}}",
		"{\"object\":{\"metadata\":{\"name\":\"\\udc00\"}}}",
		"{\"object\":{\"metadata\":{\"name\":\"\\x\"}}}",
		"{\"object\":{\"status\":{\"phase\":True}}}",
	};
	for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
		root = NULL;
		T_EQ_INT(kube_jprune_tree(vmi, refused[i], strlen(refused[i]), &root), -1);
		T_CHECK(root == NULL);
	}
	const char nul[] = "{\"object\":{\"metadata\":{\"name\":\"a\0b\"}}}";
	T_EQ_INT(kube_jprune_tree(vmi, nul, sizeof nul - 1, &root), -1);
	T_EQ_INT(kube_jprune_tree(vmi, ev, strlen(ev) - 3, &root), -2);
	/* through the stream: a refused value is parsed whole by json-c and still decodes */
	struct kube_jstream *js = kube_jstream_new(1 << 20);
	kube_jstream_set_schema(js, vmi);
	char *err = NULL;
	const char dbl[] = "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"d\",\"namespace\":\"n\",\"uid\":\"u\","
			   "\"generation\":2.0},\"status\":{\"phase\":\"Running\"}}}";
	root = parse_json(js, dbl, strlen(dbl), true, &err);
	T_CHECK(root != NULL && err == NULL);
	struct obj *o = root ? kube_decode(OBJ_VMI, json_object_object_get(root, "object"), src, &err) : NULL;
	T_CHECK(o != NULL);
	if (o)
		T_EQ_STR(o->name, "d");
	obj_free(o);
	json_object_put(root);
	free(err);
	kube_jstream_free(js);
}

static void on_item(void *arg, struct jv *item)
{
	struct jv **seen = arg;
	struct jv *name = jv_get(jv_get(item, "metadata"), "name");
	T_CHECK(jv_is(name, JV_STRING));
	if (seen[0] == NULL)
		seen[0] = item;
	else
		seen[1] = item;
	seen[2] = name;
}

/* The tree in arena memory: a repeated free-form key replaces its value where it first came (json-c's order), a
 * map too large for the linear duplicate check goes to json-c, and a page's items reuse one item's memory. */
static void test_prune_jv(const struct kube_jprune_node *vmi)
{
	struct jv_arena *a = jv_arena_new();
	const char ev[] = "{\"object\":{\"metadata\":{\"labels\":{\"a\":\"1\",\"b\":\"2\",\"a\":\"3\",\"c\":null}}}}";
	struct jv *root = NULL;
	T_EQ_INT(kube_jprune_jv(vmi, ev, strlen(ev), a, &root, NULL, NULL), strlen(ev));
	struct jv *labels = jv_get(jv_get(jv_get(root, "object"), "metadata"), "labels");
	T_CHECK(jv_is(labels, JV_OBJECT) && labels->n == 3);
	struct json_object *jc = json_tokener_parse("{\"a\":\"1\",\"b\":\"2\",\"a\":\"3\",\"c\":null}");
	uint32_t i = 0;
	json_object_object_foreach(jc, k, v)
	{
		if (labels && i < labels->n) {
			T_EQ_STR(labels->u.m[i].key, k);
			const struct jv *lv = labels->u.m[i].v;
			T_EQ_STR(lv ? lv->u.s : "(null)", v ? json_object_get_string(v) : "(null)");
		}
		i++;
	}
	T_EQ_INT(i, 3);
	json_object_put(jc);
	/* 600 labels: refused, and the stream still reads every one through json-c */
	struct buf b;
	buf_init(&b);
	buf_printf(&b, "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"m\",\"uid\":\"u\",\"labels\":{");
	for (int n = 0; n < 600; n++)
		buf_printf(&b, "%s\"k%d\":\"v\"", n ? "," : "", n);
	buf_printf(&b, "}}}}");
	jv_arena_reset(a);
	T_EQ_INT(kube_jprune_jv(vmi, b.data, b.len, a, &root, NULL, NULL), -1);
	struct kube_jstream *js = kube_jstream_new(1 << 20);
	kube_jstream_set_schema(js, vmi);
	char *err = NULL;
	root = kube_jstream_parse(js, b.data, b.len, true, &err);
	labels = jv_get(jv_get(jv_get(root, "object"), "metadata"), "labels");
	T_CHECK(jv_is(labels, JV_OBJECT) && labels->n == 600);
	kube_jstream_free(js);
	free(err);
	buf_free(&b);
	/* a page: each item handed over is built where the one before was */
	const char page[] = "{\"items\":[{\"metadata\":{\"name\":\"x\"}},{\"metadata\":{\"name\":\"y\"}}],"
			    "\"metadata\":{\"continue\":\"c\"}}";
	struct jv *seen[3] = { NULL, NULL, NULL };
	jv_arena_reset(a);
	const struct kube_jprune_node *list = kube_jprune_schema(OBJ_VMI);
	T_EQ_INT(kube_jprune_jv(list, page, strlen(page), a, &root, on_item, seen), strlen(page));
	T_CHECK(seen[0] != NULL && seen[0] == seen[1]);
	T_EQ_STR(jv_is(seen[2], JV_STRING) ? seen[2]->u.s : "", "y");
	T_EQ_INT(jv_len(jv_get(root, "items")), 0);
	struct jv *cont = jv_get(jv_get(root, "metadata"), "continue");
	T_EQ_STR(jv_is(cont, JV_STRING) ? cont->u.s : "", "c");
	jv_arena_free(a);
}

static void test_prune_basics(void)
{
	const char in[] = " {\"metadata\":{\"name\":\"a\\\"b\",\"managedFields\":[{\"x\":{\"f:y\":{}}}],\"labels\":{\"k\":\"v\","
			  "\"spec\":\"kept whole\"}},\"spec\":{\"domain\":{\"devices\":{\"disks\":[1,2]},\"cpu\":{\"cores\":2}}},"
			  "\"junk\":[1,{\"name\":\"x\"}],\"status\":{\"phase\":\"Running\",\"conditions\":[{\"type\":\"Ready\","
			  "\"bogus\":1}]}} ";
	char out[sizeof in];
	ssize_t n = kube_jprune(in, strlen(in), out);
	T_CHECK(n > 0);
	if (n > 0) {
		out[n] = '\0';
		T_EQ_STR(out, "{\"metadata\":{\"name\":\"a\\\"b\",\"labels\":{\"k\":\"v\",\"spec\":\"kept whole\"}},"
			      "\"spec\":{\"domain\":{\"cpu\":{\"cores\":2}}},\"status\":{\"phase\":\"Running\","
			      "\"conditions\":[{\"type\":\"Ready\"}]}}");
	}
	char small[64];
	T_EQ_INT(kube_jprune("{\"a\":", 5, small), -1);
	T_EQ_INT(kube_jprune("{\"name\":1}}", 11, small), -1);
	T_EQ_INT(kube_jprune("{\"name\":\"x}", 11, small), -1);
	T_EQ_INT(kube_jprune("[1,2,]", 6, small) >= 0, 1); /* json-c then decides */
	/* by schema: only the members read at that place; null, {} and [] dropped unless their presence counts;
	 * counted lists become nulls; prefix mode stops at the value's end and tells a cut value from a broken one */
	const struct kube_jprune_node *vmi = kube_jprune_schema(OBJ_VMI), *pod = kube_jprune_schema(OBJ_POD);
	T_CHECK(kube_jprune_keeps(vmi, "object/status/phase"));
	T_CHECK(kube_jprune_keeps(vmi, "object/metadata/labels/anything"));
	T_CHECK(!kube_jprune_keeps(vmi, "object/spec/domain"));
	T_CHECK(kube_jprune_keeps(kube_jprune_schema(OBJ_VM), "object/spec/template/spec/domain/cpu/cores"));
	const char ev[] = "{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"name\":\"a\",\"annotations\":{\"x\":\"y\"}},"
			  "\"spec\":{\"domain\":{\"cpu\":{\"cores\":2}},\"evictionStrategy\":null},\"status\":{\"phase\":"
			  "{\"not\":\"a string\"},\"nodeName\":\"n\",\"conditions\":[{\"type\":\"Ready\",\"lastProbeTime\":null}],"
			  "\"memory\":{},\"migrationState\":{\"x\":1}}}}\n{\"type\"";
	char evout[sizeof ev];
	size_t used = 0;
	n = kube_jprune_prefix(vmi, ev, strlen(ev), evout, &used);
	T_CHECK(n > 0);
	if (n > 0) {
		evout[n] = '\0';
		T_EQ_STR(evout, "{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"name\":\"a\"},\"status\":{\"nodeName\":"
				"\"n\",\"conditions\":[{\"type\":\"Ready\"}],\"migrationState\":{}}}}");
		T_EQ_INT(used, strchr(ev, '\n') - ev);
	}
	T_EQ_INT(kube_jprune_prefix(vmi, ev + used + 1, strlen(ev + used + 1), evout, &used), -2);
	T_EQ_INT(kube_jprune_prefix(vmi, "{\"type\" 1}", 10, evout, &used), -1);
	const char pd[] = "{\"object\":{\"spec\":{\"containers\":[{\"name\":\"compute\"},{},1]}}}";
	char pdout[sizeof pd];
	n = kube_jprune_prefix(pod, pd, strlen(pd), pdout, &used);
	T_CHECK(n > 0);
	if (n > 0) {
		pdout[n] = '\0';
		/* the containers' names stay (kubectl's default container) */
		T_EQ_STR(pdout, "{\"object\":{\"spec\":{\"containers\":[{\"name\":\"compute\"},{},1]}}}");
	}
	test_prune_tree(vmi);
	struct kube_jscan st = { 0 };
	T_EQ_INT(kube_jscan(&st, "{\"a\":\"}\"", 8), 0);
	T_EQ_INT(kube_jscan(&st, "}\n{", 3), 1);
}

/* kget's list pages (kube_jprune_list_schema): the envelope without the items, and each item whole, handed over
 * as json-c would parse it (empty members, nulls, escaped and repeated keys, nesting); a double ends the pruner's
 * run after the items before it, which kget does not print again. */
struct whole_items {
	struct json_object *want; /* json-c's items */
	size_t n;
	int equal;
};

static void on_whole_item(void *arg, struct json_object *it)
{
	struct whole_items *w = arg;
	w->equal += json_object_equal(it, json_object_array_get_idx(w->want, w->n));
	w->n++;
	json_object_put(it);
}

static void test_list_whole(void)
{
	const char page[] = "{\"kind\":\"VirtualMachineList\",\"metadata\":{\"resourceVersion\":\"42\",\"continue\":\"c2\","
			    "\"remainingItemCount\":3},\"items\":[{\"metadata\":{\"name\":\"a\",\"labels\":{},"
			    "\"annotations\":null,\"x\\u0041\":[]},\"spec\":{\"k\":1,\"k\":[1,[2,{}],null],"
			    "\"managedFields\":[{\"f:y\":{}}]},\"status\":{}},null,{\"metadata\":{\"name\":\"\\u001b]0;x\"}}]}";
	struct json_object *whole = json_tokener_parse(page), *items = NULL;
	T_CHECK(json_object_object_get_ex(whole, "items", &items));
	struct jv_arena *a = jv_arena_new();
	struct jv *env = NULL;
	T_EQ_INT(kube_jprune_jv(kube_jprune_list_schema(false), page, strlen(page), a, &env, NULL, NULL), strlen(page));
	struct jv *md = jv_get(env, "metadata"), *rv = jv_get(md, "resourceVersion"), *c = jv_get(md, "continue");
	T_EQ_STR(jv_is(rv, JV_STRING) ? rv->u.s : "", "42");
	T_EQ_STR(jv_is(c, JV_STRING) ? c->u.s : "", "c2");
	T_CHECK(jv_get(env, "items") == NULL);
	jv_arena_free(a);
	struct whole_items w = { items, 0, 0 };
	struct json_object *rest = NULL;
	T_EQ_INT(kube_jprune_tree_each(kube_jprune_list_schema(true), page, strlen(page), &rest, on_whole_item, &w),
		 strlen(page));
	T_EQ_INT(w.n, 3);
	T_EQ_INT(w.equal, 3);
	json_object_put(rest);
	json_object_put(whole);
	/* a double in the second item: the first was handed over, then the pruner gives up */
	const char dbl[] = "{\"items\":[{\"a\":1},{\"b\":1.5},{\"c\":2}]}";
	whole = json_tokener_parse(dbl);
	T_CHECK(json_object_object_get_ex(whole, "items", &items));
	w = (struct whole_items){ items, 0, 0 };
	T_EQ_INT(kube_jprune_tree_each(kube_jprune_list_schema(true), dbl, strlen(dbl), &rest, on_whole_item, &w), -1);
	T_EQ_INT(w.n, 1);
	T_EQ_INT(w.equal, 1);
	json_object_put(whole);
}

int main(void)
{
	src = source_new(SOURCE_KUBE, "prune");
	test_prune_basics();
	test_prune_jv(kube_jprune_schema(OBJ_VMI));
	test_list_whole();
	run_dir("tests/fuzz/corpus/decode", false);
	run_dir("tests/fuzz/corpus/watchstream", true);
	T_CHECK(compared >= 10);
	for (int i = 0; i < nmissing; i++)
		fprintf(stderr, "the decoder reads \"%s\", which kube_jprune_keys or the kind's schema (src/kube/jprune.c) "
			"drops\n", missing[i]);
	T_EQ_INT(nmissing, 0);
	return T_DONE();
}
