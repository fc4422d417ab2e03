/* The run-strategy reconciler: executions (start, end, archive), stop with its grace period, what the host workers
 * report (connected, sync, lifecycle events, finished requests) and what the reconciler does about it, as KubeVirt's
 * run strategies say. */
#include <errno.h>
#include <libvirt/libvirt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/buf.h"
#include "core/intern.h"
#include "core/log.h"
#include "core/loop.h"
#include "core/util.h"
#include "core/xmalloc.h"
#include "engine/embed.h"
#include "engine/engine_int.h"
#include "engine/hostfwd.h"
#include "engine/migrate.h"
#include "engine/record.h"

/* ---- executions ---- */

static void archive(struct evm *v)
{
	struct exec *x = v->cur;
	if (x == NULL)
		return;
	if (v->npast == EVM_MAX_HISTORY) {
		free(v->past[0].node);
		free(v->past[0].how);
		memmove(v->past, v->past + 1, sizeof v->past[0] * (EVM_MAX_HISTORY - 1));
		v->npast--;
	}
	v->past = xreallocarray(v->past, (size_t)v->npast + 1, sizeof *v->past);
	struct evm_past *p = &v->past[v->npast++];
	memset(p, 0, sizeof *p);
	snprintf(p->uid, UID_LEN, "%s", x->uid);
	snprintf(p->launcher, UID_LEN, "%s", x->launcher);
	p->node = xstrdup0(x->node);
	p->how = xstrdup0(x->how ? x->how : x->phase);
	p->started = x->started;
	p->ended = x->ended;
	epublish_remove_exec(v, x);
	exec_free(x);
	v->cur = NULL;
}

static void fill_from_dom(struct ehost *eh, struct exec *x, const struct host_dom *d)
{
	(void)eh;
	if (d->pid > 0)
		x->pid = d->pid;
	if (d->cmdline) {
		free(x->cmdline);
		x->cmdline = xstrdup(d->cmdline);
	}
	if (d->log_path) {
		free(x->log_path);
		x->log_path = xstrdup(d->log_path);
	}
	if (d->started)
		x->started = d->started;
	x->paused = d->state == VIR_DOMAIN_PAUSED;
}

/* how: Stopped, ShutdownByGuest, Crashed, FailedCreate, Migrated. */
void evm_end_exec(struct evm *v, bool failed, const char *how, const char *message)
{
	struct exec *x = v->cur;
	if (!exec_active(x))
		return;
	int64_t now = util_wall_s();
	x->ended = now;
	x->pid = 0;
	x->paused = false;
	free(x->how);
	x->how = xstrdup(how);
	free(x->message);
	x->message = xstrdup0(message);
	exec_set_phase(x, failed ? "Failed" : "Succeeded");
	loop_timer_cancel(v->grace_timer);
	v->grace_timer = NULL;
	bool by_us = x->stop_by_us;
	v->stopping = false;
	v->stop_unsent = false;
	v->stop_deadline = 0;
	v->pause_req = 0;
	if (failed) {
		bool quick = x->started == 0 || now - x->started < QUICK_FAILURE_S;
		v->failures = quick ? v->failures + 1 : 1;
		int64_t delay = v->failures <= 1 ? 0 : (int64_t)10 << (v->failures - 2 > 5 ? 5 : v->failures - 2);
		v->retry_after = delay ? now + (delay > 300 ? 300 : delay) : 0;
		evm_add_event(v, "Warning", how, true, "%s", message ? message : how);
	} else {
		v->failures = 0;
		v->retry_after = 0;
		evm_add_event(v, "Normal", how, true, "%s", message ? message : how);
	}
	/* the display's and agent's sockets, when they had a private directory of their own */
	char *sd = v->eh->h ? domxml_sock_dir_of(x->run_dir, x->uid) : NULL;
	if (sd) {
		struct host_req *r = xcalloc(1, sizeof *r);
		r->type = RQ_RMTREE;
		r->path = sd;
		ehost_track(v->eh, host_request(v->eh->h, r), PK_WRITE, NULL);
	}
	if (by_us)
		archive(v); /* KubeVirt deletes the VMI of a stopped VM */
	evm_publish(v);
	evm_persist(v);
}

static const char *const stop_detail_text[] = {
	[VIR_DOMAIN_EVENT_STOPPED_SHUTDOWN] = "the guest shut down",
	[VIR_DOMAIN_EVENT_STOPPED_DESTROYED] = "the domain was destroyed outside kvcon",
	[VIR_DOMAIN_EVENT_STOPPED_CRASHED] = "the guest crashed",
	[VIR_DOMAIN_EVENT_STOPPED_MIGRATED] = "the domain migrated away",
	[VIR_DOMAIN_EVENT_STOPPED_SAVED] = "the domain was saved",
	[VIR_DOMAIN_EVENT_STOPPED_FAILED] = "QEMU exited unexpectedly",
	[VIR_DOMAIN_EVENT_STOPPED_FROM_SNAPSHOT] = "a snapshot was restored",
};

/* A stop seen as a lifecycle event detail (VIR_DOMAIN_EVENT_STOPPED_*). */
static void ended_by_event(struct evm *v, int detail)
{
	if (v->cur == NULL)
		return;
	const char *text = detail >= 0 && detail <= VIR_DOMAIN_EVENT_STOPPED_FROM_SNAPSHOT ? stop_detail_text[detail]
											     : "the domain stopped";
	if (v->cur->stop_by_us)
		evm_end_exec(v, false, "Stopped", "stopped by request");
	else if (detail == VIR_DOMAIN_EVENT_STOPPED_SHUTDOWN)
		evm_end_exec(v, false, "ShutdownByGuest", text);
	else if (detail == VIR_DOMAIN_EVENT_STOPPED_MIGRATED)
		evm_end_exec(v, false, "Migrated", text);
	else
		evm_end_exec(v, true, "Crashed", text);
}

