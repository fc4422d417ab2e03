/* The engine service's Secrets and ConfigMaps (core v1): created, read, listed, watched, patched (merge and JSON
 * patch: what kubectl and virtctl's credentials send), replaced and deleted through the API, and read by the
 * engine (engine/esecret.h's lookup) for cloud-init's userDataSecretRef and networkDataSecretRef, Secret and
 * ConfigMap volumes and accessCredentials.
 *
 * Durability: each object is a file, engine-data/secrets/NS_NAME.json or engine-data/configmaps/NS_NAME.json
 * (apis_kept_write: mode 0600 in a 0700 directory, temporary file, fsync, rename, directory fsync), written before
 * the request is answered; a deletion removes the file before it is answered. Values never reach the log, events
 * or a screen: the log names the object and the number of its keys.
 *
 * The garbage collector's part: an object whose ownerReferences name a VirtualMachine that no longer exists (the
 * Secret virtctl's add-ssh-key makes) is deleted once every host has been read. */
#include <json-c/json.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "apiserver/internal.h"
#include "core/log.h"
#include "core/util.h"
#include "core/xmalloc.h"
#include "engine/apisel.h"
#include "engine/engine.h"
#include "engine/esecret.h"
#include "engine/manifest.h"
#include "engine/volumes.h"
#include "model/store.h"

struct kobj {
	enum res r; /* R_SECRET or R_CM */
	char *ns, *name;
	json_object *j; /* as stored, without resourceVersion */
	uint64_t rv;
	char *body, *text;
	struct kobj *next;
};

struct secrets {
	struct kobj *objs;
	char *dir[2]; /* engine-data/secrets, engine-data/configmaps */
};

static bool is_cm(enum res r)
{
	return r == R_CM;
}

static const char *dir_of(struct apisrv *srv, enum res r)
{
	return srv->secrets->dir[is_cm(r)];
}

static struct kobj *find(struct apisrv *srv, enum res r, const char *ns, const char *name)
{
	for (struct kobj *k = srv->secrets ? srv->secrets->objs : NULL; k; k = k->next)
		if (k->r == r && strcmp(k->ns, ns) == 0 && strcmp(k->name, name) == 0)
			return k;
	return NULL;
}

static void kobj_free(struct kobj *k)
{
	free(k->ns);
	free(k->name);
	if (k->j)
		json_object_put(k->j);
	free(k->body);
	free(k->text);
	free(k);
}

static void unlink_obj(struct apisrv *srv, struct kobj *k)
{
	for (struct kobj **p = &srv->secrets->objs; *p; p = &(*p)->next)
		if (*p == k) {
			*p = k->next;
			return;
		}
}

static void publish(struct apisrv *srv, struct kobj *k)
{
	const char *type = k->body ? "MODIFIED" : "ADDED";
	if (apis_publish(srv, json_tokener_parse(json_object_to_json_string(k->j)), &k->body, &k->text, &k->rv)) {
		apis_ring_push(srv, k->r, type, NULL, k->text);
		apis_wake_watchers(srv);
	}
}

static size_t nkeys(const struct kobj *k)
{
	size_t n = 0;
	const char *maps[] = { "data", "binaryData" };
	for (int i = 0; i < 2; i++) {
		json_object *m = apis_jget(k->j, maps[i]);
		n += m && json_object_is_type(m, json_type_object) ? (size_t)json_object_object_length(m) : 0;
	}
	return n;
}

/* Stored, then published; the engine's starts that waited for it go on, its VMs' credentials follow it. */
static int store(struct apisrv *srv, struct kobj *k, char **err)
{
	char *text = apis_jtext(k->j);
	int rc = apis_kept_write(dir_of(srv, k->r), k->ns, k->name, text, err);
	memset(text, 0, strlen(text));
	free(text);
	if (rc < 0)
		return -1;
	publish(srv, k);
	log_info("engine serve: %s %s/%s stored (%zu keys)", RES[k->r].kind, k->ns, k->name, nkeys(k));
	engine_volumes_changed();
	engine_secrets_changed();
	return 0;
}

static void drop(struct apisrv *srv, struct kobj *k)
{
	apis_kept_remove(dir_of(srv, k->r), k->ns, k->name);
	unlink_obj(srv, k);
	if (k->text) {
		json_object *j = json_tokener_parse(k->text);
		char rv[24];
		snprintf(rv, sizeof rv, "%llu", (unsigned long long)++srv->rv);
		json_object_object_add(apis_jobj(j, "metadata"), "resourceVersion", json_object_new_string(rv));
		char *text = apis_jtext(j);
		json_object_put(j);
		apis_ring_push(srv, k->r, "DELETED", NULL, text);
		free(text);
		apis_wake_watchers(srv);
	}
	log_info("engine serve: %s %s/%s deleted", RES[k->r].kind, k->ns, k->name);
	kobj_free(k);
	engine_secrets_changed();
}

