/* A client of the OCI distribution API for containerDisk images, as a KubeVirt node's container runtime pulls
 * them: references, registries configuration (mirrors, insecure registries, with containers-registries.conf(5)
 * semantics), credentials from the Docker/Podman auth files, anonymous / Basic / Bearer-token auth from the
 * registry's WWW-Authenticate challenge, image indexes resolved to linux/amd64, every manifest and blob verified
 * against its sha256 digest, and the disk file of KubeVirt's containerDisk layout (/disk/NAME.qcow2, .img or .raw)
 * unpacked from the layers into the content-addressed image cache (imgcache.h).
 *
 * Threads: oci_pull blocks (libcurl easy handles, libarchive): the engine runs it on a thread of its own. The
 * parsers are pure and have fuzz harnesses (tests/fuzz/fuzz_oci_*.c). */
#ifndef KVCON_ENGINE_OCI_H
#define KVCON_ENGINE_OCI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/ociref.h"

/* ---- registries configuration ----
 * Lines of kvcon's config file ($XDG_CONFIG_HOME/kvcon/config), "key = value" like the engine's settings:
 *   registry = PREFIX [location=HOST[/PATH]] [insecure=true] [blocked=true] [ca=FILE]
 *   registry.mirror = PREFIX location=HOST[/PATH] [insecure=true] [ca=FILE]
 * PREFIX matches a reference by the longest prefix ending at a host, path or tag boundary (quay.io matches
 * quay.io/x/y:t, not quay.iox/...). Mirrors of a prefix are tried in their order, then the location (the prefix
 * rewritten), as containers' registries.conf [[registry]] / [[registry.mirror]] do. insecure: plain HTTP is
 * allowed and TLS certificates are not verified; ca: a CA bundle for that host. Without a ca= the host's
 * /etc/containers/certs.d/HOST/ca.crt (or $XDG_CONFIG_HOME/containers/certs.d/HOST/ca.crt) is used when present. */
struct oci_endpoint {
	char *host;      /* host[:port] contacted */
	char *repo;      /* repository on that host */
	bool insecure;
	char *ca;        /* CA bundle or NULL */
	bool mirror;
};

struct oci_regconf;
/* Loads $XDG_CONFIG_HOME/kvcon/config (and $KVCON_TEST_REGISTRY_DEADLINES, below). */
struct oci_regconf *oci_regconf_load(char **err);

/* A pull's bounds against a hostile registry, from the same file:
 *   engine.image-max-size = SIZE  the largest disk a layer may unpack to, as its tar header states it (a
 *                                 Kubernetes quantity: 20Gi, 10G; default 64Gi)
 * and the registry deadlines: a registry's token and manifest requests finish within 60 s in all; a blob download
 * is aborted once it stays under 1 KiB/s for 30 s. $KVCON_TEST_REGISTRY_DEADLINES=TOTAL_S,FLOOR_BPS,FLOOR_S
 * exists for tests only (read by oci_regconf_load): it makes them stricter, never looser. */
struct oci_limits {
	uint64_t image_max;   /* bytes */
	unsigned total_ms;    /* token + manifest requests of one registry */
	unsigned floor_bps;   /* a blob slower than this ... */
	unsigned floor_s;     /* ... for this long is aborted */
};
void oci_regconf_free(struct oci_regconf *c);
/* Lowers the disk a pull may unpack to at most max bytes (a DataVolume's claim: apiserver/dvimport.c). */
void oci_regconf_cap(struct oci_regconf *c, uint64_t max);

/* ---- WWW-Authenticate ---- */

struct oci_challenge {
	char *scheme; /* "bearer" or "basic" (lower case) */
	char *realm, *service, *scope;
};

/* ---- manifests ---- */

enum oci_mkind { OCI_M_INDEX, OCI_M_IMAGE };

struct oci_desc {
	char *media_type, *digest;
	int64_t size;
	char *os, *arch, *variant; /* index entries */
};

struct oci_manifest {
	enum oci_mkind kind;
	char *media_type;
	struct oci_desc config;
	struct oci_desc *items; /* index: manifests; image: layers */
	int nitems;
};

/* ---- credentials ---- */

/* ---- the tar layer ---- */

