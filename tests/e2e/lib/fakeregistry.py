#!/usr/bin/env python3
"""fakeregistry.py - a hostile OCI registry for tests/e2e/engine_oci_limits.sh (plain HTTP, standard library).

    fakeregistry.py ZEROS_MIB

Listens on 127.0.0.1 (a free port, printed as "port N" once listening) and serves, anonymously:

    zeros/disk:v1    one layer: gzip of a tar whose disk/zeros.raw is ZEROS_MIB MiB of zeros (about 1 MiB per
                     GiB: the disk-filling layer of issue 23), at full speed
    slow/manifest:v1 a manifest sent at one byte a second (the registry that holds a pull forever)
    slow/blob:v1     a layer of 64 MiB of zeros (another digest) sent at 100 bytes a second

A TLS ClientHello (kvcon tries HTTPS first on an insecure registry) is answered by closing the connection, as a
plain HTTP server that sees garbage would. Each request is logged on stderr."""
import hashlib
import json
import socket
import struct
import sys
import tarfile
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MIB = 1 << 20


def zeros_layer(mib):
    """gzip(tar(disk/zeros.raw: mib MiB of zeros)) without deflating mib MiB: after a full flush deflate starts
    afresh, so every MiB of zeros compresses to the same bytes, repeated (0.3 s for 1 GiB instead of 4 s)."""
    info = tarfile.TarInfo("disk/zeros.raw")
    info.size = mib * MIB
    head = info.tobuf(format=tarfile.USTAR_FORMAT)
    chunk = bytes(MIB)
    z = zlib.compressobj(9, zlib.DEFLATED, -15)  # raw deflate: the gzip framing is written here
    first = z.compress(head) + z.flush(zlib.Z_FULL_FLUSH)
    block = z.compress(chunk) + z.flush(zlib.Z_FULL_FLUSH)
    tail = z.compress(bytes(1024)) + z.flush()  # the tar's two end blocks
    crc = zlib.crc32(head)
    for _ in range(mib):
        crc = zlib.crc32(chunk, crc)
    crc = zlib.crc32(bytes(1024), crc)
    size = len(head) + mib * MIB + 1024
    return (b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff" + first + block * mib + tail +
            struct.pack("<II", crc, size & 0xFFFFFFFF))


def digest(b):
    return "sha256:" + hashlib.sha256(b).hexdigest()


def manifest_of(layer):
    return json.dumps({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": digest(CONFIG),
                   "size": len(CONFIG)},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": digest(layer),
                    "size": len(layer)}],
    }).encode()


LAYER = zeros_layer(int(sys.argv[1]))
SLOW_LAYER = zeros_layer(64)
CONFIG = json.dumps({"architecture": "amd64", "os": "linux", "rootfs": {"type": "layers", "diff_ids": []}}).encode()
MANIFEST = manifest_of(LAYER)
SLOW_MANIFEST = manifest_of(SLOW_LAYER)
MTYPE = "application/vnd.oci.image.manifest.v1+json"


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def handle(self):
        try:
            if self.request.recv(1, socket.MSG_PEEK) == b"\x16":
                return  # a TLS handshake: not spoken here
        except OSError:
            return
        super().handle()

    def send(self, body, ctype, rate=0):
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Docker-Content-Digest", digest(body))
        self.end_headers()
        try:
            if rate == 0:
                self.wfile.write(body)
                return
            for i in range(0, len(body), rate):  # rate bytes a second
                self.wfile.write(body[i:i + rate])
                self.wfile.flush()
                time.sleep(1)
        except OSError:
            pass  # the client gave up: what the test wants

    def do_GET(self):
        p = self.path
        if p.startswith("/v2/slow/manifest/manifests/"):
            self.send(MANIFEST, MTYPE, rate=1)
        elif p.startswith("/v2/zeros/disk/manifests/"):
            self.send(MANIFEST, MTYPE)
        elif p.startswith("/v2/slow/blob/manifests/"):
            self.send(SLOW_MANIFEST, MTYPE)
        elif p == "/v2/zeros/disk/blobs/" + digest(LAYER):
            self.send(LAYER, "application/octet-stream")
        elif p == "/v2/slow/blob/blobs/" + digest(SLOW_LAYER):
            self.send(SLOW_LAYER, "application/octet-stream", rate=100)
        else:
            body = json.dumps({"errors": [{"code": "NAME_UNKNOWN", "message": "unknown"}]}).encode()
            self.send_response(404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    def log_message(self, fmt, *args):
        sys.stderr.write("fakeregistry: " + (fmt % args) + "\n")


srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
srv.daemon_threads = True
print("port %d layer %d" % (srv.server_address[1], len(LAYER)), flush=True)
srv.serve_forever()
