/* cmd_vnc: `kvcon vnc TARGET` (see cmd_vnc.h). Full-screen mode is the dashboard's VNC pane alone, zoomed to the
 * whole terminal (ui/panemain.c, as `kvcon console`): the dashboard's screen owns the terminal, with its one restore
 * path and its one frame pacer (at most ~30 frames a second, whatever the guest's rate). --screenshot and
 * --proxy-only never touch the terminal. */
#include "cmd/cmd_vnc.h"

#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "cmd/args.h"
#include "cmd/session.h"
#include "console/fbcells.h"
#include "console/rfbgate.h"
#include "console/vnc.h"
#include "core/buf.h"
#include "core/fdstream.h"
#include "core/stream.h"
#include "core/log.h"
#include "core/loop.h"
#include "core/opts.h"
#include "core/util.h"
#include "core/xmalloc.h"
#include "kube/kube.h"
#include "kube/ws.h"
#include "model/source.h"
#include "model/store.h"
#include "ui/panemain.h"
#include "ui/vnc_view.h"


struct vopts {
	const char *target;
	const char *screenshot;
	const char *colors;
	const char *password_file;
	const char *ws_protocol;
	bool proxy_only;
	int port;
	enum fbc_scale scale;
	bool view_only;
	int quality;
	int timeout_s;
	int quiet_ms;
	bool virtctl;     /* `vnc screenshot TARGET -f FILE` (virtctl's spelling): the PNG only, no JSON line */
	bool move_cursor; /* -m: the pointer moved once a frame came, to wake a screensaver */
};

/* ---- opening the target ---- */

static bool is_ws(const char *t)
{
	return util_has_prefix(t, "ws://") || util_has_prefix(t, "wss://");
}

static bool is_direct(const char *t)
{
	return util_has_prefix(t, "unix:") || util_has_prefix(t, "tcp:");
}

/* A connected socket for unix:PATH / tcp:HOST:PORT (proxy mode; local targets connect at once). */
static int connect_direct(const char *t, char **err)
{
	int fd = -1;
	if (util_has_prefix(t, "unix:")) {
		struct sockaddr_un sa = {.sun_family = AF_UNIX};
		if (strlen(t + 5) >= sizeof sa.sun_path) {
			*err = xasprintf("socket path too long: %s", t + 5);
			return -1;
		}
		strcpy(sa.sun_path, t + 5);
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0)
			return fd;
	} else {
		const char *hp = t + 4, *colon = strrchr(hp, ':');
		if (colon) {
			char *host = xstrndup(hp, (size_t)(colon - hp));
			struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(colon + 1))};
			if (strcmp(host, "localhost") == 0 || strcmp(host, "127.0.0.1") == 0)
				sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
			free(host);
			fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
			if (fd >= 0 && sa.sin_addr.s_addr && connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0)
				return fd;
		}
	}
	*err = xasprintf("cannot connect to %s: %s", t, strerror(errno));
	if (fd >= 0)
		close(fd);
	return -1;
}

/* NS/NAME: the source that has it, resolved as every verb resolves it (cmd/session.c); a cluster's provider
 * opens the VMI's vnc subresource WebSocket with the context's TLS settings and credentials, an engine host's
 * the domain's display. */
static struct store *vm_store;

static struct stream *open_vm(const char *ns, const char *name, char **err)
{
	if (vm_store == NULL)
		vm_store = store_new();
	/* only this namespace's objects (session_resolve watches ns alone): nothing else is needed for a display */
	struct source *src = session_resolve(vm_store, ns, name, KUBE_KIND_BIT(OBJ_VMI), false, err);
	if (src == NULL)
		return NULL;
	if (src->ops == NULL || src->ops->open_vnc == NULL) {
		*err = xasprintf("%s has no VNC", src->name);
		return NULL;
	}
	return src->ops->open_vnc(src, ns, name, err);
}

/* A stream to the target (ws://, wss://, NS/NAME, or a direct socket wrapped in an fdstream). */
static struct stream *open_stream(const struct vopts *o, char **err)
{
	if (is_ws(o->target)) {
		struct ws_config cfg = {.url = o->target, .subprotocol = o->ws_protocol};
		return ws_open(&cfg, NULL, o->target);
	}
	if (is_direct(o->target)) {
		int fd = connect_direct(o->target, err);
		return fd < 0 ? NULL : fdstream_new(fd, fd, o->target);
	}
	const char *slash = strchr(o->target, '/');
	if (slash == NULL || slash == o->target || slash[1] == '\0' || strchr(slash + 1, '/')) {
		*err = xasprintf("target '%s' is not NS/NAME, unix:PATH, tcp:HOST:PORT or a ws:// URL", o->target);
		return NULL;
	}
	char *ns = xstrndup(o->target, (size_t)(slash - o->target));
	struct stream *s = open_vm(ns, slash + 1, err);
	free(ns);
	return s;
}

