/* libvirt connection per engine host: worker thread, request queue, event forwarding, console streams. */
#include "engine/host.h"

#include <errno.h>
#include <fcntl.h>
#include <libvirt/libvirt-qemu.h>
#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/buf.h"
#include "core/log.h"
#include "core/loop.h"
#include "core/util.h"
#include "core/xmalloc.h"
#include "engine/embed.h"
#include "engine/gagent.h"
#include "engine/hostenv.h"
#include "engine/hostfwd.h"
#include "engine/kvmprobe.h"

#define META_URI "https://kvcon.dev/xmlns/engine/1"

struct qitem {
	struct host_req *r;
	struct qitem *next;
};

struct console {
	struct host *h;
	char *dom;
	virStreamPtr st;
	unsigned int dom_id;  /* virDomainGetID: the QEMU run this stream reads (a restart gets a new one) */
	atomic_bool dead;     /* set by the event thread on EOF/error, or by the worker when the run is gone */
	atomic_bool released; /* libvirt let go of the event callback: nothing calls console_event any more */
	struct console *next;
};

struct host {
	char *uri;
	char *accel;
	char *embed_root;
	char *qemu_user; /* engine.qemu-user, for the embedded root's qemu.conf */
	char *first_error; /* the embedded driver's first failure to open (worker thread) */
	host_msg_cb cb;
	void *arg;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct qitem *head, *tail;
	bool quit;
	atomic_bool broken;
	atomic_int next_id;
	virConnectPtr conn;
	int cb_life, cb_agent;
	struct console *consoles; /* worker thread only (the event thread touches only its own entry) */
};

/* ---- the shared libvirt event loop thread ---- */

static pthread_once_t event_once = PTHREAD_ONCE_INIT;

static void *event_main(void *arg)
{
	(void)arg;
	for (;;)
		if (virEventRunDefaultImpl() < 0)
			log_warn("engine: libvirt event loop: %s", virGetLastErrorMessage());
	return NULL;
}

static void quiet_errors(void *data, virErrorPtr err)
{
	(void)data;
	log_debug("libvirt: %s", err && err->message ? err->message : "?");
}

static void event_start(void)
{
	/* libvirt's own log (the embedded driver's warnings and errors, timestamped) goes to kvcon's log file, never
	 * to the terminal, whatever the environment said: a command without --log-file opens the default one */
	if (log_path() == NULL)
		log_open(NULL);
	const char *lp = log_path();
	char *outputs = xasprintf("3:file:%s", lp ? lp : "/dev/null");
	setenv("LIBVIRT_LOG_OUTPUTS", outputs, 1);
	free(outputs);
	virSetErrorFunc(NULL, quiet_errors);
	virEventRegisterDefaultImpl();
	pthread_t t;
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old); /* signals stay with the loop thread's self-pipe */
	pthread_create(&t, NULL, event_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_detach(t);
}

/* ---- messages to the loop thread ---- */

static void host_dom_clear(struct host_dom *d)
{
	free(d->name);
	free(d->cmdline);
	free(d->log_path);
	memset(d, 0, sizeof *d);
}

static void msg_free(struct host_msg *m)
{
	free(m->text);
	free(m->dom);
	for (int i = 0; i < m->ndoms; i++)
		host_dom_clear(&m->doms[i]);
	free(m->doms);
	free(m->data);
	free(m->hostname);
	free(m->version);
	free(m->accel);
	free(m->note);
	free(m->ports);
	free(m);
}

static void deliver(void *arg)
{
	struct host_msg *m = arg;
	m->h->cb(m->h->arg, m);
	msg_free(m);
}

static struct host_msg *msg_new(struct host *h, enum host_msg_type type)
{
	struct host_msg *m = xcalloc(1, sizeof *m);
	m->h = h;
	m->type = type;
	m->fd = -1;
	return m;
}

static void post(struct host_msg *m)
{
	loop_post(deliver, m);
}

static char *lv_error(const char *what)
{
	const char *e = virGetLastErrorMessage();
	return xasprintf("%s: %s", what, e ? e : "unknown libvirt error");
}

/* ---- paths of a domain's QEMU process on this machine ---- */

/* The run and log directories libvirt uses for the QEMU driver behind this URI, when it is on this machine. */
static void local_dirs(const struct host *h, char **run, char **logd)
{
	*run = *logd = NULL;
	if (h->embed_root) {
		*run = xasprintf("%s/run/qemu", h->embed_root);
		*logd = xasprintf("%s/log/qemu", h->embed_root);
		return;
	}
	const char *sock = strstr(h->uri, "socket=");
	if (sock) { /* a private daemon: <dir>/libvirt-sock next to <dir>/qemu */
		char *s = xstrndup(sock + 7, strcspn(sock + 7, "&"));
		char *slash = strrchr(s, '/');
		if (slash) {
			*slash = '\0';
			*run = xasprintf("%s/qemu", s);
		}
		free(s);
		return;
	}
	if (strcmp(h->uri, "qemu:///system") == 0 || strcmp(h->uri, "qemu+unix:///system") == 0) {
		*run = xstrdup("/run/libvirt/qemu");
		*logd = xstrdup("/var/log/libvirt/qemu");
	}
}

static int64_t proc_start_time(int pid)
{
	char p[64];
	struct stat st;
	snprintf(p, sizeof p, "/proc/%d", pid);
	if (stat(p, &st) < 0)
		return 0;
	return (int64_t)st.st_mtime; /* /proc/PID's inode time is the process start */
}

