#!/bin/bash
# The engine service's storage, driven by the REAL kubectl: one `kubectl apply -f` of a DataVolume importing a
# qcow2 image from a local HTTP server (held until the test lets it go, so that the import is seen in progress)
# and a VM with that DataVolume and a blank one of its dataVolumeTemplates; the VM waits (Provisioning), a kill -9
# of the service loses nothing (the import starts again), the DataVolume reaches Succeeded with progress 100.0%, the VM starts from the claim's file; `kubectl get
# pvc,pv,dv,sc`; a claim applied alone (a sparse file of its size), a file placed by hand adopted; a checksum
# mismatch Fails its import, so does a qcow2 with a backing file; a claim of another class Pending, its VM
# WaitingForVolumeBinding; xz and gz images; kvcon's get (sc as kubectl prints it) and dashboard (:pvc, :dv) on the engine; deletes remove the files (the template's DataVolume with its VM).
# The other sources and binding modes, once each: a registry import (the qcow2 as a containerDisk, /disk/disk.qcow2,
# in the local registry of the OCI tests, tests/lab/registry.sh), a clone equal to its source (and one that waits,
# CloneWithoutSource, until its source exists, and one of a running VM's disk, CloneSourceInUse, until the VM is
# gone), a claim of class local-wffc Pending (WaitForFirstConsumer) until the
# VM that uses it starts.
# `kubectl delete namespace` of one holding a running VM, a DataVolume and a Secret: Terminating, creates in it
# refused (403), a kill -9 of the service meanwhile, then everything in it gone (QEMU, file) and the namespace too.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/engine-lib.bash"

engine_needs "the embedded libvirt driver runs guests under its own account only as root" kubectl qemu-img python3 tmux xz gzip \
    docker-registry skopeo openssl
engine_embed_up kvdv
export HOME=$ENGINE_T/home XDG_CONFIG_HOME=$ENGINE_T/config
mkdir -p "$HOME" "$XDG_CONFIG_HOME/kvcon"
VOLS=$XDG_STATE_HOME/kvcon/engine-data/volumes
SRV= WEB= QSTOP=
REGDIR=$ENGINE_T/reg
stop_all() {
    [[ -n $QSTOP ]] && kill -CONT "$QSTOP" 2>/dev/null || true # the QEMU the test stopped, should it fail meanwhile
    "$ROOT/tests/lab/registry.sh" down "$REGDIR" || true
    [[ -n $WEB ]] && kill "$WEB" 2>/dev/null || true
    [[ -n $SRV ]] && kill -TERM "$SRV" 2>/dev/null && wait "$SRV" 2>/dev/null || true
}
trap 'stop_all; engine_embed_cleanup' EXIT

step "an image (qcow2 of a raw disk with a marker) served by a local HTTP server that holds the body until told"
mkdir -p "$ENGINE_T/www" "$VOLS/default"
printf 'KVCON-DV-MARKER' >"$ENGINE_T/disk.raw"
truncate -s 8M "$ENGINE_T/disk.raw"
qemu-img convert -q -f raw -O qcow2 "$ENGINE_T/disk.raw" "$ENGINE_T/www/disk.qcow2"
SUM=$(sha256sum "$ENGINE_T/www/disk.qcow2" | cut -d' ' -f1)
xz -c "$ENGINE_T/disk.raw" >"$ENGINE_T/www/disk.img.xz"
gzip -c "$ENGINE_T/www/disk.qcow2" >"$ENGINE_T/www/disk.qcow2.gz"
# a qcow2 naming a host file as its backing file: qemu-img would read that file into the claim
qemu-img create -q -f qcow2 -F raw -b /etc/hostname "$ENGINE_T/www/backed.qcow2" 8M
cat >"$ENGINE_T/web.py" <<'EOF'
import http.server, os, sys, time
d, gate = sys.argv[1], sys.argv[2]
class H(http.server.SimpleHTTPRequestHandler):
    def __init__(self, *a, **k):
        super().__init__(*a, directory=d, **k)
    def copyfile(self, src, dst):
        dst.write(src.read(65536))  # the first bytes, then the rest once the gate file exists
        dst.flush()
        deadline = time.time() + 30
        while not os.path.exists(gate) and time.time() < deadline:
            time.sleep(0.05)
        try:
            super().copyfile(src, dst)
        except OSError:
            pass  # a client killed meanwhile (the test kills the service mid-import)
    def log_message(self, *a):
        pass
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
EOF
python3 "$ENGINE_T/web.py" "$ENGINE_T/www" "$ENGINE_T/go" >"$ENGINE_T/web.port" &
WEB=$!
wait_eq 10 1 bash -c "[[ -s '$ENGINE_T/web.port' ]] && echo 1" || fail "the HTTP server did not start"
WPORT=$(cat "$ENGINE_T/web.port")

