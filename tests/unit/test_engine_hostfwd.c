/* engine/hostfwd.c: a forwarded host port a local user took between the engine's choice and QEMU's bind moves
 * to another free port instead of failing the start. The fake monitor binds the port the way QEMU's
 * hostfwd_add does and answers QEMU's words when it cannot. */
#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/xmalloc.h"
#include "engine/domxml.h"
#include "engine/hostfwd.h"
#include "t.h"

struct fakeqemu {
	int calls;
	int bound[8]; /* the sockets "QEMU" holds */
	int nbound;
	bool refuse_all, send_fails;
	char last[128];
};

static int fake_monitor(void *arg, const char *cmd, char **answer, char **err)
{
	struct fakeqemu *q = arg;
	q->calls++;
	snprintf(q->last, sizeof q->last, "%s", cmd);
	if (q->send_fails) {
		*err = xstrdup("port forwarding: monitor gone");
		return -1;
	}
	char proto[4] = "";
	int port = 0, guest = 0;
	if (sscanf(cmd, "hostfwd_add hostua-default %3[a-z]:127.0.0.1:%d-:%d", proto, &port, &guest) != 3) {
		*answer = xstrdup("invalid host forwarding rule\r\n");
		return 0;
	}
	int fd = socket(AF_INET, strcmp(proto, "udp") == 0 ? SOCK_DGRAM : SOCK_STREAM, 0);
	struct sockaddr_in a = {
	    .sin_family = AF_INET, .sin_port = htons((uint16_t)port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	if (q->refuse_all || bind(fd, (struct sockaddr *)&a, sizeof a) < 0) {
		close(fd);
		*answer =
		    xasprintf("could not set up host forwarding rule '%s:127.0.0.1:%d-:%d'\r\n", proto, port, guest);
		return 0;
	}
	q->bound[q->nbound++] = fd;
	*answer = xstrdup("");
	return 0;
}

static void fake_free(struct fakeqemu *q)
{
	for (int i = 0; i < q->nbound; i++)
		close(q->bound[i]);
}

static struct domxml_plan *plan_new(int tcp_port, int udp_port)
{
	struct domxml_plan *p = xcalloc(1, sizeof *p);
	p->pod_iface = xstrdup("default");
	p->fwds = xcalloc(2, sizeof *p->fwds);
	p->fwds[0] = (struct domxml_fwd){.udp = false, .host_port = tcp_port, .guest_port = 22};
	p->fwds[1] = (struct domxml_fwd){.udp = true, .host_port = udp_port, .guest_port = 53};
	p->nfwds = 2;
	return p;
}

/* The engine chose A and B; a local user bound A before QEMU: the rule moves to a third port, B stays. */
static void test_taken_port_moves(void)
{
	int a = 0, b = 0;
	int user = hostfwd_free_port(false, &a); /* the local user's socket, held through the start */
	int fb = hostfwd_free_port(true, &b);
	T_CHECK(user >= 0 && fb >= 0);
	close(fb);
	struct domxml_plan *p = plan_new(a, b);
	struct fakeqemu q = {0};
	char *err = NULL;
	T_EQ_INT(hostfwd_apply(p, fake_monitor, &q, &err), 0);
	T_CHECK(err == NULL);
	T_EQ_INT(q.calls, 3);
	T_CHECK(p->fwds[0].host_port != a && p->fwds[0].host_port > 0);
	T_EQ_INT(p->fwds[1].host_port, b);
	T_EQ_INT(q.nbound, 2); /* both forwarded, on the ports the plan now names */
	char want[128];
	snprintf(want, sizeof want, "hostfwd_add hostua-default udp:127.0.0.1:%d-:53", b);
	T_EQ_STR(q.last, want);
	free(err);
	fake_free(&q);
	close(user);
	domxml_plan_free(p);
}

/* Refused on every port: HOSTFWD_TRIES tries, then QEMU's answer, the start fails. */
static void test_refused_every_time(void)
{
	struct domxml_plan *p = plan_new(40022, 40053);
	struct fakeqemu q = {.refuse_all = true};
	char *err = NULL;
	T_EQ_INT(hostfwd_apply(p, fake_monitor, &q, &err), -1);
	T_EQ_INT(q.calls, HOSTFWD_TRIES);
	T_CHECK(err && strstr(err, "try 4 of 4") && strstr(err, "could not set up host forwarding rule") &&
		!strchr(err, '\r'));
	free(err);
	domxml_plan_free(p);
}

/* The monitor itself failed: no other port is tried. */
static void test_monitor_fails(void)
{
	struct domxml_plan *p = plan_new(40022, 40053);
	struct fakeqemu q = {.send_fails = true};
	char *err = NULL;
	T_EQ_INT(hostfwd_apply(p, fake_monitor, &q, &err), -1);
	T_EQ_INT(q.calls, 1);
	T_EQ_STR(err, "port forwarding: monitor gone");
	T_EQ_INT(p->fwds[0].host_port, 40022);
	free(err);
	domxml_plan_free(p);
}

/* Nothing to forward: no monitor command. */
static void test_nothing(void)
{
	struct domxml_plan *p = xcalloc(1, sizeof *p);
	struct fakeqemu q = {0};
	char *err = NULL;
	T_EQ_INT(hostfwd_apply(p, fake_monitor, &q, &err), 0);
	T_EQ_INT(q.calls, 0);
	domxml_plan_free(p);
}

int main(void)
{
	test_taken_port_moves();
	test_refused_every_time();
	test_monitor_fails();
	test_nothing();
	return T_DONE();
}
