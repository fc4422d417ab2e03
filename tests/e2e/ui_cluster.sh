#!/bin/bash
# e2e-lane: cluster
# The dashboard's cluster lists against fakekube in tmux, each under a title bar as every list: `:node` lists the
# three nodes with Ready, schedulable for VMs, KVM capacity from virt-handler (1k), CPU and memory requested by
# the pods on each and allocatable, as `kubectl describe node` prints them (its "Allocated resources" and
# "Allocatable"), and the number of VMIs on each (equal to the VMIs' nodeName in the fake cluster), a cordoned node shows SchedulingDisabled and not schedulable after the next listing, enter
# on a node opens the VMI list filtered to it; `:vmim` lists a migration the test starts, with its VMI, source
# and target node and Succeeded, and enter opens that VM's view; `:pvc` and `:dv` list the storage scenarios'
# claims and DataVolume (phase, progress), enter shows the object's YAML; `:vmirs` lists a replica set with its
# members (VMIs it owns) and their phases, enter shows them in the VMI list; the VM view's walkthrough (d) shows the
# storage chain with its first broken link, and it and the view's verdicts name the DataVolume or the claim; at 80
# columns the VM view keeps UIDs and names whole and wraps event lines instead of cutting them; i shows the guest agent's OS, hostname, interfaces, filesystems and
# users (and says why without an agent); ctrl-r and kvcon softreboot call the VMI's softreboot subresource; b
# writes an evidence bundle in the background.
. "$(dirname "$0")/ui_lib.inc"

