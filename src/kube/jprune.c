/* JSON pruning and value-boundary scanning: byte loops over JSON's lexical structure. The pruner writes the kept
 * members as text, or builds them as a tree in arena memory in the same pass (kube/jv.h: no text, no tokener, no
 * allocation per value). */
#include "kube/jprune.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kube/jv.h"

#define PRUNE_DEPTH 64

/* Every key kube/decode.c looks up, and the envelopes' keys (watch event, list, Status). test_prune.c checks that
 * the decoder reads no key missing here (it records the decoder's lookups) and decodes pruned and full objects
 * alike: add a key here when the decoder starts reading it. */
const char *const kube_jprune_keys[] = {
	/* envelopes */
	"type", "object", "items", "metadata", "continue", "resourceVersion", "code", "message", "reason", "kind",
	/* metadata */
	"name", "namespace", "uid", "generation", "creationTimestamp", "deletionTimestamp", "ownerReferences",
	"controller", "labels", "annotations", "kvcon.io/qemu-pid",
	/* VirtualMachine */
	"spec", "status", "runStrategy", "running", "template", "domain", "cpu", "cores", "memory", "guest",
	"resources", "requests", "instancetype", "printableStatus", "ready", "created", "conditions", "stateChangeRequests",
	"action", "startFailure", "consecutiveFailCount", "retryAfterTimestamp", "lastFailedVMIUID",
	"desiredGeneration", "observedGeneration",
	/* conditions */
	"status", "lastTransitionTime",
	/* VirtualMachineInstance */
	"phase", "nodeName", "interfaces", "ipAddress", "ipAddresses", "phaseTransitionTimestamps",
	"phaseTransitionTimestamp", "guestOSInfo", "prettyName", "version", "activePods", "migrationState",
	"startTimestamp", "endTimestamp", "sourceNode", "targetNode", "sourcePod", "targetPod", "completed", "failed",
	"abortRequested", "abortStatus", "failureReason", "migrationUid", "mode", "evictionStrategy", "guestAgentVersion",
	"infoSource", "forwardedPorts", "port", "protocol", "hostPort", "kvconJob", "progress", "dataProcessed",
	"dataRemaining", "memoryDirtyRate", "memoryIteration", "downtimeMs",
	/* Pod */
	"containers", "containerStatuses", "initContainerStatuses", "restartCount", "state", "lastState", "waiting",
	"running", "terminated", "startedAt", "exitCode", "podIP", "image", "imageID", "initContainers", "restartPolicy",
	"started", "signal", "finishedAt", "kubectl.kubernetes.io/default-container",
	/* Event */
	"involvedObject", "regarding", "count", "firstTimestamp", "lastTimestamp", "eventTime", "series",
	"lastObservedTime", "source", "component", "reportingComponent", "reportingController", "note",
	"deprecatedCount", "deprecatedFirstTimestamp", "deprecatedLastTimestamp", "deprecatedSource",
	NULL,
};

/* Keys whose value is kept whole (maps with free-form keys). */
static const char *const kube_jprune_whole[] = { "labels", "activePods", NULL };

/* ---- the per-kind schemas: what kube/decode.c, the reflector (envelopes, resourceVersion) and
 * kube_http_error_message (Status) read, at the place they read it ---- */

#define JP_NODE(k, flags, kids) { k, sizeof(k) - 1, flags, kids }
#define JP_END { NULL, 0, 0, NULL }
#define JP_LEAF(k) JP_NODE(k, 0, NULL)
#define JP_KIDS(k, kids) JP_NODE(k, 0, kids)

static const struct kube_jprune_node jp_cond[] = {
	JP_LEAF("type"), JP_LEAF("status"), JP_LEAF("reason"), JP_LEAF("message"), JP_LEAF("lastTransitionTime"),
	JP_END,
};
static const struct kube_jprune_node jp_owner[] = {
	JP_LEAF("kind"), JP_LEAF("uid"), JP_LEAF("controller"), JP_END,
};
static const struct kube_jprune_node jp_meta[] = {
	JP_LEAF("name"), JP_LEAF("namespace"), JP_LEAF("uid"), JP_LEAF("generation"), JP_LEAF("creationTimestamp"),
	JP_LEAF("deletionTimestamp"), JP_LEAF("resourceVersion"), JP_NODE("labels", KUBE_JPRUNE_WHOLE, NULL),
	JP_KIDS("ownerReferences", jp_owner), JP_END,
};
/* a pod's annotations are kept (the engine service's launcher: kvcon.io/qemu-pid, QEMU's pid); a VM's are not
 * (kubectl's last-applied-configuration can be large) */
static const struct kube_jprune_node jp_pod_meta[] = {
	JP_LEAF("name"), JP_LEAF("namespace"), JP_LEAF("uid"), JP_LEAF("generation"), JP_LEAF("creationTimestamp"),
	JP_LEAF("deletionTimestamp"), JP_LEAF("resourceVersion"), JP_NODE("labels", KUBE_JPRUNE_WHOLE, NULL),
	JP_KIDS("ownerReferences", jp_owner), JP_NODE("annotations", KUBE_JPRUNE_WHOLE, NULL), JP_END,
};
/* metadata stays even when empty ("without metadata" and "without metadata.name" are different refusals) */
#define JP_META JP_NODE("metadata", KUBE_JPRUNE_KEEP_EMPTY, jp_meta)
/* a watch ERROR event's object is a Status */
#define JP_STATUS_KEYS JP_LEAF("code"), JP_LEAF("message"), JP_LEAF("reason")