step "the same qcow2 as a containerDisk image (/disk/disk.qcow2) in a local registry (plain HTTP; meanwhile)"
registry_up() {
    "$ROOT/tests/lab/registry.sh" up "$REGDIR" plain >/dev/null
    OCI=$ENGINE_T/oci
    mkdir -p "$OCI/blobs/sha256" "$ENGINE_T/ctx/disk"
    cp "$ENGINE_T/www/disk.qcow2" "$ENGINE_T/ctx/disk/"
    tar -C "$ENGINE_T/ctx" --owner=107 --group=107 -cf "$ENGINE_T/layer.tar" disk
    gzip -n -c "$ENGINE_T/layer.tar" >"$ENGINE_T/layer.tgz"
    blob() { # blob FILE -> "sha256:<hex> <size>", stored in the layout
        local h
        h=$(sha256sum "$1" | cut -d' ' -f1)
        cp "$1" "$OCI/blobs/sha256/$h"
        echo "sha256:$h $(stat -c %s "$1")"
    }
    read -r ldig lsize < <(blob "$ENGINE_T/layer.tgz")
    printf '{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":["sha256:%s"]},"config":{}}' \
        "$(sha256sum "$ENGINE_T/layer.tar" | cut -d' ' -f1)" >"$ENGINE_T/config.json"
    read -r cdig csize < <(blob "$ENGINE_T/config.json")
    printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar+gzip","digest":"%s","size":%s}]}' \
        "$cdig" "$csize" "$ldig" "$lsize" >"$ENGINE_T/manifest.json"
    read -r mdig msize < <(blob "$ENGINE_T/manifest.json")
    printf '{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"%s","size":%s,"annotations":{"org.opencontainers.image.ref.name":"disk"}}]}' \
        "$mdig" "$msize" >"$OCI/index.json"
    echo '{"imageLayoutVersion":"1.0.0"}' >"$OCI/oci-layout"
    "$ROOT/tests/lab/registry.sh" push "$REGDIR" "$OCI:disk" kvtest/dvdisk:v1 >/dev/null
}
registry_up >"$ENGINE_T/registry.out" 2>&1 &
REGJOB=$!
# a file placed by hand before the service: adopted as a claim
truncate -s 4M "$VOLS/default/handmade.img"

step "serve with HTTPS; discovery lists the storage kinds"
"$KV" -c "$URI" engine serve --https 0 >"$ENGINE_T/serve.out" 2>"$ENGINE_T/serve.err" &
SRV=$!
wait_eq 120 "engine serving" tail -n1 "$ENGINE_T/serve.out" || { cat "$ENGINE_T/serve.err"; fail "serve did not start"; }
export KUBECONFIG=$(sed -n 's/^kubeconfig: //p' "$ENGINE_T/serve.out")
k() { kubectl --request-timeout=60s "$@"; }
res=$(k api-resources --no-headers | awk '{print $1}' | sort | tr '\n' ' ')
for r in datavolumes persistentvolumeclaims persistentvolumes storageclasses; do
    [[ " $res" == *" $r "* ]] || fail "api-resources lacks $r: $res"
done
out=$(k get sc)
grep -Eq '^local \(default\) +kvcon.io/local +Delete +Immediate +false ' <<<"$out" || fail "get sc: $out"
grep -Eq '^local-wffc +kvcon.io/local +Delete +WaitForFirstConsumer +false ' <<<"$out" || fail "get sc: $out"
# kvcon's get of a kind the engine's store does not keep (the service's list): kubectl's table, the AGE aside
noage() { sed -E 's/ +[0-9]+[smhd]$//; s/ +AGE$//'; }
for how in "get sc" "engine get sc"; do
    # shellcheck disable=SC2086 # $how is two or three words
    kout=$(env -u KUBECONFIG KVCON_ENGINE_URI="$URI" "$KV" $how 2>"$ENGINE_T/sc.err") || fail "kvcon $how: $(cat "$ENGINE_T/sc.err")"
    [[ $(noage <<<"$kout") == "$(noage <<<"$out")" ]] || fail "kvcon $how: '$kout', kubectl: '$out'"
