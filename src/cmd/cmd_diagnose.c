/* kvcon diagnose / lineage / the actions (model/registry.c): one VM from the command line.
 * A session opens the source on the VM's namespace, waits until its reflectors are live (the store then holds
 * the VM's chain, and the lineage recorder has seen it), answers from the model or acts through provider_ops,
 * and optionally waits for the action's effect. Every string from the cluster is escaped before printing. */
#include "cmd/cmd_diagnose.h"

#include <json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/log.h"
#include "core/loop.h"
#include "core/opts.h"
#include "core/util.h"
#include "core/xmalloc.h"
#include "cmd/args.h"
#include "cmd/session.h"
#include "kube/storage.h"
#include "kube/kube.h"
#include "model/chain.h"
#include "model/diagnose.h"
#include "model/lineage.h"
#include "model/registry.h"
#define WAIT_DEFAULT_S 120

/* ---- option parsing shared by the commands ---- */

enum out_fmt { OUT_TEXT, OUT_JSON };

struct verb_args {
	const char *ref;
	enum out_fmt fmt;
	bool force, abort_mig, delete_volumes;
	int grace;
	const char *to;
	int wait_s; /* -1: do not wait */
};

/* The flags are the command table's (cmd/cmd.c: -o for diagnose and lineage, each action's own), parsed by its
 * parser (cmd/args.c). 0, 1 (--help printed), -1 (the error printed). */
static int parse_args(int argc, char **argv, struct verb_args *a)
{
	memset(a, 0, sizeof *a);
	a->grace = -1;
	a->wait_s = -1;
	struct args g;
	int p = args_parse_verb(argc, argv, &g);
	if (p == ARGS_OK && g.npos != 1) {
		log_eprintf("error: %s\nSee 'kvcon %s --help' for usage.\n",
			    g.npos ? "one VM at a time" : "which VM? (NAMESPACE/NAME)", argv[0]);
		p = ARGS_ERR;
	}
	if (p == ARGS_OK) {
		a->ref = g.pos[0];
		const char *o = args_get(&g, "--output");
		if (o && strcmp(o, "json") == 0) {
			a->fmt = OUT_JSON;
		} else if (o && strcmp(o, "text") != 0) {
			char *e = util_escape_display(o);
			log_eprintf("error: unknown output format '%s' (text, json)\n", e);
			free(e);
			p = ARGS_ERR;
		}
		a->force = args_bool(&g, "--force");
		a->abort_mig = args_bool(&g, "--abort");
		a->delete_volumes = args_bool(&g, "--delete-volumes");
		a->grace = (int)args_num(&g, "--grace-period", -1);
		a->to = args_get(&g, "--to");
		if (args_has(&g, "--wait"))
			a->wait_s = (int)((args_num(&g, "--wait", WAIT_DEFAULT_S * 1000L) + 999) / 1000);
		if (a->grace > 86400) {
			log_eprintf("error: --grace-period needs a number of seconds\n");
			p = ARGS_ERR;
		} else if (a->wait_s == 0 || a->wait_s > 86400) {
			log_eprintf("error: --wait=SECONDS needs a positive number\n");
			p = ARGS_ERR;
		} else if (a->to && *a->to == '\0') {
			log_eprintf("error: --to needs a value\n");
			p = ARGS_ERR;
		}
	}
	args_free(&g);
	return p == ARGS_OK ? 0 : p == ARGS_HELP ? 1 : -1;
}

/* ---- JSON helpers: every cluster string is display-escaped first ---- */

static void jstr(struct json_object *j, const char *k, const char *v)
{
	if (v == NULL) {
		json_object_object_add(j, k, NULL);
		return;
	}
	char *e = util_escape_display(v);
	json_object_object_add(j, k, json_object_new_string(e));
	free(e);
}

static void jtime(struct json_object *j, const char *k, int64_t t)
{
	char buf[32];
	if (t == 0) {
		json_object_object_add(j, k, NULL);
		return;
	}
	util_format_time(t, buf, sizeof buf);
	json_object_object_add(j, k, json_object_new_string(buf));
}

static void print_json(struct json_object *j)
{
	printf("%s\n", json_object_to_json_string_ext(j, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED));
}

/* ---- diagnose ---- */

static const char *const rule_kinds[] = { "stall", "stop", "note" };

