"""HTTP side of the fake apiserver: routing, auth, RBAC, discovery, list/get/
watch, Table output, writes, KubeVirt subresources, fault injection, and the
/fake/ control API used by tests.
"""

import base64
import binascii
import json
import os
import socket
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler

from store import ApiError, RESOURCES, Filter, Store, dumps
import logs
import tables
from kubevirt import KV_VERSION

GROUPS = {
    "kubevirt.io": ["v1"],
    "subresources.kubevirt.io": ["v1", "v1alpha3"],
    "cdi.kubevirt.io": ["v1beta1"],
}
KUBEVIRT_PLURALS = ("virtualmachines", "virtualmachineinstances", "virtualmachineinstancemigrations",
                    "virtualmachineinstancereplicasets")
CORE_PLURALS = ("pods", "secrets", "configmaps", "events", "namespaces", "nodes", "persistentvolumeclaims", "persistentvolumes")
CDI_PLURALS = ("datavolumes",)
SUBRESOURCES = {
    "virtualmachines": ["start", "stop", "restart", "migrate", "portforward"],
    "virtualmachineinstances": ["pause", "unpause", "softreboot", "console", "vnc", "guestosinfo", "interfacelist",
                                "filesystemlist", "userlist", "portforward"],
}
MUTATING = ("POST", "PUT", "PATCH", "DELETE")


class Route:
    __slots__ = ("kind", "group", "version", "plural", "ns", "name", "sub", "pattern")

    def __init__(self, kind, **kw):
        self.kind = kind  # discovery | resource | subresource | fake | other
        self.group = kw.get("group", "")
        self.version = kw.get("version", "")
        self.plural = kw.get("plural")
        self.ns = kw.get("ns")
        self.name = kw.get("name")
        self.sub = kw.get("sub")
        self.pattern = kw.get("pattern", "")


def parse_route(path, kubevirt=True):
    segs = [urllib.parse.unquote(s) for s in path.strip("/").split("/")] if path.strip("/") else []
    if not segs or segs[0] in ("version", "healthz", "livez", "readyz") and len(segs) == 1:
        return Route("discovery", pattern="/" + "/".join(segs))
    if segs[0] == "fake":
        return Route("fake", name="/".join(segs[1:]), pattern="/" + "/".join(segs))
    if segs[0] == "api":
        if len(segs) == 1:
            return Route("discovery", pattern="/api")
        if segs[1] != "v1":
            return Route("other", pattern=path)
        group, version, rest, allowed = "", "v1", segs[2:], CORE_PLURALS
        base = "/api/v1"
    elif segs[0] == "apis":
        if len(segs) == 1:
            return Route("discovery", pattern="/apis")
        group = segs[1]
        if group not in GROUPS or not kubevirt:
            return Route("other", pattern=path)
        if len(segs) == 2:
            return Route("discovery", group=group, pattern="/apis/" + group)
        version = segs[2]
        if version not in GROUPS[group]:
            return Route("other", pattern=path)
        rest = segs[3:]
        allowed = (KUBEVIRT_PLURALS if group == "kubevirt.io" else CDI_PLURALS if group == "cdi.kubevirt.io"
                   else tuple(SUBRESOURCES))
        base = "/apis/%s/%s" % (group, version)
    else:
        return Route("other", pattern=path)
    if not rest:
        return Route("discovery", group=group, version=version, pattern=base)
    if group == "subresources.kubevirt.io" and rest == ["version"]:
        # virt-api's own version endpoint (what `virtctl version` reads)
        return Route("discovery", group=group, version=version, sub="version", pattern=base + "/version")
    ns = None
    pat = base
    if rest[0] == "namespaces" and len(rest) >= 3 and rest[2] in allowed:
        ns = rest[1]
        rest = rest[2:]
        pat += "/namespaces/{ns}"
    plural = rest[0]
    if plural not in allowed:
        return Route("other", pattern=path)
    pat += "/" + plural
    name = rest[1] if len(rest) > 1 else None
    if name is not None:
        pat += "/{name}"
    sub = "/".join(rest[2:]) if len(rest) > 2 else None
    if sub:
        pat += "/" + sub
    if group == "subresources.kubevirt.io":
        if ns is None or name is None or sub is None:
            return Route("other", pattern=path)
        return Route("subresource", group=group, version=version, plural=plural, ns=ns, name=name,
                     sub=sub, pattern=pat)
    return Route("resource", group=group, version=version, plural=plural, ns=ns, name=name, sub=sub,
                 pattern=pat)


class User:
    def __init__(self, name, namespace=None, admin=False):
        self.name = name
        self.namespace = namespace
        self.admin = admin


class App:
    """Everything the handlers share."""

    def __init__(self, store, cluster, opts):
        self.store = store
        self.cluster = cluster
        self.opts = opts
        self.token = opts.token
        self.ns_tokens = {}
        for spec in opts.ns_token or []:
            tok, _, ns = spec.partition("=")
            self.ns_tokens[tok] = ns
        self.client_users = {}  # client-cert CN -> User
        self.kubevirt = not opts.no_kubevirt
        self.bookmark_interval = opts.bookmark_interval
        self.fault_rate = opts.fault_rate
        self.fault_kinds = set(opts.fault_kinds.split(","))
        self.fault_rng = __import__("random").Random(opts.seed + 2)
        self.mu = threading.Lock()
        self.requests = {}
        self.mutating = {}
        self.mutating_log = []
        self.total = 0
        self.faults_fired = {}
        self.watch_gen = 0  # bumped to end or expire every open watch
        self.watch_expire_gen = 0
        self.watches = 0
        self.backends = {}  # (ns, name, kind) -> {"unix": path} | {"tcp": "host:port"}
        self.websockets = 0
        self.displays = {}  # (ns, name) -> rfb.Display of the built-in VNC server
        self.ws_gen = 0  # bumped to end every open console/VNC bridge
        self.ws_drop_close = False
        self.port = 0
        self.latency = opts.latency
        self.logs = logs.Logs(store)

    def count(self, method, pattern):
        key = method + " " + pattern
        with self.mu:
            self.total += 1
            self.requests[key] = self.requests.get(key, 0) + 1
            if method in MUTATING and not pattern.startswith("/fake"):
                self.mutating[key] = self.mutating.get(key, 0) + 1

    def fault(self, kind):
        """Deterministic (given the seed) decision to inject a fault of this kind."""
        if self.fault_rate <= 0 or kind not in self.fault_kinds:
            return False
        with self.mu:
            hit = self.fault_rng.random() < self.fault_rate
            if hit:
                self.faults_fired[kind] = self.faults_fired.get(kind, 0) + 1
            return hit


