/* The engine service's credentials: a CA and a server certificate for 127.0.0.1 (generated on first start with
 * libcrypto, kept under the state directory, key files 0600), a random bearer token, and the kubeconfig that
 * points kubectl at them. */
#ifndef KVCON_ENGINE_APITLS_H
#define KVCON_ENGINE_APITLS_H

#include <stdbool.h>

struct apitls {
	char *ca_pem, *cert_pem, *key_pem; /* PEM text (owned) */
	char *token;                       /* 64 hex digits (owned); never logged */
};

/* Loads dir's credentials, generating the missing ones (dir is created 0700). 0, or -1 with *err. */
int apitls_load(const char *dir, struct apitls *t, char **err);
void apitls_free(struct apitls *t);
/* Writes a kubeconfig (0600, atomically) with cluster/user/context `kvcon-engine` for https://127.0.0.1:port.
 * 0, or -1 with *err. */
int apitls_kubeconfig(const char *path, const struct apitls *t, int port, char **err);
/* The HTTPS port a service on socket sock chose once and keeps (so that its kubeconfig stays valid across its
 * restarts): recorded in state/engine-api-port-HASH (HASH: FNV-1a of sock). The port recorded, or -1; 0 when
 * written, or -1 with *err. */
int apitls_port_read(const char *state, const char *sock);
int apitls_port_write(const char *state, const char *sock, int port, char **err);
/* Constant-time comparison of an Authorization header value with "Bearer TOKEN". */
bool apitls_auth_ok(const struct apitls *t, const char *authorization);

#endif
