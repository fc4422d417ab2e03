#!/bin/bash
# The kubectl steps of the seed 000 walkthrough ("KubeVirt internals": ../shared/seeds/000_*.txt) against a
# standalone host: `kvcon engine serve` on the embedded driver, the real kubectl with the kubeconfig the service
# writes, kvcon's start/stop/console standing in for virtctl's. The seed's manifest with only its digest replaced
# (tests/fixtures/seed-000-internals-demo.yaml, checked against the seed where it is at hand) pulls its
# containerDisk from a local registry (quay.io mirrored to it). Checked on the way, as the walkthrough describes:
# the context's KubeVirt CR (`kubectl get kubevirt -A`: kubevirt/kubevirt, Deployed);
# no VMI before start; the VMI owned by the VM and the launcher pod by the VMI (UID); after stop and start the VM
# UID stays and the VMI and launcher UIDs are new; the VM survives stop; delete removes it.
# Then seed 002 ("Understanding KubeVirt, VM and VMI"): its halted app01 byte for byte (tests/fixtures/seed-002-app01.yaml)
# on a claim app01-root that a DataVolume imports from a local HTTP server (the lab's BIOS-bootable disk), all in
# one `kubectl apply -f` with the namespace apps; `--dry-run=server` before (the namespace missing) and after;
# halted without a VMI; start, `get vm,vmi`, `wait --for=condition=Ready`, `describe vmi` (the template's spec),
# the guest booted from the claim; stop and start: a new VMI UID on the same claim; the claim outlives the VM;
# `kubectl delete namespace apps` takes the DataVolume, its claim and file with it.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/engine-lib.bash"

engine_needs "QEMU, the embedded libvirt driver and a registry" qemu-system-x86_64 jq kubectl docker-registry \
    skopeo htpasswd openssl syslinux mcopy
engine_embed_up kvw
export XDG_CONFIG_HOME=$ENGINE_T/config HOME=$ENGINE_T/home
mkdir -p "$HOME"
REGDIR=$ENGINE_T/reg
SRV= WEB=
cleanup() {
    [[ -n $WEB ]] && kill "$WEB" 2>/dev/null || true
    [[ -n $SRV ]] && kill -TERM "$SRV" 2>/dev/null && wait "$SRV" 2>/dev/null || true
    "$ROOT/tests/lab/registry.sh" down "$REGDIR" || true
    engine_embed_cleanup
}
trap cleanup EXIT

step "the seed's image in a local registry, quay.io mirrored to it"
"$ROOT/tests/lab/containerdisk.sh" || fail "containerdisk.sh"
eval "$("$ROOT/tests/lab/registry.sh" up "$REGDIR")"
D_INDEX=$("$ROOT/tests/lab/registry.sh" push "$REGDIR" "$ROOT/build/cdisk/oci:index" kubevirt/cirros-container-disk-demo:test)
[[ $D_INDEX == sha256:* ]] || fail "no digest from the push"
export REGISTRY_AUTH_FILE=$REG_AUTH
mkdir -p "$XDG_CONFIG_HOME/kvcon"
printf 'registry = %s ca=%s\nregistry.mirror = quay.io location=%s ca=%s\n' "$REG" "$REG_CA" "$REG" "$REG_CA" \
    >"$XDG_CONFIG_HOME/kvcon/config"
SEED0=$(ls /work/shared/seeds/000_*.txt "$ROOT"/../shared/seeds/000_*.txt 2>/dev/null | head -n1 || true)
if [[ -n $SEED0 ]]; then
    awk '/^apiVersion: kubevirt.io\/v1$/ && !go { go = 1 } go { print } go && /image: quay.io/ { exit }' "$SEED0" |
        cmp -s - "$ROOT/tests/fixtures/seed-000-internals-demo.yaml" ||
        fail "tests/fixtures/seed-000-internals-demo.yaml differs from $SEED0"
fi
sed "s/@sha256:[0-9a-f]\{64\}/@$D_INDEX/" "$ROOT/tests/fixtures/seed-000-internals-demo.yaml" >"$ENGINE_T/vm.yaml"

step "the service (its kubeconfig for kubectl, its socket for kvcon)"
"$KV" -c "$URI" engine serve --https 0 >"$ENGINE_T/serve.out" 2>"$ENGINE_T/serve.err" &
SRV=$!
wait_eq 120 "engine serving" tail -n1 "$ENGINE_T/serve.out" || { cat "$ENGINE_T/serve.err"; fail "serve did not start"; }
export KUBECONFIG=$(sed -n 's/^kubeconfig: //p' "$ENGINE_T/serve.out")
k() { echo "\$ kubectl $*" >&2; kubectl --request-timeout=60s "$@"; }
kvc() { echo "\$ kvcon $*" >&2; "$KV" -c "$URI" "$@"; }

