/* `kvcon engine kubeconfig [--merge]`: kubectl's way to the engine service without a restart. The service (started
 * on demand if none answers) serves HTTPS on 127.0.0.1 on the port it chose once and recorded (engine/apitls.h),
 * and keeps this root's kubeconfig beside that record (service/service.h: engine_service_file); this prints it (server, CA, token, context kvcon-engine), or merges those three entries into
 * the user's kubeconfig (the first file of $KUBECONFIG, else ~/.kube/config), leaving every other entry alone. */
#include "cmd/cmd_engine.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cmd/args.h"
#include "cmd/session.h"
#include "core/buf.h"
#include "core/jout.h"
#include "core/log.h"
#include "core/opts.h"
#include "core/util.h"
#include "core/xmalloc.h"
#include "core/ydoc.h"
#include "core/trust.h"
#include "service/service.h"

#define CTX "kvcon-engine"
#define MAX_KUBECONFIG (4u << 20)

/* The user's kubeconfig: $KUBECONFIG's first file, else ~/.kube/config (caller frees). */
static char *user_kubeconfig(void)
{
	const char *env = getenv("KUBECONFIG");
	if (env && *env) {
		size_t n = strcspn(env, ":");
		if (n > 0)
			return xstrndup(env, n);
	}
	char *home = util_home_dir(), *dir = util_path_join(home, ".kube");
	char *p = util_path_join(dir, "config");
	free(home);
	free(dir);
	return p;
}

/* Replaces the entry named CTX of list key in cfg (or appends it) with the one of ours. */
static void put_entry(json_object *cfg, json_object *ours, const char *key)
{
	json_object *l = NULL, *out = json_object_new_array(), *mine = NULL;
	json_object_object_get_ex(cfg, key, &l);
	for (size_t i = 0; l && json_object_is_type(l, json_type_array) && i < json_object_array_length(l); i++) {
		json_object *e = json_object_array_get_idx(l, i), *n = NULL;
		if (json_object_object_get_ex(e, "name", &n) && strcmp(json_object_get_string(n), CTX) == 0)
			continue;
		json_object_array_add(out, json_object_get(e));
	}
	json_object *ol = NULL;
	if (json_object_object_get_ex(ours, key, &ol) && json_object_array_length(ol) == 1)
		mine = json_object_array_get_idx(ol, 0);
	if (mine)
		json_object_array_add(out, json_object_get(mine));
	json_object_object_add(cfg, key, out);
}

static json_object *yaml_json(const char *text, size_t len, char **err)
{
	yaml_document_t d;
	if (ydoc_load(&d, text, len, err) < 0)
		return NULL;
	json_object *j = ydoc_json(&d, yaml_document_get_root_node(&d));
	yaml_document_delete(&d);
	if (j == NULL || !json_object_is_type(j, json_type_object)) {
		json_object_put(j);
		*err = xstrdup("not a kubeconfig (a mapping is expected)");
		return NULL;
	}
	return j;
}

static int merge(const char *text, char **done)
{
	char *path = user_kubeconfig(), *err = NULL, why[UTIL_WHY_LEN];
	int rc = -1;
	size_t len = 0;
	errno = 0;
	char *old = util_read_file(path, &len);
	json_object *cfg = NULL, *ours = yaml_json(text, strlen(text), &err);
	if (old == NULL && errno != ENOENT) {
		err = xasprintf("%s: %s", path, strerror(errno ? errno : EIO));
		goto out;
	}
	if (old && len > MAX_KUBECONFIG) {
		err = xasprintf("%s: larger than %u bytes", path, MAX_KUBECONFIG);
		goto out;
	}
	cfg = old && len ? yaml_json(old, len, &err) : json_object_new_object();
	if (cfg == NULL || ours == NULL) {
		char *e = err;
		err = xasprintf("%s: %s", path, e ? e : "unreadable");
		free(e);
		goto out;
	}
	if (!json_object_object_get_ex(cfg, "apiVersion", NULL))
		json_object_object_add(cfg, "apiVersion", json_object_new_string("v1"));
	if (!json_object_object_get_ex(cfg, "kind", NULL))
		json_object_object_add(cfg, "kind", json_object_new_string("Config"));
	put_entry(cfg, ours, "clusters");
	put_entry(cfg, ours, "users");
	put_entry(cfg, ours, "contexts");
	json_object *cur = NULL;
	if (!json_object_object_get_ex(cfg, "current-context", &cur) || *json_object_get_string(cur) == 0)
		json_object_object_add(cfg, "current-context", json_object_new_string(CTX));
	struct buf b;
	buf_init(&b);
	if (jout_yaml(&b, cfg) < 0) {
		buf_free(&b);
		err = xstrdup("cannot write YAML");
		goto out;
	}
	char *dir = xstrdup(path), *slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = 0;
		util_mkdir_p(dir, 0700);
	}
	free(dir);
	/* a temporary file (O_EXCL, 0600) renamed over a regular file of ours: never through a link */
	rc = util_write_file_why(path, b.data, b.len, 0600, why);
	if (rc < 0)
		err = xasprintf("%s: %s", path, why);
	explicit_bzero(b.data, b.len);
	buf_free(&b);
	if (rc == 0)
		*done = path;
out:
	if (err) {
		char *e = util_escape_display(err);
		log_eprintf("error: engine kubeconfig --merge: %s\n", e);
		free(e);
	}
	if (rc < 0)
		free(path);
	free(err);
	if (old)
		explicit_bzero(old, len);
	free(old);
	json_object_put(cfg);
	json_object_put(ours);
	return rc;
}

int cmd_engine_kubeconfig(int argc, char **argv)
{
	struct args a;
	int p = args_parse_sub("engine", argc, argv, &a);
	if (p == ARGS_OK && a.npos) {
		log_eprintf("error: engine kubeconfig takes no operand\nSee 'kvcon engine kubeconfig --help' for usage.\n");
		p = ARGS_ERR;
	}
	bool want_merge = p == ARGS_OK && args_bool(&a, "--merge");
	args_free(&a);
	if (p != ARGS_OK)
		return p == ARGS_HELP ? EXIT_OK : EXIT_USAGE;
	char *err = NULL, *sock = session_service_answering(&err);
	if (sock == NULL) {
		char *e = util_escape_display(err ? err : "no engine service (--no-engine, or routing is off)");
		log_eprintf("error: engine kubeconfig: %s\n", e);
		free(e);
		free(err);
		return EXIT_API;
	}
	char *state = util_state_dir(), *kpath = engine_service_file(state, sock, "engine-kubeconfig"), *why = NULL;
	int rc = EXIT_API;
	char *text = trust_read_file(kpath, NULL, &why), *done = NULL;
	if (text == NULL) {
		log_eprintf("error: engine kubeconfig: the engine service on %s serves no HTTPS (engine.api-port = off?): "
			    "%s: %s\n", sock, kpath, why ? why : "cannot read");
		goto out;
	}
	if (!want_merge) {
		fputs(text, stdout);
		rc = fflush(stdout) == 0 ? EXIT_OK : EXIT_API;
	} else if (merge(text, &done) == 0) {
		const char *srv = strstr(text, "server: ");
		int n = srv ? (int)strcspn(srv + 8, "\n") : 0;
		printf("context \"%s\" (%.*s) merged into %s\n", CTX, n, srv ? srv + 8 : "", done);
		free(done);
		rc = EXIT_OK;
	}
	explicit_bzero(text, strlen(text));
	free(text);
out:
	free(why);
	free(kpath);
	free(err);
	free(state);
	free(sock);
	return rc;
}
