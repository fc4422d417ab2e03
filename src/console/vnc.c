/* vnc: libvncclient driven from kvcon (see vnc.h).
 *
 * Why a thread. libvncclient reads with ReadFromRFBServer(), which does not return until it has all n bytes a
 * decoder asked for (on EAGAIN it waits in select()), and HandleRFBServerMessage() reads a whole message that way;
 * InitialiseRFBConnection() reads the handshake the same way. Calling either on the UI thread would block it
 * whenever a message arrives in pieces (a WebSocket delivers frames as they come). Peeking whether a complete
 * message is buffered would mean re-implementing the framing of every encoding (Tight and Hextile lengths depend
 * on their content), i.e. a second RFB parser. So each session runs libvncclient on its own thread, which may
 * block as libvncclient likes:
 *   - its socket is either its own connection (unix:/tcp:) or one end of a socketpair whose other end the UI
 *     thread pumps to and from the struct stream without ever blocking (buffered, with backpressure);
 *   - it waits in poll() on the socket and an eventfd, so queued keys and pointer events are sent promptly;
 *   - after each FramebufferUpdate it copies the damaged rectangles into a shared framebuffer under a mutex that
 *     is only ever held for memcpy-sized work (never across I/O), and posts VNC_FRAME to the loop (coalesced);
 *   - the UI thread renders cells from the shared copy (vnc_render) and writes nothing to libvncclient itself.
 * vnc_free() shuts the socket down, which ends any blocking read or write at once, and joins the thread for at
 * most VNC_JOIN_MS; a thread still stuck (a TCP connect in flight) is left to free the session itself. Posts carry
 * an id looked up in a registry, so none can reach a freed session.
 *
 * Hostile servers: libvncclient 0.9.14 checks rectangles against the framebuffer itself; kvcon also caps the
 * framebuffer size (MallocFrameBuffer), re-checks CopyRect/fill/bitmap rectangles before passing them on, and
 * clips every damaged rectangle before it reaches fbcells. */
#include "console/vnc.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <rfb/rfbclient.h>

#include "console/png.h"
#include "core/stream.h"
#include "core/buf.h"
#include "core/fatal.h"
#include "core/log.h"
#include "core/loop.h"
#include "core/util.h"
#include "core/xmalloc.h"

/* 8192 x 8192 at most along each side, 32 Mpixels (128 MiB) in all: no real guest display is larger. */
#define VNC_MAX_SIDE 8192
#define VNC_MAX_PIXELS (32u << 20)
#define VNC_MAX_DAMAGE 64	 /* rectangles kept before they collapse into their bounding box */
#define VNC_PUMP_HIGH (4u << 20) /* bytes buffered for libvncclient before the stream is paused */
#define VNC_JOIN_MS 200		 /* vnc_free's wait for the session thread */

struct vnc_rect {
	int x, y, w, h;
};

struct vnc_input {
	bool key;
	uint32_t keysym;
	bool down;
	int x, y, buttons;
};

struct vnc {
	uint64_t id; /* registry key carried by posts */
	struct vnc *reg_next;
	vnc_event_cb cb;
	void *arg;
	struct vnc_opts opts;
	char *password;
	char *target; /* vnc_connect's target, else NULL */

	pthread_t thread;
	int evfd;	     /* wakes the thread: input queued, or quit */
	bool asked_password; /* session thread only: the server asked for VncAuth */

	/* the socketpair pump (stream mode), UI thread only */
	struct stream *stream;
	int pump_fd; /* kvcon's end */
	struct loop_fd *pump_h;
	struct buf to_lib; /* stream bytes not yet written into the socketpair */
	bool stream_paused;
	bool stream_closed;

	pthread_mutex_t mu; /* everything below */
	int sock;	    /* the thread's socket, -1 once closed (vnc_free shuts it down to end blocking reads) */
	bool quit;
	bool freed; /* vnc_free called: no more callbacks */
	bool connected, closed;
	bool post_frame_pending;
	bool thread_done; /* the session thread is about to return */
	bool orphaned;	  /* vnc_free gave up waiting: the thread frees the session itself */
	bool bell;
	char *error;
	char *name;
	uint8_t *fb; /* the shared copy, w * h * 4 bytes, R G B x */
	int w, h;
	bool resized; /* size changed since the last vnc_render */
	struct vnc_rect damage[VNC_MAX_DAMAGE];
	int ndamage;
	bool damage_all;
	uint64_t updates, last_update_ms;
	struct vnc_input *queue;
	size_t nqueue, capqueue;
};

static char vnc_tag; /* rfbClientSetClientData key */
static _Thread_local char vnc_last_err[256];

/* ---- logging: libvncclient's two global printers go to kvcon's log ---- */

__attribute__((format(printf, 2, 0))) static void vnc_log_at(enum log_level lvl, const char *fmt, va_list ap)
{
	char line[512];
	vsnprintf(line, sizeof line, fmt, ap);
	size_t n = strlen(line);
	while (n && (line[n - 1] == '\n' || line[n - 1] == '\r'))
		line[--n] = '\0';
	if (lvl >= LOG_WARN)
		snprintf(vnc_last_err, sizeof vnc_last_err, "%.250s", line);
	log_msg(lvl, "libvncclient: %s", line);
}

