#!/bin/bash
# `kvcon engine serve` over the two-host lab: both hosts are nodes, and live migration is KubeVirt's
# VirtualMachineInstanceMigration driven by the REAL kubectl: discovery lists vmim, `kubectl create -f vmim.yaml`
# migrates a running TCG guest, `kubectl wait` sees phase Succeeded, the VMI's nodeName and
# status.migrationState name the other host (the same migrationUid as the vmim's), `kubectl get vmim` prints
# KubeVirt's columns (NAME PHASE VMI), a watch sees the phases, a refused migration is Failed with the reason,
# `kubectl delete vmim` of a running migration aborts it, and the guest's shell state survives the moves (read
# through kvcon's serial console); `kvcon drain` of the VM's host evicts its launcher through the Eviction API, which
# for evictionStrategy LiveMigrate is an evacuation migration to the other host. Placement across the hosts: a
# nodeSelector for the second host starts a VM there (VMI nodeName, launcher pod, libvirt), a restart re-places an
# unconstrained VM on the least requested host, nothing fitting is ErrorUnschedulable with the scheduler's message
# naming each host's reason, and `kvcon -c HOST` beside the set's service goes through it, limited to HOST.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/migrate-lib.bash"
engine_needs "the two-host lab" kubectl
mig_setup
export HOME=$MT/home # kubectl's discovery cache, private to the test
mkdir -p "$HOME"
SRV= WATCH=
stop_srv() {
    [[ -n $WATCH ]] && kill $WATCH 2>/dev/null || true # one pid or several
    [[ -n $SRV ]] && kill -TERM "$SRV" 2>/dev/null && wait "$SRV" 2>/dev/null || true
    SRV= WATCH=
}
# mig_cleanup exits with the status it finds in $?: the test's, not stop_srv's
trap 'r=$?; stop_srv; set +e; (exit $r); mig_cleanup' EXIT

step "serve with both hosts (the config file's) as nodes, on the hosts' own socket: kvcon's commands go through it"
"$KV" engine serve --https 0 >"$MT/serve.out" 2>"$MT/serve.err" &
SRV=$!
wait_eq 120 "engine serving" tail -n1 "$MT/serve.out" || { cat "$MT/serve.err"; fail "serve did not start"; }
SOCK=$(sed -n 's/^socket: //p' "$MT/serve.out")
export KUBECONFIG=$(sed -n 's/^kubeconfig: //p' "$MT/serve.out")

step "vm1 running on $HA (the first host), a shell variable set"
kv --log-file "$MT/apply.log" engine apply -f "$(manifest vm1)"
grep -q "the engine service answers on $SOCK: going through it" "$MT/apply.log" || fail "apply did not go through $SOCK"
wait_shell vm1
console vm1 'export KVMARK=vmim$((6*7)); echo mark=$KVMARK' 'mark=vmim42' || fail "variable not set on $HA"
k() { kubectl --request-timeout=60s "$@"; }
[[ $(k get nodes -o name | sort | tr '\n' ' ') == "node/$HA node/$HB " ]] || fail "nodes: $(k get nodes -o name)"
k api-resources --api-group=kubevirt.io >"$MT/res.out"
grep -Eq '^virtualmachineinstancemigrations +vmim,vmims +kubevirt.io/v1 +true +VirtualMachineInstanceMigration$' \
    "$MT/res.out" || { cat "$MT/res.out"; fail "api-resources does not list vmim"; }
k wait --for=jsonpath='{.status.phase}'=Running vmi/vm1 --timeout=120s || fail "vmi not Running"
[[ $(k get vmi vm1 -o jsonpath='{.status.nodeName}') == "$HA" ]] || fail "vm1 not on $HA"

step "a watch on vmims; kubectl create -f vmim.yaml (the engine picks the target: the other host)"
curl -sN --unix-socket "$SOCK" "http://engine/apis/kubevirt.io/v1/namespaces/default/virtualmachineinstancemigrations?watch=true" \
    >"$MT/watch.out" 2>/dev/null &
