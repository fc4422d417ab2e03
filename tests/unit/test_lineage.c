/* Unit tests of the lineage recorder: stop+start gives two executions with distinct VMI UIDs (the first ended
 * "stopped"), restart gives "restarted", a live migration keeps one execution with two launchers on two nodes,
 * failures end "failed", and the history survives a reload from disk (a simulated kvcon restart), including a
 * torn last line and compaction. Several VMs share their source's file. Paced (the dashboard), a large history is
 * read over several loop passes, not inside the first VMI's change, and what the store holds is recorded after it. */
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/intern.h"
#include "core/loop.h"
#include "core/util.h"
#include "core/xmalloc.h"
#include "model/lineage.h"
#include "t.h"

static char dir[64];

static struct vm *mk_vm(struct source *src, const char *rs)
{
	struct vm *v = (struct vm *)obj_new(OBJ_VM);
	v->o.src = src;
	v->o.ns = intern("default");
	v->o.name = xstrdup("testvm");
	snprintf(v->o.uid, sizeof v->o.uid, "vm-uid-1");
	v->run_strategy = intern(rs);
	return v;
}

static struct vmi *mk_vmi(struct source *src, const char *uid, const char *phase, const char *node, int64_t created)
{
	struct vmi *v = (struct vmi *)obj_new(OBJ_VMI);
	v->o.src = src;
	v->o.ns = intern("default");
	v->o.name = xstrdup("testvm");
	snprintf(v->o.uid, sizeof v->o.uid, "%s", uid);
	snprintf(v->vm_uid, sizeof v->vm_uid, "vm-uid-1");
	v->o.created = created;
	v->phase = intern(phase);
	v->node = node ? intern(node) : NULL;
	return v;
}

static struct pod *mk_pod(struct source *src, const char *uid, const char *vmi_uid, const char *node, int64_t created)
{
	struct pod *p = (struct pod *)obj_new(OBJ_POD);
	p->o.src = src;
	p->o.ns = intern("default");
	p->o.name = xasprintf("virt-launcher-testvm-%s", uid);
	snprintf(p->o.uid, sizeof p->o.uid, "%s", uid);
	snprintf(p->vmi_uid, sizeof p->vmi_uid, "%s", vmi_uid);
	p->o.created = created;
	p->phase = intern("Running");
	p->node = node ? intern(node) : NULL;
	return p;
}

static void set_health(struct source *src, enum watch_state s)
{
	src->health[OBJ_VMI].state = s;
}

