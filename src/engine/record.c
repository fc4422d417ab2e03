/* The engine's record of a VM as JSON (json-c): manifest, identity, live run strategy, the current execution,
 * past executions and events. Written atomically by the host worker after every change. */
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/intern.h"
#include "core/xmalloc.h"
#include "engine/evm.h"
#include "engine/migrate.h"

struct exec *exec_new(void)
{
	struct exec *x = xcalloc(1, sizeof *x);
	x->phase = intern("Pending");
	return x;
}

void exec_free(struct exec *x)
{
	if (x == NULL)
		return;
	free(x->node);
	free(x->cmdline);
	free(x->log_path);
	free(x->serial_log);
	free(x->run_dir);
	free(x->how);
	free(x->message);
	emig_free(x->mig);
	free(x);
}

void evm_free(struct evm *v)
{
	if (v == NULL)
		return;
	free(v->key);
	free(v->text);
	manifest_free(v->m);
	free(v->run_strategy);
	free(v->start_error);
	exec_free(v->cur);
	for (int i = 0; i < v->npast; i++) {
		free(v->past[i].node);
		free(v->past[i].how);
	}
	free(v->past);
	for (int i = 0; i < v->nevents; i++)
		free(v->events[i].message);
	free(v->events);
	free(v->ring);
	free(v);
}

static void put_s(json_object *o, const char *k, const char *s)
{
	if (s)
		json_object_object_add(o, k, json_object_new_string(s));
}

static void put_i(json_object *o, const char *k, int64_t i)
{
	json_object_object_add(o, k, json_object_new_int64(i));
}

static void put_b(json_object *o, const char *k, bool b)
{
	json_object_object_add(o, k, json_object_new_boolean(b));
}

static json_object *exec_json(const struct exec *x)
{
	json_object *o = json_object_new_object();
	put_s(o, "uid", x->uid);
	put_s(o, "launcherUid", x->launcher);
	put_s(o, "phase", x->phase);
	json_object *ph = json_object_new_array();
	for (int i = 0; i < x->nphases; i++) {
		json_object *p = json_object_new_object();
		put_s(p, "phase", x->phases[i].phase);
		put_i(p, "at", x->phases[i].at);
		json_object_array_add(ph, p);
	}
	json_object_object_add(o, "phaseTransitionTimestamps", ph);
	put_s(o, "node", x->node);
	put_i(o, "pid", x->pid);
	put_i(o, "created", x->created);
	put_i(o, "started", x->started);
	put_i(o, "ended", x->ended);
	put_s(o, "cmdline", x->cmdline);
	put_s(o, "logPath", x->log_path);
	put_s(o, "serialLog", x->serial_log);
	put_s(o, "runDir", x->run_dir);
	put_s(o, "how", x->how);
	put_s(o, "message", x->message);
	put_i(o, "generation", (int64_t)x->generation);
	put_b(o, "paused", x->paused);
	put_b(o, "stopByUs", x->stop_by_us);
	put_b(o, "tcg", x->tcg);
	if (x->mig)
		json_object_object_add(o, "migrationState", emig_json(x->mig));
	return o;
}

char *record_dump(const struct evm *v)
{
	json_object *o = json_object_new_object();
	put_s(o, "apiVersion", "engine.kvcon.dev/v1");
	put_s(o, "kind", "EngineVirtualMachine");
	put_s(o, "uid", v->uid);
	put_i(o, "generation", (int64_t)v->generation);
	put_i(o, "created", v->created);
	put_s(o, "runStrategy", v->run_strategy);
	put_b(o, "startRequested", v->req_start);
	put_b(o, "stopRequested", v->req_stop);
	put_i(o, "failures", v->failures);
	put_i(o, "retryAfter", v->retry_after);
	put_s(o, "startError", v->start_error);
	put_s(o, "manifest", v->text);
	if (v->cur)
		json_object_object_add(o, "execution", exec_json(v->cur));
	json_object *hist = json_object_new_array();
	for (int i = 0; i < v->npast; i++) {
		json_object *p = json_object_new_object();
		put_s(p, "uid", v->past[i].uid);
		put_s(p, "launcherUid", v->past[i].launcher);
		put_s(p, "node", v->past[i].node);
		put_s(p, "how", v->past[i].how);
		put_i(p, "started", v->past[i].started);
		put_i(p, "ended", v->past[i].ended);
		json_object_array_add(hist, p);
	}
	json_object_object_add(o, "history", hist);
	json_object *evs = json_object_new_array();
	for (int i = 0; i < v->nevents; i++) {
		const struct evm_event *e = &v->events[i];
		json_object *p = json_object_new_object();
		put_s(p, "uid", e->uid);
		put_s(p, "type", e->type);
		put_s(p, "reason", e->reason);
		put_s(p, "message", e->message);
		put_b(p, "onVMI", e->on_vmi);
		put_s(p, "involvedUid", e->inv_uid);
		put_i(p, "first", e->first);
		put_i(p, "last", e->last);
		put_i(p, "count", e->count);
		json_object_array_add(evs, p);
	}
	json_object_object_add(o, "events", evs);
	char *s = xstrdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
	return s;
}

static const char *get_s(json_object *o, const char *k)
{
	json_object *v;
	return json_object_object_get_ex(o, k, &v) && json_object_is_type(v, json_type_string)
		       ? json_object_get_string(v)
		       : NULL;
}

static int64_t get_i(json_object *o, const char *k)
{
	json_object *v;
	return json_object_object_get_ex(o, k, &v) ? json_object_get_int64(v) : 0;
}

