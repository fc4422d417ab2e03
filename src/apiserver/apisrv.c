/* The engine service: the Kubernetes API over the engine's store (see apisrv.h and docs/ENGINE-SERVICE.md); this
 * file is its daemon and HTTP glue: the listeners (unix socket, HTTPS), libmicrohttpd in the loop, authentication
 * and body limits, routing a request to its handler, the once-a-second tick and the idle exit.
 *
 * Everything runs on the loop thread: libmicrohttpd in external-epoll mode (its epoll fd is one of the loop's fds,
 * MHD_run is called when it is readable and at the end of every loop pass), the engine's reconciler and the store
 * listener that turns store changes into resource versions and watch events (watch.c). internal.h lists the
 * other files. */
#include "apiserver/apisrv.h"
#include "apiserver/apipf.h"

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

#include "apiserver/apigate.h"
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
#include "service/service.h"
#include "core/ydoc.h"
#include "engine/apisel.h"
#include "engine/apitls.h"
#include "engine/engine.h"
#include "engine/gagent.h"
#include "engine/evm.h"
#include "engine/manifest.h"
#include "engine/migrate.h"
#include "kube/wsframe.h"
#include "model/columns.h"
#include "model/objjson.h"
#include "model/registry.h"
#include "model/source.h"
#include "model/store.h"

static void idle_check(struct apisrv *srv, uint64_t now);

static void on_tick(void *arg)
{
	struct apisrv *srv = arg;
	srv->tick = loop_timer_add(1000, on_tick, srv);
	apis_kv_refresh(srv); /* hosts come and go, records turn unreadable: the KubeVirt CR's status follows within 1 s */
	apis_vmims_settle_loaded(srv);
	apis_vmirs_sync(srv);
	apis_storage_tick(srv);
	apis_secrets_tick(srv);
	apis_nsx_tick(srv);
	uint64_t now = util_now_ms();
	for (struct watcher *w = srv->watchers; w; w = w->next)
		if ((w->bookmarks && now >= w->next_bookmark_ms) || (w->deadline_ms && now >= w->deadline_ms))
			apis_wake(w);
	apigate_expire(now);
	idle_check(srv, now);
}

#define RING_DEFAULT 4096

/* ---- routing ---- */

bool apis_valid_name(const char *s)
{
	return s && *s && strlen(s) <= 253 && manifest_dns_subdomain(s);
}

