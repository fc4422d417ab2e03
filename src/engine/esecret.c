/* Secrets and ConfigMaps for the engine (see esecret.h). */
#include "engine/esecret.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/util.h"
#include "core/xmalloc.h"

static esecret_lookup_fn lookup;
static void *lookup_arg;

bool esecret_key_valid(const char *k)
{
	size_t n = k ? strlen(k) : 0;
	if (n == 0 || n > 253 || strcmp(k, ".") == 0 || strncmp(k, "..", 2) == 0)
		return false;
	return strspn(k, "-._abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") == n;
}

static json_object *member(json_object *o, const char *k)
{
	json_object *v = NULL;
	return o && json_object_is_type(o, json_type_object) && json_object_object_get_ex(o, k, &v) ? v : NULL;
}

/* Checks a data map's keys and adds its values' sizes to *total; -1 with *err. */
static int check_map(json_object *m, const char *field, bool b64, size_t *total, char **err)
{
	if (m == NULL)
		return 0;
	if (!json_object_is_type(m, json_type_object)) {
		*err = xasprintf("%s: Invalid value: must be a map of strings", field);
		return -1;
	}
	json_object_object_foreach(m, k, v)
	{
		if (!esecret_key_valid(k)) {
			char *shown = xstrndup(k, strcspn(k, "\"\\\n\r\t") < 64 ? strcspn(k, "\"\\\n\r\t") : 64);
			*err = xasprintf("%s[%s]: Invalid value: \"%s\": a valid config key must consist of alphanumeric "
					 "characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', "
					 "regex used for validation is '[-._a-zA-Z0-9]+')",
					 field, shown, shown);
			free(shown);
			return -1;
		}
		if (!json_object_is_type(v, json_type_string)) {
			*err = xasprintf("%s[%s]: Invalid value: must be a string", field, k);
			return -1;
		}
		size_t n = (size_t)json_object_get_string_len(v);
		if (b64) {
			/* Go's base64.StdEncoding, as encoding/json reads []byte */
			char *d = util_b64_decode(json_object_get_string(v), n, &n, UTIL_B64_PADDED);
			if (d == NULL) {
				*err = xasprintf("%s[%s]: Invalid value: illegal base64 data", field, k);
				return -1;
			}
			memset(d, 0, n);
			free(d);
		}
		*total += n;
	}
	return 0;
}