/* VirtualMachine */
static const struct kube_jprune_node jp_vm_requests[] = { JP_LEAF("memory"), JP_END };
static const struct kube_jprune_node jp_vm_resources[] = { JP_KIDS("requests", jp_vm_requests), JP_END };
static const struct kube_jprune_node jp_vm_memory[] = { JP_LEAF("guest"), JP_END };
static const struct kube_jprune_node jp_vm_cpu[] = { JP_LEAF("cores"), JP_END };
static const struct kube_jprune_node jp_vm_domain[] = {
	JP_KIDS("cpu", jp_vm_cpu), JP_KIDS("memory", jp_vm_memory), JP_KIDS("resources", jp_vm_resources), JP_END,
};
static const struct kube_jprune_node jp_vm_tspec[] = { JP_KIDS("domain", jp_vm_domain), JP_END };
static const struct kube_jprune_node jp_vm_template[] = { JP_KIDS("spec", jp_vm_tspec), JP_END };
static const struct kube_jprune_node jp_name[] = { JP_LEAF("name"), JP_END };
static const struct kube_jprune_node jp_vm_spec[] = {
	JP_LEAF("running"), JP_LEAF("runStrategy"), JP_KIDS("instancetype", jp_name),
	JP_KIDS("template", jp_vm_template), JP_END,
};
static const struct kube_jprune_node jp_vm_scr[] = { JP_LEAF("action"), JP_LEAF("uid"), JP_END };
static const struct kube_jprune_node jp_vm_sf[] = {
	JP_LEAF("consecutiveFailCount"), JP_LEAF("retryAfterTimestamp"), JP_LEAF("lastFailedVMIUID"), JP_END,
};
static const struct kube_jprune_node jp_vm_status[] = {
	JP_LEAF("printableStatus"), JP_LEAF("ready"), JP_LEAF("created"), JP_KIDS("conditions", jp_cond),
	JP_KIDS("stateChangeRequests", jp_vm_scr), JP_KIDS("startFailure", jp_vm_sf), JP_LEAF("observedGeneration"),
	JP_LEAF("desiredGeneration"), JP_END,
};
static const struct kube_jprune_node jp_vm[] = {
	JP_META, JP_KIDS("spec", jp_vm_spec), JP_KIDS("status", jp_vm_status), JP_STATUS_KEYS, JP_END,
};

/* VirtualMachineInstance */
static const struct kube_jprune_node jp_vmi_spec[] = { JP_LEAF("evictionStrategy"), JP_END };
/* kvcon's engine service adds forwardedPorts (the ports it forwards from the host) */
static const struct kube_jprune_node jp_vmi_fwd[] = {
	JP_LEAF("name"), JP_LEAF("port"), JP_LEAF("protocol"), JP_LEAF("hostPort"), JP_END,
};
static const struct kube_jprune_node jp_vmi_if[] = {
	JP_LEAF("ipAddress"), JP_NODE("ipAddresses", KUBE_JPRUNE_WHOLE, NULL), JP_LEAF("name"), JP_LEAF("infoSource"),
	JP_KIDS("forwardedPorts", jp_vmi_fwd), JP_END,
};
static const struct kube_jprune_node jp_vmi_pts[] = { JP_LEAF("phase"), JP_LEAF("phaseTransitionTimestamp"), JP_END };
static const struct kube_jprune_node jp_vmi_gi[] = { JP_LEAF("prettyName"), JP_LEAF("name"), JP_LEAF("version"), JP_END };
/* kvcon's engine service adds its libvirt job figures */
static const struct kube_jprune_node jp_vmi_job[] = {
	JP_LEAF("progress"), JP_LEAF("dataProcessed"), JP_LEAF("dataRemaining"), JP_LEAF("memoryDirtyRate"),
	JP_LEAF("memoryIteration"), JP_LEAF("downtimeMs"), JP_END,
};
static const struct kube_jprune_node jp_vmi_mig[] = {
	JP_LEAF("sourceNode"), JP_LEAF("targetNode"), JP_LEAF("sourcePod"), JP_LEAF("targetPod"),
	JP_LEAF("migrationUid"), JP_LEAF("startTimestamp"), JP_LEAF("endTimestamp"), JP_LEAF("completed"),
	JP_LEAF("failed"), JP_LEAF("abortRequested"), JP_LEAF("abortStatus"), JP_LEAF("mode"),
	JP_LEAF("failureReason"), JP_KIDS("kvconJob", jp_vmi_job), JP_END,
};
static const struct kube_jprune_node jp_vmi_status[] = {
	JP_LEAF("phase"), JP_LEAF("reason"), JP_LEAF("nodeName"), JP_KIDS("interfaces", jp_vmi_if),
	JP_KIDS("conditions", jp_cond), JP_KIDS("phaseTransitionTimestamps", jp_vmi_pts),
	JP_KIDS("guestOSInfo", jp_vmi_gi), JP_NODE("activePods", KUBE_JPRUNE_WHOLE, NULL),
	/* an empty migrationState still says a migration was started */
	JP_NODE("migrationState", KUBE_JPRUNE_KEEP_EMPTY, jp_vmi_mig), JP_END,
};
static const struct kube_jprune_node jp_vmi[] = {
	JP_META, JP_KIDS("spec", jp_vmi_spec), JP_KIDS("status", jp_vmi_status), JP_STATUS_KEYS, JP_END,
};

