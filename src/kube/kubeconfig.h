/* kubeconfig: loads the connection settings of one context the way kubectl does (KUBECONFIG with several files
 * merged, --kubeconfig, --context, the context's namespace), or the in-cluster service account when no
 * kubeconfig exists. Parsed with libyaml; errors name the file and line. Tokens are kept here and never logged. */
#ifndef KVCON_KUBE_KUBECONFIG_H
#define KVCON_KUBE_KUBECONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Environment variable overriding the service-account directory (tests). */
#define KUBECONFIG_SA_DIR_ENV "KVCON_SERVICEACCOUNT_DIR"
#define KUBECONFIG_SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

struct kube_exec {
	char *api_version;  /* client.authentication.k8s.io/v1 or v1beta1 */
	char *command;      /* resolved against the kubeconfig's directory when it contains a '/' */
	char **args;
	int nargs;
	char **env;         /* "NAME=value" */
	int nenv;
	char *install_hint;
	bool provide_cluster_info;
	enum kube_exec_interactive { KUBE_EXEC_IF_AVAILABLE, KUBE_EXEC_NEVER, KUBE_EXEC_ALWAYS } interactive;
};

struct kube_config {
	char *origin;          /* file the context came from, or "in-cluster" */
	char *context;         /* context name */
	char *cluster_name;
	char *user_name;
	char *ns;              /* -n, else the context's namespace, else "default" */
	bool ns_explicit;      /* -n given */
	/* cluster */
	char *server;
	char *ca_file;
	char *ca_data;         /* decoded PEM */
	size_t ca_len;
	bool insecure;
	char *tls_server_name;
	char *proxy_url;
	char *unix_socket;     /* set: the server is reached over this unix socket, plain HTTP with no credential (the
				* local engine service, kube_config_unix); never read from a kubeconfig file */
	/* user */
	char *token;
	char *token_file;
	char *cert_file, *key_file;
	char *cert_data, *key_data; /* decoded PEM */
	size_t cert_len, key_len;
	char *username, *password;
	struct kube_exec *exec;
	bool in_cluster;
};

/* Loads the context (NULL: the current one) from path (NULL: $KUBECONFIG, else ~/.kube/config; when none of
 * them exists, the in-cluster service account). Returns NULL with *err (caller frees) naming file and line. */
struct kube_config *kube_config_load(const char *path, const char *context, char **err);
void kube_config_free(struct kube_config *kc);
/* The settings of a server on a unix socket (the engine service's, docs/ENGINE-SERVICE.md): server
 * http://kvcon-engine, no TLS and no credential (the socket's mode is the access control), namespace -n's, else
 * default; context and origin name it in messages. */
struct kube_config *kube_config_unix(const char *socket_path, const char *context, const char *ns);
/* Every later kube_config_unix's requests go under path ("/kvcon-host/NAME": the engine service of a set, for one
 * of its hosts, service/service.h), for the rest of the process; NULL: none. */
void kube_config_unix_prefix(const char *path);

/* Every context name of the merged kubeconfig, in file order; NULL-terminated array (caller frees with
 * kube_config_names_free). NULL with *err on a broken file. */
char **kube_config_context_names(const char *path, size_t *n, char **err);
void kube_config_names_free(char **names);


#endif
