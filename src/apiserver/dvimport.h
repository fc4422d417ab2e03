/* A DataVolume's import or clone (CDI's importer and clone pods, in a thread of the engine service):
 *  - http: the download (http/https only, bounded in bytes and seconds), its checksum when given, gz/xz
 *    decompression;
 *  - registry: the containerDisk's disk (/disk/NAME in its layers) through the engine's OCI pull (oci.h: bounded
 *    by engine.image-max-size and the registry deadlines, every blob verified) into the engine's image cache,
 *    the whole pull within the timeout;
 *  - clone: another claim's file;
 * then qemu-img's conversion of the qcow2 or raw image into the claim's file. Started and cancelled on the loop
 * thread; `done` runs there once. */
#ifndef KVCON_APISERVER_DVIMPORT_H
#define KVCON_APISERVER_DVIMPORT_H

#include <stdbool.h>
#include <stdint.h>

struct dvimport;
enum dvimport_kind { DVIMPORT_HTTP, DVIMPORT_REGISTRY, DVIMPORT_CLONE };
typedef void (*dvimport_done_fn)(void *arg, const char *err);

/* Copies from (http: a URL; registry: an image reference; clone: a claim's file, its format by its name) into
 * target (a claim's file, size bytes when done): the download and the conversion go to dot-files beside it (the
 * conversion's created O_EXCL), renamed over it at the end. checksum (http): NULL or "ALG:HEX" (md5, sha1, sha256,
 * sha512). done(arg, NULL) once copied, done(arg, why) once it failed. */
struct dvimport *dvimport_start(enum dvimport_kind kind, const char *from, const char *checksum, const char *target,
				uint64_t size, uint64_t max_bytes, long timeout_s, dvimport_done_fn done, void *arg);
/* How far the download (or pull) is, 0..100 (-1: its size unknown yet). Loop thread; a registry pull past its
 * timeout is cancelled here. */
double dvimport_progress(struct dvimport *im);
/* Stops it: done is not called (its arg is returned, for the caller to free); the thread cleans up and frees
 * the rest. */
void *dvimport_cancel(struct dvimport *im);
/* Whether s is a checksum this importer checks ("sha256:<64 hex>", ...). */
bool dvimport_checksum_ok(const char *s);

#endif
