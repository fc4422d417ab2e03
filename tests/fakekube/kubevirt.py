"""KubeVirt's controllers, faked: object builders, lifecycle state machines,
subresource rules, scenarios and the churn generator.

Objects follow the shapes of ../shared/kubevirt/roundtrip-*.json with
consistent data: VM -> VMI (ownerReference uid = VM uid) -> virt-launcher pod
(ownerReference uid = VMI uid, label kubevirt.io/created-by = VMI uid).
Transitions happen on a timer thread, one phase per `step` seconds.
"""

import bisect
import heapq
import hashlib
import json
import random
import threading
import time

from store import ApiError, RESOURCES, new_uid, now_iso

KV_VERSION = "v1.6.0"
LAUNCHER_IMAGE = "quay.io/kubevirt/virt-launcher:" + KV_VERSION
DISK_IMAGE = "quay.io/kubevirt/cirros-container-disk-demo:" + KV_VERSION
SCEN_ANN = "fakekube.kvcon.io/scenario"
NODES = ["node01", "node02", "node03"]
NODE_IPS = {"node01": "192.168.66.101", "node02": "192.168.66.102", "node03": "192.168.66.103"}

SCENARIOS = {
    "stuck-launcher": "launcher pod stays Pending; FailedScheduling '0/3 nodes are available: 3 Insufficient memory.'",
    "imagepull": "container disk image cannot be pulled: ErrImagePull on the launcher pod, VM ErrImagePull",
    "crashloop": "launcher compute container in CrashLoopBackOff, VM CrashLoopBackOff with startFailure",
    "pvc-missing": "VM references a PVC that does not exist: VMI Pending, no pod, VM ErrorPvcNotFound",
    "ready-false": "VMI Running but Ready=False (readiness probe failing)",
    "agent-missing": "VMI Running and Ready, but no AgentConnected condition and no guestOSInfo",
    "owner-mismatch": "launcher pod labelled created-by=<VMI uid> but owned by another UID",
    "restart-required": "VM Running with a RestartRequired condition (template changed)",
    "migration-failed": "a failed migration (VMIM Failed, migrationState.failed); further migrations fail too",
    "weird": "unicode names, names/annotations/event messages carrying terminal escape sequences",
    "dv-importing": "root disk DataVolume ImportInProgress (37.50%), PVC Bound; VM Provisioning, no VMI",
    "pvc-pending": "root disk PVC Pending (storage class slow-nfs not found); VM WaitingForVolumeBinding, no VMI",
    "rwo-migration": "runs from a ReadWriteOnce PVC (PV Retain): VMI LiveMigratable False DisksNotLiveMigratable",
    "dv-error": "root disk DataVolume import Failed (the source answers 404); VM DataVolumeError, no VMI",
    "dv-upload": "root disk DataVolume UploadReady, waiting for virtctl image-upload; VM WaitingForReceiver, no VMI",
    "replicaset": "a VirtualMachineInstanceReplicaSet of 2 replicas: 2 Running VMIs it owns (no VM), named after it",
}

WEIRD_NAMES = [
    "vm-\u00fcn\u00efc\u00f6d\u00e9",
    "\u865a\u62df\u673a-\u4e00",
    "vm-\U0001f680-rocket",
    "esc-\x1b]0;pwned\x07-vm",
    "bidi-\u202egnp.exe",
    "long-" + "x" * 240,
]
ESC_TEXT = ("title\x1b]0;pwned\x07 clear\x1b[2J\x1b[H osc52\x1b]52;c;aGVsbG8=\x07 "
            "c1\x9b31m bell\x07 del\x7f nul-free \u202eevil")


def ts(t):
    return now_iso(t)


