/* KubeVirt-shaped API objects (VirtualMachine, VirtualMachineInstance, Pod) built from the store's compact
 * objects, for sources that have no API server to fetch them from (the local engine): describe prints them in
 * kubectl's layout as it prints a cluster's. Only what the store keeps is there (see model/obj.h). */
#include "model/objjson.h"

#include <stdio.h>
#include <string.h>

#include "core/util.h"

static void put_str(struct json_object *o, const char *k, const char *v)
{
	if (v && *v)
		json_object_object_add(o, k, json_object_new_string(v));
}

static struct json_object *time_json(int64_t t)
{
	char buf[40];
	if (t <= 0)
		return NULL;
	util_format_time(t, buf, sizeof buf);
	return json_object_new_string(buf);
}

static struct json_object *meta_json(const struct obj *o)
{
	struct json_object *md = json_object_new_object();
	put_str(md, "name", o->name);
	put_str(md, "namespace", o->ns);
	put_str(md, "uid", o->uid);
	json_object_object_add(md, "creationTimestamp", time_json(o->created));
	if (o->deleted)
		json_object_object_add(md, "deletionTimestamp", time_json(o->deleted));
	if (o->generation)
		json_object_object_add(md, "generation", json_object_new_int64((int64_t)o->generation));
	struct json_object *labels = NULL;
	for (const char *it = NULL, *k, *v; obj_label_next(o, &it, &k, &v);) {
		if (labels == NULL)
			labels = json_object_new_object();
		json_object_object_add(labels, k, json_object_new_string(v));
	}
	if (labels)
		json_object_object_add(md, "labels", labels);
	return md;
}

static struct json_object *conds_json(const struct cond *c, int n)
{
	struct json_object *a = json_object_new_array();
	for (int i = 0; i < n; i++) {
		struct json_object *j = json_object_new_object();
		json_object_object_add(j, "lastProbeTime", NULL);
		json_object_object_add(j, "lastTransitionTime", time_json(c[i].last_transition));
		put_str(j, "message", c[i].message);
		put_str(j, "reason", c[i].reason);
		put_str(j, "status", cond_status(&c[i]));
		put_str(j, "type", c[i].type);
		json_object_array_add(a, j);
	}
	return a;
}

static struct json_object *owner_json(const char *kind, const char *name, const char *uid)
{
	struct json_object *a = json_object_new_array(), *r = json_object_new_object();
	put_str(r, "apiVersion", "kubevirt.io/v1");
	put_str(r, "kind", kind);
	put_str(r, "name", name);
	put_str(r, "uid", uid);
	json_object_object_add(r, "controller", json_object_new_boolean(1));
	json_object_object_add(r, "blockOwnerDeletion", json_object_new_boolean(1));
	json_object_array_add(a, r);
	return a;
}

static struct json_object *vm_json(const struct vm *v)
{
	struct json_object *o = json_object_new_object(), *spec = json_object_new_object(), *st = json_object_new_object();
	put_str(o, "apiVersion", "kubevirt.io/v1");
	put_str(o, "kind", "VirtualMachine");
	json_object_object_add(o, "metadata", meta_json(&v->o));
	put_str(spec, "runStrategy", v->run_strategy);
	if (v->cpu_cores > 0 || v->memory) {
		struct json_object *tpl = json_object_new_object(), *ts = json_object_new_object(),
				   *dom = json_object_new_object();
		if (v->cpu_cores > 0) {
			struct json_object *cpu = json_object_new_object();
			json_object_object_add(cpu, "cores", json_object_new_int(v->cpu_cores));
			json_object_object_add(dom, "cpu", cpu);
		}
		if (v->memory) {
			struct json_object *mem = json_object_new_object();
			put_str(mem, "guest", v->memory);
			json_object_object_add(dom, "memory", mem);
		}
		json_object_object_add(ts, "domain", dom);
		json_object_object_add(tpl, "spec", ts);
		json_object_object_add(spec, "template", tpl);
	}
	json_object_object_add(o, "spec", spec);
	if (v->nconds)
		json_object_object_add(st, "conditions", conds_json(v->conds, v->nconds));
	if (v->created_vmi)
		json_object_object_add(st, "created", json_object_new_boolean(1));
	if (v->desired_generation)
		json_object_object_add(st, "desiredGeneration", json_object_new_int64((int64_t)v->desired_generation));
	if (v->observed_generation)
		json_object_object_add(st, "observedGeneration", json_object_new_int64((int64_t)v->observed_generation));
	put_str(st, "printableStatus", v->printable_status);
	if (v->ready)
		json_object_object_add(st, "ready", json_object_new_boolean(1));
	put_str(st, "runStrategy", v->run_strategy);
	/* a start pending and the crash loop's back-off: diagnose and console read them through the engine service */
	if (v->nscr) {
		struct json_object *a = json_object_new_array();
		for (int i = 0; i < v->nscr; i++) {
			struct json_object *r = json_object_new_object();
			put_str(r, "action", v->scr[i].action);
			if (v->scr[i].uid[0])
				put_str(r, "uid", v->scr[i].uid);
			json_object_array_add(a, r);
		}
		json_object_object_add(st, "stateChangeRequests", a);
	}
	const struct start_failure *f = vm_start_failure(v);
	if (f->failures > 0) {
		struct json_object *sf = json_object_new_object();
		json_object_object_add(sf, "consecutiveFailCount", json_object_new_int(f->failures));
		if (f->retry_after)
			json_object_object_add(sf, "retryAfterTimestamp", time_json(f->retry_after));
		if (f->vmi[0])
			put_str(sf, "lastFailedVMIUID", f->vmi);
		json_object_object_add(st, "startFailure", sf);
	}
	json_object_object_add(o, "status", st);
	return o;
}

