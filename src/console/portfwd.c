/* Port forwards (see portfwd.h): listeners on the loop, one pair of streams per connection (the accepted socket
 * or stdin/stdout as an fdstream, the guest port as the provider's stream). */
#include "console/portfwd.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/fdstream.h"
#include "core/log.h"
#include "core/loop.h"
#include "core/stream.h"
#include "core/xmalloc.h"

#define PF_MAX_LISTEN 64
#define PF_DRAIN_MS 20
#define PF_LINGER_MS 1000
#define PF_UDP_IDLE_MS 60000 /* a UDP peer's stream ends after this long without a datagram either way */

struct listener {
	struct portfwd *f;
	struct pf_port port;
	int fd;
	struct loop_fd *h;
};

struct conn {
	struct portfwd *f;
	int guest_port;
	struct stream *local, *remote;
	struct loop_timer *drain, *linger;
	bool close_on_open; /* the local side ended while the guest's was connecting */
	bool stdin_done;    /* stdio: stdin ended; the guest's bytes still go to stdout for a while */
	bool failed;
	struct conn *next;
};

/* A UDP forward's peer: every local address that sends datagrams gets a stream of its own, a message each */
struct upeer {
	struct portfwd *f;
	struct listener *l;
	struct sockaddr_storage addr;
	socklen_t alen;
	struct stream *remote;
	struct loop_timer *idle;
	struct upeer *next;
};

struct portfwd {
	struct source *src;
	int kind;
	char *ns, *name;
	portfwd_report_cb report;
	void *report_arg;
	struct listener ls[PF_MAX_LISTEN];
	size_t nls;
	struct conn *conns;
	struct upeer *upeers;
	struct portfwd_stats st;
	bool stdio;
	void (*stdio_done)(void *arg, int rc);
	void *stdio_arg;
	int stdio_rc;
};

static void conn_free(struct conn *c)
{
	struct portfwd *f = c->f;
	for (struct conn **p = &f->conns; *p; p = &(*p)->next)
		if (*p == c) {
			*p = c->next;
			break;
		}
	f->st.open--;
	loop_timer_cancel(c->drain);
	loop_timer_cancel(c->linger);
	stream_free(c->local);
	stream_free(c->remote);
	free(c);
	if (f->stdio && f->stdio_done) {
		void (*done)(void *, int) = f->stdio_done;
		f->stdio_done = NULL;
		done(f->stdio_arg, f->stdio_rc);
	}
}

/* A guest stream is closed only once open: closing one still connecting would leave its connect thread
 * (kube/ws.c) running while a command ends. */
static void close_remote(struct conn *c)
{
	if (stream_state(c->remote) == STREAM_CONNECTING)
		c->close_on_open = true;
	else
		stream_close(c->remote);
}

static void conn_linger(void *arg)
{
	struct conn *c = arg;
	c->linger = NULL;
	close_remote(c);
}

/* a paused reader resumes once the other side's queue has drained */
static void conn_drain(void *arg)
{
	struct conn *c = arg;
	c->drain = NULL;
	bool busy = false;
	if (stream_pending(c->remote) < PORTFWD_HIGH / 4)
		stream_pause(c->local, false);
	else
		busy = true;
	if (stream_pending(c->local) < PORTFWD_HIGH / 4)
		stream_pause(c->remote, false);
	else
		busy = true;
	if (busy)
		c->drain = loop_timer_add(PF_DRAIN_MS, conn_drain, c);
}

/* stdio after stdin ended: the guest's answer goes to stdout (blocking: a command's own output) */
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
	struct conn *c = arg;
	struct stream *to = s == c->local ? c->remote : c->local;
	if (s == c->remote)
		c->f->st.bytes_in += len;
	else
		c->f->st.bytes_out += len;
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
	if (stream_pending(to) > PORTFWD_HIGH) {
		stream_pause(s, true);
		if (c->drain == NULL)
			c->drain = loop_timer_add(PF_DRAIN_MS, conn_drain, c);
	}
}

static void conn_state(struct stream *s, enum stream_state st, void *arg)
{
	struct conn *c = arg;
	if (st == STREAM_OPEN && s == c->remote && c->close_on_open)
		stream_close(s);
	if (st != STREAM_CLOSED)
		return;
	struct stream *other = s == c->local ? c->remote : c->local;
	if (s == c->remote && !c->failed) {
		enum stream_end e = stream_end(s);
		/* a close code past 1001 (going away) is the server's error: virt-handler's dial, for one */
		if (e == STREAM_END_REFUSED || e == STREAM_END_ERROR || stream_status(s) > 1001) {
			c->failed = true;
			c->f->st.failed++;
			c->f->stdio_rc = 1;
			if (c->f->report)
				c->f->report(c->f->report_arg, c->guest_port, stream_reason(s));
		}
	}
	if (stream_state(other) == STREAM_CLOSED) {
		conn_free(c);
		return;
	}
	if (s == c->local) {
		if (c->f->stdio && stream_end(s) == STREAM_END_REMOTE) {
			/* stdin ended, stdout is still there: what the guest answers soon still comes */
			c->stdin_done = true;
			c->linger = loop_timer_add(PF_LINGER_MS, conn_linger, c);
		} else {
			close_remote(c);
		}
		return;
	}
	/* the local side gets what is queued for it, then closes; nothing of c is touched after this */
	stream_close(other);
}