done

step "the hand-placed file is a Bound claim (its volume Retains the file)"
wait_eq 10 Bound k get pvc handmade -o 'jsonpath={.status.phase}' || fail "handmade not adopted: $(k get pvc -o wide)"
pv=$(k get pvc handmade -o 'jsonpath={.spec.volumeName}')
[[ $(k get pv "$pv" -o 'jsonpath={.spec.persistentVolumeReclaimPolicy}') == Retain ]] || fail "adopted volume policy"

step "kubectl apply -f: a DataVolume (http, sha256) and a VM with it and a blank dataVolumeTemplate"
cat >"$ENGINE_T/app.yaml" <<EOF
apiVersion: cdi.kubevirt.io/v1beta1
kind: DataVolume
metadata:
  name: app-root
spec:
  source:
    http:
      url: http://127.0.0.1:$WPORT/disk.qcow2
      checksum: sha256:$SUM
  storage:
    accessModes: [ReadWriteOnce]
    resources:
      requests:
        storage: 64Mi
---
apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata:
  name: app
spec:
  runStrategy: Always
  dataVolumeTemplates:
  - metadata:
      name: app-scratch
    spec:
      source:
        blank: {}
      storage:
        resources:
          requests:
            storage: 16Mi
  template:
    spec:
      terminationGracePeriodSeconds: 3
      domain:
        memory:
          guest: 192Mi
        firmware:
          kernelBoot:
            kernelArgs: console=ttyS0 quiet panic=-1
            container:
              image: kvcon-lab-guest
              kernelPath: /vmlinuz
              initrdPath: /initrd.gz
        devices:
          autoattachPodInterface: false
          disks:
          - name: root
            disk: {bus: virtio}
          - name: scratch
            disk: {bus: virtio}
      volumes:
      - name: root
        dataVolume:
          name: app-root
      - name: scratch
        dataVolume:
          name: app-scratch
EOF
out=$(k apply -f "$ENGINE_T/app.yaml")
[[ $out == $'datavolume.cdi.kubevirt.io/app-root created\nvirtualmachine.kubevirt.io/app created' ]] || fail "apply: $out"

step "while the import runs: DataVolume ImportInProgress, claim Bound, VM Provisioning without a VMI"
wait_eq 10 ImportInProgress k get dv app-root -o 'jsonpath={.status.phase}' || fail "dv phase: $(k get dv -o yaml)"
wait_eq 10 Provisioning k get vm app -o 'jsonpath={.status.printableStatus}' || fail "vm: $(k get vm app -o yaml)"
[[ -z $(k get vmi --no-headers 2>/dev/null) ]] || fail "a VMI before the DataVolume is ready"
[[ $(k get pvc app-root -o 'jsonpath={.status.phase} {.metadata.ownerReferences[0].kind}') == "Bound DataVolume" ]] ||
    fail "the DataVolume's claim: $(k get pvc app-root -o yaml)"
ev=$(k get events --field-selector involvedObject.name=app-root -o 'jsonpath={range .items[*]}{.reason} {end}')
for r in Pending Bound ImportScheduled ImportInProgress; do
    [[ " $ev" == *" $r "* ]] || fail "event $r missing: $ev"
done
wait_eq 10 Succeeded k get dv app-scratch -o 'jsonpath={.status.phase}' || fail "the blank template DataVolume"
[[ $(k get dv app-scratch -o 'jsonpath={.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].name}') == VirtualMachine/app ]] ||
    fail "template DataVolume owner"

step "kill -9 of the service mid-import: the next one has every object and imports again (restartCount 1)"
kill -9 "$SRV"
wait "$SRV" 2>/dev/null || true
"$KV" -c "$URI" engine serve --https 0 >"$ENGINE_T/serve2.out" 2>"$ENGINE_T/serve2.err" &
SRV=$!
wait_eq 120 "engine serving" tail -n1 "$ENGINE_T/serve2.out" || { cat "$ENGINE_T/serve2.err"; fail "serve again"; }
wait_eq 10 "ImportInProgress 1" k get dv app-root -o 'jsonpath={.status.phase} {.status.restartCount}' ||
    fail "the import after a restart: $(k get dv app-root -o yaml)"
[[ $(k get pvc -o 'jsonpath={range .items[*]}{.metadata.name}={.status.phase} {end}') == "app-root=Bound app-scratch=Bound handmade=Bound " ]] ||
    fail "claims after a restart: $(k get pvc)"
