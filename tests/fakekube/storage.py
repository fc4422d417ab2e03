"""Storage objects for the fake cluster: PersistentVolumes, PersistentVolumeClaims and CDI DataVolumes, shaped
as kube-apiserver and CDI serve them, and the storage scenarios that use them:

- ``dv-importing``: the VM's root disk is a DataVolume still importing (phase ImportInProgress, progress
  37.50%); its PVC is Bound to a PV; KubeVirt does not start the VM until the DataVolume is ready
  (printableStatus Provisioning, no VMI).
- ``pvc-pending``: the VM's root disk PVC stays Pending (no PV, storage class ``slow-nfs`` with event
  ProvisioningFailed); the VM waits (printableStatus WaitingForVolumeBinding, no VMI).
- ``dv-error``: the root disk DataVolume's import failed (phase Failed, its Running condition False with the
  importer's error); the VM stays without VMI (printableStatus DataVolumeError).
- ``dv-upload``: the root disk DataVolume waits for an upload (phase UploadReady, progress N/A); no VMI
  (printableStatus WaitingForReceiver).
- ``rwo-migration``: the VM runs from a Bound ReadWriteOnce PVC (PV reclaim policy Retain); the VMI is not
  live-migratable (LiveMigratable False, reason DisksNotLiveMigratable), as KubeVirt says for RWO disks.
"""

import time

from kubevirt import ts

SC = "local-path"


def build_pv(name, claim_ns, claim_name, claim_uid, size="10Gi", modes=("ReadWriteOnce",), reclaim="Delete",
             sc=SC, created=None):
    created = created or time.time()
    return {
        "apiVersion": "v1", "kind": "PersistentVolume",
        "metadata": {"name": name, "creationTimestamp": ts(created),
                     "annotations": {"pv.kubernetes.io/provisioned-by": "rancher.io/local-path"},
                     "finalizers": ["kubernetes.io/pv-protection"]},
        "spec": {"accessModes": list(modes), "capacity": {"storage": size},
                 "claimRef": {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "namespace": claim_ns,
                              "name": claim_name, "uid": claim_uid},
                 "hostPath": {"path": "/var/lib/local-path/%s" % name, "type": "DirectoryOrCreate"},
                 "persistentVolumeReclaimPolicy": reclaim, "storageClassName": sc, "volumeMode": "Filesystem"},
        "status": {"phase": "Bound"},
    }


def build_pvc(ns, name, size="10Gi", modes=("ReadWriteOnce",), sc=SC, volume=None, owner=None, created=None):
    created = created or time.time()
    md = {"name": name, "namespace": ns, "creationTimestamp": ts(created),
          "finalizers": ["kubernetes.io/pvc-protection"]}
    if owner:
        md["ownerReferences"] = [owner]
    pvc = {
        "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": md,
        "spec": {"accessModes": list(modes), "resources": {"requests": {"storage": size}},
                 "storageClassName": sc, "volumeMode": "Filesystem"},
        "status": {"phase": "Pending"},
    }
    if volume:
        md["annotations"] = {"pv.kubernetes.io/bind-completed": "yes", "pv.kubernetes.io/bound-by-controller": "yes"}
        pvc["spec"]["volumeName"] = volume
        pvc["status"] = {"phase": "Bound", "accessModes": list(modes), "capacity": {"storage": size}}
    return pvc


def build_dv(ns, name, phase, progress, owner=None, created=None, error=None):
    created = created or time.time()
    md = {"name": name, "namespace": ns, "creationTimestamp": ts(created), "generation": 1,
          "annotations": {"cdi.kubevirt.io/storage.usePopulator": "true"}}
    if owner:
        md["ownerReferences"] = [owner]
    return {
        "apiVersion": "cdi.kubevirt.io/v1beta1", "kind": "DataVolume", "metadata": md,
        "spec": {"source": {"http": {"url": "http://images.example/fedora.qcow2"}},
                 "storage": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "10Gi"}}}},
        "status": {"phase": phase, "progress": progress, "restartCount": 0, "claimName": name,
                   "conditions": [
                       {"type": "Bound", "status": "True", "reason": "Bound", "message": "PVC %s Bound" % name,
                        "lastTransitionTime": ts(created), "lastHeartbeatTime": ts(created)},
                       {"type": "Ready", "status": "False", "reason": "TransferRunning",
                        "message": "Import in progress" if phase == "ImportInProgress" else "",
                        "lastTransitionTime": ts(created), "lastHeartbeatTime": ts(created)},
                       {"type": "Running", "status": "False" if error else "True",
                        "reason": "Error" if error else "Pod is running", "message": error or "",
                        "lastTransitionTime": ts(created), "lastHeartbeatTime": ts(created)}]},
    }