/* The display's own password (--password-file, or KVCON_VNC_PASSWORD) into *pw (NULL when none; caller frees). */
static int read_password(const struct vopts *o, char **pw, char **err)
{
	*pw = NULL;
	if (o->password_file) {
		*pw = util_read_file(o->password_file, NULL);
		if (*pw == NULL) {
			*err = xasprintf("cannot read %s: %s", o->password_file, strerror(errno));
			return -1;
		}
		(*pw)[strcspn(*pw, "\r\n")] = '\0';
	} else if (getenv("KVCON_VNC_PASSWORD")) {
		*pw = xstrdup(getenv("KVCON_VNC_PASSWORD"));
	}
	return 0;
}

static struct vnc *open_session(const struct vopts *o, vnc_event_cb cb, void *arg, char **err)
{
	struct vnc_opts vo = {.view_only = o->view_only, .quality = o->quality};
	char *pw = NULL;
	if (read_password(o, &pw, err) < 0)
		return NULL;
	vo.password = pw;
	struct vnc *v = NULL;
	if (is_direct(o->target)) {
		v = vnc_connect(o->target, &vo, cb, arg, err);
	} else {
		struct stream *s = open_stream(o, err);
		if (s)
			v = vnc_new_stream(s, &vo, cb, arg);
	}
	if (pw) {
		memset(pw, 0, strlen(pw));
		free(pw);
	}
	return v;
}

/* ---- headless screenshot ---- */

struct shot {
	const struct vopts *o;
	struct vnc *v;
	uint64_t start;
	uint64_t moved; /* when -m moved the pointer, 0: not yet */
	const char *path; /* where the PNG is written: o->screenshot, or a temporary file for "-" */
	int rc;
};

static void shot_event(struct vnc *v, enum vnc_event ev, void *arg)
{
	struct shot *s = arg;
	(void)v;
	if (ev == VNC_CLOSED) {
		log_eprintf("error: %s\n", *vnc_error(v) ? vnc_error(v) : "the VNC session ended");
		s->rc = EXIT_API;
		loop_quit(s->rc);
	}
}

static void shot_tick(void *arg)
{
	struct shot *s = arg;
	uint64_t last, n = vnc_updates(s->v, &last), now = util_now_ms();
	if (s->o->move_cursor && n > 0 && s->moved == 0) {
		/* what virt-api's moveCursor does: a pointer motion, the screen then redrawn */
		vnc_pointer(s->v, 1, 1, 0);
		vnc_pointer(s->v, 0, 0, 0);
		s->moved = now;
	}
	bool quiet = n > 0 && now - last >= (uint64_t)s->o->quiet_ms &&
		     (!s->o->move_cursor || (s->moved && now - s->moved >= (uint64_t)s->o->quiet_ms));
	bool late = now - s->start >= (uint64_t)s->o->timeout_s * 1000;
	if (quiet || (late && n > 0)) {
		if (!quiet)
			log_eprintf("error: the screen did not settle within %d s; saving the latest frame\n",
				s->o->timeout_s);
		char why[UTIL_WHY_LEN] = "";
		if (vnc_screenshot(s->v, s->path, why) < 0) {
			log_eprintf("error: %s: %s\n", s->o->screenshot, *why ? why : strerror(errno));
			s->rc = EXIT_API;
		} else if (s->o->virtctl) {
			s->rc = EXIT_OK;
		} else {
			int w, h;
			vnc_size(s->v, &w, &h);
			printf("{\"file\":\"%s\",\"width\":%d,\"height\":%d,\"updates\":%llu}\n", s->o->screenshot, w,
			       h, (unsigned long long)n);
			s->rc = EXIT_OK;
		}
		loop_quit(s->rc);
		return;
	}
	if (late) {
		log_eprintf("error: no frame from %s within %d s\n", s->o->target, s->o->timeout_s);
		s->rc = EXIT_API;
		loop_quit(s->rc);
		return;
	}
	loop_timer_add(20, shot_tick, s);
}

/* -f -: the PNG written in a private temporary directory, then copied to stdout */
static int copy_out(const char *path)
{
	FILE *f = fopen(path, "re");
	if (f == NULL)
		return -1;
	char b[65536];
	size_t n;
	int rc = 0;
	while ((n = fread(b, 1, sizeof b, f)) > 0)
		if (fwrite(b, 1, n, stdout) != n)
			rc = -1;
	fclose(f);
	return fflush(stdout) == 0 ? rc : -1;
}

