/* Lifecycle actions with virtctl's semantics (start, stop, restart, pause, delete, ...), durable before they are
 * carried out, their waiters (an action completes when the state it asked for is reached), and engine_apply. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/intern.h"
#include "core/loop.h"
#include "core/opts.h"
#include "core/util.h"
#include "core/xmalloc.h"
#include "engine/engine_int.h"
#include "engine/migrate.h"
#include "engine/oci.h"
#include "engine/record.h"
#include "model/registry.h"

/* ---- waiters (actions complete when the state they asked for is reached) ---- */

struct done_call {
	action_done_cb done;
	void *arg;
	int status;
	char *msg;
};

static void done_fire(void *arg)
{
	struct done_call *d = arg;
	d->done(d->arg, d->status, d->msg);
	free(d->msg);
	free(d);
}

void eactions_complete(struct waiter *w, int status, const char *msg)
{
	struct done_call *d = xcalloc(1, sizeof *d);
	d->done = w->done;
	d->arg = w->arg;
	d->status = status;
	d->msg = xstrdup0(msg);
	loop_post(done_fire, d);
}

void eactions_check_waiters(struct evm *v)
{
	for (struct waiter **pp = &v->waiters; *pp;) {
		struct waiter *w = *pp;
		int st = 1; /* 1: still waiting */
		const char *msg = NULL;
		char *pm = NULL;
		const struct exec *x = v->cur;
		switch (w->act) {
		case ACT_START:
		case ACT_RESTART:
			if (x && x->phase == intern("Running") && strcmp(x->uid, w->old_uid) != 0)
				st = 0;
			else if (x && strcmp(x->uid, w->old_uid) != 0 && !exec_active(x) && x->how &&
				 (strcmp(x->how, "FailedCreate") == 0 || epull_reason(x->how))) {
				st = -1;
				msg = x->message;
				if (epull_reason(x->how)) /* kubelet's reason first, as kubectl describe shows it */
					msg = pm = xasprintf("%s: %s", x->how, x->message ? x->message : "");
			}
			break;
		case ACT_STOP:
		case ACT_FORCE_STOP:
			if (!exec_active(x))
				st = 0;
			break;
		case ACT_PAUSE:
			if (!exec_active(x))
				st = -1, msg = "the VM stopped";
			else if (x->paused)
				st = 0;
			break;
		case ACT_UNPAUSE:
			if (!exec_active(x))
				st = -1, msg = "the VM stopped";
			else if (!x->paused)
				st = 0;
			break;
		case ACT_SOFT_REBOOT:
			st = 0; /* accepted once asked, as KubeVirt's subresource answers */
			break;
		default:
			break;
		}
		if (st == 1) {
			pp = &w->next;
			continue;
		}
		eactions_complete(w, st, msg);
		free(pm);
		*pp = w->next;
		free(w);
	}
}

static void add_waiter(struct evm *v, enum action act, action_done_cb done, void *arg)
{
	struct waiter *w = xcalloc(1, sizeof *w);
	w->act = act;
	w->done = done;
	w->arg = arg;
	if (v->cur && (act == ACT_START || act == ACT_RESTART))
		snprintf(w->old_uid, UID_LEN, "%s", v->cur->uid);
	w->next = v->waiters;
	v->waiters = w;
}


/* ---- provider ops ---- */