static enum MHD_Result route(struct apisrv *srv, struct MHD_Connection *c, struct reqctx *rq, const char *url, const char *method)
{
	char path[1024];
	size_t ul = strlen(url);
	if (ul >= sizeof path)
		return apis_send_status(c, 404, "NotFound", R_COUNT, NULL, "the server could not find the requested resource");
	memcpy(path, url, ul + 1);
	while (ul > 1 && path[ul - 1] == '/')
		path[--ul] = 0;
	bool handled;
	if (strcmp(method, "GET") == 0) {
		enum MHD_Result rc = apis_discovery(srv, c, path, &handled);
		if (handled)
			return rc;
	}
	/* /api/v1/... or /apis/{kubevirt.io,subresources.kubevirt.io}/v1/... */
	char *seg[12];
	int n = 0;
	for (char *s, *p = strtok_r(path, "/", &s); p && n < 12; p = strtok_r(NULL, "/", &s))
		seg[n++] = p;
	int i;
	bool sub_group = false;
	const char *group = NULL, *version = "v1";
	if (n >= 3 && strcmp(seg[0], "api") == 0 && strcmp(seg[1], "v1") == 0)
		i = 2;
	else if (n >= 4 && strcmp(seg[0], "apis") == 0)
		i = 3, group = seg[1], version = seg[2], sub_group = strcmp(group, "subresources.kubevirt.io") == 0;
	else
		return apis_send_status(c, 404, "NotFound", R_COUNT, NULL, "the server could not find the requested resource");
	const char *ns = NULL, *plural, *name = NULL, *sub = NULL;
	if (n - i >= 2 && strcmp(seg[i], "namespaces") == 0 && n - i != 2) {
		ns = seg[i + 1];
		i += 2;
	}
	plural = seg[i++];
	if (i < n)
		name = seg[i++];
	if (i < n)
		sub = seg[i++];
	int pf_at = sub_group && sub && strcmp(sub, "portforward") == 0 ? i : -1; /* PORT[/PROTOCOL] follow */
	if (i < n && pf_at < 0)
		return apis_send_status(c, 404, "NotFound", R_COUNT, NULL, "the server could not find the requested resource");
	enum res r = apis_res_find(sub_group ? "kubevirt.io" : group, version, plural);
	if (r == R_COUNT)
		return apis_send_status(c, 404, "NotFound", R_COUNT, NULL, "the server could not find the requested resource");
	bool host_name = false; /* an engine host's name as its Node's, whatever its case (a machine's hostname) */
	for (int k = 0; r == R_NODE && name && k < srv->nsrcs && !host_name; k++)
		host_name = util_str_eq(srv->srcs[k]->name, name);
	if ((ns && !manifest_dns_label(ns)) || (name && !apis_valid_name(name) && !host_name))
		return apis_send_status(c, 400, "BadRequest", R_COUNT, NULL, "invalid namespace or name in the path");
	if (ns && !RES[r].namespaced && !(r == R_NS && name == NULL))
		return apis_send_status(c, 404, "NotFound", R_COUNT, NULL, "the server could not find the requested resource");
	if (r == R_NS && ns && name == NULL) /* /api/v1/namespaces/NAME */
		name = ns, ns = NULL;
	if (strcmp(method, "POST") == 0 && ns && name == NULL && sub == NULL && apis_ns_terminating(srv, ns))
		return apis_ns_refuse_create(c, rq, r, ns); /* the API server's NamespaceLifecycle admission */
	if (r == R_VMIRS && !sub_group && (strcmp(method, "GET") != 0 || (sub && strcmp(sub, "status") != 0)))
		return apis_vmirs_request(srv, c, rq, method, ns, name, sub); /* writes, the scale subresource */
	if (sub_group) {
		if (pf_at >= 0 && (r == R_VMI || r == R_VM) && ns && name && strcmp(method, "GET") == 0) {
			enum MHD_Result mrc = MHD_NO;
			char *perr = NULL;
			int code = apipf_serve(c, apis_source_of(srv, ns, name), ns, name, (const char *const *)seg + pf_at, n - pf_at,
					       &mrc, &perr);
			if (code)
				mrc = apis_send_status(c, (unsigned)code, code == 404 ? "NotFound" : "BadRequest", R_VMI, name,
						  "%s", perr);
			free(perr);
			return mrc;
		}
		int what = r == R_VMI && ns && name && strcmp(method, "GET") == 0 ? gagent_what_of(sub) : -1;
		if (what >= 0)
			return apis_vmi_agent(srv, c, rq, ns, name, what);
		if (r == R_VMI && ns && name && sub && (strcmp(sub, "console") == 0 || strcmp(sub, "vnc") == 0) &&
		    strcmp(method, "GET") == 0)
			return apis_console_ws(srv, c, ns, name, sub[0] == 'v');
		if (ns == NULL || name == NULL || sub == NULL || strcmp(method, "PUT") != 0)
			return apis_send_status(c, 405, "MethodNotAllowed", R_COUNT, NULL,
					   "the server does not allow this method on the requested resource");
		return apis_subresource(srv, c, rq, r, ns, name, sub);
	}
	if (r == R_POD && ns && name && sub && strcmp(sub, "log") == 0 && strcmp(method, "GET") == 0)
		return apis_pod_log(srv, c, ns, name);
	if (r == R_POD && ns && name && sub && strcmp(sub, "eviction") == 0 && strcmp(method, "POST") == 0)
		return apis_evict_pod(srv, c, rq, ns, name);
	bool domxml = r == R_VMI && sub && strcmp(sub, "kvcon-domainxml") == 0;
	if ((domxml || (r == R_VM && sub && strcmp(sub, "kvcon-storage") == 0)) && ns && name) {
		if (strcmp(method, "GET") != 0) /* kvcon's own read-only subresources */
			return apis_send_status(c, 405, "MethodNotAllowed", R_COUNT, NULL, "%s is read-only", sub);
		return domxml ? apis_vmi_domainxml(srv, c, ns, name) : apis_vm_storage(srv, c, ns, name);
	}
	if (sub && strcmp(sub, "status") != 0)
		return apis_send_status(c, 404, "NotFound", R_COUNT, NULL, "the server could not find the requested resource");
	if (strcmp(method, "GET") == 0) {
		const char *w = apis_arg(c, "watch");
		if (w && (strcmp(w, "true") == 0 || strcmp(w, "1") == 0))
			return apis_watch(srv, c, r, ns, name);
		if (name)
			return apis_get_one(srv, c, r, ns, name);
		return apis_list(srv, c, r, ns);
	}
	if (sub)
		return apis_send_status(c, 405, "MethodNotAllowed", R_COUNT, NULL, "status is written by the engine only");
	if (r == R_KV)
		return apis_send_status(c, 405, "MethodNotAllowed", R_KV, name,
				   "the KubeVirt object %s/%s is the engine service's own (kvcon engine serve): it cannot "
				   "be created, changed or deleted through the API", KV_NS, KV_NAME);
	if (r == R_PVC || r == R_PV || r == R_SC || r == R_DV) /* storage.c */
		return apis_storage_write(srv, c, rq, r, method, ns, name);
	if (r == R_SECRET || r == R_CM) /* secrets.c */
		return apis_secrets_write(srv, c, rq, r, method, ns, name);
	if (strcmp(method, "POST") == 0 && r == R_VM && ns && name == NULL)
		return apis_create_vm(srv, c, rq, ns);
	if (strcmp(method, "POST") == 0 && r == R_NS && name == NULL)
		return apis_create_ns(srv, c, rq);
	if (strcmp(method, "POST") == 0 && r == R_VMIM && ns && name == NULL)
		return apis_create_vmim(srv, c, rq, ns);
	if (strcmp(method, "DELETE") == 0 && r == R_VMIM && ns && name)
		return apis_delete_vmim(srv, c, rq, ns, name);
	if (strcmp(method, "DELETE") == 0 && r == R_NS && name)
		return apis_delete_ns(srv, c, rq, name);
	if (strcmp(method, "PATCH") == 0 && r == R_NS && name)
		return apis_patch_ns(srv, c, rq, name);
	if (strcmp(method, "PATCH") == 0 && r == R_NODE && name)
		return apis_patch_node(srv, c, rq, name);
	if ((strcmp(method, "PATCH") == 0 || strcmp(method, "PUT") == 0) && r == R_VM && ns && name)
		return apis_patch_vm(srv, c, rq, ns, name, method[1] == 'U');
	if (strcmp(method, "DELETE") == 0 && ns && name) {
		int grace = apis_grace_of(c, rq, "gracePeriodSeconds");
		if (r == R_VM)
			return apis_act(srv, c, rq, r, ACT_DELETE, ns, name, grace, NULL, 200, true);
		struct vmirs *rs = r == R_VMI ? apis_vmirs_owner(srv, ns, name) : NULL;
		if (rs)
			return apis_vmirs_delete_member(srv, c, rq, rs, ns, name);
		if (r == R_VMI) {
			/* the execution ends; the VM's run strategy decides what follows (Always: a new one) */
			const struct vm *vm = NULL;
			struct source *src = apis_source_of(srv, ns, name);
			if (src)
				vm = (const struct vm *)store_find(srv->st, src, OBJ_VM, ns, name);
			bool always = vm && util_str_eq(vm->run_strategy, "Always");
			return apis_act(srv, c, rq, r, always ? ACT_RESTART : ACT_STOP, ns, name, grace, NULL, 200, true);
		}
	}
	return apis_send_status(c, 405, "MethodNotAllowed", R_COUNT, NULL,
			   "the server does not allow this method on the requested resource");
}

