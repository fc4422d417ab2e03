/* Pruning before parsing (kube/jprune.c) must never change what the decoder sees. This test records every key
 * the decoder looks up (it interposes json-c's lookup functions) while decoding the fixtures, and fails naming any
 * key missing from kube_jprune_keys; it also decodes pruned and full objects and compares the results. When the
 * decoder starts reading a new field, this test says which key to add. */
#include <dlfcn.h>
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
#include "t.h"

static bool recording;
static char missing[64][64];
static int nmissing;

static void record(const char *key)
{
	if (!recording || key == NULL || kube_jprune_class(key, strlen(key)) != 0)
		return;
	for (int i = 0; i < nmissing; i++)
		if (strcmp(missing[i], key) == 0)
			return;
	if (nmissing < 64)
		snprintf(missing[nmissing++], sizeof missing[0], "%s", key);
}

json_bool json_object_object_get_ex(const struct json_object *o, const char *key, struct json_object **v)
{
	static json_bool (*real)(const struct json_object *, const char *, struct json_object **);
	if (real == NULL)
		*(void **)&real = dlsym(RTLD_NEXT, "json_object_object_get_ex");
	record(key);
	return real(o, key, v);
}

struct json_object *json_object_object_get(const struct json_object *o, const char *key)
{
	static struct json_object *(*real)(const struct json_object *, const char *);
	if (real == NULL)
		*(void **)&real = dlsym(RTLD_NEXT, "json_object_object_get");
	record(key);
	return real(o, key);
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
		fp_str(b, c[i].status);
		fp_str(b, c[i].reason);
		fp_str(b, c[i].message);
		buf_printf(b, "%lld,%lld|", (long long)c[i].last_transition, (long long)c[i].last_probe);
	}
}

/* The decoded content as text (owned strings by value), for comparing two decodes. */
static char *fingerprint(const struct obj *o)
{
	struct buf b;
	buf_init(&b);
	for (const char *p = o->labels; p && *p; p += strlen(p) + 1)
		fp_str(&b, p);
	if (o->kind == OBJ_VM) {
		const struct vm *v = (const struct vm *)o;
		fp_conds(&b, v->conds, v->nconds);
		fp_str(&b, v->instancetype);
		fp_str(&b, v->memory);
	} else if (o->kind == OBJ_VMI) {
		const struct vmi *v = (const struct vmi *)o;
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
		fp_str(&b, vmi_mig(v)->source_pod);
		fp_str(&b, vmi_mig(v)->target_pod);
		fp_str(&b, vmi_mig(v)->failure_reason);
		fp_str(&b, vmi_mig(v)->source_node);
		fp_str(&b, vmi_mig(v)->target_node);
		buf_printf(&b, "%d%d%d|", vmi_mig(v)->completed, vmi_mig(v)->failed, vmi_mig(v)->abort_requested);
	} else if (o->kind == OBJ_POD) {
		const struct pod *p = (const struct pod *)o;
		fp_conds(&b, p->conds, p->nconds);
		fp_str(&b, p->message);
		fp_str(&b, p->ip);
		for (int i = 0; i < p->ncontainers; i++) {
			const struct container_status *c = &p->containers[i];
			fp_str(&b, c->name);
			fp_str(&b, c->state);
			fp_str(&b, c->reason);
			fp_str(&b, c->message);
			buf_printf(&b, "%d,%d,%d,%lld|", c->restarts, c->ready, c->exit_code, (long long)c->started);
		}
	} else {
		const struct event *e = (const struct event *)o;
		fp_str(&b, e->message);
		fp_str(&b, e->inv_kind);
		fp_str(&b, e->inv_name);
		fp_str(&b, e->inv_ns);
		fp_str(&b, e->component);
		buf_printf(&b, "%d,%lld,%lld|", e->count, (long long)e->first, (long long)e->last);
	}
	return buf_steal(&b);
}
static int compared;

