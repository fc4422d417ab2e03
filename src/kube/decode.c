/* Kubernetes JSON (json-c trees) to the model's compact structs. Every accessor checks the JSON type and
 * treats a mismatch as absence, so a wrong-typed field never reaches the model; every string and list is
 * capped so a hostile server cannot make one object large. */
#include "kube/decode.h"

#include <json-c/json.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/intern.h"
#include "core/util.h"
#include "core/xmalloc.h"

/* ---- typed accessors ---- */

/* The member key of object o, or NULL (also when its value is null). The objects the decoder reads are mostly
 * small (a condition, an owner reference, metadata): comparing their few keys costs less than hashing the key for
 * json-c's table. */
static struct json_object *jmember(struct json_object *o, const char *key)
{
	if (kube_decode_lookup_hook)
		kube_decode_lookup_hook(o, key);
	struct lh_table *t = json_object_get_object(o);
	if (t == NULL)
		return NULL;
	if (t->count > 8) {
		struct json_object *v;
		return json_object_object_get_ex(o, key, &v) ? v : NULL;
	}
	for (struct lh_entry *e = lh_table_head(t); e; e = lh_entry_next(e)) {
		const char *k = lh_entry_k(e);
		if (k[0] == key[0] && strcmp(k, key) == 0)
			return (struct json_object *)lh_entry_v(e);
	}
	return NULL;
}

static struct json_object *jget(struct json_object *o, const char *key, enum json_type type)
{
	if (o == NULL || !json_object_is_type(o, json_type_object))
		return NULL;
	struct json_object *v = jmember(o, key);
	return v && json_object_is_type(v, type) ? v : NULL;
}

static struct json_object *jobj(struct json_object *o, const char *key)
{
	return jget(o, key, json_type_object);
}

static struct json_object *jarr(struct json_object *o, const char *key)
{
	return jget(o, key, json_type_array);
}

/* The string at key with its length (up to an embedded NUL), or NULL. */
static const char *jstr(struct json_object *o, const char *key, size_t *len)
{
	struct json_object *v = jget(o, key, json_type_string);
	if (v == NULL)
		return NULL;
	const char *s = json_object_get_string(v);
	if (len)
		*len = strnlen(s, (size_t)json_object_get_string_len(v));
	return s;
}

static bool jbool(struct json_object *o, const char *key, bool *out)
{
	struct json_object *v = jget(o, key, json_type_boolean);
	if (v == NULL)
		return false;
	*out = json_object_get_boolean(v);
	return true;
}

static bool jtrue(struct json_object *o, const char *key)
{
	bool b = false;
	return jbool(o, key, &b) && b;
}

/* Integers, clamped to [lo, hi]; doubles accepted when integral (JSON has one number type). */
static int64_t jint(struct json_object *o, const char *key, int64_t def, int64_t lo, int64_t hi)
{
	struct json_object *v = o && json_object_is_type(o, json_type_object) ? jmember(o, key) : NULL;
	if (v == NULL)
		return def;
	int64_t n;
	if (json_object_is_type(v, json_type_int)) {
		n = json_object_get_int64(v);
	} else if (json_object_is_type(v, json_type_double)) {
		double d = json_object_get_double(v);
		if (!(d >= -9.2e18 && d <= 9.2e18))
			return def;
		n = (int64_t)d;
	} else {
		return def;
	}
	return n < lo ? lo : n > hi ? hi : n;
}

/* RFC 3339 timestamp at key, or 0 (also outside 1970..2106, which the model's 32-bit times cannot hold). */
static int64_t jtime(struct json_object *o, const char *key)
{
	size_t len;
	const char *s = jstr(o, key, &len);
	int64_t t = 0;
	if (s == NULL || len > 64 || util_parse_time(s, &t) < 0 || t < 0 || t > (int64_t)UINT32_MAX)
		return 0;
	return t;
}

/* ---- scratch memory: one decode's parts, reused from object to object; obj_pack_copy then puts the object in
 * one allocation. Saves a malloc and a free per string and list, and the heap churn that fragments a store. ---- */

#define SCRATCH_BLOCK (64 * 1024)

struct scratch_block {
	struct scratch_block *next;
	size_t used, size;
	max_align_t data[];
};

