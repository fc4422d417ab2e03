/* kubeconfig loading with libyaml's document API (nodes keep their line marks for errors), merged across files
 * in kubectl's order: the first file that defines a cluster, user or context name wins, and the first file
 * that sets current-context decides it. Relative paths resolve against the directory of the defining file. */
#include "kube/kubeconfig.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

#include "core/log.h"
#include "core/util.h"
#include "core/ydoc.h"
#include "core/xmalloc.h"

struct kfile {
	char *path;
	char *dir;
	yaml_document_t doc;
	bool has_doc;
};

struct kset {
	struct kfile *files;
	int n;
};

/* The first file:line of a node, for messages. */
static char *where(const struct kfile *f, const yaml_node_t *n)
{
	return xasprintf("%s:%zu", f->path, n ? n->start_mark.line + 1 : 1);
}

static char *errf(const struct kfile *f, const yaml_node_t *n, const char *what)
{
	char *w = where(f, n);
	char *e = xasprintf("%s: %s", w, what);
	free(w);
	return e;
}

static const char *map_str(yaml_document_t *d, yaml_node_t *map, const char *key)
{
	return ydoc_str(ydoc_get(d, map, key));
}

static bool yaml_true(const char *s)
{
	static const char *const yes[] = { "true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON" };
	for (size_t i = 0; s && i < sizeof yes / sizeof yes[0]; i++)
		if (strcmp(s, yes[i]) == 0)
			return true;
	return false;
}

static void kset_free(struct kset *ks)
{
	for (int i = 0; i < ks->n; i++) {
		if (ks->files[i].has_doc)
			yaml_document_delete(&ks->files[i].doc);
		free(ks->files[i].path);
		free(ks->files[i].dir);
	}
	free(ks->files);
	ks->files = NULL;
	ks->n = 0;
}

static char *dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');
	if (slash == NULL)
		return xstrdup(".");
	if (slash == path)
		return xstrdup("/");
	return xstrndup(path, (size_t)(slash - path));
}

/* Checks the shape of the top level so that later lookups can trust it. */
static int check_shape(struct kfile *f, char **err)
{
	yaml_node_t *root = yaml_document_get_root_node(&f->doc);
	if (root == NULL || (root->type == YAML_SCALAR_NODE && ydoc_str(root)[0] == '\0'))
		return 0;
	if (root->type != YAML_MAPPING_NODE) {
		*err = errf(f, root, "a kubeconfig must be a mapping");
		return -1;
	}
	static const char *const lists[] = { "clusters", "users", "contexts" };
	static const char *const inner[] = { "cluster", "user", "context" };
	for (size_t i = 0; i < 3; i++) {
		yaml_node_t *l = ydoc_get(&f->doc, root, lists[i]);
		if (l == NULL || (l->type == YAML_SCALAR_NODE && (ydoc_str(l)[0] == '\0' || strcmp(ydoc_str(l), "null") == 0)))
			continue;
		if (l->type != YAML_SEQUENCE_NODE) {
			char *m = xasprintf("'%s' must be a list", lists[i]);
			*err = errf(f, l, m);
			free(m);
			return -1;
		}
		for (yaml_node_item_t *it = l->data.sequence.items.start; it < l->data.sequence.items.top; it++) {
			yaml_node_t *e = yaml_document_get_node(&f->doc, *it);
			if (e == NULL || e->type != YAML_MAPPING_NODE || map_str(&f->doc, e, "name") == NULL) {
				char *m = xasprintf("each entry of '%s' must be a mapping with a 'name'", lists[i]);
				*err = errf(f, e, m);
				free(m);
				return -1;
			}
			yaml_node_t *in = ydoc_get(&f->doc, e, inner[i]);
			if (in && in->type != YAML_MAPPING_NODE &&
			    !(in->type == YAML_SCALAR_NODE && strcmp(ydoc_str(in), "null") == 0)) {
				char *m = xasprintf("'%s' of '%s' must be a mapping", inner[i], map_str(&f->doc, e, "name"));
				*err = errf(f, in, m);
				free(m);
				return -1;
			}
		}
	}
	yaml_node_t *cc = ydoc_get(&f->doc, root, "current-context");
	if (cc && cc->type != YAML_SCALAR_NODE) {
		*err = errf(f, cc, "'current-context' must be a string");
		return -1;
	}
	return 0;
}

