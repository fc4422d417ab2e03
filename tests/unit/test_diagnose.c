/* Unit tests of the chain join and the diagnosis rules. Table-driven over the JSON files of tests/fixtures/diagnose
 * (written by gen.py there): each fixture's objects are decoded into a store, the chain is built and diagnosed
 * at the fixture's "now", and exactly the expected rules must fire, with the expected verdict per boundary and
 * exit code. Every rule of the table must have a fixture named after it in which it alone fires. */
#include <dirent.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/intern.h"
#include "core/util.h"
#include "core/xmalloc.h"
#include "kube/decode.h"
#include "model/chain.h"
#include "model/diagnose.h"
#include "t.h"

#define DIR_FIX "tests/fixtures/diagnose"

static struct source *src, *engine_src;

static enum obj_kind kind_of(const char *k)
{
	if (strcmp(k, "VirtualMachine") == 0)
		return OBJ_VM;
	if (strcmp(k, "VirtualMachineInstance") == 0)
		return OBJ_VMI;
	if (strcmp(k, "Pod") == 0)
		return OBJ_POD;
	return OBJ_EVENT;
}

struct loaded {
	struct json_object *doc;
	struct store *st;
	struct chain *chain;
	struct diag *diag;
};

/* chain_build and chain_build_ix give the same chain. */
static bool same_chain(const struct chain *a, const struct chain *b)
{
	if (a->vm != b->vm || a->vmi != b->vmi || a->vmi_foreign != b->vmi_foreign || a->active != b->active ||
	    a->npods != b->npods || a->nstray != b->nstray || a->nevents != b->nevents)
		return false;
	for (size_t i = 0; i < a->npods; i++)
		if (a->pods[i] != b->pods[i])
			return false;
	for (size_t i = 0; i < a->nstray; i++)
		if (a->stray[i] != b->stray[i])
			return false;
	for (size_t i = 0; i < a->nevents; i++)
		if (a->events[i] != b->events[i])
			return false;
	return true;
}

static int load_fixture(const char *name, struct source *s, struct loaded *l)
{
	char *path = xasprintf("%s/%s", DIR_FIX, name);
	memset(l, 0, sizeof *l);
	l->doc = json_object_from_file(path);
	free(path);
	if (l->doc == NULL)
		return -1;
	l->st = store_new();
	struct json_object *items = json_object_object_get(l->doc, "items");
	for (size_t i = 0; i < json_object_array_length(items); i++) {
		struct json_object *it = json_object_array_get_idx(items, i);
		char *err = NULL;
		struct obj *o = kube_decode(kind_of(json_object_get_string(json_object_object_get(it, "kind"))), it, s,
					    &err);
		T_CHECK(o != NULL);
		if (o)
			store_upsert(l->st, o);
		free(err);
	}
	int64_t now = 0;
	util_parse_time(json_object_get_string(json_object_object_get(l->doc, "now")), &now);
	char *ns, *nm;
	chain_parse_ref(json_object_get_string(json_object_object_get(l->doc, "ref")), NULL, &ns, &nm);
	l->chain = chain_build(l->st, s, ns, nm);
	free(ns);
	free(nm);
	if (l->chain == NULL)
		return -1;
	l->diag = diag_run_storage(l->chain, json_object_object_get(l->doc, "storage"), now);
	/* every evidence line once per finding (issue 25: printableStatus was quoted twice) */
	for (size_t f = 0; l->diag && f < l->diag->nfindings; f++)
		for (size_t i = 0; i < l->diag->findings[f].nev; i++)
			for (size_t j = i + 1; j < l->diag->findings[f].nev; j++)
				T_CHECK(strcmp(l->diag->findings[f].ev[i].text, l->diag->findings[f].ev[j].text) != 0);
	struct chain_index *ix = chain_index_new(l->st);
	struct chain *c2 = chain_build_ix(ix, s, l->chain->ns, l->chain->name);
	T_CHECK(c2 && same_chain(l->chain, c2));
	chain_free(c2);
	chain_index_free(ix);
	return 0;
}

static void unload(struct loaded *l)
{
	diag_free(l->diag);
	chain_free(l->chain);
	store_free(l->st);
	json_object_put(l->doc);
}

