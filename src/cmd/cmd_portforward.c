/* kvcon port-forward (see cmd_portforward.h): listeners on the loop, one pair of streams per connection (the
 * accepted socket as an fdstream, the guest port as the provider's stream), bytes pumped both ways with a bound
 * on what may wait in either direction. */
#include "cmd/cmd_portforward.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cmd/pfspec.h"
#include "cmd/session.h"
#include "core/fdstream.h"
#include "core/kargs.h"
#include "core/log.h"
#include "core/loop.h"
#include "core/opts.h"
#include "core/stream.h"
#include "core/xmalloc.h"
#include "kube/kube.h"
#include "model/registry.h"
#include "model/store.h"

#define PF_MAX_PORTS 16
#define PF_MAX_ADDRS 4
#define PF_MAX_CONNS 64     /* connections open at once per command; more are accepted and closed */
#define PF_HIGH (1u << 20)  /* a direction stops reading its source beyond this many bytes queued */
#define PF_DRAIN_MS 20

struct pf;

struct pf_listener {
	struct pf *pf;
	struct pf_port port;
	int fd;
	struct loop_fd *h;
};

struct pf_conn {
	struct pf *pf;
	int remote_port;
	struct stream *local, *remote;
	struct loop_timer *drain, *linger;
	bool close_on_open; /* the local side ended while the guest's was connecting */
	bool stdin_done;    /* --stdio: stdin ended; the guest's bytes still go to stdout for a while */
	struct pf_conn *next;
};

struct pf {
	struct source *src;
	enum kind_id kind;
	const char *ns, *name;
	struct pf_listener ls[PF_MAX_PORTS * PF_MAX_ADDRS];
	size_t nls;
	struct pf_conn *conns;
	size_t nconns;
	bool stdio;
	int stdio_rc;
};

static const struct stream_cbs conn_cbs;

static void conn_free(struct pf_conn *c)
{
	struct pf *pf = c->pf;
	for (struct pf_conn **p = &pf->conns; *p; p = &(*p)->next)
		if (*p == c) {
			*p = c->next;
			break;
		}
	pf->nconns--;
	loop_timer_cancel(c->drain);
	loop_timer_cancel(c->linger);
	stream_free(c->local);
	stream_free(c->remote);
	free(c);
	if (pf->stdio)
		loop_quit(pf->stdio_rc);
}

/* a paused reader resumes once the other side's queue has drained */
static void conn_drain(void *arg)
{
	struct pf_conn *c = arg;
	c->drain = NULL;
	bool busy = false;
	if (stream_pending(c->remote) < PF_HIGH / 4)
		stream_pause(c->local, false);
	else
		busy = true;
	if (stream_pending(c->local) < PF_HIGH / 4)
		stream_pause(c->remote, false);
	else
		busy = true;
	if (busy)
		c->drain = loop_timer_add(PF_DRAIN_MS, conn_drain, c);
}

/* The guest's stream is closed once it is open: closing one that is still connecting would leave its connect
 * thread (kube/ws.c) running while the command ends. */
static void close_remote(struct pf_conn *c)
{
	if (stream_state(c->remote) == STREAM_CONNECTING)
		c->close_on_open = true;
	else
		stream_close(c->remote);
}

static void conn_linger(void *arg)
{
	struct pf_conn *c = arg;
	c->linger = NULL;
	close_remote(c);
}

