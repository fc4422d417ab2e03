/* The pod network's forwarded host ports: the free-port choice and the monitor rules, moved to another port
 * when QEMU cannot bind the one chosen (see hostfwd.h). */
#include "engine/hostfwd.h"

#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/log.h"
#include "core/util.h"
#include "core/xmalloc.h"

int hostfwd_free_port(bool udp, int *port)
{
	int fd = socket(AF_INET, (udp ? SOCK_DGRAM : SOCK_STREAM) | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof a;
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) < 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &len) < 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	*port = ntohs(a.sin_port);
	return fd;
}

static bool blank(const char *s)
{
	return s == NULL || strspn(s, " \r\n") == strlen(s);
}

/* Another free port for p->fwds[i], none of the plan's others (those not added yet are not bound). */
static int other_port(const struct domxml_plan *p, int i)
{
	for (int tries = 0; tries < 16; tries++) {
		int port = 0, fd = hostfwd_free_port(p->fwds[i].udp, &port);
		if (fd < 0)
			return -1;
		close(fd);
		bool mine = false;
		for (int j = 0; j < p->nfwds; j++)
			mine |= p->fwds[j].host_port == port;
		if (!mine)
			return port;
	}
	return -1;
}

int hostfwd_apply(struct domxml_plan *p, hostfwd_monitor_fn monitor, void *arg, char **err)
{
	for (int i = 0; i < p->nfwds; i++) {
		bool again = true;
		for (int t = 1; again; t++) {
			char *cmd = domxml_hostfwd_cmd(p, i), *res = NULL;
			int rc = monitor(arg, cmd, &res, err);
			again = false;
			if (rc == 0 && !blank(res)) { /* QEMU could not bind it: someone took it since it was chosen */
				for (size_t n = strlen(res); n > 0 && strchr(" \r\n", res[n - 1]); n--)
					res[n - 1] = '\0'; /* HMP ends its answer with CR LF */
				char *e = util_escape_display(res);
				int next = t < HOSTFWD_TRIES ? other_port(p, i) : -1;
				if (next > 0) {
					log_warn("engine: port forwarding (%s): %s: trying 127.0.0.1:%d", cmd, e, next);
					p->fwds[i].host_port = next;
					again = true;
				} else {
					*err = xasprintf("port forwarding (%s, try %d of %d): %s", cmd, t,
							 HOSTFWD_TRIES, e);
					rc = -1;
				}
				free(e);
			}
			free(cmd);
			free(res);
			if (rc < 0)
				return -1;
		}
	}
	return 0;
}
