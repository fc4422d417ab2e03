/* The engine service's WebSocket bridge: a VMI's serial console (engine_console_open) and VNC display
 * (engine_vnc_open) as KubeVirt's console and vnc subresources, plain.kubevirt.io, binary frames both ways. */
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

/* ---- the serial console as KubeVirt's WebSocket (plain.kubevirt.io): binary frames both ways ---- */

struct wsconn {
	struct apisrv *srv;
	struct MHD_UpgradeResponseHandle *urh;
	int fd;
	struct loop_fd *lfd;
	struct engine_console *con;
	int peer;                /* vnc: the display's socket (-1 until libvirt opened it) */
	struct loop_fd *peer_lfd;
	struct buf peer_out;     /* client bytes for the display */
	bool vnc, waiting_peer;
	struct wsframe_parser p;
	struct buf out;
	bool closing;
	struct wsconn *next;
};

void apis_ws_close(struct apisrv *srv, struct wsconn *w)
{
	for (struct wsconn **pp = &srv->wsconns; *pp; pp = &(*pp)->next)
		if (*pp == w) {
			*pp = w->next;
			break;
		}
	loop_fd_remove(w->lfd);
	engine_console_close(w->con);
	loop_fd_remove(w->peer_lfd);
	if (w->peer >= 0)
		close(w->peer);
	MHD_upgrade_action(w->urh, MHD_UPGRADE_ACTION_CLOSE);
	buf_free(&w->out);
	buf_free(&w->peer_out);
	if (w->waiting_peer) { /* engine_vnc_open's callback still comes: it finds the connection gone */
		w->urh = NULL;
		w->lfd = NULL;
		w->closing = true;
		return;
	}
	free(w);
}

/* Sends what b holds to fd without blocking; on an error the connection closes and b is dropped. */
static void send_out(struct wsconn *w, int fd, struct buf *b)
{
	while (fd >= 0 && b->len) {
		ssize_t n = send(fd, b->data, b->len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
			break;
		if (n <= 0) {
			w->closing = true;
			b->len = 0;
			break;
		}
		buf_consume(b, (size_t)n);
	}
}

static void peer_flush(struct wsconn *w)
{
	send_out(w, w->peer, &w->peer_out);
	if (w->peer_lfd)
		loop_fd_set_events(w->peer_lfd, (short)(POLLIN | (w->peer_out.len ? POLLOUT : 0)));
}

static void ws_flush(struct wsconn *w)
{
	send_out(w, w->fd, &w->out);
	loop_fd_set_events(w->lfd, (short)(POLLIN | (w->out.len ? POLLOUT : 0)));
}

static int ws_frame(void *arg, const struct wsframe_event *ev)
{
	struct wsconn *w = arg;
	switch (ev->type) {
	case WSFRAME_DATA:
		if (ev->len && w->vnc) {
			if (w->peer_out.len < (8u << 20))
				buf_add(&w->peer_out, ev->data, ev->len);
			peer_flush(w);
		} else if (ev->len && w->con)
			engine_console_write(w->con, (const char *)ev->data, ev->len);
		break;
	case WSFRAME_PING:
		wsframe_encode(&w->out, WS_OP_PONG, true, NULL, ev->data, ev->len);
		break;
	case WSFRAME_PONG:
		break;
	case WSFRAME_CLOSE:
		wsframe_encode_close(&w->out, NULL, WS_CLOSE_NORMAL, "");
		w->closing = true;
		return 1;
	}
	return 0;
}

static void ws_on_fd(int fd, short revents, void *arg)
{
	struct wsconn *w = arg;
	struct apisrv *srv = w->srv;
	if (revents & (POLLIN | POLLHUP | POLLERR)) {
		uint8_t b[16384];
		ssize_t n = recv(fd, b, sizeof b, MSG_DONTWAIT);
		if (n > 0) {
			if (wsframe_feed(&w->p, b, (size_t)n, ws_frame, w) < 0) {
				wsframe_encode_close(&w->out, NULL, w->p.err_code, w->p.err);
				w->closing = true;
			}
		} else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
			apis_ws_close(srv, w);
			return;
		}
	}
	ws_flush(w);
	if (w->closing && w->out.len == 0)
		apis_ws_close(srv, w);
}

static void ws_console_data(void *arg, const char *data, size_t len)
{
	struct wsconn *w = arg;
	if (len == 0 || w->closing)
		return; /* the execution ended: the subscription follows the next one, as virt-handler's does not */
	if (w->out.len > (8u << 20))
		return; /* a client that does not read loses console bytes, never the service's memory */
	wsframe_encode(&w->out, WS_OP_BINARY, true, NULL, data, len);
	ws_flush(w);
}

static void ws_peer_fd(int fd, short revents, void *arg)
{
	struct wsconn *w = arg;
	struct apisrv *srv = w->srv;
	if (revents & (POLLIN | POLLHUP | POLLERR)) {
		char b[65536];
		ssize_t n = recv(fd, b, sizeof b, MSG_DONTWAIT);
		if (n > 0) {
			if (w->out.len < (8u << 20))
				wsframe_encode(&w->out, WS_OP_BINARY, true, NULL, b, (size_t)n);
		} else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
			wsframe_encode_close(&w->out, NULL, WS_CLOSE_NORMAL, "the display closed");
			w->closing = true;
			loop_fd_remove(w->peer_lfd);
			w->peer_lfd = NULL;
		}
	}
	if (w->peer_lfd)
		peer_flush(w);
	ws_flush(w);
	if (w->closing && w->out.len == 0)
		apis_ws_close(srv, w);
}

