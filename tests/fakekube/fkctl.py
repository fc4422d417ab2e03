#!/usr/bin/env python3
"""fkctl: a tiny client for fakekube, for shell tests (standard library only).

    fkctl.py DIR wait [SECONDS]            wait for DIR/ready
    fkctl.py DIR get PATH                  GET PATH, print the body (exit 1 on HTTP >= 400)
    fkctl.py DIR put|post|delete PATH [JSON]
    fkctl.py DIR state [KINDS]             GET /fake/state[?kinds=KINDS]
    fkctl.py DIR action NS NAME ACTION [JSON]   PUT subresource (start, stop, restart,
                                           migrate on the VM; pause, unpause on the VMI)
    fkctl.py DIR names KIND                print "ns/name" of every object of KIND in /fake/state
    fkctl.py DIR settle [SECONDS]          wait until no lifecycle transition is pending

Uses DIR/url, DIR/ca.crt and DIR/token (the admin token); FKCTL_TOKEN overrides it.
"""

import http.client
import json
import os
import ssl
import sys
import time
import urllib.parse

VMI_ACTIONS = ("pause", "unpause", "softreboot")


def read(d, name):
    with open(os.path.join(d, name)) as f:
        return f.read().strip()


def request(d, method, path, body=None, token=None, timeout=60):
    url = urllib.parse.urlsplit(read(d, "url"))
    if url.scheme == "https":
        ctx = ssl.create_default_context(cafile=os.path.join(d, "ca.crt"))
        conn = http.client.HTTPSConnection(url.hostname, url.port, context=ctx, timeout=timeout)
    else:
        conn = http.client.HTTPConnection(url.hostname, url.port, timeout=timeout)
    tok = token if token is not None else os.environ.get("FKCTL_TOKEN") or read(d, "token")
    headers = {"Accept": "application/json"}
    if tok:
        headers["Authorization"] = "Bearer " + tok
    data = None
    if body is not None:
        data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    conn.request(method, path, body=data, headers=headers)
    resp = conn.getresponse()
    out = resp.read()
    conn.close()
    return resp.status, out


def main(argv):
    if len(argv) < 3:
        sys.stderr.write(__doc__)
        return 2
    d, cmd, args = argv[1], argv[2], argv[3:]
    if cmd == "wait":
        deadline = time.monotonic() + float(args[0] if args else 60)
        while time.monotonic() < deadline:
            if os.path.exists(os.path.join(d, "ready")):
                return 0
            time.sleep(0.05)
        sys.stderr.write("fkctl: %s/ready did not appear\n" % d)
        return 1
    if cmd == "settle":
        code, out = request(d, "POST", "/fake/settle", {"timeout": float(args[0] if args else 30)})
    elif cmd == "state":
        code, out = request(d, "GET", "/fake/state" + ("?kinds=" + args[0] if args else ""))
    elif cmd == "names":
        code, out = request(d, "GET", "/fake/state?kinds=" + args[0])
        if code < 400:
            for o in json.loads(out)[args[0]]:
                md = o["metadata"]
                print("%s/%s" % (md.get("namespace", ""), md["name"]))
            return 0
    elif cmd == "action":
        ns, name, action = args[:3]
        plural = "virtualmachineinstances" if action in VMI_ACTIONS else "virtualmachines"
        path = "/apis/subresources.kubevirt.io/v1/namespaces/%s/%s/%s/%s" % (
            urllib.parse.quote(ns), plural, urllib.parse.quote(name, safe=""), action)
        code, out = request(d, "PUT", path, args[3] if len(args) > 3 else "{}")
    elif cmd in ("get", "put", "post", "delete", "patch"):
        code, out = request(d, cmd.upper(), args[0], args[1] if len(args) > 1 else None)
    else:
        sys.stderr.write(__doc__)
        return 2
    sys.stdout.buffer.write(out)
    if out and not out.endswith(b"\n"):
        sys.stdout.buffer.write(b"\n")
    if code >= 400:
        sys.stderr.write("fkctl: HTTP %d\n" % code)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