static void test_stop_start_and_reload(void)
{
	struct source *src = source_new(SOURCE_KUBE, "ctx-a");
	set_health(src, WATCH_LIVE);
	struct store *st = store_new();
	struct lineage *l = lineage_new(st, dir);

	store_upsert(st, &mk_vm(src, "Always")->o);
	store_upsert(st, &mk_pod(src, "pod-1", "vmi-A", "node-1", 1000)->o); /* pod before its VMI */
	store_upsert(st, &mk_vmi(src, "vmi-A", "Scheduling", NULL, 999)->o);
	store_upsert(st, &mk_vmi(src, "vmi-A", "Running", "node-1", 999)->o);
	/* stop: the VM turns Halted, then the VMI and its pod go */
	store_upsert(st, &mk_vm(src, "Halted")->o);
	struct vmi *gone = (struct vmi *)store_find(st, src, OBJ_VMI, "default", "testvm");
	gone->o.deleted = 2000;
	store_remove(st, src, OBJ_VMI, "vmi-A");
	store_remove(st, src, OBJ_POD, "pod-1");
	/* start: a new execution */
	store_upsert(st, &mk_vm(src, "Always")->o);
	store_upsert(st, &mk_vmi(src, "vmi-B", "Running", "node-2", 3000)->o);
	store_upsert(st, &mk_pod(src, "pod-2", "vmi-B", "node-2", 3001)->o);

	size_t n;
	const struct lineage_exec *const *ex = lineage_get(l, src, "default", "testvm", &n);
	T_EQ_INT(n, 2);
	if (n == 2) {
		T_EQ_STR(ex[0]->vmi_uid, "vmi-A");
		T_EQ_STR(ex[1]->vmi_uid, "vmi-B");
		T_EQ_STR(lineage_end_name(ex[0]->how), "stopped");
		T_EQ_INT(ex[0]->start, 999);
		T_EQ_INT(ex[0]->end, 2000);
		T_EQ_INT(ex[0]->nlaunchers, 1);
		T_EQ_STR(ex[0]->launchers[0].uid, "pod-1");
		T_EQ_STR(ex[0]->launchers[0].node, "node-1");
		T_CHECK(ex[0]->launchers[0].end != 0);
		T_EQ_STR(lineage_end_name(ex[1]->how), "running");
		T_EQ_INT(ex[1]->end, 0);
		T_EQ_INT(ex[1]->nlaunchers, 1);
		T_EQ_STR(ex[1]->launchers[0].node, "node-2");
		T_EQ_STR(ex[1]->vm_uid, "vm-uid-1");
	}
	struct buf b;
	buf_init(&b);
	lineage_format_text(ex, n, 4000, &b);
	T_CHECK(b.data && strstr(b.data, "vmi-A") && strstr(b.data, "stopped") && strstr(b.data, "running"));
	buf_free(&b);
	char *path = lineage_path(l, src, "default", "testvm");
	struct stat sb;
	T_CHECK(stat(path, &sb) == 0 && sb.st_size > 0);

	/* kvcon restarts: a new store and a new recorder reading the same directory */
	lineage_free(l);
	store_free(st);
	struct source *src2 = source_new(SOURCE_KUBE, "ctx-a"); /* same context, new registry slot */
	set_health(src2, WATCH_LOADING);
	st = store_new();
	l = lineage_new(st, dir);
	store_upsert(st, &mk_vmi(src2, "vmi-B", "Running", "node-2", 3000)->o);
	ex = lineage_get(l, src2, "default", "testvm", &n);
	T_EQ_INT(n, 2);
	if (n == 2) {
		T_EQ_STR(ex[0]->vmi_uid, "vmi-A");
		T_EQ_STR(lineage_end_name(ex[0]->how), "stopped");
		T_EQ_INT(ex[0]->end, 2000);
		T_EQ_STR(ex[0]->launchers[0].node, "node-1");
		T_EQ_STR(ex[1]->vmi_uid, "vmi-B");
		T_EQ_STR(lineage_end_name(ex[1]->how), "running");
	}
	/* a torn last line (crash mid-write) is ignored on the next load */
	FILE *f = fopen(path, "a");
	fputs("{\"vmi\":\"vmi-Z\",\"st", f);
	fclose(f);
	lineage_free(l);
	store_free(st);

	/* restart while the VMI went away unseen: once the VMI watch is live, the open execution is "lost" */
	struct source *src3 = source_new(SOURCE_KUBE, "ctx-a");
	set_health(src3, WATCH_LIVE);
	st = store_new();
	l = lineage_new(st, dir);
	ex = lineage_get(l, src3, "default", "testvm", &n);
	T_EQ_INT(n, 2);
	if (n == 2)
		T_EQ_STR(lineage_end_name(ex[1]->how), "lost");
	lineage_free(l);
	store_free(st);
	free(path);
}

