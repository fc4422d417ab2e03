/* Secrets in the engine's VMs (engine_int.h): what a start waits for and takes from them (cloud-init's secretRef
 * and networkDataSecretRef, Secret and ConfigMap volumes, accessCredentials with noCloud or configDrive), and
 * accessCredentials through the guest agent (qemuGuestAgent): the keys of each sshPublicKey Secret in its users'
 * authorized_keys (guest-ssh-add-authorized-keys, guest-ssh-remove-authorized-keys), each userPassword Secret's
 * passwords (guest-set-user-password, a key a user), kept in step when a Secret changes, with the VMI's
 * AccessCredentialsSynchronized condition as KubeVirt's virt-handler sets it.
 *
 * The credentials propagated are those of the VM's template (KubeVirt's are the VMI's, fixed at its start: a
 * template changed since is RestartRequired either way). Values are never logged; what was propagated is kept in
 * memory only (keys as they are, passwords as a hash) to send only what changed. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/intern.h"
#include "core/log.h"
#include "core/util.h"
#include "core/xmalloc.h"
#include "engine/engine_int.h"
#include "engine/esecret.h"

/* ---- at start ---- */

static char *not_found(const char *vol, const char *name, bool cm)
{
	return xasprintf("MountVolume.SetUp failed for volume \"%s\" : %s \"%s\" not found", vol, cm ? "configmap" : "secret",
			 name);
}

static bool exists(const char *ns, const char *name, bool cm)
{
	struct esecret *s = esecret_lookup(ns, name, cm);
	esecret_free(s);
	return s != NULL;
}

char *ecreds_missing(const struct evm *v)
{
	const struct manifest *m = v->m;
	for (int i = 0; m && i < m->nvols; i++) {
		const struct mf_volume *vol = &m->vols[i];
		const char *refs[] = { vol->user_secret, vol->network_secret };
		for (int k = 0; k < 2; k++)
			if (vol->type == MF_VOL_CLOUDINIT && refs[k] && !exists(m->ns, refs[k], false))
				return not_found(vol->name, refs[k], false);
		bool cm = vol->type == MF_VOL_CONFIGMAP;
		if ((vol->type == MF_VOL_SECRET || cm) && !vol->optional && !exists(m->ns, vol->object, cm))
			return not_found(vol->name, vol->object, cm);
	}
	for (int i = 0; m && i < m->ncreds; i++)
		if (!exists(m->ns, m->creds[i].secret, false)) {
			char *vol = xasprintf("%s-access-cred", m->creds[i].secret);
			char *msg = not_found(vol, m->creds[i].secret, false);
			free(vol);
			return msg;
		}
	return NULL;
}

static void free_keys(char **keys, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(keys[i]);
	free(keys);
}

