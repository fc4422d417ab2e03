/* The engine service's namespaces: those in use (default, the KubeVirt CR's, any object's) and those created through
 * the API, with their labels and annotations, kept in $XDG_STATE_HOME/kvcon/engine-namespaces. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <microhttpd.h>
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "apiserver/internal.h"
#include "core/buf.h"
#include "core/hmap.h"
#include "core/intern.h"
#include "core/log.h"
#include "core/loop.h"
#include "core/opts.h"
#include "core/trust.h"
#include "core/util.h"
#include "core/version.h"
#include "core/xmalloc.h"
#include "core/ydoc.h"
#include "engine/apisel.h"
#include "engine/apitls.h"
#include "engine/engine.h"
#include "engine/evm.h"
#include "engine/manifest.h"
#include "engine/migrate.h"
#include "kube/wsframe.h"
#include "model/columns.h"
#include "model/objjson.h"
#include "model/registry.h"
#include "model/source.h"
#include "model/store.h"

const char **apis_namespaces(struct apisrv *srv, size_t *n)
{
	const char **out = xcalloc(3, sizeof *out);
	*n = 0;
	out[(*n)++] = "default";
	out[(*n)++] = KV_NS; /* the KubeVirt CR's */
	for (size_t i = 0; i < srv->nnsx; i++) {
		if (strcmp(srv->nsx[i], "default") == 0 || strcmp(srv->nsx[i], KV_NS) == 0)
			continue;
		out = xreallocarray(out, *n + 2, sizeof *out);
		out[(*n)++] = srv->nsx[i];
	}
	for (int s = 0; s < srv->nsrcs; s++)
		for (int k = 0; k < OBJ_KIND_COUNT; k++) {
			size_t cnt;
			struct obj *const *objs = store_objs(srv->st, srv->srcs[s], (enum obj_kind)k, &cnt);
			for (size_t i = 0; i < cnt; i++) {
				size_t x;
				for (x = 0; x < *n && strcmp(out[x], objs[i]->ns) != 0; x++)
					;
				if (x == *n && *objs[i]->ns) {
					out = xreallocarray(out, *n + 2, sizeof *out);
					out[(*n)++] = objs[i]->ns;
				}
			}
		}
	for (size_t i = 1; i < *n; i++)
		for (size_t k = i; k > 0 && strcmp(out[k - 1], out[k]) > 0; k--) {
			const char *t = out[k];
			out[k] = out[k - 1];
			out[k - 1] = t;
		}
	return out;
}

/* ---- namespaces created through the API ---- */

static char *nsx_path(void)
{
	char *d = util_state_dir(), *p = util_path_join(d, "engine-namespaces");
	free(d);
	return p;
}

static void nsx_add(struct apisrv *srv, const char *name, const char *meta)
{
	srv->nsx = xreallocarray(srv->nsx, srv->nnsx + 1, sizeof *srv->nsx);
	srv->nsxmeta = xreallocarray(srv->nsxmeta, srv->nnsx + 1, sizeof *srv->nsxmeta);
	srv->nsx[srv->nnsx] = xstrdup(name);
	srv->nsxmeta[srv->nnsx++] = meta ? xstrdup(meta) : NULL;
}

/* The labels (but the one the server sets) and annotations of a Namespace object, as kept; NULL when none. */
static char *nsx_meta_of(json_object *o)
{
	json_object *md = apis_jget(o, "metadata"), *l = apis_jget(md, "labels"), *a = apis_jget(md, "annotations");
	json_object *m = json_object_new_object();
	if (l && json_object_is_type(l, json_type_object)) {
		json_object *lc = json_object_new_object();
		json_object_object_foreach(l, k, v)
			if (strcmp(k, "kubernetes.io/metadata.name") != 0 && json_object_is_type(v, json_type_string))
				json_object_object_add(lc, k, json_object_get(v));
		json_object_object_add(m, "labels", lc);
	}
	if (a && json_object_is_type(a, json_type_object)) {
		json_object *ac = json_object_new_object();
		json_object_object_foreach(a, k, v)
			if (json_object_is_type(v, json_type_string))
				json_object_object_add(ac, k, json_object_get(v));
		json_object_object_add(m, "annotations", ac);
	}
	char *t = json_object_object_length(m) ? xstrdup(json_object_to_json_string_ext(m, JSON_C_TO_STRING_PLAIN)) : NULL;
	json_object_put(m);
	return t;
}

static void nsx_save(struct apisrv *srv)
{
	struct buf b;
	buf_init(&b);
	for (size_t i = 0; i < srv->nnsx; i++)
		buf_printf(&b, "%s%s%s\n", srv->nsx[i], srv->nsxmeta[i] ? "\t" : "", srv->nsxmeta[i] ? srv->nsxmeta[i] : "");
	char *p = nsx_path(), why[UTIL_WHY_LEN];
	if (util_write_file_why(p, b.data ? b.data : "", b.len, 0600, why) < 0)
		log_warn("engine serve: %s: %s", p, why);
	free(p);
	buf_free(&b);
}

void apis_nsx_load(struct apisrv *srv)
{
	char *p = nsx_path(), *why = NULL, *text = trust_read_file(p, NULL, &why);
	if (why)
		log_warn("engine serve: %s (its namespaces are not listed)", why);
	free(why);
	free(p);
	for (char *sp, *l = text ? strtok_r(text, "\n", &sp) : NULL; l; l = strtok_r(NULL, "\n", &sp)) {
		char *meta = strchr(l, '\t'); /* NAME, or NAME TAB its labels and annotations (JSON) */
		if (meta)
			*meta++ = '\0';
		json_object *mj = meta ? json_tokener_parse(meta) : NULL;
		if (manifest_dns_label(l) && srv->nnsx < 10000)
			nsx_add(srv, l, mj && json_object_is_type(mj, json_type_object) ? meta : NULL);
		if (mj)
			json_object_put(mj);
	}
	free(text);
}

