/* The engine on the loop thread: opening and closing hosts, the provider (fetch, destroy, storage), consoles,
 * VNC and port forwards, the small helpers the pieces share and the services for migrate.c. The pieces:
 * engine_int.h. libvirt itself runs in host.c. */
#include "engine/engine.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/buf.h"
#include "core/intern.h"
#include "core/log.h"
#include "core/loop.h"
#include "core/opts.h"
#include "core/util.h"
#include "core/xmalloc.h"
#include "engine/elog.h"
#include "engine/embed.h"
#include "engine/engine_int.h"
#include "engine/estream.h"
#include "engine/gagent.h"
#include "engine/hostenv.h"
#include "engine/hostfwd.h"
#include "engine/imgcache.h"
#include "engine/migrate.h"
#include "engine/record.h"

struct engine_g engine_g;

char *evm_dom_name(const struct evm *v)
{
	return xasprintf("%s_%s", v->m->ns, v->m->name);
}


/* ---- small helpers ---- */

bool exec_active(const struct exec *x)
{
	return x && (x->phase == intern("Pending") || x->phase == intern("Scheduled") || x->phase == intern("Running"));
}

bool evm_strategy_is(const struct evm *v, const char *s)
{
	return strcmp(v->run_strategy, s) == 0;
}

void exec_set_phase(struct exec *x, const char *phase)
{
	const char *p = intern(phase);
	if (x->phase == p && x->nphases)
		return;
	x->phase = p;
	if (x->nphases == EVM_MAX_PHASES) {
		memmove(x->phases, x->phases + 1, sizeof x->phases[0] * (EVM_MAX_PHASES - 1));
		x->nphases--;
	}
	x->phases[x->nphases].phase = p;
	x->phases[x->nphases++].at = util_wall_s();
}

struct preq *ehost_track(struct ehost *eh, int id, enum preq_kind kind, struct evm *v)
{
	if (id == 0)
		return NULL; /* the host is closed: nothing will answer (pulls track negative ids) */
	struct preq *p = xcalloc(1, sizeof *p);
	p->id = id;
	p->kind = kind;
	p->v = v;
	p->next = eh->reqs;
	eh->reqs = p;
	if (v)
		v->inflight++;
	return p;
}

int evm_send(struct evm *v, enum host_req_type type, enum preq_kind kind)
{
	char *dn = evm_dom_name(v);
	int id = host_simple(v->eh->h, type, dn);
	free(dn);
	ehost_track(v->eh, id, kind, v);
	return id;
}

int64_t engine_wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}



struct evm *ehost_find_dom(struct ehost *eh, const char *dom)
{
	const char *key;
	void *val;
	for (size_t it = 0; hmap_next(&eh->vms, &it, &key, &val);) {
		struct evm *v = val;
		char *dn = evm_dom_name(v);
		bool eq = strcmp(dn, dom) == 0;
		free(dn);
		if (eq)
			return v;
	}
	return NULL;
}

struct ehost *ehost_of_source(const struct source *src)
{
	return src && src->type == SOURCE_ENGINE ? src->priv : NULL;
}

struct evm *evm_find(struct source *src, const char *ns, const char *name)
{
	struct ehost *eh = ehost_of_source(src);
	if (eh == NULL)
		return NULL;
	char *key = xasprintf("%s/%s", ns && *ns ? ns : "default", name);
	struct evm *v = hmap_get(&eh->vms, key);
	free(key);
	return v;
}


void ehost_set_health(struct ehost *eh, enum watch_state st, const char *msg)
{
	for (int k = 0; k < OBJ_KIND_COUNT; k++)
		source_set_health(eh->src, (enum obj_kind)k, st, msg);
}

static char *owner_label, *owner_socket;

void engine_set_owner(const char *label, const char *socket)
{
	free(owner_label);
	free(owner_socket);
	owner_label = label ? xstrdup(label) : NULL;
	owner_socket = socket ? xstrdup(socket) : NULL;
}

/* Takes the host's service.lock (an flock held for the process's life, released by the kernel when it dies)
 * and writes who holds it: NULL, or why not (caller frees): another engine process holds the host. */
