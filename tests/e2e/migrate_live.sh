#!/bin/bash
# Live migration through kvcon between the two lab hosts (TCG guests): a shell variable set on host A survives
# the move to B (read through kvcon's serial console), the domain UUID and the execution (VMI) UID stay, the
# launcher changes (new QEMU pid, new node, new launcher UID), the lineage shows one execution on two nodes;
# migrating back works; an aborted migration and a refused one (the target lacks the kernel path) leave the
# guest running and answering on A.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/migrate-lib.bash"
mig_setup

step "vm1 on $HA"
kv engine apply -f "$(manifest vm1)" # the first host of the config's set: $HA
wait_shell vm1
kv engine console vm1 --send 'export KVMARK=moved$((6*7))' --send 'echo mark=$KVMARK' --expect 'mark=moved42' \
    --timeout 60 >"$MT/console.out" 2>&1 || { cat "$MT/console.out"; fail "variable not set on A"; }
uuid_a=$(virsh -q -c "$SRC_URI" domuuid default_vm1)
vmi_a=$(rec vm1 uid) launcher_a=$(rec vm1 launcherUid) pid_a=$(rec vm1 pid)
[[ -n $vmi_a && $pid_a -gt 0 && $(rec vm1 node) == "$HA" ]] || fail "vm1 not running on $HA: $(record vm1)"
kill -0 "$pid_a" || fail "QEMU pid $pid_a not alive"

step "migrate vm1 to $HB"
kv engine migrate vm1 --to "$HB" | tee "$MT/mig1.out"
grep -q "migrated from $HA to $HB" "$MT/mig1.out" || fail "no completion line"
[[ $(rec_host vm1) == "$HB" ]] || fail "record not moved to $HB"
[[ $(rec vm1 node) == "$HB" ]] || fail "node is $(rec vm1 node)"
[[ $(rec vm1 uid) == "$vmi_a" ]] || fail "the execution UID changed: $(rec vm1 uid) != $vmi_a"
[[ $(rec vm1 launcherUid) != "$launcher_a" ]] || fail "the launcher UID did not change"
[[ $(virsh -q -c "$DST_URI" domuuid default_vm1) == "$uuid_a" ]] || fail "domain UUID changed"
[[ $(dom_state "$DST_URI" vm1) == running ]] || fail "not running on $HB"
! virsh -q -c "$SRC_URI" dominfo default_vm1 >/dev/null 2>&1 || fail "still defined on $HA (not undefined)"
virsh -q -c "$DST_URI" dumpxml --inactive default_vm1 >/dev/null || fail "not persistent on $HB"
wait_for 30 bash -c "kill -0 $pid_a 2>/dev/null && exit 1 || exit 0" || fail "old QEMU $pid_a still alive"
# the engine learns the new QEMU's pid from the target host
"$KV" engine get pod -o json >/dev/null 2>&1
pid_b=$(rec vm1 pid)
[[ $pid_b -gt 0 && $pid_b != "$pid_a" ]] || fail "launcher pid not changed ($pid_a -> $pid_b)"
kill -0 "$pid_b" || fail "new QEMU $pid_b not alive"
ms=$(vmi_json vm1 | jq -c .status.migrationState)
[[ $(jq -r .completed <<<"$ms") == true && $(jq -r .sourceNode <<<"$ms") == "$HA" &&
   $(jq -r .targetNode <<<"$ms") == "$HB" && $(jq -r .failed <<<"$ms") == false ]] || fail "migrationState: $ms"
[[ $(vmi_field vm1 uid) == "$vmi_a" && $(vmi_field vm1 node) == "$HB" ]] || fail "VMI: $(vmi_json vm1)"
console vm1 'echo mark=$KVMARK' 'mark=moved42' || fail "variable lost on $HB"
"$KV" -c "$SRC_URI" -c "$DST_URI" lineage vm1 -o json 2>/dev/null >"$MT/lineage.json"
jq -e 'length == 1' "$MT/lineage.json" >/dev/null || fail "lineage: not one execution: $(cat "$MT/lineage.json")"
[[ $(jq -r '.[0].vmiUid' "$MT/lineage.json") == "$vmi_a" ]] || fail "lineage: other execution"
nodes=$(jq -r '[.[0].launchers[].node] | join(",")' "$MT/lineage.json")
[[ $nodes == "$HA,$HB" ]] || fail "lineage launchers on '$nodes', wanted $HA,$HB"

