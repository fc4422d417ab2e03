/* Secrets and ConfigMaps for the engine (engine/esecret.c): the API server's validation and normalisation, the
 * decoded data, cloud-init's keys, accessCredentials' SSH keys and the guest agent's commands. */
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine_int.h"
#include "engine/esecret.h"
#include "engine/manifest.h"
#include "t.h"

static int norm(const char *text, bool cm, char **out)
{
	json_object *o = json_tokener_parse(text);
	char *err = NULL;
	int rc = esecret_normalize(o, cm, &err);
	*out = rc == 0 ? strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN)) : err;
	if (rc == 0)
		free(err);
	json_object_put(o);
	return rc;
}

static void test_keys(void)
{
	T_CHECK(esecret_key_valid("userdata"));
	T_CHECK(esecret_key_valid("tls.crt"));
	T_CHECK(esecret_key_valid(".dockerconfigjson"));
	T_CHECK(esecret_key_valid("a-b_c.D9"));
	T_CHECK(!esecret_key_valid(""));
	T_CHECK(!esecret_key_valid("."));
	T_CHECK(!esecret_key_valid(".."));
	T_CHECK(!esecret_key_valid("..data"));
	T_CHECK(!esecret_key_valid("a/b"));
	T_CHECK(!esecret_key_valid("a b"));
	T_CHECK(!esecret_key_valid(NULL));
	char k[300];
	memset(k, 'a', 253);
	k[253] = '\0';
	T_CHECK(esecret_key_valid(k));
	k[253] = 'a';
	k[254] = '\0';
	T_CHECK(!esecret_key_valid(k));
}

static void test_normalize(void)
{
	char *out;
	/* stringData into data (base64), type Opaque by default */
	T_EQ_INT(norm("{\"stringData\":{\"user\":\"root\"},\"data\":{\"a\":\"eA==\"}}", false, &out), 0);
	T_EQ_STR(out, "{\"data\":{\"a\":\"eA==\",\"user\":\"cm9vdA==\"},\"type\":\"Opaque\"}");
	free(out);
	/* stringData wins over data */
	T_EQ_INT(norm("{\"stringData\":{\"a\":\"y\"},\"data\":{\"a\":\"eA==\"}}", false, &out), 0);
	T_EQ_STR(out, "{\"data\":{\"a\":\"eQ==\"},\"type\":\"Opaque\"}");
	free(out);
	T_EQ_INT(norm("{\"data\":{\"a\":\"not base64!\"}}", false, &out), -1);
	T_CHECK(strstr(out, "data[a]: Invalid value") != NULL);
	free(out);
	T_EQ_INT(norm("{\"data\":{\"a/b\":\"eA==\"}}", false, &out), -1);
	T_CHECK(strstr(out, "a valid config key must consist of alphanumeric characters") != NULL);
	free(out);
	T_EQ_INT(norm("{\"data\":{\"a\":1}}", false, &out), -1);
	free(out);
	T_EQ_INT(norm("{\"type\":\"kubernetes.io/tls\",\"data\":{\"tls.crt\":\"eA==\"}}", false, &out), -1);
	T_EQ_STR(out, "data[tls.key]: Required value");
	free(out);
	T_EQ_INT(norm("{\"type\":\"kubernetes.io/basic-auth\"}", false, &out), -1);
	free(out);
	T_EQ_INT(norm("{\"immutable\":\"yes\"}", false, &out), -1);
	free(out);
	/* ConfigMaps: data and binaryData, no key in both */
	T_EQ_INT(norm("{\"data\":{\"k\":\"v\"},\"binaryData\":{\"b\":\"AAE=\"}}", true, &out), 0);
	free(out);
	T_EQ_INT(norm("{\"data\":{\"k\":\"v\"},\"binaryData\":{\"k\":\"AAE=\"}}", true, &out), -1);
	T_CHECK(strstr(out, "duplicate of key present in binaryData") != NULL);
	free(out);
	T_EQ_INT(norm("{\"binaryData\":{\"b\":\"AA=\"}}", true, &out), -1); /* not padded */
	free(out);
	/* 1 MiB: at the bound, and one byte past it */
	size_t big = ESECRET_MAX;
	char *text = malloc(big + 64);
	strcpy(text, "{\"data\":{\"k\":\"");
	memset(text + strlen(text), 'v', big);
	strcpy(text + 14 + big, "\"}}");
	T_EQ_INT(norm(text, true, &out), 0);
	free(out);
	strcpy(text, "{\"data\":{\"k\":\"");
	memset(text + 14, 'v', big + 1);
	strcpy(text + 14 + big + 1, "\"}}");
	T_EQ_INT(norm(text, true, &out), -1);
	T_EQ_STR(out, "data: Too long: must have at most 1048576 bytes");
	free(out);
	free(text);
}