wait_eq 10 Provisioning k get vm app -o 'jsonpath={.status.printableStatus}' ||
    fail "the VM after a restart: $(k get vm app -o 'jsonpath={.status.printableStatus}')"
[[ -z $(k get vmi --no-headers 2>/dev/null) ]] || fail "a VMI after the restart, before the DataVolume is ready"
touch "$ENGINE_T/go"

step "the import Succeeds (progress 100.0%, CDI's events); the VM starts from the claim's files"
wait_eq 20 "Succeeded 100.0%" k get dv app-root -o 'jsonpath={.status.phase} {.status.progress}' ||
    fail "import: $(k get dv app-root -o yaml)"
ev=$(k get events --field-selector involvedObject.name=app-root -o 'jsonpath={range .items[*]}{.reason} {end}')
for r in ImportInProgress ImportSucceeded; do # those of this service (storage events are not kept across a restart)
    [[ " $ev" == *" $r "* ]] || fail "event $r missing: $ev"
done
[[ $(head -c 15 "$VOLS/default/app-root.img") == KVCON-DV-MARKER && $(stat -c %s "$VOLS/default/app-root.img") == 67108864 ]] ||
    fail "the claim's file is not the converted image of 64Mi"
k wait --for=jsonpath='{.status.phase}'=Running vmi/app --timeout=60s >/dev/null || fail "the VM did not start"
xml=$(k get --raw /apis/kubevirt.io/v1/namespaces/default/virtualmachineinstances/app/kvcon-domainxml)
grep -q "<source file=\"$VOLS/default/app-root.img\"" <<<"$xml" || fail "root disk source: $xml"
grep -q "<source file=\"$VOLS/default/app-scratch.img\"" <<<"$xml" || fail "scratch disk source: $xml"

step "kubectl get pvc,pv,dv as kubectl prints them"
k get pvc,pv,dv >"$ENGINE_T/get.out"
cat "$ENGINE_T/get.out"
grep -Eq '^NAME +STATUS +VOLUME +CAPACITY +ACCESS MODES +STORAGECLASS +AGE$' "$ENGINE_T/get.out" || fail "pvc header"
grep -Eq '^persistentvolumeclaim/app-root +Bound +pvc-[0-9a-f-]{36} +64Mi +RWO +local +[0-9]+s$' "$ENGINE_T/get.out" ||
    fail "pvc row"
grep -Eq '^persistentvolume/pvc-[0-9a-f-]{36} +64Mi +RWO +Delete +Bound +default/app-root +local ' "$ENGINE_T/get.out" ||
    fail "pv row"
grep -Eq '^datavolume.cdi.kubevirt.io/app-root +Succeeded +100.0% +1 +[0-9]+s$' "$ENGINE_T/get.out" || fail "dv row"

step "kvcon's own get on the engine (its service): pvc, pv, dv"
kv engine get pvc app-root >"$ENGINE_T/kget.out" || fail "kvcon engine get pvc"
grep -Eq '^app-root +Bound +pvc-[0-9a-f-]{36} +64Mi +RWO +local +[0-9]+s$' "$ENGINE_T/kget.out" ||
    fail "kvcon get pvc: $(cat "$ENGINE_T/kget.out")"
kv --context engine get dv -o name >"$ENGINE_T/kget.out" || fail "kvcon get dv"
[[ $(cat "$ENGINE_T/kget.out") == $'datavolume.cdi.kubevirt.io/app-root\ndatavolume.cdi.kubevirt.io/app-scratch' ]] ||
    fail "kvcon get dv -o name: $(cat "$ENGINE_T/kget.out")"
kv engine get pv -o 'jsonpath={.items[*].spec.claimRef.name}' >"$ENGINE_T/kget.out" || fail "kvcon get pv"
[[ $(tr ' ' '\n' <"$ENGINE_T/kget.out" | sort | tr '\n' ' ') == "app-root app-scratch handmade " ]] ||
    fail "kvcon get pv: $(cat "$ENGINE_T/kget.out")"

step "the dashboard on the engine: :pvc and :dv list the service's claims and DataVolumes"
T="tmux -L kvdv-$$ -f /dev/null"
$T new-session -d -x 150 -y 30 -s d "env -u KUBECONFIG KVCON_LOG=$ENGINE_T/ui.log $KV -c '$URI'; sleep 60"
screen() { $T capture-pane -p -t d; }
has() { screen | grep -Eq "$1" && echo yes; }
wait_eq 20 yes has 'default +app +Running' || { screen; $T kill-server; fail "the dashboard did not list the VM"; }
$T send-keys -t d ":pvc" Enter
wait_eq 10 yes has 'default +app-root +Bound +pvc-[0-9a-f-]+ +64Mi +RWO +local' ||
    { screen; $T kill-server; fail ":pvc on the engine"; }
