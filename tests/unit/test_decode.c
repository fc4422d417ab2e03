/* Unit tests of the JSON decoder (kube/decode.c): KubeVirt's round-trip fixtures, a launcher pod, core and
 * series events, and bad input (wrong types, missing identity, huge strings, deep garbage). */
#include <json-c/json.h>
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/util.h"
#include "core/xmalloc.h"
#include "kube/decode.h"
#include "fixture.h"
#include "t.h"

static struct source *src;

static void test_vm_roundtrip(void)
{
	struct json_object *j = fixture_json("roundtrip-VirtualMachine.json");
	T_CHECK(j != NULL);
	char *err = NULL;
	struct vm *v = (struct vm *)kube_decode(OBJ_VM, j, src, &err);
	T_CHECK(v != NULL);
	T_CHECK(err == NULL);
	if (v == NULL)
		goto out;
	T_EQ_STR(v->o.name, "nameValue");
	T_EQ_STR(v->o.ns, "namespaceValue");
	T_EQ_STR(v->o.uid, "uidValue");
	T_CHECK(v->o.src == src);
	T_EQ_INT(v->o.created, fixture_ts("2008-01-01T01:01:01Z"));
	T_EQ_INT(v->o.deleted, fixture_ts("2009-01-01T01:01:01Z"));
	T_EQ_INT(v->o.generation, 7);
	T_EQ_INT(v->o.rv, 0); /* "resourceVersionValue" is not numeric */
	T_EQ_STR(obj_label(&v->o, "labelsKey"), "labelsValue");
	/* both spec.running and spec.runStrategy: decoded, runStrategy kept, flagged */
	T_EQ_STR(v->run_strategy, "runStrategyValue");
	T_CHECK(v->running_field);
	T_CHECK(v->run_conflict);
	T_EQ_STR(v->printable_status, "printableStatusValue");
	T_CHECK(v->ready);
	T_CHECK(v->created_vmi);
	T_EQ_INT(v->nconds, 1);
	if (v->nconds == 1) {
		T_EQ_STR(v->conds[0].type, "typeValue");
		/* a status is True, False or Unknown (the API allows no other): any other text reads as Unknown */
		T_EQ_INT(v->conds[0].stat, COND_UNKNOWN);
		T_EQ_STR(cond_status(&v->conds[0]), "Unknown");
		T_EQ_STR(v->conds[0].reason, "reasonValue");
		T_EQ_STR(v->conds[0].message, "messageValue");
		T_EQ_INT(v->conds[0].last_transition, fixture_ts("1982-01-01T01:01:01Z"));
	}
	T_EQ_INT(v->nscr, 1);
	if (v->nscr == 1) {
		T_EQ_STR(v->scr[0].action, "actionValue");
		T_EQ_STR(v->scr[0].uid, "uidValue");
	}
	T_CHECK(v->sf != NULL);
	T_EQ_INT(vm_start_failure(v)->failures, 0); /* -20 clamps to 0 */
	T_EQ_INT(vm_start_failure(v)->retry_after, fixture_ts("1981-01-01T01:01:01Z"));
	T_EQ_STR(vm_start_failure(v)->vmi, "lastFailedVMIUIDValue");
	T_EQ_STR(v->instancetype, "nameValue");
	T_EQ_INT(v->observed_generation, 0); /* negative in the fixture: clamped */
	/* interning: the same word decodes to the same pointer */
	struct vm *v2 = (struct vm *)kube_decode(OBJ_VM, j, src, NULL);
	T_CHECK(v2 && v2->printable_status == v->printable_status && v2->o.ns == v->o.ns);
	obj_free(&v2->o);
	/* get -o name's store object: the identity, nothing of the kind, no labels */
	struct vm *id = (struct vm *)obj_pack_identity(&v->o);
	T_EQ_STR(id->o.name, "nameValue");
	T_EQ_STR(id->o.ns, "namespaceValue");
	T_EQ_STR(id->o.uid, "uidValue");
	T_CHECK(id->o.src == src && id->o.kind == OBJ_VM && (id->o.flags & OBJ_F_PACKED));
	T_EQ_INT(id->o.created, fixture_ts("2008-01-01T01:01:01Z"));
	T_CHECK(id->o.labels == NULL && id->run_strategy == NULL && id->nconds == 0 && id->conds == NULL &&
		id->instancetype == NULL && id->memory == NULL);
	obj_free(&id->o);
out:
	obj_free(&v->o);
	json_object_put(j);
}