static void test_data(void)
{
	json_object *o = json_tokener_parse("{\"data\":{\"userData\":\"I2Nsb3VkLWNvbmZpZwo=\",\"networkdata\":\"bmQ=\","
					    "\"k2\":\"c3NoLWVkMjU1MTkgQUFBQSBhQGIKCiAgc3NoLXJzYSBCQkJCIGNAZCAKc3NoLWVkMjU1MTkgQUFBQSBhQGI=\"}}");
	struct esecret *s = esecret_data(o, false);
	T_CHECK(s != NULL && s->n == 3);
	T_EQ_STR(s ? s->kv[0].key : NULL, "k2"); /* sorted */
	const struct esecret_kv *ud = esecret_cloudinit(s, 0), *nd = esecret_cloudinit(s, 1);
	T_EQ_STR(ud ? ud->val : NULL, "#cloud-config\n");
	T_EQ_STR(nd ? nd->val : NULL, "nd");
	size_t n;
	struct esecret one = { s->kv, 1 };
	char **keys = esecret_ssh_keys(&one, &n);
	/* every non-blank line, trimmed, each once */
	T_EQ_INT(n, 2);
	T_EQ_STR(n > 0 ? keys[0] : NULL, "ssh-ed25519 AAAA a@b");
	T_EQ_STR(n > 1 ? keys[1] : NULL, "ssh-rsa BBBB c@d");
	char *add = esecret_qga_add_keys("root", keys, n, true);
	T_EQ_STR(add, "{\"execute\":\"guest-ssh-add-authorized-keys\",\"arguments\":{\"username\":\"root\",\"keys\":"
		      "[\"ssh-ed25519 AAAA a@b\",\"ssh-rsa BBBB c@d\"],\"reset\":true}}");
	char *rm = esecret_qga_remove_keys("root", keys, 1);
	T_EQ_STR(rm, "{\"execute\":\"guest-ssh-remove-authorized-keys\",\"arguments\":{\"username\":\"root\",\"keys\":"
		     "[\"ssh-ed25519 AAAA a@b\"]}}");
	char *pw = esecret_qga_set_password("fedora", "s3cr\"et", 7);
	T_EQ_STR(pw, "{\"execute\":\"guest-set-user-password\",\"arguments\":{\"username\":\"fedora\",\"password\":"
		     "\"czNjciJldA==\",\"crypted\":false}}");
	char *err = NULL, *u = esecret_userdata_with_keys("#cloud-config\nhostname: a", keys, n, &err);
	T_EQ_STR(u, "#cloud-config\nhostname: a\nssh_authorized_keys:\n  - \"ssh-ed25519 AAAA a@b\"\n  - \"ssh-rsa BBBB c@d\"\n");
	T_CHECK(esecret_userdata_with_keys("#!/bin/sh\necho", keys, n, &err) == NULL && err != NULL);
	free(err);
	err = NULL;
	char *slash[] = { "ssh-ed25519 AA/B+C= x@y" };
	free(u);
	u = esecret_userdata_with_keys(NULL, slash, 1, &err); /* a YAML double-quoted scalar: no "\/" */
	T_EQ_STR(u, "#cloud-config\nssh_authorized_keys:\n  - \"ssh-ed25519 AA/B+C= x@y\"\n");
	free(u);
	free(add);
	free(rm);
	free(pw);
	for (size_t i = 0; i < n; i++)
		free(keys[i]);
	free(keys);
	esecret_free(s);
	json_object_put(o);
	/* malformed data decode to nothing */
	o = json_tokener_parse("{\"data\":{\"k\":\"@@@\"}}");
	T_CHECK(esecret_data(o, false) == NULL);
	json_object_put(o);
	/* a ConfigMap's data are text, binaryData base64 */
	o = json_tokener_parse("{\"data\":{\"a\":\"eA==\"},\"binaryData\":{\"b\":\"AAE=\"}}");
	s = esecret_data(o, true);
	T_EQ_STR(s && s->n == 2 ? s->kv[0].val : NULL, "eA==");
	T_CHECK(s && s->n == 2 && s->kv[1].len == 2 && s->kv[1].val[0] == 0 && s->kv[1].val[1] == 1);
	esecret_free(s);
	json_object_put(o);
	T_CHECK(esecret_lookup("default", "x", false) == NULL); /* no service: no Secrets */
}

