/* Kubernetes JSON (kube/jv.h trees: the pruner's, or copies of json-c's) to the model's compact structs. Every
 * accessor checks the JSON type and treats a mismatch as absence, so a wrong-typed field never reaches the model;
 * every string and list is capped so a hostile server cannot make one object large. */
#include "kube/decode.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/intern.h"
#include "core/util.h"
#include "core/xmalloc.h"
#include "kube/jv.h"

/* ---- typed accessors ---- */

/* The member key of object o, or NULL (also when its value is null). */
static const struct jv *jmember(const struct jv *o, const char *key)
{
	if (kube_decode_lookup_hook)
		kube_decode_lookup_hook(o, key);
	return jv_get(o, key);
}

static const struct jv *jget(const struct jv *o, const char *key, enum jv_type type)
{
	if (o == NULL || o->type != JV_OBJECT)
		return NULL;
	const struct jv *v = jmember(o, key);
	return v && v->type == type ? v : NULL;
}

static const struct jv *jobj(const struct jv *o, const char *key)
{
	return jget(o, key, JV_OBJECT);
}

static const struct jv *jarr(const struct jv *o, const char *key)
{
	return jget(o, key, JV_ARRAY);
}

/* A string value's length up to an escaped NUL (where a C string reader stops). */
static size_t slen(const struct jv *v)
{
	return strnlen(v->u.s, v->n);
}

/* The string at key with its length (up to an embedded NUL), or NULL. */
static const char *jstr(const struct jv *o, const char *key, size_t *len)
{
	const struct jv *v = jget(o, key, JV_STRING);
	if (v == NULL)
		return NULL;
	if (len)
		*len = slen(v);
	return v->u.s;
}

static bool jbool(const struct jv *o, const char *key, bool *out)
{
	const struct jv *v = jget(o, key, JV_BOOL);
	if (v == NULL)
		return false;
	*out = v->b;
	return true;
}

static bool jtrue(const struct jv *o, const char *key)
{
	bool b = false;
	return jbool(o, key, &b) && b;
}

/* Integers, clamped to [lo, hi]; doubles accepted when integral (JSON has one number type). */
static int64_t jint(const struct jv *o, const char *key, int64_t def, int64_t lo, int64_t hi)
{
	const struct jv *v = o && o->type == JV_OBJECT ? jmember(o, key) : NULL;
	if (v == NULL)
		return def;
	int64_t n;
	if (v->type == JV_INT) {
		n = v->u.i;
	} else if (v->type == JV_DOUBLE) {
		double d = v->u.d;
		if (!(d >= -9.2e18 && d <= 9.2e18))
			return def;
		n = (int64_t)d;
	} else {
		return def;
	}
	return n < lo ? lo : n > hi ? hi : n;
}

/* RFC 3339 timestamp at key, or 0 (also outside 1970..2106, which the model's 32-bit times cannot hold). */
static int64_t jtime(const struct jv *o, const char *key)
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

static char *jdup(const struct jv *o, const char *key, size_t cap)
{
	size_t len;
	const char *s = jstr(o, key, &len);
	return s ? dup_cap(s, len, cap) : NULL;
}

/* s is NUL-terminated at or after len (strings of a tree, label values): uncut, it is interned without a copy. */
static const char *intern_cap(const char *s, size_t len)
{
	if (s == NULL)
		return NULL;
	size_t n = cut_utf8(s, len, KUBE_DECODE_WORD_MAX);
	return s[n] == '\0' ? intern(s) : intern_n(s, n);
}

static const char *jword(const struct jv *o, const char *key)
{
	size_t len;
	const char *s = jstr(o, key, &len);
	return s ? intern_cap(s, len) : NULL;
}

/* An image reference (registry/repository:tag or @sha256:...), interned: longer than a word, capped at 1 KiB */
static const char *jref(const struct jv *o, const char *key)
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

static void juid(const struct jv *o, const char *key, char dst[UID_LEN])
{
	size_t len;
	const char *s = jstr(o, key, &len);
	if (!copy_uid(dst, s, len))
		dst[0] = '\0';
}