static int act_refuse(char **err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int act_refuse(char **err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	*err = xvasprintf(fmt, ap);
	va_end(ap);
	return -1;
}

static void done_now(action_done_cb done, void *arg)
{
	struct waiter w = { .done = done, .arg = arg };
	eactions_complete(&w, 0, NULL);
}

/* What an action may change of the record, to put back when the record cannot be stored. */
struct intent {
	char *run_strategy;
	bool req_start, req_stop, restart, deleting, delete_volumes, stopping, stop_unsent, stop_by_us;
	int failures, pause_req;
	int64_t retry_after, stop_deadline;
};

static void intent_save(const struct evm *v, struct intent *s)
{
	*s = (struct intent){ xstrdup(v->run_strategy), v->req_start, v->req_stop, v->restart, v->deleting,
			      v->delete_volumes, v->stopping, v->stop_unsent, v->cur && v->cur->stop_by_us,
			      v->failures, v->pause_req, v->retry_after, v->stop_deadline };
}

static void intent_restore(struct evm *v, struct intent *s)
{
	free(v->run_strategy);
	v->run_strategy = s->run_strategy;
	v->req_start = s->req_start;
	v->req_stop = s->req_stop;
	v->restart = s->restart;
	v->deleting = s->deleting;
	v->delete_volumes = s->delete_volumes;
	v->stopping = s->stopping;
	v->stop_unsent = s->stop_unsent;
	if (v->cur)
		v->cur->stop_by_us = s->stop_by_us;
	v->failures = s->failures;
	v->pause_req = s->pause_req;
	v->retry_after = s->retry_after;
	v->stop_deadline = s->stop_deadline;
}

/* An action: checked, its intent stored (fsync'd; refused when that fails, nothing changed), then acted on. */
int eactions_action(struct source *src, const struct action_req *req, action_done_cb done, void *arg,
			 char **err)
{
	struct evm *v = evm_find(src, req->ns, req->name);
	if (v == NULL || v->deleting)
		return act_refuse(err, "virtualmachine \"%s\" not found on %s", req->name, src->name);
	if (src->readonly || opts_global()->readonly)
		return act_refuse(err, "read-only: %s refused", action_name(req->act));
	if (migrate_busy(v) && req->act != ACT_MIGRATE_ABORT && req->act != ACT_MIGRATE)
		return act_refuse(err, "%s is migrating: abort the migration first", req->name);
	if (req->act == ACT_MIGRATE || req->act == ACT_MIGRATE_ABORT)
		return migrate_action(src, req, done, arg, err);
	if (req->act == ACT_COUNT)
		return act_refuse(err, "unknown action");
	bool is = exec_active(v->cur);
	bool force = req->act == ACT_FORCE_STOP || req->grace_period == 0;
	int grace = force ? 0 : req->grace_period > 0 ? req->grace_period : v->m->grace;
	const char *rs = v->run_strategy;
	struct intent saved;
	/* 1. the checks, and the intent in memory */
	switch (req->act) {
	case ACT_START:
		if (is)
			return act_refuse(err, "VM is already running");
		if (strcmp(rs, "Always") == 0 || strcmp(rs, "Once") == 0)
			return act_refuse(err, "%s does not support manual start requests", rs);
		if (strcmp(rs, "RerunOnFailure") == 0 && v->cur && v->cur->phase == intern("Failed"))
			return act_refuse(err, "RerunOnFailure does not support starting VM from failed state");
		intent_save(v, &saved);
		if (strcmp(rs, "Halted") == 0) {
			free(v->run_strategy);
			v->run_strategy = xstrdup("Always");
		} else
			v->req_start = true;
		v->req_stop = false;
		v->failures = 0;
		v->retry_after = 0;
		break;
	case ACT_STOP:
	case ACT_FORCE_STOP:
		if (strcmp(rs, "Halted") == 0) {
			if (!is)
				return act_refuse(err, "VM is not running");
			if (!force && grace >= v->m->grace)
				return act_refuse(err, "Halted only supports manual stop requests with a shorter graceperiod");
		} else if ((strcmp(rs, "RerunOnFailure") == 0 || strcmp(rs, "Manual") == 0) && !is)
			return act_refuse(err, "VM is not running");
		intent_save(v, &saved);
		if (strcmp(rs, "RerunOnFailure") == 0 || strcmp(rs, "Manual") == 0) {
			v->req_stop = true;
			v->req_start = false;
		} else if (strcmp(rs, "Halted") != 0) {
			free(v->run_strategy);
			v->run_strategy = xstrdup("Halted");
		}
		evm_stop_intent(v, grace);
		break;
	case ACT_RESTART:
		if (strcmp(rs, "Halted") == 0)
			return act_refuse(err, "Halted does not support manual restart requests");
		if (!is)
			return act_refuse(err, "VM is not running");
		intent_save(v, &saved);
		v->restart = true;
		if (strcmp(rs, "Manual") == 0 || strcmp(rs, "RerunOnFailure") == 0) {
			v->req_start = true;
			v->req_stop = false;
		}
		evm_stop_intent(v, grace);
		break;
	case ACT_PAUSE:
		if (!is || v->cur->phase != intern("Running"))
			return act_refuse(err, "VM is not running");
		if (v->cur->paused)
			return act_refuse(err, "VMI is already paused");
		intent_save(v, &saved);
		v->pause_req = EVM_PAUSE;
		break;
	case ACT_UNPAUSE:
		if (!is || !v->cur->paused)
			return act_refuse(err, "VMI is not paused");
		intent_save(v, &saved);
		v->pause_req = EVM_UNPAUSE;
		break;
	case ACT_SOFT_REBOOT:
		if (!is || v->cur->phase != intern("Running"))
			return act_refuse(err, "VM is not running");
		if (v->cur->paused)
			return act_refuse(err, "VMI is paused");
		intent_save(v, &saved);
		break;
	case ACT_DELETE:
		intent_save(v, &saved);
		v->deleting = true;
		v->delete_volumes = (req->flags & ENGINE_DELETE_VOLUMES) != 0;
		evm_stop_intent(v, force ? 0 : grace);
		break;
	default:
		return act_refuse(err, "unknown action");
	}
	/* 2. stored before anything is done about it */
	char *perr = NULL;
	if (evm_persist_err(v, &perr) < 0) {
		intent_restore(v, &saved);
		*err = perr;
		return -1;
	}
	free(saved.run_strategy);
	/* 3. acted on */
	switch (req->act) {
	case ACT_START:
		add_waiter(v, ACT_START, done, arg);
		break;
	case ACT_STOP:
	case ACT_FORCE_STOP:
		if (is)
			add_waiter(v, req->act, done, arg);
		else
			done_now(done, arg);
		break;
	case ACT_RESTART:
		add_waiter(v, ACT_RESTART, done, arg);
		break;
	case ACT_PAUSE:
		evm_send(v, RQ_SUSPEND, PK_PAUSE);
		add_waiter(v, ACT_PAUSE, done, arg);
		break;
	case ACT_UNPAUSE:
		evm_send(v, RQ_RESUME, PK_PAUSE);
		add_waiter(v, ACT_UNPAUSE, done, arg);
		break;
	case ACT_SOFT_REBOOT:
		evm_send(v, RQ_REBOOT, PK_OTHER);
		evm_add_event(v, "Normal", "SoftRebooted", true, "soft reboot requested (guest agent, else ACPI)");
		add_waiter(v, ACT_SOFT_REBOOT, done, arg);
		break;
	case ACT_DELETE:
		evm_add_event(v, "Normal", "Deleting", false, "deleting the virtual machine%s",
			  v->delete_volumes ? " and its volumes" : "");
		add_waiter(v, ACT_DELETE, done, arg);
		break;
	default:
		break;
	}
	evm_issue_stop(v);
	evm_publish(v);
	evm_persist(v);
	ereconcile(v);
	return 0;
}


int engine_apply(struct source *src, const char *text, size_t len, char **result, char **err)
{
	return engine_apply_on(src, text, len, false, result, err);
}

int engine_apply_on(struct source *src, const char *text, size_t len, bool pin, char **result, char **err)
{
	struct ehost *eh = ehost_of_source(src);
	*result = NULL;
	if (eh == NULL || !eh->loaded) {
		*err = xstrdup("the engine host is not connected");
		return -1;
	}
	struct manifest *m = manifest_parse(text, len, err);
	if (m == NULL)
		return -1;
	char *imgs = esettings_dir("KVCON_ENGINE_IMAGES", "images"), *vols = esettings_dir("KVCON_ENGINE_VOLUMES", "volumes");
	char *bridge = engine_setting("KVCON_ENGINE_BRIDGE", "engine.bridge");
	char **roots = esettings_host_roots();
	char *cache = esettings_image_cache();
	struct domxml_env env = { .image_dir = imgs, .image_cache = cache, .volume_dir = vols, .bridge = bridge,
				  .host_roots = (const char *const *)roots };
	/* containerDisks from registries are pulled at start (as kubelet does), not looked for at apply */
	enum mf_vol *types = xcalloc((size_t)m->nvols + 1, sizeof *types);
	for (int i = 0; i < m->nvols; i++) {
		struct oci_ref r;
		char *e = NULL;
		types[i] = m->vols[i].type;
		if (types[i] == MF_VOL_CONTAINER && !epull_local_image(imgs, m->vols[i].image) &&
		    oci_ref_parse(m->vols[i].image, &r, &e) == 0) {
			m->vols[i].type = MF_VOL_EMPTY;
			oci_ref_free(&r);
		}
		free(e);
	}
	int rc = domxml_resolve(m, &env, err);
	for (int i = 0; i < m->nvols; i++)
		m->vols[i].type = types[i];
	free(types);
	free(imgs);
	free(vols);
	free(bridge);
	free(cache);
	esettings_values_free(roots);
	if (rc < 0) {
		manifest_free(m);
		return -1;
	}
	char *key = xasprintf("%s/%s", m->ns, m->name);
	struct evm *v = hmap_get(&eh->vms, key);
	char *file = xasprintf("/%s_%s.json:", m->ns, m->name);
	for (int i = 0; i < eh->nbad && v == NULL; i++)
		if (strstr(eh->bad[i], file) && record_forget_bad(eh, i)) {
			i--; /* moved away or removed since: this apply writes the record anew */
		} else if (strstr(eh->bad[i], file)) {
			*err = xasprintf("the record of %s is unreadable (%s): move it away first", key, eh->bad[i]);
			free(file);
			free(key);
			manifest_free(m);
			return -1;
		}
	free(file);
	if (v && v->deleting) {
		*err = xasprintf("%s is being deleted", key);
		free(key);
		manifest_free(m);
		return -1;
	}
	if (v && v->text && strlen(v->text) == len && memcmp(v->text, text, len) == 0) {
		if (v->pinned != pin) { /* the object is unchanged; where it may run follows how it was applied */
			v->pinned = pin;
			if (evm_persist_err(v, err) < 0) {
				v->pinned = !pin;
				free(key);
				manifest_free(m);
				return -1;
			}
		}
		*result = xstrdup("unchanged");
		free(key);
		manifest_free(m);
		epull_sweep();
		return 0;
	}
	/* the new record is stored before anything else: an apply that cannot be stored is refused and leaves
	 * the previous record (file and memory) as it was */
	bool fresh = v == NULL;
	struct evm old = { 0 };
	if (fresh) {
		v = xcalloc(1, sizeof *v);
		v->eh = eh;
		v->key = key;
		util_uuid_v4(v->uid);
		v->created = util_wall_s();
		v->generation = 1;
	} else {
		free(key);
		old.m = v->m;
		old.text = v->text;
		old.run_strategy = v->run_strategy;
		old.generation = v->generation;
		old.req_start = v->req_start;
		old.req_stop = v->req_stop;
		old.pinned = v->pinned;
		v->generation++;
		v->run_strategy = NULL;
	}
	v->m = m;
	v->text = xstrndup(text, len);
	v->run_strategy = xstrdup(m->run_strategy); /* apply sets spec.runStrategy, as kubectl apply does */
	v->req_start = v->req_stop = false;
	v->pinned = pin;
	if (evm_persist_err(v, err) < 0) {
		if (fresh)
			evm_free(v);
		else {
			manifest_free(v->m);
			free(v->text);
			free(v->run_strategy);
			v->m = old.m;
			v->text = old.text;
			v->run_strategy = old.run_strategy;
			v->generation = old.generation;
			v->req_start = old.req_start;
			v->req_stop = old.req_stop;
			v->pinned = old.pinned;
		}
		return -1;
	}
	if (fresh)
		hmap_put(&eh->vms, v->key, v);
	*result = xstrdup(fresh ? "created" : "configured");
	evm_publish(v);
	ereconcile(v);
	epull_sweep_after(old.m, v->m); /* images the previous manifest used may be unused now */
	manifest_free(old.m);
	free(old.text);
	free(old.run_strategy);
	return 0;
}
