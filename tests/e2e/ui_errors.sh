#!/bin/bash
# e2e-lane: cluster
# A cluster without KubeVirt: the header says so once (naming the kinds), the list says it cannot list them, nothing
# hangs; the server going away turns the watches to reconnecting with the time of the next retry. An empty list
# says why, in four different texts (issue 25, item 5): a server that is down ("unreachable"), a user who may not
# list the namespace ("forbidden"), a list still loading, and a namespace truly without VMs; never "no
# VirtualMachines" for a server that did not answer.
. "$(dirname "$0")/ui_lib.inc"

fk_start --vms 5 --no-kubevirt
kv_start -A
wait_for 'fake vm,vmi,pod,event: KubeVirt \(kubevirt.io/v1\) is not served' 10
wait_for '^ (cannot list VirtualMachines|unreachable, retrying [^:]*): .*is not served'
wait_for 'Watch: vm reconnecting in [0-9]+s'
cmd q
deadline=$((SECONDS + 10)); while ! grep -q KVCON_EXIT "$W/exit" && [ $SECONDS -lt $deadline ]; do sleep 0.1; done
grep -q 'KVCON_EXIT=0' "$W/exit" || fail "did not quit"

# a server that is down from the start: unreachable, with the next retry, not an empty namespace
kill "$FKPID"; wait "$FKPID" 2>/dev/null; FKPID=""
kv_restart -A
wait_for '^ unreachable, retrying in [0-9]+s: cannot reach https://' 10
screen | grep -q 'no VirtualMachines' && fail "a server that is down reads as an empty list"
rm -rf "$W/fk"

# a slow server: loading, then the rows
fk_start --vms 5
fk post /fake/latency '{"seconds": 1.5}' >/dev/null
kv_restart -A
wait_for '^ loading VirtualMachines from fake\.\.\.' 10
fk post /fake/latency '{"seconds": 0}' >/dev/null
wait_for 'VirtualMachines\(all\)\[5\]' 10
# a namespace without VMs: truly empty
cmd "ns kube-public"; wait_for '^ no VirtualMachines in namespace kube-public' 10
cmd "ns all"; wait_for 'VirtualMachines\(all\)\[5\]' 10
wait_for 'Watch: vm live'
# a live cluster that goes away: the rows stay, the watches say they are reconnecting and when
kill "$FKPID"; wait "$FKPID" 2>/dev/null; FKPID=""
wait_for 'Watch: vm reconnecting in [0-9]+s' 15
screen | grep -q 'VirtualMachines(all)\[5\]' || fail "rows dropped while reconnecting"

# a user who may not list the namespace asked for: forbidden, naming it
rm -rf "$W/fk"
fk_start --vms 5
kv_restart --context fake-ns -n ns-01
wait_for '^ forbidden: this user may not list VirtualMachines in namespace ns-01: .*forbidden' 10
echo "PASS ui_errors"
