/* kvcon credentials add-ssh-key, remove-ssh-key, set-password (see cmd_credentials.h). */
#include "cmd/cmd_credentials.h"

#include <errno.h>
#include <json.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "cmd/args.h"
#include "cmd/session.h"
#include "core/buf.h"
#include "core/log.h"
#include "core/loop.h"
#include "core/opts.h"
#include "core/util.h"
#include "core/xmalloc.h"
#include "kube/http.h"
#include "kube/kube.h"
#include "kube/kubeconfig.h"
#include "model/registry.h"
#include "model/store.h"

#define CR_TIMEOUT_MS 30000
#define JSON_PATCH "application/json-patch+json"

enum sub { SUB_ADD, SUB_REMOVE, SUB_PASSWORD };
static const char *const sub_names[] = { "add-ssh-key", "remove-ssh-key", "set-password" };

struct cred {
	enum sub sub;
	const char *user, *file, *value, *password, *secret;
	bool create, update, force;
	struct kube_http *h;
	const char *ns, *name;
	char *key; /* the SSH public key, as read */
	json_object *vm;
};

/* ---- one request at a time ---- */

struct call {
	bool done;
	long status;
	char *body, *msg;
};

static void call_done(void *arg, const struct kube_resp *r)
{
	struct call *c = arg;
	c->done = true;
	c->status = r->status;
	c->body = r->body ? xstrndup(r->body, r->len) : NULL;
	if (r->status < 200 || r->status > 299)
		c->msg = kube_http_error_message(r);
}

static void call(struct kube_http *h, const char *method, const char *path, const char *body, const char *ctype,
		 struct call *c)
{
	memset(c, 0, sizeof *c);
	struct kube_http_req q = { .method = method, .path = path, .body = body, .body_len = body ? strlen(body) : 0,
				   .content_type = ctype, .timeout_ms = CR_TIMEOUT_MS, .on_done = call_done, .arg = c };
	struct kube_req *r = kube_http_start(h, &q);
	uint64_t until = util_now_ms() + CR_TIMEOUT_MS + 5000;
	while (r && !c->done && util_now_ms() < until && !loop_quitting())
		loop_once(100);
	if (!c->done) {
		kube_http_cancel(r);
		c->msg = xstrdup(loop_quitting() ? "interrupted" : "the server did not answer");
	}
}

static void call_free(struct call *c)
{
	free(c->body);
	free(c->msg);
}

/* The object of a 2xx answer, NULL after printing "error: WHAT: MESSAGE". */
static json_object *call_json(struct call *c, const char *what)
{
	json_object *j = c->status >= 200 && c->status <= 299 && c->body ? json_tokener_parse(c->body) : NULL;
	if (j == NULL)
		log_eprintf("error: %s: %s\n", what, c->msg ? c->msg : "the server's answer is not JSON");
	return j;
}

/* ---- the objects ---- */

/* "ssh-key-" and six of apimachinery's rand.String letters, as virtctl names a data key */
static char *random_key(const char *prefix)
{
	static const char alpha[] = "bcdfghjklmnpqrstvwxz2456789";
	unsigned char r[6];
	if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r)
		for (size_t i = 0; i < sizeof r; i++)
			r[i] = (unsigned char)(util_now_ms() >> (i * 3));
	char s[7];
	for (size_t i = 0; i < sizeof r; i++)
		s[i] = alpha[r[i] % (sizeof alpha - 1)];
	s[6] = '\0';
	return xasprintf("%s%s", prefix, s);
}

static json_object *jget(json_object *o, const char *const *path)
{
	for (; o && *path; path++)
		if (!json_object_object_get_ex(o, *path, &o))
			return NULL;
	return o;
}

static const char *jstr(json_object *o, const char *key)
{
	json_object *v;
	return o && json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_string)
		       ? json_object_get_string(v)
		       : NULL;
}

/* The names of the Secrets of the VM's accessCredentials entries of type (sshPublicKey, userPassword) through
 * the guest agent, for user (NULL: any), in order, into out (at most max); their number. */
