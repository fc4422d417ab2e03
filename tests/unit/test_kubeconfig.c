/* kubeconfig loading (merge order, relative paths, errors with file:line, in-cluster config) and credentials
 * (exec plugins run on the loop: cached, re-run when expired, failures reported). */
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/loop.h"
#include "core/util.h"
#include "core/xmalloc.h"
#include "kube/cred.h"
#include "kube/http.h"
#include "kube/kubeconfig.h"
#include "service/service.h"
#include "t.h"

static char tmpdir[] = "/tmp/kvcon-kcfg-XXXXXX";

static char *write_tmp(const char *name, const char *text)
{
	char *p = util_path_join(tmpdir, name);
	FILE *f = fopen(p, "w");
	fputs(text, f);
	fclose(f);
	return p;
}

static const char file_a[] = "apiVersion: v1\n"
			     "kind: Config\n"
			     "current-context: ctx-a\n"
			     "clusters:\n"
			     "- name: shared\n"
			     "  cluster:\n"
			     "    server: https://a.example:6443\n"
			     "    certificate-authority: certs/ca.pem\n"
			     "    tls-server-name: api.internal\n"
			     "- name: only-a\n"
			     "  cluster:\n"
			     "    server: https://only-a.example\n"
			     "    insecure-skip-tls-verify: true\n"
			     "    proxy-url: http://proxy:3128\n"
			     "users:\n"
			     "- name: ua\n"
			     "  user:\n"
			     "    tokenFile: secrets/token\n"
			     "    client-certificate: /abs/cert.pem\n"
			     "    client-key: key.pem\n"
			     "contexts:\n"
			     "- name: ctx-a\n"
			     "  context: {cluster: shared, user: ua, namespace: team-a}\n";

static const char file_b[] = "apiVersion: v1\n"
			     "current-context: ctx-b\n"
			     "clusters:\n"
			     "- name: shared\n"
			     "  cluster:\n"
			     "    server: https://b.example\n"
			     "    certificate-authority-data: aGVsbG8gY2E=\n"
			     "users:\n"
			     "- name: ub\n"
			     "  user:\n"
			     "    token: secret-b\n"
			     "    client-certificate-data: Y2VydA==\n"
			     "- name: ua\n"
			     "  user:\n"
			     "    token: must-not-win\n"
			     "contexts:\n"
			     "- name: ctx-b\n"
			     "  context: {cluster: shared, user: ub}\n"
			     "- name: ctx-a\n"
			     "  context: {cluster: only-a, user: ub}\n"
			     "- name: ctx-only-a\n"
			     "  context: {cluster: only-a, user: ub, namespace: nb}\n";

