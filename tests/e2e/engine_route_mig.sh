#!/bin/bash
# `kvcon engine migrate` and `kvcon engine drain` beside an engine service (issue 15): while `kvcon engine serve`
# holds the two lab hosts, the commands go through its API (the root's well-known socket) instead of opening the
# hosts in-process: migrate is the migrate subresource, which makes a VirtualMachineInstanceMigration
# (kubevirt-migrate-vm-XXXXX, as KubeVirt's virt-api does) that the service keeps and the command follows to its
# end; drain migrates every VMI running on the node; migrate --abort deletes the running vmim (the migration is
# aborted, the VM stays); the engine's options (--migrate-uri, --timeout, --bandwidth) travel as kvcon.io/
# annotations of the vmim, validated by the service and honoured by the engine; a refusal by the engine is the
# command's error (exit 1).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/migrate-lib.bash"
mig_service_setup TERM

step "vm1 and vm2 running on $HA; a service holds both hosts"
"$KV" engine serve >"$MT/serve.out" 2>"$MT/serve.err" &
SRV=$!
wait_eq 120 "engine serving" tail -n1 "$MT/serve.out" || fail "serve did not start: $(cat "$MT/serve.err")"
SOCK=$(sed -n 's/^socket: //p' "$MT/serve.out")
kv engine apply -f "$(manifest vm1)" # the first host of the config's set, the scheduler's tie
"$KV" -c "$SRC_URI" engine apply -f "$(manifest vm2)" # through the set's service, limited to $HA (not spread)
api() { curl -s --max-time 20 --unix-socket "$SOCK" "http://engine$1"; }
vmi_node() { api "/apis/kubevirt.io/v1/namespaces/default/virtualmachineinstances/$1" | jq -r '.status.phase + " " + .status.nodeName'; }
wait_eq 120 "Running $HA" vmi_node vm1 || fail "vm1 not Running on $HA: $(vmi_node vm1)"
wait_eq 120 "Running $HA" vmi_node vm2 || fail "vm2 not Running on $HA: $(vmi_node vm2)"
routed() { grep -q 'the engine service answers on .*going through it' "$1" || fail "$2 did not go through the service: $(tail -c 400 "$1")"; }

step "engine migrate vm1: through the service, a vmim kept and Succeeded"
out=$("$KV" --log-file "$MT/m1.log" engine migrate vm1 2>&1) || fail "migrate: $out"
routed "$MT/m1.log" "engine migrate"
[[ $(tail -n1 <<<"$out") == "virtualmachine vm1 migrated from $HA to $HB (through the engine service)" ]] ||
    fail "migrate said '$out'"
# the job's progress lines, from the figures the service serves (migrationState.kvconJob)
grep -Eq '^ +[0-9]+%  [0-9]+ MiB sent, [0-9]+ MiB remaining, .*pass [0-9]+, expected downtime [0-9]+ ms' <<<"$out" ||
    fail "no progress line: '$out'"
[[ $(vmi_node vm1) == "Running $HB" ]] || fail "vm1: $(vmi_node vm1)"
[[ $(dom_state "$DST_URI" vm1) == running ]] || fail "vm1 not running on $HB"
! virsh -q -c "$SRC_URI" dominfo default_vm1 >/dev/null 2>&1 || fail "vm1 still defined on $HA"
[[ $(rec_host vm1) == "$HB" ]] || fail "vm1's record not on $HB: $(rec_host vm1)"
api /apis/kubevirt.io/v1/namespaces/default/virtualmachineinstancemigrations >"$MT/vmims.json"
jq -e '[.items[] | select(.spec.vmiName == "vm1" and (.metadata.name | test("^kubevirt-migrate-vm-[0-9a-f]{5}$")) and .status.phase == "Succeeded")] | length == 1' \
    "$MT/vmims.json" >/dev/null || fail "no Succeeded kubevirt-migrate-vm-* vmim: $(jq -c '[.items[] | [.metadata.name, .status.phase]]' "$MT/vmims.json")"