static struct json_object *vmi_json(const struct vmi *v)
{
	struct json_object *o = json_object_new_object(), *spec = json_object_new_object(), *st = json_object_new_object();
	put_str(o, "apiVersion", "kubevirt.io/v1");
	put_str(o, "kind", "VirtualMachineInstance");
	struct json_object *md = meta_json(&v->o);
	if (v->vm_uid[0])
		json_object_object_add(md, "ownerReferences", owner_json("VirtualMachine", v->o.name, v->vm_uid));
	json_object_object_add(o, "metadata", md);
	put_str(spec, "evictionStrategy", v->eviction);
	json_object_object_add(o, "spec", spec);
	if (v->nactive) {
		struct json_object *ap = json_object_new_object();
		for (int i = 0; i < v->nactive; i++)
			json_object_object_add(ap, v->active[i].uid, json_object_new_string(v->active[i].node ? v->active[i].node : ""));
		json_object_object_add(st, "activePods", ap);
	}
	if (v->nconds)
		json_object_object_add(st, "conditions", conds_json(v->conds, v->nconds));
	if (v->guest_os) {
		struct json_object *g = json_object_new_object();
		put_str(g, "prettyName", v->guest_os);
		json_object_object_add(st, "guestOSInfo", g);
	}
	const struct vmi_net *net = vmi_net(v);
	if (v->nips) {
		struct json_object *ifs = json_object_new_array();
		for (int i = 0; i < v->nips; i++) {
			struct json_object *j = json_object_new_object();
			if (net->ip_ifaces && net->ip_ifaces[i])
				put_str(j, "name", net->ip_ifaces[i]);
			put_str(j, "ipAddress", v->ips[i]);
			struct json_object *all = json_object_new_array();
			json_object_array_add(all, json_object_new_string(v->ips[i]));
			json_object_object_add(j, "ipAddresses", all);
			if (net->ip_guest_ifs && net->ip_guest_ifs[i]) { /* the guest agent reports it too */
				put_str(j, "interfaceName", net->ip_guest_ifs[i]);
				put_str(j, "infoSource", "domain, guest-agent");
			} else if (net->ip_ifaces && net->ip_ifaces[i]) { /* the engine's: from the domain's network */
				put_str(j, "infoSource", "domain");
			}
			/* the engine's own: the interface's ports it forwards from the host */
			struct json_object *fw = NULL;
			for (int k = 0; k < net->nfwds; k++) {
				const struct port_fwd *f = &net->fwds[k];
				if (net->ip_ifaces == NULL || f->iface != net->ip_ifaces[i])
					continue;
				struct json_object *e = json_object_new_object();
				put_str(e, "name", f->name);
				json_object_object_add(e, "port", json_object_new_int(f->port));
				put_str(e, "protocol", f->proto);
				put_str(e, "hostIP", "127.0.0.1");
				json_object_object_add(e, "hostPort", json_object_new_int(f->host_port));
				if (fw == NULL)
					fw = json_object_new_array();
				json_object_array_add(fw, e);
			}
			if (fw)
				json_object_object_add(j, "forwardedPorts", fw);
			json_object_array_add(ifs, j);
		}
		json_object_object_add(st, "interfaces", ifs);
	}
	put_str(st, "nodeName", v->node);
	put_str(st, "phase", v->phase);
	if (v->nphases) {
		struct json_object *pt = json_object_new_array();
		for (int i = 0; i < v->nphases; i++) {
			struct json_object *j = json_object_new_object();
			put_str(j, "phase", v->phases[i].phase);
			json_object_object_add(j, "phaseTransitionTimestamp", time_json(v->phases[i].at));
			json_object_array_add(pt, j);
		}
		json_object_object_add(st, "phaseTransitionTimestamps", pt);
	}
	put_str(st, "reason", v->reason);
	json_object_object_add(o, "status", st);
	return o;
}

