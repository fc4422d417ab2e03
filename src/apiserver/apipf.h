/* KubeVirt's portforward subresource served by the engine service (`kvcon engine serve`, apiserver/apisrv.c routes
 * GET .../virtualmachines|virtualmachineinstances/NAME/portforward/PORT[/tcp] here): the WebSocket upgrade
 * (plain.kubevirt.io, binary frames both ways), then a connection to the guest's PORT through a hostfwd rule QEMU
 * adds for it on the pod network's masquerade interface, declared in the interface's ports or not
 * (engine_portforward_open), removed when the stream ends. At most 1 MiB waits in either direction; the service
 * counts these connections as clients (it does not leave while one is open). */
#ifndef KVCON_CMD_APIPF_H
#define KVCON_CMD_APIPF_H

#include <microhttpd.h>
#include <stddef.h>

#include "model/source.h"

/* rest: the path's segments after "portforward" (PORT, maybe the protocol). 0 when it answered (*rc, the
 * upgrade queued), else the HTTP status to answer with and *err (caller frees). */
int apipf_serve(struct MHD_Connection *c, struct source *src, const char *ns, const char *name,
		const char *const *rest, int nrest, enum MHD_Result *rc, char **err);
/* Connections open now. */
size_t apipf_active(void);
/* Ends every connection (the service stops). */
void apipf_close_all(void);

#endif
