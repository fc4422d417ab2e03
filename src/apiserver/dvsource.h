/* A DataVolume's source and the phases CDI reports while it fills its claim, as pure functions (no I/O, json-c
 * only) so that tests/unit/test_apiserver.c holds them to CDI's behaviour; storage.c acts on what they say.
 *
 * Sources: blank, http (dvimport.c downloads), registry (docker://REF: the containerDisk's disk through the
 * engine's OCI pull) and pvc (a clone of another claim's volume). Phases: Pending (the claim is not Bound yet, or a
 * clone's source does not exist: CloneWithoutSource), WaitForFirstConsumer (its class binds on first use),
 * ImportScheduled/ImportInProgress (http, registry), CloneScheduled/CloneInProgress (pvc; Scheduled while a running
 * VM uses the source: CloneSourceInUse), Succeeded, Failed. */
#ifndef KVCON_APISERVER_DVSOURCE_H
#define KVCON_APISERVER_DVSOURCE_H

#include <json-c/json.h>
#include <stdbool.h>

enum dvs_kind { DVS_BLANK, DVS_HTTP, DVS_REGISTRY, DVS_PVC };

struct dvs {
	enum dvs_kind kind;
	const char *url;      /* http: the URL; registry: the image reference (docker:// taken off) */
	const char *checksum; /* http: NULL or ALG:HEX */
	const char *ns, *name; /* pvc: the source claim (ns: the DataVolume's own when the source names none) */
};

/* Reads spec.source of a DataVolume in namespace ns (pointers into spec: valid while it lives). 0, or -1 with
 * *why, a 422's cause (caller frees). */
int dvs_parse(json_object *spec, const char *ns, struct dvs *out, char **why);

/* Where the DataVolume's claim is. */
enum dvs_claim { DVS_CLAIM_PENDING, DVS_CLAIM_WFFC, DVS_CLAIM_BOUND };
/* A clone's source claim (READY for the other kinds). */
enum dvs_src { DVS_SRC_READY, DVS_SRC_MISSING, DVS_SRC_IN_USE };

enum dvs_act {
	DVS_WAIT,    /* nothing to start: stay in phase (reason: an event to report once, or NULL) */
	DVS_SUCCEED, /* blank: nothing to copy */
	DVS_START,   /* start the import or clone (phase: its Scheduled phase) */
	DVS_RESTART, /* start it again: a service stopped mid-way (restartCount + 1, as CDI's restarted pod) */
};

struct dvs_step {
	enum dvs_act act;
	const char *phase;  /* the phase to show now */
	const char *reason; /* DVS_WAIT: the event's reason, or NULL */
};

/* The next step of a DataVolume of kind k in phase (its status.phase, "" when new). */
struct dvs_step dvs_next(enum dvs_kind k, const char *phase, enum dvs_claim claim, enum dvs_src src);
/* The phase while the copy runs: ImportInProgress or CloneInProgress; the Scheduled one with scheduled. */
const char *dvs_phase(enum dvs_kind k, bool scheduled);
/* The controller that reports k's events: datavolume-import-controller, datavolume-pvc-clone-controller. */
const char *dvs_component(enum dvs_kind k);

#endif
