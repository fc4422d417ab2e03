/* The engine service's migration controller: VirtualMachineInstanceMigration objects (create, delete = abort, the
 * VM's migrate subresource), their phases following the engine's migration, the kvcon.io/ annotations for the
 * engine's options, and the objects on disk (engine-data/vmims/) that survive a restart of the service. */
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

/* ---- VirtualMachineInstanceMigration ---- */

static bool vmim_final(const struct vmim *m);
static const struct migration_state *vmim_state(struct apisrv *srv, const struct vmim *m);
static void vmim_refresh(struct apisrv *srv, struct vmim *m, const char *type);

void apis_vmim_free(struct vmim *m)
{
	free(m->ns);
	free(m->name);
	free(m->vmi);
	free(m->target);
	free(m->mig_uri);
	free(m->reason);
	free(m->body);
	free(m->text);
	if (m->labels)
		json_object_put(m->labels);
	if (m->annotations)
		json_object_put(m->annotations);
	free(m);
}

static struct vmim *vmim_find(struct apisrv *srv, const char *ns, const char *name)
{
	for (struct vmim *m = srv->vmims; m; m = m->next)
		if (strcmp(m->ns, ns) == 0 && strcmp(m->name, name) == 0)
			return m;
	return NULL;
}

static const struct vmi *vmi_of(struct apisrv *srv, const char *ns, const char *name)
{
	for (int s = 0; s < srv->nsrcs; s++) {
		struct obj *o = store_find(srv->st, srv->srcs[s], OBJ_VMI, ns, name);
		if (o)
			return (const struct vmi *)o;
	}
	return NULL;
}

/* The engine's migration options, which KubeVirt's object has no field for: annotations of the
 * VirtualMachineInstanceMigration (docs/ENGINE-SERVICE.md, what is not KubeVirt-compatible):
 *   kvcon.io/migrate-uri         the target's libvirt URI as the source host reaches it (SCHEME://...)
 *   kvcon.io/migration-timeout   seconds, 1..604800: aborted when not completed by then
 *   kvcon.io/migration-bandwidth MiB/s, 1..1048576
 *   kvcon.io/migration-options   a comma list of auto-converge, postcopy, copy-storage, offline
 * Other kvcon.io/migrat* annotations are refused (a misspelt option must not be ignored silently). A migrate-uri
 * from anyone but the host's owner must be one the owner configured. 0, or -1 with *why (caller frees). */