class Cluster:
    def __init__(self, store, step=0.3, seed=1, scen_ns="default", kubevirt=True):
        self.store = store
        self.step = step
        self.rng = random.Random(seed)
        self.churn_rng = random.Random(seed + 1)
        self.scen_ns = scen_ns
        self.kubevirt = kubevirt
        self.timers = []
        self.tseq = 0
        self.tcond = threading.Condition(store.lock)
        self.stopping = False
        self.churn_rate = 0.0
        self.churn_paused = False
        self.churn_count = 0
        self._churn_base_rate = 0.0
        self.event_cap = 50000
        self.busy = set()  # (ns, vm) with an operation in flight
        self.thread = threading.Thread(target=self._timer_loop, name="sim", daemon=True)
        self.churn_thread = threading.Thread(target=self._churn_loop, name="churn", daemon=True)

    # ---------------------------------------------------------------- timers

    def start_threads(self):
        self.thread.start()
        self.churn_thread.start()

    def later(self, delay, fn, *args):
        with self.store.lock:
            self.tseq += 1
            heapq.heappush(self.timers, (time.monotonic() + delay, self.tseq, fn, args))
            self.tcond.notify_all()

    def _timer_loop(self):
        with self.store.lock:
            while not self.stopping:
                nowm = time.monotonic()
                if self.timers and self.timers[0][0] <= nowm:
                    _, _, fn, args = heapq.heappop(self.timers)
                    try:
                        fn(*args)
                    except Exception as e:  # a broken step must not kill the simulator
                        import traceback
                        traceback.print_exc()
                        print("fakekube: step failed:", e, flush=True)
                    continue
                wait = (self.timers[0][0] - nowm) if self.timers else 1.0
                self.tcond.wait(min(wait, 1.0))

    def idle(self):
        """True when no state transition is pending (tests poll this)."""
        with self.store.lock:
            # every flow advances through timers; a flow without one has reached its end
            return not self.timers

    # ---------------------------------------------------------------- rng helpers

    def suffix(self, n=5):
        return "".join(self.rng.choice("bcdfghjklmnpqrstvwxz2456789") for _ in range(n))

    def uid(self):
        return new_uid(self.rng)

    def pod_ip(self):
        return "10.244.%d.%d" % (self.rng.randrange(0, 3), self.rng.randrange(2, 254))

    def mac(self):
        return "02:%02x:%02x:%02x:%02x:%02x" % tuple(self.rng.randrange(256) for _ in range(5))

    # ---------------------------------------------------------------- builders

    def build_vm(self, ns, name, run_strategy="Always", created=None, labels=None,
                 annotations=None, memory="128Mi", volumes=None):
        created = created or time.time()
        lab = {"kubevirt.io/vm": name}
        lab.update(labels or {})
        ann = {"kubevirt.io/latest-observed-api-version": "v1",
               "kubevirt.io/storage-observed-api-version": "v1"}
        ann.update(annotations or {})
        vols = volumes or [
            {"name": "containerdisk", "containerDisk": {"image": DISK_IMAGE, "imagePullPolicy": "IfNotPresent"}},
            {"name": "cloudinitdisk", "cloudInitNoCloud": {"userData": "#!/bin/sh\n\necho 'printed from cloud-init userdata'\n"}},
        ]
        return {
            "apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine",
            "metadata": {"name": name, "namespace": ns, "uid": self.uid(), "generation": 1,
                         "creationTimestamp": ts(created), "labels": lab, "annotations": ann,
                         "finalizers": ["kubevirt.io/virtualMachineControllerFinalize"]},
            "spec": {
                "runStrategy": run_strategy,
                "template": {
                    "metadata": {"creationTimestamp": None,
                                 "labels": {"kubevirt.io/vm": name, "kubevirt.io/domain": name}},
                    "spec": {
                        "architecture": "amd64",
                        "domain": {
                            "cpu": {"cores": 1, "sockets": 1, "threads": 1},
                            "devices": {
                                "disks": [{"name": v["name"], "disk": {"bus": "virtio"}} for v in vols],
                                "interfaces": [{"name": "default", "masquerade": {}}],
                                "rng": {},
                            },
                            "machine": {"type": "q35"},
                            "memory": {"guest": memory},
                            "resources": {"requests": {"memory": memory}},
                        },
                        "networks": [{"name": "default", "pod": {}}],
                        "terminationGracePeriodSeconds": 180,
                        "volumes": vols,
                    },
                },
            },
            "status": {"printableStatus": "Stopped", "runStrategy": run_strategy,
                       "desiredGeneration": 1, "observedGeneration": 1,
                       "conditions": [self.cond("Ready", "False", "VMINotExists", "VMI does not exist", created)],
                       "volumeSnapshotStatuses": [
                           {"name": v["name"], "enabled": False,
                            "reason": "Snapshot is not supported for this volumeSource type [%s]" % v["name"]}
                           for v in vols]},
        }

    @staticmethod
    def cond(typ, status, reason="", message="", t=None):
        c = {"type": typ, "status": status, "lastProbeTime": None,
             "lastTransitionTime": ts(t if t is not None else time.time())}
        if reason:
            c["reason"] = reason
        if message:
            c["message"] = message
        return c

    def build_vmi(self, vm, created=None):
        created = created or time.time()
        md = vm["metadata"]
        tpl = vm["spec"].get("template") or {}
        spec = json.loads(json.dumps(tpl.get("spec") or {}))
        dom = spec.setdefault("domain", {})
        dom.setdefault("devices", {})
        dom.setdefault("memory", {}).setdefault("guest", "128Mi")
        spec["domain"]["firmware"] = {"uuid": new_uid(self.rng), "serial": new_uid(self.rng)}
        spec["domain"]["features"] = {"acpi": {"enabled": True}}
        spec.setdefault("evictionStrategy", "None")  # the template's, else the cluster's default
        return {
            "apiVersion": "kubevirt.io/v1", "kind": "VirtualMachineInstance",
            "metadata": {
                "name": md["name"], "namespace": md["namespace"], "uid": self.uid(), "generation": 1,
                "creationTimestamp": ts(created),
                "labels": dict((tpl.get("metadata") or {}).get("labels") or {}),
                "annotations": {"kubevirt.io/latest-observed-api-version": "v1",
                                "kubevirt.io/storage-observed-api-version": "v1",
                                "kubevirt.io/vm-generation": str(md.get("generation", 1))},
                "finalizers": ["kubevirt.io/virtualMachineControllerFinalize",
                               "foregroundDeleteVirtualMachine"],
                "ownerReferences": [{"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine",
                                     "name": md["name"], "uid": md["uid"],
                                     "controller": True, "blockOwnerDeletion": True}],
            },
            "spec": spec,
            "status": {"phase": "Pending", "phaseTransitionTimestamps": [
                {"phase": "Pending", "phaseTransitionTimestamp": ts(created)}],
                "guestOSInfo": {}, "qosClass": "Burstable",
                "runtimeUser": 107, "currentCPUTopology": {"cores": 1, "sockets": 1, "threads": 1},
                "memory": {"guestAtBoot": spec["domain"]["memory"]["guest"],
                           "guestCurrent": spec["domain"]["memory"]["guest"],
                           "guestRequested": spec["domain"]["memory"]["guest"]},
                "virtualMachineRevisionName": "revision-start-vm-%s-1" % md["uid"],
                "conditions": [],
            },
        }

    def build_pod(self, vmi, created=None, node=None, migration_uid=None):
        created = created or time.time()
        md = vmi["metadata"]
        vm_name = md["name"]
        name = "virt-launcher-%s-%s" % (vm_name, self.suffix())
        labels = {"kubevirt.io": "virt-launcher", "kubevirt.io/created-by": md["uid"],
                  "vm.kubevirt.io/name": vm_name, "kubevirt.io/domain": vm_name,
                  "kubevirt.io/vm": vm_name}
        if migration_uid:
            labels["kubevirt.io/migrationJobUID"] = migration_uid
        mem = ((vmi.get("spec") or {}).get("domain") or {}).get("memory", {}).get("guest", "128Mi")
        pod = {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {
                "name": name, "generateName": "virt-launcher-%s-" % vm_name,
                "namespace": md["namespace"], "uid": self.uid(), "creationTimestamp": ts(created),
                "labels": labels,
                "annotations": {"kubevirt.io/domain": vm_name,
                                "kubevirt.io/migrationTransportUnix": "true",
                                "kubectl.kubernetes.io/default-container": "compute",
                                "post.hook.backup.velero.io/command": "[\"/usr/bin/virt-freezer\", \"--unfreeze\", \"--name\", \"%s\", \"--namespace\", \"%s\"]" % (vm_name, md["namespace"]),
                                "post.hook.backup.velero.io/container": "compute"},
                "ownerReferences": [{"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachineInstance",
                                     "name": vm_name, "uid": md["uid"],
                                     "controller": True, "blockOwnerDeletion": True}],
            },
            "spec": {
                "automountServiceAccountToken": False,
                "containers": [
                    {"name": "compute", "image": LAUNCHER_IMAGE,
                     "command": ["/usr/bin/virt-launcher-monitor", "--qemu-timeout", "275s",
                                 "--name", vm_name, "--uid", md["uid"], "--namespace", md["namespace"]],
                     "resources": {"limits": {"devices.kubevirt.io/kvm": "1", "devices.kubevirt.io/tun": "1"},
                                   "requests": {"cpu": "100m", "memory": "%s" % mem}},
                     "securityContext": {"runAsNonRoot": True, "runAsUser": 107},
                     "terminationMessagePath": "/dev/termination-log",
                     "terminationMessagePolicy": "File", "imagePullPolicy": "IfNotPresent"},
                    {"name": "volumecontainerdisk", "image": DISK_IMAGE,
                     "command": ["/usr/bin/container-disk"],
                     # virt-controller's container disk: requests as KubeVirt sets them
                     "resources": {"limits": {"cpu": "10m", "memory": "40M"},
                                   "requests": {"cpu": "1m", "memory": "1M"}},
                     "terminationMessagePath": "/dev/termination-log",
                     "terminationMessagePolicy": "File", "imagePullPolicy": "IfNotPresent"},
                ],
                "dnsPolicy": "ClusterFirst", "enableServiceLinks": False,
                "hostname": vm_name[:63],
                "nodeSelector": {"kubevirt.io/schedulable": "true"},
                "preemptionPolicy": "PreemptLowerPriority", "priority": 0,
                "restartPolicy": "Never", "schedulerName": "default-scheduler",
                "securityContext": {"runAsNonRoot": True, "runAsUser": 107},
                "serviceAccount": "default", "serviceAccountName": "default",
                "terminationGracePeriodSeconds": 30,
                "tolerations": [{"effect": "NoExecute", "key": "node.kubernetes.io/not-ready",
                                 "operator": "Exists", "tolerationSeconds": 300}],
            },
            "status": {"phase": "Pending", "qosClass": "Burstable"},
        }
        if node:
            self._pod_scheduled(pod, node, created)
        return pod

    def _pod_scheduled(self, pod, node, t):
        pod["spec"]["nodeName"] = node
        pod["metadata"]["labels"]["kubevirt.io/nodeName"] = node
        st = pod["status"]
        st["conditions"] = [self.cond("PodScheduled", "True", t=t)]
        st["hostIP"] = NODE_IPS.get(node, "192.168.66.110")
        st["hostIPs"] = [{"ip": st["hostIP"]}]
        st["startTime"] = ts(t)
        st["containerStatuses"] = [self._cstat(c, False, {"waiting": {"reason": "ContainerCreating"}})
                                   for c in pod["spec"]["containers"]]

    @staticmethod
    def _cstat(c, ready, state, restarts=0):
        return {"name": c["name"], "image": c["image"], "imageID": "", "containerID": "",
                "ready": ready, "started": ready, "restartCount": restarts, "state": state,
                "lastState": {}}

    def _image_id(self, image):
        """The digest the node resolved image to: one per image in a cluster (every launcher of a KubeVirt
        release runs the same virt-launcher digest), not one per pod. The RNG draws as before, so the other
        objects of a seed stay as they were."""
        self.rng.getrandbits(256)
        return image.split(":")[0] + "@sha256:" + hashlib.sha256(image.encode()).hexdigest()

    def _pod_running(self, pod, t):
        st = pod["status"]
        st["phase"] = "Running"
        ip = self.pod_ip()
        st["podIP"] = ip
        st["podIPs"] = [{"ip": ip}]
        st["conditions"] = [self.cond("PodReadyToStartContainers", "True", t=t),
                            self.cond("Initialized", "True", t=t),
                            self.cond("Ready", "True", t=t),
                            self.cond("ContainersReady", "True", t=t),
                            self.cond("PodScheduled", "True", t=t)]
        st["containerStatuses"] = [
            dict(self._cstat(c, True, {"running": {"startedAt": ts(t)}}),
                 imageID=self._image_id(c["image"]),
                 containerID="containerd://%064x" % self.rng.getrandbits(256))
            for c in pod["spec"]["containers"]]
        return ip

    def build_event(self, obj, reason, message, typ="Normal", component="virtualmachine-controller",
                    host=None, t=None, count=1):
        t = t or time.time()
        md = obj["metadata"]
        res = RESOURCES.get(kind_plural(obj["kind"]))
        ev = {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": "%s.%016x" % (md["name"], self.rng.getrandbits(64)),
                         "namespace": md.get("namespace", "default"),
                         "creationTimestamp": ts(t), "uid": self.uid()},
            "involvedObject": {"kind": obj["kind"], "namespace": md.get("namespace", ""),
                               "name": md["name"], "uid": md["uid"],
                               "apiVersion": res.api_version if res else "v1",
                               "resourceVersion": md.get("resourceVersion", "")},
            "reason": reason, "message": message,
            "source": {"component": component},
            "firstTimestamp": ts(t - (count - 1) * 30 if count > 1 else t), "lastTimestamp": ts(t),
            "count": count, "type": typ, "eventTime": None,
            "reportingComponent": component, "reportingInstance": host or "",
        }
        if host:
            ev["source"]["host"] = host
        return ev

    def emit(self, obj, reason, message, typ="Normal", component="virtualmachine-controller",
             host=None, count=1):
        """Record an event, aggregating repeats of (object, reason, message) as the
        event recorder does (count + lastTimestamp)."""
        md = obj["metadata"]
        ns = md.get("namespace", "default")
        st = self.store
        with st.lock:
            for e in self._events_for(ns, md["uid"]):
                if e["reason"] == reason and e["message"] == message:
                    def bump(o):
                        o["count"] = o.get("count", 1) + 1
                        o["lastTimestamp"] = now_iso()
                    return st.update("events", ns, e["metadata"]["name"], bump)
            ev = self.build_event(obj, reason, message, typ, component, host, count=count)
            out = st.create("events", ev)
            self._event_index_add(ev)
            self._cap_events()
            return out

    def _events_for(self, ns, uid):
        idx = getattr(self, "_evidx", None)
        if idx is None:
            return []
        names = idx.get(uid, [])
        out = []
        for n in list(names):
            o = self.store.get("events", ns, n)
            if o is None:
                names.remove(n)
            else:
                out.append(o)
        return out

    def _event_index_add(self, ev):
        if not hasattr(self, "_evidx"):
            self._evidx = {}
            self._evorder = []
        self._evidx.setdefault(ev["involvedObject"]["uid"], []).append(ev["metadata"]["name"])
        self._evorder.append((ev["metadata"]["namespace"], ev["metadata"]["name"]))

    def _cap_events(self):
        order = getattr(self, "_evorder", [])
        while len(self.store.objs["events"]) > self.event_cap and order:
            ns, n = order.pop(0)
            self.store.delete("events", ns, n)

    def add_event_quiet(self, ev):
        self.store.create("events", ev)
        self._event_index_add(ev)

    # ---------------------------------------------------------------- status helpers

    @staticmethod
    def set_cond(obj, c):
        conds = obj.setdefault("status", {}).setdefault("conditions", [])
        for i, old in enumerate(conds):
            if old["type"] == c["type"]:
                if old["status"] == c["status"]:
                    c["lastTransitionTime"] = old.get("lastTransitionTime", c["lastTransitionTime"])
                conds[i] = c
                return
        conds.append(c)

    @staticmethod
    def del_cond(obj, typ):
        conds = obj.setdefault("status", {}).get("conditions") or []
        obj["status"]["conditions"] = [c for c in conds if c["type"] != typ]

    @staticmethod
    def get_cond(obj, typ):
        for c in (obj.get("status") or {}).get("conditions") or []:
            if c["type"] == typ:
                return c
        return None

    def vmi_phase(self, vmi, phase, t=None):
        t = t or time.time()
        st = vmi.setdefault("status", {})
        if st.get("phase") == phase:
            return
        st["phase"] = phase
        st.setdefault("phaseTransitionTimestamps", []).append(
            {"phase": phase, "phaseTransitionTimestamp": ts(t)})

    def vm_status(self, vm, printable, vmi_exists=None, ready=None, t=None):
        st = vm.setdefault("status", {})
        st["printableStatus"] = printable
        st["runStrategy"] = vm["spec"].get("runStrategy", "Halted")
        if vmi_exists is not None:
            if vmi_exists:
                st["created"] = True
            else:
                st.pop("created", None)
        if ready is not None:
            if ready:
                st["ready"] = True
                self.set_cond(vm, self.cond("Ready", "True", t=t))
            else:
                st.pop("ready", None)
                if vmi_exists is not False:
                    self.set_cond(vm, self.cond("Ready", "False", "GuestNotRunning",
                                                "Guest VM is not reported as running", t))
        if vmi_exists is False:
            self.set_cond(vm, self.cond("Ready", "False", "VMINotExists", "VMI does not exist", t))

    def scenario_of(self, vm):
        return ((vm or {}).get("metadata", {}).get("annotations") or {}).get(SCEN_ANN, "")

    # ---------------------------------------------------------------- lookups

    def vm_of_vmi(self, vmi):
        for o in vmi["metadata"].get("ownerReferences") or []:
            if o.get("kind") == "VirtualMachine":
                vm = self.store.get("virtualmachines", vmi["metadata"]["namespace"], o["name"])
                if vm and vm["metadata"]["uid"] == o["uid"]:
                    return vm
        return None

    def pods_of_vmi(self, vmi):
        ns, uid = vmi["metadata"]["namespace"], vmi["metadata"]["uid"]
        st = self.store
        keys = st.keys["pods"]
        lo = bisect.bisect_left(keys, (ns, "virt-launcher-"))
        hi = bisect.bisect_left(keys, (ns, "virt-launcher.\x00"))
        out = []
        for k in keys[lo:hi]:
            p = st.objs["pods"][k].obj
            if p["metadata"].get("labels", {}).get("kubevirt.io/created-by") == uid:
                out.append(p)
        return out

    # ---------------------------------------------------------------- bulk generation (final states, no timers)

    def gen_running(self, vm, created, phase_gap=5.0, agent=True, node=None, events=True):
        """Create vm (already built) plus a Running VMI and launcher pod at once."""
        st = self.store
        node = node or self.rng.choice(NODES)
        t0 = created + 3
        vm["spec"]["runStrategy"] = vm["spec"].get("runStrategy", "Always")
        vmi = self.build_vmi(vm, t0)
        pod = self.build_pod(vmi, t0, node)
        ip = self._pod_running(pod, t0 + phase_gap)
        self._vmi_running(vmi, pod, node, ip, t0, phase_gap, agent)
        self.vm_status(vm, "Running", True, True, t0 + 4 * phase_gap)
        self.set_cond(vm, self.cond("LiveMigratable", "True", t=t0 + 4 * phase_gap))
        st.create("virtualmachines", vm)
        st.create("virtualmachineinstances", vmi)
        st.create("pods", pod)
        if events:
            self.add_event_quiet(self.build_event(
                vm, "SuccessfulCreate", "Started the virtual machine by creating the new virtual machine instance %s" % vm["metadata"]["name"],
                t=t0))
            self.add_event_quiet(self.build_event(
                vmi, "Started", "VirtualMachineInstance started.", component="virt-handler", host=node,
                t=t0 + 4 * phase_gap))
        return vm, vmi, pod

    def _vmi_running(self, vmi, pod, node, ip, t0, gap, agent=True):
        vmi["metadata"]["labels"]["kubevirt.io/nodeName"] = node
        st = vmi["status"]
        st["phaseTransitionTimestamps"] = [
            {"phase": p, "phaseTransitionTimestamp": ts(t0 + i * gap)}
            for i, p in enumerate(["Pending", "Scheduling", "Scheduled", "Running"])]
        st["phase"] = "Running"
        st["nodeName"] = node
        st["activePods"] = {pod["metadata"]["uid"]: node}
        st["launcherContainerImageVersion"] = LAUNCHER_IMAGE
        st["migrationMethod"] = "BlockMigration"
        st["migrationTransport"] = "Unix"
        st["selinuxContext"] = "none"
        st["machine"] = {"type": "pc-q35-rhel9.4.0"}
        st["interfaces"] = [{"name": "default", "interfaceName": "eth0", "ipAddress": ip,
                             "ipAddresses": [ip], "mac": self.mac(), "queueCount": 1,
                             "infoSource": "domain", "linkState": "up", "podInterfaceName": "eth0"}]
        st["volumeStatus"] = [{"name": v["name"], "target": "vd" + "abcdefgh"[i]}
                              for i, v in enumerate(vmi["spec"].get("volumes", []))]
        t = t0 + 3 * gap
        self.set_cond(vmi, self.cond("Ready", "True", t=t))
        self.set_cond(vmi, self.cond("LiveMigratable", "True", t=t))
        self.set_cond(vmi, self.cond("StorageLiveMigratable", "True", t=t))
        if agent:
            self._vmi_agent(vmi, t + gap)

    def _vmi_agent(self, vmi, t):
        self.set_cond(vmi, self.cond("AgentConnected", "True", t=t))
        vmi["status"]["guestOSInfo"] = {
            "id": "cirros", "name": "CirrOS", "prettyName": "CirrOS 0.6.2",
            "version": "0.6.2", "versionId": "0.6.2", "kernelRelease": "5.15.0-71-generic",
            "kernelVersion": "#78-Ubuntu SMP Tue Apr 18 09:00:29 UTC 2023", "machine": "x86_64"}
        for itf in vmi["status"].get("interfaces", []):
            itf["infoSource"] = "domain, guest-agent"

    def generate(self, n_vms, n_ns, created_span=30 * 86400):
        """Bulk population: ~80% Always/Running, ~12% Halted/Stopped, the rest Manual or
        RerunOnFailure running."""
        st = self.store
        nowt = time.time()
        with st.lock:
            st.lazy = True
            try:
                self._generate(n_vms, n_ns, nowt, created_span)
            finally:
                st.lazy = False

    def _generate(self, n_vms, n_ns, nowt, created_span):
        st = self.store
        for i in range(n_ns):
            self.ensure_namespace("ns-%02d" % i)
        prefixes = ["web", "db", "cache", "build", "ci", "app", "batch", "edge", "win", "lab"]
        for i in range(n_vms):
            ns = "ns-%02d" % (i % max(1, n_ns))
            name = "%s-%05d" % (prefixes[i % len(prefixes)], i)
            created = nowt - self.rng.uniform(600, created_span)
            r = self.rng.random()
            tier = ["frontend", "backend", "infra"][i % 3]
            labels = {"app": prefixes[i % len(prefixes)], "tier": tier}
            if r < 0.12:
                vm = self.build_vm(ns, name, "Halted", created, labels)
                st.create("virtualmachines", vm)
                continue
            rs = "Always" if r < 0.92 else ("Manual" if r < 0.96 else "RerunOnFailure")
            vm = self.build_vm(ns, name, rs, created, labels)
            self.gen_running(vm, created, agent=self.rng.random() < 0.9)

    def ensure_namespace(self, name, created=None):
        if self.store.get("namespaces", "", name) is None:
            self.store.create("namespaces", {
                "apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": name, "labels": {"kubernetes.io/metadata.name": name},
                             "creationTimestamp": ts(created or time.time() - 45 * 86400)},
                "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}})

    def base_objects(self):
        st = self.store
        with st.lock:
            for ns in ["default", "kube-system", "kube-public"] + (["kubevirt"] if self.kubevirt else []):
                self.ensure_namespace(ns)
            for n in NODES:
                st.create("nodes", {
                    "apiVersion": "v1", "kind": "Node",
                    "metadata": {"name": n, "creationTimestamp": ts(time.time() - 50 * 86400),
                                 "labels": {"kubernetes.io/hostname": n,
                                                       "kubevirt.io/schedulable": "true",
                                                       "node-role.kubernetes.io/worker": ""}},
                    "spec": {},
                    "status": {"conditions": [self.cond("Ready", "True", "KubeletReady",
                                                        "kubelet is posting ready status")],
                               "addresses": [{"type": "InternalIP", "address": NODE_IPS[n]},
                                             {"type": "Hostname", "address": n}],
                               "nodeInfo": {"kubeletVersion": "v1.32.4", "architecture": "amd64",
                                            "operatingSystem": "linux"},
                               # virt-handler's device plugins advertise KVM and tun (1k each)
                               "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110",
                                            "devices.kubevirt.io/kvm": "1k", "devices.kubevirt.io/tun": "1k"},
                               # the kubelet's reservations (system-reserved, eviction threshold) off capacity
                               "allocatable": {"cpu": "7910m", "memory": "32318852Ki", "pods": "110",
                                               "devices.kubevirt.io/kvm": "1k", "devices.kubevirt.io/tun": "1k"}}})
            if self.kubevirt:
                for comp, node in [("virt-api", "node01"), ("virt-controller", "node02"),
                                   ("virt-handler", "node01"), ("virt-handler", "node02"),
                                   ("virt-handler", "node03"), ("virt-operator", "node03")]:
                    t = time.time() - 40 * 86400
                    # the requests of KubeVirt's install strategy
                    req = {"virt-api": ("5m", "500Mi"), "virt-controller": ("10m", "275Mi"),
                           "virt-handler": ("10m", "357Mi"), "virt-operator": ("10m", "450Mi")}[comp]
                    pod = {"apiVersion": "v1", "kind": "Pod",
                           "metadata": {"name": "%s-%s" % (comp, self.suffix()), "namespace": "kubevirt",
                                        "uid": self.uid(), "creationTimestamp": ts(t),
                                        "labels": {"kubevirt.io": comp}},
                           "spec": {"containers": [{"name": comp, "image": "quay.io/kubevirt/%s:%s" % (comp, KV_VERSION),
                                                    "resources": {"requests": {"cpu": req[0], "memory": req[1]}}}],
                                    "nodeName": node},
                           "status": {"phase": "Pending"}}
                    self._pod_scheduled(pod, node, t)
                    self._pod_running(pod, t + 5)
                    st.create("pods", pod)

    # ---------------------------------------------------------------- lifecycle: start

    def start_vmi(self, vm):
        """virt-controller creating a new execution for vm (new VMI UID)."""
        st = self.store
        ns, name = vm["metadata"]["namespace"], vm["metadata"]["name"]
        if st.get("virtualmachineinstances", ns, name):
            return
        scen = self.scenario_of(vm)
        vmi = self.build_vmi(vm)
        st.create("virtualmachineinstances", vmi)
        self.emit(vm, "SuccessfulCreate",
                  "Started the virtual machine by creating the new virtual machine instance %s" % name)
        self.busy.add((ns, name))

        def vmst(o):
            self.vm_status(o, "Starting", True, False)
            if scen != "crashloop":
                o["status"].pop("startFailure", None)
        st.update("virtualmachines", ns, name, vmst)
        if scen == "pvc-missing":
            claim = self._missing_claim(vm)
            msg = "PVC %s/%s does not exist, waiting for it to appear" % (ns, claim)

            def syncf(o):
                self.set_cond(o, self.cond("Synchronized", "False", "FailedPvcNotFound", msg))
            st.update("virtualmachineinstances", ns, name, syncf)
            self.emit(vmi, "FailedPvcNotFound", msg, "Warning")
            st.update("virtualmachines", ns, name,
                      lambda o: self.vm_status(o, "ErrorPvcNotFound", True, False))
            self.busy.discard((ns, name))
            return
        pod = self.build_pod(vmi)
        st.create("pods", pod)
        self.emit(vmi, "SuccessfulCreate", "Created virtual machine pod %s" % pod["metadata"]["name"])
        self.later(self.step, self._start_step, ns, name, vmi["metadata"]["uid"],
                   pod["metadata"]["name"], 1)

    def _missing_claim(self, vm):
        for v in ((vm["spec"].get("template") or {}).get("spec") or {}).get("volumes", []):
            if "persistentVolumeClaim" in v:
                return v["persistentVolumeClaim"]["claimName"]
        return vm["metadata"]["name"] + "-disk"

    def _start_step(self, ns, name, vmi_uid, pod_name, stage):
        st = self.store
        vmi = st.get("virtualmachineinstances", ns, name)
        pod = st.get("pods", ns, pod_name)
        if not vmi or vmi["metadata"]["uid"] != vmi_uid or not pod or vmi["metadata"].get("deletionTimestamp"):
            self.busy.discard((ns, name))
            return
        vm = self.vm_of_vmi(vmi)
        scen = self.scenario_of(vm)
        nxt = stage + 1
        if stage == 1:
            if scen == "stuck-launcher":
                msg = "0/3 nodes are available: 3 Insufficient memory. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod."

                def pf(o):
                    o["status"]["conditions"] = [self.cond("PodScheduled", "False", "Unschedulable", msg)]
                st.update("pods", ns, pod_name, pf)
                self.emit(pod, "FailedScheduling", msg, "Warning", "default-scheduler")

                def vf(o):
                    self.vmi_phase(o, "Scheduling")
                    self.set_cond(o, self.cond("PodScheduled", "False", "Unschedulable", msg))
                    self.set_cond(o, self.cond("Ready", "False", "GuestNotRunning", "Guest VM is not reported as running"))
                st.update("virtualmachineinstances", ns, name, vf)
                if vm:
                    st.update("virtualmachines", ns, name, lambda o: self.vm_status(o, "ErrorUnschedulable", True, False))
                self.busy.discard((ns, name))
                return
            node = self.rng.choice(NODES)
            st.update("pods", ns, pod_name, lambda o: self._pod_scheduled(o, node, time.time()))
            self.emit(pod, "Scheduled", "Successfully assigned %s/%s to %s" % (ns, pod_name, node),
                      component="default-scheduler")

            def vf(o):
                self.vmi_phase(o, "Scheduling")
                self.set_cond(o, self.cond("Ready", "False", "GuestNotRunning", "Guest VM is not reported as running"))
            st.update("virtualmachineinstances", ns, name, vf)
        elif stage == 2:
            node = pod["spec"].get("nodeName", NODES[0])
            if scen == "imagepull":
                img = self._disk_image(vmi)
                err = ('rpc error: code = NotFound desc = failed to pull and unpack image "%s": '
                       'failed to resolve reference "%s": %s: not found' % (img, img, img))

                def pf(o):
                    # the kubelet starts the containers it can: compute runs (not ready: its disk never comes),
                    # the container disk's image cannot be pulled; kubectl's STATUS reads ErrImagePull
                    for cs in o["status"]["containerStatuses"]:
                        if cs["name"] == "volumecontainerdisk":
                            cs["state"] = {"waiting": {"reason": "ErrImagePull", "message": err}}
                        elif cs["name"] == "compute":
                            cs["state"] = {"running": {"startedAt": ts(time.time())}}
                            cs["started"] = True
                            cs["containerID"] = "containerd://%032x" % self.rng.getrandbits(128)
                st.update("pods", ns, pod_name, pf)
                self.emit(pod, "Pulling", 'Pulling image "%s"' % img, component="kubelet", host=node)
                self.emit(pod, "Failed", 'Failed to pull image "%s": %s' % (img, err), "Warning", "kubelet", node)
                self.emit(pod, "Failed", "Error: ErrImagePull", "Warning", "kubelet", node)
                self.emit(pod, "BackOff", 'Back-off pulling image "%s"' % img, "Normal", "kubelet", node)
                if vm:
                    st.update("virtualmachines", ns, name, lambda o: self.vm_status(o, "ErrImagePull", True, False))
                self.busy.discard((ns, name))
                return
            self.emit(pod, "Pulled", 'Container image "%s" already present on machine' % LAUNCHER_IMAGE,
                      component="kubelet", host=node)
            self.emit(pod, "Created", "Created container compute", component="kubelet", host=node)
            self.emit(pod, "Started", "Started container compute", component="kubelet", host=node)
            holder = {}

            def pf(o):
                holder["ip"] = self._pod_running(o, time.time())
            newpod = st.update("pods", ns, pod_name, pf)
            if scen == "crashloop":
                def cf(o):
                    for cs in o["status"]["containerStatuses"]:
                        if cs["name"] == "compute":
                            cs["ready"] = False
                            cs["started"] = False
                            cs["restartCount"] = 6
                            cs["state"] = {"waiting": {"reason": "CrashLoopBackOff",
                                                       "message": "back-off 5m0s restarting failed container=compute pod=%s_%s(%s)" % (pod_name, ns, pod["metadata"]["uid"])}}
                            cs["lastState"] = {"terminated": {"exitCode": 1, "reason": "Error",
                                                              "containerID": "containerd://%064x" % self.rng.getrandbits(256),
                                                              "startedAt": ts(time.time() - 60),
                                                              "finishedAt": ts(time.time() - 55)}}
                    self.set_cond(o, self.cond("Ready", "False", "ContainersNotReady", "containers with unready status: [compute]"))
                    self.set_cond(o, self.cond("ContainersReady", "False", "ContainersNotReady", "containers with unready status: [compute]"))
                st.update("pods", ns, pod_name, cf)
                self.emit(pod, "BackOff", "Back-off restarting failed container compute in pod %s_%s(%s)"
                          % (pod_name, ns, pod["metadata"]["uid"]), "Warning", "kubelet", node, count=6)

                def vf(o):
                    self.vmi_phase(o, "Scheduled")
                    o["status"]["nodeName"] = node
                st.update("virtualmachineinstances", ns, name, vf)
                if vm:
                    def vmf(o):
                        self.vm_status(o, "CrashLoopBackOff", True, False)
                        o["status"]["startFailure"] = {
                            "consecutiveFailCount": 6, "lastFailedVMIUID": self.uid(),
                            "retryAfterTimestamp": ts(time.time() + 300)}
                    st.update("virtualmachines", ns, name, vmf)
                self.busy.discard((ns, name))
                return

            def vf(o):
                self.vmi_phase(o, "Scheduled")
                o["status"]["nodeName"] = node
                o["metadata"]["labels"]["kubevirt.io/nodeName"] = node
                o["status"]["activePods"] = {newpod["metadata"]["uid"]: node}
                o["status"]["launcherContainerImageVersion"] = LAUNCHER_IMAGE
            st.update("virtualmachineinstances", ns, name, vf)
        elif stage == 3:
            node = vmi["status"].get("nodeName", NODES[0])
            ip = pod["status"].get("podIP", self.pod_ip())
            phase_t0 = time.time()

            def vf(o):
                pts = o["status"]["phaseTransitionTimestamps"]
                self._vmi_running(o, pod, node, ip, phase_t0, 0, agent=False)
                o["status"]["phaseTransitionTimestamps"] = pts + [
                    {"phase": "Running", "phaseTransitionTimestamp": ts(phase_t0)}]
                if scen == "ready-false":
                    self.set_cond(o, self.cond("Ready", "False", "ContainersNotReady",
                                               "containers with unready status: [compute]"))
            st.update("virtualmachineinstances", ns, name, vf)
            self.emit(vmi, "Created", "VirtualMachineInstance defined.", component="virt-handler", host=node)
            self.emit(vmi, "Started", "VirtualMachineInstance started.", component="virt-handler", host=node)
            if scen == "ready-false":
                def pf(o):
                    for c in ("Ready", "ContainersReady"):
                        self.set_cond(o, self.cond(c, "False", "ContainersNotReady",
                                                   "containers with unready status: [compute]"))
                    for cs in o["status"]["containerStatuses"]:
                        if cs["name"] == "compute":
                            cs["ready"] = False
                st.update("pods", ns, pod_name, pf)
                self.emit(pod, "Unhealthy", "Readiness probe failed: dial tcp %s:1500: connect: connection refused" % ip,
                          "Warning", "kubelet", node, count=12)
            if vm:
                def vmf(o):
                    self.vm_status(o, "Running", True, scen != "ready-false")
                    if scen == "ready-false":
                        self.set_cond(o, self.cond("Ready", "False", "ContainersNotReady",
                                                   "containers with unready status: [compute]"))
                    self.set_cond(o, self.cond("LiveMigratable", "True"))
                    if scen == "restart-required":
                        self._restart_required(o)
                st.update("virtualmachines", ns, name, vmf)
            if scen == "rwo-migration":
                import storage
                storage.rwo_not_migratable(self, ns, name)
            if scen == "agent-missing":
                self.busy.discard((ns, name))
                return
        elif stage == 4:
            st.update("virtualmachineinstances", ns, name, lambda o: self._vmi_agent(o, time.time()))
            self.busy.discard((ns, name))
            if scen == "migration-failed" and not vmi["metadata"].get("annotations", {}).get("fakekube.kvcon.io/failed-once"):
                self.migrate(ns, name, internal=True)
            return
        self.later(self.step, self._start_step, ns, name, vmi_uid, pod_name, nxt)

    def _restart_required(self, vm):
        vm["spec"]["template"]["spec"]["domain"].setdefault("memory", {})["guest"] = "256Mi"
        vm["metadata"]["generation"] = 2
        vm["status"]["desiredGeneration"] = 2
        vm["status"]["observedGeneration"] = 1
        self.set_cond(vm, self.cond("RestartRequired", "True", "",
                                    "a non-live-updatable field was changed in the template spec"))

    def _disk_image(self, vmi):
        for v in vmi["spec"].get("volumes", []):
            if "containerDisk" in v:
                return v["containerDisk"]["image"]
        return DISK_IMAGE

    # ---------------------------------------------------------------- lifecycle: stop

    def stop_vmi(self, vm, grace=None, then_start=False, force=False):
        """Delete the VM's current VMI (graceful unless grace == 0); afterwards the
        VM's runStrategy decides whether a new VMI starts."""
        st = self.store
        ns, name = vm["metadata"]["namespace"], vm["metadata"]["name"]
        vmi = st.get("virtualmachineinstances", ns, name)
        if not vmi:
            return
        uid = vmi["metadata"]["uid"]
        self.busy.add((ns, name))
        if not vmi["metadata"].get("deletionTimestamp"):
            self.emit(vm, "SuccessfulDelete",
                      "Stopped the virtual machine by deleting the virtual machine instance %s" % uid)
        elif not force:
            return
        g = int(vmi["spec"].get("terminationGracePeriodSeconds", 180) if grace is None else grace)

        def mark(o):
            o["metadata"]["deletionTimestamp"] = now_iso(time.time() + g)
            o["metadata"]["deletionGracePeriodSeconds"] = g
        st.update("virtualmachineinstances", ns, name, mark)
        for p in self.pods_of_vmi(vmi):
            st.update("pods", ns, p["metadata"]["name"], mark)
        node = vmi["status"].get("nodeName")
        if node:
            self.emit(vmi, "ShuttingDown", "Signaled Graceful Shutdown" if g else "Signaled Deletion",
                      component="virt-handler", host=node)
        st.update("virtualmachines", ns, name,
                  lambda o: self.vm_status(o, "Stopping", None, False))
        self.later(0 if g == 0 else self.step, self._stop_step, ns, name, uid, 1, then_start)

    def _stop_step(self, ns, name, uid, stage, then_start):
        st = self.store
        vmi = st.get("virtualmachineinstances", ns, name)
        if not vmi or vmi["metadata"]["uid"] != uid:
            self.busy.discard((ns, name))
            return
        pods = self.pods_of_vmi(vmi)
        if stage == 1:
            def vf(o):
                self.vmi_phase(o, "Succeeded")
                self.set_cond(o, self.cond("Ready", "False", "PodTerminating", "virt-launcher pod is terminating"))
                o["status"].pop("activePods", None)
            st.update("virtualmachineinstances", ns, name, vf)
            for p in pods:
                def pf(o):
                    o["status"]["phase"] = "Succeeded"
                    for cs in o["status"].get("containerStatuses", []):
                        cs["ready"] = False
                        cs["started"] = False
                        cs["state"] = {"terminated": {"exitCode": 0, "reason": "Completed",
                                                      "finishedAt": now_iso()}}
                    for c in o["status"].get("conditions", []):
                        if c["type"] in ("Ready", "ContainersReady"):
                            c["status"] = "False"
                            c["reason"] = "PodCompleted"
                st.update("pods", ns, p["metadata"]["name"], pf)
            if vmi["status"].get("nodeName"):
                self.emit(vmi, "Stopped", "The VirtualMachineInstance was shut down.",
                          component="virt-handler", host=vmi["status"]["nodeName"])
            self.later(self.step, self._stop_step, ns, name, uid, 2, then_start)
            return
        for p in pods:
            st.delete("pods", ns, p["metadata"]["name"])
        st.delete("virtualmachineinstances", ns, name)
        self.emit(vmi, "SuccessfulDelete", "Deleted virtual machine pod %s"
                  % (pods[0]["metadata"]["name"] if pods else "<none>"))
        self.busy.discard((ns, name))
        vm = st.get("virtualmachines", ns, name)
        if not vm or vm["metadata"]["uid"] != (self._owner_uid(vmi) or vm["metadata"]["uid"]):
            return
        st.update("virtualmachines", ns, name, lambda o: self.vm_status(o, "Stopped", False, False))
        rs = vm["spec"].get("runStrategy", "Halted")
        if rs == "Always" or then_start:
            self.start_vmi(st.get("virtualmachines", ns, name))

    @staticmethod
    def _owner_uid(vmi):
        for o in vmi["metadata"].get("ownerReferences") or []:
            if o.get("kind") == "VirtualMachine":
                return o["uid"]
        return None

    def fail_vmi(self, ns, name, why="the virt-launcher pod terminated unexpectedly"):
        """The execution died (launcher gone, QEMU crashed): Failed, then runStrategy decides."""
        st = self.store
        vmi = st.get("virtualmachineinstances", ns, name)
        if not vmi or vmi["status"].get("phase") in ("Failed", "Succeeded"):
            return
        st.update("virtualmachineinstances", ns, name, lambda o: (
            self.vmi_phase(o, "Failed"),
            self.set_cond(o, self.cond("Ready", "False", "PodNotExists", why))))
        node = vmi["status"].get("nodeName")
        self.emit(vmi, "Stopped", "The VirtualMachineInstance crashed.", "Warning", "virt-handler", node)
        vm = self.vm_of_vmi(vmi)
        if not vm:
            return
        rs = vm["spec"].get("runStrategy")
        if rs in ("Always", "RerunOnFailure"):
            self.stop_vmi(vm, grace=0, then_start=True)
        else:
            st.update("virtualmachines", ns, name, lambda o: self.vm_status(o, "Stopped", True, False))

    # ---------------------------------------------------------------- subresources

    # Rules, messages and codes follow pkg/virt-api/rest/subresource.go: VM actions
    # answer 202 Accepted, VMI actions 200, both with an empty body.

    def _conflict(self, res, name, msg):
        return ApiError(409, "Conflict", 'Operation cannot be fulfilled on %s.kubevirt.io "%s": %s' % (res, name, msg),
                        {"name": name, "group": "kubevirt.io", "kind": res})

    def _not_found(self, res, name):
        return ApiError(404, "NotFound", '%s.kubevirt.io "%s" not found' % (res, name),
                        {"name": name, "group": "kubevirt.io", "kind": res})

    def _need_vm(self, ns, name):
        vm = self.store.get("virtualmachines", ns, name)
        if not vm:
            raise self._not_found("virtualmachine", name)
        return vm

    def _need_vmi(self, ns, name):
        vmi = self.store.get("virtualmachineinstances", ns, name)
        if not vmi:
            raise self._not_found("virtualmachineinstance", name)
        return vmi

    def subresource(self, kind, ns, name, sub, body):
        """Returns the HTTP status of a successful call; raises ApiError otherwise."""
        st = self.store
        with st.lock:
            if kind == "virtualmachines":
                vm = self._need_vm(ns, name)
                fn = {"start": self.sub_start, "stop": self.sub_stop, "restart": self.sub_restart,
                      "migrate": self.sub_migrate}.get(sub)
                if not fn:
                    raise ApiError(404, "NotFound", "the server could not find the requested resource")
                fn(vm, body or {})
                return 202
            vmi = self._need_vmi(ns, name)
            fn = {"pause": self.sub_pause, "unpause": self.sub_unpause,
                  "softreboot": self.sub_softreboot}.get(sub)
            if not fn:
                raise ApiError(404, "NotFound", "the server could not find the requested resource")
            fn(vmi, body or {})
            return 200

    def _vmi_active(self, vmi):
        return vmi is not None and vmi["status"].get("phase") not in ("Succeeded", "Failed") \
            and not vmi["metadata"].get("deletionTimestamp")

    @staticmethod
    def _final(vmi):
        return vmi["status"].get("phase") in ("Succeeded", "Failed")

    def set_run_strategy(self, vm, rs):
        def f(o):
            o["spec"]["runStrategy"] = rs
            o["status"]["runStrategy"] = rs
        return self.store.update("virtualmachines", vm["metadata"]["namespace"], vm["metadata"]["name"], f)

    def _change_requests(self, vm, reqs):
        """virt-api records Start/Stop requests in status.stateChangeRequests; virt-controller
        consumes them on its next pass (here: half a step later)."""
        ns, name = vm["metadata"]["namespace"], vm["metadata"]["name"]

        def f(o):
            o["status"]["stateChangeRequests"] = reqs
            o["status"].pop("startFailure", None)
        self.store.update("virtualmachines", ns, name, f)

        def consume(o):
            if o["status"].pop("stateChangeRequests", None) is None:
                return False
            return None

        self.later(self.step / 2, lambda: self.store.update("virtualmachines", ns, name, consume))

    def sub_start(self, vm, body):
        ns, name = vm["metadata"]["namespace"], vm["metadata"]["name"]
        rs = vm["spec"].get("runStrategy", "Halted")
        vmi = self.store.get("virtualmachineinstances", ns, name)
        if vmi is not None and not self._final(vmi) and vmi["status"].get("phase") not in ("", "Unknown", None):
            raise self._conflict("virtualmachine", name, "VM is already running")
        if rs in ("Always", "Once"):
            raise self._conflict("virtualmachine", name, "%s does not support manual start requests" % rs)
        if rs == "RerunOnFailure" and vmi is not None and vmi["status"].get("phase") == "Failed":
            raise self._conflict("virtualmachine", name, "RerunOnFailure does not support starting VM from failed state")
        if rs == "Halted":
            vm = self.set_run_strategy(vm, "Always")
        else:
            reqs = [{"action": "Start"}]
            if vmi is not None:
                reqs.insert(0, {"action": "Stop", "uid": vmi["metadata"]["uid"]})
            self._change_requests(vm, reqs)
        if vmi is None:
            self.start_vmi(vm)
        else:
            # the old execution is finishing; once gone, a new one starts
            self.later(self.step, self._start_when_gone, ns, name, 20)

    def _start_when_gone(self, ns, name, tries):
        vm = self.store.get("virtualmachines", ns, name)
        if not vm:
            return
        vmi = self.store.get("virtualmachineinstances", ns, name)
        if vmi is None:
            self.start_vmi(vm)
        elif vmi["status"].get("phase") in ("Failed", "Succeeded") and not vmi["metadata"].get("deletionTimestamp"):
            self.stop_vmi(vm, grace=0, then_start=True)
        elif tries > 0:
            self.later(self.step, self._start_when_gone, ns, name, tries - 1)

    def sub_stop(self, vm, body):
        ns, name = vm["metadata"]["namespace"], vm["metadata"]["name"]
        rs = vm["spec"].get("runStrategy", "Halted")
        vmi = self.store.get("virtualmachineinstances", ns, name)
        grace = body.get("gracePeriod")
        running = vmi is not None and not self._final(vmi)
        if rs == "Halted":
            if not running:
                raise self._conflict("virtualmachine", name, "VM is not running")
            old = vmi["spec"].get("terminationGracePeriodSeconds", 180)
            if grace is None or grace >= old:
                raise self._conflict("virtualmachine", name,
                                     "Halted only supports manual stop requests with a shorter graceperiod")
            self._change_requests(vm, [{"action": "Stop", "uid": vmi["metadata"]["uid"]}])
            self.stop_vmi(vm, grace=grace, force=True)
            return
        if rs == "Manual":
            if not running:
                raise self._conflict("virtualmachine", name, "VM is not running")
            self._change_requests(vm, [{"action": "Stop", "uid": vmi["metadata"]["uid"]}])
        else:
            vm = self.set_run_strategy(vm, "Halted")
        if vmi is not None:
            self.stop_vmi(vm, grace=grace)
        else:
            self.store.update("virtualmachines", ns, name,
                              lambda o: self.vm_status(o, "Stopped", False, False))

    def sub_restart(self, vm, body):
        ns, name = vm["metadata"]["namespace"], vm["metadata"]["name"]
        g = body.get("gracePeriodSeconds")
        if g is not None and g > 0:
            raise ApiError(400, "BadRequest", "For force restart, only gracePeriod=0 is supported for now")
        if g is not None and g < 0:
            raise ApiError(400, "BadRequest", "gracePeriod has to be greater or equal to 0")
        rs = vm["spec"].get("runStrategy", "Halted")
        if rs in ("Halted", "Once"):
            raise self._conflict("virtualmachine", name, "RunStategy %s does not support manual restart requests" % rs)
        vmi = self.store.get("virtualmachineinstances", ns, name)
        if vmi is None:
            raise self._conflict("virtualmachine", name, "VM is not running: Halted")
        self._change_requests(vm, [{"action": "Stop", "uid": vmi["metadata"]["uid"]}, {"action": "Start"}])
        self.stop_vmi(vm, grace=g, then_start=True)

    def sub_migrate(self, vm, body):
        ns, name = vm["metadata"]["namespace"], vm["metadata"]["name"]
        vmi = self._need_vmi(ns, name)
        if vmi["status"].get("phase") != "Running":
            raise self._conflict("virtualmachine", name, "VM is not running")
        if (self.get_cond(vm, "Paused") or {}).get("status") == "True":
            raise self._conflict("virtualmachine", name, "VM is paused")
        node = ((body.get("addedNodeSelector") or {}).get("kubernetes.io/hostname"))
        self.migrate(ns, name, target=node)

    @staticmethod
    def _webhook_denied(msg):
        """virt-api creates the VMIM; the VMIM admission webhook's denial comes back as a 500."""
        return ApiError(500, "InternalError", 'Internal error occurred: admission webhook '
                        '"migration-create-validator.kubevirt.io" denied the request: %s' % msg)

    def migrate(self, ns, name, internal=False, vmim=None, target=None):
        st = self.store
        vmi = self._need_vmi(ns, name)
        lm = self.get_cond(vmi, "LiveMigratable")
        if not lm or lm["status"] != "True":
            raise self._webhook_denied("Cannot migrate VMI, Reason: %s, Message: %s"
                                       % ((lm or {}).get("reason", "NotMigratable"),
                                          (lm or {}).get("message", "VMI is not live migratable")))
        for m in st.find("virtualmachineinstancemigrations",
                         lambda o: o["metadata"]["namespace"] == ns and o["spec"].get("vmiName") == name
                         and o.get("status", {}).get("phase") not in ("Succeeded", "Failed")):
            if vmim is None or m["metadata"]["uid"] != vmim["metadata"]["uid"]:
                raise self._webhook_denied(
                    "in-flight migration detected. Active migration job (%s) is currently already in progress for VMI %s."
                    % (m["metadata"]["uid"], name))
        if vmim is None:
            vmim = {"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachineInstanceMigration",
                    "metadata": {"generateName": "kubevirt-migrate-vm-", "namespace": ns,
                                 "name": "kubevirt-migrate-vm-" + self.suffix(), "uid": self.uid(),
                                 "labels": {"kubevirt.io/vmi-name": name}},
                    "spec": {"vmiName": name},
                    "status": {"phase": "Pending"}}
            if target:
                vmim["spec"]["addedNodeSelector"] = {"kubernetes.io/hostname": target}
            st.create("virtualmachineinstancemigrations", vmim)
        self.busy.add((ns, name))
        self.later(self.step, self._mig_step, ns, vmim["metadata"]["name"], vmi["metadata"]["uid"], 1)

    def _gc_migrations(self, ns, vminame, keep=5):
        """virt-controller keeps the last 5 finalized migrations per VMI."""
        done = [m for m in self.store.find(
            "virtualmachineinstancemigrations",
            lambda o: o["metadata"].get("namespace") == ns and o["spec"].get("vmiName") == vminame
            and (o.get("status") or {}).get("phase") in ("Succeeded", "Failed"))]
        done.sort(key=lambda o: int(o["metadata"]["resourceVersion"]))
        for m in done[:-keep]:
            self.store.delete("virtualmachineinstancemigrations", ns, m["metadata"]["name"])

    def _vmim_phase(self, ns, mname, phase):
        def f(o):
            st = o.setdefault("status", {})
            st["phase"] = phase
            st.setdefault("phaseTransitionTimestamps", []).append(
                {"phase": phase, "phaseTransitionTimestamp": now_iso()})
        return self.store.update("virtualmachineinstancemigrations", ns, mname, f)

    def _mig_step(self, ns, mname, vmi_uid, stage):
        st = self.store
        m = st.get("virtualmachineinstancemigrations", ns, mname)
        vminame = m["spec"]["vmiName"] if m else None
        vmi = st.get("virtualmachineinstances", ns, vminame) if vminame else None
        if not m or not vmi or vmi["metadata"]["uid"] != vmi_uid or not self._vmi_active(vmi):
            if vminame:
                self.busy.discard((ns, vminame))
            if m and m.get("status", {}).get("phase") not in ("Succeeded", "Failed"):
                self._vmim_phase(ns, mname, "Failed")
            return
        vm = self.vm_of_vmi(vmi)
        fail = self.scenario_of(vm) == "migration-failed"
        muid = m["metadata"]["uid"]
        src_node = vmi["status"].get("nodeName")
        ms = vmi["status"].get("migrationState") or {}
        if stage == 1:
            want = (m["spec"].get("addedNodeSelector") or {}).get("kubernetes.io/hostname")
            target = want or self.rng.choice([n for n in NODES if n != src_node] or NODES)
            src_pods = [p for p in self.pods_of_vmi(vmi) if p["status"].get("phase") == "Running"]
            tpod = self.build_pod(vmi, node=None, migration_uid=muid)
            tpod["metadata"]["labels"]["kubevirt.io/migrationJobUID"] = muid
            st.create("pods", tpod)
            self.emit(m, "SuccessfulCreate", "Created migration target pod %s/%s with uuid %s for migration %s"
                      % (ns, tpod["metadata"]["name"], tpod["metadata"]["uid"], muid),
                      component="virtualmachine-controller")
            self._vmim_phase(ns, mname, "Scheduling")

            def vf(o):
                o["status"]["migrationState"] = {
                    "migrationUid": muid, "sourceNode": src_node, "targetNode": target,
                    "sourcePod": src_pods[0]["metadata"]["name"] if src_pods else "",
                    "targetPod": tpod["metadata"]["name"], "mode": "PreCopy"}
                o["metadata"]["labels"]["kubevirt.io/migrationTargetNodeName"] = target
            st.update("virtualmachineinstances", ns, vminame, vf)
            if vm:
                st.update("virtualmachines", ns, vm["metadata"]["name"], lambda o: self.vm_status(o, "Migrating"))
        elif stage == 2:
            target = ms.get("targetNode")
            tp = ms.get("targetPod")
            if target not in NODES or target == src_node:
                # the node selector leaves no node for the target pod
                msg = ("0/3 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, "
                       "%s" % ("1 node(s) is the migration source, 1 node(s) didn't match pod anti-affinity rules."
                               if target == src_node else "2 node(s) didn't match Pod's node affinity/selector."))
                tpod = st.get("pods", ns, tp)
                if tpod:
                    self.emit(tpod, "FailedScheduling", msg, "Warning", "default-scheduler")
                    st.delete("pods", ns, tp)

                def vf(o):
                    o["status"]["migrationState"].update({
                        "endTimestamp": now_iso(), "completed": True, "failed": True,
                        "failureReason": "Target pod is down"})
                    o["metadata"]["labels"].pop("kubevirt.io/migrationTargetNodeName", None)
                st.update("virtualmachineinstances", ns, vminame, vf)
                self._vmim_phase(ns, mname, "Failed")
                self.emit(m, "FailedMigration", "Migration target pod was removed", "Warning")
                if vm:
                    st.update("virtualmachines", ns, vm["metadata"]["name"], lambda o: self.vm_status(o, "Running"))
                self.busy.discard((ns, vminame))
                self._gc_migrations(ns, vminame)
                return
            st.update("pods", ns, tp, lambda o: self._pod_scheduled(o, target, time.time()))
            self.emit({"kind": "Pod", "metadata": st.get("pods", ns, tp)["metadata"]}, "Scheduled",
                      "Successfully assigned %s/%s to %s" % (ns, tp, target), component="default-scheduler")
            self._vmim_phase(ns, mname, "Scheduled")
        elif stage == 3:
            tp = ms.get("targetPod")
            st.update("pods", ns, tp, lambda o: self._pod_running(o, time.time()))
            self._vmim_phase(ns, mname, "PreparingTarget")
            self.emit(vmi, "PreparingTarget", "VirtualMachineInstance Migration Target Prepared.",
                      component="virt-handler", host=ms.get("targetNode"))
        elif stage == 4:
            self._vmim_phase(ns, mname, "TargetReady")
            self._vmim_phase(ns, mname, "Running")

            def vf(o):
                o["status"]["migrationState"]["startTimestamp"] = now_iso()
                o["status"]["migrationState"]["targetNodeAddress"] = self.pod_ip()
                o["status"]["migrationState"]["targetNodeDomainDetected"] = True
                tpod = st.get("pods", ns, ms.get("targetPod"))
                if tpod:
                    o["status"].setdefault("activePods", {})[tpod["metadata"]["uid"]] = ms.get("targetNode")
            st.update("virtualmachineinstances", ns, vminame, vf)
            self.emit(vmi, "Migrating", "VirtualMachineInstance is migrating.",
                      component="virt-handler", host=src_node)
        elif stage == 5:
            tp = ms.get("targetPod")
            sp = ms.get("sourcePod")
            if fail:
                reason = ("Live migration failed error encountered during MigrateToURI3 libvirt api call: "
                          "virError(Code=1, Domain=7, Message='internal error: client socket is closed')")

                def vf(o):
                    s = o["status"]["migrationState"]
                    s.update({"endTimestamp": now_iso(), "completed": True, "failed": True,
                              "failureReason": reason})
                    tpod = st.get("pods", ns, tp)
                    if tpod:
                        o["status"].get("activePods", {}).pop(tpod["metadata"]["uid"], None)
                    o["metadata"]["labels"].pop("kubevirt.io/migrationTargetNodeName", None)
                    o["metadata"].setdefault("annotations", {})["fakekube.kvcon.io/failed-once"] = "true"
                st.update("virtualmachineinstances", ns, vminame, vf)
                st.delete("pods", ns, tp)
                self._vmim_phase(ns, mname, "Failed")
                self.emit(vmi, "FailedMigration", "VirtualMachineInstance migration uid %s failed. reason:%s"
                          % (muid, reason), "Warning", "virt-handler", src_node)
                self.emit(m, "FailedMigration", "Source node reported migration failed", "Warning")
            else:
                target = ms.get("targetNode")

                def vf(o):
                    s = o["status"]["migrationState"]
                    s.update({"endTimestamp": now_iso(), "completed": True})
                    o["status"]["nodeName"] = target
                    o["metadata"]["labels"]["kubevirt.io/nodeName"] = target
                    o["metadata"]["labels"].pop("kubevirt.io/migrationTargetNodeName", None)
                    tpod = st.get("pods", ns, tp)
                    o["status"]["activePods"] = {tpod["metadata"]["uid"]: target} if tpod else {}
                    o["status"]["interfaces"][0]["ipAddress"] = tpod["status"].get("podIP") if tpod else ""
                    o["status"]["interfaces"][0]["ipAddresses"] = [o["status"]["interfaces"][0]["ipAddress"]]
                st.update("virtualmachineinstances", ns, vminame, vf)

                def done(o):
                    o["status"]["phase"] = "Succeeded"
                    for cs in o["status"].get("containerStatuses", []):
                        cs["ready"] = False
                        cs["state"] = {"terminated": {"exitCode": 0, "reason": "Completed", "finishedAt": now_iso()}}
                if sp:
                    st.update("pods", ns, sp, done)
                self._vmim_phase(ns, mname, "Succeeded")
                self.emit(vmi, "Migrated", "The VirtualMachineInstance migrated to node %s." % target,
                          component="virt-handler", host=src_node)
                self.emit(m, "SuccessfulMigration", "Source node reported migration succeeded")
            if vm:
                st.update("virtualmachines", ns, vm["metadata"]["name"], lambda o: self.vm_status(o, "Running"))
            self.later(self.step, self._mig_step, ns, mname, vmi_uid, 6)
            return
        elif stage == 6:
            sp = ms.get("sourcePod")
            if not ms.get("failed") and sp:
                st.delete("pods", ns, sp)
            self._gc_migrations(ns, vminame)
            self.busy.discard((ns, vminame))
            return
        self.later(self.step, self._mig_step, ns, mname, vmi_uid, stage + 1)

    def abort_migration(self, m):
        """DELETE of an unfinished VMIM: KubeVirt aborts the migration."""
        st = self.store
        ns = m["metadata"]["namespace"]
        vminame = m["spec"].get("vmiName")
        vmi = st.get("virtualmachineinstances", ns, vminame)
        if not vmi or m.get("status", {}).get("phase") in ("Succeeded", "Failed"):
            return
        ms = vmi["status"].get("migrationState") or {}
        if ms.get("migrationUid") == m["metadata"]["uid"]:
            def vf(o):
                s = o["status"]["migrationState"]
                s.update({"abortRequested": True, "abortStatus": "Succeeded", "completed": True,
                          "failed": True, "endTimestamp": now_iso(),
                          "failureReason": "Live migration aborted "})
                o["metadata"]["labels"].pop("kubevirt.io/migrationTargetNodeName", None)
            st.update("virtualmachineinstances", ns, vminame, vf)
            if ms.get("targetPod"):
                st.delete("pods", ns, ms["targetPod"])
            self.emit(vmi, "Migrated", "VirtualMachineInstance migration uid %s has been aborted." % m["metadata"]["uid"],
                      component="virt-handler", host=ms.get("sourceNode"))
            vm = self.vm_of_vmi(vmi)
            if vm:
                st.update("virtualmachines", ns, vm["metadata"]["name"], lambda o: self.vm_status(o, "Running"))
        self.busy.discard((ns, vminame))

    def sub_pause(self, vmi, body):
        ns, name = vmi["metadata"]["namespace"], vmi["metadata"]["name"]
        if vmi["status"].get("phase") != "Running":
            raise self._conflict("virtualmachineinstance", name, "VM is not running")
        if self.get_cond(vmi, "Paused"):
            raise self._conflict("virtualmachineinstance", name, "VMI is already paused")

        def f(o):
            self.set_cond(o, self.cond("Paused", "True", "PausedByUser", "VMI was paused by user"))
            self.set_cond(o, self.cond("LiveMigratable", "False", "NotMigratable", "VMI is paused"))
        self.store.update("virtualmachineinstances", ns, name, f)
        self.emit(vmi, "Paused", "VirtualMachineInstance paused", component="virt-handler",
                  host=vmi["status"].get("nodeName"))
        vm = self.vm_of_vmi(vmi)
        if vm:
            def vf(o):
                self.vm_status(o, "Paused")
                self.set_cond(o, self.cond("Paused", "True", "PausedByUser", "VMI was paused by user"))
            self.store.update("virtualmachines", ns, vm["metadata"]["name"], vf)

    def sub_unpause(self, vmi, body):
        ns, name = vmi["metadata"]["namespace"], vmi["metadata"]["name"]
        if vmi["status"].get("phase") != "Running" or not self.get_cond(vmi, "Paused"):
            raise self._conflict("virtualmachineinstance", name, "VMI is not paused")

        def f(o):
            self.del_cond(o, "Paused")
            self.set_cond(o, self.cond("LiveMigratable", "True"))
        self.store.update("virtualmachineinstances", ns, name, f)
        self.emit(vmi, "Unpaused", "VirtualMachineInstance unpaused", component="virt-handler",
                  host=vmi["status"].get("nodeName"))
        vm = self.vm_of_vmi(vmi)
        if vm:
            def vf(o):
                self.vm_status(o, "Running")
                self.del_cond(o, "Paused")
            self.store.update("virtualmachines", ns, vm["metadata"]["name"], vf)

    def sub_softreboot(self, vmi, body):
        name = vmi["metadata"]["name"]
        if vmi["status"].get("phase") != "Running":
            raise self._conflict("virtualmachineinstance", name, "VM is not running")
        if (self.get_cond(vmi, "Paused") or {}).get("status") == "True":
            raise self._conflict("virtualmachineinstance", name, "VMI is paused")
        acpi = ((vmi["spec"].get("domain") or {}).get("features") or {}).get("acpi", {}).get("enabled", True)
        if not self.get_cond(vmi, "AgentConnected") and acpi is False:
            raise self._conflict("virtualmachineinstance", name,
                                 "VMI neither have the agent connected nor the ACPI feature enabled")
        self.emit(vmi, "SoftRebooted", "VirtualMachineInstance soft rebooted", component="virt-handler",
                  host=vmi["status"].get("nodeName"))

    def evict(self, ns, podname):
        """POST pods/NAME/eviction, as the API server and KubeVirt's virt-api webhook answer it: a launcher whose VMI
        has evictionStrategy LiveMigrate (LiveMigrateIfPossible when it is migratable) is not deleted: 429, and the
        VMI is evacuated (a VirtualMachineInstanceMigration kubevirt-evacuation-XXXXX, status.evacuationNodeName);
        kubectl drain retries until the pod is gone. A terminated launcher, one whose VMI runs elsewhere now, or
        another strategy: the pod is deleted (201), which ends the VMI (its VM's run strategy decides what next)."""
        st = self.store
        pod = st.get("pods", ns, podname)
        if pod is None:
            raise ApiError(404, "NotFound", 'pods "%s" not found' % podname, {"name": podname, "kind": "pods"})
        created_by = (pod["metadata"].get("labels") or {}).get("kubevirt.io/created-by")
        vmi = next(iter(st.find("virtualmachineinstances", lambda o: o["metadata"]["uid"] == created_by)), None) \
            if created_by else None
        live = pod["status"].get("phase") not in ("Succeeded", "Failed") and self._vmi_active(vmi) and \
            vmi["status"].get("nodeName") == pod["spec"].get("nodeName")
        strategy = (vmi or {}).get("spec", {}).get("evictionStrategy") or "None"
        lm = self.get_cond(vmi, "LiveMigratable") if vmi else None
        migratable = bool(lm) and lm.get("status") == "True"
        if live and (strategy == "LiveMigrate" or (strategy == "LiveMigrateIfPossible" and migratable)):
            name = vmi["metadata"]["name"]
            inflight = list(st.find("virtualmachineinstancemigrations",
                                    lambda o: o["metadata"]["namespace"] == ns and o["spec"].get("vmiName") == name
                                    and (o.get("status") or {}).get("phase") not in ("Succeeded", "Failed")))
            if not inflight and migratable:
                st.update("virtualmachineinstances", ns, name,
                          lambda o: o["status"].__setitem__("evacuationNodeName", pod["spec"].get("nodeName")))
                vmim = {"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachineInstanceMigration",
                        "metadata": {"generateName": "kubevirt-evacuation-", "namespace": ns,
                                     "name": "kubevirt-evacuation-" + self.suffix(), "uid": self.uid(),
                                     "labels": {"kubevirt.io/vmi-name": name}},
                        "spec": {"vmiName": name}, "status": {"phase": "Pending"}}
                st.create("virtualmachineinstancemigrations", vmim)
                self.migrate(ns, name, vmim=vmim)
            raise ApiError(429, "TooManyRequests", 'Eviction triggered evacuation of VMI "%s/%s"' % (ns, name),
                           {"name": podname, "kind": "pods"})
        out = st.delete("pods", ns, podname)
        self.on_deleted("pods", out)
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}

    # ---------------------------------------------------------------- reactions to API writes

    def on_created(self, plural, obj):
        ns, name = obj["metadata"].get("namespace", ""), obj["metadata"]["name"]
        if plural == "virtualmachines":
            self.reconcile_vm(ns, name)
        elif plural == "virtualmachineinstances" and not self._owner_uid(obj):
            # a standalone VMI: virt-controller creates its launcher pod
            def init(o):
                o["metadata"].setdefault("labels", {})
                o.setdefault("spec", {}).setdefault("domain", {}).setdefault("memory", {}).setdefault("guest", "128Mi")
                o["status"] = {"phase": "Pending", "conditions": [], "guestOSInfo": {},
                               "phaseTransitionTimestamps": [{"phase": "Pending",
                                                              "phaseTransitionTimestamp": now_iso()}]}
            obj = self.store.update("virtualmachineinstances", ns, name, init)
            pod = self.build_pod(obj)
            self.store.create("pods", pod)
            self.emit(obj, "SuccessfulCreate", "Created virtual machine pod %s" % pod["metadata"]["name"])
            self.later(self.step, self._start_step, ns, name, obj["metadata"]["uid"], pod["metadata"]["name"], 1)
        elif plural == "virtualmachineinstancemigrations":
            try:
                self.migrate(ns, obj["spec"].get("vmiName", ""), vmim=obj)
            except ApiError as e:
                self._vmim_phase(ns, name, "Failed")
                self.emit(obj, "FailedMigration", e.message, "Warning")

    def on_updated(self, plural, obj):
        if plural == "virtualmachines":
            self.reconcile_vm(obj["metadata"]["namespace"], obj["metadata"]["name"])

    def reconcile_vm(self, ns, name):
        st = self.store
        vm = st.get("virtualmachines", ns, name)
        if not vm or (ns, name) in self.busy:
            return
        rs = vm["spec"].get("runStrategy") or ("Always" if vm["spec"].get("running") else "Halted")
        if (vm.get("status") or {}).get("runStrategy") != rs:
            vm = st.update("virtualmachines", ns, name,
                           lambda o: o.setdefault("status", {}).__setitem__("runStrategy", rs))
        vmi = st.get("virtualmachineinstances", ns, name)
        if rs in ("Always", "RerunOnFailure", "Once") and vmi is None:
            if rs == "Once" and vm["status"].get("created"):
                return
            self.start_vmi(vm)
        elif rs == "Halted" and vmi is not None and self._vmi_active(vmi):
            self.stop_vmi(vm)
        elif vmi is None:
            st.update("virtualmachines", ns, name, lambda o: self.vm_status(o, "Stopped", False, False))

    def on_deleted(self, plural, obj):
        st = self.store
        ns, name = obj["metadata"].get("namespace", ""), obj["metadata"]["name"]
        if plural == "virtualmachines":
            vmi = st.get("virtualmachineinstances", ns, name)
            if vmi and self._owner_uid(vmi) == obj["metadata"]["uid"]:
                for p in self.pods_of_vmi(vmi):
                    st.delete("pods", ns, p["metadata"]["name"])
                st.delete("virtualmachineinstances", ns, name)
            # the garbage collector: what the VM owns (virtctl's credential Secrets) goes with it
            uid = obj["metadata"]["uid"]
            for sec in st.find("secrets", lambda o: o["metadata"].get("namespace") == ns and any(
                    r.get("uid") == uid for r in o["metadata"].get("ownerReferences") or [])):
                st.delete("secrets", ns, sec["metadata"]["name"])
            self.busy.discard((ns, name))
        elif plural == "virtualmachineinstances":
            for p in self.pods_of_vmi(obj):
                st.delete("pods", ns, p["metadata"]["name"])
            self.busy.discard((ns, name))
            vm = self.vm_of_vmi(obj)
            if vm and vm["spec"].get("runStrategy") in ("Always", "RerunOnFailure"):
                self.later(self.step, self._start_when_gone, ns, name, 5)
            elif vm:
                st.update("virtualmachines", ns, name, lambda o: self.vm_status(o, "Stopped", False, False))
        elif plural == "pods":
            created_by = (obj["metadata"].get("labels") or {}).get("kubevirt.io/created-by")
            if created_by and obj["status"].get("phase") == "Running":
                for vmi in st.find("virtualmachineinstances",
                                   lambda o: o["metadata"]["uid"] == created_by):
                    ms = vmi["status"].get("migrationState") or {}
                    if ms.get("targetPod") == name and not ms.get("completed"):
                        continue
                    if vmi["status"].get("nodeName") == obj["spec"].get("nodeName"):
                        self.fail_vmi(ns, vmi["metadata"]["name"])
        elif plural == "virtualmachineinstancemigrations":
            self.abort_migration(obj)

    # ---------------------------------------------------------------- scenarios

    def add_scenario(self, scen):
        if scen not in SCENARIOS:
            raise ApiError(400, "BadRequest", "unknown scenario %r (known: %s)" % (scen, ", ".join(sorted(SCENARIOS))))
        st = self.store
        ns = self.scen_ns
        with st.lock:
            self.ensure_namespace(ns)
            if scen == "weird":
                self._weird(ns)
                return
            if scen == "replicaset":
                self._replicaset(ns)
                return
            if st.get("virtualmachines", ns, scen):
                return
            ann = {SCEN_ANN: scen}
            vols = None
            if scen == "pvc-missing":
                vols = [{"name": "rootdisk", "persistentVolumeClaim": {"claimName": scen + "-rootdisk"}}]
            import storage
            vols = storage.scenario_volumes(scen) or vols
            if scen == "imagepull":
                vols = [{"name": "containerdisk", "containerDisk": {
                    "image": "registry:5000/kubevirt/does-not-exist-container-disk:devel"}},
                        {"name": "cloudinitdisk", "cloudInitNoCloud": {"userData": "#!/bin/sh\n"}}]
            vm = self.build_vm(ns, scen, "Always", time.time() - 3600, {"fakekube.kvcon.io/scenario": scen},
                               ann, volumes=vols)
            vm = st.create("virtualmachines", vm)
            if storage.create_objects(self, vm):
                return
            if scen == "owner-mismatch":
                self._owner_mismatch(vm)
                return
            self.start_vmi(vm)

    def _replicaset(self, ns, name="replicaset", replicas=2):
        """As KubeVirt's replica set controller leaves it: the VMIs of its template, named generateName-style after
        it, owned by it (controller), Ready; no VirtualMachine."""
        st = self.store
        if st.get("virtualmachineinstancereplicasets", ns, name):
            return
        t = time.time() - 1800
        labels = {"kubevirt.io/vmReplicaSet": name}
        tpl = {"metadata": {"labels": dict(labels)},
               "spec": {"domain": {"devices": {"disks": [{"name": "containerdisk", "disk": {"bus": "virtio"}}]},
                                   "resources": {"requests": {"memory": "128Mi"}}},
                        "volumes": [{"name": "containerdisk", "containerDisk": {"image": DISK_IMAGE}}]}}
        rs = st.create("virtualmachineinstancereplicasets", {
            "apiVersion": "kubevirt.io/v1", "kind": "VirtualMachineInstanceReplicaSet",
            "metadata": {"name": name, "namespace": ns, "uid": self.uid(), "generation": 1, "creationTimestamp": ts(t),
                         "annotations": {"kubevirt.io/latest-observed-api-version": "v1",
                                         "kubevirt.io/storage-observed-api-version": "v1"}},
            "spec": {"replicas": replicas, "selector": {"matchLabels": dict(labels)}, "template": tpl},
            "status": {"replicas": replicas, "readyReplicas": replicas,
                       "labelSelector": ",".join("%s=%s" % kv for kv in labels.items())}})
        owner = {"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachineInstanceReplicaSet", "name": name,
                 "uid": rs["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}
        for i in range(replicas):
            member = name + self.suffix()
            vmi = self.build_vmi({"metadata": {"name": member, "namespace": ns, "uid": rs["metadata"]["uid"]},
                                  "spec": {"template": tpl}}, t + 2 + i)
            md = vmi["metadata"]
            md["generateName"] = name
            md["ownerReferences"] = [dict(owner)]
            md["finalizers"] = ["kubevirt.io/virtualMachineControllerFinalize"]
            del md["annotations"]["kubevirt.io/vm-generation"]
            del vmi["status"]["virtualMachineRevisionName"]
            node = NODES[i % len(NODES)]
            pod = self.build_pod(vmi, t + 2 + i, node)
            ip = self._pod_running(pod, t + 7 + i)
            self._vmi_running(vmi, pod, node, ip, t + 2 + i, 5.0)
            st.create("virtualmachineinstances", vmi)
            st.create("pods", pod)

    def _owner_mismatch(self, vm):
        """Running VM whose launcher says created-by=<VMI uid> but is owned by a stale UID."""
        st = self.store
        ns, name = vm["metadata"]["namespace"], vm["metadata"]["name"]
        st.delete("virtualmachines", ns, name)
        # a fresh copy: the deleted version stays in the watch history untouched
        vm = json.loads(json.dumps(vm))
        vm, vmi, pod = self.gen_running(vm, time.time() - 3600, events=False)
        stale = self.uid()

        def f(o):
            o["metadata"]["ownerReferences"][0]["uid"] = stale
        st.update("pods", ns, pod["metadata"]["name"], f)
        self.emit(vmi, "Started", "VirtualMachineInstance started.", component="virt-handler",
                  host=vmi["status"]["nodeName"])

    def _weird(self, ns):
        st = self.store
        for i, name in enumerate(WEIRD_NAMES):
            if st.get("virtualmachines", ns, name):
                continue
            vm = self.build_vm(ns, name, "Always", time.time() - 7200 - i,
                               {"fakekube.kvcon.io/scenario": "weird"},
                               {SCEN_ANN: "weird", "description": ESC_TEXT,
                                "note\x1b[1m": "key with escape"})
            vm, vmi, pod = self.gen_running(vm, time.time() - 7200 - i, events=False)
            self.emit(vm, "Weird\x1b[5m", "guest said: " + ESC_TEXT, "Warning")
            self.emit(vmi, "Started", "VirtualMachineInstance started \u2014 \u65e5\u672c\u8a9e \U0001f680",
                      component="virt-handler", host=vmi["status"]["nodeName"])
        if not st.get("virtualmachines", ns, "stopped-\u00e9t\u00e9"):
            vm = self.build_vm(ns, "stopped-\u00e9t\u00e9", "Halted", time.time() - 99999,
                               {"fakekube.kvcon.io/scenario": "weird"}, {SCEN_ANN: "weird"})
            st.create("virtualmachines", vm)

    # ---------------------------------------------------------------- churn

    def set_churn(self, rate):
        with self.store.lock:
            self.churn_rate = float(rate)
            self.churn_paused = False
            self.tcond.notify_all()

    def _churn_loop(self):
        """Keep the cluster's write rate (every resourceVersion bump: churn actions,
        the phase steps they cause, API writes) near churn_rate per second."""
        base_rv = base_t = None
        while not self.stopping:
            with self.store.lock:
                if self.churn_rate <= 0 or self.churn_paused:
                    self.tcond.wait(0.5)
                    base_rv = None
                    continue
                rate = self.churn_rate
                if base_rv is None or rate != self._churn_base_rate:
                    base_rv, base_t, self._churn_base_rate = self.store.rv, time.monotonic(), rate
            time.sleep(max(0.005, min(0.05, 1.0 / rate)))
            while not self.stopping:
                with self.store.lock:
                    if self.churn_rate != rate or self.churn_paused:
                        break
                    allowed = (time.monotonic() - base_t) * rate
                    done = self.store.rv - base_rv
                    if done >= allowed:
                        break
                    if allowed - done > rate:
                        # fell far behind (slow machine): do not burst to catch up
                        base_rv = self.store.rv - int(allowed - rate)
                    try:
                        self.churn_one()
                    except ApiError:
                        pass
                    self.churn_count += 1
                # the lock is released between actions so watchers keep up

    def _churn_candidates(self):
        st = self.store
        keys = st.keys["virtualmachines"]
        if not keys:
            return None
        for _ in range(8):
            k = keys[self.churn_rng.randrange(len(keys))]
            vm = st.objs["virtualmachines"][k].obj
            if k in self.busy or self.scenario_of(vm):
                continue
            return vm
        return None

    def churn_one(self):
        """One realistic modification, chosen by the churn RNG."""
        st = self.store
        r = self.churn_rng.random()
        vm = self._churn_candidates()
        if vm is None:
            return
        ns, name = vm["metadata"]["namespace"], vm["metadata"]["name"]
        ps = vm["status"].get("printableStatus")
        vmi = st.get("virtualmachineinstances", ns, name)
        if r < 0.35 and vmi and vmi["status"].get("phase") == "Running":
            # guest agent flaps, as it does when a guest reboots or the agent restarts
            if self.get_cond(vmi, "AgentConnected"):
                def f(o):
                    self.del_cond(o, "AgentConnected")
                    o["status"]["guestOSInfo"] = {}
                    for itf in o["status"].get("interfaces", []):
                        itf["infoSource"] = "domain"
                st.update("virtualmachineinstances", ns, name, f)
            else:
                st.update("virtualmachineinstances", ns, name, lambda o: self._vmi_agent(o, time.time()))
        elif r < 0.55:
            target = vmi or vm
            reason, msg, typ = self.churn_rng.choice([
                ("SuccessfulUpdate", "Updated virtual machine %s status" % name, "Normal"),
                ("GuestAgentPing", "Guest agent ping succeeded", "Normal"),
                ("FailedGuestAgentPing", "Guest agent ping failed: timeout", "Warning"),
                ("SyncFailed", "server error. command SyncVMI failed: \"LibvirtError(Code=38)\"", "Warning"),
            ])
            self.emit(target, reason, msg, typ,
                      component="virt-handler" if target is vmi else "virtualmachine-controller",
                      host=(vmi or {}).get("status", {}).get("nodeName"))
        elif r < 0.75:
            # stop rarely, start always: about 87% of VMs stay running, as generated
            if ps == "Running" and self.churn_rng.random() < 0.15:
                self.sub_stop(vm, {})
            elif ps == "Stopped" and vmi is None:
                self.sub_start(vm, {})
        elif r < 0.85:
            if ps == "Running" and vmi:
                self.sub_restart(vm, {})
        elif r < 0.93:
            if ps == "Running" and vmi and vmi["status"].get("phase") == "Running":
                self.migrate(ns, name)
        else:
            if vmi and vmi["status"].get("phase") == "Running":
                if self.get_cond(vmi, "Paused"):
                    self.sub_unpause(vmi, {})
                elif ps == "Running":
                    self.sub_pause(vmi, {})


def kind_plural(kind):
    for p, r in RESOURCES.items():
        if r.kind == kind:
            return p
    return kind.lower() + "s"
