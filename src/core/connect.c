/* connect: the rule from options to sources (see connect.h). */
#include "core/connect.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/util.h"
#include "core/xmalloc.h"

const char *connect_engine_name(void)
{
	static char hn[256];
	if (hn[0] == '\0' && (gethostname(hn, sizeof hn - 1) != 0 || hn[0] == '\0'))
		strcpy(hn, "localhost");
	return hn;
}

bool connect_is_engine_name(const char *name)
{
	return name && (strcmp(name, "engine") == 0 || strcmp(name, connect_engine_name()) == 0);
}

int connect_set_context(struct kvcon_opts *o, const char *value, const char **err)
{
	char *copy = xstrdup(value), *save = NULL;
	int rc = 0;
	free(o->context);
	o->context = NULL;
	o->engine_ctx = false;
	for (char *t = strtok_r(copy, ",", &save); t && rc == 0; t = strtok_r(NULL, ",", &save)) {
		if (connect_is_engine_name(t)) {
			o->engine_ctx = true;
		} else if (o->context) {
			*err = "--context: one cluster context at a time (and the engine's, \"engine\")";
			rc = -1;
		} else {
			o->context = xstrdup(t);
		}
	}
	if (rc == 0 && o->context == NULL && !o->engine_ctx) {
		*err = "--context needs a context's name";
		rc = -1;
	}
	free(copy);
	return rc;
}

/* A kubeconfig is there to load (a broken one is an error, not a reason to list the engine alone): a file of
 * $KUBECONFIG, else ~/.kube/config, or a pod's service account; --kubeconfig and a kube --context count too. */
static bool kubeconfig_present(const struct kvcon_opts *o)
{
	if (o->kubeconfig || o->context || getenv("KUBERNETES_SERVICE_HOST"))
		return true;
	const char *env = getenv("KUBECONFIG");
	if (env && *env) {
		bool any = false;
		char *copy = xstrdup(env), *save = NULL;
		for (char *p = strtok_r(copy, ":", &save); p && !any; p = strtok_r(NULL, ":", &save))
			any = access(p, F_OK) == 0;
		free(copy);
		return any;
	}
	char *home = util_home_dir();
	char *path = home ? xasprintf("%s/.kube/config", home) : NULL;
	bool there = path && access(path, F_OK) == 0;
	free(path);
	free(home);
	return there;
}

void connect_plan(const struct kvcon_opts *o, struct connect_plan *p)
{
	memset(p, 0, sizeof *p);
	bool named_kube = o->context || o->kubeconfig; /* a cluster asked for by name */
	p->kube_present = kubeconfig_present(o);
	if (o->engine_only) {
		p->engine = p->engine_required = true;
		return;
	}
	if (o->engine_ctx || (o->nuris > 0 && !o->uris_config)) {
		/* the engine asked for (its context's name, -c); a cluster too when named. The config's engine hosts say
		 * what the engine is, not that it is read: with a kubeconfig, its context alone */
		p->engine = p->engine_required = true;
		p->kube = named_kube;
		return;
	}
	if (p->kube_present) {
		p->kube = true; /* its current (or --context) context alone, as kubectl */
		return;
	}
	/* no kubeconfig: the engine is the default, the cluster a last chance (a pod's service account) */
	p->engine = !o->no_engine;
	p->kube = true;
	p->kube_optional = p->engine;
}
