/* core/connect: the one rule from options to sources (with a kubeconfig its context alone, as kubectl; the engine a
 * context of its own; several only when asked; without a kubeconfig the engine). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/connect.h"
#include "t.h"

static struct connect_plan plan_of(struct kvcon_opts *o)
{
	struct connect_plan p;
	connect_plan(o, &p);
	return p;
}

static void test_rule(const char *dir)
{
	char kc[512];
	snprintf(kc, sizeof kc, "%s/kubeconfig", dir);
	FILE *f = fopen(kc, "w");
	T_CHECK(f != NULL);
	if (f)
		fclose(f);
	unsetenv("KUBERNETES_SERVICE_HOST");
	setenv("HOME", dir, 1);

	/* a kubeconfig: its context alone, no engine (kvcon get vm -A lists kubectl's rows and starts nothing) */
	setenv("KUBECONFIG", kc, 1);
	struct kvcon_opts o = { 0 };
	struct connect_plan p = plan_of(&o);
	T_CHECK(p.kube && !p.kube_optional && !p.engine);

	/* the engine as a context: alone; both when asked */
	const char *err = NULL;
	T_EQ_INT(connect_set_context(&o, "engine", &err), 0);
	T_CHECK(o.engine_ctx && o.context == NULL);
	p = plan_of(&o);
	T_CHECK(!p.kube && p.engine && p.engine_required);
	T_EQ_INT(connect_set_context(&o, "fake,engine", &err), 0);
	T_CHECK(o.engine_ctx && o.context && strcmp(o.context, "fake") == 0);
	p = plan_of(&o);
	T_CHECK(p.kube && p.engine && p.engine_required);
	T_EQ_INT(connect_set_context(&o, connect_engine_name(), &err), 0); /* the host's name is the engine's too */
	T_CHECK(o.engine_ctx && o.context == NULL);
	T_EQ_INT(connect_set_context(&o, "a,b", &err), -1);
	T_EQ_INT(connect_set_context(&o, ",", &err), -1);
	T_EQ_INT(connect_set_context(&o, "fake", &err), 0);
	p = plan_of(&o);
	T_CHECK(p.kube && !p.engine);
	free(o.context);
	o.context = NULL;

	/* -c (or the config's hosts): the engine hosts; the cluster only when named */
	char *uris[] = { (char *)"qemu:///system" };
	o.uris = uris;
	o.nuris = 1;
	p = plan_of(&o);
	T_CHECK(!p.kube && p.engine);
	o.kubeconfig = kc;
	p = plan_of(&o);
	T_CHECK(p.kube && p.engine);
	o.kubeconfig = NULL;
	/* the config's engine hosts say what the engine is, not that it is read: with a kubeconfig, its context */
	o.uris_config = true;
	p = plan_of(&o);
	T_CHECK(p.kube && !p.engine);
	T_EQ_INT(connect_set_context(&o, "engine", &err), 0);
	p = plan_of(&o);
	T_CHECK(!p.kube && p.engine);
	o.engine_ctx = false;
	o.uris_config = false;
	o.uris = NULL;
	o.nuris = 0;

	/* `kvcon engine VERB`: the engine alone */
	o.engine_only = true;
	p = plan_of(&o);
	T_CHECK(!p.kube && p.engine);
	o.engine_only = false;

	/* no kubeconfig: the engine, the cluster optional; --no-engine: the cluster's error */
	char none[600];
	snprintf(none, sizeof none, "%s/none", dir);
	setenv("KUBECONFIG", none, 1);
	p = plan_of(&o);
	T_CHECK(p.kube && p.kube_optional && p.engine && !p.engine_required);
	o.no_engine = true;
	p = plan_of(&o);
	T_CHECK(p.kube && !p.kube_optional && !p.engine);
}

int main(void)
{
	char dir[] = "/tmp/kvcon-connect-XXXXXX";
	if (mkdtemp(dir) == NULL)
		return 1;
	test_rule(dir);
	char kc[512];
	snprintf(kc, sizeof kc, "%s/kubeconfig", dir);
	unlink(kc);
	rmdir(dir);
	return T_DONE();
}