static struct scratch_block *scratch; /* the first block stays; the ones a large object needed go at reset */

static void scratch_reset(void)
{
	while (scratch && (scratch->next || scratch->size > SCRATCH_BLOCK)) {
		struct scratch_block *b = scratch;
		scratch = b->next;
		free(b);
	}
	if (scratch)
		scratch->used = 0;
}

/* Zeroed memory valid until the next kube_decode. */
static void *scratch_alloc(size_t n)
{
	n = (n + sizeof(max_align_t) - 1) & ~(sizeof(max_align_t) - 1);
	if (scratch == NULL || scratch->size - scratch->used < n) {
		size_t size = n > SCRATCH_BLOCK ? n : SCRATCH_BLOCK;
		struct scratch_block *b = xmalloc(sizeof *b + size);
		b->size = size;
		b->used = 0;
		b->next = scratch;
		scratch = b;
	}
	void *p = (char *)scratch->data + scratch->used;
	scratch->used += n;
	return memset(p, 0, n);
}

static char *scratch_strndup(const char *s, size_t n)
{
	char *d = scratch_alloc(n + 1);
	memcpy(d, s, n);
	return d;
}

/* ---- capped copies ---- */

/* Length of s cut to at most cap bytes without splitting a UTF-8 sequence. */
static size_t cut_utf8(const char *s, size_t len, size_t cap)
{
	if (len <= cap)
		return len;
	size_t n = cap;
	/* step back over continuation bytes to the lead byte, which is dropped with its sequence */
	while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
		n--;
	return n;
}

static char *dup_cap(const char *s, size_t len, size_t cap)
{
	if (s == NULL)
		return NULL;
	return scratch_strndup(s, cut_utf8(s, len, cap));
}

static char *jdup(struct json_object *o, const char *key, size_t cap)
{
	size_t len;
	const char *s = jstr(o, key, &len);
	return s ? dup_cap(s, len, cap) : NULL;
}

/* s is NUL-terminated at or after len (json-c strings, label values): uncut, it is interned without a copy. */
static const char *intern_cap(const char *s, size_t len)
{
	if (s == NULL)
		return NULL;
	size_t n = cut_utf8(s, len, KUBE_DECODE_WORD_MAX);
	return s[n] == '\0' ? intern(s) : intern_n(s, n);
}

static const char *jword(struct json_object *o, const char *key)
{
	size_t len;
	const char *s = jstr(o, key, &len);
	return s ? intern_cap(s, len) : NULL;
}

/* An image reference (registry/repository:tag or @sha256:...), interned: longer than a word, capped at 1 KiB */
static const char *jref(struct json_object *o, const char *key)
{
	size_t len;
	const char *s = jstr(o, key, &len);
	if (s == NULL)
		return NULL;
	size_t n = cut_utf8(s, len, 1024);
	return s[n] == '\0' ? intern(s) : intern_n(s, n);
}

/* Copies a UID; false when absent, empty or too long to be one. */
static bool copy_uid(char dst[UID_LEN], const char *s, size_t len)
{
	if (s == NULL || len == 0 || len >= UID_LEN)
		return false;
	memcpy(dst, s, len);
	dst[len] = '\0';
	return true;
}

static void juid(struct json_object *o, const char *key, char dst[UID_LEN])
{
	size_t len;
	const char *s = jstr(o, key, &len);
	if (!copy_uid(dst, s, len))
		dst[0] = '\0';
}

/* ---- shared parts ---- */

static struct cond *decode_conds(struct json_object *arr, int *n)
{
	size_t len = arr ? json_object_array_length(arr) : 0;
	if (len > KUBE_DECODE_LIST_MAX)
		len = KUBE_DECODE_LIST_MAX;
	*n = 0;
	if (len == 0)
		return NULL;
	struct cond *c = scratch_alloc(len * sizeof *c);
	for (size_t i = 0; i < len; i++) {
		struct json_object *e = json_object_array_get_idx(arr, i);
		const char *type = jword(e, "type");
		if (type == NULL)
			continue; /* a condition without a type cannot be read whole */
		struct cond *d = &c[(*n)++];
		d->type = type;
		d->status = jword(e, "status");
		d->reason = jword(e, "reason");
		d->message = jdup(e, "message", KUBE_DECODE_MSG_MAX);
		d->last_transition = jtime(e, "lastTransitionTime");
		d->last_probe = jtime(e, "lastProbeTime");
	}
	return *n ? c : NULL;
}