/* Pod */
static const struct kube_jprune_node jp_pod_init[] = { JP_LEAF("name"), JP_LEAF("restartPolicy"), JP_END };
static const struct kube_jprune_node jp_pod_spec[] = {
	JP_LEAF("nodeName"), JP_KIDS("containers", jp_pod_init), JP_KIDS("initContainers", jp_pod_init), JP_END,
};
static const struct kube_jprune_node jp_pod_state[] = {
	JP_LEAF("reason"), JP_LEAF("message"), JP_LEAF("startedAt"), JP_LEAF("exitCode"), JP_LEAF("signal"), JP_END,
};
static const struct kube_jprune_node jp_pod_states[] = {
	JP_KIDS("waiting", jp_pod_state), JP_KIDS("running", jp_pod_state), JP_KIDS("terminated", jp_pod_state), JP_END,
};
static const struct kube_jprune_node jp_pod_last_term[] = { JP_LEAF("reason"), JP_LEAF("exitCode"), JP_LEAF("finishedAt"), JP_END };
static const struct kube_jprune_node jp_pod_last[] = { JP_KIDS("terminated", jp_pod_last_term), JP_END };
static const struct kube_jprune_node jp_pod_cs[] = {
	JP_LEAF("name"), JP_LEAF("image"), JP_LEAF("imageID"), JP_LEAF("restartCount"), JP_LEAF("ready"), JP_LEAF("started"),
	JP_KIDS("state", jp_pod_states), JP_KIDS("lastState", jp_pod_last), JP_END,
};
static const struct kube_jprune_node jp_pod_status[] = {
	JP_LEAF("phase"), JP_LEAF("reason"), JP_LEAF("message"), JP_KIDS("conditions", jp_cond), JP_LEAF("podIP"),
	JP_KIDS("initContainerStatuses", jp_pod_cs), JP_KIDS("containerStatuses", jp_pod_cs), JP_END,
};
static const struct kube_jprune_node jp_pod[] = {
	JP_NODE("metadata", KUBE_JPRUNE_KEEP_EMPTY, jp_pod_meta), JP_KIDS("spec", jp_pod_spec), JP_KIDS("status", jp_pod_status), JP_STATUS_KEYS, JP_END,
};

/* Event (core/v1 and events.k8s.io/v1 spellings) */
static const struct kube_jprune_node jp_ev_inv[] = {
	JP_LEAF("kind"), JP_LEAF("name"), JP_LEAF("namespace"), JP_LEAF("uid"), JP_END,
};
static const struct kube_jprune_node jp_ev_series[] = { JP_LEAF("count"), JP_LEAF("lastObservedTime"), JP_END };
static const struct kube_jprune_node jp_ev_source[] = { JP_LEAF("component"), JP_END };
static const struct kube_jprune_node jp_event[] = {
	JP_META,
	/* an empty involvedObject is not the same as none: the decoder falls back to regarding only without one */
	JP_NODE("involvedObject", KUBE_JPRUNE_KEEP_EMPTY, jp_ev_inv), JP_NODE("regarding", KUBE_JPRUNE_KEEP_EMPTY, jp_ev_inv),
	JP_LEAF("type"), JP_LEAF("reason"), JP_LEAF("message"), JP_LEAF("note"), JP_LEAF("count"),
	JP_LEAF("deprecatedCount"), JP_KIDS("series", jp_ev_series), JP_LEAF("eventTime"), JP_LEAF("firstTimestamp"),
	JP_LEAF("deprecatedFirstTimestamp"), JP_LEAF("lastTimestamp"), JP_LEAF("deprecatedLastTimestamp"),
	JP_KIDS("source", jp_ev_source), JP_LEAF("reportingController"), JP_LEAF("reportingComponent"),
	JP_KIDS("deprecatedSource", jp_ev_source), JP_LEAF("code"), JP_END,
};

/* list pages ({metadata: {continue, resourceVersion}, items: [...]}) and watch events ({type, object}) */
static const struct kube_jprune_node jp_list_meta[] = { JP_LEAF("continue"), JP_LEAF("resourceVersion"), JP_END };
#define JP_ROOT(obj)                                                                                              \
	{                                                                                                         \
		JP_LEAF("type"), JP_NODE("object", KUBE_JPRUNE_KEEP_EMPTY, obj),                                  \
			JP_NODE("items", KUBE_JPRUNE_KEEP_EMPTY | KUBE_JPRUNE_EACH, obj),                         \
			JP_KIDS("metadata", jp_list_meta), JP_END,                                                \
	}
static const struct kube_jprune_node jp_root_vm[] = JP_ROOT(jp_vm);
static const struct kube_jprune_node jp_root_vmi[] = JP_ROOT(jp_vmi);
static const struct kube_jprune_node jp_root_pod[] = JP_ROOT(jp_pod);
static const struct kube_jprune_node jp_root_event[] = JP_ROOT(jp_event);

const struct kube_jprune_node *kube_jprune_schema(enum obj_kind kind)
{
	static const struct kube_jprune_node *const roots[OBJ_KIND_COUNT] = {
		[OBJ_VM] = jp_root_vm, [OBJ_VMI] = jp_root_vmi, [OBJ_POD] = jp_root_pod, [OBJ_EVENT] = jp_root_event,
	};
	return (unsigned)kind < OBJ_KIND_COUNT ? roots[kind] : NULL;
}