char *ehost_own(struct ehost *eh, const char *dd, const char *hk)
{
	if (eh->owner_fd >= 0)
		return NULL;
	char *dir = xasprintf("%s/hosts/%s", dd, hk), *path = xasprintf("%s/service.lock", dir);
	util_mkdir_p(dir, 0700);
	char *why = NULL;
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0) {
		why = xasprintf("%s: %s", path, strerror(errno));
	} else if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		char held[512] = "";
		ssize_t n = pread(fd, held, sizeof held - 1, 0);
		held[n > 0 ? n : 0] = '\0';
		held[strcspn(held, "\n")] = '\0';
		why = xasprintf("its VMs are managed by another kvcon engine process (%s); one engine service per host: "
				"use that service's hosts (the same -c set), or stop it",
				held[0] ? held : "see its lock file");
		close(fd);
		fd = -1;
	} else {
		/* the first line names the holder (for the refusal above); the rest lets `kvcon -c URI` find this
		 * service when URI is one of its hosts (service/service.c: engine_service_ensure) */
		char *who = xasprintf("pid %ld, %s\n%s%s%suri %s\nhost %s\n", (long)getpid(),
				      owner_label ? owner_label : "no socket", owner_socket ? "socket " : "",
				      owner_socket ? owner_socket : "", owner_socket ? "\n" : "", eh->uri,
				      eh->src->name);
		ssize_t len = (ssize_t)strlen(who);
		if (ftruncate(fd, 0) == 0 && pwrite(fd, who, (size_t)len, 0) != len)
			log_warn("engine: %s: cannot write who holds it", path);
		free(who);
	}
	free(path);
	free(dir);
	if (fd >= 0)
		eh->owner_fd = fd;
	return why;
}


struct fetch_call {
	fetch_done_cb done;
	void *arg;
	char *body;
};

static void fetch_fire(void *arg)
{
	struct fetch_call *f = arg;
	f->done(f->arg, f->body ? 0 : 404, f->body ? f->body : "not found", f->body ? strlen(f->body) : 9);
	free(f->body);
	free(f);
}

static int engine_fetch_raw(struct source *src, enum obj_kind kind, const char *ns, const char *name,
			    fetch_done_cb done, void *arg, char **err)
{
	(void)kind;
	(void)err;
	struct evm *v = evm_find(src, ns, name);
	struct fetch_call *f = xcalloc(1, sizeof *f);
	f->done = done;
	f->arg = arg;
	f->body = v ? record_dump(v) : NULL;
	loop_post(fetch_fire, f);
	return 0;
}

/* The source goes away (kvcon exits): the worker drains its queue (record writes) and stops. */
static void engine_destroy(struct source *src)
{
	struct ehost *eh = ehost_of_source(src);
	if (eh == NULL || eh->h == NULL)
		return;
	host_free(eh->h);
	eh->h = NULL;
	eh->up = false;
}

static struct json_object *engine_storage_json(struct source *src, const char *ns, const char *name);

static const struct provider_ops engine_ops = {
	.type = "engine",
	.action = eactions_action,
	.open_console = estream_console,
	.open_vnc = estream_vnc,
	.fetch_raw = engine_fetch_raw,
	.open_log = engine_log_open,
	.close_log = engine_log_close,
	.storage_json = engine_storage_json,
	.destroy = engine_destroy,
};


/* ---- public ---- */

struct source *engine_open(struct store *st, const char *uri, char **err)
{
	char *u = uri ? xstrdup(uri) : esettings_default_uri();
	if (strncmp(u, "qemu", 4) != 0) {
		*err = xasprintf("%s: only QEMU/KVM hosts (qemu:// URIs) are supported", u);
		free(u);
		return NULL;
	}
	engine_g.st = st;
	if (imgcache_root() == NULL) {
		char *root = esettings_image_cache();
		imgcache_set_root(root);
		free(root);
		manifest_image_hook(imgcache_hook);
	}
	char hn[256] = "localhost";
	gethostname(hn, sizeof hn - 1);
	struct source *src = source_new(SOURCE_ENGINE, hn);
	src->engine = true;
	struct ehost *eh = xcalloc(1, sizeof *eh);
	eh->src = src;
	eh->uri = u;
	eh->owner_fd = -1;
	hmap_init(&eh->vms);
	src->priv = eh;
	src->ops = &engine_ops;
	free(src->server);
	src->server = xstrdup(u);
	src->readonly = opts_global()->readonly;
	ehost_set_health(eh, WATCH_LOADING, NULL);
	engine_g.hosts = xreallocarray(engine_g.hosts, (size_t)engine_g.nhosts + 1, sizeof *engine_g.hosts);
	engine_g.hosts[engine_g.nhosts++] = eh;
	char *accel = engine_setting("KVCON_ENGINE_ACCEL", "engine.accel");
	char *quser = engine_setting("KVCON_ENGINE_QEMU_USER", "engine.qemu-user");
	char *embed = embed_uri_root(u), *aerr = NULL;
	eh->acct.same = true;
	if (embed && embed_account_resolve(quser, &eh->acct, &aerr) < 0) {
		eh->acct.same = true; /* the connection fails with this error (embed_prepare) */
		free(aerr);
	}
	free(embed);
	eh->h = host_new(u, accel, quser, ereconcile_on_msg, eh);
	free(quser);
	free(accel);
	if (engine_g.resync == NULL)
		engine_g.resync = loop_timer_add(RESYNC_MS, ereconcile_resync_fire, NULL);
	return src;
}

