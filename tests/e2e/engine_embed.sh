#!/bin/bash
# The engine on libvirt's embedded QEMU driver (kvcon's default host), real QEMU under TCG: apply a kernelBoot
# manifest, boot marker through kvcon's console, every run strategy's reaction to a guest poweroff and to a
# crash (QEMU killed while `kvcon engine reconcile` runs), stop/start UIDs, kill -9 of kvcon mid-start and
# mid-stop. The embedded root is private to the test; its capability cache is pre-warmed (tests/lab).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/engine-lib.bash"
# through the engine service started on demand (the default); its cleanup stops it

engine_embed_up kve

# a crash: QEMU killed by a signal while kvcon watches (libvirt reports STOPPED/FAILED; the service reconciles)
crash_vm() {
    local pid
    pid=$(rec_exec "$1" pid)
    [[ $pid -gt 0 ]] || fail "no QEMU pid recorded for $1"
    "$KV" -c "$URI" engine reconcile --for 90 >"$ENGINE_T/reconcile.log" 2>"$ENGINE_T/reconcile.err" &
    local bg=$!
    wait_eq 30 "engine ready (the engine service reconciles these hosts)" head -n1 "$ENGINE_T/reconcile.log" ||
        fail "reconcile did not start"
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
