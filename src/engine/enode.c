/* A host's Node: the labels a node has and those its owner adds, its taints and cordon (kept in
 * engine-data/nodes/NAME.json, read when the host has its name, written before a change is answered), what it
 * has (memory, CPUs), and the scheduler's decision for a VM of that host (engine/placement.c). */
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/trust.h"
#include "core/util.h"
#include "core/xmalloc.h"
#include "engine/engine_int.h"
#include "engine/placement.h"

#define NODE_FILE_MAX (256 * 1024)

static char *node_path(const struct ehost *eh)
{
	char *dd = esettings_data_dir(), *p = xasprintf("%s/nodes/%s.json", dd, eh->src->name);
	free(dd);
	return p;
}

static json_object *jget(json_object *o, const char *k)
{
	json_object *v = NULL;
	return o && json_object_is_type(o, json_type_object) && json_object_object_get_ex(o, k, &v) ? v : NULL;
}

void enode_load(struct ehost *eh)
{
	if (eh->node_own)
		return;
	char *path = node_path(eh), *why = NULL;
	size_t len = 0;
	char *text = trust_read_file(path, &len, &why);
	if (text == NULL && (why || errno != ENOENT))
		log_warn("engine: %s: its node's labels and taints are not read: %s", path, why ? why : strerror(errno));
	json_object *o = text && len <= NODE_FILE_MAX ? json_tokener_parse(text) : NULL;
	if (text && (o == NULL || !json_object_is_type(o, json_type_object))) {
		log_warn("engine: %s: not a node's labels and taints (ignored)", path);
		json_object_put(o);
		o = NULL;
	}
	eh->node_own = o;
	free(text);
	free(why);
	free(path);
}

json_object *engine_node_obj(const struct source *src)
{
	struct ehost *eh = ehost_of_source(src);
	if (eh == NULL)
		return NULL;
	json_object *j = json_object_new_object(), *md = json_object_new_object(), *spec = json_object_new_object();
	json_object *own = eh->node_own, *ol = jget(own, "labels");
	json_object_object_add(md, "name", json_object_new_string(src->name));
	json_object *l;
	if (ol && json_object_is_type(ol, json_type_object))
		l = json_object_get(ol);
	else {
		l = json_object_new_object();
		json_object_object_add(l, "beta.kubernetes.io/arch", json_object_new_string("amd64"));
		json_object_object_add(l, "beta.kubernetes.io/os", json_object_new_string("linux"));
		json_object_object_add(l, "kubernetes.io/arch", json_object_new_string("amd64"));
		json_object_object_add(l, "kubernetes.io/hostname", json_object_new_string(src->name));
		json_object_object_add(l, "kubernetes.io/os", json_object_new_string("linux"));
		json_object_object_add(l, "kubevirt.io/schedulable", json_object_new_string("true"));
	}
	json_object_object_add(md, "labels", l);
	json_object_object_add(j, "metadata", md);
	json_object *t = jget(own, "taints"), *un = jget(own, "unschedulable");
	bool cordoned = un && json_object_get_boolean(un);
	if ((t && json_object_is_type(t, json_type_array) && json_object_array_length(t)) || cordoned) {
		json_object *ta = json_object_new_array();
		for (size_t i = 0; t && json_object_is_type(t, json_type_array) && i < json_object_array_length(t); i++)
			json_object_array_add(ta, json_object_get(json_object_array_get_idx(t, i)));
		if (cordoned) { /* what the node lifecycle controller adds to a cordoned node */
			json_object *c = json_object_new_object();
			json_object_object_add(c, "effect", json_object_new_string("NoSchedule"));
			json_object_object_add(c, "key", json_object_new_string("node.kubernetes.io/unschedulable"));
			json_object_array_add(ta, c);
		}
		json_object_object_add(spec, "taints", ta);
	}
	if (cordoned)
		json_object_object_add(spec, "unschedulable", json_object_new_boolean(true));
	json_object_object_add(j, "spec", spec);
	if (eh->mem_bytes || eh->cpus) {
		json_object *st = json_object_new_object(), *cap = json_object_new_object();
		char b[32];
		snprintf(b, sizeof b, "%d", eh->cpus);
		json_object_object_add(cap, "cpu", json_object_new_string(b));
		snprintf(b, sizeof b, "%lluKi", (unsigned long long)(eh->mem_bytes / 1024));
		json_object_object_add(cap, "memory", json_object_new_string(b));
		json_object_object_add(cap, "pods", json_object_new_string("110"));
		json_object_object_add(st, "capacity", cap);
		json_object_object_add(st, "allocatable", json_object_get(cap));
		json_object_object_add(j, "status", st);
	}
	return j;
}

