/* KubeVirt's console and VNC subresources as byte streams (core/stream.h): a WebSocket with subprotocol
 * plain.kubevirt.io to the VMI's {console,vnc} subresource, connected with the source's own TLS,
 * client certificate, proxy and credentials. The kube provider's open_console, open_vnc and open_portforward
 * (kube/kube.c) call these with its source's client (h: NULL is "not a cluster source") and name (for the
 * stream's label). */
#ifndef KVCON_KUBE_KCONSOLE_H
#define KVCON_KUBE_KCONSOLE_H

#include <stdbool.h>

#include "core/stream.h"

struct kube_http;

#define KUBEVIRT_WS_SUBPROTOCOL "plain.kubevirt.io"

struct stream *kube_console_open(struct kube_http *h, const char *src_name, const char *ns, const char *name,
				 char **err);
struct stream *kube_vnc_open(struct kube_http *h, const char *src_name, const char *ns, const char *name, char **err);
/* KubeVirt's portforward/PORT[/udp] of a VM or VMI (kind KIND_VM or KIND_VMI): one connection, raw bytes. */
struct stream *kube_portforward_open(struct kube_http *h, const char *src_name, int kind, const char *ns,
				     const char *name, int port, bool udp, char **err);

#endif