static const struct stream_cbs conn_cbs = { conn_data, conn_state };

/* A connection: local (taken) to the guest port. */
static void conn_start(struct portfwd *f, struct stream *local, const struct pf_port *port)
{
	char *err = NULL;
	struct stream *remote =
		f->src->ops->open_portforward(f->src, f->kind, f->ns, f->name, port->remote, port->udp, &err);
	f->st.total++;
	if (remote == NULL) {
		f->st.failed++;
		f->stdio_rc = 1;
		if (f->report)
			f->report(f->report_arg, port->remote, err ? err : "cannot open");
		free(err);
		stream_free(local);
		if (f->stdio && f->stdio_done) {
			void (*done)(void *, int) = f->stdio_done;
			f->stdio_done = NULL;
			done(f->stdio_arg, 1);
		}
		return;
	}
	struct conn *c = xcalloc(1, sizeof *c);
	c->f = f;
	c->guest_port = port->remote;
	c->local = local;
	c->remote = remote;
	c->next = f->conns;
	f->conns = c;
	f->st.open++;
	stream_set_callbacks(local, &conn_cbs, c);
	stream_set_callbacks(remote, &conn_cbs, c);
	log_info("port-forward: connection to %s/%s port %d", f->ns, f->name, port->remote);
}

/* ---- UDP: datagrams from a local peer to its stream, messages from the stream back to that peer ---- */

static void upeer_free(struct upeer *u)
{
	struct portfwd *f = u->f;
	for (struct upeer **p = &f->upeers; *p; p = &(*p)->next)
		if (*p == u) {
			*p = u->next;
			break;
		}
	f->st.open--;
	loop_timer_cancel(u->idle);
	stream_free(u->remote);
	free(u);
}

static void upeer_idle(void *arg)
{
	struct upeer *u = arg;
	u->idle = NULL;
	if (stream_state(u->remote) == STREAM_CONNECTING) /* closed once open (close_remote's reason) */
		u->idle = loop_timer_add(PF_UDP_IDLE_MS, upeer_idle, u);
	else
		stream_close(u->remote);
}

static void upeer_touch(struct upeer *u)
{
	loop_timer_cancel(u->idle);
	u->idle = loop_timer_add(PF_UDP_IDLE_MS, upeer_idle, u);
}

static void upeer_data(struct stream *s, const uint8_t *data, size_t len, void *arg)
{
	(void)s;
	struct upeer *u = arg;
	u->f->st.bytes_in += len;
	sendto(u->l->fd, data, len, MSG_DONTWAIT | MSG_NOSIGNAL, (struct sockaddr *)&u->addr, u->alen);
	upeer_touch(u);
}

static void upeer_state(struct stream *s, enum stream_state st, void *arg)
{
	struct upeer *u = arg;
	if (st != STREAM_CLOSED)
		return;
	enum stream_end e = stream_end(s);
	if (e == STREAM_END_REFUSED || e == STREAM_END_ERROR || stream_status(s) > 1001) {
		u->f->st.failed++;
		if (u->f->report)
			u->f->report(u->f->report_arg, u->l->port.remote, stream_reason(s));
	}
	upeer_free(u);
}

static const struct stream_cbs upeer_cbs = { upeer_data, upeer_state };

static void on_datagram(int fd, short revents, void *arg)
{
	(void)revents;
	struct listener *l = arg;
	struct portfwd *f = l->f;
	static uint8_t b[65536];
	for (int i = 0; i < 64; i++) {
		struct sockaddr_storage a;
		socklen_t al = sizeof a;
		ssize_t n = recvfrom(fd, b, sizeof b, MSG_DONTWAIT, (struct sockaddr *)&a, &al);
		if (n < 0)
			return;
		struct upeer *u = f->upeers;
		while (u && !(u->l == l && u->alen == al && memcmp(&u->addr, &a, al) == 0))
			u = u->next;
		if (u == NULL) {
			if (f->st.open >= PORTFWD_MAX_CONNS) {
				log_warn("port-forward: %d peers, a datagram from another dropped", PORTFWD_MAX_CONNS);
				continue;
			}
			char *err = NULL;
			struct stream *r = f->src->ops->open_portforward(f->src, f->kind, f->ns, f->name, l->port.remote,
									 true, &err);
			f->st.total++;
			if (r == NULL) {
				f->st.failed++;
				if (f->report)
					f->report(f->report_arg, l->port.remote, err ? err : "cannot open");
				free(err);
				continue;
			}
			u = xcalloc(1, sizeof *u);
			u->f = f;
			u->l = l;
			memcpy(&u->addr, &a, al);
			u->alen = al;
			u->remote = r;
			u->next = f->upeers;
			f->upeers = u;
			f->st.open++;
			stream_set_callbacks(r, &upeer_cbs, u);
			log_info("port-forward: UDP peer to %s/%s port %d", f->ns, f->name, l->port.remote);
		}
		f->st.bytes_out += (uint64_t)n;
		if (n > 0)
			stream_write(u->remote, b, (size_t)n);
		upeer_touch(u);
	}
}