char *engine_check(const char *uri)
{
	char *u = uri ? xstrdup(uri) : esettings_default_uri();
	char *problem = hostenv_problem(u);
	free(u);
	return problem;
}

bool engine_ready(const struct source *src)
{
	const struct ehost *eh = ehost_of_source(src);
	return eh && eh->up && eh->synced;
}

const char *engine_error(const struct source *src)
{
	const struct ehost *eh = ehost_of_source(src);
	return eh && !eh->up ? eh->error : NULL;
}

const char *engine_problems(const struct source *src)
{
	const struct ehost *eh = ehost_of_source(src);
	return eh && eh->nbad ? eh->src->notice : NULL;
}

bool engine_idle(void)
{
	int64_t now = util_wall_s();
	for (int i = 0; i < engine_g.nhosts; i++) {
		struct ehost *eh = engine_g.hosts[i];
		if (eh->reqs)
			return false;
		if (!eh->up)
			continue;
		const char *key;
		void *val;
		for (size_t it = 0; hmap_next(&eh->vms, &it, &key, &val);) {
			struct evm *v = val;
			if (v->stopping || v->restart || v->deleting || v->waiters || migrate_busy(v))
				return false;
			if (evm_want_running(v) != exec_active(v->cur) && v->retry_after <= now)
				return false;
		}
	}
	return true;
}

char *engine_needs_reconciler(void)
{
	int64_t now = util_wall_s();
	for (int i = 0; i < engine_g.nhosts; i++) {
		struct ehost *eh = engine_g.hosts[i];
		if (eh->reqs)
			return xasprintf("%s: requests in flight", eh->uri);
		/* a host not (yet) connected may have executions to watch: nobody knows until it answers */
		if (!eh->up || !eh->synced)
			return xasprintf("%s: not connected", eh->uri);
		const char *key;
		void *val;
		for (size_t it = 0; hmap_next(&eh->vms, &it, &key, &val);) {
			struct evm *v = val;
			if (v->stopping || v->restart || v->deleting || v->pause_req || v->waiters || v->inflight ||
			    v->undefining || migrate_busy(v))
				return xasprintf("%s: a request is under way", v->key);
			/* a running execution is reaped (and, per its run strategy, restarted) when its QEMU dies */
			if (exec_active(v->cur))
				return xasprintf("%s: running (%s)", v->key, v->run_strategy);
			/* Always, RerunOnFailure after a failure, a start asked: the reconciler has a start to retry */
			if (evm_want_running(v) && v->vol_wait == NULL) /* a wait for a claim: the service's storage says */
				return xasprintf("%s: %s", v->key,
						 v->retry_after > now ? "waiting to retry its start" : "to start");
		}
	}
	return NULL;
}

static bool requests_pending(void)
{
	for (int i = 0; i < engine_g.nhosts; i++)
		if (engine_g.hosts[i]->reqs && engine_g.hosts[i]->up)
			return true;
	return false;
}

void engine_close_all(void)
{
	/* let replies arrive, so the records they cause are queued before the workers stop */
	uint64_t until = util_now_ms() + 10000;
	while (requests_pending() && util_now_ms() < until)
		loop_once(50);
	for (int i = 0; i < engine_g.nhosts; i++) {
		host_free(engine_g.hosts[i]->h);
		engine_g.hosts[i]->h = NULL;
		engine_g.hosts[i]->up = false;
	}
	loop_timer_cancel(engine_g.resync);
	engine_g.resync = NULL;
}


static void console_backlog_fire(void *arg)
{
	struct engine_console *c = arg;
	c->backlog_timer = NULL;
	char *b = c->backlog;
	size_t n = c->backlog_len;
	c->backlog = NULL;
	c->cb(c->arg, b, n);
	free(b);
}