/* The owner reference of the given kind: the controller one when there is one, else the first of that kind.
 * Sets *other_kind to the controller's kind when the controller is of another kind. */
static struct json_object *find_owner(struct json_object *meta, const char *kind, const char **other_kind)
{
	struct json_object *refs = jarr(meta, "ownerReferences");
	size_t len = refs ? json_object_array_length(refs) : 0;
	struct json_object *first = NULL;
	if (other_kind)
		*other_kind = NULL;
	for (size_t i = 0; i < len && i < KUBE_DECODE_LIST_MAX; i++) {
		struct json_object *r = json_object_array_get_idx(refs, i);
		const char *k = jstr(r, "kind", NULL);
		bool is_kind = k && strcmp(k, kind) == 0;
		if (jtrue(r, "controller")) {
			if (is_kind)
				return r;
			if (other_kind)
				*other_kind = k ? k : "?";
			return NULL;
		}
		if (is_kind && first == NULL)
			first = r;
	}
	return first;
}

static void decode_labels(struct obj *o, struct json_object *meta)
{
	struct json_object *labels = jobj(meta, "labels");
	if (labels == NULL)
		return;
	const char *keys[KUBE_DECODE_LIST_MAX], *values[KUBE_DECODE_LIST_MAX];
	size_t n = 0;
	json_object_object_foreach(labels, k, v)
	{
		if (n >= KUBE_DECODE_LIST_MAX)
			break;
		if (v == NULL || !json_object_is_type(v, json_type_string))
			continue;
		size_t kl = strnlen(k, 317), vl = strnlen(json_object_get_string(v), (size_t)json_object_get_string_len(v));
		if (kl == 0 || kl >= 317 || strchr(k, '=') || vl > KUBE_DECODE_NAME_MAX)
			continue; /* not a valid label */
		keys[n] = k;
		values[n] = json_object_get_string(v);
		n++;
	}
	if (n == 0)
		return;
	size_t len = obj_labels_encode(NULL, keys, values, n);
	o->labels = scratch_alloc(len);
	obj_labels_encode(o->labels, keys, values, n);
}

static char *errf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *errf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *s = xvasprintf(fmt, ap);
	va_end(ap);
	return s;
}

/* metadata: identity and bookkeeping. Returns NULL or the reason the object is refused (allocated). */
static char *decode_meta(struct obj *o, struct json_object *item)
{
	struct json_object *meta = jobj(item, "metadata");
	if (meta == NULL)
		return errf("%s without metadata", obj_kind_title(o->kind));
	size_t nl = 0, ul = 0, nsl = 0;
	const char *name = jstr(meta, "name", &nl);
	const char *uid = jstr(meta, "uid", &ul);
	const char *ns = jstr(meta, "namespace", &nsl);
	size_t name_max = o->kind == OBJ_EVENT ? 2 * KUBE_DECODE_NAME_MAX : KUBE_DECODE_NAME_MAX;
	if (name == NULL || nl == 0)
		return errf("%s without metadata.name", obj_kind_title(o->kind));
	if (nl > name_max)
		return errf("%s name longer than %zu bytes", obj_kind_title(o->kind), name_max);
	if (uid == NULL || ul == 0)
		return errf("%s %.*s without metadata.uid", obj_kind_title(o->kind), (int)nl, name);
	if (!copy_uid(o->uid, uid, ul))
		return errf("%s %.*s: uid longer than %d bytes", obj_kind_title(o->kind), (int)nl, name, UID_LEN - 1);
	if (nsl > KUBE_DECODE_NS_MAX)
		return errf("%s %.*s: namespace longer than %d bytes", obj_kind_title(o->kind), (int)nl, name,
			    KUBE_DECODE_NS_MAX);
	o->name = scratch_strndup(name, nl);
	o->ns = ns ? intern_n(ns, nsl) : intern("");
	o->created = jtime(meta, "creationTimestamp");
	o->deleted = jtime(meta, "deletionTimestamp");
	o->generation = (uint64_t)jint(meta, "generation", 0, 0, INT64_MAX);
	uint64_t rv;
	if (kube_decode_rv(item, &rv) == 0)
		o->rv = rv;
	decode_labels(o, meta);
	return NULL;
}