/* kvcon's engine service (model/objjson.c) serves each address's interface and the ports it forwards; the kube
 * decoder reads them back (the dashboard's VM view and `engine get vmi` show them through the service), only from an
 * interface the domain reports (infoSource "domain"), and only valid ports. */
static void test_vmi_engine_ports(void)
{
	struct json_object *j = json_tokener_parse(
		"{\"metadata\":{\"name\":\"web\",\"namespace\":\"default\",\"uid\":\"0b3c7a52-5d0e-4f55-9d8e-2b7e3f1f0a11\"},"
		"\"status\":{\"phase\":\"Running\",\"interfaces\":["
		"{\"name\":\"default\",\"ipAddress\":\"10.0.2.15\",\"ipAddresses\":[\"10.0.2.15\"],\"infoSource\":\"domain\","
		"\"forwardedPorts\":[{\"name\":\"http\",\"port\":80,\"protocol\":\"TCP\",\"hostIP\":\"127.0.0.1\",\"hostPort\":8080},"
		"{\"port\":0,\"protocol\":\"TCP\",\"hostPort\":1},{\"port\":22,\"protocol\":\"SCTP\",\"hostPort\":2222},"
		"{\"port\":53,\"protocol\":\"UDP\",\"hostPort\":0}]},"
		"{\"name\":\"ga\",\"ipAddress\":\"10.1.1.1\",\"infoSource\":\"guest-agent\","
		"\"forwardedPorts\":[{\"port\":1,\"protocol\":\"TCP\",\"hostPort\":2}]}]}}");
	T_CHECK(j != NULL);
	struct vmi *v = j ? (struct vmi *)kube_decode(OBJ_VMI, j, src, NULL) : NULL;
	T_CHECK(v != NULL);
	if (v == NULL) {
		json_object_put(j);
		return;
	}
	T_EQ_INT(v->nips, 2);
	const struct vmi_net *net = vmi_net(v);
	T_CHECK(v->net != NULL);
	T_CHECK(net->ip_ifaces != NULL);
	if (net->ip_ifaces && v->nips == 2) {
		T_EQ_STR(net->ip_ifaces[0], "default");
		T_CHECK(net->ip_ifaces[1] == NULL); /* a guest agent's interface: a cluster's, no name kept */
	}
	T_EQ_INT(net->nfwds, 1);
	if (net->nfwds == 1) {
		T_EQ_STR(net->fwds[0].iface, "default");
		T_EQ_STR(net->fwds[0].name, "http");
		T_EQ_STR(net->fwds[0].proto, "TCP");
		T_EQ_INT(net->fwds[0].port, 80);
		T_EQ_INT(net->fwds[0].host_port, 8080);
	}
	obj_free(&v->o);
	json_object_put(j);
}