static void test_merge(void)
{
	char *a = write_tmp("a.yaml", file_a);
	char *b = write_tmp("b.yaml", file_b);
	char *env = xasprintf("%s/missing.yaml:%s:%s", tmpdir, a, b);
	setenv("KUBECONFIG", env, 1);
	char *err = NULL;
	struct kube_config *kc = kube_config_load(NULL, NULL, &err);
	T_CHECK(kc != NULL);
	if (kc) {
		/* current-context from the first file that sets it; ctx-a from file a, its cluster from file a */
		T_EQ_STR(kc->context, "ctx-a");
		T_EQ_STR(kc->server, "https://a.example:6443");
		T_EQ_STR(kc->ns, "team-a");
		T_EQ_STR(kc->tls_server_name, "api.internal");
		char *ca = xasprintf("%s/certs/ca.pem", tmpdir);
		T_EQ_STR(kc->ca_file, ca);
		free(ca);
		char *tf = xasprintf("%s/secrets/token", tmpdir);
		T_EQ_STR(kc->token_file, tf);
		free(tf);
		T_EQ_STR(kc->cert_file, "/abs/cert.pem");
		char *kf = xasprintf("%s/key.pem", tmpdir);
		T_EQ_STR(kc->key_file, kf);
		free(kf);
		T_CHECK(kc->token == NULL); /* user ua of file b must not win */
		T_CHECK(!kc->insecure);
		T_EQ_STR(kc->origin, a);
	}
	kube_config_free(kc);
	/* --context picks ctx-b (defined only in b); its cluster "shared" still comes from file a */
	kc = kube_config_load(NULL, "ctx-b", &err);
	T_CHECK(kc != NULL);
	if (kc) {
		T_EQ_STR(kc->server, "https://a.example:6443");
		T_CHECK(kc->ca_data == NULL);
		T_EQ_STR(kc->token, "secret-b");
		T_EQ_INT(kc->cert_len, 4);
		T_EQ_STR(kc->cert_data, "cert");
		T_EQ_STR(kc->ns, "default"); /* no namespace in the context */
	}
	kube_config_free(kc);
	kc = kube_config_load(NULL, "ctx-only-a", &err);
	T_CHECK(kc != NULL);
	if (kc) {
		T_EQ_STR(kc->server, "https://only-a.example");
		T_CHECK(kc->insecure);
		T_EQ_STR(kc->proxy_url, "http://proxy:3128");
		T_EQ_STR(kc->ns, "nb");
	}
	kube_config_free(kc);
	/* file b alone: its own shared cluster with CA data */
	kc = kube_config_load(b, NULL, &err);
	T_CHECK(kc != NULL);
	if (kc) {
		T_EQ_STR(kc->context, "ctx-b");
		T_EQ_STR(kc->server, "https://b.example");
		T_EQ_STR(kc->ca_data, "hello ca");
	}
	kube_config_free(kc);
	size_t n = 0;
	char **names = kube_config_context_names(NULL, &n, &err);
	T_EQ_INT(n, 3);
	if (names && n == 3) {
		T_EQ_STR(names[0], "ctx-a");
		T_EQ_STR(names[1], "ctx-b");
		T_EQ_STR(names[2], "ctx-only-a");
	}
	kube_config_names_free(names);
	kc = kube_config_load(NULL, "nope", &err);
	T_CHECK(kc == NULL && err && strstr(err, "context 'nope' not found"));
	free(err);
	err = NULL;
	free(env);
	free(a);
	free(b);
}

static void expect_error(const char *name, const char *text, const char *want)
{
	char *p = write_tmp(name, text);
	char *err = NULL;
	struct kube_config *kc = kube_config_load(p, NULL, &err);
	T_CHECK(kc == NULL);
	char *full = xasprintf("%s:%s", p, want);
	T_CHECK(err != NULL && strstr(err, full) != NULL);
	if (err == NULL || strstr(err, full) == NULL)
		fprintf(stderr, "  got: %s\n  want: %s\n", err ? err : "(null)", full);
	kube_config_free(kc);
	free(full);
	free(err);
	free(p);
}

static void test_errors(void)
{
	expect_error("bad1.yaml", "apiVersion: v1\nclusters:\n- name: x\n  cluster: {server: [\n", "5:");
	expect_error("bad2.yaml", "apiVersion: v1\nclusters:\n  name: x\n", "3: 'clusters' must be a list");
	expect_error("bad3.yaml", "current-context: c\ncontexts:\n- name: c\n  context: {cluster: nope}\n",
		     "3: context 'c' names cluster 'nope'");
	expect_error("bad4.yaml",
		     "current-context: c\nclusters:\n- name: k\n  cluster:\n    server: https://x\n"
		     "    certificate-authority-data: '!!notbase64'\ncontexts:\n- name: c\n  context: {cluster: k}\n",
		     "6: 'certificate-authority-data' is not valid base64");
	expect_error("bad5.yaml", "- just\n- a list\n", "1: a kubeconfig must be a mapping");
	expect_error("bad6.yaml",
		     "current-context: c\nclusters:\n- name: k\n  cluster: {server: https://x}\nusers:\n- name: u\n"
		     "  user:\n    exec:\n      apiVersion: client.authentication.k8s.io/v1alpha1\n      command: x\n"
		     "contexts:\n- name: c\n  context: {cluster: k, user: u}\n",
		     "9: exec plugin apiVersion 'client.authentication.k8s.io/v1alpha1' is not supported");
	char *err = NULL;
	char *missing = util_path_join(tmpdir, "does-not-exist");
	T_CHECK(kube_config_load(missing, NULL, &err) == NULL && err && strstr(err, missing));
	free(err);
	free(missing);
	/* an empty file is an empty config: no current-context */
	char *empty = write_tmp("empty.yaml", "");
	err = NULL;
	T_CHECK(kube_config_load(empty, NULL, &err) == NULL && err && strstr(err, "no current-context"));
	free(err);
	free(empty);
}

