/* Allocation, freeing and small accessors of the model's objects. */
#include "model/obj.h"

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/xmalloc.h"

static const struct {
	const char *name;
	const char *title;
	size_t size;
} kinds[OBJ_KIND_COUNT] = {
	[OBJ_VM] = { "vm", "VirtualMachine", sizeof(struct vm) },
	[OBJ_VMI] = { "vmi", "VirtualMachineInstance", sizeof(struct vmi) },
	[OBJ_POD] = { "pod", "Pod", sizeof(struct pod) },
	[OBJ_EVENT] = { "event", "Event", sizeof(struct event) },
};

struct obj *obj_new(enum obj_kind kind)
{
	struct obj *o = xcalloc(1, kinds[kind].size);
	o->kind = kind;
	o->ns = "";
	return o;
}

const char *obj_kind_name(enum obj_kind kind)
{
	return kind < OBJ_KIND_COUNT ? kinds[kind].name : "?";
}

const char *obj_kind_title(enum obj_kind kind)
{
	return kind < OBJ_KIND_COUNT ? kinds[kind].title : "?";
}

static void conds_free(struct cond *conds, int n)
{
	for (int i = 0; i < n; i++)
		free(conds[i].message);
	free(conds);
}

static void mig_free(struct migration_state *m)
{
	if (m == NULL)
		return;
	free(m->source_pod);
	free(m->target_pod);
	free(m->failure_reason);
	free(m);
}

void obj_free(struct obj *o)
{
	if (o == NULL)
		return;
	if (o->flags & OBJ_F_PACKED) {
		free(o);
		return;
	}
	switch (o->kind) {
	case OBJ_VM: {
		struct vm *v = (struct vm *)o;
		conds_free(v->conds, v->nconds);
		free(v->scr);
		free(v->sf);
		free(v->instancetype);
		free(v->memory);
		break;
	}
	case OBJ_VMI: {
		struct vmi *v = (struct vmi *)o;
		free(v->ip);
		for (int i = 0; i < v->nips; i++)
			free(v->ips[i]);
		free(v->ips);
		if (v->net) {
			free(v->net->ip_ifaces);
			free(v->net->ip_guest_ifs);
			free(v->net->fwds);
			free(v->net);
		}
		conds_free(v->conds, v->nconds);
		free(v->phases);
		free(v->guest_os);
		free(v->agent_version);
		free(v->active);
		mig_free(v->mig);
		break;
	}
	case OBJ_POD: {
		struct pod *p = (struct pod *)o;
		free(p->message);
		conds_free(p->conds, p->nconds);
		for (int i = 0; i < p->ncontainers; i++)
			free(p->containers[i].message);
		free(p->containers);
		free(p->ip);
		free(p->cmdline);
		free(p->log_path);
		break;
	}
	case OBJ_EVENT: {
		struct event *e = (struct event *)o;
		free(e->message);
		free(e->inv_name);
		break;
	}
	case OBJ_KIND_COUNT:
		break;
	}
	free(o->name);
	free(o->labels);
	free(o);
}

bool vm_will_run(const struct vm *vm, const struct vmi *vmi)
{
	if (vm == NULL)
		return false;
	const char *last = vm->nscr > 0 ? vm->scr[vm->nscr - 1].action : NULL;
	if (last && strcmp(last, "Start") == 0)
		return true;
	if (last && strcmp(last, "Stop") == 0)
		return false;
	const char *rs = vm->run_strategy ? vm->run_strategy : "";
	if (strcmp(rs, "Always") == 0)
		return true;
	return strcmp(rs, "RerunOnFailure") == 0 && !(vmi && vmi->phase && strcmp(vmi->phase, "Succeeded") == 0);
}

const struct start_failure *vm_start_failure(const struct vm *v)
{
	static const struct start_failure none;
	return v->sf ? v->sf : &none;
}

struct start_failure *vm_start_failure_set(struct vm *v)
{
	if (v->sf == NULL)
		v->sf = xcalloc(1, sizeof *v->sf);
	return v->sf;
}

const struct vmi_net *vmi_net(const struct vmi *v)
{
	static const struct vmi_net none;
	return v->net ? v->net : &none;
}

