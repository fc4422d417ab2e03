/* Placement on one node as Kubernetes' scheduler filters it (placement.h): selectors, node affinity, taints and
 * tolerations, cordon, resources, pod (anti-)affinity; and the validation of those fields. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/util.h"
#include "core/xmalloc.h"
#include "engine/placement.h"

static json_object *jget(json_object *o, const char *k)
{
	json_object *v = NULL;
	return o && json_object_is_type(o, json_type_object) && json_object_object_get_ex(o, k, &v) ? v : NULL;
}

static const char *jstr(json_object *o, const char *k)
{
	json_object *v = jget(o, k);
	return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

static size_t alen(json_object *a)
{
	return a && json_object_is_type(a, json_type_array) ? json_object_array_length(a) : 0;
}

static bool in_values(json_object *values, const char *s)
{
	for (size_t i = 0; s && i < alen(values); i++)
		if (util_str_eq(json_object_get_string(json_object_array_get_idx(values, i)), s))
			return true;
	return false;
}

static bool int_of(const char *s, long long *out)
{
	if (s == NULL || *s == '\0')
		return false;
	char *end = NULL;
	errno = 0;
	*out = strtoll(s, &end, 10);
	return errno == 0 && *end == '\0';
}

/* One requirement {key, operator, values} against the value v (NULL: the label is absent). */
static bool req_match(json_object *r, const char *v)
{
	const char *op = jstr(r, "operator");
	json_object *values = jget(r, "values");
	if (util_str_eq(op, "In"))
		return v && in_values(values, v);
	if (util_str_eq(op, "NotIn"))
		return v == NULL || !in_values(values, v);
	if (util_str_eq(op, "Exists"))
		return v != NULL;
	if (util_str_eq(op, "DoesNotExist"))
		return v == NULL;
	long long a, b;
	if ((util_str_eq(op, "Gt") || util_str_eq(op, "Lt")) && alen(values) == 1 && int_of(v, &a) &&
	    int_of(json_object_get_string(json_object_array_get_idx(values, 0)), &b))
		return util_str_eq(op, "Gt") ? a > b : a < b;
	return false;
}

/* A nodeSelectorTerm: every matchExpressions (labels) and matchFields (metadata.name) requirement; an empty
 * term matches no node. */
static bool term_match(json_object *t, json_object *node)
{
	json_object *me = jget(t, "matchExpressions"), *mf = jget(t, "matchFields"), *labels = jget(jget(node, "metadata"), "labels");
	if (alen(me) + alen(mf) == 0)
		return false;
	for (size_t i = 0; i < alen(me); i++) {
		json_object *r = json_object_array_get_idx(me, i);
		if (!req_match(r, jstr(labels, jstr(r, "key") ? jstr(r, "key") : "")))
			return false;
	}
	for (size_t i = 0; i < alen(mf); i++) {
		json_object *r = json_object_array_get_idx(mf, i);
		if (!util_str_eq(jstr(r, "key"), "metadata.name") || !req_match(r, jstr(jget(node, "metadata"), "name")))
			return false;
	}
	return true;
}

static bool node_affinity_ok(json_object *pod, json_object *node)
{
	json_object *labels = jget(jget(node, "metadata"), "labels"), *sel = jget(pod, "nodeSelector");
	if (sel && json_object_is_type(sel, json_type_object)) {
		json_object_object_foreach(sel, k, v)
			if (!util_str_eq(jstr(labels, k), json_object_get_string(v)))
				return false;
	}
	json_object *req = jget(jget(jget(jget(pod, "affinity"), "nodeAffinity"), "requiredDuringSchedulingIgnoredDuringExecution"),
				"nodeSelectorTerms");
	if (req == NULL)
		return true;
	for (size_t i = 0; i < alen(req); i++)
		if (term_match(json_object_array_get_idx(req, i), node))
			return true;
	return false;
}

static bool tolerates(json_object *tols, const char *key, const char *value, const char *effect)
{
	for (size_t i = 0; i < alen(tols); i++) {
		json_object *t = json_object_array_get_idx(tols, i);
		const char *te = jstr(t, "effect"), *tk = jstr(t, "key"), *op = jstr(t, "operator");
		if (te && *te && !util_str_eq(te, effect))
			continue;
		if (util_str_eq(op, "Exists")) {
			if (tk == NULL || *tk == '\0' || util_str_eq(tk, key))
				return true;
		} else if (util_str_eq(tk, key) && util_str_eq(jstr(t, "value") ? jstr(t, "value") : "", value ? value : ""))
			return true;
	}
	/* the DefaultTolerationSeconds admission plugin's, which every pod gets */
	return util_str_eq(effect, "NoExecute") &&
	       (util_str_eq(key, "node.kubernetes.io/not-ready") || util_str_eq(key, "node.kubernetes.io/unreachable"));
}

