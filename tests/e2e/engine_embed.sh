#!/bin/bash
# The engine on libvirt's embedded QEMU driver (kvcon's default host), real QEMU under TCG: apply a kernelBoot
# manifest, boot marker through kvcon's console, every run strategy's reaction to a guest poweroff and to a
# crash (QEMU killed while `kvcon engine reconcile` runs), stop/start UIDs, kill -9 of kvcon mid-start and
# mid-stop. The embedded root is private to the test; its capability cache is pre-warmed (tests/lab).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/engine-lib.bash"

[[ $(id -u) == 0 ]] || { echo "needs root (QEMU and the embedded libvirt driver run as root here)"; exit 77; }
command -v qemu-system-x86_64 >/dev/null && command -v jq >/dev/null ||
    { echo "qemu-system-x86_64 or jq missing (scripts/deps.sh)"; exit 77; }

ENGINE_T=$(mktemp -d /tmp/kve.XXXXXX)
cleanup() {
    local f
    for f in "$ENGINE_T"/state/kvcon/engine/run/qemu/*.pid; do
        [[ -f $f ]] && kill -9 "$(cat "$f")" 2>/dev/null || true
    done
    [[ -n ${KEEP:-} ]] || rm -rf "$ENGINE_T"
}
trap cleanup EXIT
engine_setup
URI="qemu:///embed?root=$XDG_STATE_HOME/kvcon/engine"
"$ROOT/tests/lab/embed-warm.sh" "$XDG_STATE_HOME/kvcon/engine" >/dev/null

# a crash: QEMU killed by a signal while kvcon watches (libvirt reports STOPPED/FAILED)
crash_vm() {
    local pid
    pid=$(rec_exec "$1" pid)
    [[ $pid -gt 0 ]] || fail "no QEMU pid recorded for $1"
    "$KV" -c "$URI" engine reconcile --for 90 >"$ENGINE_T/reconcile.log" 2>"$ENGINE_T/reconcile.err" &
    local bg=$!
    wait_eq 30 "engine ready" head -n1 "$ENGINE_T/reconcile.log" || fail "reconcile did not start"
    kill -9 "$pid"
    local until=$(($(date +%s) + 60))
    while [[ $(rec_exec "$1" uid) == "$2" || $(rec_exec "$1" phase) != Running ]] && (($(date +%s) < until)); do
        sleep 0.2
    done
    kill -TERM $bg 2>/dev/null || true
    wait $bg 2>/dev/null || true
}

engine_scenario
echo PASS