static char *proc_cmdline(int pid)
{
	char p[64];
	size_t len = 0;
	snprintf(p, sizeof p, "/proc/%d/cmdline", pid);
	char *s = util_read_file(p, &len);
	if (s == NULL)
		return NULL;
	for (size_t i = 0; i + 1 < len; i++)
		if (s[i] == '\0')
			s[i] = ' ';
	return s;
}

/* Reads an attribute of our metadata element (libvirt hands back the element we wrote: vm, vmi, launcher), with
 * libxml2: a UID that does not fit reads as none. */
static void meta_attr(xmlDocPtr doc, const char *attr, char out[HOST_UID_LEN])
{
	out[0] = '\0';
	xmlNodePtr root = doc ? xmlDocGetRootElement(doc) : NULL;
	xmlChar *v = root ? xmlGetProp(root, BAD_CAST attr) : NULL;
	if (v && strlen((const char *)v) < HOST_UID_LEN)
		snprintf(out, HOST_UID_LEN, "%s", (const char *)v);
	xmlFree(v);
}

/* Fills d from a domain; false when it is not one of kvcon's. */
static bool inspect(struct host *h, virDomainPtr dom, struct host_dom *d)
{
	memset(d, 0, sizeof *d);
	char *meta = virDomainGetMetadata(dom, VIR_DOMAIN_METADATA_ELEMENT, META_URI, 0);
	if (meta == NULL)
		return false;
	xmlDocPtr doc = xmlReadMemory(meta, (int)strlen(meta), NULL, NULL,
				      XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
	meta_attr(doc, "vm", d->vm);
	meta_attr(doc, "vmi", d->vmi);
	meta_attr(doc, "launcher", d->launcher);
	xmlFreeDoc(doc);
	free(meta);
	d->name = xstrdup(virDomainGetName(dom));
	virDomainGetUUIDString(dom, d->uuid);
	if (virDomainGetState(dom, &d->state, &d->reason, 0) < 0)
		d->state = VIR_DOMAIN_NOSTATE;
	if (d->state == VIR_DOMAIN_SHUTOFF || d->state == VIR_DOMAIN_NOSTATE)
		return true;
	char *run, *logd;
	local_dirs(h, &run, &logd);
	if (run) {
		char *pf = xasprintf("%s/%s.pid", run, d->name);
		/* libvirt's (root's) pid file: never a link, a FIFO or /dev/zero someone put there */
		const uid_t owners[] = { geteuid() };
		char *s = util_read_file_checked(pf, owners, 1, 64, NULL, NULL);
		if (s)
			d->pid = atoi(s);
		free(s);
		free(pf);
	}
	if (logd)
		d->log_path = xasprintf("%s/%s.log", logd, d->name);
	free(run);
	free(logd);
	if (d->pid > 0) {
		d->cmdline = proc_cmdline(d->pid);
		d->started = proc_start_time(d->pid);
	}
	return true;
}

/* ---- console streams (callbacks on the event thread) ---- */

static void console_event(virStreamPtr st, int events, void *opaque)
{
	struct console *c = opaque;
	for (;;) {
		char buf[8192];
		int n = virStreamRecv(st, buf, sizeof buf);
		log_debug("engine: console %s: recv %d (events 0x%x)", c->dom, n, (unsigned)events);
		if (n == -2)
			return; /* nothing more now */
		struct host_msg *m = msg_new(c->h, HM_CONSOLE);
		m->dom = xstrdup(c->dom);
		if (n > 0) {
			m->data = xmalloc((size_t)n);
			memcpy(m->data, buf, (size_t)n);
			m->len = (size_t)n;
			post(m);
			continue;
		}
		post(m); /* EOF or error: len 0 */
		virStreamEventRemoveCallback(st);
		atomic_store(&c->dead, true);
		return;
	}
}

/* libvirt's free callback for the stream's event callback: called once no dispatch can reach console_event */
static void console_released(void *opaque)
{
	struct console *c = opaque;
	atomic_store(&c->released, true);
}

static void console_reap(struct host *h)
{
	for (struct console **pp = &h->consoles; *pp;) {
		struct console *c = *pp;
		if (atomic_load(&c->dead) && atomic_load(&c->released)) {
			*pp = c->next;
			virStreamAbort(c->st);
			virStreamFree(c->st);
			free(c->dom);
			free(c);
		} else
			pp = &c->next;
	}
}

static struct console *console_find(struct host *h, const char *dom)
{
	console_reap(h);
	for (struct console *c = h->consoles; c; c = c->next)
		if (!atomic_load(&c->dead) && strcmp(c->dom, dom) == 0)
			return c;
	return NULL;
}

/* libvirt locks a console's pty with /var/lock/LCK.._pts_N, which holds the opener's pid, and takes the lock as
 * held while kill(pid, 0) answers. A service that ended (SIGTERM, kill -9) with a console open leaves its lock
 * behind; libvirt would remove it once that pid is gone, but a zombie answers kill(pid, 0), so until init reaps
 * the old service (about a second under some inits) the next service could not open the console of a guest whose
 * pty got the same number: the console stayed dark. The lock of dom's pty whose pid does not run (a zombie does
 * not, util_pid_running) is removed first. Only a path /dev/pts/DIGITS is looked at, and only a lock file that
 * holds a pid and nothing else. */
static void console_clear_stale_lock(virDomainPtr dom)
{
	char *xml = virDomainGetXMLDesc(dom, 0);
	const char *con = xml ? strstr(xml, "<console type='pty'") : NULL;
	const char *end = con ? strstr(con, "</console>") : NULL;
	const char *src = con ? strstr(con, "<source path='/dev/pts/") : NULL;
	char lock[64] = "";
	if (src && end && src < end) {
		const char *num = src + strlen("<source path='/dev/pts/");
		size_t n = strspn(num, "0123456789");
		if (n > 0 && n < 10 && num[n] == '\'')
			snprintf(lock, sizeof lock, "/var/lock/LCK.._pts_%.*s", (int)n, num);
	}
	free(xml);
	if (!lock[0])
		return;
	int fd = open(lock, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return;
	char b[32];
	ssize_t r = read(fd, b, sizeof b - 1);
	close(fd);
	if (r <= 0)
		return;
	b[r] = '\0';
	char *e;
	long pid = strtol(b, &e, 10);
	while (*e == ' ' || *e == '\n')
		e++;
	if (*e || pid <= 0 || pid == (long)getpid() || util_pid_running((pid_t)pid))
		return;
	if (unlink(lock) == 0)
		log_info("engine: %s: the console lock of pid %ld, which has ended, removed", lock, pid);
}

/* Attaches to the console of dom's current QEMU run. A stream of an earlier run of the same domain whose end
 * the event thread has not reported yet (a restart right after a crash or a poweroff) is retired first: it
 * must never pass for the new run's, or the new run's output reaches no one. */
static int console_attach(struct host *h, virDomainPtr dom, const char *name, char **err)
{
	unsigned int id = virDomainGetID(dom);
	struct console *old = console_find(h, name);
	if (old && old->dom_id == id)
		return 0;
	if (old) {
		log_info("engine: console %s: the stream of an earlier run (id %u, now %u) retired", name, old->dom_id,
			 id);
		virStreamEventRemoveCallback(old->st);
		atomic_store(&old->dead, true);
	}
	virStreamPtr st = virStreamNew(h->conn, VIR_STREAM_NONBLOCK);
	if (st == NULL) {
		*err = lv_error("console stream");
		return -1;
	}
	console_clear_stale_lock(dom);
	if (virDomainOpenConsole(dom, NULL, st, VIR_DOMAIN_CONSOLE_FORCE) < 0) {
		*err = lv_error("open console");
		virStreamFree(st);
		return -1;
	}
	struct console *c = xcalloc(1, sizeof *c);
	c->h = h;
	c->dom = xstrdup(name);
	c->st = st;
	c->dom_id = id;
	if (virStreamEventAddCallback(st, VIR_STREAM_EVENT_READABLE | VIR_STREAM_EVENT_ERROR |
						  VIR_STREAM_EVENT_HANGUP,
				      console_event, c, console_released) < 0) {
		*err = lv_error("console events");
		virStreamAbort(st);
		virStreamFree(st);
		free(c->dom);
		free(c);
		return -1;
	}
	c->next = h->consoles;
	h->consoles = c;
	return 0;
}

static void console_send(struct host *h, const char *dom, const char *data, size_t len)
{
	struct console *c = console_find(h, dom);
	size_t off = 0;
	int spins = 0;
	log_debug("engine: console %s: send %zu bytes (%s)", dom, len, c ? "attached" : "not attached");
	while (c && off < len && !atomic_load(&c->dead)) {
		int n = virStreamSend(c->st, data + off, len - off);
		if (n > 0)
			off += (size_t)n;
		else if (n == -2 && spins++ < 1000)
			usleep(1000); /* the guest's side is full: input is small, wait a little */
		else
			break;
	}
}

/* ---- reaping the embedded driver's QEMU processes ---- */

/* The embedded driver daemonizes QEMU (guests and its capability probes); this process is a child subreaper,
 * so they become its children. libvirt waits (kill(pid, 0)) until a QEMU's zombie is gone before it reports the
 * stop, and a lazy init can hold a zombie for seconds: a thread reaps this process's QEMU zombies every 20 ms.
 * Only the orphans: the kernel gives a subreaper's adopted children to its first live thread, the main one, so
 * only /proc/self/task/PID/children is read (state Z, command qemu-system-*). A QEMU that a libvirt thread forked
 * itself is that thread's child, and that thread waits for it: a capability probe's QEMU, run with -daemonize,
 * exits once its daemon is up, and libvirt reads the daemon's pid only after its waitpid of that first process.
 * Reaped here instead (under load, before the libvirt thread ran), libvirt's waitpid failed, the probe failed
 * and its daemon QEMU was left running with nobody to end it (CI, the lab selftest). Other children are left to
 * whoever waits for them. */
static pthread_once_t reaper_once = PTHREAD_ONCE_INIT;

/* Reads path into buf (NUL-terminated); the length, or -1. Plain system calls: see host_reap_qemu_zombies. */
static ssize_t read_small(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, size - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return n;
}

/* Runs every 20 ms beside libvirt, which forks (dmidecode, QEMU) from other threads: it must never allocate. A
 * fork taken while this thread held an allocator's lock would leave the child (before its exec) waiting on that
 * lock for good: seen with ASan's allocator, which has no fork handler. So no opendir/fopen: open and read into
 * stack buffers. */
void host_reap_qemu_zombies(void)
{
	char path[96], buf[4096];
	snprintf(path, sizeof path, "/proc/self/task/%ld/children", (long)getpid());
	if (read_small(path, buf, sizeof buf) <= 0)
		return;
	for (char *p = buf, *end; *p; p = end) {
		long pid = strtol(p, &end, 10);
		if (end == p)
			break;
		char stat[256];
		snprintf(path, sizeof path, "/proc/%ld/stat", pid);
		if (read_small(path, stat, sizeof stat) <= 0)
			continue;
		char *rp = strrchr(stat, ')');
		if (strncmp(stat + strcspn(stat, "("), "(qemu-system", 12) == 0 && rp && rp[1] == ' ' && rp[2] == 'Z')
			waitpid((pid_t)pid, NULL, WNOHANG);
	}
}

static void *reaper_main(void *arg)
{
	(void)arg;
	for (;;) {
		struct timespec ts = { 0, 20 * 1000 * 1000 };
		nanosleep(&ts, NULL);
		host_reap_qemu_zombies();
	}
	return NULL;
}

static void reaper_start(void)
{
	prctl(PR_SET_CHILD_SUBREAPER, 1L, 0L, 0L, 0L);
	pthread_t t;
	pthread_attr_t at;
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&t, &at, reaper_main, NULL) != 0)
		prctl(PR_SET_CHILD_SUBREAPER, 0L, 0L, 0L, 0L); /* no reaper: leave orphans to init as before */
	pthread_attr_destroy(&at);
}

