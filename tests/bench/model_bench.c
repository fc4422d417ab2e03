/* Model benchmark: the cost of one VM's chain join + diagnosis + lineage lookup against a store holding 10,000
 * VMs with their VMIs, launcher pods and two events each (50,000 objects), and the decoder's cost per object
 * (parsed json-c tree -> compact struct) for realistic KubeVirt objects. */
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "kube/decode.h"
#include "model/chain.h"
#include "model/diagnose.h"
#include "model/lineage.h"

#define NVM 10000

static struct json_object *parse(const char *fmt, int i)
{
	char buf[2048];
	snprintf(buf, sizeof buf, fmt, i, i, i, i, i, i, i, i);
	return json_tokener_parse(buf);
}

static const char *vm_fmt =
	"{\"metadata\":{\"name\":\"vm-%05d\",\"namespace\":\"ns\",\"uid\":\"vm-uid-%05d\",\"resourceVersion\":\"%d\","
	"\"creationTimestamp\":\"2024-01-01T00:00:00Z\",\"labels\":{\"app\":\"web\",\"kubevirt.io/vm\":\"vm-%05d\"}},"
	"\"spec\":{\"runStrategy\":\"Always\",\"template\":{\"spec\":{\"domain\":{\"cpu\":{\"cores\":1},"
	"\"resources\":{\"requests\":{\"memory\":\"128Mi\"}}}}}},\"status\":{\"printableStatus\":\"Running\","
	"\"ready\":true,\"created\":true,\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\","
	"\"lastTransitionTime\":\"2024-01-01T00:00:10Z\"}]}}";
static const char *vmi_fmt =
	"{\"metadata\":{\"name\":\"vm-%05d\",\"namespace\":\"ns\",\"uid\":\"vmi-uid-%05d\",\"resourceVersion\":\"%d\","
	"\"creationTimestamp\":\"2024-01-01T00:00:01Z\",\"ownerReferences\":[{\"kind\":\"VirtualMachine\","
	"\"uid\":\"vm-uid-%05d\",\"controller\":true}]},\"status\":{\"phase\":\"Running\",\"nodeName\":\"node01\","
	"\"interfaces\":[{\"ipAddress\":\"10.0.0.1\"}],\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"},"
	"{\"type\":\"AgentConnected\",\"status\":\"True\"},{\"type\":\"LiveMigratable\",\"status\":\"True\"}],"
	"\"phaseTransitionTimestamps\":[{\"phase\":\"Pending\",\"phaseTransitionTimestamp\":\"2024-01-01T00:00:01Z\"},"
	"{\"phase\":\"Running\",\"phaseTransitionTimestamp\":\"2024-01-01T00:00:09Z\"}],"
	"\"guestOSInfo\":{\"prettyName\":\"Fedora Linux 40\"},\"activePods\":{\"pod-uid-%05d\":\"node01\"}}}";
static const char *pod_fmt =
	"{\"metadata\":{\"name\":\"virt-launcher-vm-%05d-abcde\",\"namespace\":\"ns\",\"uid\":\"pod-uid-%05d\","
	"\"resourceVersion\":\"%d\",\"creationTimestamp\":\"2024-01-01T00:00:02Z\",\"labels\":{\"kubevirt.io\":"
	"\"virt-launcher\",\"kubevirt.io/created-by\":\"vmi-uid-%05d\"},\"ownerReferences\":[{\"kind\":"
	"\"VirtualMachineInstance\",\"uid\":\"vmi-uid-%05d\",\"controller\":true}]},\"spec\":{\"nodeName\":\"node01\"},"
	"\"status\":{\"phase\":\"Running\",\"podIP\":\"10.0.0.1\",\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}],"
	"\"containerStatuses\":[{\"name\":\"compute\",\"ready\":true,\"restartCount\":0,\"state\":{\"running\":"
	"{\"startedAt\":\"2024-01-01T00:00:05Z\"}}}]}}";
static const char *ev_fmt =
	"{\"metadata\":{\"name\":\"vm-%05d.%d\",\"namespace\":\"ns\",\"uid\":\"ev-uid-%05d-%d\"},\"involvedObject\":"
	"{\"kind\":\"VirtualMachineInstance\",\"name\":\"vm-%05d\",\"uid\":\"vmi-uid-%05d\"},\"reason\":\"Started\","
	"\"message\":\"VirtualMachineInstance started.\",\"type\":\"Normal\",\"count\":1,"
	"\"lastTimestamp\":\"2024-01-01T00:00:09Z\",\"source\":{\"component\":\"virt-handler\"}}";

