/* The header: sources, watch health, VM counts by status, READ-ONLY. */
#include "ui/header.h"

#include <stdio.h>
#include <string.h>

#include "core/loop.h"
#include "core/util.h"
#include "model/source.h"
#include "model/store.h"
#include "ui/draw.h"
#include "ui/theme.h"

/* The VM counts of the header's namespace, kept by header_store_changed from each change's delta (one VM
 * changing is a few pointer compares, not a pass over 10,000 VMs). They are valid for the store version they
 * were brought to: a change the hook did not see (outside ui_run, or nested in another listener) leaves them
 * behind, and the next read counts again. counts[] is in order of first appearance, no entry with n == 0;
 * interned statuses, compared by pointer first. */
static struct {
	const struct store *st;
	uint64_t version;
	const char *ns;
	size_t nsrc;
	bool valid;
	size_t total;
	struct header_status counts[HEADER_MAX_STATUS];
	int ncounts;
	size_t recounts;
} H;

/* The counts the last header_draw showed (H's at that moment; drawn false: none yet). */
static struct {
	bool drawn;
	const struct store *st;
	const char *ns;
	size_t total;
	struct header_status counts[HEADER_MAX_STATUS];
	int ncounts;
} D;

int header_height(int rows)
{
	return rows >= 20 ? 4 : 2;
}

static const char *status_of(const struct obj *o)
{
	const char *status = ((const struct vm *)o)->printable_status;
	return status == NULL || *status == '\0' ? "Unknown" : status;
}

static bool in_ns(const struct obj *o, const char *ns)
{
	return ns == NULL || o->ns == ns || strcmp(o->ns, ns) == 0;
}

static int status_index(const char *status)
{
	for (int k = 0; k < H.ncounts; k++)
		if (H.counts[k].status == status)
			return k;
	for (int k = 0; k < H.ncounts; k++)
		if (strcmp(H.counts[k].status, status) == 0)
			return k;
	return -1;
}

/* Adds d (+1 or -1) to status's count; false when the counts cannot follow (a status beyond HEADER_MAX_STATUS, or
 * one that was not counted): then only a recount is right. */
static bool count_add(const char *status, int d)
{
	int k = status_index(status);
	if (d > 0) {
		if (k < 0) {
			if (H.ncounts == HEADER_MAX_STATUS)
				return false;
			k = H.ncounts++;
			H.counts[k] = (struct header_status){ status, 0 };
		}
		H.counts[k].n++;
		H.total++;
		return true;
	}
	if (k < 0)
		return false;
	H.total--;
	if (--H.counts[k].n == 0) {
		memmove(&H.counts[k], &H.counts[k + 1], (size_t)(H.ncounts - k - 1) * sizeof H.counts[0]);
		H.ncounts--;
	}
	return true;
}

static void recount(const struct store *st, const char *ns)
{
	uint64_t ver = store_version(st, OBJ_VM);
	if (H.valid && H.st == st && H.version == ver && H.ns == ns && H.nsrc == source_count())
		return;
	H.valid = true;
	H.st = st;
	H.version = ver;
	H.ns = ns;
	H.nsrc = source_count();
	H.total = 0;
	H.ncounts = 0;
	H.recounts++;
	for (size_t s = 0; s < source_count(); s++) {
		size_t n;
		struct obj *const *vms = store_objs(st, source_get(s), OBJ_VM, &n);
		for (size_t i = 0; i < n; i++) {
			if (!in_ns(vms[i], ns))
				continue;
			if (!count_add(status_of(vms[i]), +1))
				H.total++; /* more statuses than HEADER_MAX_STATUS: counted in the total only */
		}
	}
}

bool header_store_changed(const struct store *st, enum obj_kind kind, const struct obj *old, const struct obj *new_)
{
	if (kind != OBJ_VM)
		return false;
	if (!H.valid)
		return true;
	if (H.st != st || !store_in_step(st, OBJ_VM, &H.version)) {
		H.valid = false;
		return true;
	}
	bool was = old && in_ns(old, H.ns), is = new_ && in_ns(new_, H.ns);
	if (!was && !is)
		return false; /* another namespace's VM */
	if (was && is && status_of(old) == status_of(new_))
		return false; /* the usual update: same namespace, same status */
	if ((was && !count_add(status_of(old), -1)) || (is && !count_add(status_of(new_), +1)))
		H.valid = false;
	return true;
}

void header_forget(void)
{
	H.valid = false;
	H.st = NULL;
	D.drawn = false;
}