static void test_vmi_roundtrip(void)
{
	struct json_object *j = fixture_json("roundtrip-VirtualMachineInstance.json");
	T_CHECK(j != NULL);
	struct vmi *v = (struct vmi *)kube_decode(OBJ_VMI, j, src, NULL);
	T_CHECK(v != NULL);
	if (v == NULL)
		goto out;
	T_EQ_STR(v->o.name, "nameValue");
	T_EQ_STR(v->phase, "phaseValue");
	T_EQ_STR(v->reason, "reasonValue");
	T_EQ_STR(v->node, "nodeNameValue");
	T_EQ_STR(v->ip, "ipAddressValue");
	T_EQ_INT(v->nips, 2);
	if (v->nips == 2) {
		T_EQ_STR(v->ips[0], "ipAddressValue");
		T_EQ_STR(v->ips[1], "ipAddressesValue");
		T_CHECK(v->ip == v->ips[0]); /* packed: the same bytes */
		T_CHECK(v->net == NULL); /* no engine's view of the network: nothing allocated */
	}
	T_EQ_INT(v->nconds, 1);
	T_EQ_INT(v->nphases, 1);
	if (v->nphases == 1) {
		T_EQ_STR(v->phases[0].phase, "phaseValue");
		T_EQ_INT(v->phases[0].at, fixture_ts("1976-01-01T01:01:01Z"));
	}
	T_EQ_STR(v->guest_os, "prettyNameValue");
	T_EQ_INT(v->nactive, 1);
	if (v->nactive == 1) {
		T_EQ_STR(v->active[0].uid, "activePodsKey");
		T_EQ_STR(v->active[0].node, "activePodsValue");
	}
	T_CHECK(vmi_mig(v)->present);
	T_EQ_STR(vmi_mig(v)->source_node, "sourceNodeValue");
	T_EQ_STR(vmi_mig(v)->target_node, "targetNodeValue");
	T_EQ_STR(vmi_mig(v)->source_pod, "sourcePodValue");
	T_EQ_STR(vmi_mig(v)->target_pod, "targetPodValue");
	T_EQ_STR(vmi_mig(v)->migration_uid, "migrationUidValue");
	T_CHECK(vmi_mig(v)->completed && vmi_mig(v)->failed && vmi_mig(v)->abort_requested);
	T_EQ_STR(vmi_mig(v)->abort_status, "abortStatusValue");
	T_EQ_STR(vmi_mig(v)->mode, "modeValue");
	T_EQ_STR(vmi_mig(v)->failure_reason, "failureReasonValue");
	T_EQ_INT(vmi_mig(v)->start, fixture_ts("1986-01-01T01:01:01Z"));
	T_EQ_INT(vmi_mig(v)->end, fixture_ts("1988-01-01T01:01:01Z"));
	T_EQ_INT(vmi_mig(v)->progress_pct, -1);
	T_EQ_STR(v->eviction, "evictionStrategyValue");
	/* the fixture's owner is kind "kindValue": not a VM */
	T_EQ_STR(v->vm_uid, "");
out:
	obj_free(&v->o);
	json_object_put(j);
}

static void test_pod(void)
{
	struct json_object *j = fixture_json("pod-launcher.json");
	struct pod *p = (struct pod *)kube_decode(OBJ_POD, j, src, NULL);
	T_CHECK(p != NULL);
	if (p == NULL)
		goto out;
	T_EQ_STR(p->o.name, "virt-launcher-testvm-abcde");
	T_EQ_INT(p->o.rv, 123456);
	T_EQ_STR(p->vmi_uid, "0f0e0d0c-0b0a-4909-8807-060504030201");
	T_EQ_STR(pod_created_by(p), "0f0e0d0c-0b0a-4909-8807-060504030201");
	T_CHECK(p->owner_kind_other == NULL);
	T_EQ_STR(p->vm_name, "testvm");
	T_EQ_STR(p->phase, "Running");
	T_EQ_STR(p->node, "node-1");
	T_EQ_STR(p->ip, "10.244.1.17");
	T_EQ_INT(p->nconds, 4);
	T_CHECK(cond_is_true(p->conds, p->nconds, "Ready"));
	T_EQ_STR(cond_status(cond_find(p->conds, p->nconds, "Ready")), "True");
	/* the statuses as bytes: the three texts the API allows, unset without one */
	T_EQ_INT(cond_status_of("True"), COND_TRUE);
	T_EQ_INT(cond_status_of("False"), COND_FALSE);
	T_EQ_INT(cond_status_of("Unknown"), COND_UNKNOWN);
	T_EQ_INT(cond_status_of(NULL), COND_UNSET);
	for (int s = COND_UNSET; s <= COND_UNKNOWN; s++) {
		struct cond c = { .stat = (uint8_t)s };
		T_EQ_INT(cond_status_of(cond_status(&c)), s);
	}
	T_EQ_INT(p->ncontainers, 3);
	if (p->ncontainers == 3) {
		T_CHECK(p->containers[0].init);
		T_EQ_STR(p->containers[0].state, "terminated");
		T_EQ_STR(p->containers[0].reason, "Completed");
		T_EQ_STR(p->containers[1].name, "compute");
		T_EQ_STR(p->containers[1].state, "running");
		T_EQ_INT(p->containers[1].restarts, 2);
		T_EQ_STR(p->containers[1].last_reason, "OOMKilled");
		T_EQ_INT(p->containers[1].last_exit_code, 137);
		T_EQ_INT(p->containers[1].started, fixture_ts("2024-05-01T10:00:08Z"));
		T_EQ_STR(p->containers[2].state, "waiting");
		T_EQ_STR(p->containers[2].reason, "ImagePullBackOff");
		T_EQ_STR(p->containers[2].message, "Back-off pulling image \"quay.io/x/y:latest\"");
	}
	T_EQ_INT(p->restarts, 3);
	T_EQ_INT(p->ready_containers, 1);
out:
	obj_free(&p->o);
	json_object_put(j);
}

