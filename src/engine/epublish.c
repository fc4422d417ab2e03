/* Turning the engine's state into store objects: the VM, the VMI (one execution), the launcher pod (the QEMU
 * process), the engine's events, and the row of a record that does not read. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/intern.h"
#include "core/log.h"
#include "core/util.h"
#include "core/xmalloc.h"
#include "engine/engine_int.h"
#include "engine/migrate.h"

/* ---- events ---- */

void epublish_event_obj(struct evm *v, const struct evm_event *e)
{
	struct event *o = (struct event *)obj_new(OBJ_EVENT);
	o->o.src = v->eh->src;
	o->o.ns = intern(v->m->ns);
	o->o.name = xasprintf("%s.%.8s", v->m->name, e->uid);
	snprintf(o->o.uid, UID_LEN, "%s", e->uid);
	o->o.created = obj_epoch(e->first);
	o->type = e->type;
	o->reason = e->reason;
	o->message = xstrdup(e->message);
	o->inv_kind = intern(e->on_pod ? "Pod" : e->on_vmi ? "VirtualMachineInstance" : "VirtualMachine");
	o->inv_name = e->on_pod ? xasprintf("virt-launcher-%s-%.5s", v->m->name, e->inv_uid) : xstrdup(v->m->name);
	o->inv_ns = intern(v->m->ns);
	snprintf(o->inv_uid, UID_LEN, "%s", e->inv_uid);
	o->count = e->count;
	o->first = obj_epoch(e->first);
	o->last = obj_epoch(e->last);
	const char *by = "kvcon-engine";
	if (e->on_pod) /* the launcher pod's waits: the scheduler's, or kubelet's mount */
		by = e->reason == intern("FailedMount") ? "kubelet" : "default-scheduler";
	o->component = intern(by);
	store_upsert(engine_g.st, &o->o);
}

/* A new event of v (the oldest dropped past EVM_MAX_EVENTS), now, count 1, message msg (taken); the caller says
 * what it is about, then publishes it. */
static struct evm_event *event_new(struct evm *v, const char *type, const char *reason, char *msg)
{
	log_info("engine: %s: %s: %s", v->key, reason, msg);
	if (v->nevents == EVM_MAX_EVENTS) {
		store_remove(engine_g.st, v->eh->src, OBJ_EVENT, v->events[0].uid);
		free(v->events[0].message);
		memmove(v->events, v->events + 1, sizeof v->events[0] * (EVM_MAX_EVENTS - 1));
		v->nevents--;
	}
	v->events = xreallocarray(v->events, (size_t)v->nevents + 1, sizeof *v->events);
	struct evm_event *e = &v->events[v->nevents++];
	memset(e, 0, sizeof *e);
	util_uuid_v4(e->uid);
	e->type = intern(type);
	e->reason = intern(reason);
	e->message = msg;
	e->first = e->last = util_wall_s();
	e->count = 1;
	return e;
}

__attribute__((format(printf, 5, 6))) void evm_add_event(struct evm *v, const char *type, const char *reason,
							     bool on_vmi, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *msg = xvasprintf(fmt, ap);
	va_end(ap);
	struct evm_event *e = event_new(v, type, reason, msg);
	e->on_vmi = on_vmi && v->cur;
	snprintf(e->inv_uid, UID_LEN, "%s", e->on_vmi ? v->cur->uid : v->uid);
	epublish_event_obj(v, e);
}

/* The scheduler's FailedScheduling, or kubelet's FailedMount, on the launcher pod that waits (v->sched_launcher). */
void evm_sched_event(struct evm *v, const char *msg)
{
	struct evm_event *e = event_new(v, "Warning", v->sched_mount ? "FailedMount" : "FailedScheduling", xstrdup(msg));
	e->on_pod = true;
	snprintf(e->inv_uid, UID_LEN, "%s", v->sched_launcher);
	epublish_event_obj(v, e);
}

/* ---- the objects in the store ---- */

