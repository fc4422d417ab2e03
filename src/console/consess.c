/* Console session: stream <-> vtpane with waiting, reconnect backoff, VMI replacement markers and logging. */
#include "console/consess.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <arpa/inet.h>
#include <stdarg.h>
#include <unistd.h>

#include "core/fdstream.h"
#include "core/log.h"
#include "core/loop.h"
#include "core/util.h"
#include "core/xmalloc.h"
#include "kube/ws.h"

#define BACKOFF_MIN_MS 500
#define BACKOFF_MAX_MS 10000

struct consess {
	struct store *st;
	struct source *src;
	char *ns, *name, *target;
	int log_fd;
	bool no_reconnect;
	bool view_only;
	struct vtpane *pane;
	struct stream *s;
	enum consess_state state;
	char status[256];
	char uid[UID_LEN];        /* VMI UID of the current/last connection */
	char seen_uid[UID_LEN];   /* VMI UID last seen in the store */
	char replaced_uid[UID_LEN]; /* the new UID a replacement marker was printed for */
	uint64_t backoff_ms;
	struct loop_timer *retry;
	int reconnects;
	bool ever_open;
	uint64_t bytes_in;
	void (*changed)(void *arg);
	void *arg;
};

static void cs_changed(struct consess *cs)
{
	if (cs->changed)
		cs->changed(cs->arg);
}