/* ---- lifecycle events (event thread) ---- */

static int on_lifecycle(virConnectPtr conn, virDomainPtr dom, int event, int detail, void *opaque)
{
	(void)conn;
	struct host *h = opaque;
	struct host_msg *m = msg_new(h, HM_LIFECYCLE);
	m->dom = xstrdup(virDomainGetName(dom));
	m->event = event;
	m->detail = detail;
	post(m);
	return 0;
}

static void on_agent(virConnectPtr conn, virDomainPtr dom, int state, int reason, void *opaque)
{
	(void)conn;
	(void)reason;
	struct host *h = opaque;
	struct host_msg *m = msg_new(h, HM_AGENT);
	m->dom = xstrdup(virDomainGetName(dom));
	m->event = state == VIR_CONNECT_DOMAIN_EVENT_AGENT_LIFECYCLE_STATE_CONNECTED;
	post(m);
}

static void on_close(virConnectPtr conn, int reason, void *opaque)
{
	(void)conn;
	(void)reason;
	struct host *h = opaque;
	atomic_store(&h->broken, true);
	pthread_mutex_lock(&h->mu);
	pthread_cond_signal(&h->cv);
	pthread_mutex_unlock(&h->mu);
}

/* ---- KVM probe ---- */

/* The cache line: "BOOT_ID VERSION ok|broken REASON". A new probe version invalidates older verdicts (the first
 * probe, SeaBIOS under KVM, said "ok" on hosts where real guests never print a line). */