def forbidden(user, verb, res, ns=None, name=None):
    where = ' in the namespace "%s"' % ns if ns else " at the cluster scope"
    return ApiError(403, "Forbidden",
                    '%s%s is forbidden: User "%s" cannot %s resource "%s" in API group "%s"%s'
                    % (res.gr, ' "%s"' % name if name else "", user.name, verb, res.plural,
                       res.group, where),
                    {"name": name or "", "group": res.group, "kind": res.plural})


def human_status_not_found(res, name):
    return ApiError(404, "NotFound", '%s "%s" not found' % (res.gr, name),
                    {"name": name, "group": res.group, "kind": res.plural})


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fakekube/1"
    app = None  # set by the server factory

    def log_message(self, fmt, *args):
        if self.app.opts.verbose:
            super().log_message(fmt, *args)

    # ------------------------------------------------------------ plumbing

    def setup(self):
        # headers and body go out in one write, but a watch writes small chunks:
        # without TCP_NODELAY, Nagle + delayed ACK stall each of them ~40 ms
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        ctx = getattr(self.server, "ssl_context", None)
        if ctx is not None:
            self.request.settimeout(10)
            first = b""
            try:
                first = self.request.recv(1, socket.MSG_PEEK)
            except OSError:
                pass
            if first and first != b"\x16":
                # plain HTTP on the TLS port: answer like kube-apiserver (Go's net/http) does
                try:
                    # drain the request first: closing with unread bytes would send a RST
                    self.request.settimeout(0.2)
                    self.request.recv(65536)
                    self.request.sendall(b"HTTP/1.0 400 Bad Request\r\n\r\n"
                                         b"Client sent an HTTP request to an HTTPS server.\n")
                    self.request.shutdown(socket.SHUT_WR)
                except OSError:
                    pass
                finally:
                    self.request.close()
                raise ConnectionAbortedError("plain HTTP request on the HTTPS port")
            try:
                self.request = ctx.wrap_socket(self.request, server_side=True)
            except Exception:
                self.request.close()
                raise
            self.request.settimeout(None)
        super().setup()

    def send_body(self, code, body, ctype="application/json", headers=None):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-cache, private")
        self.send_header("Audit-Id", "fakekube")
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        # one write for headers and body (end_headers would flush the headers alone)
        self._headers_buffer.append(b"\r\n" + (body if self.command != "HEAD" else b""))
        self.flush_headers()

    def send_error_status(self, err):
        self.send_body(err.code, dumps(err.status()), headers=err.headers)

    def read_body(self):
        n = int(self.headers.get("Content-Length") or 0)
        if n:
            return self.rfile.read(n)
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            out = b""
            while True:
                ln = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if ln == 0:
                    self.rfile.readline()
                    return out
                out += self.rfile.read(ln)
                self.rfile.readline()
        return b""

    def json_body(self):
        raw = self.body
        if not raw.strip():
            return {}
        try:
            return json.loads(raw)
        except ValueError as e:
            raise ApiError(400, "BadRequest", "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml (%s)" % e)

    def authenticate(self):
        app = self.app
        h = self.headers.get("Authorization", "")
        if h.startswith("Bearer "):
            tok = h[7:].strip()
            if tok == app.token:
                return User("kubernetes-admin", admin=True)
            if tok in app.ns_tokens:
                ns = app.ns_tokens[tok]
                return User("system:serviceaccount:%s:kvcon-viewer" % ns, namespace=ns)
            return None
        try:
            cert = self.request.getpeercert() if hasattr(self.request, "getpeercert") else None
        except Exception:
            cert = None
        if cert:
            for rdn in cert.get("subject", ()):
                for k, v in rdn:
                    if k == "commonName":
                        return User(v, admin=True)
        if app.opts.anonymous:
            return User("system:anonymous", admin=True)
        return None

    # ------------------------------------------------------------ dispatch

    def do_GET(self):
        self.dispatch("GET")

    def do_HEAD(self):
        self.dispatch("GET")

    def do_POST(self):
        self.dispatch("POST")

    def do_PUT(self):
        self.dispatch("PUT")

    def do_PATCH(self):
        self.dispatch("PATCH")

    def do_DELETE(self):
        self.dispatch("DELETE")

    def dispatch(self, method):
        app = self.app
        url = urllib.parse.urlsplit(self.path)
        self.params = {k: v[-1] for k, v in urllib.parse.parse_qs(url.query, keep_blank_values=True).items()}
        route = parse_route(url.path, app.kubevirt)
        app.count(method, route.pattern)
        # always consume the body (DELETE carries DeleteOptions): on a kept-alive
        # connection leftover bytes would be read as the next request
        self.body = self.read_body()
        try:
            user = self.authenticate()
            if user is None:
                raise ApiError(401, "Unauthorized", "Unauthorized")
            if app.latency > 0 and route.kind != "fake":
                time.sleep(app.latency)
            if route.kind == "fake":
                if not user.admin:
                    raise ApiError(403, "Forbidden", "the fake control API needs the admin token")
                return self.fake_api(method, route.name)
            if route.kind == "discovery":
                return self.discovery(route, url.path)
            if url.path.startswith("/openapi/v3"):
                return self.openapi_v3(url.path)
            if route.kind == "other":
                raise ApiError(404, "NotFound", "the server could not find the requested resource")
            if route.kind == "subresource":
                return self.subresource(method, route, user)
            return self.resource(method, route, user)
        except ApiError as e:
            self.send_error_status(e)
        except (BrokenPipeError, ConnectionResetError, socket.timeout):
            self.close_connection = True
        except Exception as e:  # report as the apiserver would, and keep serving
            import traceback
            traceback.print_exc()
            try:
                self.send_error_status(ApiError(500, "InternalError",
                                                "Internal error occurred: %s" % e))
            except Exception:
                self.close_connection = True

    # ------------------------------------------------------------ discovery

    def discovery(self, route, path):
        app = self.app
        p = path.rstrip("/")
        if p in ("", "/"):
            paths = ["/api", "/api/v1", "/apis", "/healthz", "/livez", "/readyz", "/version"]
            if app.kubevirt:
                for g, vs in GROUPS.items():
                    paths.append("/apis/" + g)
                    paths += ["/apis/%s/%s" % (g, v) for v in vs]
            return self.send_body(200, dumps({"paths": sorted(paths)}))
        if p in ("/healthz", "/livez", "/readyz"):
            return self.send_body(200, b"ok", "text/plain; charset=utf-8")
        if p == "/version":
            return self.send_body(200, dumps({
                "major": "1", "minor": "32", "gitVersion": "v1.32.4-fakekube",
                "gitCommit": "0" * 40, "gitTreeState": "clean",
                "buildDate": "2026-01-01T00:00:00Z", "goVersion": "go1.23.8",
                "compiler": "gc", "platform": "linux/amd64"}))
        if p == "/api":
            return self.send_body(200, dumps({
                "kind": "APIVersions", "versions": ["v1"],
                "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0",
                                                "serverAddress": "127.0.0.1:%d" % app.port}]}))
        if p == "/apis":
            groups = []
            if app.kubevirt:
                for g, vs in GROUPS.items():
                    gv = [{"groupVersion": "%s/%s" % (g, v), "version": v} for v in vs]
                    groups.append({"name": g, "versions": gv, "preferredVersion": gv[0]})
            return self.send_body(200, dumps({"kind": "APIGroupList", "apiVersion": "v1",
                                              "groups": groups}))
        if route.sub == "version":
            return self.send_body(200, dumps({
                "gitVersion": KV_VERSION, "gitCommit": "0" * 40, "gitTreeState": "clean",
                "buildDate": "2026-01-01T00:00:00Z", "goVersion": "go1.23.8", "compiler": "gc",
                "platform": "linux/amd64"}))
        if route.group and not route.version:
            vs = GROUPS[route.group]
            gv = [{"groupVersion": "%s/%s" % (route.group, v), "version": v} for v in vs]
            return self.send_body(200, dumps({"kind": "APIGroup", "apiVersion": "v1",
                                              "name": route.group, "versions": gv,
                                              "preferredVersion": gv[0]}))
        return self.send_body(200, dumps(resource_list(route.group, route.version)))

    # ------------------------------------------------------------ OpenAPI v3

    def openapi_v3(self, path):
        """Just enough OpenAPI v3 for kubectl create/apply: every write operation
        declares the fieldValidation parameter (kubectl then validates on the
        server side, which accepts anything) and every kind has a schema that
        preserves unknown fields."""
        gvs = [("", "v1")] + ([(g, v) for g, vs in GROUPS.items() if g in ("kubevirt.io", "cdi.kubevirt.io") for v in vs]
                              if self.app.kubevirt else [])
        if path.rstrip("/") == "/openapi/v3":
            paths = {}
            for g, v in gvs:
                key = "api/v1" if not g else "apis/%s/%s" % (g, v)
                paths[key] = {"serverRelativeURL": "/openapi/v3/%s?hash=fakekube" % key}
            return self.send_body(200, dumps({"paths": paths}))
        rel = path[len("/openapi/v3/"):].strip("/")
        for g, v in gvs:
            if rel == ("api/v1" if not g else "apis/%s/%s" % (g, v)):
                return self.send_body(200, dumps(openapi_doc(g, v)))
        raise ApiError(404, "NotFound", "the server could not find the requested resource")

    # ------------------------------------------------------------ authorization

    def authorize(self, user, verb, res, ns, name=None, sub=None):
        if user.admin:
            return
        if res.namespaced and ns and ns == user.namespace:
            return
        if res.plural == "namespaces" and name == user.namespace and verb == "get":
            return
        if sub:
            r = RESOURCESUB(res, sub)
            raise forbidden(user, verb, r, ns, name)
        raise forbidden(user, verb, res, ns if res.namespaced else None, name)

    # ------------------------------------------------------------ resources

    def resource(self, method, route, user):
        app, st = self.app, self.app.store
        res = RESOURCES[route.plural]
        if route.plural == "pods" and route.sub == "log" and route.name is not None:
            if method != "GET":
                raise ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")
            self.authorize(user, "get", res, route.ns, route.name, "log")
            return app.logs.serve(self, route.ns, route.name, self.params)
        if route.plural == "pods" and route.sub == "eviction" and route.name is not None:
            if method != "POST":
                raise ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")
            self.authorize(user, "create", res, route.ns, route.name, "eviction")
            body = self.json_body()
            if not isinstance(body, dict) or body.get("kind") != "Eviction":
                raise ApiError(400, "BadRequest", "the body of the request is not an Eviction")
            with st.lock:
                if self.params.get("dryRun") or (body.get("deleteOptions") or {}).get("dryRun"):
                    if st.get("pods", route.ns, route.name) is None:
                        raise human_status_not_found(res, route.name)
                    return self.send_body(201, dumps({"kind": "Status", "apiVersion": "v1", "metadata": {},
                                                      "status": "Success"}))
                return self.send_body(201, dumps(app.cluster.evict(route.ns, route.name)))
        if route.sub and route.sub != "status":
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        if method == "GET":
            watch = self.params.get("watch") in ("1", "true", "True")
            verb = "watch" if watch else ("get" if route.name else "list")
            self.authorize(user, verb, res, route.ns, route.name)
            if app.fault("429"):
                raise ApiError(429, "TooManyRequests",
                               "the server has received too many requests and has asked us to try again later",
                               {"retryAfterSeconds": 1}, {"Retry-After": "1"})
            if route.name is not None and not watch:
                return self.get_one(res, route)
            if watch:
                return self.watch(res, route)
            if app.fault("500"):
                raise ApiError(500, "InternalError",
                               "Internal error occurred: fakekube injected fault (etcdserver: request timed out)")
            return self.list(res, route)
        verb = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}[method]
        self.authorize(user, verb, res, route.ns, route.name)
        with st.lock:
            if method == "POST":
                if route.name is not None:
                    raise ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")
                obj = self.json_body()
                self.check_kind(obj, res)
                md = obj.setdefault("metadata", {})
                if res.namespaced:
                    if md.get("namespace") and md["namespace"] != route.ns:
                        raise ApiError(400, "BadRequest", "the namespace of the provided object does not match the namespace sent on the request")
                    md["namespace"] = route.ns or "default"
                    if st.get("namespaces", "", md["namespace"]) is None:
                        raise ApiError(404, "NotFound", 'namespaces "%s" not found' % md["namespace"],
                                       {"name": md["namespace"], "kind": "namespaces"})
                if res.group == "kubevirt.io" or route.plural == "pods":
                    # status is the controllers' business: dropped on create, as for
                    # CRDs with a status subresource
                    obj["status"] = {}
                if route.plural == "secrets":
                    secret_normalise(obj)
                if self.params.get("dryRun"):
                    return self.send_body(201, dumps(obj))
                out = st.create(route.plural, obj)
                app.cluster.on_created(route.plural, out)
                out = st.get(route.plural, route.ns, out["metadata"]["name"]) or out
                return self.send_body(201, dumps(out))
            if route.name is None:
                if method == "DELETE":
                    return self.delete_collection(res, route)
                raise ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")
            cur = st.get(route.plural, route.ns, route.name)
            if cur is None:
                raise human_status_not_found(res, route.name)
            if method == "DELETE":
                opts = self.json_body()
                if self.params.get("dryRun") or (isinstance(opts, dict) and opts.get("dryRun")):
                    return self.send_body(200, dumps(cur))
                out = st.delete(route.plural, route.ns, route.name)
                app.cluster.on_deleted(route.plural, out)
                return self.send_body(200, dumps(out))
            if method == "PUT":
                obj = self.json_body()
                self.check_kind(obj, res)
                rv = obj.get("metadata", {}).get("resourceVersion")
                if rv and rv != cur["metadata"]["resourceVersion"]:
                    raise ApiError(409, "Conflict",
                                   'Operation cannot be fulfilled on %s "%s": the object has been modified; '
                                   'please apply your changes to the latest version and try again'
                                   % (res.gr, route.name),
                                   {"name": route.name, "group": res.group, "kind": res.plural})
                if route.sub == "status":
                    new = json.loads(dumps(cur))
                    new["status"] = obj.get("status", {})
                    obj = new
                obj["metadata"]["name"] = route.name
                if res.namespaced:
                    obj["metadata"]["namespace"] = route.ns
                if route.sub != "status" and "status" in cur and "status" not in obj:
                    obj["status"] = cur["status"]
                if route.plural == "secrets":
                    secret_normalise(obj)
                bump_generation(cur, obj, route.sub)
                out = st.replace(route.plural, obj)
                app.cluster.on_updated(route.plural, out)
                return self.send_body(200, dumps(st.get(route.plural, route.ns, route.name)))
            # PATCH
            ctype = self.headers.get("Content-Type", "")
            patch = self.json_body()
            new = json.loads(dumps(cur))
            if "json-patch" in ctype:
                new = apply_json_patch(new, patch)
            else:
                new = merge_patch(new, patch)
            new["metadata"]["name"] = route.name
            new["metadata"]["uid"] = cur["metadata"]["uid"]
            if route.plural == "secrets":
                secret_normalise(new)
            if self.params.get("dryRun"):
                return self.send_body(200, dumps(new))
            bump_generation(cur, new, route.sub)
            out = st.replace(route.plural, new)
            app.cluster.on_updated(route.plural, out)
            return self.send_body(200, dumps(st.get(route.plural, route.ns, route.name)))

    @staticmethod
    def check_kind(obj, res):
        if not isinstance(obj, dict):
            raise ApiError(400, "BadRequest", "object must be a JSON object")
        if obj.get("kind", res.kind) != res.kind:
            raise ApiError(400, "BadRequest", "the API version in the data (%s) does not match the expected API version (%s)"
                           % (obj.get("apiVersion"), res.api_version))
        if not obj.get("metadata", {}).get("name") and not obj.get("metadata", {}).get("generateName"):
            raise ApiError(422, "Invalid", "%s \"\" is invalid: metadata.name: Required value: name or generateName is required"
                           % res.kind)

    def delete_collection(self, res, route):
        st = self.app.store
        flt = Filter(route.ns, self.params.get("labelSelector", ""), self.params.get("fieldSelector", ""))
        _, entries = st.list_entries(route.plural, flt)
        items = []
        for e in entries:
            ns, name = e.key
            out = st.delete(route.plural, ns, name)
            if out:
                self.app.cluster.on_deleted(route.plural, out)
                items.append(out)
        return self.send_body(200, dumps({"kind": res.kind + "List", "apiVersion": res.api_version,
                                          "metadata": {"resourceVersion": str(st.rv)}, "items": items}))

    def want_table(self):
        acc = self.headers.get("Accept", "")
        first = acc.split(",")[0]
        return "as=Table" in first

    def get_one(self, res, route):
        st = self.app.store
        e = st.get_entry(route.plural, route.ns, route.name)
        if e is None:
            raise human_status_not_found(res, route.name)
        if self.want_table():
            body = tables.table_bytes(res, [e], str(e.rv), "", self.params.get("includeObject", "Metadata"))
            return self.send_body(200, body)
        return self.send_body(200, e.raw)

    def list(self, res, route):
        st = self.app.store
        p = self.params
        limit = int(p.get("limit") or 0)
        cont = p.get("continue")
        remaining = None
        if cont:
            sid, off, rv = Store.decode_continue(cont)
            snap = st.snapshot_get(sid)
            if snap is None:
                raise ApiError(410, "Expired",
                               "The provided continue parameter is too old to display a consistent list result. "
                               "You can start a new list without the continue parameter, or use the continue token "
                               "in this response to retrieve the remainder of the results. Continuing with the "
                               "provided token results in an inconsistent list - objects that were created, "
                               "modified, or deleted between the time the first chunk was returned and now may "
                               "show up in the list.")
            _, rv, entries = snap
        else:
            flt = Filter(route.ns, p.get("labelSelector", ""), p.get("fieldSelector", ""))
            rv, entries = st.list_entries(route.plural, flt)
            off = 0
            sid = None
        page = entries[off:]
        next_tok = ""
        if limit and len(page) > limit:
            page = page[:limit]
            if sid is None:
                sid = st.snapshot_put(rv, entries)
            next_tok = Store.encode_continue(sid, off + limit, rv)
            remaining = len(entries) - off - limit
        if self.want_table():
            body = tables.table_bytes(res, page, str(rv), next_tok, p.get("includeObject", "Metadata"),
                                      remaining)
            return self.send_body(200, body)
        md = {"resourceVersion": str(rv)}
        if next_tok:
            md["continue"] = next_tok
            md["remainingItemCount"] = remaining
        head = (b'{"kind":"' + (res.kind + "List").encode() + b'","apiVersion":"' + res.api_version.encode()
                + b'","metadata":' + dumps(md) + b',"items":[')
        body = head + b",".join(e.raw for e in page) + b"]}"
        return self.send_body(200, body)

    # ------------------------------------------------------------ watch

    def chunk(self, data):
        self.wfile.write(b"%x\r\n" % len(data) + data + b"\r\n")

    def watch(self, res, route):
        app, st = self.app, self.app.store
        p = self.params
        flt = Filter(route.ns, p.get("labelSelector", ""), p.get("fieldSelector", ""))
        if route.name is not None:
            flt.fields.append(("=", "metadata.name", route.name))
        table = self.want_table()
        include = p.get("includeObject", "Metadata")
        try:
            timeout = float(p.get("timeoutSeconds") or app.opts.watch_timeout)
        except ValueError:
            timeout = app.opts.watch_timeout
        bookmarks = p.get("allowWatchBookmarks") in ("true", "1", "True")
        rvp = p.get("resourceVersion", "")
        start_410 = app.fault("410")
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Cache-Control", "no-cache, private")
        self.end_headers()
        self.close_connection = True
        deadline = time.monotonic() + timeout
        header_sent = [False]

        def encode(typ, entry):
            if table:
                body = tables.table_bytes(res, [entry], str(entry.rv), "", include, None,
                                          headers=not header_sent[0])
                header_sent[0] = True
                return b'{"type":"' + typ.encode() + b'","object":' + body + b"}\n"
            return b'{"type":"' + typ.encode() + b'","object":' + entry.raw + b"}\n"

        def error_event(err):
            self.chunk(b'{"type":"ERROR","object":' + dumps(err.status()) + b"}\n")
            self.wfile.write(b"0\r\n\r\n")

        with app.mu:
            app.watches += 1
        try:
            with st.lock:
                gen = app.watch_gen
                egen = app.watch_expire_gen
                initial = []
                if start_410:
                    err = ApiError(410, "Expired", "too old resource version: %s (%d)" % (rvp or "0", st.rv))
                elif rvp in ("", "0"):
                    last, initial = st.list_entries(route.plural, flt)
                    err = None
                else:
                    try:
                        last = int(rvp)
                        st.events_since(route.plural, last)
                        err = None
                    except ValueError:
                        err = ApiError(400, "BadRequest", "invalid resource version: %s" % rvp)
                    except ApiError as e:
                        err = e
            if err:
                return error_event(err)
            for e in initial:
                line = encode("ADDED", e)
                if app.fault("drop"):
                    return self.drop_mid_chunk(line)
                self.chunk(line)
            self.wfile.flush()
            next_bm = time.monotonic() + app.bookmark_interval
            while True:
                out = []
                with st.lock:
                    while True:
                        if app.watch_gen != gen:
                            return self.drop_mid_chunk()
                        if app.watch_expire_gen != egen:
                            raise ApiError(410, "Expired", "too old resource version: %d (%d)" % (last, st.rv))
                        evs = st.events_since(route.plural, last)
                        if evs:
                            break
                        nowm = time.monotonic()
                        if nowm >= deadline:
                            self.wfile.write(b"0\r\n\r\n")
                            return
                        if bookmarks and nowm >= next_bm:
                            last = st.rv
                            break
                        wake = deadline if not bookmarks else min(deadline, next_bm)
                        st.conds[route.plural].wait(max(0.001, wake - nowm))
                if not evs:
                    next_bm = time.monotonic() + app.bookmark_interval
                    bm = {"kind": res.kind, "apiVersion": res.api_version,
                          "metadata": {"resourceVersion": str(last)}}
                    self.chunk(b'{"type":"BOOKMARK","object":' + dumps(bm) + b"}\n")
                    self.wfile.flush()
                    continue
                for typ, entry, prev in evs:
                    last = entry.rv
                    if not flt.labels and not flt.fields:
                        if flt.namespace and entry.key[0] != flt.namespace:
                            continue
                        out.append((typ, entry))
                        continue
                    now_m = flt.match(entry.obj)
                    was_m = prev is not None and flt.match(prev.obj)
                    if typ == "ADDED" and now_m:
                        out.append(("ADDED", entry))
                    elif typ == "MODIFIED":
                        if now_m and was_m:
                            out.append(("MODIFIED", entry))
                        elif now_m:
                            out.append(("ADDED", entry))
                        elif was_m:
                            out.append(("DELETED", entry))
                    elif typ == "DELETED" and was_m:
                        out.append(("DELETED", entry))
                for typ, entry in out:
                    line = encode(typ, entry)
                    if app.fault("drop"):
                        return self.drop_mid_chunk(line)
                    self.chunk(line)
                self.wfile.flush()
        except ApiError as e:
            try:
                error_event(e)
            except OSError:
                pass
        except (BrokenPipeError, ConnectionResetError, OSError):
            pass
        finally:
            with app.mu:
                app.watches -= 1

    def drop_mid_chunk(self, line=b'{"type":"MODIFIED","object":{"kind":"Trunc'):
        """Announce a chunk, send half of it, and cut the TCP connection."""
        try:
            half = max(1, len(line) // 2)
            self.wfile.write(b"%x\r\n" % len(line) + line[:half])
            self.wfile.flush()
        except OSError:
            pass
        self.close_connection = True
        try:
            self.request.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    # ------------------------------------------------------------ subresources

    def subresource(self, method, route, user):
        app = self.app
        res = RESOURCES[route.plural]
        if route.sub.split("/")[0] == "portforward":
            # portforward/PORT[/PROTOCOL], a WebSocket to the guest's port (wsock.serve_portforward)
            self.authorize(user, "get", res, route.ns, route.name, "portforward")
            import wsock
            return wsock.serve_portforward(self, route)
        if route.sub not in SUBRESOURCES.get(route.plural, []):
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        if route.sub in ("console", "vnc"):
            self.authorize(user, "get", res, route.ns, route.name, route.sub)
            import wsock
            return wsock.serve(self, route)
        if route.sub in ("guestosinfo", "interfacelist", "filesystemlist", "userlist"):
            self.authorize(user, "get", res, route.ns, route.name, route.sub)
            vmi = app.store.get(route.plural, route.ns, route.name)
            if vmi is None:
                raise human_status_not_found(res, route.name)
            if not app.cluster.get_cond(vmi, "AgentConnected"):
                raise ApiError(409, "Conflict", "VMI does not have guest agent connected")
            if route.sub != "guestosinfo":
                return self.send_body(200, dumps(guest_list(route.sub, vmi)))
            info = dict(vmi["status"].get("guestOSInfo") or {})
            return self.send_body(200, dumps({"guestAgentVersion": "8.1.3", "hostname": route.name,
                                              "os": info, "timezone": "UTC, 0",
                                              "fsFreezeStatus": "thawed"}))
        if method != "PUT":
            raise ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")
        self.authorize(user, "update", res, route.ns, route.name, route.sub)
        body = self.json_body()
        code = app.cluster.subresource(route.plural, route.ns, route.name, route.sub, body)
        return self.send_body(code, b"")

    # ------------------------------------------------------------ /fake/ control API

    def fake_api(self, method, what):
        app, st, cl = self.app, self.app.store, self.app.cluster
        if method == "GET" and what == "state":
            kinds = self.params.get("kinds")
            plurals = kinds.split(",") if kinds else list(RESOURCES)
            with st.lock:
                parts = [b'{"resourceVersion":"%d","idle":%s' % (st.rv, b"true" if cl.idle() else b"false")]
                for pl in plurals:
                    if pl not in RESOURCES:
                        raise ApiError(400, "BadRequest", "unknown kind " + pl)
                    parts.append(b',"' + pl.encode() + b'":[' +
                                 b",".join(st.objs[pl][k].raw for k in st.keys[pl]) + b"]")
            return self.send_body(200, b"".join(parts) + b"}")
        if method == "GET" and what == "requests":
            with app.mu:
                return self.send_body(200, dumps({
                    "total": app.total, "byPattern": app.requests, "mutating": sum(app.mutating.values()),
                    "mutatingByPattern": app.mutating, "faults": app.faults_fired, "watches": app.watches}))
        if method == "GET" and what == "vnc-input":
            d = app.displays.get((self.params.get("namespace", ""), self.params.get("name", "")))
            if d is None:
                raise ApiError(404, "NotFound", "no built-in VNC session for that VMI yet")
            return self.send_body(200, dumps(d.info()))
        if method == "GET" and what == "info":
            with st.lock:
                info = {"resourceVersion": str(st.rv), "idle": cl.idle(), "churnRate": cl.churn_rate,
                        "churnPaused": cl.churn_paused, "churnCount": cl.churn_count,
                        "faultRate": app.fault_rate, "faultKinds": sorted(app.fault_kinds),
                        "watches": app.watches, "websockets": app.websockets, "step": cl.step,
                        "counts": {p: len(st.objs[p]) for p in RESOURCES}}
            return self.send_body(200, dumps(info))
        if method != "POST":
            raise ApiError(404, "NotFound", "unknown control endpoint %s %s" % (method, what))
        body = self.json_body()
        if what == "churn":
            cl.set_churn(body.get("rate", 0))
        elif what == "pause-churn":
            with st.lock:
                cl.churn_paused = True
        elif what == "resume-churn":
            with st.lock:
                cl.churn_paused = False
                cl.tcond.notify_all()
        elif what == "faults":
            with app.mu:
                app.fault_rate = float(body.get("rate", 0))
                if "kinds" in body:
                    app.fault_kinds = set(body["kinds"])
                if "seed" in body:
                    app.fault_rng.seed(int(body["seed"]))
        elif what == "requests/reset":
            with app.mu:
                app.requests.clear()
                app.mutating.clear()
                app.total = 0
        elif what == "backend":
            key = (body["namespace"], body["name"], body.get("kind", "console"))
            if body.get("ports"):
                app.backends[key] = {"tcp": body.get("tcp"), "ports": dict(body["ports"])}
            elif body.get("unix"):
                app.backends[key] = {"unix": body["unix"]}
            elif body.get("tcp"):
                app.backends[key] = {"tcp": body["tcp"]}
            else:
                app.backends.pop(key, None)
        elif what == "apply":
            items = body.get("items") if body.get("kind", "").endswith("List") or "items" in body else [body]
            react = body.get("react", True) if "items" in body else True
            out = []
            with st.lock:
                for obj in items:
                    plural = kind_to_plural(obj.get("kind", ""))
                    md = obj.setdefault("metadata", {})
                    if RESOURCES[plural].namespaced:
                        md.setdefault("namespace", "default")
                        cl.ensure_namespace(md["namespace"])
                    exists = st.get(plural, md.get("namespace", ""), md.get("name", "")) is not None
                    if exists:
                        o = st.replace(plural, obj)
                        if react:
                            cl.on_updated(plural, o)
                    else:
                        o = st.create(plural, obj)
                        if react:
                            cl.on_created(plural, o)
                    out.append(st.get(plural, md.get("namespace", ""), o["metadata"]["name"]))
            return self.send_body(200, dumps({"items": out}))
        elif what == "delete":
            with st.lock:
                plural = body["kind"] if body["kind"] in RESOURCES else kind_to_plural(body["kind"])
                o = st.delete(plural, body.get("namespace", ""), body["name"])
                if o is None:
                    raise ApiError(404, "NotFound", "no such object")
                cl.on_deleted(plural, o)
        elif what == "scenario":
            names = body.get("names") or [body.get("name")]
            for n in names:
                cl.add_scenario(n)
        elif what == "settle":
            deadline = time.monotonic() + float(body.get("timeout", 30))
            while time.monotonic() < deadline:
                if cl.idle():
                    return self.send_body(200, dumps({"idle": True, "resourceVersion": str(st.rv)}))
                time.sleep(0.02)
            raise ApiError(504, "Timeout", "simulator still busy")
        elif what == "latency":
            app.latency = float(body.get("seconds", 0))
        elif what == "token":
            # rotate the admin token (exec-credential tests): the old one gets 401 from now on
            app.token = body["token"]
            path = os.path.join(app.opts.dir, "token")
            with open(path + ".tmp", "w") as f:
                f.write(app.token + "\n")
            os.replace(path + ".tmp", path)
        elif what == "step":
            cl.step = float(body.get("seconds", cl.step))
        elif what == "compact":
            with st.lock:
                for pl in RESOURCES:
                    st.compacted[pl] = st.rv
                    st.hist_rv[pl] = []
                    st.hist_ev[pl] = []
                st.snapshots.clear()
        elif what == "expire-watches":
            with st.lock:
                app.watch_expire_gen += 1
                st.wake_all_watchers()
        elif what == "drop-watches":
            with st.lock:
                app.watch_gen += 1
                st.wake_all_watchers()
        elif what == "drop-websockets":
            with app.mu:
                app.ws_drop_close = bool(body.get("close", False))
                app.ws_gen += 1
        elif what == "log":
            app.logs.append(body["namespace"], body["pod"], body["container"], body.get("lines", []),
                            bool(body.get("previous", False)))
        elif what == "restart-container":
            app.logs.restart(cl, body["namespace"], body["pod"], body["container"], int(body.get("exitCode", 1)))
        elif what == "fail-vmi":
            with st.lock:
                cl.fail_vmi(body["namespace"], body["name"])
        else:
            raise ApiError(404, "NotFound", "unknown control endpoint %s" % what)
        with st.lock:
            return self.send_body(200, dumps({"ok": True, "resourceVersion": str(st.rv)}))


def guest_list(sub, vmi):
    """What virt-handler reads from the guest agent, shaped as KubeVirt's v1 VirtualMachineInstance*List types."""
    name = vmi["metadata"]["name"]
    ifs = (vmi.get("status") or {}).get("interfaces") or []
    if sub == "interfacelist":
        return {"items": [{"interfaceName": "eth0", "ipAddress": i.get("ipAddress", ""),
                           "ipAddresses": i.get("ipAddresses") or [i.get("ipAddress", "")],
                           "mac": i.get("mac", "52:54:00:12:34:56")} for i in ifs[:1]] +
                [{"interfaceName": "lo", "ipAddress": "127.0.0.1", "ipAddresses": ["127.0.0.1", "::1"],
                  "mac": "00:00:00:00:00:00"}]}
    if sub == "filesystemlist":
        return {"items": [{"diskName": "vda1", "mountPoint": "/", "fileSystemType": "ext4",
                           "usedBytes": 41943040, "totalBytes": 1073741824,
                           "disk": [{"serial": "containerdisk", "busType": "virtio"}]},
                          {"diskName": "vdb", "mountPoint": "/mnt/cloud-init", "fileSystemType": "iso9660",
                           "usedBytes": 372736, "totalBytes": 372736, "disk": [{"busType": "virtio"}]}]}
    return {"items": [{"userName": "cirros", "domain": "", "loginTime": 1764750000.25},
                      {"userName": "root", "domain": "", "loginTime": 1764753600.5}]}


def kind_to_plural(kind):
    for p, r in RESOURCES.items():
        if r.kind == kind:
            return p
    raise ApiError(400, "BadRequest", "unknown kind %r" % kind)


class RESOURCESUB:
    """A subresource seen as a resource for 403 messages."""

    def __init__(self, res, sub):
        self.plural = res.plural + "/" + sub
        self.group = "subresources.kubevirt.io" if res.group == "kubevirt.io" else res.group
        self.gr = res.plural + ("." + self.group if self.group else "")
        self.namespaced = True


def bump_generation(cur, new, sub):
    if sub == "status" or "generation" not in cur["metadata"]:
        return
    if json.dumps(cur.get("spec"), sort_keys=True) != json.dumps(new.get("spec"), sort_keys=True):
        new["metadata"]["generation"] = cur["metadata"]["generation"] + 1
    else:
        new["metadata"]["generation"] = cur["metadata"]["generation"]


def merge_patch(target, patch):
    if not isinstance(patch, dict):
        return patch
    if not isinstance(target, dict):
        target = {}
    for k, v in patch.items():
        if k.startswith("$"):
            continue
        if v is None:
            target.pop(k, None)
        else:
            target[k] = merge_patch(target.get(k), v)
    return target


def secret_normalise(obj):
    """What the API server does to a Secret it stores: stringData merged into data (and dropped), every data
    value base64 (as Go's []byte in JSON), type Opaque when none."""
    if not isinstance(obj.get("data", {}), dict) and obj.get("data") is not None:
        raise ApiError(400, "BadRequest", "Secret in version \"v1\" cannot be handled as a Secret: data must be an object")
    data = obj.get("data") or {}
    for k, v in data.items():
        try:
            if not isinstance(v, str):
                raise ValueError
            base64.b64decode(v, validate=True)
        except (binascii.Error, ValueError):
            raise ApiError(400, "BadRequest", "Secret in version \"v1\" cannot be handled as a Secret: "
                           "illegal base64 data at input byte 0 (data[%s])" % k)
    sd = obj.pop("stringData", None) or {}
    for k, v in sd.items():
        data[k] = base64.b64encode(str(v).encode()).decode()
    if data or "data" in obj:
        obj["data"] = data
    obj.setdefault("type", "Opaque")


def apply_json_patch(doc, ops):
    def walk(path):
        parts = [p.replace("~1", "/").replace("~0", "~") for p in path.split("/")[1:]]
        cur = doc
        for p in parts[:-1]:
            cur = cur[int(p)] if isinstance(cur, list) else cur[p]
        return cur, parts[-1]
    try:
        for op in ops:
            parent, key = walk(op["path"])
            o = op["op"]
            if isinstance(parent, list):
                idx = len(parent) if key == "-" else int(key)
                if o == "add":
                    parent.insert(idx, op["value"])
                elif o == "replace":
                    parent[idx] = op["value"]
                elif o == "remove":
                    del parent[idx]
                elif o == "test" and parent[idx] != op["value"]:
                    raise ApiError(422, "Invalid", "test operation failed")
            else:
                if o in ("add", "replace"):
                    parent[key] = op["value"]
                elif o == "remove":
                    del parent[key]
                elif o == "test" and parent.get(key) != op["value"]:
                    raise ApiError(422, "Invalid", "test operation failed")
    except (KeyError, IndexError, ValueError, TypeError) as e:
        raise ApiError(422, "Invalid", "the server rejected our request due to an error in our request: %s" % e)
    return doc


def resource_list(group, version):
    out = {"kind": "APIResourceList", "apiVersion": "v1",
           "groupVersion": version if not group else group + "/" + version, "resources": []}
    if group == "subresources.kubevirt.io":
        for plural, subs in SUBRESOURCES.items():
            kind = RESOURCES[plural].kind
            for s in subs:
                verbs = ["get"] if s in ("console", "vnc", "guestosinfo", "interfacelist", "filesystemlist",
                                         "userlist") else ["update"]
                out["resources"].append({"name": "%s/%s" % (plural, s), "singularName": "",
                                         "namespaced": True, "kind": kind, "verbs": verbs})
        return out
    for p, r in RESOURCES.items():
        if r.group != group or r.version != version:
            continue
        ent = {"name": p, "singularName": r.singular, "namespaced": r.namespaced, "kind": r.kind,
               "verbs": r.verbs, "storageVersionHash": "fakekube" + p[:4]}
        if r.short:
            ent["shortNames"] = r.short
        if r.categories:
            ent["categories"] = r.categories
        out["resources"].append(ent)
        if group == "kubevirt.io" or p == "pods":
            out["resources"].append({"name": p + "/status", "singularName": "", "namespaced": r.namespaced,
                                     "kind": r.kind, "verbs": ["get", "patch", "update"]})
        if p == "pods":
            out["resources"].append({"name": "pods/log", "singularName": "", "namespaced": True,
                                     "kind": "Pod", "verbs": ["get"]})
            out["resources"].append({"name": "pods/eviction", "singularName": "", "namespaced": True,
                                     "group": "policy", "version": "v1", "kind": "Eviction", "verbs": ["create"]})
    return out


def openapi_doc(group, version):
    fv = {"name": "fieldValidation", "in": "query", "schema": {"type": "string", "uniqueItems": True}}
    paths, schemas = {}, {}
    base = "/api/v1" if not group else "/apis/%s/%s" % (group, version)
    for p, r in RESOURCES.items():
        if r.group != group or r.version != version:
            continue
        sname = ("io.k8s.api.core.v1." if not group else "io.kubevirt.v1.") + r.kind
        ref = {"$ref": "#/components/schemas/" + sname}
        body = {"content": {"application/json": {"schema": ref}}}
        ok = {"200": {"description": "OK", "content": {"application/json": {"schema": ref}}}}
        gvk = [{"group": group, "version": version, "kind": r.kind}]
        coll = base + ("/namespaces/{namespace}/" if r.namespaced else "/") + p
        paths[coll] = {"post": {"parameters": [fv], "requestBody": body, "responses": ok,
                                "x-kubernetes-action": "post", "x-kubernetes-group-version-kind": gvk[0]}}
        paths[coll + "/{name}"] = {
            verb: {"parameters": [fv], "requestBody": body, "responses": ok,
                   "x-kubernetes-action": act, "x-kubernetes-group-version-kind": gvk[0]}
            for verb, act in (("put", "put"), ("patch", "patch"))}
        schemas[sname] = {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                          "x-kubernetes-group-version-kind": gvk}
    return {"openapi": "3.0.0", "info": {"title": "fakekube", "version": "v1.32.4"},
            "paths": paths, "components": {"schemas": schemas}}