/* ---- the engine's lookup ---- */

static struct esecret *lookup(void *arg, const char *ns, const char *name, bool configmap)
{
	struct kobj *k = find(arg, configmap ? R_CM : R_SECRET, ns, name);
	return k ? esecret_data(k->j, configmap) : NULL;
}

/* ---- load, free, the collector ---- */

struct loading {
	struct apisrv *srv;
	enum res r;
};

static void loaded(void *ctx, const char *path, json_object *o, const char *why)
{
	const struct loading *l = ctx;
	json_object *md = apis_jget(o, "metadata");
	const char *ns = apis_jgets(md, "namespace"), *name = apis_jgets(md, "name");
	char *err = NULL;
	if (o == NULL || name == NULL || !manifest_dns_subdomain(name) || ns == NULL || !manifest_dns_label(ns) ||
	    esecret_normalize(o, is_cm(l->r), &err) < 0) {
		log_warn("engine serve: %s: %s", path, why ? why : err ? err : "not an object kvcon stored; ignored");
		free(err);
		return;
	}
	struct kobj *k = xcalloc(1, sizeof *k);
	k->r = l->r;
	k->ns = xstrdup(ns);
	k->name = xstrdup(name);
	k->j = json_object_get(o);
	k->next = l->srv->secrets->objs;
	l->srv->secrets->objs = k;
	publish(l->srv, k);
}

void apis_secrets_load(struct apisrv *srv)
{
	srv->secrets = xcalloc(1, sizeof *srv->secrets);
	srv->secrets->dir[0] = apis_kept_dir("secrets");
	srv->secrets->dir[1] = apis_kept_dir("configmaps");
	for (int i = 0; i < 2; i++) {
		struct loading l = { srv, i ? R_CM : R_SECRET };
		apis_kept_load(srv->secrets->dir[i], loaded, &l);
	}
	esecret_set_lookup(lookup, srv);
}

void apis_secrets_free(struct apisrv *srv)
{
	if (srv->secrets == NULL)
		return;
	esecret_set_lookup(NULL, NULL);
	while (srv->secrets->objs) {
		struct kobj *k = srv->secrets->objs;
		srv->secrets->objs = k->next;
		kobj_free(k);
	}
	free(srv->secrets->dir[0]);
	free(srv->secrets->dir[1]);
	free(srv->secrets);
	srv->secrets = NULL;
}

/* Once a second: objects owned by a VirtualMachine that is gone (another UID, or none) go with it. */
void apis_secrets_tick(struct apisrv *srv)
{
	for (int i = 0; i < srv->nsrcs; i++)
		if (!engine_ready(srv->srcs[i]))
			return; /* which VMs exist is known once every host has been read */
	for (struct kobj *k = srv->secrets->objs, *next; k; k = next) {
		next = k->next;
		json_object *refs = apis_jget(apis_jget(k->j, "metadata"), "ownerReferences");
		bool orphan = false;
		for (size_t i = 0; refs && json_object_is_type(refs, json_type_array) && i < json_object_array_length(refs); i++) {
			json_object *r = json_object_array_get_idx(refs, i);
			const char *vn = apis_jgets(r, "name");
			if (!util_str_eq(apis_jgets(r, "kind"), "VirtualMachine") || vn == NULL)
				continue;
			struct source *src = apis_source_of(srv, k->ns, vn);
			const struct obj *vm = src ? store_find(srv->st, src, OBJ_VM, k->ns, vn) : NULL;
			orphan |= vm == NULL || !util_str_eq(vm->uid, apis_jgets(r, "uid"));
		}
		if (orphan)
			drop(srv, k);
	}
}

const char *apis_secrets_text_at(struct apisrv *srv, enum res r, size_t i, const char **ns, const char **name)
{
	for (struct kobj *k = srv->secrets->objs; k; k = k->next)
		if (k->r == r && k->text && i-- == 0) {
			*ns = k->ns;
			*name = k->name;
			return k->text;
		}
	return NULL;
}