/* The taint manager: a running VM whose launcher does not tolerate a NoExecute taint of its node is stopped
 * (its pod deleted); its run strategy decides what follows (Always: a start, which the taint keeps unscheduled). */
static void evict_noexecute(struct evm *v, json_object *node)
{
	if (!exec_active(v->cur) || v->stopping || v->deleting)
		return;
	json_object *pod = v->m->placement ? json_tokener_parse(v->m->placement) : NULL;
	char *taint = placement_noexecute(pod, node);
	json_object_put(pod);
	if (taint == NULL)
		return;
	evm_add_event(v, "Normal", "TaintManagerEviction", true, "Marking for deletion Pod %s/virt-launcher-%s-%.5s (taint %s)",
		      v->m->ns, v->m->name, v->cur->launcher, taint);
	free(taint);
	evm_stop_intent(v, v->m->grace);
	evm_persist(v);
	evm_issue_stop(v);
	evm_publish(v);
}

int engine_node_set(struct source *src, json_object *labels, json_object *taints, bool unschedulable, char **err)
{
	struct ehost *eh = ehost_of_source(src);
	if (eh == NULL) {
		*err = xstrdup("no such engine host");
		return -1;
	}
	json_object *own = json_object_new_object();
	json_object_object_add(own, "labels", json_object_get(labels));
	if (taints && json_object_array_length(taints))
		json_object_object_add(own, "taints", json_object_get(taints));
	if (unschedulable)
		json_object_object_add(own, "unschedulable", json_object_new_boolean(true));
	const char *text = json_object_to_json_string_ext(own, JSON_C_TO_STRING_PRETTY);
	char *path = node_path(eh), why[UTIL_WHY_LEN];
	int rc = util_write_file_why(path, text, strlen(text), 0600, why);
	if (rc < 0 && errno == ENOENT) {
		char *dd = esettings_data_dir(), *dir = xasprintf("%s/nodes", dd);
		util_mkdir_p(dir, 0700);
		free(dir);
		free(dd);
		rc = util_write_file_why(path, text, strlen(text), 0600, why);
	}
	if (rc < 0) {
		*err = xasprintf("cannot store %s: %s", path, why);
		free(path);
		json_object_put(own);
		return -1;
	}
	free(path);
	json_object_put(eh->node_own);
	eh->node_own = own;
	int n = 0;
	struct evm **vms = ehost_vms(eh, &n);
	json_object *node = engine_node_obj(src);
	for (int i = 0; i < n; i++) {
		evict_noexecute(vms[i], node);
		ereconcile(vms[i]);
	}
	json_object_put(node);
	free(vms);
	/* a start waiting on another host of the set may fit here now */
	int nh = 0;
	struct ehost **all = ehost_all(&nh);
	for (int h = 0; h < nh; h++) {
		if (all[h] == eh)
			continue;
		vms = ehost_vms(all[h], &n);
		for (int i = 0; i < n; i++)
			if (vms[i]->sched_msg)
				ereconcile(vms[i]);
		free(vms);
	}
	return 0;
}

static json_object *tlabels_json(const struct evm *v)
{
	json_object *l = json_object_new_object();
	for (int i = 0; i < v->m->ntlabels; i++) {
		const char *eq = strchr(v->m->tlabels[i], '=');
		if (eq == NULL)
			continue;
		char *k = xstrndup(v->m->tlabels[i], (size_t)(eq - v->m->tlabels[i]));
		json_object_object_add(l, k, json_object_new_string(eq + 1));
		free(k);
	}
	return l;
}

static int vcpus(const struct manifest *m)
{
	int n = (m->sockets > 0 ? m->sockets : 1) * (m->cores > 0 ? m->cores : 1) * (m->threads > 0 ? m->threads : 1);
	return n > 0 ? n : 1;
}