static int load_file(struct kfile *f, char **err)
{
	FILE *fp = fopen(f->path, "rb");
	if (fp == NULL) {
		*err = xasprintf("%s: %s", f->path, strerror(errno));
		return -1;
	}
	yaml_parser_t p;
	yaml_parser_initialize(&p);
	yaml_parser_set_input_file(&p, fp);
	int rc = 0;
	if (!yaml_parser_load(&p, &f->doc)) {
		*err = xasprintf("%s:%zu:%zu: bad YAML: %s%s%s", f->path, p.problem_mark.line + 1,
				 p.problem_mark.column + 1, p.problem ? p.problem : "parse error",
				 p.context ? " " : "", p.context ? p.context : "");
		rc = -1;
	} else {
		f->has_doc = true;
		rc = check_shape(f, err);
	}
	yaml_parser_delete(&p);
	fclose(fp);
	return rc;
}

static void kset_add(struct kset *ks, const char *path)
{
	for (int i = 0; i < ks->n; i++)
		if (strcmp(ks->files[i].path, path) == 0)
			return; /* kubectl ignores duplicates */
	ks->files = xreallocarray(ks->files, (size_t)ks->n + 1, sizeof *ks->files);
	struct kfile *f = &ks->files[ks->n++];
	memset(f, 0, sizeof *f);
	f->path = xstrdup(path);
	f->dir = dir_of(path);
}

static bool file_exists(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0;
}

/* Loads the files kubectl would: the explicit one (must exist), or each existing $KUBECONFIG entry, or
 * ~/.kube/config. Returns 0 (ks->n may be 0 when nothing exists) or -1 with *err. */
static int kset_load(struct kset *ks, const char *path, char **err)
{
	memset(ks, 0, sizeof *ks);
	if (path && *path) {
		kset_add(ks, path);
	} else {
		const char *env = getenv("KUBECONFIG");
		if (env && *env) {
			char *copy = xstrdup(env);
			char *save = NULL;
			for (char *p = strtok_r(copy, ":", &save); p; p = strtok_r(NULL, ":", &save))
				if (file_exists(p))
					kset_add(ks, p);
			free(copy);
		} else {
			char *home = util_home_dir();
			if (home) {
				char *p = xasprintf("%s/.kube/config", home);
				if (file_exists(p))
					kset_add(ks, p);
				free(p);
				free(home);
			}
		}
	}
	for (int i = 0; i < ks->n; i++) {
		if (load_file(&ks->files[i], err) < 0) {
			kset_free(ks);
			return -1;
		}
	}
	return 0;
}

static yaml_node_t *root_of(struct kfile *f)
{
	yaml_node_t *r = f->has_doc ? yaml_document_get_root_node(&f->doc) : NULL;
	return r && r->type == YAML_MAPPING_NODE ? r : NULL;
}

/* Finds the first entry named name in section list ("clusters", ...) across files; *fi gets its file. */
static yaml_node_t *find_named(struct kset *ks, const char *list, const char *name, int *fi)
{
	for (int i = 0; i < ks->n; i++) {
		struct kfile *f = &ks->files[i];
		yaml_node_t *l = ydoc_get(&f->doc, root_of(f), list);
		if (l == NULL || l->type != YAML_SEQUENCE_NODE)
			continue;
		for (yaml_node_item_t *it = l->data.sequence.items.start; it < l->data.sequence.items.top; it++) {
			yaml_node_t *e = yaml_document_get_node(&f->doc, *it);
			const char *n = map_str(&f->doc, e, "name");
			if (n && strcmp(n, name) == 0) {
				*fi = i;
				return e;
			}
		}
	}
	return NULL;
}