bool apis_secrets_in_ns(struct apisrv *srv, const char *ns)
{
	for (struct kobj *k = srv->secrets->objs; k; k = k->next)
		if (strcmp(k->ns, ns) == 0)
			return true;
	return false;
}

/* kubectl's columns: NAME TYPE DATA AGE (Secret), NAME DATA AGE (ConfigMap); NULL where list.c puts the age. */
void apis_secrets_cells(enum res r, json_object *o, json_object *a)
{
	size_t n = 0;
	const char *maps[] = { "data", "binaryData" };
	for (int i = 0; i < 2; i++) {
		json_object *m = apis_jget(o, maps[i]);
		n += m && json_object_is_type(m, json_type_object) ? (size_t)json_object_object_length(m) : 0;
	}
	json_object_array_add(a, apis_jstr(apis_jgets(apis_jget(o, "metadata"), "name")));
	if (r == R_SECRET)
		json_object_array_add(a, apis_jstr(apis_jgets(o, "type") ? apis_jgets(o, "type") : "Opaque"));
	json_object_array_add(a, json_object_new_int((int)n));
	json_object_array_add(a, NULL);
}

/* ---- writes ---- */

static char *random_suffix(void)
{
	static const char alpha[] = "bcdfghjklmnpqrstvwxz2456789";
	unsigned char r[5];
	if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r)
		for (size_t i = 0; i < sizeof r; i++)
			r[i] = (unsigned char)(util_now_ms() >> (i * 5));
	char *s = xmalloc(sizeof r + 1);
	for (size_t i = 0; i < sizeof r; i++)
		s[i] = alpha[r[i] % (sizeof alpha - 1)];
	s[sizeof r] = '\0';
	return s;
}

/* The request's object: JSON, or the protobuf kubectl's typed clients send. */
static json_object *body_object(struct MHD_Connection *c, struct reqctx *rq, enum MHD_Result *mrc)
{
	const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
	if (ct && strstr(ct, "protobuf") && !rq->too_big) {
		json_object *o = apisel_pb_object(rq->body.data ? rq->body.data : "", rq->body.len);
		if (o == NULL)
			*mrc = apis_send_status(c, 400, "BadRequest", R_COUNT, NULL, "the request body is not a Secret or a ConfigMap");
		return o;
	}
	return apis_body_json(c, rq, mrc);
}

/* The object as stored from what the client sent: its kind's fields, metadata kept or made. */
static json_object *stored_form(enum res r, json_object *in, json_object *old_md, const char *ns, const char *name)
{
	json_object *o = json_object_new_object(), *md = json_object_new_object(), *imd = apis_jget(in, "metadata");
	json_object_object_add(o, "apiVersion", apis_jstr("v1"));
	json_object_object_add(o, "kind", apis_jstr(RES[r].kind));
	json_object_object_add(md, "name", apis_jstr(name));
	json_object_object_add(md, "namespace", apis_jstr(ns));
	char uid[37];
	if (old_md == NULL)
		util_uuid_v4(uid);
	json_object_object_add(md, "uid", apis_jstr(old_md ? apis_jgets(old_md, "uid") : uid));
	json_object *ct = apis_jget(old_md, "creationTimestamp");
	json_object_object_add(md, "creationTimestamp", ct ? json_object_get(ct) : apis_time_json(util_wall_s()));
	if (old_md == NULL && apis_jgets(imd, "generateName") && *apis_jgets(imd, "generateName"))
		json_object_object_add(md, "generateName", apis_jstr(apis_jgets(imd, "generateName")));
	else if (apis_jget(old_md, "generateName"))
		json_object_object_add(md, "generateName", json_object_get(apis_jget(old_md, "generateName")));
	const char *keep[] = { "labels", "annotations", "ownerReferences" };
	for (size_t i = 0; i < 3; i++) {
		json_object *x = apis_jget(imd, keep[i]);
		if (x && json_object_is_type(x, i == 2 ? json_type_array : json_type_object))
			json_object_object_add(md, keep[i], json_tokener_parse(json_object_to_json_string(x)));
	}
	json_object_object_add(o, "metadata", md);
	const char *fields[] = { "data", "stringData", "binaryData", "type", "immutable" };
	for (size_t i = 0; i < 5; i++) {
		json_object *x = apis_jget(in, fields[i]);
		if (x && (i != 1 || r == R_SECRET) && (i != 2 || r == R_CM) && (i != 3 || r == R_SECRET))
			json_object_object_add(o, fields[i], json_tokener_parse(json_object_to_json_string(x)));
	}
	return o;
}