/* The labels of o as "k=v;" pairs, in order. */
static char *labels_text(const struct obj *o)
{
	struct buf b = { 0 };
	for (const char *it = NULL, *k, *v; obj_label_next(o, &it, &k, &v);)
		buf_printf(&b, "%s=%s;", k, v);
	return buf_steal(&b);
}

/* Packing re-encodes labels with references (to the name, the owner's UID, an earlier value): read back, they
 * are the same pairs in the same order, also when a packed object is packed again; a pod's vm_name taken from
 * its labels follows them into the block. */
static void test_packed_labels(void)
{
	struct pod *p = (struct pod *)obj_new(OBJ_POD);
	p->o.src = src;
	p->o.name = xstrdup("virt-launcher-testvm-abcde");
	snprintf(p->o.uid, sizeof p->o.uid, "%s", "11111111-2222-4333-8444-555555555555");
	snprintf(p->vmi_uid, sizeof p->vmi_uid, "%s", "0f0e0d0c-0b0a-4909-8807-060504030201");
	obj_label_add(&p->o, "kubevirt.io", "virt-launcher");
	obj_label_add(&p->o, "kubevirt.io/created-by", p->vmi_uid);
	obj_label_add(&p->o, "vm.kubevirt.io/name", "testvm");
	obj_label_add(&p->o, "kubevirt.io/domain", "testvm");
	obj_label_add(&p->o, "kubevirt.io/vm", "testvm");
	obj_label_add(&p->o, "self", "virt-launcher-testvm-abcde");
	obj_label_add(&p->o, "short", "ab");
	obj_label_add(&p->o, "short2", "ab");
	obj_label_add(&p->o, "empty", "");
	obj_label_add(&p->o, "flag", "true");
	obj_label_add(&p->o, "odd1", "\x01\x03x");
	obj_label_add(&p->o, "odd2", "\x02y");
	obj_label_add(&p->o, "odd3", "\x01\x03x");
	for (int i = 0; i < 300; i++) { /* past the entries a reference can name */
		char k[16];
		snprintf(k, sizeof k, "k%d", i);
		obj_label_add(&p->o, k, i % 2 ? "testvm" : "same-value");
	}
	p->vm_name = obj_label(&p->o, "vm.kubevirt.io/name");
	char *want = labels_text(&p->o);
	struct pod *a = (struct pod *)obj_pack_copy(&p->o);
	struct pod *b = (struct pod *)obj_pack_copy(&a->o);
	char *got_a = labels_text(&a->o), *got_b = labels_text(&b->o);
	T_EQ_STR(got_a, want);
	T_EQ_STR(got_b, want);
	T_EQ_STR(pod_created_by(a), "0f0e0d0c-0b0a-4909-8807-060504030201");
	T_EQ_STR(obj_label(&b->o, "kubevirt.io/vm"), "testvm");
	T_EQ_STR(obj_label(&b->o, "odd3"), "\x01\x03x");
	T_EQ_STR(a->vm_name, "testvm");
	T_EQ_STR(b->vm_name, "testvm");
	uintptr_t at = (uintptr_t)b->vm_name, lo = (uintptr_t)b, hi = lo + malloc_usable_size(b);
	T_CHECK(at > lo && at < hi);
	T_CHECK(obj_heap_size(&a->o) < obj_heap_size(&p->o));
	free(want);
	free(got_a);
	free(got_b);
	obj_free(&b->o);
	obj_free(&a->o);
	obj_free(&p->o);
}