static void test_in_cluster(void)
{
	char *home = util_path_join(tmpdir, "home");
	mkdir(home, 0700);
	char *sa = util_path_join(tmpdir, "sa");
	mkdir(sa, 0700);
	free(write_tmp("sa/token", "sa-token\n"));
	free(write_tmp("sa/ca.crt", "CA\n"));
	free(write_tmp("sa/namespace", "kubevirt-ops\n"));
	unsetenv("KUBECONFIG");
	setenv("HOME", home, 1);
	setenv(KUBECONFIG_SA_DIR_ENV, sa, 1);
	unsetenv("KUBERNETES_SERVICE_HOST");
	char *err = NULL;
	struct kube_config *kc = kube_config_load(NULL, NULL, &err);
	T_CHECK(kc == NULL && err && strstr(err, "not running in a cluster"));
	free(err);
	setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
	setenv("KUBERNETES_SERVICE_PORT", "443", 1);
	kc = kube_config_load(NULL, NULL, &err);
	T_CHECK(kc != NULL);
	if (kc) {
		T_CHECK(kc->in_cluster);
		T_EQ_STR(kc->server, "https://10.96.0.1:443");
		T_EQ_STR(kc->ns, "kubevirt-ops");
		char *ca = util_path_join(sa, "ca.crt");
		T_EQ_STR(kc->ca_file, ca);
		free(ca);
		struct kube_cred *c = kube_cred_new(kc);
		T_EQ_STR(kube_cred_token(c), "sa-token");
		kube_cred_free(c);
	}
	kube_config_free(kc);
	setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
	kc = kube_config_load(NULL, NULL, &err);
	T_CHECK(kc && strcmp(kc->server, "https://[fd00::1]:443") == 0);
	kube_config_free(kc);
	unsetenv("KUBERNETES_SERVICE_HOST");
	unsetenv("KUBERNETES_SERVICE_PORT");
	free(home);
	free(sa);
}

struct cb_state {
	int calls;
	char *err;
};

static void on_cred(void *arg, const char *err)
{
	struct cb_state *s = arg;
	s->calls++;
	free(s->err);
	s->err = xstrdup0(err);
}

/* Runs the loop until the callback fired (deadline 10 s). */
static void wait_cb(struct cb_state *s)
{
	uint64_t end = util_now_ms() + 10000;
	while (s->calls == 0 && util_now_ms() < end)
		loop_once(100);
}

static struct kube_config *exec_config(const char *mode, const char *api)
{
	char dir[512];
	snprintf(dir, sizeof dir, "%s", __FILE__);
	char *plugin = xasprintf("%s/%s/exec-credential.sh", getenv("PWD") ? getenv("PWD") : ".", dirname(dir));
	if (__FILE__[0] == '/')
		plugin = (free(plugin), xasprintf("%s/exec-credential.sh", dirname(dir)));
	char *text = xasprintf("current-context: c\nclusters:\n- name: k\n  cluster: {server: https://x}\n"
			       "users:\n- name: u\n  user:\n    exec:\n      apiVersion: %s\n      command: %s\n"
			       "      args: [\"-suffix\"]\n      installHint: install the test plugin\n"
			       "      env:\n      - {name: COUNTER, value: %s/counter}\n      - {name: MODE, value: %s}\n"
			       "contexts:\n- name: c\n  context: {cluster: k, user: u}\n",
			       api, plugin, tmpdir, mode);
	char *p = write_tmp("exec.yaml", text);
	char *err = NULL;
	struct kube_config *kc = kube_config_load(p, NULL, &err);
	if (kc == NULL)
		fprintf(stderr, "exec config: %s\n", err);
	free(err);
	free(p);
	free(text);
	free(plugin);
	char *counter = util_path_join(tmpdir, "counter");
	unlink(counter);
	free(counter);
	return kc;
}