def scenario_volumes(scen):
    """The VM volumes of a storage scenario (None: not a storage scenario)."""
    if scen in ("dv-importing", "dv-error", "dv-upload"):
        return [{"name": "rootdisk", "dataVolume": {"name": scen + "-rootdisk"}}]
    if scen in ("pvc-pending", "rwo-migration"):
        return [{"name": "rootdisk", "persistentVolumeClaim": {"claimName": scen + "-rootdisk"}}]
    return None


def create_objects(cluster, vm):
    """Creates the storage behind a storage scenario's VM; returns True when the VM must not start (yet)."""
    st = cluster.store
    md = vm["metadata"]
    ns, scen = md["namespace"], cluster.scenario_of(vm)
    claim = scen + "-rootdisk"
    t = time.time() - 600
    vm_owner = {"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine", "name": md["name"], "uid": md["uid"],
                "controller": True, "blockOwnerDeletion": True}
    if scen == "dv-importing":
        dv = st.create("datavolumes", build_dv(ns, claim, "ImportInProgress", "37.50%", vm_owner, t))
        dv_owner = {"apiVersion": "cdi.kubevirt.io/v1beta1", "kind": "DataVolume", "name": claim,
                    "uid": dv["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}
        pv_name = "pvc-" + cluster.uid()
        pvc = st.create("persistentvolumeclaims", build_pvc(ns, claim, volume=pv_name, owner=dv_owner, created=t))
        st.create("persistentvolumes", build_pv(pv_name, ns, claim, pvc["metadata"]["uid"], created=t))
        cluster.emit(dv, "ImportInProgress", "Import into %s in progress" % claim, component="datavolume-import-controller")
        st.update("virtualmachines", ns, md["name"], lambda o: cluster.vm_status(o, "Provisioning", False, False))
        return True
    if scen in ("dv-error", "dv-upload"):
        err = ("Unable to connect to http data source: expected status code 200, got 404. Status: 404 Not Found"
               if scen == "dv-error" else None)
        dv = st.create("datavolumes", build_dv(ns, claim, "Failed" if err else "UploadReady",
                                               "0.00%" if err else "N/A", vm_owner, t, error=err))
        dv_owner = {"apiVersion": "cdi.kubevirt.io/v1beta1", "kind": "DataVolume", "name": claim,
                    "uid": dv["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}
        pv_name = "pvc-" + cluster.uid()
        pvc = st.create("persistentvolumeclaims", build_pvc(ns, claim, volume=pv_name, owner=dv_owner, created=t))
        st.create("persistentvolumes", build_pv(pv_name, ns, claim, pvc["metadata"]["uid"], created=t))
        if err:
            cluster.emit(dv, "Error", err, "Warning", component="datavolume-import-controller")
        else:
            cluster.emit(dv, "UploadReady", "Upload into %s ready" % claim, component="datavolume-upload-controller")
        status = "DataVolumeError" if err else "WaitingForReceiver"
        st.update("virtualmachines", ns, md["name"], lambda o: cluster.vm_status(o, status, False, False))
        return True
    if scen == "pvc-pending":
        pvc = st.create("persistentvolumeclaims", build_pvc(ns, claim, sc="slow-nfs", created=t))
        cluster.emit(pvc, "ProvisioningFailed", 'storageclass.storage.k8s.io "slow-nfs" not found', "Warning",
                     component="persistentvolume-controller")
        st.update("virtualmachines", ns, md["name"],
                  lambda o: cluster.vm_status(o, "WaitingForVolumeBinding", False, False))
        return True
    if scen == "rwo-migration":
        pv_name = "pvc-" + cluster.uid()
        pvc = st.create("persistentvolumeclaims", build_pvc(ns, claim, volume=pv_name, created=t))
        st.create("persistentvolumes", build_pv(pv_name, ns, claim, pvc["metadata"]["uid"], reclaim="Retain",
                                                created=t))
    return False


def rwo_not_migratable(cluster, ns, name):
    """KubeVirt's verdict on a VMI with a ReadWriteOnce PVC."""
    msg = ("cannot migrate VMI: PVC %s-rootdisk is not shared, live migration requires that all PVCs must be "
           "shared (using ReadWriteMany access mode)" % name)
    c = cluster.cond("LiveMigratable", "False", "DisksNotLiveMigratable", msg)
    cluster.store.update("virtualmachineinstances", ns, name, lambda o: cluster.set_cond(o, c))
    cluster.store.update("virtualmachines", ns, name, lambda o: cluster.set_cond(o, dict(c)))