static size_t secrets_of(json_object *vm, const char *type, const char *user, const char **out, size_t max)
{
	static const char *const p[] = { "spec", "template", "spec", "accessCredentials", NULL };
	json_object *acs = jget(vm, p);
	size_t n = 0;
	for (size_t i = 0; acs && json_object_is_type(acs, json_type_array) && i < json_object_array_length(acs); i++) {
		json_object *c, *src, *sec, *pm, *qga, *users;
		if (!json_object_object_get_ex(json_object_array_get_idx(acs, i), type, &c) ||
		    !json_object_object_get_ex(c, "source", &src) || !json_object_object_get_ex(src, "secret", &sec) ||
		    !jstr(sec, "secretName") || !*jstr(sec, "secretName") ||
		    !json_object_object_get_ex(c, "propagationMethod", &pm) ||
		    !json_object_object_get_ex(pm, "qemuGuestAgent", &qga))
			continue;
		bool has = user == NULL;
		if (!has && json_object_object_get_ex(qga, "users", &users) &&
		    json_object_is_type(users, json_type_array))
			for (size_t u = 0; u < json_object_array_length(users); u++)
				if (strcmp(json_object_get_string(json_object_array_get_idx(users, u)), user) == 0)
					has = true;
		if (has && n < max)
			out[n++] = jstr(sec, "secretName");
	}
	return n;
}

/* Whether the Secret has an ownerReference to this VM (kind, name and UID). */
static bool owned_by_vm(json_object *secret, json_object *vm)
{
	static const char *const p[] = { "metadata", "ownerReferences", NULL };
	json_object *refs = jget(secret, p), *md;
	const char *uid = json_object_object_get_ex(vm, "metadata", &md) ? jstr(md, "uid") : NULL;
	const char *name = jstr(md, "name");
	for (size_t i = 0; uid && refs && json_object_is_type(refs, json_type_array) && i < json_object_array_length(refs);
	     i++) {
		json_object *r = json_object_array_get_idx(refs, i);
		const char *k = jstr(r, "kind"), *n = jstr(r, "name"), *u = jstr(r, "uid");
		if (k && n && u && strcmp(k, "VirtualMachine") == 0 && strcmp(n, name) == 0 && strcmp(u, uid) == 0)
			return true;
	}
	return false;
}

/* A data value decoded (caller frees), "" when malformed. */
static char *data_text(json_object *v)
{
	const char *s = json_object_get_string(v);
	size_t n;
	char *d = s ? util_b64_decode(s, strlen(s), &n, UTIL_B64_PADDED) : NULL;
	return d ? d : xstrdup("");
}

/* virtctl's test: a line that, trimmed, starts with the key */
static bool line_has_key(const char *line, size_t len, const char *key)
{
	while (len && (*line == ' ' || *line == '\t' || *line == '\r')) {
		line++;
		len--;
	}
	size_t kl = strlen(key);
	return len >= kl && strncmp(line, key, kl) == 0;
}

static bool secret_has_key(json_object *secret, const char *key)
{
	json_object *data;
	if (!json_object_object_get_ex(secret, "data", &data) || !json_object_is_type(data, json_type_object))
		return false;
	bool found = false;
	json_object_object_foreach(data, k, v)
	{
		(void)k;
		char *t = data_text(v);
		for (char *l = t; !found && *l;) {
			size_t n = strcspn(l, "\n");
			found = line_has_key(l, n, key);
			l += n + (l[n] == '\n');
		}
		free(t);
	}
	return found;
}

static char *secret_path(const char *ns, const char *name)
{
	/* core/v1 Secrets: not a kind of the registry (kvcon lists none), only this verb's object */
	return name ? xasprintf("/api/v1/namespaces/%s/secrets/%s", ns, name) : xasprintf("/api/v1/namespaces/%s/secrets", ns);
}

/* JSON Patch of the Secret's data: ops "add /data/KEY base64(value)", after "test /data null, add /data {}" when
 * with_data (virtctl's second try, for a Secret without data). */
