/* `kvcon apply -f`, `kvcon delete -f` and `kvcon create namespace`: kubectl's verbs on the documents of files,
 * directories (-R: and below) or STDIN, each document on its own as kubectl does (a line per object, the errors
 * after, exit 1 when any failed), against the cluster or the engine service (kube/kapply.c does one object).
 * `kvcon engine apply` is this verb on the engine; it then waits, as it always did, until the run strategies of
 * the VMs it stored have acted. */
#include "cmd/cmd_apply.h"

#include <dirent.h>
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd/args.h"
#include "cmd/cmd_diagnose.h"
#include "cmd/session.h"
#include "core/buf.h"
#include "core/connect.h"
#include "core/log.h"
#include "core/loop.h"
#include "core/opts.h"
#include "core/util.h"
#include "core/xmalloc.h"
#include "core/ydoc.h"
#include "kube/http.h"
#include "kube/kapply.h"
#include "kube/kube.h"
#include "kube/kubeconfig.h"
#include "model/registry.h"

enum verb { V_APPLY, V_DELETE, V_CREATE };

/* What the verb's row's flags (cmd/cmd.c: apply, create, delete) said. */
struct apply_args {
	enum verb verb;
	const char **files;
	int nfiles;
	bool recursive, ignore_not_found, wait;
	long wait_ms; /* delete: how long --wait waits for each object to be gone */
	enum kapply_dry dry;
	const char *ns_name; /* create namespace NAME */
};

/* One document to act on, with the file it came from. */
struct doc {
	json_object *obj;
	char *source;
};

struct run {
	struct doc *docs;
	size_t ndocs;
	char **errs;
	size_t nerrs;
};

static void add_err(struct run *r, char *e)
{
	r->errs = xreallocarray(r->errs, r->nerrs + 1, sizeof *r->errs);
	r->errs[r->nerrs++] = e;
}

static bool manifest_ext(const char *name)
{
	const char *dot = strrchr(name, '.');
	return dot && (strcmp(dot, ".yaml") == 0 || strcmp(dot, ".yml") == 0 || strcmp(dot, ".json") == 0);
}

