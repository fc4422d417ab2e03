/* Secrets and ConfigMaps as the engine uses them: the API server's validation of the two kinds (names and sizes
 * as Kubernetes checks them), their decoded data, what a VM takes from them (cloud-init user and network data,
 * Secret and ConfigMap volumes, accessCredentials' SSH keys and passwords) and the qemu-guest-agent commands
 * that put credentials into a guest. The objects themselves are the engine service's (apiserver/secrets.c); the
 * engine reads them through the lookup the service sets (esecret_set_lookup), on the loop thread.
 *
 * Values are secret: nothing here logs them, and the callers do not either (sizes only). */
#ifndef KVCON_ENGINE_ESECRET_H
#define KVCON_ENGINE_ESECRET_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#define ESECRET_MAX (1u << 20) /* Kubernetes' bound on a Secret's or ConfigMap's data (MaxSecretSize) */

/* Validates obj as the API server validates a Secret (configmap false) or a ConfigMap, and normalises it as it
 * stores it: a Secret's stringData merged into data (base64) and removed, its type defaulted to Opaque. 0, or -1
 * with *err (caller frees) in the API server's words ("data[k]: Invalid value: ..."). */
int esecret_normalize(json_object *obj, bool configmap, char **err);

struct esecret_kv {
	char *key;
	char *val; /* decoded, NUL-terminated (len bytes before it) */
	size_t len;
};
struct esecret {
	struct esecret_kv *kv; /* sorted by key */
	size_t n;
};

/* The decoded data of a normalised Secret (data) or ConfigMap (data and binaryData); NULL when malformed. Caller
 * frees with esecret_free (which clears the values). */
struct esecret *esecret_data(json_object *obj, bool configmap);
void esecret_free(struct esecret *s);
/* KubeVirt's cloud-init Secret keys: "userdata" or "userData" (which == 0), "networkdata" or "networkData" (1). */
const struct esecret_kv *esecret_cloudinit(const struct esecret *s, int which);

/* The SSH public keys of an accessCredentials sshPublicKey Secret as KubeVirt reads them: every non-blank line of
 * every value, trimmed, in key order, each once; *n of them (caller frees each and the array). */
char **esecret_ssh_keys(const struct esecret *s, size_t *n);

/* The qemu-guest-agent commands (JSON text, caller frees): keys into user's authorized_keys
 * (guest-ssh-add-authorized-keys, reset: the file holds exactly these), out of it
 * (guest-ssh-remove-authorized-keys), user's password (guest-set-user-password, not crypted). */
char *esecret_qga_add_keys(const char *user, char *const *keys, size_t n, bool reset);
char *esecret_qga_remove_keys(const char *user, char *const *keys, size_t n);
char *esecret_qga_set_password(const char *user, const char *password, size_t len);

/* cloud-init user data with accessCredentials' noCloud keys: #cloud-config data with an ssh_authorized_keys list
 * appended (caller frees); NULL with *err when the user data is not #cloud-config. */
char *esecret_userdata_with_keys(const char *user_data, char *const *keys, size_t n, char **err);

/* ---- the engine service's objects ---- */

/* Finds Secret (configmap false) or ConfigMap ns/name: its data (caller frees), or NULL when there is none. */
typedef struct esecret *(*esecret_lookup_fn)(void *arg, const char *ns, const char *name, bool configmap);
void esecret_set_lookup(esecret_lookup_fn fn, void *arg);
/* NULL when missing, or when no service serves them (`kvcon engine` without the service: no Secrets exist). */
struct esecret *esecret_lookup(const char *ns, const char *name, bool configmap);

/* ---- test seams: exported for tests/ only, not to be called by kvcon itself (tests/check-exports.sh) ---- */
/* Kubernetes' IsConfigMapKey: [-._a-zA-Z0-9]+, at most 253 bytes, not "." nor "..", not starting with "..". */
bool esecret_key_valid(const char *k);

#endif