static void add_cond(struct cond **conds, int *n, const char *type, bool status, const char *reason,
		     const char *message, int64_t at)
{
	*conds = xreallocarray(*conds, (size_t)*n + 1, sizeof **conds);
	struct cond *c = &(*conds)[(*n)++];
	memset(c, 0, sizeof *c);
	c->type = intern(type);
	c->stat = status ? COND_TRUE : COND_FALSE;
	c->reason = intern(reason);
	c->message = xstrdup0(message);
	c->last_transition = at;
}


static const char *printable(const struct evm *v)
{
	if (v->deleting)
		return "Terminating";
	if (v->stopping)
		return "Stopping";
	if (exec_active(v->cur)) {
		if (v->cur->phase != intern("Running"))
			return "Starting";
		return v->cur->paused ? "Paused" : "Running";
	}
	if (v->cur && epull_reason(v->cur->how)) /* kubelet's reasons for the launcher's image containers */
		return strcmp(v->cur->how, "ErrImageNeverPull") == 0 ? "ErrImagePull"
		       : v->retry_after > util_wall_s() && evm_want_running(v) ? "ImagePullBackOff"
									     : "ErrImagePull";
	/* KubeVirt's while the VMI's pod is Unschedulable; Starting while the VMI is Scheduling, its pod mounting */
	if (v->sched_msg && evm_want_running(v))
		return v->sched_mount ? "Starting" : "ErrorUnschedulable";
	if (v->vol_wait && evm_want_running(v))
		return v->vol_wait; /* Provisioning, WaitingForVolumeBinding: a claim not ready yet */
	if (v->retry_after > util_wall_s() && evm_want_running(v))
		return "CrashLoopBackOff";
	if (v->start_error && strstr(v->start_error, "persistentVolumeClaim"))
		return "ErrorPvcNotFound";
	return "Stopped";
}

static char *pod_name(const struct evm *v)
{
	return xasprintf("virt-launcher-%s-%.5s", v->m->name, v->cur->launcher);
}

void epublish_remove_exec(struct evm *v, const struct exec *x)
{
	if (x == NULL)
		return;
	store_remove(engine_g.st, v->eh->src, OBJ_VMI, x->uid);
	store_remove(engine_g.st, v->eh->src, OBJ_POD, x->launcher);
	migrate_unpublish(v, x);
}

/* The execution's pod network (x->net) as the VMI's status.interfaces and its forwarded ports. */
static void publish_net(const struct exec *x, struct vmi *vi)
{
	for (const char *l = x->net; l && *l;) {
		const char *e = strchr(l, '\n');
		char *line = e ? xstrndup(l, (size_t)(e - l)) : xstrdup(l);
		l = e ? e + 1 : l + strlen(l);
		char *save = NULL, *kind = strtok_r(line, " ", &save), *ifc = strtok_r(NULL, " ", &save);
		char *a = strtok_r(NULL, " ", &save), *b = strtok_r(NULL, " ", &save), *c = strtok_r(NULL, " ", &save),
		     *d = strtok_r(NULL, " ", &save);
		if (kind && ifc && a && strcmp(kind, "ip") == 0) {
			vi->ips = xreallocarray(vi->ips, (size_t)vi->nips + 1, sizeof *vi->ips);
			struct vmi_net *n = vmi_net_set(vi);
			n->ip_ifaces = xreallocarray(n->ip_ifaces, (size_t)vi->nips + 1, sizeof *n->ip_ifaces);
			n->ip_ifaces[vi->nips] = intern(ifc);
			vi->ips[vi->nips++] = xstrdup(a);
			if (vi->ip == NULL)
				vi->ip = xstrdup(a);
		} else if (kind && ifc && d && strcmp(kind, "port") == 0) {
			struct vmi_net *n = vmi_net_set(vi);
			n->fwds = xreallocarray(n->fwds, (size_t)n->nfwds + 1, sizeof *n->fwds);
			struct port_fwd *f = &n->fwds[n->nfwds++];
			f->iface = intern(ifc);
			f->name = strcmp(a, "-") ? intern(a) : NULL;
			f->proto = intern(b);
			f->port = atoi(c);
			f->host_port = atoi(d);
		}
		free(line);
	}
}