__attribute__((format(printf, 1, 2))) static void vnc_log_info(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vnc_log_at(LOG_DEBUG, fmt, ap);
	va_end(ap);
}

__attribute__((format(printf, 1, 2))) static void vnc_log_err(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vnc_log_at(LOG_WARN, fmt, ap);
	va_end(ap);
}

/* ---- libvncclient, opened by the first session ----
 * Not linked: it and what it alone brings (libjpeg, LZO, libgcrypt, libgpg-error) were 0.6 MiB of resident pages
 * on every kvcon run, a VNC pane or not (issue 28). Each entry has the type of the header's declaration; calling
 * the library other than through lib is a link error. */
#ifndef KVCON_VNC_SONAME
#define KVCON_VNC_SONAME "libvncclient.so.1" /* the ABI of libvncserver 0.9's rfbclient.h */
#endif

static struct {
	__typeof__(rfbGetClient) *rfbGetClient;
	__typeof__(rfbClientCleanup) *rfbClientCleanup;
	__typeof__(rfbClientGetClientData) *rfbClientGetClientData;
	__typeof__(rfbClientSetClientData) *rfbClientSetClientData;
	__typeof__(ConnectClientToUnixSock) *ConnectClientToUnixSock;
	__typeof__(ConnectClientToTcpAddr6) *ConnectClientToTcpAddr6;
	__typeof__(InitialiseRFBConnection) *InitialiseRFBConnection;
	__typeof__(SetFormatAndEncodings) *SetFormatAndEncodings;
	__typeof__(SendFramebufferUpdateRequest) *SendFramebufferUpdateRequest;
	__typeof__(SendKeyEvent) *SendKeyEvent;
	__typeof__(SendPointerEvent) *SendPointerEvent;
	__typeof__(HandleRFBServerMessage) *HandleRFBServerMessage;
	char error[256]; /* why it could not be opened; "" when it was */
} lib;

#define LIB_SYM(f) { #f, (void **)&lib.f }

static void lib_open(void)
{
	const struct {
		const char *name;
		void **slot;
	} syms[] = {
		LIB_SYM(rfbGetClient),		    LIB_SYM(rfbClientCleanup),	      LIB_SYM(rfbClientGetClientData),
		LIB_SYM(rfbClientSetClientData),    LIB_SYM(ConnectClientToUnixSock), LIB_SYM(ConnectClientToTcpAddr6),
		LIB_SYM(InitialiseRFBConnection),   LIB_SYM(SetFormatAndEncodings),   LIB_SYM(SendFramebufferUpdateRequest),
		LIB_SYM(SendKeyEvent),		    LIB_SYM(SendPointerEvent),	      LIB_SYM(HandleRFBServerMessage),
	};
	void *h = dlopen(KVCON_VNC_SONAME, RTLD_NOW | RTLD_LOCAL);
	if (h == NULL) {
		snprintf(lib.error, sizeof lib.error, "cannot load libvncclient: %.200s", dlerror());
		return;
	}
	/* its two global printers go to kvcon's log */
	rfbClientLogProc *log_info = dlsym(h, "rfbClientLog"), *log_err = dlsym(h, "rfbClientErr");
	for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++)
		if ((*syms[i].slot = dlsym(h, syms[i].name)) == NULL) {
			snprintf(lib.error, sizeof lib.error, "%s has no %s", KVCON_VNC_SONAME, syms[i].name);
			return;
		}
	if (log_info == NULL || log_err == NULL) {
		snprintf(lib.error, sizeof lib.error, "%s has no rfbClientLog or rfbClientErr", KVCON_VNC_SONAME);
		return;
	}
	*log_info = vnc_log_info;
	*log_err = vnc_log_err;
}

static void vnc_init_once(void)
{
	lib_open();
	/* libvncclient write()s to its socket: a peer that went away must be an error, not SIGPIPE */
	struct sigaction sa;
	if (sigaction(SIGPIPE, NULL, &sa) == 0 && sa.sa_handler == SIG_DFL)
		signal(SIGPIPE, SIG_IGN);
}

static void vnc_global_init(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, vnc_init_once);
}

/* ---- the registry of live sessions and posts to the loop ----
 * A post carries the session's id, not its pointer: the callback finds the session in the registry, so a post
 * that arrives after vnc_free() (or after the loop stopped running posts) touches nothing and holds nothing. */

static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static struct vnc *reg_head;
static uint64_t reg_next_id;

static void reg_add(struct vnc *v)
{
	pthread_mutex_lock(&reg_mu);
	v->id = ++reg_next_id;
	v->reg_next = reg_head;
	reg_head = v;
	pthread_mutex_unlock(&reg_mu);
}

