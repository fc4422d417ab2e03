/* log_view: a container's log as a pane (`l` on a VM, VMI or pod). The log comes through the source's provider
 * (provider_ops open_log: pods/log on a cluster, QEMU's and the serial log on the engine), split into lines that
 * are display-escaped on arrival (core/linebuf.h), so nothing from the guest or the cluster reaches the terminal
 * raw. The pane follows new lines while it is at the bottom; scrolling up stops following, G or f resume. Long
 * lines are cut, or wrapped (w). / n N search as in the pager; C picks the next container, p the previous
 * instance, r reads the log again (a new launcher after a restart). */
#include "ui/log_view.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/linebuf.h"
#include "core/xmalloc.h"
#include "model/chain.h"
#include "model/source.h"
#include "ui/draw.h"
#include "ui/scroller.h"
#include "ui/theme.h"
#include "ui/ui.h"
#include "ui/view.h"

#define LOG_MAX_LINES 50000 /* the oldest lines go beyond this */

struct log_view {
	struct view *view;
	unsigned id;
	struct source *src;
	char *ns, *name;       /* what `l` was pressed on */
	char *pod, *vm;        /* what is read */
	char **containers;     /* the pod's containers (engine: compute, serial) */
	int ncontainers, cur;  /* cur: index into containers, -1: the server's default */
	bool previous, follow, wrap;
	struct log_stream *ls;
	struct linebuf lb;
	char **lines;
	size_t cap;
	struct scroller sc;    /* over lines (sc.n of them); sc.top: the first shown when not following */
	char state[160];       /* "streaming", "ended", the API's message */
	struct log_view *next;
};

static struct log_view *live;
static unsigned next_id;

static struct log_view *find_id(unsigned id)
{
	for (struct log_view *w = live; w; w = w->next)
		if (w->id == id)
			return w;
	return NULL;
}

static void add_line(void *arg, const char *line, size_t len)
{
	struct log_view *w = arg;
	struct scroller *sc = &w->sc;
	if (sc->n == LOG_MAX_LINES) {
		size_t drop = LOG_MAX_LINES / 10;
		for (size_t i = 0; i < drop; i++)
			free(w->lines[i]);
		memmove(w->lines, w->lines + drop, (sc->n - drop) * sizeof *w->lines);
		sc->n -= drop;
		sc->top = sc->top > drop ? sc->top - drop : 0;
		if (sc->hit >= 0)
			sc->hit = sc->hit >= (long)drop ? sc->hit - (long)drop : -1;
	}
	if (sc->n == w->cap) {
		w->cap = w->cap ? w->cap * 2 : 256;
		w->lines = xreallocarray(w->lines, w->cap, sizeof *w->lines);
		sc->lines = w->lines;
	}
	w->lines[sc->n++] = xstrndup(line, len);
}

static bool on_data(void *arg, const char *data, size_t len)
{
	struct log_view *w = find_id((unsigned)(uintptr_t)arg);
	if (w == NULL)
		return false;
	linebuf_feed(&w->lb, data, len, add_line, w);
	view_dirty(w->view);
	return true;
}

static void on_end(void *arg, int status, const char *message)
{
	struct log_view *w = find_id((unsigned)(uintptr_t)arg);
	if (w == NULL)
		return;
	w->ls = NULL;
	linebuf_flush(&w->lb, add_line, w);
	if (status == 0)
		snprintf(w->state, sizeof w->state, "%s", w->sc.n ? "ended" : "ended: the log is empty");
	else
		snprintf(w->state, sizeof w->state, "%s", message ? message : "the log could not be read");
	view_dirty(w->view);
}

static void clear_lines(struct log_view *w)
{
	for (size_t i = 0; i < w->sc.n; i++)
		free(w->lines[i]);
	w->sc.n = 0;
	w->sc.top = 0;
	w->sc.hit = -1;
	linebuf_free(&w->lb);
	linebuf_init(&w->lb);
}

/* (Re)reads the log with the current container and instance. 0, or -1 with the reason in w->state. */
static int start(struct log_view *w)
{
	if (w->src->closed) {
		w->ls = NULL;
		snprintf(w->state, sizeof w->state, "the source %s is closed", w->src->name);
		view_dirty(w->view);
		return -1;
	}
	if (w->ls && w->src->ops->close_log && !w->src->closed) /* a closed source dropped its requests already */
		w->src->ops->close_log(w->ls);
	w->ls = NULL;
	clear_lines(w);
	struct log_req req = {
		.ns = w->ns,
		.pod = w->pod,
		.vm = w->vm,
		.container = w->cur >= 0 ? w->containers[w->cur] : NULL,
		.follow = !w->previous,
		.previous = w->previous,
		.tail_lines = -1,
	};
	char *err = NULL;
	w->ls = w->src->ops->open_log(w->src, &req, on_data, on_end, (void *)(uintptr_t)w->id, &err);
	if (w->ls == NULL) {
		snprintf(w->state, sizeof w->state, "%s", err ? err : "refused");
		free(err);
		view_dirty(w->view);
		return -1;
	}
	snprintf(w->state, sizeof w->state, "%s", w->previous ? "reading" : "streaming");
	view_dirty(w->view);
	return 0;
}