static int vmim_opts(struct apisrv *srv, json_object *an, struct vmim *m, bool owner, char **why)
{
	if (an == NULL || !json_object_is_type(an, json_type_object))
		return 0;
	json_object_object_foreach(an, key, val)
	{
		if (strncmp(key, "kvcon.io/migrat", 15) != 0)
			continue;
		const char *v = json_object_is_type(val, json_type_string) ? json_object_get_string(val) : NULL;
		if (v == NULL) {
			*why = xasprintf("metadata.annotations[%s]: Invalid value: a string is required", key);
			return -1;
		}
		char *end = NULL;
		if (strcmp(key, "kvcon.io/migrate-uri") == 0) {
			size_t sl = strspn(v, "abcdefghijklmnopqrstuvwxyz0123456789+.-");
			bool ok = sl > 0 && strncmp(v + sl, "://", 3) == 0 && strlen(v) <= 1024;
			for (const unsigned char *p = (const unsigned char *)v; ok && *p; p++)
				ok = *p > 0x20 && *p < 0x7f;
			if (!ok) {
				*why = xstrdup("metadata.annotations[kvcon.io/migrate-uri]: Invalid value: a URI "
					       "(SCHEME://HOST..., printable ASCII, no spaces, at most 1024 characters) is required");
				return -1;
			}
			/* libvirt may run a program a URI names (+ext, command=): only the host's owner chooses one */
			bool known = owner || migrate_uri_configured(v);
			for (int s = 0; s < srv->nsrcs && !known; s++)
				known = util_str_eq(srv->srcs[s]->server, v);
			if (!known) {
				char *e = util_escape_display(v);
				*why = xasprintf("metadata.annotations[kvcon.io/migrate-uri]: Forbidden: %s is not a URI this "
						 "host's owner configured (an engine.host line, or its migrate-uri=, in the config "
						 "file of the engine service's user, or a host it serves)", e);
				free(e);
				return -1;
			}
			free(m->mig_uri);
			m->mig_uri = xstrdup(v);
		} else if (strcmp(key, "kvcon.io/migration-timeout") == 0) {
			errno = 0;
			long n = strtol(v, &end, 10);
			if (errno || end == v || *end || n < 1 || n > 604800) {
				*why = xstrdup("metadata.annotations[kvcon.io/migration-timeout]: Invalid value: whole seconds "
					       "from 1 to 604800 are required");
				return -1;
			}
			m->timeout = (int)n;
		} else if (strcmp(key, "kvcon.io/migration-bandwidth") == 0) {
			errno = 0;
			long n = strtol(v, &end, 10);
			if (errno || end == v || *end || n < 1 || n > 1048576) {
				*why = xstrdup("metadata.annotations[kvcon.io/migration-bandwidth]: Invalid value: MiB/s from 1 "
					       "to 1048576 are required");
				return -1;
			}
			m->bandwidth = (unsigned long)n;
		} else if (strcmp(key, "kvcon.io/migration-options") == 0) {
			static const struct {
				const char *name;
				uint32_t flag;
			} known[] = { { "auto-converge", ENGINE_MIG_AUTO_CONVERGE },
				      { "postcopy", ENGINE_MIG_POSTCOPY },
				      { "copy-storage", ENGINE_MIG_COPY_STORAGE },
				      { "offline", ENGINE_MIG_OFFLINE } };
			for (const char *p = v; *p;) {
				size_t l = strcspn(p, ",");
				bool found = false;
				for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
					if (l == strlen(known[i].name) && strncmp(p, known[i].name, l) == 0) {
						m->flags |= known[i].flag;
						found = true;
					}
				if (!found) {
					*why = xstrdup("metadata.annotations[kvcon.io/migration-options]: Invalid value: a comma "
						       "list of auto-converge, postcopy, copy-storage, offline is required");
					return -1;
				}
				p += l;
				if (*p == ',')
					p++;
			}
		} else {
			char *k = util_escape_display(key);
			*why = xasprintf("metadata.annotations[%s]: Unsupported value: the engine's migration annotations are "
					 "kvcon.io/migrate-uri, kvcon.io/migration-timeout, kvcon.io/migration-bandwidth and "
					 "kvcon.io/migration-options", k);
			free(k);
			return -1;
		}
	}
	return 0;
}

/* The engine's state of m's migration: the VMI's migrationState when it is this migration's, else NULL. */
static const struct migration_state *vmim_state(struct apisrv *srv, const struct vmim *m)
{
	const struct vmi *v = m->mig_uid[0] ? vmi_of(srv, m->ns, m->vmi) : NULL;
	const struct migration_state *ms = v ? vmi_mig(v) : NULL;
	return ms && ms->present && strcmp(ms->migration_uid, m->mig_uid) == 0 ? ms : NULL;
}

static bool vmim_final(const struct vmim *m)
{
	return util_str_eq(m->phase, "Succeeded") || util_str_eq(m->phase, "Failed");
}

/* KubeVirt's phase from the engine's state: pre-flight checks pass before the migration exists (Scheduling and
 * Scheduled are instantaneous here), no job figures yet is the target being prepared, figures are Running. */
static const char *vmim_phase_now(struct apisrv *srv, struct vmim *m)
{
	if (vmim_final(m))
		return m->phase;
	const struct migration_state *ms = vmim_state(srv, m);
	if (ms && ms->completed)
		return "Succeeded";
	if (ms && ms->failed) {
		if (m->reason == NULL && ms->failure_reason)
			m->reason = xstrdup(ms->failure_reason);
		return "Failed";
	}
	if (m->done)
		return m->done > 0 ? "Succeeded" : "Failed";
	if (ms == NULL)
		return m->phase;
	if (ms->iteration > 0 || ms->data_processed > 0 || ms->progress_pct > 0)
		return "Running";
	return "PreparingTarget";
}

