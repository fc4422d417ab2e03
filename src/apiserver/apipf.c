/* The engine service's portforward subresource (see apipf.h): one struct pfc per WebSocket, bridged to the socket
 * engine_portforward_open connects through QEMU. */
#include "apiserver/apipf.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/buf.h"
#include "core/log.h"
#include "core/loop.h"
#include "core/xmalloc.h"
#include "engine/engine.h"
#include "kube/ws.h"
#include "kube/wsframe.h"

#define PF_HIGH (1u << 20)
#define PF_CLOSE_ERROR 1011 /* the dial failed: virt-handler's error as the reason */

struct pfc {
	struct MHD_UpgradeResponseHandle *urh;
	int fd; /* the client's socket (MHD's) */
	struct loop_fd *lfd;
	int guest; /* the connection through QEMU, -1 until open */
	struct loop_fd *glfd;
	int host_port;
	bool waiting; /* engine_portforward_open's callback still due */
	bool udp;     /* datagrams: a binary message each way is one datagram; gout holds them length-prefixed */
	bool closing;
	struct wsframe_parser p;
	struct buf out;  /* frames for the client */
	struct buf gout; /* bytes for the guest */
	struct source *src;
	char ns[64], name[254];
	int port;
	struct pfc *next;
};

static struct pfc *pfcs;
static size_t npfc;

static void pfc_update(struct pfc *w);

static void pfc_free(struct pfc *w)
{
	if (w->waiting) { /* the callback finds it closed and frees it */
		w->urh = NULL;
		return;
	}
	buf_free(&w->out);
	buf_free(&w->gout);
	free(w);
}

static void pfc_close(struct pfc *w)
{
	if (w->urh == NULL)
		return;
	for (struct pfc **pp = &pfcs; *pp; pp = &(*pp)->next)
		if (*pp == w) {
			*pp = w->next;
			npfc--;
			break;
		}
	loop_fd_remove(w->lfd);
	w->lfd = NULL;
	loop_fd_remove(w->glfd);
	w->glfd = NULL;
	if (w->guest >= 0)
		close(w->guest);
	w->guest = -1;
	engine_portforward_drop(w->src, w->ns, w->name, w->host_port, w->udp);
	MHD_upgrade_action(w->urh, MHD_UPGRADE_ACTION_CLOSE);
	w->urh = NULL;
	if (!w->waiting)
		pfc_free(w);
}