#define PROBE_VERSION "probe2"

bool host_kvm_works(const char *cache_file, char **why)
{
	char boot[64] = "";
	char *b = util_read_file("/proc/sys/kernel/random/boot_id", NULL);
	if (b) {
		snprintf(boot, sizeof boot, "%.*s", (int)strcspn(b, "\n"), b);
		free(b);
	}
	if (cache_file) {
		char *c = util_read_file(cache_file, NULL);
		if (c) {
			char cb[64], ver[16], res[16];
			int off = 0;
			int n = sscanf(c, "%63s %15s %15s %n", cb, ver, res, &off);
			if (n == 3 && strcmp(cb, boot) == 0 && strcmp(ver, PROBE_VERSION) == 0) {
				bool ok = strcmp(res, "ok") == 0;
				if (!ok)
					*why = xasprintf("%.*s (probed earlier this boot)", (int)strcspn(c + off, "\n"),
							 c + off);
				free(c);
				log_info("engine: KVM %s (cached in %s)", ok ? "works" : "unusable", cache_file);
				return ok;
			}
			free(c);
		}
	}
	bool ok = false;
	if (access("/dev/kvm", R_OK | W_OK) < 0) {
		*why = xasprintf("/dev/kvm: %s", strerror(errno));
	} else {
		struct kvmprobe_report r;
		ok = kvmprobe_run(NULL, "kvm", &r);
		log_info("engine: KVM probe: %s (long mode after %u ms, then %u ms)%s%s", ok ? "works" : "unusable",
			 r.start_ms, r.run_ms, ok ? "" : ": ", ok ? "" : r.why);
		if (!ok) {
			*why = r.why;
			r.why = NULL;
		}
		kvmprobe_report_clear(&r);
	}
	if (cache_file) {
		char *line = xasprintf("%s %s %s %s\n", boot, PROBE_VERSION, ok ? "ok" : "broken", ok ? "" : *why);
		util_write_file_atomic(cache_file, line, strlen(line), 0644);
		free(line);
	}
	return ok;
}

/* ---- the worker ---- */

static struct host_req *dequeue(struct host *h, int wait_ms)
{
	pthread_mutex_lock(&h->mu);
	if (h->head == NULL && !h->quit && !atomic_load(&h->broken) && wait_ms != 0) {
		if (wait_ms < 0)
			pthread_cond_wait(&h->cv, &h->mu);
		else {
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += wait_ms / 1000;
			ts.tv_nsec += (long)(wait_ms % 1000) * 1000000L;
			if (ts.tv_nsec >= 1000000000L) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000L;
			}
			pthread_cond_timedwait(&h->cv, &h->mu, &ts);
		}
	}
	struct host_req *r = NULL;
	if (h->head) {
		struct qitem *q = h->head;
		h->head = q->next;
		if (h->head == NULL)
			h->tail = NULL;
		r = q->r;
		free(q);
	}
	pthread_mutex_unlock(&h->mu);
	return r;
}

static void req_free(struct host_req *r)
{
	if (r == NULL)
		return;
	free(r->dom);
	domxml_plan_free(r->plan);
	free(r->path);
	free(r->data);
	free(r);
}