WATCH=$!
cat >"$MT/vmim.yaml" <<YAML
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstanceMigration
metadata:
  name: mig1
spec:
  vmiName: vm1
YAML
out=$(k create -f "$MT/vmim.yaml")
[[ $out == "virtualmachineinstancemigration.kubevirt.io/mig1 created" ]] || fail "create: $out"
k wait --for=jsonpath='{.status.phase}'=Succeeded vmim/mig1 --timeout=300s ||
    fail "vmim not Succeeded: $(k get vmim mig1 -o json)"

step "the VMI moved: nodeName and migrationState name $HB; the vmim's migrationUid is the VMI's"
k get vmi vm1 -o json >"$MT/vmi.json"
k get vmim mig1 -o json >"$MT/vmim.json"
[[ $(jq -r .status.nodeName "$MT/vmi.json") == "$HB" ]] || fail "VMI nodeName: $(jq -c .status "$MT/vmi.json")"
ms=$(jq -c .status.migrationState "$MT/vmi.json")
[[ $(jq -r .targetNode <<<"$ms") == "$HB" && $(jq -r .sourceNode <<<"$ms") == "$HA" &&
   $(jq -r .completed <<<"$ms") == true && $(jq -r .failed <<<"$ms") == false && $(jq -r .mode <<<"$ms") == PreCopy ]] ||
    fail "VMI migrationState: $ms"
jq -e '(.startTimestamp | test("^20[0-9-]+T[0-9:]+Z$")) and (.endTimestamp | test("^20[0-9-]+T[0-9:]+Z$"))' <<<"$ms" \
    >/dev/null || fail "timestamps: $ms"
