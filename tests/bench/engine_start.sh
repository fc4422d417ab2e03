#!/bin/bash
# Start-to-serial-marker time of one guest: kvcon (`kvcon engine start` then `kvcon engine console --expect`,
# both through the engine service, which runs already as it does for a user: started before the clock starts)
# against virsh (`virsh start` then `virsh console` in a pty, watching for the marker) on the same guest, in
# the same run, alternating, on libvirt's embedded driver (kvcon's default host) under TCG.
# The virsh domain is kvcon's own domain XML under another name and UUID (same kernel, initrd, devices).
# The embedded driver admits one process at a time: the service is stopped before each virsh round (virsh opens
# the root itself) and started again, outside the timing, before each kvcon round.
# Env: ROUNDS (default 5). Prints every sample and the medians.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
KV=${KVCON_BIN:-$ROOT/kvcon}
ROUNDS=${ROUNDS:-5}
# shellcheck source=tests/e2e/engine-lib.bash
. "$ROOT/tests/e2e/engine-lib.bash" # engine_manifest
[[ $(id -u) == 0 ]] || { echo "needs root"; exit 77; }
command -v script >/dev/null && command -v jq >/dev/null || { echo "script(1)/jq missing"; exit 77; }

T=$(mktemp -d /tmp/kvb.XXXXXX)
export XDG_STATE_HOME=$T/state XDG_RUNTIME_DIR=$T/run KVCON_ENGINE_IMAGES=$T/images KVCON_ENGINE_ACCEL=tcg
mkdir -p -m 0700 "$XDG_RUNTIME_DIR"
URI="qemu:///embed?root=$XDG_STATE_HOME/kvcon/engine"
cleanup() {
    local f
    svc_stop_all "$T"
    for f in "$XDG_STATE_HOME"/kvcon/engine/run/qemu/*.pid; do
        [[ -f $f ]] && kill -9 "$(cat "$f")" 2>/dev/null || true
    done
    rm -rf "$T"
}
trap cleanup EXIT
"$ROOT/scripts/demo-guest.sh" "$KVCON_ENGINE_IMAGES/kvcon-lab-guest" >/dev/null
"$ROOT/scripts/embed-warm.sh" "$XDG_STATE_HOME/kvcon/engine" >/dev/null
kv() { "$KV" -c "$URI" "$@" 2>/dev/null; }
vsh() { LIBVIRT_LOG_OUTPUTS="3:file:$T/virsh.log" virsh -q -c "$URI" "$@"; }
ms() { date +%s%3N; }
svc_up() { kv engine get vm >/dev/null; } # the service, started on demand (as the first kvcon a user runs)
svc_down() { svc_stop_all "$T"; }         # the root free for virsh

engine_manifest "$T/bench.yaml" bench Halted 192Mi >/dev/null
kv engine apply -f "$T/bench.yaml" >/dev/null
# one kvcon start defines the domain; its XML, renamed, is the virsh guest
kv engine start bench >/dev/null
kv engine console bench --expect KVCON-GUEST-READY --timeout 120s >/dev/null
kv engine stop bench --force >/dev/null
svc_down
vsh dumpxml default_bench | sed -e 's|<name>default_bench</name>|<name>virsh_bench</name>|' -e '/<uuid>/d' \
    -e '/<metadata>/,/<\/metadata>/d' -e "s|/run/[0-9a-f-]*/serial.log|/virsh-serial.log|" >"$T/virsh.xml"
vsh define "$T/virsh.xml" >/dev/null

kvcon_once() {
    local t0 t1
    svc_up
    t0=$(ms)
    kv engine start bench >/dev/null
    kv engine console bench --expect KVCON-GUEST-READY --timeout 120s >/dev/null
    t1=$(ms)
    kv engine stop bench --force >/dev/null
    svc_down
    echo $((t1 - t0))
}

virsh_once() {
    local t0 t1
    t0=$(ms)
    vsh start virsh_bench >/dev/null
    # virsh console needs a terminal: script(1) gives it one; its output is watched for the marker (every
    # 10 ms: the same granularity costs kvcon nothing, its console returns at the match)
    : >"$T/vc.out"
    script -qfc "virsh -q -c '$URI' console virsh_bench --force" /dev/null </dev/null >"$T/vc.out" 2>&1 &
    local sp=$! until=$(($(date +%s) + 120))
    until grep -q KVCON-GUEST-READY "$T/vc.out" || (($(date +%s) > until)); do sleep 0.01; done
    t1=$(ms)
    kill "$sp" 2>/dev/null || true
    wait "$sp" 2>/dev/null || true
    vsh destroy virsh_bench >/dev/null 2>&1 || true
    echo $((t1 - t0))
}

median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : int((a[NR/2]+a[NR/2+1])/2))}'; }

: >"$T/kvcon.ms"
: >"$T/virsh.ms"
for ((i = 1; i <= ROUNDS; i++)); do
    k=$(kvcon_once)
    v=$(virsh_once)
    echo "round $i: kvcon ${k} ms, virsh ${v} ms"
    echo "$k" >>"$T/kvcon.ms"
    echo "$v" >>"$T/virsh.ms"
done
km=$(median <"$T/kvcon.ms")
vm=$(median <"$T/virsh.ms")
echo "median start->marker: kvcon ${km} ms, virsh start+console ${vm} ms, kvcon/virsh $(awk -v a="$km" -v b="$vm" 'BEGIN {printf "%.2f", a / b}')"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