static void on_accept(int fd, short revents, void *arg)
{
	(void)revents;
	struct listener *l = arg;
	for (int i = 0; i < 16; i++) {
		int cfd = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (cfd < 0)
			return;
		if (l->f->st.open >= PORTFWD_MAX_CONNS) {
			log_warn("port-forward: %d connections open, one refused", PORTFWD_MAX_CONNS);
			close(cfd);
			continue;
		}
		char name[64];
		snprintf(name, sizeof name, "port-forward local %d", l->port.local);
		conn_start(l->f, fdstream_new(cfd, cfd, name), &l->port);
	}
}

struct portfwd *portfwd_new(struct source *src, int kind, const char *ns, const char *name, portfwd_report_cb report,
			    void *arg, char **err)
{
	if (src == NULL || src->ops == NULL || src->ops->open_portforward == NULL) {
		*err = xasprintf("%s does not forward ports", src ? src->name : "this source");
		return NULL;
	}
	struct portfwd *f = xcalloc(1, sizeof *f);
	f->src = src;
	f->kind = kind;
	f->ns = xstrdup(ns);
	f->name = xstrdup(name);
	f->report = report;
	f->report_arg = arg;
	return f;
}

int portfwd_listen(struct portfwd *f, const char *addr, const struct pf_port *port, char **err)
{
	if (f->nls == PF_MAX_LISTEN) {
		*err = xasprintf("at most %d listening ports", PF_MAX_LISTEN);
		return -1;
	}
	int type = port->udp ? SOCK_DGRAM : SOCK_STREAM;
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = type, .ai_flags = AI_PASSIVE };
	struct addrinfo *res = NULL;
	char ps[8];
	snprintf(ps, sizeof ps, "%d", port->local);
	int gai = getaddrinfo(addr, ps, &hints, &res);
	if (gai != 0) {
		*err = xasprintf("%s: %s", addr, gai_strerror(gai));
		return -1;
	}
	int fd = socket(res->ai_family, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	int one = 1;
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
	    bind(fd, res->ai_addr, res->ai_addrlen) < 0 || (!port->udp && listen(fd, 16) < 0)) {
		*err = xasprintf("unable to listen on %s port %d: %s", addr, port->local, strerror(errno));
		if (fd >= 0)
			close(fd);
		freeaddrinfo(res);
		return -1;
	}
	freeaddrinfo(res);
	struct sockaddr_storage sa;
	socklen_t sl = sizeof sa;
	int bound = port->local;
	if (getsockname(fd, (struct sockaddr *)&sa, &sl) == 0)
		bound = ntohs(sa.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&sa)->sin6_port
						       : ((struct sockaddr_in *)&sa)->sin_port);
	struct listener *l = &f->ls[f->nls++];
	*l = (struct listener){ .f = f, .port = *port, .fd = fd };
	l->port.local = bound;
	l->h = loop_fd_add(fd, POLLIN, port->udp ? on_datagram : on_accept, l);
	return bound;
}

void portfwd_stdio(struct portfwd *f, const struct pf_port *port, void (*done)(void *arg, int rc), void *arg)
{
	f->stdio = true;
	f->stdio_done = done;
	f->stdio_arg = arg;
	conn_start(f, fdstream_new(STDIN_FILENO, STDOUT_FILENO, "port-forward stdio"), port);
}

void portfwd_stats(const struct portfwd *f, struct portfwd_stats *st)
{
	*st = f->st;
}

void portfwd_free(struct portfwd *f)
{
	if (f == NULL)
		return;
	for (size_t i = 0; i < f->nls; i++) {
		loop_fd_remove(f->ls[i].h);
		close(f->ls[i].fd);
	}
	f->stdio_done = NULL;
	while (f->conns)
		conn_free(f->conns);
	while (f->upeers)
		upeer_free(f->upeers);
	free(f->ns);
	free(f->name);
	free(f);
}