struct engine_console *engine_console_open(struct source *src, const char *ns, const char *name,
					   engine_console_cb cb, void *arg, char **err)
{
	struct evm *v = evm_find(src, ns, name);
	if (v == NULL) {
		*err = xasprintf("virtualmachine \"%s\" not found", name);
		return NULL;
	}
	if (!v->m->serial_console) {
		*err = xasprintf("%s has no serial console (autoattachSerialConsole: false)", name);
		return NULL;
	}
	struct engine_console *c = xcalloc(1, sizeof *c);
	c->v = v;
	c->eh = v->eh;
	c->key = xstrdup(v->key);
	c->cb = cb;
	c->arg = arg;
	if (v->ring_len == 0 && exec_active(v->cur) && v->cur->serial_log) {
		/* attached after the start (another kvcon started it): the log's tail is the backlog, read from a file of
		 * root or QEMU's account (the run directory's owner), never through a link the account planted */
		const uid_t owners[] = { geteuid(), UTIL_OWNER_DIR };
		int fd = util_open_checked(v->cur->serial_log, owners, 2, NULL);
		struct stat st;
		if (fd >= 0 && fstat(fd, &st) == 0 && st.st_size > 0) {
			off_t from = st.st_size > 8192 ? st.st_size - 8192 : 0;
			size_t n = 0;
			char *s = lseek(fd, from, SEEK_SET) == from ? util_read_fd(fd, 8192, &n) : NULL;
			if (s && n)
				evm_console_deliver(v, s, n); /* into the ring, before c subscribes */
			free(s);
		}
		if (fd >= 0)
			close(fd);
	}
	c->next = v->consoles;
	v->consoles = c;
	if (v->ring_len) {
		/* the backlog comes from the loop, never from inside this call */
		c->backlog = xmalloc(v->ring_len);
		memcpy(c->backlog, v->ring, v->ring_len);
		c->backlog_len = v->ring_len;
		c->backlog_timer = loop_timer_add(0, console_backlog_fire, c);
	}
	if (exec_active(v->cur))
		evm_send(v, RQ_CONSOLE, PK_CONSOLE);
	return c;
}

void engine_console_write(struct engine_console *c, const char *data, size_t len)
{
	if (c == NULL || c->v == NULL || len == 0)
		return;
	struct host_req *r = xcalloc(1, sizeof *r);
	r->type = RQ_CONSOLE_SEND;
	r->dom = evm_dom_name(c->v);
	r->data = xmalloc(len);
	memcpy(r->data, data, len);
	r->len = len;
	host_request(c->eh->h, r);
}

void engine_console_close(struct engine_console *c)
{
	if (c == NULL)
		return;
	if (c->v)
		for (struct engine_console **pp = &c->v->consoles; *pp; pp = &(*pp)->next)
			if (*pp == c) {
				*pp = c->next;
				break;
			}
	loop_timer_cancel(c->backlog_timer);
	free(c->backlog);
	free(c->key);
	free(c);
}

int engine_vnc_open(struct source *src, const char *ns, const char *name, engine_vnc_cb cb, void *arg, char **err)
{
	struct evm *v = evm_find(src, ns, name);
	if (v == NULL || !exec_active(v->cur)) {
		*err = xasprintf("virtualmachine \"%s\" is not running", name);
		return -1;
	}
	if (!v->m->graphics) {
		*err = xasprintf("%s has no display (autoattachGraphicsDevice: false)", name);
		return -1;
	}
	char *dn = evm_dom_name(v);
	int id = host_simple(v->eh->h, RQ_VNC, dn);
	free(dn);
	struct preq *p = ehost_track(v->eh, id, PK_VNC, NULL);
	if (p == NULL) {
		*err = xasprintf("%s: the engine host is closed", name);
		return -1;
	}
	p->vnc_cb = cb;
	p->arg = arg;
	return 0;
}

int engine_portforward_open(struct source *src, const char *ns, const char *name, int port, bool udp,
			    engine_vnc_cb cb, void *arg, int *host_port, char **err)
{
	struct evm *v = evm_find(src, ns, name);
	if (v == NULL || !exec_active(v->cur)) {
		*err = xasprintf("virtualmachineinstance \"%s\" is not running", name);
		return -1;
	}
	const struct mf_iface *f = evm_pod_iface(v);
	const char *uri = ehost_uri(v->eh);
	if (f == NULL) {
		*err = xasprintf("%s has no masquerade interface to forward to", name);
		return -1;
	}
	if (uri == NULL || strncmp(uri, "qemu:///", 8) != 0) {
		*err = xasprintf("ports are forwarded only on a local host (qemu:///...), not on %s", uri ? uri : "this host");
		return -1;
	}
	/* a free port now; QEMU binds it at once (a port taken meanwhile fails the rule, and this connection) */
	int hp = 0, held = hostfwd_free_port(udp, &hp);
	if (held < 0) {
		*err = xasprintf("no free host port: %s", strerror(errno));
		return -1;
	}
	close(held);
	struct host_req *r = xcalloc(1, sizeof *r);
	r->type = RQ_PORTFWD;
	r->dom = evm_dom_name(v);
	r->data = xasprintf("hostfwd_add hostua-%s %s:127.0.0.1:%d-:%d", f->name, udp ? "udp" : "tcp", hp, port);
	r->len = (size_t)hp;
	r->udp = udp;
	int id = host_request(v->eh->h, r);
	struct preq *p = ehost_track(v->eh, id, PK_VNC, NULL);
	if (p == NULL) {
		*err = xasprintf("%s: the engine host is closed", name);
		return -1;
	}
	p->vnc_cb = cb;
	p->arg = arg;
	*host_port = hp;
	return 0;
}