static void do_sync(struct host *h, bool wait_reconnect)
{
	struct host_msg *m = msg_new(h, HM_SYNC);
	if (wait_reconnect && h->embed_root) {
		/* The embedded driver reattaches to running QEMUs in the background; a query job waits for it, and
		 * leaving before it ends would make libvirt kill the guests. */
		virDomainStatsRecordPtr *recs = NULL;
		if (virConnectGetAllDomainStats(h->conn, VIR_DOMAIN_STATS_STATE | VIR_DOMAIN_STATS_BLOCK, &recs,
						VIR_CONNECT_GET_ALL_DOMAINS_STATS_ACTIVE) >= 0)
			virDomainStatsRecordListFree(recs);
	}
	virDomainPtr *doms = NULL;
	int n = virConnectListAllDomains(h->conn, &doms, 0);
	if (n < 0) {
		m->status = -1;
		m->text = lv_error("list domains");
		n = 0;
	}
	m->doms = xcalloc((size_t)n + 1, sizeof *m->doms);
	for (int i = 0; i < n; i++) {
		if (inspect(h, doms[i], &m->doms[m->ndoms]))
			m->ndoms++;
		virDomainFree(doms[i]);
	}
	free(doms);
	post(m);
}

static struct host_msg *done_msg(struct host *h, struct host_req *r, int status, char *text, virDomainPtr dom)
{
	struct host_msg *m = msg_new(h, HM_DONE);
	m->req_id = r->id;
	m->status = status;
	m->text = text;
	m->dom = xstrdup0(r->dom);
	if (dom) {
		m->doms = xcalloc(1, sizeof *m->doms);
		if (inspect(h, dom, &m->doms[0]))
			m->ndoms = 1;
	}
	return m;
}

static void done(struct host *h, struct host_req *r, int status, char *text, virDomainPtr dom)
{
	post(done_msg(h, r, status, text, dom));
}

/* An unprivileged QEMU (engine/embed.h) creates its sockets and serial log in the execution's directory (and its
 * sockets in the short socket directory when the run directory is too deep for sun_path): made and filled by
 * kvcon (root's, 0700), they become the account's just before QEMU starts. */
static int give_run_dir(struct host *h, const struct domxml_plan *p, char **err)
{
	struct embed_account a;
	if (p->run_dir == NULL || embed_account_resolve(h->qemu_user, &a, err) < 0)
		return p->run_dir == NULL ? 0 : -1;
	int rc = 0;
	if (!a.same && p->sock_base) /* the short socket directory too, through its (search-only) base */
		rc = embed_own_dir(&a, p->sock_dir, err);
	if (!a.same && rc == 0)
		rc = embed_own_dir(&a, p->run_dir, err);
	embed_account_clear(&a);
	return rc;
}

/* The pod network's forwarded ports go through libvirt's QEMU monitor API while the guest is paused (libvirt's
 * XML has no port forwarding for QEMU's user-mode network); HMP answers an empty text on success. */
static int hmp(void *arg, const char *cmd, char **answer, char **err)
{
	if (virDomainQemuMonitorCommand(arg, cmd, answer, VIR_DOMAIN_QEMU_MONITOR_COMMAND_HMP) < 0) {
		*err = lv_error("port forwarding");
		return -1;
	}
	return 0;
}

static void do_start(struct host *h, struct host_req *r)
{
	char *err = NULL;
	virDomainPtr dom = NULL;
	if ((err = hostenv_guest_problem(h->uri)) != NULL || domxml_prepare(r->plan, &err) < 0)
		goto fail;
	if (h->embed_root && give_run_dir(h, r->plan, &err) < 0)
		goto fail;
	dom = virDomainDefineXML(h->conn, r->plan->xml);
	if (dom == NULL) {
		err = lv_error("define");
		/* a stopped definition of this name left by an earlier record of the VM (another VM UID: the record
		 * was lost, unreadable or replaced) gives way to the record's; a running one never does */
		virDomainPtr old = virDomainLookupByName(h->conn, r->dom);
		if (old && virDomainIsActive(old) == 0 && virDomainUndefineFlags(old, VIR_DOMAIN_UNDEFINE_NVRAM) == 0) {
			log_info("engine: %s: replaced a stopped definition of another VM UID", r->dom);
			dom = virDomainDefineXML(h->conn, r->plan->xml);
			if (dom) {
				free(err);
				err = NULL;
			}
		}
		if (old)
			virDomainFree(old);
		if (dom == NULL)
			goto fail;
	}
	/* paused first, so the console is attached before the guest prints its first byte */
	if (virDomainCreateWithFlags(dom, VIR_DOMAIN_START_PAUSED) < 0) {
		err = lv_error("start");
		goto fail;
	}
	if (hostfwd_apply(r->plan, hmp, dom, &err) < 0) {
		virDomainDestroy(dom);
		goto fail;
	}
	char *cerr = NULL;
	if (console_attach(h, dom, r->dom, &cerr) < 0) {
		log_warn("engine: %s: %s", r->dom, cerr); /* a VM without a serial console still runs */
		free(cerr);
	}
	if (virDomainResume(dom) < 0) {
		err = lv_error("resume");
		virDomainDestroy(dom);
		goto fail;
	}
	struct host_msg *m = done_msg(h, r, 0, NULL, dom);
	if (r->plan->nfwds) { /* the ports in use (one may have moved) */
		m->ports = xcalloc((size_t)r->plan->nfwds, sizeof *m->ports);
		for (int i = 0; i < r->plan->nfwds; i++)
			m->ports[i] = r->plan->fwds[i].host_port;
		m->nports = r->plan->nfwds;
	}
	post(m);
	virDomainFree(dom);
	return;
fail:
	done(h, r, -1, err, dom);
	if (dom)
		virDomainFree(dom);
}

/* The worker's file requests (records, run directories): they need no connection, so they also run
 * without a worker (host_request on a closed host). */