/* A packed event's involved name shares the message's tail when the message ends with it. */
static void test_packed_event(void)
{
	static const char *const msgs[] = {
		"Started the virtual machine by creating the new virtual machine instance vm1",
		"VirtualMachineInstance started.", "vm1", "m", NULL,
	};
	for (int i = 0; i < 5; i++) {
		struct event *e = (struct event *)obj_new(OBJ_EVENT);
		e->o.name = xstrdup("vm1.17f0");
		e->message = msgs[i] ? xstrdup(msgs[i]) : NULL;
		e->inv_name = xstrdup("vm1");
		struct event *p = (struct event *)obj_pack_copy(&e->o);
		T_EQ_STR(p->inv_name, "vm1");
		T_EQ_STR(p->message ? p->message : "(null)", msgs[i] ? msgs[i] : "(null)");
		bool tail = p->message && strlen(p->message) >= 3 && p->inv_name == p->message + strlen(p->message) - 3;
		T_CHECK(tail == (i == 0 || i == 2));
		obj_free(&p->o);
		obj_free(&e->o);
	}
}

static void test_pod_owner_other(void)
{
	struct pod *p = (struct pod *)fixture_decode(src,
		OBJ_POD,
		"{\"metadata\":{\"name\":\"virt-launcher-x\",\"namespace\":\"ns\",\"uid\":\"p1\","
		"\"labels\":{\"kubevirt.io/created-by\":\"vmi-1\"},"
		"\"ownerReferences\":[{\"kind\":\"VirtualMachineInstance\",\"uid\":\"vmi-9\"},"
		"{\"kind\":\"ReplicaSet\",\"uid\":\"rs\",\"controller\":true}]}}",
		NULL);
	T_CHECK(p != NULL);
	if (p) {
		T_EQ_STR(p->vmi_uid, ""); /* the controller is a ReplicaSet */
		T_EQ_STR(p->owner_kind_other, "ReplicaSet");
		T_EQ_STR(pod_created_by(p), "vmi-1");
		T_EQ_STR(p->phase, "");
	}
	obj_free(&p->o);
	/* a created-by label that is not a UID (an escape sequence, too long) reads as none */
	const char *bad[] = { "\\u001b[2J", "0f0e0d0c-0b0a-4909-8807-0605040302010", "a b" };
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		char *json = xasprintf("{\"metadata\":{\"name\":\"l\",\"namespace\":\"ns\",\"uid\":\"p2\","
				       "\"labels\":{\"kubevirt.io/created-by\":\"%s\"}}}",
				       bad[i]);
		p = (struct pod *)fixture_decode(src, OBJ_POD, json, NULL);
		T_CHECK(p != NULL && strcmp(pod_created_by(p), "") == 0);
		if (p)
			obj_free(&p->o);
		free(json);
	}
}

