"""Server-side printing: meta.k8s.io/v1 Table responses with KubeVirt's CRD
printer columns (Age, Status, Ready / Age, Phase, IP, NodeName, Ready, ...) and
kubectl's built-in columns for pods, events, namespaces and nodes.
"""

import calendar
import json
import time

from store import dumps

NAME_DESC = ("Name must be unique within a namespace. Is required when creating resources, although some "
             "resources may allow a client to request the generation of an appropriate name automatically. "
             "Name is primarily intended for creation idempotence and configuration definition. Cannot be "
             "updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names")
AGE_DESC = ("CreationTimestamp is a timestamp representing the server time when this object was created.")


def parse_ts(s):
    if not s:
        return None
    try:
        return calendar.timegm(time.strptime(s[:19], "%Y-%m-%dT%H:%M:%S"))
    except ValueError:
        return None


def human_duration(secs):
    """k8s.io/apimachinery/pkg/util/duration.HumanDuration."""
    if secs < -1:
        return "<invalid>"
    if secs < 0:
        return "0s"
    s = int(secs)
    if s < 60 * 2:
        return "%ds" % s
    m = s // 60
    if m < 10:
        r = s % 60
        return "%dm%ds" % (m, r) if r else "%dm" % m
    if m < 60 * 3:
        return "%dm" % m
    h = s // 3600
    if h < 8:
        r = m % 60
        return "%dh%dm" % (h, r) if r else "%dh" % h
    if h < 48:
        return "%dh" % h
    if h < 24 * 8:
        r = h % 24
        return "%dd%dh" % (h // 24, r) if r else "%dd" % (h // 24)
    if h < 24 * 365 * 2:
        return "%dd" % (h // 24)
    if h < 24 * 365 * 8:
        dy = (h // 24) % 365
        return "%dy%dd" % (h // 24 // 365, dy) if dy else "%dy" % (h // 24 // 365)
    return "%dy" % (h // 24 // 365)


def age(ts):
    t = parse_ts(ts)
    if t is None:
        return "<unknown>"
    return human_duration(time.time() - t)


def cond_status(obj, typ):
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == typ:
            return c.get("status")
    return None


def vm_cells(o):
    st = o.get("status") or {}
    return [o["metadata"]["name"], age(o["metadata"].get("creationTimestamp")),
            st.get("printableStatus"), cond_status(o, "Ready")]


def vmi_cells(o):
    st = o.get("status") or {}
    itf = st.get("interfaces") or [{}]
    return [o["metadata"]["name"], age(o["metadata"].get("creationTimestamp")), st.get("phase"),
            itf[0].get("ipAddress"), st.get("nodeName"), cond_status(o, "Ready"),
            cond_status(o, "LiveMigratable"), cond_status(o, "Paused")]


def vmim_cells(o):
    st = o.get("status") or {}
    return [o["metadata"]["name"], st.get("phase"), (o.get("spec") or {}).get("vmiName")]


def vmirs_cells(o):
    """KubeVirt's additionalPrinterColumns for VirtualMachineInstanceReplicaSet (integers; absent: null)."""
    st = o.get("status") or {}
    return [o["metadata"]["name"], (o.get("spec") or {}).get("replicas"), st.get("replicas"),
            st.get("readyReplicas"), age(o["metadata"].get("creationTimestamp"))]


def pod_print(o):
    """kubectl's printPod (kubernetes pkg/printers/internalversion/printers.go), line for line: READY, STATUS,
    RESTARTS."""
    md, spec, st = o.get("metadata") or {}, o.get("spec") or {}, o.get("status") or {}
    restarts = ri_restarts = 0
    total = len(spec.get("containers") or [])
    ready = 0
    last = ri_last = 0
    phase = st.get("phase") or ""
    reason = st.get("reason") or phase
    for c in st.get("conditions") or []:
        if c.get("type") == "PodScheduled" and c.get("reason") == "SchedulingGated":
            reason = "SchedulingGated"
    spec_init = {c.get("name"): c for c in spec.get("initContainers") or []}

    def restartable(name):
        return (spec_init.get(name) or {}).get("restartPolicy") == "Always"
    total += sum(1 for c in spec_init.values() if c.get("restartPolicy") == "Always")

    def finished(c):
        return parse_ts((((c.get("lastState") or {}).get("terminated")) or {}).get("finishedAt")) or 0
    initializing = False
    for i, c in enumerate(st.get("initContainerStatuses") or []):
        restarts += c.get("restartCount", 0)
        last = max(last, finished(c))
        if restartable(c.get("name")):
            ri_restarts += c.get("restartCount", 0)
            ri_last = max(ri_last, finished(c))
        state = c.get("state") or {}
        term, wait = state.get("terminated"), state.get("waiting")
        if term is not None and term.get("exitCode", 0) == 0:
            continue
        if restartable(c.get("name")) and c.get("started"):
            if c.get("ready"):
                ready += 1
            continue
        if term is not None:
            if not term.get("reason"):
                reason = ("Init:Signal:%d" % term["signal"] if term.get("signal")
                          else "Init:ExitCode:%d" % term.get("exitCode", 0))
            else:
                reason = "Init:" + term["reason"]
        elif wait is not None and wait.get("reason") and wait["reason"] != "PodInitializing":
            reason = "Init:" + wait["reason"]
        else:
            reason = "Init:%d/%d" % (i, len(spec.get("initContainers") or []))
        initializing = True
        break
    initialized = any(c.get("type") == "Initialized" and c.get("status") == "True"
                      for c in st.get("conditions") or [])
    if not initializing or initialized:
        restarts, last = ri_restarts, ri_last
        running = False
        for c in reversed(st.get("containerStatuses") or []):
            restarts += c.get("restartCount", 0)
            last = max(last, finished(c))
            state = c.get("state") or {}
            term, wait = state.get("terminated"), state.get("waiting")
            if wait is not None and wait.get("reason"):
                reason = wait["reason"]
            elif term is not None and term.get("reason"):
                reason = term["reason"]
            elif term is not None:
                reason = ("Signal:%d" % term["signal"] if term.get("signal")
                          else "ExitCode:%d" % term.get("exitCode", 0))
            elif c.get("ready") and state.get("running") is not None:
                running = True
                ready += 1
        if reason == "Completed" and running:
            has_ready = any(c.get("type") == "Ready" for c in st.get("conditions") or [])
            reason = "Running" if has_ready else "NotReady"
    if md.get("deletionTimestamp") and st.get("reason") == "NodeLost":
        reason = "Unknown"
    elif md.get("deletionTimestamp") and phase not in ("Failed", "Succeeded"):
        reason = "Terminating"
    rs = str(restarts)
    if restarts and last:
        rs = "%d (%s ago)" % (restarts, human_duration(time.time() - last))
    return "%d/%d" % (ready, total), reason, rs


def pod_cells(o):
    st = o.get("status") or {}
    ready, status, restarts = pod_print(o)
    return [o["metadata"]["name"], ready, status, restarts,
            age(o["metadata"].get("creationTimestamp")), st.get("podIP") or "<none>",
            (o.get("spec") or {}).get("nodeName") or "<none>", "<none>", "<none>"]


def event_cells(o):
    io = o.get("involvedObject") or {}
    src = o.get("source") or {}
    last = o.get("lastTimestamp") or o.get("eventTime") or o["metadata"].get("creationTimestamp")
    return [age(last), o.get("type"), o.get("reason"),
            "%s/%s" % ((io.get("kind") or "").lower(), io.get("name")), o.get("message"),
            io.get("fieldPath", ""), ", ".join(x for x in (src.get("component"), src.get("host")) if x),
            age(o.get("firstTimestamp")), o.get("count", 1), o["metadata"]["name"]]


def ns_cells(o):
    return [o["metadata"]["name"], (o.get("status") or {}).get("phase", "Active"),
            age(o["metadata"].get("creationTimestamp"))]


def node_cells(o):
    roles = ",".join(k.split("/", 1)[1] for k in (o["metadata"].get("labels") or {})
                     if k.startswith("node-role.kubernetes.io/")) or "<none>"
    ready = "Ready" if cond_status(o, "Ready") == "True" else "NotReady"
    return [o["metadata"]["name"], ready, roles, age(o["metadata"].get("creationTimestamp")),
            ((o.get("status") or {}).get("nodeInfo") or {}).get("kubeletVersion", "")]


MODES = {"ReadWriteOnce": "RWO", "ReadOnlyMany": "ROX", "ReadWriteMany": "RWX", "ReadWriteOncePod": "RWOP"}


def modes(ms):
    return ",".join(MODES.get(m, m) for m in ms or [])


def pvc_cells(o):
    st, sp = o.get("status") or {}, o.get("spec") or {}
    return [o["metadata"]["name"], st.get("phase", ""), sp.get("volumeName", ""),
            (st.get("capacity") or {}).get("storage", ""), modes(st.get("accessModes")),
            sp.get("storageClassName", "<unset>"), sp.get("volumeAttributesClassName") or "<unset>",
            age(o["metadata"].get("creationTimestamp")), sp.get("volumeMode", "")]


def pv_cells(o):
    st, sp = o.get("status") or {}, o.get("spec") or {}
    ref = sp.get("claimRef") or {}
    claim = "%s/%s" % (ref.get("namespace", ""), ref.get("name", "")) if ref else ""
    return [o["metadata"]["name"], (sp.get("capacity") or {}).get("storage", ""), modes(sp.get("accessModes")),
            sp.get("persistentVolumeReclaimPolicy", ""), st.get("phase", ""), claim,
            sp.get("storageClassName", ""), sp.get("volumeAttributesClassName") or "<unset>", st.get("reason", ""),
            age(o["metadata"].get("creationTimestamp")), sp.get("volumeMode", "")]


def dv_cells(o):
    st = o.get("status") or {}
    return [o["metadata"]["name"], st.get("phase", ""), st.get("progress", "N/A"), st.get("restartCount", 0),
            age(o["metadata"].get("creationTimestamp"))]


def secret_cells(o):
    return [o["metadata"]["name"], o.get("type", "Opaque"), len(o.get("data") or {}),
            age(o["metadata"].get("creationTimestamp"))]


def cm_cells(o):
    return [o["metadata"]["name"], len(o.get("data") or {}) + len(o.get("binaryData") or {}),
            age(o["metadata"].get("creationTimestamp"))]


def col(name, typ="string", priority=0, desc="", fmt=""):
    return {"name": name, "type": typ, "format": fmt, "description": desc, "priority": priority}


COLUMNS = {
    "virtualmachines": ([col("Name", fmt="name", desc=NAME_DESC), col("Age", "date", desc=AGE_DESC),
                         col("Status", desc="Human Readable Status"), col("Ready", desc="Ready")],
                        vm_cells),
    "virtualmachineinstances": ([col("Name", fmt="name", desc=NAME_DESC), col("Age", "date", desc=AGE_DESC),
                                 col("Phase"), col("IP"), col("NodeName"), col("Ready"),
                                 col("Live-Migratable", priority=1), col("Paused", priority=1)],
                                vmi_cells),
    "virtualmachineinstancemigrations": ([col("Name", fmt="name", desc=NAME_DESC), col("Phase"), col("VMI")],
                                         vmim_cells),
    "virtualmachineinstancereplicasets": ([col("Name", fmt="name", desc=NAME_DESC),
                                           col("Desired", "integer", desc="Number of desired VirtualMachineInstances"),
                                           col("Current", "integer", desc="Number of managed and not final or deleted VirtualMachineInstances"),
                                           col("Ready", "integer", desc="Number of managed VirtualMachineInstances which are ready to receive traffic"),
                                           col("Age", "date", desc=AGE_DESC)], vmirs_cells),
    "pods": ([col("Name", fmt="name", desc=NAME_DESC), col("Ready", desc="The aggregate readiness state of this pod for accepting traffic."),
              col("Status", desc="The aggregate status of the containers in this pod."),
              col("Restarts", "string", desc="The number of times the containers in this pod have been restarted and when the last container in this pod has restarted."),
              col("Age", desc=AGE_DESC), col("IP", priority=1, desc="IP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated."),
              col("Node", priority=1, desc="Name of the Node this pod is assigned to."),
              col("Nominated Node", priority=1, desc="Name of the Node the scheduler nominated for this pod."),
              col("Readiness Gates", priority=1, desc="Pod Readiness Gates.")], pod_cells),
    "events": ([col("Last Seen"), col("Type"), col("Reason"), col("Object"), col("Message"),
                col("Subobject", priority=1), col("Source", priority=1), col("First Seen", priority=1),
                col("Count", "integer", priority=1), col("Name", priority=1, fmt="name")], event_cells),
    "namespaces": ([col("Name", fmt="name", desc=NAME_DESC), col("Status"), col("Age")], ns_cells),
    "nodes": ([col("Name", fmt="name", desc=NAME_DESC), col("Status"), col("Roles"), col("Age"),
               col("Version")], node_cells),
    "persistentvolumeclaims": ([col("Name", fmt="name", desc=NAME_DESC), col("Status"), col("Volume"),
                                col("Capacity"), col("Access Modes"), col("StorageClass"),
                                col("VolumeAttributesClass"), col("Age"), col("VolumeMode", priority=1)],
                               pvc_cells),
    "persistentvolumes": ([col("Name", fmt="name", desc=NAME_DESC), col("Capacity"), col("Access Modes"),
                           col("Reclaim Policy"), col("Status"), col("Claim"), col("StorageClass"),
                           col("VolumeAttributesClass"), col("Reason"), col("Age"), col("VolumeMode", priority=1)],
                          pv_cells),
    "secrets": ([col("Name", fmt="name", desc=NAME_DESC), col("Type"), col("Data", "integer"), col("Age")],
                secret_cells),
    "configmaps": ([col("Name", fmt="name", desc=NAME_DESC), col("Data", "integer"), col("Age")], cm_cells),
    "datavolumes": ([col("Name", fmt="name", desc=NAME_DESC), col("Phase"), col("Progress"),
                     col("Restarts", "integer"), col("Age", "date")], dv_cells),
}


def table_bytes(res, entries, rv, cont, include="Metadata", remaining=None, headers=True):
    cols, fn = COLUMNS[res.plural]
    parts = []
    for e in entries:
        cells = dumps(fn(e.obj))
        if include == "None":
            obj = b"null"
        elif include == "Object":
            obj = e.raw
        else:
            obj = dumps({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                         "metadata": e.obj["metadata"]})
        parts.append(b'{"cells":' + cells + b',"object":' + obj + b"}")
    md = {"resourceVersion": rv}
    if cont:
        md["continue"] = cont
        if remaining is not None:
            md["remainingItemCount"] = remaining
    return (b'{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":' + dumps(md) +
            b',"columnDefinitions":' + (dumps(cols) if headers else b"[]") +
            b',"rows":[' + b",".join(parts) + b"]}")


__all__ = ["table_bytes", "human_duration", "json"]
