#!/usr/bin/env python3
"""fakekube: a fake Kubernetes API server with KubeVirt, for kvcon's tests.

Standard library only (plus the `openssl` CLI for the certificates). See
README.md next to this file for options, scenarios and the /fake/ control API.

    python3 tests/fakekube/fakekube.py --dir DIR [--port 0] [--vms N] ...

writes DIR/port, DIR/ca.crt, DIR/token, DIR/ns-token, DIR/kubeconfig and, once
listening, DIR/ready. SIGTERM or SIGINT exits cleanly.
"""

import argparse
import base64
import os
import secrets
import signal
import ssl
import subprocess
import sys
import time
import zlib
from http.server import ThreadingHTTPServer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import api  # noqa: E402
import kubevirt  # noqa: E402
from store import Store  # noqa: E402


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256
    allow_reuse_address = True
    ssl_context = None

    def handle_error(self, request, client_address):
        # clients that fail the TLS handshake (wrong CA, plain HTTP) or vanish are
        # part of the tests; one line, not a traceback
        exc = sys.exc_info()[1]
        if isinstance(exc, (ssl.SSLError, ConnectionError, TimeoutError, OSError)):
            print("fakekube: %s: %s" % (client_address[0], exc), file=sys.stderr, flush=True)
            return
        super().handle_error(request, client_address)