$T send-keys -t d ":dv" Enter
wait_eq 10 yes has 'default +app-root +Succeeded +100.0% +1 ' || { screen; $T kill-server; fail ":dv on the engine"; }
$T kill-server

step "a claim applied alone: a sparse file of its size; a checksum mismatch Fails its import"
cat >"$ENGINE_T/more.yaml" <<EOF
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: data1
spec:
  accessModes: [ReadWriteOnce]
  resources:
    requests:
      storage: 1Gi
---
apiVersion: cdi.kubevirt.io/v1beta1
kind: DataVolume
metadata:
  name: fromxz
spec:
  source:
    http:
      url: http://127.0.0.1:$WPORT/disk.img.xz
  pvc:
    resources:
      requests:
        storage: 8Mi
---
apiVersion: cdi.kubevirt.io/v1beta1
kind: DataVolume
metadata:
  name: fromgz
spec:
  source:
    http:
      url: http://127.0.0.1:$WPORT/disk.qcow2.gz
  storage:
    resources:
      requests:
        storage: 8Mi
---
apiVersion: cdi.kubevirt.io/v1beta1
kind: DataVolume
metadata:
  name: backed
spec:
  source:
    http:
      url: http://127.0.0.1:$WPORT/backed.qcow2
  storage:
    resources:
      requests:
        storage: 8Mi
---
apiVersion: cdi.kubevirt.io/v1beta1
kind: DataVolume
metadata:
  name: badsum
spec:
  source:
    http:
      url: http://127.0.0.1:$WPORT/disk.qcow2
      checksum: sha256:$(printf '0%.0s' {1..64})
  storage:
    resources:
      requests:
        storage: 64Mi
EOF
k apply -f "$ENGINE_T/more.yaml" >/dev/null
wait_eq 10 Bound k get pvc data1 -o 'jsonpath={.status.phase}' || fail "data1"
[[ $(stat -c %s "$VOLS/default/data1.img") == 1073741824 && $(stat -c %b "$VOLS/default/data1.img") -lt 64 ]] ||
    fail "data1's file: $(stat -c '%s %b' "$VOLS/default/data1.img")"
[[ $(k apply -f "$ENGINE_T/more.yaml") == $'persistentvolumeclaim/data1 unchanged\ndatavolume.cdi.kubevirt.io/fromxz unchanged\ndatavolume.cdi.kubevirt.io/fromgz unchanged\ndatavolume.cdi.kubevirt.io/backed unchanged\ndatavolume.cdi.kubevirt.io/badsum unchanged' ]] ||
    fail "second apply"
for dv in fromxz fromgz; do
    wait_eq 20 Succeeded k get dv $dv -o 'jsonpath={.status.phase}' || fail "$dv: $(k get dv $dv -o yaml)"
    [[ $(head -c 15 "$VOLS/default/$dv.img") == KVCON-DV-MARKER && $(stat -c %s "$VOLS/default/$dv.img") == 8388608 ]] ||
        fail "$dv's file is not the image"
done
wait_eq 20 Failed k get dv badsum -o 'jsonpath={.status.phase}' || fail "badsum: $(k get dv badsum -o yaml)"
k get dv badsum -o 'jsonpath={.status.conditions[?(@.type=="Running")].message}' | grep -q "checksum mismatch" ||
    fail "badsum's message"
wait_eq 20 Failed k get dv backed -o 'jsonpath={.status.phase}' || fail "backed: $(k get dv backed -o yaml)"
k get dv backed -o 'jsonpath={.status.conditions[?(@.type=="Running")].message}' | grep -q "names a backing file" ||
    fail "backed's message"
[[ $(kv engine apply -f "$ENGINE_T/more.yaml") == $'persistentvolumeclaim/data1 unchanged\ndatavolume.cdi.kubevirt.io/fromxz unchanged\ndatavolume.cdi.kubevirt.io/fromgz unchanged\ndatavolume.cdi.kubevirt.io/backed unchanged\ndatavolume.cdi.kubevirt.io/badsum unchanged' ]] ||
    fail "kvcon engine apply of the same file"

