/* kvcon bundle NS/NAME [-o FILE.tar.gz]: the evidence about one VM gathered before anything is changed, as a
 * gzip'd tarball: the VM, VMI, launcher pods, migrations and the storage behind the volumes as YAML, describe
 * output, the chain's events, the launchers' logs (current and previous instance of every container), the
 * diagnosis with the storage chain, the lineage, and on the engine the QEMU and serial logs. manifest.txt lists
 * every file and everything that could not be collected, with the reason. Secrets never go in: no Secret
 * object is read, and cloud-init user and network data are replaced by a marker wherever they appear. */
#include "cmd/cmd_bundle.h"

#include <curl/curl.h>
#include <json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "model/describe.h"
#include "model/objjson.h"
#include "cmd/args.h"
#include "cmd/session.h"
#include "kube/storage.h"
#include "core/buf.h"
#include "core/log.h"
#include "core/loop.h"
#include "core/opts.h"
#include "core/tarball.h"
#include "core/util.h"
#include "core/xmalloc.h"
#include "kube/http.h"
#include "kube/kube.h"
#include "model/chain.h"
#include "model/diagnose.h"
#include "model/lineage.h"
#include "model/registry.h"
#include "ui/yamlview.h"

#define LOG_TAIL 5000
#define REDACTED "<redacted by kvcon bundle>"

struct bundle {
	struct session *s;
	struct tarball *tar;
	struct buf manifest;
	int files, missing;
	int64_t now;
};

static void add_file(struct bundle *b, const char *name, const char *data, size_t len)
{
	tarball_add(b->tar, name, data, len, b->now);
	buf_printf(&b->manifest, "ok       %-48s %zu bytes\n", name, len);
	b->files++;
}

static void missing(struct bundle *b, const char *what, const char *why)
{
	char *e = util_escape_display(why);
	buf_printf(&b->manifest, "missing  %-48s %s\n", what, e);
	free(e);
	b->missing++;
}

/* cloud-init user and network data, wherever they are (VM template, VMI spec, anything else) */
static void redact(struct json_object *o)
{
	static const char *const keys[] = { "userData", "userDataBase64", "networkData", "networkDataBase64", NULL };
	if (json_object_is_type(o, json_type_array)) {
		for (size_t i = 0; i < json_object_array_length(o); i++)
			redact(json_object_array_get_idx(o, i));
		return;
	}
	if (!json_object_is_type(o, json_type_object))
		return;
	json_object_object_foreach(o, k, v)
	{
		bool secret = false;
		for (int i = 0; keys[i]; i++)
			if (strcmp(k, keys[i]) == 0)
				secret = true;
		if (secret)
			json_object_object_add(o, k, json_object_new_string(REDACTED));
		else
			redact(v);
	}
}

static void add_yaml(struct bundle *b, const char *name, struct json_object *o)
{
	redact(o);
	const char *js = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
	char *err = NULL;
	char *y = yamlview_from_json(js, strlen(js), &err);
	if (y) {
		add_file(b, name, y, strlen(y));
		free(y);
	} else {
		missing(b, name, err ? err : "YAML conversion failed");
	}
	free(err);
}

/* The object as the source's API has it (a cluster's, or the engine service's KubeVirt-shaped one). */
static struct json_object *object_json(struct bundle *b, enum obj_kind kind, const char *name, char **why)
{
	struct session *s = b->s;
	char *ns = curl_easy_escape(NULL, s->ns, 0), *nm = curl_easy_escape(NULL, name, 0);
	char *path = registry_kind_path(registry_kind_of_obj(kind), ns, nm);
	curl_free(ns);
	curl_free(nm);
	long status;
	char *err = NULL;
	struct json_object *o = storage_get_json(s->src, path, &status, &err);
	free(path);
	if (o == NULL)
		*why = err ? err : xasprintf(status == 404 ? "not found (HTTP 404)" : "HTTP %ld", status);
	else
		free(err);
	return o;
}

static void add_object(struct bundle *b, enum obj_kind kind, const char *name, const char *file, const char *desc)
{
	char *why = NULL;
	struct json_object *o = object_json(b, kind, name, &why);
	if (o == NULL) {
		missing(b, file, why);
		free(why);
		return;
	}
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	redact(o);
	if (f) {
		describe_text(b->s->st, b->s->src, kind, b->s->ns, name, json_object_to_json_string(o), f);
		fclose(f);
		add_file(b, desc, text, len);
	}
	free(text);
	add_yaml(b, file, o);
	json_object_put(o);
}

/* ---- logs ---- */