/* ---- libmicrohttpd ---- */

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
				  const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
	(void)version;
	const struct apisrv_daemon *dc = cls;
	struct apisrv *srv = dc->srv;
	bool tls = dc->tls;
	struct reqctx *rq = *con_cls;
	if (rq == NULL) {
		rq = xcalloc(1, sizeof *rq);
		buf_init(&rq->body);
		*con_cls = rq;
		/* before any body is read: no token, nothing buffered (MHD drops the rest and closes) */
		if (tls && !apitls_auth_ok(&srv->tls, MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization")))
			return apis_send_status(c, 401, "Unauthorized", R_COUNT, NULL, "Unauthorized");
		if (tls)
			apigate_authed(c);
		const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
		if (cl && strtoull(cl, NULL, 10) > MAX_BODY)
			return apis_send_status(c, 413, NULL, R_COUNT, NULL, "the request body is larger than %u bytes", MAX_BODY);
		return MHD_YES;
	}
	if (*upload_size) {
		if (rq->body.len + *upload_size > MAX_BODY)
			rq->too_big = true;
		else
			buf_add(&rq->body, upload, *upload_size);
		*upload_size = 0;
		return MHD_YES;
	}
	if (tls && !apitls_auth_ok(&srv->tls, MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization")))
		return apis_send_status(c, 401, "Unauthorized", R_COUNT, NULL, "Unauthorized");
	log_debug("engine serve: %s %s", method, url);
	if (strncmp(url, ENGINE_SERVICE_HOST_PREFIX, strlen(ENGINE_SERVICE_HOST_PREFIX)) != 0)
		return route(srv, c, rq, url, method);
	/* /kvcon-host/NAME/...: kvcon -c HOST beside this set's service, limited to that host (its objects, its
	 * applies: srcs is that host alone while the request is routed) */
	const char *nm = url + strlen(ENGINE_SERVICE_HOST_PREFIX), *sl = strchr(nm, '/');
	size_t nl = sl ? (size_t)(sl - nm) : strlen(nm);
	struct source *only = NULL;
	for (int k = 0; k < srv->nsrcs && only == NULL; k++)
		if (strlen(srv->srcs[k]->name) == nl && strncasecmp(srv->srcs[k]->name, nm, nl) == 0)
			only = srv->srcs[k];
	if (only == NULL) {
		char e[1100];
		util_escape_display_n(nm, nl < 253 ? nl : 253, e, sizeof e);
		return apis_send_status(c, 404, "NotFound", R_NODE, NULL, "no engine host %s in this engine service",
					e);
	}
	srv->all_srcs = srv->srcs;
	srv->all_n = srv->nsrcs;
	srv->only = only;
	srv->srcs = &only;
	srv->nsrcs = 1;
	enum MHD_Result rc = route(srv, c, rq, sl ? sl : "/", method);
	srv->srcs = srv->all_srcs;
	srv->nsrcs = srv->all_n;
	srv->only = NULL;
	return rc;
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode t)
{
	(void)cls;
	(void)c;
	(void)t;
	struct reqctx *rq = *con_cls;
	if (rq) {
		apis_agentq_ended(rq);
		buf_free(&rq->body);
		free(rq);
		*con_cls = NULL;
	}
}

static void mhd_run_all(struct apisrv *srv);

static void on_mhd_timer(void *arg)
{
	struct apisrv *srv = arg;
	srv->timer = NULL;
	mhd_run_all(srv);
}

static void mhd_run_all(struct apisrv *srv)
{
	MHD_UNSIGNED_LONG_LONG t, best = (MHD_UNSIGNED_LONG_LONG)-1;
	for (int i = 0; i < srv->nd; i++) {
		MHD_run(srv->d[i]);
		if (MHD_get_timeout(srv->d[i], &t) == MHD_YES && t < best)
			best = t;
	}
	loop_timer_cancel(srv->timer);
	srv->timer = NULL;
	if (best != (MHD_UNSIGNED_LONG_LONG)-1)
		srv->timer = loop_timer_add(best, on_mhd_timer, srv);
}

static void on_epoll(int fd, short revents, void *arg)
{
	(void)fd;
	(void)revents;
	mhd_run_all(arg);
}

static void on_pass(void *arg)
{
	mhd_run_all(arg);
}

static unsigned mhd_connections(struct apisrv *srv)
{
	unsigned n = 0;
	for (int i = 0; i < srv->nd; i++) {
		const union MHD_DaemonInfo *info = MHD_get_daemon_info(srv->d[i], MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
		n += info ? info->num_connections : 1;
	}
	return n;
}

/* The idle exit (docs/ENGINE-SERVICE.md, "Started on demand, gone when idle"): the service leaves once it has
 * had no client (connection, watch, console or VNC) for srv->idle_exit seconds while nothing needed reconciling:
 * no running execution to reap, no VM to (re)start, no namespace terminating, no request under way. Every tick
 * that finds one of them starts the period again. */
static void idle_check(struct apisrv *srv, uint64_t now)
{
	struct stat sb;
	if (srv->sock_path && (srv->nd == 1 || srv->https_sticky) &&
	    (lstat(srv->sock_path, &sb) < 0 || sb.st_dev != srv->sock_dev || sb.st_ino != srv->sock_ino)) {
		log_info("engine serve: %s was removed or replaced: nobody can reach this service: exiting", srv->sock_path);
		printf("engine service: %s was removed or replaced: exiting\n", srv->sock_path);
		fflush(stdout);
		srv->sock_path = NULL;
		loop_quit(0);
		return;
	}
	if (srv->idle_exit <= 0)
		return;
	unsigned nc = mhd_connections(srv), waiting = apigate_unauthed(); /* a connection without the token is no client */
	nc = nc > waiting ? nc - waiting : 0;
	char *why = srv->watchers || srv->wsconns || apipf_active() || nc ? xasprintf("%u client connection(s)", nc)
								    : apis_storage_busy(srv);
	if (why == NULL)
		why = apis_nsx_busy(srv);
	if (why == NULL)
		why = engine_needs_reconciler();
	if (why) {
		if (srv->busy_why == NULL || strcmp(why, srv->busy_why) != 0)
			log_info("engine serve: staying: %s", why);
		free(srv->busy_why);
		srv->busy_why = why;
		srv->busy_ms = now;
		return;
	}
	free(srv->busy_why);
	srv->busy_why = NULL;
	if (now - srv->busy_ms >= (uint64_t)srv->idle_exit * 1000) {
		log_info("engine serve: no client for %ld s and nothing to reconcile: exiting", srv->idle_exit);
		printf("engine service idle for %ld s with nothing to reconcile: exiting\n", srv->idle_exit);
		fflush(stdout);
		srv->idle_exit = 0;
		loop_quit(0);
	}
}

__attribute__((format(printf, 2, 0))) static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	(void)cls;
	char msg[512];
	vsnprintf(msg, sizeof msg, fmt, ap);
	msg[strcspn(msg, "\n")] = 0;
	log_info("engine serve: libmicrohttpd: %s", msg);
}

static int start_daemon(struct apisrv *srv, int lfd, bool tls, char **err)
{
	srv->dcls[srv->nd] = (struct apisrv_daemon){ srv, tls };
	unsigned flags = MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_ALLOW_UPGRADE | MHD_USE_ERROR_LOG |
			 (tls ? MHD_USE_TLS : 0);
	struct MHD_OptionItem opts[] = {
		{ MHD_OPTION_LISTEN_SOCKET, lfd, NULL },
		{ MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)on_completed, NULL },
		{ MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)mhd_log, NULL },
		/* idle connections; a waiting watch is suspended, not idle. HTTPS: anyone local can connect, so the gate
		 * (apigate.h) holds a connection to a short deadline until its request head carries the token. */
		{ MHD_OPTION_CONNECTION_LIMIT, tls ? apigate_connection_limit() : 512, NULL },
		{ MHD_OPTION_CONNECTION_TIMEOUT, tls ? APIGATE_DEADLINE_S : APIGATE_IDLE_TIMEOUT_S, NULL },
		{ tls ? MHD_OPTION_NOTIFY_CONNECTION : MHD_OPTION_END, (intptr_t)apigate_notify, NULL },
		{ MHD_OPTION_HTTPS_MEM_KEY, 0, srv->tls.key_pem },
		{ MHD_OPTION_HTTPS_MEM_CERT, 0, srv->tls.cert_pem },
		{ MHD_OPTION_END, 0, NULL },
	};
	struct MHD_Daemon *d = MHD_start_daemon(flags, 0, NULL, NULL, on_request, &srv->dcls[srv->nd],
						MHD_OPTION_ARRAY, opts, MHD_OPTION_END);
	if (d == NULL) {
		*err = xstrdup(tls ? "libmicrohttpd refused the HTTPS listener" : "libmicrohttpd refused the socket");
		return -1;
	}
	const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_EPOLL_FD);
	srv->d[srv->nd] = d;
	srv->lfd[srv->nd] = loop_fd_add(info->epoll_fd, POLLIN, on_epoll, srv);
	srv->nd++;
	return 0;
}