ls "$XDG_STATE_HOME"/kvcon/engine-data/vmims/default_kubevirt-migrate-vm-*.json >/dev/null || fail "the vmim is not on disk"

step "refused by the engine: the host it already runs on (exit 1)"
rc=0
"$KV" engine migrate vm1 --to "$HB" >"$MT/same.out" 2>&1 || rc=$?
[[ $rc == 1 ]] && grep -q "already runs on $HB" "$MT/same.out" || fail "--to $HB: rc $rc: $(cat "$MT/same.out")"
[[ $(vmi_node vm1) == "Running $HB" ]] || fail "vm1 moved by a refused migration: $(vmi_node vm1)"

step "the engine's options through the service: kvcon.io/ annotations on the vmim, validated and honoured"
VMIMS=/apis/kubevirt.io/v1/namespaces/default/virtualmachineinstancemigrations
post_vmim() { # post_vmim NAME ANNOTATIONS-JSON -> the answer
    curl -s --max-time 20 --unix-socket "$SOCK" -X POST -H 'Content-Type: application/json' "http://engine$VMIMS" \
        -d "{\"apiVersion\":\"kubevirt.io/v1\",\"kind\":\"VirtualMachineInstanceMigration\",\"metadata\":{\"name\":\"$1\",\"annotations\":$2},\"spec\":{\"vmiName\":\"vm1\"}}"
}
out=$(post_vmim bad1 '{"kvcon.io/migration-timeout":"soon"}')
jq -e '.code == 422 and (.message | test("kvcon.io/migration-timeout.*whole seconds"))' <<<"$out" >/dev/null ||
    fail "a bad timeout annotation: $out"
out=$(post_vmim bad2 '{"kvcon.io/migration-bandwith":"5"}')
jq -e '.code == 422 and (.message | test("kvcon.io/migration-bandwith.*Unsupported"))' <<<"$out" >/dev/null ||
    fail "a misspelt annotation: $out"
out=$(post_vmim bad3 '{"kvcon.io/migrate-uri":"qemu+tcp://x/system -o ProxyCommand=evil"}')
jq -e '.code == 422 and (.message | test("kvcon.io/migrate-uri"))' <<<"$out" >/dev/null || fail "a bad migrate URI: $out"
out=$(post_vmim bad4 '{"kvcon.io/migration-options":"postcopy,fast"}')
jq -e '.code == 422 and (.message | test("kvcon.io/migration-options"))' <<<"$out" >/dev/null || fail "a bad option: $out"
[[ $(api "$VMIMS" | jq '[.items[] | select(.metadata.name | test("^bad"))] | length') == 0 ]] || fail "a refused vmim was kept"
# --migrate-uri: the engine uses it (an address no host has: the migration fails, where the config's URI works)
rc=0
"$KV" engine migrate vm1 --to "$HA" --migrate-uri qemu+tcp://10.77.0.254/system >"$MT/uri.out" 2>&1 || rc=$?
cat "$MT/uri.out"
[[ $rc == 1 ]] || fail "a migration to an unreachable --migrate-uri exited $rc"
[[ $(vmi_node vm1) == "Running $HB" && $(dom_state "$DST_URI" vm1) == running ]] || fail "vm1 after a bad URI: $(vmi_node vm1)"
api "$VMIMS" >"$MT/vmims.json"
jq -e '[.items[] | select(.metadata.annotations["kvcon.io/migrate-uri"] == "qemu+tcp://10.77.0.254/system" and .status.phase == "Failed")] | length == 1' \
    "$MT/vmims.json" >/dev/null || fail "no Failed vmim with the URI annotation: $(jq -c '[.items[] | [.metadata.name, .metadata.annotations, .status.phase]]' "$MT/vmims.json")"