void engine_portforward_drop(struct source *src, const char *ns, const char *name, int host_port, bool udp)
{
	struct evm *v = evm_find(src, ns, name);
	const struct mf_iface *f = v ? evm_pod_iface(v) : NULL;
	if (f == NULL || !exec_active(v->cur) || host_port <= 0)
		return; /* the execution ended: its QEMU and its rules are gone */
	struct host_req *r = xcalloc(1, sizeof *r);
	r->type = RQ_PORTFWD_DROP;
	r->dom = evm_dom_name(v);
	r->data = xasprintf("hostfwd_remove hostua-%s %s:127.0.0.1:%d", f->name, udp ? "udp" : "tcp", host_port);
	host_request(v->eh->h, r);
}

const char *engine_serial_log(struct source *src, const char *ns, const char *name)
{
	struct evm *v = evm_find(src, ns, name);
	return v && v->cur ? v->cur->serial_log : NULL;
}

bool engine_running(struct source *src, const char *ns, const char *name)
{
	struct evm *v = evm_find(src, ns, name);
	return v && exec_active(v->cur);
}

/* ---- services for migrate.c ---- */


struct ehost **ehost_all(int *n)
{
	*n = engine_g.nhosts;
	return engine_g.hosts;
}

struct evm **ehost_vms(struct ehost *eh, int *n)
{
	struct evm **list = xcalloc(eh->vms.count + 1, sizeof *list);
	size_t k = 0;
	const char *key;
	void *val;
	for (size_t it = 0; hmap_next(&eh->vms, &it, &key, &val);)
		list[k++] = val;
	*n = (int)k;
	return list;
}

struct source *ehost_source(const struct ehost *eh)
{
	return eh->src;
}

const char *ehost_uri(const struct ehost *eh)
{
	return eh->uri;
}

bool ehost_ready(const struct ehost *eh)
{
	return eh->up && eh->synced;
}

struct store *evm_store(void)
{
	return engine_g.st;
}


bool evm_active(const struct evm *v)
{
	return exec_active(v->cur);
}





void evm_event(struct evm *v, const char *type, const char *reason, const char *msg)
{
	evm_add_event(v, type, reason, true, "%s", msg);
}

void evm_inspect(struct evm *v)
{
	evm_send(v, RQ_INSPECT, PK_INSPECT);
}

void evm_move(struct evm *v, struct ehost *dst)
{
	struct ehost *from = v->eh;
	epublish_remove_exec(v, v->cur);
	if (v->sched_msg) /* a start that waited for the old host's Node: the new host's decides again */
		epublish_unscheduled_remove(v);
	free(v->sched_msg);
	v->sched_msg = NULL;
	for (int i = 0; i < v->nevents; i++)
		store_remove(engine_g.st, from->src, OBJ_EVENT, v->events[i].uid);
	store_remove(engine_g.st, from->src, OBJ_VM, v->uid);
	char *old_path = record_path(v); /* removed once the target's record is stored */
	for (struct preq *p = from->reqs; p; p = p->next)
		if (p->v == v) { /* answers about the domain on the old host no longer concern it */
			p->v = NULL;
			p->kind = PK_OTHER;
			v->inflight--;
		}
	hmap_del(&from->vms, v->key);
	struct evm *stale = hmap_get(&dst->vms, v->key);
	if (stale && stale != v) {
		epublish_remove_exec(stale, stale->cur);
		store_remove(engine_g.st, dst->src, OBJ_VM, stale->uid);
		hmap_del(&dst->vms, stale->key);
		evm_free(stale);
	}
	v->eh = dst;
	hmap_put(&dst->vms, v->key, v);
	if (v->cur) {
		free(v->cur->node);
		v->cur->node = xstrdup(dst->src->name);
	}
	for (struct engine_console *c = v->consoles; c; c = c->next)
		c->eh = dst;
	for (int i = 0; i < v->nevents; i++)
		epublish_event_obj(v, &v->events[i]);
	evm_publish(v);
	char *err = NULL;
	if (evm_persist_err(v, &err) < 0) {
		/* the source's record stays: a live migration's says where the execution went (migrate_resume_all), an
		 * offline one's holds its intent (finish_offline_move) */
		log_error("engine: %s: %s; the record on %s is kept", v->key, err, from->src->name);
		free(err);
	} else {
		record_unlink(old_path);
	}
	free(old_path);
	if (exec_active(v->cur)) {
		evm_send(v, RQ_INSPECT, PK_INSPECT);
		if (v->m->serial_console)
			evm_send(v, RQ_CONSOLE, PK_CONSOLE);
	}
}