static int listen_unix(const char *path, char **err)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof a.sun_path) {
		*err = xasprintf("%s: the socket path is too long", path);
		return -1;
	}
	strcpy(a.sun_path, path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		*err = xasprintf("socket: %s", strerror(errno));
		return -1;
	}
	/* a service that answers keeps its socket: a second one on the same root is refused, not swapped in */
	int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (probe >= 0 && connect(probe, (struct sockaddr *)&a, sizeof a) == 0) {
		close(probe);
		close(fd);
		*err = xasprintf("%s: another engine service answers there", path);
		return -1;
	}
	if (probe >= 0)
		close(probe);
	unlink(path);
	mode_t old = umask(077);
	int rc = bind(fd, (struct sockaddr *)&a, sizeof a);
	umask(old);
	if (rc < 0 || chmod(path, 0600) < 0 || listen(fd, 64) < 0) {
		*err = xasprintf("%s: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

static int listen_tcp(int *port, char **err)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	int one = 1;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)*port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	if (fd < 0) {
		*err = xasprintf("socket: %s", strerror(errno));
		return -1;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	socklen_t al = sizeof a;
	/* a deep accept queue: a burst of connections (the gate closes those without the token) leaves room */
	if (bind(fd, (struct sockaddr *)&a, sizeof a) < 0 || listen(fd, SOMAXCONN) < 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &al) < 0) {
		*err = xasprintf("127.0.0.1:%d: %s", *port, strerror(errno));
		close(fd);
		return -1;
	}
	*port = ntohs(a.sin_port);
	return fd;
}