static void vmim_set_phase(struct vmim *m, const char *phase)
{
	if (util_str_eq(m->phase, phase))
		return;
	/* the steps a jump skips are recorded too, as KubeVirt's controller passes through them */
	static const char *const order[] = { "Pending",	       "Scheduling", "Scheduled", "PreparingTarget",
					     "TargetReady",    "Running",    "Succeeded" };
	int from = -1, to = -1;
	for (int i = 0; i < 7; i++) {
		if (util_str_eq(order[i], m->phase))
			from = i;
		if (util_str_eq(order[i], phase))
			to = i;
	}
	/* never backwards: a service started after a kill knows a resumed migration's figures only once libvirt reports
	 * them again, and the phase it had (Running, stored) stays until then */
	if (from >= 0 && to >= 0 && to < from)
		return;
	int64_t now = util_wall_s();
	for (int i = from + 1; from >= 0 && to > from && i < to && m->ntrans < VMIM_NPHASE; i++) {
		m->tphase[m->ntrans] = order[i];
		m->tstamp[m->ntrans++] = now;
	}
	if (m->ntrans < VMIM_NPHASE) {
		m->tphase[m->ntrans] = phase;
		m->tstamp[m->ntrans++] = now;
	}
	m->phase = phase;
}

static json_object *vmim_json(struct apisrv *srv, const struct vmim *m)
{
	json_object *j = json_object_new_object(), *md = json_object_new_object(), *spec = json_object_new_object(),
		    *st = json_object_new_object();
	json_object_object_add(j, "apiVersion", apis_jstr("kubevirt.io/v1"));
	json_object_object_add(j, "kind", apis_jstr("VirtualMachineInstanceMigration"));
	json_object_object_add(md, "name", apis_jstr(m->name));
	json_object_object_add(md, "namespace", apis_jstr(m->ns));
	json_object_object_add(md, "uid", apis_jstr(m->uid));
	json_object_object_add(md, "creationTimestamp", apis_time_json(m->created));
	json_object *l = m->labels ? json_object_get(m->labels) : json_object_new_object();
	json_object_object_add(l, "kubevirt.io/vmi-name", apis_jstr(m->vmi));
	json_object_object_add(md, "labels", l);
	if (m->annotations)
		json_object_object_add(md, "annotations", json_object_get(m->annotations));
	json_object_object_add(j, "metadata", md);
	json_object_object_add(spec, "vmiName", apis_jstr(m->vmi));
	if (m->target) {
		json_object *sel = json_object_new_object();
		json_object_object_add(sel, "kubernetes.io/hostname", apis_jstr(m->target));
		json_object_object_add(spec, "addedNodeSelector", sel);
	}
	json_object_object_add(j, "spec", spec);
	json_object_object_add(st, "phase", apis_jstr(m->phase));
	json_object *tr = json_object_new_array();
	for (int i = 0; i < m->ntrans; i++) {
		json_object *t = json_object_new_object();
		json_object_object_add(t, "phase", apis_jstr(m->tphase[i]));
		json_object_object_add(t, "phaseTransitionTimestamp", apis_time_json(m->tstamp[i]));
		json_object_array_add(tr, t);
	}
	json_object_object_add(st, "phaseTransitionTimestamps", tr);
	const struct migration_state *ms = vmim_state(srv, m);
	if (ms)
		json_object_object_add(st, "migrationState", apis_mig_state_json(ms));
	if (util_str_eq(m->phase, "Failed") && m->reason) {
		json_object *conds = json_object_new_array(), *c = json_object_new_object();
		json_object_object_add(c, "type", apis_jstr("Failed"));
		json_object_object_add(c, "status", apis_jstr("True"));
		json_object_object_add(c, "message", apis_jstr(m->reason));
		json_object_array_add(conds, c);
		json_object_object_add(st, "conditions", conds);
	}
	json_object_object_add(j, "status", st);
	return j;
}

/* ---- the objects on disk, beside the engine's records ---- */