static const struct kube_jprune_node *node_find(const struct kube_jprune_node *kids, const char *key, size_t len)
{
	for (; kids->key; kids++)
		if (kids->len == len && kids->key[0] == key[0] && memcmp(kids->key, key, len) == 0)
			return kids;
	return NULL;
}

bool kube_jprune_keeps(const struct kube_jprune_node *schema, const char *path)
{
	const struct kube_jprune_node *kids = schema;
	for (const char *p = path; kids;) {
		size_t n = strcspn(p, "/");
		const struct kube_jprune_node *nd = n ? node_find(kids, p, n) : NULL;
		if (nd == NULL)
			return false;
		if (p[n] == '\0' || (nd->flags & KUBE_JPRUNE_WHOLE))
			return true;
		kids = nd->kids;
		p += n + 1;
	}
	return false;
}

/* ---- key-name mode: a static open-addressing set, looked up without copying the key ---- */

#define KEYSET_SIZE 512 /* power of two, well above twice the keys */

static struct {
	const char *key;
	unsigned char len, cls;
} keyset[KEYSET_SIZE];
static bool keyset_ready;

static uint32_t key_hash(const char *s, size_t len)
{
	uint32_t h = 2166136261u; /* FNV-1a */
	for (size_t i = 0; i < len; i++) {
		h ^= (unsigned char)s[i];
		h *= 16777619u;
	}
	return h;
}

static void keyset_add(const char *k, unsigned char cls)
{
	size_t len = strlen(k);
	for (uint32_t i = key_hash(k, len);; i++) {
		uint32_t j = i & (KEYSET_SIZE - 1);
		if (keyset[j].key == NULL || strcmp(keyset[j].key, k) == 0) {
			keyset[j].key = k;
			keyset[j].len = (unsigned char)len;
			keyset[j].cls = cls;
			return;
		}
	}
}

static void keyset_init(void)
{
	for (const char *const *k = kube_jprune_keys; *k; k++)
		keyset_add(*k, 1);
	for (const char *const *k = kube_jprune_whole; *k; k++)
		keyset_add(*k, 2);
	keyset_ready = true;
}

int kube_jprune_class(const char *key, size_t len)
{
	if (len >= 64 || memchr(key, '\\', len))
		return 0; /* no kept key is that long or escaped */
	if (!keyset_ready)
		keyset_init();
	for (uint32_t i = key_hash(key, len);; i++) {
		uint32_t j = i & (KEYSET_SIZE - 1);
		if (keyset[j].key == NULL)
			return 0;
		if (keyset[j].len == len && memcmp(keyset[j].key, key, len) == 0)
			return keyset[j].cls;
	}
}

/* ---- the pruner ---- */

struct pr {
	const char *in;
	size_t len, pos;
	char *out; /* text mode; NULL when building a tree */
	size_t o;
	bool eof; /* a scan ran into the end of the input: the value may just be incomplete */
	struct jv_arena *a; /* tree mode: where the tree is built */
	kube_jprune_jv_cb each; /* tree mode: takes the elements of KUBE_JPRUNE_EACH arrays */
	void *each_arg;
};

/* Marks the node table of key-name mode. */
static const struct kube_jprune_node by_name[1] = { JP_END };
static const struct kube_jprune_node by_name_keep = JP_NODE("", 0, by_name);
static const struct kube_jprune_node by_name_whole = JP_NODE("", KUBE_JPRUNE_WHOLE, NULL);
/* Marks the node table of a value kept whole while building a tree: every member, empty ones too. */
static const struct kube_jprune_node keep_all[1] = { JP_END };
static const struct kube_jprune_node keep_all_node = JP_NODE("", KUBE_JPRUNE_WHOLE, keep_all);

/* List pages printed whole (kube/kget.c): the envelope alone (the items skipped), then the items kept whole, each
 * handed over as it is built. */
static const struct kube_jprune_node jp_list_envelope[] = { JP_KIDS("metadata", jp_list_meta), JP_END };
static const struct kube_jprune_node jp_list_items[] = {
	JP_NODE("items", KUBE_JPRUNE_KEEP_EMPTY | KUBE_JPRUNE_EACH, keep_all),
	JP_END,
};

/* ... and the items' names alone (-o name) */
static const struct kube_jprune_node jp_name_meta[] = { JP_LEAF("name"), JP_END };
static const struct kube_jprune_node jp_name_item[] = { JP_KIDS("metadata", jp_name_meta), JP_END };
static const struct kube_jprune_node jp_list_names[] = {
	JP_NODE("items", KUBE_JPRUNE_KEEP_EMPTY | KUBE_JPRUNE_EACH, jp_name_item),
	JP_END,
};

const struct kube_jprune_node *kube_jprune_list_schema(bool items)
{
	return items ? jp_list_items : jp_list_envelope;
}

const struct kube_jprune_node *kube_jprune_names_schema(void)
{
	return jp_list_names;
}

/* Bytes that end a number or literal. */
static const unsigned char scalar_end[256] = {
	[','] = 1, ['}'] = 1, [']'] = 1, [' '] = 1, ['\n'] = 1, ['\r'] = 1, ['\t'] = 1, ['\0'] = 1,
};

static void ws_slow(struct pr *p)
{
	while (p->pos < p->len) {
		char c = p->in[p->pos];
		if (c != ' ' && c != '\n' && c != '\r' && c != '\t')
			break;
		p->pos++;
	}
	if (p->pos >= p->len)
		p->eof = true;
}