static void add_tlabels(const struct evm *v, struct obj *o)
{
	for (int i = 0; i < v->m->ntlabels; i++) { /* the template's labels, as KubeVirt's VMI carries them */
		const char *eq = strchr(v->m->tlabels[i], '=');
		if (eq == NULL || strncmp(v->m->tlabels[i], "kubevirt.io/nodeName=", 21) == 0)
			continue;
		char *k = xstrndup(v->m->tlabels[i], (size_t)(eq - v->m->tlabels[i]));
		obj_label_add(o, k, eq + 1);
		free(k);
	}
}

/* A start that waits, as KubeVirt shows it: the VMI Scheduling (no node yet), its launcher pod Pending. The node
 * does not admit it: PodScheduled False (Unschedulable, the scheduler's message), no node. A Secret or ConfigMap is
 * missing (sched_mount): the pod is on the node, PodScheduled True, its compute container waiting
 * (ContainerCreating) while kubelet cannot mount the volume. */
static void publish_unscheduled(struct evm *v)
{
	bool mount = v->sched_mount;
	struct vmi *vi = (struct vmi *)obj_new(OBJ_VMI);
	vi->o.src = v->eh->src;
	vi->o.ns = intern(v->m->ns);
	vi->o.name = xstrdup(v->m->name);
	snprintf(vi->o.uid, UID_LEN, "%s", v->sched_uid);
	vi->o.created = obj_epoch(v->sched_since);
	vi->o.generation = v->generation;
	add_tlabels(v, &vi->o);
	snprintf(vi->vm_uid, UID_LEN, "%s", v->uid);
	vi->phase = intern("Scheduling");
	vi->phases = xcalloc(2, sizeof *vi->phases);
	vi->phases[0].phase = intern("Pending");
	vi->phases[0].at = v->sched_since;
	vi->phases[1].phase = intern("Scheduling");
	vi->phases[1].at = v->sched_since;
	vi->nphases = 2;
	add_cond(&vi->conds, &vi->nconds, "Ready", false, "GuestNotRunning", "Guest VM is not reported as running",
		 v->sched_since);
	if (!mount)
		add_cond(&vi->conds, &vi->nconds, "PodScheduled", false, "Unschedulable", v->sched_msg, v->sched_since);
	vi->eviction = v->m->eviction ? intern(v->m->eviction) : NULL;
	vi->active = xcalloc(1, sizeof *vi->active);
	snprintf(vi->active[0].uid, UID_LEN, "%s", v->sched_launcher);
	vi->nactive = 1;
	store_upsert(engine_g.st, &vi->o);

	struct pod *p = (struct pod *)obj_new(OBJ_POD);
	p->o.src = v->eh->src;
	p->o.ns = intern(v->m->ns);
	p->o.name = xasprintf("virt-launcher-%s-%.5s", v->m->name, v->sched_launcher);
	snprintf(p->o.uid, UID_LEN, "%s", v->sched_launcher);
	p->o.created = obj_epoch(v->sched_since);
	obj_label_add(&p->o, "kubevirt.io", "virt-launcher");
	obj_label_add(&p->o, "kubevirt.io/created-by", v->sched_uid);
	obj_label_add(&p->o, "vm.kubevirt.io/name", v->m->name);
	snprintf(p->vmi_uid, UID_LEN, "%s", v->sched_uid);
	p->vm_name = intern(v->m->name);
	p->phase = intern("Pending");
	p->spec_containers = 1; /* compute, not started: READY 0/1 */
	p->spec_names = intern("compute\n");
	if (mount) {
		p->node = intern(v->eh->src->name);
		p->containers = xcalloc(1, sizeof *p->containers);
		p->ncontainers = 1;
		p->containers[0].name = intern("compute");
		p->containers[0].state = intern("waiting");
		p->containers[0].reason = intern("ContainerCreating");
		add_cond(&p->conds, &p->nconds, "PodScheduled", true, "", NULL, v->sched_since);
		add_cond(&p->conds, &p->nconds, "Ready", false, "ContainersNotReady",
			 "containers with unready status: [compute]", v->sched_since);
	} else
		add_cond(&p->conds, &p->nconds, "PodScheduled", false, "Unschedulable", v->sched_msg, v->sched_since);
	store_upsert(engine_g.st, &p->o);
}

