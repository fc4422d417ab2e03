/* Unit tests of the engine's migration state: the migrationState record round trip (KubeVirt's field names, the
 * launchers an execution left behind), an unfinished migration read back as failed, the VMI's migrationState
 * as `engine get -o json` (the API's VMI, status.migrationState) prints it, the config file's engine.host lines
 * with their migrate-uri, and a failed migration's reason. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/util.h"
#include "core/xmalloc.h"
#include "engine/evm.h"
#include "engine/migrate.h"
#include "t.h"

static const char *S(json_object *o, const char *k)
{
	json_object *v;
	return json_object_object_get_ex(o, k, &v) ? json_object_get_string(v) : NULL;
}

static void test_round_trip(void)
{
	struct emig *m = xcalloc(1, sizeof *m);
	snprintf(m->uid, UID_LEN, "%s", "0b6c1f44-0000-4000-8000-000000000001");
	m->source_node = xstrdup("host-a");
	m->target_node = xstrdup("host-b");
	m->start = 1000;
	m->end = 1004;
	m->completed = true;
	m->mode = xstrdup("PreCopy");
	m->downtime_ms = 250;
	m->nprev = 2;
	for (int i = 0; i < 2; i++) {
		snprintf(m->prev[i].uid, UID_LEN, "launcher-%d", i);
		m->prev[i].node = xstrdup(i ? "host-b" : "host-a");
		m->prev[i].pid = 100 + i;
		m->prev[i].started = 900 + i;
		m->prev[i].ended = 950 + i;
	}
	json_object *o = emig_json(m);
	T_EQ_STR(S(o, "sourceNode"), "host-a");
	T_EQ_STR(S(o, "targetNode"), "host-b");
	T_EQ_STR(S(o, "mode"), "PreCopy");
	T_CHECK(S(o, "abortStatus") == NULL);
	char *text = xstrdup(json_object_to_json_string(o));
	json_object_put(o);
	json_object *back = json_tokener_parse(text);
	struct emig *r = emig_from(back);
	T_EQ_STR(r->uid, m->uid);
	T_EQ_STR(r->source_node, "host-a");
	T_EQ_STR(r->target_node, "host-b");
	T_EQ_INT(r->start, 1000);
	T_EQ_INT(r->end, 1004);
	T_CHECK(r->completed && !r->failed);
	T_EQ_INT(r->progress_pct, 100);
	T_EQ_INT(r->downtime_ms, 250);
	T_EQ_INT(r->nprev, 2);
	T_EQ_STR(r->prev[1].uid, "launcher-1");
	T_EQ_STR(r->prev[1].node, "host-b");
	T_EQ_INT(r->prev[1].pid, 101);
	T_EQ_INT(r->prev[0].ended, 950);
	T_CHECK(r->job == NULL);
	json_object_put(back);
	free(text);
	emig_free(r);
	emig_free(m);
	emig_free(NULL);
}

static void test_unfinished(void)
{
	/* a record written while a migration ran, read by a process that did not run it: neither completed nor
	 * failed (migrate_resume_all settles it), and the VM busy meanwhile (nothing ends or restarts it) */
	json_object *o = json_tokener_parse("{\"migrationUid\":\"u\",\"sourceNode\":\"a\",\"targetNode\":\"b\","
					    "\"targetLauncherUid\":\"11111111-2222-4333-8444-555555555555\","
					    "\"startTimestamp\":5,\"completed\":false,\"failed\":false}");
	struct emig *m = emig_from(o);
	T_CHECK(!m->failed && !m->completed && m->failure_reason == NULL && m->job == NULL);
	T_EQ_STR(m->target_launcher, "11111111-2222-4333-8444-555555555555");
	T_EQ_STR(m->target_node, "b");
	struct exec x = { 0 };
	struct evm v = { 0 };
	v.cur = &x;
	x.mig = m;
	T_CHECK(migrate_busy(&v));
	m->completed = true; /* settled: busy no more */
	T_CHECK(!migrate_busy(&v));
	m->completed = false;
	m->failed = true;
	T_CHECK(!migrate_busy(&v));
	m->start = 0; /* none started */
	m->failed = false;
	T_CHECK(!migrate_busy(&v));
	emig_free(m);
	json_object_put(o);
	/* junk is tolerated: wrong types read as absent */
	o = json_tokener_parse("{\"sourceNode\":7,\"previousLaunchers\":[1,{\"node\":\"x\"}],\"failed\":true}");
	m = emig_from(o);
	T_CHECK(m->source_node == NULL);
	T_EQ_INT(m->nprev, 2);
	T_EQ_STR(m->prev[1].node, "x");
	emig_free(m);
	json_object_put(o);
}

