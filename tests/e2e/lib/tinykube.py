#!/usr/bin/env python3
"""tinykube: a plain-HTTP API server for kvcon's hostile-server tests (issue 14), standard library only.

It serves KubeVirt discovery and one kind of answer for every list of virtualmachines, and records every request
line and its headers (JSON lines in DIR/requests) so a test can tell what kvcon sent and how often.

  tinykube.py DIR MODE [SIZE_MIB]
    record   an empty list (a test checks no request or header arrived)
    huge     a list response of SIZE_MIB MiB of 1 KiB items, streamed
    bigobj   a list whose second item alone is SIZE_MIB MiB
    fail500  HTTP 500 with a Status body for every list

Writes DIR/port once it listens, DIR/pid. Ends on SIGTERM.
"""
import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DIR, MODE = sys.argv[1], sys.argv[2]
SIZE = int(sys.argv[3]) if len(sys.argv) > 3 else 0
LOCK = threading.Lock()


ITEM = (b'{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachine","metadata":{"name":"vm-%d","namespace":"default",'
        b'"uid":"%08x-0000-4000-8000-000000000000","resourceVersion":"1","creationTimestamp":"2026-12-01T00:00:00Z"},'
        b'"spec":{"runStrategy":"Always","padding":"%s"},"status":{"printableStatus":"Running"}}')
PAD = {}


def item(i, pad):
    if pad not in PAD:
        PAD[pad] = b"x" * pad
    return ITEM % (i, i, PAD[pad])


class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def record(self):
        with LOCK, open(os.path.join(DIR, "requests"), "a") as f:
            f.write(json.dumps({"line": self.requestline, "headers": dict(self.headers.items())}) + "\n")

    def send(self, code, body, ctype="application/json"):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        self.record()
        path = self.path.split("?")[0]
        if path == "/apis/kubevirt.io/v1":
            self.send(200, json.dumps({"kind": "APIResourceList", "groupVersion": "kubevirt.io/v1", "resources": [
                {"name": "virtualmachines", "namespaced": True, "kind": "VirtualMachine", "verbs": ["list", "watch"]}]}).encode())
            return
        if not path.endswith("/virtualmachines") or "watch=1" in self.path:
            self.send(404, b'{"kind":"Status","code":404,"message":"not here"}')
            return
        if MODE == "fail500":
            self.send(500, b'{"kind":"Status","apiVersion":"v1","status":"Failure","message":"etcd is down","code":500}')
            return
        head = b'{"kind":"VirtualMachineList","apiVersion":"kubevirt.io/v1","metadata":{"resourceVersion":"7"},"items":['
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

        def chunk(b):
            self.wfile.write(b"%x\r\n%s\r\n" % (len(b), b))

        try:
            chunk(head)
            if MODE == "huge":
                batch, sent, i = [], 0, 0
                pad = 1024 - len(item(0, 0))
                while sent < SIZE << 20:
                    b = item(i, pad)
                    batch.append((b"," if i else b"") + b)
                    sent += len(b) + 1
                    i += 1
                    if len(batch) == 256:
                        chunk(b"".join(batch))
                        batch = []
                if batch:
                    chunk(b"".join(batch))
            elif MODE == "bigobj":
                chunk(item(0, 10) + b"," + item(1, SIZE << 20) + b"," + item(2, 10))
            chunk(b"]}")
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass


srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
srv.daemon_threads = True
with open(os.path.join(DIR, "pid"), "w") as f:
    f.write(str(os.getpid()))
tmpname = os.path.join(DIR, "port.tmp")
with open(tmpname, "w") as f:
    f.write(str(srv.server_address[1]))
os.rename(tmpname, os.path.join(DIR, "port"))
srv.serve_forever()
