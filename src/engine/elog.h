/* Container logs of engine VMs (provider_ops open_log / close_log of the engine provider): "compute" is
 * QEMU's log of the execution, "serial" the guest's serial log. */
#ifndef KVCON_ENGINE_ELOG_H
#define KVCON_ENGINE_ELOG_H

#include "model/source.h"

struct log_stream *engine_log_open(struct source *src, const struct log_req *r, log_data_cb data, log_end_cb end,
				   void *arg, char **err);
void engine_log_close(struct log_stream *ls);

#endif