/* The documents of one file (or STDIN): a file that does not parse is refused whole, nothing of it applied. */
static void read_one(struct run *r, const char *path)
{
	size_t len = 0;
	char *text;
	if (strcmp(path, "-") == 0) {
		struct buf b;
		buf_init(&b);
		char tmp[4096];
		ssize_t n;
		while ((n = read(0, tmp, sizeof tmp)) > 0)
			buf_add(&b, tmp, (size_t)n);
		len = b.len;
		text = buf_steal(&b);
		if (text == NULL)
			text = xstrdup("");
	} else if ((text = util_read_file(path, &len)) == NULL) {
		add_err(r, xasprintf("error: the path \"%s\" cannot be read: %s", path, strerror(errno)));
		return;
	}
	const char *src = strcmp(path, "-") == 0 ? "STDIN" : path;
	yaml_document_t *docs = NULL;
	size_t n = 0;
	char *err = NULL;
	if (ydoc_load_all(&docs, &n, text, len, &err) < 0) {
		char *e = util_escape_display(err);
		add_err(r, xasprintf("error: error parsing %s: %s", src, e));
		free(e);
		free(err);
		free(text);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		yaml_node_t *root = yaml_document_get_root_node(&docs[i]);
		json_object *o = root && root->type == YAML_MAPPING_NODE ? ydoc_json(&docs[i], root) : NULL;
		if (o == NULL) {
			add_err(r, xasprintf("error: error parsing %s: document %zu is not an object", src, i + 1));
			continue;
		}
		json_object *items;
		const char *kind = json_object_get_string(json_object_object_get(o, "kind"));
		if (kind && strcmp(kind, "List") == 0 && json_object_object_get_ex(o, "items", &items) &&
		    json_object_is_type(items, json_type_array)) {
			/* a List (kubectl get -o yaml's output): its items */
			for (size_t k = 0; k < json_object_array_length(items); k++) {
				r->docs = xreallocarray(r->docs, r->ndocs + 1, sizeof *r->docs);
				r->docs[r->ndocs++] = (struct doc){ json_object_get(json_object_array_get_idx(items, k)),
								    xstrdup(src) };
			}
			json_object_put(o);
			continue;
		}
		r->docs = xreallocarray(r->docs, r->ndocs + 1, sizeof *r->docs);
		r->docs[r->ndocs++] = (struct doc){ o, xstrdup(src) };
	}
	ydoc_free_all(docs, n);
	free(text);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A directory's manifests (.yaml, .yml, .json) in lexical order, as kubectl walks it; with -R its subdirectories. */
static void read_dir(struct run *r, const char *dir, bool recursive, int depth)
{
	DIR *d = opendir(dir);
	if (d == NULL) {
		add_err(r, xasprintf("error: the path \"%s\" cannot be read: %s", dir, strerror(errno)));
		return;
	}
	char **names = NULL;
	size_t n = 0;
	for (struct dirent *e; (e = readdir(d)) != NULL;) {
		if (e->d_name[0] == '.' && (e->d_name[1] == '\0' || (e->d_name[1] == '.' && e->d_name[2] == '\0')))
			continue;
		names = xreallocarray(names, n + 1, sizeof *names);
		names[n++] = util_path_join(dir, e->d_name);
	}
	closedir(d);
	qsort(names, n, sizeof *names, cmp_str);
	for (size_t i = 0; i < n; i++) {
		struct stat st;
		if (stat(names[i], &st) == 0 && S_ISDIR(st.st_mode)) {
			if (recursive && depth < 32)
				read_dir(r, names[i], recursive, depth + 1);
		} else if (manifest_ext(names[i]))
			read_one(r, names[i]);
		free(names[i]);
	}
	free(names);
}

static void read_path(struct run *r, const char *path, bool recursive)
{
	struct stat st;
	if (strcmp(path, "-") != 0 && stat(path, &st) != 0) {
		add_err(r, xasprintf("error: the path \"%s\" does not exist", path));
		return;
	}
	if (strcmp(path, "-") != 0 && S_ISDIR(st.st_mode))
		read_dir(r, path, recursive, 0);
	else
		read_one(r, path);
}

/* ---- the target: the cluster, or the engine service ---- */

/* The engine as core/connect.c's rule says which source a command reads: `kvcon engine apply`, -c URI without a
 * cluster option, --context engine, or no kubeconfig; the kubeconfig's context (o->context, else its current
 * one) otherwise, and when --context names both (CTX,engine) the cluster's, as kubectl apply has one target. */
static bool on_engine(void)
{
	struct kvcon_opts *o = opts_global();
	if (o->engine_only)
		return true;
	struct connect_plan p;
	connect_plan(o, &p);
	return p.engine && (!p.kube || p.kube_optional); /* no kubeconfig: the engine, not a pod's service account */
}

static struct kube_config *target(char **err)
{
	return cmd_apply_target(err);
}

struct kube_config *cmd_apply_target(char **err)
{
	struct kvcon_opts *o = opts_global();
	if (!on_engine())
		return kube_config_load(o->kubeconfig, o->context, err);
	char *sock = session_service_answering(err);
	if (sock == NULL) {
		if (*err == NULL)
			*err = xstrdup("no engine service to apply to (--no-engine, or routing is off)");
		return NULL;
	}
	log_info("the engine service answers on %s: going through it", sock);
	char *notice = kube_engine_notice(sock); /* its host's (KVM, TCG): once a boot, as every engine verb says it */
	if (notice) {
		char hn[256] = "localhost";
		gethostname(hn, sizeof hn - 1);
		session_notice_once_text(hn, notice);
		free(notice);
	}
	struct kube_config *kc = kube_config_unix(sock, "kvcon-engine", o->ns);
	free(sock);
	return kc;
}

/* ---- the verb ---- */

/* ARGS_OK, ARGS_HELP (usage printed) or ARGS_ERR (said why); the values point into argv, a->files is the
 * caller's to free. */
static int parse(int argc, char **argv, struct apply_args *a)
{
	struct args g;
	int p = args_parse_verb(argc, argv, &g);
	if (p != ARGS_OK) {
		args_free(&g);
		return p;
	}
	a->files = xcalloc((size_t)g.nitems + 1, sizeof *a->files);
	for (int i = 0; i < g.nitems; i++)
		if (strcmp(g.items[i].f->l, "--filename") == 0)
			a->files[a->nfiles++] = g.items[i].val;
	a->recursive = args_bool(&g, "--recursive");
	a->ignore_not_found = args_bool(&g, "--ignore-not-found");
	a->wait = !args_off(&g, "--wait"); /* kubectl delete waits unless --wait=false */
	a->wait_ms = args_num(&g, "--wait", 120000);
	const char *dry = args_get(&g, "--dry-run");
	if (dry == NULL || strcmp(dry, "none") == 0)
		a->dry = KAPPLY_DRY_NONE;
	else if (strcmp(dry, "server") == 0)
		a->dry = KAPPLY_DRY_SERVER;
	else if (strcmp(dry, "client") == 0 || strcmp(dry, "") == 0 || strcmp(dry, "true") == 0)
		a->dry = KAPPLY_DRY_CLIENT; /* bare --dry-run: kubectl's deprecated "unchanged", which is client */
	else {
		log_eprintf("error: Invalid dry-run value (%s). Must be \"none\", \"server\", or \"client\".\n", dry);
		p = ARGS_ERR;
	}
	for (int i = 0; i < g.npos && p == ARGS_OK; i++) {
		const char *w = g.pos[i];
		if (a->verb == V_CREATE && a->ns_name == NULL && strcmp(w, "namespace") != 0 && strcmp(w, "ns") != 0)
			a->ns_name = w;
		else if (a->verb != V_CREATE || a->ns_name != NULL) {
			args_usage_error(&g, "unexpected argument \"%s\"", w);
			p = ARGS_ERR;
		}
	}
	if (p == ARGS_OK && a->verb == V_CREATE && a->ns_name == NULL) {
		args_usage_error(&g, "exactly one NAME is required, got 0");
		p = ARGS_ERR;
	}
	if (p == ARGS_OK && a->verb != V_CREATE && a->nfiles == 0) {
		args_usage_error(&g, "must specify one of -f and -k");
		p = ARGS_ERR;
	}
	args_free(&g);
	return p;
}

/* After the objects, as kubectl's CheckErr: one error with "error: " (unless the server's), several one per line. */
static void print_errs(struct run *r)
{
	for (size_t i = 0; i < r->nerrs; i++) {
		const char *e = r->errs[i];
		bool raw = r->nerrs > 1 || util_has_prefix(e, "Error from server") || util_has_prefix(e, "error: ");
		if (r->nerrs > 1 && util_has_prefix(e, "error: "))
			e += 7;
		log_eprintf("%s%s\n", raw ? "" : "error: ", e);
	}
}

/* One GET, waited for: the status (0: no answer) and the body (caller frees). */
struct get {
	bool done;
	long status;
	char *body;
};

static void get_done(void *arg, const struct kube_resp *r)
{
	struct get *g = arg;
	g->done = true;
	g->status = r->status;
	g->body = r->body ? xstrndup(r->body, r->len) : NULL;
}

static long get(struct kube_http *h, const char *path, char **body)
{
	struct get g = { 0 };
	struct kube_http_req q = { .path = path, .timeout_ms = 10000, .on_done = get_done, .arg = &g };
	struct kube_req *rq = kube_http_start(h, &q);
	uint64_t until = util_now_ms() + 12000;
	while (!g.done && util_now_ms() < until && !loop_quitting())
		loop_once(100);
	if (!g.done)
		kube_http_cancel(rq);
	if (body)
		*body = g.body;
	else
		free(g.body);
	return g.status;
}

/* delete's --wait: GET until 404. */
static bool wait_gone(struct kube_http *h, const char *path, uint64_t until)
{
	while (util_now_ms() < until && !loop_quitting()) {
		long st = get(h, path, NULL);
		if (st == 404)
			return true;
		if (st == 0)
			return false;
		loop_once(200);
	}
	return false;
}

/* The engine's apply leaves once the run strategies of the VMs it stored have acted (as the in-process apply
 * converged before it returned): no VM Starting, Stopping, ...; none Stopped that its strategy starts. */
static bool vm_settled(struct kube_http *h, const char *path, bool created)
{
	static const char *const moving[] = { "Starting", "Stopping", "Terminating", "Provisioning", "Migrating",
					      "WaitingForVolumeBinding" };
	char *body = NULL;
	if (get(h, path, &body) != 200) {
		free(body);
		return true; /* gone or unreachable: nothing to wait for */
	}
	json_object *o = json_tokener_parse(body ? body : ""), *v;
	free(body);
	const char *ps = "", *rs = "";
	if (o && json_object_object_get_ex(o, "status", &v) && json_object_object_get_ex(v, "printableStatus", &v))
		ps = json_object_get_string(v);
	if (o && json_object_object_get_ex(o, "spec", &v) && json_object_object_get_ex(v, "runStrategy", &v))
		rs = json_object_get_string(v);
	bool settled = true;
	for (size_t k = 0; k < sizeof moving / sizeof moving[0]; k++)
		if (strcmp(ps, moving[k]) == 0)
			settled = false;
	bool to_run = strcmp(rs, "Always") == 0 || (created && (strcmp(rs, "RerunOnFailure") == 0 || strcmp(rs, "Once") == 0));
	if (to_run && (strcmp(ps, "Stopped") == 0 || *ps == '\0'))
		settled = false;
	json_object_put(o);
	return settled;
}

static int run(struct apply_args *a)
{
	session_cli_start();
	struct run r = { 0 };
	for (int i = 0; i < a->nfiles; i++)
		read_path(&r, a->files[i], a->recursive);
	int rc = EXIT_OK;
	char *err = NULL, **settle = NULL;
	bool *settle_created = NULL;
	size_t nsettle = 0;
	struct kube_config *kc = NULL;
	struct kube_http *h = NULL;
	if (r.ndocs == 0 && r.nerrs == 0 && a->verb != V_CREATE) {
		log_eprintf("error: no objects passed to %s\n", a->verb == V_APPLY ? "apply" : "delete");
		rc = EXIT_API;
		goto out;
	}
	if (r.ndocs || a->verb == V_CREATE) {
		kc = target(&err);
		h = kc ? kube_http_new(kc, &err) : NULL;
		if (h == NULL) {
			char *e = util_escape_display(err ? err : "no server");
			log_eprintf("error: %s\n", e);
			free(e);
			rc = EXIT_API;
			goto out;
		}
	}
	if (a->verb == V_CREATE) {
		json_object *o = json_object_new_object(), *md = json_object_new_object();
		json_object_object_add(o, "apiVersion", json_object_new_string("v1"));
		json_object_object_add(o, "kind", json_object_new_string("Namespace"));
		json_object_object_add(md, "name", json_object_new_string(a->ns_name));
		json_object_object_add(o, "metadata", md);
		r.docs = xcalloc(1, sizeof *r.docs);
		r.docs[0] = (struct doc){ o, xstrdup("") };
		r.ndocs = 1;
	}
	bool explicit_ns = kc && kc->ns_explicit;
	bool engine = on_engine();
	if (engine && a->verb == V_DELETE) {
		/* the file's Namespaces go last: their own cascade would race the deletes of what they hold (NotFound) */
		struct doc *sorted = xcalloc(r.ndocs ? r.ndocs : 1, sizeof *sorted);
		size_t k = 0;
		for (int pass = 0; pass < 2; pass++)
			for (size_t i = 0; i < r.ndocs; i++) {
				const char *kind = json_object_get_string(json_object_object_get(r.docs[i].obj, "kind"));
				if ((kind && strcmp(kind, "Namespace") == 0) == (pass == 1))
					sorted[k++] = r.docs[i];
			}
		free(r.docs);
		r.docs = sorted;
	}
	for (size_t i = 0; i < r.ndocs; i++) {
		struct kapply_opts ko = { .dry = a->dry, .ns = kc->ns, .source = r.docs[i].source,
					  .ignore_not_found = a->ignore_not_found, .timeout_ms = 60000 };
		json_object *md = json_object_object_get(r.docs[i].obj, "metadata");
		const char *dns = json_object_get_string(json_object_object_get(md, "namespace"));
		if (explicit_ns && dns && *dns && strcmp(dns, kc->ns) != 0) {
			add_err(&r, xasprintf("error: the namespace from the provided object \"%s\" does not match the namespace "
					      "\"%s\". You must pass '--namespace=%s' to perform this operation.", dns, kc->ns,
					      dns));
			continue;
		}
		char *line = NULL, *e = NULL;
		int x;
		if (a->verb == V_DELETE)
			x = kapply_delete(h, r.docs[i].obj, &ko, &line, &e);
		else if (a->verb == V_CREATE)
			x = kapply_create(h, r.docs[i].obj, &ko, &line, &e);
		else
			x = kapply_apply(h, r.docs[i].obj, &ko, &line, &e);
		if (x < 0) {
			struct buf b;
			buf_init(&b);
			for (char *sp, *l = strtok_r(e, "\n", &sp); l; l = strtok_r(NULL, "\n", &sp)) {
				char *m = util_escape_display(l);
				buf_printf(&b, "%s%s", b.len ? "\n" : "", m);
				free(m);
			}
			add_err(&r, buf_steal(&b));
		} else if (line) {
			char *m = util_escape_display(line);
			printf("%s\n", m);
			fflush(stdout);
			free(m);
		}
		if (x == 0 && engine && a->verb == V_APPLY && a->dry == KAPPLY_DRY_NONE &&
		    util_has_prefix(line, "virtualmachine.kubevirt.io/")) {
			settle = xreallocarray(settle, nsettle + 1, sizeof *settle);
			settle_created = xreallocarray(settle_created, nsettle + 1, sizeof *settle_created);
			settle_created[nsettle] = strstr(line, " created") != NULL;
			settle[nsettle++] = kapply_path(r.docs[i].obj, kc->ns);
		}
		if (x == 0 && line && a->verb == V_DELETE && a->wait && a->dry == KAPPLY_DRY_NONE) {
			char *path = kapply_path(r.docs[i].obj, kc->ns);
			if (path && !wait_gone(h, path, util_now_ms() + (uint64_t)a->wait_ms))
				add_err(&r, xasprintf("error: timed out waiting for the deletion of %s", path));
			free(path);
		}
		free(line);
		free(e);
	}
	/* the engine: until the run strategies of the VMs stored have acted */
	for (uint64_t until = util_now_ms() + 60000; nsettle && util_now_ms() < until && !loop_quitting();) {
		size_t left = 0;
		for (size_t i = 0; i < nsettle; i++)
			if (settle[i] && !vm_settled(h, settle[i], settle_created[i]))
				left++;
			else {
				free(settle[i]);
				settle[i] = NULL;
			}
		if (left == 0)
			break;
		loop_once(200);
	}
out:
	for (size_t i = 0; i < nsettle; i++)
		free(settle[i]);
	free(settle);
	free(settle_created);
	print_errs(&r);
	if (r.nerrs)
		rc = EXIT_API;
	for (size_t i = 0; i < r.ndocs; i++) {
		json_object_put(r.docs[i].obj);
		free(r.docs[i].source);
	}
	free(r.docs);
	for (size_t i = 0; i < r.nerrs; i++)
		free(r.errs[i]);
	free(r.errs);
	free(err);
	kube_http_free(h);
	kube_config_free(kc);
	return rc;
}

static int verb_main(enum verb v, int argc, char **argv)
{
	struct apply_args a = { .verb = v };
	int p = parse(argc, argv, &a);
	int rc = p == ARGS_OK ? run(&a) : p == ARGS_HELP ? EXIT_OK : EXIT_USAGE;
	free(a.files);
	return rc;
}

int cmd_apply(int argc, char **argv)
{
	return verb_main(V_APPLY, argc, argv);
}

int cmd_create(int argc, char **argv)
{
	return verb_main(V_CREATE, argc, argv);
}

/* delete -f FILE: the documents' objects; delete NS/NAME: the lifecycle action (model/registry.c). One row's flags
 * (cmd/cmd.c's delete) for both. */
int cmd_delete(int argc, char **argv)
{
	struct args g;
	int p = args_parse_verb(argc, argv, &g);
	bool files = args_has(&g, "--filename");
	args_free(&g);
	if (p != ARGS_OK)
		return p == ARGS_HELP ? EXIT_OK : EXIT_USAGE;
	return files ? verb_main(V_DELETE, argc, argv) : cmd_action(argc, argv);
}