void epublish_unscheduled_remove(struct evm *v)
{
	store_remove(engine_g.st, v->eh->src, OBJ_VMI, v->sched_uid);
	store_remove(engine_g.st, v->eh->src, OBJ_POD, v->sched_launcher);
}

void evm_publish(struct evm *v)
{
	int64_t now = util_wall_s();
	struct vm *vm = (struct vm *)obj_new(OBJ_VM);
	vm->o.src = v->eh->src;
	vm->o.ns = intern(v->m->ns);
	vm->o.name = xstrdup(v->m->name);
	snprintf(vm->o.uid, UID_LEN, "%s", v->uid);
	vm->o.created = obj_epoch(v->created);
	vm->o.generation = v->generation;
	vm->o.deleted = obj_epoch(v->deleting ? now : 0);
	if (v->m->nlabels > 0) {
		/* packed in one go: adding them one by one costs the length so far each time (80,000 labels) */
		size_t n = 0, cap = (size_t)v->m->nlabels;
		char **kvs = xcalloc(cap, sizeof *kvs);
		const char **keys = xcalloc(cap, sizeof *keys), **vals = xcalloc(cap, sizeof *vals);
		for (int i = 0; i < v->m->nlabels; i++) {
			char *kv = xstrdup(v->m->labels[i]);
			char *eq = strchr(kv, '=');
			if (eq == NULL) {
				free(kv);
				continue;
			}
			*eq = '\0';
			kvs[n] = kv;
			keys[n] = kv;
			vals[n++] = eq + 1;
		}
		size_t len = obj_labels_encode(NULL, keys, vals, n);
		free(vm->o.labels);
		vm->o.labels = xmalloc(len);
		obj_labels_encode(vm->o.labels, keys, vals, n);
		for (size_t i = 0; i < n; i++)
			free(kvs[i]);
		free(kvs);
		free(keys);
		free(vals);
	}
	vm->run_strategy = intern(v->run_strategy);
	vm->running_field = v->m->running_field;
	vm->printable_status = intern(printable(v));
	bool running = exec_active(v->cur) && v->cur->phase == intern("Running");
	vm->ready = running && !v->cur->paused;
	vm->created_vmi = v->cur != NULL || v->sched_msg != NULL;
	vm->cpu_cores = v->m->cores;
	vm->memory = xstrdup0(v->m->memory_text);
	vm->desired_generation = v->generation;
	vm->observed_generation = v->generation;
	add_cond(&vm->conds, &vm->nconds, "Ready", vm->ready, vm->ready ? "" : "VMINotRunning",
		 vm->ready ? NULL : "the VM has no running instance", now);
	if (v->start_error)
		add_cond(&vm->conds, &vm->nconds, "Failure", true, "FailedCreate", v->start_error, now);
	if (v->sched_msg && !v->sched_mount && v->cur == NULL)
		add_cond(&vm->conds, &vm->nconds, "PodScheduled", false, "Unschedulable", v->sched_msg, v->sched_since);
	if (running && v->cur->paused)
		add_cond(&vm->conds, &vm->nconds, "Paused", true, "PausedByUser", "paused by the user", now);
	if (exec_active(v->cur) && v->cur->generation != v->generation)
		add_cond(&vm->conds, &vm->nconds, "RestartRequired", true, "",
			 "the manifest changed since this instance started; restart to apply it", now);
	if (v->failures > 1) {
		struct start_failure *f = vm_start_failure_set(vm);
		f->failures = v->failures;
		f->retry_after = v->retry_after;
	}
	if (v->req_start || v->req_stop) {
		vm->scr = xcalloc(1, sizeof *vm->scr);
		vm->scr[0].action = intern(v->req_start ? "Start" : "Stop");
		vm->nscr = 1;
	}
	store_upsert(engine_g.st, &vm->o);

	struct exec *x = v->cur;
	if (x == NULL && v->sched_msg)
		publish_unscheduled(v);
	if (x == NULL)
		return;
	struct vmi *vi = (struct vmi *)obj_new(OBJ_VMI);
	vi->o.src = v->eh->src;
	vi->o.ns = intern(v->m->ns);
	vi->o.name = xstrdup(v->m->name);
	snprintf(vi->o.uid, UID_LEN, "%s", x->uid);
	vi->o.created = obj_epoch(x->created);
	vi->o.generation = x->generation;
	add_tlabels(v, &vi->o);
	obj_label_add(&vi->o, "kubevirt.io/nodeName", x->node ? x->node : "");
	snprintf(vi->vm_uid, UID_LEN, "%s", v->uid);
	/* an execution waiting for its images is, as in KubeVirt, a VMI still Scheduling (its launcher Pending) */
	vi->phase = epull_reason(x->how) ? intern("Scheduling") : x->phase;
	vi->node = intern(x->node);
	vi->phases = xcalloc((size_t)x->nphases + 1, sizeof *vi->phases);
	memcpy(vi->phases, x->phases, sizeof *vi->phases * (size_t)x->nphases);
	vi->nphases = x->nphases;
	bool vready = x->phase == intern("Running") && !x->paused;
	add_cond(&vi->conds, &vi->nconds, "Ready", vready, vready ? "" : x->paused ? "PausedByUser" : "NotRunning",
		 NULL, x->started ? x->started : x->created);
	add_cond(&vi->conds, &vi->nconds, "AgentConnected", x->agent, x->agent ? "" : "AgentNotConnected",
		 x->agent ? NULL : "no guest agent on org.qemu.guest_agent.0", now);
	if (x->creds) /* accessCredentials through the agent (ecreds.c), in virt-handler's words */
		add_cond(&vi->conds, &vi->nconds, "AccessCredentialsSynchronized", x->creds > 0,
			 x->creds > 0 ? "AccessCredentialsSyncSuccess" : "AccessCredentialsSyncFailed", x->creds_msg, now);
	if (x->paused)
		add_cond(&vi->conds, &vi->nconds, "Paused", true, "PausedByUser", "paused by the user", now);
	vi->software_emulation = x->tcg;
	vi->guest_os = x->agent ? xstrdup0(x->guest_os) : NULL;
	vi->agent_version = x->agent ? xstrdup0(x->agent_version) : NULL;
	publish_net(x, vi);
	if (x->agent && x->agent_ifs && vi->nips) /* the guest's name of each domain address the agent reports */
		for (int i = 0; i < vi->nips; i++)
			for (const char *l = x->agent_ifs; *l;) {
				const char *sp = strchr(l, ' '), *nl = strchr(l, '\n');
				if (sp == NULL || nl == NULL || sp > nl)
					break;
				if ((size_t)(nl - sp - 1) == strlen(vi->ips[i]) && strncmp(sp + 1, vi->ips[i], (size_t)(nl - sp - 1)) == 0) {
					struct vmi_net *net = vmi_net_set(vi);
					if (net->ip_guest_ifs == NULL)
						net->ip_guest_ifs = xcalloc((size_t)vi->nips, sizeof *net->ip_guest_ifs);
					char *n = xstrndup(l, (size_t)(sp - l));
					net->ip_guest_ifs[i] = intern(n);
					free(n);
					break;
				}
				l = nl + 1;
			}
	vi->eviction = v->m->eviction ? intern(v->m->eviction) : NULL;
	vi->active = xcalloc(1, sizeof *vi->active);
	snprintf(vi->active[0].uid, UID_LEN, "%s", x->launcher);
	vi->active[0].node = vi->node;
	vi->nactive = 1;
	migrate_publish(v, vi);
	store_upsert(engine_g.st, &vi->o);

	struct pod *p = (struct pod *)obj_new(OBJ_POD);
	p->o.src = v->eh->src;
	p->o.ns = intern(v->m->ns);
	p->o.name = pod_name(v);
	snprintf(p->o.uid, UID_LEN, "%s", x->launcher);
	p->o.created = obj_epoch(x->created);
	/* a launcher a live migration made was created when the source's ended (the VMI keeps its own creation) */
	if (x->mig && x->mig->nprev > 0 && x->mig->prev[x->mig->nprev - 1].ended > p->o.created)
		p->o.created = obj_epoch(x->mig->prev[x->mig->nprev - 1].ended);
	obj_label_add(&p->o, "kubevirt.io", "virt-launcher");
	obj_label_add(&p->o, "kubevirt.io/created-by", x->uid);
	obj_label_add(&p->o, "vm.kubevirt.io/name", v->m->name);
	snprintf(p->vmi_uid, UID_LEN, "%s", x->uid);
	p->vm_name = intern(v->m->name);
	const char *pp = x->phase == intern("Pending") || x->phase == intern("Scheduled") || epull_reason(x->how)
				 ? "Pending" /* a pod whose images cannot be pulled stays Pending */
				 : x->phase;
	p->phase = intern(pp);
	p->node = intern(x->node);
	p->containers = xcalloc(1, sizeof *p->containers);
	p->ncontainers = 1;
	struct container_status *c = &p->containers[0];
	c->name = intern("compute");
	if (x->phase == intern("Running")) {
		c->state = intern("running");
		c->ready = true;
		c->started = x->started;
		p->ready_containers = 1;
	} else if (exec_active(x)) {
		c->state = intern("waiting");
		c->reason = intern("ContainerCreating");
		c->message = xstrdup0(x->pull_msg);
	} else if (epull_reason(x->how)) {
		c->state = intern("waiting");
		c->reason = intern(strcmp(x->how, "ErrImageNeverPull") == 0 ? x->how : printable(v));
		c->message = xstrdup0(x->message);
	} else {
		c->state = intern("terminated");
		c->reason = intern(x->phase == intern("Succeeded") ? "Completed" : "Error");
		c->exit_code = x->phase == intern("Succeeded") ? 0 : 1;
		c->message = xstrdup0(x->message);
	}
	add_cond(&p->conds, &p->nconds, "PodScheduled", true, "", NULL, x->created);
	add_cond(&p->conds, &p->nconds, "Ready", c->ready, c->ready ? "" : "ContainersNotReady", NULL, now);
	epull_containers(v, p); /* last: it grows p->containers, c points into it */
	p->pid = x->pid;
	p->cmdline = xstrdup0(x->cmdline);
	p->log_path = xstrdup0(x->log_path);
	store_upsert(engine_g.st, &p->o);
}