static char *resolve_path(const struct kfile *f, const char *p)
{
	if (p == NULL || *p == '\0')
		return NULL;
	if (p[0] == '/')
		return xstrdup(p);
	char *home = p[0] == '~' && p[1] == '/' ? util_home_dir() : NULL;
	if (home) {
		char *r = xasprintf("%s%s", home, p + 1);
		free(home);
		return r;
	}
	return util_path_join(f->dir, p);
}

/* Reads a base64 field, reporting where it is when malformed. */
static int b64_field(struct kfile *f, yaml_node_t *map, const char *key, char **out, size_t *len, char **err)
{
	yaml_node_t *n = ydoc_get(&f->doc, map, key);
	const char *s = ydoc_str(n);
	if (s == NULL || *s == '\0')
		return 0;
	*out = util_b64_decode(s, strlen(s), len, UTIL_B64_URLSAFE);
	if (*out == NULL) {
		char *m = xasprintf("'%s' is not valid base64", key);
		*err = errf(f, n, m);
		free(m);
		return -1;
	}
	return 0;
}

static int load_exec(struct kube_config *kc, struct kfile *f, yaml_node_t *ex, char **err)
{
	yaml_document_t *d = &f->doc;
	if (ex->type != YAML_MAPPING_NODE) {
		*err = errf(f, ex, "'exec' must be a mapping");
		return -1;
	}
	struct kube_exec *e = xcalloc(1, sizeof *e);
	kc->exec = e;
	e->api_version = xstrdup0(map_str(d, ex, "apiVersion"));
	const char *cmd = map_str(d, ex, "command");
	if (cmd == NULL || *cmd == '\0') {
		*err = errf(f, ex, "exec plugin has no 'command'");
		return -1;
	}
	if (e->api_version == NULL || (strcmp(e->api_version, "client.authentication.k8s.io/v1") != 0 &&
				       strcmp(e->api_version, "client.authentication.k8s.io/v1beta1") != 0)) {
		char *m = xasprintf("exec plugin apiVersion '%s' is not supported (want "
				    "client.authentication.k8s.io/v1 or v1beta1)",
				    e->api_version ? e->api_version : "");
		*err = errf(f, ex, m);
		free(m);
		return -1;
	}
	/* as client-go: a command with a path separator is relative to the kubeconfig, a bare name uses PATH */
	e->command = strchr(cmd, '/') ? resolve_path(f, cmd) : xstrdup(cmd);
	e->install_hint = xstrdup0(map_str(d, ex, "installHint"));
	e->provide_cluster_info = yaml_true(map_str(d, ex, "provideClusterInfo"));
	const char *im = map_str(d, ex, "interactiveMode");
	if (im == NULL || *im == '\0' || strcmp(im, "IfAvailable") == 0) {
		e->interactive = KUBE_EXEC_IF_AVAILABLE;
	} else if (strcmp(im, "Never") == 0) {
		e->interactive = KUBE_EXEC_NEVER;
	} else if (strcmp(im, "Always") == 0) {
		e->interactive = KUBE_EXEC_ALWAYS;
	} else {
		char *m = xasprintf("exec plugin interactiveMode '%s' is not Never, IfAvailable or Always", im);
		*err = errf(f, ex, m);
		free(m);
		return -1;
	}
	yaml_node_t *args = ydoc_get(d, ex, "args");
	if (args && args->type == YAML_SEQUENCE_NODE) {
		for (yaml_node_item_t *it = args->data.sequence.items.start; it < args->data.sequence.items.top; it++) {
			const char *a = ydoc_str(yaml_document_get_node(d, *it));
			e->args = xreallocarray(e->args, (size_t)e->nargs + 1, sizeof *e->args);
			e->args[e->nargs++] = xstrdup(a ? a : "");
		}
	}
	yaml_node_t *env = ydoc_get(d, ex, "env");
	if (env && env->type == YAML_SEQUENCE_NODE) {
		for (yaml_node_item_t *it = env->data.sequence.items.start; it < env->data.sequence.items.top; it++) {
			yaml_node_t *kv = yaml_document_get_node(d, *it);
			const char *name = map_str(d, kv, "name");
			const char *val = map_str(d, kv, "value");
			if (name == NULL || *name == '\0') {
				*err = errf(f, kv, "exec env entry has no 'name'");
				return -1;
			}
			e->env = xreallocarray(e->env, (size_t)e->nenv + 1, sizeof *e->env);
			e->env[e->nenv++] = xasprintf("%s=%s", name, val ? val : "");
		}
	}
	return 0;
}

