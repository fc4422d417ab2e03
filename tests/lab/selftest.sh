#!/usr/bin/env bash
# selftest.sh - proves the test lab works end to end (run by `make check`):
#  1. builds the guest (scripts/demo-guest.sh);
#  2. boots it under plain QEMU (qemu-guest.sh), reads the boot marker and a
#     command's output over the serial socket, presses the ACPI power button
#     (QMP system_powerdown): the guest powers off and QEMU exits;
#  3. a private libvirtd (libvirtd.sh): defines a TCG domain with kernel boot,
#     starts it paused, reads the marker over virDomainOpenConsole, runs a
#     command, destroys it;
#     and the embedded driver (embed-warm.sh): define + start on a new root;
#  4. the two-host lab (twohost.sh): a guest with `export KVCON_MARK=...`
#     on host a, `virsh migrate --live --p2p --persistent --undefinesource`
#     to b, the variable still set there, same UUID, gone from a; then
#     `poweroff -f` inside: the domain on b ends "shut off (shutdown)";
#  5. everything torn down: no process, namespace or mount left.
# Exit 0 pass, 77 skip (reason on the last line), anything else fail.
# Prints the time of each step.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
LAB="$HERE"

skip() { echo "lab selftest: SKIP: $*"; exit 77; }
fail() { echo "lab selftest: FAIL: $*" >&2; exit 1; }
ms() { date +%s%3N; }
T=$(ms)
step() { # name: print the time since the previous step
    local now
    now=$(ms)
    printf 'lab selftest: %-50s %6d ms\n' "$1" $((now - T))
    T=$now
}

[[ $(id -u) == 0 ]] || skip "needs root (libvirtd, network namespaces)"
for c in qemu-system-x86_64 libvirtd virtlogd virsh ip busybox cpio; do
    command -v "$c" >/dev/null || skip "$c missing (run scripts/deps.sh)"
done
/usr/bin/python3 -c 'import libvirt' 2>/dev/null || skip "python3-libvirt missing (run scripts/deps.sh)"

