#!/bin/bash
# e2e-lane: cluster
# The kube provider's actions against fakekube, observed with `kvcon get`: migrate keeps the VMI UID and moves it
# to another node with a new launcher pod; migrate --abort deletes the unfinished VirtualMachineInstanceMigration
# (KubeVirt's abort); stop --force ends the VM without the graceful step; a refused action carries the API's own
# Status message. Exit 0 pass, 77 skip, anything else fail.
set -u
# shellcheck source=tests/e2e/lib/fakekube.bash
. "$(dirname "$0")/lib/fakekube.bash"
# field of one VMI from `kvcon get vmi -o summary`: vmi_field NAME FIELD
vmi_field() {
	"$KVCON" get vmi -n ns-00 -o summary | "$PY" -c '
import json, sys
print(next((r.get(sys.argv[2]) or "") for r in json.load(sys.stdin) if r["name"] == sys.argv[1]))' "$1" "$2"
}
vmim_phase() {
	fkctl get /apis/kubevirt.io/v1/namespaces/ns-00/virtualmachineinstancemigrations | "$PY" -c '
import json, sys
items = [i for i in json.load(sys.stdin)["items"] if i["spec"]["vmiName"] == sys.argv[1]]
print(items[-1].get("status", {}).get("phase", "") if items else "none")' "$1"
}

fk_start --vms 6 --namespaces 1 --seed 4 --step 0.1
vms=$("$KVCON" get vmi -n ns-00 -o summary | "$PY" -c '
import json, sys
print(" ".join(r["name"] for r in json.load(sys.stdin) if r["phase"] == "Running"))')
set -- $vms
[ $# -ge 3 ] || fail "need three running VMs, have: $vms"
a=$1 b=$2 c=$3

# 1. migrate: same VMI UID, another node, a new launcher pod
uid=$(vmi_field "$a" uid); node=$(vmi_field "$a" node)
pod_before=$("$KVCON" get pod -n ns-00 -o summary | "$PY" -c 'import json,sys; print(" ".join(sorted(r["uid"] for r in json.load(sys.stdin) if r["vmiUid"] == sys.argv[1])))' "$uid")
"$KVCON" migrate "ns-00/$a" >"$tmp/mig.out" 2>&1 || { cat "$tmp/mig.out"; fail "migrate"; }
poll 30 bash -c "[ \"\$(\"$KVCON\" get vmi -n ns-00 -o summary | \"$PY\" -c 'import json,sys; print(next(r[\"node\"] for r in json.load(sys.stdin) if r[\"name\"] == sys.argv[1]))' $a)\" != $node ]" ||
	fail "VMI did not move off $node"
[ "$(vmi_field "$a" uid)" = "$uid" ] || fail "migration changed the VMI UID"
fkctl settle 30 >/dev/null
pod_after=$("$KVCON" get pod -n ns-00 -o summary | "$PY" -c 'import json,sys; print(" ".join(sorted(r["uid"] for r in json.load(sys.stdin) if r["vmiUid"] == sys.argv[1])))' "$uid")
[ -n "$pod_after" ] && [ "$pod_after" != "$pod_before" ] || fail "no new launcher pod ($pod_before -> $pod_after)"

# 2. migrate --abort on a slow migration: the VMIM is deleted before it finishes
fkctl post /fake/step '{"seconds":2}' >/dev/null
node_b=$(vmi_field "$b" node)
"$KVCON" migrate "ns-00/$b" >/dev/null 2>&1 || fail "migrate $b"
[ "$(vmim_phase "$b")" != none ] || fail "no VirtualMachineInstanceMigration for $b"
"$KVCON" migrate "ns-00/$b" --abort >"$tmp/abort.out" 2>&1 || { cat "$tmp/abort.out"; fail "migrate --abort"; }
fkctl post /fake/step '{"seconds":0.1}' >/dev/null
phase=$(vmim_phase "$b")
[ "$phase" != "Succeeded" ] || fail "the aborted migration succeeded"
[ "$phase" = none ] || [ "$phase" = Failed ] || fail "the VMIM is still there after the abort (phase $phase)"
[ "$(vmi_field "$b" node)" = "$node_b" ] || fail "the aborted migration moved $b"
# aborting when nothing migrates: a clear error
fkctl settle 30 >/dev/null
"$KVCON" migrate "ns-00/$b" --abort >"$tmp/abort2.out" 2>&1 && fail "abort without a migration succeeded"
grep -q "no migration in progress" "$tmp/abort2.out" || fail "abort message: $(cat "$tmp/abort2.out")"

# 3. stop --force: the VM stops, the VMI goes
"$KVCON" stop "ns-00/$c" --force >"$tmp/stop.out" 2>&1 || { cat "$tmp/stop.out"; fail "stop --force"; }
poll 20 bash -c "\"$KVCON\" get vm -n ns-00 | grep -q '^$c  .* Stopped '" || fail "$c not Stopped"
"$KVCON" get vmi -n ns-00 -o name | grep -q "/$c\$" && fail "$c still has a VMI"
# a second stop: 409 with KubeVirt's message, exit 1
"$KVCON" stop "ns-00/$c" >"$tmp/stop2.out" 2>&1; rc=$?
[ $rc -eq 1 ] || fail "second stop exit $rc"
grep -q "VM is not running" "$tmp/stop2.out" || fail "409 message: $(cat "$tmp/stop2.out")"
echo "PASS: get_actions"
