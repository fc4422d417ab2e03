/* core/stream.h streams onto an engine VM: its serial console and its VNC display (provider_ops of the
 * engine's sources). */
#ifndef KVCON_ENGINE_ESTREAM_H
#define KVCON_ENGINE_ESTREAM_H

#include "core/stream.h"
#include "model/source.h"

/* NULL with *err (caller frees) when the VM is unknown or not running. */
struct stream *estream_console(struct source *src, const char *ns, const char *name, char **err);
struct stream *estream_vnc(struct source *src, const char *ns, const char *name, char **err);

#endif
