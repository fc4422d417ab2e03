/* The engine's image cache: containerDisk disks pulled from registries, stored by content.
 *
 *   ROOT/disks/sha256-<hex>.qcow2|.raw  the disk file unpacked from the layer with that digest (one copy,
 *                                       whatever the number of VMs and references using it)
 *   ROOT/refs/<escaped reference>       "<manifest digest> <layer digest> <ext>": what a reference resolved to
 *   ROOT/tmp/pull-*                     files being written (locked by their writer; never read)
 *   ROOT/lock                           pulls hold it shared, the sweep exclusive
 *
 * Nothing under disks/ or refs/ is written in place: a temporary file is verified (digest), fsync'ed and
 * renamed, so a pull killed at any point leaves only tmp/ files, which the next sweep removes.
 * ROOT is $XDG_STATE_HOME/kvcon/engine-data/imgcache (the engine sets it with imgcache_set_root). */
#ifndef KVCON_ENGINE_IMGCACHE_H
#define KVCON_ENGINE_IMGCACHE_H

#include <stdbool.h>

void imgcache_set_root(const char *root);
const char *imgcache_root(void);

/* The cached disk a reference (as written in a manifest; normalized here) resolved to at its last pull, or
 * NULL. *digest (optional): the image's manifest digest. Caller frees. */
char *imgcache_lookup(const char *ref, char **digest);
/* manifest_image_candidates' hook: imgcache_lookup without the digest. */
char *imgcache_hook(const char *ref);

/* The path of the disk unpacked from a layer, NULL when not cached. Caller frees. */
char *imgcache_disk(const char *root, const char *layer_digest);

/* A new temporary file under ROOT/tmp, locked for this process (fd open read-write). -1 with *err. */
int imgcache_tmp(const char *root, char **path, char **err);
/* Takes the cache's shared lock (pulls) on an open fd; -1 with *err. Released by close(fd). */
int imgcache_lock_shared(const char *root, char **err);

/* fsyncs fd and renames the temporary file tmp to the layer's disk (ext "qcow2" or "raw"). 0, or -1 with *err. */
int imgcache_commit_disk(const char *root, const char *tmp, int fd, const char *layer_digest, const char *ext,
			 char **err);
/* Records ref -> (manifest digest, layer digest, ext) atomically. */
int imgcache_set_ref(const char *root, const char *ref, const char *manifest_digest, const char *layer_digest,
		     const char *ext, char **err);

/* Removes references not in refs (normalized or as written), disks no remaining reference uses and
 * temporary files no live process holds. Skipped (returns 1) while a pull holds the lock. 0 done, -1 error.
 * *removed: how many files went. */
int imgcache_sweep(const char *const *refs, int nrefs, int *removed);

#endif
