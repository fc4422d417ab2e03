/* Placement as the scheduler filters one node (engine/placement.c): nodeSelector, node affinity expressions and
 * fields, taints and tolerations, cordon, resources, pod (anti-)affinity, the scheduler's messages, and the
 * validation of those fields. */
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

#include "engine/placement.h"
#include "t.h"

#define NODE "{\"metadata\":{\"name\":\"h1\",\"labels\":{\"kubernetes.io/hostname\":\"h1\",\"disk\":\"ssd\",\"gen\":\"5\"}}"

static char *check(const char *pod, const char *node, const struct place_res *res)
{
	json_object *p = pod ? json_tokener_parse(pod) : NULL, *n = json_tokener_parse(node);
	char *m = placement_check(p, "default", NULL, n, res, NULL, 0);
	json_object_put(p);
	json_object_put(n);
	return m;
}

/* 1 when the pod fits, 0 when not with the scheduler's reason why (NULL: any), -1 otherwise */
static int fits(const char *pod, const char *node, const char *why)
{
	char *m = check(pod, node, NULL);
	int r = m == NULL ? 1 : why == NULL || strstr(m, why) ? 0 : -1;
	if (r < 0)
		fprintf(stderr, "unexpected message: %s\n", m);
	free(m);
	return r;
}

static const char *const AFF = "node(s) didn't match Pod's node affinity/selector";

static void test_selector(void)
{
	T_EQ_INT(fits(NULL, NODE "}", NULL), 1);
	T_EQ_INT(fits("{\"nodeSelector\":{\"disk\":\"ssd\"}}", NODE "}", NULL), 1);
	T_EQ_INT(fits("{\"nodeSelector\":{\"disk\":\"hdd\"}}", NODE "}", AFF), 0);
	T_EQ_INT(fits("{\"nodeSelector\":{\"gpu\":\"yes\"}}", NODE "}", AFF), 0);
	char *m = check("{\"nodeSelector\":{\"disk\":\"hdd\"}}", NODE "}", NULL);
	T_EQ_STR(m, "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector. preemption: 0/1 "
		    "nodes are available: 1 Preemption is not helpful for scheduling.");
	free(m);
}