struct logrun {
	struct buf data;
	bool ended;
	int status;
	char *message;
};

static bool log_data(void *arg, const char *d, size_t n)
{
	struct logrun *r = arg;
	buf_add(&r->data, d, n);
	return true;
}

static void log_end(void *arg, int status, const char *message)
{
	struct logrun *r = arg;
	r->ended = true;
	r->status = status;
	r->message = xstrdup0(message);
}

static bool has_container(const struct pod *p, const char *name)
{
	for (int k = 0; k < p->ncontainers; k++)
		if (p->containers[k].name && strcmp(p->containers[k].name, name) == 0)
			return true;
	return false;
}

static void add_log(struct bundle *b, const struct pod *p, const char *vm, const char *container, bool previous,
		    const char *file)
{
	struct session *s = b->s;
	if (s->src->ops == NULL || s->src->ops->open_log == NULL) {
		missing(b, file, "this source serves no logs");
		return;
	}
	struct log_req req = { .ns = s->ns, .pod = p->o.name, .vm = vm, .container = container, .previous = previous,
			       .tail_lines = LOG_TAIL };
	struct logrun r = { .status = 0 };
	buf_init(&r.data);
	char *err = NULL;
	struct log_stream *ls = s->src->ops->open_log(s->src, &req, log_data, log_end, &r, &err);
	if (ls == NULL) {
		missing(b, file, err ? err : "refused");
		free(err);
		buf_free(&r.data);
		return;
	}
	while (!r.ended)
		loop_once(1000);
	if (r.status != 0)
		missing(b, file, r.message ? r.message : "the log could not be read");
	else
		add_file(b, file, r.data.data ? r.data.data : "", r.data.len);
	free(r.message);
	buf_free(&r.data);
}

/* ---- the engine's domain XML: the service's kvcon-domainxml subresource (docs/ENGINE-SERVICE.md) ---- */

struct rawget {
	bool done;
	long status;
	struct buf body;
	char *err;
};

static void raw_done(void *arg, const struct kube_resp *r)
{
	struct rawget *g = arg;
	g->done = true;
	g->status = r->status;
	if (r->status == 200)
		buf_add(&g->body, r->body ? r->body : "", r->body ? r->len : 0);
	else
		g->err = kube_http_error_message(r);
}

static void add_domain_xml(struct bundle *b)
{
	struct session *s = b->s;
	struct kube_http *h = kube_source_http(s->src);
	if (h == NULL) {
		missing(b, "domain.xml", "this source serves no domain XML");
		return;
	}
	char *ns = curl_easy_escape(NULL, s->ns, 0), *nm = curl_easy_escape(NULL, s->name, 0);
	char *obj = registry_kind_path(registry_kind(KIND_VMI), ns, nm);
	char *path = xasprintf("%s/kvcon-domainxml", obj);
	free(obj);
	curl_free(ns);
	curl_free(nm);
	struct rawget g = { .done = false };
	buf_init(&g.body);
	struct kube_http_req q = { .path = path, .accept = "application/xml", .timeout_ms = 30000, .on_done = raw_done,
				   .arg = &g };
	kube_http_start(h, &q);
	while (!g.done)
		loop_once(1000);
	free(path);
	if (g.status == 200)
		add_file(b, "domain.xml", g.body.data ? g.body.data : "", g.body.len);
	else
		missing(b, "domain.xml", g.err ? g.err : "the engine service did not answer");
	free(g.err);
	buf_free(&g.body);
}

/* ---- the rest ---- */

static void add_events(struct bundle *b, const struct chain *c)
{
	struct buf t;
	buf_init(&t);
	for (size_t i = 0; i < c->nevents; i++) {
		const struct event *e = c->events[i];
		char when[32];
		util_format_time(e->last, when, sizeof when);
		char *msg = util_escape_display(e->message), *n = util_escape_display(e->inv_name);
		buf_printf(&t, "%s  %-7s  %-24s  %s/%s  x%d  %s\n", when, e->type ? e->type : "", e->reason ? e->reason : "",
			   e->inv_kind ? e->inv_kind : "?", n, e->count, msg);
		free(msg);
		free(n);
	}
	add_file(b, "events.txt", t.data ? t.data : "", t.len);
	buf_free(&t);
}