/* Writes m's file (temporary file, fsync, rename, directory fsync). 0, or -1 with *err (caller frees). */
static int vmim_store(const struct vmim *m, const char *body, char **err)
{
	json_object *f = json_object_new_object();
	json_object_object_add(f, "object", json_tokener_parse(body));
	json_object_object_add(f, "migrationUid", apis_jstr(m->mig_uid));
	json_object_object_add(f, "created", json_object_new_int64(m->created));
	json_object_object_add(f, "done", json_object_new_int(m->done));
	if (m->reason)
		json_object_object_add(f, "reason", apis_jstr(m->reason));
	json_object *tr = json_object_new_array();
	for (int i = 0; i < m->ntrans; i++) {
		json_object *t = json_object_new_object();
		json_object_object_add(t, "phase", apis_jstr(m->tphase[i]));
		json_object_object_add(t, "time", json_object_new_int64(m->tstamp[i]));
		json_object_array_add(tr, t);
	}
	json_object_object_add(f, "transitions", tr);
	char *text = apis_jtext(f), *d = apis_kept_dir("vmims");
	json_object_put(f);
	int rc = apis_kept_write(d, m->ns, m->name, text, err);
	free(text);
	free(d);
	return rc;
}

static void vmim_unlink(const struct vmim *m)
{
	char *d = apis_kept_dir("vmims");
	apis_kept_remove(d, m->ns, m->name);
	free(d);
}


static void vmim_loaded(void *ctx, const char *path, json_object *f, const char *why)
{
	struct apisrv *srv = ctx;
	if (why)
		log_warn("engine serve: %s", why);
	json_object *o = apis_jget(f, "object");
	json_object *md = apis_jget(o, "metadata"), *spec = apis_jget(o, "spec");
	const char *ns = apis_jgets(md, "namespace"), *name = apis_jgets(md, "name"), *vmi = apis_jgets(spec, "vmiName");
	const char *uid = apis_jgets(md, "uid"), *mu = apis_jgets(f, "migrationUid");
	if (ns == NULL || name == NULL || vmi == NULL || uid == NULL || !apis_valid_name(name) || !apis_valid_name(ns) ||
	    vmim_find(srv, ns, name)) {
		log_warn("engine serve: %s: not a VirtualMachineInstanceMigration kvcon stored; ignored", path);
	} else {
		struct vmim *m = xcalloc(1, sizeof *m);
		m->id = ++srv->vmim_ids;
		m->loaded = true;
		m->ns = xstrdup(ns);
		m->name = xstrdup(name);
		m->vmi = xstrdup(vmi);
		m->target = xstrdup0(apis_jgets(apis_jget(spec, "addedNodeSelector"), "kubernetes.io/hostname"));
		snprintf(m->uid, sizeof m->uid, "%s", uid);
		snprintf(m->mig_uid, UID_LEN, "%s", mu ? mu : "");
		m->created = json_object_get_int64(apis_jget(f, "created"));
		m->done = json_object_get_int(apis_jget(f, "done"));
		m->reason = xstrdup0(apis_jgets(f, "reason"));
		json_object *x = apis_jget(md, "labels");
		if (x && json_object_is_type(x, json_type_object)) {
			m->labels = json_tokener_parse(json_object_to_json_string(x));
			json_object_object_del(m->labels, "kubevirt.io/vmi-name");
		}
		x = apis_jget(md, "annotations");
		if (x && json_object_is_type(x, json_type_object))
			m->annotations = json_tokener_parse(json_object_to_json_string(x));
		char *owhy = NULL;
		if (vmim_opts(srv, m->annotations, m, true, &owhy) < 0) { /* validated when created: not kvcon's file */
			log_warn("engine serve: %s: %s", path, owhy);
			free(owhy);
		}
		json_object *tr = apis_jget(f, "transitions");
		for (size_t i = 0; tr && json_object_is_type(tr, json_type_array) && i < json_object_array_length(tr) &&
				   m->ntrans < VMIM_NPHASE; i++) {
			const char *ph = apis_jgets(json_object_array_get_idx(tr, i), "phase");
			if (ph == NULL)
				continue;
			m->tphase[m->ntrans] = intern(ph);
			m->tstamp[m->ntrans++] = json_object_get_int64(apis_jget(json_object_array_get_idx(tr, i), "time"));
		}
		const char *ph = apis_jgets(apis_jget(o, "status"), "phase");
		m->phase = ph ? intern(ph) : intern("Pending");
		m->next = srv->vmims;
		srv->vmims = m;
	}
}