static struct json_object *pod_json(const struct pod *p)
{
	struct json_object *j = json_object_new_object();
	jstr(j, "name", p->o.name);
	jstr(j, "uid", p->o.uid);
	jstr(j, "phase", p->phase);
	jstr(j, "node", p->node);
	jstr(j, "ownerVmiUid", p->vmi_uid[0] ? p->vmi_uid : NULL);
	jstr(j, "createdBy", pod_created_by(p)[0] ? pod_created_by(p) : NULL);
	return j;
}

static struct json_object *diag_json(const struct diag *d, const struct chain *c)
{
	struct json_object *j = json_object_new_object();
	char *ref = xasprintf("%s/%s", c->ns, c->name);
	jstr(j, "vm", ref);
	free(ref);
	jstr(j, "source", c->src->name);
	json_object_object_add(j, "exitCode", json_object_new_int(diag_exit_code(d)));
	json_object_object_add(j, "healthy", json_object_new_boolean(d->first_stalled < 0 && !d->stopped));
	json_object_object_add(j, "stopped", json_object_new_boolean(d->stopped));
	jstr(j, "firstStalled", d->first_stalled >= 0 ? diag_boundary_name((enum diag_boundary)d->first_stalled) : NULL);
	struct json_object *bs = json_object_new_array();
	for (int b = 0; b < DIAG_NBOUNDARY; b++) {
		struct json_object *o = json_object_new_object();
		jstr(o, "boundary", diag_boundary_name((enum diag_boundary)b));
		jstr(o, "verdict", diag_verdict_name(d->verdict[b]));
		jstr(o, "rule", d->decided_by[b] >= 0 ? d->findings[d->decided_by[b]].rule->id : NULL);
		json_object_array_add(bs, o);
	}
	json_object_object_add(j, "boundaries", bs);
	struct json_object *fs = json_object_new_array();
	for (size_t i = 0; i < d->nfindings; i++) {
		const struct diag_finding *f = &d->findings[i];
		struct json_object *o = json_object_new_object();
		jstr(o, "rule", f->rule->id);
		jstr(o, "boundary", diag_boundary_name(f->rule->boundary));
		jstr(o, "kind", rule_kinds[f->rule->kind]);
		jstr(o, "verdict", diag_verdict_name(f->verdict));
		jstr(o, "summary", f->summary);
		jstr(o, "next", f->rule->next);
		struct json_object *cmds = json_object_new_array();
		for (const char *p = f->cmd; p && *p;) {
			const char *nl = strchr(p, '\n');
			size_t len = nl ? (size_t)(nl - p) : strlen(p);
			json_object_array_add(cmds, json_object_new_string_len(p, (int)len));
			p += len + (nl ? 1 : 0);
		}
		json_object_object_add(o, "commands", cmds);
		struct json_object *ev = json_object_new_array();
		for (size_t k = 0; k < f->nev; k++)
			json_object_array_add(ev, json_object_new_string(f->ev[k].text)); /* already escaped */
		json_object_object_add(o, "evidence", ev);
		json_object_array_add(fs, o);
	}
	json_object_object_add(j, "findings", fs);

	struct json_object *ch = json_object_new_object();
	jstr(ch, "vmUid", c->vm ? c->vm->o.uid : NULL);
	jstr(ch, "runStrategy", c->vm ? c->vm->run_strategy : NULL);
	jstr(ch, "printableStatus", c->vm ? c->vm->printable_status : NULL);
	jstr(ch, "vmiUid", c->vmi ? c->vmi->o.uid : NULL);
	jstr(ch, "vmiPhase", c->vmi ? c->vmi->phase : NULL);
	jstr(ch, "node", c->vmi ? c->vmi->node : NULL);
	jstr(ch, "activePod", c->active ? c->active->o.name : NULL);
	struct json_object *pods = json_object_new_array();
	for (size_t i = 0; i < c->npods; i++)
		json_object_array_add(pods, pod_json(c->pods[i]));
	json_object_object_add(ch, "pods", pods);
	struct json_object *stray = json_object_new_array();
	for (size_t i = 0; i < c->nstray; i++)
		json_object_array_add(stray, pod_json(c->stray[i]));
	json_object_object_add(ch, "ownerMismatchPods", stray);
	json_object_object_add(ch, "agentConnected", json_object_new_boolean(c->guest.agent_connected));
	jstr(ch, "guestOS", c->guest.os);
	struct json_object *evs = json_object_new_array();
	for (size_t i = 0; i < c->nevents; i++) {
		const struct event *e = c->events[i];
		struct json_object *o = json_object_new_object();
		jstr(o, "type", e->type);
		jstr(o, "reason", e->reason);
		jstr(o, "involvedKind", e->inv_kind);
		jstr(o, "involvedName", e->inv_name);
		json_object_object_add(o, "count", json_object_new_int(e->count));
		jtime(o, "lastTimestamp", e->last);
		jstr(o, "message", e->message);
		json_object_array_add(evs, o);
	}
	json_object_object_add(ch, "events", evs);
	json_object_object_add(j, "chain", ch);
	return j;
}