static void ws_vnc_opened(void *arg, int fd, const char *err)
{
	struct wsconn *w = arg;
	struct apisrv *srv = w->srv;
	w->waiting_peer = false;
	if (w->urh == NULL) { /* the client left first */
		if (fd >= 0)
			close(fd);
		free(w);
		return;
	}
	if (fd < 0) {
		wsframe_encode_close(&w->out, NULL, WS_CLOSE_GOING_AWAY, err ? err : "no display");
		w->closing = true;
	} else {
		w->peer = fd;
		w->peer_lfd = loop_fd_add(fd, POLLIN, ws_peer_fd, w);
		peer_flush(w);
	}
	ws_flush(w);
	if (w->closing && w->out.len == 0)
		apis_ws_close(srv, w);
}

struct ws_pending {
	struct apisrv *srv;
	struct source *src;
	bool vnc;
	char ns[64], name[254];
};

static void ws_upgraded(void *cls, struct MHD_Connection *c, void *con_cls, const char *extra, size_t extra_len,
			MHD_socket sock, struct MHD_UpgradeResponseHandle *urh)
{
	(void)c;
	(void)con_cls;
	struct ws_pending *pd = cls;
	struct apisrv *srv = pd->srv;
	struct wsconn *w = xcalloc(1, sizeof *w);
	w->srv = srv;
	w->urh = urh;
	w->fd = sock;
	w->peer = -1;
	w->vnc = pd->vnc;
	buf_init(&w->out);
	buf_init(&w->peer_out);
	wsframe_parser_init(&w->p, WSFRAME_SERVER);
	w->lfd = loop_fd_add(sock, POLLIN, ws_on_fd, w);
	w->next = srv->wsconns;
	srv->wsconns = w;
	char *err = NULL;
	bool ok;
	if (w->vnc) {
		ok = engine_vnc_open(pd->src, pd->ns, pd->name, ws_vnc_opened, w, &err) == 0;
		w->waiting_peer = ok;
	} else
		ok = (w->con = engine_console_open(pd->src, pd->ns, pd->name, ws_console_data, w, &err)) != NULL;
	if (!ok) /* the client says it too (kvcon console: at once); the service's log keeps which and why */
		log_info("engine serve: %s %s/%s refused: %s", w->vnc ? "display" : "console", pd->ns, pd->name,
			 err ? err : "no console");
	free(pd);
	if (!ok) {
		wsframe_encode_close(&w->out, NULL, WS_CLOSE_GOING_AWAY, err ? err : "no console");
		w->closing = true;
	} else if (extra_len && wsframe_feed(&w->p, (const uint8_t *)extra, extra_len, ws_frame, w) < 0)
		w->closing = true;
	free(err);
	ws_flush(w);
}

enum MHD_Result apis_console_ws(struct apisrv *srv, struct MHD_Connection *c, const char *ns, const char *name, bool vnc)
{
	const char *up = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Upgrade");
	const char *key = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Sec-WebSocket-Key");
	if (up == NULL || strcasecmp(up, "websocket") != 0 || key == NULL || strlen(key) > 64)
		return apis_send_status(c, 400, "BadRequest", R_COUNT, NULL, "a WebSocket upgrade is required");
	struct source *src = apis_source_of(srv, ns, name);
	if (src == NULL || !engine_running(src, ns, name))
		return apis_send_status(c, 404, "NotFound", R_VMI, name, "%s.%s \"%s\" not found or not running",
				   RES[R_VMI].plural, RES[R_VMI].group, name);
	char *k = xasprintf("%s258EAFA5-E914-47DA-95CA-C5AB0DC85B11", key);
	unsigned char sha[SHA_DIGEST_LENGTH];
	SHA1((const unsigned char *)k, strlen(k), sha);
	free(k);
	char accept[64];
	EVP_EncodeBlock((unsigned char *)accept, sha, SHA_DIGEST_LENGTH);
	struct ws_pending *pd = xcalloc(1, sizeof *pd);
	pd->srv = srv;
	pd->src = src;
	pd->vnc = vnc;
	snprintf(pd->ns, sizeof pd->ns, "%s", ns);
	snprintf(pd->name, sizeof pd->name, "%s", name);
	struct MHD_Response *r = MHD_create_response_for_upgrade(ws_upgraded, pd);
	MHD_add_response_header(r, "Upgrade", "websocket");
	MHD_add_response_header(r, "Connection", "Upgrade");
	MHD_add_response_header(r, "Sec-WebSocket-Accept", accept);
	const char *proto = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Sec-WebSocket-Protocol");
	if (proto && strstr(proto, "plain.kubevirt.io"))
		MHD_add_response_header(r, "Sec-WebSocket-Protocol", "plain.kubevirt.io");
	enum MHD_Result rc = MHD_queue_response(c, MHD_HTTP_SWITCHING_PROTOCOLS, r);
	MHD_destroy_response(r);
	if (rc != MHD_YES)
		free(pd);
	return rc;
}