int main(void)
{
	struct source *src = source_new(SOURCE_KUBE, "bench");
	src->health[OBJ_VMI].state = WATCH_LIVE;
	struct store *st = store_new();
	char dir[] = "/tmp/kvcon-model-bench-XXXXXX";
	if (!mkdtemp(dir))
		return 1;
	struct lineage *lin = lineage_new(st, dir);
	const char *fmts[] = { vm_fmt, vmi_fmt, pod_fmt, ev_fmt };
	enum obj_kind kinds[] = { OBJ_VM, OBJ_VMI, OBJ_POD, OBJ_EVENT };
	/* decoder cost per kind (tree already parsed, as the reflector hands it over) */
	for (int k = 0; k < 4; k++) {
		struct json_object *j = parse(fmts[k], 42);
		int n = 200000;
		uint64_t t0 = util_now_ms();
		for (int i = 0; i < n; i++)
			obj_free(kube_decode(kinds[k], j, src, NULL));
		uint64_t dt = util_now_ms() - t0;
		printf("decode %-6s %6.2f us/object (%.0f objects/s)\n", obj_kind_name(kinds[k]), dt * 1000.0 / n,
		       n * 1000.0 / (dt ? dt : 1));
		json_object_put(j);
	}
	uint64_t t0 = util_now_ms();
	for (int i = 0; i < NVM; i++)
		for (int k = 0; k < 4; k++)
			for (int e = 0; e < (k == 3 ? 2 : 1); e++) {
				char buf[2048];
				if (k == 3)
					snprintf(buf, sizeof buf, ev_fmt, i, e, i, e, i, i);
				else
					snprintf(buf, sizeof buf, fmts[k], i, i, i, i, i, i, i, i);
				struct json_object *j = json_tokener_parse(buf);
				store_upsert(st, kube_decode(kinds[k], j, src, NULL));
				json_object_put(j);
			}
	uint64_t fill = util_now_ms() - t0;
	size_t objs = 0;
	for (int k = 0; k < OBJ_KIND_COUNT; k++)
		objs += store_count(st, (enum obj_kind)k);
	printf("store filled: %zu objects (parse+decode+upsert+lineage) in %llu ms; heap %zu B/object\n", objs,
	       (unsigned long long)fill, store_heap_size(st) / objs);
	int iters = 2000;
	t0 = util_now_ms();
	for (int i = 0; i < iters; i++) {
		char name[32];
		snprintf(name, sizeof name, "vm-%05d", (i * 7919) % NVM);
		struct chain *c = chain_build(st, src, "ns", name);
		struct diag *d = diag_run(c, util_wall_s());
		diag_free(d);
		chain_free(c);
	}
	uint64_t dt = util_now_ms() - t0;
	printf("chain_build + diag_run for one VM among %d: %.3f ms\n", NVM, dt * 1.0 / iters);
	struct chain_index *ix = chain_index_new(st);
	t0 = util_now_ms();
	for (int i = 0; i < iters; i++) {
		char name[32];
		snprintf(name, sizeof name, "vm-%05d", (i * 7919) % NVM);
		struct chain *c = chain_build_ix(ix, src, "ns", name);
		struct diag *d = diag_run(c, util_wall_s());
		diag_free(d);
		chain_free(c);
	}
	dt = util_now_ms() - t0;
	printf("chain_build_ix + diag_run for one VM among %d: %.3f ms\n", NVM, dt * 1.0 / iters);
	chain_index_free(ix);
	t0 = util_now_ms();
	for (int i = 0; i < iters; i++) {
		char name[32];
		size_t n;
		snprintf(name, sizeof name, "vm-%05d", (i * 7919) % NVM);
		lineage_get(lin, src, "ns", name, &n);
	}
	dt = util_now_ms() - t0;
	printf("lineage_get for one VM: %.3f ms\n", dt * 1.0 / iters);
	lineage_free(lin);
	store_free(st);
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : 1;
}