int evm_move_offline(struct evm *v, struct ehost *dst, char **err)
{
	v->moving_to = xstrdup(dst->src->name);
	v->moving_dir = xstrdup(dst->records_dir);
	int rc = evm_persist_err(v, err);
	free(v->moving_to);
	free(v->moving_dir);
	v->moving_to = v->moving_dir = NULL;
	if (rc < 0)
		return -1;
	char *dn = evm_dom_name(v);
	struct ehost *from = v->eh;
	evm_move(v, dst);
	/* after the move: a kill before it leaves the domain where the record is */
	if (from->h)
		host_simple(from->h, RQ_UNDEFINE, dn);
	free(dn);
	return 0;
}

/* ---- the storage of an engine VM (diagnose, bundle) ---- */

static void vol_file(struct json_object *o, const char *path)
{
	struct stat sb;
	struct json_object *f = json_object_new_object();
	char *e = util_escape_display(path);
	json_object_object_add(f, "path", json_object_new_string(e));
	free(e);
	bool ok = stat(path, &sb) == 0;
	json_object_object_add(f, "exists", json_object_new_boolean(ok));
	if (ok)
		json_object_object_add(f, "sizeBytes", json_object_new_int64((int64_t)sb.st_size));
	json_object_object_add(o, "file", f);
}

static void vol_broken(struct json_object *o, const char *why)
{
	char *e = util_escape_display(why);
	json_object_object_add(o, "brokenLink", json_object_new_string("file"));
	json_object_object_add(o, "reason", json_object_new_string(e));
	free(e);
}

/* The VM's volumes as diagnose and bundle show storage (provider_ops.storage_json): per volume its type, claim or
 * image, the file behind it on this machine (path, exists, sizeBytes), the VMs of this host using the same file
 * (usedBy), and brokenLink + reason when a file the VM needs is missing. NULL when no such VM. */
