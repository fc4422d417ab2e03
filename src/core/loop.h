/* The one event loop: poll() over registered fds, one-shot timers, signals through a self-pipe, and messages
 * posted from other threads (the engine's libvirt threads). Everything on the UI thread runs from here; nothing
 * here blocks except poll() itself. */
#ifndef KVCON_CORE_LOOP_H
#define KVCON_CORE_LOOP_H

#include <stdbool.h>
#include <stdint.h>

struct loop_fd;
struct loop_timer;

/* revents are poll() flags (POLLIN, POLLOUT, POLLERR, POLLHUP). */
typedef void (*loop_fd_cb)(int fd, short revents, void *arg);
typedef void (*loop_cb)(void *arg);
typedef void (*loop_signal_cb)(int sig, void *arg);

/* Sets up the loop (self-pipe, eventfd). Safe to call twice. */
void loop_init(void);
/* Releases the loop's own resources; registered fds and timers are dropped (not closed). */
void loop_fini(void);

struct loop_fd *loop_fd_add(int fd, short events, loop_fd_cb cb, void *arg);
void loop_fd_set_events(struct loop_fd *h, short events);
/* Unregisters (does not close the fd). Safe from inside the fd's own callback. NULL is ignored. */
void loop_fd_remove(struct loop_fd *h);

/* One-shot timer after ms milliseconds. The handle is invalid once the callback has started. */
struct loop_timer *loop_timer_add(uint64_t ms, loop_cb cb, void *arg);
/* Cancels a pending timer. NULL is ignored. */
void loop_timer_cancel(struct loop_timer *t);

/* Routes a signal through the self-pipe to cb on the loop thread. */
void loop_signal(int sig, loop_signal_cb cb, void *arg);

/* Thread-safe: runs cb(arg) on the loop thread at the next pass. Dropped after loop_fini (until loop_init). */
void loop_post(loop_cb cb, void *arg);

/* Called at the end of every loop pass, before poll() (drawing hooks live here). Returns a handle id. */
int loop_hook_add(loop_cb cb, void *arg);
void loop_hook_remove(int id);

/* Runs until loop_quit(); returns the code passed to it. */
int loop_run(void);
/* Runs one pass, waiting at most timeout_ms (-1: until something happens). Returns false after loop_quit(). */
bool loop_once(int timeout_ms);
void loop_quit(int code);
bool loop_quitting(void);
/* Runs passes (50 ms at most each) until cond(arg) holds: true, or false when timeout_ms passed first or after
 * loop_quit(). */
bool loop_run_until(bool (*cond)(void *), void *arg, uint64_t timeout_ms);

/* Milliseconds on the monotonic clock, sampled once per pass. */
uint64_t loop_now(void);

#endif