static void test_exec(void)
{
	struct kube_config *kc = exec_config("ok", "client.authentication.k8s.io/v1");
	T_CHECK(kc != NULL);
	if (kc == NULL)
		return;
	struct kube_cred *c = kube_cred_new(kc);
	struct cb_state s = { 0 };
	char *err = NULL;
	T_EQ_INT(kube_cred_ensure(c, on_cred, &s, &err), 0);
	wait_cb(&s);
	T_EQ_INT(s.calls, 1);
	T_CHECK(s.err == NULL);
	T_EQ_STR(kube_cred_token(c), "tok-1-suffix");
	/* cached until it expires (2999) */
	T_EQ_INT(kube_cred_ensure(c, on_cred, &s, &err), 1);
	T_EQ_INT(kube_cred_exec_runs(c), 1);
	/* a 401 invalidates: the plugin runs again */
	T_CHECK(kube_cred_invalidate(c));
	s.calls = 0;
	T_EQ_INT(kube_cred_ensure(c, on_cred, &s, &err), 0);
	wait_cb(&s);
	T_EQ_STR(kube_cred_token(c), "tok-2-suffix");
	kube_cred_free(c);
	kube_config_free(kc);

	/* an expired credential is re-run on the next use; v1beta1 works the same */
	kc = exec_config("expired", "client.authentication.k8s.io/v1beta1");
	c = kube_cred_new(kc);
	s.calls = 0;
	T_EQ_INT(kube_cred_ensure(c, on_cred, &s, &err), 0);
	wait_cb(&s);
	T_CHECK(s.err == NULL);
	T_EQ_STR(kube_cred_token(c), "tok-1-suffix");
	s.calls = 0;
	T_EQ_INT(kube_cred_ensure(c, on_cred, &s, &err), 0);
	wait_cb(&s);
	T_EQ_INT(kube_cred_exec_runs(c), 2);
	T_EQ_STR(kube_cred_token(c), "tok-2-suffix");
	kube_cred_free(c);
	kube_config_free(kc);

	/* a failing plugin: exit status and its stderr, never a crash */
	kc = exec_config("fail", "client.authentication.k8s.io/v1");
	c = kube_cred_new(kc);
	s.calls = 0;
	T_EQ_INT(kube_cred_ensure(c, on_cred, &s, &err), 0);
	wait_cb(&s);
	T_CHECK(s.err && strstr(s.err, "failed (exit 3)") && strstr(s.err, "boom: cannot reach"));
	T_CHECK(kube_cred_token(c) == NULL);
	kube_cred_free(c);
	kube_config_free(kc);

	kc = exec_config("garbage", "client.authentication.k8s.io/v1");
	c = kube_cred_new(kc);
	s.calls = 0;
	kube_cred_ensure(c, on_cred, &s, &err);
	wait_cb(&s);
	T_CHECK(s.err && strstr(s.err, "not a JSON ExecCredential"));
	kube_cred_free(c);
	kube_config_free(kc);

	kc = exec_config("cert", "client.authentication.k8s.io/v1");
	c = kube_cred_new(kc);
	s.calls = 0;
	kube_cred_ensure(c, on_cred, &s, &err);
	wait_cb(&s);
	size_t len;
	T_CHECK(s.err == NULL);
	T_EQ_STR(kube_cred_cert(c, &len), "CERT");
	T_EQ_STR(kube_cred_key(c, &len), "KEY");
	kube_cred_free(c);
	kube_config_free(kc);

	/* a plugin that is not installed: the install hint */
	char *p = write_tmp("exec2.yaml", "current-context: c\nclusters:\n- name: k\n  cluster: {server: https://x}\n"
					  "users:\n- name: u\n  user:\n    exec:\n      apiVersion: "
					  "client.authentication.k8s.io/v1\n      command: kvcon-no-such-plugin\n"
					  "      installHint: install the test plugin\n"
					  "contexts:\n- name: c\n  context: {cluster: k, user: u}\n");
	kc = kube_config_load(p, NULL, &err);
	free(p);
	T_CHECK(kc != NULL);
	if (kc) {
		c = kube_cred_new(kc);
		s.calls = 0;
		int rc = kube_cred_ensure(c, on_cred, &s, &err);
		if (rc == 0) { /* posix_spawnp may report ENOENT through the child's exit 127 */
			wait_cb(&s);
			T_CHECK(s.err && strstr(s.err, "install the test plugin"));
		} else {
			T_CHECK(rc < 0 && err && strstr(err, "install the test plugin"));
			free(err);
		}
		kube_cred_free(c);
		kube_config_free(kc);
	}
	free(s.err);
}

