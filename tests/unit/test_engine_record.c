/* Unit tests of the engine's VM record (engine/record.c): what is dumped is loaded back the same (identity, live
 * run strategy, change requests, the intent of accepted requests, the current execution with its phase timeline, history, events), and broken
 * records are refused. */
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

#include "core/intern.h"
#include "core/xmalloc.h"
#include "engine/evm.h"
#include "engine/record.h"
#include "t.h"

static const char *manifest = "apiVersion: kubevirt.io/v1\nkind: VirtualMachine\nmetadata: {name: r, namespace: n}\n"
			      "spec:\n  runStrategy: Always\n  template: {spec: {domain: {memory: {guest: 64Mi}}}}\n";

int main(void)
{
	struct evm *v = xcalloc(1, sizeof *v);
	char *err = NULL;
	v->m = manifest_parse(manifest, strlen(manifest), &err);
	T_CHECK(v->m != NULL);
	v->text = xstrdup(manifest);
	strcpy(v->uid, "11111111-1111-4111-8111-111111111111");
	v->generation = 7;
	v->created = 1700000000;
	v->run_strategy = xstrdup("Halted"); /* changed by a stop: differs from the manifest's Always */
	v->req_stop = true;
	v->failures = 3;
	v->retry_after = 1700000100;
	/* the intent of accepted requests (docs/ENGINE-SERVICE.md, "Durable intent") */
	v->stopping = true;
	v->stop_deadline = 1700000005123;
	v->restart = true;
	v->deleting = true;
	v->delete_volumes = true;
	v->pause_req = EVM_PAUSE;
	v->cur = exec_new();
	struct exec *x = v->cur;
	strcpy(x->uid, "22222222-2222-4222-8222-222222222222");
	strcpy(x->launcher, "33333333-3333-4333-8333-333333333333");
	x->phase = intern("Running");
	x->phases[0] = (struct phase_time){ intern("Pending"), 10 };
	x->phases[1] = (struct phase_time){ intern("Scheduled"), 11 };
	x->phases[2] = (struct phase_time){ intern("Running"), 12 };
	x->nphases = 3;
	x->node = xstrdup("host-a");
	x->pid = 4242;
	x->cmdline = xstrdup("qemu-system-x86_64 -name guest=n_r");
	x->serial_log = xstrdup("/run/x/serial.log");
	x->generation = 6;
	x->stop_by_us = true;
	x->tcg = true;
	v->past = xcalloc(1, sizeof *v->past);
	strcpy(v->past[0].uid, "44444444-4444-4444-8444-444444444444");
	v->past[0].how = xstrdup("ShutdownByGuest");
	v->past[0].node = xstrdup("host-a");
	v->npast = 1;
	v->events = xcalloc(1, sizeof *v->events);
	strcpy(v->events[0].uid, "55555555-5555-4555-8555-555555555555");
	v->events[0].type = intern("Warning");
	v->events[0].reason = intern("Crashed");
	v->events[0].message = xstrdup("QEMU exited \"unexpectedly\"\n");
	v->events[0].on_vmi = true;
	v->events[0].count = 2;
	v->nevents = 1;

	char *json = record_dump(v);
	struct evm *w = xcalloc(1, sizeof *w);
	T_EQ_INT(record_load(w, json, &err), 0);
	T_EQ_STR(w->uid, v->uid);
	T_EQ_INT(w->generation, 7);
	T_EQ_INT(w->created, 1700000000);
	T_EQ_STR(w->run_strategy, "Halted");
	T_EQ_STR(w->m->run_strategy, "Always");
	T_CHECK(w->req_stop && !w->req_start);
	T_EQ_INT(w->failures, 3);
	T_EQ_INT(w->retry_after, 1700000100);
	T_CHECK(w->stopping && w->restart && w->deleting && w->delete_volumes);
	T_EQ_INT(w->stop_deadline, 1700000005123);
	T_EQ_INT(w->pause_req, EVM_PAUSE);
	T_CHECK(w->cur != NULL);
	if (w->cur) {
		T_EQ_STR(w->cur->uid, x->uid);
		T_EQ_STR(w->cur->launcher, x->launcher);
		T_CHECK(w->cur->phase == intern("Running"));
		T_EQ_INT(w->cur->nphases, 3);
		T_CHECK(w->cur->phases[1].phase == intern("Scheduled"));
		T_EQ_INT(w->cur->phases[2].at, 12);
		T_EQ_STR(w->cur->node, "host-a");
		T_EQ_INT(w->cur->pid, 4242);
		T_EQ_STR(w->cur->serial_log, "/run/x/serial.log");
		T_EQ_INT(w->cur->generation, 6);
		T_CHECK(w->cur->stop_by_us && w->cur->tcg);
	}
	T_EQ_INT(w->npast, 1);
	T_EQ_STR(w->past[0].how, "ShutdownByGuest");
	T_EQ_INT(w->nevents, 1);
	T_EQ_STR(w->events[0].message, "QEMU exited \"unexpectedly\"\n");
	T_CHECK(w->events[0].reason == intern("Crashed") && w->events[0].on_vmi);
	T_EQ_INT(w->events[0].count, 2);
	/* dumping the loaded record gives the same text */
	char *again = record_dump(w);
	T_EQ_STR(again, json);
	free(again);
	free(json);
	evm_free(w);

	/* a start waiting for the node (no execution): its VMI's and launcher's UIDs, since and the scheduler's
	 * message come back, so a restarted engine shows the same waiting VMI and pod */
	exec_free(v->cur);
	v->cur = NULL;
	v->sched_msg = xstrdup("0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector.");
	strcpy(v->sched_uid, "44444444-4444-4444-8444-444444444444");
	strcpy(v->sched_launcher, "55555555-5555-4555-8555-555555555555");
	v->sched_since = 1700000200;
	json = record_dump(v);
	w = xcalloc(1, sizeof *w);
	T_EQ_INT(record_load(w, json, &err), 0);
	T_CHECK(w->cur == NULL);
	T_EQ_STR(w->sched_msg, v->sched_msg);
	T_EQ_STR(w->sched_uid, v->sched_uid);
	T_EQ_STR(w->sched_launcher, v->sched_launcher);
	T_EQ_INT(w->sched_since, 1700000200);
	T_CHECK(!w->sched_mount);
	again = record_dump(w);
	T_EQ_STR(again, json);
	free(again);
	free(json);
	evm_free(w);
	/* a start waiting for a missing Secret is the same wait, its pod on the node: kubelet's message, mount */
	free(v->sched_msg);
	v->sched_msg = xstrdup("MountVolume.SetUp failed for volume \"ci\" : secret \"ud\" not found");
	v->sched_mount = true;
	json = record_dump(v);
	w = xcalloc(1, sizeof *w);
	T_EQ_INT(record_load(w, json, &err), 0);
	T_CHECK(w->cur == NULL && w->sched_mount);
	T_EQ_STR(w->sched_msg, v->sched_msg);
	T_EQ_STR(w->sched_uid, v->sched_uid);
	T_EQ_STR(w->sched_launcher, v->sched_launcher);
	free(json);
	evm_free(w);
	v->sched_mount = false;
	/* no wait kept when there is none; a wait without its UIDs is not kvcon's: dropped */
	free(v->sched_msg);
	v->sched_msg = NULL;
	json = record_dump(v);
	T_CHECK(strstr(json, "\"waiting\"") == NULL);
	json_object *o = json_tokener_parse(json);
	json_object *wt = json_object_new_object();
	json_object_object_add(wt, "message", json_object_new_string("m"));
	json_object_object_add(o, "waiting", wt);
	free(json);
	json = xstrdup(json_object_to_json_string(o));
	json_object_put(o);
	w = xcalloc(1, sizeof *w);
	T_EQ_INT(record_load(w, json, &err), 0);
	free(json);
	T_CHECK(w->sched_msg == NULL);
	evm_free(w);

	/* broken records are refused, not half-loaded */
	const char *bad[] = { "", "[]", "{\"uid\":\"x\"}", "{\"uid\":\"x\",\"manifest\":\"kind: Pod\"}", "{" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct evm *b = xcalloc(1, sizeof *b);
		err = NULL;
		T_EQ_INT(record_load(b, bad[i], &err), -1);
		T_CHECK(err != NULL);
		free(err);
		evm_free(b);
	}
	evm_free(v);
	return T_DONE();
}