int kube_decode_rv(struct json_object *item, uint64_t *rv)
{
	size_t len;
	const char *s = jstr(jobj(item, "metadata"), "resourceVersion", &len);
	if (s == NULL || len == 0 || len > 19)
		return -1;
	uint64_t v = 0;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	*rv = v;
	return 0;
}

/* ---- VirtualMachine ---- */

static void decode_vm(struct obj *o, struct json_object *item)
{
	struct vm *v = (struct vm *)o;
	struct json_object *spec = jobj(item, "spec"), *status = jobj(item, "status");
	bool running = false;
	bool has_running = jbool(spec, "running", &running);
	const char *rs = jword(spec, "runStrategy");
	v->running_field = has_running;
	v->run_conflict = has_running && rs != NULL;
	/* KubeVirt's VirtualMachine.RunStrategy(): spec.running true is Always, false Halted; neither is Halted.
	 * With both set (which the API rejects) the explicit runStrategy is kept and the conflict flagged. */
	if (rs)
		v->run_strategy = rs;
	else
		v->run_strategy = intern(has_running && running ? "Always" : "Halted");

	struct json_object *it = jobj(spec, "instancetype");
	v->instancetype = jdup(it, "name", KUBE_DECODE_NAME_MAX);
	struct json_object *domain = jobj(jobj(jobj(spec, "template"), "spec"), "domain");
	v->cpu_cores = (int)jint(jobj(domain, "cpu"), "cores", 0, 0, 1 << 20);
	v->memory = jdup(jobj(domain, "memory"), "guest", 32);
	if (v->memory == NULL)
		v->memory = jdup(jobj(jobj(domain, "resources"), "requests"), "memory", 32);

	v->printable_status = jword(status, "printableStatus");
	jbool(status, "ready", &v->ready);
	jbool(status, "created", &v->created_vmi);
	v->conds = decode_conds(jarr(status, "conditions"), &v->nconds);

	struct json_object *scr = jarr(status, "stateChangeRequests");
	size_t n = scr ? json_object_array_length(scr) : 0;
	if (n > 16)
		n = 16;
	if (n > 0) {
		v->scr = scratch_alloc(n * sizeof *v->scr);
		for (size_t i = 0; i < n; i++) {
			struct json_object *r = json_object_array_get_idx(scr, i);
			const char *action = jword(r, "action");
			if (action == NULL)
				continue;
			v->scr[v->nscr].action = action;
			juid(r, "uid", v->scr[v->nscr].uid);
			v->nscr++;
		}
		if (v->nscr == 0)
			v->scr = NULL;
	}

	struct json_object *sf = jobj(status, "startFailure");
	if (sf) {
		v->start_failures = (int)jint(sf, "consecutiveFailCount", 0, 0, INT32_MAX);
		v->start_retry_after = jtime(sf, "retryAfterTimestamp");
		juid(sf, "lastFailedVMIUID", v->start_fail_vmi);
	}
	v->observed_generation = (uint64_t)jint(status, "observedGeneration", 0, 0, INT64_MAX);
	v->desired_generation = (uint64_t)jint(status, "desiredGeneration", 0, 0, INT64_MAX);
}

/* ---- VirtualMachineInstance ---- */

static void add_ip(struct vmi *v, const char *s, size_t len)
{
	if (s == NULL || len == 0 || v->nips >= 16)
		return;
	len = cut_utf8(s, len, 64);
	for (int i = 0; i < v->nips; i++)
		if (strlen(v->ips[i]) == len && memcmp(v->ips[i], s, len) == 0)
			return;
	if (v->ips == NULL)
		v->ips = scratch_alloc(16 * sizeof *v->ips);
	v->ips[v->nips++] = scratch_strndup(s, len);
}