struct vmi_net *vmi_net_set(struct vmi *v)
{
	if (v->net == NULL)
		v->net = xcalloc(1, sizeof *v->net);
	return v->net;
}

const struct migration_state *vmi_mig(const struct vmi *v)
{
	static const struct migration_state none = { .progress_pct = -1 };
	return v->mig ? v->mig : &none;
}

struct migration_state *vmi_mig_set(struct vmi *v)
{
	if (v->mig == NULL) {
		v->mig = xcalloc(1, sizeof *v->mig);
		v->mig->progress_pct = -1;
	}
	return v->mig;
}

static size_t labels_len(const char *l);
static size_t labels_pack(char *dst, size_t cap, const struct obj *o);

/* ---- packing: two passes over the owned parts, one measuring, one copying into the block ---- */

struct packer {
	char *base; /* NULL while measuring */
	size_t off;
	const char *labels; /* the labels' compact encoding (labels_pack), made once */
	size_t labels_len;
};

static void *pk_mem(struct packer *k, const void *src, size_t n, size_t align)
{
	if (src == NULL)
		return NULL;
	k->off = (k->off + align - 1) & ~(align - 1);
	void *dst = k->base ? k->base + k->off : NULL;
	if (dst)
		memcpy(dst, src, n);
	k->off += n;
	return dst;
}

static char *pk_str(struct packer *k, const char *s)
{
	return s ? pk_mem(k, s, strlen(s) + 1, 1) : NULL;
}

static struct cond *pk_conds(struct packer *k, const struct cond *c, int n)
{
	struct cond *d = pk_mem(k, c, (size_t)n * sizeof *c, _Alignof(struct cond));
	for (int i = 0; i < n; i++) {
		char *m = pk_str(k, c[i].message);
		if (d)
			d[i].message = m;
	}
	return d;
}

/* Points o's owned parts at copies made by k (o is the block's struct, or a scratch copy while measuring; orig the
 * object copied, its parts intact). */