/* A labelSelector {matchLabels, matchExpressions} against labels; an empty selector matches everything. */
static bool selector_match(json_object *sel, json_object *labels)
{
	if (sel == NULL)
		return false; /* a nil selector matches nothing (pod affinity terms) */
	json_object *ml = jget(sel, "matchLabels"), *me = jget(sel, "matchExpressions");
	if (ml && json_object_is_type(ml, json_type_object)) {
		json_object_object_foreach(ml, k, v)
			if (!util_str_eq(jstr(labels, k), json_object_get_string(v)))
				return false;
	}
	for (size_t i = 0; i < alen(me); i++) {
		json_object *r = json_object_array_get_idx(me, i);
		if (!req_match(r, jstr(labels, jstr(r, "key") ? jstr(r, "key") : "")))
			return false;
	}
	return true;
}

/* Does the pod affinity term (of a pod in ns) select a pod of pns with plabels, on this node (its topologyKey a
 * label the node has)? */
static bool term_selects(json_object *term, const char *ns, const char *pns, json_object *plabels, json_object *node)
{
	const char *tk = jstr(term, "topologyKey");
	if (tk == NULL || jstr(jget(jget(node, "metadata"), "labels"), tk) == NULL)
		return false;
	json_object *nss = jget(term, "namespaces");
	bool ns_ok = alen(nss) ? in_values(nss, pns) : util_str_eq(ns, pns);
	if (jget(term, "namespaceSelector") && alen(nss) == 0)
		ns_ok = true; /* a namespace selector: the namespaces' labels are not known here, every one counts */
	return ns_ok && selector_match(jget(term, "labelSelector"), plabels);
}

static const char *pod_affinity_fail(json_object *pod, const char *ns, json_object *labels, json_object *node,
				     const struct place_peer *peers, int npeers, int all_peers)
{
	json_object *anti = jget(jget(jget(pod, "affinity"), "podAntiAffinity"), "requiredDuringSchedulingIgnoredDuringExecution");
	json_object *aff = jget(jget(jget(pod, "affinity"), "podAffinity"), "requiredDuringSchedulingIgnoredDuringExecution");
	/* the pods already there whose own anti-affinity refuses this one */
	for (int p = 0; p < npeers; p++) {
		json_object *pa = jget(jget(peers[p].affinity, "podAntiAffinity"), "requiredDuringSchedulingIgnoredDuringExecution");
		for (size_t i = 0; i < alen(pa); i++)
			if (term_selects(json_object_array_get_idx(pa, i), peers[p].ns, ns, labels, node))
				return "node(s) didn't satisfy existing pods anti-affinity rules";
	}
	for (size_t i = 0; i < alen(anti); i++)
		for (int p = 0; p < npeers; p++)
			if (term_selects(json_object_array_get_idx(anti, i), ns, peers[p].ns, peers[p].labels, node))
				return "node(s) didn't match pod anti-affinity rules";
	for (size_t i = 0; i < alen(aff); i++) {
		json_object *t = json_object_array_get_idx(aff, i);
		bool found = false;
		for (int p = 0; p < npeers && !found; p++)
			found = term_selects(t, ns, peers[p].ns, peers[p].labels, node);
		/* the scheduler's exception: no pod anywhere (all_peers: on every node) and the pod matches its own
		 * term */
		if (!found && !(all_peers == 0 && term_selects(t, ns, ns, labels, node)))
			return "node(s) didn't match pod affinity rules";
	}
	return NULL;
}

/* What the filters say of one node: NULL reasons when it fits, else one or two (NodeResourcesFit may name cpu
 * and memory) and whether preemption could help there (the scheduler's Unschedulable, not
 * UnschedulableAndUnresolvable). */
struct verdict {
	char *why[2];
	int nwhy;
	bool victims;
};

