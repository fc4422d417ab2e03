#!/usr/bin/env bash
# libvirtd.sh - a private, real libvirtd (+ virtlogd) for tests, as root.
#
#   URI=$(tests/lab/libvirtd.sh up DIR)    start (idempotent), print the URI
#   tests/lab/libvirtd.sh env DIR          print `export KVCON_LIBVIRT_URI=...`
#   tests/lab/libvirtd.sh status DIR       rc 0 while it answers
#   tests/lab/libvirtd.sh down DIR         destroy its guests, stop everything
#
# URI: qemu+unix:///system?socket=DIR/run/libvirt-sock (auth none). The daemon
# runs in its own mount namespace with DIR's directories over /etc/libvirt,
# /run/libvirt, /var/lib/libvirt, /var/log/libvirt, /var/cache/libvirt, so it
# never collides with a system libvirtd or another test's. qemu.conf: root,
# dynamic_ownership 0, security_driver none, no cgroups (TCG guests). Logs:
# DIR/log/libvirtd.log, DIR/log/qemu/<domain>.log (kept by `down`).
# The QEMU capability cache is shared through build/cache/libvirt-qemu-caps.
set -euo pipefail

LAB_PROG=libvirtd.sh
LAB_ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/lab/lib.sh
. "$LAB_ROOT/tests/lab/lib.sh"

usage() { echo "usage: $0 up|down|env|status DIR" >&2; exit 2; }

cmd=${1:-}
dir=${2:-}
[[ -n $cmd && -n $dir ]] || usage
lab_need_root
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
# DIR/run/libvirt-sock must fit a unix socket path (107 bytes)
((${#dir} + 20 <= 107)) || lab_die "DIR path too long for a unix socket: $dir"

cmd_up() {
    local t0
    t0=$(lab_ms)
    if lab_host_running "$dir"; then
        lab_host_wait "$dir" 30
        lab_uri "$dir"
        return 0
    fi
    # leftovers of a crashed run (a virtlogd without libvirtd, stale pids)
    lab_host_stop "$dir"
    # a failed start must not leave half a daemon behind
    trap 'lab_host_stop "$dir"' EXIT
    lab_host_config "$dir" "$(hostname)"
    lab_host_start "$dir"
    lab_host_wait "$dir" 60
    lab_host_warm "$dir"
    lab_caps_save "$dir"
    trap - EXIT
    lab_log "up in $(($(lab_ms) - t0)) ms"
    lab_uri "$dir"
}

case $cmd in
up) cmd_up ;;
down) lab_host_stop "$dir"; rm -rf "${dir:?}"/{etc,run,lib,cache,boot.sh,boot.out,hosts} ;;
env) lab_host_running "$dir" || lab_die "not running in $dir"; echo "export KVCON_LIBVIRT_URI='$(lab_uri "$dir")'" ;;
status) lab_host_running "$dir" && lab_virsh "$dir" uri >/dev/null 2>&1 ;;
*) usage ;;
esac
