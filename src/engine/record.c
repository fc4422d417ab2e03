/* The engine's record of a VM as JSON (json-c): manifest, identity, live run strategy, the current execution,
 * past executions, events and the intent of accepted requests not yet carried out. Written atomically and
 * fsync'd (file, then directory) by the loop thread before the engine acts on a change (engine.c, persist). */
#include <json-c/json.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/intern.h"
#include "core/xmalloc.h"
#include "engine/ejson.h"
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
	free(x->images);
	free(x->net);
	free(x->pull_msg);
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
	free(v->moving_to);
	free(v->moving_dir);
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

/* The record's fields, in the order they are written. */
static const struct ejson_field vm_rows[] = {
	{ "uid", EJ_UID, offsetof(struct evm, uid), NULL },
	{ "generation", EJ_U64, offsetof(struct evm, generation), NULL },
	{ "created", EJ_I64, offsetof(struct evm, created), NULL },
	{ "runStrategy", EJ_STR, offsetof(struct evm, run_strategy), NULL },
	{ "startRequested", EJ_BOOL, offsetof(struct evm, req_start), NULL },
	{ "stopRequested", EJ_BOOL, offsetof(struct evm, req_stop), NULL },
	{ "failures", EJ_INT, offsetof(struct evm, failures), NULL },
	{ "retryAfter", EJ_I64, offsetof(struct evm, retry_after), NULL },
	{ "startError", EJ_STR, offsetof(struct evm, start_error), NULL },
	{ "deleting", EJ_BOOL, offsetof(struct evm, deleting), NULL },
	{ "deleteVolumes", EJ_BOOL, offsetof(struct evm, delete_volumes), NULL },
	{ "restartRequested", EJ_BOOL, offsetof(struct evm, restart), NULL },
	{ "stopping", EJ_BOOL, offsetof(struct evm, stopping), NULL },
	{ "stopDeadlineMs", EJ_I64, offsetof(struct evm, stop_deadline), NULL },
	{ "pauseRequest", EJ_INT, offsetof(struct evm, pause_req), NULL },
	{ "movingTo", EJ_STR, offsetof(struct evm, moving_to), NULL },
	{ "movingDir", EJ_STR, offsetof(struct evm, moving_dir), NULL },
	{ "manifest", EJ_STR, offsetof(struct evm, text), NULL },
};

/* the execution: identity, then its phase history, then the rest */
static const struct ejson_field exec_head[] = {
	{ "uid", EJ_UID, offsetof(struct exec, uid), NULL },
	{ "launcherUid", EJ_UID, offsetof(struct exec, launcher), NULL },
	{ "phase", EJ_ISTR, offsetof(struct exec, phase), "Failed" },
};

static const struct ejson_field phase_rows[] = {
	{ "phase", EJ_ISTR, offsetof(struct phase_time, phase), NULL },
	{ "at", EJ_I64, offsetof(struct phase_time, at), NULL },
};

static const struct ejson_field exec_rows[] = {
	{ "node", EJ_STR, offsetof(struct exec, node), NULL },
	{ "pid", EJ_INT, offsetof(struct exec, pid), NULL },
	{ "created", EJ_I64, offsetof(struct exec, created), NULL },
	{ "started", EJ_I64, offsetof(struct exec, started), NULL },
	{ "ended", EJ_I64, offsetof(struct exec, ended), NULL },
	{ "cmdline", EJ_STR, offsetof(struct exec, cmdline), NULL },
	{ "logPath", EJ_STR, offsetof(struct exec, log_path), NULL },
	{ "serialLog", EJ_STR, offsetof(struct exec, serial_log), NULL },
	{ "runDir", EJ_STR, offsetof(struct exec, run_dir), NULL },
	{ "how", EJ_STR, offsetof(struct exec, how), NULL },
	{ "message", EJ_STR, offsetof(struct exec, message), NULL },
	{ "imageIDs", EJ_STR, offsetof(struct exec, images), NULL },
	{ "network", EJ_STR, offsetof(struct exec, net), NULL },
	{ "generation", EJ_U64, offsetof(struct exec, generation), NULL },
	{ "paused", EJ_BOOL, offsetof(struct exec, paused), NULL },
	{ "stopByUs", EJ_BOOL, offsetof(struct exec, stop_by_us), NULL },
	{ "tcg", EJ_BOOL, offsetof(struct exec, tcg), NULL },
};