/* Checks one fixture: exactly the expected rules fired, the verdicts and the exit code. */
static void check_fixture(const char *file)
{
	struct loaded l;
	if (load_fixture(file, src, &l) < 0) {
		T_CHECK(!"fixture loads and has a chain");
		fprintf(stderr, "  fixture %s\n", file);
		return;
	}
	struct json_object *expect = json_object_object_get(l.doc, "expect");
	size_t nexp = json_object_array_length(expect);
	bool ok = l.diag->nfindings == nexp;
	for (size_t i = 0; ok && i < nexp; i++)
		ok = diag_find(l.diag, json_object_get_string(json_object_array_get_idx(expect, i))) != NULL;
	T_CHECK(ok);
	struct json_object *verdicts = json_object_object_get(l.doc, "verdicts");
	for (int b = 0; b < DIAG_NBOUNDARY; b++) {
		const char *want = json_object_get_string(json_object_array_get_idx(verdicts, (size_t)b));
		if (strcmp(want, diag_verdict_name(l.diag->verdict[b])) != 0) {
			ok = false;
			T_EQ_STR(diag_verdict_name(l.diag->verdict[b]), want);
		}
	}
	int want_exit = json_object_get_int(json_object_object_get(l.doc, "exit"));
	T_EQ_INT(diag_exit_code(l.diag), want_exit);
	/* every finding quotes evidence and names a command; a headline never says "?" for what it does not know
	 * (issue 25: "is scheduled on ? but its containers are not running yet" above "not scheduled") */
	for (size_t i = 0; i < l.diag->nfindings; i++) {
		T_CHECK(l.diag->findings[i].nev > 0);
		T_CHECK(l.diag->findings[i].cmd[0] != '\0');
		T_CHECK(strchr(l.diag->findings[i].summary, '{') == NULL);
		if (strstr(l.diag->findings[i].summary, " ?") != NULL) {
			ok = false;
			T_CHECK(!"a headline with an unknown ?");
		}
	}
	/* the headline names the cause and the object */
	struct json_object *want_sum = json_object_object_get(l.doc, "summary");
	int fi = l.diag->first_stalled >= 0 ? l.diag->decided_by[l.diag->first_stalled]
		 : l.diag->nfindings > 0 ? 0 : -1;
	for (size_t i = 0; want_sum && i < json_object_array_length(want_sum); i++) {
		const char *w = json_object_get_string(json_object_array_get_idx(want_sum, i));
		if (fi < 0 || strstr(l.diag->findings[fi].summary, w) == NULL) {
			ok = false;
			T_CHECK(!"the headline names the cause");
			fprintf(stderr, "  headline lacks \"%s\"\n", w);
		}
	}
	if (!ok || diag_exit_code(l.diag) != want_exit) {
		struct buf b;
		buf_init(&b);
		diag_format_text(l.diag, l.chain, &b);
		fprintf(stderr, "  fixture %s:\n%s\n", file, b.data);
		buf_free(&b);
	}
	unload(&l);
}

static void test_all_fixtures(void)
{
	DIR *d = opendir(DIR_FIX);
	T_CHECK(d != NULL);
	int n = 0;
	for (struct dirent *e; d && (e = readdir(d));) {
		size_t len = strlen(e->d_name);
		if (len < 6 || strcmp(e->d_name + len - 5, ".json") != 0)
			continue;
		check_fixture(e->d_name);
		n++;
	}
	if (d)
		closedir(d);
	T_CHECK(n >= 40);
}

/* Every rule has a fixture named after it in which it, and only it, fires. */
static void test_rule_coverage(void)
{
	size_t n;
	const struct diag_rule *r = diag_rules(&n);
	T_CHECK(n >= 35);
	for (size_t i = 0; i < n; i++) {
		char *file = xasprintf("%s.json", r[i].id);
		struct loaded l;
		int rc = load_fixture(file, src, &l);
		T_CHECK(rc == 0);
		if (rc == 0) {
			T_EQ_INT(l.diag->nfindings, 1);
			T_CHECK(diag_find(l.diag, r[i].id) != NULL);
			/* the rule's own row sits where the table says */
			T_CHECK(r[i].kind == DIAG_NOTE || l.diag->decided_by[r[i].boundary] >= 0);
		} else {
			fprintf(stderr, "  no fixture for rule %s\n", r[i].id);
		}
		unload(&l);
		free(file);
		for (size_t k = 0; k < i; k++)
			T_CHECK(strcmp(r[k].id, r[i].id) != 0);
	}
}