static int patch_data(struct cred *c, const char *secret, const char *key, const char *value)
{
	char *path = secret_path(c->ns, secret), *v = util_b64_encode(value, strlen(value));
	int rc = EXIT_API;
	for (int with_data = 0; with_data < 2; with_data++) {
		json_object *ops = json_object_new_array(), *op;
		if (with_data) {
			op = json_object_new_object();
			json_object_object_add(op, "op", json_object_new_string("test"));
			json_object_object_add(op, "path", json_object_new_string("/data"));
			json_object_object_add(op, "value", NULL);
			json_object_array_add(ops, op);
			op = json_object_new_object();
			json_object_object_add(op, "op", json_object_new_string("add"));
			json_object_object_add(op, "path", json_object_new_string("/data"));
			json_object_object_add(op, "value", json_object_new_object());
			json_object_array_add(ops, op);
		}
		char *p = xasprintf("/data/%s", key);
		op = json_object_new_object();
		json_object_object_add(op, "op", json_object_new_string("add"));
		json_object_object_add(op, "path", json_object_new_string(p));
		json_object_object_add(op, "value", json_object_new_string(v));
		json_object_array_add(ops, op);
		free(p);
		struct call k;
		call(c->h, "PATCH", path, json_object_to_json_string_ext(ops, JSON_C_TO_STRING_PLAIN), JSON_PATCH, &k);
		json_object_put(ops);
		bool ok = k.status >= 200 && k.status <= 299;
		if (!ok && with_data)
			log_eprintf("error: error patching secret \"%s\": %s\n", secret, k.msg ? k.msg : "refused");
		call_free(&k);
		if (ok) {
			rc = EXIT_OK;
			break;
		}
	}
	free(path);
	free(v);
	return rc;
}

static json_object *get_secret(struct cred *c, const char *name, long *status)
{
	char *path = secret_path(c->ns, name);
	struct call k;
	call(c->h, NULL, path, NULL, NULL, &k);
	free(path);
	*status = k.status;
	json_object *j = NULL;
	if (k.status != 404) {
		char what[300];
		snprintf(what, sizeof what, "error getting secret \"%s\"", name);
		j = call_json(&k, what);
	}
	call_free(&k);
	return j;
}

/* ---- the three verbs ---- */

