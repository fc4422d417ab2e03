/* The engine service's streams and kvcon's own read-only subresources: pods/NAME/log (the launcher's containers as
 * the engine keeps them) and the VMI's kvcon-domainxml and the VM's kvcon-storage (docs/ENGINE-SERVICE.md). */
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

#define DOMXML_READ_MAX (1u << 20) /* a domain XML kvcon wrote: kilobytes */

/* ---- pods/NAME/log: the launcher's containers as the engine keeps them (compute: QEMU's log, serial: the
 * guest's serial log), streamed from the engine's open_log as kubectl logs reads a cluster's ---- */

struct logconn {
	struct MHD_Connection *c;
	struct source *src;
	struct log_stream *ls; /* NULL once it ended */
	struct buf out;
	bool ended, suspended;
};

static void logconn_wake(struct logconn *lc)
{
	if (lc->suspended) {
		lc->suspended = false;
		MHD_resume_connection(lc->c);
	}
}

static bool logconn_data(void *arg, const char *data, size_t len)
{
	struct logconn *lc = arg;
	buf_add(&lc->out, data, len);
	logconn_wake(lc);
	return true;
}

static void logconn_end(void *arg, int status, const char *message)
{
	struct logconn *lc = arg;
	if (status != 0)
		log_info("engine serve: a log ended: %d %s", status, message ? message : "");
	lc->ls = NULL;
	lc->ended = true;
	logconn_wake(lc);
}

static ssize_t logconn_read(void *cls, uint64_t pos, char *out, size_t max)
{
	(void)pos;
	struct logconn *lc = cls;
	if (lc->out.len == 0) {
		if (lc->ended)
			return MHD_CONTENT_READER_END_OF_STREAM;
		lc->suspended = true;
		MHD_suspend_connection(lc->c);
		return 0;
	}
	size_t n = lc->out.len < max ? lc->out.len : max;
	memcpy(out, lc->out.data, n);
	buf_consume(&lc->out, n);
	return (ssize_t)n;
}

static void logconn_free(void *cls)
{
	struct logconn *lc = cls;
	if (lc->ls && lc->src->ops->close_log)
		lc->src->ops->close_log(lc->ls);
	buf_free(&lc->out);
	free(lc);
}

static bool arg_true(struct MHD_Connection *c, const char *k)
{
	const char *v = apis_arg(c, k);
	return v && (strcmp(v, "true") == 0 || strcmp(v, "1") == 0);
}

enum MHD_Result apis_pod_log(struct apisrv *srv, struct MHD_Connection *c, const char *ns, const char *name)
{
	struct obj *pod = NULL;
	struct source *src = NULL;
	for (int s = 0; s < srv->nsrcs && pod == NULL; s++)
		if ((pod = store_find(srv->st, srv->srcs[s], OBJ_POD, ns, name)) != NULL)
			src = srv->srcs[s];
	if (pod == NULL)
		return apis_not_found(c, R_POD, name);
	if (src->ops->open_log == NULL)
		return apis_send_status(c, 405, "MethodNotAllowed", R_COUNT, NULL, "this host keeps no logs");
	struct log_req rq = { .ns = ns, .pod = name, .vm = obj_label(pod, "vm.kubevirt.io/name"),
			      .container = apis_arg(c, "container"), .follow = arg_true(c, "follow"),
			      .previous = arg_true(c, "previous"), .timestamps = arg_true(c, "timestamps"),
			      .tail_lines = -1 };
	const char *t = apis_arg(c, "tailLines"), *since = apis_arg(c, "sinceSeconds");
	char *end = NULL;
	if (t && ((rq.tail_lines = strtol(t, &end, 10)) < 0 || *end))
		return apis_send_status(c, 400, "BadRequest", R_COUNT, NULL, "tailLines: not a number of lines");
	if (since && ((rq.since_s = strtol(since, &end, 10)) < 1 || *end))
		return apis_send_status(c, 400, "BadRequest", R_COUNT, NULL, "sinceSeconds: not a number of seconds");
	struct logconn *lc = xcalloc(1, sizeof *lc);
	lc->c = c;
	lc->src = src;
	buf_init(&lc->out);
	char *err = NULL;
	lc->ls = src->ops->open_log(src, &rq, logconn_data, logconn_end, lc, &err);
	if (lc->ls == NULL) {
		free(lc);
		enum MHD_Result rc = apis_send_status(c, 400, "BadRequest", R_COUNT, NULL, "%s", err ? err : "no log");
		free(err);
		return rc;
	}
	struct MHD_Response *resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64 * 1024, logconn_read, lc,
								       logconn_free);
	MHD_add_response_header(resp, "Content-Type", "text/plain");
	enum MHD_Result rc = MHD_queue_response(c, 200, resp);
	MHD_destroy_response(resp);
	return rc;
}

/* ---- kvcon's own read-only subresources (not KubeVirt's: docs/ENGINE-SERVICE.md): what the engine keeps on
 * its host and KubeVirt's API has no field for, for kvcon's diagnose, bundle and VM view ---- */

/* GET the VMI's NAME/kvcon-domainxml: the libvirt domain XML kvcon defined for the current
 * execution (application/xml). */
