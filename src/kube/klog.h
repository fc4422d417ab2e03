/* Container logs from a cluster over its client (kube/http.h): the kube provider's open_log / close_log
 * (kube/kube.c) with its source's client (h: NULL is "no pod to read a log from"). */
#ifndef KVCON_KUBE_KLOG_H
#define KVCON_KUBE_KLOG_H

#include "model/source.h"

struct kube_http;

struct log_stream *kube_log_open(struct kube_http *h, const struct log_req *r, log_data_cb data, log_end_cb end,
				 void *arg, char **err);
void kube_log_close(struct log_stream *ls);

#endif