static void reg_remove(struct vnc *v)
{
	pthread_mutex_lock(&reg_mu);
	for (struct vnc **pp = &reg_head; *pp; pp = &(*pp)->reg_next)
		if (*pp == v) {
			*pp = v->reg_next;
			break;
		}
	pthread_mutex_unlock(&reg_mu);
}

/* Loop thread: the live session with this id, or NULL. It stays valid until vnc_free, which runs on this thread. */
static struct vnc *reg_find(void *arg)
{
	uint64_t id = (uint64_t)(uintptr_t)arg;
	pthread_mutex_lock(&reg_mu);
	struct vnc *v = reg_head;
	while (v && v->id != id)
		v = v->reg_next;
	pthread_mutex_unlock(&reg_mu);
	return v;
}

static void vnc_destroy(struct vnc *v)
{
	pthread_mutex_destroy(&v->mu);
	if (v->evfd >= 0)
		close(v->evfd);
	free(v->password);
	free(v->target);
	free(v->error);
	free(v->name);
	free(v->fb);
	free(v->queue);
	buf_free(&v->to_lib);
	free(v);
}

static void vnc_pump_stop(struct vnc *v);

static void on_post_frame(void *arg)
{
	struct vnc *v = reg_find(arg);
	if (v == NULL)
		return;
	pthread_mutex_lock(&v->mu);
	v->post_frame_pending = false;
	bool bell = v->bell;
	v->bell = false;
	pthread_mutex_unlock(&v->mu);
	v->cb(v, VNC_FRAME, v->arg);
	/* the callback may have freed the session */
	if (bell && reg_find(arg) == v)
		v->cb(v, VNC_BELL, v->arg);
}

static void on_post_state(void *arg)
{
	struct vnc *v = reg_find(arg);
	if (v == NULL)
		return;
	pthread_mutex_lock(&v->mu);
	bool closed = v->closed, connected = v->connected;
	pthread_mutex_unlock(&v->mu);
	if (closed) {
		vnc_pump_stop(v);
		v->cb(v, VNC_CLOSED, v->arg);
	} else if (connected) {
		v->cb(v, VNC_CONNECTED, v->arg);
	}
}

static void *post_arg(const struct vnc *v)
{
	return (void *)(uintptr_t)v->id;
}

/* Called with mu held. */
static void post_frame_locked(struct vnc *v)
{
	if (v->post_frame_pending || v->freed)
		return;
	v->post_frame_pending = true;
	loop_post(on_post_frame, post_arg(v));
}

static void post_state(struct vnc *v)
{
	loop_post(on_post_state, post_arg(v));
}

static void set_error(struct vnc *v, const char *msg)
{
	pthread_mutex_lock(&v->mu);
	if (v->error == NULL && msg && *msg)
		v->error = xstrdup(msg);
	pthread_mutex_unlock(&v->mu);
}

/* Copies the session's error (else fallback) into out. */
static void error_or(struct vnc *v, char *out, size_t n, const char *fallback)
{
	pthread_mutex_lock(&v->mu);
	snprintf(out, n, "%s", v->error ? v->error : fallback);
	pthread_mutex_unlock(&v->mu);
}

/* ---- libvncclient callbacks (session thread) ---- */

static struct vnc *vnc_of(rfbClient *c)
{
	return lib.rfbClientGetClientData(c, &vnc_tag);
}

static rfbBool cb_malloc_fb(rfbClient *c)
{
	struct vnc *v = vnc_of(c);
	free(c->frameBuffer);
	c->frameBuffer = NULL;
	if (c->width <= 0 || c->height <= 0 || c->width > VNC_MAX_SIDE || c->height > VNC_MAX_SIDE ||
	    (uint64_t)c->width * (uint64_t)c->height > VNC_MAX_PIXELS || c->format.bitsPerPixel != 32) {
		char msg[128];
		snprintf(msg, sizeof msg, "refusing a %dx%d framebuffer (%d bits a pixel)", c->width, c->height,
			 c->format.bitsPerPixel);
		log_warn("vnc: %s", msg);
		set_error(v, msg);
		return FALSE;
	}
	size_t n = (size_t)c->width * (size_t)c->height * 4;
	c->frameBuffer = calloc(1, n);
	if (c->frameBuffer == NULL)
		return FALSE;
	pthread_mutex_lock(&v->mu);
	free(v->fb);
	v->fb = xcalloc(1, n);
	v->w = c->width;
	v->h = c->height;
	v->resized = true;
	v->ndamage = 0;
	v->damage_all = true;
	pthread_mutex_unlock(&v->mu);
	return TRUE;
}

/* Clips r to the framebuffer; false when nothing is left. */
static bool clip_rect(const rfbClient *c, struct vnc_rect *r)
{
	int x0 = r->x < 0 ? 0 : r->x, y0 = r->y < 0 ? 0 : r->y;
	int64_t x1 = (int64_t)r->x + r->w, y1 = (int64_t)r->y + r->h;
	if (x1 > c->width)
		x1 = c->width;
	if (y1 > c->height)
		y1 = c->height;
	if (x1 <= x0 || y1 <= y0)
		return false;
	*r = (struct vnc_rect){x0, y0, (int)x1 - x0, (int)y1 - y0};
	return true;
}

