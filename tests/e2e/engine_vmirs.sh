#!/bin/bash
# VirtualMachineInstanceReplicaSet on the engine (issue 27), driven by the REAL kubectl through `kvcon engine
# kubeconfig` against the service started on demand: seed 001's replica set ("keeps N identical VMIs running ...
# stateless VMs whose disks need not survive": the lab guest's kernel-boot container) with 2 replicas: kubectl get
# vmirs as KubeVirt prints it (NAME DESIRED CURRENT READY AGE), members named as KubeVirt names them (the replica
# set's name + 5 characters) and owned by it, no VirtualMachine of theirs listed, a deleted member replaced, kubectl
# scale, spec.paused, the replica set and its members kept across a restart of the service, kubectl delete.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/engine-lib.bash"

engine_needs "the embedded libvirt driver runs guests under its own account only as root" kubectl jq
engine_embed_up kvr
export HOME=$ENGINE_T/home
mkdir -p "$HOME"
unset KUBECONFIG KVCON_ENGINE_SERVICE KVCON_ENGINE_API_PORT
kv engine kubeconfig >"$ENGINE_T/kc" || fail "engine kubeconfig"
k() { kubectl --kubeconfig "$ENGINE_T/kc" --request-timeout=30s "$@"; }
members() { k get vmi -l kubevirt.io/vmReplicaSet=web -o json | jq -r '[.items[].metadata.name] | sort | join(" ")'; }
ready() { k get vmirs web -o jsonpath='{.status.replicas}/{.status.readyReplicas}'; }

# seed 001's replica set, its template the lab guest (kernel boot from a container image)
cat >"$ENGINE_T/rs.yaml" <<EOF
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstanceReplicaSet
metadata:
  name: web
spec:
  replicas: 2
  selector:
    matchLabels:
      kubevirt.io/vmReplicaSet: web
  template:
    metadata:
      labels:
        kubevirt.io/vmReplicaSet: web
    spec:
      terminationGracePeriodSeconds: 0
      domain:
        memory:
          guest: 128Mi
        firmware:
          kernelBoot:
            kernelArgs: console=ttyS0 quiet panic=-1
            container:
              image: kvcon-lab-guest
              kernelPath: /vmlinuz
              initrdPath: /initrd.gz
        devices:
          autoattachPodInterface: false
EOF

step "kubectl apply: two members, named and owned as KubeVirt's controller makes them, both Ready"
out=$(k apply -f "$ENGINE_T/rs.yaml" 2>&1) || fail "apply: $out"
[[ $out == "virtualmachineinstancereplicaset.kubevirt.io/web created" ]] || fail "apply said: $out"
wait_eq 60 2/2 ready || fail "not 2 ready: $(k get vmirs web -o yaml)"
read -r m1 m2 <<<"$(members)"
for m in "$m1" "$m2"; do
    [[ $m =~ ^web[bcdfghjklmnpqrstvwxz2456789]{5}$ ]] || fail "member name '$m'"
done
uid=$(k get vmirs web -o jsonpath='{.metadata.uid}')
own=$(k get vmi "$m1" -o json | jq -r '.metadata.ownerReferences[] | "\(.kind) \(.name) \(.uid) \(.controller)"')
[[ $own == "VirtualMachineInstanceReplicaSet web $uid true" ]] || fail "owner of $m1: $own"
out=$(k get vmirs)
head -1 <<<"$out" | grep -Eq '^NAME +DESIRED +CURRENT +READY +AGE$' || fail "table: $out"
sed -n 2p <<<"$out" | grep -Eq '^web +2 +2 +2 +[0-9]+s$' || fail "table: $out"
out=$(k get vm 2>&1)
[[ $out == "No resources found in default namespace." ]] || fail "the members' VMs are listed: $out"
evs=$(k get events -o json | jq -r '[.items[] | select(.involvedObject.kind == "VirtualMachine")] | length')
[[ $evs == 0 ]] || fail "events of the members' VMs are listed: $(k get events)"
[[ $(k get events -o json | jq -r --arg m "$m1" '[.items[] | select(.involvedObject.name == $m)] | length') -gt 0 ]] ||
    fail "no event of member $m1's VMI: $(k get events)"
out=$(kv get vmirs) || fail "kvcon get vmirs"
sed -n 2p <<<"$out" | grep -Eq '^web +2 +2 +2 +[0-9]+s$' || fail "kvcon get vmirs: $out"

step "a deleted member is replaced by a new one"
k delete vmi "$m1" --wait=false >/dev/null || fail "delete vmi $m1"
wait_members() { # WANT: the number of members, none of them $1
    local want=$1 until=$((SECONDS + 60)) got
    while ((SECONDS < until)); do
        got=$(members)
        [[ $(wc -w <<<"$got") == "$want" && " $got " != *" $m1 "* && $(ready) == "$want/$want" ]] && return 0
        sleep 0.2
    done
    fail "members '$got', wanted $want without $m1 ($(ready))"
}
wait_members 2

step "kubectl scale --replicas=1; spec.paused keeps the controller from replacing"
out=$(k scale vmirs web --replicas=1 2>&1) || fail "scale: $out"
[[ $out == "virtualmachineinstancereplicaset.kubevirt.io/web scaled" ]] || fail "scale said: $out"
wait_members 1
[[ $(k get vmirs web -o jsonpath='{.spec.replicas}') == 1 ]] || fail "spec.replicas"
k patch vmirs web --type merge -p '{"spec":{"paused":true}}' >/dev/null || fail "pause"
[[ $(k get vmirs web -o jsonpath='{.status.conditions[?(@.type=="ReplicaPaused")].status}') == True ]] ||
    fail "no ReplicaPaused: $(k get vmirs web -o yaml)"
m1=$(members)
k delete vmi "$m1" >/dev/null || fail "delete vmi $m1"
wait_eq 60 "0/" ready || fail "status.replicas after the member went: $(ready)"
[[ -z $(members) ]] || fail "a member made while paused: $(members)"
k patch vmirs web --type merge -p '{"spec":{"paused":false}}' >/dev/null || fail "unpause"
wait_members 1

step "kept across a restart of the service: the same replica set and member"
m1=$(members)
pid=$(cat "$XDG_STATE_HOME"/kvcon/engine-*.sock.pid)
kill -TERM "$pid"
for _ in $(seq 1 300); do pid_alive "$pid" || break; sleep 0.1; done
kv get vmi >/dev/null || fail "kvcon get vmi after the restart"
[[ $(k get vmirs web -o jsonpath='{.metadata.uid}') == "$uid" ]] || fail "another replica set after the restart"
[[ $(members) == "$m1" ]] || fail "members after the restart: '$(members)', not $m1"
out=$(k get vm 2>&1)
[[ $out == "No resources found in default namespace." ]] || fail "the member's VM is listed after the restart: $out"

step "kubectl delete: the members go, then the replica set"
k delete vmirs web --timeout=60s >/dev/null || fail "delete vmirs"
[[ -z $(members) ]] || fail "members left: $(members)"
out=$(k get vmirs 2>&1)
[[ $out == "No resources found in default namespace." ]] || fail "after delete: $out"
[[ -z $(ls "$XDG_STATE_HOME"/kvcon/engine-data/vmirs/ 2>/dev/null) ]] || fail "its file stayed"
echo PASS
