/* The engine service's CA, server certificate, token and kubeconfig (see apitls.h). */
#include "engine/apitls.h"

#include <errno.h>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/log.h"
#include "core/trust.h"
#include "core/util.h"
#include "core/xmalloc.h"
#include "service/service.h"

#define VALID_DAYS 3650

static char *bio_text(BIO *b)
{
	char *p = NULL;
	long n = BIO_get_mem_data(b, &p);
	char *s = xstrndup(p ? p : "", n > 0 ? (size_t)n : 0);
	BIO_free(b);
	return s;
}

static char *pem_cert(X509 *c)
{
	BIO *b = BIO_new(BIO_s_mem());
	PEM_write_bio_X509(b, c);
	return bio_text(b);
}

static char *pem_key(EVP_PKEY *k)
{
	BIO *b = BIO_new(BIO_s_mem());
	PEM_write_bio_PrivateKey(b, k, NULL, NULL, 0, NULL, NULL);
	return bio_text(b);
}

static int add_ext(X509 *c, X509 *issuer, int nid, const char *value)
{
	X509V3_CTX ctx;
	X509V3_set_ctx_nodb(&ctx);
	X509V3_set_ctx(&ctx, issuer, c, NULL, NULL, 0);
	X509_EXTENSION *e = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
	if (e == NULL)
		return -1;
	int rc = X509_add_ext(c, e, -1) ? 0 : -1;
	X509_EXTENSION_free(e);
	return rc;
}

/* A certificate for key, named cn, signed by (issuer, ikey); issuer NULL: self-signed (the CA). */
static X509 *make_cert(EVP_PKEY *key, const char *cn, X509 *issuer, EVP_PKEY *ikey)
{
	X509 *c = X509_new();
	unsigned char serial[16];
	RAND_bytes(serial, sizeof serial);
	serial[0] &= 0x7f;
	BIGNUM *bn = BN_bin2bn(serial, sizeof serial, NULL);
	BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(c));
	BN_free(bn);
	X509_set_version(c, 2);
	X509_gmtime_adj(X509_getm_notBefore(c), -3600);
	X509_gmtime_adj(X509_getm_notAfter(c), (long)VALID_DAYS * 86400);
	X509_set_pubkey(c, key);
	X509_NAME *n = X509_get_subject_name(c);
	X509_NAME_add_entry_by_txt(n, "O", MBSTRING_ASC, (const unsigned char *)"kvcon", -1, -1, 0);
	X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0);
	X509_set_issuer_name(c, issuer ? X509_get_subject_name(issuer) : n);
	X509 *iss = issuer ? issuer : c;
	int rc = 0;
	if (issuer == NULL) {
		rc |= add_ext(c, iss, NID_basic_constraints, "critical,CA:TRUE");
		rc |= add_ext(c, iss, NID_key_usage, "critical,keyCertSign,cRLSign");
		rc |= add_ext(c, iss, NID_subject_key_identifier, "hash");
	} else {
		rc |= add_ext(c, iss, NID_basic_constraints, "critical,CA:FALSE");
		rc |= add_ext(c, iss, NID_key_usage, "critical,digitalSignature,keyEncipherment");
		rc |= add_ext(c, iss, NID_ext_key_usage, "serverAuth");
		rc |= add_ext(c, iss, NID_subject_alt_name, "IP:127.0.0.1,DNS:localhost");
		rc |= add_ext(c, iss, NID_authority_key_identifier, "keyid:always");
	}
	if (rc || !X509_sign(c, issuer ? ikey : key, EVP_sha256())) {
		X509_free(c);
		return NULL;
	}
	return c;
}

static int generate(struct apitls *t, char **err)
{
	EVP_PKEY *cak = EVP_EC_gen("P-256"), *k = EVP_EC_gen("P-256");
	X509 *ca = cak ? make_cert(cak, "kvcon engine CA", NULL, NULL) : NULL;
	X509 *c = ca && k ? make_cert(k, "kvcon engine service", ca, cak) : NULL;
	int rc = -1;
	if (c) {
		t->ca_pem = pem_cert(ca);
		t->cert_pem = pem_cert(c);
		t->key_pem = pem_key(k);
		rc = 0;
	} else
		*err = xstrdup("cannot generate the service's certificate (libcrypto)");
	X509_free(c);
	X509_free(ca);
	EVP_PKEY_free(k);
	EVP_PKEY_free(cak);
	return rc;
}

static int save(const char *dir, const char *name, const char *text, mode_t mode, char **err)
{
	char *p = util_path_join(dir, name), why[UTIL_WHY_LEN];
	int rc = util_write_file_why(p, text, strlen(text), mode, why);
	if (rc < 0)
		*err = xasprintf("%s: %s", p, why);
	free(p);
	return rc;
}

static char *load(const char *dir, const char *name)
{
	char *p = util_path_join(dir, name), *why = NULL;
	char *s = trust_read_file(p, NULL, &why); /* the token and key: refused when another user could have set them */
	if (why)
		log_error("engine serve: %s", why);
	free(why);
	free(p);
	return s;
}