/* The same from a shut-off state's reason (VIR_DOMAIN_SHUTOFF_*), seen by a resync. */
static void ended_by_state(struct evm *v, const struct host_dom *d)
{
	static const int detail_of_reason[] = {
		[VIR_DOMAIN_SHUTOFF_UNKNOWN] = VIR_DOMAIN_EVENT_STOPPED_FAILED,
		[VIR_DOMAIN_SHUTOFF_SHUTDOWN] = VIR_DOMAIN_EVENT_STOPPED_SHUTDOWN,
		[VIR_DOMAIN_SHUTOFF_DESTROYED] = VIR_DOMAIN_EVENT_STOPPED_DESTROYED,
		[VIR_DOMAIN_SHUTOFF_CRASHED] = VIR_DOMAIN_EVENT_STOPPED_CRASHED,
		[VIR_DOMAIN_SHUTOFF_MIGRATED] = VIR_DOMAIN_EVENT_STOPPED_MIGRATED,
		[VIR_DOMAIN_SHUTOFF_SAVED] = VIR_DOMAIN_EVENT_STOPPED_SAVED,
		[VIR_DOMAIN_SHUTOFF_FAILED] = VIR_DOMAIN_EVENT_STOPPED_FAILED,
		[VIR_DOMAIN_SHUTOFF_FROM_SNAPSHOT] = VIR_DOMAIN_EVENT_STOPPED_FROM_SNAPSHOT,
	};
	if (d == NULL) {
		if (v->cur->stop_by_us)
			evm_end_exec(v, false, "Stopped", "stopped by request");
		else
			evm_end_exec(v, true, "Crashed", "the domain disappeared");
		return;
	}
	if (d->state == VIR_DOMAIN_SHUTOFF && d->reason >= 0 &&
	    d->reason < (int)(sizeof detail_of_reason / sizeof detail_of_reason[0]))
		ended_by_event(v, detail_of_reason[d->reason]);
	else if (d->state == VIR_DOMAIN_CRASHED)
		ended_by_event(v, VIR_DOMAIN_EVENT_STOPPED_CRASHED);
	else
		ended_by_event(v, VIR_DOMAIN_EVENT_STOPPED_FAILED);
}

/* An unprivileged QEMU (engine/embed.h) must reach the engine's images and volumes and own the execution's run
 * directory; paths elsewhere (hostDisk, kernelBoot image: host) are the host owner's to open to it. */
static int reach_for_qemu(struct ehost *eh, const struct evm *v, const char *imgs, const char *vols,
			  const char *run_dir, char **err)
{
	if (geteuid() != 0 && eh->acct.same) {
		/* the embedded driver runs as kvcon: without root libvirt cannot create a tap device on a bridge (and
		 * qemu-bridge-helper is not setuid on Debian); QEMU itself never needs root for it */
		char *embed = embed_uri_root(eh->uri);
		bool local = embed != NULL;
		free(embed);
		for (int i = 0; local && i < v->m->nifaces; i++)
			if (v->m->ifaces[i].bridge) {
				*err = xasprintf("spec.template.spec.domain.devices.interfaces[%d].bridge: a host bridge needs "
						 "kvcon as root (libvirt creates the tap device; QEMU still runs unprivileged)",
						 i);
				return -1;
			}
		return 0;
	}
	if (eh->acct.same)
		return 0;
	struct stat st;
	if (stat(imgs, &st) == 0 && embed_reach(&eh->acct, imgs, err) < 0)
		return -1;
	for (int i = 0; i < v->m->nvols; i++)
		if (v->m->vols[i].type == MF_VOL_CONTAINER) { /* pulled containerDisks are backing files of the cache */
			char *cache = esettings_image_cache(), *disks = util_path_join(cache, "disks");
			int rc = stat(disks, &st) == 0 ? embed_reach(&eh->acct, disks, err) : 0;
			free(disks);
			free(cache);
			if (rc < 0)
				return -1;
			break;
		}
	if (v->m->kernel_image) { /* a kernel-boot image is a directory of the image directory */
		char *kd = util_path_join(imgs, v->m->kernel_image);
		char *real = realpath(kd, NULL), *rimgs = realpath(imgs, NULL);
		int rc = 0;
		if (real && rimgs && util_has_prefix(real, rimgs) && real[strlen(rimgs)] == '/' &&
		    stat(real, &st) == 0 && S_ISDIR(st.st_mode))
			rc = embed_reach(&eh->acct, real, err);
		free(real);
		free(rimgs);
		free(kd);
		if (rc < 0)
			return -1;
	}
	for (int i = 0; i < v->m->nvols; i++)
		if (v->m->vols[i].type == MF_VOL_PVC) {
			char *nsd = util_path_join(vols, v->m->ns);
			int rc = stat(nsd, &st) == 0 ? embed_reach(&eh->acct, nsd, err) : 0;
			free(nsd);
			if (rc < 0)
				return -1;
			break;
		}
	/* the run directory itself is made (root's, 0700) and filled by domxml_prepare, then given to the account
	 * (host.c); here only the way to it */
	char *parent = xstrdup(run_dir);
	char *slash = strrchr(parent, '/');
	if (slash && slash != parent)
		*slash = '\0';
	int rc = util_mkdir_p(parent, 0700) < 0 ? -1 : embed_reach(&eh->acct, parent, err);
	if (rc < 0 && *err == NULL)
		*err = xasprintf("%s: %s", parent, strerror(errno));
	free(parent);
	return rc;
}


static void start_exec(struct evm *v, const char *why)
{
	if (exec_active(v->cur))
		return;
	struct ehost *eh = v->eh;
	if (v->cur)
		archive(v);
	struct exec *x = exec_new();
	util_uuid_v4(x->uid);
	util_uuid_v4(x->launcher);
	x->created = util_wall_s();
	if (v->sched_msg) {
		/* the VMI and launcher pod that waited (for the node, for a Secret) go on: the same UIDs */
		snprintf(x->uid, UID_LEN, "%s", v->sched_uid);
		snprintf(x->launcher, UID_LEN, "%s", v->sched_launcher);
		x->created = v->sched_since;
		free(v->sched_msg);
		v->sched_msg = NULL;
	}
	x->node = xstrdup(eh->src->name);
	x->generation = v->generation;
	x->manifest = xstrdup(v->text);
	x->tcg = eh->accel && strcmp(eh->accel, "qemu") == 0;
	char *dd = esettings_data_dir();
	x->run_dir = xasprintf("%s/run/%s", dd, x->uid);
	free(dd);
	exec_set_phase(x, "Pending");
	v->cur = x;
	v->req_start = false;
	free(v->start_error);
	v->start_error = NULL;
	if (why)
		evm_add_event(v, "Normal", "Restarted", true, "%s", why);
	evm_add_event(v, "Normal", "Created", true, "created virtual machine instance %s", x->uid);
	if (epull_begin(v))
		return; /* start_build follows the image pulls */
	evm_start_build(v);
}

/* The first pod-network (masquerade) interface of the VM: the one whose ports are forwarded. */
const struct mf_iface *evm_pod_iface(const struct evm *v)
{
	for (int i = 0; i < v->m->nifaces; i++)
		if (!v->m->ifaces[i].bridge)
			return &v->m->ifaces[i];
	return NULL;
}