static void on_stop_signal(int sig, void *arg)
{
	(void)sig;
	(void)arg;
	loop_quit(0);
}

static void state_free(struct apisrv *srv)
{
	srv->warm.done = true; /* a slice still posted does nothing */
	for (size_t i = 0; i < srv->count; i++) {
		struct wev *w = &srv->ring[(srv->head + i) % srv->ring_size];
		obj_free(w->o);
		free(w->text);
	}
	free(srv->ring);
	srv->ring = NULL;
	for (size_t i = 0; i < srv->nnsx; i++) {
		free(srv->nsx[i]);
		free(srv->nsxmeta[i]);
	}
	free(srv->nsx);
	free(srv->nsxmeta);
	srv->nsx = NULL;
	srv->nsxmeta = NULL;
	srv->nnsx = 0;
	srv->count = 0;
	apis_vmirs_free_all(srv);
	while (srv->vmims) {
		struct vmim *m = srv->vmims;
		srv->vmims = m->next;
		apis_vmim_free(m);
	}
	apis_storage_free(srv);
	apis_secrets_free(srv);
	apis_cache_free(srv);
	apis_order_free(srv);
	free(srv->kv.body);
	free(srv->kv.text);
	memset(&srv->kv, 0, sizeof srv->kv);
}

/* SOCKET.pid: this process's pid beside its socket (how scripts and tests find a service started on demand) */
static void write_pid(struct apisrv *srv, const char *sock)
{
	srv->pid_path = xasprintf("%s.pid", sock);
	char text[32], why[UTIL_WHY_LEN];
	int n = snprintf(text, sizeof text, "%ld\n", (long)getpid());
	if (util_write_file_why(srv->pid_path, text, (size_t)n, 0600, why) < 0)
		log_info("engine serve: %s: %s", srv->pid_path, why);
}