fk_start --vms 6 --namespaces 1 --step 0.05 --scenario dv-importing,pvc-pending,agent-missing,replicaset --scenario-namespace ns-00
fk settle 30 >/dev/null || fail "settle"
kv_start -n ns-00
wait_for 'Watch: vm live +vmi live +pod live' 15
count_on() { fk state virtualmachineinstances | $PY -c '
import json, sys
print(sum(1 for v in json.load(sys.stdin)["virtualmachineinstances"] if v["status"].get("nodeName") == sys.argv[1]))' "$1"; }

# 1. :node
# kubectl describe node's requests ("419m (5%)") and allocatable of node $1, as a regex: CPU REQ CPU ALLOC MEM REQ MEM ALLOC
described() {
	KUBECONFIG="$W/fk/kubeconfig" kubectl describe node "$1" | awk '
		/^Allocatable:/ { al = 1 } /^System Info:/ { al = 0 } /^Allocated resources:/ { ar = 1 }
		al && $1 == "cpu:" { acpu = $2 } al && $1 == "memory:" { amem = $2 }
		ar && $1 == "cpu" && !cpu { cpu = $2 " " $3 } ar && $1 == "memory" && !mem { mem = $2 " " $3 }
		END { print cpu "  " acpu "  " mem "  " amem }' | sed 's/[()]/\\&/g; s/  / +/g'
}
cmd node
wait_for '─ Nodes\[3\] ─' 10
wait_for 'NAME +STATUS +SCHEDULABLE +KVM +CPU REQ +CPU ALLOC +MEM REQ +MEM ALLOC +VMS +AGE' 5
for n in node01 node02 node03; do
	if command -v kubectl >/dev/null; then
		want=$(described $n)
		[[ $want == *'m \('*'%\) +'*' +'*'%\) +'* ]] || fail "kubectl describe node $n: '$want'"
		wait_for "^ $n +Ready +true +1k +$want +$(count_on $n) +50d" 10
	else
		wait_for "^ $n +Ready +true +1k +[0-9]+m \([0-9]+%\) +7910m +[0-9]+ \([0-9]+%\) +32318852Ki +$(count_on $n) +50d" 10
	fi
done
fk patch /api/v1/nodes/node02 '{"spec":{"unschedulable":true}}' >/dev/null || fail "cordon"
wait_for '^ node02 +Ready,SchedulingDisabled +false +1k ' 10

# 2. enter: the VMIs on that node
busiest=$(for n in node01 node02 node03; do echo "$(count_on $n) $n"; done | sort -rn | head -1 | cut -d' ' -f2)
[ "$(count_on "$busiest")" -ge 1 ] || fail "no VMI on any node"
keys g
for n in node01 node02 node03; do [ "$n" = "$busiest" ] && break; keys j; done
keys Enter
wait_for "VirtualMachineInstances\(ns-00\)\[$(count_on "$busiest")\] </$busiest>" 10
screen | sed -n '6,38p' | grep -E ' node0[123]' | grep -v " $busiest" && fail "the VMI list shows other nodes"

# 3. :vmim: a migration, with source and target, then enter opens the VM
vm=$(fk names virtualmachineinstances | sed -n 's|^ns-00/||p' | grep -v -e agent-missing -e replicaset | head -1)
src=$(fk get "/apis/kubevirt.io/v1/namespaces/ns-00/virtualmachineinstances/$vm" | $PY -c 'import json,sys; print(json.load(sys.stdin)["status"]["nodeName"])')
fk action ns-00 "$vm" migrate >/dev/null || fail "migrate"
fk settle 30 >/dev/null || fail "settle after migrate"
dst=$(fk get "/apis/kubevirt.io/v1/namespaces/ns-00/virtualmachineinstances/$vm" | $PY -c 'import json,sys; print(json.load(sys.stdin)["status"]["nodeName"])')
[ "$src" != "$dst" ] || fail "the migration did not move the VMI"
cmd vmim
wait_for '─ Migrations\(ns-00\)\[1\] ─' 10
wait_for "^ kubevirt-migrate-vm-[a-z0-9]+ +Succeeded +$vm +$src +$dst +[0-9]+[smhd] +[0-9]+[smhd]$" 10
keys Enter
wait_for "vm ns-00/$vm" 10

# 4. :pvc and :dv, enter shows the object's YAML
cmd pvc
wait_for '─ PVCs\(ns-00\)\[2\] ─' 10
wait_for '^ dv-importing-rootdisk +Bound +pvc-[0-9a-f-]+ +10Gi +RWO +local-path ' 10
wait_for '^ pvc-pending-rootdisk +Pending +slow-nfs ' 10
cmd dv
wait_for '─ DataVolumes\(ns-00\)\[1\] ─' 10
wait_for '^ dv-importing-rootdisk +ImportInProgress +37.50% +0 ' 10
keys Enter
wait_for 'DataVolume ns-00/dv-importing-rootdisk \(YAML\)' 10
wait_for 'kind: DataVolume' 10
keys q

# 4b. :vmirs: the replica set with its members (owned VMIs, no VM) and their phases; enter shows them in the VMI list
cmd vmirs
wait_for '─ VMIReplicaSets\(ns-00\)\[1\] ─' 10
wait_for 'NAME +DESIRED +CURRENT +READY +AGE +MEMBERS' 5
wait_for '^ replicaset +2 +2 +2 +30m +replicaset[b-z2-9]{5}:Running replicaset[b-z2-9]{5}:Running' 10
keys Enter
wait_for 'VirtualMachineInstances\(ns-00\)\[2\] </replicaset>' 10

# 5. the VM view's walkthrough (d) shows the storage chain and its first broken link once the API answered
cmd "vm ns-00/dv-importing"
wait_for 'vm ns-00/dv-importing' 10
keys d
wait_for 'walkthrough ns-00/dv-importing' 10
wait_for 'rootdisk: DataVolume dv-importing-rootdisk ImportInProgress 37.50% -> PVC dv-importing-rootdisk Bound' 10
wait_for 'first broken link: DataVolume: DataVolume ns-00/dv-importing-rootdisk is ImportInProgress' 10
# its headline names the DataVolume and its progress, as kvcon diagnose's (diag_run_storage)
wait_for '\[vm-provisioning\] the VM waits for its disks: DataVolume ns-00/dv-importing-rootdisk is' 5
keys q
# the VM view's verdicts too, once the storage chain read in the background is in: the claim, not "a PVC of the VM"
cmd "vm ns-00/pvc-pending"
wait_for 'vm ns-00/pvc-pending' 10
wait_for '^   ns-00/pvc-pending-rootdisk \(storage class slow-nfs\) is' 10
screen | grep -q 'a PVC of the VM is not Bound' && fail "the VM view's headline is the generic one"

# 5b. layout at 80 columns (issue 25, item 11): panels wrap at words, UIDs and names whole; event lines wrap under
# their reason instead of being cut with ~ (only the oldest one shown may be, when it does not fit)
$T resize-window -t k -x 80 -y 40
uid_of() { fk get "$1" | $PY -c 'import json,sys; print(json.load(sys.stdin)["metadata"]["uid"])'; }
vmuid=$(uid_of /apis/kubevirt.io/v1/namespaces/ns-00/virtualmachines/agent-missing)
pod=$(fk names pods | sed -n 's|^ns-00/||p' | grep '^virt-launcher-agent-missing-' | head -1)
poduid=$(uid_of "/api/v1/namespaces/ns-00/pods/$pod")
cmd "vm ns-00/agent-missing"
wait_for 'vm ns-00/agent-missing' 10
wait_for "^ +$vmuid( |$)" 5
wait_for "^ +$poduid( |$)" 5
wait_for "$pod:\$" 5
[ "$(screen | sed -n '/─ events\[/,$p' | grep -c '~$')" -le 1 ] || fail "event lines cut with ~"
$T resize-window -t k -x 120 -y 40

# 6. i: the guest agent's report (kubectl reads the same subresources); without an agent it says so
kubectl --kubeconfig "$W/fk/kubeconfig" get --raw "/apis/subresources.kubevirt.io/v1/namespaces/ns-00/virtualmachineinstances/$vm/filesystemlist" |
	grep -q '"mountPoint":"/"' || fail "kubectl: filesystemlist"
cmd "vm ns-00/$vm"
wait_for "vm ns-00/$vm" 10
keys i
wait_for "guest ns-00/$vm" 10
wait_for '^ OS +CirrOS 0.6.2' 10
wait_for "^ Hostname +$vm" 5
wait_for '^   eth0 +10\.[0-9.]+ +[0-9a-f:]+' 5
wait_for '^   vda1 +/ +ext4 +used 40.0 MiB of 1.0 GiB' 5
wait_for '^   cirros +- +since 20' 5
keys q
cmd "vm ns-00/agent-missing"
wait_for 'vm ns-00/agent-missing' 10
keys i
wait_for 'OS: not available \(VMI does not have guest agent connected\)' 10
keys q

# 7. soft reboot: ctrl-r in the VM view asks, then calls the VMI's softreboot subresource; the CLI does the same
sr() { fk get /fake/requests | $PY -c 'import json,sys; print(sum(v for k, v in json.load(sys.stdin)["mutatingByPattern"].items() if k.endswith("/softreboot")))'; }
n0=$(sr)
cmd "vm ns-00/$vm"
wait_for "vm ns-00/$vm" 10
keys C-r
wait_for "Soft-reboot the guest of VM ns-00/$vm\\?" 5
keys y
poll_sr() { [ "$(sr)" -eq $((n0 + 1)) ]; }
for _ in $(seq 50); do poll_sr && break; sleep 0.1; done
poll_sr || fail "ctrl-r did not call softreboot"
KUBECONFIG="$W/fk/kubeconfig" "$KVCON" softreboot "ns-00/$vm" >"$W/sr.out" 2>&1 || fail "kvcon softreboot: $(cat "$W/sr.out")"
grep -qx "VM ns-00/$vm: soft reboot requested" "$W/sr.out" || fail "softreboot output"
[ "$(sr)" -eq $((n0 + 2)) ] || fail "the CLI did not call softreboot"
fk action ns-00 "$vm" pause >/dev/null
KUBECONFIG="$W/fk/kubeconfig" "$KVCON" softreboot "ns-00/$vm" >"$W/sr.out" 2>&1 && fail "softreboot of a paused VMI must fail"
grep -q 'VMI is paused' "$W/sr.out" || fail "paused message: $(cat "$W/sr.out")"

# 8. b: the evidence bundle, gathered by a child kvcon while the dashboard keeps drawing
cmd "vm ns-00/$vm"
wait_for "vm ns-00/$vm" 10
keys b
wait_for "gathering the evidence bundle of ns-00/$vm" 5
wait_for "bundle written: .*/kvcon/bundles/kvcon-bundle-ns-00-$vm-[0-9TZ]+\\.tar\\.gz" 60
f=$(ls "$W"/state/kvcon/bundles/kvcon-bundle-ns-00-"$vm"-*.tar.gz) || fail "no bundle file"
tar tzf "$f" | grep -qx manifest.txt || fail "the bundle has no manifest"
tar tzf "$f" | grep -qx vm.yaml || fail "the bundle has no vm.yaml"
screen | grep -q 'Watch: vm live' || fail "the dashboard's screen was disturbed"
cmd q
echo PASS