static int file_op(const struct host_req *r, char **err)
{
	switch (r->type) {
	case RQ_WRITE: {
		char why[UTIL_WHY_LEN];
		if (util_write_file_why(r->path, r->data, r->len, 0600, why) == 0)
			return 0;
		char *dir = xstrdup(r->path);
		char *s = strrchr(dir, '/');
		if (s)
			*s = '\0';
		util_mkdir_p(dir, 0700);
		free(dir);
		if (util_write_file_why(r->path, r->data, r->len, 0600, why) == 0)
			return 0;
		*err = xasprintf("%s: %s", r->path, why);
		log_error("engine: cannot write %s", *err);
		return -1;
	}
	case RQ_UNLINK:
		if (unlink(r->path) < 0 && errno != ENOENT) {
			*err = xasprintf("%s: %s", r->path, strerror(errno));
			return -1;
		}
		return 0;
	case RQ_RMTREE: {
		char *argv[] = { "rm", "-rf", "--", r->path, NULL };
		pid_t pid = fork();
		if (pid == 0) {
			execvp(argv[0], argv);
			_exit(127);
		}
		int st;
		if (pid > 0)
			waitpid(pid, &st, 0);
		return 0;
	}
	default:
		return -1;
	}
}

static void handle(struct host *h, struct host_req *r)
{
	virDomainPtr dom = NULL;
	int rc = 0;
	char *err = NULL;
	if (r->dom && r->type != RQ_START) {
		dom = virDomainLookupByName(h->conn, r->dom);
		if (dom == NULL && r->type != RQ_UNDEFINE && r->type != RQ_INSPECT) {
			done(h, r, -1, lv_error(r->dom), NULL);
			return;
		}
	}
	switch (r->type) {
	case RQ_SYNC:
		do_sync(h, false);
		return;
	case RQ_START:
		do_start(h, r);
		return;
	case RQ_SHUTDOWN:
		rc = virDomainShutdown(dom);
		break;
	case RQ_DESTROY:
		rc = virDomainDestroy(dom);
		break;
	case RQ_SUSPEND:
		rc = virDomainSuspend(dom);
		break;
	case RQ_REBOOT:
		rc = virDomainReboot(dom, 0);
		break;
	case RQ_RESUME:
		rc = virDomainResume(dom);
		break;
	case RQ_UNDEFINE:
		if (dom)
			rc = virDomainUndefineFlags(dom, VIR_DOMAIN_UNDEFINE_NVRAM);
		break;
	case RQ_INSPECT:
		break;
	case RQ_WRITE:
	case RQ_UNLINK:
	case RQ_RMTREE:
		rc = file_op(r, &err);
		break;
	case RQ_CONSOLE:
		rc = console_attach(h, dom, r->dom, &err);
		log_debug("engine: console %s attached: %d", r->dom, rc);
		break;
	case RQ_CONSOLE_SEND:
		console_send(h, r->dom, r->data, r->len);
		break;
	case RQ_PORTFWD: {
		/* the rule (free port chosen by the engine), then the connection through it: QEMU has accepted it
		 * before the rule goes (RQ_PORTFWD_DROP when the stream ends) */
		struct host_msg *m = msg_new(h, HM_VNC);
		m->req_id = r->id;
		m->fd = -1;
		char *res = NULL;
		if (dom == NULL || virDomainQemuMonitorCommand(dom, r->data, &res, VIR_DOMAIN_QEMU_MONITOR_COMMAND_HMP) < 0) {
			m->text = lv_error("port forwarding");
		} else if (res && strspn(res, " \r\n") != strlen(res)) {
			char *e = util_escape_display(res);
			m->text = xasprintf("port forwarding: %s", e);
			free(e);
		} else {
			struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
						 .sin_port = htons((uint16_t)r->len) };
			m->fd = socket(AF_INET, (r->udp ? SOCK_DGRAM : SOCK_STREAM) | SOCK_CLOEXEC, 0);
			if (m->fd < 0 || connect(m->fd, (struct sockaddr *)&a, sizeof a) < 0) {
				m->text = xasprintf("port forwarding: connect 127.0.0.1:%zu: %s", r->len, strerror(errno));
				if (m->fd >= 0)
					close(m->fd);
				m->fd = -1;
			}
		}
		free(res);
		post(m);
		if (dom)
			virDomainFree(dom);
		return;
	}
	case RQ_PORTFWD_DROP: {
		char *res = NULL;
		if (dom && virDomainQemuMonitorCommand(dom, r->data, &res, VIR_DOMAIN_QEMU_MONITOR_COMMAND_HMP) < 0)
			log_debug("engine: %s: %s", r->data, virGetLastErrorMessage());
		free(res);
		break;
	}
	case RQ_AGENT: {
		/* each command in turn, its answer bounded; a guest that does not answer costs GAGENT_TIMEOUT_S each,
		 * so the first failure ends the request (the agent is gone or wedged) */
		struct host_msg *m = msg_new(h, HM_AGENT_REPLY);
		m->req_id = r->id;
		struct buf out;
		buf_init(&out);
		bool gone = false;
		for (size_t off = 0; off < r->len; off += strlen(r->data + off) + 1) {
			char *res = gone ? NULL : virDomainQemuAgentCommand(dom, r->data + off, GAGENT_TIMEOUT_S, 0);
			if (res == NULL && !gone) {
				virErrorPtr e = virGetLastError();
				gone = off == 0 || (e && (e->code == VIR_ERR_AGENT_UNRESPONSIVE ||
							  e->code == VIR_ERR_AGENT_UNSYNCED));
				if (off == 0)
					m->text = lv_error("guest agent");
			}
			if (res && strlen(res) <= GAGENT_ANSWER_MAX)
				buf_add(&out, res, strlen(res));
			buf_add(&out, "", 1);
			free(res);
		}
		m->len = out.len;
		if (out.len) {
			m->data = xmalloc(out.len);
			memcpy(m->data, out.data, out.len);
		}
		buf_free(&out);
		post(m);
		virDomainFree(dom);
		return;
	}
	case RQ_VNC: {
		struct host_msg *m = msg_new(h, HM_VNC);
		m->req_id = r->id;
		m->fd = virDomainOpenGraphicsFD(dom, 0, VIR_DOMAIN_OPEN_GRAPHICS_SKIPAUTH);
		if (m->fd < 0)
			m->text = lv_error("open display");
		post(m);
		virDomainFree(dom);
		return;
	}
	}
	if (rc < 0 && err == NULL)
		err = lv_error(r->dom ? r->dom : "request");
	done(h, r, rc < 0 ? -1 : 0, err, r->type == RQ_INSPECT || r->type == RQ_RESUME || r->type == RQ_SUSPEND ? dom : NULL);
	if (dom)
		virDomainFree(dom);
}