int cmd_diagnose(int argc, char **argv)
{
	struct verb_args a;
	int p = parse_args(argc, argv, &a);
	if (p != 0)
		return p > 0 ? EXIT_OK : EXIT_USAGE;
	struct session s;
	int rc = session_open(&s, "diagnose", a.ref);
	if (rc != EXIT_OK)
		goto out;
	struct chain *c = chain_build(s.st, s.src, s.ns, s.name);
	if (c == NULL) {
		session_not_found(&s);
		rc = EXIT_API;
		goto out;
	}
	/* the storage behind the VM, link by link (clusters: the objects are read once); the storage rules name
	 * their claim or DataVolume from it */
	struct json_object *stor = NULL;
	if (c->vm) {
		char *serr = NULL;
		stor = storage_chain(s.src, s.ns, s.name, c->vmi && util_str_eq(c->vmi->phase, "Running"), &serr);
		if (stor == NULL) {
			char *e = util_escape_display(serr);
			fprintf(stderr, "warning: storage not read: %s\n", e);
			free(e);
		}
		free(serr);
	}
	struct diag *d = diag_run_storage(c, stor, util_wall_s());
	if (a.fmt == OUT_JSON) {
		struct json_object *j = diag_json(d, c);
		if (stor)
			json_object_object_add(j, "storage", json_object_get(stor));
		print_json(j);
		json_object_put(j);
	} else {
		struct buf b;
		buf_init(&b);
		diag_format_text(d, c, &b);
		storage_format_text(stor, &b);
		if (b.len)
			fwrite(b.data, 1, b.len, stdout);
		buf_free(&b);
	}
	json_object_put(stor);
	rc = diag_exit_code(d);
	diag_free(d);
	chain_free(c);
out:
	session_close(&s);
	return rc;
}

/* ---- lineage ---- */

static struct json_object *lineage_json(const struct lineage_exec *const *ex, size_t n)
{
	struct json_object *arr = json_object_new_array();
	for (size_t i = 0; i < n; i++) {
		const struct lineage_exec *e = ex[i];
		struct json_object *o = json_object_new_object();
		jstr(o, "vmiUid", e->vmi_uid);
		jstr(o, "vmUid", e->vm_uid[0] ? e->vm_uid : NULL);
		jtime(o, "start", e->start);
		jtime(o, "end", e->end);
		jstr(o, "how", lineage_end_name(e->how));
		jstr(o, "phase", e->phase);
		jstr(o, "node", e->node);
		json_object_object_add(o, "migrations", json_object_new_int(e->migrations));
		struct json_object *ls = json_object_new_array();
		for (int k = 0; k < e->nlaunchers; k++) {
			const struct lineage_launcher *la = &e->launchers[k];
			struct json_object *l = json_object_new_object();
			jstr(l, "uid", la->uid);
			jstr(l, "name", la->name);
			jstr(l, "node", la->node);
			jtime(l, "start", la->start);
			jtime(l, "end", la->end);
			json_object_object_add(l, "migrated", json_object_new_boolean(la->migrated));
			json_object_array_add(ls, l);
		}
		json_object_object_add(o, "launchers", ls);
		json_object_array_add(arr, o);
	}
	return arr;
}

