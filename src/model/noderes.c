/* A node's allocatable and requested CPU and memory as `kubectl describe node` computes them (see noderes.h):
 * k8s.io/apimachinery's resource.Quantity for the arithmetic and the text, k8s.io/kubectl's
 * PodRequestsAndLimits for a pod's requests, describe's "Allocated resources" for the cell. */
#include "model/noderes.h"

#include <json.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *const dec_suffix[] = { "n", "u", "m", "", "k", "M", "G", "T", "P", "E" }; /* 10^-9 .. 10^18 */
static const char *const bin_suffix[] = { "", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei" };

static bool mul_ovf(int64_t *v, int64_t f)
{
	return __builtin_mul_overflow(*v, f, v);
}

static void normalize(struct quantity *q)
{
	if (q->v == 0) {
		q->scale = 0;
		return;
	}
	while (q->v % 10 == 0) {
		q->v /= 10;
		q->scale++;
	}
}

bool quantity_parse(const char *s, struct quantity *q)
{
	*q = (struct quantity){ 0, 0, QTY_NONE };
	if (s == NULL || *s == '\0')
		return false;
	bool neg = false;
	if (*s == '+' || *s == '-')
		neg = *s++ == '-';
	int64_t v = 0;
	int scale = 0, digits = 0;
	bool frac = false, seen = false;
	for (; (*s >= '0' && *s <= '9') || (*s == '.' && !frac); s++) {
		if (*s == '.') {
			frac = true;
			continue;
		}
		seen = true;
		if (v == 0 && *s == '0' && !frac)
			continue;
		if (digits >= 18)
			return false; /* more precision than kvcon keeps */
		v = v * 10 + (*s - '0');
		digits++;
		if (frac)
			scale--;
	}
	if (!seen)
		return false;
	enum quantity_format fmt = QTY_DECIMAL_SI;
	if (*s == 'e' || (*s == 'E' && s[1] != '\0')) {
		int e;
		char end;
		if (sscanf(s + 1, "%d%c", &e, &end) != 1)
			return false;
		scale += e;
		fmt = QTY_DECIMAL_EXP;
	} else if (*s && s[1] == 'i' && s[2] == '\0') {
		int k = 0;
		for (k = 1; k < 7 && bin_suffix[k][0] != s[0]; k++)
			;
		if (k == 7)
			return false;
		for (int i = 0; i < k; i++)
			if (mul_ovf(&v, 1024))
				return false;
		fmt = QTY_BINARY_SI;
	} else if (*s) {
		int k;
		for (k = 0; k < 10 && !(dec_suffix[k][0] == s[0] && s[1] == '\0'); k++)
			;
		if (k == 10 || k == 3)
			return false;
		scale += (k - 3) * 3;
	}
	q->v = neg ? -v : v;
	q->scale = scale;
	q->fmt = fmt;
	normalize(q);
	return true;
}

/* a's and b's values at the smaller of their scales */
static void align(const struct quantity *a, const struct quantity *b, int64_t *av, int64_t *bv)
{
	*av = a->v;
	*bv = b->v;
	for (int s = a->scale; s > b->scale; s--)
		mul_ovf(av, 10);
	for (int s = b->scale; s > a->scale; s--)
		mul_ovf(bv, 10);
}

void quantity_add(struct quantity *a, const struct quantity *b)
{
	if (a->v == 0)
		a->fmt = b->fmt; /* Quantity.Add: a zero takes the other's format */
	int64_t av, bv;
	align(a, b, &av, &bv);
	a->scale = a->scale < b->scale ? a->scale : b->scale;
	a->v = av + bv;
	normalize(a);
}

static int quantity_cmp(const struct quantity *a, const struct quantity *b)
{
	int64_t av, bv;
	align(a, b, &av, &bv);
	return av < bv ? -1 : av > bv;
}

void quantity_format(const struct quantity *q, char *buf, size_t len)
{
	enum quantity_format fmt = q->fmt;
	int64_t iv = q->v;
	bool integral = q->scale >= 0;
	for (int s = 0; integral && s < q->scale; s++)
		if (mul_ovf(&iv, 10))
			integral = false;
	/* BinarySI only for an exact integer of 1024 or more (CanonicalizeBytes) */
	if (fmt == QTY_BINARY_SI && (!integral || (iv > -1024 && iv < 1024)))
		fmt = QTY_DECIMAL_SI;
	if (fmt == QTY_BINARY_SI) {
		int e = 0;
		while (e < 6 && iv % 1024 == 0) {
			iv /= 1024;
			e++;
		}
		snprintf(buf, len, "%lld%s", (long long)iv, bin_suffix[e]);
		return;
	}
	int64_t amount = q->v;
	int exp = q->v ? q->scale : 0;
	/* the exponent a multiple of 3 (AsCanonicalBytes) */
	int m = exp % 3;
	if (m == 1 || m == -2) {
		mul_ovf(&amount, 10);
		exp -= 1;
	} else if (m == 2 || m == -1) {
		mul_ovf(&amount, 100);
		exp -= 2;
	}
	if (fmt == QTY_DECIMAL_EXP || exp < -9 || exp > 18) {
		if (exp)
			snprintf(buf, len, "%llde%d", (long long)amount, exp);
		else
			snprintf(buf, len, "%lld", (long long)amount);
		return;
	}
	snprintf(buf, len, "%lld%s", (long long)amount, dec_suffix[exp / 3 + 3]);
}

/* ---- a pod's requests (kubectl's PodRequestsAndLimits) ---- */

struct reqs {
	struct quantity q[2]; /* cpu, memory */
	bool set[2];
};

static const char *const res_names[2] = { "cpu", "memory" };

static void reqs_of(struct json_object *resources_list, struct reqs *r)
{
	*r = (struct reqs){ 0 };
	for (int i = 0; i < 2; i++) {
		struct json_object *v;
		if (resources_list && json_object_object_get_ex(resources_list, res_names[i], &v) &&
		    quantity_parse(json_object_get_string(v), &r->q[i]))
			r->set[i] = true;
	}
}

static struct json_object *container_requests(struct json_object *c)
{
	struct json_object *res, *req;
	if (json_object_object_get_ex(c, "resources", &res) && json_object_object_get_ex(res, "requests", &req))
		return req;
	return NULL;
}

static void add_list(struct reqs *to, const struct reqs *from)
{
	for (int i = 0; i < 2; i++) {
		if (!from->set[i])
			continue;
		if (!to->set[i])
			to->q[i] = from->q[i];
		else
			quantity_add(&to->q[i], &from->q[i]);
		to->set[i] = true;
	}
}

static void max_list(struct reqs *to, const struct reqs *from)
{
	for (int i = 0; i < 2; i++)
		if (from->set[i] && (!to->set[i] || quantity_cmp(&from->q[i], &to->q[i]) > 0)) {
			to->q[i] = from->q[i];
			to->set[i] = true;
		}
}

static struct json_object *arr(struct json_object *spec, const char *key)
{
	struct json_object *a;
	return spec && json_object_object_get_ex(spec, key, &a) && json_object_is_type(a, json_type_array) ? a : NULL;
}

void noderes_pod_requests(struct json_object *pod, struct quantity *cpu, struct quantity *mem)
{
	struct json_object *spec = NULL;
	json_object_object_get_ex(pod, "spec", &spec);
	struct reqs total = { 0 }, sidecars = { 0 }, init = { 0 }, one;
	struct json_object *cs = arr(spec, "containers"), *ics = arr(spec, "initContainers");
	for (size_t i = 0; cs && i < json_object_array_length(cs); i++) {
		reqs_of(container_requests(json_object_array_get_idx(cs, i)), &one);
		add_list(&total, &one);
	}
	for (size_t i = 0; ics && i < json_object_array_length(ics); i++) {
		struct json_object *c = json_object_array_get_idx(ics, i), *rp;
		reqs_of(container_requests(c), &one);
		if (json_object_object_get_ex(c, "restartPolicy", &rp) && strcmp(json_object_get_string(rp), "Always") == 0) {
			/* a sidecar runs beside the containers and the init containers after it */
			add_list(&total, &one);
			add_list(&sidecars, &one);
			max_list(&init, &sidecars);
		} else {
			struct reqs tmp = { 0 };
			add_list(&tmp, &one);
			add_list(&tmp, &sidecars);
			max_list(&init, &tmp);
		}
	}
	max_list(&total, &init);
	struct json_object *ov = NULL;
	if (spec && json_object_object_get_ex(spec, "overhead", &ov)) {
		reqs_of(ov, &one);
		add_list(&total, &one);
	}
	*cpu = total.set[0] ? total.q[0] : (struct quantity){ 0, 0, QTY_NONE };
	*mem = total.set[1] ? total.q[1] : (struct quantity){ 0, 0, QTY_NONE };
}

/* Quantity.MilliValue / Value: rounded up. 10^|e| by multiplication (exact for the scales quantities have; kvcon
 * links no libm for one powl), divided by for a negative e: one rounding before ceill. */
static long double scaled(const struct quantity *q, int to)
{
	long e = (long)q->scale - to, k = e < 0 ? -e : e;
	long double p = 1;
	for (long i = 0; i < k && i < 5000; i++) /* past 10^4932: inf, as powl */
		p *= 10;
	return ceill(e < 0 ? (long double)q->v / p : (long double)q->v * p);
}

void noderes_cell(const struct quantity *req, const struct quantity *alloc, bool cpu, char *buf, size_t len)
{
	char t[64];
	quantity_format(req, t, sizeof t);
	int unit = cpu ? -3 : 0;
	long double a = scaled(alloc, unit);
	long long pct = a != 0 ? (long long)((double)scaled(req, unit) / (double)a * 100) : 0;
	snprintf(buf, len, "%s (%lld%%)", t, pct);
}