/* --stdio after stdin ended: the guest's answer still goes to stdout (blocking: a command's own output) */
static void write_stdout(const uint8_t *data, size_t len)
{
	while (len > 0) {
		ssize_t n = write(STDOUT_FILENO, data, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		data += n;
		len -= (size_t)n;
	}
}

static void conn_data(struct stream *s, const uint8_t *data, size_t len, void *arg)
{
	struct pf_conn *c = arg;
	struct stream *to = s == c->local ? c->remote : c->local;
	if (c->stdin_done && s == c->remote) {
		write_stdout(data, len);
		return;
	}
	if (stream_state(to) == STREAM_CLOSED)
		return;
	if (stream_write(to, data, len) < 0) {
		stream_close(s);
		return;
	}
	if (stream_pending(to) > PF_HIGH) {
		stream_pause(s, true);
		if (c->drain == NULL)
			c->drain = loop_timer_add(PF_DRAIN_MS, conn_drain, c);
	}
}

static void conn_state(struct stream *s, enum stream_state st, void *arg)
{
	struct pf_conn *c = arg;
	if (st == STREAM_OPEN && s == c->remote && c->close_on_open)
		stream_close(s);
	if (st != STREAM_CLOSED)
		return;
	struct stream *other = s == c->local ? c->remote : c->local;
	if (s == c->remote) {
		enum stream_end e = stream_end(s);
		if (e == STREAM_END_REFUSED || e == STREAM_END_ERROR) {
			/* the server's words, escaped by log_eprintf */
			log_eprintf("error: guest port %d: %s\n", c->remote_port, stream_reason(s));
			c->pf->stdio_rc = EXIT_API;
		} else if (stream_status(s) > 1001) {
			log_eprintf("error: guest port %d: %s\n", c->remote_port, stream_reason(s));
			c->pf->stdio_rc = EXIT_API;
		}
	}
	if (stream_state(other) == STREAM_CLOSED) {
		conn_free(c);
		return;
	}
	if (s == c->local) {
		if (c->pf->stdio && stream_end(s) == STREAM_END_REMOTE) {
			/* stdin ended, stdout is still there: what the guest answers within a second still comes */
			c->stdin_done = true;
			c->linger = loop_timer_add(1000, conn_linger, c);
		} else {
			close_remote(c);
		}
		return;
	}
	/* the local socket gets what is queued for it, then closes; nothing of c is touched after this */
	stream_close(other);
}

static const struct stream_cbs conn_cbs = { conn_data, conn_state };

/* A connection: local (taken) to the guest port. */
static void conn_start(struct pf *pf, struct stream *local, const struct pf_port *port)
{
	char *err = NULL;
	struct stream *remote =
		pf->src->ops->open_portforward(pf->src, (int)pf->kind, pf->ns, pf->name, port->remote, port->udp, &err);
	if (remote == NULL) {
		log_eprintf("error: guest port %d: %s\n", port->remote, err ? err : "cannot open");
		free(err);
		stream_free(local);
		if (pf->stdio)
			loop_quit(EXIT_API);
		return;
	}
	struct pf_conn *c = xcalloc(1, sizeof *c);
	c->pf = pf;
	c->remote_port = port->remote;
	c->local = local;
	c->remote = remote;
	c->next = pf->conns;
	pf->conns = c;
	pf->nconns++;
	stream_set_callbacks(local, &conn_cbs, c);
	stream_set_callbacks(remote, &conn_cbs, c);
	/* nothing is read from the client before the guest's side is open (its bytes wait in the kernel) */
	log_info("port-forward: connection to %s/%s port %d", pf->ns, pf->name, port->remote);
}

static void on_accept(int fd, short revents, void *arg)
{
	(void)revents;
	struct pf_listener *l = arg;
	for (int i = 0; i < 16; i++) {
		int cfd = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (cfd < 0)
			return;
		if (l->pf->nconns >= PF_MAX_CONNS) {
			log_warn("port-forward: %d connections open, one refused", PF_MAX_CONNS);
			close(cfd);
			continue;
		}
		char name[64];
		snprintf(name, sizeof name, "port-forward local %d", l->port.local);
		conn_start(l->pf, fdstream_new(cfd, cfd, name), &l->port);
	}
}

/* Listens on addr:port (port 0: any), filling l; prints kubectl's "Forwarding from" line. 0 or -1 (said why). */
static int listen_on(struct pf_listener *l, const char *addr)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE };
	struct addrinfo *res = NULL;
	char port[8];
	snprintf(port, sizeof port, "%d", l->port.local);
	int gai = getaddrinfo(addr, port, &hints, &res);
	if (gai != 0) {
		log_eprintf("error: --address %s: %s\n", addr, gai_strerror(gai));
		return -1;
	}
	int fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	int one = 1;
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
	    bind(fd, res->ai_addr, res->ai_addrlen) < 0 || listen(fd, 16) < 0) {
		log_eprintf("error: unable to listen on %s port %d: %s\n", addr, l->port.local, strerror(errno));
		if (fd >= 0)
			close(fd);
		freeaddrinfo(res);
		return -1;
	}
	freeaddrinfo(res);
	struct sockaddr_storage sa;
	socklen_t sl = sizeof sa;
	int bound = l->port.local;
	if (getsockname(fd, (struct sockaddr *)&sa, &sl) == 0)
		bound = ntohs(sa.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&sa)->sin6_port
						       : ((struct sockaddr_in *)&sa)->sin_port);
	l->fd = fd;
	l->h = loop_fd_add(fd, POLLIN, on_accept, l);
	printf("Forwarding from %s:%d -> %d\n", addr, bound, l->port.remote);
	fflush(stdout);
	return 0;
}

enum { OPT_ADDRESS, OPT_STDIO, OPT_HELP };

static const struct karg_opt opts[] = {
	{ 0, "address", KARG_VALUE, OPT_ADDRESS },
	{ 0, "stdio", KARG_FLAG, OPT_STDIO },
	{ 'h', "help", KARG_FLAG, OPT_HELP },
	{ 0 },
};