/* x->net: the interface's address and its ports with the host ports forwarded to them (hports, or none). */
static char *net_text(const struct mf_iface *f, const int *hports)
{
	struct buf b = { 0 };
	buf_printf(&b, "ip %s %s\n", f->name, DOMXML_POD_IP);
	for (int i = 0; hports && i < f->nports; i++)
		buf_printf(&b, "port %s %s %s %d %d\n", f->name, f->ports[i].name ? f->ports[i].name : "-",
			   f->ports[i].proto, f->ports[i].port, hports[i]);
	return buf_steal(&b);
}

/* The pod network (domxml.h): the VMI's address, and host ports for the masquerade interface's ports (free
 * when chosen, recorded in the execution: x->net). Ports are forwarded only on a host whose QEMU shares
 * kvcon's network namespace (a local URI: the embedded driver, or the system or session daemon). 0, or -1
 * with *err. */
static int pod_net(struct evm *v, struct domxml_env *env, int **hports, char **err)
{
	const struct mf_iface *f = evm_pod_iface(v);
	const char *uri = ehost_uri(v->eh);
	*hports = NULL;
	free(v->cur->net);
	v->cur->net = NULL;
	if (f == NULL)
		return 0;
	if (f->nports && (uri == NULL || strncmp(uri, "qemu:///", 8) != 0)) {
		*err = xasprintf("interface %s: ports are forwarded only on a local host (qemu:///...), not on %s", f->name,
				 uri ? uri : "this host");
		return -1;
	}
	*hports = xcalloc((size_t)f->nports + 1, sizeof **hports);
	int *held = xcalloc((size_t)f->nports + 1, sizeof *held);
	int rc = 0;
	for (int i = 0; i < f->nports; i++) {
		/* held until every port is chosen: no two ports of this VM get the same one */
		held[i] = hostfwd_free_port(strcmp(f->ports[i].proto, "UDP") == 0, &(*hports)[i]);
		if (held[i] < 0) {
			*err = xasprintf("interface %s: no free host port for %d/%s: %s", f->name, f->ports[i].port,
					 f->ports[i].proto, strerror(errno));
			rc = -1;
			break;
		}
	}
	for (int i = 0; i < f->nports; i++)
		if (held[i] > 0)
			close(held[i]);
	free(held);
	if (rc < 0) {
		free(*hports);
		*hports = NULL;
		return -1;
	}
	env->host_ports = *hports;
	v->cur->net = net_text(f, *hports);
	return 0;
}

/* The second half of a start, once every containerDisk is on this host: the plan and the worker's request. */
void evm_start_build(struct evm *v)
{
	struct ehost *eh = v->eh;
	struct exec *x = v->cur;
	char *imgs = esettings_dir("KVCON_ENGINE_IMAGES", "images"), *vols = esettings_dir("KVCON_ENGINE_VOLUMES", "volumes");
	char *bridge = engine_setting("KVCON_ENGINE_BRIDGE", "engine.bridge");
	char **roots = esettings_host_roots();
	char *cache = esettings_image_cache();
	char *dn = evm_dom_name(v);
	char *err = NULL;
	if (reach_for_qemu(eh, v, imgs, vols, x->run_dir, &err) < 0) {
		v->start_error = xstrdup(err);
		evm_end_exec(v, true, "FailedCreate", err);
		free(err);
		free(cache);
		esettings_values_free(roots);
		free(imgs);
		free(vols);
		free(bridge);
		free(dn);
		return;
	}
	struct domxml_env env = {
		.image_dir = imgs, .image_cache = cache, .volume_dir = vols, .run_dir = x->run_dir, .bridge = bridge,
		.host_roots = (const char *const *)roots,
		.domain_type = eh->accel ? eh->accel : "qemu", .dom_name = dn, .vm_uid = v->uid, .vmi_uid = x->uid,
		.launcher_uid = x->launcher, .generation = v->generation,
	};
	int *hports = NULL;
	struct domxml_plan *plan = pod_net(v, &env, &hports, &err) < 0 || ecreds_resolve(v, &err) < 0
					   ? NULL : domxml_build(v->m, &env, &err);
	ecreds_release(v); /* what Secrets gave this build is in the plan only */
	free(hports);
	free(imgs);
	free(vols);
	free(bridge);
	free(cache);
	esettings_values_free(roots);
	if (plan == NULL) {
		v->start_error = xstrdup(err);
		evm_end_exec(v, true, "FailedCreate", err);
		free(err);
		free(dn);
		return;
	}
	free(x->serial_log);
	x->serial_log = xstrdup(plan->serial_log);
	exec_set_phase(x, "Scheduled"); /* the host is chosen: it is this one */
	evm_publish(v);
	evm_persist(v); /* queued before the start: the record names the execution before QEMU exists */
	struct host_req *r = xcalloc(1, sizeof *r);
	r->type = RQ_START;
	r->dom = dn;
	r->plan = plan;
	int id = host_request(eh->h, r);
	ehost_track(eh, id, PK_START, v);
	v->ring_len = 0;
}


static void grace_expired(void *arg)
{
	struct evm *v = arg;
	v->grace_timer = NULL;
	if (!exec_active(v->cur))
		return;
	evm_add_event(v, "Normal", "Killing", true, "the guest did not stop within its grace period: powering off");
	evm_send(v, RQ_DESTROY, PK_DESTROY);
}

/* The intent of a stop with its grace period (a stop, a restart's stop, a delete's stop): stored by the caller
 * before evm_issue_stop sends it. A second stop only shortens a pending one to a power-off. */
void evm_stop_intent(struct evm *v, int grace)
{
	if (!exec_active(v->cur))
		return;
	bool was = v->stopping;
	v->stopping = true;
	v->cur->stop_by_us = true;
	if (was && grace > 0)
		return;
	v->stop_deadline = engine_wall_ms() + (grace > 0 ? (int64_t)grace * 1000 : 0);
	v->stop_unsent = true;
}

/* Sends the stored stop: ACPI with a timer to its deadline (what is left of the grace period when the record
 * was loaded by a later process), or a power-off when the deadline has passed. */
void evm_issue_stop(struct evm *v)
{
	if (!v->stop_unsent || !exec_active(v->cur))
		return;
	v->stop_unsent = false;
	bool starting = false;
	for (struct preq *p = v->eh->reqs; p; p = p->next)
		starting |= p->v == v && p->kind == PK_START;
	if (starting) {
		epull_cancel(v);
		evm_publish(v);
		return; /* the start's completion sees stopping and powers off */
	}
	int64_t left = v->stop_deadline - engine_wall_ms();
	loop_timer_cancel(v->grace_timer);
	v->grace_timer = NULL;
	if (left <= 0)
		evm_send(v, RQ_DESTROY, PK_DESTROY);
	else {
		evm_send(v, RQ_SHUTDOWN, PK_STOP);
		v->grace_timer = loop_timer_add((uint64_t)left, grace_expired, v);
	}
	evm_publish(v);
}