/* The row of an unreadable record NS_NAME.json (names cannot hold '_'): status RecordUnreadable, and what is
 * known of its domain. */
void epublish_bad(struct ehost *eh, const char *file, const char *why, const char *uid,
			const struct host_dom *d)
{
	size_t n = strlen(file);
	const char *us = strchr(file, '_');
	if (us == NULL || n < 6)
		return;
	struct vm *vm = (struct vm *)obj_new(OBJ_VM);
	vm->o.src = eh->src;
	char *ns = xstrndup(file, (size_t)(us - file));
	vm->o.ns = intern(ns);
	free(ns);
	vm->o.name = xstrndup(us + 1, n - 5 - (size_t)(us + 1 - file));
	snprintf(vm->o.uid, UID_LEN, "%s", uid);
	char *path = util_path_join(eh->records_dir, file);
	struct stat sb;
	if (stat(path, &sb) == 0)
		vm->o.created = obj_epoch(sb.st_mtime); /* when the file was last written */
	free(path);
	vm->run_strategy = intern("Unknown");
	vm->printable_status = intern("RecordUnreadable");
	/* the file and what is wrong with it: what a client (kvcon get, kubectl) shows of the row */
	char *msg = xasprintf("the engine's record of this VM is unreadable (%s)%s", why,
			      d && d->pid > 0 ? "; its QEMU keeps running, unmanaged" : "");
	add_cond(&vm->conds, &vm->nconds, "Failure", true, "RecordUnreadable", msg, util_wall_s());
	free(msg);
	store_upsert(engine_g.st, &vm->o);
}