int apitls_load(const char *dir, struct apitls *t, char **err)
{
	memset(t, 0, sizeof *t);
	if (util_mkdir_p(dir, 0700) < 0) {
		*err = xasprintf("%s: %s", dir, strerror(errno));
		return -1;
	}
	t->ca_pem = load(dir, "engine-api-ca.crt");
	t->cert_pem = load(dir, "engine-api.crt");
	t->key_pem = load(dir, "engine-api.key");
	t->token = load(dir, "engine-api.token");
	if (!t->ca_pem || !t->cert_pem || !t->key_pem) {
		free(t->ca_pem);
		free(t->cert_pem);
		free(t->key_pem);
		t->ca_pem = t->cert_pem = t->key_pem = NULL;
		if (generate(t, err) < 0 || save(dir, "engine-api.key", t->key_pem, 0600, err) < 0 ||
		    save(dir, "engine-api.crt", t->cert_pem, 0644, err) < 0 ||
		    save(dir, "engine-api-ca.crt", t->ca_pem, 0644, err) < 0) {
			apitls_free(t);
			return -1;
		}
	}
	if (t->token == NULL || strlen(t->token) != 64) {
		unsigned char r[32];
		if (RAND_bytes(r, sizeof r) != 1) {
			*err = xstrdup("no random bytes for the token");
			apitls_free(t);
			return -1;
		}
		free(t->token);
		t->token = xcalloc(65, 1);
		for (int i = 0; i < 32; i++)
			snprintf(t->token + 2 * i, 3, "%02x", r[i]);
		if (save(dir, "engine-api.token", t->token, 0600, err) < 0) {
			apitls_free(t);
			return -1;
		}
	}
	return 0;
}

void apitls_free(struct apitls *t)
{
	free(t->ca_pem);
	free(t->cert_pem);
	free(t->key_pem);
	if (t->token)
		OPENSSL_cleanse(t->token, strlen(t->token));
	free(t->token);
	memset(t, 0, sizeof *t);
}

/* The kubeconfig as text (caller frees; it holds the token). */
static char *kubeconfig_text(const struct apitls *t, int port)
{
	char *ca = util_b64_encode(t->ca_pem, strlen(t->ca_pem));
	struct buf b;
	buf_init(&b);
	buf_printf(&b,
		   "apiVersion: v1\nkind: Config\nclusters:\n- name: kvcon-engine\n  cluster:\n"
		   "    server: https://127.0.0.1:%d\n    certificate-authority-data: %s\n"
		   "users:\n- name: kvcon-engine\n  user:\n    token: %s\n"
		   "contexts:\n- name: kvcon-engine\n  context:\n    cluster: kvcon-engine\n    user: kvcon-engine\n"
		   "    namespace: default\ncurrent-context: kvcon-engine\npreferences: {}\n",
		   port, ca, t->token);
	free(ca);
	buf_add_char(&b, 0);
	return b.data;
}

int apitls_kubeconfig(const char *path, const struct apitls *t, int port, char **err)
{
	char *text = kubeconfig_text(t, port);
	char *dir = xstrdup(path);
	char *slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = 0;
		util_mkdir_p(dir, 0700);
	}
	free(dir);
	char why[UTIL_WHY_LEN];
	size_t len = strlen(text);
	int rc = util_write_file_why(path, text, len, 0600, why); /* --kubeconfig-out: a regular file of ours */
	if (rc < 0)
		*err = xasprintf("%s: %s", path, why);
	OPENSSL_cleanse(text, len);
	free(text);
	return rc;
}

static char *port_path(const char *state, const char *sock)
{
	return engine_service_file(state, sock, "engine-api-port");
}

int apitls_port_read(const char *state, const char *sock)
{
	char *p = port_path(state, sock), *why = NULL;
	char *s = trust_read_file(p, NULL, &why);
	free(why);
	free(p);
	char *end = NULL;
	long v = s ? strtol(s, &end, 10) : -1;
	bool ok = s && end != s && (*end == '\n' || *end == 0) && v > 0 && v <= 65535;
	free(s);
	return ok ? (int)v : -1;
}

int apitls_port_write(const char *state, const char *sock, int port, char **err)
{
	char text[16];
	int n = snprintf(text, sizeof text, "%d\n", port);
	char *p = port_path(state, sock), why[UTIL_WHY_LEN];
	int rc = util_write_file_why(p, text, (size_t)n, 0600, why);
	if (rc < 0)
		*err = xasprintf("%s: %s", p, why);
	free(p);
	return rc;
}

bool apitls_auth_ok(const struct apitls *t, const char *authorization)
{
	if (authorization == NULL || t->token == NULL || strncmp(authorization, "Bearer ", 7) != 0)
		return false;
	const char *got = authorization + 7;
	size_t n = strlen(t->token);
	if (strlen(got) != n)
		return false;
	return CRYPTO_memcmp(got, t->token, n) == 0;
}
