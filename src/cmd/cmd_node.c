/* `kvcon cordon NODE`, `kvcon uncordon NODE`, `kvcon drain NODE`: kubectl's verbs on a node, against the cluster
 * or the engine service (the same API: cmd_apply_target). cordon and uncordon patch spec.unschedulable (a strategic
 * merge patch, as kubectl sends it); drain cordons, then evicts the node's virt-launcher pods through the Eviction
 * API (policy/v1), retrying those refused with 429 every 5 s (KubeVirt answers an eviction of a LiveMigrate VMI
 * so while it migrates the VMI away) and waiting for each evicted pod to be gone, as kubectl drain
 * --pod-selector=kubevirt.io=virt-launcher does. */
#include "cmd/cmd_node.h"

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/args.h"
#include "cmd/cmd_apply.h"
#include "core/log.h"
#include "core/loop.h"
#include "core/opts.h"
#include "core/util.h"
#include "core/xmalloc.h"
#include "kube/http.h"
#include "kube/kubeconfig.h"

#define RETRY_MS 5000

struct answer {
	bool done;
	long status;
	char *body, *error;
};

static void on_done(void *arg, const struct kube_resp *r)
{
	struct answer *a = arg;
	a->done = true;
	a->status = r->status;
	a->body = r->body ? xstrndup(r->body, r->len) : NULL;
	a->error = r->status == 0 ? xstrdup(r->error ? r->error : "no answer") : kube_http_error_message(r);
}

/* One request, waited for (30 s): the status (0: none) and its body and error message (caller frees). */
static long request(struct kube_http *h, const char *method, const char *path, const char *body, const char *ctype,
		    struct answer *a)
{
	memset(a, 0, sizeof *a);
	struct kube_http_req q = { .method = method, .path = path, .body = body, .body_len = body ? strlen(body) : 0,
				   .content_type = ctype, .timeout_ms = 30000, .on_done = on_done, .arg = a };
	struct kube_req *rq = kube_http_start(h, &q);
	uint64_t until = util_now_ms() + 32000;
	while (!a->done && util_now_ms() < until && !loop_quitting())
		loop_once(100);
	if (!a->done) {
		kube_http_cancel(rq);
		a->error = xstrdup("no answer");
	}
	return a->status;
}

static void answer_free(struct answer *a)
{
	free(a->body);
	free(a->error);
	a->body = a->error = NULL;
}

/* "PREFIX: WHAT" on stderr, the server's text escaped */
static void say_error(const char *prefix, const char *what)
{
	char *e = util_escape_display(what ? what : "");
	log_eprintf("%s: %s\n", prefix, e);
	free(e);
}

/* Sets spec.unschedulable; prints kubectl's line. 0, or 1 after the error. */
static int set_cordon(struct kube_http *h, const char *node, bool on)
{
	char *path = xasprintf("/api/v1/nodes/%s", node), *n = util_escape_display(node);
	struct answer a;
	int rc = 1;
	if (request(h, NULL, path, NULL, NULL, &a) != 200) {
		say_error(a.status == 404 ? "Error from server (NotFound)" : "error", a.error);
		goto out;
	}
	json_object *o = a.body ? json_tokener_parse(a.body) : NULL, *spec = NULL, *un = NULL;
	json_object_object_get_ex(o, "spec", &spec);
	json_object_object_get_ex(spec, "unschedulable", &un);
	bool is = un && json_object_get_boolean(un);
	json_object_put(o);
	answer_free(&a);
	if (is == on) {
		printf("node/%s already %s\n", n, on ? "cordoned" : "uncordoned");
		rc = 0;
		goto out;
	}
	if (request(h, "PATCH", path, on ? "{\"spec\":{\"unschedulable\":true}}" : "{\"spec\":{\"unschedulable\":null}}",
		    "application/strategic-merge-patch+json", &a) != 200)
		say_error("error", a.error);
	else {
		printf("node/%s %s\n", n, on ? "cordoned" : "uncordoned");
		rc = 0;
	}
out:
	fflush(stdout);
	answer_free(&a);
	free(path);
	free(n);
	return rc;
}

/* The operand NODE of cordon, uncordon and drain, their client (*kc: its configuration, which it uses: freed
 * after it); NULL after the error (*rc set). */
