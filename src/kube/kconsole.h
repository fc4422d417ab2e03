/* KubeVirt's console and VNC subresources as byte streams (core/stream.h): a WebSocket with subprotocol
 * plain.kubevirt.io to the VMI's {console,vnc} subresource, connected with the source's own TLS,
 * client certificate, proxy and credentials. These are the kube provider's open_console / open_vnc. */
#ifndef KVCON_KUBE_KCONSOLE_H
#define KVCON_KUBE_KCONSOLE_H

#include "core/stream.h"
#include "model/source.h"

#define KUBEVIRT_WS_SUBPROTOCOL "plain.kubevirt.io"

struct stream *kube_console_open(struct source *src, const char *ns, const char *name, char **err);
struct stream *kube_vnc_open(struct source *src, const char *ns, const char *name, char **err);

#endif