static int load_cluster(struct kube_config *kc, struct kfile *f, yaml_node_t *c, char **err)
{
	yaml_document_t *d = &f->doc;
	kc->server = xstrdup0(map_str(d, c, "server"));
	if (kc->server == NULL || *kc->server == '\0') {
		char *m = xasprintf("cluster '%s' has no server", kc->cluster_name);
		*err = errf(f, c, m);
		free(m);
		return -1;
	}
	kc->ca_file = resolve_path(f, map_str(d, c, "certificate-authority"));
	if (b64_field(f, c, "certificate-authority-data", &kc->ca_data, &kc->ca_len, err) < 0)
		return -1;
	kc->insecure = yaml_true(map_str(d, c, "insecure-skip-tls-verify"));
	kc->tls_server_name = xstrdup0(map_str(d, c, "tls-server-name"));
	kc->proxy_url = xstrdup0(map_str(d, c, "proxy-url"));
	return 0;
}

static int load_user(struct kube_config *kc, struct kfile *f, yaml_node_t *u, char **err)
{
	yaml_document_t *d = &f->doc;
	const char *tok = map_str(d, u, "token");
	kc->token = tok && *tok ? xstrdup(tok) : NULL;
	kc->token_file = resolve_path(f, map_str(d, u, "tokenFile"));
	kc->cert_file = resolve_path(f, map_str(d, u, "client-certificate"));
	kc->key_file = resolve_path(f, map_str(d, u, "client-key"));
	if (b64_field(f, u, "client-certificate-data", &kc->cert_data, &kc->cert_len, err) < 0 ||
	    b64_field(f, u, "client-key-data", &kc->key_data, &kc->key_len, err) < 0)
		return -1;
	kc->username = xstrdup0(map_str(d, u, "username"));
	kc->password = xstrdup0(map_str(d, u, "password"));
	yaml_node_t *ex = ydoc_get(d, u, "exec");
	if (ex && !(ex->type == YAML_SCALAR_NODE && strcmp(ydoc_str(ex), "null") == 0))
		return load_exec(kc, f, ex, err);
	return 0;
}

static char *read_trim(const char *path)
{
	char *s = util_read_file(path, NULL);
	if (s == NULL)
		return NULL;
	size_t n = strlen(s);
	while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' '))
		s[--n] = '\0';
	return s;
}

/* The service account kubelet mounts into a pod, as client-go's InClusterConfig reads it. */
static struct kube_config *load_in_cluster(char **err)
{
	const char *host = getenv("KUBERNETES_SERVICE_HOST");
	const char *port = getenv("KUBERNETES_SERVICE_PORT");
	if (host == NULL || *host == '\0' || port == NULL || *port == '\0') {
		const char *env = getenv("KUBECONFIG");
		*err = env && *env ? xasprintf("none of the KUBECONFIG files exists (%s) and not running in a cluster: "
					       "point $KUBECONFIG or --kubeconfig at a cluster's kubeconfig",
					       env)
				   : xstrdup("no kubeconfig (~/.kube/config or $KUBECONFIG) and not running in a cluster "
					     "(KUBERNETES_SERVICE_HOST unset): point $KUBECONFIG or --kubeconfig at a "
					     "cluster's kubeconfig (the local engine's VMs: kvcon engine get)");
		return NULL;
	}
	const char *dir = getenv(KUBECONFIG_SA_DIR_ENV);
	if (dir == NULL || *dir == '\0')
		dir = KUBECONFIG_SA_DIR;
	struct kube_config *kc = xcalloc(1, sizeof *kc);
	kc->in_cluster = true;
	kc->origin = xstrdup("in-cluster");
	kc->context = xstrdup("in-cluster");
	kc->cluster_name = xstrdup("in-cluster");
	kc->user_name = xstrdup("serviceaccount");
	kc->server = strchr(host, ':') ? xasprintf("https://[%s]:%s", host, port) : xasprintf("https://%s:%s", host, port);
	kc->token_file = util_path_join(dir, "token");
	if (!file_exists(kc->token_file)) {
		*err = xasprintf("in-cluster config: %s: %s", kc->token_file, strerror(ENOENT));
		kube_config_free(kc);
		return NULL;
	}
	kc->ca_file = util_path_join(dir, "ca.crt");
	char *nsfile = util_path_join(dir, "namespace");
	kc->ns = read_trim(nsfile);
	free(nsfile);
	return kc;
}

