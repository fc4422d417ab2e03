/* Credentials: static token, rotating token file, and exec plugins run without blocking the loop (posix_spawn
 * into a process group of their own, pipes watched by the loop, the plugin reaped by a short polling timer).
 * One deadline covers the whole group: past it, or once the plugin has exited while something it started still
 * holds its pipes, the group is killed. A failure is remembered and answered at once until its back-off ends,
 * so that reflectors retrying their requests do not run a broken plugin again and again. */
#include "kube/cred.h"

#include <errno.h>
#include <fcntl.h>
#include <json.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "core/buf.h"
#include "core/log.h"
#include "core/loop.h"
#include "core/util.h"
#include "core/xmalloc.h"

extern char **environ;

#define EXEC_TIMEOUT_MS 30000       /* the whole group, start to finish; KVCON_EXEC_TIMEOUT (seconds) overrides */
#define EXEC_POLL_MS 20
#define EXEC_LEFTOVER_MS 500        /* after the plugin exited, how long its output may stay open */
#define EXEC_FAIL_BACKOFF_MS 30000  /* a failure is answered from memory this long, doubling per failure */
#define EXEC_FAIL_BACKOFF_MAX_MS 300000
#define EXEC_OUTPUT_MAX (1u << 20)
#define TOKEN_FILE_TTL_MS 60000 /* client-go re-reads token files once a minute */

struct waiter {
	kube_cred_cb cb;
	void *arg;
};

struct kube_cred {
	const struct kube_config *kc;
	/* exec result cache */
	char *token;
	char *cert, *key;
	size_t cert_len, key_len;
	long long expiry; /* epoch seconds; 0 none */
	bool have;
	int runs;
	/* running plugin: pid is also its process group */
	pid_t pid;
	bool exited;          /* the plugin itself has been reaped (its group may live on) */
	int status;
	uint64_t exited_ms;
	bool timed_out;
	bool leftovers;       /* killed what still held the pipes after the plugin exited */
	bool gave_tty;        /* the terminal's foreground was handed to the plugin (interactive) */
	int out_fd, err_fd;
	struct loop_fd *out_h, *err_h;
	struct buf out, err;
	struct loop_timer *poll_t, *kill_t;
	uint64_t started_ms;
	/* the last failure, answered without running the plugin until fail_until_ms */
	char *fail_msg;
	uint64_t fail_until_ms;
	int fail_count;
	struct waiter *waiters;
	size_t nwaiters;
	/* token file cache */
	char *file_token;
	uint64_t file_read_ms;
};

static bool interactive_ok = true;

void kube_cred_set_interactive(bool ok)
{
	interactive_ok = ok;
}

static uint64_t exec_timeout_ms(void)
{
	const char *v = getenv("KVCON_EXEC_TIMEOUT");
	char *end;
	long s = v && *v ? strtol(v, &end, 10) : 0;
	return v && *v && *end == '\0' && s > 0 && s < 86400 ? (uint64_t)s * 1000 : EXEC_TIMEOUT_MS;
}

struct kube_cred *kube_cred_new(const struct kube_config *kc)
{
	struct kube_cred *c = xcalloc(1, sizeof *c);
	c->kc = kc;
	c->pid = -1;
	c->out_fd = c->err_fd = -1;
	buf_init(&c->out);
	buf_init(&c->err);
	return c;
}

static void secret_free(char **s, size_t len)
{
	if (*s) {
		explicit_bzero(*s, len ? len : strlen(*s));
		free(*s);
		*s = NULL;
	}
}

static void drop_cache(struct kube_cred *c)
{
	secret_free(&c->token, 0);
	secret_free(&c->cert, c->cert_len);
	secret_free(&c->key, c->key_len);
	c->cert_len = c->key_len = 0;
	c->expiry = 0;
	c->have = false;
}