/* Damage of the message being decoded, published in cb_finished. Session thread only. */
struct pending {
	struct vnc_rect r[VNC_MAX_DAMAGE];
	int n;
	bool all;
};

static struct pending *pending_of(rfbClient *c)
{
	static char tag;
	struct pending *p = lib.rfbClientGetClientData(c, &tag);
	if (p == NULL) {
		p = xcalloc(1, sizeof *p);
		lib.rfbClientSetClientData(c, &tag, p);
	}
	return p;
}

static void add_rect(struct vnc_rect *list, int *n, bool *all, struct vnc_rect r)
{
	if (*all)
		return;
	if (*n < VNC_MAX_DAMAGE) {
		list[(*n)++] = r;
		return;
	}
	*all = true; /* too many: the whole framebuffer (cheap next to decoding that many rectangles) */
}

static void cb_got_update(rfbClient *c, int x, int y, int w, int h)
{
	struct vnc_rect r = {x, y, w, h};
	if (!clip_rect(c, &r))
		return;
	struct pending *p = pending_of(c);
	add_rect(p->r, &p->n, &p->all, r);
}

static bool rect_inside(const rfbClient *c, int x, int y, int w, int h)
{
	return x >= 0 && y >= 0 && w >= 0 && h >= 0 && (int64_t)x + w <= c->width && (int64_t)y + h <= c->height &&
	       c->frameBuffer != NULL;
}

static void cb_copy_rect(rfbClient *c, int sx, int sy, int w, int h, int dx, int dy)
{
	if (!rect_inside(c, sx, sy, w, h) || !rect_inside(c, dx, dy, w, h)) {
		log_debug("vnc: CopyRect outside the framebuffer ignored");
		return;
	}
	size_t row = (size_t)w * 4, stride = (size_t)c->width * 4;
	if (row == 0)
		return;
	/* memmove per row, in the order that never overwrites rows still to be copied */
	for (int j = 0; j < h; j++) {
		int jj = dy > sy ? h - 1 - j : j;
		memmove(c->frameBuffer + (size_t)(dy + jj) * stride + (size_t)dx * 4,
			c->frameBuffer + (size_t)(sy + jj) * stride + (size_t)sx * 4, row);
	}
}

static void cb_fill_rect(rfbClient *c, int x, int y, int w, int h, uint32_t colour)
{
	if (!rect_inside(c, x, y, w, h))
		return;
	for (int j = y; j < y + h; j++) {
		uint32_t *p = (uint32_t *)(void *)(c->frameBuffer + (size_t)j * (size_t)c->width * 4) + x;
		for (int i = 0; i < w; i++)
			p[i] = colour;
	}
}

static void cb_bitmap(rfbClient *c, const uint8_t *buffer, int x, int y, int w, int h)
{
	if (!rect_inside(c, x, y, w, h) || buffer == NULL)
		return;
	for (int j = 0; j < h; j++)
		memcpy(c->frameBuffer + ((size_t)(y + j) * (size_t)c->width + (size_t)x) * 4,
		       buffer + (size_t)j * (size_t)w * 4, (size_t)w * 4);
}

static void cb_finished(rfbClient *c)
{
	struct vnc *v = vnc_of(c);
	struct pending *p = pending_of(c);
	pthread_mutex_lock(&v->mu);
	v->updates++;
	v->last_update_ms = util_now_ms(); /* not loop_now(): that is the loop thread's */
	if (v->fb && c->frameBuffer && v->w == c->width && v->h == c->height) {
		size_t stride = (size_t)v->w * 4;
		if (p->all) {
			memcpy(v->fb, c->frameBuffer, stride * (size_t)v->h);
			v->damage_all = true;
		} else {
			for (int i = 0; i < p->n; i++) {
				const struct vnc_rect *r = &p->r[i];
				for (int j = r->y; j < r->y + r->h; j++)
					memcpy(v->fb + (size_t)j * stride + (size_t)r->x * 4,
					       c->frameBuffer + (size_t)j * stride + (size_t)r->x * 4,
					       (size_t)r->w * 4);
				add_rect(v->damage, &v->ndamage, &v->damage_all, *r);
			}
		}
		if (p->all || p->n)
			post_frame_locked(v);
	}
	p->n = 0;
	p->all = false;
	pthread_mutex_unlock(&v->mu);
}

static void cb_bell(rfbClient *c)
{
	struct vnc *v = vnc_of(c);
	pthread_mutex_lock(&v->mu);
	v->bell = true;
	post_frame_locked(v);
	pthread_mutex_unlock(&v->mu);
}

static char *cb_password(rfbClient *c)
{
	struct vnc *v = vnc_of(c);
	v->asked_password = true;
	/* libvncclient frees what this returns */
	return strdup(v->password ? v->password : "");
}

/* ---- the session thread ---- */