int cmd_lineage(int argc, char **argv)
{
	struct verb_args a;
	int p = parse_args(argc, argv, &a);
	if (p != 0)
		return p > 0 ? EXIT_OK : EXIT_USAGE;
	struct session s;
	int rc = session_open(&s, "lineage", a.ref);
	if (rc != EXIT_OK)
		goto out;
	size_t n;
	const struct lineage_exec *const *ex = lineage_get(s.lin, s.src, s.ns, s.name, &n);
	if (n == 0 && store_find(s.st, s.src, OBJ_VM, s.ns, s.name) == NULL) {
		session_not_found(&s);
		rc = EXIT_API;
		goto out;
	}
	if (a.fmt == OUT_JSON) {
		struct json_object *j = lineage_json(ex, n);
		print_json(j);
		json_object_put(j);
	} else {
		struct buf b;
		buf_init(&b);
		char *ns = util_escape_display(s.ns), *nm = util_escape_display(s.name);
		buf_printf(&b, "VirtualMachine %s/%s (%s %s): %zu execution%s\n", ns, nm,
			   s.src->engine ? "engine" : "context", s.src->name, n, n == 1 ? "" : "s");
		free(ns);
		free(nm);
		lineage_format_text(ex, n, util_wall_s(), &b);
		if (b.len)
			fwrite(b.data, 1, b.len, stdout);
		buf_free(&b);
	}
out:
	session_close(&s);
	return rc;
}

/* ---- actions ---- */

struct act_state {
	bool done;
	int status;
	char *message;
};

static void act_done(void *arg, int status, const char *message)
{
	struct act_state *x = arg;
	x->done = true;
	x->status = status;
	x->message = xstrdup0(message);
}

struct before {
	char vmi_uid[UID_LEN];
	char mig_uid[UID_LEN];
	int64_t mig_start;
};

/* A start that cannot go on (a new execution whose VM says so: KubeVirt's failure statuses): "REASON: message"
 * from the launcher's waiting container, else the status alone, in buf; NULL when the start is not failing. */
static const char *start_failed(const struct session *s, const struct vmi *v, const struct before *b, char *buf,
				size_t len)
{
	static const char *const failing[] = { "ErrImagePull", "ImagePullBackOff", "CrashLoopBackOff",
					       "ErrorUnschedulable", "ErrorPvcNotFound", "ErrorDataVolumeNotFound",
					       "DataVolumeError" };
	const struct vm *vm = (const struct vm *)store_find(s->st, s->src, OBJ_VM, s->ns, s->name);
	if (vm == NULL || vm->printable_status == NULL || v == NULL || strcmp(v->o.uid, b->vmi_uid) == 0)
		return NULL;
	size_t k = 0;
	while (k < sizeof failing / sizeof failing[0] && strcmp(vm->printable_status, failing[k]) != 0)
		k++;
	if (k == sizeof failing / sizeof failing[0])
		return NULL;
	snprintf(buf, len, "%s", vm->printable_status);
	/* the VM's status may come before its launcher's (the watches are separate): the launcher's reason and
	 * message are waited for up to 2 s, then the status alone is the answer */
	static uint64_t first_seen;
	if (first_seen == 0)
		first_seen = util_now_ms();
	size_t n = 0;
	struct obj *const *pods = store_objs(s->st, s->src, OBJ_POD, &n);
	for (size_t i = 0; i < n; i++) {
		const struct pod *p = (const struct pod *)pods[i];
		if (strcmp(p->vmi_uid, v->o.uid) != 0)
			continue;
		for (int c = 0; c < p->ncontainers; c++) {
			const struct container_status *cs = &p->containers[c];
			if (cs->message && cs->reason && strcmp(cs->reason, "ContainerCreating") != 0 &&
			    !util_str_eq(cs->state, "running")) {
				/* a pull that failed is ErrImagePull, whatever back-off the VM is in already */
				if (strcmp(cs->reason, "ImagePullBackOff") == 0)
					snprintf(buf, len, "ErrImagePull: %s (ImagePullBackOff: retried later)",
						 cs->message);
				else
					snprintf(buf, len, "%s: %s", cs->reason, cs->message);
				return buf;
			}
		}
	}
	if (util_now_ms() - first_seen < 2000)
		return NULL;
	/* no launcher says why (none, or already gone): the VM's own Failure condition (the engine's FailedCreate,
	 * with what to fix), else the status alone */
	for (int c = 0; c < vm->nconds; c++)
		if (util_str_eq(vm->conds[c].type, "Failure") && util_str_eq(cond_status(&vm->conds[c]), "True") &&
		    vm->conds[c].message && *vm->conds[c].message) {
			snprintf(buf, len, "%s: %s", vm->conds[c].reason && *vm->conds[c].reason ? vm->conds[c].reason
												: vm->printable_status,
				 vm->conds[c].message);
			break;
		}
	return buf;
}

