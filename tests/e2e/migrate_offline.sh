#!/bin/bash
# Offline migration (`kvcon engine migrate --offline`) through the engine service, and its durable intent: a
# stopped VM's record moves between the two lab hosts (a VirtualMachineInstanceMigration with the
# kvcon.io/migration-options annotation "offline", Succeeded); the move is stored in the source's record before
# the record moves, so a service killed -9 in between leaves exactly one record on exactly one host once a new
# service has read the records. Checked three ways:
#   - the two states a kill can leave, made by hand from a real record: the intent alone (the target's record not
#     written yet: the new service writes it and removes the source's) and the intent beside the target's record
#     (the source's is removed); either way the VM is listed once, on the target, and starts there;
#   - CHAOS_OFF_TRIALS (default 6) offline migrations killed -9 at a random moment (0-CHAOS_OFF_SPAN ms after the
#     request went out): after a new service has started, one record, on one host, the VM listed once, and every
#     vmim final, Succeeded exactly when the record moved.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/migrate-lib.bash"
# the test starts its own service (and kills it): no command of its own may start one on demand
export KVCON_ENGINE_SERVICE=use
mig_service_setup 9

SEED=${CHAOS_SEED:-$(($(date +%s) % 32768))}
TRIALS=${CHAOS_OFF_TRIALS:-6}
SPAN=${CHAOS_OFF_SPAN:-150}
RANDOM=$SEED
echo "offline: CHAOS_SEED=$SEED CHAOS_OFF_TRIALS=$TRIALS (replay: CHAOS_SEED=$SEED E2E_FILTER=migrate_offline make e2e)"