static void close_pipes(struct kube_cred *c)
{
	loop_fd_remove(c->out_h);
	loop_fd_remove(c->err_h);
	c->out_h = c->err_h = NULL;
	if (c->out_fd >= 0)
		close(c->out_fd);
	if (c->err_fd >= 0)
		close(c->err_fd);
	c->out_fd = c->err_fd = -1;
}

/* Gives the terminal's foreground back to kvcon after an interactive plugin. */
static void take_tty_back(struct kube_cred *c)
{
	if (!c->gave_tty)
		return;
	sigset_t block, old;
	sigemptyset(&block);
	sigaddset(&block, SIGTTOU); /* kvcon is in the background until this call */
	sigprocmask(SIG_BLOCK, &block, &old);
	tcsetpgrp(STDIN_FILENO, getpgrp());
	sigprocmask(SIG_SETMASK, &old, NULL);
	c->gave_tty = false;
}

/* Ends the plugin's whole process group and reaps the plugin. */
static void kill_group(struct kube_cred *c)
{
	if (c->pid <= 0)
		return;
	kill(-c->pid, SIGKILL);
	if (!c->exited && waitpid(c->pid, &c->status, 0) >= 0)
		c->exited = true;
}

void kube_cred_free(struct kube_cred *c)
{
	if (c == NULL)
		return;
	close_pipes(c);
	loop_timer_cancel(c->poll_t);
	loop_timer_cancel(c->kill_t);
	kill_group(c);
	take_tty_back(c);
	free(c->fail_msg);
	drop_cache(c);
	secret_free(&c->file_token, 0);
	if (c->out.data)
		explicit_bzero(c->out.data, c->out.len);
	buf_free(&c->out);
	buf_free(&c->err);
	free(c->waiters);
	free(c);
}