/* ---- shared parts ---- */

static struct cond *decode_conds(const struct jv *arr, int *n)
{
	size_t len = arr ? jv_len(arr) : 0;
	if (len > KUBE_DECODE_LIST_MAX)
		len = KUBE_DECODE_LIST_MAX;
	*n = 0;
	if (len == 0)
		return NULL;
	struct cond *c = scratch_alloc(len * sizeof *c);
	for (size_t i = 0; i < len; i++) {
		const struct jv *e = jv_idx(arr, i);
		const char *type = jword(e, "type");
		if (type == NULL)
			continue; /* a condition without a type cannot be read whole */
		struct cond *d = &c[(*n)++];
		d->type = type;
		d->stat = cond_status_of(jword(e, "status"));
		d->reason = jword(e, "reason");
		d->message = jdup(e, "message", KUBE_DECODE_MSG_MAX);
		d->last_transition = jtime(e, "lastTransitionTime");
	}
	return *n ? c : NULL;
}

/* The owner reference of the given kind: the controller one when there is one, else the first of that kind.
 * Sets *other_kind to the controller's kind when the controller is of another kind. */
static const struct jv *find_owner(const struct jv *meta, const char *kind, const char **other_kind)
{
	const struct jv *refs = jarr(meta, "ownerReferences");
	size_t len = refs ? jv_len(refs) : 0;
	const struct jv *first = NULL;
	if (other_kind)
		*other_kind = NULL;
	for (size_t i = 0; i < len && i < KUBE_DECODE_LIST_MAX; i++) {
		const struct jv *r = jv_idx(refs, i);
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

static void decode_labels(struct obj *o, const struct jv *meta)
{
	const struct jv *labels = jobj(meta, "labels");
	if (labels == NULL)
		return;
	const char *keys[KUBE_DECODE_LIST_MAX], *values[KUBE_DECODE_LIST_MAX];
	size_t n = 0;
	for (uint32_t i = 0; i < labels->n; i++) {
		const char *k = labels->u.m[i].key;
		const struct jv *v = labels->u.m[i].v;
		if (n >= KUBE_DECODE_LIST_MAX)
			break;
		if (!jv_is(v, JV_STRING))
			continue;
		size_t kl = strnlen(k, 317), vl = slen(v);
		if (kl == 0 || kl >= 317 || strchr(k, '=') || vl > KUBE_DECODE_NAME_MAX)
			continue; /* not a valid label */
		keys[n] = k;
		values[n] = v->u.s;
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

static int decode_rv(const struct jv *item, uint64_t *rv);

/* metadata: identity and bookkeeping. Returns NULL or the reason the object is refused (allocated). */
static char *decode_meta(struct obj *o, const struct jv *item)
{
	const struct jv *meta = jobj(item, "metadata");
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
	if (decode_rv(item, &rv) == 0)
		o->rv = rv;
	decode_labels(o, meta);
	return NULL;
}

static int decode_rv(const struct jv *item, uint64_t *rv)
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

static void decode_vm(struct obj *o, const struct jv *item)
{
	struct vm *v = (struct vm *)o;
	const struct jv *spec = jobj(item, "spec"), *status = jobj(item, "status");
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

	const struct jv *it = jobj(spec, "instancetype");
	v->instancetype = jdup(it, "name", KUBE_DECODE_NAME_MAX);
	const struct jv *domain = jobj(jobj(jobj(spec, "template"), "spec"), "domain");
	v->cpu_cores = (int)jint(jobj(domain, "cpu"), "cores", 0, 0, 1 << 20);
	v->memory = jdup(jobj(domain, "memory"), "guest", 32);
	if (v->memory == NULL)
		v->memory = jdup(jobj(jobj(domain, "resources"), "requests"), "memory", 32);

	v->printable_status = jword(status, "printableStatus");
	jbool(status, "ready", &v->ready);
	jbool(status, "created", &v->created_vmi);
	v->conds = decode_conds(jarr(status, "conditions"), &v->nconds);

	const struct jv *scr = jarr(status, "stateChangeRequests");
	size_t n = scr ? jv_len(scr) : 0;
	if (n > 16)
		n = 16;
	if (n > 0) {
		v->scr = scratch_alloc(n * sizeof *v->scr);
		for (size_t i = 0; i < n; i++) {
			const struct jv *r = jv_idx(scr, i);
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

	const struct jv *sf = jobj(status, "startFailure");
	if (sf) {
		struct start_failure *f = v->sf = scratch_alloc(sizeof *v->sf);
		f->failures = (int)jint(sf, "consecutiveFailCount", 0, 0, INT32_MAX);
		f->retry_after = jtime(sf, "retryAfterTimestamp");
		juid(sf, "lastFailedVMIUID", f->vmi);
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

static void decode_migration(struct vmi *v, const struct jv *ms)
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
	const struct jv *job = jobj(ms, "kvconJob");
	if (job) {
		m->progress_pct = (int)jint(job, "progress", -1, -1, 100);
		m->data_processed = (uint64_t)jint(job, "dataProcessed", 0, 0, INT64_MAX);
		m->data_remaining = (uint64_t)jint(job, "dataRemaining", 0, 0, INT64_MAX);
		m->dirty_rate = (uint64_t)jint(job, "memoryDirtyRate", 0, 0, INT64_MAX);
		m->iteration = (int)jint(job, "memoryIteration", 0, 0, INT32_MAX);
		m->downtime_ms = jint(job, "downtimeMs", 0, 0, INT64_MAX);
	}
}

static void decode_vmi(struct obj *o, const struct jv *item)
{
	struct vmi *v = (struct vmi *)o;
	const struct jv *meta = jobj(item, "metadata"), *spec = jobj(item, "spec"), *status = jobj(item, "status");
	const struct jv *owner = find_owner(meta, "VirtualMachine", NULL);
	juid(owner, "uid", v->vm_uid);
	v->phase = jword(status, "phase");
	if (v->phase == NULL)
		v->phase = intern("");
	v->reason = jword(status, "reason");
	v->node = jword(status, "nodeName");
	v->eviction = jword(spec, "evictionStrategy");

	const struct jv *ifs = jarr(status, "interfaces");
	size_t n = ifs ? jv_len(ifs) : 0;
	for (size_t i = 0; i < n && i < KUBE_DECODE_LIST_MAX; i++) {
		const struct jv *e = jv_idx(ifs, i);
		size_t len;
		const char *ip = jstr(e, "ipAddress", &len);
		if (i == 0 && ip && len > 0)
			v->ip = dup_cap(ip, len, 64);
		int first = v->nips;
		add_ip(v, ip, ip ? len : 0);
		const struct jv *more = jarr(e, "ipAddresses");
		size_t m = more ? jv_len(more) : 0;
		for (size_t j = 0; j < m && j < 16; j++) {
			const struct jv *s = jv_idx(more, j);
			if (jv_is(s, JV_STRING))
				add_ip(v, s->u.s, slen(s));
		}
		/* kvcon's engine service: the interface of each address (its network, not a guest agent) and the
		 * ports the engine forwards from the host (status.interfaces[].forwardedPorts, the engine's own) */
		const char *ifn = jword(e, "infoSource") == intern("domain") ? jword(e, "name") : NULL;
		if (ifn && *ifn && v->net == NULL)
			v->net = scratch_alloc(sizeof *v->net);
		struct vmi_net *net = v->net;
		if (ifn && *ifn && v->nips > first) {
			if (net->ip_ifaces == NULL)
				net->ip_ifaces = scratch_alloc(16 * sizeof *net->ip_ifaces);
			for (int k = first; k < v->nips; k++)
				net->ip_ifaces[k] = ifn;
		}
		const struct jv *fw = ifn && *ifn ? jarr(e, "forwardedPorts") : NULL;
		size_t nf = fw ? jv_len(fw) : 0;
		for (size_t j = 0; j < nf && j < 16; j++) {
			const struct jv *f = jv_idx(fw, j);
			int port = (int)jint(f, "port", 0, 0, 65535), hport = (int)jint(f, "hostPort", 0, 0, 65535);
			const char *proto = jword(f, "protocol");
			if (port == 0 || hport == 0 || (proto != intern("TCP") && proto != intern("UDP")))
				continue;
			if (net->fwds == NULL)
				net->fwds = scratch_alloc(16 * sizeof *net->fwds);
			if (net->nfwds >= 16)
				break;
			struct port_fwd *p = &net->fwds[net->nfwds++];
			p->iface = ifn;
			p->name = jword(f, "name");
			p->proto = proto;
			p->port = port;
			p->host_port = hport;
		}
	}

	v->conds = decode_conds(jarr(status, "conditions"), &v->nconds);
	v->software_emulation = cond_is_true(v->conds, v->nconds, "SoftwareEmulation");

	const struct jv *pts = jarr(status, "phaseTransitionTimestamps");
	n = pts ? jv_len(pts) : 0;
	if (n > 32)
		n = 32;
	if (n > 0) {
		v->phases = scratch_alloc(n * sizeof *v->phases);
		for (size_t i = 0; i < n; i++) {
			const struct jv *e = jv_idx(pts, i);
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

	const struct jv *gi = jobj(status, "guestOSInfo");
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

	const struct jv *ap = jobj(status, "activePods");
	if (ap) {
		for (uint32_t i = 0; i < ap->n; i++) {
			const char *puid = ap->u.m[i].key;
			const struct jv *node = ap->u.m[i].v;
			if (v->nactive >= 16)
				break;
			struct active_pod a = { .node = NULL };
			if (!copy_uid(a.uid, puid, strlen(puid)))
				continue;
			if (jv_is(node, JV_STRING))
				a.node = intern_cap(node->u.s, slen(node));
			if (v->active == NULL)
				v->active = scratch_alloc(16 * sizeof *v->active);
			v->active[v->nactive++] = a;
		}
	}
	decode_migration(v, jobj(status, "migrationState"));
}

/* ---- launcher Pod ---- */

static void decode_container(struct container_status *c, const struct jv *e, bool init, const struct jv *spec_init)
{
	c->name = jword(e, "name");
	c->image = jref(e, "image");
	c->image_id = jref(e, "imageID");
	c->init = init;
	c->restarts = (int)jint(e, "restartCount", 0, 0, INT32_MAX);
	jbool(e, "ready", &c->ready);
	jbool(e, "started", &c->started_flag);
	for (size_t i = 0; init && spec_init && c->name && i < jv_len(spec_init); i++) {
		const struct jv *sc = jv_idx(spec_init, i);
		const char *n = jword(sc, "name"), *rp = jword(sc, "restartPolicy");
		if (n && strcmp(n, c->name) == 0)
			c->restartable = rp && strcmp(rp, "Always") == 0;
	}
	const struct jv *state = jobj(e, "state");
	static const char *const states[] = { "waiting", "running", "terminated" };
	for (size_t i = 0; i < sizeof states / sizeof states[0]; i++) {
		const struct jv *s = jobj(state, states[i]);
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
	const struct jv *last = jobj(jobj(e, "lastState"), "terminated");
	if (last) {
		c->last_reason = jword(last, "reason");
		c->last_exit_code = (int)jint(last, "exitCode", 0, INT32_MIN, INT32_MAX);
		c->last_finished = (uint32_t)jtime(last, "finishedAt");
	}
}

/* the containers' names, each ending in '\n', interned (kubectl's default container and its list); NULL for none */
static const char *names_of(const struct jv *containers)
{
	char names[1024];
	size_t nl = 0;
	for (size_t i = 0; containers && i < jv_len(containers); i++) {
		const char *cn = jword(jv_idx(containers, i), "name");
		size_t cl = cn ? strlen(cn) : 0;
		if (cn && nl + cl + 2 < sizeof names) {
			memcpy(names + nl, cn, cl);
			names[nl + cl] = '\n';
			nl += cl + 1;
		}
	}
	return nl ? intern_n(names, nl) : NULL;
}

static void decode_pod(struct obj *o, const struct jv *item)
{
	struct pod *p = (struct pod *)o;
	const struct jv *meta = jobj(item, "metadata"), *spec = jobj(item, "spec"), *status = jobj(item, "status");
	const char *other = NULL;
	const struct jv *owner = find_owner(meta, "VirtualMachineInstance", &other);
	juid(owner, "uid", p->vmi_uid);
	if (other)
		p->owner_kind_other = intern_cap(other, strlen(other));
	/* the label's own bytes, not an interned copy (one per VM, never freed): packing keeps it in the labels */
	p->vm_name = obj_label(&p->o, "vm.kubevirt.io/name");

	const struct jv *annotations = jobj(meta, "annotations");
	const struct jv *pid = annotations ? jmember(annotations, POD_QEMU_PID_ANNOTATION) : NULL;
	if (jv_is(pid, JV_STRING)) {
		char *end;
		long n = strtol(pid->u.s, &end, 10);
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
	const struct jv *spec_cs = jarr(spec, "containers");
	p->spec_containers = spec_cs ? (int)jv_len(spec_cs) : 0;
	p->spec_names = names_of(spec_cs);
	p->spec_init_names = names_of(jarr(spec, "initContainers"));
	const struct jv *dc = annotations ? jmember(annotations, "kubectl.kubernetes.io/default-container") : NULL;
	if (jv_is(dc, JV_STRING) && dc->n > 0 && dc->n < 64)
		p->default_container = intern_cap(dc->u.s, dc->n);
	const struct jv *spec_init = jarr(spec, "initContainers");
	p->spec_init_containers = spec_init ? (int)jv_len(spec_init) : 0;

	const struct jv *lists[2] = { jarr(status, "initContainerStatuses"), jarr(status, "containerStatuses") };
	size_t total = 0;
	for (int l = 0; l < 2; l++)
		total += lists[l] ? jv_len(lists[l]) : 0;
	if (total > 32)
		total = 32;
	if (total > 0)
		p->containers = scratch_alloc(total * sizeof *p->containers);
	for (int l = 0; l < 2; l++) {
		size_t n = lists[l] ? jv_len(lists[l]) : 0;
		for (size_t i = 0; i < n && (size_t)p->ncontainers < total; i++) {
			const struct jv *e = jv_idx(lists[l], i);
			if (!jv_is(e, JV_OBJECT))
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

static void decode_event(struct obj *o, const struct jv *item)
{
	struct event *e = (struct event *)o;
	const struct jv *inv = jobj(item, "involvedObject");
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

	const struct jv *series = jobj(item, "series");
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
	void (*fn)(struct obj *o, const struct jv *item);
} decoders[OBJ_KIND_COUNT] = {
	[OBJ_VM] = { decode_vm },
	[OBJ_VMI] = { decode_vmi },
	[OBJ_POD] = { decode_pod },
	[OBJ_EVENT] = { decode_event },
};

/* json-c trees are decoded from a copy (tests and tools; the watch and list paths build jv trees themselves) */
static struct jv_arena *copies;

static struct jv *copy_of(struct json_object *item)
{
	if (copies == NULL)
		copies = jv_arena_new();
	jv_arena_reset(copies);
	return jv_from_json(copies, item);
}

struct obj *kube_decode(enum obj_kind kind, struct json_object *item, struct source *src, char **err)
{
	struct obj *t = kube_decode_jv(kind, copy_of(item), src, err);
	return t ? obj_pack_copy(t) : NULL;
}

int kube_decode_rv(struct json_object *item, uint64_t *rv)
{
	return decode_rv(copy_of(item), rv);
}

struct obj *kube_decode_jv(enum obj_kind kind, const struct jv *item, struct source *src, char **err)
{
	char *why = NULL;
	struct obj *o = NULL;
	if (err)
		*err = NULL;
	if ((unsigned)kind >= OBJ_KIND_COUNT) {
		why = errf("unknown object kind %d", (int)kind);
		goto out;
	}
	if (!jv_is(item, JV_OBJECT)) {
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