int esecret_normalize(json_object *obj, bool configmap, char **err)
{
	*err = NULL;
	size_t total = 0;
	if (!json_object_is_type(obj, json_type_object)) {
		*err = xstrdup("the object is not a JSON object");
		return -1;
	}
	json_object *data = member(obj, "data");
	if (configmap) {
		json_object *bin = member(obj, "binaryData");
		if (check_map(data, "data", false, &total, err) < 0 || check_map(bin, "binaryData", true, &total, err) < 0)
			return -1;
		if (data && bin) {
			json_object_object_foreach(data, k, v)
			{
				(void)v;
				if (member(bin, k)) {
					*err = xasprintf("data[%s]: Invalid value: \"%s\": duplicate of key present in binaryData", k, k);
					return -1;
				}
			}
		}
	} else {
		json_object *sd = member(obj, "stringData");
		if (check_map(data, "data", true, &total, err) < 0 || check_map(sd, "stringData", false, &total, err) < 0)
			return -1;
		if (sd) {
			/* the API server's conversion: stringData's values over data's, then stringData goes */
			if (data == NULL) {
				data = json_object_new_object();
				json_object_object_add(obj, "data", data);
			}
			json_object_object_foreach(sd, k, v)
			{
				char *e = util_b64_encode(json_object_get_string(v), (size_t)json_object_get_string_len(v));
				json_object_object_add(data, k, json_object_new_string(e));
				free(e);
			}
			json_object_object_del(obj, "stringData");
			total = 0; /* counted again, once each */
			if (check_map(data, "data", true, &total, err) < 0)
				return -1;
		}
		json_object *t = member(obj, "type");
		if (t && !json_object_is_type(t, json_type_string)) {
			*err = xstrdup("type: Invalid value: must be a string");
			return -1;
		}
		const char *type = t ? json_object_get_string(t) : "";
		if (*type == '\0')
			json_object_object_add(obj, "type", json_object_new_string(type = "Opaque"));
		/* the keys a type requires (ValidateSecret) */
		static const char *const need[][3] = {
			{ "kubernetes.io/ssh-auth", "ssh-privatekey", NULL },
			{ "kubernetes.io/tls", "tls.crt", "tls.key" },
			{ "kubernetes.io/dockerconfigjson", ".dockerconfigjson", NULL },
			{ "kubernetes.io/dockercfg", ".dockercfg", NULL },
		};
		for (size_t i = 0; i < sizeof need / sizeof need[0]; i++)
			for (int k = 1; k < 3 && strcmp(type, need[i][0]) == 0; k++)
				if (need[i][k] && member(data, need[i][k]) == NULL) {
					*err = xasprintf("data[%s]: Required value", need[i][k]);
					return -1;
				}
		if (strcmp(type, "kubernetes.io/basic-auth") == 0 && member(data, "username") == NULL &&
		    member(data, "password") == NULL) {
			*err = xstrdup("data[username]: Required value: either username or password is required");
			return -1;
		}
	}
	json_object *imm = member(obj, "immutable");
	if (imm && !json_object_is_type(imm, json_type_boolean)) {
		*err = xstrdup("immutable: Invalid value: must be a boolean");
		return -1;
	}
	if (total > ESECRET_MAX) {
		*err = xasprintf("data: Too long: must have at most %u bytes", ESECRET_MAX);
		return -1;
	}
	return 0;
}

static int kv_cmp(const void *a, const void *b)
{
	return strcmp(((const struct esecret_kv *)a)->key, ((const struct esecret_kv *)b)->key);
}

static bool add_map(struct esecret *s, json_object *m, bool b64)
{
	if (m == NULL)
		return true;
	if (!json_object_is_type(m, json_type_object))
		return false;
	json_object_object_foreach(m, k, v)
	{
		if (!esecret_key_valid(k) || !json_object_is_type(v, json_type_string))
			return false;
		size_t n = (size_t)json_object_get_string_len(v);
		char *d = b64 ? util_b64_decode(json_object_get_string(v), n, &n, UTIL_B64_PADDED) : xstrndup(json_object_get_string(v), n);
		if (d == NULL)
			return false;
		s->kv = xreallocarray(s->kv, s->n + 1, sizeof *s->kv);
		s->kv[s->n++] = (struct esecret_kv){ xstrdup(k), d, n };
	}
	return true;
}

struct esecret *esecret_data(json_object *obj, bool configmap)
{
	struct esecret *s = xcalloc(1, sizeof *s);
	if (!add_map(s, member(obj, "data"), !configmap) || (configmap && !add_map(s, member(obj, "binaryData"), true))) {
		esecret_free(s);
		return NULL;
	}
	if (s->n)
		qsort(s->kv, s->n, sizeof *s->kv, kv_cmp);
	return s;
}

void esecret_free(struct esecret *s)
{
	if (s == NULL)
		return;
	for (size_t i = 0; i < s->n; i++) {
		free(s->kv[i].key);
		memset(s->kv[i].val, 0, s->kv[i].len);
		free(s->kv[i].val);
	}
	free(s->kv);
	free(s);
}

static const struct esecret_kv *esecret_get(const struct esecret *s, const char *key)
{
	for (size_t i = 0; s && i < s->n; i++)
		if (strcmp(s->kv[i].key, key) == 0)
			return &s->kv[i];
	return NULL;
}

const struct esecret_kv *esecret_cloudinit(const struct esecret *s, int which)
{
	const struct esecret_kv *kv = esecret_get(s, which ? "networkdata" : "userdata");
	return kv ? kv : esecret_get(s, which ? "networkData" : "userData");
}

