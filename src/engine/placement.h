/* Placement as Kubernetes' scheduler decides it, over the nodes an engine set has (each engine host one): a pod's
 * nodeSelector, required node affinity, tolerations against the node's taints, the node's spec.unschedulable
 * (cordon), resource requests against what the node has left, and required pod (anti-)affinity against the pods
 * already on it filter the nodes; the default profile's scores pick one of those that fit. Pure: JSON in
 * (json-c), the node chosen or the scheduler's message out. The filters run in the scheduler's order
 * (NodeUnschedulable, TaintToleration, NodeAffinity, NodeResourcesFit, InterPodAffinity); the first that fails
 * names the node's reason, and the message counts the reasons over all nodes as the scheduler's FitError does. */
#ifndef KVCON_ENGINE_PLACEMENT_H
#define KVCON_ENGINE_PLACEMENT_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

/* What the node has and what is already used of it; a 0 capacity is not checked. */
struct place_res {
	uint64_t mem_cap, mem_used, mem_req; /* bytes */
	uint64_t mcpu_cap, mcpu_used, mcpu_req; /* millicores */
};

/* One pod already on the node: its namespace, labels (object of strings) and affinity (the pod spec's, or NULL). */
struct place_peer {
	const char *ns;
	json_object *labels, *affinity;
};

/* One candidate node: the Node object, its resources, and the pods already on it. */
struct place_node {
	json_object *node;
	struct place_res res;
	const struct place_peer *peers;
	int npeers;
};

/* The node a pod goes to: every node filtered, those that fit scored as the default scheduler's plugins score
 * them (NodeResourcesFit's LeastAllocated over CPU and memory, weight 1; NodeAffinity's preferred terms, weight 2;
 * TaintToleration's untolerated PreferNoSchedule taints, weight 3), the highest wins; a tie goes to prefer (the
 * VM's current host, -1: none), then to the first. Its index, or -1 with *msg (caller frees): the scheduler's
 * FailedScheduling message, "0/N nodes are available: 1 REASON, 1 REASON. preemption: ..." (reasons counted and
 * sorted as the scheduler prints them). */
int placement_choose(json_object *pod, const char *ns, json_object *labels, const struct place_node *nodes, int n,
		     int prefer, char **msg);

/* The first NoExecute taint of node that pod (already running there) does not tolerate, as "KEY=VALUE:NoExecute"
 * (caller frees), or NULL: the taint manager evicts such a pod. A toleration with tolerationSeconds counts as
 * tolerating (the delay is not kept). */
char *placement_noexecute(json_object *pod, json_object *node);

/* Validates the placement fields of a pod spec (nodeSelector, affinity, tolerations) as the API server does.
 * 0, or -1 with *path (the field, relative to the spec) and *why (caller frees both). */
int placement_validate(json_object *pod, char **path, char **why);

/* The memory a launcher requests for a guest of mem bytes and vcpus: the guest's memory and KubeVirt's overhead
 * (its fixed processes, page tables, per-vCPU). */
uint64_t placement_mem_request(uint64_t mem, int vcpus);

/* ---- test seams: exported for tests/ only, not to be called by kvcon itself (tests/check-exports.sh) ---- */

/* One node alone (placement_choose of one): pod: {nodeSelector, affinity, tolerations} (a pod spec; NULL:
 * nothing asked). node: a Node object (metadata.name, metadata.labels, spec.taints, spec.unschedulable). ns,
 * labels: the incoming pod's.
 * NULL when the pod fits, else the scheduler's FailedScheduling message (caller frees). */
char *placement_check(json_object *pod, const char *ns, json_object *labels, json_object *node,
		      const struct place_res *res, const struct place_peer *peers, int npeers);

#endif