/* A new Secret owned by the VM with the key, then the VM's accessCredentials entry for it. */
static int add_new_secret(struct cred *c)
{
	struct call k;
	if (!c->force) {
		/* virtctl: not while the VM runs (virt-handler reads the credentials at start); --force adds anyway */
		char *p = registry_kind_path(registry_kind(KIND_VMI), c->ns, c->name);
		call(c->h, NULL, p, NULL, NULL, &k);
		free(p);
		long st = k.status;
		char *msg = k.msg ? xstrdup(k.msg) : NULL;
		call_free(&k);
		if (st >= 200 && st <= 299) {
			log_eprintf("error: virtual machine %s is running. Use --force flag to update a running VM, it will "
				    "take effect after restart\n", c->name);
			free(msg);
			return EXIT_API;
		}
		if (st != 404) {
			log_eprintf("error: error when getting virtual machine instance: %s\n", msg ? msg : "no answer");
			free(msg);
			return EXIT_API;
		}
		free(msg);
	}
	json_object *md, *sec = json_object_new_object(), *smd = json_object_new_object(), *ref = json_object_new_object(),
			 *refs = json_object_new_array(), *data = json_object_new_object();
	json_object_object_get_ex(c->vm, "metadata", &md);
	char *gen = xasprintf("%s-ssh-key-", c->name), *dk = random_key("ssh-key-");
	json_object_object_add(sec, "apiVersion", json_object_new_string("v1"));
	json_object_object_add(sec, "kind", json_object_new_string("Secret"));
	json_object_object_add(smd, "generateName", json_object_new_string(gen));
	json_object_object_add(smd, "namespace", json_object_new_string(c->ns));
	json_object_object_add(ref, "apiVersion", json_object_new_string("kubevirt.io/v1"));
	json_object_object_add(ref, "kind", json_object_new_string("VirtualMachine"));
	json_object_object_add(ref, "name", json_object_new_string(c->name));
	json_object_object_add(ref, "uid", json_object_new_string(jstr(md, "uid") ? jstr(md, "uid") : ""));
	json_object_object_add(ref, "controller", json_object_new_boolean(1));
	json_object_array_add(refs, ref);
	json_object_object_add(smd, "ownerReferences", refs);
	json_object_object_add(sec, "metadata", smd);
	char *kb = util_b64_encode(c->key, strlen(c->key));
	json_object_object_add(data, dk, json_object_new_string(kb));
	free(kb);
	json_object_object_add(sec, "data", data);
	free(gen);
	free(dk);
	char *path = secret_path(c->ns, NULL);
	call(c->h, "POST", path, json_object_to_json_string_ext(sec, JSON_C_TO_STRING_PLAIN), NULL, &k);
	free(path);
	json_object_put(sec);
	json_object *made = call_json(&k, "error creating secret");
	call_free(&k);
	if (made == NULL)
		return EXIT_API;
	json_object *mmd;
	json_object_object_get_ex(made, "metadata", &mmd);
	char *sname = xstrdup(jstr(mmd, "name") ? jstr(mmd, "name") : "");

	/* {"sshPublicKey":{"source":{"secret":{"secretName":S}},"propagationMethod":{"qemuGuestAgent":{"users":[U]}}}} */
	json_object *ac = json_object_new_object(), *spk = json_object_new_object(), *src = json_object_new_object(),
		    *ss = json_object_new_object(), *pm = json_object_new_object(), *qga = json_object_new_object(),
		    *users = json_object_new_array();
	json_object_object_add(ss, "secretName", json_object_new_string(sname));
	json_object_object_add(src, "secret", ss);
	json_object_object_add(spk, "source", src);
	json_object_array_add(users, json_object_new_string(c->user));
	json_object_object_add(qga, "users", users);
	json_object_object_add(pm, "qemuGuestAgent", qga);
	json_object_object_add(spk, "propagationMethod", pm);
	json_object_object_add(ac, "sshPublicKey", spk);
	json_object_put(made);

	char *vpath = registry_kind_path(registry_kind(KIND_VM), c->ns, c->name);
	int rc = EXIT_API;
	/* first an append to the array; when that fails (no array yet), the array then the append */
	for (int with_array = 0; with_array < 2; with_array++) {
		json_object *ops = json_object_new_array(), *op;
		if (with_array) {
			op = json_object_new_object();
			json_object_object_add(op, "op", json_object_new_string("test"));
			json_object_object_add(op, "path", json_object_new_string("/spec/template/spec/accessCredentials"));
			json_object_object_add(op, "value", NULL);
			json_object_array_add(ops, op);
			op = json_object_new_object();
			json_object_object_add(op, "op", json_object_new_string("add"));
			json_object_object_add(op, "path", json_object_new_string("/spec/template/spec/accessCredentials"));
			json_object_object_add(op, "value", json_object_new_array());
			json_object_array_add(ops, op);
		}
		op = json_object_new_object();
		json_object_object_add(op, "op", json_object_new_string("add"));
		json_object_object_add(op, "path", json_object_new_string("/spec/template/spec/accessCredentials/-"));
		json_object_object_add(op, "value", json_object_get(ac));
		json_object_array_add(ops, op);
		call(c->h, "PATCH", vpath, json_object_to_json_string_ext(ops, JSON_C_TO_STRING_PLAIN), JSON_PATCH, &k);
		json_object_put(ops);
		bool ok = k.status >= 200 && k.status <= 299;
		if (!ok && with_array)
			log_eprintf("error: error patching virtual machine: %s\n", k.msg ? k.msg : "refused");
		call_free(&k);
		if (ok) {
			rc = EXIT_OK;
			break;
		}
	}
	if (rc == EXIT_OK)
		printf("Successfully added the key to new secret \"%s\"\n", sname);
	free(sname);
	json_object_put(ac);
	free(vpath);
	return rc;
}