/* The engine service's pod may list the serial log as a container of its own. */
static bool has_serial(const struct pod *p)
{
	for (int i = 0; i < p->ncontainers; i++)
		if (p->containers[i].name && strcmp(p->containers[i].name, "serial") == 0)
			return true;
	return false;
}

static void set_pod(struct log_view *w, const struct pod *p, const char *vm_name)
{
	free(w->pod);
	free(w->vm);
	for (int i = 0; i < w->ncontainers; i++)
		free(w->containers[i]);
	free(w->containers);
	w->pod = xstrdup(p->o.name);
	w->vm = xstrdup0(vm_name);
	const char *names[32]; /* every container of the spec, started or not */
	w->ncontainers = pod_container_names(p, names, 32);
	w->containers = xcalloc((size_t)(w->ncontainers + 1), sizeof *w->containers);
	for (int i = 0; i < w->ncontainers; i++)
		w->containers[i] = xstrdup(names[i]);
	if (w->src->engine && !has_serial(p)) { /* the engine's launcher: one container, two logs (compute, serial) */
		w->containers = xreallocarray(w->containers, (size_t)w->ncontainers + 2, sizeof *w->containers);
		w->containers[w->ncontainers++] = xstrdup("serial");
	}
	const char *dflt = pod_default_container(p, NULL);
	w->cur = w->ncontainers > 0 ? 0 : -1;
	for (int i = 0; dflt && i < w->ncontainers; i++)
		if (strcmp(w->containers[i], dflt) == 0)
			w->cur = i;
}

/* ---- drawing ---- */

static void draw(struct view *v, const struct region *r)
{
	struct log_view *w = v->priv;
	int rows = r->h - 1;
	if (rows < 1 || r->w < 2) {
		draw_clear_rect(r->y, r->x, r->h, r->w, theme_attr(THEME_NORMAL));
		return;
	}
	w->sc.page = rows;
	w->sc.width = r->w;
	if (w->follow)
		w->sc.top = scroller_max_top(&w->sc);
	scroller_draw(&w->sc, r->y, r->x, r->w, rows, 0);
	char status[768];
	snprintf(status, sizeof status, " %s/%s [%s%s] | %s | %zu lines%s%s | C container  p previous  w wrap  f follow",
		 w->ns, w->pod, w->cur >= 0 ? w->containers[w->cur] : "default", w->previous ? ", previous" : "",
		 w->state, w->sc.n, w->follow ? ", following" : "", w->sc.wrap ? ", wrapped" : "");
	draw_cell(r->y + r->h - 1, r->x, r->w, A_REVERSE, status, false);
}

/* ---- keys ---- */

/* After a scroll: the pane follows new lines again once it is at the bottom of a live log. */
static void scrolled(struct log_view *w)
{
	w->follow = w->sc.top >= scroller_max_top(&w->sc) && !w->previous && w->ls != NULL;
	view_dirty(w->view);
}

static void search_done(void *arg, const char *text)
{
	struct log_view *w = find_id((unsigned)(uintptr_t)arg);
	if (w == NULL || *text == '\0')
		return;
	scroller_search(&w->sc, text);
	w->follow = false;
	view_dirty(w->view);
}

/* r: the object may have a new launcher now (a restart): resolve it again. */
static void reload(struct log_view *w)
{
	char *why = NULL;
	const char *vm_name = NULL;
	const struct pod *p = chain_log_pod(ui_store(), w->src, w->ns, w->name, &vm_name, &why);
	if (p == NULL) {
		snprintf(w->state, sizeof w->state, "%s", why ? why : "nothing to show");
		free(why);
		view_dirty(w->view);
		return;
	}
	if (strcmp(p->o.name, w->pod) != 0) {
		char *keep = w->cur >= 0 ? xstrdup(w->containers[w->cur]) : NULL;
		set_pod(w, p, vm_name);
		for (int i = 0; keep && i < w->ncontainers; i++)
			if (strcmp(w->containers[i], keep) == 0)
				w->cur = i;
		free(keep);
	}
	w->follow = !w->previous;
	start(w);
}

static enum view_result key(struct view *v, int k)
{
	struct log_view *w = v->priv;
	if (w->follow) /* moves start from the bottom the pane shows */
		w->sc.top = scroller_max_top(&w->sc);
	if (k == 'n' || k == 'N') {
		if (scroller_find(&w->sc, k == 'n'))
			w->follow = false;
		view_dirty(v);
		return VIEW_DONE;
	}
	if (scroller_key(&w->sc, k)) {
		scrolled(w);
		if (k == 'G' || k == VKEY(KEY_END))
			w->follow = !w->previous;
		return VIEW_DONE;
	}
	switch (k) {
	case 'f':
		w->follow = !w->follow;
		if (!w->follow)
			w->sc.top = scroller_max_top(&w->sc);
		view_dirty(v);
		return VIEW_DONE;
	case 'w':
		w->sc.wrap = !w->sc.wrap;
		view_dirty(v);
		return VIEW_DONE;
	case '/':
		ui_prompt("search: ", search_done, NULL, (void *)(uintptr_t)w->id);
		return VIEW_DONE;
	case 'C':
		if (w->ncontainers < 2) {
			ui_message("%s has only one container", w->pod);
			return VIEW_DONE;
		}
		w->cur = (w->cur + 1) % w->ncontainers;
		w->follow = !w->previous;
		start(w);
		return VIEW_DONE;
	case 'p':
		w->previous = !w->previous;
		w->follow = !w->previous;
		start(w);
		return VIEW_DONE;
	case 'r':
		reload(w);
		return VIEW_DONE;
	case 'q':
		return VIEW_CLOSE;
	default:
		return VIEW_PASS;
	}
}

