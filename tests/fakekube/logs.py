"""Container logs for the fake kubelet: GET /api/v1/namespaces/NS/pods/NAME/log.

A log belongs to one container instance (its containerID, as in the kubelet): the current instance is the
one `state.running`/`state.terminated` names, the previous one `lastState.terminated`. Which instance a
request reads, and the errors when there is none, follow the kubelet's validateContainerLogStatus. Lines
are kept with the time they were written, so `sinceSeconds`, `tailLines`, `timestamps` and `limitBytes`
select from them as the kubelet does; `follow=true` streams new lines (chunked) until the container
instance is no longer the pod's current one or the pod is gone.

A container instance's first lines are made up when it is first read (what virt-launcher or the
container-disk process prints); tests add lines with POST /fake/log and restart a container with
POST /fake/restart-container (the running instance becomes lastState.terminated, a new one starts).
"""

import threading
import time

from store import ApiError

FOLLOW_CHECK_S = 0.25  # how often a follower notices that its pod or container instance is gone


def rfc3339nano(t):
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + ".%09dZ" % int((t % 1) * 1e9)


def launcher_lines(pod, container, previous_run=False):
    """What a container instance printed before anyone looked (deterministic for the pod)."""
    md = pod["metadata"]
    vm = md.get("labels", {}).get("vm.kubevirt.io/name", md["name"])
    ns = md.get("namespace", "")
    if container == "compute":
        msgs = ["Collected all requested hook sidecar sockets",
                "Sorted all collected sidecar sockets per hook point based on their priority and name: map[]",
                "Connecting to libvirt daemon: qemu+unix:///session?socket=/var/run/libvirt/virtqemud-sock",
                "Connected to libvirt daemon",
                "Registered libvirt event notify callback",
                "Marked as ready",
                "Domain name event: %s_%s" % (ns, vm)]
        if previous_run:
            msgs += ["Failed to start VirtualMachineInstance with flags 0.",
                     "virError(Code=1, Domain=10, Message='internal error: process exited while connecting "
                     "to monitor')",
                     "dirty virt-launcher shutdown: exit-code 1"]
        else:
            msgs += ["DomainLifecycle event Domain event=\"started\" detail=\"booted\" with event id 4 "
                     "reason 1 received",
                     "Domain started."]
        return ['{"component":"virt-launcher","level":"%s","msg":"%s","pos":"virt-launcher.go:%d",'
                '"timestamp":"__TS__"}' % ("error" if "Failed" in m or "virError" in m or "dirty" in m else "info",
                                           m.replace('"', '\\"'), 100 + i * 7)
                for i, m in enumerate(msgs)]
    if container == "volumecontainerdisk":
        return ["container-disk: serving /disk/downloaded for %s" % vm]
    return ["%s started" % container]