static void set_status(struct consess *cs, enum consess_state st, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void set_status(struct consess *cs, enum consess_state st, const char *fmt, ...)
{
	cs->state = st;
	char raw[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(raw, sizeof raw, fmt, ap);
	va_end(ap);
	char *esc = util_escape_display(raw);
	snprintf(cs->status, sizeof cs->status, "%s", esc);
	free(esc);
	cs_changed(cs);
}

static void note(struct consess *cs, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(struct consess *cs, const char *fmt, ...)
{
	char raw[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(raw, sizeof raw, fmt, ap);
	va_end(ap);
	vtpane_note(cs->pane, raw);
	cs_changed(cs);
}

/* The VMI as the store has it (NULL when unknown or no store). */
static const struct vmi *cs_vmi(const struct consess *cs)
{
	if (!cs->st || !cs->src || !cs->ns)
		return NULL;
	const struct obj *o = store_find(cs->st, cs->src, OBJ_VMI, cs->ns, cs->name);
	return o ? (const struct vmi *)o : NULL;
}

static void cs_connect(struct consess *cs);
/* Opens ws(s):// URLs, unix:PATH and tcp:HOST:PORT (a session given a target instead of a VMI). */
static struct stream *consess_open_target(const char *target, char **err);
static void wait_for(struct consess *cs);

static void on_retry(void *arg)
{
	struct consess *cs = arg;
	cs->retry = NULL;
	cs_connect(cs);
}

static void schedule_retry(struct consess *cs, const char *why)
{
	if (cs->no_reconnect) {
		set_status(cs, CONSESS_ENDED, "ended: %s", why);
		return;
	}
	cs->backoff_ms = cs->backoff_ms ? cs->backoff_ms * 2 : BACKOFF_MIN_MS;
	if (cs->backoff_ms > BACKOFF_MAX_MS)
		cs->backoff_ms = BACKOFF_MAX_MS;
	/* jitter: 75-125% so many panes do not reconnect in step */
	uint64_t ms = cs->backoff_ms * 3 / 4 + (uint64_t)(rand() % (int)(cs->backoff_ms / 2 + 1));
	loop_timer_cancel(cs->retry);
	cs->retry = loop_timer_add(ms, on_retry, cs);
	set_status(cs, CONSESS_BACKOFF, "reconnecting in %.1f s: %s", (double)ms / 1000.0, why);
}

static void on_data(struct stream *s, const uint8_t *data, size_t len, void *arg)
{
	(void)s;
	struct consess *cs = arg;
	cs->bytes_in += len;
	if (cs->log_fd >= 0) {
		/* the log is best effort: a full disk must not stop the console */
		size_t off = 0;
		while (off < len) {
			ssize_t n = write(cs->log_fd, data + off, len - off);
			if (n <= 0)
				break;
			off += (size_t)n;
		}
	}
	vtpane_input(cs->pane, data, len);
	cs_changed(cs);
}

static void on_state(struct stream *s, enum stream_state st, void *arg)
{
	struct consess *cs = arg;
	if (st == STREAM_OPEN) {
		cs->backoff_ms = 0;
		const struct vmi *v = cs_vmi(cs);
		const char *uid = v ? v->o.uid : "";
		if (cs->ever_open && cs->uid[0] && uid[0] && strcmp(cs->uid, uid) != 0 && strcmp(cs->replaced_uid, uid) != 0)
			note(cs, "[kvcon: VMI replaced: %s -> %s; reconnected]", cs->uid, uid);
		else if (cs->ever_open)
			note(cs, "[kvcon: reconnected to VMI %s]", uid[0] ? uid : "(unknown)");
		snprintf(cs->uid, sizeof cs->uid, "%s", uid);
		cs->ever_open = true;
		set_status(cs, CONSESS_OPEN, "connected%s%s", uid[0] ? " to VMI " : "", uid);
		return;
	}
	if (st != STREAM_CLOSED)
		return;
	char why[300];
	snprintf(why, sizeof why, "%s%s%s", stream_end_name(stream_end(s)), *stream_reason(s) ? ": " : "",
		 stream_reason(s));
	if (stream_status(s) && stream_end(s) == STREAM_END_REFUSED)
		snprintf(why, sizeof why, "refused (%d): %s", stream_status(s), stream_reason(s));
	cs->s = NULL;
	stream_free(s);
	if (cs->ever_open && !cs->no_reconnect)
		note(cs, "[kvcon: connection lost (%s); reconnecting]", why);
	schedule_retry(cs, why);
}

static const struct stream_cbs cs_cbs = { on_data, on_state };

static void cs_connect(struct consess *cs)
{
	if (cs->s)
		return;
	char *err = NULL;
	struct stream *s = NULL;
	if (cs->target) {
		s = consess_open_target(cs->target, &err);
	} else {
		const struct vmi *v = cs_vmi(cs);
		if (cs->st && !v && cs->src && cs->src->health[OBJ_VMI].state != WATCH_LIVE) {
			set_status(cs, CONSESS_WAITING, "waiting for the VMI list of %s", cs->src->name);
			wait_for(cs);
			return;
		}
		if (cs->st && !v) {
			set_status(cs, CONSESS_WAITING, "waiting for VMI %s/%s to exist", cs->ns, cs->name);
			wait_for(cs);
			return;
		}
		if (v && strcmp(v->phase, "Running") != 0) {
			set_status(cs, CONSESS_WAITING, "waiting for VMI %s/%s to be Running (phase %s)", cs->ns,
				   cs->name, v->phase[0] ? v->phase : "unset");
			wait_for(cs);
			return;
		}
		if (!cs->src || !cs->src->ops || !cs->src->ops->open_console)
			err = xstrdup("this source has no serial console");
		else
			s = cs->src->ops->open_console(cs->src, cs->ns, cs->name, &err);
	}
	if (!s) {
		char why[256];
		snprintf(why, sizeof why, "%s", err ? err : "cannot open the console");
		free(err);
		schedule_retry(cs, why);
		return;
	}
	cs->s = s;
	stream_set_callbacks(s, &cs_cbs, cs);
	if (cs->ever_open)
		cs->reconnects++;
	set_status(cs, CONSESS_CONNECTING, "connecting to %s", stream_name(s));
}

static void on_recheck(void *arg)
{
	struct consess *cs = arg;
	cs->retry = NULL;
	if (cs->state == CONSESS_WAITING)
		cs_connect(cs);
}

/* Waiting is re-evaluated on every store change of the VMI, and once a second (the list may end without one). */
static void wait_for(struct consess *cs)
{
	loop_timer_cancel(cs->retry);
	cs->retry = loop_timer_add(1000, on_recheck, cs);
}

static void on_start(void *arg)
{
	struct consess *cs = arg;
	cs->retry = NULL;
	cs_connect(cs);
}

static void on_pane_output(const char *data, size_t len, void *arg)
{
	struct consess *cs = arg;
	if (cs->s && !cs->view_only) /* read-only: the one place bytes go to the guest, so nothing does */
		stream_write(cs->s, data, len);
}

struct consess *consess_new(const struct consess_opts *o, void (*changed)(void *arg), void *arg, char **err)
{
	int log_fd = -1;
	if (o->log_path) {
		char why[UTIL_WHY_LEN];
		log_fd = util_open_private(o->log_path, O_APPEND, false, why); /* the guest's output: 0600 */
		if (log_fd < 0) {
			*err = xasprintf("%s: %s", o->log_path, why);
			return NULL;
		}
	}
	struct consess *cs = xcalloc(1, sizeof *cs);
	cs->st = o->st;
	cs->src = o->src;
	cs->ns = xstrdup0(o->ns);
	cs->name = xstrdup0(o->name);
	cs->target = xstrdup0(o->target);
	cs->log_fd = log_fd;
	cs->no_reconnect = o->no_reconnect;
	cs->view_only = o->view_only;
	cs->pane = vtpane_new(o->rows, o->cols, o->scrollback ? o->scrollback : VTPANE_SCROLLBACK_DEFAULT);
	vtpane_set_output(cs->pane, on_pane_output, cs);
	cs->changed = changed;
	cs->arg = arg;
	cs->state = CONSESS_CONNECTING;
	snprintf(cs->status, sizeof cs->status, "starting");
	const struct vmi *v = cs_vmi(cs);
	if (v)
		snprintf(cs->seen_uid, sizeof cs->seen_uid, "%s", v->o.uid);
	/* the first attempt from the loop, so the owner has its pointer before any callback */
	cs->retry = loop_timer_add(0, on_start, cs);
	return cs;
}

void consess_free(struct consess *cs)
{
	if (!cs)
		return;
	loop_timer_cancel(cs->retry);
	stream_free(cs->s);
	vtpane_free(cs->pane);
	if (cs->log_fd >= 0)
		close(cs->log_fd);
	free(cs->ns);
	free(cs->name);
	free(cs->target);
	free(cs);
}

struct vtpane *consess_pane(struct consess *cs)
{
	return cs->pane;
}

enum consess_state consess_state(const struct consess *cs)
{
	return cs->state;
}

bool consess_view_only(const struct consess *cs)
{
	return cs->view_only;
}

const char *consess_status(const struct consess *cs)
{
	return cs->status;
}

const char *consess_uid(const struct consess *cs)
{
	return cs->uid;
}

uint64_t consess_bytes_in(const struct consess *cs)
{
	return cs->bytes_in;
}

void consess_key(struct consess *cs, int ch, bool keycode, int mods)
{
	vtpane_key(cs->pane, ch, keycode, mods);
	/* only local changes (copy mode, leaving the scrollback) need a frame; the guest's echo brings its own */
	if (vtpane_dirty(cs->pane))
		cs_changed(cs);
}

void consess_paste(struct consess *cs, const char *text, size_t len)
{
	vtpane_paste(cs->pane, text, len);
}

void consess_resize(struct consess *cs, int rows, int cols)
{
	vtpane_resize(cs->pane, rows, cols);
	if (cs->s)
		stream_resize(cs->s, cols, rows);
	cs_changed(cs);
}

void consess_store_changed(struct consess *cs, enum obj_kind kind, const struct obj *old, const struct obj *new_)
{
	if (kind != OBJ_VMI || cs->target || !cs->ns)
		return;
	const struct obj *o = new_ ? new_ : old;
	if (!o || o->src != cs->src || strcmp(o->ns, cs->ns) != 0 || strcmp(o->name, cs->name) != 0)
		return;
	if (!new_) {
		if (cs->seen_uid[0])
			note(cs, "[kvcon: VMI %s deleted; waiting for a new one]", cs->seen_uid);
		cs->seen_uid[0] = '\0';
		return;
	}
	const struct vmi *v = (const struct vmi *)new_;
	if (cs->uid[0] && strcmp(cs->uid, new_->uid) != 0 && strcmp(cs->replaced_uid, new_->uid) != 0) {
		/* a new execution: the old stream belongs to a guest that is gone */
		note(cs, "[kvcon: VMI replaced: %s -> %s]", cs->uid, new_->uid);
		snprintf(cs->replaced_uid, sizeof cs->replaced_uid, "%s", new_->uid);
		if (cs->s) {
			struct stream *s = cs->s;
			cs->s = NULL;
			stream_free(s);
			set_status(cs, CONSESS_WAITING, "VMI replaced; waiting for %s", new_->uid);
		}
	}
	snprintf(cs->seen_uid, sizeof cs->seen_uid, "%s", new_->uid);
	bool running = strcmp(v->phase, "Running") == 0;
	if (!cs->s && (cs->state == CONSESS_WAITING || (running && cs->state == CONSESS_BACKOFF))) {
		loop_timer_cancel(cs->retry);
		cs->retry = NULL;
		cs->backoff_ms = 0;
		cs_connect(cs);
	} else if (!cs->s && cs->state == CONSESS_OPEN) {
		cs_connect(cs);
	}
}

/* ---- targets that are not a VMI ---- */

static int connect_unix(const char *path, char **err)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof sa.sun_path) {
		*err = xasprintf("socket path too long: %s", path);
		return -1;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0)
		return fd;
	*err = xasprintf("cannot connect to %s: %s", path, strerror(errno));
	if (fd >= 0)
		close(fd);
	return -1;
}

static int connect_tcp(const char *hostport, char **err)
{
	const char *colon = strrchr(hostport, ':');
	if (!colon) {
		*err = xasprintf("tcp target needs HOST:PORT: %s", hostport);
		return -1;
	}
	char *host = xstrndup(hostport, (size_t)(colon - hostport));
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(colon + 1)) };
	int ok = strcmp(host, "localhost") == 0 ? (sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK), 1)
						: inet_pton(AF_INET, host, &sa.sin_addr);
	free(host);
	if (ok != 1) {
		*err = xasprintf("tcp target needs a numeric IPv4 address or localhost: %s", hostport);
		return -1;
	}
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0)
		return fd;
	*err = xasprintf("cannot connect to %s: %s", hostport, strerror(errno));
	if (fd >= 0)
		close(fd);
	return -1;
}

static struct stream *consess_open_target(const char *target, char **err)
{
	if (util_has_prefix(target, "ws://") || util_has_prefix(target, "wss://")) {
		const char *proto = getenv("KVCON_WS_SUBPROTOCOL");
		struct ws_config cfg = { .url = target, .subprotocol = proto && *proto ? proto : NULL };
		return ws_open(&cfg, NULL, target);
	}
	int fd = -1;
	if (util_has_prefix(target, "unix:"))
		fd = connect_unix(target + 5, err);
	else if (util_has_prefix(target, "tcp:"))
		fd = connect_tcp(target + 4, err);
	else
		*err = xasprintf("unknown target '%s' (NS/NAME, ws://URL, unix:PATH or tcp:HOST:PORT)", target);
	return fd < 0 ? NULL : fdstream_new(fd, fd, target);
}