/* b to fd without blocking; false when the peer is gone */
static bool send_out(int fd, struct buf *b)
{
	while (fd >= 0 && b->len) {
		ssize_t n = send(fd, b->data, b->len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
			break;
		if (n <= 0) {
			b->len = 0;
			return false;
		}
		buf_consume(b, (size_t)n);
	}
	return true;
}

static void pfc_end(struct pfc *w, int code, const char *reason)
{
	if (!w->closing)
		wsframe_encode_close(&w->out, NULL, code, reason);
	w->closing = true;
}

static int on_frame(void *arg, const struct wsframe_event *ev)
{
	struct pfc *w = arg;
	switch (ev->type) {
	case WSFRAME_DATA:
		if (w->udp && ev->len <= 65507 && w->gout.len < PF_HIGH) { /* one datagram; dropped when too many wait */
			uint32_t n = (uint32_t)ev->len;
			buf_add(&w->gout, &n, sizeof n);
			buf_add(&w->gout, ev->data, ev->len);
		} else if (!w->udp && ev->len) {
			buf_add(&w->gout, ev->data, ev->len);
		}
		break;
	case WSFRAME_PING:
		wsframe_encode(&w->out, WS_OP_PONG, true, NULL, ev->data, ev->len);
		break;
	case WSFRAME_PONG:
		break;
	case WSFRAME_CLOSE:
		pfc_end(w, WS_CLOSE_NORMAL, "");
		return 1;
	}
	return 0;
}

/* the datagrams waiting in b to the connected UDP socket fd, each once (one the socket cannot take now is dropped:
 * UDP's own answer to a full queue) */
static void send_dgrams(int fd, struct buf *b)
{
	while (fd >= 0 && b->len >= sizeof(uint32_t)) {
		uint32_t n;
		memcpy(&n, b->data, sizeof n);
		if (b->len < sizeof n + n)
			break;
		send(fd, b->data + sizeof n, n, MSG_NOSIGNAL | MSG_DONTWAIT);
		buf_consume(b, sizeof n + n);
	}
}

/* Flushes both ways and sets what each side is polled for: a side is not read while the other has PF_HIGH
 * waiting. Closes w once its close frame is out. */
static void pfc_update(struct pfc *w)
{
	if (!send_out(w->fd, &w->out)) {
		pfc_close(w);
		return;
	}
	if (w->udp)
		send_dgrams(w->guest, &w->gout);
	else if (w->guest >= 0 && !send_out(w->guest, &w->gout))
		pfc_end(w, WS_CLOSE_NORMAL, "the guest closed the connection");
	if (w->closing && w->out.len == 0) {
		pfc_close(w);
		return;
	}
	loop_fd_set_events(w->lfd, (short)((w->gout.len < PF_HIGH && !w->closing ? POLLIN : 0) |
					    (w->out.len ? POLLOUT : 0)));
	if (w->glfd)
		loop_fd_set_events(w->glfd, (short)((w->out.len < PF_HIGH && !w->closing ? POLLIN : 0) |
						     (w->gout.len ? POLLOUT : 0)));
}

static void on_client(int fd, short revents, void *arg)
{
	struct pfc *w = arg;
	if (revents & (POLLIN | POLLHUP | POLLERR)) {
		uint8_t b[16384];
		ssize_t n = recv(fd, b, sizeof b, MSG_DONTWAIT);
		if (n > 0) {
			if (wsframe_feed(&w->p, b, (size_t)n, on_frame, w) < 0)
				pfc_end(w, w->p.err_code, w->p.err);
		} else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
			pfc_close(w);
			return;
		}
	}
	pfc_update(w);
}

static void on_guest(int fd, short revents, void *arg)
{
	struct pfc *w = arg;
	if (revents & (POLLIN | POLLHUP | POLLERR)) {
		uint8_t b[65536];
		ssize_t n = recv(fd, b, sizeof b, MSG_DONTWAIT);
		if (n > 0) {
			wsframe_encode(&w->out, WS_OP_BINARY, true, NULL, b, (size_t)n);
		} else if (w->udp) {
			/* an empty datagram, or an ICMP error on the connected socket: nothing ends a UDP forward */
		} else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
			/* QEMU closes at once when nothing listens on the guest's port */
			loop_fd_remove(w->glfd);
			w->glfd = NULL;
			pfc_end(w, WS_CLOSE_NORMAL, "the guest closed the connection");
		}
	}
	pfc_update(w);
}

static void on_opened(void *arg, int fd, const char *err)
{
	struct pfc *w = arg;
	w->waiting = false;
	if (w->urh == NULL) { /* the client left first */
		if (fd >= 0)
			close(fd);
		engine_portforward_drop(w->src, w->ns, w->name, w->host_port, w->udp);
		pfc_free(w);
		return;
	}
	if (fd < 0) {
		log_info("engine serve: portforward %s/%s port %d: %s", w->ns, w->name, w->port, err ? err : "failed");
		pfc_end(w, PF_CLOSE_ERROR, err ? err : "port forwarding failed");
	} else {
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
		w->guest = fd;
		w->glfd = loop_fd_add(fd, POLLIN, on_guest, w);
	}
	pfc_update(w);
}

struct pending {
	struct source *src;
	char ns[64], name[254];
	int port;
	bool udp;
};

