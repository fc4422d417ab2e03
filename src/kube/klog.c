/* Container logs from a cluster: GET .../pods/NAME/log streamed through the kube HTTP client (provider_ops
 * open_log). Bytes go to the reader as they arrive, nothing is collected (a follow can run for days). */
#include "kube/klog.h"

#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/xmalloc.h"
#include "kube/http.h"
#include "model/source.h"

struct log_stream {
	struct kube_req *req;
	log_data_cb data;
	log_end_cb end;
	void *arg;
	bool stopped; /* the reader said stop: no end callback */
};

static bool on_chunk(void *arg, const char *data, size_t len)
{
	struct log_stream *ls = arg;
	if (!ls->data(ls->arg, data, len))
		ls->stopped = true;
	return !ls->stopped;
}

static void on_done(void *arg, const struct kube_resp *resp)
{
	struct log_stream *ls = arg;
	ls->req = NULL;
	if (!ls->stopped) {
		if (resp->status >= 200 && resp->status < 300) {
			ls->end(ls->arg, 0, NULL);
		} else {
			char *m = kube_http_error_message(resp);
			ls->end(ls->arg, resp->status ? (int)resp->status : -1, m);
			free(m);
		}
	}
	free(ls);
}

static void add_param(struct buf *b, char *sep, const char *k, const char *v)
{
	char *e = curl_easy_escape(NULL, v, 0);
	buf_printf(b, "%c%s=%s", *sep, k, e ? e : "");
	curl_free(e);
	*sep = '&';
}

static char *kube_log_path(const struct log_req *r)
{
	struct buf b;
	buf_init(&b);
	char *ns = curl_easy_escape(NULL, r->ns, 0), *pod = curl_easy_escape(NULL, r->pod, 0);
	buf_printf(&b, "/api/v1/namespaces/%s/pods/%s/log", ns ? ns : "", pod ? pod : "");
	curl_free(ns);
	curl_free(pod);
	char sep = '?';
	if (r->container && *r->container)
		add_param(&b, &sep, "container", r->container);
	if (r->follow)
		add_param(&b, &sep, "follow", "true");
	if (r->previous)
		add_param(&b, &sep, "previous", "true");
	if (r->timestamps)
		add_param(&b, &sep, "timestamps", "true");
	char num[32];
	if (r->tail_lines >= 0) {
		snprintf(num, sizeof num, "%ld", r->tail_lines);
		add_param(&b, &sep, "tailLines", num);
	}
	if (r->since_s > 0) {
		snprintf(num, sizeof num, "%ld", r->since_s);
		add_param(&b, &sep, "sinceSeconds", num);
	}
	return buf_steal(&b);
}

struct log_stream *kube_log_open(struct kube_http *h, const struct log_req *r, log_data_cb data, log_end_cb end,
				 void *arg, char **err)
{
	*err = NULL;
	if (h == NULL || r->ns == NULL || r->pod == NULL) {
		*err = xstrdup("no pod to read a log from");
		return NULL;
	}
	struct log_stream *ls = xcalloc(1, sizeof *ls);
	ls->data = data;
	ls->end = end;
	ls->arg = arg;
	char *path = kube_log_path(r);
	/* a follow has no end; a plain read gets the same generous bound as any fetch */
	struct kube_http_req q = { .path = path, .timeout_ms = r->follow ? 0 : 120000, .on_chunk = on_chunk,
				   .on_done = on_done, .arg = ls };
	ls->req = kube_http_start(h, &q);
	free(path);
	return ls;
}

void kube_log_close(struct log_stream *ls)
{
	if (ls == NULL)
		return;
	kube_http_cancel(ls->req);
	free(ls);
}