static void pk_relink(struct obj *o, const struct obj *orig, struct packer *k)
{
	o->name = pk_str(k, o->name);
	o->labels = o->labels ? pk_mem(k, k->labels, k->labels_len, 1) : NULL;
	switch (o->kind) {
	case OBJ_VM: {
		struct vm *v = (struct vm *)o;
		v->conds = pk_conds(k, v->conds, v->nconds);
		v->scr = pk_mem(k, v->scr, (size_t)v->nscr * sizeof *v->scr, _Alignof(struct state_change));
		v->sf = pk_mem(k, v->sf, sizeof *v->sf, _Alignof(struct start_failure));
		v->instancetype = pk_str(k, v->instancetype);
		v->memory = pk_str(k, v->memory);
		break;
	}
	case OBJ_VMI: {
		struct vmi *v = (struct vmi *)o;
		char **ips = v->ips;
		v->ips = pk_mem(k, ips, (size_t)v->nips * sizeof *ips, _Alignof(char *));
		for (int i = 0; i < v->nips; i++) {
			char *s = pk_str(k, ips[i]);
			if (v->ips)
				v->ips[i] = s;
		}
		/* ip is status.interfaces[0].ipAddress, most often the first of ips: the same bytes then */
		if (v->ip && v->nips > 0 && strcmp(v->ip, ips[0]) == 0)
			v->ip = v->ips ? v->ips[0] : NULL;
		else
			v->ip = pk_str(k, v->ip);
		struct vmi_net *n = v->net;
		v->net = pk_mem(k, n, sizeof *n, _Alignof(struct vmi_net));
		if (n) {
			size_t ni = (size_t)v->nips;
			const char **ifs = pk_mem(k, n->ip_ifaces, ni * sizeof *n->ip_ifaces, _Alignof(char *));
			const char **gifs = pk_mem(k, n->ip_guest_ifs, ni * sizeof *n->ip_guest_ifs, _Alignof(char *));
			struct port_fwd *f = pk_mem(k, n->fwds, (size_t)n->nfwds * sizeof *n->fwds, _Alignof(struct port_fwd));
			if (v->net) {
				v->net->ip_ifaces = ifs;
				v->net->ip_guest_ifs = gifs;
				v->net->fwds = f;
			}
		}
		v->conds = pk_conds(k, v->conds, v->nconds);
		v->phases = pk_mem(k, v->phases, (size_t)v->nphases * sizeof *v->phases, _Alignof(struct phase_time));
		v->guest_os = pk_str(k, v->guest_os);
		v->agent_version = pk_str(k, v->agent_version);
		v->active = pk_mem(k, v->active, (size_t)v->nactive * sizeof *v->active, _Alignof(struct active_pod));
		struct migration_state *m = v->mig;
		v->mig = pk_mem(k, m, sizeof *m, _Alignof(struct migration_state));
		if (m) {
			char *sp = pk_str(k, m->source_pod), *tp = pk_str(k, m->target_pod);
			char *fr = pk_str(k, m->failure_reason);
			if (v->mig) {
				v->mig->source_pod = sp;
				v->mig->target_pod = tp;
				v->mig->failure_reason = fr;
			}
		}
		break;
	}
	case OBJ_POD: {
		struct pod *p = (struct pod *)o;
		/* vm_name may be one of the labels' values (the decoder's): then it points into their copy */
		const char *vmn = ((const struct pod *)orig)->vm_name, *vmn_key = NULL;
		for (const char *it = NULL, *key, *val; vmn && !vmn_key && obj_label_next(orig, &it, &key, &val);)
			if (val == vmn)
				vmn_key = key;
		if (vmn_key)
			p->vm_name = o->labels ? obj_label(o, vmn_key) : NULL;
		p->message = pk_str(k, p->message);
		p->conds = pk_conds(k, p->conds, p->nconds);
		struct container_status *cs = p->containers;
		p->containers = pk_mem(k, cs, (size_t)p->ncontainers * sizeof *cs, _Alignof(struct container_status));
		for (int i = 0; i < p->ncontainers; i++) {
			char *m = pk_str(k, cs[i].message);
			if (p->containers)
				p->containers[i].message = m;
		}
		p->ip = pk_str(k, p->ip);
		p->cmdline = pk_str(k, p->cmdline);
		p->log_path = pk_str(k, p->log_path);
		break;
	}
	case OBJ_EVENT: {
		struct event *e = (struct event *)o;
		const char *msg = e->message, *inv = e->inv_name;
		e->message = pk_str(k, msg);
		/* KubeVirt's messages often end with the involved object's name ("... instance NAME"): its bytes then */
		size_t ml = msg ? strlen(msg) : 0, il = inv ? strlen(inv) : 0;
		if (inv && msg && il > 0 && il <= ml && memcmp(msg + ml - il, inv, il) == 0)
			e->inv_name = e->message ? e->message + ml - il : NULL;
		else
			e->inv_name = pk_str(k, inv);
		break;
	}
	case OBJ_KIND_COUNT:
		break;
	}
}

struct obj *obj_pack_copy(const struct obj *o)
{
	union {
		struct vm vm;
		struct vmi vmi;
		struct pod pod;
		struct event event;
	} scratch;
	char lbuf[1024], *labels = lbuf;
	size_t labels_len = 0;
	if (o->labels) {
		labels_len = labels_pack(lbuf, sizeof lbuf, o);
		if (labels_len > sizeof lbuf) {
			labels = xmalloc(labels_len);
			labels_pack(labels, labels_len, o);
		}
	}
	size_t size = kinds[o->kind].size;
	memcpy(&scratch, o, size);
	struct packer k = { .base = NULL, .off = size, .labels = labels, .labels_len = labels_len };
	pk_relink((struct obj *)&scratch, o, &k);
	char *blk = xmalloc(k.off);
	memcpy(blk, o, size);
	struct obj *p = (struct obj *)blk;
	p->flags |= OBJ_F_PACKED; /* before the relink: the pod's vm_name is looked up in the packed labels */
	k = (struct packer){ .base = blk, .off = size, .labels = labels, .labels_len = labels_len };
	pk_relink(p, o, &k);
	if (labels != lbuf)
		free(labels);
	return p;
}