step "check the context"
[[ $(k config current-context) == kvcon-engine ]] || fail "current-context"
k get nodes -o wide | tee "$ENGINE_T/nodes" >&2
grep -Eq ' Ready ' "$ENGINE_T/nodes" || fail "no Ready node"
k api-resources | grep -E '^kubevirts +kv,kvs +kubevirt.io/v1 +true +KubeVirt$' >&2 || fail "api-resources lists no kubevirts"
k -n kubevirt wait kv kubevirt --for condition=Available --timeout=120s >&2 || fail "KubeVirt not Available"
k get kubevirt -A | tee "$ENGINE_T/kv" >&2
grep -Eq '^kubevirt +kubevirt +[0-9a-z]+ +Deployed$' "$ENGINE_T/kv" || fail "kubectl get kubevirt -A: $(cat "$ENGINE_T/kv")"
[[ $(k get kv -n kubevirt kubevirt -o jsonpath='{.status.phase}') == Deployed ]] || fail "the KubeVirt CR is not Deployed"

step "create a VM without starting it (runStrategy: Manual)"
k create namespace kubevirt-lab
k -n kubevirt-lab apply -f - <"$ENGINE_T/vm.yaml" | grep -qx 'virtualmachine.kubevirt.io/internals-demo created' ||
    fail "apply"
k -n kubevirt-lab get vm,vmi >"$ENGINE_T/get0" 2>&1
grep -Eq '^virtualmachine.kubevirt.io/internals-demo ' "$ENGINE_T/get0" || fail "no VM: $(cat "$ENGINE_T/get0")"
grep -q 'virtualmachineinstance' "$ENGINE_T/get0" && fail "a VMI before start: $(cat "$ENGINE_T/get0")"
VM_UID=$(k -n kubevirt-lab get vm internals-demo -o jsonpath='{.metadata.uid}')
[[ $VM_UID =~ ^[0-9a-f-]{36}$ ]] || fail "VM uid '$VM_UID'"

step "start the VM (kvcon start for virtctl start) and follow the objects"
kvc start kubevirt-lab/internals-demo >&2 || fail "kvcon start"
k -n kubevirt-lab get vm,vmi,pods -o wide >&2
k -n kubevirt-lab wait --for=jsonpath='{.status.phase}'=Running vmi/internals-demo --timeout=180s >&2 ||
    fail "VMI not Running"
out=$(k -n kubevirt-lab get vmi internals-demo \
    -o jsonpath='VMI UID: {.metadata.uid}{"\n"}Owners: {.metadata.ownerReferences}{"\n"}Node: {.status.nodeName}{"\n"}')
echo "$out" >&2
VMI1=$(sed -n 's/^VMI UID: //p' <<<"$out")
grep -q "\"uid\":\"$VM_UID\"" <<<"$out" && grep -q '"kind":"VirtualMachine"' <<<"$out" || fail "the VMI is not owned by the VM"
[[ $(sed -n 's/^Node: //p' <<<"$out") != "" ]] || fail "no node"
k -n kubevirt-lab get pods -l kubevirt.io=virt-launcher -o wide >&2
k -n kubevirt-lab get events --sort-by=.metadata.creationTimestamp >"$ENGINE_T/ev1"
grep -q 'Pulled' "$ENGINE_T/ev1" && grep -q 'Started' "$ENGINE_T/ev1" || fail "events: $(cat "$ENGINE_T/ev1")"
row=$(k -n kubevirt-lab get pods -l kubevirt.io=virt-launcher \
    -o custom-columns='NAME:.metadata.name,OWNER:.metadata.ownerReferences[0].uid,NODE:.spec.nodeName' --no-headers)
LAUNCHER_POD=${row%% *}
[[ $row == virt-launcher-internals-demo-*" $VMI1 "* ]] || fail "launcher row '$row' (VMI $VMI1)"
[[ $(k -n kubevirt-lab get pod "$LAUNCHER_POD" -o jsonpath='{.metadata.ownerReferences[0].kind}') == VirtualMachineInstance ]] ||
    fail "the launcher's owner kind"