char **esecret_ssh_keys(const struct esecret *s, size_t *n)
{
	char **keys = NULL;
	*n = 0;
	for (size_t i = 0; s && i < s->n; i++) {
		const char *v = s->kv[i].val, *end = v + s->kv[i].len;
		while (v < end) {
			const char *nl = memchr(v, '\n', (size_t)(end - v)), *le = nl ? nl : end;
			const char *a = v, *b = le;
			while (a < b && (*a == ' ' || *a == '\t' || *a == '\r'))
				a++;
			while (b > a && (b[-1] == ' ' || b[-1] == '\t' || b[-1] == '\r'))
				b--;
			if (b > a && !memchr(a, '\0', (size_t)(b - a))) {
				char *k = xstrndup(a, (size_t)(b - a));
				bool dup = false;
				for (size_t j = 0; j < *n && !dup; j++)
					dup = strcmp(keys[j], k) == 0;
				if (dup)
					free(k);
				else {
					keys = xreallocarray(keys, *n + 2, sizeof *keys);
					keys[(*n)++] = k;
					keys[*n] = NULL;
				}
			}
			v = nl ? nl + 1 : end;
		}
	}
	return keys;
}

static char *command(const char *name, json_object *args)
{
	json_object *o = json_object_new_object();
	json_object_object_add(o, "execute", json_object_new_string(name));
	json_object_object_add(o, "arguments", args);
	char *s = xstrdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
	json_object_put(o);
	return s;
}

static json_object *key_args(const char *user, char *const *keys, size_t n)
{
	json_object *a = json_object_new_object(), *l = json_object_new_array();
	json_object_object_add(a, "username", json_object_new_string(user));
	for (size_t i = 0; i < n; i++)
		json_object_array_add(l, json_object_new_string(keys[i]));
	json_object_object_add(a, "keys", l);
	return a;
}

char *esecret_qga_add_keys(const char *user, char *const *keys, size_t n, bool reset)
{
	json_object *a = key_args(user, keys, n);
	json_object_object_add(a, "reset", json_object_new_boolean(reset));
	return command("guest-ssh-add-authorized-keys", a);
}

char *esecret_qga_remove_keys(const char *user, char *const *keys, size_t n)
{
	return command("guest-ssh-remove-authorized-keys", key_args(user, keys, n));
}

char *esecret_qga_set_password(const char *user, const char *password, size_t len)
{
	json_object *a = json_object_new_object();
	char *b = util_b64_encode(password, len);
	json_object_object_add(a, "username", json_object_new_string(user));
	json_object_object_add(a, "password", json_object_new_string(b));
	json_object_object_add(a, "crypted", json_object_new_boolean(0));
	memset(b, 0, strlen(b));
	free(b);
	return command("guest-set-user-password", a);
}

char *esecret_userdata_with_keys(const char *ud, char *const *keys, size_t n, char **err)
{
	if (ud == NULL)
		ud = "#cloud-config\n";
	if (strncmp(ud, "#cloud-config", 13) != 0) {
		*err = xstrdup("accessCredentials with propagationMethod noCloud need #cloud-config user data");
		return NULL;
	}
	struct buf b;
	buf_init(&b);
	buf_add(&b, ud, strlen(ud));
	if (b.len && b.data[b.len - 1] != '\n')
		buf_add_char(&b, '\n');
	buf_printf(&b, "ssh_authorized_keys:\n");
	for (size_t i = 0; i < n; i++) {
		json_object *s = json_object_new_string(keys[i]); /* a YAML double-quoted scalar is a JSON string */
		buf_printf(&b, "  - %s\n",
			   json_object_to_json_string_ext(s, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
		json_object_put(s);
	}
	return buf_steal(&b);
}

void esecret_set_lookup(esecret_lookup_fn fn, void *arg)
{
	lookup = fn;
	lookup_arg = arg;
}

struct esecret *esecret_lookup(const char *ns, const char *name, bool configmap)
{
	return lookup && ns && name ? lookup(lookup_arg, ns, name, configmap) : NULL;
}