struct obj *obj_pack_identity(const struct obj *o)
{
	union {
		struct vm vm;
		struct vmi vmi;
		struct pod pod;
		struct event event;
	} id;
	memset(&id, 0, sizeof id);
	memcpy(&id, o, sizeof(struct obj));
	struct obj *p = (struct obj *)&id;
	p->labels = NULL;
	p->flags &= ~OBJ_F_PACKED;
	return obj_pack_copy(p);
}

/* Labels are packed as entries of a tag byte, the key when the tag is LABEL_LITERAL, and the value, each
 * NUL-terminated, ended by a zero byte: the keys KubeVirt puts on every VMI and launcher pod take one byte.
 * In a packed object (read-only) a value may also be a reference, LABEL_REF then one byte: LABEL_REF_NAME the
 * object's name, LABEL_REF_OWNER its owner's UID (a pod's VMI, a VMI's VM), LABEL_REF_VALUE + i the value
 * label_values[i], LABEL_REF_ENTRY + i the value of the entry i; a literal value that starts with LABEL_REF or
 * LABEL_ESC gets LABEL_ESC before it. KubeVirt repeats the VM's name (kubevirt.io/vm, kubevirt.io/domain,
 * vm.kubevirt.io/name) and the VMI's UID (created-by), and labels every launcher pod kubevirt.io=virt-launcher. */
#define LABEL_LITERAL 0xffu
#define LABEL_REF 0x01
#define LABEL_ESC 0x02
#define LABEL_REF_NAME 1u
#define LABEL_REF_OWNER 2u
#define LABEL_REF_VALUE 3u

static const char *const label_values[] = { "virt-launcher", "true", "false" };
#define LABEL_VALUES (sizeof label_values / sizeof label_values[0])
#define LABEL_REF_ENTRY (LABEL_REF_VALUE + LABEL_VALUES)

static const char *const label_keys[] = {
	NULL, /* tag 0 ends the labels */
	"kubevirt.io", "kubevirt.io/created-by", "vm.kubevirt.io/name", "kubevirt.io/domain", "kubevirt.io/vm",
	"kubevirt.io/nodeName", "kubevirt.io/size", "kubevirt.io/migrationJobUID", "kubevirt.io/migrationTargetNodeName",
	"kubevirt.io/schedulable", "vm.kubevirt.io/template", "vm.kubevirt.io/workload", "vm.kubevirt.io/flavor",
	"kubevirt.io/os", "app", "tier", "app.kubernetes.io/name", "app.kubernetes.io/instance",
	"app.kubernetes.io/component", "app.kubernetes.io/part-of", "app.kubernetes.io/managed-by",
	"app.kubernetes.io/version", "kubevirt.io/install-strategy",
};
#define LABEL_KEYS (sizeof label_keys / sizeof label_keys[0])

static size_t labels_len(const char *l)
{
	const char *p = l;
	while (*p) {
		if ((unsigned char)*p++ == LABEL_LITERAL)
			p += strlen(p) + 1;
		p += strlen(p) + 1;
	}
	return (size_t)(p - l) + 1;
}

/* One entry at dst (when not NULL); returns its length. */
static size_t label_put(char *dst, const char *k, const char *v)
{
	unsigned tag = LABEL_LITERAL;
	for (unsigned i = 1; i < LABEL_KEYS && tag == LABEL_LITERAL; i++)
		if (label_keys[i][0] == k[0] && strcmp(label_keys[i], k) == 0)
			tag = i;
	size_t kl = tag == LABEL_LITERAL ? strlen(k) + 1 : 0, vl = strlen(v) + 1;
	if (dst) {
		*dst++ = (char)tag;
		memcpy(dst, k, kl);
		memcpy(dst + kl, v, vl);
	}
	return 1 + kl + vl;
}

void obj_label_add(struct obj *o, const char *k, const char *v)
{
	size_t old = o->labels ? labels_len(o->labels) - 1 : 0;
	size_t add = label_put(NULL, k, v);
	o->labels = xrealloc(o->labels, old + add + 1);
	label_put(o->labels + old, k, v);
	o->labels[old + add] = '\0';
}