static void begin_stop(struct evm *v, int grace)
{
	if (!exec_active(v->cur))
		return;
	evm_stop_intent(v, grace);
	evm_persist(v);
	evm_issue_stop(v);
	evm_publish(v);
}

/* ---- the reconciler ---- */

bool evm_want_running(const struct evm *v)
{
	if (v->deleting)
		return false;
	const struct exec *x = v->cur;
	if (evm_strategy_is(v, "Always"))
		return true;
	if (evm_strategy_is(v, "Halted"))
		return false;
	if (evm_strategy_is(v, "Once"))
		return exec_active(x) || (x == NULL && v->npast == 0);
	if (evm_strategy_is(v, "RerunOnFailure")) {
		if (v->req_stop)
			return false;
		if (x == NULL || exec_active(x) || v->req_start)
			return true;
		return x->phase == intern("Failed");
	}
	/* Manual */
	if (v->req_stop)
		return false;
	return exec_active(x) || v->req_start;
}

static void retry_fire(void *arg)
{
	struct evm *v = arg;
	v->retry_timer = NULL;
	ereconcile(v);
}

static void finish_delete(struct evm *v);
static void sched_wait(struct evm *v, char *msg, bool mount);
static int place_on(struct evm *v, struct ehost *to);
static void sched_drop(struct evm *v);

void ereconcile(struct evm *v)
{
	struct ehost *eh = v->eh;
	if (!eh->up || !eh->synced || migrate_busy(v))
		return;
	bool starting = false;
	for (struct preq *p = eh->reqs; p; p = p->next)
		starting |= p->v == v && p->kind == PK_START;
	if (starting)
		return;
	if (v->stop_unsent && exec_active(v->cur)) {
		evm_issue_stop(v); /* a stop stored by an earlier process, with what is left of its grace period */
		return;
	}
	if (v->pause_req && !v->deleting && !v->stopping) {
		bool sent = false;
		for (struct preq *p = eh->reqs; p; p = p->next)
			sent |= p->v == v && p->kind == PK_PAUSE;
		bool running = exec_active(v->cur) && v->cur->phase == intern("Running");
		if (!sent && running && v->pause_req == EVM_PAUSE && !v->cur->paused)
			evm_send(v, RQ_SUSPEND, PK_PAUSE);
		else if (!sent && running && v->pause_req == EVM_UNPAUSE && v->cur->paused)
			evm_send(v, RQ_RESUME, PK_PAUSE);
		else if (!sent) {
			v->pause_req = 0; /* done, or nothing left to pause */
			evm_persist(v);
		}
	}
	if (v->deleting || !evm_want_running(v))
		sched_drop(v);
	if (v->deleting) {
		if (exec_active(v->cur))
			begin_stop(v, v->m->grace);
		else
			finish_delete(v);
		return;
	}
	bool want = evm_want_running(v), is = exec_active(v->cur);
	if (!want && !is && v->cur && (evm_strategy_is(v, "Halted") || v->req_stop)) {
		/* a finished execution of a VM not to run again: KubeVirt deletes its VMI (a stop after a crash loop
		 * must not wait on a Failed VMI forever); Manual and Once keep a final VMI until the next start */
		archive(v);
		v->failures = 0; /* and clears its startFailure: a stopped VM is not backing off */
		v->retry_after = 0;
		evm_publish(v);
		evm_persist(v);
		eactions_check_waiters(v);
		return;
	}
	const char *vw = want && !is ? evol_waiting(v, true) : NULL;
	if (vw != v->vol_wait) {
		v->vol_wait = vw; /* a claim still provisioned: the start waits (engine_volumes_changed) */
		evm_publish(v);
	}
	if (vw)
		return;
	if (want && !is) {
		int64_t now = util_wall_s();
		if (v->retry_after > now) {
			if (v->retry_timer == NULL && v->cur && util_str_eq(v->cur->how, "ErrImagePull"))
				evm_add_event(v, "Normal", "BackOff", true, "Back-off pulling image: next try in %llds",
					  (long long)(v->retry_after - now));
			if (v->retry_timer == NULL)
				v->retry_timer = loop_timer_add((uint64_t)(v->retry_after - now) * 1000 + 100, retry_fire, v);
			evm_publish(v);
			return;
		}
		struct ehost *to = NULL;
		char *unsched = enode_place(v, &to);
		if (unsched) {
			sched_wait(v, unsched, false);
			return;
		}
		/* a Secret or ConfigMap it names does not exist (yet): its pod, on the node, waits for kubelet's mount
		 * (engine_secrets_changed tries again) */
		char *missing = ecreds_missing(v);
		if (missing) {
			sched_wait(v, missing, true);
			return;
		}
		if (to != v->eh && place_on(v, to) < 0)
			return;
		const char *why = NULL;
		char buf[160];
		if (v->restart) {
			why = "restarted by request";
			v->restart = false;
		} else if (v->cur && !v->cur->stop_by_us) {
			snprintf(buf, sizeof buf, "restarted by run strategy %s after %s", v->run_strategy,
				 v->cur->message ? v->cur->message : v->cur->phase);
			why = buf;
		}
		start_exec(v, why);
	} else if (!want && is && !v->stopping)
		begin_stop(v, v->m->grace);
}

/* The scheduler chose another host of the set for this start: the stopped VM's record moves there first (an
 * offline move, durable: engine.c's evm_move_offline), the VMI and launcher that waited keep their UIDs, and the
 * start goes on there. 0, or -1 when the move could not be stored (the next resync tries again). */
static int place_on(struct evm *v, struct ehost *to)
{
	if (v->cur)
		archive(v); /* the finished execution stays in the history with the host it ran on */
	bool waited = v->sched_msg != NULL;
	const char *from = v->eh->src->name;
	char *err = NULL, *fromc = xstrdup(from);
	if (evm_move_offline(v, to, &err) < 0) {
		log_error("engine: %s: not placed on %s: %s", v->key, to->src->name, err);
		evm_add_event(v, "Warning", "FailedScheduling", false, "the move to node %s could not be stored: %s",
			      to->src->name, err);
		free(err);
		free(fromc);
		evm_publish(v);
		return -1;
	}
	log_info("engine: %s: scheduled on %s (its record moved from %s)", v->key, to->src->name, fromc);
	free(fromc);
	if (waited)
		v->sched_msg = xstrdup("placed"); /* start_exec takes the waiting UIDs and drops this */
	return 0;
}

