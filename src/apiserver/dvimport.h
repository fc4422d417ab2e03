/* A DataVolume's http import (CDI's importer, in a thread of the engine service): the download (http/https
 * only, bounded in bytes and seconds), its checksum when given, gz/xz decompression, and qemu-img's conversion of
 * a qcow2 or raw image into the claim's file. Started and cancelled on the loop thread; `done` runs there once. */
#ifndef KVCON_APISERVER_DVIMPORT_H
#define KVCON_APISERVER_DVIMPORT_H

#include <stdbool.h>
#include <stdint.h>

struct dvimport;
typedef void (*dvimport_done_fn)(void *arg, const char *err);

/* Imports url into target (a claim's file, size bytes when done): the download and the conversion go to dot-files
 * beside it, renamed over it at the end. checksum: NULL or "ALG:HEX" (md5, sha1, sha256, sha512). done(arg, NULL)
 * once imported, done(arg, why) once it failed. */
struct dvimport *dvimport_start(const char *url, const char *checksum, const char *target, uint64_t size,
				uint64_t max_bytes, long timeout_s, dvimport_done_fn done, void *arg);
/* How far the download is, 0..100 (-1: its size unknown yet). */
double dvimport_progress(struct dvimport *im);
/* Stops it: done is not called (its arg is returned, for the caller to free); the thread cleans up and frees
 * the rest. */
void *dvimport_cancel(struct dvimport *im);
/* Whether s is a checksum this importer checks ("sha256:<64 hex>", ...). */
bool dvimport_checksum_ok(const char *s);

#endif