static void test_restart_and_late_stop(void)
{
	struct source *src = source_new(SOURCE_KUBE, "ctx-b");
	set_health(src, WATCH_LIVE);
	struct store *st = store_new();
	struct lineage *l = lineage_new(st, dir);
	store_upsert(st, &mk_vm(src, "Always")->o);
	store_upsert(st, &mk_vmi(src, "r-1", "Running", "node-1", 100)->o);
	/* restart: the VMI is replaced by name while the VM keeps Always */
	store_upsert(st, &mk_vmi(src, "r-2", "Scheduling", NULL, 200)->o);
	/* stop whose VM update arrives after the VMI's deletion: first taken for a restart, then corrected */
	store_remove(st, src, OBJ_VMI, "r-2");
	store_upsert(st, &mk_vm(src, "Halted")->o);
	/* a later start must not turn that stop into a restart */
	store_upsert(st, &mk_vm(src, "Always")->o);
	size_t n;
	const struct lineage_exec *const *ex = lineage_get(l, src, "default", "testvm", &n);
	T_EQ_INT(n, 2);
	if (n == 2) {
		T_EQ_STR(lineage_end_name(ex[0]->how), "restarted");
		T_CHECK(ex[0]->end >= 200); /* when kvcon saw it replaced: no deletionTimestamp was set */
		T_EQ_STR(lineage_end_name(ex[1]->how), "stopped");
	}
	/* a failure */
	struct vmi *f = mk_vmi(src, "r-3", "Failed", "node-1", 300);
	f->phases = xcalloc(1, sizeof *f->phases);
	f->phases[0].phase = intern("Failed");
	f->phases[0].at = 350;
	f->nphases = 1;
	store_upsert(st, &f->o);
	ex = lineage_get(l, src, "default", "testvm", &n);
	T_EQ_INT(n, 3);
	if (n == 3) {
		T_EQ_STR(lineage_end_name(ex[2]->how), "failed");
		T_EQ_INT(ex[2]->end, 350);
	}
	lineage_free(l);
	store_free(st);
}

/* A VMI that reaches Succeeded because it is being deleted is judged by the VM's intent: Always -> restarted
 * (KubeVirt's restart goes through a shutdown); a guest shutdown under RerunOnFailure stays stopped. */
static void test_succeeded(void)
{
	struct source *src = source_new(SOURCE_KUBE, "ctx-c");
	set_health(src, WATCH_LIVE);
	struct store *st = store_new();
	struct lineage *l = lineage_new(st, dir);
	store_upsert(st, &mk_vm(src, "Always")->o);
	store_upsert(st, &mk_vmi(src, "s-1", "Running", "node-1", 100)->o);
	struct vmi *v = mk_vmi(src, "s-1", "Succeeded", "node-1", 100);
	v->o.deleted = 150;
	store_upsert(st, &v->o);
	store_remove(st, src, OBJ_VMI, "s-1");
	store_upsert(st, &mk_vm(src, "RerunOnFailure")->o);
	store_upsert(st, &mk_vmi(src, "s-2", "Running", "node-1", 200)->o);
	store_upsert(st, &mk_vmi(src, "s-2", "Succeeded", "node-1", 200)->o);
	size_t n;
	const struct lineage_exec *const *ex = lineage_get(l, src, "default", "testvm", &n);
	T_EQ_INT(n, 2);
	if (n == 2) {
		T_EQ_STR(lineage_end_name(ex[0]->how), "restarted");
		T_EQ_STR(lineage_end_name(ex[1]->how), "stopped");
		T_EQ_STR(ex[1]->phase, "Succeeded");
	}
	lineage_free(l);
	store_free(st);
}