/* A start that waits: the node does not admit it (the VMI and its launcher pod wait, unscheduled; a new reason is
 * a new FailedScheduling) or, mount, a Secret or ConfigMap it names is missing (the pod waits on the node for
 * kubelet's mount: FailedMount). Their UIDs are in the record before anyone sees them (a restarted engine shows the
 * same); one wait turning into the other keeps them, as the pod scheduled at last keeps its own. */
static void sched_wait(struct evm *v, char *msg, bool mount)
{
	if (v->cur)
		archive(v); /* the new VMI replaces the finished one, as a start does */
	if (v->sched_msg == NULL) {
		util_uuid_v4(v->sched_uid);
		util_uuid_v4(v->sched_launcher);
		v->sched_since = util_wall_s();
	}
	if (!util_str_eq(v->sched_msg, msg) || v->sched_mount != mount) {
		free(v->sched_msg);
		v->sched_msg = msg;
		v->sched_mount = mount;
		evm_sched_event(v, msg);
		evm_persist(v);
	} else
		free(msg);
	evm_publish(v);
}

/* The waiting start is no longer wanted (stopped, deleted): its VMI and pod go. */
static void sched_drop(struct evm *v)
{
	if (v->sched_msg == NULL)
		return;
	epublish_unscheduled_remove(v);
	free(v->sched_msg);
	v->sched_msg = NULL;
	evm_persist(v);
	evm_publish(v);
}

static void reconcile_host(struct ehost *eh)
{
	struct evm **list = xcalloc(eh->vms.count + 1, sizeof *list);
	size_t n = 0;
	const char *key;
	void *val;
	for (size_t it = 0; hmap_next(&eh->vms, &it, &key, &val);)
		list[n++] = val;
	for (size_t i = 0; i < n; i++)
		ereconcile(list[i]);
	free(list);
}


static void finish_delete(struct evm *v)
{
	if (v->deleting == false || v->inflight > 0)
		return;
	struct ehost *eh = v->eh;
	if (!v->undefining) {
		/* the domain goes first; the record (which says "deleting") when that is done, so a kill between
		 * the two finds the delete still to finish */
		v->undefining = true;
		evm_send(v, RQ_UNDEFINE, PK_UNDEFINE);
		return;
	}
	struct host_req *r;
	char *rp = record_path(v);
	record_unlink(rp);
	free(rp);
	if (v->delete_volumes) {
		char *vols = esettings_dir("KVCON_ENGINE_VOLUMES", "volumes");
		for (int i = 0; i < v->m->nvols; i++)
			if (v->m->vols[i].type == MF_VOL_PVC)
				for (int k = 0; k < 2; k++) {
					r = xcalloc(1, sizeof *r);
					r->type = RQ_UNLINK;
					r->path = xasprintf("%s/%s/%s.%s", vols, v->m->ns, v->m->vols[i].claim,
							    k ? "qcow2" : "img");
					ehost_track(eh, host_request(eh->h, r), PK_WRITE, NULL);
				}
		free(vols);
	}
	epublish_remove_exec(v, v->cur);
	for (int i = 0; i < v->nevents; i++)
		store_remove(engine_g.st, eh->src, OBJ_EVENT, v->events[i].uid);
	store_remove(engine_g.st, eh->src, OBJ_VM, v->uid);
	hmap_del(&eh->vms, v->key);
	log_info("engine: %s deleted%s", v->key, v->delete_volumes ? " with its volumes" : "");
	epull_sweep_after(v->m, NULL); /* its pulled images go when no other VM uses them */
	for (struct waiter *w = v->waiters, *n; w; w = n) {
		n = w->next;
		eactions_complete(w, 0, NULL);
		free(w);
	}
	v->waiters = NULL;
	for (struct engine_console *c = v->consoles; c; c = c->next) {
		c->v = NULL;
		c->cb(c->arg, NULL, 0);
	}
	v->consoles = NULL;
	loop_timer_cancel(v->retry_timer);
	loop_timer_cancel(v->grace_timer);
	evm_free(v);
}

/* Drops a VM from this process without touching its record (another process moved it away). */
static void forget(struct evm *v)
{
	struct ehost *eh = v->eh;
	log_info("engine: %s migrated away from %s by another kvcon process", v->key, eh->src->name);
	epublish_remove_exec(v, v->cur);
	if (v->sched_msg)
		epublish_unscheduled_remove(v);
	for (int i = 0; i < v->nevents; i++)
		store_remove(engine_g.st, eh->src, OBJ_EVENT, v->events[i].uid);
	store_remove(engine_g.st, eh->src, OBJ_VM, v->uid);
	hmap_del(&eh->vms, v->key);
	for (struct preq *p = eh->reqs; p; p = p->next)
		if (p->v == v) {
			p->v = NULL;
			p->kind = PK_OTHER;
		}
	for (struct waiter *w = v->waiters, *n; w; w = n) {
		n = w->next;
		eactions_complete(w, -1, "the VM migrated to another host");
		free(w);
	}
	v->waiters = NULL;
	for (struct engine_console *c = v->consoles; c; c = c->next) {
		c->v = NULL;
		c->cb(c->arg, NULL, 0);
	}
	v->consoles = NULL;
	loop_timer_cancel(v->retry_timer);
	loop_timer_cancel(v->grace_timer);
	evm_free(v);
}


static void on_up(struct ehost *eh, struct host_msg *m)
{
	eh->up = true;
	free(eh->error);
	eh->error = NULL;
	free(eh->accel);
	eh->accel = xstrdup(m->accel);
	eh->mem_bytes = (uint64_t)m->mem_kib * 1024;
	eh->cpus = m->cpus;
	if (!eh->loaded) {
		/* the embedded driver is this machine; a daemon reports its own name */
		char hn[256] = "";
		const char *name = m->hostname;
		char *embed = embed_uri_root(eh->uri);
		if (embed && gethostname(hn, sizeof hn - 1) == 0 && hn[0])
			name = hn;
		free(embed);
		if (source_find(name) && source_find(name) != eh->src) {
			char *alt = xasprintf("%s~%d", name, eh->src->id);
			free(eh->src->name);
			eh->src->name = alt;
		} else {
			free(eh->src->name);
			eh->src->name = xstrdup(name);
		}
		char *dd = esettings_data_dir();
		char *hk = record_host_key(eh->uri, name);
		char *why = ehost_own(eh, dd, hk);
		if (why) {
			/* another engine process reconciles this host's records: two would start its VMs twice */
			eh->up = false;
			free(eh->error);
			eh->error = xasprintf("%s: %s", eh->uri, why);
			log_error("engine: %s", eh->error);
			ehost_set_health(eh, WATCH_ERROR, eh->error);
			free(why);
			free(hk);
			free(dd);
			return;
		}
		eh->records_dir = xasprintf("%s/hosts/%s/vms", dd, hk);
		util_mkdir_p(eh->records_dir, 0700);
		record_adopt_old(eh, dd, name, hk);
		free(hk);
		free(dd);
		enode_load(eh); /* before the records: a cordon or a taint holds from the first reconcile */
		record_load_all(eh);
		eh->loaded = true;
	}
	free(eh->src->version);
	eh->src->version = xstrdup(m->version);
	source_set_notice(eh->src, m->note);
	if (m->note)
		log_warn("engine: %s: %s", eh->src->name, m->note);
	ehost_set_health(eh, WATCH_LOADING, NULL);
}

