/* Placement as Kubernetes' scheduler decides it, for one node: a pod's nodeSelector, required node affinity,
 * tolerations against the node's taints, the node's spec.unschedulable (cordon), resource requests against what
 * the node has left, and required pod (anti-)affinity against the pods already on it. Pure: JSON in (json-c),
 * the scheduler's message out. The filters run in the scheduler's order (NodeUnschedulable, TaintToleration,
 * NodeAffinity, NodeResourcesFit, InterPodAffinity); the first that fails names the reason, as on a one-node
 * cluster. */
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

/* pod: {nodeSelector, affinity, tolerations} (a pod spec; NULL: nothing asked). node: a Node object
 * (metadata.name, metadata.labels, spec.taints, spec.unschedulable). ns, labels: the incoming pod's.
 * NULL when the pod fits, else the scheduler's FailedScheduling message (caller frees). */
char *placement_check(json_object *pod, const char *ns, json_object *labels, json_object *node,
		      const struct place_res *res, const struct place_peer *peers, int npeers);

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

#endif
