/* The `i` view: what the guest agent reports about a running VM (KubeVirt's guestosinfo, interfacelist,
 * filesystemlist and userlist subresources of the VMI), read once when opened and shown in the pager: OS and
 * kernel, hostname, time zone, agent version, interfaces with addresses, filesystems with usage, logged-in users.
 * A part the API refuses (no agent connected: 409) says so. Every string from the guest is escaped. */
#include "ui/guestview.h"

#include <curl/curl.h>
#include <json.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/util.h"
#include "core/xmalloc.h"
#include "kube/http.h"
#include "kube/kube.h"
#include "model/registry.h"
#include "model/source.h"
#include "ui/pager.h"

static const char *const parts[4] = { "guestosinfo", "interfacelist", "filesystemlist", "userlist" };

struct gview {
	unsigned pager;
	int pending;
	struct json_object *obj[4];
	char *err[4];
};

struct garg {
	struct gview *g;
	int part;
};

static const char *js(struct json_object *o, const char *a, const char *b)
{
	struct json_object *v = NULL;
	if (o == NULL || !json_object_object_get_ex(o, a, &v))
		return NULL;
	if (b && (v == NULL || !json_object_object_get_ex(v, b, &v)))
		return NULL;
	return v && !json_object_is_type(v, json_type_object) && !json_object_is_type(v, json_type_array)
		       ? json_object_get_string(v)
		       : NULL;
}

/* "label: value" with value escaped (absent: -) */
static void line(struct buf *b, const char *label, const char *v)
{
	char *e = util_escape_display(v && *v ? v : "-");
	buf_printf(b, "%-18s %s\n", label, e);
	free(e);
}