static void disconnect(struct host *h)
{
	for (struct console *c = h->consoles; c; c = c->next)
		if (!atomic_load(&c->dead)) {
			virStreamEventRemoveCallback(c->st);
			atomic_store(&c->dead, true);
		}
	/* not reaped here: the event thread may still be inside console_event for one of them (removing the callback
	 * does not wait for it; ASan saw the use after free at exit); the next console_find reaps them */
	if (h->conn) {
		if (h->cb_life >= 0)
			virConnectDomainEventDeregisterAny(h->conn, h->cb_life);
		if (h->cb_agent >= 0)
			virConnectDomainEventDeregisterAny(h->conn, h->cb_agent);
		virConnectUnregisterCloseCallback(h->conn, on_close);
		virConnectClose(h->conn);
		h->conn = NULL;
	}
}

static bool connect_host(struct host *h)
{
	/* before the root is touched (another process may hold it) and before libvirt is asked (a QEMU driver that
	 * failed to start stays failed for the whole process) */
	char *problem = hostenv_problem(h->uri);
	if (problem == NULL && h->embed_root)
		embed_prepare(h->embed_root, h->qemu_user, &problem);
	if (problem) {
		struct host_msg *m = msg_new(h, HM_DOWN);
		m->text = problem;
		post(m);
		return false;
	}
	/* libvirt's embedded driver starts once per process: before it does, what a killed kvcon left behind */
	static atomic_bool embed_started;
	if (h->embed_root && !atomic_exchange(&embed_started, true))
		embed_reap_probes(h->embed_root);
	uint64_t t0 = util_now_ms();
	h->conn = virConnectOpen(h->uri);
	if (h->conn == NULL) {
		struct host_msg *m = msg_new(h, HM_DOWN);
		m->text = lv_error(h->uri);
		/* libvirt starts the embedded QEMU driver once per process: after a failed start every open says only
		 * "qemu state driver is not active", so the first reason is kept */
		const char *e = virGetLastErrorMessage();
		if (h->embed_root && h->first_error && e && strstr(e, "state driver is not active")) {
			free(m->text);
			m->text = xasprintf("%s (libvirt's QEMU driver failed to start in this kvcon process: restart kvcon "
					    "once that is fixed)",
					    h->first_error);
		} else if (h->embed_root && h->first_error == NULL)
			h->first_error = xstrdup(m->text);
		post(m);
		return false;
	}
	log_info("engine: connected to %s in %llu ms", h->uri, (unsigned long long)(util_now_ms() - t0));
	atomic_store(&h->broken, false);
	h->cb_life = virConnectDomainEventRegisterAny(h->conn, NULL, VIR_DOMAIN_EVENT_ID_LIFECYCLE,
						      VIR_DOMAIN_EVENT_CALLBACK(on_lifecycle), h, NULL);
	h->cb_agent = virConnectDomainEventRegisterAny(h->conn, NULL, VIR_DOMAIN_EVENT_ID_AGENT_LIFECYCLE,
						       VIR_DOMAIN_EVENT_CALLBACK(on_agent), h, NULL);
	if (virConnectRegisterCloseCallback(h->conn, on_close, h, NULL) < 0)
		log_debug("engine: %s: no close callback (embedded driver)", h->uri);
	if (h->embed_root == NULL)
		virConnectSetKeepAlive(h->conn, 5, 3);

	struct host_msg *m = msg_new(h, HM_UP);
	char *hn = virConnectGetHostname(h->conn);
	m->hostname = hn ? hn : xstrdup("localhost");
	virNodeInfo ni;
	if (virNodeGetInfo(h->conn, &ni) == 0) {
		m->mem_kib = ni.memory;
		m->cpus = (int)ni.cpus;
	}
	unsigned long lv = 0, hv = 0;
	virConnectGetLibVersion(h->conn, &lv);
	virConnectGetVersion(h->conn, &hv);
	m->version = xasprintf("libvirt %lu.%lu.%lu, QEMU %lu.%lu.%lu", lv / 1000000, lv / 1000 % 1000, lv % 1000,
			       hv / 1000000, hv / 1000 % 1000, hv % 1000);
	/* KVM when it works, TCG otherwise; $KVCON_ENGINE_ACCEL=kvm|tcg forces either */
	const char *force = h->accel;
	bool forced = force && (strcmp(force, "tcg") == 0 || strcmp(force, "kvm") == 0);
	char *caps = forced ? NULL : virConnectGetDomainCapabilities(h->conn, NULL, NULL, NULL, "kvm", 0);
	bool kvm_offered = caps != NULL;
	free(caps);
	bool local = h->embed_root || strstr(h->uri, "://") == NULL || strstr(h->uri, ":///") != NULL;
	if (force && strcmp(force, "tcg") == 0) {
		m->accel = xstrdup("qemu");
		m->note = xstrdup("TCG forced by the engine.accel setting ($KVCON_ENGINE_ACCEL or the config file)");
	} else if (force && strcmp(force, "kvm") == 0) {
		m->accel = xstrdup("kvm");
	} else if (!kvm_offered) {
		m->accel = xstrdup("qemu");
		m->note = xstrdup("KVM not offered by libvirt: guests run under TCG emulation (slow)");
	} else if (local) {
		char *why = NULL;
		char *state = util_state_dir();
		char *cache = util_path_join(state, "engine-kvm-probe");
		util_mkdir_p(state, 0700);
		bool ok = host_kvm_works(cache, &why);
		free(cache);
		free(state);
		m->accel = xstrdup(ok ? "kvm" : "qemu");
		if (!ok)
			m->note = xasprintf("KVM unusable here, guests run under TCG emulation: %s", why);
		free(why);
	} else
		m->accel = xstrdup("kvm");
	post(m);
	do_sync(h, true);
	return true;
}

