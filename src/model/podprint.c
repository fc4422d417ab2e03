/* kubectl's pod printer (model/podprint.h): one algorithm over a neutral view of the pod, filled from the decoded
 * pod or from the API object. */
#include "model/podprint.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "core/util.h"

/* one container status as the printer reads it */
struct pp_cont {
	const char *name;
	const char *waiting;  /* the waiting reason ("" when waiting without one), NULL when not waiting */
	const char *term;     /* the terminated reason ("" without one), NULL when not terminated */
	int exit_code, signal, restarts;
	int64_t last_finished; /* lastState.terminated.finishedAt, 0 none */
	bool running, ready, started, restartable;
};

struct pp_pod {
	const char *phase, *reason;
	bool deleting, sched_gated, initialized;
	bool ready_cond; /* a condition of type Ready exists (whatever its status) */
	int spec_containers, spec_init;
	const struct pp_cont *init, *cs;
	int ninit, ncs;
};

static bool nonempty(const char *s)
{
	return s && *s;
}

static void compute(const struct pp_pod *p, struct podprint *out)
{
	int restarts = 0, ri_restarts = 0, ready = 0, total = p->spec_containers;
	int64_t last = 0, ri_last = 0;
	const char *reason = nonempty(p->reason) ? p->reason : p->phase ? p->phase : "";
	char buf[sizeof out->status];
	snprintf(buf, sizeof buf, "%s", reason);
	if (p->sched_gated)
		snprintf(buf, sizeof buf, "SchedulingGated");
	for (int i = 0; i < p->ninit; i++)
		total += p->init[i].restartable;

	bool initializing = false;
	for (int i = 0; i < p->ninit; i++) {
		const struct pp_cont *c = &p->init[i];
		restarts += c->restarts;
		if (c->last_finished > last)
			last = c->last_finished;
		if (c->restartable) {
			ri_restarts += c->restarts;
			if (c->last_finished > ri_last)
				ri_last = c->last_finished;
		}
		if (c->term && c->exit_code == 0)
			continue;
		if (c->restartable && c->started) {
			ready += c->ready;
			continue;
		}
		if (c->term) {
			if (*c->term)
				snprintf(buf, sizeof buf, "Init:%s", c->term);
			else if (c->signal)
				snprintf(buf, sizeof buf, "Init:Signal:%d", c->signal);
			else
				snprintf(buf, sizeof buf, "Init:ExitCode:%d", c->exit_code);
		} else if (nonempty(c->waiting) && strcmp(c->waiting, "PodInitializing") != 0) {
			snprintf(buf, sizeof buf, "Init:%s", c->waiting);
		} else {
			snprintf(buf, sizeof buf, "Init:%d/%d", i, p->spec_init);
		}
		initializing = true;
		break;
	}

	if (!initializing || p->initialized) {
		restarts = ri_restarts;
		last = ri_last;
		bool running = false;
		for (int i = p->ncs - 1; i >= 0; i--) {
			const struct pp_cont *c = &p->cs[i];
			restarts += c->restarts;
			if (c->last_finished > last)
				last = c->last_finished;
			if (nonempty(c->waiting))
				snprintf(buf, sizeof buf, "%s", c->waiting);
			else if (nonempty(c->term))
				snprintf(buf, sizeof buf, "%s", c->term);
			else if (c->term && c->signal)
				snprintf(buf, sizeof buf, "Signal:%d", c->signal);
			else if (c->term)
				snprintf(buf, sizeof buf, "ExitCode:%d", c->exit_code);
			else if (c->ready && c->running) {
				running = true;
				ready++;
			}
		}
		if (strcmp(buf, "Completed") == 0 && running)
			snprintf(buf, sizeof buf, "%s", p->ready_cond ? "Running" : "NotReady");
	}

	bool terminal = util_str_eq(p->phase, "Failed") || util_str_eq(p->phase, "Succeeded");
	if (p->deleting && util_str_eq(p->reason, "NodeLost"))
		snprintf(buf, sizeof buf, "Unknown");
	else if (p->deleting && !terminal)
		snprintf(buf, sizeof buf, "Terminating");

	memcpy(out->status, buf, sizeof out->status);
	out->ready = ready;
	out->total = total;
	out->restarts = restarts;
	out->last_restart = last;
}

#define MAX_CONT 32