static void remove_pid(struct apisrv *srv)
{
	if (srv->pid_path == NULL)
		return;
	char *t = util_read_file(srv->pid_path, NULL);
	if (t && atol(t) == (long)getpid())
		unlink(srv->pid_path);
	free(t);
	free(srv->pid_path);
	srv->pid_path = NULL;
}

/* HTTPS on 127.0.0.1:port (0: any free one; recorded: the port recorded for this socket, tried first and replaced
 * when another program took it), its credentials and kubeconfig (*kpath); prints `https:` and `kubeconfig:`. 0, or
 * -1 with *err. */
static int serve_https(struct apisrv *srv, const char *state, const char *spath, const char *kubeconfig, int port,
		       int recorded, char **kpath, char **err)
{
	if (apitls_load(state, &srv->tls, err) < 0)
		return -1;
	int tfd = listen_tcp(&port, err);
	if (tfd < 0 && srv->https_sticky && recorded > 0) { /* another program took it meanwhile: a new one, recorded */
		log_info("engine serve: the recorded HTTPS port: %s: choosing another", *err);
		free(*err);
		*err = NULL;
		port = 0;
		tfd = listen_tcp(&port, err);
	}
	if (tfd < 0 || start_daemon(srv, tfd, true, err) < 0)
		return -1;
	char *perr = NULL;
	if (port != recorded && apitls_port_write(state, spath, port, &perr) < 0) {
		log_error("engine serve: cannot record the HTTPS port: %s", perr);
		free(perr);
	}
	*kpath = kubeconfig ? xstrdup(kubeconfig) : util_path_join(state, "engine-kubeconfig");
	if (apitls_kubeconfig(*kpath, &srv->tls, port, err) < 0)
		return -1;
	/* this root's own copy, which `kvcon engine kubeconfig` prints (kvcon links no TLS code of the engine) */
	char *own = engine_service_file(state, spath, "engine-kubeconfig");
	int rc = apitls_kubeconfig(own, &srv->tls, port, err);
	free(own);
	if (rc < 0)
		return -1;
	printf("https: https://127.0.0.1:%d\nkubeconfig: %s\n", port, *kpath);
	return 0;
}

