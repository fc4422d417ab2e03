/* The registry of kinds and actions (model/registry.c): every name finds its row, no name is two rows', the
 * paths follow group and version, every action applies to kinds that exist, and the suggestions are kubectl's. */
#include <stdlib.h>
#include <string.h>

#include "model/registry.h"
#include "t.h"

static const struct kind_def *K(int i)
{
	return registry_kind((enum kind_id)i);
}

/* every name of a kind finds that kind, in the forms kubectl takes */
static void test_kind_lookup(void)
{
	for (int i = 0; i < KIND_COUNT; i++) {
		const struct kind_def *k = K(i);
		T_EQ_INT(k->id, i);
		T_CHECK(registry_kind_find(k->plural) == k);
		T_CHECK(registry_kind_find(k->singular) == k);
		for (const char *const *a = k->shorts; *a; a++)
			T_CHECK(registry_kind_find(*a) == k);
		for (const char *const *a = k->aliases; a && *a; a++)
			T_CHECK(registry_kind_find(*a) == k);
		char buf[128];
		if (*k->group) {
			snprintf(buf, sizeof buf, "%s.%s", k->plural, k->group);
			T_CHECK(registry_kind_find(buf) == k);
			snprintf(buf, sizeof buf, "%s.%s", k->singular, k->group);
			T_CHECK(registry_kind_find(buf) == k);
			snprintf(buf, sizeof buf, "%s.%s.%s", k->plural, k->version, k->group);
			T_CHECK(registry_kind_find(buf) == k);
		}
		/* the path pieces agree with group and version */
		if (*k->group)
			snprintf(buf, sizeof buf, "/apis/%s/%s", k->group, k->version);
		else
			snprintf(buf, sizeof buf, "/api/%s", k->version);
		T_EQ_STR(k->base, buf);
		if (k->obj >= 0)
			T_CHECK(registry_kind_of_obj((enum obj_kind)k->obj) == k);
		T_CHECK(k->shorts[0] != NULL || k->id == KIND_SECRET); /* Kubernetes gives Secrets no short name */
	}
	T_CHECK(registry_kind_find("secrets") == K(KIND_SECRET));
	T_CHECK(registry_kind_find("secret") == K(KIND_SECRET));
	T_CHECK(registry_kind_find("cm") == K(KIND_CM));
	T_CHECK(registry_kind_find("configmaps") == K(KIND_CM));
	/* the store's kinds all have a row */
	for (int o = 0; o < OBJ_KIND_COUNT; o++)
		T_CHECK(registry_kind_of_obj((enum obj_kind)o) != NULL);
	T_CHECK(registry_kind_find("PVC") == NULL); /* short names are exact, as kubectl's */
	T_CHECK(registry_kind_find("PersistentVolumeClaims") == K(KIND_PVC));
	T_CHECK(registry_kind_find("pvcs") == NULL);
	T_CHECK(registry_kind_find("vm.kubevirt.io") == NULL);
	T_CHECK(registry_kind_find("virtualmachines.cdi.kubevirt.io") == NULL);
	T_CHECK(registry_kind_find("") == NULL);
	T_CHECK(registry_kind_find("virtualmachines.") == NULL);
}

/* no name (plural, singular, short name, alias) belongs to two kinds; no dashboard view is two kinds' */
static void test_kind_unique(void)
{
	const char *names[KIND_COUNT * 8];
	int owner[KIND_COUNT * 8];
	size_t n = 0;
	for (int i = 0; i < KIND_COUNT; i++) {
		const struct kind_def *k = K(i);
		names[n] = k->plural, owner[n++] = i;
		names[n] = k->singular, owner[n++] = i;
		for (const char *const *a = k->shorts; *a; a++)
			names[n] = *a, owner[n++] = i;
		for (const char *const *a = k->aliases; a && *a; a++)
			names[n] = *a, owner[n++] = i;
		for (int j = 0; j < i; j++)
			T_CHECK(k->view == NULL || K(j)->view == NULL || strcmp(k->view, K(j)->view) != 0);
	}
	for (size_t a = 0; a < n; a++)
		for (size_t b = a + 1; b < n; b++)
			if (strcasecmp(names[a], names[b]) == 0 && owner[a] != owner[b]) {
				fprintf(stderr, "name %s is kinds %d and %d\n", names[a], owner[a], owner[b]);
				T_CHECK(0);
			}
	char *p = registry_kind_path(K(KIND_PVC), "ns-1", "data");
	T_EQ_STR(p, "/api/v1/namespaces/ns-1/persistentvolumeclaims/data");
	free(p);
	p = registry_kind_path(K(KIND_PV), "ns-1", NULL); /* cluster-scoped: no namespace */
	T_EQ_STR(p, "/api/v1/persistentvolumes");
	free(p);
	p = registry_kind_path(K(KIND_DV), NULL, NULL);
	T_EQ_STR(p, "/apis/cdi.kubevirt.io/v1beta1/datavolumes");
	free(p);
	p = registry_subresource_path(K(KIND_VMI), "default", "demo", "softreboot");
	T_EQ_STR(p, "/apis/subresources.kubevirt.io/v1/namespaces/default/virtualmachineinstances/demo/softreboot");
	free(p);
	char gr[96];
	T_EQ_STR(registry_kind_gr(K(KIND_VM), false, gr, sizeof gr), "virtualmachine.kubevirt.io");
	T_EQ_STR(registry_kind_gr(K(KIND_POD), true, gr, sizeof gr), "pods");
}

