#!/bin/bash
# `kvcon engine drain`: three TCG guests on host A, each with its own shell variable; drain A moves them one at a
# time to B, reporting each; afterwards all three run on B (records, libvirt), none is left on A, and each still
# answers with its variable on kvcon's serial console.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/migrate-lib.bash"
mig_setup

VMS="d1 d2 d3"
step "three guests on $HA ($HB cordoned meanwhile: the scheduler would spread them)"
kv cordon "$HB" >/dev/null || fail "cordon $HB"
for v in $VMS; do kv engine apply -f "$(manifest "$v")"; done
for v in $VMS; do
    wait_shell "$v"
    kv engine console "$v" --send "export KVMARK=drain-$v" --send 'echo mark=$KVMARK' --expect "mark=drain-$v" \
        --timeout 60 >"$MT/console.out" 2>&1 || { cat "$MT/console.out"; fail "$v: variable not set"; }
    [[ $(rec_host "$v") == "$HA" ]] || fail "$v not on $HA"
done
declare -A vmi
for v in $VMS; do vmi[$v]=$(rec "$v" uid); done

step "drain $HA"
kv uncordon "$HB" >/dev/null || fail "uncordon $HB"
kv engine drain "$HA" | tee "$MT/drain.out"
grep -q "draining $HA: 3 running VMs" "$MT/drain.out" || fail "drain did not list 3 VMs"
[[ $(grep -c "migrated from $HA to $HB" "$MT/drain.out") == 3 ]] || fail "not three migrations reported"
grep -q "$HA drained" "$MT/drain.out" || fail "no final line"

step "all on $HB, answering"
[[ -z $(virsh -q -c "$SRC_URI" list --all --name | grep -v '^$' || true) ]] || fail "domains left on $HA"
for v in $VMS; do
    [[ $(rec_host "$v") == "$HB" && $(rec "$v" node) == "$HB" ]] || fail "$v record not on $HB"
    [[ $(dom_state "$DST_URI" "$v") == running ]] || fail "$v not running on $HB"
    [[ $(rec "$v" uid) == "${vmi[$v]}" ]] || fail "$v: execution UID changed"
    console "$v" 'echo mark=$KVMARK' "mark=drain-$v" || fail "$v does not answer on $HB"
done

step "drain an empty host"
kv engine drain "$HA" | tee "$MT/drain2.out"
grep -q "draining $HA: 0 running VMs" "$MT/drain2.out" || fail "second drain"
echo PASS