step "a registry import (the containerDisk's disk), a clone equal to its source, a clone waiting for its source"
wait "$REGJOB" || { cat "$ENGINE_T/registry.out"; fail "the registry or the push failed"; }
. "$REGDIR/env"
echo "registry = $REG insecure=true" >"$XDG_CONFIG_HOME/kvcon/config"
cat >"$ENGINE_T/src.yaml" <<EOF
apiVersion: cdi.kubevirt.io/v1beta1
kind: DataVolume
metadata:
  name: fromreg
spec:
  source:
    registry:
      url: docker://$REG/kvtest/dvdisk:v1
      pullMethod: node
  storage:
    resources:
      requests:
        storage: 8Mi
---
apiVersion: cdi.kubevirt.io/v1beta1
kind: DataVolume
metadata:
  name: clone1
spec:
  source:
    pvc:
      namespace: default
      name: fromxz
  storage: {} # the source's size
---
apiVersion: cdi.kubevirt.io/v1beta1
kind: DataVolume
metadata:
  name: clone2
spec:
  source:
    pvc:
      name: later
  storage:
    resources:
      requests:
        storage: 8Mi
---
apiVersion: cdi.kubevirt.io/v1beta1
kind: DataVolume
metadata:
  name: clone3
spec:
  source:
    pvc:
      name: app-root
  storage:
    resources:
      requests:
        storage: 64Mi
EOF
k apply -f "$ENGINE_T/src.yaml" >/dev/null
# clone3's source is the running VM's disk: it waits (CloneScheduled) until the VM is gone (the deletes below)
wait_eq 20 "Succeeded/100.0% Succeeded/100.0% Pending/N/A CloneScheduled/N/A " \
    k get dv fromreg clone1 clone2 clone3 -o 'jsonpath={range .items[*]}{.status.phase}/{.status.progress} {end}' ||
    fail "fromreg, clone1-3: $(k get dv -o yaml)"
[[ $(head -c 15 "$VOLS/default/fromreg.img") == KVCON-DV-MARKER && $(stat -c %s "$VOLS/default/fromreg.img") == 8388608 ]] ||
    fail "fromreg's file is not the registry image's disk"
cmp "$VOLS/default/fromxz.img" "$VOLS/default/clone1.img" || fail "clone1's file (of its source's size) differs from its source's"
ev=$(k get events -o 'jsonpath={range .items[*]}|{.involvedObject.name}:{.reason}:{.message}{end}|')
for r in fromreg:ImportScheduled: fromreg:ImportInProgress: fromreg:ImportSucceeded: clone1:CloneScheduled: \
    clone1:CloneInProgress: clone1:CloneSucceeded: "clone2:CloneWithoutSource:The source pvc later doesn't exist|" \
    clone3:CloneSourceInUse:; do
    [[ $ev == *"|$r"* ]] || fail "event $r missing: $ev"
done
k create -f - >/dev/null <<EOF
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: later
spec:
  resources:
    requests:
      storage: 2Mi
EOF
wait_eq 20 Succeeded k get dv clone2 -o 'jsonpath={.status.phase}' || fail "clone2 after its source: $(k get dv clone2 -o yaml)"
[[ $(stat -c %s "$VOLS/default/clone2.img") == 8388608 ]] || fail "clone2's file is not of its claim's size"
k delete dv/fromreg dv/clone1 dv/clone2 pvc/later >/dev/null

step "a claim of class local-wffc and a DataVolume on one: Pending / WaitForFirstConsumer until their VM starts"
{ cat <<EOF
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: late
spec:
  storageClassName: local-wffc
  resources:
    requests:
      storage: 8Mi
---
apiVersion: cdi.kubevirt.io/v1beta1
kind: DataVolume
metadata:
  name: latedv
spec:
  source:
    http:
      url: http://127.0.0.1:$WPORT/disk.qcow2
  storage:
    storageClassName: local-wffc
    resources:
      requests:
        storage: 8Mi
---
EOF
  engine_manifest "$ENGINE_T/consumer.yaml" consumer Halted 128Mi >/dev/null
  cat "$ENGINE_T/consumer.yaml"
  printf '      volumes:\n      - name: data\n        persistentVolumeClaim:\n          claimName: late\n'
  printf '      - name: root\n        dataVolume:\n          name: latedv\n'
} >"$ENGINE_T/wffc.yaml"
k apply -f "$ENGINE_T/wffc.yaml" >/dev/null
wait_eq 10 "Pending Pending WaitForFirstConsumer Stopped " \
    k get pvc/late pvc/latedv dv/latedv vm/consumer -o 'jsonpath={range .items[*]}{.status.phase}{.status.printableStatus} {end}' ||
    fail "WFFC claims not Pending, or the VM not Stopped: $(k get pvc,dv,vm)"