static struct json_object *engine_storage_json(struct source *src, const char *ns, const char *name)
{
	struct evm *v = evm_find(src, ns, name);
	if (v == NULL)
		return NULL;
	struct json_object *out = json_object_new_array();
	char *vols = esettings_dir("KVCON_ENGINE_VOLUMES", "volumes");
	const char *run = v->cur && exec_active(v->cur) ? v->cur->run_dir : NULL;
	static const char *const types[] = { "hostDisk", "persistentVolumeClaim", "emptyDisk", "containerDisk",
					     "cloudInitNoCloud", "secret", "configMap" };
	for (int i = 0; i < v->m->nvols; i++) {
		const struct mf_volume *mv = &v->m->vols[i];
		struct json_object *o = json_object_new_object();
		char *e = util_escape_display(mv->name);
		json_object_object_add(o, "volume", json_object_new_string(e));
		free(e);
		json_object_object_add(o, "type", json_object_new_string(types[mv->type]));
		char *path = NULL;
		switch (mv->type) {
		case MF_VOL_HOSTDISK:
			path = xstrdup(mv->path);
			break;
		case MF_VOL_PVC: {
			char *q = xasprintf("%s/%s/%s.qcow2", vols, v->m->ns, mv->claim);
			struct stat sb;
			path = stat(q, &sb) == 0 ? q : (free(q), xasprintf("%s/%s/%s.img", vols, v->m->ns, mv->claim));
			char *c = util_escape_display(mv->claim);
			json_object_object_add(o, "claim", json_object_new_string(c));
			free(c);
			break;
		}
		case MF_VOL_EMPTY:
			path = run ? xasprintf("%s/empty-%s.img", run, mv->name) : NULL;
			break;
		case MF_VOL_CONTAINER: {
			char *im = util_escape_display(mv->image);
			json_object_object_add(o, "image", json_object_new_string(im));
			free(im);
			path = run ? xasprintf("%s/overlay-%s.qcow2", run, mv->name) : NULL;
			break;
		}
		case MF_VOL_CLOUDINIT:
			path = run ? xasprintf("%s/cloudinit-%s.iso", run, mv->name) : NULL;
			break;
		case MF_VOL_SECRET:
		case MF_VOL_CONFIGMAP: {
			bool cm = mv->type == MF_VOL_CONFIGMAP;
			json_object_object_add(o, cm ? "configMap" : "secret", json_object_new_string(mv->object));
			path = run ? xasprintf("%s/%s-%s.iso", run, cm ? "configmap" : "secret", mv->name) : NULL;
			break;
		}
		}
		if (path) {
			vol_file(o, path);
			struct stat sb;
			bool exists = stat(path, &sb) == 0;
			if (!exists && mv->type == MF_VOL_PVC) {
				char *why = xasprintf("the volume file of claim %s (%s) does not exist", mv->claim, path);
				vol_broken(o, why);
				free(why);
			} else if (!exists && mv->type == MF_VOL_HOSTDISK && !mv->create) {
				char *why = xasprintf("hostDisk %s does not exist (type Disk: it is not created)", path);
				vol_broken(o, why);
				free(why);
			}
		}
		/* which VMs of this host use the same file (a PVC or host disk shared by two VMs) */
		if (mv->type == MF_VOL_PVC || mv->type == MF_VOL_HOSTDISK) {
			struct json_object *users = json_object_new_array();
			const char *k;
			void *val;
			for (size_t it = 0; hmap_next(&v->eh->vms, &it, &k, &val);) {
				const struct evm *o2 = val;
				for (int j = 0; j < o2->m->nvols; j++) {
					const struct mf_volume *w = &o2->m->vols[j];
					bool same = w->type == mv->type &&
						    (mv->type == MF_VOL_PVC ? strcmp(o2->m->ns, v->m->ns) == 0 && util_str_eq(w->claim, mv->claim)
									     : util_str_eq(w->path, mv->path));
					if (same) {
						char *u = util_escape_display(k);
						json_object_array_add(users, json_object_new_string(u));
						free(u);
						break;
					}
				}
			}
			json_object_object_add(o, "usedBy", users);
		}
		free(path);
		json_object_array_add(out, o);
	}
	free(vols);
	return out;
}

/* ---- the guest agent (engine/gagent.h): the subresources' answers and the VMI's status ---- */

/* cmds[0..n) to v's guest agent on the host's worker, one request; the answers go to cb with what (-1: raw). */
static int agent_request(struct evm *v, const char *const *cmds, int n, int what, engine_agent_cb cb, void *arg)
{
	struct buf b;
	buf_init(&b);
	for (int i = 0; i < n; i++)
		buf_add(&b, cmds[i], strlen(cmds[i]) + 1);
	struct host_req *r = xcalloc(1, sizeof *r);
	r->type = RQ_AGENT;
	r->dom = evm_dom_name(v);
	r->len = b.len;
	r->data = buf_steal(&b);
	int id = host_request(v->eh->h, r);
	struct preq *p = ehost_track(v->eh, id, PK_AGENT, NULL);
	if (p == NULL)
		return -1;
	p->agent_cb = cb;
	p->arg = arg;
	p->agent_what = what;
	p->agent_vm = xstrdup(v->key);
	snprintf(p->agent_uid, sizeof p->agent_uid, "%s", v->cur->uid);
	return 0;
}

static int agent_send(struct evm *v, int what, engine_agent_cb cb, void *arg, char **err)
{
	int n = 0;
	const char *const *cmds = gagent_commands((enum gagent_what)what, &n);
	if (agent_request(v, cmds, n, what, cb, arg) < 0) {
		*err = xasprintf("%s: the engine host is closed", v->key);
		return -1;
	}
	return 0;
}

int engine_agent_query(struct source *src, const char *ns, const char *name, int what, engine_agent_cb cb, void *arg,
		       int *code, char **err)
{
	struct evm *v = evm_find(src, ns, name);
	if (v == NULL || !exec_active(v->cur)) {
		*code = 404;
		*err = xasprintf("virtualmachineinstance \"%s\" is not running", name);
		return -1;
	}
	if (!v->cur->agent) { /* virt-api's answer */
		*code = 409;
		*err = xstrdup("VMI does not have guest agent connected");
		return -1;
	}
	*code = 500;
	return what >= 0 && what < GA_COUNT && what != GA_STATUS ? agent_send(v, what, cb, arg, err) : -1;
}