static void decode_migration(struct vmi *v, struct json_object *ms)
{
	if (ms == NULL)
		return;
	struct migration_state *m = v->mig = scratch_alloc(sizeof *v->mig);
	m->progress_pct = -1;
	m->present = true;
	m->source_node = jword(ms, "sourceNode");
	m->target_node = jword(ms, "targetNode");
	m->source_pod = jdup(ms, "sourcePod", KUBE_DECODE_NAME_MAX);
	m->target_pod = jdup(ms, "targetPod", KUBE_DECODE_NAME_MAX);
	juid(ms, "migrationUid", m->migration_uid);
	m->start = jtime(ms, "startTimestamp");
	m->end = jtime(ms, "endTimestamp");
	jbool(ms, "completed", &m->completed);
	jbool(ms, "failed", &m->failed);
	jbool(ms, "abortRequested", &m->abort_requested);
	m->abort_status = jword(ms, "abortStatus");
	m->mode = jword(ms, "mode");
	m->failure_reason = jdup(ms, "failureReason", KUBE_DECODE_MSG_MAX);
	/* the kvcon engine service's job figures (no KubeVirt field: docs/ENGINE-SERVICE.md) */
	struct json_object *job = jobj(ms, "kvconJob");
	if (job) {
		m->progress_pct = (int)jint(job, "progress", -1, -1, 100);
		m->data_processed = (uint64_t)jint(job, "dataProcessed", 0, 0, INT64_MAX);
		m->data_remaining = (uint64_t)jint(job, "dataRemaining", 0, 0, INT64_MAX);
		m->dirty_rate = (uint64_t)jint(job, "memoryDirtyRate", 0, 0, INT64_MAX);
		m->iteration = (int)jint(job, "memoryIteration", 0, 0, INT32_MAX);
		m->downtime_ms = jint(job, "downtimeMs", 0, 0, INT64_MAX);
	}
}