static void on_upgraded(void *cls, struct MHD_Connection *c, void *con_cls, const char *extra, size_t extra_len,
			MHD_socket sock, struct MHD_UpgradeResponseHandle *urh)
{
	(void)c;
	(void)con_cls;
	struct pending *pd = cls;
	struct pfc *w = xcalloc(1, sizeof *w);
	w->urh = urh;
	w->fd = sock;
	w->guest = -1;
	w->src = pd->src;
	w->port = pd->port;
	w->udp = pd->udp;
	memcpy(w->ns, pd->ns, sizeof w->ns);
	memcpy(w->name, pd->name, sizeof w->name);
	free(pd);
	buf_init(&w->out);
	buf_init(&w->gout);
	wsframe_parser_init(&w->p, WSFRAME_SERVER);
	w->lfd = loop_fd_add(sock, POLLIN, on_client, w);
	w->next = pfcs;
	pfcs = w;
	npfc++;
	char *err = NULL;
	if (engine_portforward_open(w->src, w->ns, w->name, w->port, w->udp, on_opened, w, &w->host_port, &err) == 0)
		w->waiting = true;
	else
		pfc_end(w, PF_CLOSE_ERROR, err ? err : "port forwarding failed");
	free(err);
	if (extra_len && wsframe_feed(&w->p, (const uint8_t *)extra, extra_len, on_frame, w) < 0)
		pfc_end(w, w->p.err_code, w->p.err);
	pfc_update(w);
}

int apipf_serve(struct MHD_Connection *c, struct source *src, const char *ns, const char *name,
		const char *const *rest, int nrest, enum MHD_Result *rc, char **err)
{
	char *end = NULL;
	long port = nrest >= 1 ? strtol(rest[0], &end, 10) : 0;
	if (nrest < 1 || nrest > 2 || !end || *end || rest[0][0] < '1' || rest[0][0] > '9' || port > 65535) {
		*err = xstrdup("invalid port: portforward/PORT[/PROTOCOL], PORT 1-65535");
		return 400;
	}
	if (nrest == 2 && strcmp(rest[1], "tcp") != 0 && strcmp(rest[1], "udp") != 0) {
		*err = xstrdup("invalid protocol: portforward/PORT[/tcp|udp]");
		return 400;
	}
	const char *up = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Upgrade");
	const char *key = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Sec-WebSocket-Key");
	if (up == NULL || strcasecmp(up, "websocket") != 0 || key == NULL || strlen(key) > 64) {
		*err = xstrdup("a WebSocket upgrade is required");
		return 400;
	}
	if (src == NULL || !engine_running(src, ns, name)) {
		*err = xasprintf("virtualmachineinstances.kubevirt.io \"%s\" not found or not running", name);
		return 404;
	}
	char accept[64];
	ws_accept_for_key(key, accept, sizeof accept);
	struct pending *pd = xcalloc(1, sizeof *pd);
	pd->src = src;
	pd->port = (int)port;
	pd->udp = nrest == 2 && strcmp(rest[1], "udp") == 0;
	snprintf(pd->ns, sizeof pd->ns, "%s", ns);
	snprintf(pd->name, sizeof pd->name, "%s", name);
	struct MHD_Response *r = MHD_create_response_for_upgrade(on_upgraded, pd);
	MHD_add_response_header(r, "Upgrade", "websocket");
	MHD_add_response_header(r, "Connection", "Upgrade");
	MHD_add_response_header(r, "Sec-WebSocket-Accept", accept);
	const char *proto = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Sec-WebSocket-Protocol");
	if (proto && strstr(proto, "plain.kubevirt.io"))
		MHD_add_response_header(r, "Sec-WebSocket-Protocol", "plain.kubevirt.io");
	*rc = MHD_queue_response(c, MHD_HTTP_SWITCHING_PROTOCOLS, r);
	MHD_destroy_response(r);
	if (*rc != MHD_YES)
		free(pd);
	return 0;
}

size_t apipf_active(void)
{
	return npfc;
}

void apipf_close_all(void)
{
	while (pfcs)
		pfc_close(pfcs);
}
