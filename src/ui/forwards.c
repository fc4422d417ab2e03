/* The dashboard's port forwards (see forwards.h): a table of forwards, the prompt that starts them and the :pf list. */
#include "ui/forwards.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "console/portfwd.h"
#include "core/log.h"
#include "core/util.h"
#include "core/xmalloc.h"
#include "model/pfspec.h"
#include "model/registry.h"
#include "ui/draw.h"
#include "ui/listsel.h"
#include "ui/theme.h"
#include "ui/ui.h"

#define FW_MAX 32

struct fwd {
	struct portfwd *pf;
	const struct source *src;
	char *label; /* "ns/name", escaped for the terminal */
	int local, remote;
};

static struct fwd fw[FW_MAX];
static size_t nfw;

struct ask {
	struct source *src;
	char *ns, *name;
};

static void report(void *arg, int guest_port, const char *reason)
{
	const char *label = arg; /* the row's label: rows move, their strings do not */
	char *r = util_escape_display(reason);
	ui_error("forward %s port %d: %s", label, guest_port, r);
	free(r);
}

static void stop(size_t i)
{
	portfwd_free(fw[i].pf);
	free(fw[i].label);
	memmove(&fw[i], &fw[i + 1], (nfw - i - 1) * sizeof fw[0]);
	nfw--;
}

static void start(void *arg, const char *text)
{
	struct ask *a = arg;
	char *copy = xstrdup(text ? text : "");
	int started = 0;
	for (char *save = NULL, *w = strtok_r(copy, " \t,", &save); w; w = strtok_r(NULL, " \t,", &save)) {
		struct pf_port p;
		char err[160];
		if (pf_port_parse(w, &p, err, sizeof err) < 0) {
			ui_error("%s", err);
			break;
		}
		if (nfw == FW_MAX) {
			ui_error("at most %d forwards", FW_MAX);
			break;
		}
		struct fwd *f = &fw[nfw];
		char *e = NULL;
		char raw[600];
		snprintf(raw, sizeof raw, "%s/%s", a->ns, a->name);
		f->label = util_escape_display(raw);
		f->src = a->src;
		f->remote = p.remote;
		f->pf = portfwd_new(a->src, KIND_VMI, a->ns, a->name, report, f->label, &e);
		int bound = f->pf ? portfwd_listen(f->pf, "127.0.0.1", &p, &e) : -1;
		if (bound < 0) {
			ui_error("forward %s: %s", f->label, e ? e : "failed");
			free(e);
			portfwd_free(f->pf);
			free(f->label);
			break;
		}
		f->local = bound;
		nfw++;
		started++;
		ui_message("forwarding 127.0.0.1:%d -> %s port %d (:pf lists the forwards)", bound, f->label, p.remote);
	}
	if (started > 1)
		ui_message("%d forwards started (:pf lists them)", started);
	free(copy);
}

static void ask_free(void *arg)
{
	struct ask *a = arg;
	if (a == NULL)
		return;
	free(a->ns);
	free(a->name);
	free(a);
}

/* ui_prompt has no free callback: the question lives until the next one */
static struct ask *asking;

void forwards_prompt(const struct obj *vm)
{
	if (vm == NULL)
		return;
	ask_free(asking);
	asking = xcalloc(1, sizeof *asking);
	asking->src = vm->src;
	asking->ns = xstrdup(vm->ns);
	asking->name = xstrdup(vm->name);
	char label[600];
	char *l = util_escape_display(vm->name);
	snprintf(label, sizeof label, "forward %s ports [LOCAL:]REMOTE ...: ", l);
	free(l);
	ui_prompt(label, start, NULL, asking);
}

void forwards_stop_source(const struct source *src)
{
	for (size_t i = nfw; i-- > 0;)
		if (src == NULL || fw[i].src == src)
			stop(i);
	if (src == NULL) {
		ask_free(asking);
		asking = NULL;
	}
}

/* ---- :pf ---- */

struct fview {
	struct listsel l;
};

static void draw_row(void *arg, size_t k, int y, int x, int w, int attr)
{
	(void)arg;
	struct portfwd_stats st;
	portfwd_stats(fw[k].pf, &st);
	char out[900];
	snprintf(out, sizeof out, "%-40.40s 127.0.0.1:%-6d %6d %5zu/%-6llu %7llu %12llu %12llu", fw[k].label,
		 fw[k].local, fw[k].remote, st.open, (unsigned long long)st.total, (unsigned long long)st.failed,
		 (unsigned long long)st.bytes_out, (unsigned long long)st.bytes_in);
	draw_text(y, x + 1, w - 1, attr, out);
}

static void draw(struct view *v, const struct region *r)
{
	struct fview *c = v->priv;
	char title[64];
	snprintf(title, sizeof title, " Port forwards[%zu] ", nfw);
	attrset((attr_t)theme_attr(THEME_BORDER));
	mvhline(r->y, r->x, ACS_HLINE, r->w);
	draw_text(r->y, r->x + (r->w - draw_width(title)) / 2, r->w, theme_attr(THEME_TITLE_ACTIVE), title);
	if (r->h < 2)
		return;
	draw_fill(r->y + 1, r->x, r->w, theme_attr(THEME_NORMAL));
	char head[200];
	snprintf(head, sizeof head, "%-40s %-16s %6s %12s %7s %12s %12s", "VM", "LOCAL", "GUEST", "CONNS", "FAILED",
		 "BYTES-OUT", "BYTES-IN");
	draw_text(r->y + 1, r->x + 1, r->w - 1, theme_attr(THEME_TABLE_HEADER), head);
	listsel_draw(&c->l, nfw, r->y + 2, r->x, r->w, r->h - 2, draw_row, NULL);
}

static enum view_result stop_selected(struct view *v)
{
	struct fview *c = v->priv;
	if (c->l.sel >= nfw) {
		ui_error("no forward selected");
		return VIEW_DONE;
	}
	ui_message("forward %s 127.0.0.1:%d stopped", fw[c->l.sel].label, fw[c->l.sel].local);
	stop(c->l.sel);
	view_dirty(v);
	return VIEW_DONE;
}

static enum view_result key(struct view *v, int k)
{
	struct fview *c = v->priv;
	if (listsel_key(&c->l, k, nfw)) {
		view_dirty(v);
		return VIEW_DONE;
	}
	return VIEW_PASS;
}

static enum view_result mouse(struct view *v, const struct view_mouse *m)
{
	struct fview *c = v->priv;
	bool open;
	if (!listsel_mouse(&c->l, m, 2, nfw, &open))
		return VIEW_PASS;
	view_dirty(v);
	return VIEW_DONE;
}

static void title(struct view *v, char *buf, size_t len)
{
	(void)v;
	snprintf(buf, len, "Port forwards");
}

static void tick(struct view *v)
{
	view_dirty(v); /* the counters move */
}

static void destroy(struct view *v)
{
	free(v->priv);
}

const struct view_key forwards_keys[] = {
	{ VKEY_CTRL('d'), "ctrl-d", "stop the selected forward (its local port closes)", stop_selected },
	{ 0, NULL, NULL, NULL },
};

static const struct view_ops forwards_ops = {
	.name = "pf",
	.draw = draw,
	.key = key,
	.mouse = mouse,
	.title = title,
	.tick = tick,
	.destroy = destroy,
	.keys = forwards_keys,
};

struct view *forwards_view_new(void)
{
	return view_new(&forwards_ops, xcalloc(1, sizeof(struct fview)));
}