/* Has the action's effect shown in the store? 1 yes, 0 not yet, -1 it failed (reason in *why). */
static int effect_reached(const struct session *s, enum action act, bool abort_mig, const struct before *b,
			  const char **why)
{
	static char failed[512];
	if (registry_action(act)->waits == WAIT_VM_GONE) /* the VM is gone (its execution went first) */
		return store_find(s->st, s->src, OBJ_VM, s->ns, s->name) == NULL;
	const struct vmi *v = (const struct vmi *)store_find(s->st, s->src, OBJ_VMI, s->ns, s->name);
	/* a migrated engine VM shows up in its target host's source */
	for (size_t i = 0; v == NULL && (act == ACT_MIGRATE || act == ACT_MIGRATE_ABORT) && i < source_count(); i++)
		if (source_get(i))
			v = (const struct vmi *)store_find(s->st, source_get(i), OBJ_VMI, s->ns, s->name);
	bool running = v && util_str_eq(v->phase, "Running");
	switch (registry_action(act)->waits) {
	case WAIT_NEW_RUN:
		if ((*why = start_failed(s, v, b, failed, sizeof failed)) != NULL)
			return -1;
		return running && strcmp(v->o.uid, b->vmi_uid) != 0;
	case WAIT_NO_VMI:
		return v == NULL;
	case WAIT_PAUSED:
		return v && cond_is_true(v->conds, v->nconds, "Paused");
	case WAIT_UNPAUSED:
		return v && !cond_is_true(v->conds, v->nconds, "Paused");
	case WAIT_MIGRATED:
		if (v == NULL || !vmi_mig(v)->present)
			return 0;
		const struct migration_state *m = vmi_mig(v);
		if (strcmp(m->migration_uid, b->mig_uid) == 0 && m->start == b->mig_start)
			return 0; /* still the previous migration's state */
		if (abort_mig)
			return m->abort_status != NULL || m->failed;
		if (m->failed) {
			*why = m->failure_reason ? m->failure_reason : "migration failed";
			return -1;
		}
		return m->completed;
	default:
		return 1;
	}
}

/* The image pull an action waits on, as the VM's launcher pod says it: its compute container waiting in
 * ContainerCreating with the pull's progress as message ("pulling image \"REF\": 12.0 MiB of 40.0 MiB fetched,
 * 300.0 MiB unpacked"; the engine service serves it so, docs/ENGINE-SERVICE.md). NULL when nothing is being
 * pulled. */
static const char *pull_progress(const struct session *s)
{
	const struct vmi *vmi = (const struct vmi *)store_find(s->st, s->src, OBJ_VMI, s->ns, s->name);
	size_t n = 0;
	struct obj *const *pods = store_objs(s->st, s->src, OBJ_POD, &n);
	for (size_t i = 0; i < n; i++) {
		const struct pod *p = (const struct pod *)pods[i];
		if (strcmp(p->o.ns, s->ns) != 0 ||
		    !((vmi && strcmp(p->vmi_uid, vmi->o.uid) == 0) || util_str_eq(p->vm_name, s->name)))
			continue;
		for (int c = 0; c < p->ncontainers; c++) {
			const struct container_status *cs = &p->containers[c];
			if (util_str_eq(cs->state, "waiting") && util_str_eq(cs->reason, "ContainerCreating") && cs->message &&
			    util_has_prefix(cs->message, "pulling image"))
				return cs->message;
		}
	}
	return NULL;
}

/* The pull's progress on stderr while an action waits, as it changes (at most once a second). */
struct pull_line {
	char *last;
	uint64_t at;
};

static void show_pull(const struct session *s, struct pull_line *pl)
{
	const char *p = pull_progress(s);
	uint64_t now = util_now_ms();
	if (p == NULL || util_str_eq(p, pl->last) || now - pl->at < 1000)
		return;
	char *e = util_escape_display(p);
	fprintf(stderr, "%s\n", e);
	free(e);
	free(pl->last);
	pl->last = xstrdup(p);
	pl->at = now;
}