static char *aff(const char *terms)
{
	static char b[1024];
	snprintf(b, sizeof b,
		 "{\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":{\"nodeSelectorTerms\":%s}}}}",
		 terms);
	return b;
}

static void test_expressions(void)
{
	T_EQ_INT(fits(aff("[{\"matchExpressions\":[{\"key\":\"disk\",\"operator\":\"In\",\"values\":[\"nvme\",\"ssd\"]}]}]"), NODE "}", NULL), 1);
	T_EQ_INT(fits(aff("[{\"matchExpressions\":[{\"key\":\"disk\",\"operator\":\"In\",\"values\":[\"hdd\"]}]}]"), NODE "}", AFF), 0);
	T_EQ_INT(fits(aff("[{\"matchExpressions\":[{\"key\":\"disk\",\"operator\":\"NotIn\",\"values\":[\"hdd\"]}]}]"), NODE "}", NULL), 1);
	T_EQ_INT(fits(aff("[{\"matchExpressions\":[{\"key\":\"zone\",\"operator\":\"NotIn\",\"values\":[\"a\"]}]}]"), NODE "}", NULL), 1);
	T_EQ_INT(fits(aff("[{\"matchExpressions\":[{\"key\":\"disk\",\"operator\":\"Exists\"}]}]"), NODE "}", NULL), 1);
	T_EQ_INT(fits(aff("[{\"matchExpressions\":[{\"key\":\"disk\",\"operator\":\"DoesNotExist\"}]}]"), NODE "}", AFF), 0);
	T_EQ_INT(fits(aff("[{\"matchExpressions\":[{\"key\":\"gen\",\"operator\":\"Gt\",\"values\":[\"4\"]}]}]"), NODE "}", NULL), 1);
	T_EQ_INT(fits(aff("[{\"matchExpressions\":[{\"key\":\"gen\",\"operator\":\"Lt\",\"values\":[\"5\"]}]}]"), NODE "}", AFF), 0);
	T_EQ_INT(fits(aff("[{\"matchExpressions\":[{\"key\":\"disk\",\"operator\":\"Gt\",\"values\":[\"1\"]}]}]"), NODE "}", AFF), 0);
	/* terms are ORed, requirements of a term ANDed; an empty term matches nothing */
	T_EQ_INT(fits(aff("[{\"matchExpressions\":[{\"key\":\"disk\",\"operator\":\"In\",\"values\":[\"hdd\"]}]},"
			  "{\"matchExpressions\":[{\"key\":\"gen\",\"operator\":\"Exists\"}]}]"), NODE "}", NULL), 1);
	T_EQ_INT(fits(aff("[{\"matchExpressions\":[{\"key\":\"disk\",\"operator\":\"Exists\"},{\"key\":\"gpu\",\"operator\":\"Exists\"}]}]"), NODE "}", AFF), 0);
	T_EQ_INT(fits(aff("[{}]"), NODE "}", AFF), 0);
	T_EQ_INT(fits(aff("[{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\",\"values\":[\"h1\"]}]}]"), NODE "}", NULL), 1);
	T_EQ_INT(fits(aff("[{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"NotIn\",\"values\":[\"h1\"]}]}]"), NODE "}", AFF), 0);
	/* nodeSelector and affinity both apply */
	T_EQ_INT(fits("{\"nodeSelector\":{\"disk\":\"hdd\"},\"affinity\":{\"nodeAffinity\":{}}}", NODE "}", AFF), 0);
}

static void test_taints(void)
{
	const char *tainted = NODE ",\"spec\":{\"taints\":[{\"key\":\"dedicated\",\"value\":\"db\",\"effect\":\"NoSchedule\"}]}}";
	char *m = check(NULL, tainted, NULL);
	T_EQ_STR(m, "0/1 nodes are available: 1 node(s) had untolerated taint {dedicated: db}. preemption: 0/1 nodes "
		    "are available: 1 Preemption is not helpful for scheduling.");
	free(m);
	T_EQ_INT(fits("{\"tolerations\":[{\"key\":\"dedicated\",\"operator\":\"Equal\",\"value\":\"db\",\"effect\":\"NoSchedule\"}]}", tainted, NULL), 1);
	T_EQ_INT(fits("{\"tolerations\":[{\"key\":\"dedicated\",\"value\":\"db\"}]}", tainted, NULL), 1); /* Equal, any effect */
	T_EQ_INT(fits("{\"tolerations\":[{\"key\":\"dedicated\",\"operator\":\"Exists\"}]}", tainted, NULL), 1);
	T_EQ_INT(fits("{\"tolerations\":[{\"operator\":\"Exists\"}]}", tainted, NULL), 1); /* everything */
	T_EQ_INT(fits("{\"tolerations\":[{\"key\":\"dedicated\",\"value\":\"web\"}]}", tainted, "untolerated taint"), 0);
	T_EQ_INT(fits("{\"tolerations\":[{\"key\":\"dedicated\",\"operator\":\"Exists\",\"effect\":\"NoExecute\"}]}", tainted,
		      "untolerated taint"), 0);
	/* PreferNoSchedule only scores; NoExecute filters */
	T_EQ_INT(fits(NULL, NODE ",\"spec\":{\"taints\":[{\"key\":\"k\",\"effect\":\"PreferNoSchedule\"}]}}", NULL), 1);
	T_EQ_INT(fits(NULL, NODE ",\"spec\":{\"taints\":[{\"key\":\"k\",\"effect\":\"NoExecute\"}]}}", "untolerated taint {k: }"), 0);
	/* the tolerations every pod gets (DefaultTolerationSeconds) */
	T_EQ_INT(fits(NULL, NODE ",\"spec\":{\"taints\":[{\"key\":\"node.kubernetes.io/not-ready\",\"effect\":\"NoExecute\"}]}}", NULL), 1);
	/* the taint manager: running pods that do not tolerate a NoExecute taint */
	json_object *nx = json_tokener_parse(NODE ",\"spec\":{\"taints\":[{\"key\":\"k\",\"value\":\"v\",\"effect\":\"NoSchedule\"},"
					     "{\"key\":\"gone\",\"value\":\"yes\",\"effect\":\"NoExecute\"}]}}");
	m = placement_noexecute(NULL, nx);
	T_EQ_STR(m, "gone=yes:NoExecute");
	free(m);
	json_object *tol = json_tokener_parse("{\"tolerations\":[{\"key\":\"gone\",\"operator\":\"Exists\",\"effect\":\"NoExecute\"}]}");
	T_CHECK((m = placement_noexecute(tol, nx)) == NULL);
	free(m);
	json_object_put(tol);
	json_object_put(nx);
	/* cordon: the first filter */
	const char *cordoned = NODE ",\"spec\":{\"unschedulable\":true,\"taints\":[{\"key\":\"node.kubernetes.io/unschedulable\",\"effect\":\"NoSchedule\"}]}}";
	m = check("{\"nodeSelector\":{\"disk\":\"hdd\"}}", cordoned, NULL);
	T_EQ_STR(m, "0/1 nodes are available: 1 node(s) were unschedulable. preemption: 0/1 nodes are available: 1 "
		    "Preemption is not helpful for scheduling.");
	free(m);
	T_EQ_INT(fits("{\"tolerations\":[{\"key\":\"node.kubernetes.io/unschedulable\",\"operator\":\"Exists\",\"effect\":\"NoSchedule\"}]}",
		      cordoned, NULL), 1);
}

static void test_resources(void)
{
	const uint64_t gi = 1024ull * 1024 * 1024;
	struct place_res r = { .mem_cap = 4 * gi, .mem_used = 3 * gi, .mem_req = 2 * gi, .mcpu_cap = 2000, .mcpu_req = 100 };
	char *m = check(NULL, NODE "}", &r);
	T_EQ_STR(m, "0/1 nodes are available: 1 Insufficient memory. preemption: 0/1 nodes are available: 1 No "
		    "preemption victims found for incoming pod.");
	free(m);
	r.mem_used = gi;
	T_CHECK((m = check(NULL, NODE "}", &r)) == NULL);
	free(m);
	r.mcpu_used = 1950;
	m = check(NULL, NODE "}", &r);
	T_CHECK(m && strstr(m, ": 1 Insufficient cpu."));
	free(m);
	r.mem_cap = 0; /* unknown: not checked */
	r.mcpu_cap = 0;
	T_CHECK((m = check(NULL, NODE "}", &r)) == NULL);
	free(m);
	T_CHECK(placement_mem_request(gi, 2) > gi);
}

static void test_pod_affinity(void)
{
	json_object *node = json_tokener_parse(NODE "}");
	json_object *web = json_tokener_parse("{\"app\":\"web\"}"), *db = json_tokener_parse("{\"app\":\"db\"}");
	json_object *pod = json_tokener_parse(
		"{\"affinity\":{\"podAntiAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":[{\"labelSelector\":"
		"{\"matchLabels\":{\"app\":\"web\"}},\"topologyKey\":\"kubernetes.io/hostname\"}]}}}");
	struct place_peer peer = { "default", web, NULL };
	char *m = placement_check(pod, "default", web, node, NULL, &peer, 1);
	T_EQ_STR(m, "0/1 nodes are available: 1 node(s) didn't match pod anti-affinity rules. preemption: 0/1 nodes "
		    "are available: 1 No preemption victims found for incoming pod.");
	free(m);
	peer.labels = db;
	T_CHECK((m = placement_check(pod, "default", web, node, NULL, &peer, 1)) == NULL);
	free(m);
	peer.ns = "other"; /* the term's namespaces: the pod's own */
	peer.labels = web;
	T_CHECK((m = placement_check(pod, "default", web, node, NULL, &peer, 1)) == NULL);
	free(m);
	/* the pod already there refuses the newcomer (symmetry) */
	json_object *pa = json_object_object_get(pod, "affinity");
	struct place_peer there = { "default", web, pa };
	m = placement_check(NULL, "default", web, node, NULL, &there, 1);
	T_CHECK(m && strstr(m, "existing pods anti-affinity rules"));
	free(m);
	/* affinity: a matching pod must be there, unless none is and the pod matches itself */
	json_object *want = json_tokener_parse(
		"{\"affinity\":{\"podAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":[{\"labelSelector\":"
		"{\"matchLabels\":{\"app\":\"db\"}},\"topologyKey\":\"kubernetes.io/hostname\"}]}}}");
	struct place_peer d = { "default", db, NULL };
	T_CHECK((m = placement_check(want, "default", web, node, NULL, &d, 1)) == NULL);
	free(m);
	struct place_peer w = { "default", web, NULL };
	m = placement_check(want, "default", web, node, NULL, &w, 1);
	T_CHECK(m && strstr(m, "didn't match pod affinity rules"));
	free(m);
	T_CHECK((m = placement_check(want, "default", db, node, NULL, NULL, 0)) == NULL);
	free(m);
	json_object_put(want);
	json_object_put(pod);
	json_object_put(web);
	json_object_put(db);
	json_object_put(node);
}

static int invalid(const char *pod, const char *want_path)
{
	json_object *p = json_tokener_parse(pod);
	char *path = NULL, *why = NULL;
	int rc = placement_validate(p, &path, &why);
	if (rc < 0 && want_path && strcmp(path, want_path) != 0) {
		fprintf(stderr, "path %s: %s\n", path, why);
		rc = -2;
	}
	free(path);
	free(why);
	json_object_put(p);
	return rc;
}

static void test_validate(void)
{
	T_EQ_INT(invalid("{\"nodeSelector\":{\"a\":\"b\"},\"tolerations\":[{\"operator\":\"Exists\"}]}", NULL), 0);
	T_EQ_INT(invalid("{\"nodeSelector\":[\"a\"]}", "nodeSelector"), -1);
	T_EQ_INT(invalid("{\"nodeSelector\":{\"a\":1}}", "nodeSelector.a"), -1);
	T_EQ_INT(invalid(aff("[{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"Near\"}]}]"),
			 "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0]"), -1);
	T_EQ_INT(invalid(aff("[{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"In\"}]}]"), NULL), -1);
	T_EQ_INT(invalid(aff("[{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"Exists\",\"values\":[\"x\"]}]}]"), NULL), -1);
	T_EQ_INT(invalid(aff("[{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"Gt\",\"values\":[\"x\"]}]}]"), NULL), -1);
	T_EQ_INT(invalid(aff("[{\"matchFields\":[{\"key\":\"metadata.uid\",\"operator\":\"In\",\"values\":[\"x\"]}]}]"), NULL), -1);
	T_EQ_INT(invalid("{\"tolerations\":[{\"key\":\"a\",\"operator\":\"Exists\",\"value\":\"b\"}]}", "tolerations[0]"), -1);
	T_EQ_INT(invalid("{\"tolerations\":[{\"value\":\"b\"}]}", "tolerations[0]"), -1);
	T_EQ_INT(invalid("{\"tolerations\":[{\"key\":\"a\",\"effect\":\"Never\"}]}", "tolerations[0]"), -1);
	T_EQ_INT(invalid("{\"affinity\":{\"podAntiAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":[{\"labelSelector\":{}}]}}}",
			 "affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]"), -1);
}

/* seed 001's placement: a preferred anti-affinity only scores (on one node it changes nothing), its toleration
 * lets it onto the node its owner tainted dedicated=vms, its nodeSelector needs storage=fast */
static void test_seed001(void)
{
	const char *seed = "{\"nodeSelector\":{\"storage\":\"fast\"},\"affinity\":{\"podAntiAffinity\":{"
			   "\"preferredDuringSchedulingIgnoredDuringExecution\":[{\"weight\":100,\"podAffinityTerm\":{"
			   "\"topologyKey\":\"kubernetes.io/hostname\",\"labelSelector\":{\"matchLabels\":{\"app\":\"db\"}}}}]}},"
			   "\"tolerations\":[{\"key\":\"dedicated\",\"operator\":\"Equal\",\"value\":\"vms\",\"effect\":\"NoSchedule\"}]}";
	T_EQ_INT(invalid(seed, NULL), 0);
	T_EQ_INT(invalid("{\"affinity\":{\"podAntiAffinity\":{\"preferredDuringSchedulingIgnoredDuringExecution\":[{\"weight\":1,"
			 "\"podAffinityTerm\":{\"labelSelector\":{}}}]}}}",
			 "affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm"), -1);
	json_object *pod = json_tokener_parse(seed), *db = json_tokener_parse("{\"app\":\"db\"}");
	json_object *node = json_tokener_parse("{\"metadata\":{\"name\":\"h1\",\"labels\":{\"kubernetes.io/hostname\":\"h1\","
					       "\"storage\":\"fast\"}},\"spec\":{\"taints\":[{\"key\":\"dedicated\","
					       "\"value\":\"vms\",\"effect\":\"NoSchedule\"}]}}");
	struct place_peer peer = { "default", db, NULL };
	char *m = placement_check(pod, "default", db, node, NULL, &peer, 1);
	T_CHECK(m == NULL);
	free(m);
	json_object *plain = json_tokener_parse("{}");
	m = placement_check(plain, "default", db, node, NULL, NULL, 0);
	T_CHECK(m && strstr(m, "untolerated taint {dedicated: vms}"));
	free(m);
	json_object_put(plain);
	json_object_put(node);
	json_object_put(db);
	json_object_put(pod);
}

/* ---- the choice among the nodes of an engine set ---- */

#define HOST(n, extra) "{\"metadata\":{\"name\":\"" n "\",\"labels\":{\"kubernetes.io/hostname\":\"" n "\"}}" extra "}"

struct two {
	json_object *a, *b;
	struct place_node n[2];
};

static void two_init(struct two *t, const char *a, const char *b)
{
	const uint64_t gi = 1024ull * 1024 * 1024;
	memset(t, 0, sizeof *t);
	t->a = json_tokener_parse(a);
	t->b = json_tokener_parse(b);
	t->n[0].node = t->a;
	t->n[1].node = t->b;
	for (int i = 0; i < 2; i++)
		t->n[i].res = (struct place_res){ .mem_cap = 8 * gi, .mem_req = gi, .mcpu_cap = 4000, .mcpu_req = 100 };
}

static void two_free(struct two *t)
{
	json_object_put(t->a);
	json_object_put(t->b);
}

/* the index placement_choose picks (-1: none, its message in *msg or freed) */
static int choose(const char *pod, struct two *t, int prefer, char **msg)
{
	json_object *p = pod ? json_tokener_parse(pod) : NULL;
	char *m = NULL;
	int k = placement_choose(p, "default", NULL, t->n, 2, prefer, &m);
	json_object_put(p);
	if (msg)
		*msg = m;
	else
		free(m);
	return k;
}

static void test_choose(void)
{
	const uint64_t gi = 1024ull * 1024 * 1024;
	struct two t;
	two_init(&t, HOST("a", ""), HOST("b", ""));
	/* equal nodes: the VM's own host, else the first */
	T_EQ_INT(choose(NULL, &t, -1, NULL), 0);
	T_EQ_INT(choose(NULL, &t, 1, NULL), 1);
	T_EQ_INT(choose(NULL, &t, 0, NULL), 0);
	/* the least requested wins over the VM's own host (LeastAllocated) */
	t.n[0].res.mem_used = 4 * gi;
	T_EQ_INT(choose(NULL, &t, 0, NULL), 1);
	t.n[0].res.mem_used = 0;
	t.n[1].res.mcpu_used = 2000;
	T_EQ_INT(choose(NULL, &t, 1, NULL), 0);
	t.n[1].res.mcpu_used = 0;
	/* nodeSelector by hostname: that node, whatever the load */
	t.n[1].res.mem_used = 6 * gi;
	T_EQ_INT(choose("{\"nodeSelector\":{\"kubernetes.io/hostname\":\"b\"}}", &t, 0, NULL), 1);
	T_EQ_INT(choose("{\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":{\"nodeSelectorTerms\":"
			"[{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\",\"values\":[\"b\"]}]}]}}}}", &t, 0, NULL), 1);
	/* a node that does not fit is not chosen, however empty */
	t.n[1].res.mem_used = 0;
	t.n[0].res.mem_used = 4 * gi;
	t.n[1].res.mem_req = t.n[0].res.mem_req = 5 * gi;
	T_EQ_INT(choose(NULL, &t, 0, NULL), 1);
	t.n[1].res.mem_used = 4 * gi;
	char *m = NULL;
	T_EQ_INT(choose(NULL, &t, 0, &m), -1);
	T_EQ_STR(m, "0/2 nodes are available: 2 Insufficient memory. preemption: 0/2 nodes are available: 2 No preemption "
		    "victims found for incoming pod.");
	free(m);
	two_free(&t);

	/* each node's own reason, counted and sorted as the scheduler prints them */
	two_init(&t, HOST("a", ",\"spec\":{\"taints\":[{\"key\":\"dedicated\",\"value\":\"db\",\"effect\":\"NoSchedule\"}]}"),
		 HOST("b", ""));
	T_EQ_INT(choose(NULL, &t, 0, NULL), 1);
	T_EQ_INT(choose("{\"nodeSelector\":{\"kubernetes.io/hostname\":\"a\"}}", &t, 1, &m), -1);
	T_EQ_STR(m, "0/2 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 1 node(s) had untolerated "
		    "taint {dedicated: db}. preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.");
	free(m);
	/* tolerated, the selector's node */
	T_EQ_INT(choose("{\"nodeSelector\":{\"kubernetes.io/hostname\":\"a\"},\"tolerations\":[{\"key\":\"dedicated\","
			"\"operator\":\"Exists\"}]}", &t, 1, NULL), 0);
	two_free(&t);

	two_init(&t, HOST("a", ",\"spec\":{\"unschedulable\":true}"), HOST("b", ""));
	t.n[1].res.mcpu_used = 3950;
	T_EQ_INT(choose(NULL, &t, 0, &m), -1);
	T_EQ_STR(m, "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) were unschedulable. preemption: 0/2 nodes are "
		    "available: 1 No preemption victims found for incoming pod, 1 Preemption is not helpful for scheduling.");
	free(m);
	two_free(&t);

	/* scores beyond the resources: a PreferNoSchedule taint, a preferred node affinity */
	two_init(&t, HOST("a", ",\"spec\":{\"taints\":[{\"key\":\"old\",\"effect\":\"PreferNoSchedule\"}]}"), HOST("b", ""));
	t.n[1].res.mem_used = 2 * gi;
	T_EQ_INT(choose(NULL, &t, 0, NULL), 1);
	T_EQ_INT(choose("{\"tolerations\":[{\"key\":\"old\",\"operator\":\"Exists\"}]}", &t, 0, NULL), 0);
	two_free(&t);
	two_init(&t, HOST("a", ""), HOST("b", ""));
	T_EQ_INT(choose("{\"affinity\":{\"nodeAffinity\":{\"preferredDuringSchedulingIgnoredDuringExecution\":[{\"weight\":10,"
			"\"preference\":{\"matchExpressions\":[{\"key\":\"kubernetes.io/hostname\",\"operator\":\"In\","
			"\"values\":[\"b\"]}]}}]}}}", &t, 0, NULL), 1);
	/* pod anti-affinity: the node with the peer it avoids is filtered out */
	json_object *web = json_tokener_parse("{\"app\":\"web\"}");
	struct place_peer peer = { "default", web, NULL };
	t.n[1].peers = &peer;
	t.n[1].npeers = 1;
	const char *anti = "{\"affinity\":{\"podAntiAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":[{"
			   "\"labelSelector\":{\"matchLabels\":{\"app\":\"web\"}},\"topologyKey\":\"kubernetes.io/hostname\"}]}}}";
	T_EQ_INT(choose(anti, &t, 1, NULL), 0);
	t.n[0].peers = &peer;
	t.n[0].npeers = 1;
	T_EQ_INT(choose(anti, &t, 1, &m), -1);
	T_EQ_STR(m, "0/2 nodes are available: 2 node(s) didn't match pod anti-affinity rules. preemption: 0/2 nodes are "
		    "available: 2 No preemption victims found for incoming pod.");
	free(m);
	/* required pod affinity: the node with the peer; with no pod anywhere, the pod's own match lets it start */
	const char *with = "{\"affinity\":{\"podAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":[{"
			   "\"labelSelector\":{\"matchLabels\":{\"app\":\"web\"}},\"topologyKey\":\"kubernetes.io/hostname\"}]}}}";
	t.n[0].npeers = 0;
	json_object *p = json_tokener_parse(with);
	T_EQ_INT(placement_choose(p, "default", web, t.n, 2, 0, &m), 1); /* a web pod on b: a does not qualify */
	T_CHECK(m == NULL);
	t.n[1].npeers = 0;
	T_EQ_INT(placement_choose(p, "default", web, t.n, 2, 1, &m), 1);
	T_CHECK(m == NULL);
	T_EQ_INT(placement_choose(p, "default", web, t.n, 2, 0, &m), 0);
	T_CHECK(m == NULL);
	json_object_put(p);
	json_object_put(web);
	two_free(&t);
	/* no node at all */
	T_EQ_INT(placement_choose(NULL, "default", NULL, NULL, 0, -1, &m), -1);
	T_EQ_STR(m, "0/0 nodes are available. preemption: 0/0 nodes are available.");
	free(m);
}

int main(void)
{
	test_seed001();
	test_selector();
	test_expressions();
	test_taints();
	test_resources();
	test_pod_affinity();
	test_validate();
	test_choose();
	return T_DONE();
}