static const char *json_str(struct json_object *o, const char *key)
{
	struct json_object *v;
	if (o == NULL || !json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

int kube_cred_parse(const char *json, size_t len, const char *api_version, char **token, char **cert, char **key,
		    long long *expiry, char **err)
{
	*token = *cert = *key = NULL;
	*expiry = 0;
	struct json_tokener *tok = json_tokener_new();
	struct json_object *root = json_tokener_parse_ex(tok, json, (int)(len > 0x7fffffff ? 0x7fffffff : len));
	enum json_tokener_error jerr = json_tokener_get_error(tok);
	json_tokener_free(tok);
	int rc = -1;
	if (root == NULL || jerr != json_tokener_success) {
		*err = xstrdup("the plugin's output is not a JSON ExecCredential");
		goto out;
	}
	const char *kind = json_str(root, "kind");
	const char *av = json_str(root, "apiVersion");
	if (kind == NULL || strcmp(kind, "ExecCredential") != 0) {
		*err = xstrdup("the plugin's output is not an ExecCredential (kind)");
		goto out;
	}
	if (api_version && (av == NULL || strcmp(av, api_version) != 0)) {
		*err = xasprintf("the plugin answered apiVersion '%s', the kubeconfig asked for '%s'", av ? av : "",
				 api_version);
		goto out;
	}
	struct json_object *status;
	if (!json_object_object_get_ex(root, "status", &status) || !json_object_is_type(status, json_type_object)) {
		*err = xstrdup("the plugin's ExecCredential has no status");
		goto out;
	}
	const char *t = json_str(status, "token");
	const char *cd = json_str(status, "clientCertificateData");
	const char *kd = json_str(status, "clientKeyData");
	const char *exp = json_str(status, "expirationTimestamp");
	if ((t == NULL || *t == '\0') && (cd == NULL || kd == NULL)) {
		*err = xstrdup("the plugin's ExecCredential has neither a token nor a client certificate and key");
		goto out;
	}
	if ((cd == NULL) != (kd == NULL)) {
		*err = xstrdup("the plugin's ExecCredential has only one of clientCertificateData/clientKeyData");
		goto out;
	}
	if (exp && *exp) {
		int64_t e;
		if (util_parse_time(exp, &e) < 0) {
			*err = xstrdup("the plugin's expirationTimestamp is not an RFC 3339 time");
			goto out;
		}
		*expiry = e;
	}
	*token = t && *t ? xstrdup(t) : NULL;
	*cert = xstrdup0(cd);
	*key = xstrdup0(kd);
	rc = 0;
out:
	json_object_put(root);
	return rc;
}

static bool valid_now(const struct kube_cred *c)
{
	return c->have && (c->expiry == 0 || util_wall_s() < c->expiry);
}

static void notify_waiters(struct kube_cred *c, const char *err)
{
	struct waiter *w = c->waiters;
	size_t n = c->nwaiters;
	c->waiters = NULL;
	c->nwaiters = 0;
	for (size_t i = 0; i < n; i++)
		if (w[i].cb)
			w[i].cb(w[i].arg, err);
	free(w);
}

/* The last non-empty line of the plugin's stderr, escaped, for the error message. */
static char *stderr_tail(struct kube_cred *c)
{
	char *s = c->err.data ? c->err.data : (char *)"";
	size_t n = c->err.len;
	while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r'))
		n--;
	size_t b = n;
	while (b > 0 && s[b - 1] != '\n')
		b--;
	char tmp[512];
	util_escape_display_n(s + b, n - b, tmp, sizeof tmp);
	return xstrdup(tmp);
}

static void exec_finished(struct kube_cred *c, int status)
{
	const struct kube_exec *e = c->kc->exec;
	char *err = NULL;
	c->pid = -1;
	c->runs++;
	take_tty_back(c);
	if (c->timed_out) {
		char *tail = stderr_tail(c);
		err = xasprintf("exec credential plugin %s did not finish within %llu s; it and every process it started "
				"were killed%s%s",
				e->command, (unsigned long long)(exec_timeout_ms() / 1000), *tail ? ": " : "", tail);
		free(tail);
	} else if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
		char *t, *cert, *key;
		long long exp;
		if (kube_cred_parse(c->out.data ? c->out.data : "", c->out.len, e->api_version, &t, &cert, &key, &exp,
				    &err) == 0) {
			drop_cache(c);
			c->token = t;
			c->cert = cert;
			c->key = key;
			c->cert_len = cert ? strlen(cert) : 0;
			c->key_len = key ? strlen(key) : 0;
			c->expiry = exp;
			c->have = true;
			log_info("kube: exec credential plugin %s: credential obtained%s", e->command,
				 exp ? " (with expiry)" : "");
		} else {
			char *m = xasprintf("exec credential plugin %s: %s", e->command, err);
			free(err);
			err = m;
		}
	} else {
		char *tail = stderr_tail(c);
		if (WIFEXITED(status))
			err = xasprintf("exec credential plugin %s failed (exit %d)%s%s%s%s", e->command,
					WEXITSTATUS(status), *tail ? ": " : "", tail,
					e->install_hint && WEXITSTATUS(status) == 127 ? "; " : "",
					e->install_hint && WEXITSTATUS(status) == 127 ? e->install_hint : "");
		else
			err = xasprintf("exec credential plugin %s killed by signal %d%s%s", e->command,
					WTERMSIG(status), *tail ? ": " : "", tail);
		free(tail);
	}
	if (c->out.data)
		explicit_bzero(c->out.data, c->out.len);
	buf_reset(&c->out);
	buf_reset(&c->err);
	if (c->leftovers)
		log_warn("kube: exec credential plugin %s exited leaving processes that held its output; they were killed",
			 e->command);
	free(c->fail_msg);
	c->fail_msg = NULL;
	if (err) {
		log_warn("kube: %s", err);
		/* not again until the back-off ends: every request would otherwise run the plugin anew */
		uint64_t back = (uint64_t)EXEC_FAIL_BACKOFF_MS << (c->fail_count < 4 ? c->fail_count : 4);
		if (back > EXEC_FAIL_BACKOFF_MAX_MS)
			back = EXEC_FAIL_BACKOFF_MAX_MS;
		c->fail_count++;
		c->fail_msg = xstrdup(err);
		c->fail_until_ms = util_now_ms() + back;
	} else {
		c->fail_count = 0;
	}
	notify_waiters(c, err);
	free(err);
}

static void drain(struct kube_cred *c, int fd);

/* Reaps the plugin, then finishes once its output is closed; what it left holding the pipes is killed. */
static void on_poll(void *arg)
{
	struct kube_cred *c = arg;
	c->poll_t = NULL;
	if (!c->exited) {
		int status;
		pid_t r = waitpid(c->pid, &status, WNOHANG);
		if (r == c->pid || r < 0) {
			c->exited = true;
			c->status = r < 0 ? 0x7f00 : status; /* lost: treat as exit 127 */
			c->exited_ms = util_now_ms();
		}
	}
	if (c->exited && (c->out_fd >= 0 || c->err_fd >= 0) && util_now_ms() - c->exited_ms >= EXEC_LEFTOVER_MS) {
		kill(-c->pid, SIGKILL);
		c->leftovers = true;
		if (c->out_fd >= 0)
			drain(c, c->out_fd);
		if (c->err_fd >= 0)
			drain(c, c->err_fd);
		close_pipes(c);
	}
	if (c->exited && c->out_fd < 0 && c->err_fd < 0) {
		loop_timer_cancel(c->kill_t);
		c->kill_t = NULL;
		kill(-c->pid, SIGKILL); /* nothing of the group outlives the plugin */
		exec_finished(c, c->status);
		return;
	}
	c->poll_t = loop_timer_add(EXEC_POLL_MS, on_poll, c);
}

static void on_kill(void *arg)
{
	struct kube_cred *c = arg;
	c->kill_t = NULL;
	if (c->pid > 0) {
		log_warn("kube: exec credential plugin %s timed out, killing its process group", c->kc->exec->command);
		c->timed_out = true;
		kill(-c->pid, SIGKILL);
	}
}

/* Reads what is there; true at EOF or error. */
static bool read_pipe(struct kube_cred *c, int fd)
{
	struct buf *b = fd == c->out_fd ? &c->out : &c->err;
	char tmp[4096];
	for (;;) {
		ssize_t n = read(fd, tmp, sizeof tmp);
		if (n > 0) {
			if (b->len < EXEC_OUTPUT_MAX)
				buf_add(b, tmp, (size_t)n);
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		return !(n < 0 && errno == EAGAIN);
	}
}

static void drain(struct kube_cred *c, int fd)
{
	read_pipe(c, fd);
}

static void on_pipe(int fd, short revents, void *arg)
{
	struct kube_cred *c = arg;
	(void)revents;
	bool is_out = fd == c->out_fd;
	if (!read_pipe(c, fd))
		return;
	if (is_out) {
		loop_fd_remove(c->out_h);
		c->out_h = NULL;
		close(c->out_fd);
		c->out_fd = -1;
	} else {
		loop_fd_remove(c->err_h);
		c->err_h = NULL;
		close(c->err_fd);
		c->err_fd = -1;
	}
}

static char **build_env(const struct kube_config *kc, bool interactive)
{
	const struct kube_exec *e = kc->exec;
	size_t n = 0;
	while (environ && environ[n])
		n++;
	char **env = xcalloc(n + (size_t)e->nenv + 2, sizeof *env);
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		if (util_has_prefix(environ[i], "KUBERNETES_EXEC_INFO="))
			continue;
		bool overridden = false;
		for (int j = 0; j < e->nenv && !overridden; j++) {
			size_t nl = strcspn(e->env[j], "=");
			overridden = strncmp(environ[i], e->env[j], nl + 1) == 0;
		}
		if (!overridden)
			env[k++] = xstrdup(environ[i]);
	}
	for (int j = 0; j < e->nenv; j++)
		env[k++] = xstrdup(e->env[j]);
	struct json_object *info = json_object_new_object();
	json_object_object_add(info, "kind", json_object_new_string("ExecCredential"));
	json_object_object_add(info, "apiVersion", json_object_new_string(e->api_version));
	struct json_object *spec = json_object_new_object();
	json_object_object_add(spec, "interactive", json_object_new_boolean(interactive));
	if (e->provide_cluster_info) {
		struct json_object *cl = json_object_new_object();
		json_object_object_add(cl, "server", json_object_new_string(kc->server));
		if (kc->tls_server_name)
			json_object_object_add(cl, "tls-server-name", json_object_new_string(kc->tls_server_name));
		json_object_object_add(cl, "insecure-skip-tls-verify", json_object_new_boolean(kc->insecure));
		json_object_object_add(spec, "cluster", cl);
	}
	json_object_object_add(info, "spec", spec);
	env[k++] = xasprintf("KUBERNETES_EXEC_INFO=%s", json_object_to_json_string_ext(info, JSON_C_TO_STRING_PLAIN));
	json_object_put(info);
	env[k] = NULL;
	return env;
}

static void strv_free(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

static int start_exec(struct kube_cred *c, char **err)
{
	const struct kube_exec *e = c->kc->exec;
	int out[2] = { -1, -1 }, errp[2] = { -1, -1 };
	int rc = -1;
	char **env = NULL, **argv = NULL;
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	bool fa_init = false, attr_init = false;
	/* the terminal only when the kubeconfig allows it and kvcon holds one in the foreground (not the dashboard) */
	bool inter = e->interactive != KUBE_EXEC_NEVER && interactive_ok && isatty(STDIN_FILENO) &&
		     tcgetpgrp(STDIN_FILENO) == getpgrp();
	if (e->interactive == KUBE_EXEC_ALWAYS && !inter) {
		*err = xasprintf("exec credential plugin %s needs a terminal (interactiveMode: Always) and kvcon has none "
				 "to give it here",
				 e->command);
		goto out;
	}
	if (pipe2(out, O_CLOEXEC) < 0 || (!inter && pipe2(errp, O_CLOEXEC) < 0)) {
		*err = xasprintf("exec credential plugin: pipe: %s", strerror(errno));
		goto out;
	}
	env = build_env(c->kc, inter);
	argv = xcalloc((size_t)e->nargs + 2, sizeof *argv);
	argv[0] = xstrdup(e->command);
	for (int i = 0; i < e->nargs; i++)
		argv[i + 1] = xstrdup(e->args[i]);
	posix_spawn_file_actions_init(&fa);
	fa_init = true;
	if (!inter) {
		posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
		posix_spawn_file_actions_adddup2(&fa, errp[1], 2);
	}
	posix_spawn_file_actions_adddup2(&fa, out[1], 1);
	/* a group of its own: the deadline kills everything the plugin starts, not only the plugin */
	posix_spawnattr_init(&attr);
	attr_init = true;
	posix_spawnattr_setpgroup(&attr, 0);
	sigset_t none;
	sigemptyset(&none);
	posix_spawnattr_setsigmask(&attr, &none);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK);
	pid_t pid;
	int e2 = posix_spawnp(&pid, e->command, &fa, &attr, argv, env);
	if (e2 != 0) {
		*err = xasprintf("exec credential plugin %s: %s%s%s", e->command, strerror(e2),
				 e->install_hint ? "; " : "", e->install_hint ? e->install_hint : "");
		goto out;
	}
	close(out[1]);
	out[1] = -1;
	if (errp[1] >= 0)
		close(errp[1]);
	errp[1] = -1;
	setpgid(pid, pid); /* also from here, so that the group exists before kvcon signals it */
	c->pid = pid;
	c->exited = c->timed_out = c->leftovers = false;
	if (inter) {
		/* the plugin's group takes the terminal's foreground (it may have stopped on SIGTTIN: continue it) */
		sigset_t block, old;
		sigemptyset(&block);
		sigaddset(&block, SIGTTOU);
		sigprocmask(SIG_BLOCK, &block, &old);
		c->gave_tty = tcsetpgrp(STDIN_FILENO, pid) == 0;
		sigprocmask(SIG_SETMASK, &old, NULL);
		kill(-pid, SIGCONT);
	}
	fcntl(out[0], F_SETFL, O_NONBLOCK);
	c->out_fd = out[0];
	out[0] = -1;
	c->out_h = loop_fd_add(c->out_fd, POLLIN, on_pipe, c);
	if (errp[0] >= 0) {
		fcntl(errp[0], F_SETFL, O_NONBLOCK);
		c->err_fd = errp[0];
		errp[0] = -1;
		c->err_h = loop_fd_add(c->err_fd, POLLIN, on_pipe, c);
	}
	c->kill_t = loop_timer_add(exec_timeout_ms(), on_kill, c);
	c->poll_t = loop_timer_add(EXEC_POLL_MS, on_poll, c);
	c->started_ms = util_now_ms();
	log_info("kube: running exec credential plugin %s", e->command);
	rc = 0;
out:
	if (fa_init)
		posix_spawn_file_actions_destroy(&fa);
	if (attr_init)
		posix_spawnattr_destroy(&attr);
	for (int i = 0; i < 2; i++) {
		if (out[i] >= 0)
			close(out[i]);
		if (errp[i] >= 0)
			close(errp[i]);
	}
	strv_free(env);
	strv_free(argv);
	return rc;
}

int kube_cred_ensure(struct kube_cred *c, kube_cred_cb cb, void *arg, char **err)
{
	*err = NULL;
	if (c->kc->exec == NULL || valid_now(c))
		return 1;
	if (c->pid < 0 && c->fail_msg && util_now_ms() < c->fail_until_ms) {
		*err = xstrdup(c->fail_msg);
		return -1;
	}
	if (c->pid < 0 && start_exec(c, err) < 0)
		return -1;
	c->waiters = xreallocarray(c->waiters, c->nwaiters + 1, sizeof *c->waiters);
	c->waiters[c->nwaiters].cb = cb;
	c->waiters[c->nwaiters].arg = arg;
	c->nwaiters++;
	return 0;
}

void kube_cred_forget(struct kube_cred *c, void *arg)
{
	for (size_t i = 0; c && i < c->nwaiters; i++)
		if (c->waiters[i].arg == arg)
			c->waiters[i].cb = NULL;
}

bool kube_cred_invalidate(struct kube_cred *c)
{
	secret_free(&c->file_token, 0);
	c->file_read_ms = 0;
	if (c->kc->exec == NULL)
		return false;
	drop_cache(c);
	return true;
}

const char *kube_cred_token(struct kube_cred *c)
{
	if (c->kc->exec && c->have && c->token)
		return c->token;
	if (c->kc->token)
		return c->kc->token;
	if (c->kc->token_file) {
		uint64_t now = util_now_ms();
		if (c->file_token == NULL || now - c->file_read_ms > TOKEN_FILE_TTL_MS) {
			char *t = util_read_file(c->kc->token_file, NULL);
			if (t) {
				size_t n = strlen(t);
				while (n > 0 && (t[n - 1] == '\n' || t[n - 1] == '\r' || t[n - 1] == ' '))
					t[--n] = '\0';
				secret_free(&c->file_token, 0);
				c->file_token = t;
				c->file_read_ms = now;
			} else if (c->file_token == NULL) {
				log_warn("kube: cannot read tokenFile %s: %s", c->kc->token_file, strerror(errno));
			}
		}
		return c->file_token;
	}
	return NULL;
}

const char *kube_cred_cert(const struct kube_cred *c, size_t *len)
{
	*len = c->cert_len;
	return c->have ? c->cert : NULL;
}

const char *kube_cred_key(const struct kube_cred *c, size_t *len)
{
	*len = c->key_len;
	return c->have ? c->key : NULL;
}

int kube_cred_exec_runs(const struct kube_cred *c)
{
	return c->runs;
}