static int run_screenshot(const struct vopts *o)
{
	struct shot s = {o, NULL, util_now_ms(), 0, o->screenshot, EXIT_API};
	char *err = NULL, why[UTIL_WHY_LEN];
	char *dir = NULL, *tmp = NULL;
	bool to_stdout = strcmp(o->screenshot, "-") == 0;
	if (to_stdout) {
		const char *t = getenv("TMPDIR");
		dir = xasprintf("%s/kvcon-shot.XXXXXX", t && *t ? t : "/tmp");
		if (mkdtemp(dir) == NULL) {
			log_eprintf("error: %s: %s\n", dir, strerror(errno));
			free(dir);
			return EXIT_API;
		}
		s.path = tmp = xasprintf("%s/screenshot.png", dir);
	} else if (util_target_check(o->screenshot, why) < 0) { /* refused now, not once the screen settled */
		log_eprintf("error: %s: %s\n", o->screenshot, why);
		return EXIT_USAGE;
	}
	int rc = EXIT_API;
	s.v = open_session(o, shot_event, &s, &err);
	if (s.v == NULL) {
		log_eprintf("error: %s\n", err);
		free(err);
		goto out;
	}
	loop_timer_add(20, shot_tick, &s);
	rc = loop_run();
	vnc_free(s.v);
	if (rc == EXIT_OK && to_stdout && copy_out(tmp) < 0) {
		log_eprintf("error: failed to write image to stdout: %s\n", strerror(errno));
		rc = EXIT_API;
	}
out:
	if (tmp)
		unlink(tmp);
	if (dir)
		rmdir(dir);
	free(tmp);
	free(dir);
	return rc;
}

/* ---- proxy for an external viewer ---- */

/* The listener is on 127.0.0.1, where every local user can connect: the viewer must answer a VNC authentication
 * challenge for a password kvcon makes up and prints (rfbgate) before the display is even opened. */
struct proxy {
	const struct vopts *o;
	int lfd;
	struct loop_fd *lh;
	struct stream *server, *client;
	struct rfbgate *gate;
	struct buf to_viewer, to_display;
	char password[RFBGATE_PASSWORD_LEN + 1];
};

static void proxy_flush(struct proxy *p)
{
	if (p->to_viewer.len && p->client && stream_write(p->client, p->to_viewer.data, p->to_viewer.len) < 0)
		loop_quit(EXIT_API);
	if (p->to_display.len && p->server && stream_write(p->server, p->to_display.data, p->to_display.len) < 0)
		loop_quit(EXIT_API);
	buf_reset(&p->to_viewer);
	if (p->server)
		buf_reset(&p->to_display);
}

static const struct stream_cbs proxy_cbs;

static void proxy_open_display(struct proxy *p)
{
	char *err = NULL;
	p->server = open_stream(p->o, &err);
	if (p->server == NULL) {
		log_eprintf("error: vnc: %s\n", err);
		free(err);
		loop_quit(EXIT_API);
		return;
	}
	stream_set_callbacks(p->server, &proxy_cbs, p);
}

static void proxy_data(struct stream *s, const uint8_t *data, size_t len, void *arg)
{
	struct proxy *p = arg;
	enum rfbgate_step step = s == p->client
		? rfbgate_from_viewer(p->gate, data, len, &p->to_viewer, &p->to_display)
		: rfbgate_from_display(p->gate, data, len, &p->to_viewer, &p->to_display);
	if (step == RFBGATE_OPEN_DISPLAY)
		proxy_open_display(p);
	proxy_flush(p);
	if (step == RFBGATE_FAIL) {
		log_eprintf("error: vnc: %s\n", rfbgate_error(p->gate));
		loop_quit(EXIT_API);
	}
}

static void proxy_state(struct stream *s, enum stream_state st, void *arg)
{
	struct proxy *p = arg;
	if (st != STREAM_CLOSED)
		return;
	if (s == p->server && stream_end(s) != STREAM_END_LOCAL && stream_end(s) != STREAM_END_REMOTE)
		log_eprintf("error: vnc: %s %s%s%s\n", stream_name(s), stream_end_name(stream_end(s)),
			*stream_reason(s) ? ": " : "", stream_reason(s));
	if (!rfbgate_relaying(p->gate)) {
		if (!rfbgate_error(p->gate)[0])
			log_eprintf("error: vnc: the %s left before the handshake was done\n",
				    s == p->client ? "viewer" : "display");
		loop_quit(EXIT_API);
		return;
	}
	loop_quit(s == p->client || stream_end(s) == STREAM_END_REMOTE ? EXIT_OK : EXIT_API);
}