int cmd_portforward(int argc, char **argv)
{
	struct karg k;
	karg_init(&k, argc, argv, opts);
	const char *target = NULL, *address = "127.0.0.1";
	const char *ports[PF_MAX_PORTS];
	size_t nports = 0;
	bool stdio = false;
	int id;
	while ((id = karg_next(&k)) != KARG_END) {
		switch (id) {
		case KARG_ERR:
			log_eprintf("error: %s\n", k.err);
			return EXIT_USAGE;
		case OPT_ADDRESS:
			address = k.val;
			break;
		case OPT_STDIO:
			stdio = karg_bool(&k);
			break;
		case OPT_HELP:
			printf("usage: kvcon port-forward %s\n", registry_guest_verb(GV_PORT_FORWARD)->synopsis);
			return EXIT_OK;
		case KARG_POS:
			if (target == NULL) {
				target = k.val;
			} else if (nports < PF_MAX_PORTS) {
				ports[nports++] = k.val;
			} else {
				log_eprintf("error: at most %d ports\n", PF_MAX_PORTS);
				return EXIT_USAGE;
			}
			break;
		}
	}
	if (target == NULL || nports == 0) {
		log_eprintf("error: usage: kvcon port-forward %s\n", registry_guest_verb(GV_PORT_FORWARD)->synopsis);
		return EXIT_USAGE;
	}
	char err[160];
	struct pf_target t;
	if (pf_target_parse(target, false, &t, err, sizeof err) < 0) {
		log_eprintf("error: %s\n", err);
		return EXIT_USAGE;
	}
	struct pf_port pp[PF_MAX_PORTS];
	for (size_t i = 0; i < nports; i++) {
		if (pf_port_parse(ports[i], &pp[i], err, sizeof err) < 0) {
			log_eprintf("error: %s\n", err);
			return EXIT_USAGE;
		}
		if (pp[i].udp) {
			log_eprintf("error: udp/%d: only TCP is forwarded yet\n", pp[i].remote);
			return EXIT_USAGE;
		}
	}
	if (stdio && nports != 1) {
		log_eprintf("error: --stdio forwards exactly one port\n");
		return EXIT_USAGE;
	}
	char *addrs[PF_MAX_ADDRS];
	size_t naddrs = 0;
	for (const char *a = address; *a && naddrs < PF_MAX_ADDRS;) {
		size_t n = strcspn(a, ",");
		if (n)
			addrs[naddrs++] = xstrndup(a, n);
		a += n + (a[n] == ',');
	}

	signal(SIGPIPE, SIG_IGN);
	session_cli_start();
	struct store *st = store_new();
	struct kvcon_opts *g = opts_global();
	const char *ns = t.ns[0] ? t.ns : g->ns;
	if (ns) {
		/* watch only that namespace: whether the source has the VMI is all that is needed */
		char *keep = xstrdup(ns);
		free(g->ns);
		g->ns = keep;
		g->all_ns = false;
		ns = g->ns;
	}
	char *rerr = NULL;
	int rc = EXIT_OK;
	struct pf pf = { .kind = t.kind, .name = t.name, .stdio = stdio };
	pf.src = session_resolve(st, ns, t.name, KUBE_KIND_BIT(OBJ_VMI) | KUBE_KIND_BIT(OBJ_VM), false, &rerr);
	if (pf.src == NULL) {
		log_eprintf("error: %s\n", rerr ? rerr : "no source");
		rc = EXIT_API;
		goto out;
	}
	if (pf.src->ops == NULL || pf.src->ops->open_portforward == NULL) {
		log_eprintf("error: %s does not forward ports\n", pf.src->name);
		rc = EXIT_API;
		goto out;
	}
	pf.ns = ns ? ns : pf.src->type == SOURCE_KUBE && pf.src->ns_scope ? pf.src->ns_scope : "default";
	if (stdio) {
		pf.stdio_rc = EXIT_OK;
		conn_start(&pf, fdstream_new(STDIN_FILENO, STDOUT_FILENO, "port-forward stdio"), &pp[0]);
	} else {
		for (size_t i = 0; i < nports; i++)
			for (size_t a = 0; a < naddrs; a++) {
				struct pf_listener *l = &pf.ls[pf.nls];
				*l = (struct pf_listener){ .pf = &pf, .port = pp[i], .fd = -1 };
				if (listen_on(l, addrs[a]) < 0) {
					rc = EXIT_API;
					goto out;
				}
				pf.nls++;
			}
	}
	rc = loop_run();
out:
	for (size_t i = 0; i < pf.nls; i++) {
		loop_fd_remove(pf.ls[i].h);
		close(pf.ls[i].fd);
	}
	pf.stdio = false;
	while (pf.conns)
		conn_free(pf.conns);
	for (size_t a = 0; a < naddrs; a++)
		free(addrs[a]);
	free(rerr);
	session_sources_close();
	source_free_all();
	store_free(st);
	return rc;
}
