/* An image pull's progress on the command line, read from the launcher pod the engine service publishes (see
 * pullshow.h). */
#include "cmd/pullshow.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "core/xmalloc.h"
#include "model/obj.h"

static const char *progress(const struct store *st, struct source *src, const char *ns, const char *name)
{
	size_t n;
	struct obj *const *pods = store_objs(st, src, OBJ_POD, &n);
	for (size_t i = 0; i < n; i++) {
		const struct pod *p = (const struct pod *)pods[i];
		if (!util_str_eq(p->o.ns, ns) || !util_str_eq(p->vm_name, name))
			continue;
		for (int k = 0; k < p->ncontainers; k++) {
			const struct container_status *c = &p->containers[k];
			if (util_str_eq(c->state, "waiting") && util_str_eq(c->reason, "ContainerCreating") && c->message &&
			    *c->message)
				return c->message;
		}
	}
	return NULL;
}

void pull_show_tick(struct pull_show *ps, const struct store *st, struct source *src, const char *ns,
		    const char *name)
{
	const char *p = progress(st, src, ns, name);
	uint64_t now = util_now_ms();
	if (p == NULL || util_str_eq(p, ps->last) || now - ps->at < 1000)
		return;
	char *e = util_escape_display(p);
	fprintf(stderr, "%s\n", e);
	free(e);
	free(ps->last);
	ps->last = xstrdup(p);
	ps->at = now;
}

void pull_show_end(struct pull_show *ps)
{
	free(ps->last);
	ps->last = NULL;
}