/* Each of KubeVirt 1.x's 17 printableStatus values is explained by a rule keyed on it (diag_rule.status), and its
 * fixture status-S.json (fakekube's scenario of that status) is decided by that rule with a headline that names
 * the object; the waiting ones are "waiting", not "failed". */
static void test_every_status(void)
{
	static const struct {
		const char *status;
		const char *verdict; /* of the first stalled boundary; NULL: nothing stalled */
	} want[] = {
		{ "Stopped", NULL },
		{ "Provisioning", "waiting" },
		{ "Starting", "waiting" },
		{ "Running", NULL },
		{ "Paused", NULL },
		{ "Stopping", "failed" }, /* its VMI's deletion began ten minutes ago */
		{ "Terminating", "failed" }, /* deleted ten minutes ago */
		{ "CrashLoopBackOff", "failed" },
		{ "Migrating", NULL },
		{ "Unknown", "failed" },
		{ "ErrorUnschedulable", "failed" },
		{ "ErrImagePull", "failed" },
		{ "ImagePullBackOff", "failed" },
		{ "ErrorPvcNotFound", "failed" },
		{ "DataVolumeError", "failed" },
		{ "WaitingForVolumeBinding", "failed" }, /* Pending for an hour */
		{ "WaitingForReceiver", "waiting" },
	};
	size_t n;
	const struct diag_rule *r = diag_rules(&n);
	for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
		/* keyed: some rule names the status */
		bool keyed = false;
		for (size_t i = 0; i < n && !keyed; i++) {
			const char *p = r[i].status ? strstr(r[i].status, want[k].status) : NULL;
			size_t len = strlen(want[k].status);
			keyed = p && (p == r[i].status || p[-1] == ' ') && (p[len] == '\0' || p[len] == ' ');
		}
		T_CHECK(keyed);
		char *file = xasprintf("status-%s.json", want[k].status);
		struct loaded l;
		int rc = load_fixture(file, src, &l);
		T_CHECK(rc == 0);
		if (rc != 0) {
			fprintf(stderr, "  no fixture for status %s\n", want[k].status);
			free(file);
			continue;
		}
		T_EQ_STR(l.chain->vm->printable_status, want[k].status);
		const char *rule = json_object_get_string(json_object_object_get(l.doc, "rule"));
		if (rule) {
			const struct diag_finding *f = diag_find(l.diag, rule);
			T_CHECK(f != NULL);
			/* the rule that explains the status is keyed on it */
			T_CHECK(f && f->rule->status && strstr(f->rule->status, want[k].status) != NULL);
		}
		T_EQ_STR(l.diag->first_stalled >= 0 ? diag_verdict_name(l.diag->verdict[l.diag->first_stalled]) : "(none)",
			 want[k].verdict ? want[k].verdict : "(none)");
		unload(&l);
		free(file);
	}
}

/* Every rule is documented in the man page. */
static void test_rules_documented(void)
{
	char *man = util_read_file("man/kvcon.1", NULL);
	T_CHECK(man != NULL);
	size_t n;
	const struct diag_rule *r = diag_rules(&n);
	for (size_t i = 0; man && i < n; i++) {
		bool found = strstr(man, r[i].id) != NULL;
		T_CHECK(found);
		if (!found)
			fprintf(stderr, "  rule %s missing from man/kvcon.1\n", r[i].id);
	}
	free(man);
}

