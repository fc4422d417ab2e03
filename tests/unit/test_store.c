/* Unit tests of the store: upsert/replace by UID and by name, removal, mark and sweep, listeners. */
#include <string.h>

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
/* A listener following the VM version change by change, as the header does (store_in_step). */
static uint64_t followed;
static int missed;

static void listener(void *arg, enum obj_kind kind, const struct obj *old, const struct obj *new_)
{
	if (kind == OBJ_VM && !store_in_step(arg, kind, &followed))
		missed++;
	if (old && new_)
		repls++;
	else if (new_)
		adds++;
	else
		dels++;
}

/* The indexes (open addressing with backward-shift deletion, positions in the dense array) against a plain model:
 * random adds, updates, renames (same UID, another name), recreations under new UIDs, removals and namespace
 * sweeps over a small key space, checked after every step. */
static void test_random(void)
{
	enum { NAMES = 300, STEPS = 20000 };
	struct source *src = source_new(SOURCE_KUBE, "rnd");
	struct store *st = store_new();
	char model_uid[NAMES][UID_LEN]; /* per name: the UID stored under it, "" when none */
	memset(model_uid, 0, sizeof model_uid);
	unsigned seed = 12345, next_uid = 0;
	int bad = 0;
	for (int step = 0; step < STEPS && bad == 0; step++) {
		seed = seed * 1103515245u + 12345u;
		int k = (int)((seed >> 8) % NAMES), op = (int)((seed >> 20) % 10);
		char name[16], uid[UID_LEN];
		snprintf(name, sizeof name, "n%d", k);
		if (op < 5 && model_uid[k][0]) { /* update in place */
			memcpy(uid, model_uid[k], sizeof uid);
			store_upsert(st, mk(src, OBJ_VMI, k % 3 ? "a" : "b", name, uid));
		} else if (op < 8) { /* add, or recreate under a new UID */
			snprintf(uid, sizeof uid, "u%u", next_uid++);
			store_upsert(st, mk(src, OBJ_VMI, k % 3 ? "a" : "b", name, uid));
			snprintf(model_uid[k], UID_LEN, "%s", uid);
		} else if (op == 8 && model_uid[k][0]) { /* rename to a free name, maybe in the other namespace */
			int to = (int)((seed >> 4) % NAMES);
			if (!model_uid[to][0]) {
				snprintf(name, sizeof name, "n%d", to);
				memcpy(uid, model_uid[k], sizeof uid);
				store_upsert(st, mk(src, OBJ_VMI, to % 3 ? "a" : "b", name, uid));
				snprintf(model_uid[to], UID_LEN, "%s", uid);
				model_uid[k][0] = '\0';
			}
		} else if (model_uid[k][0]) { /* remove */
			bad |= store_remove(st, src, OBJ_VMI, model_uid[k]) != 0;
			model_uid[k][0] = '\0';
		}
		if (step % 997 == 996) { /* relist of namespace b: every other name of it seen again */
			store_mark(st, src, OBJ_VMI, "b");
			for (int i = 0; i < NAMES; i += 3) {
				if (!model_uid[i][0])
					continue;
				if (i % 2) {
					model_uid[i][0] = '\0';
					continue;
				}
				snprintf(name, sizeof name, "n%d", i);
				memcpy(uid, model_uid[i], sizeof uid);
				store_upsert(st, mk(src, OBJ_VMI, "b", name, uid));
			}
			store_sweep(st, src, OBJ_VMI, "b");
		}
		size_t n = 0, want = 0;
		struct obj *const *objs = store_objs(st, src, OBJ_VMI, &n);
		for (int i = 0; i < NAMES; i++) {
			snprintf(name, sizeof name, "n%d", i);
			struct obj *byname = store_find(st, src, OBJ_VMI, i % 3 ? "a" : "b", name);
			if (model_uid[i][0]) {
				want++;
				struct obj *byuid = store_get(st, src, OBJ_VMI, model_uid[i]);
				bad |= byuid == NULL || byuid != byname || objs[byuid->slot] != byuid ||
				       strcmp(byuid->uid, model_uid[i]) != 0;
			} else {
				bad |= byname != NULL;
			}
		}
		bad |= n != want;
	}
	T_CHECK(bad == 0);
	store_free(st);
}

int main(void)
{
	test_random();
	struct source *a = source_new(SOURCE_KUBE, "a");
	struct source *b = source_new(SOURCE_KUBE, "b");
	struct store *st = store_new();
	store_listen(st, listener, st);
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
	/* a listener told of every VM change stays in step; a version it did not see is not */
	T_EQ_INT(missed, 0);
	T_CHECK(followed > 0 && followed == store_version(st, OBJ_VM));
	uint64_t behind = followed - 2; /* one change went by unseen */
	T_CHECK(!store_in_step(st, OBJ_VM, &behind) && behind == followed - 2);
	store_free(st);
	source_free_all();
	return T_DONE();
}