k get events --field-selector involvedObject.name=late,reason=WaitForFirstConsumer -o 'jsonpath={.items[0].message}' |
    grep -qx "waiting for first consumer to be created before binding" ||
    fail "late's WaitForFirstConsumer event: $(k get events --field-selector involvedObject.name=late)"
k patch vm consumer --type merge -p '{"spec":{"runStrategy":"Always"}}' >/dev/null
wait_eq 60 Running k get vmi consumer -o 'jsonpath={.status.phase}' || fail "consumer did not start: $(k get vm consumer -o yaml)"
[[ $(k get pvc/late pvc/latedv dv/latedv -o 'jsonpath={.items[*].status.phase}') == "Bound Bound Succeeded" &&
    $(head -c 15 "$VOLS/default/latedv.img") == KVCON-DV-MARKER ]] || fail "WFFC claims not Bound and imported once consumed"
nodes=$(k get pvc/late vmi/consumer -o 'jsonpath={.items[0].metadata.annotations.volume\.kubernetes\.io/selected-node} {.items[1].status.nodeName}')
[[ -n ${nodes%% *} && ${nodes%% *} == "${nodes#* }" ]] || fail "late's selected-node is not the VMI's node: $nodes"

step "a claim of a class the engine lacks stays Pending: its VM waits (WaitingForVolumeBinding)"
{ cat <<EOF
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: slow
spec:
  storageClassName: slow-nfs
  resources:
    requests:
      storage: 8Mi
---
EOF
  engine_manifest "$ENGINE_T/waiter.yaml" waiter Always 128Mi >/dev/null
  cat "$ENGINE_T/waiter.yaml"
  printf '      volumes:\n      - name: data\n        persistentVolumeClaim:\n          claimName: slow\n'
} >"$ENGINE_T/slow.yaml"
k apply -f "$ENGINE_T/slow.yaml" >/dev/null
wait_eq 10 WaitingForVolumeBinding k get vm waiter -o 'jsonpath={.status.printableStatus}' ||
    fail "waiter: $(k get vm waiter -o yaml)"
[[ $(k get pvc slow -o 'jsonpath={.status.phase}') == Pending ]] || fail "slow is not Pending"
k get events --field-selector involvedObject.name=slow -o 'jsonpath={.items[*].message}' |
    grep -q 'storageclass.storage.k8s.io "slow-nfs" not found' || fail "slow's ProvisioningFailed event"
k delete -f "$ENGINE_T/slow.yaml" --wait=true --timeout=30s >/dev/null

out=$(k apply -f - 2>&1 <<EOF || true
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: huge
spec:
  resources:
    requests:
      storage: 2Ti
EOF
)
[[ $out == *'PersistentVolumeClaim "huge" is invalid: spec.resources.requests.storage: Invalid value: "2Ti"'*"engine.volume-max"* ]] || fail "a claim over engine.volume-max: $out"

step "kubectl delete namespace: Terminating meanwhile (creates in it refused), a kill -9 of the service loses nothing"
k create namespace team >/dev/null
# a running VM on a DataVolume's claim, and a Secret; its QEMU stopped (SIGSTOP) so that its execution cannot end
# before the checks (neither the power button nor SIGTERM acts on it): the namespace stays Terminating meanwhile
{ cat <<EOF
apiVersion: cdi.kubevirt.io/v1beta1
kind: DataVolume
metadata:
  name: shared
spec:
  source:
    blank: {}
  storage:
    resources:
      requests:
        storage: 2Mi
---
apiVersion: v1
kind: Secret
metadata:
  name: token
stringData:
  key: value
---
EOF
  engine_manifest "$ENGINE_T/busy.yaml" busy Always 128Mi >/dev/null
  cat "$ENGINE_T/busy.yaml"
  printf '      volumes:\n      - name: data\n        dataVolume:\n          name: shared\n'
} >"$ENGINE_T/team.yaml"
k -n team apply -f "$ENGINE_T/team.yaml" >/dev/null
k -n team wait --for=jsonpath='{.status.phase}'=Running vmi/busy --timeout=60s >/dev/null ||
    fail "team/busy did not start: $(k -n team get vm,vmi,dv,pvc)"