bool apis_ns_exists(struct apisrv *srv, const char *name)
{
	size_t n;
	const char **names = apis_namespaces(srv, &n);
	bool found = false;
	for (size_t i = 0; i < n && !found; i++)
		found = strcmp(names[i], name) == 0;
	free(names);
	return found;
}

enum MHD_Result apis_create_ns(struct apisrv *srv, struct MHD_Connection *c, struct reqctx *rq)
{
	enum MHD_Result rc;
	const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
	json_object *o;
	if (ct && strstr(ct, "protobuf") && !rq->too_big) {
		/* kubectl create namespace sends protobuf: the kind and the name are all it needs to say */
		char *kind = NULL, *pname = NULL;
		if (apisel_pb_kind_name(rq->body.data ? rq->body.data : "", rq->body.len, &kind, &pname) < 0 ||
		    strcmp(kind, "Namespace") != 0) {
			free(kind);
			free(pname);
			return apis_send_status(c, 400, "BadRequest", R_COUNT, NULL, "the request body is not a Namespace");
		}
		o = json_object_new_object();
		json_object *md = apis_jobj(o, "metadata");
		json_object_object_add(md, "name", json_object_new_string(pname));
		free(kind);
		free(pname);
	} else if ((o = apis_body_json(c, rq, &rc)) == NULL)
		return rc;
	const char *name = apis_jgets(apis_jget(o, "metadata"), "name");
	if (name == NULL || !manifest_dns_label(name))
		rc = apis_send_status(c, 422, "Invalid", R_NS, name, "Namespace \"%s\" is invalid: metadata.name: Invalid value: "
				 "a lowercase RFC 1123 label is required", name ? name : "");
	else if (apis_ns_exists(srv, name))
		rc = apis_send_status(c, 409, "AlreadyExists", R_NS, name, "namespaces \"%s\" already exists", name);
	else if (apis_arg(c, "dryRun"))
		rc = apis_send_json(c, 201, json_object_get(o)); /* nothing kept */
	else {
		char *meta = nsx_meta_of(o);
		nsx_add(srv, name, meta);
		free(meta);
		nsx_save(srv);
		rc = apis_send_json(c, 201, apis_ns_json(srv, name));
	}
	json_object_put(o);
	return rc;
}

/* kubectl apply's patch of a Namespace: its labels and annotations (a merge patch; a strategic merge patch is
 * one for these maps). A namespace that exists only because it is in use or built in is kept from then on. */
enum MHD_Result apis_patch_ns(struct apisrv *srv, struct MHD_Connection *c, struct reqctx *rq, const char *name)
{
	enum MHD_Result rc;
	if (!apis_ns_exists(srv, name))
		return apis_not_found(c, R_NS, name);
	json_object *p = apis_body_json(c, rq, &rc);
	if (p == NULL)
		return rc;
	json_object *res = apisel_merge_patch(apis_ns_json(srv, name), p);
	json_object_put(p);
	if (!util_str_eq(apis_jgets(apis_jget(res, "metadata"), "name"), name)) {
		json_object_put(res);
		return apis_send_status(c, 400, "BadRequest", R_COUNT, NULL, "the name of the object may not change");
	}
	if (apis_arg(c, "dryRun"))
		return apis_send_json(c, 200, res);
	char *meta = nsx_meta_of(res);
	json_object_put(res);
	size_t i;
	for (i = 0; i < srv->nnsx && strcmp(srv->nsx[i], name) != 0; i++)
		;
	if (i == srv->nnsx)
		nsx_add(srv, name, meta);
	else {
		free(srv->nsxmeta[i]);
		srv->nsxmeta[i] = meta ? xstrdup(meta) : NULL;
	}
	free(meta);
	nsx_save(srv);
	return apis_send_json(c, 200, apis_ns_json(srv, name));
}

enum MHD_Result apis_delete_ns(struct apisrv *srv, struct MHD_Connection *c, const char *name)
{
	for (size_t i = 0; i < srv->nnsx; i++)
		if (strcmp(srv->nsx[i], name) == 0) {
			for (int s = 0; s < srv->nsrcs; s++) {
				size_t cnt;
				struct obj *const *objs = store_objs(srv->st, srv->srcs[s], OBJ_VM, &cnt);
				for (size_t k = 0; k < cnt; k++)
					if (strcmp(objs[k]->ns, name) == 0)
						return apis_send_status(c, 409, "Conflict", R_NS, name,
								   "namespace %s still holds virtual machines", name);
			}
			if (apis_storage_in_ns(srv, name))
				return apis_send_status(c, 409, "Conflict", R_NS, name,
						   "namespace %s still holds persistent volume claims or DataVolumes", name);
			if (apis_secrets_in_ns(srv, name))
				return apis_send_status(c, 409, "Conflict", R_NS, name,
						   "namespace %s still holds Secrets or ConfigMaps", name);
			json_object *j = apis_ns_json(srv, name);
			free(srv->nsx[i]);
			free(srv->nsxmeta[i]);
			srv->nsxmeta[i] = srv->nsxmeta[srv->nnsx - 1];
			srv->nsx[i] = srv->nsx[--srv->nnsx];
			nsx_save(srv);
			return apis_send_json(c, 200, j);
		}
	if (apis_ns_exists(srv, name))
		return apis_send_status(c, 409, "Conflict", R_NS, name, "namespace %s is in use or built in", name);
	return apis_not_found(c, R_NS, name);
}
