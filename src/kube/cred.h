/* Credentials of one kubeconfig user: a static token, a token file (re-read as it rotates), or an exec
 * credential plugin (client.authentication.k8s.io v1/v1beta1) run asynchronously on the loop, its result
 * cached until expirationTimestamp and re-run after a 401. Secrets never reach the log. */
#ifndef KVCON_KUBE_CRED_H
#define KVCON_KUBE_CRED_H

#include <stdbool.h>
#include <stddef.h>

#include "kube/kubeconfig.h"

struct kube_cred;

/* err is NULL when the credential is ready, else why not (borrowed for the call). */
typedef void (*kube_cred_cb)(void *arg, const char *err);

/* Borrows kc, which must outlive the credential. */
struct kube_cred *kube_cred_new(const struct kube_config *kc);
void kube_cred_free(struct kube_cred *c);

/* Returns 1 when a credential is ready now, 0 when an exec plugin was started (cb runs later on the loop
 * thread), -1 with *err (caller frees) when none can be had. */
int kube_cred_ensure(struct kube_cred *c, kube_cred_cb cb, void *arg, char **err);
/* Forgets a waiting callback (its owner is going away). */
void kube_cred_forget(struct kube_cred *c, void *arg);
/* Drops the cached exec result (after a 401). Returns true when there was an exec plugin to re-run. */
bool kube_cred_invalidate(struct kube_cred *c);

/* The bearer token to send (NULL: none); valid until the next kube_cred_* call. */
const char *kube_cred_token(struct kube_cred *c);
/* Client certificate/key PEM from the exec plugin (NULL: none). */
const char *kube_cred_cert(const struct kube_cred *c, size_t *len);
const char *kube_cred_key(const struct kube_cred *c, size_t *len);
/* Whether an exec plugin may have the terminal (interactiveMode allowing): false while the dashboard owns it. */
void kube_cred_set_interactive(bool ok);

/* ---- test seams: exported for tests/ only, not to be called by kvcon itself (tests/check-exports.sh) ---- */
/* How many times the exec plugin ran (tests). */
int kube_cred_exec_runs(const struct kube_cred *c);
/* Parses an ExecCredential document (exposed for tests and fuzzing). On success fills token/cert/key (new
 * strings, NULL when absent) and *expiry (epoch seconds, 0 none); returns 0, else -1 with *err. */
int kube_cred_parse(const char *json, size_t len, const char *api_version, char **token, char **cert, char **key,
		    long long *expiry, char **err);

#endif
