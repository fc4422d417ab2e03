/* The one event loop: poll() over registered fds, one-shot timers, self-pipe signals, cross-thread posts. */
#include "core/loop.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "core/fatal.h"
#include "core/log.h"
#include "core/util.h"
#include "core/xmalloc.h"

struct loop_fd {
	int fd;
	short events;
	bool dead;
	loop_fd_cb cb;
	void *arg;
};

struct loop_timer {
	uint64_t due;
	uint64_t seq; /* ties fire in insertion order */
	loop_cb cb;
	void *arg;
	bool dead;
};

struct post {
	loop_cb cb;
	void *arg;
	struct post *next;
};

struct hook {
	int id;
	loop_cb cb;
	void *arg;
};

#define NSIG_SLOTS 65

static struct {
	bool ready;
	struct loop_fd **fds;
	size_t nfds, capfds;
	struct loop_timer **timers; /* unsorted; the count stays small */
	size_t ntimers, captimers;
	uint64_t timer_seq;
	struct hook *hooks;
	size_t nhooks;
	int next_hook;
	int sigpipe[2];
	int evfd;
	pthread_mutex_t post_lock;
	struct post *posts, *posts_tail;
	bool posts_closed; /* after loop_fini: posts are dropped (a thread ending after the loop, at exit) */
	struct {
		loop_signal_cb cb;
		void *arg;
	} sigs[NSIG_SLOTS];
	uint64_t now;
	bool quit;
	int code;
	struct pollfd *pfds;
	size_t cappfds;
} L = { .post_lock = PTHREAD_MUTEX_INITIALIZER, .sigpipe = { -1, -1 }, .evfd = -1 };

static void on_sigpipe(int fd, short revents, void *arg);
static void on_eventfd(int fd, short revents, void *arg);

void loop_init(void)
{
	if (L.ready)
		return;
	if (pipe2(L.sigpipe, O_NONBLOCK | O_CLOEXEC) < 0)
		fatal("pipe2: %s", strerror(errno));
	L.evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (L.evfd < 0)
		fatal("eventfd: %s", strerror(errno));
	pthread_mutex_lock(&L.post_lock);
	L.posts_closed = false;
	pthread_mutex_unlock(&L.post_lock);
	L.ready = true;
	L.quit = false;
	L.now = util_now_ms();
	loop_fd_add(L.sigpipe[0], POLLIN, on_sigpipe, NULL);
	loop_fd_add(L.evfd, POLLIN, on_eventfd, NULL);
}

void loop_fini(void)
{
	if (!L.ready)
		return;
	for (size_t i = 0; i < L.nfds; i++)
		free(L.fds[i]);
	for (size_t i = 0; i < L.ntimers; i++)
		free(L.timers[i]);
	for (int s = 1; s < NSIG_SLOTS; s++)
		if (L.sigs[s].cb)
			signal(s, SIG_DFL);
	/* the eventfd closes under the lock, so a late loop_post never writes to a reused descriptor */
	pthread_mutex_lock(&L.post_lock);
	struct post *p = L.posts;
	L.posts = L.posts_tail = NULL;
	L.posts_closed = true;
	close(L.evfd);
	L.evfd = -1;
	pthread_mutex_unlock(&L.post_lock);
	while (p) {
		struct post *n = p->next;
		free(p);
		p = n;
	}
	free(L.fds);
	free(L.timers);
	free(L.hooks);
	free(L.pfds);
	close(L.sigpipe[0]);
	close(L.sigpipe[1]);
	memset(&L.sigs, 0, sizeof L.sigs);
	L.fds = NULL;
	L.timers = NULL;
	L.hooks = NULL;
	L.pfds = NULL;
	L.nfds = L.capfds = L.ntimers = L.captimers = L.nhooks = L.cappfds = 0;
	L.sigpipe[0] = L.sigpipe[1] = -1;
	L.ready = false;
}