static int connect_target(const char *t)
{
	if (strncmp(t, "unix:", 5) == 0)
		return lib.ConnectClientToUnixSock(t + 5);
	const char *hp = strncmp(t, "tcp:", 4) == 0 ? t + 4 : t;
	const char *colon = strrchr(hp, ':');
	if (colon == NULL)
		return -1;
	char host[256];
	size_t hl = (size_t)(colon - hp);
	if (hl >= sizeof host)
		return -1;
	memcpy(host, hp, hl);
	host[hl] = '\0';
	/* [::1]:5900 */
	if (hl >= 2 && host[0] == '[' && host[hl - 1] == ']') {
		memmove(host, host + 1, hl - 2);
		host[hl - 2] = '\0';
	}
	int port = atoi(colon + 1);
	if (port <= 0 || port > 65535)
		return -1;
	int fd = lib.ConnectClientToTcpAddr6(host, port);
	return fd;
}

static void drain_input(struct vnc *v, rfbClient *c)
{
	pthread_mutex_lock(&v->mu);
	struct vnc_input *q = v->queue;
	size_t n = v->nqueue;
	v->queue = NULL;
	v->nqueue = v->capqueue = 0;
	pthread_mutex_unlock(&v->mu);
	for (size_t i = 0; i < n && !v->opts.view_only; i++) {
		if (q[i].key)
			lib.SendKeyEvent(c, q[i].keysym, q[i].down ? TRUE : FALSE);
		else
			lib.SendPointerEvent(c, q[i].x, q[i].y, q[i].buttons);
	}
	free(q);
}

static void *vnc_thread(void *arg)
{
	struct vnc *v = arg;
	rfbClient *c = NULL;
	char why[640] = "";
	int fd;
	pthread_mutex_lock(&v->mu);
	fd = v->sock;
	bool quit = v->quit;
	pthread_mutex_unlock(&v->mu);
	if (*lib.error) {
		snprintf(why, sizeof why, "%s", lib.error);
		goto out;
	}
	if (fd < 0 && v->target && !quit) {
		fd = connect_target(v->target);
		if (fd < 0) {
			snprintf(why, sizeof why, "cannot connect to %.60s%s%.250s", v->target,
				 *vnc_last_err ? ": " : "", vnc_last_err);
			goto out;
		}
		pthread_mutex_lock(&v->mu);
		v->sock = fd;
		quit = v->quit;
		pthread_mutex_unlock(&v->mu);
	}
	if (quit)
		goto out;
	c = lib.rfbGetClient(8, 3, 4); /* 32 bits a pixel, R G B x in memory on little-endian hosts */
	lib.rfbClientSetClientData(c, &vnc_tag, v);
	c->sock = fd;
	c->MallocFrameBuffer = cb_malloc_fb;
	c->GotFrameBufferUpdate = cb_got_update;
	c->FinishedFrameBufferUpdate = cb_finished;
	c->GotCopyRect = cb_copy_rect;
	c->GotFillRect = cb_fill_rect;
	c->GotBitmap = cb_bitmap;
	c->GetPassword = cb_password;
	c->Bell = cb_bell;
	c->canHandleNewFBSize = TRUE;
	c->appData.shareDesktop = TRUE;
	c->appData.useRemoteCursor = FALSE;
	if (v->opts.quality >= 0 && v->opts.quality <= 9) {
		c->appData.enableJPEG = TRUE;
		c->appData.qualityLevel = v->opts.quality;
		c->appData.encodingsString = "tight zrle hextile zlib copyrect raw";
	} else {
		/* lossless: the framebuffer is exactly the guest's (screenshots compare equal) */
		c->appData.enableJPEG = FALSE;
		c->appData.qualityLevel = -1;
		c->appData.encodingsString = "zrle tight hextile zlib copyrect raw";
	}
	if (!lib.InitialiseRFBConnection(c)) {
		if (v->asked_password)
			snprintf(why, sizeof why, "VNC authentication failed%s",
				 v->password ? ""
					     : ": the server wants a password (--password-file, KVCON_VNC_PASSWORD)");
		else
			snprintf(why, sizeof why, "VNC handshake failed%s%.250s", *vnc_last_err ? ": " : "",
				 vnc_last_err);
		goto out;
	}
	c->width = c->si.framebufferWidth;
	c->height = c->si.framebufferHeight;
	if (!c->MallocFrameBuffer(c)) {
		error_or(v, why, sizeof why, "cannot allocate the framebuffer");
		goto out;
	}
	pthread_mutex_lock(&v->mu);
	v->name = xstrdup(c->desktopName ? c->desktopName : "");
	v->connected = true;
	pthread_mutex_unlock(&v->mu);
	post_state(v);
	if (!lib.SetFormatAndEncodings(c) || !lib.SendFramebufferUpdateRequest(c, 0, 0, c->width, c->height, FALSE)) {
		snprintf(why, sizeof why, "VNC server went away during setup");
		goto out;
	}
	for (;;) {
		pthread_mutex_lock(&v->mu);
		quit = v->quit;
		pthread_mutex_unlock(&v->mu);
		if (quit)
			break;
		struct pollfd pf[2] = {{c->sock, POLLIN, 0}, {v->evfd, POLLIN, 0}};
		/* libvncclient may already hold the next message in its own buffer */
		int pr = c->buffered > 0 ? 1 : poll(pf, 2, -1);
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr < 0) {
			snprintf(why, sizeof why, "poll: %s", strerror(errno));
			break;
		}
		if (pf[1].revents & POLLIN) {
			uint64_t x;
			if (read(v->evfd, &x, sizeof x) < 0 && errno != EAGAIN)
				break;
			drain_input(v, c);
		}
		if (c->buffered > 0 || (pf[0].revents & (POLLIN | POLLHUP | POLLERR))) {
			*vnc_last_err = '\0';
			if (!lib.HandleRFBServerMessage(c)) {
				pthread_mutex_lock(&v->mu);
				quit = v->quit;
				pthread_mutex_unlock(&v->mu);
				if (!quit)
					error_or(v, why, sizeof why,
						 *vnc_last_err ? vnc_last_err : "VNC server closed the connection");
				break;
			}
		}
	}