static void compare_decodes(enum obj_kind kind, const char *json, size_t len, const char *what)
{
	struct kube_jstream *js = kube_jstream_new(1 << 24);
	char *err = NULL;
	struct json_object *full = kube_jstream_parse(js, json, len, false, &err);
	free(err);
	err = NULL;
	struct json_object *pruned = kube_jstream_parse(js, json, len, true, &err);
	free(err);
	kube_jstream_free(js);
	if (full == NULL || pruned == NULL) {
		json_object_put(full);
		json_object_put(pruned);
		return;
	}
	/* a watch event: decode its object */
	struct json_object *fo = full, *po = pruned, *x;
	if (json_object_object_get_ex(full, "object", &x) && json_object_object_get_ex(pruned, "object", &po))
		fo = x;
	recording = true;
	char *e1 = NULL, *e2 = NULL;
	struct obj *a = kube_decode(kind, fo, src, &e1);
	recording = false;
	struct obj *b = kube_decode(kind, po, src, &e2);
	T_CHECK((a == NULL) == (b == NULL));
	if (a && b) {
		compared++;
		T_EQ_STR(a->name, b->name);
		T_CHECK(a->ns == b->ns);
		T_EQ_STR(a->uid, b->uid);
		char *fa = fingerprint(a), *fb = fingerprint(b);
		T_EQ_STR(fa, fb);
		if (strcmp(fa, fb) != 0)
			fprintf(stderr, "  (%s)\n", what);
		free(fa);
		free(fb);
		T_CHECK(a->created == b->created && a->deleted == b->deleted && a->generation == b->generation &&
			a->rv == b->rv);
		size_t la = 0, lb = 0;
		for (const char *p = a->labels; p && *p; p += strlen(p) + 1)
			la += strlen(p);
		for (const char *p = b->labels; p && *p; p += strlen(p) + 1)
			lb += strlen(p);
		T_EQ_INT(la, lb);
		/* the kind's struct after the common part: pointers to interned strings compare equal, owned strings
		 * are compared through obj_heap_size above; counts and flags must match byte for byte */
		if (kind == OBJ_VM) {
			const struct vm *x1 = (const struct vm *)a, *x2 = (const struct vm *)b;
			T_CHECK(x1->run_strategy == x2->run_strategy && x1->printable_status == x2->printable_status &&
				x1->ready == x2->ready && x1->nconds == x2->nconds && x1->nscr == x2->nscr &&
				x1->cpu_cores == x2->cpu_cores && x1->start_failures == x2->start_failures);
		} else if (kind == OBJ_VMI) {
			const struct vmi *x1 = (const struct vmi *)a, *x2 = (const struct vmi *)b;
			T_CHECK(x1->phase == x2->phase && x1->node == x2->node && x1->nconds == x2->nconds &&
				x1->nphases == x2->nphases && x1->nips == x2->nips && x1->nactive == x2->nactive &&
				vmi_mig(x1)->present == vmi_mig(x2)->present && strcmp(x1->vm_uid, x2->vm_uid) == 0);
		} else if (kind == OBJ_POD) {
			const struct pod *x1 = (const struct pod *)a, *x2 = (const struct pod *)b;
			T_CHECK(x1->phase == x2->phase && x1->node == x2->node && x1->ncontainers == x2->ncontainers &&
				x1->ready_containers == x2->ready_containers && x1->restarts == x2->restarts &&
				x1->spec_containers == x2->spec_containers && strcmp(x1->vmi_uid, x2->vmi_uid) == 0);
		} else {
			const struct event *x1 = (const struct event *)a, *x2 = (const struct event *)b;
			T_CHECK(x1->reason == x2->reason && x1->type == x2->type && x1->count == x2->count &&
				x1->last == x2->last && strcmp(x1->inv_uid, x2->inv_uid) == 0);
		}
	}
	obj_free(a);
	obj_free(b);
	free(e1);
	free(e2);
	json_object_put(full);
	json_object_put(pruned);
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
	struct kube_jscan st = { 0 };
	T_EQ_INT(kube_jscan(&st, "{\"a\":\"}\"", 8), 0);
	T_EQ_INT(kube_jscan(&st, "}\n{", 3), 1);
}

int main(void)
{
	src = source_new(SOURCE_KUBE, "prune");
	test_prune_basics();
	run_dir("tests/fuzz/corpus/decode", false);
	run_dir("tests/fuzz/corpus/watchstream", true);
	T_CHECK(compared >= 10);
	for (int i = 0; i < nmissing; i++)
		fprintf(stderr, "the decoder reads key \"%s\", which kube_jprune_keys (src/kube/jprune.c) drops\n",
			missing[i]);
	T_EQ_INT(nmissing, 0);
	return T_DONE();
}