/* add-ssh-key to the user's Secret (--secret among several). */
static int add_to_secret(struct cred *c)
{
	const char *names[64];
	size_t n = secrets_of(c->vm, "sshPublicKey", c->user, names, 64);
	if (n == 0) {
		log_eprintf("error: no secrets specified for user: %s\n", c->user);
		return EXIT_API;
	}
	const char *name = names[0];
	if (c->secret) {
		name = NULL;
		for (size_t i = 0; i < n; i++)
			if (strcmp(names[i], c->secret) == 0)
				name = names[i];
		if (name == NULL) {
			log_eprintf("error: secret %s was not assigned\n", c->secret);
			return EXIT_API;
		}
	} else if (n > 1) {
		log_eprintf("error: multiple secrets specified, use option --secret to specify which secret to modify\n");
		return EXIT_API;
	}
	long st;
	json_object *sec = get_secret(c, name, &st);
	if (sec == NULL) {
		if (st == 404)
			log_eprintf("error: error getting secret \"%s\": secrets \"%s\" not found\n", name, name);
		return EXIT_API;
	}
	int rc = EXIT_OK;
	char *dk = NULL;
	if (secret_has_key(sec, c->key)) {
		printf("Secret \"%s\" already contains this SSH key.\n", name);
	} else if (!c->force && !owned_by_vm(sec, c->vm)) {
		log_eprintf("error: secret %s does not have an owner reference pointing to VM %s\n", name, c->name);
		rc = EXIT_API;
	} else if ((rc = patch_data(c, name, (dk = random_key("ssh-key-")), c->key)) == EXIT_OK) {
		printf("Successfully added the key to secret \"%s\"\n", name);
	}
	free(dk);
	json_object_put(sec);
	return rc;
}

/* remove-ssh-key: every line starting with the key out of every data value of each of the user's Secrets; a value
 * left empty goes; the Secret written back whole with its resourceVersion (a conflict is tried again). */
static int remove_key(struct cred *c)
{
	const char *names[64];
	size_t n = secrets_of(c->vm, "sshPublicKey", c->user, names, 64);
	if (n == 0) {
		printf("No secrets associated with user %s\n", c->user);
		return EXIT_OK;
	}
	if (c->secret) {
		bool found = false;
		for (size_t i = 0; i < n; i++)
			found |= strcmp(names[i], c->secret) == 0;
		if (!found) {
			log_eprintf("error: secret %s is not associated with user %s\n", c->secret, c->user);
			return EXIT_API;
		}
		names[0] = c->secret;
		n = 1;
	}
	for (size_t i = 0; i < n; i++) {
		for (int attempt = 0;; attempt++) {
			long st;
			json_object *sec = get_secret(c, names[i], &st), *data;
			if (sec == NULL) {
				if (st == 404)
					break; /* nothing to remove */
				return EXIT_API;
			}
			if (!c->force && !owned_by_vm(sec, c->vm)) {
				log_eprintf("error: secret %s does not have an owner reference pointing to VM %s\n", names[i],
					    c->name);
				json_object_put(sec);
				return EXIT_API;
			}
			json_object *nd = json_object_new_object();
			if (json_object_object_get_ex(sec, "data", &data) && json_object_is_type(data, json_type_object)) {
				json_object_object_foreach(data, k, v)
				{
					char *t = data_text(v);
					struct buf b;
					buf_init(&b);
					for (char *l = t; *l;) {
						size_t ln = strcspn(l, "\n");
						bool blank = true;
						for (size_t j = 0; j < ln; j++)
							blank &= l[j] == ' ' || l[j] == '\t' || l[j] == '\r';
						if (!blank && !line_has_key(l, ln, c->key)) {
							if (b.len)
								buf_add(&b, "\n", 1);
							buf_add(&b, l, ln);
						}
						l += ln + (l[ln] == '\n');
					}
					if (b.len) {
						char *e = util_b64_encode(b.data, b.len);
						json_object_object_add(nd, k, json_object_new_string(e));
						free(e);
					}
					buf_free(&b);
					free(t);
				}
			}
			json_object_object_add(sec, "data", nd);
			char *path = secret_path(c->ns, names[i]);
			struct call k;
			call(c->h, "PUT", path, json_object_to_json_string_ext(sec, JSON_C_TO_STRING_PLAIN), NULL, &k);
			free(path);
			json_object_put(sec);
			long ks = k.status;
			if (!(ks >= 200 && ks <= 299) && ks != 404 && !(ks == 409 && attempt < 4))
				log_eprintf("error: error updating secret \"%s\": %s\n", names[i], k.msg ? k.msg : "refused");
			call_free(&k);
			if (ks == 409 && attempt < 4)
				continue;
			if (!(ks >= 200 && ks <= 299) && ks != 404)
				return EXIT_API;
			break;
		}
	}
	printf("Successfully removed the key from the secrets of user %s\n", c->user);
	return EXIT_OK;
}