step "where does QEMU fit: describe the launcher, its node and containers"
k -n kubevirt-lab describe pod "$LAUNCHER_POD" >"$ENGINE_T/desc-pod" || fail "describe pod"
grep -q "Controlled By: *VirtualMachineInstance/internals-demo" "$ENGINE_T/desc-pod" || fail "describe pod: $(cat "$ENGINE_T/desc-pod")"
out=$(k -n kubevirt-lab get pod "$LAUNCHER_POD" -o jsonpath='{.spec.nodeName}{"\n"}{.spec.containers[*].name}{"\n"}')
grep -qw compute <<<"$out" || fail "containers: $out"
kvc -n kubevirt-lab engine console internals-demo --expect KVCON-GUEST-READY --timeout 120s >"$ENGINE_T/console.log" ||
    { cat "$ENGINE_T/console.log"; fail "no guest marker on the console"; }

step "stop and start: which identities survive"
LAUNCHER1=$(k -n kubevirt-lab get pod "$LAUNCHER_POD" -o jsonpath='{.metadata.uid}')
kvc stop kubevirt-lab/internals-demo >&2 || fail "kvcon stop"
k -n kubevirt-lab wait --for=delete vmi/internals-demo --timeout=180s >&2 || fail "VMI not deleted"
k -n kubevirt-lab get vm,vmi >"$ENGINE_T/get2" 2>&1
grep -q '^virtualmachine.kubevirt.io/internals-demo ' "$ENGINE_T/get2" || fail "the VM went with the stop"
kvc start kubevirt-lab/internals-demo >&2 || fail "kvcon start again"
k -n kubevirt-lab wait --for=jsonpath='{.status.phase}'=Running vmi/internals-demo --timeout=180s >&2 ||
    fail "VMI not Running again"
[[ $(k -n kubevirt-lab get vm internals-demo -o jsonpath='{.metadata.uid}') == "$VM_UID" ]] || fail "the VM UID changed"
VMI2=$(k -n kubevirt-lab get vmi internals-demo -o jsonpath='{.metadata.uid}')
[[ -n $VMI2 && $VMI2 != "$VMI1" ]] || fail "the VMI UID did not change ($VMI1 -> $VMI2)"
row=$(k -n kubevirt-lab get pods -l kubevirt.io=virt-launcher \
    -o custom-columns='NAME:.metadata.name,UID:.metadata.uid,OWNER:.metadata.ownerReferences[0].uid' --no-headers)
echo "$row" >&2
[[ $(wc -l <<<"$row") == 1 ]] || fail "more than one launcher: $row"
read -r _ LAUNCHER2 OWNER2 <<<"$row"
[[ $LAUNCHER2 != "$LAUNCHER1" && $OWNER2 == "$VMI2" ]] || fail "launcher after restart: $row (before $LAUNCHER1)"
# the guest up again (its init answers the ACPI power button the cleanup's stop sends; a guest still booting
# would take the 180 s default grace period)
kvc -n kubevirt-lab engine console internals-demo --expect KVCON-GUEST-READY --timeout 120s >"$ENGINE_T/console2.log" ||
    { cat "$ENGINE_T/console2.log"; fail "no guest marker after the restart"; }

step "diagnosing: describe vm, describe vmi, events"
k -n kubevirt-lab describe vm internals-demo | grep -q '^Name: *internals-demo' || fail "describe vm"
k -n kubevirt-lab describe vmi internals-demo | grep -q '^Name: *internals-demo' || fail "describe vmi"
k -n kubevirt-lab get events --sort-by=.metadata.creationTimestamp | grep -c Started | grep -qx '[2-9]' ||
    fail "two Started events expected"

step "cleanup: stop, wait, delete the VM, get all, delete the namespace"
kvc stop kubevirt-lab/internals-demo >&2 || fail "kvcon stop (cleanup)"
k -n kubevirt-lab wait --for=delete vmi/internals-demo --timeout=180s >&2 || fail "VMI not deleted (cleanup)"
k -n kubevirt-lab delete vm internals-demo | grep -qx 'virtualmachine.kubevirt.io "internals-demo" deleted' ||
    fail "delete vm"
k -n kubevirt-lab get all >"$ENGINE_T/all" 2>&1 || fail "get all: $(cat "$ENGINE_T/all")"
grep -q internals-demo "$ENGINE_T/all" && fail "get all still shows the VM: $(cat "$ENGINE_T/all")"
k delete namespace kubevirt-lab >&2 || fail "delete namespace"
[[ $(qemu_count internals-demo kubevirt-lab) == 0 ]] || fail "a QEMU is left"