static void test_events(void)
{
	struct json_object *j = fixture_json("event-core.json");
	struct event *e = (struct event *)kube_decode(OBJ_EVENT, j, src, NULL);
	T_CHECK(e != NULL);
	if (e) {
		T_EQ_STR(e->inv_kind, "Pod");
		T_EQ_STR(e->inv_name, "virt-launcher-testvm-abcde");
		T_EQ_STR(e->inv_ns, "default");
		T_EQ_STR(e->inv_uid, "6a1d6a4e-1b7e-4c5c-9a1e-2d3f4a5b6c7d");
		T_EQ_STR(e->reason, "FailedScheduling");
		T_EQ_STR(e->type, "Warning");
		T_EQ_STR(e->component, "default-scheduler");
		T_EQ_INT(e->count, 7);
		T_EQ_INT(e->first, fixture_ts("2024-05-01T10:00:01Z"));
		T_EQ_INT(e->last, fixture_ts("2024-05-01T10:05:01Z"));
		T_CHECK(strstr(e->message, "Insufficient devices.kubevirt.io/kvm") != NULL);
	}
	obj_free(&e->o);
	json_object_put(j);

	j = fixture_json("event-series.json");
	e = (struct event *)kube_decode(OBJ_EVENT, j, src, NULL);
	T_CHECK(e != NULL);
	if (e) {
		T_EQ_STR(e->component, "virtualmachine-controller");
		T_EQ_INT(e->count, 3);
		T_EQ_INT(e->first, fixture_ts("2024-05-01T10:00:00Z"));
		T_EQ_INT(e->last, fixture_ts("2024-05-01T10:02:00Z"));
		T_EQ_STR(e->inv_kind, "VirtualMachineInstance");
	}
	obj_free(&e->o);
	json_object_put(j);
}

static void test_running_mapping(void)
{
	struct vm *v = (struct vm *)fixture_decode(src,
		OBJ_VM, "{\"metadata\":{\"name\":\"a\",\"namespace\":\"n\",\"uid\":\"u\"},\"spec\":{\"running\":true}}",
		NULL);
	T_CHECK(v && strcmp(v->run_strategy, "Always") == 0 && v->running_field && !v->run_conflict);
	obj_free(&v->o);
	v = (struct vm *)fixture_decode(src,
		OBJ_VM, "{\"metadata\":{\"name\":\"a\",\"namespace\":\"n\",\"uid\":\"u\"},\"spec\":{\"running\":false}}",
		NULL);
	T_CHECK(v && strcmp(v->run_strategy, "Halted") == 0);
	obj_free(&v->o);
	v = (struct vm *)fixture_decode(src, OBJ_VM, "{\"metadata\":{\"name\":\"a\",\"namespace\":\"n\",\"uid\":\"u\"}}", NULL);
	T_CHECK(v && strcmp(v->run_strategy, "Halted") == 0 && !v->running_field);
	obj_free(&v->o);
	v = (struct vm *)fixture_decode(src, OBJ_VM,
				    "{\"metadata\":{\"name\":\"a\",\"namespace\":\"n\",\"uid\":\"u\"},"
				    "\"spec\":{\"runStrategy\":\"Manual\",\"template\":{\"spec\":{\"domain\":{"
				    "\"cpu\":{\"cores\":2},\"resources\":{\"requests\":{\"memory\":\"256Mi\"}}}}}}}",
				    NULL);
	T_CHECK(v && strcmp(v->run_strategy, "Manual") == 0 && !v->running_field);
	T_EQ_INT(v ? v->cpu_cores : -1, 2);
	T_EQ_STR(v ? v->memory : NULL, "256Mi");
	obj_free(&v->o);
}