# short paths (unix sockets); names unique to this run so parallel runs
# (other worktrees, other tests) never meet
WORK=$(mktemp -d /tmp/kvlab.XXXXXX)
NSP="kvst$$-"
export KVCON_TWOHOST_NS=$NSP KVCON_TWOHOST_DIR=$WORK/2h
cleanup() {
    local rc=$?
    "$LAB/qemu-guest.sh" stop "$WORK/q" >/dev/null 2>&1 || true
    "$LAB/libvirtd.sh" down "$WORK/lv" >/dev/null 2>&1 || true
    "$LAB/twohost.sh" down >/dev/null 2>&1 || true
    if ((rc != 0)); then
        # the daemons' logs help whoever reads the failure
        tail -n 20 "$WORK"/lv/log/libvirtd.log "$WORK"/lv/log/qemu/*.log 2>/dev/null | sed 's/^/    /' >&2 || true
    fi
    rm -rf "$WORK"
    exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

probe() { "$LAB/serial-probe" "$@"; }
wait_state() { # uri dom state timeout-s
    local end=$((SECONDS + $4)) s=
    while ((SECONDS < end)); do
        s=$(virsh -q -c "$1" domstate "$2" 2>/dev/null) || s=gone
        [[ $s == "$3" ]] && return 0
        sleep 0.1
    done
    fail "$2: state '$s', wanted '$3' within $4 s"
}
domain_xml() { # name
    cat <<EOF
<domain type='qemu'>
  <name>$1</name>
  <memory unit='MiB'>256</memory>
  <vcpu>1</vcpu>
  <os><type arch='x86_64' machine='pc'>hvm</type>
    <kernel>$KVCON_GUEST_KERNEL</kernel>
    <initrd>$KVCON_GUEST_INITRD</initrd>
    <cmdline>$KVCON_GUEST_CMDLINE</cmdline>
  </os>
  <features><acpi/></features>
  <devices>
    <serial type='pty'><target port='0'/></serial>
    <console type='pty'><target type='serial' port='0'/></console>
  </devices>
</domain>
EOF
}

# ---------------------------------------------------------------- 1. guest
env=$("$HERE/../../scripts/demo-guest.sh") || fail "demo-guest.sh failed"
eval "$env"
[[ -s $KVCON_GUEST_KERNEL && -s $KVCON_GUEST_INITRD ]] || fail "demo-guest.sh printed no kernel/initrd"
step "guest built (cached after the first run)"

# ---------------------------------------------------------------- 2. QEMU
"$LAB/qemu-guest.sh" start "$WORK/q" -S >/dev/null
[[ -S $WORK/q/serial.sock && -S $WORK/q/vnc.sock && -S $WORK/q/qmp.sock ]] || fail "qemu-guest.sh: sockets missing"
qpid=$(<"$WORK/q/pid")
step "qemu-guest.sh start (paused)"
probe "$WORK/q/serial.sock" --quiet --timeout 60 --cont "$WORK/q/qmp.sock" \
    --wait '^KVCON-GUEST-READY' --send 'echo "sum=$((40+2)) host=$(hostname)"' \
    --expect 'sum=42 host=guest' || fail "QEMU guest: no marker or no answer on the serial socket"
step "QEMU: marker + command over serial.sock"
grep -q KVCON-GUEST-READY "$WORK/q/serial.log" || fail "serial.log lacks the marker"
banner=$(/usr/bin/python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(10)
s.connect(sys.argv[1])
print(s.recv(12).decode(errors="replace").strip())' "$WORK/q/vnc.sock") || fail "vnc.sock: no answer"
[[ $banner == "RFB 003.008" ]] || fail "vnc.sock: banner '$banner'"
probe "$WORK/q/serial.sock" --quiet --qmp "$WORK/q/qmp.sock" system_powerdown \
    --wait KVCON-GUEST-POWER-BUTTON || fail "QEMU guest: the power button was not seen"
end=$((SECONDS + 30))
while kill -0 "$qpid" 2>/dev/null; do
    ((SECONDS < end)) || fail "QEMU still running 30 s after the ACPI power button"
    sleep 0.1
done
"$LAB/qemu-guest.sh" stop "$WORK/q"
step "QEMU: ACPI power button -> guest off, QEMU exited"

# ---------------------------------------------------------------- 3. libvirtd
uri=$("$LAB/libvirtd.sh" up "$WORK/lv")
[[ $uri == "qemu+unix:///system?socket=$WORK/lv/run/libvirt-sock" ]] || fail "libvirtd.sh printed '$uri'"
step "private libvirtd up"
domain_xml kvlab-one >"$WORK/one.xml"
virsh -q -c "$uri" define "$WORK/one.xml" >/dev/null
virsh -q -c "$uri" start --paused kvlab-one >/dev/null
step "define + start --paused"
# attach the console before the guest runs: no byte of the boot is missed
probe --libvirt "$uri" kvlab-one --quiet --timeout 60 --resume --wait 'KVCON-GUEST-READY' \
    --send 'echo "v=$((6*7))"' --expect 'v=42' || fail "libvirt guest: no marker/answer on the console"
step "libvirt: marker + command over the console"
virsh -q -c "$uri" destroy kvlab-one >/dev/null
wait_state "$uri" kvlab-one "shut off" 10
step "destroy"
lvns=$(<"$WORK/lv/mntns")
"$LAB/libvirtd.sh" down "$WORK/lv"
# processes of the namespace that are still exiting (a libvirt helper reaped after libvirtd) may take a moment:
# poll until none is left, and name what stays
in_lvns() {
    local p
    for p in /proc/[0-9]*; do
        [[ $(readlink "$p/ns/mnt" 2>/dev/null) != "$lvns" ]] || echo "${p#/proc/}($(cat "$p/comm" 2>/dev/null))"
    done
}
end=$((SECONDS + 10))
while left=$(in_lvns) && [[ -n $left ]]; do
    ((SECONDS < end)) || fail "processes left in libvirtd's namespace: $left"
    sleep 0.1
done
step "private libvirtd down, nothing left"

# ---------------------------------------------------------------- embedded
# one shared capability cache, a root per test (libvirt locks a root while
# a process has it open)
# the lab's own domain XML (its files in $WORK) runs as root here; kvcon's guests run unprivileged
# kvcon opens the root with a state of its own: with the user's ($XDG_STATE_HOME, ~/.local/state) its engine
# would reconcile the user's VMs (make run's demo, Running) into this root (seen in the clean room)
euri=$(KVCON_ENGINE_QEMU_USER=root XDG_STATE_HOME="$WORK/kvcon-state" "$HERE/../../scripts/embed-warm.sh" "$WORK/embed")
step "embed-warm.sh on a new root"
domain_xml kvlab-emb >"$WORK/emb.xml"
# one virsh session: the root is locked while a process has it open
out=$(LIBVIRT_LOG_OUTPUTS="3:file:$WORK/embed/virsh.log" virsh -q -c "$euri" \
    "define $WORK/emb.xml; start kvlab-emb; domstate kvlab-emb; destroy kvlab-emb; undefine kvlab-emb" 2>&1) ||
    fail "embedded driver: $out"
grep -qx running <<<"$out" || fail "embedded driver: guest not running: $out"
step "embedded: define + start + destroy"

# ---------------------------------------------------------------- 4. two hosts
env=$("$LAB/twohost.sh" up) || fail "twohost.sh up failed"
eval "$env"
step "two-host lab up"
domain_xml kvlab-mig >"$WORK/mig.xml"
virsh -q -c "$SRC_URI" define "$WORK/mig.xml" >/dev/null
virsh -q -c "$SRC_URI" start kvlab-mig >/dev/null
mark="m$$-$RANDOM"
probe --libvirt "$SRC_URI" kvlab-mig --quiet --timeout 60 --ready \
    --send "export KVCON_MARK=$mark; echo \"set=\$KVCON_MARK\"" --expect "set=$mark" ||
    fail "guest on a: shell not answering"
uuid=$(virsh -q -c "$SRC_URI" domuuid kvlab-mig)
step "guest on a, KVCON_MARK set"
virsh -q -c "$SRC_URI" migrate --live --p2p --persistent --undefinesource kvlab-mig "$DST_TCP_URI" ||
    fail "p2p live migration a -> b failed"
step "virsh migrate --live --p2p a -> b"
[[ $(virsh -q -c "$DST_URI" domstate kvlab-mig) == running ]] || fail "not running on b after migration"
[[ $(virsh -q -c "$DST_URI" domuuid kvlab-mig) == "$uuid" ]] || fail "domain UUID changed"
! virsh -q -c "$SRC_URI" dominfo kvlab-mig >/dev/null 2>&1 || fail "still defined on a (--undefinesource)"
probe --libvirt "$DST_URI" kvlab-mig --quiet --timeout 30 --ready \
    --send 'echo "got=$KVCON_MARK"' --expect "got=$mark" || fail "KVCON_MARK lost in migration"
step "on b: running, same UUID, KVCON_MARK kept"
probe --libvirt "$DST_URI" kvlab-mig --quiet --ready --send 'poweroff -f' || fail "guest on b: poweroff not sent"
wait_state "$DST_URI" kvlab-mig "shut off" 30
[[ $(virsh -q -c "$DST_URI" domstate --reason kvlab-mig) == "shut off (shutdown)" ]] ||
    fail "guest on b: not shut off by the guest: $(virsh -q -c "$DST_URI" domstate --reason kvlab-mig)"
step "on b: poweroff inside -> shut off (shutdown)"
"$LAB/twohost.sh" down
step "two-host lab down"

# ---------------------------------------------------------------- 5. leftovers
left=$(ip netns list | grep -E "^${NSP}(a|b)( |$)" || true)
[[ -z $left ]] || fail "network namespaces left: $left"
[[ ! -e $KVCON_TWOHOST_DIR ]] || fail "state dir left: $KVCON_TWOHOST_DIR"
left=$(ps -eo pid=,args= | grep -F "$WORK" | grep -v -e grep -e selftest.sh || true)
[[ -z $left ]] || fail "processes left: $left"
! grep -qF "$WORK" /proc/self/mounts || fail "mounts left under $WORK"
! grep -qF "/run/netns/$NSP" /proc/self/mounts || fail "netns mounts left"
echo "lab selftest: PASS"
