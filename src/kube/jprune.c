/* JSON pruning and value-boundary scanning: byte loops over JSON's lexical structure, no trees. */
#include "kube/jprune.h"

#include <string.h>

#include "core/hmap.h"

#define PRUNE_DEPTH 64

/* Every key kube/decode.c looks up, and the envelopes' keys (watch event, list, Status). test_prune.c checks that
 * the decoder reads no key missing here (it records the decoder's lookups) and decodes pruned and full objects
 * alike: add a key here when the decoder starts reading it. */
const char *const kube_jprune_keys[] = {
	/* envelopes */
	"type", "object", "items", "metadata", "continue", "resourceVersion", "code", "message", "reason", "kind",
	/* metadata */
	"name", "namespace", "uid", "generation", "creationTimestamp", "deletionTimestamp", "ownerReferences",
	"controller", "labels",
	/* VirtualMachine */
	"spec", "status", "runStrategy", "running", "template", "domain", "cpu", "cores", "memory", "guest",
	"resources", "requests", "instancetype", "printableStatus", "ready", "created", "conditions", "stateChangeRequests",
	"action", "startFailure", "consecutiveFailCount", "retryAfterTimestamp", "lastFailedVMIUID",
	"desiredGeneration", "observedGeneration",
	/* conditions */
	"status", "lastTransitionTime", "lastProbeTime",
	/* VirtualMachineInstance */
	"phase", "nodeName", "interfaces", "ipAddress", "ipAddresses", "phaseTransitionTimestamps",
	"phaseTransitionTimestamp", "guestOSInfo", "prettyName", "version", "activePods", "migrationState",
	"startTimestamp", "endTimestamp", "sourceNode", "targetNode", "sourcePod", "targetPod", "completed", "failed",
	"abortRequested", "abortStatus", "failureReason", "migrationUid", "mode", "evictionStrategy", "guestAgentVersion",
	/* Pod */
	"containers", "containerStatuses", "initContainerStatuses", "restartCount", "state", "lastState", "waiting",
	"running", "terminated", "startedAt", "exitCode", "podIP",
	/* Event */
	"involvedObject", "regarding", "count", "firstTimestamp", "lastTimestamp", "eventTime", "series",
	"lastObservedTime", "source", "component", "reportingComponent", "reportingController", "note",
	"deprecatedCount", "deprecatedFirstTimestamp", "deprecatedLastTimestamp", "deprecatedSource",
	NULL,
};

const char *const kube_jprune_whole[] = { "labels", "activePods", NULL };

static struct hmap keyset;
static bool keyset_ready;
static int cls_keep = 1, cls_whole = 2;

static void keyset_init(void)
{
	hmap_init(&keyset);
	for (const char *const *k = kube_jprune_keys; *k; k++)
		hmap_put(&keyset, *k, &cls_keep);
	for (const char *const *k = kube_jprune_whole; *k; k++)
		hmap_put(&keyset, *k, &cls_whole);
	keyset_ready = true;
}

int kube_jprune_class(const char *key, size_t len)
{
	char tmp[64];
	if (len >= sizeof tmp || memchr(key, '\\', len))
		return 0; /* no kept key is that long or escaped */
	if (!keyset_ready)
		keyset_init();
	memcpy(tmp, key, len);
	tmp[len] = '\0';
	int *c = hmap_get(&keyset, tmp);
	return c ? *c : 0;
}

struct pr {
	const char *in;
	size_t len, pos;
	char *out;
	size_t o;
};

static void ws(struct pr *p)
{
	while (p->pos < p->len) {
		char c = p->in[p->pos];
		if (c != ' ' && c != '\n' && c != '\r' && c != '\t')
			break;
		p->pos++;
	}
}

/* At an opening quote: returns the index after the closing quote, or 0. */
static size_t string_end(const struct pr *p, size_t i)
{
	const char *s = p->in;
	for (i++; i < p->len; i++) {
		const char *q = memchr(s + i, '"', p->len - i);
		if (q == NULL)
			return 0;
		size_t j = (size_t)(q - s);
		size_t bs = 0;
		while (j - bs > i - 1 && s[j - 1 - bs] == '\\')
			bs++;
		if (bs % 2 == 0)
			return j + 1;
		i = j;
	}
	return 0;
}

