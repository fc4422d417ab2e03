/* kvcon guestosinfo, userlist, fslist (see cmd_guestinfo.h). */
#include "cmd/cmd_guestinfo.h"

#include <json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/args.h"
#include "cmd/session.h"
#include "core/buf.h"
#include "core/jout.h"
#include "core/log.h"
#include "core/loop.h"
#include "core/opts.h"
#include "core/xmalloc.h"
#include "kube/http.h"
#include "kube/kube.h"
#include "model/registry.h"
#include "model/store.h"

#define GI_TIMEOUT_MS 30000

struct gi {
	int rc;
};

static void gi_done(void *arg, const struct kube_resp *r)
{
	struct gi *gi = arg;
	if (r->status < 200 || r->status >= 300) {
		char *m = kube_http_error_message(r);
		log_eprintf("error: %s\n", m ? m : "request failed");
		free(m);
		gi->rc = EXIT_API;
		loop_quit(gi->rc);
		return;
	}
	struct json_tokener *tok = json_tokener_new();
	struct json_object *j = tok ? json_tokener_parse_ex(tok, r->body, (int)r->len) : NULL;
	if (j == NULL || json_tokener_get_error(tok) != json_tokener_success) {
		log_eprintf("error: the server's answer is not JSON\n");
		gi->rc = EXIT_API;
	} else {
		struct buf b;
		buf_init(&b);
		jout_json(&b, j, 2, 0);
		fwrite(b.data, 1, b.len, stdout);
		fputc('\n', stdout);
		buf_free(&b);
		gi->rc = EXIT_OK;
	}
	json_object_put(j);
	if (tok)
		json_tokener_free(tok);
	loop_quit(gi->rc);
}

int cmd_guestinfo(int argc, char **argv)
{
	const struct guest_verb_def *gv = registry_guest_verb_find(argv[0]);
	if (gv == NULL)
		return EXIT_USAGE;
	struct args a;
	int p = args_parse_verb(argc, argv, &a);
	const char *ref = a.npos > 0 ? a.pos[0] : NULL;
	if (p == ARGS_OK && a.npos != 1) {
		args_usage_error(&a, "accepts 1 arg(s), received %d", a.npos);
		p = ARGS_ERR;
	}
	args_free(&a);
	if (p != ARGS_OK)
		return p == ARGS_HELP ? EXIT_OK : EXIT_USAGE;
	struct kvcon_opts *g = opts_global();
	const char *slash = strchr(ref, '/');
	char *ns = slash ? xstrndup(ref, (size_t)(slash - ref)) : g->ns ? xstrdup(g->ns) : NULL;
	const char *name = slash ? slash + 1 : ref;
	if (ns) {
		free(g->ns);
		g->ns = xstrdup(ns);
		g->all_ns = false;
	}
	session_cli_start();
	struct store *st = store_new();
	char *err = NULL;
	int rc = EXIT_API;
	struct source *src = session_resolve(st, ns, name, KUBE_KIND_BIT(OBJ_VMI), false, &err);
	struct kube_http *h = src ? kube_source_http(src) : NULL;
	if (h == NULL) {
		log_eprintf("error: %s\n", err ? err : "no cluster or engine service has it");
		goto out;
	}
	const char *in_ns = ns ? ns : src->ns_scope ? src->ns_scope : "default";
	char *path = registry_subresource_path(registry_kind(KIND_VMI), in_ns, name, gv->subresource);
	struct gi gi = { EXIT_API };
	struct kube_http_req req = { .path = path, .timeout_ms = GI_TIMEOUT_MS, .on_done = gi_done, .arg = &gi };
	if (kube_http_start(h, &req) != NULL)
		loop_run();
	else
		log_eprintf("error: cannot send the request\n");
	rc = gi.rc;
	free(path);
out:
	free(err);
	free(ns);
	source_free_all();
	store_free(st);
	return rc;
}