static bool pid_alive(const char *file)
{
	char *t = util_read_file(file, NULL);
	int pid = t ? atoi(t) : 0;
	free(t);
	/* a zombie still answers kill(0): look at its state */
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/stat", pid);
	char *st = pid > 0 ? util_read_file(path, NULL) : NULL;
	const char *rp = st ? strrchr(st, ')') : NULL;
	bool alive = rp && rp[1] == ' ' && rp[2] != 'Z';
	free(st);
	return alive;
}

/* SIGKILL is delivered asynchronously: polls up to 2 s for the process to be gone. */
static bool pid_gone(const char *file)
{
	for (int i = 0; i < 200; i++) {
		if (!pid_alive(file))
			return true;
		usleep(10000);
	}
	return false;
}

/* Finding 6 of issue 14: a plugin that leaves a child holding its pipes, and a plugin that hangs. */
static void test_exec_bounded(void)
{
	setenv("KVCON_EXEC_TIMEOUT", "2", 1);
	char *child = xasprintf("%s/counter.child", tmpdir);
	/* the plugin answers and exits, its child keeps the pipes: done at once, the child killed */
	struct kube_config *kc = exec_config("leftover", "client.authentication.k8s.io/v1");
	T_CHECK(kc != NULL);
	struct kube_cred *c = kube_cred_new(kc);
	struct cb_state s = { 0 };
	char *err = NULL;
	uint64_t t0 = util_now_ms();
	T_EQ_INT(kube_cred_ensure(c, on_cred, &s, &err), 0);
	wait_cb(&s);
	uint64_t took = util_now_ms() - t0;
	T_EQ_INT(s.calls, 1);
	T_CHECK(s.err == NULL);
	T_EQ_STR(kube_cred_token(c), "tok-1-suffix");
	T_CHECK(took < 1900); /* not the deadline: the leftovers were killed once the plugin had exited */
	T_CHECK(pid_gone(child));
	kube_cred_free(c);
	kube_config_free(kc);

	/* a hanging plugin: fails at the deadline with its whole group killed, and is not run again at once */
	kc = exec_config("hang", "client.authentication.k8s.io/v1");
	c = kube_cred_new(kc);
	s.calls = 0;
	t0 = util_now_ms();
	T_EQ_INT(kube_cred_ensure(c, on_cred, &s, &err), 0);
	wait_cb(&s);
	took = util_now_ms() - t0;
	T_EQ_INT(s.calls, 1);
	T_CHECK(s.err && strstr(s.err, "did not finish within 2 s"));
	T_CHECK(took >= 1900 && took < 4000);
	T_CHECK(pid_gone(child));
	T_EQ_INT(kube_cred_exec_runs(c), 1);
	s.calls = 0;
	T_EQ_INT(kube_cred_ensure(c, on_cred, &s, &err), -1); /* answered from memory, no second run */
	T_CHECK(err && strstr(err, "did not finish"));
	free(err);
	err = NULL;
	for (int i = 0; i < 10; i++)
		loop_once(20);
	T_EQ_INT(kube_cred_exec_runs(c), 1);
	char *counter = util_path_join(tmpdir, "counter");
	char *runs = util_read_file(counter, NULL);
	T_CHECK(runs && atoi(runs) == 1);
	free(runs);
	free(counter);
	kube_cred_free(c);
	kube_config_free(kc);
	free(s.err);
	free(child);
	unsetenv("KVCON_EXEC_TIMEOUT");
}