static void test_stuck_launcher_text(void)
{
	struct loaded l;
	T_CHECK(load_fixture("launcher-unschedulable.json", src, &l) == 0);
	T_EQ_INT(l.diag->first_stalled, DIAG_LAUNCHER);
	const struct diag_finding *f = diag_find(l.diag, "launcher-unschedulable");
	T_CHECK(f != NULL);
	bool quoted = false;
	for (size_t i = 0; f && i < f->nev; i++)
		if (strstr(f->ev[i].text, "FailedScheduling") &&
		    strstr(f->ev[i].text, "\"0/3 nodes are available: 3 Insufficient devices.kubevirt.io/kvm.\""))
			quoted = true;
	T_CHECK(quoted);
	T_CHECK(f && strstr(f->cmd, "kubectl -n default describe pod virt-launcher-testvm-abcde"));
	struct buf b;
	buf_init(&b);
	diag_format_text(l.diag, l.chain, &b);
	T_CHECK(strstr(b.data, "First boundary that has not progressed: launcher (failed)") != NULL);
	T_CHECK(strstr(b.data, "$ kubectl -n default describe pod virt-launcher-testvm-abcde") != NULL);
	T_CHECK(strstr(b.data, "launcher  failed") != NULL);
	T_CHECK(strstr(b.data, "guest     not reached") != NULL);
	buf_free(&b);
	/* chain: the pod, its events in time order */
	T_EQ_INT(l.chain->npods, 1);
	T_CHECK(l.chain->active == l.chain->pods[0]);
	T_EQ_INT(l.chain->nevents, 1);
	unload(&l);
}

/* A missing Secret: the launcher boundary fails at once, its headline names the pod, the node and the Secret
 * (kubelet's FailedMount parsed); kubelet's words on other mounts (a slow attach) are not a missing object. */
static void test_mount_missing_text(void)
{
	struct loaded l;
	T_CHECK(load_fixture("launcher-mount-missing.json", src, &l) == 0);
	T_EQ_INT(l.diag->first_stalled, DIAG_LAUNCHER);
	const struct diag_finding *f = diag_find(l.diag, "launcher-mount-missing");
	T_CHECK(f != NULL);
	T_CHECK(f && strstr(f->summary, "the launcher pod virt-launcher-testvm-abcde cannot start on node-1: Secret "
				       "default/testvm-ud (volume cidata) does not exist") != NULL);
	T_CHECK(f && strstr(f->cmd, "kubectl -n default get secret,configmap"));
	unload(&l);
	T_CHECK(load_fixture("launcher-creating.json", src, &l) == 0);
	T_CHECK(diag_find(l.diag, "launcher-mount-missing") == NULL);
	unload(&l);
}

/* A start failure is quoted with its retry time. */
static void test_start_failure_retry(void)
{
	struct loaded l;
	T_CHECK(load_fixture("vm-crashloop.json", src, &l) == 0);
	const struct diag_finding *f = diag_find(l.diag, "vm-crashloop");
	bool found = false;
	for (size_t i = 0; f && i < f->nev; i++)
		found |= strstr(f->ev[i].text, "retryAfterTimestamp=2024-05-01T12:01:00Z (next attempt in 60s)") != NULL;
	T_CHECK(found);
	unload(&l);
}

static void test_halted_text(void)
{
	struct loaded l;
	T_CHECK(load_fixture("vm-halted.json", src, &l) == 0);
	struct buf b;
	buf_init(&b);
	diag_format_text(l.diag, l.chain, &b);
	T_CHECK(strstr(b.data, "VMI       not expected") != NULL);
	T_CHECK(strstr(b.data, "Intentionally not running") != NULL);
	T_CHECK(strstr(b.data, "$ virtctl -n default start testvm") != NULL);
	buf_free(&b);
	unload(&l);
}

/* The same fixture under an engine source suggests engine commands, never kubectl. */
static void test_engine_commands(void)
{
	struct loaded l;
	free(engine_src->server);
	engine_src->server = xstrdup("qemu:///system");
	T_CHECK(load_fixture("vm-halted.json", engine_src, &l) == 0);
	const struct diag_finding *f = diag_find(l.diag, "vm-halted");
	T_CHECK(f && strcmp(f->cmd, "kvcon -c 'qemu:///system' -n default engine start testvm") == 0);
	unload(&l);
	T_CHECK(load_fixture("launcher-crashloop.json", engine_src, &l) == 0);
	for (size_t i = 0; i < l.diag->nfindings; i++) {
		T_CHECK(strstr(l.diag->findings[i].cmd, "kubectl") == NULL);
		T_CHECK(strstr(l.diag->findings[i].cmd, "virtctl") == NULL);
		T_CHECK(strstr(l.diag->findings[i].cmd, "less ") == NULL); /* the service serves the logs */
	}
	f = diag_find(l.diag, "launcher-crashloop");
	T_CHECK(f && strstr(f->cmd, "kvcon -c 'qemu:///system' -n default logs testvm --previous --tail=50") != NULL);
	unload(&l);
}