def openssl(*args, cwd):
    subprocess.run(["openssl"] + list(args), cwd=cwd, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def make_certs(d):
    """CA, server cert (SAN 127.0.0.1, localhost) and an admin client cert."""
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    openssl("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.crt", "-days", "3650",
            "-subj", "/CN=fakekube-ca", "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign", cwd=d)
    with open(os.path.join(d, "server.ext"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n"
                "keyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n")
    with open(os.path.join(d, "client.ext"), "w") as f:
        f.write("basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n"
                "extendedKeyUsage=clientAuth\n")
    for who, subj in (("server", "/CN=fakekube"), ("client", "/O=system:masters/CN=fakekube-admin")):
        openssl("req", *ec, "-keyout", who + ".key", "-out", who + ".csr", "-subj", subj, cwd=d)
        openssl("x509", "-req", "-in", who + ".csr", "-CA", "ca.crt", "-CAkey", "ca.key",
                "-CAcreateserial", "-out", who + ".crt", "-days", "3650", "-extfile", who + ".ext", cwd=d)


def b64file(path):
    with open(path, "rb") as f:
        return base64.b64encode(f.read()).decode()


def write_atomic(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def kubeconfig_parts(c, d, url, token, ns_token, ns_name):
    """(clusters, users, contexts) YAML list items for one fake cluster named c."""
    tls = url.startswith("https")
    cluster = "- name: %s\n  cluster:\n    server: %s\n" % (c, url)
    if tls:
        cluster += "    certificate-authority-data: %s\n" % b64file(os.path.join(d, "ca.crt"))
    users = ("- name: %s-admin\n  user:\n    token: %s\n" % (c, token) +
             "- name: %s-ns\n  user:\n    token: %s\n" % (c, ns_token))
    contexts = ("- name: %s\n  context:\n    cluster: %s\n    user: %s-admin\n" % (c, c, c) +
                "- name: %s-ns\n  context:\n    cluster: %s\n    user: %s-ns\n    namespace: %s\n"
                % (c, c, c, ns_name))
    if tls:
        users += ("- name: %s-cert\n  user:\n    client-certificate-data: %s\n    client-key-data: %s\n"
                  % (c, b64file(os.path.join(d, "client.crt")), b64file(os.path.join(d, "client.key"))))
        contexts += "- name: %s-cert\n  context:\n    cluster: %s\n    user: %s-cert\n" % (c, c, c)
    return cluster, users, contexts


def kubeconfig(current, parts):
    return ("apiVersion: v1\nkind: Config\nclusters:\n%susers:\n%scontexts:\n%scurrent-context: %s\n"
            "preferences: {}\n" % ("".join(p[0] for p in parts), "".join(p[1] for p in parts),
                                    "".join(p[2] for p in parts), current))


CHILD_DROP = {"--dir": 1, "--port": 1, "--contexts": 1, "--context-name": 1, "--token": 1, "--ns-token": 1}


def start_children(opts, argv):
    """--contexts N: N-1 more fake clusters, each its own fakekube process in DIR/clusterI
    with context name NAME+I; their contexts are merged into DIR/kubeconfig."""
    rest, skip = [], 0
    for arg in argv:
        if skip:
            skip -= 1
            continue
        key = arg.split("=", 1)[0]
        if key in CHILD_DROP:
            skip = 0 if "=" in arg else CHILD_DROP[key]
            continue
        rest.append(arg)
    children = []
    for i in range(2, opts.contexts + 1):
        d = os.path.join(opts.dir, "cluster%d" % i)
        log = open(os.path.join(opts.dir, "cluster%d.log" % i), "w")
        p = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--dir", d,
                              "--context-name", "%s%d" % (opts.context_name, i)] + rest,
                             stdout=log, stderr=log)
        children.append((p, d, "%s%d" % (opts.context_name, i)))
    return children


def wait_children(children):
    deadline = time.monotonic() + 600
    for p, d, _ in children:
        while not os.path.exists(os.path.join(d, "ready")):
            if p.poll() is not None or time.monotonic() > deadline:
                stop_children(children)
                sys.exit("fakekube: cluster in %s did not start (see its log next to it)" % d)
            time.sleep(0.05)


def stop_children(children):
    for p, _, _ in children:
        if p.poll() is None:
            p.terminate()
    for p, _, _ in children:
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()


def read_file(d, name):
    with open(os.path.join(d, name)) as f:
        return f.read().strip()


def parse_args(argv):
    p = argparse.ArgumentParser(description="fake Kubernetes API server with KubeVirt")
    p.add_argument("--dir", required=True, help="state directory (port, ca.crt, kubeconfig, ready)")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0, help="0 = any free port (written to DIR/port)")
    p.add_argument("--insecure-http", action="store_true", help="plain HTTP instead of HTTPS")
    p.add_argument("--token", default=None, help="admin bearer token (default: random, in DIR/token)")
    p.add_argument("--ns-token", action="append", metavar="TOKEN=NAMESPACE",
                   help="a token allowed only in NAMESPACE (repeatable; default: random=ns-00)")
    p.add_argument("--anonymous", action="store_true", help="accept requests without credentials")
    p.add_argument("--context-name", default="fake", help="kubeconfig context/cluster name prefix")
    p.add_argument("--contexts", type=int, default=1,
                   help="serve N fake clusters (the others in DIR/clusterI, contexts NAME2..), one kubeconfig")
    p.add_argument("--vms", type=int, default=10, help="VMs to generate")
    p.add_argument("--namespaces", type=int, default=2, help="namespaces ns-00.. to spread them over")
    p.add_argument("--scenario", action="append", default=[],
                   help="scenario(s) to add, repeatable or comma-separated: " + ", ".join(kubevirt.SCENARIOS))
    p.add_argument("--scenario-namespace", default="default")
    p.add_argument("--no-kubevirt", action="store_true", help="do not serve kubevirt.io")
    p.add_argument("--step", type=float, default=0.3, help="seconds per lifecycle phase")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--churn", type=float, default=0.0, help="churn events per second")
    p.add_argument("--fault-rate", type=float, default=0.0, help="probability per request / watch event")
    p.add_argument("--fault-kinds", default="drop,410,429,500")
    p.add_argument("--history", type=int, default=2000, help="watch events kept per resource")
    p.add_argument("--bookmark-interval", type=float, default=2.0)
    p.add_argument("--watch-timeout", type=float, default=1800.0,
                   help="watch length when the client sends no timeoutSeconds")
    p.add_argument("--event-cap", type=int, default=50000, help="oldest events deleted beyond this")
    p.add_argument("--latency", type=float, default=0.0,
                   help="seconds added before every API response (not /fake/, not watch events)")
    p.add_argument("--verbose", action="store_true", help="log every request to stderr")
    return p.parse_args(argv)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    opts = parse_args(argv)
    os.makedirs(opts.dir, exist_ok=True)
    for f in ("ready", "port"):
        try:
            os.unlink(os.path.join(opts.dir, f))
        except FileNotFoundError:
            pass
    opts.token = opts.token or "fk-admin-" + secrets.token_hex(12)
    if not opts.ns_token:
        opts.ns_token = ["fk-ns-%s=%s" % (secrets.token_hex(12), "ns-00")]
    ns_tok, _, ns_name = opts.ns_token[0].partition("=")
    scen = [s for arg in opts.scenario for s in arg.split(",") if s]
    for s in scen:
        if s not in kubevirt.SCENARIOS:
            sys.exit("fakekube: unknown scenario %r (known: %s)" % (s, ", ".join(kubevirt.SCENARIOS)))

    def on_signal(signum, frame):
        raise SystemExit(0)
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    t0 = time.monotonic()
    # the other clusters generate their objects while this one does (2 cores)
    children = start_children(opts, argv) if opts.contexts > 1 else []
    try:
        return serve(opts, ns_tok, ns_name, scen, children, t0)
    finally:
        stop_children(children)