out:
	pthread_mutex_lock(&v->mu);
	if (v->sock >= 0)
		close(v->sock);
	v->sock = -1;
	v->closed = true;
	if (v->error == NULL && *why)
		v->error = xstrdup(why);
	pthread_mutex_unlock(&v->mu);
	if (c) {
		free(pending_of(c));
		c->sock = RFB_INVALID_SOCKET; /* closed above, under the lock */
		free(c->frameBuffer);	      /* ours (cb_malloc_fb): rfbClientCleanup leaves it */
		c->frameBuffer = NULL;
		lib.rfbClientCleanup(c);
	}
	if (*why)
		log_info("vnc: session ended: %s", why);
	post_state(v);
	pthread_mutex_lock(&v->mu);
	v->thread_done = true;
	bool orphan = v->orphaned;
	pthread_mutex_unlock(&v->mu);
	if (orphan)
		vnc_destroy(v);
	return NULL;
}

/* ---- the socketpair pump (UI thread) ---- */

static void pump_update(struct vnc *v)
{
	if (v->pump_h)
		loop_fd_set_events(v->pump_h, (short)(POLLIN | (v->to_lib.len ? POLLOUT : 0)));
	bool want_pause = v->to_lib.len > VNC_PUMP_HIGH;
	if (v->stream && !v->stream_closed && want_pause != v->stream_paused) {
		v->stream_paused = want_pause;
		stream_pause(v->stream, want_pause);
	}
}

static void pump_flush(struct vnc *v)
{
	while (v->to_lib.len && v->pump_fd >= 0) {
		ssize_t n = send(v->pump_fd, v->to_lib.data, v->to_lib.len, MSG_NOSIGNAL);
		if (n > 0) {
			buf_consume(&v->to_lib, (size_t)n);
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		buf_reset(&v->to_lib); /* the session thread is gone; it reports why */
		break;
	}
	/* the stream ended and everything reached libvncclient: let it see EOF */
	if (v->stream_closed && v->to_lib.len == 0 && v->pump_fd >= 0)
		shutdown(v->pump_fd, SHUT_WR);
	pump_update(v);
}

static void vnc_pump_stop(struct vnc *v)
{
	loop_fd_remove(v->pump_h);
	v->pump_h = NULL;
	if (v->pump_fd >= 0)
		close(v->pump_fd);
	v->pump_fd = -1;
	if (v->stream) {
		stream_free(v->stream);
		v->stream = NULL;
	}
}

static void on_pump(int fd, short revents, void *arg)
{
	struct vnc *v = arg;
	if (revents & POLLOUT)
		pump_flush(v);
	if (revents & (POLLIN | POLLHUP | POLLERR)) {
		uint8_t b[65536];
		for (int i = 0; i < 8; i++) {
			ssize_t n = read(fd, b, sizeof b);
			if (n > 0) {
				if (v->stream && !v->stream_closed && stream_write(v->stream, b, (size_t)n) < 0)
					log_warn("vnc: the stream refused %zd bytes", n);
				continue;
			}
			if (n < 0 && (errno == EAGAIN || errno == EINTR))
				break;
			/* libvncclient closed its end: the session is over; end the stream too */
			loop_fd_remove(v->pump_h);
			v->pump_h = NULL;
			if (v->stream && !v->stream_closed)
				stream_close(v->stream);
			return;
		}
	}
}

static void on_stream_data(struct stream *s, const uint8_t *data, size_t len, void *arg)
{
	(void)s;
	struct vnc *v = arg;
	buf_add(&v->to_lib, data, len);
	pump_flush(v);
}

static void on_stream_state(struct stream *s, enum stream_state st, void *arg)
{
	struct vnc *v = arg;
	if (st != STREAM_CLOSED)
		return;
	v->stream_closed = true;
	if (stream_end(s) != STREAM_END_LOCAL && stream_end(s) != STREAM_END_REMOTE) {
		char msg[320];
		snprintf(msg, sizeof msg, "%.100s %s%s%.180s", stream_name(s), stream_end_name(stream_end(s)),
			 *stream_reason(s) ? ": " : "", stream_reason(s));
		set_error(v, msg);
	}
	pump_flush(v);
}

static const struct stream_cbs vnc_stream_cbs = {on_stream_data, on_stream_state};

/* ---- public ---- */

static struct vnc *vnc_alloc(const struct vnc_opts *o, vnc_event_cb cb, void *arg)
{
	vnc_global_init();
	struct vnc *v = xcalloc(1, sizeof *v);
	v->cb = cb;
	v->arg = arg;
	if (o)
		v->opts = *o;
	else
		v->opts.quality = -1;
	v->password = xstrdup0(v->opts.password);
	v->opts.password = NULL;
	v->sock = -1;
	v->pump_fd = -1;
	buf_init(&v->to_lib);
	pthread_mutex_init(&v->mu, NULL);
	v->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (v->evfd < 0)
		fatal("eventfd: %s", strerror(errno));
	return v;
}

static void vnc_start(struct vnc *v)
{
	reg_add(v);
	int rc = pthread_create(&v->thread, NULL, vnc_thread, v);
	if (rc != 0)
		fatal("pthread_create: %s", strerror(rc));
}

struct vnc *vnc_new_fd(int fd, const struct vnc_opts *o, vnc_event_cb cb, void *arg)
{
	struct vnc *v = vnc_alloc(o, cb, arg);
	v->sock = fd;
	vnc_start(v);
	return v;
}

struct vnc *vnc_new_stream(struct stream *s, const struct vnc_opts *o, vnc_event_cb cb, void *arg)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		fatal("socketpair: %s", strerror(errno));
	struct vnc *v = vnc_alloc(o, cb, arg);
	v->stream = s;
	v->pump_fd = sv[0];
	int fl = fcntl(sv[0], F_GETFL);
	if (fl < 0 || fcntl(sv[0], F_SETFL, fl | O_NONBLOCK) < 0)
		fatal("fcntl: %s", strerror(errno));
	v->pump_h = loop_fd_add(sv[0], POLLIN, on_pump, v);
	stream_set_callbacks(s, &vnc_stream_cbs, v);
	v->sock = sv[1];
	vnc_start(v);
	return v;
}

