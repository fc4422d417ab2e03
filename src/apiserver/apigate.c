/* Admission on the engine service's HTTPS listener: a deadline and a small share for connections that have not
 * shown the token (see apigate.h).
 *
 * Each connection libmicrohttpd accepts gets a gate entry (its socket context). Entries that have not
 * authenticated wait in a list, oldest first. libmicrohttpd has no call that closes a connection from outside a
 * request, so the gate shuts the socket down: libmicrohttpd then reads end of file (or the TLS handshake fails)
 * and closes the connection itself, which ends the entry. */
#include "apiserver/apigate.h"

#include <stdbool.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include "core/log.h"
#include "core/util.h"
#include "core/xmalloc.h"

#define NOFILE_WANT 8192 /* the soft fd limit the service asks for (the listener's limit follows from it) */
#define CONN_LIMIT_MAX 4096

struct gate_conn {
	struct MHD_Connection *c;
	int fd;
	uint64_t t0_ms;
	bool authed;
	bool cut;		       /* shut down by the gate; libmicrohttpd has not closed it yet */
	struct gate_conn *prev, *next; /* in the waiting list: neither authed nor cut */
};

static struct {
	struct gate_conn *head, *tail;	/* waiting, oldest first */
	unsigned waiting;		/* in the list */
	unsigned unauthed;		/* open and not authed (the list and the cut ones) */
	unsigned cut_deadline, cut_cap; /* since the last log line */
} G;

unsigned apigate_connection_limit(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return 4 * APIGATE_UNAUTH_MAX;
	if (rl.rlim_cur < NOFILE_WANT && rl.rlim_cur < rl.rlim_max) {
		rlim_t old = rl.rlim_cur;
		rl.rlim_cur = rl.rlim_max < NOFILE_WANT ? rl.rlim_max : NOFILE_WANT;
		if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
			rl.rlim_cur = old;
	}
	rlim_t room = rl.rlim_cur / 2; /* the rest: the unix socket's clients, libvirt, consoles, files */
	if (room > CONN_LIMIT_MAX)
		room = CONN_LIMIT_MAX;
	if (room < 4 * APIGATE_UNAUTH_MAX)
		room = 4 * APIGATE_UNAUTH_MAX;
	return (unsigned)room;
}

static void unlink_waiting(struct gate_conn *g)
{
	if (g->prev)
		g->prev->next = g->next;
	else
		G.head = g->next;
	if (g->next)
		g->next->prev = g->prev;
	else
		G.tail = g->prev;
	g->prev = g->next = NULL;
	G.waiting--;
}

static void cut(struct gate_conn *g)
{
	unlink_waiting(g);
	g->cut = true;
	if (g->fd >= 0)
		shutdown(g->fd, SHUT_RDWR);
}

void apigate_notify(void *cls, struct MHD_Connection *c, void **socket_context, enum MHD_ConnectionNotificationCode toe)
{
	(void)cls;
	struct gate_conn *g = *socket_context;
	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
		g = xcalloc(1, sizeof *g);
		g->c = c;
		g->fd = ci ? ci->connect_fd : -1;
		g->t0_ms = util_now_ms();
		g->prev = G.tail;
		if (G.tail)
			G.tail->next = g;
		else
			G.head = g;
		G.tail = g;
		G.waiting++;
		G.unauthed++;
		*socket_context = g;
		if (G.waiting > APIGATE_UNAUTH_MAX) { /* the oldest gives way: a newcomer may hold the token */
			cut(G.head);
			G.cut_cap++;
		}
		return;
	}
	if (g == NULL)
		return;
	if (!g->authed) {
		if (!g->cut)
			unlink_waiting(g);
		G.unauthed--;
	}
	free(g);
	*socket_context = NULL;
}

void apigate_authed(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	struct gate_conn *g = ci ? ci->socket_context : NULL;
	if (g == NULL || g->authed || g->cut)
		return;
	unlink_waiting(g);
	g->authed = true;
	G.unauthed--;
	MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT, (unsigned)APIGATE_IDLE_TIMEOUT_S);
}

void apigate_expire(uint64_t now_ms)
{
	while (G.head && now_ms - G.head->t0_ms >= (uint64_t)APIGATE_DEADLINE_S * 1000) {
		cut(G.head);
		G.cut_deadline++;
	}
	if (G.cut_deadline || G.cut_cap) {
		log_info(
		    "engine serve: closed %u HTTPS connection(s) without the token after %d s, %u over the cap of %d "
		    "waiting",
		    G.cut_deadline, APIGATE_DEADLINE_S, G.cut_cap, APIGATE_UNAUTH_MAX);
		G.cut_deadline = G.cut_cap = 0;
	}
}

unsigned apigate_unauthed(void)
{
	return G.unauthed;
}
