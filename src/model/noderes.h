/* A node's allocatable and requested CPU and memory as `kubectl describe node` computes them: resource
 * quantities (Kubernetes' resource.Quantity: parsed, added, compared and printed in its canonical form, the
 * format of the first non-zero term kept), a pod's requests (containers, sidecars, the largest init container,
 * overhead: kubectl's PodRequestsAndLimits) and the "400m (5%)" cell of its "Allocated resources". Pure. */
#ifndef KVCON_MODEL_NODERES_H
#define KVCON_MODEL_NODERES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct json_object;

enum quantity_format { QTY_NONE, QTY_DECIMAL_SI, QTY_BINARY_SI, QTY_DECIMAL_EXP };

/* v * 10^scale, in the format it was written in (QTY_NONE: zero, never set) */
struct quantity {
	int64_t v;
	int scale;
	enum quantity_format fmt;
};

/* false (q zero) when s is not a quantity */
bool quantity_parse(const char *s, struct quantity *q);
void quantity_add(struct quantity *a, const struct quantity *b);
/* The canonical text ("400m", "512Mi", "135217728", "0") into buf. */
void quantity_format(const struct quantity *q, char *buf, size_t len);

/* The requests of a pod (its JSON) for cpu and memory, as kubectl sums them. */
void noderes_pod_requests(struct json_object *pod, struct quantity *cpu, struct quantity *mem);
/* kubectl's "REQ (P%)" of allocatable alloc (P truncated; 0 when alloc is 0). */
void noderes_cell(const struct quantity *req, const struct quantity *alloc, bool cpu, char *buf, size_t len);

#endif