static void seen_free(struct ehost *eh)
{
	for (int i = 0; i < eh->nseen; i++) {
		free(eh->seen[i].name);
		free(eh->seen[i].cmdline);
		free(eh->seen[i].log_path);
	}
	free(eh->seen);
	eh->seen = NULL;
	eh->nseen = 0;
}

static void seen_keep(struct ehost *eh, const struct host_msg *m)
{
	seen_free(eh);
	eh->seen = m->ndoms ? xcalloc((size_t)m->ndoms, sizeof *eh->seen) : NULL;
	for (int i = 0; i < m->ndoms; i++) {
		eh->seen[i] = m->doms[i];
		eh->seen[i].name = xstrdup0(m->doms[i].name);
		eh->seen[i].cmdline = xstrdup0(m->doms[i].cmdline);
		eh->seen[i].log_path = xstrdup0(m->doms[i].log_path);
	}
	eh->nseen = m->ndoms;
}

static bool dom_running(const struct host_dom *d)
{
	return d && d->state != VIR_DOMAIN_SHUTOFF && d->state != VIR_DOMAIN_CRASHED && d->state != VIR_DOMAIN_NOSTATE;
}

static void apply_obs(struct evm *v, const struct host_dom *d);

/* v's execution is gone from its host: when another host of the set runs its domain with the same execution
 * (kvcon's metadata travels with the domain: `virsh migrate` behind kvcon's back), the record follows it there
 * instead of the execution ending. true when it did. */
static bool adopt_elsewhere(struct evm *v)
{
	if (!exec_active(v->cur) || v->cur->uid[0] == '\0')
		return false;
	char *dn = evm_dom_name(v);
	struct ehost *to = NULL;
	const struct host_dom *found = NULL;
	for (int i = 0; i < engine_g.nhosts && !to; i++) {
		struct ehost *o = engine_g.hosts[i];
		if (o == v->eh || !o->synced || !o->up || hmap_get(&o->vms, v->key))
			continue;
		for (int k = 0; k < o->nseen; k++)
			if (strcmp(o->seen[k].name, dn) == 0 && strcmp(o->seen[k].vmi, v->cur->uid) == 0 &&
			    dom_running(&o->seen[k])) {
				to = o;
				found = &o->seen[k];
				break;
			}
	}
	free(dn);
	if (to == NULL)
		return false;
	struct ehost *from = v->eh;
	log_warn("engine: %s: runs on %s now (moved outside kvcon): its record follows it from %s", v->key,
		 to->src->name, from->src->name);
	evm_add_event(v, "Normal", "Migrated", true, "found running on %s (moved outside kvcon, e.g. by virsh migrate): the "
		  "record follows it from %s", to->src->name, from->src->name);
	v->away_until = 0;
	evm_move(v, to);
	apply_obs(v, found);
	return true;
}

static void apply_obs(struct evm *v, const struct host_dom *d)
{
	if (migrate_busy(v))
		return; /* the domain leaves this host: migrate.c decides where the execution is */
	bool starting = false;
	for (struct preq *p = v->eh->reqs; p; p = p->next)
		starting |= p->v == v && p->kind == PK_START;
	if (starting)
		return;
	bool running = d && d->state != VIR_DOMAIN_SHUTOFF && d->state != VIR_DOMAIN_CRASHED &&
		       d->state != VIR_DOMAIN_NOSTATE;
	struct exec *x = v->cur;
	if (running) {
		if (exec_active(x) && (d->vmi[0] == '\0' || strcmp(d->vmi, x->uid) == 0)) {
			if (x->phase != intern("Running") && d->state == VIR_DOMAIN_PAUSED) {
				/* kvcon stopped between "start paused" and "resume": finish that start */
				evm_send(v, RQ_CONSOLE, PK_CONSOLE);
				evm_send(v, RQ_RESUME, PK_PAUSE);
				fill_from_dom(v->eh, x, d);
				x->paused = false;
				exec_set_phase(x, "Running");
				x->started = d->started ? d->started : util_wall_s();
				evm_add_event(v, "Normal", "Started", true, "resumed a start that kvcon left paused");
				evm_publish(v);
				evm_persist(v);
				return;
			}
			bool changed = x->phase != intern("Running") || x->pid != d->pid ||
				       x->paused != (d->state == VIR_DOMAIN_PAUSED);
			fill_from_dom(v->eh, x, d);
			if (x->phase != intern("Running")) {
				exec_set_phase(x, "Running");
				evm_add_event(v, "Normal", "Started", true, "found running (pid %d) after kvcon restarted",
					  x->pid);
			}
			if (changed) {
				evm_publish(v);
				evm_persist(v);
			}
			return;
		}
		if (exec_active(x))
			evm_end_exec(v, true, "Crashed", "replaced by another execution of the domain");
		if (v->cur)
			archive(v);
		/* running without (or beyond) our record: adopt it as the current execution */
		x = exec_new();
		snprintf(x->uid, UID_LEN, "%s", d->vmi[0] ? d->vmi : "");
		if (x->uid[0] == '\0')
			util_uuid_v4(x->uid);
		snprintf(x->launcher, UID_LEN, "%s", d->launcher[0] ? d->launcher : "");
		if (x->launcher[0] == '\0')
			util_uuid_v4(x->launcher);
		x->node = xstrdup(v->eh->src->name);
		x->created = util_wall_s();
		x->generation = v->generation;
		x->tcg = v->eh->accel && strcmp(v->eh->accel, "qemu") == 0;
		exec_set_phase(x, "Running");
		fill_from_dom(v->eh, x, d);
		v->cur = x;
		v->failures = 0; /* it runs: no crash loop to back off from */
		v->retry_after = 0;
		evm_add_event(v, "Normal", "Started", true, "adopted a running domain (started outside kvcon's record)");
		evm_publish(v);
		evm_persist(v);
		return;
	}
	if (exec_active(x) && d == NULL) {
		/* gone from this host: moved to another host of the set behind kvcon's back? */
		if (adopt_elsewhere(v))
			return;
		char *rp = record_path(v);
		bool kept = access(rp, F_OK) == 0;
		free(rp);
		if (!kept) { /* another kvcon process moved it (its record with it): dropped by on_sync */
			v->forget_me = true;
			return;
		}
		bool all_seen = true;
		for (int i = 0; i < engine_g.nhosts; i++)
			all_seen &= engine_g.hosts[i] == v->eh || engine_g.hosts[i]->synced;
		if (!all_seen || v->away_until > util_wall_s())
			return; /* not before every host has said what it runs (or the migration's target has) */
		v->away_until = 0;
	}
	if (exec_active(x))
		ended_by_state(v, d);
}