static const char *current_context(struct kset *ks)
{
	for (int i = 0; i < ks->n; i++) {
		const char *cc = map_str(&ks->files[i].doc, root_of(&ks->files[i]), "current-context");
		if (cc && *cc)
			return cc;
	}
	return NULL;
}

struct kube_config *kube_config_load(const char *path, const char *context, char **err)
{
	struct kset ks;
	struct kube_config *kc = NULL;
	*err = NULL;
	if (kset_load(&ks, path, err) < 0)
		return NULL;
	if (ks.n == 0) {
		kc = load_in_cluster(err);
		if (kc)
			goto finish;
		return NULL;
	}
	const char *ctxname = context && *context ? context : current_context(&ks);
	if (ctxname == NULL) {
		*err = xasprintf("%s: no current-context set (use --context)", ks.files[0].path);
		goto fail;
	}
	int fi = 0;
	yaml_node_t *ce = find_named(&ks, "contexts", ctxname, &fi);
	if (ce == NULL) {
		*err = xasprintf("context '%s' not found in %s%s", ctxname, ks.files[0].path,
				 ks.n > 1 ? " (or the other KUBECONFIG files)" : "");
		goto fail;
	}
	struct kfile *cf = &ks.files[fi];
	yaml_node_t *ctx = ydoc_get(&cf->doc, ce, "context");
	kc = xcalloc(1, sizeof *kc);
	kc->origin = xstrdup(cf->path);
	kc->context = xstrdup(ctxname);
	kc->cluster_name = xstrdup0(map_str(&cf->doc, ctx, "cluster"));
	kc->user_name = xstrdup0(map_str(&cf->doc, ctx, "user"));
	const char *ns = map_str(&cf->doc, ctx, "namespace");
	kc->ns = ns && *ns ? xstrdup(ns) : NULL;
	if (kc->cluster_name == NULL || *kc->cluster_name == '\0') {
		char *m = xasprintf("context '%s' names no cluster", ctxname);
		*err = errf(cf, ce, m);
		free(m);
		goto fail;
	}
	int cfi = 0;
	yaml_node_t *cl = find_named(&ks, "clusters", kc->cluster_name, &cfi);
	if (cl == NULL) {
		char *m = xasprintf("context '%s' names cluster '%s', which is not defined", ctxname, kc->cluster_name);
		*err = errf(cf, ce, m);
		free(m);
		goto fail;
	}
	yaml_node_t *cln = ydoc_get(&ks.files[cfi].doc, cl, "cluster");
	if (cln == NULL || cln->type != YAML_MAPPING_NODE) {
		char *m = xasprintf("cluster '%s' has no server", kc->cluster_name);
		*err = errf(&ks.files[cfi], cl, m);
		free(m);
		goto fail;
	}
	if (load_cluster(kc, &ks.files[cfi], cln, err) < 0)
		goto fail;
	if (kc->user_name && *kc->user_name) {
		int ufi = 0;
		yaml_node_t *ue = find_named(&ks, "users", kc->user_name, &ufi);
		if (ue == NULL) {
			char *m = xasprintf("context '%s' names user '%s', which is not defined", ctxname, kc->user_name);
			*err = errf(cf, ce, m);
			free(m);
			goto fail;
		}
		yaml_node_t *un = ydoc_get(&ks.files[ufi].doc, ue, "user");
		if (un && un->type == YAML_MAPPING_NODE && load_user(kc, &ks.files[ufi], un, err) < 0)
			goto fail;
	}
finish:
	kset_free(&ks);
	if (kc->ns == NULL || *kc->ns == '\0') {
		free(kc->ns);
		kc->ns = xstrdup("default");
	}
	return kc;
fail:
	kset_free(&ks);
	kube_config_free(kc);
	return NULL;
}