/* Finding 5 of issue 14: credentials never go to http://, a CA with insecure-skip-tls-verify is refused. */
static void test_http_refusals(void)
{
	static const struct {
		const char *cluster, *user, *want; /* want NULL: accepted */
	} cases[] = {
		{ "server: http://127.0.0.1:1", "token: abc", "refusing to send a bearer token over plain HTTP" },
		{ "server: http://127.0.0.1:1", "tokenFile: /dev/null", "refusing to send a bearer token" },
		{ "server: http://127.0.0.1:1", "{username: u, password: p}", "refusing to send basic auth" },
		{ "server: http://127.0.0.1:1", "client-certificate-data: QQ==", "refusing to send a client certificate" },
		{ "server: http://127.0.0.1:1",
		  "exec: {apiVersion: client.authentication.k8s.io/v1, command: x, interactiveMode: Never}",
		  "refusing to send an exec credential" },
		{ "server: http://127.0.0.1:1", "{}", NULL },
		{ "server: https://127.0.0.1:1", "token: abc", NULL },
		{ "{server: https://127.0.0.1:1, certificate-authority-data: QQ==, insecure-skip-tls-verify: true}",
		  "token: abc", "specifying a root certificates file with the insecure flag is not allowed" },
		{ "{server: https://127.0.0.1:1, certificate-authority: /x/ca.crt, insecure-skip-tls-verify: true}",
		  "{}", "specifying a root certificates file with the insecure flag is not allowed" },
		{ "{server: https://127.0.0.1:1, insecure-skip-tls-verify: true}", "token: abc", NULL },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const char *cl = cases[i].cluster;
		char *text = xasprintf("current-context: c\nclusters:\n- name: k\n  cluster: %s%s%s\n"
				       "users:\n- name: u\n  user: %s%s%s\ncontexts:\n- name: c\n  context: {cluster: k, user: u}\n",
				       cl[0] == '{' ? "" : "{", cl, cl[0] == '{' ? "" : "}", cases[i].user[0] == '{' ? "" : "{",
				       cases[i].user, cases[i].user[0] == '{' ? "" : "}");
		char *p = write_tmp("refuse.yaml", text);
		char *err = NULL;
		struct kube_config *kc = kube_config_load(p, NULL, &err);
		T_CHECK(kc != NULL);
		if (kc == NULL) {
			fprintf(stderr, "case %zu: %s\n", i, err);
			free(err);
			free(p);
			free(text);
			continue;
		}
		struct kube_http *h = kube_http_new(kc, &err);
		if (cases[i].want) {
			T_CHECK(h == NULL && err && strstr(err, cases[i].want));
			if (h || err == NULL || strstr(err, cases[i].want) == NULL)
				fprintf(stderr, "case %zu: got %s\n", i, err ? err : "(accepted)");
		} else {
			T_CHECK(h != NULL);
		}
		kube_http_free(h);
		free(err);
		kube_config_free(kc);
		free(p);
		free(text);
	}
}

static int listen_at(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	snprintf(a.sun_path, sizeof a.sun_path, "%s", path);
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	unlink(path);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) < 0)
		return -1;
	return fd;
}