static void on_sync(struct ehost *eh, struct host_msg *m)
{
	if (m->status < 0) {
		log_warn("engine: %s", m->text);
		return;
	}
	bool first = !eh->synced;
	eh->synced = true;
	seen_keep(eh, m);
	record_check_bad(eh, m);
	const char *key;
	void *val;
	struct evm **list = xcalloc(eh->vms.count + 1, sizeof *list);
	size_t n = 0;
	for (size_t it = 0; hmap_next(&eh->vms, &it, &key, &val);)
		list[n++] = val;
	for (size_t i = 0; i < n; i++) {
		char *dn = evm_dom_name(list[i]);
		const struct host_dom *d = NULL;
		for (int k = 0; k < m->ndoms; k++)
			if (strcmp(m->doms[k].name, dn) == 0)
				d = &m->doms[k];
		free(dn);
		apply_obs(list[i], d);
		if (list[i]->forget_me)
			forget(list[i]);
		else
			eactions_check_waiters(list[i]);
	}
	free(list);
	/* executions gone from other hosts that this one may run now (moved behind kvcon's back) */
	for (int i = 0; i < engine_g.nhosts; i++) {
		if (engine_g.hosts[i] == eh)
			continue;
		struct evm **vs = NULL;
		size_t nv = 0;
		for (size_t it = 0; hmap_next(&engine_g.hosts[i]->vms, &it, &key, &val);) {
			struct evm *ov = val;
			if (ov->away_until || (first && exec_active(ov->cur))) {
				vs = xreallocarray(vs, nv + 1, sizeof *vs);
				vs[nv++] = ov;
			}
		}
		for (size_t k = 0; k < nv; k++)
			if (!migrate_busy(vs[k]) && !hmap_get(&eh->vms, vs[k]->key)) {
				char *dn = evm_dom_name(vs[k]);
				bool there = false;
				for (int d = 0; d < engine_g.hosts[i]->nseen; d++)
					there |= strcmp(engine_g.hosts[i]->seen[d].name, dn) == 0 && dom_running(&engine_g.hosts[i]->seen[d]);
				free(dn);
				if (!there)
					adopt_elsewhere(vs[k]);
			}
		free(vs);
	}
	if (first)
		ehost_set_health(eh, WATCH_LIVE, NULL);
	migrate_resume_all(); /* migrations a killed process left: settled before the reconciler acts on them */
	reconcile_host(eh);
}

static void on_lifecycle(struct ehost *eh, struct host_msg *m)
{
	struct evm *v = ehost_find_dom(eh, m->dom);
	if (v == NULL || migrate_busy(v))
		return;
	bool starting = false;
	for (struct preq *p = eh->reqs; p; p = p->next)
		starting |= p->v == v && p->kind == PK_START;
	log_debug("engine: %s: lifecycle event %d detail %d", m->dom, m->event, m->detail);
	if (m->event == VIR_DOMAIN_EVENT_STOPPED && m->detail == VIR_DOMAIN_EVENT_STOPPED_MIGRATED && !starting) {
		/* migrated behind kvcon's back (virsh migrate): the execution is not over; the hosts of the set say
		 * where it runs now, and the record follows it there (adopt_elsewhere); ended if none does in 30 s */
		v->away_until = util_wall_s() + 30;
		log_info("engine: %s migrated away from %s outside kvcon: asking the other hosts", v->key, eh->src->name);
		for (int i = 0; i < engine_g.nhosts; i++)
			if (engine_g.hosts[i] != eh && engine_g.hosts[i]->up)
				host_simple(engine_g.hosts[i]->h, RQ_SYNC, NULL);
		return;
	}
	if (m->event == VIR_DOMAIN_EVENT_SUSPENDED && (m->detail == VIR_DOMAIN_EVENT_SUSPENDED_MIGRATED ||
						      m->detail == VIR_DOMAIN_EVENT_SUSPENDED_POSTCOPY))
		return; /* the last pass of a migration (another process's): not a pause of the guest */
	switch (m->event) {
	case VIR_DOMAIN_EVENT_STOPPED:
		if (starting)
			break; /* the start's completion inspects the domain */
		ended_by_event(v, m->detail);
		break;
	case VIR_DOMAIN_EVENT_SUSPENDED:
	case VIR_DOMAIN_EVENT_RESUMED:
		if (!starting && exec_active(v->cur)) {
			v->cur->paused = m->event == VIR_DOMAIN_EVENT_SUSPENDED;
			evm_add_event(v, "Normal", v->cur->paused ? "Paused" : "Unpaused", true, "%s",
				  v->cur->paused ? "the instance is paused" : "the instance runs again");
			evm_publish(v);
			evm_persist(v);
		}
		break;
	case VIR_DOMAIN_EVENT_STARTED:
		if (!starting)
			evm_send(v, RQ_INSPECT, PK_INSPECT);
		break;
	default:
		break;
	}
	eactions_check_waiters(v);
	ereconcile(v);
}

void evm_console_deliver(struct evm *v, const char *data, size_t len)
{
	if (len) {
		if (v->ring_len + len > RING_MAX) {
			size_t drop = v->ring_len + len - RING_MAX;
			if (drop > v->ring_len)
				drop = v->ring_len;
			memmove(v->ring, v->ring + drop, v->ring_len - drop);
			v->ring_len -= drop;
		}
		if (v->ring == NULL)
			v->ring = xmalloc(RING_MAX);
		size_t take = len > RING_MAX ? RING_MAX : len;
		memcpy(v->ring + v->ring_len, data + len - take, take);
		v->ring_len += take;
	}
	for (struct engine_console *c = v->consoles; c; c = c->next)
		c->cb(c->arg, data, len);
}

