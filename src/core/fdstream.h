/* A struct stream over plain file descriptors (a connected socket, a pipe pair, a pty): for the engine's local
 * VNC/console sockets, for tests and benchmarks. Non-blocking on the loop. */
#ifndef KVCON_CONSOLE_FDSTREAM_H
#define KVCON_CONSOLE_FDSTREAM_H

#include "core/stream.h"

/* Takes ownership of rfd and wfd (the same fd for a socket; closed once). Sets them non-blocking. The stream
 * reports OPEN on the next loop pass; EOF on rfd ends it with STREAM_END_REMOTE. */
struct stream *fdstream_new(int rfd, int wfd, const char *name);

#endif