/* The engine service's socket: plain HTTP with nothing else allowed, /healthz answered or not (a stale socket),
 * and its path one per root. */
static void test_unix_socket(void)
{
	char *sock = util_path_join(tmpdir, "svc.sock");
	struct kube_config *kc = kube_config_unix(sock, "host1", NULL);
	char *err = NULL;
	struct kube_http *h = kube_http_new(kc, &err);
	T_CHECK(h != NULL && err == NULL);
	char *url = h ? kube_http_url(h, "/healthz") : NULL;
	T_CHECK(url && strcmp(url, "http://kvcon-engine/healthz") == 0);
	free(url);
	kube_http_free(h);
	T_CHECK(strcmp(kc->ns, "default") == 0 && strcmp(kc->context, "host1") == 0);
	/* never a credential or a proxy on the socket */
	kc->token = xstrdup("secret");
	h = kube_http_new(kc, &err);
	T_CHECK(h == NULL && err && strstr(err, "no credential"));
	free(err);
	err = NULL;
	free(kc->token);
	kc->token = NULL;
	kc->proxy_url = xstrdup("http://proxy:3128");
	h = kube_http_new(kc, &err);
	T_CHECK(h == NULL && err && strstr(err, "no proxy"));
	free(err);
	kube_config_free(kc);
	/* no socket; a stale one (bound, nobody listening); one that answers 200 */
	T_CHECK(!kube_http_unix_healthy(sock, 1000));
	int fd = listen_at(sock);
	T_CHECK(fd >= 0);
	T_CHECK(!kube_http_unix_healthy(sock, 1000));
	close(fd);
	fd = listen_at(sock);
	T_CHECK(fd >= 0 && listen(fd, 4) == 0);
	pid_t pid = fork();
	if (pid == 0) {
		int c = accept(fd, NULL, NULL);
		char req[1024];
		ssize_t n = read(c, req, sizeof req - 1);
		req[n > 0 ? n : 0] = '\0';
		const char *ok = strstr(req, "GET /healthz ") ? "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
							       : "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n";
		if (write(c, ok, strlen(ok)) < 0)
			_exit(1);
		_exit(0);
	}
	T_CHECK(kube_http_unix_healthy(sock, 5000));
	int st = 0;
	waitpid(pid, &st, 0);
	close(fd);
	unlink(sock);
	free(sock);
	/* one socket per root: the default root and -c of the same URI agree, another URI or state directory not */
	setenv("XDG_STATE_HOME", tmpdir, 1);
	setenv("XDG_RUNTIME_DIR", "/run/user/test", 1);
	unsetenv("KVCON_ENGINE_URI");
	unsetenv("LIBVIRT_DEFAULT_URI");
	char *uri = xasprintf("qemu:///embed?root=%s/kvcon/engine", tmpdir);
	char *other = xstrdup("qemu:///embed?root=/elsewhere");
	char *dflt = engine_service_socket(NULL, 0), *same = engine_service_socket(&uri, 1),
	     *diff = engine_service_socket(&other, 1);
	T_CHECK(strcmp(dflt, same) == 0 && strcmp(dflt, diff) != 0);
	T_CHECK(util_has_prefix(dflt, "/run/user/test/kvcon/engine-") && strstr(dflt, ".sock"));
	setenv("XDG_STATE_HOME", "/tmp/another-state", 1);
	char *state2 = engine_service_socket(&uri, 1);
	T_CHECK(strcmp(state2, same) != 0);
	free(dflt);
	free(same);
	free(diff);
	free(state2);
	free(uri);
	free(other);
	/* how kvcon uses a service: the variable first */
	setenv("XDG_CONFIG_HOME", tmpdir, 1);
	unsetenv("KVCON_ENGINE_SERVICE");
	T_CHECK(engine_service_mode() == ENGINE_SERVICE_AUTO); /* on demand unless told otherwise */
	setenv("KVCON_ENGINE_SERVICE", "off", 1);
	T_CHECK(engine_service_mode() == ENGINE_SERVICE_USE); /* its old name, from when the engine could open in-process */
	setenv("KVCON_ENGINE_SERVICE", "use", 1);
	T_CHECK(engine_service_mode() == ENGINE_SERVICE_USE);
	setenv("KVCON_ENGINE_SERVICE", "auto", 1);
	T_CHECK(engine_service_mode() == ENGINE_SERVICE_AUTO);
	unsetenv("KVCON_ENGINE_SERVICE");
	/* the idle exit of a service started on demand: the variable, the config file, the default */
	unsetenv("KVCON_ENGINE_IDLE_EXIT");
	T_CHECK(engine_service_idle_exit() == ENGINE_SERVICE_IDLE_DEFAULT);
	setenv("KVCON_ENGINE_IDLE_EXIT", "0", 1);
	T_CHECK(engine_service_idle_exit() == 0);
	setenv("KVCON_ENGINE_IDLE_EXIT", "42", 1);
	T_CHECK(engine_service_idle_exit() == 42);
	setenv("KVCON_ENGINE_IDLE_EXIT", "-5", 1);
	T_CHECK(engine_service_idle_exit() == ENGINE_SERVICE_IDLE_DEFAULT);
	setenv("KVCON_ENGINE_IDLE_EXIT", "12s", 1);
	T_CHECK(engine_service_idle_exit() == ENGINE_SERVICE_IDLE_DEFAULT);
	unsetenv("KVCON_ENGINE_IDLE_EXIT");
	char *cdir = xasprintf("%s/kvcon", tmpdir), *cfile = xasprintf("%s/kvcon/config", tmpdir);
	util_mkdir_p(cdir, 0700);
	FILE *cf = fopen(cfile, "w");
	T_CHECK(cf != NULL);
	if (cf) {
		fputs("engine.idle-exit = 90\nengine.service = use\n", cf);
		fclose(cf);
	}
	T_CHECK(engine_service_idle_exit() == 90);
	T_CHECK(engine_service_mode() == ENGINE_SERVICE_USE);
	unlink(cfile);
	free(cdir);
	free(cfile);
}