static void on_done(struct ehost *eh, struct host_msg *m)
{
	struct preq *p = NULL;
	for (struct preq **pp = &eh->reqs; *pp; pp = &(*pp)->next)
		if ((*pp)->id == m->req_id) {
			p = *pp;
			*pp = p->next;
			break;
		}
	if (p == NULL)
		return;
	struct evm *v = p->v;
	if (v)
		v->inflight--;
	const struct host_dom *d = m->ndoms ? &m->doms[0] : NULL;
	switch (p->kind) {
	case PK_START:
		if (m->status < 0) {
			free(v->start_error);
			v->start_error = xstrdup(m->text);
			evm_end_exec(v, true, "FailedCreate", m->text);
			break;
		}
		if (!exec_active(v->cur))
			break;
		if (d && (d->state == VIR_DOMAIN_SHUTOFF || d->state == VIR_DOMAIN_CRASHED)) {
			ended_by_state(v, d);
			break;
		}
		if (d)
			fill_from_dom(v->eh, v->cur, d);
		const struct mf_iface *pf = evm_pod_iface(v);
		if (m->nports && pf && pf->nports == m->nports) { /* a port QEMU could not bind moved (hostfwd.h) */
			free(v->cur->net);
			v->cur->net = net_text(pf, m->ports);
		}
		if (v->cur->started == 0)
			v->cur->started = util_wall_s();
		exec_set_phase(v->cur, "Running");
		evm_add_event(v, "Normal", "Started", true, "started (QEMU pid %d%s)", v->cur->pid,
			  v->cur->tcg ? ", TCG emulation" : "");
		evm_publish(v);
		evm_persist(v);
		if (v->stopping) /* a stop arrived while it was starting */
			evm_send(v, RQ_DESTROY, PK_DESTROY);
		break;
	case PK_STOP:
		if (m->status < 0 && exec_active(v->cur)) /* ACPI refused: power off now */
			evm_send(v, RQ_DESTROY, PK_DESTROY);
		break;
	case PK_DESTROY:
		if (m->status < 0 && exec_active(v->cur))
			evm_send(v, RQ_INSPECT, PK_INSPECT); /* maybe already off */
		break;
	case PK_PAUSE:
		if (v->pause_req) {
			v->pause_req = 0;
			evm_persist(v);
		}
		if (exec_active(v->cur) && d) {
			fill_from_dom(v->eh, v->cur, d);
			evm_publish(v);
		}
		if (m->status < 0)
			log_warn("engine: %s", m->text);
		break;
	case PK_INSPECT:
		if (v && !v->deleting)
			apply_obs(v, d && d->name ? d : NULL);
		break;
	case PK_WRITE:
	case PK_UNDEFINE:
	case PK_CONSOLE:
	case PK_OTHER:
		if (m->status < 0)
			log_warn("engine: %s", m->text);
		break;
	case PK_VNC:
		/* the request failed before it opened anything (the domain gone): the opener still hears of it */
		if (m->status < 0 && p->vnc_cb)
			p->vnc_cb(p->arg, -1, m->text ? m->text : "the domain is gone");
		break;
	case PK_AGENT:
		eagent_reply(p, NULL, 0, m->text ? m->text : "the domain is gone");
		p = NULL;
		break;
	}
	free(p);
	if (v) {
		eactions_check_waiters(v);
		if (v->deleting && v->inflight == 0)
			ereconcile(v);
		else if (!v->deleting)
			ereconcile(v);
	}
}

void ereconcile_on_msg(void *arg, struct host_msg *m)
{
	struct ehost *eh = arg;
	switch (m->type) {
	case HM_UP:
		on_up(eh, m);
		break;
	case HM_DOWN:
		eh->up = false;
		eh->synced = false;
		free(eh->error);
		eh->error = xstrdup(m->text);
		log_warn("engine: %s", m->text);
		ehost_set_health(eh, WATCH_RECONNECTING, m->text);
		break;
	case HM_SYNC:
		on_sync(eh, m);
		break;
	case HM_LIFECYCLE:
		on_lifecycle(eh, m);
		break;
	case HM_AGENT: {
		struct evm *v = ehost_find_dom(eh, m->dom);
		if (v && exec_active(v->cur) && v->cur->agent != (m->event != 0)) {
			v->cur->agent = m->event != 0;
			if (!v->cur->agent) {
				free(v->cur->guest_os);
				free(v->cur->agent_version);
				free(v->cur->agent_ifs);
				v->cur->guest_os = v->cur->agent_version = v->cur->agent_ifs = NULL;
			}
			evm_publish(v);
			eagent_status_refresh(v); /* the guest's OS name into the status */
			ecreds_sync(v);           /* accessCredentials through the agent */
		}
		break;
	}
	case HM_DONE:
		on_done(eh, m);
		break;
	case HM_CONSOLE: {
		struct evm *v = ehost_find_dom(eh, m->dom);
		if (v && !(m->len == 0 && migrate_busy(v))) /* the source's console ends; the target's follows */
			evm_console_deliver(v, m->data, m->len);
		break;
	}
	case HM_AGENT_REPLY:
		for (struct preq **pp = &eh->reqs; *pp; pp = &(*pp)->next)
			if ((*pp)->id == m->req_id) {
				struct preq *p = *pp;
				*pp = p->next;
				eagent_reply(p, m->data, m->len, m->text);
				break;
			}
		break;
	case HM_VNC:
		for (struct preq **pp = &eh->reqs; *pp; pp = &(*pp)->next)
			if ((*pp)->id == m->req_id) {
				struct preq *p = *pp;
				*pp = p->next;
				p->vnc_cb(p->arg, m->fd, m->text);
				m->fd = -1;
				free(p);
				break;
			}
		break;
	}
}

void ereconcile_resync_fire(void *arg)
{
	(void)arg;
	engine_g.resync = loop_timer_add(RESYNC_MS, ereconcile_resync_fire, NULL);
	static unsigned passes;
	bool agents = ++passes % AGENT_REFRESH_PASSES == 0;
	for (int i = 0; i < engine_g.nhosts; i++) {
		if (!engine_g.hosts[i]->up)
			continue;
		host_simple(engine_g.hosts[i]->h, RQ_SYNC, NULL); /* answered by HM_SYNC, not HM_DONE: not tracked */
		if (!agents)
			continue;
		/* what the guest agent says of the guest (its addresses change after it connected) */
		int n = 0;
		struct evm **vms = ehost_vms(engine_g.hosts[i], &n);
		for (int k = 0; k < n; k++) {
			eagent_status_refresh(vms[k]);
			ecreds_sync(vms[k]); /* a failed propagation is tried again */
		}
		free(vms);
	}
}