static int set_password(struct cred *c)
{
	const char *names[64];
	size_t n = secrets_of(c->vm, "userPassword", NULL, names, 64);
	if (n == 0) {
		log_eprintf("error: no secrets assigned to UserPassword AccessCredentials\n");
		return EXIT_API;
	}
	const char *name = names[0];
	if (c->secret) {
		name = NULL;
		for (size_t i = 0; i < n; i++)
			if (strcmp(names[i], c->secret) == 0)
				name = names[i];
		if (name == NULL) {
			log_eprintf("error: secret %s was not assigned\n", c->secret);
			return EXIT_API;
		}
	} else if (n > 1) {
		log_eprintf("error: multiple secrets specified, use option --secret to specify which secret to modify\n");
		return EXIT_API;
	}
	if (!c->force) {
		long st;
		json_object *sec = get_secret(c, name, &st);
		if (sec == NULL) {
			if (st == 404)
				log_eprintf("error: error getting secret \"%s\": secrets \"%s\" not found\n", name, name);
			return EXIT_API;
		}
		bool own = owned_by_vm(sec, c->vm);
		json_object_put(sec);
		if (!own) {
			log_eprintf("error: secret %s does not have an owner reference pointing to VM %s\n", name, c->name);
			return EXIT_API;
		}
	}
	int rc = patch_data(c, name, c->user, c->password);
	if (rc == EXIT_OK)
		printf("Successfully set password in secret \"%s\"\n", name);
	return rc;
}

/* ---- arguments ---- */

static int usage_error(const char *why)
{
	log_eprintf("error: %s\nSee 'kvcon credentials --help' for usage.\n", why);
	return EXIT_USAGE;
}

static int read_key(struct cred *c)
{
	if (c->value) {
		c->key = xstrdup(c->value);
		return 0;
	}
	if (c->file == NULL)
		return usage_error("error getting ssh key: one of --file, or --value must be specified"), -1;
	FILE *f = fopen(c->file, "re");
	if (f == NULL) {
		log_eprintf("error: error getting ssh key: open %s: %s\n", c->file, strerror(errno));
		return -1;
	}
	struct buf b;
	buf_init(&b);
	char chunk[4096];
	size_t n;
	while ((n = fread(chunk, 1, sizeof chunk, f)) > 0 && b.len < (1u << 20))
		buf_add(&b, chunk, n);
	fclose(f);
	buf_add(&b, "", 1);
	c->key = xstrdup(b.data);
	buf_free(&b);
	/* a .pub file's newline off: virtctl keeps it, and then its remove-ssh-key -f never matches the line */
	for (size_t e = strlen(c->key); e && strchr(" \t\r\n", c->key[e - 1]); e--)
		c->key[e - 1] = '\0';
	if (c->key[0] == '\0') {
		log_eprintf("error: error getting ssh key: %s is empty\n", c->file);
		return -1;
	}
	return 0;
}