static enum view_result mouse(struct view *v, const struct view_mouse *m)
{
	struct log_view *w = v->priv;
	if (w->follow)
		w->sc.top = scroller_max_top(&w->sc);
	if (!scroller_mouse(&w->sc, m))
		return VIEW_PASS;
	scrolled(w);
	return VIEW_DONE;
}

static void title(struct view *v, char *buf, size_t len)
{
	struct log_view *w = v->priv;
	snprintf(buf, len, "logs %s/%s%s", w->ns, w->name, w->ls ? "" : " (ended)");
}

static void destroy(struct view *v)
{
	struct log_view *w = v->priv;
	for (struct log_view **pp = &live; *pp; pp = &(*pp)->next)
		if (*pp == w) {
			*pp = w->next;
			break;
		}
	if (w->ls && w->src->ops->close_log && !w->src->closed) /* a closed source dropped its requests already */
		w->src->ops->close_log(w->ls);
	clear_lines(w);
	linebuf_free(&w->lb);
	free(w->lines);
	for (int i = 0; i < w->ncontainers; i++)
		free(w->containers[i]);
	free(w->containers);
	free(w->ns);
	free(w->name);
	free(w->pod);
	free(w->vm);
	scroller_free(&w->sc);
	free(w);
}

static const struct view_key log_keys[] = {
	{ 'j', "j", "scroll down (also Down); at the bottom the pane follows new lines", NULL },
	{ 'k', "k", "scroll up (also Up): stops following", NULL },
	{ VKEY(KEY_PPAGE), "PgUp", "previous page (also ctrl-b; PgDn, space, ctrl-f: next)", NULL },
	{ 'g', "g", "first line", NULL },
	{ 'G', "G", "last line, and follow new lines again", NULL },
	{ 'f', "f", "follow new lines on or off", NULL },
	{ 'w', "w", "wrap long lines on or off (off: cut at the pane's edge)", NULL },
	{ '/', "/", "search (case-insensitive); n next, N previous match", NULL },
	{ 'C', "shift-C", "next container, started or not (launcher: compute, volumecontainerdisk, ...; engine: compute = QEMU, serial)", NULL },
	{ 'p', "p", "previous container instance on or off (kubectl logs --previous)", NULL },
	{ 'r', "r", "read the log again (after a restart: the new launcher)", NULL },
	{ 'q', "q", "close the log pane (also x)", NULL },
	{ 0, NULL, NULL, NULL },
};

const struct view_key *log_view_keys(void)
{
	return log_keys;
}

static const struct view_ops log_view_ops = {
	.name = "logs",
	.draw = draw,
	.key = key,
	.mouse = mouse,
	.title = title,
	.destroy = destroy,
	.keys = log_keys,
};

struct view *log_view_open(struct obj *o, char **err)
{
	struct source *src = o->src;
	if (src == NULL || src->ops == NULL || src->ops->open_log == NULL) {
		*err = xasprintf("%s serves no logs", src ? src->name : "this source");
		return NULL;
	}
	if (o->kind != OBJ_VM && o->kind != OBJ_VMI && o->kind != OBJ_POD) {
		*err = xstrdup("logs are read from a VM, a VMI or a pod (this row is none)");
		return NULL;
	}
	const char *vm_name = NULL;
	char *why = NULL;
	const struct pod *p = o->kind == OBJ_POD ? (const struct pod *)o
						 : chain_log_pod(ui_store(), src, o->ns, o->name, &vm_name, &why);
	if (p == NULL) {
		*err = why ? why : xstrdup("nothing to show");
		return NULL;
	}
	if (o->kind == OBJ_POD)
		vm_name = p->vm_name;
	struct log_view *w = xcalloc(1, sizeof *w);
	w->id = ++next_id;
	w->src = src;
	w->ns = xstrdup(o->ns);
	w->name = xstrdup(o->name);
	w->follow = true;
	scroller_init(&w->sc);
	linebuf_init(&w->lb);
	set_pod(w, p, vm_name);
	w->view = view_new(&log_view_ops, w);
	w->view->pane = true;
	w->next = live;
	live = w;
	if (start(w) < 0 && w->sc.n == 0) {
		/* refused at once: say why in the status line, and keep the pane (C or p may work) */
		ui_error("logs: %s", w->state);
	}
	return w->view;
}