# ---- seed 002 ("Understanding KubeVirt, VM and VMI": ../shared/seeds/002_*.txt): its halted app01, byte for byte
# (tests/fixtures/seed-002-app01.yaml, checked against the seed where it is at hand), on a claim app01-root that a
# DataVolume fills from a local HTTP server with the lab's BIOS-bootable disk (syslinux, the guest's kernel).
step "seed 002: the seed's VM, a DataVolume importing a bootable image over HTTP, the namespace"
SEED2=$(ls /work/shared/seeds/002_*.txt "$ROOT"/../shared/seeds/002_*.txt 2>/dev/null | head -n1 || true)
if [[ -n $SEED2 ]]; then
    awk '/^apiVersion: kubevirt.io\/v1$/ && !go { go = 1 } go { print } go && /claimName: app01-root/ { exit }' "$SEED2" |
        cmp -s - "$ROOT/tests/fixtures/seed-002-app01.yaml" || fail "tests/fixtures/seed-002-app01.yaml differs from $SEED2"
fi
cp "$ROOT/tests/fixtures/seed-002-app01.yaml" "$ENGINE_T/app01.yaml"
mkdir -p "$ENGINE_T/www"
cp "$ROOT/build/cdisk/disk.qcow2" "$ENGINE_T/www/app01-root.qcow2"
python3 -c '
import http.server, functools, sys
h = functools.partial(http.server.SimpleHTTPRequestHandler, directory=sys.argv[1])
h.log_message = lambda *a: None
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), h)
print(s.server_address[1], flush=True)
s.serve_forever()' "$ENGINE_T/www" >"$ENGINE_T/web.port" &
WEB=$!
wait_eq 10 1 bash -c "[[ -s '$ENGINE_T/web.port' ]] && echo 1" || fail "the HTTP server did not start"
{
    printf 'apiVersion: v1\nkind: Namespace\nmetadata:\n  name: apps\n---\n'
    printf 'apiVersion: cdi.kubevirt.io/v1beta1\nkind: DataVolume\nmetadata:\n  name: app01-root\n  namespace: apps\n'
    printf 'spec:\n  source:\n    http:\n      url: http://127.0.0.1:%s/app01-root.qcow2\n' "$(cat "$ENGINE_T/web.port")"
    printf '  storage:\n    resources:\n      requests:\n        storage: 64Mi\n---\n'
    cat "$ENGINE_T/app01.yaml"
} >"$ENGINE_T/app01-all.yaml"

step "seed 002: server-side dry run (the namespace does not exist yet), then one apply of all three"
k apply --dry-run=server -f "$ENGINE_T/app01.yaml" >"$ENGINE_T/dry1" 2>&1 && fail "dry run into a missing namespace: $(cat "$ENGINE_T/dry1")"
grep -q 'namespaces "apps" not found' "$ENGINE_T/dry1" || fail "dry run: $(cat "$ENGINE_T/dry1")"
out=$(k apply --dry-run=server -f "$ENGINE_T/app01-all.yaml" 2>&1 || true)
grep -qx 'namespace/apps created (server dry run)' <<<"$out" || fail "dry run of the namespace: $out"
k get namespace apps >/dev/null 2>&1 && fail "a server dry run created the namespace"
out=$(k apply -f "$ENGINE_T/app01-all.yaml")
[[ $out == $'namespace/apps created\ndatavolume.cdi.kubevirt.io/app01-root created\nvirtualmachine.kubevirt.io/app01 created' ]] ||
    fail "apply: $out"
out=$(k apply --dry-run=server -f "$ENGINE_T/app01.yaml")
[[ $out == 'virtualmachine.kubevirt.io/app01 unchanged (server dry run)' ]] || fail "dry run of the applied VM: $out"

step "seed 002: halted, no VMI expected; the DataVolume imports the image into the claim"
k -n apps wait --for=jsonpath='{.status.phase}'=Succeeded dv/app01-root --timeout=120s >&2 ||
    fail "import: $(k -n apps get dv app01-root -o yaml)"
k get vm app01 -n apps >"$ENGINE_T/s2get0" 2>&1
grep -Eq '^app01 +[0-9]+[smh] +Stopped +False$' "$ENGINE_T/s2get0" || fail "get vm app01: $(cat "$ENGINE_T/s2get0")"
k get vmi app01 -n apps >"$ENGINE_T/s2vmi0" 2>&1 && fail "a VMI of a halted VM: $(cat "$ENGINE_T/s2vmi0")"
grep -q 'virtualmachineinstances.kubevirt.io "app01" not found' "$ENGINE_T/s2vmi0" || fail "get vmi: $(cat "$ENGINE_T/s2vmi0")"
PVC_UID=$(k -n apps get pvc app01-root -o jsonpath='{.metadata.uid} {.status.phase}')
[[ $PVC_UID =~ ^[0-9a-f-]{36}\ Bound$ ]] || fail "claim: $PVC_UID"