/* The engine service's source (a kube source marked engine): "engine HOST", kvcon's commands with every URI
 * the service serves (the -c that reach the same service), a launcher said as a process. */
static void test_engine_service_commands(void)
{
	struct source *svc = source_new(SOURCE_KUBE, "myhost");
	svc->engine = true;
	svc->server = xstrdup("http://localhost");
	svc->engine_uris = xstrdup("qemu+tcp://a/system\nqemu+tcp://b/system");
	struct loaded l;
	T_CHECK(load_fixture("vm-halted.json", svc, &l) == 0);
	const struct diag_finding *f = diag_find(l.diag, "vm-halted");
	T_CHECK(f && strcmp(f->cmd, "kvcon -c 'qemu+tcp://a/system' -c 'qemu+tcp://b/system' -n default engine start testvm") == 0);
	struct buf b;
	buf_init(&b);
	diag_format_text(l.diag, l.chain, &b);
	T_CHECK(strstr(b.data, "VirtualMachine default/testvm (engine myhost)") != NULL);
	T_CHECK(strstr(b.data, "virtctl") == NULL && strstr(b.data, "kubectl") == NULL);
	buf_free(&b);
	unload(&l);
	T_CHECK(load_fixture("launcher-crashloop.json", svc, &l) == 0);
	buf_init(&b);
	diag_format_text(l.diag, l.chain, &b);
	T_CHECK(strstr(b.data, "launcher  ") != NULL && strstr(b.data, " process virt-launcher-") != NULL);
	for (size_t i = 0; i < l.diag->nfindings; i++)
		T_CHECK(strstr(l.diag->findings[i].cmd, "kubectl") == NULL && strstr(l.diag->findings[i].cmd, "virtctl") == NULL);
	buf_free(&b);
	unload(&l);
}

/* Cluster text never reaches the output raw: an ESC in a message is escaped. */
static void test_escaping(void)
{
	struct store *st = store_new();
	const char *docs[] = {
		"{\"kind\":\"VirtualMachine\",\"metadata\":{\"name\":\"v\",\"namespace\":\"n\",\"uid\":\"vm-1\"},"
		"\"spec\":{\"runStrategy\":\"Always\"},\"status\":{\"conditions\":[{\"type\":\"Failure\",\"status\":\"True\","
		"\"reason\":\"X\\u001b[2J\",\"message\":\"bad \\u001b]0;pwned\\u0007 \\u009b31m\"}]}}",
	};
	struct json_object *j = json_tokener_parse(docs[0]);
	store_upsert(st, kube_decode(OBJ_VM, j, src, NULL));
	json_object_put(j);
	struct chain *c = chain_build(st, src, "n", "v");
	struct diag *d = diag_run(c, 1000);
	T_CHECK(diag_find(d, "vm-no-vmi") != NULL);
	struct buf b;
	buf_init(&b);
	diag_format_text(d, c, &b);
	T_CHECK(strchr(b.data, 0x1b) == NULL);
	T_CHECK(strchr(b.data, 0x07) == NULL);
	T_CHECK(strstr(b.data, "\xc2\x9b") == NULL);
	T_CHECK(strstr(b.data, "\\e]0;pwned") != NULL);
	buf_free(&b);
	diag_free(d);
	chain_free(c);
	store_free(st);
}