static struct kube_http *open_node_verb(int argc, char **argv, const char **node, long *timeout_ms,
					struct kube_config **kcp, int *rc)
{
	struct args g;
	int p = args_parse_verb(argc, argv, &g);
	if (p == ARGS_OK && g.npos != 1) {
		args_usage_error(&g, g.npos ? "one node at a time" : "USAGE: %s NODE", argv[0]);
		p = ARGS_ERR;
	}
	if (p != ARGS_OK) {
		args_free(&g);
		*rc = p == ARGS_HELP ? EXIT_OK : EXIT_USAGE;
		return NULL;
	}
	*node = g.pos[0];
	if (timeout_ms)
		*timeout_ms = args_num(&g, "--timeout", 0);
	args_free(&g);
	char *err = NULL;
	struct kube_config *kc = cmd_apply_target(&err);
	struct kube_http *h = kc ? kube_http_new(kc, &err) : NULL;
	*kcp = kc;
	if (h == NULL) {
		say_error("error", err ? err : "no server");
		free(err);
		*rc = EXIT_API;
	}
	return h;
}

int cmd_cordon(int argc, char **argv)
{
	const char *node = NULL;
	int rc = 0;
	struct kube_config *kc = NULL;
	struct kube_http *h = open_node_verb(argc, argv, &node, NULL, &kc, &rc);
	if (h)
		rc = set_cordon(h, node, strcmp(argv[0], "cordon") == 0) ? EXIT_API : EXIT_OK;
	kube_http_free(h);
	kube_config_free(kc);
	return rc;
}

/* The virt-launcher pods on node that have not ended: "NS/NAME UID" each (caller frees). */
static char **launchers(struct kube_http *h, const char *node, size_t *n, char **err)
{
	struct answer a;
	*n = 0;
	if (request(h, NULL, "/api/v1/pods?labelSelector=kubevirt.io%3Dvirt-launcher", NULL, NULL, &a) != 200) {
		*err = util_escape_display(a.error ? a.error : "cannot list pods");
		answer_free(&a);
		return NULL;
	}
	json_object *o = a.body ? json_tokener_parse(a.body) : NULL, *items = NULL;
	json_object_object_get_ex(o, "items", &items);
	char **out = xcalloc(items ? json_object_array_length(items) + 1 : 1, sizeof *out);
	for (size_t i = 0; items && i < json_object_array_length(items); i++) {
		json_object *p = json_object_array_get_idx(items, i), *md = NULL, *spec = NULL, *st = NULL, *v;
		json_object_object_get_ex(p, "metadata", &md);
		json_object_object_get_ex(p, "spec", &spec);
		json_object_object_get_ex(p, "status", &st);
		const char *nn = json_object_object_get_ex(spec, "nodeName", &v) ? json_object_get_string(v) : NULL;
		const char *ph = json_object_object_get_ex(st, "phase", &v) ? json_object_get_string(v) : NULL;
		const char *ns = json_object_object_get_ex(md, "namespace", &v) ? json_object_get_string(v) : NULL;
		const char *nm = json_object_object_get_ex(md, "name", &v) ? json_object_get_string(v) : NULL;
		const char *uid = json_object_object_get_ex(md, "uid", &v) ? json_object_get_string(v) : "";
		if (!util_str_eq(nn, node) || util_str_eq(ph, "Succeeded") || util_str_eq(ph, "Failed") || !ns || !nm)
			continue;
		out[(*n)++] = xasprintf("%s/%s %s", ns, nm, uid);
	}
	json_object_put(o);
	answer_free(&a);
	return out;
}

/* The pod ns/name of uid: 0 still there, 1 gone (404, or another pod of that name), 2 ended (Succeeded, Failed:
 * a migration's source, which the next eviction deletes). */
static int pod_state(struct kube_http *h, const char *get, const char *uid)
{
	struct answer a;
	long st = request(h, NULL, get, NULL, NULL, &a);
	json_object *o = st == 200 && a.body ? json_tokener_parse(a.body) : NULL, *md = NULL, *status = NULL, *v = NULL;
	json_object_object_get_ex(o, "metadata", &md);
	json_object_object_get_ex(o, "status", &status);
	bool same = json_object_object_get_ex(md, "uid", &v) && util_str_eq(json_object_get_string(v), uid);
	const char *ph = json_object_object_get_ex(status, "phase", &v) ? json_object_get_string(v) : NULL;
	int r = st == 404 || (st == 200 && !same) ? 1 : util_str_eq(ph, "Succeeded") || util_str_eq(ph, "Failed") ? 2 : 0;
	json_object_put(o);
	answer_free(&a);
	return r;
}

