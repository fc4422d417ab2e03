/* Container logs from a cluster (provider_ops open_log / close_log of the kube provider). */
#ifndef KVCON_KUBE_KLOG_H
#define KVCON_KUBE_KLOG_H

#include "model/source.h"

struct log_stream *kube_log_open(struct source *src, const struct log_req *r, log_data_cb data, log_end_cb end,
				 void *arg, char **err);
void kube_log_close(struct log_stream *ls);

#endif
