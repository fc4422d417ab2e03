#!/bin/bash
# Live migration time: kvcon against virsh, the same guest in the same run (two-host lab, TCG, 160 MiB guest).
# Each round: `kvcon engine migrate` A->B and B->A (whole command: process start, both hosts opened, pre-flight,
# migration, record moved), then `virsh migrate --live --p2p --persistent --undefinesource` A->B and B->A of the
# same domain (kvcon not running meanwhile). Downtime from libvirt's completed job stats on the target.
# ROUNDS (default 3).
set -euo pipefail
HERE=$(cd "$(dirname "$0")/../e2e" && pwd)
. "$HERE/migrate-lib.bash"
mig_setup
ROUNDS=${ROUNDS:-3}

kv -c "$SRC_URI" engine apply -f "$(manifest bench)" >/dev/null 2>&1
wait_shell bench
ms() { echo $((($(date +%s%N) - $1) / 1000000)); }
downtime() { virsh -q -c "$1" domjobinfo --completed default_bench 2>/dev/null | awk '/^Total downtime/ {print $3}'; }

declare -a K V KD VD
for r in $(seq 1 "$ROUNDS"); do
    for leg in ab ba; do
        if [[ $leg == ab ]]; then to=$HB dst=$DST_URI; else to=$HA dst=$SRC_URI; fi
        t=$(date +%s%N)
        "$KV" engine migrate bench --to "$to" --quiet >/dev/null 2>&1 || fail "kvcon migrate failed"
        K+=("$(ms "$t")")
        KD+=("$(downtime "$dst")")
    done
    for leg in ab ba; do
        if [[ $leg == ab ]]; then from=$SRC_URI to=$DST_TCP_URI dst=$DST_URI; else from=$DST_URI to=$SRC_TCP_URI dst=$SRC_URI; fi
        t=$(date +%s%N)
        virsh -q -c "$from" migrate --live --p2p --persistent --undefinesource default_bench "$to" >/dev/null ||
            fail "virsh migrate failed"
        V+=("$(ms "$t")")
        VD+=("$(downtime "$dst")")
    done
    echo "round $r: kvcon ${K[-2]} ms (downtime ${KD[-2]} ms), ${K[-1]} ms (${KD[-1]} ms); virsh ${V[-2]} ms (${VD[-2]} ms), ${V[-1]} ms (${VD[-1]} ms)"
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : int((a[NR/2]+a[NR/2+1])/2)}'; }
mk=$(median "${K[@]}") mv=$(median "${V[@]}")
echo "median migration: kvcon $mk ms, virsh $mv ms, ratio $(awk -v a="$mk" -v b="$mv" 'BEGIN {printf "%.2f", a/b}')"
echo "median downtime: kvcon $(median "${KD[@]}") ms, virsh $(median "${VD[@]}") ms"