/* Compact JSON (what API servers send) has no whitespace between tokens: one test in the common case. */
static inline void ws(struct pr *p)
{
	if (p->pos < p->len && (unsigned char)p->in[p->pos] > ' ')
		return;
	ws_slow(p);
}

/* At an opening quote: returns the index after the closing quote, or 0. */
static size_t string_end(struct pr *p, size_t i)
{
	const char *s = p->in;
	for (i++; i < p->len; i++) {
		const char *q = memchr(s + i, '"', p->len - i);
		if (q == NULL)
			break;
		size_t j = (size_t)(q - s);
		size_t bs = 0;
		while (j - bs > i - 1 && s[j - 1 - bs] == '\\')
			bs++;
		if (bs % 2 == 0)
			return j + 1;
		i = j;
	}
	p->eof = true;
	return 0;
}

/* End of the value at pos (after skipping it), or 0 when malformed or cut. */
static size_t value_end(struct pr *p, size_t i)
{
	if (i >= p->len) {
		p->eof = true;
		return 0;
	}
	char c = p->in[i];
	if (c == '"')
		return string_end(p, i);
	if (c == '{' || c == '[') {
		struct kube_jscan st = { 0 };
		ssize_t n = kube_jscan(&st, p->in + i, p->len - i);
		if (n == 0)
			p->eof = true;
		return n > 0 ? i + (size_t)n : 0;
	}
	size_t j = i;
	while (j < p->len && !scalar_end[(unsigned char)p->in[j]])
		j++;
	if (j == p->len)
		p->eof = true; /* a number or literal runs into the end: inside an object or array, it is cut */
	return j > i && j < p->len ? j : 0;
}

static void emit(struct pr *p, const char *s, size_t n)
{
	if (p->out == NULL)
		return;
	memcpy(p->out + p->o, s, n);
	p->o += n;
}

/* ---- tree mode: JSON scalars as values, the way json-c's tokener makes them (kube_jprune_tree's
 * differential test and fuzz harness hold it to that); anything json-c might read differently (an escape it
 * does not know, a surrogate that is not a pair, a number that is not a plain int64, a lenient literal) is
 * refused, and the caller parses the original with json-c ---- */

static int hex4(const char *s)
{
	int v = 0;
	for (int i = 0; i < 4; i++) {
		char c = s[i];
		int d = -1;
		if (c >= '0' && c <= '9')
			d = c - '0';
		else if (c >= 'a' && c <= 'f')
			d = c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			d = c - 'A' + 10;
		if (d < 0)
			return -1;
		v = v << 4 | d;
	}
	return v;
}

/* The body of a string (between its quotes, n bytes, with escapes) unescaped into out (room for n + 1 bytes).
 * Returns the length, or -1. */
static ssize_t unescape(const char *s, size_t n, char *out)
{
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] != '\\') {
			out[o++] = s[i];
			continue;
		}
		if (++i == n)
			return -1;
		char c = s[i];
		const char *simple = strchr("\"\\/bfnrt", c);
		if (c != '\0' && simple) {
			out[o++] = "\"\\/\b\f\n\r\t"[simple - "\"\\/bfnrt"];
			continue;
		}
		if (c != 'u' || n - i < 5)
			return -1;
		int u = hex4(s + i + 1);
		i += 4;
		if (u < 0)
			return -1;
		if (u >= 0xD800 && u <= 0xDFFF) {
			int lo;
			if (u >= 0xDC00 || n - i < 7 || s[i + 1] != '\\' || s[i + 2] != 'u' ||
			    (lo = hex4(s + i + 3)) < 0xDC00 || lo > 0xDFFF)
				return -1;
			i += 6;
			uint32_t cp = 0x10000 + (((uint32_t)u - 0xD800) << 10) + ((uint32_t)lo - 0xDC00);
			out[o++] = (char)(0xF0 | cp >> 18);
			out[o++] = (char)(0x80 | (cp >> 12 & 0x3F));
			out[o++] = (char)(0x80 | (cp >> 6 & 0x3F));
			out[o++] = (char)(0x80 | (cp & 0x3F));
		} else if (u < 0x80) {
			out[o++] = (char)u;
		} else if (u < 0x800) {
			out[o++] = (char)(0xC0 | u >> 6);
			out[o++] = (char)(0x80 | (u & 0x3F));
		} else {
			out[o++] = (char)(0xE0 | u >> 12);
			out[o++] = (char)(0x80 | (u >> 6 & 0x3F));
			out[o++] = (char)(0x80 | (u & 0x3F));
		}
	}
	out[o] = '\0';
	return (ssize_t)o;
}