/* The migrations and the storage chain with each object in it. Returns the chain (caller puts it), or NULL. */
static struct json_object *add_cluster_extras(struct bundle *b, const struct chain *c)
{
	struct session *s = b->s;
	/* migrations of this VMI */
	char *ns = curl_easy_escape(NULL, s->ns, 0), *sel = curl_easy_escape(NULL, "kubevirt.io/vmi-name", 0);
	char *nm = curl_easy_escape(NULL, s->name, 0);
	char *path = xasprintf("/apis/kubevirt.io/v1/namespaces/%s/virtualmachineinstancemigrations?labelSelector=%s%%3D%s",
			       ns, sel, nm);
	curl_free(ns);
	curl_free(sel);
	curl_free(nm);
	long status;
	char *err = NULL;
	struct json_object *m = storage_get_json(s->src, path, &status, &err);
	free(path);
	if (m)
		add_yaml(b, "migrations.yaml", m);
	else
		missing(b, "migrations.yaml", err ? err : "the list failed");
	json_object_put(m);
	free(err);
	/* storage: the chain, and each object in it */
	if (c->vm == NULL)
		return NULL;
	err = NULL;
	struct json_object *chain = storage_chain(s->src, s->ns, s->name, c->vmi && util_str_eq(c->vmi->phase, "Running"), &err);
	if (chain == NULL) {
		missing(b, "storage/chain.json", err ? err : "not read");
		free(err);
		return NULL;
	}
	const char *js = json_object_to_json_string_ext(chain, JSON_C_TO_STRING_PRETTY);
	add_file(b, "storage/chain.json", js, strlen(js));
	if (s->src->engine) /* files on the engine's host, no DataVolume/PVC/PV objects behind them */
		return chain;
	for (size_t i = 0; i < json_object_array_length(chain); i++) {
		struct json_object *v = json_object_array_get_idx(chain, i);
		static const struct {
			const char *key, *base, *plural, *file;
			bool namespaced;
		} links[] = {
			{ "dataVolume", "/apis/cdi.kubevirt.io/v1beta1", "datavolumes", "dv", true },
			{ "pvc", "/api/v1", "persistentvolumeclaims", "pvc", true },
			{ "pv", "/api/v1", "persistentvolumes", "pv", false },
		};
		for (size_t l = 0; l < sizeof links / sizeof links[0]; l++) {
			struct json_object *x, *n;
			if (!json_object_object_get_ex(v, links[l].key, &x) || !json_object_object_get_ex(x, "name", &n))
				continue;
			const char *name = json_object_get_string(n);
			char *file = xasprintf("storage/%s-%s.yaml", links[l].file, name);
			char *en = curl_easy_escape(NULL, name, 0), *ens = curl_easy_escape(NULL, s->ns, 0);
			char *p = links[l].namespaced ? xasprintf("%s/namespaces/%s/%s/%s", links[l].base, ens, links[l].plural, en)
						      : xasprintf("%s/%s/%s", links[l].base, links[l].plural, en);
			curl_free(en);
			curl_free(ens);
			char *e2 = NULL;
			struct json_object *o = storage_get_json(s->src, p, &status, &e2);
			if (o)
				add_yaml(b, file, o);
			else
				missing(b, file, e2 ? e2 : status == 404 ? "does not exist" : "could not be read");
			json_object_put(o);
			free(e2);
			free(p);
			free(file);
		}
	}
	return chain;
}