int ecreds_resolve(struct evm *v, char **err)
{
	struct manifest *m = v->m;
	for (int i = 0; i < m->nvols; i++) {
		struct mf_volume *vol = &m->vols[i];
		if (vol->type == MF_VOL_CLOUDINIT) {
			const char *refs[] = { vol->user_secret, vol->network_secret };
			char **out[] = { &vol->run_user_data, &vol->run_network_data };
			for (int k = 0; k < 2; k++) {
				if (refs[k] == NULL)
					continue;
				struct esecret *s = esecret_lookup(m->ns, refs[k], false);
				const struct esecret_kv *kv = esecret_cloudinit(s, k);
				if (kv == NULL || memchr(kv->val, '\0', kv->len)) {
					*err = s ? xasprintf("no %s value found in k8s secret %s", k ? "networkdata" : "userdata", refs[k])
						 : not_found(vol->name, refs[k], false);
					esecret_free(s);
					return -1;
				}
				free(*out[k]);
				*out[k] = xstrndup(kv->val, kv->len);
				esecret_free(s);
			}
		} else if (vol->type == MF_VOL_SECRET || vol->type == MF_VOL_CONFIGMAP) {
			bool cm = vol->type == MF_VOL_CONFIGMAP;
			esecret_free(vol->files);
			vol->files = esecret_lookup(m->ns, vol->object, cm);
			if (vol->files == NULL && !vol->optional) {
				*err = not_found(vol->name, vol->object, cm);
				return -1;
			}
			if (vol->files == NULL)
				vol->files = xcalloc(1, sizeof *vol->files); /* optional: an empty disk */
		}
	}
	/* accessCredentials by cloud-init: the keys into the user data of its volume */
	for (int i = 0; i < m->ncreds; i++) {
		const struct mf_cred *c = &m->creds[i];
		if (c->agent)
			continue;
		struct mf_volume *ci = NULL;
		for (int k = 0; k < m->nvols && ci == NULL; k++)
			if (m->vols[k].type == MF_VOL_CLOUDINIT && m->vols[k].config_drive == c->drive)
				ci = &m->vols[k];
		if (ci == NULL) {
			*err = xasprintf("spec.template.spec.accessCredentials[%d]: propagationMethod %s needs a %s volume", i,
					 c->drive ? "configDrive" : "noCloud", c->drive ? "cloudInitConfigDrive" : "cloudInitNoCloud");
			return -1;
		}
		struct esecret *s = esecret_lookup(m->ns, c->secret, false);
		if (s == NULL) {
			char *vol = xasprintf("%s-access-cred", c->secret);
			*err = not_found(vol, c->secret, false);
			free(vol);
			return -1;
		}
		size_t n;
		char **keys = esecret_ssh_keys(s, &n);
		esecret_free(s);
		char *ud = esecret_userdata_with_keys(ci->run_user_data ? ci->run_user_data : ci->user_data, keys, n, err);
		free_keys(keys, n);
		if (ud == NULL)
			return -1;
		free(ci->run_user_data);
		ci->run_user_data = ud;
	}
	return 0;
}

void ecreds_release(struct evm *v)
{
	for (int i = 0; v->m && i < v->m->nvols; i++) {
		struct mf_volume *vol = &v->m->vols[i];
		esecret_free(vol->files);
		vol->files = NULL;
		free(vol->run_user_data);
		free(vol->run_network_data);
		vol->run_user_data = vol->run_network_data = NULL;
	}
}

/* ---- through the guest agent ---- */

struct ticket {
	char *key, uid[UID_LEN];
	char *want; /* what will have been propagated */
};

static uint64_t fnv(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
	return h;
}

