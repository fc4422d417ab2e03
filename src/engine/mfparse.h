/* What src/engine/manifest.c (the document, metadata, domain, networks, the template) and mfvolume.c (disks,
 * volumes, accessCredentials) share: the walk's context and its checks. Every check records the first error,
 * "field.path: reason", in v->err and returns false; nothing is dropped silently. Private to these two files. */
#ifndef KVCON_ENGINE_MFPARSE_H
#define KVCON_ENGINE_MFPARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/ydoc.h"

struct mf_disk;
struct mf_volume;
struct mf_cred;

struct vctx {
	char *err;            /* first error wins */
	yaml_document_t *doc; /* the manifest (core/ydoc.h) */
};

/* A key a map may carry: handled (reason NULL) or refused with reason. */
struct key_rule {
	const char *key;
	const char *reason;
};

__attribute__((format(printf, 3, 4))) bool mfp_fail(struct vctx *v, const char *path, const char *fmt, ...);
__attribute__((format(printf, 4, 5))) bool mfp_invalid(struct vctx *v, const char *path, const char *value,
						       const char *fmt, ...);
yaml_node_t *mfp_get(struct vctx *v, const yaml_node_t *map, const char *key);
/* path.key (caller frees) */
char *mfp_sub(const char *path, const char *key);
/* Refuses keys of map that are not in rules, and keys whose rule has a reason. */
bool mfp_check_keys(struct vctx *v, yaml_node_t *map, const char *path, const struct key_rule *rules);
bool mfp_want_map(struct vctx *v, yaml_node_t *n, const char *path);
const char *mfp_scalar(struct vctx *v, yaml_node_t *n, const char *path);
bool mfp_get_str(struct vctx *v, yaml_node_t *map, const char *key, const char *path, char **out);
bool mfp_get_bool(struct vctx *v, yaml_node_t *map, const char *key, const char *path, bool *out);
bool mfp_get_int(struct vctx *v, yaml_node_t *map, const char *key, const char *path, long lo, long hi, int *out);
/* a Kubernetes quantity in bytes (*text: as written, caller frees; NULL: not wanted) */
bool mfp_get_qty(struct vctx *v, yaml_node_t *map, const char *key, const char *path, uint64_t *out, char **text);
bool mfp_check_label(struct vctx *v, const char *path, const char *key, const char *s);
bool mfp_check_subdomain(struct vctx *v, const char *path, const char *key, const char *s);
bool mfp_check_charset(struct vctx *v, const char *path, const char *key, const char *s, const char *set,
		       size_t max, const char *what);
bool mfp_check_text(struct vctx *v, const char *path, const char *key, const char *s);
bool mfp_check_path(struct vctx *v, const char *path, const char *key, const char *s);

/* mfvolume.c */
bool mfp_parse_disk(struct vctx *v, yaml_node_t *n, const char *path, struct mf_disk *d);
bool mfp_parse_volume(struct vctx *v, yaml_node_t *n, const char *path, struct mf_volume *vol);
bool mfp_parse_cred(struct vctx *v, yaml_node_t *n, const char *path, struct mf_cred *c);

#endif
