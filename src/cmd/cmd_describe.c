/* kvcon describe vm|vmi|pod NS/NAME: the object in kubectl describe's layout (model/describe.c), then its
 * events. The object comes from its source's provider (fetch_raw: the API object on a cluster, a KubeVirt-shaped
 * object for an engine VM); events from the store the session listed. */
#include "cmd/cmd_describe.h"

#include <json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/args.h"
#include "cmd/session.h"
#include "core/log.h"
#include "core/loop.h"
#include "core/opts.h"
#include "core/util.h"
#include "core/xmalloc.h"
#include "model/describe.h"
#include "model/obj.h"
#include "model/registry.h"

/* ---- the command ---- */

/* The kind named by s[0..n) that describe renders (model/describe.c: VMs, VMIs and pods), NULL when none. */
static const struct kind_def *find_kind(const char *s, size_t n)
{
	char *w = xstrndup(s, n);
	const struct kind_def *k = registry_kind_find(w);
	free(w);
	return k && (k->id == KIND_VM || k->id == KIND_VMI || k->id == KIND_POD) ? k : NULL;
}

struct fetch {
	bool done;
	int status;
	char *body;
};

static void fetched(void *arg, int status, const char *body, size_t len)
{
	struct fetch *x = arg;
	x->done = true;
	x->status = status;
	x->body = xstrndup(body ? body : "", len);
}

int cmd_describe(int argc, char **argv)
{
	const struct kind_def *ki = NULL;
	const char *ref = NULL;
	/* no flags of its own: the command table's parser (cmd/args.c) says so, and takes --help */
	struct args g;
	int p = args_parse_verb(argc, argv, &g);
	for (int i = 0; p == ARGS_OK && i < g.npos; i++) {
		const char *a = g.pos[i];
		const char *sl = strchr(a, '/');
		if (ki == NULL && sl && find_kind(a, (size_t)(sl - a))) {
			ki = find_kind(a, (size_t)(sl - a));
			ref = sl + 1;
		} else if (ki == NULL) {
			ki = find_kind(a, strlen(a));
			if (ki == NULL) {
				char *e = util_escape_display(a);
				log_eprintf("error: the server doesn't have a resource type \"%s\" (kvcon describe: vm, vmi, "
					    "pod)\n", e);
				free(e);
				p = ARGS_ERR;
			}
		} else if (ref == NULL) {
			ref = a;
		} else {
			char *e = util_escape_display(a);
			log_eprintf("error: unexpected argument '%s'\n", e);
			free(e);
			p = ARGS_ERR;
		}
	}
	args_free(&g);
	if (p == ARGS_OK && (ki == NULL || ref == NULL)) {
		log_eprintf("error: which object? (vm|vmi|pod NAMESPACE/NAME)\nSee 'kvcon describe --help' for usage.\n");
		p = ARGS_ERR;
	}
	if (p != ARGS_OK)
		return p == ARGS_HELP ? EXIT_OK : EXIT_USAGE;
	enum obj_kind kind = (enum obj_kind)ki->obj;
	struct session s;
	struct fetch x = { 0 };
	int rc = session_open(&s, "describe", ref);
	if (rc != EXIT_OK)
		goto out;
	char *err = NULL;
	/* a cluster's object, or the engine service's KubeVirt-shaped one, through the source's API */
	if (s.src->ops == NULL || s.src->ops->fetch_raw == NULL ||
		   s.src->ops->fetch_raw(s.src, kind, s.ns, s.name, fetched, &x, &err) < 0) {
		fprintf(stderr, "error: %s\n", err ? err : "this source cannot fetch objects");
		free(err);
		rc = EXIT_API;
		goto out;
	}
	while (!x.done)
		loop_once(1000);
	if (x.status == 404) {
		char *n = util_escape_display(s.name), gr[96];
		fprintf(stderr, "Error from server (NotFound): %s \"%s\" not found\n", registry_kind_gr(ki, true, gr, sizeof gr),
			n);
		free(n);
		rc = EXIT_API;
		goto out;
	}
	if (x.status != 0) {
		char *e = util_escape_display(x.body);
		fprintf(stderr, "error: %s\n", e);
		free(e);
		rc = EXIT_API;
		goto out;
	}
	if (describe_text(s.st, s.src, kind, s.ns, s.name, x.body, stdout) < 0) {
		fprintf(stderr, "error: the object is not JSON\n");
		rc = EXIT_API;
	}
out:
	free(x.body);
	session_close(&s);
	return rc;
}