size_t obj_labels_encode(char *dst, const char *const *keys, const char *const *values, size_t n)
{
	size_t off = 0;
	for (size_t i = 0; i < n; i++)
		off += label_put(dst ? dst + off : NULL, keys[i], values[i]);
	if (dst)
		dst[off] = '\0';
	return off + 1;
}

/* The UID a packed label value may refer to, "" when the kind has no owner. */
static const char *label_owner_uid(const struct obj *o)
{
	return o->kind == OBJ_POD ? ((const struct pod *)o)->vmi_uid
	       : o->kind == OBJ_VMI ? ((const struct vmi *)o)->vm_uid
				    : "";
}

/* Steps over the entry at p; *key and *raw (its value as stored) set. */
static const char *label_entry(const char *p, const char **key, const char **raw)
{
	unsigned tag = (unsigned char)*p++;
	if (tag == LABEL_LITERAL) {
		*key = p;
		p += strlen(p) + 1;
	} else {
		*key = tag < LABEL_KEYS ? label_keys[tag] : "?";
	}
	*raw = p;
	return p + strlen(p) + 1;
}

/* A stored value as read: references of packed objects resolved (they name literal values only). */
static const char *label_value(const struct obj *o, const char *raw)
{
	if (!(o->flags & OBJ_F_PACKED))
		return raw;
	if (raw[0] == LABEL_ESC)
		return raw + 1;
	if (raw[0] != LABEL_REF)
		return raw;
	unsigned r = (unsigned char)raw[1];
	if (r == LABEL_REF_NAME)
		return o->name ? o->name : "";
	if (r == LABEL_REF_OWNER)
		return label_owner_uid(o);
	if (r < LABEL_REF_ENTRY)
		return label_values[r - LABEL_REF_VALUE];
	const char *p = o->labels, *key, *v = "";
	for (unsigned i = 0; i <= r - LABEL_REF_ENTRY && *p; i++)
		p = label_entry(p, &key, &v);
	return label_value(o, v);
}

bool obj_label_next(const struct obj *o, const char **it, const char **key, const char **value)
{
	const char *p = *it ? *it : o->labels;
	if (p == NULL || *p == '\0')
		return false;
	const char *raw;
	*it = label_entry(p, key, &raw);
	*value = label_value(o, raw);
	return true;
}

/* Appends n bytes at *off of dst when they fit in cap; *off moves on either way. */
static void lp_put(char *dst, size_t cap, size_t *off, const void *src, size_t n)
{
	if (*off + n <= cap)
		memcpy(dst + *off, src, n);
	*off += n;
}

static bool lp_same(const char *a, const char *b)
{
	return a[0] == b[0] && strcmp(a, b) == 0;
}

/* o's labels re-encoded for its packed copy into dst (written only as far as cap allows): the entries' tags and
 * keys as they are, values equal to the name, the owner's UID, a constant or an earlier literal value as
 * references. Returns the bytes needed, terminator included. */
static size_t labels_pack(char *dst, size_t cap, const struct obj *o)
{
	const char *name = o->name ? o->name : "", *owner = label_owner_uid(o);
	const char *vals[256];
	bool literal[256];
	size_t off = 0;
	unsigned i = 0;
	for (const char *p = o->labels, *key, *raw; p && *p; i++) {
		const char *next = label_entry(p, &key, &raw);
		const char *v = label_value(o, raw);
		size_t vl = strlen(v);
		unsigned ref = 0;
		if (vl >= 3) { /* a reference takes 3 bytes */
			if (lp_same(v, name))
				ref = LABEL_REF_NAME;
			else if (lp_same(v, owner))
				ref = LABEL_REF_OWNER;
			for (unsigned j = 0; ref == 0 && j < LABEL_VALUES; j++)
				if (lp_same(v, label_values[j]))
					ref = LABEL_REF_VALUE + j;
			for (unsigned j = 0; ref == 0 && j < i && j < 256 - LABEL_REF_ENTRY; j++)
				if (literal[j] && lp_same(vals[j], v))
					ref = LABEL_REF_ENTRY + j;
		}
		if (i < sizeof vals / sizeof vals[0]) {
			vals[i] = v;
			literal[i] = ref == 0;
		}
		lp_put(dst, cap, &off, p, (size_t)(raw - p)); /* the tag and the key */
		if (ref) {
			const char r[3] = { LABEL_REF, (char)ref, '\0' };
			lp_put(dst, cap, &off, r, sizeof r);
		} else {
			if (v[0] == LABEL_REF || v[0] == LABEL_ESC)
				lp_put(dst, cap, &off, (const char[]){ LABEL_ESC }, 1);
			lp_put(dst, cap, &off, v, vl + 1);
		}
		p = next;
	}
	lp_put(dst, cap, &off, "", 1);
	return off;
}