/* What unpacking a disk entry may take: its size as the tar header states it must fit under cap and under the free
 * space of fd's filesystem less a margin (5% of it, at most 1 GiB), else the layer is refused before any byte is
 * written ("needs X, Y free / cap Z"); no more than that size is ever written, and blocks of zeros are not written
 * at all (the disk stays sparse: its allocation is about its data's, whatever the layer decompresses to). */
struct oci_unpack {
	uint64_t cap;                /* engine.image-max-size */
	int64_t avail;               /* free bytes to assume; -1: fstatvfs(fd) less the margin */
	volatile uint64_t *unpacked; /* optional: the entry's bytes unpacked so far (holes included) */
};

/* ---- the pull ---- */

struct oci_progress {
	volatile uint64_t done, total; /* bytes of the blobs being fetched (written by the puller) */
	volatile uint64_t unpacked;    /* bytes of the disk unpacked from them (written by the unpacker) */
	volatile int cancel;           /* set by the caller: the pull stops with an error */
};

/* "pulling image \"REF\": 1.0 MiB of 1.0 MiB fetched, 1.0 GiB unpacked" (no figures before the manifest).
 * Caller frees. */
char *oci_progress_text(const char *ref, const struct oci_progress *p);

struct oci_result {
	char *manifest_digest; /* sha256:... of what the reference names (index or image manifest): the image ID */
	char *disk;            /* path of the disk file in the cache */
	char *endpoint;        /* the host it came from */
	uint64_t fetched;      /* bytes downloaded (0 when the cache had it) */
};

/* Pulls ref into the cache rooted at cache_dir. 0, or -1 with *err
 * (a message naming the registry). Blocking. */
int oci_pull(const char *ref, const struct oci_regconf *conf, const char *cache_dir, struct oci_progress *prog,
	     struct oci_result *res, char **err);
void oci_result_free(struct oci_result *r);

/* ---- test seams: exported for tests/ only, not to be called by kvcon itself (tests/check-exports.sh) ---- */
/* user:password for host (and repository) from one auth file's text ("host/repo" keys match before "host");
 * NULL when none. The engine looks in $REGISTRY_AUTH_FILE, $XDG_RUNTIME_DIR/containers/auth.json,
 * $XDG_CONFIG_HOME/containers/auth.json, $DOCKER_CONFIG/config.json, ~/.docker/config.json (the first wins). */
char *oci_auth_from_json(const char *json, size_t len, const char *host, const char *repo);
void oci_challenge_free(struct oci_challenge *c);
/* Parses the first challenge of a WWW-Authenticate header value (RFC 7235 auth-params, quoted strings with
 * backslash escapes). 0, or -1 when malformed. */
int oci_challenge_parse(const char *hdr, struct oci_challenge *out);
/* A KubeVirt containerDisk entry name: disk/NAME (also ./disk/NAME, /disk/NAME) with NAME a plain file name
 * ending in .qcow2, .img or .raw. */
bool oci_disk_entry(const char *path);
int oci_endpoints(const struct oci_regconf *c, const struct oci_ref *ref, struct oci_endpoint **out);
/* The endpoints to try for ref, in order (mirrors first). Returns their number (0: the registry is blocked). */
void oci_endpoints_free(struct oci_endpoint *e, int n);
/* The index entry for linux/amd64 (NULL when none). */
const struct oci_desc *oci_index_pick(const struct oci_manifest *m);
/* Unpacks the first containerDisk entry of a layer in memory (tar, optionally gzip/zstd compressed) to fd within
 * u's bounds. 1 found, 0 none in this layer, -1 with *err. *name: the entry's file name. */
int oci_layer_extract_mem(const void *data, size_t len, int fd, const struct oci_unpack *u, char **name, char **err);
/* A layer media type kvcon can unpack (tar, tar+gzip, tar+zstd). */
bool oci_layer_type_ok(const char *media_type);
void oci_manifest_free(struct oci_manifest *m);
/* Parses an image manifest or index (OCI or Docker v2 schema 2). content_type: the response's Content-Type,
 * used when the document has no mediaType. 0, or -1 with *err. */
int oci_manifest_parse(const char *json, size_t len, const char *content_type, struct oci_manifest *out,
		       char **err);
const struct oci_limits *oci_regconf_limits(const struct oci_regconf *c);
/* Parses the config text (other keys ignored). NULL text: empty configuration. *err (caller frees) names the
 * first malformed registry line; the configuration is then NULL. */
struct oci_regconf *oci_regconf_parse(const char *text, char **err);

#endif