static void test_parse(void)
{
	char *t, *c, *k, *err = NULL;
	long long exp;
	const char ok[] = "{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\","
			  "\"status\":{\"token\":\"abc\",\"expirationTimestamp\":\"2030-01-02T03:04:05Z\"}}";
	T_EQ_INT(kube_cred_parse(ok, strlen(ok), "client.authentication.k8s.io/v1", &t, &c, &k, &exp, &err), 0);
	T_EQ_STR(t, "abc");
	T_EQ_INT(exp, 1893553445);
	free(t);
	free(c);
	free(k);
	T_EQ_INT(kube_cred_parse(ok, strlen(ok), "client.authentication.k8s.io/v1beta1", &t, &c, &k, &exp, &err), -1);
	T_CHECK(err && strstr(err, "apiVersion"));
	free(err);
	const char nostatus[] = "{\"apiVersion\":\"v\",\"kind\":\"ExecCredential\"}";
	T_EQ_INT(kube_cred_parse(nostatus, strlen(nostatus), NULL, &t, &c, &k, &exp, &err), -1);
	free(err);
	const char badtime[] = "{\"kind\":\"ExecCredential\",\"status\":{\"token\":\"x\",\"expirationTimestamp\":7}}";
	T_EQ_INT(kube_cred_parse(badtime, strlen(badtime), NULL, &t, &c, &k, &exp, &err), 0);
	free(t);
	free(c);
	free(k);
}

int main(void)
{
	if (mkdtemp(tmpdir) == NULL)
		return 1;
	loop_init();
	test_parse();
	test_merge();
	test_errors();
	test_exec();
	test_exec_bounded();
	test_http_refusals();
	test_unix_socket();
	test_in_cluster();
	loop_fini();
	char *cmd = xasprintf("rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		fprintf(stderr, "cleanup failed\n");
	free(cmd);
	return T_DONE();
}
