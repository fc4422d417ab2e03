"""The fake cluster's object store: etcd plus the apiserver's watch cache.

One global resourceVersion counter, immutable stored objects with their JSON
cached (re-serialised only when they change), a bounded per-resource event
history for watches, consistent list snapshots for limit/continue, label and
field selectors. Every mutation happens under one re-entrant lock; watchers
sleep on a condition variable tied to it.
"""

import base64
import bisect
import collections
import json
import threading
import time
import uuid


class ApiError(Exception):
    """An error that becomes a metav1.Status response."""

    def __init__(self, code, reason, message, details=None, headers=None):
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details
        self.headers = headers or {}

    def status(self):
        st = {"kind": "Status", "apiVersion": "v1", "metadata": {},
              "status": "Failure", "message": self.message,
              "reason": self.reason, "code": self.code}
        if self.details:
            st["details"] = self.details
        return st


def dumps(obj):
    """Compact JSON like Go's encoder (UTF-8, no spaces)."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


_iso_cache = {}


def now_iso(t=None):
    sec = int(time.time() if t is None else t)
    s = _iso_cache.get(sec)
    if s is None:
        if len(_iso_cache) > 100000:
            _iso_cache.clear()
        s = _iso_cache[sec] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(sec))
    return s


def new_uid(rng=None):
    if rng is None:
        return str(uuid.uuid4())
    # a version-4 UUID from the seeded RNG, formatted without uuid.UUID (startup speed)
    h = "%032x" % ((rng.getrandbits(128) & ~(0xF000 << 64) & ~(0xC000 << 48)) | (0x4000 << 64) | (0x8000 << 48))
    return "%s-%s-%s-%s-%s" % (h[:8], h[8:12], h[12:16], h[16:20], h[20:])


class Resource:
    """Static description of one served resource (discovery, lists, tables)."""

    def __init__(self, plural, group, version, kind, namespaced, short=(), singular=None,
                 verbs=None, categories=()):
        self.plural = plural
        self.group = group
        self.version = version
        self.kind = kind
        self.namespaced = namespaced
        self.short = list(short)
        self.singular = singular or kind.lower()
        self.verbs = verbs or ["delete", "deletecollection", "get", "list", "patch",
                               "create", "update", "watch"]
        self.categories = list(categories)

    @property
    def api_version(self):
        return self.version if not self.group else self.group + "/" + self.version

    @property
    def gr(self):
        """group-resource string as the apiserver prints it in messages."""
        return self.plural if not self.group else self.plural + "." + self.group


RESOURCES = {r.plural: r for r in [
    Resource("virtualmachines", "kubevirt.io", "v1", "VirtualMachine", True, ["vm", "vms"],
             categories=["all"]),
    Resource("virtualmachineinstances", "kubevirt.io", "v1", "VirtualMachineInstance", True,
             ["vmi", "vmis"], categories=["all"]),
    Resource("virtualmachineinstancemigrations", "kubevirt.io", "v1",
             "VirtualMachineInstanceMigration", True, ["vmim", "vmims"], categories=["all"]),
    Resource("virtualmachineinstancereplicasets", "kubevirt.io", "v1",
             "VirtualMachineInstanceReplicaSet", True, ["vmirs", "vmirss"], categories=["all"]),
    Resource("pods", "", "v1", "Pod", True, ["po"], categories=["all"]),
    Resource("events", "", "v1", "Event", True, ["ev"]),
    Resource("namespaces", "", "v1", "Namespace", False, ["ns"],
             verbs=["create", "delete", "get", "list", "patch", "update", "watch"]),
    Resource("nodes", "", "v1", "Node", False, ["no"]),
    Resource("persistentvolumeclaims", "", "v1", "PersistentVolumeClaim", True, ["pvc"]),
    Resource("persistentvolumes", "", "v1", "PersistentVolume", False, ["pv"]),
    Resource("secrets", "", "v1", "Secret", True),
    Resource("configmaps", "", "v1", "ConfigMap", True, ["cm"]),
    Resource("datavolumes", "cdi.kubevirt.io", "v1beta1", "DataVolume", True, ["dv", "dvs"], categories=["all"]),
]}


class Entry:
    """One stored object version. Never mutated after it is stored, so its JSON
    is computed once: at store time, or on first use for bulk-generated objects
    (Store.lazy; Store.warm serialises them before the server says ready)."""
    __slots__ = ("obj", "_raw", "rv", "key")

    def __init__(self, obj, rv, key, raw=None):
        self.obj = obj
        self._raw = raw
        self.rv = rv
        self.key = key

    @property
    def raw(self):
        r = self._raw
        if r is None:
            # two threads may race here; both compute the same bytes
            r = self._raw = dumps(self.obj)
        return r


# ---------------------------------------------------------------- selectors

def parse_label_selector(text):
    """Parse a label selector into a list of (op, key, values) requirements."""
    reqs = []
    if not text:
        return reqs
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    for p in parts:
        p = p.strip()
        if not p:
            continue
        low = p.replace("\t", " ")
        if " notin " in low or " in " in low:
            op = "notin" if " notin " in low else "in"
            k, _, rest = low.partition(" " + op + " ")
            rest = rest.strip()
            if not (rest.startswith("(") and rest.endswith(")")):
                raise ApiError(400, "BadRequest", "unable to parse requirement: " + p)
            vals = {v.strip() for v in rest[1:-1].split(",") if v.strip()}
            reqs.append((op, k.strip(), vals))
        elif "!=" in p:
            k, _, v = p.partition("!=")
            reqs.append(("!=", k.strip(), v.strip()))
        elif "==" in p:
            k, _, v = p.partition("==")
            reqs.append(("=", k.strip(), v.strip()))
        elif "=" in p:
            k, _, v = p.partition("=")
            reqs.append(("=", k.strip(), v.strip()))
        elif p.startswith("!"):
            reqs.append(("!exists", p[1:].strip(), None))
        else:
            reqs.append(("exists", p, None))
    return reqs


def labels_match(reqs, labels):
    for op, k, v in reqs:
        has = k in labels
        if op == "=" and (not has or labels[k] != v):
            return False
        if op == "!=" and has and labels[k] == v:
            return False
        if op == "exists" and not has:
            return False
        if op == "!exists" and has:
            return False
        if op == "in" and (not has or labels[k] not in v):
            return False
        if op == "notin" and has and labels[k] in v:
            return False
    return True


def parse_field_selector(text):
    reqs = []
    if not text:
        return reqs
    for p in text.split(","):
        p = p.strip()
        if not p:
            continue
        if "!=" in p:
            k, _, v = p.partition("!=")
            reqs.append(("!=", k.strip(), v.strip()))
        elif "==" in p:
            k, _, v = p.partition("==")
            reqs.append(("=", k.strip(), v.strip()))
        elif "=" in p:
            k, _, v = p.partition("=")
            reqs.append(("=", k.strip(), v.strip()))
        else:
            raise ApiError(400, "BadRequest",
                           'invalid selector: \'%s\'; can\'t understand \'%s\'' % (text, p))
    return reqs


def field_value(obj, path):
    cur = obj
    for part in path.split("."):
        if not isinstance(cur, dict):
            return ""
        cur = cur.get(part)
        if cur is None:
            return ""
    return cur if isinstance(cur, str) else json.dumps(cur)


def fields_match(reqs, obj):
    for op, k, v in reqs:
        val = field_value(obj, k)
        if op == "=" and val != v:
            return False
        if op == "!=" and val == v:
            return False
    return True


class Filter:
    """namespace + label selector + field selector, applied to objects."""

    def __init__(self, namespace=None, label_selector="", field_selector=""):
        self.namespace = namespace
        self.labels = parse_label_selector(label_selector)
        self.fields = parse_field_selector(field_selector)

    def match(self, obj):
        md = obj.get("metadata", {})
        if self.namespace and md.get("namespace") != self.namespace:
            return False
        if self.labels and not labels_match(self.labels, md.get("labels") or {}):
            return False
        if self.fields and not fields_match(self.fields, obj):
            return False
        return True


# ---------------------------------------------------------------- the store

class Store:
    def __init__(self, history=2000, snapshot_ttl=300.0, snapshots_max=200):
        self.lock = threading.RLock()
        self.cond = threading.Condition(self.lock)
        # one condition per resource: a write wakes only that resource's watchers
        self.conds = {p: threading.Condition(self.lock) for p in RESOURCES}
        self.rv = 1
        self.history_max = history
        self.objs = {p: {} for p in RESOURCES}
        self.keys = {p: [] for p in RESOURCES}
        # per resource: parallel lists of event rvs and (type, entry, prev_entry)
        self.hist_rv = {p: [] for p in RESOURCES}
        self.hist_ev = {p: [] for p in RESOURCES}
        # highest rv whose event may have been dropped from the history
        self.compacted = {p: 0 for p in RESOURCES}
        self.snapshots = collections.OrderedDict()
        self.snapshot_ttl = snapshot_ttl
        self.snapshots_max = snapshots_max
        self.snap_seq = 0
        self.hooks = []  # callables (plural, type, new_obj, old_obj) run under the lock
        self.lazy = False  # bulk generation: serialise on first use

    # ---- low level

    def _record(self, plural, typ, entry, prev):
        rvs, evs = self.hist_rv[plural], self.hist_ev[plural]
        rvs.append(entry.rv)
        evs.append((typ, entry, prev))
        if len(rvs) > self.history_max * 2 or len(rvs) > self.history_max + 500:
            cut = len(rvs) - self.history_max
            self.compacted[plural] = rvs[cut - 1]
            del rvs[:cut]
            del evs[:cut]
        self.conds[plural].notify_all()
        for h in self.hooks:
            h(plural, typ, entry.obj, prev.obj if prev else None)

    def _next_rv(self):
        self.rv += 1
        return self.rv

    @staticmethod
    def key_of(obj):
        md = obj["metadata"]
        return (md.get("namespace", ""), md["name"])

    # ---- mutations (all take the lock themselves; callers may hold it too)

    def create(self, plural, obj, quiet_exists=False):
        with self.lock:
            res = RESOURCES[plural]
            md = obj.setdefault("metadata", {})
            if not res.namespaced:
                md.pop("namespace", None)
            if "name" not in md and md.get("generateName"):
                md["name"] = md["generateName"] + new_uid()[:5]
            key = self.key_of(obj)
            if key in self.objs[plural]:
                if quiet_exists:
                    return None
                raise ApiError(409, "AlreadyExists", '%s "%s" already exists' % (res.gr, key[1]),
                               {"name": key[1], "group": res.group, "kind": res.plural})
            obj.setdefault("apiVersion", res.api_version)
            obj.setdefault("kind", res.kind)
            md.setdefault("uid", new_uid())
            md.setdefault("creationTimestamp", now_iso())
            if res.group:
                md.setdefault("generation", 1)
            rv = self._next_rv()
            md["resourceVersion"] = str(rv)
            e = Entry(obj, rv, key, None if self.lazy else dumps(obj))
            self.objs[plural][key] = e
            bisect.insort(self.keys[plural], key)
            self._record(plural, "ADDED", e, None)
            return obj

    def replace(self, plural, obj):
        with self.lock:
            key = self.key_of(obj)
            old = self.objs[plural].get(key)
            if old is None:
                return self.create(plural, obj)
            md = obj["metadata"]
            md["uid"] = old.obj["metadata"]["uid"]
            md["creationTimestamp"] = old.obj["metadata"]["creationTimestamp"]
            rv = self._next_rv()
            md["resourceVersion"] = str(rv)
            e = Entry(obj, rv, key, dumps(obj))
            self.objs[plural][key] = e
            self._record(plural, "MODIFIED", e, old)
            return obj

    def update(self, plural, ns, name, fn):
        """Apply fn to a private copy of the object; store it if it changed.

        Returns the stored object (new or unchanged) or None if absent. fn may
        return False to cancel."""
        with self.lock:
            key = (ns or "", name)
            old = self.objs[plural].get(key)
            if old is None:
                return None
            obj = json.loads(old.raw)
            if fn(obj) is False:
                return old.obj
            obj["metadata"]["resourceVersion"] = old.obj["metadata"]["resourceVersion"]
            if dumps(obj) == old.raw:
                return old.obj
            rv = self._next_rv()
            obj["metadata"]["resourceVersion"] = str(rv)
            e = Entry(obj, rv, key, dumps(obj))
            self.objs[plural][key] = e
            self._record(plural, "MODIFIED", e, old)
            return obj

    def delete(self, plural, ns, name):
        with self.lock:
            key = (ns or "", name)
            old = self.objs[plural].pop(key, None)
            if old is None:
                return None
            i = bisect.bisect_left(self.keys[plural], key)
            if i < len(self.keys[plural]) and self.keys[plural][i] == key:
                del self.keys[plural][i]
            obj = json.loads(old.raw)
            rv = self._next_rv()
            obj["metadata"]["resourceVersion"] = str(rv)
            e = Entry(obj, rv, key, dumps(obj))
            self._record(plural, "DELETED", e, old)
            return obj

    # ---- reads

    def get(self, plural, ns, name):
        with self.lock:
            e = self.objs[plural].get((ns or "", name))
            return e.obj if e else None

    def get_entry(self, plural, ns, name):
        with self.lock:
            return self.objs[plural].get((ns or "", name))

    def find(self, plural, pred):
        with self.lock:
            return [e.obj for e in self.objs[plural].values() if pred(e.obj)]

    def all_objs(self, plural):
        with self.lock:
            return [self.objs[plural][k].obj for k in self.keys[plural]]

    def list_entries(self, plural, flt):
        """Consistent (rv, [entries]) in key order, filtered."""
        with self.lock:
            objs = self.objs[plural]
            keys = self.keys[plural]
            if flt.namespace:
                lo = bisect.bisect_left(keys, (flt.namespace, ""))
                hi = bisect.bisect_left(keys, (flt.namespace + "\x00", ""))
                keys = keys[lo:hi]
            if flt.labels or flt.fields:
                out = [e for e in (objs[k] for k in keys) if flt.match(e.obj)]
            else:
                out = [objs[k] for k in keys]
            return self.rv, out

    def snapshot_put(self, rv, entries):
        with self.lock:
            self.snap_seq += 1
            sid = self.snap_seq
            self.snapshots[sid] = (time.monotonic(), rv, entries)
            while len(self.snapshots) > self.snapshots_max:
                self.snapshots.popitem(last=False)
            return sid

    def snapshot_get(self, sid):
        with self.lock:
            s = self.snapshots.get(sid)
            if s is None:
                return None
            if time.monotonic() - s[0] > self.snapshot_ttl:
                del self.snapshots[sid]
                return None
            return s

    @staticmethod
    def encode_continue(sid, offset, rv):
        raw = json.dumps({"v": "fakekube", "s": sid, "o": offset, "rv": rv}).encode()
        return base64.urlsafe_b64encode(raw).decode().rstrip("=")

    @staticmethod
    def decode_continue(tok):
        try:
            pad = "=" * (-len(tok) % 4)
            d = json.loads(base64.urlsafe_b64decode(tok + pad))
            return int(d["s"]), int(d["o"]), int(d["rv"])
        except Exception:
            raise ApiError(400, "BadRequest", "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)")

    def events_since(self, plural, rv):
        """Events with rv > given rv; raises 410 if the history no longer has them."""
        with self.lock:
            if rv < self.compacted[plural]:
                raise ApiError(410, "Expired", "too old resource version: %d (%d)"
                               % (rv, self.compacted[plural] + 1))
            rvs = self.hist_rv[plural]
            i = bisect.bisect_right(rvs, rv)
            return self.hist_ev[plural][i:]

    def state(self):
        with self.lock:
            out = {"resourceVersion": str(self.rv)}
            for p in RESOURCES:
                out[p] = [self.objs[p][k].obj for k in self.keys[p]]
            return out

    def wake_all_watchers(self):
        with self.lock:
            for c in self.conds.values():
                c.notify_all()

    def warm(self):
        """Serialise every lazily stored object."""
        with self.lock:
            entries = [e for p in self.objs for e in self.objs[p].values() if e._raw is None]
        for e in entries:
            e.raw