/* Evicts NS/NAME (uid): retried on 429 until deadline (0: none), then waits for it to be gone. A pod that goes
 * while a 429 waits for its retry is evicted without another try; one that ends (a migration's source) is tried
 * again at once. NULL, or the error (caller frees). */
static char *evict(struct kube_http *h, const char *key, uint64_t deadline)
{
	char *ns = xstrdup(key), *name = strchr(ns, '/'), *uid = strchr(ns, ' ');
	*name++ = '\0';
	*uid++ = '\0';
	char *en = util_escape_display(name), *ens = util_escape_display(ns);
	char *path = xasprintf("/api/v1/namespaces/%s/pods/%s/eviction", ns, name);
	char *get = xasprintf("/api/v1/namespaces/%s/pods/%s", ns, name);
	char *body = xasprintf("{\"apiVersion\":\"policy/v1\",\"kind\":\"Eviction\",\"metadata\":{\"name\":\"%s\","
			       "\"namespace\":\"%s\"}}", name, ns);
	char *err = NULL;
	bool gone = false;
	printf("evicting pod %s/%s\n", ens, en);
	fflush(stdout);
	while (!gone) {
		struct answer a;
		long st = request(h, "POST", path, body, NULL, &a);
		if (st == 200 || st == 201 || st == 404) {
			answer_free(&a);
			break;
		}
		char *m = util_escape_display(a.error ? a.error : "");
		answer_free(&a);
		if (st != 429) {
			err = xasprintf("error when evicting pods/\"%s\" -n \"%s\": %s", en, ens, m);
			free(m);
			goto out;
		}
		printf("error when evicting pods/\"%s\" -n \"%s\" (will retry after 5s): %s\n", en, ens, m);
		fflush(stdout);
		free(m);
		uint64_t until = util_now_ms() + RETRY_MS;
		if (deadline && until > deadline) {
			err = xasprintf("error when evicting pods/\"%s\" -n \"%s\": global timeout reached", en, ens);
			goto out;
		}
		/* the pod may go (or end: a migration done) before the retry is due */
		int ps = 0;
		while (ps == 0 && util_now_ms() < until && !loop_quitting()) {
			loop_once(500);
			ps = pod_state(h, get, uid);
		}
		gone = ps == 1;
		if (loop_quitting()) {
			err = xstrdup("interrupted");
			goto out;
		}
	}
	while (!gone && !(gone = pod_state(h, get, uid) == 1)) {
		if ((deadline && util_now_ms() > deadline) || loop_quitting()) {
			err = xasprintf("error when waiting for pod \"%s\" in namespace \"%s\" to terminate: global timeout reached", en, ens);
			goto out;
		}
		loop_once(1000);
	}
	printf("pod/%s evicted\n", en);
out:
	fflush(stdout);
	free(get);
	free(path);
	free(body);
	free(en);
	free(ens);
	free(ns);
	return err;
}

int cmd_drain(int argc, char **argv)
{
	const char *node = NULL;
	long timeout_ms = 0;
	int rc = 0;
	struct kube_config *kc = NULL;
	struct kube_http *h = open_node_verb(argc, argv, &node, &timeout_ms, &kc, &rc);
	if (h && set_cordon(h, node, true))
		rc = EXIT_API;
	if (h == NULL || rc) {
		kube_http_free(h);
		kube_config_free(kc);
		return rc;
	}
	char *n = util_escape_display(node);
	uint64_t deadline = timeout_ms > 0 ? util_now_ms() + (uint64_t)timeout_ms : 0;
	size_t np = 0;
	char *err = NULL, **pods = launchers(h, node, &np, &err);
	for (size_t i = 0; i < np && err == NULL; i++)
		err = evict(h, pods[i], deadline);
	for (size_t i = 0; pods && i < np; i++)
		free(pods[i]);
	free(pods);
	if (err) {
		log_eprintf("error: unable to drain node \"%s\" due to error: %s, continuing command...\n"
			    "There are pending nodes to be drained:\n %s\nerror: %s\n", n, err, n, err);
		rc = EXIT_API;
	} else
		printf("node/%s drained\n", n);
	fflush(stdout);
	free(err);
	free(n);
	kube_http_free(h);
	kube_config_free(kc);
	return rc;
}