static void human_bytes(double v, char *out, size_t len)
{
	static const char *const u[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	int i = 0;
	while (v >= 1024 && i < 4) {
		v /= 1024;
		i++;
	}
	snprintf(out, len, i ? "%.1f %s" : "%.0f %s", v, u[i]);
}

static struct json_object *items(struct json_object *o)
{
	struct json_object *it = NULL;
	return o && json_object_object_get_ex(o, "items", &it) && json_object_is_type(it, json_type_array) ? it : NULL;
}

static void render(struct gview *g)
{
	struct view *v = pager_find(g->pager);
	if (v == NULL)
		return;
	struct buf b;
	buf_init(&b);
	struct json_object *os = g->obj[0];
	if (os) {
		char osname[256];
		snprintf(osname, sizeof osname, "%s", js(os, "os", "prettyName") ? js(os, "os", "prettyName") : "");
		line(&b, "OS", osname);
		line(&b, "Kernel", js(os, "os", "kernelRelease"));
		line(&b, "Hostname", js(os, "hostname", NULL));
		line(&b, "Time zone", js(os, "timezone", NULL));
		line(&b, "Agent version", js(os, "guestAgentVersion", NULL));
		line(&b, "FS freeze", js(os, "fsFreezeStatus", NULL));
	} else {
		char *e = util_escape_display(g->err[0]);
		buf_printf(&b, "OS: not available (%s)\n", e);
		free(e);
	}
	static const char *const heads[4] = { NULL, "Interfaces", "Filesystems", "Users" };
	for (int p = 1; p < 4; p++) {
		buf_printf(&b, "\n%s:\n", heads[p]);
		struct json_object *it = items(g->obj[p]);
		if (it == NULL) {
			char *e = util_escape_display(g->err[p] ? g->err[p] : "no items");
			buf_printf(&b, "  not available (%s)\n", e);
			free(e);
			continue;
		}
		for (size_t i = 0; i < json_object_array_length(it); i++) {
			struct json_object *x = json_object_array_get_idx(it, i);
			char *a, *c, *d;
			if (p == 1) {
				struct buf ips;
				buf_init(&ips);
				struct json_object *arr = NULL;
				if (json_object_object_get_ex(x, "ipAddresses", &arr) && json_object_is_type(arr, json_type_array))
					for (size_t k = 0; k < json_object_array_length(arr); k++)
						buf_printf(&ips, "%s%s", k ? "," : "", json_object_get_string(json_object_array_get_idx(arr, k)));
				a = util_escape_display(js(x, "interfaceName", NULL) ? js(x, "interfaceName", NULL) : "?");
				c = util_escape_display(ips.len ? ips.data : js(x, "ipAddress", NULL) ? js(x, "ipAddress", NULL) : "-");
				d = util_escape_display(js(x, "mac", NULL) ? js(x, "mac", NULL) : "-");
				buf_printf(&b, "  %-10s %-40s %s\n", a, c, d);
				buf_free(&ips);
			} else if (p == 2) {
				struct json_object *u = NULL, *t = NULL;
				char used[32] = "?", total[32] = "?";
				if (json_object_object_get_ex(x, "usedBytes", &u))
					human_bytes(json_object_get_double(u), used, sizeof used);
				if (json_object_object_get_ex(x, "totalBytes", &t))
					human_bytes(json_object_get_double(t), total, sizeof total);
				a = util_escape_display(js(x, "diskName", NULL) ? js(x, "diskName", NULL) : "?");
				c = util_escape_display(js(x, "mountPoint", NULL) ? js(x, "mountPoint", NULL) : "?");
				d = util_escape_display(js(x, "fileSystemType", NULL) ? js(x, "fileSystemType", NULL) : "?");
				buf_printf(&b, "  %-10s %-24s %-8s used %s of %s\n", a, c, d, used, total);
			} else {
				struct json_object *lt = NULL;
				char when[40] = "-";
				if (json_object_object_get_ex(x, "loginTime", &lt))
					util_format_time((int64_t)json_object_get_double(lt), when, sizeof when);
				a = util_escape_display(js(x, "userName", NULL) ? js(x, "userName", NULL) : "?");
				c = util_escape_display(js(x, "domain", NULL) ? js(x, "domain", NULL) : "");
				d = xstrdup(when);
				buf_printf(&b, "  %-16s %-12s since %s\n", a, *c ? c : "-", d);
			}
			free(a);
			free(c);
			free(d);
		}
	}
	pager_set_text(v, b.data);
	buf_free(&b);
}

static void got(void *arg, const struct kube_resp *r)
{
	struct garg *a = arg;
	struct gview *g = a->g;
	if (r->status == 200)
		g->obj[a->part] = json_tokener_parse(r->body);
	else
		g->err[a->part] = kube_http_error_message(r);
	free(a);
	if (--g->pending > 0)
		return;
	render(g);
	for (int p = 0; p < 4; p++) {
		json_object_put(g->obj[p]);
		free(g->err[p]);
	}
	free(g);
}

struct view *guestview_new(const struct obj *vm, char **err)
{
	struct source *src = vm->src;
	if (src == NULL || src->type != SOURCE_KUBE || kube_source_http(src) == NULL) {
		*err = xstrdup("guest details come from KubeVirt's guest agent subresources (clusters only for now)");
		return NULL;
	}
	char title[600];
	snprintf(title, sizeof title, "guest %s/%s", vm->ns, vm->name);
	struct view *v = pager_new(title, "asking the guest agent...");
	struct gview *g = xcalloc(1, sizeof *g);
	g->pager = pager_id(v);
	char *ns = curl_easy_escape(NULL, vm->ns, 0), *nm = curl_easy_escape(NULL, vm->name, 0);
	for (int p = 0; p < 4; p++) {
		char *path = registry_subresource_path(registry_kind(KIND_VMI), ns, nm, parts[p]);
		struct garg *a = xcalloc(1, sizeof *a);
		a->g = g;
		a->part = p;
		g->pending++;
		struct kube_http_req q = { .path = path, .timeout_ms = 30000, .on_done = got, .arg = a };
		kube_http_start(kube_source_http(src), &q);
		free(path);
	}
	curl_free(ns);
	curl_free(nm);
	return v;
}