static void test_migration(void)
{
	struct source *src = source_new(SOURCE_ENGINE, "host/a:b"); /* sanitized in the path */
	set_health(src, WATCH_LIVE);
	struct store *st = store_new();
	struct lineage *l = lineage_new(st, dir);
	store_upsert(st, &mk_vm(src, "Always")->o);
	store_upsert(st, &mk_vmi(src, "m-1", "Running", "node-1", 100)->o);
	store_upsert(st, &mk_pod(src, "src-pod", "m-1", "node-1", 100)->o);
	store_upsert(st, &mk_pod(src, "dst-pod", "m-1", "node-2", 500)->o); /* migration target */
	struct vmi *v = mk_vmi(src, "m-1", "Running", "node-2", 100);
	vmi_mig_set(v)->present = true;
	vmi_mig_set(v)->completed = true;
	vmi_mig_set(v)->end = 600;
	store_upsert(st, &v->o);
	store_remove(st, src, OBJ_POD, "src-pod");
	size_t n;
	const struct lineage_exec *const *ex = lineage_get(l, src, "default", "testvm", &n);
	T_EQ_INT(n, 1);
	if (n == 1) {
		T_EQ_STR(ex[0]->vmi_uid, "m-1");
		T_EQ_STR(lineage_end_name(ex[0]->how), "running");
		T_EQ_INT(ex[0]->migrations, 1);
		T_EQ_INT(ex[0]->nlaunchers, 2);
		if (ex[0]->nlaunchers == 2) {
			T_EQ_STR(ex[0]->launchers[0].node, "node-1");
			T_CHECK(ex[0]->launchers[0].migrated);
			T_EQ_INT(ex[0]->launchers[0].end, 600);
			T_EQ_STR(ex[0]->launchers[1].node, "node-2");
			T_CHECK(!ex[0]->launchers[1].migrated);
			T_EQ_INT(ex[0]->launchers[1].end, 0);
		}
		T_EQ_STR(ex[0]->node, "node-2");
	}
	char *path = lineage_path(l, src, "default", "testvm");
	/* one file per source, its name sanitized: no ':' and no '/' below the directory */
	T_CHECK(strchr(path + strlen(dir) + 1, ':') == NULL);
	T_CHECK(strchr(path + strlen(dir) + 1, '/') == NULL);

	/* many updates, then a reload compacts the file to one line per execution */
	for (int i = 0; i < 100; i++) {
		struct pod *p = mk_pod(src, "dst-pod", "m-1", i % 2 ? "node-2" : "node-3", 500);
		store_upsert(st, &p->o);
	}
	lineage_free(l);
	store_free(st);
	set_health(src, WATCH_LOADING); /* the VMI is not listed yet: the execution stays open */
	st = store_new();
	l = lineage_new(st, dir);
	ex = lineage_get(l, src, "default", "testvm", &n);
	T_EQ_INT(n, 1);
	T_EQ_STR(n ? lineage_end_name(ex[0]->how) : "", "running");
	size_t len = 0;
	char *text = util_read_file(path, &len);
	size_t lines = 0;
	for (size_t i = 0; text && i < len; i++)
		lines += text[i] == '\n';
	T_EQ_INT(lines, 1);
	free(text);
	free(path);
	lineage_free(l);
	store_free(st);
}

/* A failed migration: the target launcher on node-2 was an attempt; the execution never left node-1 (issue 25:
 * the lineage said "(node-1) -> dst (node-2)", the VM view "on node-1 -> node-2") */
static void test_migration_failed(void)
{
	struct source *src = source_new(SOURCE_KUBE, "failmig");
	set_health(src, WATCH_LIVE);
	struct store *st = store_new();
	struct lineage *l = lineage_new(st, dir);
	store_upsert(st, &mk_vm(src, "Always")->o);
	store_upsert(st, &mk_vmi(src, "f-1", "Running", "node-1", 100)->o);
	store_upsert(st, &mk_pod(src, "src-pod", "f-1", "node-1", 100)->o);
	store_upsert(st, &mk_pod(src, "dst-pod", "f-1", "node-2", 500)->o); /* the migration's target */
	struct vmi *v = mk_vmi(src, "f-1", "Running", "node-1", 100);
	struct migration_state *m = vmi_mig_set(v);
	m->present = true;
	m->failed = true;
	m->source_node = intern("node-1");
	m->target_node = intern("node-2");
	m->source_pod = xstrdup("virt-launcher-testvm-src-pod");
	m->target_pod = xstrdup("virt-launcher-testvm-dst-pod");
	store_upsert(st, &v->o);
	store_remove(st, src, OBJ_POD, "dst-pod");
	size_t n;
	const struct lineage_exec *const *ex = lineage_get(l, src, "default", "testvm", &n);
	T_EQ_INT(n, 1);
	if (n == 1) {
		T_EQ_STR(lineage_end_name(ex[0]->how), "running");
		T_EQ_INT(ex[0]->migrations, 0);
		T_EQ_STR(ex[0]->node, "node-1");
		T_EQ_INT(ex[0]->nlaunchers, 2);
		if (ex[0]->nlaunchers == 2) {
			T_CHECK(!ex[0]->launchers[0].migrated && !ex[0]->launchers[0].attempt);
			T_CHECK(ex[0]->launchers[1].attempt);
		}
		struct buf b;
		buf_init(&b);
		lineage_format_text(ex, n, 1000, &b);
		T_CHECK(b.data && strstr(b.data, "virt-launcher-testvm-src-pod (node-1)  [migration to node-2 failed: virt-launcher-testvm-dst-pod]"));
		T_CHECK(b.data && strstr(b.data, " -> ") == NULL);
		if (b.data && !strstr(b.data, "[migration to node-2 failed"))
			fprintf(stderr, "%s", b.data);
		buf_free(&b);
	}
	lineage_free(l);
	/* the attempt survives a reload from the file */
	l = lineage_new(st, dir);
	ex = lineage_get(l, src, "default", "testvm", &n);
	T_CHECK(n == 1 && ex[0]->nlaunchers == 2 && ex[0]->launchers[1].attempt);
	lineage_free(l);
	store_free(st);
}