/* Chain: in a namespace with many VMs, only the VM's own pods and events join; 10k objects stay cheap. */
static void test_chain_scale(void)
{
	struct store *st = store_new();
	char name[64], uid[64], buf_json[1024];
	for (int i = 0; i < 10000; i++) {
		snprintf(name, sizeof name, "vm-%05d", i);
		snprintf(uid, sizeof uid, "vmi-%05d", i);
		snprintf(buf_json, sizeof buf_json,
			 "{\"metadata\":{\"name\":\"virt-launcher-%s-x\",\"namespace\":\"ns\",\"uid\":\"pod-%05d\","
			 "\"labels\":{\"kubevirt.io/created-by\":\"%s\"},\"ownerReferences\":[{\"kind\":"
			 "\"VirtualMachineInstance\",\"uid\":\"%s\",\"controller\":true}]},\"status\":{\"phase\":\"Running\"}}",
			 name, i, uid, uid);
		struct json_object *j = json_tokener_parse(buf_json);
		store_upsert(st, kube_decode(OBJ_POD, j, src, NULL));
		json_object_put(j);
		snprintf(buf_json, sizeof buf_json,
			 "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"ns\",\"uid\":\"%s\",\"ownerReferences\":[{\"kind\":"
			 "\"VirtualMachine\",\"uid\":\"vm-%05d\"}]},\"status\":{\"phase\":\"Running\"}}",
			 name, uid, i);
		j = json_tokener_parse(buf_json);
		store_upsert(st, kube_decode(OBJ_VMI, j, src, NULL));
		json_object_put(j);
		snprintf(buf_json, sizeof buf_json,
			 "{\"metadata\":{\"name\":\"ev-%05d\",\"namespace\":\"ns\",\"uid\":\"ev-%05d\"},\"involvedObject\":"
			 "{\"kind\":\"VirtualMachineInstance\",\"uid\":\"%s\",\"name\":\"%s\"},\"reason\":\"Started\","
			 "\"lastTimestamp\":\"2024-01-01T00:00:00Z\"}",
			 i, i, uid, name);
		j = json_tokener_parse(buf_json);
		store_upsert(st, kube_decode(OBJ_EVENT, j, src, NULL));
		json_object_put(j);
	}
	uint64_t t0 = util_now_ms();
	int iters = 200;
	for (int i = 0; i < iters; i++) {
		struct chain *c = chain_build(st, src, "ns", "vm-04242");
		T_CHECK(c && c->vmi && c->npods == 1 && c->nevents == 1 && c->vm == NULL && c->nstray == 0);
		struct diag *d = diag_run(c, 2000000000);
		diag_free(d);
		chain_free(c);
	}
	uint64_t dt = util_now_ms() - t0;
	fprintf(stderr, "chain+diagnose over 30k objects: %.3f ms each (scan)\n", (double)dt / iters);
	T_CHECK(dt / (uint64_t)iters < 50); /* generous: a linear scan is well under a millisecond here */
	struct chain_index *ix = chain_index_new(st);
	t0 = util_now_ms();
	for (int i = 0; i < iters * 10; i++) {
		struct chain *c = chain_build_ix(ix, src, "ns", "vm-04242");
		T_CHECK(c && c->vmi && c->npods == 1 && c->nevents == 1);
		chain_free(c);
	}
	dt = util_now_ms() - t0;
	fprintf(stderr, "chain over 30k objects: %.4f ms each (index)\n", (double)dt / (iters * 10));
	/* the index follows changes: a replaced pod under the same keys takes the old one's place (issue 28) */
	struct json_object *j = json_tokener_parse(
		"{\"metadata\":{\"name\":\"virt-launcher-vm-04242-x\",\"namespace\":\"ns\",\"uid\":\"pod-04242\","
		"\"labels\":{\"kubevirt.io/created-by\":\"vmi-04242\"},\"ownerReferences\":[{\"kind\":"
		"\"VirtualMachineInstance\",\"uid\":\"vmi-04242\",\"controller\":true}]},\"status\":{\"phase\":\"Succeeded\"}}");
	store_upsert(st, kube_decode(OBJ_POD, j, src, NULL));
	json_object_put(j);
	struct chain *cs = chain_build_ix(ix, src, "ns", "vm-04242");
	T_CHECK(cs && cs->npods == 1 && cs->nevents == 1);
	T_CHECK(cs && cs->npods == 1 && cs->pods[0] == (const struct pod *)store_get(st, src, OBJ_POD, "pod-04242") &&
		strcmp(cs->pods[0]->phase, "Succeeded") == 0);
	chain_free(cs);
	/* a replaced pod whose keys changed, a removed event, a new stray pod */
	j = json_tokener_parse(
		"{\"metadata\":{\"name\":\"virt-launcher-vm-04242-x\",\"namespace\":\"ns\",\"uid\":\"pod-04242\","
		"\"labels\":{\"kubevirt.io/created-by\":\"vmi-04242\"}},\"status\":{\"phase\":\"Failed\"}}");
	store_upsert(st, kube_decode(OBJ_POD, j, src, NULL)); /* same UID, its owner reference gone */
	json_object_put(j);
	store_remove(st, src, OBJ_EVENT, "ev-04242");
	struct chain *c = chain_build(st, src, "ns", "vm-04242"); /* uses the store's index */
	chain_index_free(ix);
	struct chain *c2 = chain_build(st, src, "ns", "vm-04242"); /* scans */
	T_CHECK(c && c->npods == 0 && c->nstray == 1 && c->nevents == 0);
	T_CHECK(c && c2 && same_chain(c, c2));
	chain_free(c);
	chain_free(c2);
	store_free(st);
}

