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
# TCG forced: the open is what matters here, not kvcon's KVM probe. kvcon reaches the engine only through its
# service: the one started on demand for this open gets a runtime directory of its own (its socket there, not
# where the caller's commands look) and is stopped before leaving, so the warm-up holds nothing of the root.
rt=$(mktemp -d /tmp/kvwarm.XXXXXX)
stop_warm_service() {
    local f p i
    for f in "$rt"/kvcon/engine-*.sock.pid; do
        [[ -f $f ]] || continue
        p=$(cat "$f" 2>/dev/null) || continue
        [[ $p =~ ^[0-9]+$ ]] || continue
        kill -TERM "$p" 2>/dev/null || continue
        for i in $(seq 1 100); do
            kill -0 "$p" 2>/dev/null || break
            sleep 0.1
        done
        kill -9 "$p" 2>/dev/null || true
    done
    rm -rf "$rt"
}
trap stop_warm_service EXIT
if ! XDG_RUNTIME_DIR=$rt KVCON_ENGINE_SERVICE=auto KVCON_ENGINE_ACCEL=tcg "$kv" -c "$uri" --log-file "$root/embed-warm.log" \
    engine get vm >/dev/null 2>"$root/embed-warm.err"; then
    cat "$root/embed-warm.err" >&2
    lab_die "kvcon -c '$uri' engine get vm failed (see $root/embed-warm.log)"
fi
stop_warm_service
trap - EXIT
lab_caps_save "$root"
how=probed
[[ $had == 0 ]] || how=kept
[[ $seeded == 0 ]] || how=seeded
lab_log "warm in $(($(lab_ms) - t0)) ms (capability cache $how)"
echo "$uri"