/* The scalar in[s..e) as a value in the arena (NULL for null). -1 when it is not one json-c reads the same way. */
static int scalar_tree(struct jv_arena *a, const char *in, size_t s, size_t e, struct jv **v)
{
	const char *t = in + s;
	size_t n = e - s;
	*v = NULL;
	if (t[0] == '"') {
		const char *body = t + 1;
		n -= 2;
		if (n > 0x7fffffff || strnlen(body, n) != n)
			return -1; /* a NUL byte: json-c's tokener reads it as the end of its input */
		if (memchr(body, '\\', n) == NULL) {
			*v = jv_new_string(a, body, n);
			return 0;
		}
		struct jv *sv = jv_alloc(a, sizeof *sv + n + 1);
		char *d = (char *)(sv + 1);
		ssize_t m = unescape(body, n, d);
		if (m < 0)
			return -1;
		sv->type = JV_STRING;
		sv->b = false;
		sv->n = (uint32_t)m;
		sv->u.s = d;
		*v = sv;
		return 0;
	}
	if (n == 4 && memcmp(t, "null", 4) == 0)
		return 0;
	if ((n == 4 && memcmp(t, "true", 4) == 0) || (n == 5 && memcmp(t, "false", 5) == 0)) {
		*v = jv_new(a, JV_BOOL);
		(*v)->b = n == 4;
		return 0;
	}
	/* integers: -?(0|[1-9][0-9]*) within int64 */
	size_t i = t[0] == '-';
	if (i == n || n - i > 19 || t[i] < '0' || t[i] > '9' || (t[i] == '0' && n - i > 1))
		return -1;
	int64_t x = 0;
	for (size_t j = i; j < n; j++) {
		if (t[j] < '0' || t[j] > '9')
			return -1;
		if (x > (INT64_MAX - (t[j] - '0')) / 10)
			return -1;
		x = x * 10 + (t[j] - '0');
	}
	*v = jv_new(a, JV_INT);
	(*v)->u.i = i ? -x : x;
	return 0;
}

static bool tree_empty(const struct jv *v)
{
	return v == NULL || ((v->type == JV_OBJECT || v->type == JV_ARRAY) && v->n == 0);
}

/* Members of an object, or elements of an array, being built: grown in the arena (a grown array's old copy stays
 * there until the arena is reset, which costs less than a separate stack of parts in flight). */
#define TREE_FIRST 8
#define TREE_MEMBERS_MAX 512 /* a free-form map with more keys goes to json-c, whose table finds a repeated key */
#define TREE_ELEMENTS_MAX (1u << 30) /* the doubled capacity stays within 32 bits */

static void *tree_grow(struct jv_arena *a, void *old, uint32_t n, uint32_t *cap, size_t size)
{
	if (n < *cap)
		return old;
	uint32_t nc = *cap ? *cap * 2 : TREE_FIRST;
	void *p = jv_alloc(a, nc * size);
	if (n)
		memcpy(p, old, n * size);
	*cap = nc;
	return p;
}

/* A member of the object being built. A schema key is the schema's own string, and new to this object when *seen
 * (a bit per member of kids) says so; a repeated key replaces the earlier value in place, as json-c's tokener
 * does. */
static int tree_add(struct jv_arena *a, struct jv *obj, uint32_t *cap, const struct kube_jprune_node *kids,
		    const struct kube_jprune_node *nd, uint64_t *seen, const char *key, size_t len, struct jv *v)
{
	const char *k = nd->key;
	if (nd->len > 0) {
		size_t i = (size_t)(nd - kids);
		bool is_new = i < 64 && !(*seen & (uint64_t)1 << i);
		if (i < 64)
			*seen |= (uint64_t)1 << i;
		if (!is_new) {
			for (uint32_t j = 0; j < obj->n; j++) {
				if (obj->u.m[j].key == k || strcmp(obj->u.m[j].key, k) == 0) {
					obj->u.m[j].v = v;
					return 0;
				}
			}
		}
	} else {
		if (len > 0x7fffffff || strnlen(key, len) != len)
			return -1;
		char *kc = jv_alloc(a, len + 1);
		if (memchr(key, '\\', len) == NULL) {
			memcpy(kc, key, len);
			kc[len] = '\0';
		} else if (unescape(key, len, kc) < 0) {
			return -1;
		}
		for (uint32_t j = 0; j < obj->n; j++) {
			if (strcmp(obj->u.m[j].key, kc) == 0) {
				obj->u.m[j].v = v;
				return 0;
			}
		}
		if (obj->n >= TREE_MEMBERS_MAX)
			return -1;
		k = kc;
	}
	obj->u.m = tree_grow(a, obj->u.m, obj->n, cap, sizeof *obj->u.m);
	obj->u.m[obj->n].key = k;
	obj->u.m[obj->n].v = v;
	obj->n++;
	return 0;
}

static int prune_value(struct pr *p, int depth, const struct kube_jprune_node *nd, struct jv **v);

/* The member's value, per its node (by_name: the key-name class). */
static int prune_member_value(struct pr *p, int depth, const struct kube_jprune_node *nd, struct jv **v)
{
	char c = p->in[p->pos];
	if (p->out == NULL && nd->flags & KUBE_JPRUNE_WHOLE && (c == '{' || c == '['))
		return prune_value(p, depth + 1, &keep_all_node, v);
	if (nd->flags & KUBE_JPRUNE_WHOLE || ((c != '{' && c != '[') && nd != by_name)) {
		size_t ve = value_end(p, p->pos);
		if (ve == 0)
			return -1;
		if (p->out == NULL && scalar_tree(p->a, p->in, p->pos, ve, v) < 0)
			return -1;
		emit(p, p->in + p->pos, ve - p->pos);
		p->pos = ve;
		return 0;
	}
	return prune_value(p, depth + 1, nd, v);
}

static bool is_empty(const char *s, size_t n)
{
	return (n == 2 && (memcmp(s, "{}", 2) == 0 || memcmp(s, "[]", 2) == 0)) || (n == 4 && memcmp(s, "null", 4) == 0);
}