/* Refused objects: NULL and a reason naming what is missing. */
static void test_refused(void)
{
	static const struct {
		const char *json;
		const char *why; /* substring of the reason */
	} cases[] = {
		{ "[]", "not a JSON object" },
		{ "42", "not a JSON object" },
		{ "{}", "without metadata" },
		{ "{\"metadata\":[]}", "without metadata" },
		{ "{\"metadata\":{\"uid\":\"u\"}}", "without metadata.name" },
		{ "{\"metadata\":{\"name\":\"\",\"uid\":\"u\"}}", "without metadata.name" },
		{ "{\"metadata\":{\"name\":5,\"uid\":\"u\"}}", "without metadata.name" },
		{ "{\"metadata\":{\"name\":\"a\"}}", "without metadata.uid" },
		{ "{\"metadata\":{\"name\":\"a\",\"uid\":null}}", "without metadata.uid" },
		{ "{\"metadata\":{\"name\":\"a\",\"uid\":\"0123456789012345678901234567890123456789\"}}", "uid longer" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char *err = NULL;
		struct obj *o = fixture_decode(src, OBJ_VMI, cases[i].json, &err);
		T_CHECK(o == NULL);
		T_CHECK(err != NULL && strstr(err, cases[i].why) != NULL);
		if (err && !strstr(err, cases[i].why))
			fprintf(stderr, "  case %zu: %s\n", i, err);
		free(err);
		obj_free(o);
	}
	/* err may be NULL */
	T_CHECK(fixture_decode(src, OBJ_POD, "{}", NULL) == NULL);
	T_CHECK(kube_decode(OBJ_POD, NULL, src, NULL) == NULL);
}

/* Huge strings: names refused, messages and words capped (at a UTF-8 boundary), lists capped. */
static void test_huge(void)
{
	struct buf b;
	buf_init(&b);
	char *longname = xmalloc(300);
	memset(longname, 'a', 299);
	longname[299] = '\0';
	buf_printf(&b, "{\"metadata\":{\"name\":\"%s\",\"uid\":\"u\"}}", longname);
	char *err = NULL;
	T_CHECK(fixture_decode(src, OBJ_VM, b.data, &err) == NULL);
	T_CHECK(err && strstr(err, "longer than 253"));
	free(err);
	free(longname);

	/* a 100 KiB message of 3-byte characters, a 1000-char reason, 1000 conditions */
	buf_reset(&b);
	buf_add_str(&b, "{\"metadata\":{\"name\":\"a\",\"namespace\":\"n\",\"uid\":\"u\"},\"status\":{\"conditions\":[");
	for (int i = 0; i < 1000; i++) {
		buf_printf(&b, "%s{\"type\":\"T%d\",\"status\":\"True\",\"reason\":\"", i ? "," : "", i);
		if (i == 0) {
			for (int k = 0; k < 1000; k++)
				buf_add_char(&b, 'R');
			buf_add_str(&b, "\",\"message\":\"");
			for (int k = 0; k < 34000; k++)
				buf_add_str(&b, "\xe2\x82\xac"); /* U+20AC */
		}
		buf_add_str(&b, "\"}");
	}
	buf_add_str(&b, "]}}");
	struct vm *v = (struct vm *)fixture_decode(src, OBJ_VM, b.data, NULL);
	T_CHECK(v != NULL);
	if (v) {
		T_EQ_INT(v->nconds, KUBE_DECODE_LIST_MAX);
		T_EQ_INT(strlen(v->conds[0].reason), KUBE_DECODE_WORD_MAX);
		size_t ml = strlen(v->conds[0].message);
		T_CHECK(ml <= KUBE_DECODE_MSG_MAX && ml > KUBE_DECODE_MSG_MAX - 3);
		T_EQ_INT(ml % 3, 0); /* not cut inside a character */
		T_CHECK(obj_heap_size(&v->o) < 64 * 1024);
	}
	obj_free(&v->o);
	buf_free(&b);
}

/* Wrong types everywhere: every field read as absent, the object still decodes. */
static void test_wrong_types(void)
{
	static const char *const docs[] = {
		"{\"metadata\":{\"name\":\"a\",\"uid\":\"u\",\"namespace\":7,\"labels\":[1],\"generation\":\"x\","
		"\"creationTimestamp\":5,\"ownerReferences\":{}},\"spec\":[],\"status\":\"Running\"}",
		"{\"metadata\":{\"name\":\"a\",\"uid\":\"u\",\"labels\":{\"k\":1,\"x=y\":\"v\",\"ok\":\"v\"},"
		"\"ownerReferences\":[1,null,{\"kind\":5,\"controller\":\"yes\"}]},"
		"\"spec\":{\"running\":\"true\",\"runStrategy\":3,\"nodeName\":{}},"
		"\"status\":{\"phase\":[\"Running\"],\"conditions\":{\"type\":\"Ready\"},\"interfaces\":[null,3,{}],"
		"\"phaseTransitionTimestamps\":[{\"phase\":1}],\"activePods\":{\"p\":3},\"migrationState\":[],"
		"\"containerStatuses\":[1,{\"state\":[]},{\"state\":{\"waiting\":\"x\"}}],\"stateChangeRequests\":[{}],"
		"\"startFailure\":{\"consecutiveFailCount\":\"9\"},\"guestOSInfo\":{\"name\":1}},"
		"\"involvedObject\":\"x\",\"count\":1e300,\"series\":[],\"eventTime\":\"yesterday\"}",
		"{\"metadata\":{\"name\":\"a\",\"uid\":\"u\",\"creationTimestamp\":\"2024-13-45T99:99:99Z\"},"
		"\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":true,\"lastTransitionTime\":\"\"}]}}",
	};
	for (size_t i = 0; i < sizeof docs / sizeof docs[0]; i++) {
		for (int k = 0; k < OBJ_KIND_COUNT; k++) {
			char *err = NULL;
			struct obj *o = fixture_decode(src, (enum obj_kind)k, docs[i], &err);
			T_CHECK(o != NULL);
			if (o == NULL)
				fprintf(stderr, "  doc %zu kind %d: %s\n", i, k, err ? err : "?");
			free(err);
			if (o && i == 1) {
				T_EQ_STR(obj_label(o, "ok"), "v");
				T_CHECK(obj_label(o, "k") == NULL);
				T_CHECK(obj_label(o, "x") == NULL);
			}
			if (o && i == 0)
				T_EQ_STR(o->ns, "");
			if (o && k == OBJ_VM && i == 1)
				T_EQ_STR(((struct vm *)o)->run_strategy, "Halted");
			if (o && k == OBJ_VMI && i == 1) {
				struct vmi *v = (struct vmi *)o;
				T_EQ_STR(v->phase, "");
				T_EQ_INT(v->nconds, 0);
				T_EQ_INT(v->nips, 0);
				T_CHECK(!vmi_mig(v)->present);
			}
			if (o && k == OBJ_POD && i == 1)
				T_EQ_INT(((struct pod *)o)->ncontainers, 2);
			if (o && k == OBJ_EVENT && i == 1)
				T_EQ_INT(((struct event *)o)->count, 1);
			if (o && k == OBJ_VM && i == 2) {
				struct vm *v = (struct vm *)o;
				T_EQ_INT(v->o.created, 0);
				T_EQ_INT(v->nconds, 1);
				T_CHECK(v->nconds == 1 && cond_status(&v->conds[0]) == NULL &&
					v->conds[0].last_transition == 0);
			}
			obj_free(o);
		}
	}
}

static void test_rv(void)
{
	static const struct {
		const char *json;
		int rc;
		uint64_t rv;
	} cases[] = {
		{ "{\"metadata\":{\"resourceVersion\":\"12345\"}}", 0, 12345 },
		{ "{\"metadata\":{\"resourceVersion\":\"18446744073709551615\"}}", -1, 0 }, /* 20 digits: refused */
		{ "{\"metadata\":{\"resourceVersion\":\"1234567890123456789\"}}", 0, 1234567890123456789ull },
		{ "{\"metadata\":{\"resourceVersion\":\"12a\"}}", -1, 0 },
		{ "{\"metadata\":{\"resourceVersion\":12}}", -1, 0 },
		{ "{\"metadata\":{\"resourceVersion\":\"\"}}", -1, 0 },
		{ "{\"kind\":\"List\"}", -1, 0 },
		{ "[]", -1, 0 },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct json_object *j = json_tokener_parse(cases[i].json);
		uint64_t rv = 0;
		int rc = kube_decode_rv(j, &rv);
		T_EQ_INT(rc, cases[i].rc);
		if (rc == 0)
			T_EQ_INT(rv, cases[i].rv);
		json_object_put(j);
	}
}

int main(void)
{
	src = source_new(SOURCE_KUBE, "test");
	test_vm_roundtrip();
	test_vmi_roundtrip();
	test_vmi_engine_ports();
	test_pod();
	test_packed_labels();
	test_packed_event();
	test_pod_owner_other();
	test_events();
	test_running_mapping();
	test_refused();
	test_huge();
	test_wrong_types();
	test_rv();
	source_free_all();
	return T_DONE();
}