/* A live migration between two engine hosts (two sources): the same VMI UID continues on the second host,
 * whichever host reports first; after a reload it is in the new host's history only. */
static void test_move_between_hosts(void)
{
	for (int order = 0; order < 2; order++) {
		char ha[32], hb[32], uid[32];
		snprintf(ha, sizeof ha, "host-a%d", order);
		snprintf(hb, sizeof hb, "host-b%d", order);
		snprintf(uid, sizeof uid, "mv-%d", order);
		struct source *a = source_new(SOURCE_ENGINE, ha), *b = source_new(SOURCE_ENGINE, hb);
		set_health(a, WATCH_LIVE);
		set_health(b, WATCH_LIVE);
		struct store *st = store_new();
		struct lineage *l = lineage_new(st, dir);
		store_upsert(st, &mk_vm(a, "Always")->o);
		store_upsert(st, &mk_vmi(a, uid, "Running", ha, 100)->o);
		store_upsert(st, &mk_pod(a, "qemu-a", uid, ha, 100)->o);
		if (order == 1) { /* the source host reports the end first */
			store_remove(st, a, OBJ_VMI, uid);
			store_remove(st, a, OBJ_POD, "qemu-a");
		}
		store_upsert(st, &mk_vm(b, "Always")->o);
		store_upsert(st, &mk_pod(b, "qemu-b", uid, hb, 500)->o);
		store_upsert(st, &mk_vmi(b, uid, "Running", hb, 100)->o);
		if (order == 0) {
			store_remove(st, a, OBJ_VMI, uid);
			store_remove(st, a, OBJ_POD, "qemu-a");
		}
		size_t n;
		const struct lineage_exec *const *ex = lineage_get(l, b, "default", "testvm", &n);
		T_EQ_INT(n, 1);
		if (n == 1) {
			T_EQ_STR(ex[0]->vmi_uid, uid);
			T_EQ_STR(lineage_end_name(ex[0]->how), "running");
			T_EQ_INT(ex[0]->migrations, 1);
			T_EQ_INT(ex[0]->nlaunchers, 2);
			if (ex[0]->nlaunchers == 2) {
				T_EQ_STR(ex[0]->launchers[0].node, ha);
				T_CHECK(ex[0]->launchers[0].migrated && ex[0]->launchers[0].end != 0);
				T_EQ_STR(ex[0]->launchers[1].node, hb);
			}
		}
		lineage_get(l, a, "default", "testvm", &n);
		T_EQ_INT(n, 0);
		lineage_free(l);
		store_free(st);
		/* reload: the tombstone keeps it out of the old host's history */
		st = store_new();
		l = lineage_new(st, dir);
		set_health(a, WATCH_LOADING);
		set_health(b, WATCH_LOADING);
		lineage_get(l, a, "default", "testvm", &n);
		T_EQ_INT(n, 0);
		ex = lineage_get(l, b, "default", "testvm", &n);
		T_EQ_INT(n, 1);
		T_EQ_INT(n ? ex[0]->nlaunchers : 0, 2);
		lineage_free(l);
		store_free(st);
	}
}