static struct json_object *pod_json(const struct pod *p)
{
	struct json_object *o = json_object_new_object(), *spec = json_object_new_object(), *st = json_object_new_object();
	put_str(o, "apiVersion", "v1");
	put_str(o, "kind", "Pod");
	struct json_object *md = meta_json(&p->o);
	if (p->vmi_uid[0])
		json_object_object_add(md, "ownerReferences",
				       owner_json("VirtualMachineInstance", p->vm_name ? p->vm_name : p->o.name, p->vmi_uid));
	if (p->pid > 0) { /* the engine's launcher: QEMU's pid (docs/ENGINE-SERVICE.md) */
		struct json_object *an = NULL;
		if (!json_object_object_get_ex(md, "annotations", &an) || !json_object_is_type(an, json_type_object)) {
			an = json_object_new_object();
			json_object_object_add(md, "annotations", an);
		}
		char b[16];
		snprintf(b, sizeof b, "%d", p->pid);
		json_object_object_add(an, POD_QEMU_PID_ANNOTATION, json_object_new_string(b));
	}
	json_object_object_add(o, "metadata", md);
	struct json_object *cs = json_object_new_array(), *css = json_object_new_array();
	for (int i = 0; i < p->ncontainers; i++) {
		const struct container_status *c = &p->containers[i];
		struct json_object *cj = json_object_new_object(), *sj = json_object_new_object(), *state = json_object_new_object();
		put_str(cj, "name", c->name);
		if (p->cmdline && i == 0) { /* the engine's launcher: the QEMU command line */
			struct json_object *cmd = json_object_new_array();
			json_object_array_add(cmd, json_object_new_string(p->cmdline));
			json_object_object_add(cj, "command", cmd);
		}
		json_object_array_add(cs, cj);
		put_str(sj, "name", c->name);
		put_str(cj, "image", c->image);
		put_str(sj, "image", c->image);
		put_str(sj, "imageID", c->image_id); /* what the reference resolved to, as kubelet reports it */
		json_object_object_add(sj, "ready", json_object_new_boolean(c->ready));
		json_object_object_add(sj, "restartCount", json_object_new_int(c->restarts));
		json_object_object_add(sj, "started", json_object_new_boolean(c->started_flag || util_str_eq(c->state, "running")));
		if (c->last_reason || c->last_finished) {
			struct json_object *ls = json_object_new_object(), *lt = json_object_new_object();
			json_object_object_add(lt, "exitCode", json_object_new_int(c->last_exit_code));
			put_str(lt, "reason", c->last_reason);
			if (c->last_finished)
				json_object_object_add(lt, "finishedAt", time_json(c->last_finished));
			json_object_object_add(ls, "terminated", lt);
			json_object_object_add(sj, "lastState", ls);
		}
		struct json_object *s = json_object_new_object();
		if (util_str_eq(c->state, "running")) {
			json_object_object_add(s, "startedAt", time_json(c->started));
			json_object_object_add(state, "running", s);
		} else if (util_str_eq(c->state, "terminated")) {
			json_object_object_add(s, "exitCode", json_object_new_int(c->exit_code));
			if (c->signal)
				json_object_object_add(s, "signal", json_object_new_int(c->signal));
			put_str(s, "reason", c->reason);
			put_str(s, "message", c->message);
			json_object_object_add(state, "terminated", s);
		} else {
			put_str(s, "reason", c->reason);
			put_str(s, "message", c->message); /* the engine's: an image pull's progress */
			json_object_object_add(state, "waiting", s);
		}
		json_object_object_add(sj, "state", state);
		json_object_array_add(css, sj);
	}
	/* a pod whose containers have no status yet (one waiting to be scheduled): its spec's names alone, so that
	 * READY reads 0/N as kubectl prints it */
	for (const char *q = p->ncontainers ? NULL : p->spec_names, *nl; q && *q && (nl = strchr(q, '\n')); q = nl + 1) {
		struct json_object *cj = json_object_new_object();
		json_object_object_add(cj, "name", json_object_new_string_len(q, (int)(nl - q)));
		json_object_array_add(cs, cj);
	}
	json_object_object_add(spec, "containers", cs);
	put_str(spec, "nodeName", p->node);
	json_object_object_add(o, "spec", spec);
	if (p->nconds)
		json_object_object_add(st, "conditions", conds_json(p->conds, p->nconds));
	json_object_object_add(st, "containerStatuses", css);
	put_str(st, "message", p->message);
	put_str(st, "phase", p->phase);
	put_str(st, "podIP", p->ip);
	put_str(st, "reason", p->reason);
	json_object_object_add(o, "status", st);
	return o;
}

struct json_object *objjson_new(const struct obj *o)
{
	switch (o->kind) {
	case OBJ_VM:
		return vm_json((const struct vm *)o);
	case OBJ_VMI:
		return vmi_json((const struct vmi *)o);
	case OBJ_POD:
		return pod_json((const struct pod *)o);
	default:
		return NULL;
	}
}
