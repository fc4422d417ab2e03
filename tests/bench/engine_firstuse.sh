#!/bin/bash
# First use of a new embedded root and start-to-marker, through kvcon alone (no pre-warming, no seeded capability
# cache): a fresh XDG_STATE_HOME, then
#   first open   `kvcon engine get vm` on the new root (kvcon prepares the root, libvirt opens it)
#   first start  `kvcon engine start` + `kvcon engine console --expect` (QEMU's capability probe happens here)
#   warm open    `kvcon engine get vm` again
#   warm start   start-to-marker again, ROUNDS times (median)
# and the account QEMU ran as. TCG (KVCON_ENGINE_ACCEL=tcg: the KVM probe is not part of this figure).
# Env: ROUNDS (default 5); KVCON_ENGINE_QEMU_USER is passed through (root = the old behaviour).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
KV=${KVCON_BIN:-$ROOT/kvcon}
ROUNDS=${ROUNDS:-5}
# shellcheck source=tests/e2e/engine-lib.bash
. "$ROOT/tests/e2e/engine-lib.bash" # engine_manifest
[[ $(id -u) == 0 ]] || { echo "needs root"; exit 1; }

T=$(mktemp -d /tmp/kvf.XXXXXX)
export XDG_STATE_HOME=$T/state KVCON_ENGINE_IMAGES=$T/images KVCON_ENGINE_ACCEL=tcg
URI="qemu:///embed?root=$XDG_STATE_HOME/kvcon/engine"
cleanup() {
    local f
    for f in "$XDG_STATE_HOME"/kvcon/engine/run/qemu/*.pid; do
        [[ -f $f ]] && kill -9 "$(cat "$f")" 2>/dev/null || true
    done
    rm -rf "$T"
}
trap cleanup EXIT
"$ROOT/scripts/demo-guest.sh" "$KVCON_ENGINE_IMAGES/kvcon-lab-guest" >/dev/null
kv() { "$KV" -c "$URI" "$@" 2>>"$T/kv.err"; }
ms() { date +%s%3N; }
engine_manifest "$T/bench.yaml" bench Halted 192Mi >/dev/null
start_marker() {
    local t0
    t0=$(ms)
    kv engine start bench >/dev/null
    kv engine console bench --expect KVCON-GUEST-READY --timeout 180s >/dev/null
    echo $(($(ms) - t0))
}
t0=$(ms)
kv engine get vm >/dev/null
first_open=$(($(ms) - t0))
kv engine apply -f "$T/bench.yaml" >/dev/null
first_start=$(start_marker)
pid=$(kv engine get pod -o json | jq -r '.items[0].metadata.annotations["kvcon.io/qemu-pid"] // 0')
user=$(ps -o user= -p "$pid")
kv engine stop bench --force >/dev/null
t0=$(ms)
kv engine get vm >/dev/null
warm_open=$(($(ms) - t0))
: >"$T/warm.ms"
for ((i = 1; i <= ROUNDS; i++)); do
    s=$(start_marker)
    kv engine stop bench --force >/dev/null
    echo "$s" >>"$T/warm.ms"
done
median=$(sort -n "$T/warm.ms" | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : int((a[NR/2]+a[NR/2+1])/2))}')
echo "QEMU ran as: $user"
echo "first open ${first_open} ms, first start-to-marker ${first_start} ms (the capability probe is in the first open)"
echo "warm open ${warm_open} ms, warm start-to-marker median ${median} ms of $ROUNDS: $(tr '\n' ' ' <"$T/warm.ms")"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
