/* The `e` view: an object described as kubectl describe shows it (cmd/cmd_describe.h), in the pager. The object is
 * fetched again from its source (provider fetch_raw); its events come from the dashboard's store. */
#include "ui/describeview.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "model/describe.h"
#include "core/xmalloc.h"
#include "model/source.h"
#include "ui/pager.h"
#include "ui/ui.h"

struct dfetch {
	unsigned pager;
	struct source *src;
	enum obj_kind kind;
	char *ns, *name;
};

static void fetched(void *arg, int status, const char *body, size_t len)
{
	struct dfetch *d = arg;
	struct view *v = pager_find(d->pager);
	if (v == NULL)
		goto out; /* closed meanwhile */
	if (status != 0) {
		char *m = xasprintf("fetch failed (%d): %.*s", status, (int)(len > 2000 ? 2000 : len), body ? body : "");
		pager_set_text(v, m);
		free(m);
		goto out;
	}
	char *text = NULL;
	size_t tlen = 0;
	FILE *f = open_memstream(&text, &tlen);
	char *json = xstrndup(body, len);
	int rc = f ? describe_text(ui_store(), d->src, d->kind, d->ns, d->name, json, f) : -1;
	if (f)
		fclose(f);
	pager_set_text(v, rc == 0 && text ? text : "the object is not JSON");
	free(text);
	free(json);
out:
	free(d->ns);
	free(d->name);
	free(d);
}

struct view *describeview_new(const struct obj *o, char **err)
{
	if (o->kind != OBJ_VM && o->kind != OBJ_VMI && o->kind != OBJ_POD) {
		*err = xstrdup("describe: a VM, VMI or pod row");
		return NULL;
	}
	struct source *src = o->src;
	if (src == NULL || src->ops == NULL || src->ops->fetch_raw == NULL) {
		*err = xstrdup("describe: this source cannot fetch objects");
		return NULL;
	}
	char title[600];
	snprintf(title, sizeof title, "describe %s %s/%s", obj_kind_name(o->kind), o->ns, o->name);
	struct view *v = pager_new(title, "fetching...");
	struct dfetch *d = xcalloc(1, sizeof *d);
	d->pager = pager_id(v);
	d->src = src;
	d->kind = o->kind;
	d->ns = xstrdup(o->ns);
	d->name = xstrdup(o->name);
	char *ferr = NULL;
	if (src->ops->fetch_raw(src, o->kind, o->ns, o->name, fetched, d, &ferr) < 0) {
		char *m = xasprintf("fetch failed: %s", ferr ? ferr : "refused");
		pager_set_text(v, m);
		free(m);
		free(d->ns);
		free(d->name);
		free(d);
	}
	free(ferr);
	return v;
}
