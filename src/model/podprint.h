/* kubectl's pod printer (kubernetes pkg/printers/internalversion printPod): the READY, STATUS and RESTARTS a
 * `kubectl get pods` row shows, computed once from the decoded pod or from the API object, so `get`, the
 * dashboard, describe, diagnose's evidence and the API server's Tables say what kubectl says.
 * STATUS: the pod's reason or phase; SchedulingGated; the first init container that has not completed
 * (Init:REASON, Init:ExitCode:N, Init:Signal:N, Init:I/N); else each container's waiting reason, terminated
 * reason, Signal:N or ExitCode:N, the first container winning (kubectl walks them backwards); Completed with a
 * running container reads Running or NotReady; Unknown for a deleted pod whose node is lost, Terminating for any
 * other deleted pod that has not finished. RESTARTS: the sum, with the age of the last restart ("6 (5m ago)"). */
#ifndef KVCON_MODEL_PODPRINT_H
#define KVCON_MODEL_PODPRINT_H

#include <json.h>
#include <stddef.h>
#include <stdint.h>

#include "model/obj.h"

struct podprint {
	char status[96];
	int ready, total, restarts;
	int64_t last_restart; /* epoch seconds of the last restart (finishedAt of a last state), 0 unknown */
};

/* The printer over a decoded pod. */
void podprint_pod(const struct pod *p, struct podprint *out);
/* The printer over the API object (a Pod as JSON). */
void podprint_json(struct json_object *pod, struct podprint *out);
/* RESTARTS as kubectl prints it at now: "6 (5m17s ago)", or "0". */
void podprint_restarts(const struct podprint *pp, int64_t now, char *buf, size_t len);

#endif
