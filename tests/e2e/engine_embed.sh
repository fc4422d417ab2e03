#!/bin/bash
# The engine on libvirt's embedded QEMU driver (kvcon's default host), real QEMU under TCG: apply a kernelBoot
# manifest, boot marker through kvcon's console, every run strategy's reaction to a guest poweroff and to a
# crash (QEMU killed while only the engine service runs), stop/start UIDs, kill -9 of the engine service mid-start
# and mid-stop. Every command goes through the engine service started on demand (the default); its cleanup stops
# it. The embedded root is private to the test; its capability cache is pre-warmed (tests/lab).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/engine-lib.bash"

engine_embed_up kve

# a crash: QEMU killed by a signal while only the engine service watches (libvirt reports STOPPED/FAILED; the
# service reconciles all the time, no kvcon command runs meanwhile)
crash_vm() {
    local pid
    pid=$(rec_exec "$1" pid)
    [[ $pid -gt 0 ]] || fail "no QEMU pid recorded for $1"
    kill -9 "$pid"
    local until=$(($(date +%s) + 60))
    while [[ $(rec_exec "$1" uid) == "$2" || $(rec_exec "$1" phase) != Running ]] && (($(date +%s) < until)); do
        sleep 0.2
    done
}

engine_scenario
echo PASS