[[ $(stat -c %s "$VOLS/team/shared.img") == 2097152 ]] || fail "team/shared's file"
QP=$(cat "$XDG_STATE_HOME/kvcon/engine/run/qemu/team_busy.pid")
[[ $QP -gt 0 ]] || fail "no QEMU pid recorded for team/busy"
QSTOP=$QP
kill -STOP "$QP"
out=$(k delete namespace team --wait=false)
[[ $out == 'namespace "team" deleted' ]] || fail "delete namespace: $out"
# the namespace Terminating; what its VM uses kept until the VM is gone (its claim not even Terminating yet)
got=$(k -n team get ns/team pvc/shared secret/token \
    -o 'jsonpath={range .items[*]}{.kind}:{.status.phase}:{.spec.finalizers[0]}:{.metadata.deletionTimestamp} {end}')
[[ $got == "Namespace:Terminating:kubernetes:20"*" PersistentVolumeClaim:Bound:: Secret::: " ]] ||
    fail "team while its VM stops: $got"
rc=0
out=$(k -n team create secret generic more --from-literal=a=b 2>&1) || rc=$?
[[ $rc == 1 && $out == *'secrets "more" is forbidden: unable to create new content in namespace team because it is being terminated'* ]] ||
    fail "a create in a terminating namespace: $rc $out"
out=$(k delete namespace default 2>&1 || true)
[[ $out == *'namespaces "default" is forbidden: this namespace may not be deleted'* ]] || fail "delete namespace default: $out"
kill -9 "$SRV"
wait "$SRV" 2>/dev/null || true
kill -CONT "$QP"
QSTOP=
"$KV" -c "$URI" engine serve --https 0 >"$ENGINE_T/serve3.out" 2>"$ENGINE_T/serve3.err" &
SRV=$!
wait_eq 120 "engine serving" tail -n1 "$ENGINE_T/serve3.out" || { cat "$ENGINE_T/serve3.err"; fail "serve after the kill"; }

step "the namespace's content goes (the QEMU, the claim's file as its Delete policy says, the Secret), then it"
k wait --for=delete namespace/team --timeout=90s >/dev/null || fail "team is not gone: $(k get ns team -o yaml)"
[[ -z $(tr -d '\0' 2>/dev/null <"/proc/$QP/cmdline") ]] || fail "team/busy's QEMU (pid $QP) is left"
[[ ! -e $VOLS/team/shared.img ]] || fail "team/shared.img left"
[[ ! -e $XDG_STATE_HOME/kvcon/engine-data/secrets/team_token.json ]] || fail "team/token's file left"
# NAMESPACE/NAME/CLAIM'S NAMESPACE of every namespace, volume and object of the kinds team held
left=$(k get ns,pv,vm,vmi,dv,pvc,secret -A -o 'jsonpath={range .items[*]}{.metadata.namespace}/{.metadata.name}/{.spec.claimRef.namespace} {end}')
[[ " $left" != *" /team/"* && " $left" != *" team/"* && $left != *"/team "* ]] || fail "team or its objects left: $left"

step "deletes: the claim's file goes with it; the VM's template DataVolume goes with the VM"
k delete pvc data1 >/dev/null
[[ ! -e $VOLS/default/data1.img ]] || fail "data1.img left"
k delete vm app consumer --grace-period=1 --wait=true --timeout=60s >/dev/null
wait_eq 20 gone bash -c "[[ -e '$VOLS/default/app-scratch.img' ]] || echo gone" || fail "the template's claim file left"
wait_eq 20 Succeeded k get dv clone3 -o 'jsonpath={.status.phase}' || fail "clone3 once its source is free: $(k get dv clone3 -o yaml)"
cmp "$VOLS/default/app-root.img" "$VOLS/default/clone3.img" || fail "clone3's file differs from its source's"
[[ -z $(find "$VOLS" -name '.*' -type f) ]] || fail "copies left beside the claims: $(find "$VOLS" -name '.*')"
k delete dv app-root badsum fromxz fromgz backed latedv clone3 >/dev/null
k delete pvc late >/dev/null
[[ ! -e $VOLS/default/app-root.img ]] || fail "app-root.img left"
[[ -z $(k get pvc,dv --no-headers 2>/dev/null | grep -v handmade) ]] || fail "objects left: $(k get pvc,pv,dv)"
[[ $(k get pv --no-headers | wc -l) == 1 ]] || fail "volumes left: $(k get pv)"
echo "ok"