/* The objects an earlier service kept (at start; their phases follow the engine's records once read). */
void apis_vmims_load(struct apisrv *srv)
{
	char *d = apis_kept_dir("vmims");
	apis_kept_load(d, vmim_loaded, srv);
	free(d);
}

/* A loaded migration the engine never heard of (the service was killed between storing the object and asking the
 * engine), or whose VM is gone: Failed, once every host has been read. */
void apis_vmims_settle_loaded(struct apisrv *srv)
{
	bool ready = true;
	for (int s = 0; s < srv->nsrcs; s++)
		ready &= engine_ready(srv->srcs[s]);
	if (!ready)
		return;
	for (struct vmim *m = srv->vmims; m; m = m->next) {
		if (!m->loaded)
			continue;
		m->loaded = false;
		if (vmim_final(m) || m->done || vmim_state(srv, m))
			continue;
		struct source *at = (m->flags & ENGINE_MIG_OFFLINE) && m->target ? apis_source_of(srv, m->ns, m->vmi) : NULL;
		if (at && util_str_eq(at->name, m->target)) {
			/* an offline move the engine finished from its record's intent (its record is on the target) */
			m->done = 1;
			vmim_refresh(srv, m, NULL);
			continue;
		}
		free(m->reason);
		m->reason = xstrdup("interrupted: the engine service stopped before the migration started");
		m->done = -1;
		vmim_refresh(srv, m, NULL);
	}
}

/* Rebuilds m's text; a change bumps the resourceVersion and becomes a watch event (and is stored). */
static void vmim_refresh(struct apisrv *srv, struct vmim *m, const char *type)
{
	const char *was = m->phase;
	bool stored = m->body != NULL; /* the first body is stored by create */
	vmim_set_phase(m, vmim_phase_now(srv, m));
	if (!apis_publish(srv, vmim_json(srv, m), &m->body, &m->text, &m->rv))
		return;
	char *err = NULL;
	/* a new phase is stored (the figures of a running migration are not: they come from the engine's record) */
	if (stored && was != m->phase && vmim_store(m, m->body, &err) < 0) {
		log_warn("engine serve: %s", err);
		free(err);
	}
	apis_ring_push(srv, R_VMIM, type ? type : "MODIFIED", NULL, m->text);
	apis_wake_watchers(srv);
}

void apis_vmims_update(struct apisrv *srv)
{
	for (struct vmim *m = srv->vmims; m; m = m->next)
		vmim_refresh(srv, m, NULL);
}

/* Which migration an engine action was for: by id, as the object may be deleted before the engine answers. */
struct vmim_ticket {
	struct apisrv *srv;
	unsigned id;
};

static void vmim_done(void *arg, int status, const char *message)
{
	struct vmim_ticket *t = arg;
	struct apisrv *srv = t->srv;
	unsigned id = t->id;
	free(t);
	for (struct vmim *m = srv->vmims; m; m = m->next)
		if (m->id == id) {
			m->done = status == 0 ? 1 : -1;
			if (status != 0 && m->reason == NULL && message)
				m->reason = xstrdup(message);
			vmim_refresh(srv, m, NULL);
			return;
		}
}

/* Keeps m and starts its migration: the object, with the migrationUid the engine will use, is on disk before the
 * engine acts (a service killed from here on finds it, and the engine's record says how the migration went). -1
 * with *err when it cannot be stored (m freed, nothing done); else 0, m listed (Failed when the engine refused). */