/* What the scheduler sees of host eh for v: its Node, what the host's other executions use, and their labels for
 * pod (anti-)affinity. node_input_free releases it. */
struct node_input {
	struct place_node pn;
	struct place_peer *peers;
	json_object **pj;
};

static void node_input(const struct evm *v, struct ehost *eh, struct node_input *in)
{
	memset(in, 0, sizeof *in);
	in->pn.node = engine_node_obj(eh->src);
	/* 100m a vCPU: KubeVirt's cpuAllocationRatio 10 */
	in->pn.res = (struct place_res){ .mem_cap = eh->mem_bytes, .mcpu_cap = (uint64_t)eh->cpus * 1000,
					 .mem_req = placement_mem_request(v->m->memory, vcpus(v->m)),
					 .mcpu_req = 100 * (uint64_t)vcpus(v->m) };
	int n = 0, np = 0;
	struct evm **vms = ehost_vms(eh, &n);
	in->peers = xcalloc((size_t)n + 1, sizeof *in->peers);
	in->pj = xcalloc((size_t)n + 1, sizeof *in->pj);
	for (int i = 0; i < n; i++) {
		const struct evm *o = vms[i];
		if (o == v || !exec_active(o->cur))
			continue;
		in->pn.res.mem_used += placement_mem_request(o->m->memory, vcpus(o->m));
		in->pn.res.mcpu_used += 100 * (uint64_t)vcpus(o->m);
		in->pj[np] = o->m->placement ? json_tokener_parse(o->m->placement) : NULL;
		in->peers[np].ns = o->m->ns;
		in->peers[np].labels = tlabels_json(o);
		json_object_object_get_ex(in->pj[np], "affinity", &in->peers[np].affinity);
		np++;
	}
	in->pn.peers = in->peers;
	in->pn.npeers = np;
	free(vms);
}

static void node_input_free(struct node_input *in)
{
	for (int i = 0; i < in->pn.npeers; i++) {
		json_object_put(in->peers[i].labels);
		json_object_put(in->pj[i]);
	}
	free(in->pj);
	free(in->peers);
	json_object_put(in->pn.node);
}

/* Where a start of v goes among the hosts it may use (all = every host of the engine set that is connected and
 * has no other VM of its name; or v's own alone) and the scheduler's choice among them. */
static char *place_among(const struct evm *v, struct ehost **hosts, int n, struct ehost **to)
{
	json_object *pod = v->m->placement ? json_tokener_parse(v->m->placement) : NULL;
	json_object *labels = tlabels_json(v);
	struct node_input *in = xcalloc((size_t)n + 1, sizeof *in);
	struct place_node *pn = xcalloc((size_t)n + 1, sizeof *pn);
	int prefer = -1;
	for (int i = 0; i < n; i++) {
		node_input(v, hosts[i], &in[i]);
		pn[i] = in[i].pn;
		if (hosts[i] == v->eh)
			prefer = i;
	}
	char *msg = NULL;
	int k = placement_choose(pod, v->m->ns, labels, pn, n, prefer, &msg);
	*to = k >= 0 ? hosts[k] : NULL;
	for (int i = 0; i < n; i++)
		node_input_free(&in[i]);
	free(in);
	free(pn);
	json_object_put(labels);
	json_object_put(pod);
	return msg;
}

char *enode_unschedulable_on(const struct evm *v, struct ehost *eh)
{
	struct ehost *to = NULL;
	return place_among(v, &eh, 1, &to);
}

char *enode_place(const struct evm *v, struct ehost **to)
{
	if (v->pinned) /* applied through one host of the set (-c HOST): it runs there */
		return place_among(v, (struct ehost **)&v->eh, 1, to);
	int n = 0, k = 0;
	struct ehost **all = ehost_all(&n);
	struct ehost **cand = xcalloc((size_t)n + 1, sizeof *cand);
	for (int i = 0; i < n; i++) {
		struct evm *other = hmap_get(&all[i]->vms, v->key);
		if (all[i] == v->eh || (all[i]->loaded && ehost_ready(all[i]) && other == NULL))
			cand[k++] = all[i];
	}
	char *msg = place_among(v, cand, k, to);
	free(cand);
	return msg;
}