void podprint_pod(const struct pod *p, struct podprint *out)
{
	struct pp_cont init[MAX_CONT], cs[MAX_CONT];
	struct pp_pod v = { .phase = p->phase, .reason = p->reason, .deleting = p->o.deleted != 0,
			    .spec_containers = p->spec_containers, .spec_init = p->spec_init_containers,
			    .init = init, .cs = cs };
	for (int i = 0; i < p->nconds; i++) {
		const struct cond *c = &p->conds[i];
		v.sched_gated |= util_str_eq(c->type, "PodScheduled") && util_str_eq(c->reason, "SchedulingGated");
		v.initialized |= util_str_eq(c->type, "Initialized") && util_str_eq(cond_status(c), "True");
		v.ready_cond |= util_str_eq(c->type, "Ready");
	}
	int nonint = 0;
	for (int i = 0; i < p->ncontainers && i < MAX_CONT; i++) {
		const struct container_status *c = &p->containers[i];
		struct pp_cont *d = c->init ? &init[v.ninit++] : &cs[v.ncs++];
		bool w = util_str_eq(c->state, "waiting"), t = util_str_eq(c->state, "terminated");
		*d = (struct pp_cont){ .name = c->name, .waiting = w ? (c->reason ? c->reason : "") : NULL,
				       .term = t ? (c->reason ? c->reason : "") : NULL, .exit_code = c->exit_code,
				       .signal = c->signal, .restarts = c->restarts, .last_finished = c->last_finished,
				       .running = util_str_eq(c->state, "running"), .ready = c->ready,
				       .started = c->started_flag, .restartable = c->restartable };
		nonint += !c->init;
	}
	if (v.spec_containers == 0) /* a pod built without its spec (the engine's): its statuses */
		v.spec_containers = nonint;
	compute(&v, out);
}

/* ---- over the API object ---- */

static struct json_object *jget(struct json_object *o, const char *k)
{
	struct json_object *v = NULL;
	return o && json_object_is_type(o, json_type_object) && json_object_object_get_ex(o, k, &v) ? v : NULL;
}
static const char *jgets(struct json_object *o, const char *k)
{
	struct json_object *v = jget(o, k);
	return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}
static size_t jlen(struct json_object *a)
{
	return a && json_object_is_type(a, json_type_array) ? json_object_array_length(a) : 0;
}
static int64_t jtime(struct json_object *o, const char *k)
{
	int64_t t;
	const char *s = jgets(o, k);
	return s && util_parse_time(s, &t) == 0 ? t : 0;
}

static void json_cont(struct json_object *e, struct json_object *spec_init, struct pp_cont *d)
{
	struct json_object *st = jget(e, "state"), *w = jget(st, "waiting"), *t = jget(st, "terminated");
	*d = (struct pp_cont){ .name = jgets(e, "name") };
	if (w)
		d->waiting = jgets(w, "reason") ? jgets(w, "reason") : "";
	else if (t) {
		d->term = jgets(t, "reason") ? jgets(t, "reason") : "";
		d->exit_code = json_object_get_int(jget(t, "exitCode"));
		d->signal = json_object_get_int(jget(t, "signal"));
	} else
		d->running = jget(st, "running") != NULL;
	d->restarts = json_object_get_int(jget(e, "restartCount"));
	d->ready = json_object_get_boolean(jget(e, "ready"));
	d->started = json_object_get_boolean(jget(e, "started"));
	d->last_finished = jtime(jget(jget(e, "lastState"), "terminated"), "finishedAt");
	for (size_t i = 0; d->name && i < jlen(spec_init); i++) {
		struct json_object *c = json_object_array_get_idx(spec_init, i);
		if (util_str_eq(jgets(c, "name"), d->name))
			d->restartable = util_str_eq(jgets(c, "restartPolicy"), "Always");
	}
}

void podprint_json(struct json_object *pod, struct podprint *out)
{
	struct json_object *spec = jget(pod, "spec"), *st = jget(pod, "status");
	struct json_object *spec_init = jget(spec, "initContainers"), *conds = jget(st, "conditions");
	struct json_object *ics = jget(st, "initContainerStatuses"), *cs = jget(st, "containerStatuses");
	struct pp_cont init[MAX_CONT], c[MAX_CONT];
	struct pp_pod v = { .phase = jgets(st, "phase"), .reason = jgets(st, "reason"),
			    .deleting = jgets(jget(pod, "metadata"), "deletionTimestamp") != NULL,
			    .spec_containers = (int)jlen(jget(spec, "containers")), .spec_init = (int)jlen(spec_init),
			    .init = init, .cs = c };
	for (size_t i = 0; i < jlen(conds); i++) {
		struct json_object *k = json_object_array_get_idx(conds, i);
		v.sched_gated |= util_str_eq(jgets(k, "type"), "PodScheduled") && util_str_eq(jgets(k, "reason"), "SchedulingGated");
		v.initialized |= util_str_eq(jgets(k, "type"), "Initialized") && util_str_eq(jgets(k, "status"), "True");
		v.ready_cond |= util_str_eq(jgets(k, "type"), "Ready");
	}
	for (size_t i = 0; i < jlen(ics) && v.ninit < MAX_CONT; i++)
		json_cont(json_object_array_get_idx(ics, i), spec_init, &init[v.ninit++]);
	for (size_t i = 0; i < jlen(cs) && v.ncs < MAX_CONT; i++)
		json_cont(json_object_array_get_idx(cs, i), NULL, &c[v.ncs++]);
	compute(&v, out);
}

void podprint_restarts(const struct podprint *pp, int64_t now, char *buf, size_t len)
{
	if (pp->restarts != 0 && pp->last_restart > 0) {
		char d[32];
		util_human_duration(now - pp->last_restart < 0 ? 0 : now - pp->last_restart, d, sizeof d);
		snprintf(buf, len, "%d (%s ago)", pp->restarts, d);
	} else
		snprintf(buf, len, "%d", pp->restarts);
}