int apisrv_serve(const struct apisrv_config *c, char **errp)
{
	/* the one server of this process: the loop's and libmicrohttpd's callbacks reach it through their arguments */
	static struct apisrv server;
	struct apisrv *srv = &server;
	memset(srv, 0, sizeof *srv);
	const char *kubeconfig = c->kubeconfig;
	int port = c->https_port, rc;
	loop_signal(SIGTERM, on_stop_signal, NULL);
	srv->idle_exit = c->idle_exit;
	srv->busy_ms = util_now_ms();
	srv->st = c->st;
	srv->srcs = c->srcs;
	srv->nsrcs = c->nsrcs;
	srv->started = util_wall_s();
	util_uuid_v4(srv->node_uid);
	hmap_init(&srv->cache);
	/* the watch history: $KVCON_ENGINE_WATCH_HISTORY events (tests make it small to reach 410 quickly) */
	const char *h = getenv("KVCON_ENGINE_WATCH_HISTORY");
	srv->ring_size = h && atol(h) >= 4 && atol(h) <= 1000000 ? (size_t)atol(h) : RING_DEFAULT;
	srv->ring = xcalloc(srv->ring_size, sizeof *srv->ring);
	apis_nsx_load(srv);
	apis_vmims_load(srv);
	apis_vmims_update(srv);
	apis_vmirs_load(srv);
	apis_storage_load(srv);
	apis_secrets_load(srv);
	int lid = store_listen(srv->st, apis_on_store, srv);
	apis_warm_start(srv);
	apis_kv_refresh(srv);
	/* HTTPS: --https PORT, else engine.api-port in the config file or $KVCON_ENGINE_API_PORT ("off": none), else
	 * the port this root's service chose once and recorded (kept across restarts: the kubeconfig stays valid) */
	bool sticky = false;
	char *err = NULL, *spath = xstrdup(c->socket), *kpath = NULL;
	char *state = util_state_dir();
	int recorded = apitls_port_read(state, spath); /* `kvcon engine kubeconfig` reads it */
	if (port < 0) {
		char *ps = engine_setting("KVCON_ENGINE_API_PORT", "engine.api-port");
		if (ps && *ps && strcmp(ps, "off") != 0)
			port = atoi(ps);
		else if (ps == NULL || *ps == 0) {
			sticky = true;
			port = recorded > 0 ? recorded : 0;
		}
		free(ps);
	}
	srv->https_sticky = sticky;
	if (port > 65535) {
		err = xasprintf("%d: not a port", port);
		goto fail;
	}
	int fd = listen_unix(spath, &err);
	if (fd < 0 || start_daemon(srv, fd, false, &err) < 0)
		goto fail;
	write_pid(srv, spath);
	struct stat sb;
	if (lstat(spath, &sb) == 0) {
		srv->sock_path = spath;
		srv->sock_dev = sb.st_dev;
		srv->sock_ino = sb.st_ino;
	}
	printf("socket: %s\n", spath);
	if (port < 0) { /* engine.api-port = off: no kubeconfig of this root's (an earlier service's) stays */
		char *own = engine_service_file(state, spath, "engine-kubeconfig");
		unlink(own);
		free(own);
	}
	if (port >= 0 && serve_https(srv, state, spath, kubeconfig, port, recorded, &kpath, &err) < 0) {
		if (!sticky)
			goto fail;
		/* the default HTTPS is a convenience: without it (no loopback in a sandbox) the socket still serves */
		log_warn("engine serve: no HTTPS: %s", err);
		printf("https: none (%s)\n", err);
		char *own = engine_service_file(state, spath, "engine-kubeconfig");
		unlink(own); /* no kubeconfig for a port this service does not serve */
		free(own);
		free(err);
		err = NULL;
	}
	printf("engine serving\n");
	fflush(stdout);
	engine_service_notify_ready(); /* the kvcon that started this service on demand goes on at once */
	int hook = loop_hook_add(on_pass, srv);
	srv->tick = loop_timer_add(1000, on_tick, srv);
	rc = loop_run();
	loop_hook_remove(hook);
	loop_timer_cancel(srv->tick);
	loop_timer_cancel(srv->timer);
	for (struct watcher *w = srv->watchers; w; w = w->next) {
		w->ended = true;
		apis_wake(w);
	}
	while (srv->wsconns)
		apis_ws_close(srv, srv->wsconns);
	apipf_close_all();
	for (int i = 0; i < srv->nd; i++) {
		loop_fd_remove(srv->lfd[i]);
		MHD_stop_daemon(srv->d[i]);
	}
	struct stat now_sb; /* the socket, unless it is another's now */
	if (lstat(spath, &now_sb) == 0 && now_sb.st_dev == srv->sock_dev && now_sb.st_ino == srv->sock_ino)
		unlink(spath);
	srv->sock_path = NULL;
	remove_pid(srv);
	free(srv->busy_why);
	srv->busy_why = NULL;
	store_unlisten(srv->st, lid);
	state_free(srv);
	free(spath);
	free(kpath);
	free(state);
	apitls_free(&srv->tls);
	return rc;
fail:
	if (srv->pid_path) { /* listening already (the HTTPS side failed) */
		unlink(spath);
		remove_pid(srv);
	}
	*errp = err ? err : xstrdup("cannot listen");
	free(spath);
	free(kpath);
	free(state);
	store_unlisten(srv->st, lid);
	state_free(srv);
	return -1;
}