static int vmim_begin(struct apisrv *srv, struct vmim *m, struct source *src, char **err)
{
	util_uuid_v4(m->mig_uid);
	vmim_set_phase(m, "Scheduling");
	json_object *j = vmim_json(srv, m);
	char *body = apis_jtext(j);
	json_object_put(j);
	if (vmim_store(m, body, err) < 0) {
		free(body);
		apis_vmim_free(m);
		return -1;
	}
	free(body);
	m->next = srv->vmims;
	srv->vmims = m;
	struct action_req req = { .act = ACT_MIGRATE, .ns = m->ns, .name = m->vmi, .grace_period = -1,
				  .target = m->target, .uid = m->mig_uid, .flags = m->flags, .mig_uri = m->mig_uri,
				  .timeout = m->timeout, .bandwidth = m->bandwidth };
	char *why = NULL;
	struct vmim_ticket *t = xmalloc(sizeof *t);
	*t = (struct vmim_ticket){ srv, m->id };
	if (src->ops->action(src, &req, vmim_done, t, &why) < 0) { /* done is not called: the ticket is ours */
		free(t);
		m->reason = why ? why : xstrdup("refused");
		vmim_set_phase(m, "Failed");
	} else {
		vmim_set_phase(m, "Scheduled");
	}
	vmim_refresh(srv, m, "ADDED");
	char *serr = NULL;
	if (vmim_store(m, m->body, &serr) < 0) {
		log_warn("engine serve: %s", serr);
		free(serr);
	}
	return 0;
}

/* The request came from the host's owner: a client of the unix socket (in a directory of the service user's) running
 * as the service's uid or root, as `kvcon engine migrate --migrate-uri` does; an HTTPS client holds a token only. */
static bool from_owner(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	struct sockaddr_storage sa;
	socklen_t sl = sizeof sa;
	struct ucred cr;
	socklen_t cl = sizeof cr;
	if (ci == NULL || getsockname(ci->connect_fd, (struct sockaddr *)&sa, &sl) < 0 || sa.ss_family != AF_UNIX ||
	    getsockopt(ci->connect_fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) < 0)
		return false;
	return cr.uid == geteuid() || cr.uid == 0;
}

enum MHD_Result apis_create_vmim(struct apisrv *srv, struct MHD_Connection *c, struct reqctx *rq, const char *ns)
{
	enum MHD_Result rc;
	json_object *o = apis_body_json(c, rq, &rc);
	if (o == NULL)
		return rc;
	json_object *md = apis_jget(o, "metadata"), *spec = apis_jget(o, "spec");
	const char *name = apis_jgets(md, "name"), *gen = apis_jgets(md, "generateName"), *vmi = apis_jgets(spec, "vmiName");
	const char *target = apis_jgets(apis_jget(spec, "addedNodeSelector"), "kubernetes.io/hostname");
	char *gname = NULL;
	if ((name == NULL || *name == 0) && gen && *gen) {
		char u[37];
		util_uuid_v4(u);
		name = gname = xasprintf("%s%.5s", gen, u);
	}
	struct source *src = vmi ? apis_source_of(srv, ns, vmi) : NULL;
	bool tfound = target == NULL;
	for (int s = 0; s < srv->nsrcs && !tfound; s++)
		tfound = util_str_eq(srv->srcs[s]->name, target);
	struct vmim opts = { 0 };
	char *owhy = NULL;
	bool oerr = vmim_opts(srv, apis_jget(md, "annotations"), &opts, from_owner(c), &owhy) < 0;
	if (name == NULL || !apis_valid_name(name))
		rc = apis_send_invalid(c, name ? name : "", "metadata.name: Invalid value: a lowercase RFC 1123 subdomain is required");
	else if (vmi == NULL || *vmi == 0)
		rc = apis_send_invalid(c, name, "spec.vmiName: Required value");
	else if (!apis_ns_exists(srv, ns))
		rc = apis_send_status(c, 404, "NotFound", R_NS, ns, "namespaces \"%s\" not found", ns);
	else if (vmim_find(srv, ns, name))
		rc = apis_send_status(c, 409, "AlreadyExists", R_VMIM, name, "%s \"%s\" already exists", RES[R_VMIM].plural,
				 name);
	else if (oerr)
		rc = apis_send_invalid(c, name, owhy);
	else if (src == NULL && (opts.flags & ENGINE_MIG_OFFLINE))
		rc = apis_send_invalid(c, name, "spec.vmiName: no VirtualMachine of that name (offline migration)");
	else if (src == NULL || (vmi_of(srv, ns, vmi) == NULL && !(opts.flags & ENGINE_MIG_OFFLINE)))
		rc = apis_send_invalid(c, name, "spec.vmiName: the VMI does not exist or is not running");
	else if (!tfound)
		rc = apis_send_invalid(c, name, "spec.addedNodeSelector: kubernetes.io/hostname is not one of the nodes");
	else {
		struct vmim *m = xcalloc(1, sizeof *m);
		m->id = ++srv->vmim_ids;
		m->ns = xstrdup(ns);
		m->name = xstrdup(name);
		m->vmi = xstrdup(vmi);
		m->target = xstrdup0(target);
		util_uuid_v4(m->uid);
		m->created = util_wall_s();
		json_object *x = apis_jget(md, "labels");
		if (x && json_object_is_type(x, json_type_object))
			m->labels = json_tokener_parse(json_object_to_json_string(x));
		x = apis_jget(md, "annotations");
		if (x && json_object_is_type(x, json_type_object))
			m->annotations = json_tokener_parse(json_object_to_json_string(x));
		m->flags = opts.flags;
		m->mig_uri = opts.mig_uri;
		opts.mig_uri = NULL;
		m->timeout = opts.timeout;
		m->bandwidth = opts.bandwidth;
		vmim_set_phase(m, "Pending");
		char *err = NULL;
		if (apis_dry_run(c, rq)) { /* nothing is kept or done */
			json_object *j = vmim_json(srv, m);
			apis_vmim_free(m);
			rc = apis_send_json(c, 201, j);
		} else if (vmim_begin(srv, m, src, &err) < 0) {
			rc = apis_send_status(c, 500, "InternalError", R_VMIM, name, "%s", err);
			free(err);
		} else {
			rc = apis_send_text(c, 201, xstrdup(m->text), "application/json");
		}
	}
	free(opts.mig_uri);
	free(owhy);
	free(gname);
	json_object_put(o);
	return rc;
}

