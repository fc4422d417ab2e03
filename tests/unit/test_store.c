/* Unit tests of the store: upsert/replace by UID and by name, removal, mark and sweep, listeners. */
#include "core/intern.h"
#include "core/xmalloc.h"
#include "model/store.h"
#include "t.h"

static struct obj *mk(struct source *src, enum obj_kind k, const char *ns, const char *name, const char *uid)
{
	struct obj *o = obj_new(k);
	o->src = src;
	o->ns = intern(ns);
	o->name = xstrdup(name);
	snprintf(o->uid, sizeof o->uid, "%s", uid);
	return o;
}

static int adds, dels, repls;
static void listener(void *arg, enum obj_kind kind, const struct obj *old, const struct obj *new_)
{
	(void)arg;
	(void)kind;
	if (old && new_)
		repls++;
	else if (new_)
		adds++;
	else
		dels++;
}

int main(void)
{
	struct source *a = source_new(SOURCE_KUBE, "a");
	struct source *b = source_new(SOURCE_KUBE, "b");
	struct store *st = store_new();
	store_listen(st, listener, NULL);
	store_upsert(st, mk(a, OBJ_VM, "ns1", "vm1", "u1"));
	store_upsert(st, mk(a, OBJ_VM, "ns1", "vm2", "u2"));
	store_upsert(st, mk(b, OBJ_VM, "ns1", "vm1", "u1")); /* same UID, other source: distinct */
	T_EQ_INT(store_count(st, OBJ_VM), 3);
	struct vm *v = (struct vm *)mk(a, OBJ_VM, "ns1", "vm1", "u1");
	v->printable_status = intern("Running");
	store_upsert(st, &v->o);
	T_EQ_INT(store_count(st, OBJ_VM), 3);
	struct vm *got = (struct vm *)store_find(st, a, OBJ_VM, "ns1", "vm1");
	T_CHECK(got == v);
	T_EQ_STR(got->printable_status, "Running");
	/* recreated under a new UID: replaces the name */
	store_upsert(st, mk(a, OBJ_VM, "ns1", "vm1", "u9"));
	T_EQ_INT(store_count(st, OBJ_VM), 3);
	T_CHECK(store_get(st, a, OBJ_VM, "u1") == NULL);
	T_CHECK(store_get(st, a, OBJ_VM, "u9") != NULL);
	T_EQ_INT(store_remove(st, a, OBJ_VM, "u2"), 0);
	T_EQ_INT(store_remove(st, a, OBJ_VM, "u2"), -1);
	/* mark and sweep: only what the relist saw survives */
	for (int i = 0; i < 100; i++) {
		char n[16], u[16];
		snprintf(n, sizeof n, "p%d", i);
		snprintf(u, sizeof u, "pu%d", i);
		store_upsert(st, mk(a, OBJ_POD, i % 2 ? "x" : "y", n, u));
	}
	store_mark(st, a, OBJ_POD, NULL);
	for (int i = 0; i < 100; i += 3) {
		char n[16], u[16];
		snprintf(n, sizeof n, "p%d", i);
		snprintf(u, sizeof u, "pu%d", i);
		store_upsert(st, mk(a, OBJ_POD, i % 2 ? "x" : "y", n, u));
	}
	T_EQ_INT(store_sweep(st, a, OBJ_POD, NULL), 66);
	size_t n = 0;
	struct obj *const *objs = store_objs(st, a, OBJ_POD, &n);
	T_EQ_INT(n, 34);
	int consistent = 1;
	for (size_t i = 0; i < n; i++)
		consistent &= objs[i]->slot == i && store_get(st, a, OBJ_POD, objs[i]->uid) == objs[i];
	T_CHECK(consistent);
	/* namespace-scoped sweep leaves other namespaces alone */
	store_mark(st, a, OBJ_POD, "x");
	T_EQ_INT(store_sweep(st, a, OBJ_POD, "x"), 17);
	T_EQ_INT(store_count(st, OBJ_POD), 17);
	T_CHECK(adds > 0 && dels > 0 && repls > 0);
	T_CHECK(store_version(st, OBJ_POD) > 0);
	store_free(st);
	source_free_all();
	return T_DONE();
}