RECS=$XDG_STATE_HOME/kvcon/engine-data/hosts
# listed HOST: the service lists vm0 once, and its record is on HOST only
listed_on() {
    local n
    n=$(api http://engine/apis/kubevirt.io/v1/namespaces/default/virtualmachines | jq '[.items[] | select(.metadata.name == "vm0")] | length')
    [[ $n == 1 ]] || { echo "vm0 listed $n times"; return 1; }
    [[ $(rec_hosts vm0) == "$1" ]] || { echo "record on '$(rec_hosts vm0)', wanted $1"; return 1; }
}
on_one() { # vm0 listed once with its record on one host: that host in $MT/on
    local h
    for h in "$HA" "$HB"; do listed_on "$h" >/dev/null 2>&1 && { echo "$h" >"$MT/on"; return 0; }; done
    return 1
}
other() { [[ $1 == "$HA" ]] && echo "$HB" || echo "$HA"; }

step "vm0 (Halted) on $HA; a service with both hosts as nodes"
srv_up
kv engine apply -f "$(engine_manifest "$MT/vm0.yaml" vm0 Halted 160Mi)"
wait_for 30 bash -c "[[ \$(ls '$RECS/$HA/vms/default_vm0.json' 2>/dev/null) ]]" || fail "vm0's record not on $HA: $(rec_hosts vm0)"

step "engine migrate --offline through the service: the record moves, the vmim carries the option"
out=$(kv engine migrate vm0 --offline --to "$HB" 2>&1) || fail "offline migrate: $out"
[[ $out == *"virtualmachine vm0 moved to $HB (offline, through the engine service)"* ]] || fail "migrate said: $out"
listed_on "$HB" || fail "after the move"
api http://engine/apis/kubevirt.io/v1/namespaces/default/virtualmachineinstancemigrations >"$MT/vmims.json"
jq -e '[.items[] | select(.spec.vmiName == "vm0" and .metadata.annotations["kvcon.io/migration-options"] == "offline" and .status.phase == "Succeeded")] | length == 1' \
    "$MT/vmims.json" >/dev/null || fail "no Succeeded offline vmim: $(jq -c '[.items[] | [.metadata.name, .metadata.annotations, .status.phase]]' "$MT/vmims.json")"
rc=0
kv engine migrate vm0 --to "$HA" >"$MT/live.out" 2>&1 || rc=$?
[[ $rc == 1 ]] && grep -q "not running" "$MT/live.out" || fail "a live migration of a stopped VM: rc $rc: $(cat "$MT/live.out")"

step "a kill after the intent, before the target's record: the new service finishes the move ($HB -> $HA)"
srv_kill
jq --arg to "$HA" --arg dir "$RECS/$HA/vms" '. + {movingTo: $to, movingDir: $dir}' "$RECS/$HB/vms/default_vm0.json" \
    >"$MT/rec.json"
mv "$MT/rec.json" "$RECS/$HB/vms/default_vm0.json"
[[ $(rec_hosts vm0) == "$HB" ]] || fail "set-up: $(rec_hosts vm0)"
srv_up
wait_for 60 listed_on "$HA" || fail "the interrupted move was not finished: $(listed_on "$HA")"
grep -q "vm0: an interrupted offline migration to $HA was finished" "$MT/srv.log" || fail "the service did not say so"
jq -e 'has("movingTo") | not' "$RECS/$HA/vms/default_vm0.json" >/dev/null || fail "the target's record keeps the intent"

step "a kill after the target's record, before the source's removal: only the target's stays ($HA -> $HB)"
srv_kill
jq 'del(.movingTo, .movingDir)' "$RECS/$HA/vms/default_vm0.json" >"$RECS/$HB/vms/default_vm0.json"
jq --arg to "$HB" --arg dir "$RECS/$HB/vms" '. + {movingTo: $to, movingDir: $dir}' "$RECS/$HA/vms/default_vm0.json" \
    >"$MT/rec.json"
mv "$MT/rec.json" "$RECS/$HA/vms/default_vm0.json"
[[ $(rec_hosts vm0) == "$HA $HB" || $(rec_hosts vm0) == "$HB $HA" ]] || fail "set-up: $(rec_hosts vm0)"
srv_up
wait_for 60 listed_on "$HB" || fail "two records after the restart: $(listed_on "$HB")"

step "vm0 starts on $HB (where its record is) and stops again"
kv engine start vm0 >/dev/null
vmi_node() { api http://engine/apis/kubevirt.io/v1/namespaces/default/virtualmachineinstances/vm0 | jq -r '.status.phase + " " + .status.nodeName'; }
wait_eq 120 "Running $HB" vmi_node || fail "vm0 not Running on $HB: $(vmi_node)"
[[ $(dom_state "$DST_URI" vm0) == running ]] || fail "vm0's domain not running on $HB"
! virsh -q -c "$SRC_URI" dominfo default_vm0 >/dev/null 2>&1 || fail "vm0 still defined on $HA"
kv engine stop vm0 --grace-period 0 >/dev/null
wait_for 60 bash -c "[[ \$(virsh -q -c '$DST_URI' domstate default_vm0 2>/dev/null | head -n1) != running ]]" || fail "vm0 did not stop"

step "$TRIALS offline migrations, the service killed -9 at a random moment"
vmims() { api http://engine/apis/kubevirt.io/v1/namespaces/default/virtualmachineinstancemigrations |
    jq -c '[.items[] | select(.spec.vmiName == "vm0") | [.metadata.name, .status.phase]]'; }
vmims_final() { vmims | jq -e 'all(.[]; .[1] == "Succeeded" or .[1] == "Failed")' >/dev/null; }
where=$HB moved=0
for ((t = 1; t <= TRIALS; t++)); do
    to=$(other "$where")
    delay=$((RANDOM % (SPAN + 1)))
    "$KV" engine migrate vm0 --offline --to "$to" >"$MT/trial.out" 2>&1 &
    bg=$!
    sleep "$(printf '0.%03d' "$delay")"
    srv_kill
    wait $bg 2>/dev/null || true
    srv_up
    wait_for 60 on_one || fail "trial $t (kill at $delay ms): $(listed_on "$where"); records on '$(rec_hosts vm0)'"
    now=$(cat "$MT/on")
    [[ $now == "$to" ]] && moved=$((moved + 1))
    # every vmim of vm0 final, and Succeeded exactly for the moves (the first one above included)
    wait_for 60 vmims_final || fail "trial $t: a vmim not final: $(vmims)"
    [[ $(vmims | jq '[.[] | select(.[1] == "Succeeded")] | length') == $((moved + 1)) ]] ||
        fail "trial $t (kill at $delay ms, vm0 on $now): the vmims say $(vmims), $moved moves"
    echo "   trial $t: kill at $delay ms: vm0 on $now ($([[ $now == "$to" ]] && echo moved || echo stayed))"
    where=$now
done
echo PASS