static size_t file_lines(const char *path)
{
	size_t len, n = 0;
	char *t = util_read_file(path, &len);
	for (size_t i = 0; t && i < len; i++)
		n += t[i] == '\n';
	free(t);
	return n;
}

static void test_paced(void)
{
	struct source *src = source_new(SOURCE_KUBE, "ctx-paced");
	set_health(src, WATCH_LOADING);
	struct store *st = store_new();
	struct lineage *l = lineage_new(st, dir);
	lineage_set_paced(l);
	/* a history of 20,000 other VMs' executions, and one of testvm's */
	char *path = lineage_path(l, src, NULL, NULL);
	enum { OTHERS = 20000 };
	FILE *f = fopen(path, "w");
	T_CHECK(f != NULL);
	for (int i = 0; f && i < OTHERS; i++)
		fprintf(f, "{\"ns\":\"default\",\"name\":\"vm-%d\",\"vmi\":\"uid-%d\",\"vm\":\"\",\"start\":100,\"end\":200,"
			   "\"how\":\"stopped\",\"phase\":\"Succeeded\",\"node\":\"n1\",\"migrations\":0,\"launchers\":[]}\n", i, i);
	if (f) {
		fputs("{\"ns\":\"default\",\"name\":\"testvm\",\"vmi\":\"vmi-old\",\"vm\":\"vm-uid-1\",\"start\":100,\"end\":200,"
		      "\"how\":\"stopped\",\"phase\":\"Succeeded\",\"node\":\"n1\",\"migrations\":0,\"launchers\":[]}\n", f);
		fclose(f);
	}
	/* the first VMI's change returns without reading the history (nothing is recorded yet) */
	store_upsert(st, &mk_vmi(src, "vmi-new", "Running", "node-1", 3000)->o);
	store_upsert(st, &mk_pod(src, "pod-new", "vmi-new", "node-1", 3001)->o);
	T_EQ_INT(file_lines(path), OTHERS + 1);
	/* the loop reads it, a slice per pass, then records what the store holds */
	int passes = 0;
	while (file_lines(path) < OTHERS + 3 && passes < 100000) { /* the VMI's record, then its launcher's */
		loop_once(0);
		passes++;
	}
	T_CHECK(passes >= 2);
	T_EQ_INT(file_lines(path), OTHERS + 3);
	size_t n;
	const struct lineage_exec *const *ex = lineage_get(l, src, "default", "testvm", &n);
	T_EQ_INT(n, 2);
	if (n == 2) {
		T_EQ_STR(ex[0]->vmi_uid, "vmi-old");
		T_EQ_STR(lineage_end_name(ex[0]->how), "stopped");
		T_EQ_STR(ex[1]->vmi_uid, "vmi-new");
		T_EQ_STR(lineage_end_name(ex[1]->how), "running");
		T_EQ_INT(ex[1]->nlaunchers, 1); /* the pod, seen again after the reading */
	}
	ex = lineage_get(l, src, "default", "vm-7", &n);
	T_EQ_INT(n, 1);
	lineage_free(l);
	store_free(st);

	/* a VM's history asked for while the file is being read: the rest is read at once */
	st = store_new();
	l = lineage_new(st, dir);
	lineage_set_paced(l);
	store_upsert(st, &mk_vmi(src, "vmi-new", "Running", "node-1", 3000)->o);
	ex = lineage_get(l, src, "default", "testvm", &n);
	T_EQ_INT(n, 2);
	ex = lineage_get(l, src, "default", "vm-19999", &n);
	T_EQ_INT(n, 1);
	lineage_free(l);
	store_free(st);

	/* held (the dashboard before its first rows): no pass reads the history; released, the passes do */
	st = store_new();
	l = lineage_new(st, dir);
	lineage_set_paced(l);
	lineage_hold(l, true);
	size_t lines = file_lines(path);
	store_upsert(st, &mk_vmi(src, "vmi-held", "Running", "node-1", 3000)->o);
	for (int i = 0; i < 50; i++)
		loop_once(0);
	T_EQ_INT(file_lines(path), lines); /* vmi-held not recorded: the history is not read */
	lineage_hold(l, false);
	for (passes = 0; file_lines(path) < lines + 1 && passes < 100000; passes++)
		loop_once(0);
	T_CHECK(file_lines(path) > lines); /* vmi-held recorded (and what the history says ended) */
	lineage_free(l);
	store_free(st);
	free(path);
}