/* End of the value at pos (after skipping it), or 0 when malformed. */
static size_t value_end(const struct pr *p, size_t i)
{
	if (i >= p->len)
		return 0;
	char c = p->in[i];
	if (c == '"')
		return string_end(p, i);
	if (c == '{' || c == '[') {
		struct kube_jscan st = { 0 };
		ssize_t n = kube_jscan(&st, p->in + i, p->len - i);
		return n > 0 ? i + (size_t)n : 0;
	}
	size_t j = i;
	while (j < p->len && !strchr(",}] \n\r\t", p->in[j]))
		j++;
	return j > i ? j : 0;
}

static void emit(struct pr *p, const char *s, size_t n)
{
	memcpy(p->out + p->o, s, n);
	p->o += n;
}

static int prune_value(struct pr *p, int depth);

static int prune_object(struct pr *p, int depth)
{
	emit(p, "{", 1);
	p->pos++;
	bool first = true;
	for (;;) {
		ws(p);
		if (p->pos >= p->len)
			return -1;
		if (p->in[p->pos] == '}') {
			p->pos++;
			emit(p, "}", 1);
			return 0;
		}
		if (p->in[p->pos] != '"')
			return -1;
		size_t ks = p->pos, ke = string_end(p, ks);
		if (ke == 0)
			return -1;
		p->pos = ke;
		ws(p);
		if (p->pos >= p->len || p->in[p->pos] != ':')
			return -1;
		p->pos++;
		ws(p);
		int cls = kube_jprune_class(p->in + ks + 1, ke - ks - 2);
		if (cls == 1) { /* descend: the recursion advances pos, no separate scan */
			if (!first)
				emit(p, ",", 1);
			first = false;
			emit(p, p->in + ks, ke - ks);
			emit(p, ":", 1);
			if (prune_value(p, depth + 1) < 0)
				return -1;
		} else {
			size_t ve = value_end(p, p->pos);
			if (ve == 0)
				return -1;
			if (cls == 2) {
				if (!first)
					emit(p, ",", 1);
				first = false;
				emit(p, p->in + ks, ke - ks);
				emit(p, ":", 1);
				emit(p, p->in + p->pos, ve - p->pos);
			}
			p->pos = ve;
		}
		ws(p);
		if (p->pos < p->len && p->in[p->pos] == ',')
			p->pos++;
		else if (p->pos >= p->len || p->in[p->pos] != '}')
			return -1;
	}
}

static int prune_array(struct pr *p, int depth)
{
	emit(p, "[", 1);
	p->pos++;
	bool first = true;
	for (;;) {
		ws(p);
		if (p->pos >= p->len)
			return -1;
		if (p->in[p->pos] == ']') {
			p->pos++;
			emit(p, "]", 1);
			return 0;
		}
		if (!first)
			emit(p, ",", 1);
		first = false;
		if (prune_value(p, depth + 1) < 0)
			return -1;
		ws(p);
		if (p->pos < p->len && p->in[p->pos] == ',')
			p->pos++;
		else if (p->pos >= p->len || p->in[p->pos] != ']')
			return -1;
	}
}

static int prune_value(struct pr *p, int depth)
{
	if (depth > PRUNE_DEPTH || p->pos >= p->len)
		return -1;
	char c = p->in[p->pos];
	if (c == '{')
		return prune_object(p, depth);
	if (c == '[')
		return prune_array(p, depth);
	size_t ve = value_end(p, p->pos);
	if (ve == 0)
		return -1;
	emit(p, p->in + p->pos, ve - p->pos);
	p->pos = ve;
	return 0;
}

ssize_t kube_jprune(const char *in, size_t len, char *out)
{
	struct pr p = { .in = in, .len = len, .out = out };
	ws(&p);
	if (prune_value(&p, 0) < 0)
		return -1;
	ws(&p);
	if (p.pos != len)
		return -1;
	return (ssize_t)p.o;
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

ssize_t kube_jscan(struct kube_jscan *st, const char *in, size_t len)
{
	size_t i = 0;
	while (i < len) {
		if (st->in_string) {
			i = skip_string(st, in, i, len);
			continue;
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
