/* OCI image references as Docker and Podman read them (docker.io/library/fedora:latest), and the digests kvcon
 * can verify: pure parsing, shared by the OCI client (oci.h) and the image cache (imgcache.h) below it. The parser
 * has a fuzz harness (tests/fuzz/fuzz_ociref.c). */
#ifndef KVCON_ENGINE_OCIREF_H
#define KVCON_ENGINE_OCIREF_H

#include <stdbool.h>

/* A normalized image reference: docker.io/library/fedora:latest style. */
struct oci_ref {
	char *registry; /* "quay.io", "127.0.0.1:5000", "docker.io" */
	char *repo;     /* "containerdisks/fedora", "library/busybox" */
	char *tag;      /* NULL when only a digest was given */
	char *digest;   /* "sha256:<64 hex>" or NULL */
};

/* Parses a reference as Docker/Podman do (default registry docker.io, library/ for single names, tag latest
 * when neither tag nor digest). 0, or -1 with *err (caller frees). */
int oci_ref_parse(const char *text, struct oci_ref *out, char **err);
void oci_ref_free(struct oci_ref *r);
/* registry/repo[:tag][@digest]. Caller frees. */
char *oci_ref_string(const struct oci_ref *r);
/* The Kubernetes default pull policy: Always for :latest (or no tag), else IfNotPresent. */
const char *oci_default_policy(const struct oci_ref *r);
/* "sha256:" followed by exactly 64 lower-case hex digits (the only digests kvcon can verify). */
bool oci_digest_valid(const char *d);
/* A registry host ("quay.io", "127.0.0.1:5000", "[::1]:5000") and a repository path ("containerdisks/fedora":
 * components of [a-z0-9] joined by '.', '_', '__' or runs of '-', separated by '/'), as a reference may name them
 * (the registries configuration's locations too). */
bool oci_host_valid(const char *h);
bool oci_repo_valid(const char *r);

#endif
