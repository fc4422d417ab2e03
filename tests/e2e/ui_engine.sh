#!/bin/bash
# Cluster and local engine in one dashboard: fakekube's VMs and an engine VM (embedded libvirt, TCG guest from
# scripts/demo-guest.sh) side by side with a SOURCE column; the engine VM started from the list with `s`, its VM view
# progressing, its serial console opened with `c` (the guest's ready marker on screen), then force-stopped.
. "$(dirname "$0")/engine-lib.bash"
. "$(dirname "$0")/ui_lib.inc"
engine_needs "the embedded libvirt driver" qemu-system-x86_64

fk_start --vms 4
engine_setup "$W" || fail "guest build"
engine_embed_warm || fail "embed-warm"
engine_manifest "$W/vm.yaml" evm Halted 192Mi >/dev/null
"$KVCON" -c "$URI" engine apply -f "$W/vm.yaml" >/dev/null || fail "engine apply"

kv_start_env "XDG_STATE_HOME=$XDG_STATE_HOME KVCON_ENGINE_IMAGES=$KVCON_ENGINE_IMAGES KVCON_ENGINE_ACCEL=$KVCON_ENGINE_ACCEL" -A -c "'$URI'"
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
keys C-k; wait_for 'Force stop \(grace 0\) VM default/evm on '; keys y
wait_for 'VMI +not expected' 60
cmd q
deadline=$((SECONDS + 20)); while ! grep -q KVCON_EXIT "$W/exit" && [ $SECONDS -lt $deadline ]; do sleep 0.1; done
grep -q 'KVCON_EXIT=0' "$W/exit" || fail "exit: $(cat "$W/exit")"
echo "PASS ui_engine"