/* The records are written without json-c (issue 28): a name with a quote, a backslash, control bytes, a slash
 * and UTF-8, and launchers with every flag, read back by json-c as they were. */
static void test_record_text(void)
{
	struct source *src = source_new(SOURCE_KUBE, "ctx-text");
	set_health(src, WATCH_LOADING);
	struct store *st = store_new();
	struct lineage *l = lineage_new(st, dir);
	const char *odd = "q\"b\\s/c\001\n\t\r\037\177-ü日";
	struct vmi *v = mk_vmi(src, "vmi-T", "Running", "node-1", 100);
	free(v->o.name);
	v->o.name = xstrdup(odd);
	store_upsert(st, &v->o);
	struct pod *p = mk_pod(src, "pod-a", "vmi-T", "node-1", 101);
	free(p->o.name);
	p->o.name = xstrdup(odd);
	store_upsert(st, &p->o);
	struct pod *q = mk_pod(src, "pod-b", "vmi-T", "node-2", 102);
	store_upsert(st, &q->o);
	struct vmi *f = mk_vmi(src, "vmi-T", "Running", "node-1", 100); /* the migration to node-2 failed */
	free(f->o.name);
	f->o.name = xstrdup(odd);
	vmi_mig_set(f)->present = true;
	vmi_mig_set(f)->failed = true;
	vmi_mig_set(f)->target_pod = xstrdup("virt-launcher-testvm-pod-b");
	store_upsert(st, &f->o);
	struct vmi *m = mk_vmi(src, "vmi-T", "Running", "node-3", 100); /* then one to node-3 completed */
	free(m->o.name);
	m->o.name = xstrdup(odd);
	vmi_mig_set(m)->present = true;
	vmi_mig_set(m)->completed = true;
	vmi_mig_set(m)->end = 300;
	store_upsert(st, &m->o);
	char *path = lineage_path(l, src, NULL, NULL);
	lineage_free(l);
	store_free(st);
	/* every line is one JSON object json-c reads, the name as it was */
	size_t len = 0;
	char *text = util_read_file(path, &len);
	size_t lines = 0;
	for (char *ln = text, *nl; ln && (nl = memchr(ln, '\n', len - (size_t)(ln - text))) != NULL; ln = nl + 1) {
		*nl = '\0';
		struct json_object *j = json_tokener_parse(ln);
		struct json_object *name = NULL;
		T_CHECK(j && json_object_object_get_ex(j, "name", &name));
		T_EQ_STR(name ? json_object_get_string(name) : "", odd);
		T_CHECK(strchr(ln, '\001') == NULL && strchr(ln, '\t') == NULL); /* control bytes escaped */
		json_object_put(j);
		lines++;
	}
	T_CHECK(lines >= 3);
	free(text);
	/* and the history reads back whole */
	st = store_new();
	l = lineage_new(st, dir);
	size_t n;
	const struct lineage_exec *const *ex = lineage_get(l, src, "default", odd, &n);
	T_EQ_INT(n, 1);
	if (n == 1) {
		T_EQ_STR(ex[0]->vmi_uid, "vmi-T");
		T_EQ_STR(ex[0]->vm_uid, "vm-uid-1");
		T_EQ_INT(ex[0]->start, 100);
		T_EQ_STR(ex[0]->phase, "Running");
		T_EQ_STR(ex[0]->node, "node-3");
		T_EQ_INT(ex[0]->migrations, 1);
		T_EQ_INT(ex[0]->nlaunchers, 2);
		if (ex[0]->nlaunchers == 2) {
			T_EQ_STR(ex[0]->launchers[0].name, odd);
			T_EQ_STR(ex[0]->launchers[0].node, "node-1");
			T_EQ_INT(ex[0]->launchers[0].start, 101);
			T_EQ_INT(ex[0]->launchers[0].end, 300);
			T_CHECK(ex[0]->launchers[0].migrated && !ex[0]->launchers[0].attempt);
			T_EQ_STR(ex[0]->launchers[1].name, "virt-launcher-testvm-pod-b");
			T_CHECK(ex[0]->launchers[1].attempt && !ex[0]->launchers[1].migrated);
		}
	}
	lineage_free(l);
	store_free(st);
	free(path);
}