class Logs:
    def __init__(self, store):
        self.store = store
        self.mu = threading.Lock()
        self.cond = threading.Condition(self.mu)
        self.lines = {}  # (ns, pod, container, containerID) -> [(time, bytes)]

    # ---------------------------------------------------------------- instances

    @staticmethod
    def _status(pod, container):
        for cs in (pod.get("status") or {}).get("containerStatuses") or []:
            if cs.get("name") == container:
                return cs
        return None

    def instance(self, pod, container, previous):
        """The containerID a request reads, or the kubelet's error."""
        name = pod["metadata"]["name"]
        cs = self._status(pod, container)
        if cs is None:
            raise ApiError(400, "BadRequest", 'container "%s" in pod "%s" is waiting to start: '
                           'ContainerCreating' % (container, name))
        state, last = cs.get("state") or {}, cs.get("lastState") or {}
        lt = last.get("terminated")
        if previous:
            if not lt or not lt.get("containerID"):
                raise ApiError(400, "BadRequest", 'previous terminated container "%s" in pod "%s" not found'
                               % (container, name))
            return lt["containerID"]
        if "running" in state:
            return cs.get("containerID") or "running:" + container
        if "terminated" in state:
            cid = state["terminated"].get("containerID") or cs.get("containerID")
            if cid:
                return cid
            if lt and lt.get("containerID"):
                return lt["containerID"]
            raise ApiError(400, "BadRequest", 'container "%s" in pod "%s" is terminated' % (container, name))
        if lt:
            if not lt.get("containerID"):
                raise ApiError(400, "BadRequest", 'container "%s" in pod "%s" is terminated' % (container, name))
            return lt["containerID"]
        reason = (state.get("waiting") or {}).get("reason")
        if reason == "ErrImagePull":
            why = "image can't be pulled"
        elif reason == "ImagePullBackOff":
            why = "trying and failing to pull image"
        elif reason:
            why = reason
        else:
            raise ApiError(400, "BadRequest", 'container "%s" in pod "%s" is waiting to start - no logs yet'
                           % (container, name))
        raise ApiError(400, "BadRequest", 'container "%s" in pod "%s" is waiting to start: %s'
                       % (container, name, why))

    def _lines(self, pod, container, cid):
        """The instance's lines, made up on first use (caller holds mu)."""
        md = pod["metadata"]
        key = (md.get("namespace", ""), md["name"], container, cid)
        got = self.lines.get(key)
        if got is None:
            cs = self._status(pod, container) or {}
            lt = (cs.get("lastState") or {}).get("terminated") or {}
            previous_run = lt.get("containerID") == cid
            t0 = time.time() - 1.0
            got = []
            for i, ln in enumerate(launcher_lines(pod, container, previous_run)):
                t = t0 + i * 0.01
                got.append((t, ln.replace("__TS__", rfc3339nano(t)).encode()))
            self.lines[key] = got
        return got

    # ---------------------------------------------------------------- control API

    def append(self, ns, pod_name, container, lines, previous=False):
        pod = self.store.get("pods", ns, pod_name)
        if pod is None:
            raise ApiError(404, "NotFound", 'pods "%s" not found' % pod_name)
        cid = self.instance(pod, container, previous)
        with self.mu:
            got = self._lines(pod, container, cid)
            now = time.time()
            for ln in lines:
                got.append((now, ln.encode() if isinstance(ln, str) else ln))
            self.cond.notify_all()

    def restart(self, cluster, ns, pod_name, container, exit_code=1):
        """The container instance exits and the kubelet starts a new one (restartCount + 1)."""
        st = self.store
        with st.lock:
            pod = st.get("pods", ns, pod_name)
            if pod is None:
                raise ApiError(404, "NotFound", 'pods "%s" not found' % pod_name)
            if self._status(pod, container) is None:
                raise ApiError(400, "BadRequest", "container %s is not valid for pod %s" % (container, pod_name))
            now = time.time()
            new_cid = "containerd://%064x" % cluster.rng.getrandbits(256)

            def fn(o):
                for cs in o["status"]["containerStatuses"]:
                    if cs["name"] != container:
                        continue
                    old = cs.get("containerID") or "running:" + container
                    started = ((cs.get("state") or {}).get("running") or {}).get("startedAt") or rfc3339nano(now)[:19] + "Z"
                    cs["lastState"] = {"terminated": {"exitCode": exit_code, "reason": "Error" if exit_code else "Completed",
                                                      "startedAt": started, "finishedAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now)),
                                                      "containerID": old}}
                    cs["containerID"] = new_cid
                    cs["restartCount"] = cs.get("restartCount", 0) + 1
                    cs["state"] = {"running": {"startedAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now))}}
            st.update("pods", ns, pod_name, fn)
        with self.mu:
            self.cond.notify_all()

    # ---------------------------------------------------------------- the API

    def serve(self, handler, ns, pod_name, params):
        st = self.store
        pod = st.get("pods", ns, pod_name)
        if pod is None:
            raise ApiError(404, "NotFound", 'pods "%s" not found' % pod_name,
                           {"name": pod_name, "kind": "pods"})
        names = [c["name"] for c in pod["spec"].get("containers", [])]
        container = params.get("container", "")
        if not container:
            if len(names) != 1:
                raise ApiError(400, "BadRequest", "a container name must be specified for pod %s, choose one of: "
                               "[%s]" % (pod_name, " ".join(names)))
            container = names[0]
        if container not in names:
            raise ApiError(400, "BadRequest", "container %s is not valid for pod %s" % (container, pod_name))

        def boolp(k):
            return params.get(k, "") in ("true", "1", "True")

        def intp(k):
            v = params.get(k)
            if v is None or v == "":
                return None
            try:
                n = int(v)
            except ValueError:
                raise ApiError(400, "BadRequest", "%s: invalid value %r" % (k, v))
            if n < 0 or (k == "sinceSeconds" and n < 1) or (k == "limitBytes" and n < 1):
                raise ApiError(422, "Invalid", 'PodLogOptions "%s" is invalid: %s: Invalid value: %d: must be '
                               'greater than 0' % (pod_name, k, n))
            return n

        follow, previous, stamps = boolp("follow"), boolp("previous"), boolp("timestamps")
        tail, since, limit = intp("tailLines"), intp("sinceSeconds"), intp("limitBytes")
        cid = self.instance(pod, container, previous)
        uid = pod["metadata"]["uid"]

        def fmt(t, ln):
            return (rfc3339nano(t).encode() + b" " if stamps else b"") + ln + b"\n"

        with self.mu:
            got = self._lines(pod, container, cid)
            sel = got
            if since is not None:
                cut = time.time() - since
                sel = [x for x in sel if x[0] >= cut]
            if tail is not None:
                sel = sel[len(sel) - tail:] if tail < len(sel) else sel
                if tail == 0:
                    sel = []
            first = b"".join(fmt(t, ln) for t, ln in sel)
            pos = len(got)
        sent = 0
        if limit is not None and len(first) > limit:
            first = first[:limit]
        handler.send_response(200)
        handler.send_header("Content-Type", "text/plain")
        handler.send_header("Cache-Control", "no-cache, private")
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()
        if first:
            handler.chunk(first)
            sent += len(first)
        handler.wfile.flush()
        if follow and not previous:
            handler.close_connection = True
            while limit is None or sent < limit:
                with self.mu:
                    got = self.lines.get((ns, pod_name, container, cid), [])
                    if len(got) <= pos:
                        self.cond.wait(FOLLOW_CHECK_S)
                        got = self.lines.get((ns, pod_name, container, cid), [])
                    new = got[pos:]
                    pos = len(got)
                if new:
                    data = b"".join(fmt(t, ln) for t, ln in new)
                    if limit is not None:
                        data = data[:limit - sent]
                    handler.chunk(data)
                    handler.wfile.flush()
                    sent += len(data)
                    continue
                cur = st.get("pods", ns, pod_name)
                if cur is None or cur["metadata"]["uid"] != uid:
                    break
                try:
                    if self.instance(cur, container, False) != cid:
                        break
                except ApiError:
                    break
        handler.wfile.write(b"0\r\n\r\n")
        handler.wfile.flush()