/* Objects as a provider may build them by hand (engine): unset phase, strategy, node, names of containers. */
static void test_sparse_objects(void)
{
	struct store *st = store_new();
	struct vm *vm = (struct vm *)obj_new(OBJ_VM);
	vm->o.src = src;
	vm->o.ns = intern("e");
	vm->o.name = xstrdup("v");
	snprintf(vm->o.uid, sizeof vm->o.uid, "vm-s");
	store_upsert(st, &vm->o);
	struct vmi *vi = (struct vmi *)obj_new(OBJ_VMI);
	vi->o.src = src;
	vi->o.ns = intern("e");
	vi->o.name = xstrdup("v");
	snprintf(vi->o.uid, sizeof vi->o.uid, "vmi-s");
	snprintf(vi->vm_uid, sizeof vi->vm_uid, "vm-s");
	store_upsert(st, &vi->o);
	struct pod *p = (struct pod *)obj_new(OBJ_POD);
	p->o.src = src;
	p->o.ns = intern("e");
	p->o.name = xstrdup("launcher");
	snprintf(p->o.uid, sizeof p->o.uid, "pod-s");
	snprintf(p->vmi_uid, sizeof p->vmi_uid, "vmi-s");
	p->containers = xcalloc(1, sizeof *p->containers);
	p->containers[0].state = intern("waiting");
	p->containers[0].reason = intern("Weird");
	p->ncontainers = 1;
	store_upsert(st, &p->o);
	struct chain *c = chain_build(st, src, "e", "v");
	T_CHECK(c && c->vmi && c->npods == 1);
	struct diag *d = diag_run(c, 1000);
	T_CHECK(d->first_stalled >= 0 || d->stopped);
	struct buf b;
	buf_init(&b);
	diag_format_text(d, c, &b);
	T_CHECK(b.data && strstr(b.data, "(null)") == NULL);
	buf_free(&b);
	diag_free(d);
	chain_free(c);
	store_free(st);
}

static void test_parse_ref(void)
{
	char *ns, *name;
	T_EQ_INT(chain_parse_ref("a/b", NULL, &ns, &name), 0);
	T_EQ_STR(ns, "a");
	T_EQ_STR(name, "b");
	free(ns);
	free(name);
	T_EQ_INT(chain_parse_ref("b", "dflt", &ns, &name), 0);
	T_EQ_STR(ns, "dflt");
	free(ns);
	free(name);
	T_EQ_INT(chain_parse_ref("/b", NULL, &ns, &name), -1);
	T_EQ_INT(chain_parse_ref("a/", NULL, &ns, &name), -1);
	T_EQ_INT(chain_parse_ref("a/b/c", NULL, &ns, &name), -1);
	T_EQ_INT(chain_parse_ref("", NULL, &ns, &name), -1);
}

int main(void)
{
	src = source_new(SOURCE_KUBE, "test");
	engine_src = source_new(SOURCE_ENGINE, "host");
	engine_src->engine = true;
	test_all_fixtures();
	test_rule_coverage();
	test_every_status();
	test_rules_documented();
	test_stuck_launcher_text();
	test_mount_missing_text();
	test_halted_text();
	test_start_failure_retry();
	test_engine_commands();
	test_engine_service_commands();
	test_escaping();
	test_chain_scale();
	test_parse_ref();
	test_sparse_objects();
	source_free_all();
	return T_DONE();
}