struct vnc *vnc_connect(const char *target, const struct vnc_opts *o, vnc_event_cb cb, void *arg, char **err)
{
	if (strncmp(target, "unix:", 5) != 0 && strncmp(target, "tcp:", 4) != 0) {
		*err = xasprintf("not a VNC address: %s (unix:PATH or tcp:HOST:PORT)", target);
		return NULL;
	}
	struct vnc *v = vnc_alloc(o, cb, arg);
	v->target = xstrdup(target);
	vnc_start(v);
	return v;
}

void vnc_free(struct vnc *v)
{
	if (v == NULL)
		return;
	pthread_mutex_lock(&v->mu);
	v->freed = true;
	v->quit = true;
	/* ends blocking reads and writes in the session thread; it closes the socket itself */
	if (v->sock >= 0)
		shutdown(v->sock, SHUT_RDWR);
	pthread_mutex_unlock(&v->mu);
	uint64_t one = 1;
	if (write(v->evfd, &one, sizeof one) < 0 && errno != EAGAIN)
		log_debug("vnc: wake: %s", strerror(errno));
	vnc_pump_stop(v);
	reg_remove(v);
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_nsec += VNC_JOIN_MS * 1000000L;
	until.tv_sec += until.tv_nsec / 1000000000L;
	until.tv_nsec %= 1000000000L;
	if (pthread_timedjoin_np(v->thread, NULL, &until) == 0) {
		vnc_destroy(v);
		return;
	}
	pthread_mutex_lock(&v->mu);
	bool done = v->thread_done;
	v->orphaned = !done;
	pthread_mutex_unlock(&v->mu);
	if (done) {
		pthread_join(v->thread, NULL);
		vnc_destroy(v);
	} else {
		log_info("vnc: the session thread is still busy; it ends on its own");
		pthread_detach(v->thread);
	}
}

bool vnc_is_connected(const struct vnc *v)
{
	struct vnc *m = (struct vnc *)v;
	pthread_mutex_lock(&m->mu);
	bool c = v->connected && !v->closed;
	pthread_mutex_unlock(&m->mu);
	return c;
}

/* error and name are set once and kept until the session is destroyed: the pointer read under the lock stays
 * valid for the caller */
const char *vnc_error(const struct vnc *v)
{
	struct vnc *m = (struct vnc *)v;
	pthread_mutex_lock(&m->mu);
	const char *e = v->error ? v->error : "";
	pthread_mutex_unlock(&m->mu);
	return e;
}

const char *vnc_desktop_name(const struct vnc *v)
{
	struct vnc *m = (struct vnc *)v;
	pthread_mutex_lock(&m->mu);
	const char *n = v->name ? v->name : "";
	pthread_mutex_unlock(&m->mu);
	return n;
}