step "migrate vm1 back to $HA"
kv engine migrate vm1 --to "$HA" --quiet
[[ $(rec_host vm1) == "$HA" && $(rec vm1 node) == "$HA" && $(rec vm1 uid) == "$vmi_a" ]] || fail "not back on $HA"
[[ $(dom_state "$SRC_URI" vm1) == running ]] || fail "not running on $HA"
console vm1 'echo mark=$KVMARK' 'mark=moved42' || fail "variable lost after the way back"

step "abort: a 1 MiB/s migration, aborted by a second kvcon"
launcher=$(rec vm1 launcherUid)
"$KV" engine migrate vm1 --to "$HB" --bandwidth 1 >"$MT/mig-abort.out" 2>&1 &
MIG_BG=$!
# the job runs on the source host once libvirt reports data for it
wait_for 60 bash -c "virsh -q -c '$SRC_URI' domjobinfo default_vm1 2>/dev/null | grep -q 'Data processed'" ||
    fail "no migration job seen on $HA"
kv engine migrate --abort vm1
rc=0
wait $MIG_BG || rc=$?
MIG_BG=
cat "$MT/mig-abort.out"
((rc != 0)) || fail "an aborted migration exited 0"
grep -q "canceled by client" "$MT/mig-abort.out" || fail "no abort reason"
[[ $(rec_host vm1) == "$HA" && $(dom_state "$SRC_URI" vm1) == running ]] || fail "vm1 not running on $HA after abort"
[[ $(rec vm1 launcherUid) == "$launcher" ]] || fail "launcher changed by an aborted migration"
! virsh -q -c "$DST_URI" dominfo default_vm1 >/dev/null 2>&1 || fail "left over on $HB"
ms=$(vmi_json vm1 | jq -c .status.migrationState)
[[ $(jq -r .failed <<<"$ms") == true && $(jq -r .abortStatus <<<"$ms") == Succeeded ]] || fail "migrationState: $ms"
"$KV" engine get event -o json 2>/dev/null | jq -e '[.items[] | select(.reason == "FailedMigration")] | length == 1' \
    >/dev/null || fail "no FailedMigration event"
console vm1 'echo mark=$KVMARK' 'mark=moved42' || fail "vm1 does not answer after the abort"
"$KV" -c "$SRC_URI" -c "$DST_URI" diagnose vm1 >"$MT/diag.out" 2>&1 || true
grep -qi "migration" "$MT/diag.out" || { cat "$MT/diag.out"; fail "diagnose does not mention the failed migration"; }

step "refused: the kernel exists only on $HA"
kdir=/var/lib/libvirt/kvcon-migtest-${MT##*.}
MIG_EXTRA_CLEAN="$kdir $SRC_LIBDIR/${kdir#/var/lib/libvirt/}"
mkdir -p "$kdir" "$SRC_LIBDIR/${kdir#/var/lib/libvirt/}"
for f in vmlinuz initrd.gz; do
    cp "$KVCON_ENGINE_IMAGES/kvcon-lab-guest/$f" "$kdir/$f" # kvcon's own check (this namespace)
    cp "$KVCON_ENGINE_IMAGES/kvcon-lab-guest/$f" "$SRC_LIBDIR/${kdir#/var/lib/libvirt/}/$f" # host A's view
done
# a kernel outside the engine's image directory is a host path: the host's owner allows its directory
echo "engine.allow-host-path = $kdir" >>"$XDG_CONFIG_HOME/kvcon/config"
# -c: on $HA (through the set's service, limited to it), where the scheduler would not put it beside vm1
"$KV" -c "$SRC_URI" engine apply -f "$(manifest vm2 "$kdir/vmlinuz" "$kdir/initrd.gz")"
wait_shell vm2
rc=0
kv engine migrate vm2 --to "$HB" >"$MT/refused.out" 2>&1 || rc=$?
cat "$MT/refused.out"
((rc != 0)) || fail "a migration without the kernel on the target succeeded"
grep -q "refused: kernel $kdir/vmlinuz does not exist on $HB" "$MT/refused.out" || fail "unclear refusal"
[[ $(rec_host vm2) == "$HA" && $(dom_state "$SRC_URI" vm2) == running ]] || fail "vm2 not running on $HA"
! virsh -q -c "$DST_URI" dominfo default_vm2 >/dev/null 2>&1 || fail "vm2 left over on $HB"
console vm2 'echo ok=$((1+1))' 'ok=2' || fail "vm2 does not answer after the refusal"
echo PASS