/* The service's objects for ecreds.c: Secret default/ud (userData), default/keys (two keys), ConfigMap default/cm. */
static struct esecret *fake_lookup(void *arg, const char *ns, const char *name, bool cm)
{
	(void)arg;
	const char *text = NULL;
	if (strcmp(ns, "default") != 0)
		return NULL;
	if (!cm && strcmp(name, "ud") == 0)
		text = "{\"data\":{\"userData\":\"I2Nsb3VkLWNvbmZpZwpob3N0bmFtZTogYQ==\",\"networkData\":\"bmQ=\"}}";
	else if (!cm && strcmp(name, "keys") == 0)
		text = "{\"data\":{\"k\":\"c3NoLWVkMjU1MTkgQUFBQSBhQGIKc3NoLXJzYSBCQkJCIGNAZA==\"}}";
	else if (cm && strcmp(name, "cm") == 0)
		text = "{\"data\":{\"app.conf\":\"x=1\"}}";
	if (text == NULL)
		return NULL;
	json_object *o = json_tokener_parse(text);
	struct esecret *s = esecret_data(o, cm);
	json_object_put(o);
	return s;
}

/* What a start takes from the service's Secrets (ecreds.c): what it waits for, in kubelet's words, and cloud-init's
 * data from a secretRef with accessCredentials' noCloud keys appended, a ConfigMap volume's files; cleared after. */
static void test_start(void)
{
	const char *vm = "apiVersion: kubevirt.io/v1\nkind: VirtualMachine\nmetadata: {name: s}\nspec:\n  template:\n"
			 "    spec:\n      domain: {memory: {guest: 64Mi}}\n"
			 "      accessCredentials:\n      - sshPublicKey: {source: {secret: {secretName: keys}}, propagationMethod: {noCloud: {}}}\n"
			 "      volumes:\n      - {name: ci, cloudInitNoCloud: {secretRef: {name: ud}, networkDataSecretRef: {name: ud}}}\n"
			 "      - {name: c, configMap: {name: cm}}\n      - {name: o, secret: {secretName: nope, optional: true}}\n";
	char *err = NULL;
	struct evm v = { 0 };
	v.m = manifest_parse(vm, strlen(vm), &err);
	T_CHECK(v.m != NULL);
	if (v.m == NULL)
		return;
	char *miss = ecreds_missing(&v); /* no service: nothing exists */
	T_EQ_STR(miss, "MountVolume.SetUp failed for volume \"ci\" : secret \"ud\" not found");
	free(miss);
	esecret_set_lookup(fake_lookup, NULL);
	T_CHECK((miss = ecreds_missing(&v)) == NULL);
	free(miss);
	T_EQ_INT(ecreds_resolve(&v, &err), 0);
	T_EQ_STR(v.m->vols[0].run_user_data, "#cloud-config\nhostname: a\nssh_authorized_keys:\n  - \"ssh-ed25519 AAAA a@b\"\n"
					      "  - \"ssh-rsa BBBB c@d\"\n");
	T_EQ_STR(v.m->vols[0].run_network_data, "nd");
	T_CHECK(v.m->vols[0].user_data == NULL); /* the manifest's own stays as written */
	T_CHECK(v.m->vols[1].files && v.m->vols[1].files->n == 1 && strcmp(v.m->vols[1].files->kv[0].key, "app.conf") == 0);
	T_CHECK(v.m->vols[2].files && v.m->vols[2].files->n == 0); /* optional and missing: empty */
	ecreds_release(&v);
	T_CHECK(v.m->vols[0].run_user_data == NULL && v.m->vols[1].files == NULL);
	manifest_free(v.m);
	/* a missing ConfigMap volume, and a Secret without cloud-init's key */
	const char *vm2 = "apiVersion: kubevirt.io/v1\nkind: VirtualMachine\nmetadata: {name: s}\nspec:\n  template:\n"
			  "    spec:\n      domain: {memory: {guest: 64Mi}}\n      volumes:\n"
			  "      - {name: c, configMap: {name: other}}\n      - {name: ci, cloudInitNoCloud: {secretRef: {name: keys}}}\n";
	v.m = manifest_parse(vm2, strlen(vm2), &err);
	miss = ecreds_missing(&v);
	T_EQ_STR(miss, "MountVolume.SetUp failed for volume \"c\" : configmap \"other\" not found");
	free(miss);
	v.m->vols[0].optional = true;
	T_EQ_INT(ecreds_resolve(&v, &err), -1);
	T_EQ_STR(err, "no userdata value found in k8s secret keys");
	free(err);
	ecreds_release(&v);
	manifest_free(v.m);
	esecret_set_lookup(NULL, NULL);
}

int main(void)
{
	test_keys();
	test_normalize();
	test_data();
	test_start();
	return T_DONE();
}
