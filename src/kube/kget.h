/* kget: `kvcon get` on the API's own objects, as kubectl prints them: -o json|yaml (the server's objects, a List
 * for several, streamed page by page), -o jsonpath=, -o custom-columns=, -o name, and the server-side Table
 * (the columns kubectl shows, -o wide's too) with --no-headers, --show-labels, -L, --sort-by; several kinds
 * (vm,vmi) and names; every kind of the registry (model/registry.h). No compact store is built. */
#ifndef KVCON_KUBE_KGET_H
#define KVCON_KUBE_KGET_H

#include <stdbool.h>

struct json_object;
struct kind_def;

enum kget_fmt { KGET_TABLE, KGET_WIDE, KGET_JSON, KGET_YAML, KGET_NAME, KGET_JSONPATH, KGET_CUSTOM };

#define KGET_MAX_KINDS 16

struct kget_opts {
	const struct kind_def *kinds[KGET_MAX_KINDS];
	int nkinds;
	char **names;
	int nnames;
	bool pairs;                 /* KIND/NAME arguments: names[i] is of kinds[i] (nkinds == nnames) */
	enum kget_fmt fmt;
	const char *fmt_arg;        /* the template of jsonpath= / custom-columns= */
	const char *selector;       /* -l, joined */
	const char *field_selector; /* --field-selector */
	bool no_headers, show_labels;
	char **label_cols;          /* -L, split at commas */
	int nlabel_cols;
	const char *sort_by;
	long timeout;               /* seconds */
	bool watch;                 /* -w: after the list, every change, each object printed on its own */
	/* Objects of sources without an API server (the engine hosts), printed with the cluster's in every format:
	 * a JSON array of { "source": NAME, "object": API object, "cells": [KubeVirt's table cells, every column] }
	 * of the kind k in ns (NULL: every namespace), named name (NULL: all); NULL when none. A name both
	 * have gets a SOURCE column. */
	struct json_object *(*extra)(void *arg, const struct kind_def *k, const char *ns, const char *name);
	void *extra_arg;
	bool cluster_optional;      /* no kubeconfig is no error: the extra objects only */
	long watch_for;             /* seconds of watching, -1: until interrupted */
	/* The kinds extra serves (NULL: all). Without -w, the others are listed through engine_socket's API. */
	bool (*extra_serves)(const struct kind_def *k);
	/* The engine service's unix socket (NULL: none), named engine_name, a server beside the cluster (or alone,
	 * with cluster_optional): with -w, its objects are listed and watched through its API as a cluster's are;
	 * without, the kinds extra does not serve are listed through it */
	const char *engine_socket;
	const char *engine_name;
	/* `kvcon engine get`: the engine service (engine_socket) is the only server, as a cluster is (its API objects,
	 * tables, selectors, events); the kubeconfig is not read */
	bool engine_only;
	/* The namespace instead of -n/-A (the caller's, passed down: the global options are not rewritten): with
	 * ns_set, ns ("": the context's; NULL: every namespace). */
	bool ns_set;
	const char *ns;
};

/* Runs the listing; prints its own errors ("error: ..."). Returns the exit code. */
int kget_run(const struct kget_opts *o);
/* Checks a -o jsonpath= / custom-columns= / --sort-by argument; NULL when fine, else the message (caller frees). */
char *kget_check(const struct kget_opts *o);

/* The API server's gitVersion (GET /version) for the configured context: 0 with *version (caller frees), 1 when
 * no kubeconfig could be loaded (*err says why), -1 with *err when the server did not answer. */
int kget_server_version(char **version, char **err);

#endif
