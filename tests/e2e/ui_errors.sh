#!/bin/bash
# A cluster without KubeVirt: the header says so once (naming the kinds), the list says it is empty, nothing hangs;
# the server going away turns the watches to reconnecting with the time of the next retry.
. "$(dirname "$0")/ui_lib.inc"

fk_start --vms 5 --no-kubevirt
kv_start -A
wait_for 'fake vm,vmi,pod,event: KubeVirt \(kubevirt.io/v1\) is not served' 10
wait_for 'no VirtualMachines'
wait_for 'Watch: vm reconnecting in [0-9]+s'
cmd q
deadline=$((SECONDS + 10)); while ! grep -q KVCON_EXIT "$W/exit" && [ $SECONDS -lt $deadline ]; do sleep 0.1; done
grep -q 'KVCON_EXIT=0' "$W/exit" || fail "did not quit"

# a live cluster that goes away: the rows stay, the watches say they are reconnecting and when
kill "$FKPID"; wait "$FKPID" 2>/dev/null; FKPID=""
rm -rf "$W/fk"
fk_start --vms 5
kv_restart -A
wait_for 'VirtualMachines\(all\)\[5\]' 10
wait_for 'Watch: vm live'
kill "$FKPID"; wait "$FKPID" 2>/dev/null; FKPID=""
wait_for 'Watch: vm reconnecting in [0-9]+s' 15
screen | grep -q 'VirtualMachines(all)\[5\]' || fail "rows dropped while reconnecting"
echo "PASS ui_errors"