bool header_counts_moved(const struct store *st, const char *ns)
{
	if (!D.drawn || !H.valid || H.st != st || D.st != st || H.ns != ns || D.ns != ns ||
	    H.version != store_version(st, OBJ_VM) || H.nsrc != source_count())
		return true;
	return H.total != D.total || H.ncounts != D.ncounts ||
	       memcmp(H.counts, D.counts, (size_t)H.ncounts * sizeof H.counts[0]) != 0;
}

size_t header_vm_counts(const struct store *st, const char *ns, struct header_status *counts, int *n)
{
	recount(st, ns);
	memcpy(counts, H.counts, (size_t)H.ncounts * sizeof *counts);
	*n = H.ncounts;
	/* most frequent first (stable: ties keep their order of appearance) */
	for (int i = 1; i < *n; i++)
		for (int j = i; j > 0 && counts[j].n > counts[j - 1].n; j--) {
			struct header_status t = counts[j];
			counts[j] = counts[j - 1];
			counts[j - 1] = t;
		}
	return H.total;
}

size_t header_recounts(void)
{
	return H.recounts;
}

/* Draws "label value" pairs left to right; returns the new x. */
static int pair(int y, int x, int end, const char *label, const char *value, int vattr)
{
	if (x >= end)
		return x;
	x += draw_text(y, x, end - x, theme_attr(THEME_HEADER_KEY), label);
	if (x < end)
		x += draw_text(y, x, end - x, vattr, value);
	if (x + 2 < end)
		x += draw_text(y, x, end - x, theme_attr(THEME_HEADER), "  ");
	return x;
}

static const char *health_word(const struct watch_health *h, char *buf, size_t len)
{
	switch (h->state) {
	case WATCH_LIVE:
		return "live";
	case WATCH_LOADING:
		snprintf(buf, len, "loading %zu", h->loaded);
		return buf;
	case WATCH_RECONNECTING: {
		uint64_t now = loop_now();
		uint64_t s = h->next_retry_ms > now ? (h->next_retry_ms - now + 999) / 1000 : 0;
		snprintf(buf, len, "reconnecting in %llus", (unsigned long long)s);
		return buf;
	}
	case WATCH_FORBIDDEN:
		return "forbidden";
	case WATCH_ERROR:
		return "error";
	default:
		return "idle";
	}
}

/* The local engine's service (service/service.h): a kube source on its unix socket, shown as the engine host it is */
static bool engine_service(const struct source *src)
{
	return src->type == SOURCE_KUBE && src->engine;
}

static void source_info(int y, int x, int end, struct source *src, bool named)
{
	bool svc = engine_service(src), kube = src->type == SOURCE_KUBE && !svc;
	if (named)
		x = pair(y, x, end, kube ? "Context: " : "Engine: ", src->name, theme_attr(THEME_HEADER));
	if (svc)
		x = pair(y, x, end, "Via: ", "the engine service", theme_attr(THEME_HEADER));
	else if (src->server)
		x = pair(y, x, end, kube ? "Cluster: " : "URI: ", src->server, theme_attr(THEME_HEADER));
	if (src->user)
		x = pair(y, x, end, "User: ", src->user, theme_attr(THEME_HEADER));
	if (src->version)
		x = pair(y, x, end, kube ? "KubeVirt: " : "Version: ", src->version, theme_attr(THEME_HEADER));
	if (kube)
		pair(y, x, end, "Scope: ", src->ns_scope ? src->ns_scope : "all namespaces", theme_attr(THEME_HEADER));
}

/* The watch health of each kind; with several sources the line starts with the source's name (what matters
 * first when the line is cut), its details follow. */
static int source_watch(int y, int x, int end, struct source *src, bool named)
{
	static const char *const kinds[OBJ_KIND_COUNT] = { "vm ", "vmi ", "pod ", "event " };
	if (named)
		x = pair(y, x, end, src->type == SOURCE_KUBE && !engine_service(src) ? "Context: " : "Engine: ", src->name,
			 theme_attr(THEME_HEADER));
	else if (x < end)
		x += draw_text(y, x, end - x, theme_attr(THEME_HEADER_KEY), "Watch: ");
	for (int k = 0; k < OBJ_KIND_COUNT && x < end; k++) {
		char buf[48], first[48];
		const char *word = health_word(&src->health[k], buf, sizeof buf);
		x += draw_text(y, x, end - x, theme_attr(THEME_HEADER), kinds[k]);
		snprintf(first, sizeof first, "%s", word);
		char *sp = strchr(first, ' ');
		if (sp)
			*sp = '\0';
		if (x < end)
			x += draw_text(y, x, end - x, theme_status_attr(first), word);
		if (x + 2 < end)
			x += draw_text(y, x, end - x, theme_attr(THEME_HEADER), "  ");
	}
	return x;
}