int cmd_credentials(int argc, char **argv)
{
	struct cred c = { 0 };
	int sub = -1;
	struct args fa;
	int p = args_parse_verb(argc, argv, &fa);
	if (p != ARGS_OK) {
		args_free(&fa);
		return p == ARGS_HELP ? EXIT_OK : EXIT_USAGE;
	}
	c.user = args_get(&fa, "--user");
	c.file = args_get(&fa, "--file");
	c.value = args_get(&fa, "--value");
	c.password = args_get(&fa, "--password");
	c.secret = args_get(&fa, "--secret");
	c.create = args_bool(&fa, "--create-secret");
	c.update = args_bool(&fa, "--update-secret");
	c.force = args_bool(&fa, "--force");
	const char *word = fa.npos > 0 ? fa.pos[0] : NULL, *ref = fa.npos > 1 ? fa.pos[1] : NULL;
	int npos = fa.npos;
	args_free(&fa); /* the values point into argv */
	for (int i = 0; word && i < 3; i++)
		if (strcmp(word, sub_names[i]) == 0)
			sub = i;
	if (word && sub < 0) {
		char why[200];
		snprintf(why, sizeof why, "unknown command \"%s\" for \"kvcon credentials\"", word);
		return usage_error(why);
	}
	if (npos > 2)
		return usage_error("accepts 1 arg(s)");
	if (sub < 0)
		return usage_error("a subcommand: add-ssh-key, remove-ssh-key or set-password");
	c.sub = (enum sub)sub;
	if (ref == NULL)
		return usage_error("accepts 1 arg(s), received 0");
	if (c.user == NULL)
		return usage_error("required flag(s) \"user\" not set");
	if (c.sub == SUB_PASSWORD && c.password == NULL)
		return usage_error("required flag(s) \"password\" not set");
	if (c.sub != SUB_PASSWORD && c.file && c.value)
		return usage_error("if any flags in the group [file value] are set none of the others can be");
	if (c.create && c.update)
		return usage_error("if any flags in the group [create-secret update-secret] are set none of the others can be");
	if (c.sub != SUB_PASSWORD && read_key(&c) < 0) /* read before the cluster is asked, as virtctl */
		return EXIT_USAGE;
	if (opts_global()->readonly) {
		log_eprintf("error: read-only mode: credentials %s refused\n", sub_names[c.sub]);
		free(c.key);
		return EXIT_USAGE;
	}

	struct kvcon_opts *g = opts_global();
	const char *slash = strchr(ref, '/');
	char *ns = slash ? xstrndup(ref, (size_t)(slash - ref)) : g->ns ? xstrdup(g->ns) : NULL;
	c.name = slash ? slash + 1 : ref;
	if (ns) {
		free(g->ns);
		g->ns = xstrdup(ns);
		g->all_ns = false;
	}
	session_cli_start();
	struct store *st = store_new();
	char *err = NULL;
	int rc = EXIT_API;
	struct source *src = session_resolve(st, ns, c.name, KUBE_KIND_BIT(OBJ_VM), true, &err);
	c.h = src ? kube_source_http(src) : NULL;
	if (c.h == NULL) {
		log_eprintf("error: %s\n", err ? err : "no cluster or engine service has it");
		goto out;
	}
	if (src->readonly) {
		log_eprintf("error: read-only mode: credentials %s refused\n", sub_names[c.sub]);
		rc = EXIT_USAGE;
		goto out;
	}
	c.ns = ns ? ns : src->ns_scope ? src->ns_scope : "default";
	char *vpath = registry_kind_path(registry_kind(KIND_VM), c.ns, c.name);
	struct call vk;
	call(c.h, NULL, vpath, NULL, NULL, &vk);
	free(vpath);
	c.vm = call_json(&vk, "error getting virtual machine");
	call_free(&vk);
	if (c.vm == NULL)
		goto out;
	switch (c.sub) {
	case SUB_ADD:
		rc = c.create || (!c.update && secrets_of(c.vm, "sshPublicKey", c.user, (const char *[1]){ 0 }, 1) == 0)
			     ? add_new_secret(&c)
			     : add_to_secret(&c);
		break;
	case SUB_REMOVE:
		rc = remove_key(&c);
		break;
	case SUB_PASSWORD:
		rc = set_password(&c);
		break;
	}
out:
	json_object_put(c.vm);
	free(c.key);
	free(err);
	free(ns);
	source_free_all();
	store_free(st);
	return rc;
}