/* every action: its row is its own, its kinds exist, its name and aliases find it (verbs), keys are distinct */
static void test_actions(void)
{
	size_t seen = 0;
	const struct action_def *a;
	for (size_t i = 0; (a = registry_action_at(i)) != NULL; i++, seen++) {
		T_CHECK(registry_action(a->act) == a);
		T_EQ_STR(action_name(a->act), a->name);
		T_CHECK(a->kinds != 0 && (a->kinds >> KIND_COUNT) == 0);
		T_CHECK((unsigned)a->on < KIND_COUNT);
		T_CHECK(a->done != NULL && a->summary != NULL);
		if (a->verb) {
			T_CHECK(registry_action_find(a->name) == a);
			for (const char *const *x = a->aliases; x && *x; x++)
				T_CHECK(registry_action_find(*x) == a);
		} else {
			T_CHECK(registry_action_find(a->name) == NULL);
		}
		if (a->key) {
			T_CHECK(registry_action_key(a->key) == a);
			T_CHECK(a->key_label != NULL && a->key_help != NULL);
		}
		/* nothing acts on pods or events */
		T_CHECK(!registry_action_applies(a, KIND_POD));
		T_CHECK(!registry_action_applies(a, KIND_EVENT));
		T_CHECK(registry_action_applies(a, KIND_VM));
		for (size_t j = 0; j < i; j++) {
			const struct action_def *b = registry_action_at(j);
			T_CHECK(b != a);
			T_CHECK(!a->key || a->key != b->key);
			T_CHECK(strcmp(a->name, b->name) != 0);
			for (const char *const *x = a->aliases; x && *x; x++)
				T_CHECK(strcmp(*x, b->name) != 0);
		}
	}
	T_EQ_INT(seen, ACT_COUNT);
	/* virtctl's spelling, the old one kept */
	T_CHECK(registry_action_find("soft-reboot") == registry_action(ACT_SOFT_REBOOT));
	T_CHECK(registry_action_find("softreboot") == registry_action(ACT_SOFT_REBOOT));
	T_EQ_STR(registry_action(ACT_SOFT_REBOOT)->subresource, "softreboot");
	T_CHECK(registry_action_find("force-stop") == NULL);
	T_CHECK(registry_action_find("get") == NULL);
}

static void test_suggest(void)
{
	const char *verbs[] = { "version", "get", "describe", "set", "cp" };
	const char *out[4];
	size_t n = registry_suggest("gte", verbs, 5, out, 4);
	T_EQ_INT(n, 1);
	T_EQ_STR(out[0], "get");
	n = registry_suggest("desc", verbs, 5, out, 4); /* a prefix */
	T_EQ_INT(n, 1);
	T_EQ_STR(out[0], "describe");
	n = registry_suggest("ge", verbs, 5, out, 4); /* kubectl: set, get, cp (in the table's order here) */
	T_EQ_INT(n, 3);
	T_CHECK(registry_suggest("zzzzzz", verbs, 5, out, 4) == 0);
	n = registry_kind_suggest("datavolume2", out, 4);
	T_CHECK(n >= 1 && strcmp(out[0], "datavolumes") == 0);
	T_EQ_INT(registry_kind_suggest("pvx", out, 4), 0); /* too short to guess */
}

/* the verbs into the guest: every row found by its name, none an action's or a kind's name, subresources as
 * KubeVirt names them */
static void test_guest_verbs(void)
{
	for (int i = 0; i < GV_COUNT; i++) {
		const struct guest_verb_def *g = registry_guest_verb((enum guest_verb)i);
		T_CHECK(g != NULL && (int)g->id == i);
		T_CHECK(registry_guest_verb_find(g->name) == g);
		T_CHECK(registry_action_find(g->name) == NULL);
		T_CHECK(registry_kind_find(g->name) == NULL);
		/* credentials alone goes through a Secret and the VM's spec, not a subresource */
		T_CHECK(g->synopsis && g->summary && (g->subresource || g->id == GV_CREDENTIALS) && g->kinds);
		/* a dashboard key of its own, no action's */
		T_CHECK(g->key == 0 || (registry_action_key(g->key) == NULL && registry_guest_verb_key(g->key) == g &&
					g->key_label && g->key_help));
	}
	T_CHECK(registry_guest_verb(GV_COUNT) == NULL);
	T_CHECK(registry_guest_verb_find("nosuch") == NULL);
	T_EQ_STR(registry_guest_verb(GV_FSLIST)->subresource, "filesystemlist");
	T_EQ_STR(registry_guest_verb(GV_PORT_FORWARD)->name, "port-forward");
	char *p = registry_subresource_path(registry_kind(KIND_VM), "ns", "vm1", "portforward/22");
	T_EQ_STR(p, "/apis/subresources.kubevirt.io/v1/namespaces/ns/virtualmachines/vm1/portforward/22");
	free(p);
}

int main(void)
{
	test_kind_lookup();
	test_kind_unique();
	test_actions();
	test_suggest();
	test_guest_verbs();
	return T_DONE();
}