/* write() calls this process made so far (/proc/self/io), or -1 when the kernel does not say. */
static long writes_so_far(void)
{
	FILE *f = fopen("/proc/self/io", "r");
	long n = -1;
	char line[128];
	while (f && fgets(line, sizeof line, f))
		if (strncmp(line, "syscw: ", 7) == 0)
			n = atol(line + 7);
	if (f)
		fclose(f);
	return n;
}

/* Paced (the dashboard), the records of a loop pass wait for its end and go out in one write(); a recorder that
 * is freed writes what waits. Unpaced (the CLI), each record is written at once. */
static void test_batched(void)
{
	struct source *src = source_new(SOURCE_KUBE, "ctx-batch");
	set_health(src, WATCH_LOADING);
	struct store *st = store_new();
	struct lineage *l = lineage_new(st, dir);
	lineage_set_paced(l);
	char *path = lineage_path(l, src, NULL, NULL);
	store_upsert(st, &mk_vmi(src, "b-1", "Scheduling", NULL, 100)->o); /* starts the (empty) history's reading */
	for (int i = 0; i < 100 && file_lines(path) < 1; i++)
		loop_once(0);
	T_EQ_INT(file_lines(path), 1); /* the catch-up recorded b-1 */
	/* three records in one pass: none on disk before the pass ends, all three after, in one write() */
	store_upsert(st, &mk_vmi(src, "b-1", "Scheduled", "node-1", 100)->o);
	store_upsert(st, &mk_pod(src, "bp-1", "b-1", "node-1", 101)->o);
	store_upsert(st, &mk_vmi(src, "b-1", "Running", "node-1", 100)->o);
	T_EQ_INT(file_lines(path), 1);
	long w0 = writes_so_far();
	loop_once(0);
	long w1 = writes_so_far();
	T_EQ_INT(file_lines(path), 4);
	if (w0 >= 0 && w1 >= 0)
		T_EQ_INT(w1 - w0, 1);
	/* freed before the pass ends: what waits is written */
	store_upsert(st, &mk_vmi(src, "b-1", "Failed", "node-1", 100)->o);
	T_EQ_INT(file_lines(path), 4);
	lineage_free(l);
	T_EQ_INT(file_lines(path), 5);
	store_free(st);
	/* unpaced: at once */
	st = store_new();
	l = lineage_new(st, dir);
	store_upsert(st, &mk_vmi(src, "b-2", "Running", "node-1", 200)->o);
	T_EQ_INT(file_lines(path), 6);
	size_t n;
	const struct lineage_exec *const *ex = lineage_get(l, src, "default", "testvm", &n);
	T_EQ_INT(n, 2);
	if (n == 2) {
		T_EQ_STR(lineage_end_name(ex[0]->how), "failed");
		T_EQ_STR(ex[1]->vmi_uid, "b-2");
	}
	lineage_free(l);
	store_free(st);
	free(path);
}

int main(void)
{
	snprintf(dir, sizeof dir, "/tmp/kvcon-lineage-XXXXXX");
	T_CHECK(mkdtemp(dir) != NULL);
	test_stop_start_and_reload();
	test_restart_and_late_stop();
	test_succeeded();
	test_migration();
	test_migration_failed();
	test_move_between_hosts();
	test_paced();
	test_record_text();
	test_batched();
	char *cmd = xasprintf("rm -rf '%s'", dir);
	T_CHECK(system(cmd) == 0);
	free(cmd);
	source_free_all();
	return T_DONE();
}