static void exec_free(struct kube_exec *e)
{
	if (e == NULL)
		return;
	free(e->api_version);
	free(e->command);
	for (int i = 0; i < e->nargs; i++)
		free(e->args[i]);
	free(e->args);
	for (int i = 0; i < e->nenv; i++)
		free(e->env[i]);
	free(e->env);
	free(e->install_hint);
	free(e);
}

static void free_secret(char *s, size_t len)
{
	if (s == NULL)
		return;
	explicit_bzero(s, len ? len : strlen(s));
	free(s);
}

void kube_config_free(struct kube_config *kc)
{
	if (kc == NULL)
		return;
	free(kc->origin);
	free(kc->context);
	free(kc->cluster_name);
	free(kc->user_name);
	free(kc->ns);
	free(kc->server);
	free(kc->ca_file);
	free(kc->ca_data);
	free(kc->tls_server_name);
	free(kc->unix_socket);
	free(kc->proxy_url);
	free_secret(kc->token, 0);
	free(kc->token_file);
	free(kc->cert_file);
	free(kc->key_file);
	free(kc->cert_data);
	free_secret(kc->key_data, kc->key_len);
	free(kc->username);
	free_secret(kc->password, 0);
	exec_free(kc->exec);
	free(kc);
}

char **kube_config_context_names(const char *path, size_t *n, char **err)
{
	struct kset ks;
	*err = NULL;
	*n = 0;
	if (kset_load(&ks, path, err) < 0)
		return NULL;
	char **names = xcalloc(1, sizeof *names);
	for (int i = 0; i < ks.n; i++) {
		struct kfile *f = &ks.files[i];
		yaml_node_t *l = ydoc_get(&f->doc, root_of(f), "contexts");
		if (l == NULL || l->type != YAML_SEQUENCE_NODE)
			continue;
		for (yaml_node_item_t *it = l->data.sequence.items.start; it < l->data.sequence.items.top; it++) {
			const char *name = map_str(&f->doc, yaml_document_get_node(&f->doc, *it), "name");
			bool dup = false;
			for (size_t j = 0; name && j < *n; j++)
				dup = dup || strcmp(names[j], name) == 0;
			if (name == NULL || dup)
				continue;
			names = xreallocarray(names, *n + 2, sizeof *names);
			names[(*n)++] = xstrdup(name);
			names[*n] = NULL;
		}
	}
	if (ks.n == 0 && getenv("KUBERNETES_SERVICE_HOST")) {
		names = xreallocarray(names, 2, sizeof *names);
		names[(*n)++] = xstrdup("in-cluster");
		names[*n] = NULL;
	}
	kset_free(&ks);
	return names;
}

void kube_config_names_free(char **names)
{
	for (size_t i = 0; names && names[i]; i++)
		free(names[i]);
	free(names);
}

static char *unix_prefix; /* kube_config_unix_prefix */

void kube_config_unix_prefix(const char *path)
{
	free(unix_prefix);
	unix_prefix = path ? xstrdup(path) : NULL;
}

struct kube_config *kube_config_unix(const char *socket_path, const char *context, const char *ns)
{
	struct kube_config *kc = xcalloc(1, sizeof *kc);
	kc->origin = xstrdup(socket_path);
	kc->context = xstrdup(context);
	kc->cluster_name = xstrdup(context);
	kc->ns = xstrdup(ns && *ns ? ns : "default");
	kc->ns_explicit = ns && *ns;
	kc->server = xasprintf("http://kvcon-engine%s", unix_prefix ? unix_prefix : "");
	kc->unix_socket = xstrdup(socket_path);
	return kc;
}