struct loop_fd *loop_fd_add(int fd, short events, loop_fd_cb cb, void *arg)
{
	struct loop_fd *h = xcalloc(1, sizeof *h);
	h->fd = fd;
	h->events = events;
	h->cb = cb;
	h->arg = arg;
	if (L.nfds == L.capfds) {
		L.capfds = L.capfds ? L.capfds * 2 : 16;
		L.fds = xreallocarray(L.fds, L.capfds, sizeof *L.fds);
	}
	L.fds[L.nfds++] = h;
	return h;
}

void loop_fd_set_events(struct loop_fd *h, short events)
{
	h->events = events;
}

void loop_fd_remove(struct loop_fd *h)
{
	if (h)
		h->dead = true; /* reaped after the pass, so callbacks may remove themselves */
}

struct loop_timer *loop_timer_add(uint64_t ms, loop_cb cb, void *arg)
{
	struct loop_timer *t = xcalloc(1, sizeof *t);
	t->due = util_now_ms() + ms;
	t->seq = L.timer_seq++;
	t->cb = cb;
	t->arg = arg;
	if (L.ntimers == L.captimers) {
		L.captimers = L.captimers ? L.captimers * 2 : 16;
		L.timers = xreallocarray(L.timers, L.captimers, sizeof *L.timers);
	}
	L.timers[L.ntimers++] = t;
	return t;
}

void loop_timer_cancel(struct loop_timer *t)
{
	if (t)
		t->dead = true;
}

static void sig_handler(int sig)
{
	int saved = errno;
	unsigned char b = (unsigned char)sig;
	ssize_t w = write(L.sigpipe[1], &b, 1);
	(void)w;
	errno = saved;
}

void loop_signal(int sig, loop_signal_cb cb, void *arg)
{
	if (sig <= 0 || sig >= NSIG_SLOTS)
		return;
	L.sigs[sig].cb = cb;
	L.sigs[sig].arg = arg;
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = sig_handler;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(sig, &sa, NULL);
}

static void on_sigpipe(int fd, short revents, void *arg)
{
	(void)revents;
	(void)arg;
	unsigned char b[64];
	ssize_t n;
	while ((n = read(fd, b, sizeof b)) > 0) {
		for (ssize_t i = 0; i < n; i++) {
			int s = b[i];
			if (s > 0 && s < NSIG_SLOTS && L.sigs[s].cb)
				L.sigs[s].cb(s, L.sigs[s].arg);
		}
	}
}

void loop_post(loop_cb cb, void *arg)
{
	struct post *p = xmalloc(sizeof *p);
	p->cb = cb;
	p->arg = arg;
	p->next = NULL;
	pthread_mutex_lock(&L.post_lock);
	if (L.posts_closed) {
		pthread_mutex_unlock(&L.post_lock);
		free(p);
		return;
	}
	if (L.posts_tail)
		L.posts_tail->next = p;
	else
		L.posts = p;
	L.posts_tail = p;
	uint64_t one = 1;
	ssize_t w = write(L.evfd, &one, sizeof one);
	(void)w;
	pthread_mutex_unlock(&L.post_lock);
}

static void on_eventfd(int fd, short revents, void *arg)
{
	(void)revents;
	(void)arg;
	uint64_t v;
	ssize_t r = read(fd, &v, sizeof v);
	(void)r;
	pthread_mutex_lock(&L.post_lock);
	struct post *p = L.posts;
	L.posts = L.posts_tail = NULL;
	pthread_mutex_unlock(&L.post_lock);
	while (p) {
		struct post *n = p->next;
		p->cb(p->arg);
		free(p);
		p = n;
	}
}

int loop_hook_add(loop_cb cb, void *arg)
{
	L.hooks = xreallocarray(L.hooks, L.nhooks + 1, sizeof *L.hooks);
	L.hooks[L.nhooks].id = ++L.next_hook;
	L.hooks[L.nhooks].cb = cb;
	L.hooks[L.nhooks].arg = arg;
	L.nhooks++;
	return L.next_hook;
}