enum MHD_Result apis_vmi_domainxml(struct apisrv *srv, struct MHD_Connection *c, const char *ns, const char *name)
{
	struct source *src = NULL;
	for (int s = 0; s < srv->nsrcs && src == NULL; s++)
		if (store_find(srv->st, srv->srcs[s], OBJ_VMI, ns, name))
			src = srv->srcs[s];
	if (src == NULL)
		return apis_not_found(c, R_VMI, name);
	const char *sl = engine_serial_log(src, ns, name);
	const char *slash = sl ? strrchr(sl, '/') : NULL;
	if (slash == NULL)
		return apis_send_status(c, 404, "NotFound", R_VMI, name, "the VMI %s/%s has no current execution", ns, name);
	char *xp = xasprintf("%.*s/domain.xml", (int)(slash - sl), sl), why[UTIL_WHY_LEN];
	size_t len = 0;
	/* the run directory is QEMU's account's: root's own file there, not a link or FIFO the account put in its
	 * place (it would serve any of the host's files) */
	const uid_t owners[] = { geteuid() };
	char *xml = util_read_file_checked(xp, owners, 1, DOMXML_READ_MAX, &len, why);
	if (xml == NULL && errno != ENOENT)
		log_warn("engine serve: %s: %s", xp, why);
	free(xp);
	if (xml == NULL)
		return apis_send_status(c, 404, "NotFound", R_VMI, name, "the domain XML of %s/%s's execution could not be read",
				   ns, name);
	if (strlen(xml) != len) { /* send_text sends a string */
		free(xml);
		return apis_send_status(c, 500, "InternalError", R_VMI, name, "the domain XML of %s/%s is not text", ns, name);
	}
	return apis_send_text(c, 200, xml, "application/xml");
}

/* GET virtualmachines/NAME/kvcon-storage: the VM's volumes and the files behind them on the engine's host (the
 * storage chain's JSON array, kube/storage.h's shape with the engine's file links). */
enum MHD_Result apis_vm_storage(struct apisrv *srv, struct MHD_Connection *c, const char *ns, const char *name)
{
	struct source *src = apis_source_of(srv, ns, name);
	if (src == NULL)
		return apis_not_found(c, R_VM, name);
	json_object *o = src->ops->storage_json ? src->ops->storage_json(src, ns, name) : NULL;
	if (o == NULL)
		return apis_send_status(c, 404, "NotFound", R_VM, name, "no storage record for %s/%s", ns, name);
	return apis_send_json(c, 200, o);
}

/* ---- the guest agent's subresources (guestosinfo, userlist, filesystemlist): virt-api's GETs, answered from
 * qemu-guest-agent through the engine (engine_agent_query). The connection waits suspended for the answer, which
 * comes back within the agent's bounded time (engine/gagent.h); one that ends first leaves the answer to be
 * dropped. ---- */

struct agentq {
	struct MHD_Connection *c; /* NULL once the request ended before the answer */
	json_object *answer;
	char *err;
	bool done;
};

static void agentq_free(struct agentq *q)
{
	json_object_put(q->answer);
	free(q->err);
	free(q);
}

static void agentq_done(void *arg, json_object *answer, const char *err)
{
	struct agentq *q = arg;
	q->done = true;
	q->answer = answer ? json_object_get(answer) : NULL;
	q->err = answer ? NULL : xstrdup(err ? err : "the guest agent gave no answer");
	if (q->c == NULL)
		agentq_free(q);
	else
		MHD_resume_connection(q->c);
}

void apis_agentq_ended(struct reqctx *rq)
{
	struct agentq *q = rq->aq;
	rq->aq = NULL;
	if (q && q->done)
		agentq_free(q);
	else if (q)
		q->c = NULL;
}

enum MHD_Result apis_vmi_agent(struct apisrv *srv, struct MHD_Connection *c, struct reqctx *rq, const char *ns,
			       const char *name, int what)
{
	struct agentq *q = rq->aq;
	if (q) {
		if (!q->done) /* woken before its time: wait on */
			return MHD_YES;
		rq->aq = NULL;
		enum MHD_Result rc = q->answer ? apis_send_json(c, 200, json_object_get(q->answer))
					       : apis_send_status(c, 500, "InternalError", R_VMI, name, "%s", q->err);
		agentq_free(q);
		return rc;
	}
	struct source *src = NULL;
	for (int s = 0; s < srv->nsrcs && src == NULL; s++)
		if (store_find(srv->st, srv->srcs[s], OBJ_VMI, ns, name))
			src = srv->srcs[s];
	if (src == NULL)
		return apis_not_found(c, R_VMI, name);
	q = xcalloc(1, sizeof *q);
	q->c = c;
	int code = 500;
	char *err = NULL;
	if (engine_agent_query(src, ns, name, what, agentq_done, q, &code, &err) < 0) {
		free(q);
		enum MHD_Result rc = apis_send_status(c, (unsigned)code, code == 404 ? "NotFound" : code == 409 ? "Conflict" : "InternalError",
						  R_VMI, name, "%s", err ? err : "the guest agent cannot be asked");
		free(err);
		return rc;
	}
	rq->aq = q;
	MHD_suspend_connection(c);
	return MHD_YES;
}
