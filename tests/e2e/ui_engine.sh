#!/bin/bash
# Cluster and local engine in one dashboard: fakekube's VMs and an engine VM (embedded libvirt, TCG guest from
# scripts/demo-guest.sh) side by side with a SOURCE column; the engine VM started from the list with `s`, its VM view
# progressing, its serial console opened with `c` (the guest's ready marker on screen), its compute and serial logs
# (`l`, `C`) and its walkthrough (`d`, engine wording and kvcon's commands) through the engine service, then
# force-stopped.
. "$(dirname "$0")/engine-lib.bash"
. "$(dirname "$0")/ui_lib.inc"
engine_needs "the embedded libvirt driver" qemu-system-x86_64

fk_start --vms 4
engine_setup "$W" || fail "guest build"
engine_embed_warm || fail "embed-warm"
engine_manifest "$W/vm.yaml" evm Halted 192Mi >/dev/null
"$KVCON" -c "$URI" engine apply -f "$W/vm.yaml" >/dev/null || fail "engine apply"

kv_start_env "XDG_STATE_HOME=$XDG_STATE_HOME KVCON_ENGINE_IMAGES=$KVCON_ENGINE_IMAGES KVCON_ENGINE_ACCEL=$KVCON_ENGINE_ACCEL" -A --context fake -c "'$URI'"
wait_for 'VirtualMachines\(all\)\[5\]' 30
wait_for 'Context: fake'; wait_for 'Engine: '
screen | grep -q ' SOURCE ' || fail "no SOURCE column with two sources"
wait_for ' evm +[a-z0-9.-]+ +Stopped +False +Halted' 10
screen | grep -qE ' web-00000 +fake +Running' || fail "cluster VM missing beside the engine VM"
keys "/"; keys -l "evm"; keys Enter; wait_for '</evm>'
keys s; wait_for 'start default/evm: (sent|accepted)' 20
wait_for ' evm +[a-z0-9.-]+ +Running ' 60
keys Enter; wait_for ' VM default/evm @'; wait_for 'VMI +progressed' 30
keys c; wait_for '1:console default/evm' 10
wait_for 'KVCON-GUEST-READY|guest:~#' 60
keys C-]; keys x; wait_gone '1:console'
# the launcher's two logs through the engine service: compute (QEMU's log), then serial (the guest's boot marker)
keys l; wait_for '1:logs default/evm' 10
wait_for 'default/virt-launcher-evm-[a-z0-9]+ \[compute\] \| (streaming|ended)' 20
wait_for 'char device redirected to .*label charserial0' 20
keys C; wait_for 'default/virt-launcher-evm-[a-z0-9]+ \[serial\]' 10
wait_for 'KVCON-GUEST-READY' 20
keys q; wait_gone '1:logs default/evm' 5
# the walkthrough: the engine's wording and kvcon's commands (every -c of the service), never virtctl/kubectl
keys d; wait_for 'VirtualMachine default/evm \(engine [^)]+\)' 10
wait_for "\\$ kvcon -c 'qemu:///embed\\?root=" 10
screen | grep -qE 'virtctl|kubectl' && fail "the engine walkthrough suggests virtctl/kubectl"
screen | grep -qE 'launcher +progressed +process virt-launcher-evm-' || fail "the engine's launcher is not said as a process"
keys q; wait_gone 'VirtualMachine default/evm \(engine ' 5
keys C-k; wait_for 'Force stop \(grace 0\) VM default/evm on '; keys y
wait_for 'VMI +not expected' 60
cmd q
deadline=$((SECONDS + 20)); while ! grep -q KVCON_EXIT "$W/exit" && [ $SECONDS -lt $deadline ]; do sleep 0.1; done
grep -q 'KVCON_EXIT=0' "$W/exit" || fail "exit: $(cat "$W/exit")"
echo "PASS ui_engine"