static void *worker_main(void *arg)
{
	struct host *h = arg;
	uint64_t backoff = 500;
	for (;;) {
		pthread_mutex_lock(&h->mu);
		bool quit = h->quit;
		pthread_mutex_unlock(&h->mu);
		if (h->conn == NULL && !quit) {
			if (!connect_host(h)) {
				/* wait, but let quit through */
				uint64_t until = util_now_ms() + backoff;
				backoff = backoff * 2 > 30000 ? 30000 : backoff * 2;
				while (util_now_ms() < until) {
					pthread_mutex_lock(&h->mu);
					quit = h->quit;
					pthread_mutex_unlock(&h->mu);
					if (quit)
						break;
					usleep(50000);
				}
				/* requests that need no connection (file writes) still run */
				struct host_req *r;
				while ((r = dequeue(h, 0))) {
					if (r->type == RQ_WRITE || r->type == RQ_UNLINK || r->type == RQ_RMTREE)
						handle(h, r);
					else
						done(h, r, -1, xasprintf("%s: not connected", h->uri), NULL);
					req_free(r);
				}
				continue;
			}
			backoff = 500;
		}
		struct host_req *r = dequeue(h, quit ? 0 : 1000);
		if (r) {
			handle(h, r);
			req_free(r);
			continue;
		}
		if (quit)
			break;
		if (atomic_load(&h->broken) || (h->conn && virConnectIsAlive(h->conn) == 0)) {
			struct host_msg *m = msg_new(h, HM_DOWN);
			m->text = xasprintf("%s: connection closed; reconnecting", h->uri);
			post(m);
			disconnect(h);
		}
	}
	disconnect(h);
	return NULL;
}

struct host *host_new(const char *uri, const char *accel, const char *qemu_user, host_msg_cb cb, void *arg)
{
	pthread_once(&event_once, event_start);
	struct host *h = xcalloc(1, sizeof *h);
	h->uri = xstrdup(uri);
	h->accel = xstrdup0(accel);
	h->embed_root = embed_uri_root(uri);
	if (h->embed_root)
		pthread_once(&reaper_once, reaper_start); /* QEMU's daemonized processes stay ours, reaped at once */
	h->qemu_user = xstrdup0(qemu_user);
	h->cb = cb;
	h->arg = arg;
	h->cb_life = h->cb_agent = -1;
	pthread_mutex_init(&h->mu, NULL);
	pthread_cond_init(&h->cv, NULL);
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	pthread_create(&h->thread, NULL, worker_main, h);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return h;
}

void host_free(struct host *h)
{
	if (h == NULL)
		return;
	pthread_mutex_lock(&h->mu);
	h->quit = true;
	pthread_cond_signal(&h->cv);
	pthread_mutex_unlock(&h->mu);
	pthread_join(h->thread, NULL);
	struct host_req *r;
	while ((r = dequeue(h, 0)))
		req_free(r);
	free(h->uri);
	free(h->accel);
	free(h->embed_root);
	free(h->qemu_user);
	free(h->first_error);
	/* messages already posted still point at h: it is kept (one per host per process) */
}

int host_request(struct host *h, struct host_req *r)
{
	if (h == NULL) {
		/* the host is closed (kvcon is exiting): its file writes still happen, the rest is dropped */
		char *err = NULL;
		if (r->type == RQ_WRITE || r->type == RQ_UNLINK || r->type == RQ_RMTREE)
			file_op(r, &err);
		else
			log_debug("engine: request %d after the host closed: dropped", (int)r->type);
		free(err);
		req_free(r);
		return 0;
	}
	r->id = atomic_fetch_add(&h->next_id, 1) + 1;
	int id = r->id;
	struct qitem *q = xcalloc(1, sizeof *q);
	q->r = r;
	pthread_mutex_lock(&h->mu);
	if (h->tail)
		h->tail->next = q;
	else
		h->head = q;
	h->tail = q;
	pthread_cond_signal(&h->cv);
	pthread_mutex_unlock(&h->mu);
	return id;
}

int host_simple(struct host *h, enum host_req_type type, const char *dom)
{
	struct host_req *r = xcalloc(1, sizeof *r);
	r->type = type;
	r->dom = xstrdup0(dom);
	return host_request(h, r);
}