int eagent_send_raw(struct evm *v, char *const *cmds, int n, engine_agent_cb cb, void *arg)
{
	return agent_request(v, (const char *const *)cmds, n, -1, cb, arg);
}

void eagent_status_refresh(struct evm *v)
{
	if (v == NULL || !exec_active(v->cur) || !v->cur->agent)
		return;
	/* one at a time per VM: the host's worker runs them in turn, and a slow agent costs it its timeout */
	for (const struct preq *p = v->eh->reqs; p; p = p->next)
		if (p->kind == PK_AGENT && p->agent_cb == NULL && util_str_eq(p->agent_vm, v->key))
			return;
	char *err = NULL;
	if (agent_send(v, GA_STATUS, NULL, NULL, &err) < 0) {
		log_debug("engine: %s", err);
		free(err);
	}
}

/* the status part of GA_STATUS's answer into the execution it was asked about (published when it changed) */
static void agent_status(struct preq *p, json_object *j)
{
	char *slash = strchr(p->agent_vm, '/');
	if (slash == NULL)
		return;
	*slash = '\0';
	struct evm *v = NULL;
	for (int i = 0; i < engine_g.nhosts && v == NULL; i++)
		v = evm_find(engine_g.hosts[i]->src, p->agent_vm, slash + 1);
	*slash = '/';
	if (v == NULL || !exec_active(v->cur) || strcmp(v->cur->uid, p->agent_uid) != 0)
		return;
	json_object *os, *ver, *pretty, *name;
	char *text = NULL;
	if (json_object_object_get_ex(j, "guestOSInfo", &os)) {
		if (json_object_object_get_ex(os, "prettyName", &pretty))
			text = xstrdup(json_object_get_string(pretty));
		else if (json_object_object_get_ex(os, "name", &name))
			text = xstrdup(json_object_get_string(name));
	}
	char *version = json_object_object_get_ex(j, "version", &ver) ? xstrdup(json_object_get_string(ver)) : NULL;
	/* "IFNAME ADDRESS" lines; a name of other characters than an interface name's is skipped */
	struct buf b;
	buf_init(&b);
	json_object *ifs;
	size_t nifs = json_object_object_get_ex(j, "interfaces", &ifs) ? json_object_array_length(ifs) : 0;
	for (size_t i = 0; i < nifs; i++) {
		json_object *e = json_object_array_get_idx(ifs, i), *n, *ips;
		const char *ifn = json_object_object_get_ex(e, "interfaceName", &n) ? json_object_get_string(n) : "";
		if (*ifn == '\0' || strlen(ifn) > 15 ||
		    strspn(ifn, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-@") != strlen(ifn) ||
		    !json_object_object_get_ex(e, "ipAddresses", &ips))
			continue;
		for (size_t k = 0; k < json_object_array_length(ips); k++)
			buf_printf(&b, "%s %s\n", ifn, json_object_get_string(json_object_array_get_idx(ips, k)));
	}
	char *ifs_text = b.len ? buf_steal(&b) : NULL;
	buf_free(&b);
	bool same = util_str_eq(text, v->cur->guest_os) && util_str_eq(version, v->cur->agent_version) &&
		    util_str_eq(ifs_text, v->cur->agent_ifs);
	free(v->cur->guest_os);
	free(v->cur->agent_version);
	free(v->cur->agent_ifs);
	v->cur->guest_os = text;
	v->cur->agent_version = version;
	v->cur->agent_ifs = ifs_text;
	if (!same)
		evm_publish(v);
}

void eagent_reply(struct preq *p, const char *data, size_t len, const char *err)
{
	const char *answers[16] = { 0 };
	int n = 0;
	for (size_t off = 0; data && off < len && n < 16; off += strlen(data + off) + 1, n++)
		answers[n] = data[off] ? data + off : NULL;
	char *berr = NULL;
	json_object *j = NULL;
	if (p->agent_what < 0) { /* eagent_send_raw: the answers as they are, null where one failed */
		j = json_object_new_array();
		for (int i = 0; i < n; i++)
			json_object_array_add(j, answers[i] ? json_object_new_string(answers[i]) : NULL);
	} else if (err == NULL)
		j = gagent_build((enum gagent_what)p->agent_what, answers, n, &berr);
	if (p->agent_cb)
		p->agent_cb(p->arg, j, p->agent_what < 0 ? err : j ? NULL : err ? err : berr);
	else if (j)
		agent_status(p, j);
	json_object_put(j);
	free(berr);
	free(p->agent_vm);
	free(p);
}