static void decode_vmi(struct obj *o, struct json_object *item)
{
	struct vmi *v = (struct vmi *)o;
	struct json_object *meta = jobj(item, "metadata"), *spec = jobj(item, "spec"), *status = jobj(item, "status");
	struct json_object *owner = find_owner(meta, "VirtualMachine", NULL);
	juid(owner, "uid", v->vm_uid);
	v->phase = jword(status, "phase");
	if (v->phase == NULL)
		v->phase = intern("");
	v->reason = jword(status, "reason");
	v->node = jword(status, "nodeName");
	v->eviction = jword(spec, "evictionStrategy");

	struct json_object *ifs = jarr(status, "interfaces");
	size_t n = ifs ? json_object_array_length(ifs) : 0;
	for (size_t i = 0; i < n && i < KUBE_DECODE_LIST_MAX; i++) {
		struct json_object *e = json_object_array_get_idx(ifs, i);
		size_t len;
		const char *ip = jstr(e, "ipAddress", &len);
		if (i == 0 && ip && len > 0)
			v->ip = dup_cap(ip, len, 64);
		int first = v->nips;
		add_ip(v, ip, ip ? len : 0);
		struct json_object *more = jarr(e, "ipAddresses");
		size_t m = more ? json_object_array_length(more) : 0;
		for (size_t j = 0; j < m && j < 16; j++) {
			struct json_object *s = json_object_array_get_idx(more, j);
			if (s && json_object_is_type(s, json_type_string))
				add_ip(v, json_object_get_string(s),
				       strnlen(json_object_get_string(s), (size_t)json_object_get_string_len(s)));
		}
		/* kvcon's engine service: the interface of each address (its network, not a guest agent) and the
		 * ports the engine forwards from the host (status.interfaces[].forwardedPorts, the engine's own) */
		const char *ifn = jword(e, "infoSource") == intern("domain") ? jword(e, "name") : NULL;
		if (ifn && *ifn && v->nips > first) {
			if (v->ip_ifaces == NULL)
				v->ip_ifaces = scratch_alloc(16 * sizeof *v->ip_ifaces);
			for (int k = first; k < v->nips; k++)
				v->ip_ifaces[k] = ifn;
		}
		struct json_object *fw = ifn && *ifn ? jarr(e, "forwardedPorts") : NULL;
		size_t nf = fw ? json_object_array_length(fw) : 0;
		for (size_t j = 0; j < nf && j < 16; j++) {
			struct json_object *f = json_object_array_get_idx(fw, j);
			int port = (int)jint(f, "port", 0, 0, 65535), hport = (int)jint(f, "hostPort", 0, 0, 65535);
			const char *proto = jword(f, "protocol");
			if (port == 0 || hport == 0 || (proto != intern("TCP") && proto != intern("UDP")))
				continue;
			if (v->fwds == NULL)
				v->fwds = scratch_alloc(16 * sizeof *v->fwds);
			if (v->nfwds >= 16)
				break;
			struct port_fwd *p = &v->fwds[v->nfwds++];
			p->iface = ifn;
			p->name = jword(f, "name");
			p->proto = proto;
			p->port = port;
			p->host_port = hport;
		}
	}

	v->conds = decode_conds(jarr(status, "conditions"), &v->nconds);
	v->software_emulation = cond_is_true(v->conds, v->nconds, "SoftwareEmulation");

	struct json_object *pts = jarr(status, "phaseTransitionTimestamps");
	n = pts ? json_object_array_length(pts) : 0;
	if (n > 32)
		n = 32;
	if (n > 0) {
		v->phases = scratch_alloc(n * sizeof *v->phases);
		for (size_t i = 0; i < n; i++) {
			struct json_object *e = json_object_array_get_idx(pts, i);
			const char *ph = jword(e, "phase");
			if (ph == NULL)
				continue;
			v->phases[v->nphases].phase = ph;
			v->phases[v->nphases].at = jtime(e, "phaseTransitionTimestamp");
			v->nphases++;
		}
		if (v->nphases == 0)
			v->phases = NULL;
	}

	struct json_object *gi = jobj(status, "guestOSInfo");
	if (gi) {
		v->guest_os = jdup(gi, "prettyName", 256);
		if (v->guest_os == NULL) {
			size_t nl = 0, vl = 0;
			const char *gname = jstr(gi, "name", &nl), *ver = jstr(gi, "version", &vl);
			if (gname && nl > 0) {
				size_t gl = cut_utf8(gname, nl, 128), vcl = ver ? cut_utf8(ver, vl, 64) : 0;
				v->guest_os = scratch_alloc(gl + 1 + vcl + 1);
				snprintf(v->guest_os, gl + 1 + vcl + 1, "%.*s%s%.*s", (int)gl, gname, vcl ? " " : "",
					 (int)vcl, ver ? ver : "");
			}
		}
	}

	struct json_object *ap = jobj(status, "activePods");
	if (ap) {
		json_object_object_foreach(ap, puid, node)
		{
			if (v->nactive >= 16)
				break;
			struct active_pod a = { .node = NULL };
			if (!copy_uid(a.uid, puid, strlen(puid)))
				continue;
			if (node && json_object_is_type(node, json_type_string))
				a.node = intern_cap(json_object_get_string(node),
						    strnlen(json_object_get_string(node),
							    (size_t)json_object_get_string_len(node)));
			if (v->active == NULL)
				v->active = scratch_alloc(16 * sizeof *v->active);
			v->active[v->nactive++] = a;
		}
	}
	decode_migration(v, jobj(status, "migrationState"));
}

/* ---- launcher Pod ---- */

static void decode_container(struct container_status *c, struct json_object *e, bool init, struct json_object *spec_init)
{
	c->name = jword(e, "name");
	c->image = jref(e, "image");
	c->image_id = jref(e, "imageID");
	c->init = init;
	c->restarts = (int)jint(e, "restartCount", 0, 0, INT32_MAX);
	jbool(e, "ready", &c->ready);
	jbool(e, "started", &c->started_flag);
	for (size_t i = 0; init && spec_init && c->name && i < json_object_array_length(spec_init); i++) {
		struct json_object *sc = json_object_array_get_idx(spec_init, i);
		const char *n = jword(sc, "name"), *rp = jword(sc, "restartPolicy");
		if (n && strcmp(n, c->name) == 0)
			c->restartable = rp && strcmp(rp, "Always") == 0;
	}
	struct json_object *state = jobj(e, "state");
	static const char *const states[] = { "waiting", "running", "terminated" };
	for (size_t i = 0; i < sizeof states / sizeof states[0]; i++) {
		struct json_object *s = jobj(state, states[i]);
		if (s == NULL)
			continue;
		c->state = intern(states[i]);
		c->reason = jword(s, "reason");
		c->message = jdup(s, "message", KUBE_DECODE_MSG_MAX);
		c->started = jtime(s, "startedAt");
		c->exit_code = (int)jint(s, "exitCode", 0, INT32_MIN, INT32_MAX);
		c->signal = (int)jint(s, "signal", 0, INT32_MIN, INT32_MAX);
		break;
	}
	struct json_object *last = jobj(jobj(e, "lastState"), "terminated");
	if (last) {
		c->last_reason = jword(last, "reason");
		c->last_exit_code = (int)jint(last, "exitCode", 0, INT32_MIN, INT32_MAX);
		c->last_finished = (uint32_t)jtime(last, "finishedAt");
	}
}