static enum MHD_Result invalid(struct MHD_Connection *c, enum res r, const char *name, char *why)
{
	char *msg = xasprintf("%s \"%s\" is invalid: %s", RES[r].kind, name, why);
	enum MHD_Result mrc = apis_send_status(c, 422, "Invalid", r, name, "%s", msg);
	free(msg);
	free(why);
	return mrc;
}

static enum MHD_Result create(struct apisrv *srv, struct MHD_Connection *c, struct reqctx *rq, enum res r, const char *ns)
{
	enum MHD_Result mrc;
	json_object *in = body_object(c, rq, &mrc);
	if (in == NULL)
		return mrc;
	json_object *md = apis_jget(in, "metadata");
	const char *kind = apis_jgets(in, "kind"), *gen = apis_jgets(md, "generateName"),
		   *mns = apis_jgets(md, "namespace");
	const char *given = apis_jgets(md, "name");
	char *name = given && *given ? xstrdup(given) : NULL;
	if (name == NULL && gen && *gen && strlen(gen) < 248) {
		char *sfx = random_suffix();
		name = xasprintf("%s%s", gen, sfx);
		free(sfx);
	}
	bool done = true;
	if (kind && strcmp(kind, RES[r].kind) != 0)
		mrc = apis_send_status(c, 400, "BadRequest", R_COUNT, NULL, "kind %s does not match %s", kind, RES[r].plural);
	else if (mns && *mns && strcmp(mns, ns) != 0)
		mrc = apis_send_status(c, 400, "BadRequest", R_COUNT, NULL,
				       "the namespace of the provided object does not match the namespace sent on the request");
	else if (name == NULL)
		mrc = invalid(c, r, "", xstrdup("metadata.name: Required value: name or generateName is required"));
	else if (!manifest_dns_subdomain(name))
		mrc = invalid(c, r, name, xasprintf("metadata.name: Invalid value: \"%s\": a lowercase RFC 1123 subdomain must "
						    "consist of lower case alphanumeric characters, '-' or '.', and must start "
						    "and end with an alphanumeric character", name));
	else if (!apis_ns_exists(srv, ns))
		mrc = apis_send_status(c, 404, "NotFound", R_NS, ns, "namespaces \"%s\" not found", ns);
	else if (find(srv, r, ns, name))
		mrc = apis_send_status(c, 409, "AlreadyExists", r, name, "%s \"%s\" already exists", RES[r].plural, name);
	else
		done = false;
	if (done) {
		json_object_put(in);
		free(name);
		return mrc;
	}
	json_object *o = stored_form(r, in, NULL, ns, name);
	json_object_put(in);
	char *why = NULL;
	if (esecret_normalize(o, is_cm(r), &why) < 0) {
		json_object_put(o);
		mrc = invalid(c, r, name, why);
		free(name);
		return mrc;
	}
	if (apis_dry_run(c, rq)) {
		free(name);
		return apis_send_json(c, 201, o);
	}
	struct kobj *k = xcalloc(1, sizeof *k);
	k->r = r;
	k->ns = xstrdup(ns);
	k->name = name;
	k->j = o;
	char *err = NULL;
	k->next = srv->secrets->objs; /* listed first: the engine's lookup finds it when store() tells it */
	srv->secrets->objs = k;
	if (store(srv, k, &err) < 0) {
		mrc = apis_send_status(c, 500, "InternalError", r, name, "Internal error occurred: %s", err);
		free(err);
		unlink_obj(srv, k);
		kobj_free(k);
		return mrc;
	}
	return apis_send_text(c, 201, xstrdup(k->text), "application/json");
}

/* PATCH (merge, strategic merge as merge, JSON patch) and PUT (with resourceVersion: 409 when it is not the
 * current one). An immutable object's data do not change. */