static void node_filter(json_object *pod, const char *ns, json_object *labels, const struct place_node *pn,
			int all_peers, struct verdict *vd)
{
	json_object *tols = jget(pod, "tolerations"), *spec = jget(pn->node, "spec");
	json_object *un = jget(spec, "unschedulable");
	memset(vd, 0, sizeof *vd);
	if (un && json_object_get_boolean(un) &&
	    !tolerates(tols, "node.kubernetes.io/unschedulable", NULL, "NoSchedule")) {
		vd->why[vd->nwhy++] = xstrdup("node(s) were unschedulable");
		return;
	}
	json_object *taints = jget(spec, "taints");
	for (size_t i = 0; i < alen(taints); i++) {
		json_object *t = json_object_array_get_idx(taints, i);
		const char *e = jstr(t, "effect");
		if (!util_str_eq(e, "NoSchedule") && !util_str_eq(e, "NoExecute"))
			continue; /* PreferNoSchedule only scores */
		if (!tolerates(tols, jstr(t, "key"), jstr(t, "value"), e)) {
			const char *k = jstr(t, "key"), *v = jstr(t, "value");
			vd->why[vd->nwhy++] = xasprintf("node(s) had untolerated taint {%s: %s}", k ? k : "", v ? v : "");
			return;
		}
	}
	if (!node_affinity_ok(pod, pn->node)) {
		vd->why[vd->nwhy++] = xstrdup("node(s) didn't match Pod's node affinity/selector");
		return;
	}
	const struct place_res *res = &pn->res;
	bool cpu = res->mcpu_cap && res->mcpu_used + res->mcpu_req > res->mcpu_cap;
	bool mem = res->mem_cap && res->mem_used + res->mem_req > res->mem_cap;
	if (cpu)
		vd->why[vd->nwhy++] = xstrdup("Insufficient cpu");
	if (mem)
		vd->why[vd->nwhy++] = xstrdup("Insufficient memory");
	if (cpu || mem) {
		vd->victims = true;
		return;
	}
	const char *pa = pod_affinity_fail(pod, ns, labels, pn->node, pn->peers, pn->npeers, all_peers);
	if (pa) {
		vd->why[vd->nwhy++] = xstrdup(pa);
		vd->victims = strstr(pa, "anti-affinity") != NULL;
	}
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A histogram of reasons as the scheduler's FitError prints it: "COUNT REASON" for each reason, sorted as strings,
 * joined by ", ". */
static void histogram(struct buf *b, const char *const *reasons, int n)
{
	char **lines = xcalloc((size_t)n + 1, sizeof *lines);
	int nl = 0;
	for (int i = 0; i < n; i++) {
		bool seen = false;
		for (int k = 0; k < i && !seen; k++)
			seen = strcmp(reasons[k], reasons[i]) == 0;
		if (seen)
			continue;
		int c = 0;
		for (int k = i; k < n; k++)
			c += strcmp(reasons[k], reasons[i]) == 0;
		lines[nl++] = xasprintf("%d %s", c, reasons[i]);
	}
	qsort(lines, (size_t)nl, sizeof *lines, cmp_str);
	for (int i = 0; i < nl; i++) {
		buf_printf(b, "%s%s", i ? ", " : "", lines[i]);
		free(lines[i]);
	}
	free(lines);
}

/* NodeResourcesFit's LeastAllocated score of a node that fits (0-100): the free share of CPU and of memory once the
 * pod is there, averaged over the resources the node reports. */
static int64_t least_allocated(const struct place_res *r)
{
	int64_t sum = 0, w = 0;
	if (r->mcpu_cap) {
		uint64_t req = r->mcpu_used + r->mcpu_req;
		sum += req > r->mcpu_cap ? 0 : (int64_t)((r->mcpu_cap - req) * 100 / r->mcpu_cap);
		w++;
	}
	if (r->mem_cap) {
		uint64_t req = r->mem_used + r->mem_req;
		sum += req > r->mem_cap ? 0 : (int64_t)((r->mem_cap - req) * 100 / r->mem_cap);
		w++;
	}
	return w ? sum / w : 0;
}

/* TaintToleration's raw score: the PreferNoSchedule taints the pod does not tolerate. */
static int64_t prefer_no_schedule(json_object *pod, json_object *node)
{
	json_object *taints = jget(jget(node, "spec"), "taints"), *tols = jget(pod, "tolerations");
	int64_t n = 0;
	for (size_t i = 0; i < alen(taints); i++) {
		json_object *t = json_object_array_get_idx(taints, i);
		if (util_str_eq(jstr(t, "effect"), "PreferNoSchedule") &&
		    !tolerates(tols, jstr(t, "key") ? jstr(t, "key") : "", jstr(t, "value"), "PreferNoSchedule"))
			n++;
	}
	return n;
}

/* NodeAffinity's raw score: the weights of the preferred terms the node matches. */
static int64_t preferred_affinity(json_object *pod, json_object *node)
{
	json_object *pref = jget(jget(jget(pod, "affinity"), "nodeAffinity"),
				 "preferredDuringSchedulingIgnoredDuringExecution");
	int64_t s = 0;
	for (size_t i = 0; i < alen(pref); i++) {
		json_object *t = json_object_array_get_idx(pref, i), *w = jget(t, "weight");
		if (w && term_match(jget(t, "preference"), node))
			s += json_object_get_int64(w);
	}
	return s;
}

int placement_choose(json_object *pod, const char *ns, json_object *labels, const struct place_node *nodes, int n,
		     int prefer, char **msg)
{
	*msg = NULL;
	struct verdict *vd = xcalloc((size_t)n + 1, sizeof *vd);
	int64_t *taint = xcalloc((size_t)n + 1, sizeof *taint), *aff = xcalloc((size_t)n + 1, sizeof *aff);
	int64_t max_taint = 0, max_aff = 0;
	int fit = 0, all_peers = 0;
	for (int i = 0; i < n; i++)
		all_peers += nodes[i].npeers;
	for (int i = 0; i < n; i++) {
		node_filter(pod, ns, labels, &nodes[i], all_peers, &vd[i]);
		if (vd[i].nwhy)
			continue;
		fit++;
		taint[i] = prefer_no_schedule(pod, nodes[i].node);
		aff[i] = preferred_affinity(pod, nodes[i].node);
		max_taint = taint[i] > max_taint ? taint[i] : max_taint;
		max_aff = aff[i] > max_aff ? aff[i] : max_aff;
	}
	int best = -1;
	int64_t best_score = -1;
	for (int i = 0; i < n && fit; i++) {
		if (vd[i].nwhy)
			continue;
		/* the default profile's weights: NodeResourcesFit 1, NodeAffinity 2, TaintToleration 3; each plugin's
		 * score normalized to 0-100 over the nodes that fit */
		int64_t s = least_allocated(&nodes[i].res) + 2 * (max_aff ? aff[i] * 100 / max_aff : 0) +
			    3 * (max_taint ? 100 - taint[i] * 100 / max_taint : 100);
		if (s > best_score || (s == best_score && i == prefer)) {
			best = i;
			best_score = s;
		}
	}
	if (best < 0) {
		const char **why = xcalloc((size_t)n * 2 + 1, sizeof *why), **pre = xcalloc((size_t)n + 1, sizeof *pre);
		int nw = 0;
		for (int i = 0; i < n; i++) {
			for (int k = 0; k < vd[i].nwhy; k++)
				why[nw++] = vd[i].why[k];
			pre[i] = vd[i].victims ? "No preemption victims found for incoming pod"
					       : "Preemption is not helpful for scheduling";
		}
		struct buf b;
		buf_init(&b);
		buf_printf(&b, "0/%d nodes are available", n);
		if (nw) {
			buf_printf(&b, ": ");
			histogram(&b, why, nw);
		}
		buf_printf(&b, ". preemption: 0/%d nodes are available", n);
		if (n) {
			buf_printf(&b, ": ");
			histogram(&b, pre, n);
		}
		buf_printf(&b, ".");
		*msg = buf_steal(&b);
		free(why);
		free(pre);
	}
	for (int i = 0; i < n; i++)
		for (int k = 0; k < vd[i].nwhy; k++)
			free(vd[i].why[k]);
	free(vd);
	free(taint);
	free(aff);
	return best;
}

char *placement_check(json_object *pod, const char *ns, json_object *labels, json_object *node,
		      const struct place_res *res, const struct place_peer *peers, int npeers)
{
	struct place_node pn = { .node = node, .peers = peers, .npeers = npeers };
	if (res)
		pn.res = *res;
	char *msg = NULL;
	placement_choose(pod, ns, labels, &pn, 1, 0, &msg);
	return msg;
}

char *placement_noexecute(json_object *pod, json_object *node)
{
	json_object *taints = jget(jget(node, "spec"), "taints"), *tols = jget(pod, "tolerations");
	for (size_t i = 0; i < alen(taints); i++) {
		json_object *t = json_object_array_get_idx(taints, i);
		const char *k = jstr(t, "key") ? jstr(t, "key") : "", *v = jstr(t, "value");
		if (util_str_eq(jstr(t, "effect"), "NoExecute") && !tolerates(tols, k, v, "NoExecute"))
			return v && *v ? xasprintf("%s=%s:NoExecute", k, v) : xasprintf("%s:NoExecute", k);
	}
	return NULL;
}

uint64_t placement_mem_request(uint64_t mem, int vcpus)
{
	/* virt-launcher's processes (monitor, launcher, virtqemud, virtlogd), QEMU's own, page tables (1/512 of the
	 * guest) and 8 MiB per vCPU, as KubeVirt's GetMemoryOverhead adds them (roughly: it also counts video and
	 * per-device memory) */
	const uint64_t mi = 1024 * 1024;
	return mem + (25 + 100 + 35 + 20 + 30) * mi + mem / 512 + (uint64_t)(vcpus > 0 ? vcpus : 1) * 8 * mi;
}

/* ---- validation ---- */

static int bad(char **path, char **why, const char *p, const char *w)
{
	*path = xstrdup(p);
	*why = xstrdup(w);
	return -1;
}

/* A requirement list at p: node (Gt, Lt allowed) or label selector requirements; fields: matchFields. */
static int check_reqs(json_object *a, const char *p, bool node, bool fields, char **path, char **why)
{
	if (a == NULL)
		return 0;
	if (!json_object_is_type(a, json_type_array))
		return bad(path, why, p, "expected a list");
	for (size_t i = 0; i < alen(a); i++) {
		json_object *r = json_object_array_get_idx(a, i), *values = jget(r, "values");
		char *pi = xasprintf("%s[%zu]", p, i);
		const char *op = jstr(r, "operator"), *key = jstr(r, "key");
		bool set = util_str_eq(op, "In") || util_str_eq(op, "NotIn"), ex = util_str_eq(op, "Exists") || util_str_eq(op, "DoesNotExist"),
		     cmp = node && (util_str_eq(op, "Gt") || util_str_eq(op, "Lt"));
		const char *w = NULL;
		long long n;
		if (!json_object_is_type(r, json_type_object))
			w = "expected a requirement {key, operator, values}";
		else if (key == NULL || *key == '\0')
			w = "key: Required value";
		else if (fields && !util_str_eq(key, "metadata.name"))
			w = "key: Invalid value: not a supported field selector key (metadata.name)";
		else if (!set && !ex && !cmp)
			w = node ? "operator: Unsupported value: supported values: \"In\", \"NotIn\", \"Exists\", \"DoesNotExist\", \"Gt\", \"Lt\""
				 : "operator: Unsupported value: supported values: \"In\", \"NotIn\", \"Exists\", \"DoesNotExist\"";
		else if (fields && !set)
			w = "operator: Invalid value: not a valid selector operator for a field (In, NotIn)";
		else if (values && !json_object_is_type(values, json_type_array))
			w = "values: expected a list";
		else if (set && alen(values) == 0)
			w = "values: Required value: must be specified when `operator` is 'In' or 'NotIn'";
		else if (ex && alen(values) > 0)
			w = "values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'";
		else if (cmp && (alen(values) != 1 || !int_of(json_object_get_string(json_object_array_get_idx(values, 0)), &n)))
			w = "values: Required value: must be specified single value when `operator` is 'Lt' or 'Gt'";
		if (w) {
			int rc = bad(path, why, pi, w);
			free(pi);
			return rc;
		}
		free(pi);
	}
	return 0;
}

static int check_pod_terms(json_object *pa, const char *p, char **path, char **why)
{
	if (pa == NULL)
		return 0;
	if (!json_object_is_type(pa, json_type_object))
		return bad(path, why, p, "expected a map");
	static const char *const kinds[] = { "requiredDuringSchedulingIgnoredDuringExecution",
					      "preferredDuringSchedulingIgnoredDuringExecution" };
	for (int k = 0; k < 2; k++) {
		json_object *terms = jget(pa, kinds[k]);
		if (terms && !json_object_is_type(terms, json_type_array)) {
			char *what = xasprintf("%s: expected a list", kinds[k]);
			int rc = bad(path, why, p, what);
			free(what);
			return rc;
		}
		for (size_t i = 0; i < alen(terms); i++) {
			/* a required term is the pod affinity term itself; a preferred one holds it with a weight */
			json_object *t = json_object_array_get_idx(terms, i);
			if (k == 1)
				t = jget(t, "podAffinityTerm");
			char *pi = xasprintf("%s.%s[%zu]%s", p, kinds[k], i, k == 1 ? ".podAffinityTerm" : "");
			char *pe = xasprintf("%s.labelSelector.matchExpressions", pi);
			int rc = 0;
			if (jstr(t, "topologyKey") == NULL || !*jstr(t, "topologyKey"))
				rc = bad(path, why, pi, "topologyKey: Required value: can not be empty");
			else
				rc = check_reqs(jget(jget(t, "labelSelector"), "matchExpressions"), pe, false, false,
						path, why);
			free(pe);
			free(pi);
			if (rc)
				return rc;
		}
	}
	return 0;
}

int placement_validate(json_object *pod, char **path, char **why)
{
	json_object *sel = jget(pod, "nodeSelector"), *aff = jget(pod, "affinity"), *tols = jget(pod, "tolerations");
	if (sel) {
		if (!json_object_is_type(sel, json_type_object))
			return bad(path, why, "nodeSelector", "expected a map of labels");
		json_object_object_foreach(sel, k, v) {
			(void)k;
			if (!json_object_is_type(v, json_type_string)) {
				char *p = xasprintf("nodeSelector.%s", k);
				int rc = bad(path, why, p, "expected a string");
				free(p);
				return rc;
			}
		}
	}
	if (aff) {
		if (!json_object_is_type(aff, json_type_object))
			return bad(path, why, "affinity", "expected a map");
		json_object *na = jget(aff, "nodeAffinity");
		json_object *terms = jget(jget(na, "requiredDuringSchedulingIgnoredDuringExecution"), "nodeSelectorTerms");
		if (jget(na, "requiredDuringSchedulingIgnoredDuringExecution") && !json_object_is_type(terms, json_type_array))
			return bad(path, why, "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms",
				   "Required value: must have at least one node selector term");
		for (size_t i = 0; i < alen(terms); i++) {
			json_object *t = json_object_array_get_idx(terms, i);
			char *pe = xasprintf("affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[%zu].matchExpressions", i);
			char *pf = xasprintf("affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[%zu].matchFields", i);
			int rc = check_reqs(jget(t, "matchExpressions"), pe, true, false, path, why);
			if (rc == 0)
				rc = check_reqs(jget(t, "matchFields"), pf, true, true, path, why);
			free(pe);
			free(pf);
			if (rc)
				return rc;
		}
		json_object *pref = jget(na, "preferredDuringSchedulingIgnoredDuringExecution");
		for (size_t i = 0; i < alen(pref); i++) {
			char *pe = xasprintf("affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[%zu].preference.matchExpressions", i);
			int rc = check_reqs(jget(jget(json_object_array_get_idx(pref, i), "preference"), "matchExpressions"), pe, true, false, path, why);
			free(pe);
			if (rc)
				return rc;
		}
		if (check_pod_terms(jget(aff, "podAffinity"), "affinity.podAffinity", path, why) ||
		    check_pod_terms(jget(aff, "podAntiAffinity"), "affinity.podAntiAffinity", path, why))
			return -1;
	}
	if (tols && !json_object_is_type(tols, json_type_array))
		return bad(path, why, "tolerations", "expected a list");
	for (size_t i = 0; i < alen(tols); i++) {
		json_object *t = json_object_array_get_idx(tols, i);
		const char *op = jstr(t, "operator"), *e = jstr(t, "effect"), *k = jstr(t, "key"), *v = jstr(t, "value");
		const char *w = NULL;
		if (op && !util_str_eq(op, "Exists") && !util_str_eq(op, "Equal"))
			w = "operator: Unsupported value: supported values: \"Equal\", \"Exists\"";
		else if (util_str_eq(op, "Exists") && v && *v)
			w = "value: Invalid value: value must be empty when `operator` is 'Exists'";
		else if (!util_str_eq(op, "Exists") && (k == NULL || *k == '\0'))
			w = "operator: Invalid value: operator must be Exists when `key` is empty, which means \"match all values and all keys\"";
		else if (e && *e && !util_str_eq(e, "NoSchedule") && !util_str_eq(e, "PreferNoSchedule") && !util_str_eq(e, "NoExecute"))
			w = "effect: Unsupported value: supported values: \"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\"";
		if (w) {
			char *p = xasprintf("tolerations[%zu]", i);
			int rc = bad(path, why, p, w);
			free(p);
			return rc;
		}
	}
	return 0;
}
