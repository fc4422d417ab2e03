/* Console and VNC streams over a cluster's client (kube/http.h): waits for the credential (an exec plugin may be running), then
 * configures a CONNECT_ONLY easy handle exactly like the API client's and hands it to kube/ws.c. */
#include "kube/kconsole.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/xmalloc.h"
#include "kube/http.h"
#include "kube/ws.h"
#include "model/registry.h"

struct kc_pending {
	struct stream *s;
	struct kube_http *h;
	char *path;
};

static void kc_ready(void *arg, const char *err)
{
	struct kc_pending *k = arg;
	if (stream_detached(k->s) || stream_state(k->s) == STREAM_CLOSED)
		goto out;
	if (err) {
		ws_fail(k->s, err);
		goto out;
	}
	char *url = kube_http_url(k->h, k->path);
	CURL *e = curl_easy_init();
	struct curl_slist *hdrs = NULL;
	char *serr = NULL;
	if (kube_http_setup_easy(k->h, e, &hdrs, &serr) < 0) {
		curl_easy_cleanup(e);
		ws_fail(k->s, serr ? serr : "cannot configure the connection");
		free(serr);
		free(url);
		curl_slist_free_all(hdrs);
		goto out;
	}
	struct ws_config cfg = {
		.url = url,
		.subprotocol = KUBEVIRT_WS_SUBPROTOCOL,
		.headers = hdrs,
		.keepalive_ms = 30000,
	};
	ws_start(k->s, &cfg, e);
	curl_slist_free_all(hdrs);
	free(url);
out:
	stream_unref(k->s);
	free(k->path);
	free(k);
}

static struct stream *kc_open(struct kube_http *h, const char *src_name, enum kind_id kind, const char *ns,
			      const char *name, const char *sub, char **err)
{
	if (!h) {
		*err = xstrdup("not a cluster source");
		return NULL;
	}
	if (!ns || !*ns || !name || !*name) {
		*err = xstrdup("a namespace and a name are needed");
		return NULL;
	}
	char *label = xasprintf("%s %s/%s %s", src_name, ns, name, sub);
	struct stream *s = ws_new(label);
	free(label);
	struct kc_pending *k = xcalloc(1, sizeof *k);
	k->s = s;
	k->h = h;
	k->path = registry_subresource_path(registry_kind(kind), ns, name, sub);
	stream_ref(s);
	kube_http_when_ready(h, kc_ready, k);
	return s;
}

struct stream *kube_console_open(struct kube_http *h, const char *src_name, const char *ns, const char *name,
				 char **err)
{
	return kc_open(h, src_name, KIND_VMI, ns, name, "console", err);
}

struct stream *kube_vnc_open(struct kube_http *h, const char *src_name, const char *ns, const char *name, char **err)
{
	return kc_open(h, src_name, KIND_VMI, ns, name, "vnc", err);
}

struct stream *kube_portforward_open(struct kube_http *h, const char *src_name, int kind, const char *ns,
				     const char *name, int port, bool udp, char **err)
{
	if ((kind != KIND_VM && kind != KIND_VMI) || port < 1 || port > 65535) {
		*err = xstrdup("a VM or VMI and a port 1-65535 are needed");
		return NULL;
	}
	char sub[48];
	snprintf(sub, sizeof sub, "%s/%d%s", registry_guest_verb(GV_PORT_FORWARD)->subresource, port,
		 udp ? "/udp" : "");
	return kc_open(h, src_name, (enum kind_id)kind, ns, name, sub, err);
}