uid=$(jq -r .migrationUid <<<"$ms")
[[ ${#uid} == 36 && $(jq -r .status.migrationState.migrationUid "$MT/vmim.json") == "$uid" ]] ||
    fail "migrationUid: VMI $uid, vmim $(jq -c .status "$MT/vmim.json")"
[[ $(jq -r .spec.vmiName "$MT/vmim.json") == vm1 && $(jq -r '.status.phaseTransitionTimestamps[-1].phase' "$MT/vmim.json") == Succeeded ]] ||
    fail "vmim: $(jq -c . "$MT/vmim.json")"
[[ $(virsh -q -c "$DST_URI" domstate default_vm1 | head -n1) == running ]] || fail "domain not running on $HB"
! virsh -q -c "$SRC_URI" dominfo default_vm1 >/dev/null 2>&1 || fail "still defined on $HA"

step "kubectl get vmim: KubeVirt's columns"
k get vmim >"$MT/get.out"
cat "$MT/get.out"
head -n1 "$MT/get.out" | grep -Eq '^NAME +PHASE +VMI$' || fail "header"
grep -Eq '^mig1 +Succeeded +vm1$' "$MT/get.out" || fail "row"
wait_for 10 grep -q '"phase":"Succeeded"' "$MT/watch.out" || fail "the watch did not see Succeeded: $(cat "$MT/watch.out")"
jq -r '.type + " " + .object.status.phase' "$MT/watch.out" >"$MT/watch.phases"
cat "$MT/watch.phases"
head -n1 "$MT/watch.phases" | grep -q '^ADDED ' || fail "the watch: no ADDED first"
tail -n1 "$MT/watch.phases" | grep -qx 'MODIFIED Succeeded' || fail "the watch: last is not Succeeded"

console vm1 'echo mark=$KVMARK' 'mark=vmim42' || fail "variable lost on $HB"

step "a refused migration (a target that is not a node) is 422; one to the node it is on fails"
cat >"$MT/bad.yaml" <<YAML
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstanceMigration
metadata:
  name: mig-bad
spec:
  vmiName: vm1
  addedNodeSelector:
    kubernetes.io/hostname: nosuchnode
YAML
! k create -f "$MT/bad.yaml" 2>"$MT/bad.err" || fail "a target that is no node was accepted"
grep -q "addedNodeSelector" "$MT/bad.err" || fail "no reason: $(cat "$MT/bad.err")"
sed -i "s/nosuchnode/$HB/; s/mig-bad/mig-same/" "$MT/bad.yaml"
k create -f "$MT/bad.yaml" >/dev/null || fail "create mig-same"
k wait --for=jsonpath='{.status.phase}'=Failed vmim/mig-same --timeout=60s || fail "mig-same not Failed"
[[ -n $(k get vmim mig-same -o jsonpath='{.status.conditions[0].message}') ]] || fail "no failure message"
[[ $(k get vmi vm1 -o jsonpath='{.status.nodeName}') == "$HB" ]] || fail "vm1 moved by a refused migration"

step "migrate back with spec.addedNodeSelector naming $HA; kubectl delete vmim"
sed -i "s/$HB/$HA/; s/mig-same/mig-back/" "$MT/bad.yaml"
k create -f "$MT/bad.yaml" >/dev/null || fail "create mig-back"
k wait --for=jsonpath='{.status.phase}'=Succeeded vmim/mig-back --timeout=300s || fail "mig-back not Succeeded"
[[ $(k get vmi vm1 -o jsonpath='{.status.nodeName}') == "$HA" ]] || fail "vm1 not back on $HA"
[[ $(k get vmi vm1 -o jsonpath='{.status.migrationState.targetNode}') == "$HA" ]] || fail "targetNode not $HA"
k delete vmim mig1 mig-same mig-back >/dev/null || fail "delete"
[[ -z $(k get vmim -o name) ]] || fail "vmims left: $(k get vmim -o name)"
console vm1 'echo mark=$KVMARK' 'mark=vmim42' || fail "variable lost after the way back"

step "kubectl delete vmim of a running migration aborts it (a 1 MiB/s migration: libvirt's speed for the domain)"
virsh -q -c "$SRC_URI" migrate-setspeed default_vm1 1 || fail "migrate-setspeed"
sed "s/mig1/mig-abort/" "$MT/vmim.yaml" >"$MT/abort.yaml"
k create -f "$MT/abort.yaml" >/dev/null || fail "create mig-abort"
k wait --for=jsonpath='{.status.phase}'=Running vmim/mig-abort --timeout=120s || fail "mig-abort not Running"
auid=$(k get vmim mig-abort -o jsonpath='{.status.migrationState.migrationUid}')
[[ ${#auid} == 36 && $auid != "$uid" ]] || fail "mig-abort's migrationUid: '$auid'"
out=$(k delete vmim mig-abort)
[[ $out == 'virtualmachineinstancemigration.kubevirt.io "mig-abort" deleted' ]] || fail "delete: $out"
abort_done() { k get vmi vm1 -o jsonpath='{.status.migrationState.migrationUid} {.status.migrationState.failed} {.status.migrationState.abortStatus}'; }
wait_eq 120 "$auid true Succeeded" abort_done || fail "the migration was not aborted"
[[ $(k get vmi vm1 -o jsonpath='{.status.nodeName}') == "$HA" ]] || fail "vm1 left $HA after the abort"
[[ $(dom_state "$SRC_URI" vm1) == running ]] || fail "vm1 not running on $HA after the abort"
! virsh -q -c "$DST_URI" dominfo default_vm1 >/dev/null 2>&1 || fail "left over on $HB"
grep -q '"type":"DELETED".*"name":"mig-abort"' "$MT/watch.out" || fail "the watch did not see mig-abort DELETED"
console vm1 'echo mark=$KVMARK' 'mark=vmim42' || fail "vm1 does not answer after the abort"

step "kvcon drain $HA: cordoned; vm1 (evictionStrategy LiveMigrate) evicted through the Eviction API: migrated to $HB"
virsh -q -c "$SRC_URI" migrate-setspeed default_vm1 8796093022207 || fail "migrate-setspeed back to unlimited"
k patch vm vm1 --type merge -p '{"spec":{"template":{"spec":{"evictionStrategy":"LiveMigrate"}}}}' >/dev/null ||
    fail "patch LiveMigrate"
out=$(kv drain "$HA" --timeout 120s 2>&1) || fail "drain: $out"
[[ $out == *"node/$HA cordoned"*"evicting pod default/virt-launcher-vm1-"*"Eviction triggered evacuation of VMI \"default/vm1\""*"pod/virt-launcher-vm1-"*" evicted"*"node/$HA drained"* ]] ||
    fail "drain said: $out"
[[ $(k get vmi vm1 -o jsonpath='{.status.nodeName}') == "$HB" ]] || fail "vm1 not on $HB after the drain"
k get vmim -o name | grep -q '^virtualmachineinstancemigration.kubevirt.io/kubevirt-evacuation-' || fail "no evacuation: $(k get vmim)"
[[ $(k get node "$HA" -o jsonpath='{.spec.unschedulable}') == true ]] || fail "$HA not cordoned"
out=$(kv uncordon "$HA" 2>&1) && [[ $out == *"node/$HA uncordoned"* ]] || fail "uncordon: $out"
console vm1 'echo mark=$KVMARK' 'mark=vmim42' || fail "vm1 does not answer after the drain"

# placement across the set: the scheduler chooses each execution's host (engine/placement.c)
with_spec() { # with_spec NAME YAML: the lab VM NAME with YAML (lines of its template's spec) added; prints the file
    local f
    f=$(manifest "$1")
    printf '%s\n' "$2" >"$MT/$1.add"
    sed -i "/terminationGracePeriodSeconds/r $MT/$1.add" "$f"
    echo "$f"
}
vmi_at() { k get vmi "$1" -o jsonpath='{.status.phase} {.status.nodeName}' 2>/dev/null; }
pod_at() {
    k get pods -o json | jq -r --arg p "virt-launcher-$1-" \
        '[.items[] | select((.metadata.name | startswith($p)) and .status.phase == "Running")][0].spec.nodeName'
}
# watches of one host each, as kvcon -c HOST makes them: a VM that moves leaves one (DELETED), arrives in the other
for h in "$HA" "$HB"; do
    curl -sN --unix-socket "$SOCK" "http://engine/kvcon-host/$h/apis/kubevirt.io/v1/namespaces/default/virtualmachines?watch=true" \
        >"$MT/watch-$h.out" 2>/dev/null &
    WATCH="$WATCH $!"
done
seen() { jq -r '.type + " " + .object.metadata.name' "$MT/watch-$1.out" | tr '\n' ' '; }
step "placement: vm2 with nodeSelector $HB, applied to the set (its record on $HA first), starts on $HB"
k apply -f "$(with_spec vm2 "      nodeSelector:
        kubernetes.io/hostname: $HB")" >/dev/null || fail "apply vm2"
wait_eq 120 "Running $HB" vmi_at vm2 || fail "vm2: $(vmi_at vm2)"
[[ $(pod_at vm2) == "$HB" ]] || fail "vm2's launcher pod on '$(pod_at vm2)'"
[[ $(dom_state "$DST_URI" vm2) == running ]] || fail "vm2's domain not running on $HB"
! virsh -q -c "$SRC_URI" dominfo default_vm2 >/dev/null 2>&1 || fail "vm2 defined on $HA"
[[ $(rec_hosts vm2) == "$HB" ]] || fail "vm2's record on '$(rec_hosts vm2)'"

step "placement: a restart re-places vm1 (no constraint, on $HB beside vm2) on $HA, the least requested; vm2 stays"
u1=$(k get vmi vm1 -o jsonpath='{.metadata.uid}')
kv engine restart vm1 --force >/dev/null || fail "restart vm1"
wait_eq 120 "Running $HA" vmi_at vm1 || fail "vm1: $(vmi_at vm1)"
[[ $(k get vmi vm1 -o jsonpath='{.metadata.uid}') != "$u1" ]] || fail "vm1's VMI UID did not change"
[[ $(pod_at vm1) == "$HA" && $(dom_state "$SRC_URI" vm1) == running ]] || fail "vm1 not on $HA"
[[ $(vmi_at vm2) == "Running $HB" ]] || fail "vm2 moved: $(vmi_at vm2)"
wait_for 10 grep -q '"type":"ADDED".*"name":"vm1"' "$MT/watch-$HA.out" || fail "$HA's watch: $(seen "$HA")"
seen "$HA" | grep -q "^ADDED vm2 .*DELETED vm2 .*ADDED vm1 " || fail "$HA's watch saw: $(seen "$HA")"
seen "$HB" | grep -q "^ADDED vm1 .*ADDED vm2 .*DELETED vm1 " || fail "$HB's watch saw: $(seen "$HB")"

step "placement: nothing fits vm3 (nodeSelector $HA, tainted): ErrorUnschedulable with each host's reason; untainted, it starts there"
k taint node "$HA" dedicated=db:NoSchedule >/dev/null || fail "taint"
k apply -f "$(with_spec vm3 "      nodeSelector:
        kubernetes.io/hostname: $HA")" >/dev/null || fail "apply vm3"
wait_eq 60 ErrorUnschedulable k get vm vm3 -o jsonpath='{.status.printableStatus}' || fail "vm3: $(k get vm vm3 -o yaml)"
want="0/2 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 1 node(s) had untolerated taint {dedicated: db}. preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
got=$(k get vmi vm3 -o jsonpath='{.status.conditions[?(@.type=="PodScheduled")].message}')
[[ $got == "$want" ]] || fail "the scheduler's message: '$got'"
k get events -o json | jq -e --arg m "$want" '[.items[] | select(.reason == "FailedScheduling" and .message == $m)] | length > 0' \
    >/dev/null || fail "no FailedScheduling event with the message"
u3=$(k get vmi vm3 -o jsonpath='{.metadata.uid}')
k taint node "$HA" dedicated- >/dev/null || fail "untaint"
wait_eq 120 "Running $HA" vmi_at vm3 || fail "vm3 not Running on $HA once untainted: $(vmi_at vm3)"
[[ $(k get vmi vm3 -o jsonpath='{.metadata.uid}') == "$u3" ]] || fail "vm3's waiting VMI was replaced"
k delete vm vm3 --wait=false >/dev/null || fail "delete vm3"

step "kvcon -c $HA's URI beside the set's service goes through it, limited to $HA; kvcon engine console reaches its VM"
"$KV" -c "$SRC_URI" --log-file "$MT/c.log" engine apply -f "$(manifest vm4)" >"$MT/c.out" 2>&1 || fail "-c apply: $(cat "$MT/c.out")"
grep -q "limited to $HA" "$MT/c.log" || fail "-c did not go through the set's service: $(tail -c 600 "$MT/c.log")"
grep -qx "virtualmachine.kubevirt.io/vm4 created" "$MT/c.out" || fail "-c apply said: $(cat "$MT/c.out")"
on_a() { "$KV" -c "$SRC_URI" engine get vm -o name | grep -v /vm3 | sort | tr '\n' ' '; } # vm3 may be going still
wait_eq 30 "virtualmachine.kubevirt.io/vm1 virtualmachine.kubevirt.io/vm4 " on_a ||
    fail "-c $HA lists: $(on_a); the set: $(k get vm,vmi -o wide)"
! "$KV" -c "$SRC_URI" engine apply -f "$MT/vm2.yaml" >"$MT/c2.out" 2>&1 || fail "vm2 (on $HB) applied through $HA"
grep -q "already exists on engine host $HB, not on $HA" "$MT/c2.out" || fail "-c apply of vm2: $(cat "$MT/c2.out")"
wait_shell vm4
[[ $(vmi_at vm4) == "Running $HA" && $(jq -r .pinnedToHost "$XDG_STATE_HOME/kvcon/engine-data/hosts/$HA/vms/default_vm4.json") == true ]] ||
    fail "vm4: $(vmi_at vm4), not pinned to $HA"
echo PASS