static const struct kube_jprune_node *member_node(struct pr *p, const struct kube_jprune_node *kids, size_t ks,
						  size_t ke)
{
	const char *key = p->in + ks + 1;
	size_t len = ke - ks - 2;
	if (kids == by_name) {
		int cls = kube_jprune_class(key, len);
		return cls == 1 ? &by_name_keep : cls == 2 ? &by_name_whole : NULL;
	}
	if (kids == keep_all)
		return &keep_all_node;
	if (len == 0 || memchr(key, '\\', len))
		return NULL;
	const struct kube_jprune_node *nd = node_find(kids, key, len);
	if (nd && nd->kids == NULL && !(nd->flags & KUBE_JPRUNE_WHOLE)) {
		/* a scalar's place holding an object or array, or a counted list's place holding an object: the
		 * decoder reads it as absent */
		char c = p->in[p->pos];
		if (c == '{' || (c == '[' && !(nd->flags & KUBE_JPRUNE_COUNT)))
			return NULL;
	}
	return nd;
}

static int prune_object(struct pr *p, int depth, const struct kube_jprune_node *kids, struct jv **v)
{
	struct jv *obj = p->out ? NULL : jv_new(p->a, JV_OBJECT);
	uint32_t cap = 0;
	uint64_t seen = 0;
	emit(p, "{", 1);
	p->pos++;
	bool first = true;
	for (;;) {
		ws(p);
		if (p->pos >= p->len)
			break;
		if (p->in[p->pos] == '}') {
			p->pos++;
			emit(p, "}", 1);
			*v = obj;
			return 0;
		}
		if (p->in[p->pos] != '"')
			break;
		size_t ks = p->pos, ke = string_end(p, ks);
		if (ke == 0)
			break;
		p->pos = ke;
		ws(p);
		if (p->pos >= p->len || p->in[p->pos] != ':')
			break;
		p->pos++;
		ws(p);
		if (p->pos >= p->len)
			break;
		const struct kube_jprune_node *nd = member_node(p, kids, ks, ke);
		if (nd) {
			size_t mark = p->o;
			if (!first)
				emit(p, ",", 1);
			emit(p, p->in + ks, ke - ks);
			emit(p, ":", 1);
			size_t vs = p->o;
			struct jv *mv = NULL;
			if (prune_member_value(p, depth, nd, &mv) < 0)
				break;
			/* null, {} or []: read as absent, so it need not be parsed */
			bool drop = kids != by_name && kids != keep_all && !(nd->flags & KUBE_JPRUNE_KEEP_EMPTY) &&
				    (obj ? tree_empty(mv) : is_empty(p->out + vs, p->o - vs));
			if (drop)
				p->o = mark;
			else
				first = false;
			if (obj && !drop &&
			    tree_add(p->a, obj, &cap, kids, nd, &seen, p->in + ks + 1, ke - ks - 2, mv) < 0)
				break;
		} else {
			size_t ve = value_end(p, p->pos);
			if (ve == 0)
				break;
			p->pos = ve;
		}
		ws(p);
		if (p->pos < p->len && p->in[p->pos] == ',')
			p->pos++;
		else if (p->pos >= p->len || p->in[p->pos] != '}')
			break;
	}
	return -1;
}

static int prune_array(struct pr *p, int depth, const struct kube_jprune_node *nd, struct jv **v)
{
	struct jv *arr = p->out ? NULL : jv_new(p->a, JV_ARRAY);
	uint32_t cap = 0;
	emit(p, "[", 1);
	p->pos++;
	bool first = true;
	for (;;) {
		ws(p);
		if (p->pos >= p->len)
			break;
		if (p->in[p->pos] == ']') {
			p->pos++;
			emit(p, "]", 1);
			*v = arr;
			return 0;
		}
		if (!first)
			emit(p, ",", 1);
		first = false;
		struct jv *ev = NULL;
		bool each = arr && p->each && nd->flags & KUBE_JPRUNE_EACH;
		struct jv_mark mark = { NULL, 0 };
		if (each)
			mark = jv_arena_mark(p->a);
		if (nd->flags & KUBE_JPRUNE_COUNT) {
			/* only the length is read: null costs json-c no allocation (0 when the element is shorter, so
			 * the output never outgrows the input) */
			size_t ve = value_end(p, p->pos);
			if (ve == 0)
				break;
			if (ve - p->pos >= 4)
				emit(p, "null", 4);
			else
				emit(p, "0", 1);
			if (arr && ve - p->pos < 4) {
				ev = jv_new(p->a, JV_INT); /* as the text form reads: 0 */
				ev->u.i = 0;
			}
			p->pos = ve;
		} else if (prune_value(p, depth + 1, nd, &ev) < 0) {
			break;
		}
		if (each) {
			/* handed over, then its memory is the next element's */
			p->each(p->each_arg, ev);
			jv_arena_release(p->a, mark);
		} else if (arr) {
			if (arr->n >= TREE_ELEMENTS_MAX)
				break;
			arr->u.a = tree_grow(p->a, arr->u.a, arr->n, &cap, sizeof *arr->u.a);
			arr->u.a[arr->n++] = ev;
		}
		ws(p);
		if (p->pos < p->len && p->in[p->pos] == ',')
			p->pos++;
		else if (p->pos >= p->len || p->in[p->pos] != ']')
			break;
	}
	return -1;
}

