/* The engine's claims as the engine service sees them: the volume directory that holds each claim's file
 * (<dir>/<namespace>/<claim>.img or .qcow2), and a gate the service sets so that a VM whose claim is still being
 * provisioned (a DataVolume importing, a claim Pending) waits instead of failing its start, with KubeVirt's
 * printableStatus for the wait. Loop thread only. */
#ifndef KVCON_ENGINE_VOLUMES_H
#define KVCON_ENGINE_VOLUMES_H

#include <stdbool.h>

/* The volume directory ($KVCON_ENGINE_VOLUMES, engine.volumes, else engine-data/volumes). Caller frees. */
char *engine_volume_dir(void);

/* Answers for claim ns/claim (dv: named by a dataVolume volume): NULL when a start may go ahead (ready, or
 * unknown to the service: the file decides, as before), else the VM's printableStatus while it waits
 * ("Provisioning", "WaitingForVolumeBinding", "DataVolumeError"; a static string). node: the node (engine host) a
 * VM that is to run now starts on (its first consumer: a WaitForFirstConsumer claim binds there), NULL when the
 * VM is merely looked at. */
typedef const char *(*engine_volume_gate_fn)(void *arg, const char *ns, const char *claim, bool dv, const char *node);
void engine_volume_gate(engine_volume_gate_fn fn, void *arg);
/* Until engine_volume_gate sets the gate, a start of a VM with a claim waits (Provisioning): the engine service
 * holds it while it opens the hosts, before its storage is read (an import a killed service left must not be
 * taken for a ready disk). */
void engine_volume_gate_hold(void);
/* A claim's readiness changed: the VMs waiting for one are reconciled again. */
void engine_volumes_changed(void);

#endif