void vnc_size(struct vnc *v, int *w, int *h)
{
	pthread_mutex_lock(&v->mu);
	*w = v->w;
	*h = v->h;
	pthread_mutex_unlock(&v->mu);
}

uint64_t vnc_updates(struct vnc *v, uint64_t *last_ms)
{
	pthread_mutex_lock(&v->mu);
	uint64_t n = v->updates;
	if (last_ms)
		*last_ms = v->last_update_ms;
	pthread_mutex_unlock(&v->mu);
	return n;
}

bool vnc_render(struct vnc *v, struct fbcells *f, int cols, int rows, enum fbc_scale mode, int pan_x, int pan_y)
{
	pthread_mutex_lock(&v->mu);
	struct fbc_src src = {v->fb, v->w, v->h, (size_t)v->w * 4};
	size_t before = fbcells_ndirty(f);
	int oc = fbcells_cols(f), orows = fbcells_rows(f), opx, opy;
	fbcells_pan(f, &opx, &opy);
	fbcells_layout(f, cols, rows, v->w, v->h, mode, pan_x, pan_y);
	int npx, npy;
	fbcells_pan(f, &npx, &npy);
	bool relayout = v->resized || oc != cols || orows != rows || opx != npx || opy != npy;
	if (relayout || v->damage_all) {
		fbcells_full(f, &src);
	} else {
		for (int i = 0; i < v->ndamage; i++)
			fbcells_update(f, &src, v->damage[i].x, v->damage[i].y, v->damage[i].w, v->damage[i].h);
	}
	v->resized = false;
	v->damage_all = false;
	v->ndamage = 0;
	pthread_mutex_unlock(&v->mu);
	return fbcells_ndirty(f) != before || relayout;
}

int vnc_screenshot(struct vnc *v, const char *path, char *why)
{
	pthread_mutex_lock(&v->mu);
	int rc;
	if (v->fb == NULL || v->updates == 0) {
		errno = EAGAIN;
		rc = -1;
	} else {
		rc = png_write_rgbx(path, v->fb, v->w, v->h, (size_t)v->w * 4, why);
	}
	pthread_mutex_unlock(&v->mu);
	return rc;
}

static void queue_input(struct vnc *v, const struct vnc_input *in)
{
	if (v->opts.view_only)
		return;
	pthread_mutex_lock(&v->mu);
	/* consecutive pointer motions with the same buttons: only the last position matters; a press or release
	 * (the last entry changed the buttons, or nothing before it says) keeps its own position */
	size_t n = v->nqueue;
	bool last_moved = n >= 2 && !v->queue[n - 1].key && !v->queue[n - 2].key &&
			  v->queue[n - 2].buttons == v->queue[n - 1].buttons;
	if (!in->key && last_moved && v->queue[n - 1].buttons == in->buttons) {
		v->queue[v->nqueue - 1] = *in;
	} else {
		if (v->nqueue == v->capqueue) {
			v->capqueue = v->capqueue ? v->capqueue * 2 : 16;
			v->queue = xreallocarray(v->queue, v->capqueue, sizeof *v->queue);
		}
		v->queue[v->nqueue++] = *in;
	}
	pthread_mutex_unlock(&v->mu);
	uint64_t one = 1;
	if (write(v->evfd, &one, sizeof one) < 0 && errno != EAGAIN)
		log_debug("vnc: wake: %s", strerror(errno));
}

static void vnc_key(struct vnc *v, uint32_t keysym, bool down)
{
	struct vnc_input in = {.key = true, .keysym = keysym, .down = down};
	queue_input(v, &in);
}

void vnc_key_combo(struct vnc *v, const uint32_t *keysyms, int n)
{
	for (int i = 0; i < n; i++)
		vnc_key(v, keysyms[i], true);
	for (int i = n - 1; i >= 0; i--)
		vnc_key(v, keysyms[i], false);
}

void vnc_pointer(struct vnc *v, int x, int y, int mask)
{
	struct vnc_input in = {.key = false, .x = x, .y = y, .buttons = mask};
	queue_input(v, &in);
}

bool vnc_menu_send(struct vnc *v, int key)
{
	static const char fkeys[] = "1234567890-=";
	const char *f = key > 0 && key < 0x80 ? strchr(fkeys, key) : NULL;
	if (f && *f) {
		uint32_t seq[3] = {XK_Control_L, XK_Alt_L, (uint32_t)(XK_F1 + (f - fkeys))};
		vnc_key_combo(v, seq, 3);
		return true;
	}
	static const struct {
		int key;
		uint32_t seq[3];
		int n;
	} named[] = {
	    {'d', {XK_Control_L, XK_Alt_L, XK_Delete}, 3},
	    {'p', {XK_Print, 0, 0}, 1},
	    {'f', {XK_F8, 0, 0}, 1},
	};
	for (size_t i = 0; i < sizeof named / sizeof named[0]; i++)
		if (named[i].key == key) {
			vnc_key_combo(v, named[i].seq, named[i].n);
			return true;
		}
	return false;
}