void header_draw(const struct region *r, const struct store *st, bool readonly, const char *ns)
{
	int w = r->w;
	for (int i = 0; i < r->h; i++)
		draw_fill(r->y + i, r->x, w, theme_attr(THEME_NORMAL));
	int x = r->x;
	x += draw_text(r->y, x, w, theme_attr(THEME_LOGO), " kvcon ");
	int src_lines = r->h >= 4 ? 2 : 1;
	struct source *live[8];
	size_t n = 0;
	for (size_t i = 0; i < source_count() && n < 8; i++)
		if (!source_get(i)->closed)
			live[n++] = source_get(i);
	if (n == 0)
		draw_text(r->y, x, w - x, theme_attr(THEME_BAD), "no sources (no kubeconfig, no engine)");
	if (n == 1) {
		/* one source: its details, then its watches on the next line */
		source_info(r->y, x, w, live[0], true);
		if (src_lines > 1)
			source_watch(r->y + 1, x, w, live[0], false);
		else
			source_watch(r->y, x + 60, w, live[0], false);
	} else {
		for (size_t s = 0; s < n && (int)s < src_lines; s++) {
			int y0 = r->y + (int)s;
			int xx = source_watch(y0, x, w, live[s], true);
			source_info(y0, xx, w, live[s], false);
		}
	}
	if (n > (size_t)src_lines) {
		char more[32];
		snprintf(more, sizeof more, " +%zu more", n - (size_t)src_lines);
		draw_text(r->y + src_lines - 1, w - draw_width(more), draw_width(more), theme_attr(THEME_HINT), more);
	}
	/* counts line */
	int y = r->y + src_lines;
	if (y >= r->y + r->h)
		return;
	struct header_status counts[HEADER_MAX_STATUS];
	int ncounts;
	size_t total = header_vm_counts(st, ns, counts, &ncounts);
	D.drawn = true;
	D.st = st;
	D.ns = ns;
	D.total = H.total;
	D.ncounts = H.ncounts;
	memcpy(D.counts, H.counts, (size_t)H.ncounts * sizeof H.counts[0]);
	int end = r->x + w;
	x = r->x + 1;
	char v[64];
	x = pair(y, x, end, "Namespace: ", ns ? ns : "all", theme_attr(THEME_HEADER));
	snprintf(v, sizeof v, "%zu", total);
	x = pair(y, x, end, "VMs: ", v, theme_attr(THEME_HEADER));
	for (int i = 0; i < ncounts && x < end; i++) {
		snprintf(v, sizeof v, "%s %zu", counts[i].status, counts[i].n);
		x += draw_text(y, x, end - x, theme_status_attr(counts[i].status), v);
		if (x + 2 < end)
			x += draw_text(y, x, end - x, theme_attr(THEME_HEADER), "  ");
	}
	if (readonly) {
		const char *ro = " READ-ONLY ";
		draw_text(r->y, end - draw_width(ro), draw_width(ro), theme_attr(THEME_READONLY), ro);
	}
	/* notices (403 fallbacks, TCG fallback) and watch errors */
	if (r->h >= 4) {
		y = r->y + 3;
		x = r->x + 1;
		for (size_t s = 0; s < n && x < end; s++) {
			struct source *src = live[s];
			if (src->notice)
				x += draw_text(y, x, end - x, theme_attr(THEME_WAIT), src->notice) + 2;
			/* one line per distinct message, naming the kinds it applies to */
			bool done[OBJ_KIND_COUNT] = { false };
			for (int k = 0; k < OBJ_KIND_COUNT && x < end; k++) {
				const struct watch_health *h = &src->health[k];
				if (done[k] || !h->message || h->state == WATCH_LIVE)
					continue;
				char kinds[64] = "";
				size_t kl = 0;
				for (int j = k; j < OBJ_KIND_COUNT; j++) {
					const struct watch_health *hj = &src->health[j];
					if (hj->message && hj->state != WATCH_LIVE && strcmp(hj->message, h->message) == 0) {
						done[j] = true;
						kl += (size_t)snprintf(kinds + kl, sizeof kinds - kl, "%s%s", kl ? "," : "",
								       obj_kind_name((enum obj_kind)j));
						if (kl >= sizeof kinds)
							kl = sizeof kinds - 1;
					}
				}
				char m[600];
				snprintf(m, sizeof m, "%s %s: %s", src->name, kinds, h->message);
				x += draw_text(y, x, end - x, theme_attr(THEME_BAD), m) + 2;
			}
		}
	}
}