def serve(opts, ns_tok, ns_name, scen, children, t0):
    store = Store(history=opts.history)
    # a second cluster (--context-name) gets its own UIDs for the same --seed
    seed = opts.seed if opts.context_name == "fake" else opts.seed ^ zlib.crc32(opts.context_name.encode())
    cluster = kubevirt.Cluster(store, step=opts.step, seed=seed, scen_ns=opts.scenario_namespace,
                               kubevirt=not opts.no_kubevirt)
    cluster.event_cap = opts.event_cap
    cluster.base_objects()
    cluster.ensure_namespace(ns_name)
    if not opts.no_kubevirt:
        cluster.generate(opts.vms, opts.namespaces)
    app = api.App(store, cluster, opts)
    handler = type("H", (api.Handler,), {"app": app})
    srv = Server((opts.host, opts.port), handler)
    app.port = srv.server_address[1]
    if not opts.insecure_http:
        make_certs(opts.dir)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(os.path.join(opts.dir, "server.crt"), os.path.join(opts.dir, "server.key"))
        ctx.load_verify_locations(os.path.join(opts.dir, "ca.crt"))
        ctx.verify_mode = ssl.CERT_OPTIONAL
        ctx.set_alpn_protocols(["http/1.1"])
        srv.ssl_context = ctx
    scheme = "http" if opts.insecure_http else "https"
    url = "%s://127.0.0.1:%d" % (scheme, app.port)
    d = opts.dir
    write_atomic(os.path.join(d, "token"), opts.token + "\n")
    write_atomic(os.path.join(d, "ns-token"), ns_tok + "\n")
    write_atomic(os.path.join(d, "url"), url + "\n")
    wait_children(children)
    parts = [kubeconfig_parts(opts.context_name, d, url, opts.token, ns_tok, ns_name)]
    for _, cd, cname in children:
        parts.append(kubeconfig_parts(cname, cd, read_file(cd, "url"), read_file(cd, "token"),
                                      read_file(cd, "ns-token"), "ns-00"))
    write_atomic(os.path.join(d, "kubeconfig"), kubeconfig(opts.context_name, parts))
    write_atomic(os.path.join(d, "pid"), "%d\n" % os.getpid())
    write_atomic(os.path.join(d, "port"), "%d\n" % app.port)
    # serialise everything before DIR/ready: the first list requests must not
    # compete with a background serialiser (first-page latency benchmarks)
    store.warm()
    cluster.start_threads()
    for s in scen:
        cluster.add_scenario(s)
    if opts.churn:
        cluster.set_churn(opts.churn)
    if opts.fault_rate:
        app.fault_rate = opts.fault_rate

    write_atomic(os.path.join(d, "ready"), "%s %.3f\n" % (url, time.monotonic() - t0))
    print("fakekube: serving %s (%d objects, startup %.2fs)" %
          (url, sum(len(v) for v in store.objs.values()), time.monotonic() - t0), file=sys.stderr, flush=True)
    try:
        srv.serve_forever(poll_interval=0.2)
    finally:
        try:
            os.unlink(os.path.join(d, "ready"))
        except FileNotFoundError:
            pass
        cluster.stopping = True
        srv.socket.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