/* nd: the node whose value this is (its kids prune objects; by_name in key-name mode). In tree mode *v gets the
 * value (NULL for null). */
static int prune_value(struct pr *p, int depth, const struct kube_jprune_node *nd, struct jv **v)
{
	if (depth > PRUNE_DEPTH)
		return -1;
	if (p->pos >= p->len) {
		p->eof = true;
		return -1;
	}
	char c = p->in[p->pos];
	if (c == '{')
		return prune_object(p, depth, nd == by_name || nd->kids == NULL ? by_name : nd->kids, v);
	if (c == '[')
		return prune_array(p, depth, nd, v);
	size_t ve = value_end(p, p->pos);
	if (ve == 0)
		return -1;
	if (p->out == NULL && scalar_tree(p->a, p->in, p->pos, ve, v) < 0)
		return -1;
	emit(p, p->in + p->pos, ve - p->pos);
	p->pos = ve;
	return 0;
}

ssize_t kube_jprune_prefix(const struct kube_jprune_node *schema, const char *in, size_t len, char *out,
			   size_t *consumed)
{
	struct pr p = { .in = in, .len = len, .out = out };
	const struct kube_jprune_node root = { "", 0, 0, schema ? schema : by_name };
	struct jv *unused = NULL;
	ws(&p);
	p.eof = false;
	if (prune_value(&p, 0, schema ? &root : by_name, &unused) < 0)
		return p.eof ? -2 : -1;
	*consumed = p.pos;
	return (ssize_t)p.o;
}

ssize_t kube_jprune_jv(const struct kube_jprune_node *schema, const char *in, size_t len, struct jv_arena *a,
		       struct jv **out, kube_jprune_jv_cb each, void *arg)
{
	struct pr p = { .in = in, .len = len, .a = a, .each = each, .each_arg = arg };
	const struct kube_jprune_node root = { "", 0, 0, schema ? schema : by_name };
	*out = NULL;
	ws(&p);
	p.eof = false;
	if (prune_value(&p, 0, schema ? &root : by_name, out) < 0) {
		*out = NULL;
		return p.eof ? -2 : -1;
	}
	return (ssize_t)p.pos;
}

/* The json-c forms: the tree built in the arena, then copied (for tests and the differential fuzz harness). */
struct each_json {
	kube_jprune_each_cb each;
	void *arg;
};

static void each_json(void *arg, struct jv *element)
{
	struct each_json *e = arg;
	e->each(e->arg, jv_to_json(element));
}

ssize_t kube_jprune_tree(const struct kube_jprune_node *schema, const char *in, size_t len, struct json_object **out)
{
	return kube_jprune_tree_each(schema, in, len, out, NULL, NULL);
}

ssize_t kube_jprune_tree_each(const struct kube_jprune_node *schema, const char *in, size_t len,
			      struct json_object **out, kube_jprune_each_cb each, void *arg)
{
	struct jv_arena *a = jv_arena_new();
	struct each_json e = { each, arg };
	struct jv *v;
	ssize_t n = kube_jprune_jv(schema, in, len, a, &v, each ? each_json : NULL, &e);
	*out = n > 0 ? jv_to_json(v) : NULL;
	jv_arena_free(a);
	return n;
}

ssize_t kube_jprune(const char *in, size_t len, char *out)
{
	size_t consumed = 0;
	ssize_t n = kube_jprune_prefix(NULL, in, len, out, &consumed);
	if (n < 0)
		return -1;
	struct pr p = { .in = in, .len = len, .pos = consumed };
	ws(&p);
	return p.pos == len ? n : -1;
}

/* Inside a string most bytes are plain: jump to the next quote with memchr and count the backslashes before it. */
static size_t skip_string(struct kube_jscan *st, const char *in, size_t i, size_t len)
{
	if (st->escape) {
		st->escape = false;
		i++;
	}
	while (i < len) {
		const char *q = memchr(in + i, '"', len - i);
		size_t end = q ? (size_t)(q - in) : len;
		size_t bs = 0;
		while (end - bs > i && in[end - 1 - bs] == '\\')
			bs++;
		if (q == NULL) {
			st->escape = bs % 2 == 1; /* a backslash ends this chunk: the next byte is escaped */
			return len;
		}
		if (bs % 2 == 0) {
			st->in_string = false;
			return end + 1;
		}
		i = end + 1;
	}
	return i;
}

/* Bytes that matter to the scanner inside a value: quotes and brackets. */
static const unsigned char structural[256] = { ['"'] = 1, ['{'] = 1, ['}'] = 1, ['['] = 1, [']'] = 1 };

ssize_t kube_jscan(struct kube_jscan *st, const char *in, size_t len)
{
	size_t i = 0;
	while (i < len) {
		if (st->in_string) {
			i = skip_string(st, in, i, len);
			continue;
		}
		if (st->depth > 0) {
			while (i < len && !structural[(unsigned char)in[i]])
				i++;
			if (i == len)
				break;
		}
		char c = in[i++];
		switch (c) {
		case '"':
			st->in_string = true;
			break;
		case '{':
		case '[':
			if (++st->depth > 10000)
				return -1;
			break;
		case '}':
		case ']':
			if (--st->depth < 0)
				return -1;
			if (st->depth == 0)
				return (ssize_t)i;
			break;
		default:
			if (st->depth == 0 && c != ' ' && c != '\n' && c != '\r' && c != '\t')
				return -1;
			break;
		}
	}
	return 0;
}