step "seed 002: start, get vm,vmi, wait Ready, describe vmi; the guest boots from the claim"
kvc start apps/app01 >&2 || fail "kvcon start app01"
k -n apps wait vmi/app01 --for=condition=Ready --timeout=180s >&2 || fail "app01 not Ready: $(k -n apps get vmi app01 -o yaml)"
k get vm,vmi -n apps >"$ENGINE_T/s2get1"
cat "$ENGINE_T/s2get1" >&2
grep -Eq '^virtualmachine.kubevirt.io/app01 +[0-9]+[smh] +Running +True$' "$ENGINE_T/s2get1" &&
    grep -Eq '^virtualmachineinstance.kubevirt.io/app01 +[0-9]+[smh] +Running +[0-9.]* +[^ ]+ +True$' "$ENGINE_T/s2get1" ||
    fail "get vm,vmi: $(cat "$ENGINE_T/s2get1")"
k describe vmi app01 -n apps >"$ENGINE_T/s2desc"
grep -q 'Claim Name: *app01-root' "$ENGINE_T/s2desc" && grep -Eq 'Cores: *2' "$ENGINE_T/s2desc" ||
    fail "describe vmi: $(cat "$ENGINE_T/s2desc")"
S2VMI1=$(k -n apps get vmi app01 -o jsonpath='{.metadata.uid}')
kvc -n apps engine console app01 --expect KVCON-GUEST-READY --timeout 120s >"$ENGINE_T/s2console.log" ||
    { cat "$ENGINE_T/s2console.log"; fail "app01 did not boot from its claim"; }

step "seed 002: stop removes the execution, the VM and claim stay; a new start is a new VMI UID on the same claim"
kvc stop apps/app01 >&2 || fail "kvcon stop app01"
k -n apps wait --for=delete vmi/app01 --timeout=180s >&2 || fail "app01's VMI not deleted"
[[ $(k -n apps get vm app01 -o jsonpath='{.spec.runStrategy} {.status.printableStatus}') == "Halted Stopped" ]] ||
    fail "after stop: $(k -n apps get vm app01 -o yaml)"
kvc start apps/app01 >&2 || fail "kvcon start app01 again"
k -n apps wait vmi/app01 --for=condition=Ready --timeout=180s >&2 || fail "app01 not Ready again"
S2VMI2=$(k -n apps get vmi app01 -o jsonpath='{.metadata.uid}')
[[ -n $S2VMI2 && $S2VMI2 != "$S2VMI1" ]] || fail "the VMI UID did not change ($S2VMI1 -> $S2VMI2)"
[[ $(k -n apps get pvc app01-root -o jsonpath='{.metadata.uid} {.status.phase}') == "$PVC_UID" ]] || fail "the claim changed"
k -n apps get vmi app01 -o jsonpath='{.spec.volumes[0].persistentVolumeClaim.claimName}' | grep -qx app01-root ||
    fail "the new execution's volume"
kvc -n apps engine console app01 --expect KVCON-GUEST-READY --timeout 120s >"$ENGINE_T/s2console2.log" ||
    { cat "$ENGINE_T/s2console2.log"; fail "app01 did not boot again"; }

step "seed 002: storage ownership: deleting the VM leaves the DataVolume's claim (not the VM's)"
kvc stop apps/app01 >&2 || fail "kvcon stop app01 (cleanup)"
k -n apps wait --for=delete vmi/app01 --timeout=180s >&2 || fail "app01's VMI not deleted (cleanup)"
k -n apps delete vm app01 >&2 || fail "delete vm app01"
[[ $(k -n apps get pvc app01-root -o jsonpath='{.metadata.uid} {.status.phase}') == "$PVC_UID" ]] ||
    fail "the claim went with the VM"
[[ -e $XDG_STATE_HOME/kvcon/engine-data/volumes/apps/app01-root.img ]] || fail "no file of app01-root"
k delete namespace apps >&2 || fail "delete namespace apps" # its DataVolume, claim and file go with it
k get namespace apps >/dev/null 2>&1 && fail "namespace apps is left"
[[ ! -e $XDG_STATE_HOME/kvcon/engine-data/volumes/apps/app01-root.img ]] || fail "app01-root's file is left"
[[ $(qemu_count app01 apps) == 0 ]] || fail "a QEMU of app01 is left"
echo "PASS engine_walkthrough"