void loop_hook_remove(int id)
{
	for (size_t i = 0; i < L.nhooks; i++) {
		if (L.hooks[i].id == id) {
			memmove(&L.hooks[i], &L.hooks[i + 1], (L.nhooks - i - 1) * sizeof *L.hooks);
			L.nhooks--;
			return;
		}
	}
}

static void reap(void)
{
	size_t j = 0;
	for (size_t i = 0; i < L.nfds; i++) {
		if (L.fds[i]->dead)
			free(L.fds[i]);
		else
			L.fds[j++] = L.fds[i];
	}
	L.nfds = j;
	j = 0;
	for (size_t i = 0; i < L.ntimers; i++) {
		if (L.timers[i]->dead)
			free(L.timers[i]);
		else
			L.timers[j++] = L.timers[i];
	}
	L.ntimers = j;
}

/* Fires due timers in (due, seq) order; timers added meanwhile wait for the next pass. */
static void run_timers(void)
{
	uint64_t limit = L.timer_seq;
	for (;;) {
		struct loop_timer *best = NULL;
		for (size_t i = 0; i < L.ntimers; i++) {
			struct loop_timer *t = L.timers[i];
			if (t->dead || t->due > L.now || t->seq >= limit)
				continue;
			if (!best || t->due < best->due || (t->due == best->due && t->seq < best->seq))
				best = t;
		}
		if (!best)
			break;
		best->dead = true;
		best->cb(best->arg);
	}
}

static int next_timeout(int timeout_ms)
{
	for (size_t i = 0; i < L.ntimers; i++) {
		struct loop_timer *t = L.timers[i];
		if (t->dead)
			continue;
		int64_t d = (int64_t)t->due - (int64_t)util_now_ms();
		if (d < 0)
			d = 0;
		if (timeout_ms < 0 || d < timeout_ms)
			timeout_ms = (int)(d > 1000000 ? 1000000 : d);
	}
	return timeout_ms;
}

bool loop_once(int timeout_ms)
{
	if (!L.ready)
		loop_init();
	for (size_t i = 0; i < L.nhooks && !L.quit; i++)
		L.hooks[i].cb(L.hooks[i].arg);
	reap();
	if (L.quit)
		return false;
	if (L.cappfds < L.nfds) {
		L.cappfds = L.nfds;
		L.pfds = xreallocarray(L.pfds, L.cappfds, sizeof *L.pfds);
	}
	size_t n = L.nfds;
	for (size_t i = 0; i < n; i++) {
		L.pfds[i].fd = L.fds[i]->events ? L.fds[i]->fd : -1;
		L.pfds[i].events = L.fds[i]->events;
		L.pfds[i].revents = 0;
	}
	int rc = poll(L.pfds, n, next_timeout(timeout_ms));
	if (rc < 0 && errno != EINTR)
		fatal("poll: %s", strerror(errno));
	L.now = util_now_ms();
	for (size_t i = 0; rc > 0 && i < n; i++) {
		struct loop_fd *h = L.fds[i];
		if (L.pfds[i].revents && !h->dead && L.pfds[i].fd == h->fd)
			h->cb(h->fd, L.pfds[i].revents, h->arg);
	}
	run_timers();
	reap();
	return !L.quit;
}

int loop_run(void)
{
	while (loop_once(-1))
		;
	return L.code;
}

void loop_quit(int code)
{
	L.quit = true;
	L.code = code;
}

bool loop_quitting(void)
{
	return L.quit;
}

uint64_t loop_now(void)
{
	return L.now ? L.now : util_now_ms();
}

bool loop_run_until(bool (*cond)(void *), void *arg, uint64_t timeout_ms)
{
	uint64_t until = util_now_ms() + timeout_ms;
	while (!cond(arg)) {
		if (util_now_ms() >= until || loop_quitting())
			return false;
		loop_once(50);
	}
	return true;
}