/* the containers' names, each ending in '\n', interned (kubectl's default container and its list); NULL for none */
static const char *names_of(struct json_object *containers)
{
	char names[1024];
	size_t nl = 0;
	for (size_t i = 0; containers && i < json_object_array_length(containers); i++) {
		const char *cn = jword(json_object_array_get_idx(containers, i), "name");
		if (cn && nl + strlen(cn) + 2 < sizeof names)
			nl += (size_t)snprintf(names + nl, sizeof names - nl, "%s\n", cn);
	}
	return nl ? intern_n(names, nl) : NULL;
}

static void decode_pod(struct obj *o, struct json_object *item)
{
	struct pod *p = (struct pod *)o;
	struct json_object *meta = jobj(item, "metadata"), *spec = jobj(item, "spec"), *status = jobj(item, "status");
	const char *other = NULL;
	struct json_object *owner = find_owner(meta, "VirtualMachineInstance", &other);
	juid(owner, "uid", p->vmi_uid);
	if (other)
		p->owner_kind_other = intern_cap(other, strlen(other));
	const char *vmname = obj_label(&p->o, "vm.kubevirt.io/name");
	p->vm_name = vmname ? intern_cap(vmname, strlen(vmname)) : NULL;

	struct json_object *pid = NULL;
	if (json_object_object_get_ex(jobj(meta, "annotations"), POD_QEMU_PID_ANNOTATION, &pid) &&
	    json_object_is_type(pid, json_type_string)) {
		char *end;
		long n = strtol(json_object_get_string(pid), &end, 10);
		p->pid = *end == '\0' && n > 0 && n <= INT32_MAX ? (int)n : 0;
	}
	p->phase = jword(status, "phase");
	if (p->phase == NULL)
		p->phase = intern("");
	p->node = jword(spec, "nodeName");
	p->reason = jword(status, "reason");
	p->message = jdup(status, "message", KUBE_DECODE_MSG_MAX);
	p->conds = decode_conds(jarr(status, "conditions"), &p->nconds);
	p->ip = jdup(status, "podIP", 64);
	struct json_object *spec_cs = jarr(spec, "containers");
	p->spec_containers = spec_cs ? (int)json_object_array_length(spec_cs) : 0;
	p->spec_names = names_of(spec_cs);
	p->spec_init_names = names_of(jarr(spec, "initContainers"));
	struct json_object *dc = NULL;
	if (json_object_object_get_ex(jobj(meta, "annotations"), "kubectl.kubernetes.io/default-container", &dc) &&
	    json_object_is_type(dc, json_type_string) && json_object_get_string_len(dc) > 0 &&
	    json_object_get_string_len(dc) < 64)
		p->default_container = intern_cap(json_object_get_string(dc), (size_t)json_object_get_string_len(dc));
	struct json_object *spec_init = jarr(spec, "initContainers");
	p->spec_init_containers = spec_init ? (int)json_object_array_length(spec_init) : 0;

	struct json_object *lists[2] = { jarr(status, "initContainerStatuses"), jarr(status, "containerStatuses") };
	size_t total = 0;
	for (int l = 0; l < 2; l++)
		total += lists[l] ? json_object_array_length(lists[l]) : 0;
	if (total > 32)
		total = 32;
	if (total > 0)
		p->containers = scratch_alloc(total * sizeof *p->containers);
	for (int l = 0; l < 2; l++) {
		size_t n = lists[l] ? json_object_array_length(lists[l]) : 0;
		for (size_t i = 0; i < n && (size_t)p->ncontainers < total; i++) {
			struct json_object *e = json_object_array_get_idx(lists[l], i);
			if (e == NULL || !json_object_is_type(e, json_type_object))
				continue;
			struct container_status *c = &p->containers[p->ncontainers++];
			decode_container(c, e, l == 0, spec_init);
			if (!c->init) {
				p->restarts += c->restarts;
				p->ready_containers += c->ready;
			}
		}
	}
}