static bool get_b(json_object *o, const char *k)
{
	json_object *v;
	return json_object_object_get_ex(o, k, &v) && json_object_get_boolean(v);
}

static void uid_copy(char dst[UID_LEN], const char *s)
{
	snprintf(dst, UID_LEN, "%s", s ? s : "");
}

static struct exec *exec_from(json_object *o)
{
	struct exec *x = exec_new();
	uid_copy(x->uid, get_s(o, "uid"));
	uid_copy(x->launcher, get_s(o, "launcherUid"));
	x->phase = intern(get_s(o, "phase") ? get_s(o, "phase") : "Failed");
	json_object *ph;
	if (json_object_object_get_ex(o, "phaseTransitionTimestamps", &ph) && json_object_is_type(ph, json_type_array))
		for (size_t i = 0; i < json_object_array_length(ph) && x->nphases < EVM_MAX_PHASES; i++) {
			json_object *p = json_object_array_get_idx(ph, i);
			const char *phase = get_s(p, "phase");
			if (phase == NULL)
				continue;
			x->phases[x->nphases].phase = intern(phase);
			x->phases[x->nphases++].at = get_i(p, "at");
		}
	x->node = xstrdup0(get_s(o, "node"));
	x->pid = (int)get_i(o, "pid");
	x->created = get_i(o, "created");
	x->started = get_i(o, "started");
	x->ended = get_i(o, "ended");
	x->cmdline = xstrdup0(get_s(o, "cmdline"));
	x->log_path = xstrdup0(get_s(o, "logPath"));
	x->serial_log = xstrdup0(get_s(o, "serialLog"));
	x->run_dir = xstrdup0(get_s(o, "runDir"));
	x->how = xstrdup0(get_s(o, "how"));
	x->message = xstrdup0(get_s(o, "message"));
	x->generation = (uint64_t)get_i(o, "generation");
	x->paused = get_b(o, "paused");
	x->stop_by_us = get_b(o, "stopByUs");
	x->tcg = get_b(o, "tcg");
	json_object *mg;
	if (json_object_object_get_ex(o, "migrationState", &mg) && json_object_is_type(mg, json_type_object))
		x->mig = emig_from(mg);
	return x;
}

int record_load(struct evm *v, const char *json, char **err)
{
	json_object *o = json_tokener_parse(json);
	int rc = -1;
	if (o == NULL || !json_object_is_type(o, json_type_object)) {
		*err = xstrdup("not a JSON object");
		goto out;
	}
	const char *text = get_s(o, "manifest"), *uid = get_s(o, "uid");
	if (text == NULL || uid == NULL) {
		*err = xstrdup("manifest or uid missing");
		goto out;
	}
	v->m = manifest_parse(text, strlen(text), err);
	if (v->m == NULL)
		goto out;
	v->text = xstrdup(text);
	uid_copy(v->uid, uid);
	v->generation = (uint64_t)get_i(o, "generation");
	v->created = get_i(o, "created");
	v->run_strategy = xstrdup(get_s(o, "runStrategy") ? get_s(o, "runStrategy") : v->m->run_strategy);
	v->req_start = get_b(o, "startRequested");
	v->req_stop = get_b(o, "stopRequested");
	v->failures = (int)get_i(o, "failures");
	v->retry_after = get_i(o, "retryAfter");
	v->start_error = xstrdup0(get_s(o, "startError"));
	json_object *x;
	if (json_object_object_get_ex(o, "execution", &x) && json_object_is_type(x, json_type_object))
		v->cur = exec_from(x);
	json_object *a;
	if (json_object_object_get_ex(o, "history", &a) && json_object_is_type(a, json_type_array)) {
		size_t n = json_object_array_length(a);
		v->past = xcalloc(n + 1, sizeof *v->past);
		for (size_t i = 0; i < n && i < EVM_MAX_HISTORY; i++) {
			json_object *p = json_object_array_get_idx(a, i);
			struct evm_past *h = &v->past[v->npast++];
			uid_copy(h->uid, get_s(p, "uid"));
			uid_copy(h->launcher, get_s(p, "launcherUid"));
			h->node = xstrdup0(get_s(p, "node"));
			h->how = xstrdup0(get_s(p, "how"));
			h->started = get_i(p, "started");
			h->ended = get_i(p, "ended");
		}
	}
	if (json_object_object_get_ex(o, "events", &a) && json_object_is_type(a, json_type_array)) {
		size_t n = json_object_array_length(a);
		v->events = xcalloc(n + 1, sizeof *v->events);
		for (size_t i = 0; i < n && i < EVM_MAX_EVENTS; i++) {
			json_object *p = json_object_array_get_idx(a, i);
			struct evm_event *e = &v->events[v->nevents++];
			uid_copy(e->uid, get_s(p, "uid"));
			e->type = intern(get_s(p, "type") ? get_s(p, "type") : "Normal");
			e->reason = intern(get_s(p, "reason") ? get_s(p, "reason") : "");
			e->message = xstrdup(get_s(p, "message") ? get_s(p, "message") : "");
			e->on_vmi = get_b(p, "onVMI");
			uid_copy(e->inv_uid, get_s(p, "involvedUid"));
			e->first = get_i(p, "first");
			e->last = get_i(p, "last");
			e->count = (int)get_i(p, "count");
		}
	}
	rc = 0;
out:
	json_object_put(o);
	return rc;
}
