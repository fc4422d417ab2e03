#!/usr/bin/env bash
# qemu-guest.sh - runs the lab guest (scripts/demo-guest.sh) under plain QEMU/TCG,
# without libvirt, for console and VNC end-to-end tests:
#
#   tests/lab/qemu-guest.sh start DIR [EXTRA QEMU ARGS...]   e.g. -S (paused)
#   tests/lab/qemu-guest.sh stop DIR
#   tests/lab/qemu-guest.sh status DIR          rc 0 while QEMU runs
#
# DIR gets serial.sock (16550 ttyS0, one client at a time; serial.log keeps
# everything the guest wrote, connected or not), vnc.sock (QEMU's VNC server,
# std VGA), qmp.sock (QMP), pid, qemu.log. `start` prints these as shell
# assignments (QEMU_GUEST_*) and returns once the sockets exist. Idempotent:
# `start` on a running DIR just prints; `stop` on a stopped DIR is a no-op.
# The guest comes from KVCON_GUEST_KERNEL/INITRD/CMDLINE when set, else from
# scripts/demo-guest.sh (built on first use). KVCON_QEMU_MEM (default 256) in MiB.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)

log() { echo "qemu-guest.sh: $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# pid from DIR/pid, only if that process is alive and is a QEMU
live_pid() {
    local f=$1/pid p c
    [[ -s $f ]] || return 1
    p=$(<"$f")
    [[ $p =~ ^[0-9]+$ ]] || return 1
    c=$(cat "/proc/$p/comm" 2>/dev/null) || return 1
    [[ $c == qemu-system* ]] || return 1
    echo "$p"
}

print_env() {
    local d=$1
    echo "QEMU_GUEST_PID=$(live_pid "$d")"
    echo "QEMU_GUEST_SERIAL='$d/serial.sock'"
    echo "QEMU_GUEST_SERIAL_LOG='$d/serial.log'"
    echo "QEMU_GUEST_VNC='$d/vnc.sock'"
    echo "QEMU_GUEST_QMP='$d/qmp.sock'"
}

cmd_stop() {
    local d=$1 p i
    if p=$(live_pid "$d"); then
        kill -TERM "$p" 2>/dev/null || true
        for ((i = 0; i < 50; i++)); do
            kill -0 "$p" 2>/dev/null || break
            sleep 0.1
        done
        if kill -0 "$p" 2>/dev/null; then
            log "QEMU $p ignored SIGTERM for 5 s, killing"
            kill -KILL "$p" 2>/dev/null || true
        fi
    fi
    rm -f "$d/pid" "$d/serial.sock" "$d/vnc.sock" "$d/qmp.sock"
}

cmd_start() {
    local d=$1
    shift
    if live_pid "$d" >/dev/null; then
        print_env "$d"
        return 0
    fi
    # sun_path holds 107 bytes
    ((${#d} + 12 <= 107)) || die "DIR path too long for unix sockets: $d"
    command -v qemu-system-x86_64 >/dev/null || die "qemu-system-x86_64 missing (run scripts/deps.sh)"
    local cmdline=${KVCON_GUEST_CMDLINE:-}
    if [[ -z ${KVCON_GUEST_KERNEL:-} || -z ${KVCON_GUEST_INITRD:-} ]]; then
        local env
        env=$("$HERE/../../scripts/demo-guest.sh") || die "building the guest failed"
        eval "$env"
    fi
    # a cmdline given by the caller wins over the guest's default
    cmdline=${cmdline:-$KVCON_GUEST_CMDLINE}
    rm -f "$d/pid" "$d/serial.sock" "$d/vnc.sock" "$d/qmp.sock"
    : >"$d/serial.log"
    # a failure between here and a healthy QEMU must not leave one running
    trap 'cmd_stop "$d"' EXIT
    # -daemonize returns once the sockets are listening; -display none keeps
    # the VGA device (std) for VNC; wait=off: the guest runs with no client
    qemu-system-x86_64 -name kvcon-lab-guest -accel tcg -m "${KVCON_QEMU_MEM:-256}" \
        -machine pc -nodefaults -no-user-config -display none -vga std \
        -kernel "$KVCON_GUEST_KERNEL" -initrd "$KVCON_GUEST_INITRD" -append "$cmdline" \
        -chardev "socket,id=ser0,path=$d/serial.sock,server=on,wait=off,logfile=$d/serial.log" \
        -serial chardev:ser0 \
        -vnc "unix:$d/vnc.sock" \
        -qmp "unix:$d/qmp.sock,server=on,wait=off" \
        -pidfile "$d/pid" -daemonize "$@" >"$d/qemu.log" 2>&1 ||
        { cat "$d/qemu.log" >&2; die "QEMU failed to start"; }
    live_pid "$d" >/dev/null || { cat "$d/qemu.log" >&2; die "QEMU exited at once"; }
    trap - EXIT
    print_env "$d"
}

cmd=${1:-}
dir=${2:-}
[[ -n $cmd && -n $dir ]] || { echo "usage: $0 start|stop|status DIR [QEMU ARGS...]" >&2; exit 2; }
shift 2
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
case $cmd in
start) cmd_start "$dir" "$@" ;;
stop) cmd_stop "$dir" ;;
status) live_pid "$dir" >/dev/null ;;
*) echo "usage: $0 start|stop|status DIR [QEMU ARGS...]" >&2; exit 2 ;;
esac