/* ---- Event (core/v1, with the events.k8s.io/v1 spellings as fallbacks) ---- */

static void decode_event(struct obj *o, struct json_object *item)
{
	struct event *e = (struct event *)o;
	struct json_object *inv = jobj(item, "involvedObject");
	if (inv == NULL)
		inv = jobj(item, "regarding");
	e->inv_kind = jword(inv, "kind");
	e->inv_name = jdup(inv, "name", KUBE_DECODE_NAME_MAX);
	e->inv_ns = jword(inv, "namespace");
	juid(inv, "uid", e->inv_uid);
	e->type = jword(item, "type");
	e->reason = jword(item, "reason");
	e->message = jdup(item, "message", KUBE_DECODE_MSG_MAX);
	if (e->message == NULL)
		e->message = jdup(item, "note", KUBE_DECODE_MSG_MAX);

	struct json_object *series = jobj(item, "series");
	e->count = (int)jint(item, "count", 0, 0, INT32_MAX);
	if (e->count == 0)
		e->count = (int)jint(item, "deprecatedCount", 0, 0, INT32_MAX);
	if (e->count == 0)
		e->count = (int)jint(series, "count", 0, 0, INT32_MAX);
	if (e->count == 0)
		e->count = 1;

	int64_t event_time = jtime(item, "eventTime");
	e->first = jtime(item, "firstTimestamp");
	if (e->first == 0)
		e->first = jtime(item, "deprecatedFirstTimestamp");
	if (e->first == 0)
		e->first = event_time;
	e->last = jtime(item, "lastTimestamp");
	if (e->last == 0)
		e->last = jtime(item, "deprecatedLastTimestamp");
	if (e->last == 0)
		e->last = jtime(series, "lastObservedTime");
	if (e->last == 0)
		e->last = event_time;
	if (e->first == 0)
		e->first = e->last ? e->last : e->o.created;
	if (e->last == 0)
		e->last = e->first;

	e->component = jword(jobj(item, "source"), "component");
	if (e->component == NULL)
		e->component = jword(item, "reportingController");
	if (e->component == NULL)
		e->component = jword(item, "reportingComponent");
	if (e->component == NULL)
		e->component = jword(jobj(item, "deprecatedSource"), "component");
}

/* One row per kind: the kind-specific part of the decoder. */
static const struct {
	void (*fn)(struct obj *o, struct json_object *item);
} decoders[OBJ_KIND_COUNT] = {
	[OBJ_VM] = { decode_vm },
	[OBJ_VMI] = { decode_vmi },
	[OBJ_POD] = { decode_pod },
	[OBJ_EVENT] = { decode_event },
};

struct obj *kube_decode(enum obj_kind kind, struct json_object *item, struct source *src, char **err)
{
	struct obj *t = kube_decode_scratch(kind, item, src, err);
	return t ? obj_pack_copy(t) : NULL;
}

struct obj *kube_decode_scratch(enum obj_kind kind, struct json_object *item, struct source *src, char **err)
{
	char *why = NULL;
	struct obj *o = NULL;
	if (err)
		*err = NULL;
	if ((unsigned)kind >= OBJ_KIND_COUNT) {
		why = errf("unknown object kind %d", (int)kind);
		goto out;
	}
	if (item == NULL || !json_object_is_type(item, json_type_object)) {
		why = errf("%s is not a JSON object", obj_kind_title(kind));
		goto out;
	}
	/* the object is built in scratch memory (kube_decode then packs it into its one allocation) */
	static union {
		struct vm vm;
		struct vmi vmi;
		struct pod pod;
		struct event event;
	} tmp;
	scratch_reset();
	memset(&tmp, 0, sizeof tmp);
	struct obj *t = &tmp.vm.o;
	t->kind = kind;
	t->ns = "";
	t->src = src;
	why = decode_meta(t, item);
	if (why)
		goto out;
	decoders[kind].fn(t, item);
	o = t;
out:
	if (why) {
		if (err)
			*err = why;
		else
			free(why);
	}
	return o;
}