static enum MHD_Result update(struct apisrv *srv, struct MHD_Connection *c, struct reqctx *rq, struct kobj *k, bool replace)
{
	const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
	bool jpatch = !replace && ct && strstr(ct, "json-patch+json");
	enum MHD_Result mrc;
	json_object *p = NULL;
	if (jpatch) {
		if (rq->too_big)
			return apis_send_status(c, 413, NULL, R_COUNT, NULL, "the request body is larger than %u bytes", MAX_BODY);
		buf_add_char(&rq->body, 0);
		p = json_tokener_parse(rq->body.data ? rq->body.data : "");
		if (p == NULL || !json_object_is_type(p, json_type_array)) {
			json_object_put(p);
			return apis_send_status(c, 400, "BadRequest", R_COUNT, NULL, "the request body is not a JSON patch");
		}
	} else if ((p = replace ? body_object(c, rq, &mrc) : apis_body_json(c, rq, &mrc)) == NULL)
		return mrc;
	json_object *cur = json_tokener_parse(k->text), *res;
	char *err = NULL;
	if (jpatch) {
		res = apisel_json_patch(cur, p, &err);
		if (res == NULL) {
			json_object_put(p);
			mrc = apis_send_status(c, 422, "Invalid", k->r, k->name, "the JSON patch could not be applied: %s", err);
			free(err);
			return mrc;
		}
	} else if (replace) {
		const char *rv = apis_jgets(apis_jget(p, "metadata"), "resourceVersion");
		char now[24];
		snprintf(now, sizeof now, "%llu", (unsigned long long)k->rv);
		if (rv && *rv && strcmp(rv, now) != 0) {
			json_object_put(p);
			json_object_put(cur);
			return apis_send_status(c, 409, "Conflict", k->r, k->name,
						"Operation cannot be fulfilled on %s \"%s\": the object has been modified; please "
						"apply your changes to the latest version and try again", RES[k->r].plural, k->name);
		}
		json_object_put(cur);
		res = json_object_get(p);
	} else
		res = apisel_merge_patch(cur, p);
	json_object_put(p);
	const char *nn = apis_jgets(apis_jget(res, "metadata"), "name");
	if (nn && strcmp(nn, k->name) != 0) {
		json_object_put(res);
		return apis_send_status(c, 400, "BadRequest", R_COUNT, NULL,
					"the name of the object (%s) does not match the name on the URL (%s)", nn, k->name);
	}
	json_object *o = stored_form(k->r, res, apis_jget(k->j, "metadata"), k->ns, k->name);
	json_object_put(res);
	char *why = NULL;
	if (esecret_normalize(o, is_cm(k->r), &why) < 0) {
		json_object_put(o);
		return invalid(c, k->r, k->name, why);
	}
	json_object *imm = apis_jget(k->j, "immutable");
	if (imm && json_object_get_boolean(imm)) {
		const char *f[] = { "data", "binaryData", "immutable" };
		for (int i = 0; i < 3; i++) {
			json_object *a = apis_jget(k->j, f[i]), *b = apis_jget(o, f[i]);
			if (!(a == NULL && b == NULL) && !(a && b && json_object_equal(a, b))) {
				json_object_put(o);
				return invalid(c, k->r, k->name, xasprintf("%s: Forbidden: field is immutable when `immutable` is set",
									   f[i]));
			}
		}
	}
	if (apis_dry_run(c, rq))
		return apis_send_json(c, 200, o);
	json_object *old = k->j;
	k->j = o;
	if (store(srv, k, &err) < 0) {
		k->j = old;
		mrc = apis_send_status(c, 500, "InternalError", k->r, k->name, "Internal error occurred: %s", err);
		free(err);
		return mrc;
	}
	json_object_put(old);
	return apis_send_text(c, 200, xstrdup(k->text), "application/json");
}

enum MHD_Result apis_secrets_write(struct apisrv *srv, struct MHD_Connection *c, struct reqctx *rq, enum res r,
				   const char *method, const char *ns, const char *name)
{
	if (strcmp(method, "POST") == 0 && ns && name == NULL)
		return create(srv, c, rq, r, ns);
	if (name == NULL || ns == NULL)
		return apis_send_status(c, 405, "MethodNotAllowed", R_COUNT, NULL,
					"the server does not allow this method on the requested resource");
	struct kobj *k = find(srv, r, ns, name);
	if (k == NULL)
		return apis_not_found(c, r, name);
	if (strcmp(method, "PATCH") == 0 || strcmp(method, "PUT") == 0)
		return update(srv, c, rq, k, method[1] == 'U');
	if (strcmp(method, "DELETE") != 0)
		return apis_send_status(c, 405, "MethodNotAllowed", R_COUNT, NULL,
					"the server does not allow this method on the requested resource");
	char *text = xstrdup(k->text);
	if (!apis_dry_run(c, rq))
		drop(srv, k);
	return apis_send_text(c, 200, text, "application/json");
}

void apis_secrets_delete_ns(struct apisrv *srv, const char *ns)
{
	for (struct kobj *k = srv->secrets->objs, *next; k; k = next) {
		next = k->next;
		if (strcmp(k->ns, ns) == 0)
			drop(srv, k);
	}
}