static const struct stream_cbs proxy_cbs = {proxy_data, proxy_state};

static void proxy_accept(int fd, short revents, void *arg)
{
	(void)revents;
	struct proxy *p = arg;
	int c = accept4(fd, NULL, NULL, SOCK_CLOEXEC);
	if (c < 0)
		return;
	/* like virtctl: the first client gets the display; the listener closes (one try at the password) */
	loop_fd_remove(p->lh);
	p->lh = NULL;
	close(p->lfd);
	p->lfd = -1;
	char *pw = NULL, *err = NULL;
	if (read_password(p->o, &pw, &err) < 0) {
		log_eprintf("error: vnc: %s\n", err);
		free(err);
		close(c);
		loop_quit(EXIT_API);
		return;
	}
	p->gate = rfbgate_new(p->password, pw, &p->to_viewer);
	if (pw) {
		memset(pw, 0, strlen(pw));
		free(pw);
	}
	p->client = fdstream_new(c, c, "vnc proxy client");
	stream_set_callbacks(p->client, &proxy_cbs, p);
	proxy_flush(p);
}

static int run_proxy(const struct vopts *o)
{
	struct proxy p = {.o = o, .lfd = -1};
	buf_init(&p.to_viewer);
	buf_init(&p.to_display);
	rfbgate_random_password(p.password);
	p.lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int one = 1;
	setsockopt(p.lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)o->port)};
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t sl = sizeof sa;
	if (p.lfd < 0 || bind(p.lfd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(p.lfd, 1) < 0 ||
	    getsockname(p.lfd, (struct sockaddr *)&sa, &sl) < 0) {
		log_eprintf("error: vnc: cannot listen on 127.0.0.1:%d: %s\n", o->port, strerror(errno));
		if (p.lfd >= 0)
			close(p.lfd);
		return EXIT_API;
	}
	printf("{\"port\":%d,\"password\":\"%s\"}\n", ntohs(sa.sin_port), p.password);
	fflush(stdout);
	p.lh = loop_fd_add(p.lfd, POLLIN, proxy_accept, &p);
	int rc = loop_run();
	loop_fd_remove(p.lh);
	if (p.lfd >= 0)
		close(p.lfd);
	stream_free(p.client);
	stream_free(p.server);
	rfbgate_free(p.gate);
	buf_free(&p.to_viewer);
	buf_free(&p.to_display);
	memset(p.password, 0, sizeof p.password);
	return rc;
}

/* ---- full-screen viewer: the VNC pane alone on the dashboard's screen (ui/panemain.c) ---- */

struct viewer {
	int rc;
	char *why; /* set when the session ended by itself */
};

/* The server closed, refused the password or could not be reached: leave with an error, as virtctl vnc does. */
static void viewer_ended(void *arg, const char *why)
{
	struct viewer *w = arg;
	if (w->why)
		return;
	w->why = xstrdup(why);
	w->rc = EXIT_API;
	loop_quit(EXIT_API);
}

static int run_viewer(const struct vopts *o)
{
	if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
		log_eprintf("error: the display needs a terminal (use --screenshot or --proxy-only)\n");
		return EXIT_USAGE;
	}
	struct viewer w = {.rc = EXIT_OK};
	char *pw = NULL, *err = NULL;
	struct view *v = NULL;
	if (read_password(o, &pw, &err) == 0) {
		struct vnc_view_opts vo = {.password = pw,
					   .colors = o->colors,
					   .own_screen = true,
					   .scale = o->scale,
					   .view_only = o->view_only || opts_global()->readonly,
					   .quality = o->quality,
					   .ended = viewer_ended,
					   .arg = &w};
		if (is_direct(o->target))
			vo.direct = o->target;
		else
			vo.stream = open_stream(o, &err);
		if (vo.direct || vo.stream)
			v = vnc_view_new(&vo, &err);
	}
	if (pw) {
		memset(pw, 0, strlen(pw));
		free(pw);
	}
	if (v == NULL) {
		log_eprintf("error: %s\n", err ? err : "no display");
		free(err);
		return EXIT_API;
	}
	uint64_t start = util_now_ms();
	int rc = panemain_run(v);
	if (rc < 0)
		return EXIT_USAGE; /* no terminal to take (said on stderr); the pane is freed */
	log_info("vnc: %lu frames drawn in %.1f s", panemain_frames(), (double)(util_now_ms() - start) / 1000.0);
	panemain_close();
	if (w.why)
		log_eprintf("error: %s\n", *w.why ? w.why : "the VNC session ended");
	free(w.why);
	return w.rc != EXIT_OK ? w.rc : rc;
}

