#!/usr/bin/env bash
# embed-warm.sh - a shortcut for `qemu:///embed?root=ROOT`: the root prepared by kvcon itself, its QEMU
# capability cache shared between roots.
#
#   scripts/embed-warm.sh ROOT          prints the URI (the tests' embedded roots, the benches)
#
# kvcon prepares an embedded root on first use (src/engine/embed.c: ROOT/etc/qemu.conf, the account QEMU runs
# as, its way to ROOT and to /dev/kvm), so nothing has to be warmed for kvcon to work (`make run` does not call
# this). This script only spares each test root the capability probe (~4 s a QEMU binary): it seeds
# ROOT/cache/qemu/capabilities from build/cache/libvirt-qemu-caps (tests/lab/lib.sh's LAB_CAPS), lets kvcon open
# the root once (libvirt confirms the cache or probes once), and shares the result back. Idempotent.
# KVCON_BIN: the kvcon binary (default: the repository's). KVCON_ENGINE_QEMU_USER is kvcon's own setting.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
# the capability cache the test lab's daemons share (tests/lab/lib.sh)
LAB_CAPS=${KVCON_CACHE_DIR:-$ROOT/build/cache}/libvirt-qemu-caps
lab_log() { echo "embed-warm.sh: $*" >&2; }
lab_die() { lab_log "ERROR: $*"; exit 1; }
lab_ms() { date +%s%3N; }
# shellcheck source=scripts/caps-cache.sh
. "$ROOT/scripts/caps-cache.sh"

root=${1:-}
[[ -n $root ]] || { echo "usage: $0 ROOT" >&2; exit 2; }
kv=${KVCON_BIN:-$ROOT/kvcon}
[[ -x $kv ]] || lab_die "$kv missing (make all)"
mkdir -p "$root"
root=$(cd "$root" && pwd)
uri="qemu:///embed?root=$root"
t0=$(lab_ms)

mkdir -p "$root/cache/qemu/capabilities"
had=$(ls "$root/cache/qemu/capabilities" | wc -l)
seeded=0
lab_caps_seed "$root" && seeded=1
# TCG forced: the open is what matters here, not kvcon's KVM probe. Only `engine serve` opens the engine, so the
# warm-up runs one on its own socket in this root, waits until its lists answer, and stops it (no service is left
# holding the root, none keeps this script's environment for the caller's commands)
sock="$root/embed-warm.sock"
rm -f "$sock"
KVCON_ENGINE_ACCEL=tcg "$kv" -c "$uri" --log-file "$root/embed-warm.log" engine serve --socket "$sock" --idle-exit 0 \
    >/dev/null 2>"$root/embed-warm.err" &
spid=$!
stop_warm() { kill "$spid" 2>/dev/null; wait "$spid" 2>/dev/null || true; rm -f "$sock"; }
deadline=$(($(date +%s) + 180))
until [[ -S $sock ]] && curl -sf --max-time 60 --unix-socket "$sock" \
    http://localhost/apis/kubevirt.io/v1/virtualmachines >/dev/null 2>&1; do
    if ! kill -0 "$spid" 2>/dev/null || [[ $(date +%s) -ge $deadline ]]; then
        stop_warm
        cat "$root/embed-warm.err" >&2
        lab_die "kvcon -c '$uri' engine serve did not answer (see $root/embed-warm.log)"
    fi
    sleep 0.2
done
stop_warm
lab_caps_save "$root"
how=probed
[[ $had == 0 ]] || how=kept
[[ $seeded == 0 ]] || how=seeded
lab_log "warm in $(($(lab_ms) - t0)) ms (capability cache $how)"
echo "$uri"