int cmd_action(int argc, char **argv)
{
	const struct action_def *ad = registry_action_find(argv[0]);
	if (ad == NULL) {
		log_eprintf("error: unknown action \"%s\"\n", argv[0]);
		return EXIT_USAGE;
	}
	const char *cmd = ad->name;
	struct verb_args a;
	int p = parse_args(argc, argv, &a);
	if (p != 0)
		return p > 0 ? EXIT_OK : EXIT_USAGE;
	struct action_req req = { .act = ad->act, .grace_period = a.grace };
	if (a.force && req.act == ACT_STOP) {
		req.act = ACT_FORCE_STOP; /* virtctl stop --force --grace-period 0: pull the power cord */
		if (req.grace_period < 0)
			req.grace_period = 0;
	} else if (a.force && (req.act == ACT_RESTART || req.act == ACT_DELETE) && req.grace_period < 0) {
		req.grace_period = 0;
	}
	if (a.abort_mig)
		req.act = ACT_MIGRATE_ABORT;
	req.target = a.to;

	struct session s;
	struct act_state st = { 0 };
	int rc = session_open(&s, cmd, a.ref);
	if (rc != EXIT_OK)
		goto out;
	const struct vm *vm = (const struct vm *)store_find(s.st, s.src, OBJ_VM, s.ns, s.name);
	const struct vmi *vmi = (const struct vmi *)store_find(s.st, s.src, OBJ_VMI, s.ns, s.name);
	if (vm == NULL && !(ad->on == KIND_VMI && vmi)) { /* a VMI's action takes a VMI of no VM too */
		session_not_found(&s);
		rc = EXIT_API;
		goto out;
	}
	struct before b = { .mig_start = vmi ? vmi_mig(vmi)->start : 0 };
	snprintf(b.vmi_uid, sizeof b.vmi_uid, "%s", vmi ? vmi->o.uid : "");
	snprintf(b.mig_uid, sizeof b.mig_uid, "%s", vmi ? vmi_mig(vmi)->migration_uid : "");
	req.ns = s.ns;
	req.name = s.name;
	if (a.delete_volumes && !s.src->engine) {
		/* an engine extension: a cluster's volumes are its storage's, deleted with a plain DELETE's policies */
		log_eprintf("error: --delete-volumes is for engine VMs (source %s is a cluster)\n", s.src->name);
		rc = EXIT_USAGE;
		goto out;
	}
	if (a.delete_volumes)
		req.flags |= ACTION_DELETE_VOLUMES;
	char *err = NULL;
	if (s.src->ops == NULL || s.src->ops->action == NULL) {
		log_eprintf("error: this source has no actions\n");
		rc = EXIT_API;
		goto out;
	}
	/* readonly, from the flag or the config file, refuses here as in the dashboard (the provider checks again) */
	if (action_is_mutating(req.act) && (opts_global()->readonly || s.src->readonly)) {
		char *ns = util_escape_display(s.ns), *nm = util_escape_display(s.name);
		log_eprintf("error: read-only mode: %s %s/%s refused\n", action_name(req.act), ns, nm);
		free(ns);
		free(nm);
		rc = EXIT_USAGE;
		goto out;
	}
	if (s.src->ops->action(s.src, &req, act_done, &st, &err) < 0) {
		char *e = util_escape_display(err);
		log_eprintf("error: %s\n", e);
		free(e);
		free(err);
		rc = EXIT_API;
		goto out;
	}
	struct pull_line pl = { 0 };
	while (!st.done)
		loop_once(200);
	char *ns = util_escape_display(s.ns), *nm = util_escape_display(s.name);
	if (st.status != 0) {
		char *e = util_escape_display(st.message ? st.message : "failed");
		log_eprintf("error: %s %s/%s: %s\n", cmd, ns, nm, e);
		free(e);
		rc = EXIT_API;
	} else {
		printf("VM %s/%s: %s\n", ns, nm, registry_action(req.act)->done);
	}
	if (rc == EXIT_OK && a.wait_s > 0) {
		uint64_t deadline = util_now_ms() + (uint64_t)a.wait_s * 1000u;
		const char *why = NULL;
		int r;
		while ((r = effect_reached(&s, req.act, a.abort_mig, &b, &why)) == 0 && util_now_ms() < deadline) {
			show_pull(&s, &pl);
			loop_once(200);
		}
		if (r > 0) {
			printf("VM %s/%s: done\n", ns, nm);
		} else {
			char *e = util_escape_display(why ? why : "not reached in time");
			log_eprintf("error: %s %s/%s: %s; see kvcon diagnose %s/%s\n", cmd, ns, nm, e, ns, nm);
			free(e);
			rc = EXIT_STALLED;
		}
	}
	free(ns);
	free(nm);
	free(pl.last);
out:
	free(st.message);
	session_close(&s);
	return rc;
}
