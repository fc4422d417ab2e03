#!/bin/bash
# Cluster and local engine in one dashboard: fakekube's VMs and an engine VM (embedded libvirt, TCG guest from
# tests/lab/guest.sh) side by side with a SOURCE column; the engine VM started from the list with `s`, its VM view
# progressing, its serial console opened with `c` (the guest's ready marker on screen), then force-stopped.
. "$(dirname "$0")/ui_lib.inc"
command -v qemu-system-x86_64 >/dev/null || { echo "qemu-system-x86_64 missing"; exit 77; }
[ "$(id -u)" = 0 ] || { echo "needs root for the embedded libvirt driver"; exit 77; }

fk_start --vms 4
export XDG_STATE_HOME=$W/s KVCON_ENGINE_IMAGES=$W/images KVCON_ENGINE_ACCEL=tcg
mkdir -p "$KVCON_ENGINE_IMAGES"
"$ROOT/tests/lab/guest.sh" "$KVCON_ENGINE_IMAGES/kvcon-lab-guest" >/dev/null || fail "guest build"
URI=$("$ROOT/tests/lab/embed-warm.sh" "$W/s/kvcon/engine") || fail "embed-warm"
cat >"$W/vm.yaml" <<'YAML'
apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata:
  name: evm
spec:
  runStrategy: Halted
  template:
    spec:
      terminationGracePeriodSeconds: 3
      domain:
        memory:
          guest: 192Mi
        firmware:
          kernelBoot:
            kernelArgs: console=ttyS0 quiet panic=-1
            container:
              image: kvcon-lab-guest
              kernelPath: /vmlinuz
              initrdPath: /initrd.gz
        devices:
          autoattachPodInterface: false
YAML
"$KVCON" -c "$URI" engine apply -f "$W/vm.yaml" >/dev/null || fail "engine apply"

kv_start_env "XDG_STATE_HOME=$W/s KVCON_ENGINE_IMAGES=$KVCON_ENGINE_IMAGES KVCON_ENGINE_ACCEL=tcg" -A -c "'$URI'"
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