static void test_state_json(void)
{
	struct migration_state ms = { .present = true, .source_node = "a", .target_node = "b", .failed = true,
				      .abort_status = "Succeeded", .progress_pct = 12, .data_processed = 3 << 20,
				      .iteration = 1 };
	snprintf(ms.migration_uid, UID_LEN, "%s", "mig-1");
	ms.failure_reason = xstrdup("operation aborted");
	json_object *o = migrate_state_json(&ms);
	T_EQ_STR(S(o, "migrationUid"), "mig-1");
	T_EQ_STR(S(o, "abortStatus"), "Succeeded");
	T_EQ_STR(S(o, "failureReason"), "operation aborted");
	T_EQ_STR(S(o, "progress"), "12");
	T_EQ_STR(S(o, "dataProcessed"), "3145728");
	json_object_put(o);
	free(ms.failure_reason);
}

/* A failed live migration's reason: an abort reads as one even when libvirt reports the target's end first
 * (CI saw "qemu unexpectedly closed the monitor ... load of migration failed" for an abort on request). */
static void test_failure_text(void)
{
	const char *target = "internal error: qemu unexpectedly closed the monitor: load of migration failed";
	char *t = migrate_failure_text(true, NULL, target);
	T_CHECK(strstr(t, "aborted on request, canceled by client") == t);
	T_CHECK(strstr(t, "load of migration failed") != NULL);
	free(t);
	t = migrate_failure_text(true, NULL, "operation aborted: job 'migration out' canceled by client");
	T_EQ_STR(t, "operation aborted: job 'migration out' canceled by client");
	free(t);
	t = migrate_failure_text(true, "not completed within --timeout 5 s", "operation aborted: canceled by client");
	T_EQ_STR(t, "aborted: not completed within --timeout 5 s (operation aborted: canceled by client)");
	free(t);
	t = migrate_failure_text(false, NULL, target);
	T_EQ_STR(t, target);
	free(t);
}

static void test_config(void)
{
	char dir[] = "/tmp/kvcon-mig-cfg.XXXXXX";
	T_CHECK(mkdtemp(dir) != NULL);
	char *kd = xasprintf("%s/kvcon", dir), *f = xasprintf("%s/kvcon/config", dir);
	util_mkdir_p(kd, 0700);
	const char *text = "theme = dark\n"
			   "# engine.host = qemu:///commented\n"
			   "engine.host = qemu+unix:///system?socket=/x/a/sock migrate-uri=qemu+tcp://10.0.0.1/system\n"
			   "  engine.host=qemu+ssh://b/system   # the second\n"
			   "engine.hostname = nope\n";
	util_write_file_atomic(f, text, strlen(text), 0600);
	setenv("XDG_CONFIG_HOME", dir, 1);
	char *const *h = migrate_config_hosts();
	T_CHECK(h != NULL);
	if (h) {
		T_EQ_STR(h[0], "qemu+unix:///system?socket=/x/a/sock");
		T_EQ_STR(h[1], "qemu+ssh://b/system");
		T_CHECK(h[2] == NULL);
	}
	T_EQ_STR(migrate_uri_for("qemu+unix:///system?socket=/x/a/sock", "a"), "qemu+tcp://10.0.0.1/system");
	T_CHECK(migrate_uri_for("qemu+ssh://b/system", "b") == NULL);
	T_CHECK(migrate_uri_for("qemu:///system", "c") == NULL);
	unlink(f);
	rmdir(kd);
	rmdir(dir);
	free(f);
	free(kd);
}

int main(void)
{
	test_round_trip();
	test_unfinished();
	test_state_json();
	test_config();
	test_failure_text();
	return T_DONE();
}