/* The migrate apis_subresource (virtctl migrate, kvcon's kube provider): as KubeVirt's virt-api, a
 * VirtualMachineInstanceMigration named kubevirt-migrate-vm-XXXXX (MigrateOptions.addedNodeSelector its target);
 * the engine's refusal is also the answer (409), the object stays Failed. */
enum MHD_Result apis_migrate_sub(struct apisrv *srv, struct MHD_Connection *c, struct reqctx *rq, const char *ns, const char *name)
{
	struct source *src = apis_source_of(srv, ns, name);
	if (src == NULL)
		return apis_not_found(c, R_VM, name);
	char *target = NULL;
	if (rq->body.len && !rq->too_big) {
		buf_add_char(&rq->body, 0);
		json_object *o = json_tokener_parse(rq->body.data);
		rq->body.len--;
		target = xstrdup0(apis_jgets(apis_jget(o, "addedNodeSelector"), "kubernetes.io/hostname"));
		if (o)
			json_object_put(o);
	}
	bool tfound = target == NULL;
	for (int s = 0; s < srv->nsrcs && !tfound; s++)
		tfound = util_str_eq(srv->srcs[s]->name, target);
	if (!tfound) {
		free(target);
		return apis_send_status(c, 422, "Invalid", R_VM, name, "addedNodeSelector: kubernetes.io/hostname is not one of the nodes");
	}
	if (vmi_of(srv, ns, name) == NULL) {
		free(target);
		return apis_send_status(c, 409, "Conflict", R_VM, name, "VM is not running");
	}
	if (apis_dry_run(c, rq)) {
		free(target);
		return apis_send_text(c, 202, xstrdup(""), "text/plain");
	}
	struct vmim *m = xcalloc(1, sizeof *m);
	m->id = ++srv->vmim_ids;
	m->ns = xstrdup(ns);
	char u[37];
	util_uuid_v4(u);
	m->name = xasprintf("kubevirt-migrate-vm-%.5s", u);
	m->vmi = xstrdup(name);
	m->target = target;
	util_uuid_v4(m->uid);
	m->created = util_wall_s();
	vmim_set_phase(m, "Pending");
	char *err = NULL;
	if (vmim_begin(srv, m, src, &err) < 0) {
		enum MHD_Result rc = apis_send_status(c, 500, "InternalError", R_VM, name, "%s", err);
		free(err);
		return rc;
	}
	if (util_str_eq(m->phase, "Failed"))
		return apis_send_status(c, 409, "Conflict", R_VM, name, "%s", m->reason ? m->reason : "refused");
	return apis_send_text(c, 202, xstrdup(""), "text/plain");
}