int cmd_bundle(int argc, char **argv)
{
	/* the flags are the command table's (cmd/cmd.c), parsed by its parser (cmd/args.c) */
	struct args g;
	int pr = args_parse_verb(argc, argv, &g);
	if (pr == ARGS_OK && g.npos != 1) {
		log_eprintf("error: %s\nSee 'kvcon bundle --help' for usage.\n",
			    g.npos ? "one VM at a time" : "which VM? (NAMESPACE/NAME)");
		pr = ARGS_ERR;
	}
	const char *ref = pr == ARGS_OK ? g.pos[0] : NULL, *out = args_get(&g, "--output");
	args_free(&g);
	if (pr != ARGS_OK)
		return pr == ARGS_HELP ? EXIT_OK : EXIT_USAGE;
	if (out && *out == '\0') {
		log_eprintf("error: --output needs a file name\n");
		return EXIT_USAGE;
	}
	struct session s;
	struct bundle b = { .s = &s, .now = util_wall_s() };
	buf_init(&b.manifest);
	char *outpath = NULL;
	int rc = session_open(&s, "bundle", ref);
	if (rc != EXIT_OK)
		goto out;
	struct chain *c = chain_build(s.st, s.src, s.ns, s.name);
	if (c == NULL) {
		session_not_found(&s);
		rc = EXIT_API;
		goto out;
	}
	if (out)
		outpath = xstrdup(out);
	else {
		char stamp[32];
		time_t t = (time_t)b.now;
		struct tm tm;
		gmtime_r(&t, &tm);
		strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
		outpath = xasprintf("kvcon-bundle-%s-%s-%s.tar.gz", s.ns, s.name, stamp);
		for (char *p = outpath; *p; p++)
			if (*p == '/')
				*p = '_';
	}
	char *err = NULL;
	b.tar = tarball_open(outpath, &err);
	if (b.tar == NULL) {
		char *e = util_escape_display(err);
		fprintf(stderr, "error: %s\n", e);
		free(e);
		free(err);
		chain_free(c);
		rc = EXIT_API;
		goto out;
	}
	char *hn = util_escape_display(s.ns), *nn = util_escape_display(s.name), when[40];
	util_format_time(b.now, when, sizeof when);
	buf_printf(&b.manifest, "kvcon bundle of VirtualMachine %s/%s on %s %s, collected %s\n", hn, nn,
		   s.src->engine ? "engine host" : "context", s.src->name, when);
	buf_add_str(&b.manifest, "Secrets are never read; cloud-init userData/networkData are replaced by \"" REDACTED "\".\n\n");
	free(hn);
	free(nn);

	if (c->vm)
		add_object(&b, OBJ_VM, s.name, "vm.yaml", "describe/vm.txt");
	else
		missing(&b, "vm.yaml", "no VirtualMachine of that name (a standalone VMI)");
	if (c->vmi)
		add_object(&b, OBJ_VMI, s.name, "vmi.yaml", "describe/vmi.txt");
	else
		missing(&b, "vmi.yaml", "no VirtualMachineInstance: the VM is not running");
	if (c->npods == 0)
		missing(&b, "pods/", "no launcher pod");
	for (size_t i = 0; i < c->npods; i++) {
		const struct pod *p = c->pods[i];
		char *f = xasprintf("pods/%s.yaml", p->o.name), *d = xasprintf("describe/pod-%s.txt", p->o.name);
		add_object(&b, OBJ_POD, p->o.name, f, d);
		free(f);
		free(d);
		const char *vmn = c->vmi ? c->vmi->o.name : s.name;
		int nc = p->ncontainers;
		for (int k = 0; k <= nc; k++) {
			/* every container; on the engine the launcher's one container has the serial log beside it
			 * (the service's pods/NAME/log?container=serial) */
			const char *cn = k < nc ? p->containers[k].name : s.src->engine && !has_container(p, "serial") ? "serial" : NULL;
			if (cn == NULL)
				break;
			for (int prev = 0; prev < 2; prev++) {
				char *lf = xasprintf("logs/%s/%s%s.log", p->o.name, cn, prev ? ".previous" : "");
				add_log(&b, p, vmn, cn, prev, lf);
				free(lf);
			}
		}
	}
	add_events(&b, c);
	struct json_object *stor = add_cluster_extras(&b, c);
	if (s.src->engine)
		add_domain_xml(&b); /* the XML kvcon defined for the current execution */
	missing(&b, "console.log", "the serial console is interactive and not attached by bundle (kvcon console --log FILE keeps it)");
	/* as kvcon diagnose: the storage rules' headlines name the claim and the DataVolume from the chain */
	struct diag *d = diag_run_storage(c, stor, util_wall_s());
	struct buf t;
	buf_init(&t);
	diag_format_text(d, c, &t);
	storage_format_text(stor, &t);
	json_object_put(stor);
	add_file(&b, "diagnosis.txt", t.data, t.len);
	buf_reset(&t);
	diag_free(d);
	size_t nex;
	const struct lineage_exec *const *ex = lineage_get(s.lin, s.src, s.ns, s.name, &nex);
	lineage_format_text(ex, nex, util_wall_s(), &t);
	add_file(&b, "lineage.txt", t.data ? t.data : "", t.len);
	buf_free(&t);
	chain_free(c);

	buf_printf(&b.manifest, "\n%d files, %d not collected\n", b.files + 1, b.missing);
	tarball_add(b.tar, "manifest.txt", b.manifest.data, b.manifest.len, b.now);
	if (tarball_close(b.tar, &err) < 0) {
		char *e = util_escape_display(err);
		fprintf(stderr, "error: %s\n", e);
		free(e);
		free(err);
		rc = EXIT_API;
		goto out;
	}
	char *eo = util_escape_display(outpath);
	printf("bundle written: %s (%d files, %d not collected: see manifest.txt)\n", eo, b.files + 1, b.missing);
	free(eo);
out:
	free(outpath);
	buf_free(&b.manifest);
	session_close(&s);
	return rc;
}