# --bandwidth 1 --timeout 3: too slow to finish in 3 s; the engine aborts it and says why
rc=0
t0=$(date +%s)
"$KV" engine migrate vm1 --to "$HA" --bandwidth 1 --timeout 3 >"$MT/to.out" 2>&1 || rc=$?
cat "$MT/to.out"
[[ $rc == 1 ]] || fail "a migration past its --timeout exited $rc"
grep -q "not completed within --timeout 3 s" "$MT/to.out" || fail "no timeout reason"
(($(date +%s) - t0 < 60)) || fail "the timeout took $(($(date +%s) - t0)) s"
[[ $(vmi_node vm1) == "Running $HB" && $(dom_state "$DST_URI" vm1) == running ]] || fail "vm1 after the timeout: $(vmi_node vm1)"
! virsh -q -c "$SRC_URI" dominfo default_vm1 >/dev/null 2>&1 || fail "vm1 left over on $HA after the timeout"
api "$VMIMS" >"$MT/vmims.json"
jq -e '[.items[] | select(.metadata.annotations["kvcon.io/migration-timeout"] == "3" and .metadata.annotations["kvcon.io/migration-bandwidth"] == "1" and .status.phase == "Failed")] | length == 1' \
    "$MT/vmims.json" >/dev/null || fail "no Failed vmim with the timeout annotations"

step "engine drain $HA: vm2 (the only VMI there) moves to $HB"
out=$("$KV" --log-file "$MT/d1.log" engine drain "$HA" 2>&1) || fail "drain: $out"
routed "$MT/d1.log" "engine drain"
grep -q "^draining $HA: 1 running VM (through the engine service)$" <<<"$out" || fail "drain said: $out"
grep -q "^$HA drained$" <<<"$out" || fail "drain said: $out"
[[ $(vmi_node vm2) == "Running $HB" && $(rec_host vm2) == "$HB" ]] || fail "vm2: $(vmi_node vm2), record on $(rec_host vm2)"
[[ $(vmi_node vm1) == "Running $HB" ]] || fail "vm1 moved by the drain of $HA: $(vmi_node vm1)"

step "engine drain $HB --to $HA: both back"
out=$("$KV" engine drain "$HB" --to "$HA" 2>&1) || fail "drain back: $out"
grep -q "^draining $HB: 2 running VMs" <<<"$out" && grep -q "^$HB drained$" <<<"$out" || fail "drain back said: $out"
[[ $(vmi_node vm1) == "Running $HA" && $(vmi_node vm2) == "Running $HA" ]] || fail "not back: $(vmi_node vm1), $(vmi_node vm2)"

step "engine migrate --abort through the service (a 1 MiB/s migration): the vmim deleted, the VM stays on $HA"
virsh -q -c "$SRC_URI" migrate-setspeed default_vm1 1 || fail "migrate-setspeed"
"$KV" engine migrate vm1 >"$MT/slow.out" 2>&1 &
MIG_BG=$!
running_vmim() { api /apis/kubevirt.io/v1/namespaces/default/virtualmachineinstancemigrations | jq -r '[.items[] | select(.status.phase == "Running") | .metadata.name] | length'; }
wait_eq 120 1 running_vmim || fail "no Running vmim: $(cat "$MT/slow.out")"
out=$("$KV" --log-file "$MT/ab.log" engine migrate --abort vm1 2>&1) || fail "abort: $out"
routed "$MT/ab.log" "engine migrate --abort"
[[ $out == "virtualmachine vm1: migration abort requested" ]] || fail "abort said '$out'"
rc=0
wait $MIG_BG || rc=$?
MIG_BG=
[[ $rc == 1 ]] || fail "the aborted migrate exited $rc: $(cat "$MT/slow.out")"
echo "   the aborted migrate said: $(cat "$MT/slow.out")"
[[ $(vmi_node vm1) == "Running $HA" && $(dom_state "$SRC_URI" vm1) == running ]] || fail "vm1 after the abort: $(vmi_node vm1)"
! virsh -q -c "$DST_URI" dominfo default_vm1 >/dev/null 2>&1 || fail "vm1 left over on $HB"
echo PASS