/* The eviction of a LiveMigrate VMI's launcher (pods/eviction, kubectl drain): a migration to the engine's choice
 * of host, named as KubeVirt's evacuation controller names it, unless one of that VMI is under way. 0, or -1 with
 * *err (the engine's refusal, or the object could not be stored). */
int apis_vmim_evacuate(struct apisrv *srv, struct source *src, const char *ns, const char *vmi, char **err)
{
	for (struct vmim *m = srv->vmims; m; m = m->next)
		if (util_str_eq(m->ns, ns) && util_str_eq(m->vmi, vmi) && !vmim_final(m))
			return 0;
	struct vmim *m = xcalloc(1, sizeof *m);
	m->id = ++srv->vmim_ids;
	m->ns = xstrdup(ns);
	char u[37];
	util_uuid_v4(u);
	m->name = xasprintf("kubevirt-evacuation-%.5s", u);
	m->vmi = xstrdup(vmi);
	util_uuid_v4(m->uid);
	m->created = util_wall_s();
	vmim_set_phase(m, "Pending");
	if (vmim_begin(srv, m, src, err) < 0)
		return -1;
	if (util_str_eq(m->phase, "Failed")) {
		*err = xstrdup(m->reason ? m->reason : "refused");
		return -1;
	}
	return 0;
}

/* Deletes m: its file; a migration still running is aborted, as KubeVirt's controller does. Returns its last text with the DELETED event's
 * resourceVersion (caller frees). */
static char *vmim_delete(struct apisrv *srv, struct vmim *m)
{
	const char *ns = m->ns, *name = m->name;
	vmim_refresh(srv, m, NULL);
	vmim_unlink(m);
	if (!vmim_final(m)) {
		struct source *src = apis_source_of(srv, ns, m->vmi);
		struct action_req req = { .act = ACT_MIGRATE_ABORT, .ns = ns, .name = m->vmi, .grace_period = -1 };
		char *err = NULL;
		if (src == NULL || src->ops->action(src, &req, apis_action_done, NULL, &err) < 0) {
			log_warn("engine serve: aborting migration %s/%s: %s", ns, name, err ? err : "the VM is gone");
			free(err);
		}
	}
	for (struct vmim **p = &srv->vmims; *p; p = &(*p)->next)
		if (*p == m) {
			*p = m->next;
			break;
		}
	srv->rv++;
	json_object *j = json_tokener_parse(m->text);
	char rv[24];
	snprintf(rv, sizeof rv, "%llu", (unsigned long long)srv->rv);
	json_object_object_add(apis_jobj(j, "metadata"), "resourceVersion", json_object_new_string(rv));
	char *text = apis_jtext(j);
	json_object_put(j);
	apis_ring_push(srv, R_VMIM, "DELETED", NULL, text);
	apis_wake_watchers(srv);
	apis_vmim_free(m);
	return text;
}

enum MHD_Result apis_delete_vmim(struct apisrv *srv, struct MHD_Connection *c, struct reqctx *rq, const char *ns, const char *name)
{
	struct vmim *m = vmim_find(srv, ns, name);
	if (m == NULL)
		return apis_not_found(c, R_VMIM, name);
	if (apis_dry_run(c, rq))
		return apis_send_text(c, 200, xstrdup(m->text), "application/json");
	return apis_send_text(c, 200, vmim_delete(srv, m), "application/json");
}

void apis_vmim_delete_ns(struct apisrv *srv, const char *ns)
{
	for (struct vmim *m = srv->vmims, *next; m; m = next) {
		next = m->next;
		if (strcmp(m->ns, ns) == 0)
			free(vmim_delete(srv, m));
	}
}