/* ---- arguments ---- */

int cmd_vnc(int argc, char **argv)
{
	/* the flags are the command table's (cmd/cmd.c), checked by its parser (cmd/args.c) */
	struct args a;
	int p = args_parse_verb(argc, argv, &a);
	struct vopts o = { .scale = FBC_FIT, .quality = -1, .timeout_s = 30, .quiet_ms = 500 };
	/* `kvcon vnc screenshot TARGET -f FILE|- [-m]`: virtctl's spelling of --screenshot */
	int first = 0;
	if (p == ARGS_OK && a.npos == 2 && strcmp(a.pos[0], "screenshot") == 0) {
		o.virtctl = true;
		first = 1;
	}
	if (p == ARGS_OK && a.npos != first + 1) {
		log_eprintf("error: %s\nSee 'kvcon vnc --help' for usage.\n",
			    a.npos > first ? "one display at a time" : "which display? (NS/NAME, unix:PATH, tcp:HOST:PORT or ws://URL)");
		p = ARGS_ERR;
	}
	if (p == ARGS_OK) {
		o.target = a.pos[first];
		o.screenshot = args_get(&a, "--screenshot");
		if (args_get(&a, "--file"))
			o.screenshot = args_get(&a, "--file");
		o.move_cursor = args_bool(&a, "--move-cursor");
		o.colors = args_get(&a, "--colors");
		o.password_file = args_get(&a, "--password-file");
		o.ws_protocol = args_get(&a, "--ws-protocol");
		o.port = (int)args_num(&a, "--port", 0);
		o.quality = (int)args_num(&a, "--quality", -1);
		o.timeout_s = (int)((args_num(&a, "--timeout", 30000) + 999) / 1000);
		o.quiet_ms = (int)args_num(&a, "--quiet-ms", 500);
		o.proxy_only = args_bool(&a, "--proxy-only");
		o.view_only = args_bool(&a, "--view-only");
		const char *scale = args_get(&a, "--scale");
		if (scale && strcmp(scale, "fit") != 0 && strcmp(scale, "1:1") != 0) {
			log_eprintf("error: --scale takes fit or 1:1\n");
			p = ARGS_ERR;
		}
		o.scale = scale && strcmp(scale, "1:1") == 0 ? FBC_ONE : FBC_FIT;
		if (o.port > 65535 || o.quality > 9 || o.timeout_s <= 0) {
			log_eprintf("error: %s\n", o.port > 65535 ? "--port takes 0-65535" : o.quality > 9 ? "--quality takes 0-9"
										       : "--timeout must be more than 0");
			p = ARGS_ERR;
		}
		if (o.colors && !fbcells_colour_parse(o.colors, &(enum fbc_colour){ FBC_MONO })) {
			log_eprintf("error: --colors takes truecolor, 256 or mono\n");
			p = ARGS_ERR;
		}
		if (p == ARGS_OK && o.virtctl && o.screenshot == NULL) {
			log_eprintf("error: required flag(s) \"file\" not set\n");
			p = ARGS_ERR;
		}
		if (p == ARGS_OK && ((o.move_cursor && o.screenshot == NULL) || (o.screenshot && o.proxy_only) ||
				     (o.screenshot && strcmp(o.screenshot, "-") == 0 && !o.virtctl))) {
			log_eprintf("error: %s\n", o.move_cursor && o.screenshot == NULL ? "-m goes with vnc screenshot -f FILE"
						   : o.proxy_only ? "--proxy-only and a screenshot exclude each other"
								  : "-f - (stdout) is vnc screenshot's");
			p = ARGS_ERR;
		}
	}
	args_free(&a);
	if (p != ARGS_OK)
		return p == ARGS_HELP ? EXIT_OK : EXIT_USAGE;
	if (log_path() == NULL)
		log_open(opts_global()->log);
	loop_init();
	int rc;
	if (o.proxy_only)
		rc = run_proxy(&o);
	else if (o.screenshot)
		rc = run_screenshot(&o);
	else
		rc = run_viewer(&o);
	/* the loop may still hold posts from the session thread; give them one pass to drain */
	loop_once(0);
	if (vm_store) {
		source_free_all();
		store_free(vm_store);
		vm_store = NULL;
	}
	return rc;
}