static bool user_ok(const char *u)
{
	size_t n = strlen(u);
	return n && n <= 32 && *u != '-' &&
	       strspn(u, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-$") == n;
}

/* The keys of user in a "k USER KEY" text (into *keys, *n; pointers into a copy the caller frees with free_keys). */
static char **keys_of(const char *text, const char *user, size_t *n)
{
	char **out = NULL;
	*n = 0;
	size_t ul = strlen(user);
	for (const char *l = text; l && *l;) {
		const char *nl = strchr(l, '\n');
		size_t len = nl ? (size_t)(nl - l) : strlen(l);
		if (len > ul + 3 && l[0] == 'k' && l[1] == ' ' && strncmp(l + 2, user, ul) == 0 && l[2 + ul] == ' ') {
			out = xreallocarray(out, *n + 1, sizeof *out);
			out[(*n)++] = xstrndup(l + 3 + ul, len - 3 - ul);
		}
		l = nl ? nl + 1 : NULL;
	}
	return out;
}

static bool has_line(const char *text, const char *line, size_t len)
{
	for (const char *l = text; l && *l;) {
		const char *nl = strchr(l, '\n');
		size_t n = nl ? (size_t)(nl - l) : strlen(l);
		if (n == len && memcmp(l, line, len) == 0)
			return true;
		l = nl ? nl + 1 : NULL;
	}
	return false;
}

/* The users named in a text's "k" lines, each once (added to *users). */
static void users_of(const char *text, char ***users, size_t *n)
{
	for (const char *l = text; l && *l;) {
		const char *nl = strchr(l, '\n'), *sp = l[0] == 'k' && l[1] == ' ' ? strchr(l + 2, ' ') : NULL;
		if (sp && (!nl || sp < nl)) {
			char *u = xstrndup(l + 2, (size_t)(sp - l - 2));
			bool seen = false;
			for (size_t i = 0; i < *n && !seen; i++)
				seen = strcmp((*users)[i], u) == 0;
			if (seen)
				free(u);
			else {
				*users = xreallocarray(*users, *n + 1, sizeof **users);
				(*users)[(*n)++] = u;
			}
		}
		l = nl ? nl + 1 : NULL;
	}
}

static void set_state(struct evm *v, int state, const char *msg)
{
	struct exec *x = v->cur;
	if (x->creds == state && util_str_eq(x->creds_msg, msg))
		return;
	x->creds = state;
	free(x->creds_msg);
	x->creds_msg = xstrdup0(msg);
	evm_publish(v);
}

static struct evm *find_vm(const char *key)
{
	const char *slash = strchr(key, '/');
	char *ns = slash ? xstrndup(key, (size_t)(slash - key)) : NULL;
	struct evm *v = NULL;
	for (int i = 0; ns && i < engine_g.nhosts && v == NULL; i++)
		v = evm_find(engine_g.hosts[i]->src, ns, slash + 1);
	free(ns);
	return v;
}

static void sent(void *arg, json_object *answers, const char *err)
{
	struct ticket *t = arg;
	struct evm *v = find_vm(t->key);
	if (v && exec_active(v->cur) && strcmp(v->cur->uid, t->uid) == 0) {
		struct exec *x = v->cur;
		x->creds_busy = false;
		const char *bad = err;
		for (size_t i = 0; bad == NULL && answers && i < json_object_array_length(answers); i++) {
			json_object *a = json_object_array_get_idx(answers, i), *r = NULL;
			json_object *j = a ? json_tokener_parse(json_object_get_string(a)) : NULL;
			if (j == NULL || !json_object_object_get_ex(j, "return", &r))
				bad = "the guest agent refused a credentials command";
			json_object_put(j);
		}
		if (bad == NULL) {
			free(x->creds_done);
			x->creds_done = t->want;
			t->want = NULL;
			log_info("engine: %s: access credentials propagated through the guest agent", t->key);
			set_state(v, 1, NULL);
		} else {
			char *safe = util_escape_display(bad);
			log_warn("engine: %s: access credentials: %s", t->key, safe);
			set_state(v, -1, safe);
			free(safe);
		}
	}
	free(t->key);
	free(t->want);
	free(t);
}

void ecreds_sync(struct evm *v)
{
	struct exec *x = v ? v->cur : NULL;
	if (x == NULL || !exec_active(x) || !x->agent || x->creds_busy || v->m == NULL)
		return;
	struct buf want;
	buf_init(&want);
	char **cmds = NULL;
	size_t ncmds = 0;
	const char *fail = NULL;
	char *failbuf = NULL;
	bool any = false;
	for (int i = 0; i < v->m->ncreds && fail == NULL; i++) {
		const struct mf_cred *c = &v->m->creds[i];
		if (!c->agent)
			continue;
		any = true;
		struct esecret *s = esecret_lookup(v->m->ns, c->secret, false);
		if (s == NULL) {
			fail = failbuf = xasprintf("secret \"%s\" not found", c->secret);
			break;
		}
		if (c->password) {
			for (size_t k = 0; k < s->n; k++) {
				if (!user_ok(s->kv[k].key))
					continue;
				char line[128];
				int n = snprintf(line, sizeof line, "p %s %016llx", s->kv[k].key,
						 (unsigned long long)fnv(s->kv[k].val, s->kv[k].len));
				buf_printf(&want, "%s\n", line);
				if (!has_line(x->creds_done, line, (size_t)n)) {
					cmds = xreallocarray(cmds, ncmds + 1, sizeof *cmds);
					cmds[ncmds++] = esecret_qga_set_password(s->kv[k].key, s->kv[k].val, s->kv[k].len);
				}
			}
		} else {
			size_t n;
			char **keys = esecret_ssh_keys(s, &n);
			for (int u = 0; u < c->nusers; u++)
				for (size_t k = 0; k < n; k++)
					buf_printf(&want, "k %s %s\n", c->users[u], keys[k]);
			free_keys(keys, n);
		}
		esecret_free(s);
	}
	if (!any && x->creds_done == NULL) {
		buf_free(&want);
		return; /* nothing to propagate (the condition appears with the first credentials) */
	}
	if (fail) {
		buf_free(&want);
		for (size_t i = 0; i < ncmds; i++)
			free(cmds[i]);
		free(cmds);
		set_state(v, -1, fail);
		free(failbuf);
		return;
	}
	/* the keys: per user, what left the Secrets out, what came in; the first time, exactly the Secrets' */
	char **users = NULL;
	size_t nusers = 0;
	users_of(want.data, &users, &nusers);
	users_of(x->creds_done, &users, &nusers);
	for (size_t u = 0; u < nusers; u++) {
		size_t nw, nd;
		char **w = keys_of(want.data, users[u], &nw), **d = keys_of(x->creds_done, users[u], &nd);
		if (x->creds_done == NULL) {
			cmds = xreallocarray(cmds, ncmds + 1, sizeof *cmds);
			cmds[ncmds++] = esecret_qga_add_keys(users[u], w, nw, true);
		} else {
			char **rm = xcalloc(nd + 1, sizeof *rm), **add = xcalloc(nw + 1, sizeof *add);
			size_t nrm = 0, nadd = 0;
			for (size_t i = 0; i < nd; i++) {
				bool keep = false;
				for (size_t j = 0; j < nw && !keep; j++)
					keep = strcmp(d[i], w[j]) == 0;
				if (!keep)
					rm[nrm++] = d[i];
			}
			for (size_t j = 0; j < nw; j++) {
				bool had = false;
				for (size_t i = 0; i < nd && !had; i++)
					had = strcmp(d[i], w[j]) == 0;
				if (!had)
					add[nadd++] = w[j];
			}
			cmds = xreallocarray(cmds, ncmds + 2, sizeof *cmds);
			if (nrm)
				cmds[ncmds++] = esecret_qga_remove_keys(users[u], rm, nrm);
			if (nadd)
				cmds[ncmds++] = esecret_qga_add_keys(users[u], add, nadd, false);
			free(rm);
			free(add);
		}
		free_keys(w, nw);
		free_keys(d, nd);
		free(users[u]);
	}
	free(users);
	if (ncmds == 0) {
		if (!util_str_eq(x->creds_done, want.data)) {
			free(x->creds_done);
			x->creds_done = buf_steal(&want);
		}
		buf_free(&want);
		set_state(v, 1, NULL);
		return;
	}
	struct ticket *t = xcalloc(1, sizeof *t);
	t->key = xstrdup(v->key);
	snprintf(t->uid, sizeof t->uid, "%s", x->uid);
	t->want = buf_steal(&want);
	if (eagent_send_raw(v, cmds, (int)ncmds, sent, t) == 0)
		x->creds_busy = true;
	else {
		free(t->key);
		free(t->want);
		free(t);
	}
	for (size_t i = 0; i < ncmds; i++) {
		memset(cmds[i], 0, strlen(cmds[i])); /* a password's command */
		free(cmds[i]);
	}
	free(cmds);
}

void engine_secrets_changed(void)
{
	for (int h = 0; h < engine_g.nhosts; h++) {
		int n = 0;
		struct evm **vms = ehost_vms(engine_g.hosts[h], &n);
		for (int k = 0; k < n; k++) {
			if (vms[k]->sched_msg && vms[k]->sched_mount)
				ereconcile(vms[k]); /* a start that waited for a Secret or ConfigMap: there now? */
			else
				ecreds_sync(vms[k]);
		}
		free(vms);
	}
}