const char *obj_label(const struct obj *o, const char *k)
{
	for (const char *it = NULL, *key, *v; obj_label_next(o, &it, &key, &v);)
		if (strcmp(key, k) == 0)
			return v;
	return NULL;
}

const char *pod_created_by(const struct pod *p)
{
	const char *v = obj_label(&p->o, "kubevirt.io/created-by");
	size_t n = v ? strspn(v, "0123456789abcdefABCDEFghijklmnopqrstuvwxyzGHIJKLMNOPQRSTUVWXYZ-") : 0;
	return n > 0 && v[n] == '\0' && n < UID_LEN ? v : "";
}

const struct cond *cond_find(const struct cond *conds, int n, const char *type)
{
	for (int i = 0; i < n; i++)
		if (conds[i].type && strcmp(conds[i].type, type) == 0)
			return &conds[i];
	return NULL;
}

bool cond_is_true(const struct cond *conds, int n, const char *type)
{
	const struct cond *c = cond_find(conds, n, type);
	return c && c->stat == COND_TRUE;
}

const char *cond_status(const struct cond *c)
{
	static const char *const text[] = { [COND_TRUE] = "True", [COND_FALSE] = "False", [COND_UNKNOWN] = "Unknown" };
	return c->stat < sizeof text / sizeof text[0] ? text[c->stat] : NULL;
}

uint8_t cond_status_of(const char *s)
{
	if (s == NULL)
		return COND_UNSET;
	return strcmp(s, "True") == 0 ? COND_TRUE : strcmp(s, "False") == 0 ? COND_FALSE : COND_UNKNOWN;
}

static size_t sz(const void *p)
{
	return p ? malloc_usable_size((void *)p) + 16 : 0;
}

size_t obj_heap_size(const struct obj *o)
{
	if (o->flags & OBJ_F_PACKED)
		return sz(o);
	size_t n = sz(o) + sz(o->name) + sz(o->labels);
	switch (o->kind) {
	case OBJ_VM: {
		const struct vm *v = (const struct vm *)o;
		n += sz(v->conds) + sz(v->scr) + sz(v->sf) + sz(v->instancetype) + sz(v->memory);
		for (int i = 0; i < v->nconds; i++)
			n += sz(v->conds[i].message);
		break;
	}
	case OBJ_VMI: {
		const struct vmi *v = (const struct vmi *)o;
		if (v->net)
			n += sz(v->net) + sz(v->net->ip_ifaces) + sz(v->net->ip_guest_ifs) + sz(v->net->fwds);
		n += sz(v->ip) + sz(v->ips) + sz(v->conds) + sz(v->phases) + sz(v->guest_os) + sz(v->active) + sz(v->mig);
		if (v->mig)
			n += sz(v->mig->source_pod) + sz(v->mig->target_pod) + sz(v->mig->failure_reason);
		for (int i = 0; i < v->nips; i++)
			n += sz(v->ips[i]);
		for (int i = 0; i < v->nconds; i++)
			n += sz(v->conds[i].message);
		break;
	}
	case OBJ_POD: {
		const struct pod *p = (const struct pod *)o;
		n += sz(p->message) + sz(p->conds) + sz(p->containers) + sz(p->ip);
		for (int i = 0; i < p->ncontainers; i++)
			n += sz(p->containers[i].message);
		break;
	}
	case OBJ_EVENT: {
		const struct event *e = (const struct event *)o;
		n += sz(e->message) + sz(e->inv_name);
		break;
	}
	case OBJ_KIND_COUNT:
		break;
	}
	return n;
}