static const struct ejson_field past_rows[] = {
	{ "uid", EJ_UID, offsetof(struct evm_past, uid), NULL },
	{ "launcherUid", EJ_UID, offsetof(struct evm_past, launcher), NULL },
	{ "node", EJ_STR, offsetof(struct evm_past, node), NULL },
	{ "how", EJ_STR, offsetof(struct evm_past, how), NULL },
	{ "started", EJ_I64, offsetof(struct evm_past, started), NULL },
	{ "ended", EJ_I64, offsetof(struct evm_past, ended), NULL },
};

static const struct ejson_field event_rows[] = {
	{ "uid", EJ_UID, offsetof(struct evm_event, uid), NULL },
	{ "type", EJ_ISTR, offsetof(struct evm_event, type), "Normal" },
	{ "reason", EJ_ISTR, offsetof(struct evm_event, reason), "" },
	{ "message", EJ_STR, offsetof(struct evm_event, message), "" },
	{ "onVMI", EJ_BOOL, offsetof(struct evm_event, on_vmi), NULL },
	{ "involvedUid", EJ_UID, offsetof(struct evm_event, inv_uid), NULL },
	{ "first", EJ_I64, offsetof(struct evm_event, first), NULL },
	{ "last", EJ_I64, offsetof(struct evm_event, last), NULL },
	{ "count", EJ_INT, offsetof(struct evm_event, count), NULL },
};

static json_object *exec_json(const struct exec *x)
{
	json_object *o = json_object_new_object();
	ejson_put(o, x, EJSON_ROWS(exec_head));
	json_object_object_add(o, "phaseTransitionTimestamps",
			       ejson_array(x->phases, sizeof x->phases[0], x->nphases, EJSON_ROWS(phase_rows)));
	ejson_put(o, x, EJSON_ROWS(exec_rows));
	if (x->mig)
		json_object_object_add(o, "migrationState", emig_json(x->mig));
	return o;
}

char *record_dump(const struct evm *v)
{
	json_object *o = json_object_new_object();
	json_object_object_add(o, "apiVersion", json_object_new_string("engine.kvcon.dev/v1"));
	json_object_object_add(o, "kind", json_object_new_string("EngineVirtualMachine"));
	ejson_put(o, v, EJSON_ROWS(vm_rows));
	if (v->cur)
		json_object_object_add(o, "execution", exec_json(v->cur));
	json_object_object_add(o, "history", ejson_array(v->past, sizeof v->past[0], v->npast, EJSON_ROWS(past_rows)));
	json_object_object_add(o, "events",
			       ejson_array(v->events, sizeof v->events[0], v->nevents, EJSON_ROWS(event_rows)));
	char *s = xstrdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
	return s;
}

static struct exec *exec_from(json_object *o)
{
	struct exec *x = exec_new();
	ejson_get(x, o, EJSON_ROWS(exec_head));
	json_object *ph = ejson_child(o, "phaseTransitionTimestamps", json_type_array);
	for (size_t i = 0; ph && i < json_object_array_length(ph) && x->nphases < EVM_MAX_PHASES; i++) {
		json_object *p = json_object_array_get_idx(ph, i);
		if (ejson_str(p, "phase"))
			ejson_get(&x->phases[x->nphases++], p, EJSON_ROWS(phase_rows));
	}
	ejson_get(x, o, EJSON_ROWS(exec_rows));
	json_object *mg = ejson_child(o, "migrationState", json_type_object);
	if (mg)
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
	const char *text = ejson_str(o, "manifest");
	if (text == NULL || ejson_str(o, "uid") == NULL) {
		*err = xstrdup("manifest or uid missing");
		goto out;
	}
	v->m = manifest_parse(text, strlen(text), err);
	if (v->m == NULL)
		goto out;
	ejson_get(v, o, EJSON_ROWS(vm_rows));
	if (v->run_strategy == NULL)
		v->run_strategy = xstrdup(v->m->run_strategy);
	json_object *x = ejson_child(o, "execution", json_type_object);
	if (x)
		v->cur = exec_from(x);
	json_object *a = ejson_child(o, "history", json_type_array);
	if (a) {
		size_t n = json_object_array_length(a);
		v->past = xcalloc(n + 1, sizeof *v->past);
		for (size_t i = 0; i < n && i < EVM_MAX_HISTORY; i++)
			ejson_get(&v->past[v->npast++], json_object_array_get_idx(a, i), EJSON_ROWS(past_rows));
	}
	a = ejson_child(o, "events", json_type_array);
	if (a) {
		size_t n = json_object_array_length(a);
		v->events = xcalloc(n + 1, sizeof *v->events);
		for (size_t i = 0; i < n && i < EVM_MAX_EVENTS; i++)
			ejson_get(&v->events[v->nevents++], json_object_array_get_idx(a, i), EJSON_ROWS(event_rows));
	}
	rc = 0;
out:
	json_object_put(o);
	return rc;
}
