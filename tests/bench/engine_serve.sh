#!/bin/bash
# `kvcon engine serve` with BENCH_ENGINE_VMS (default 1,000) engine VMs, defined and Halted, on the embedded driver
# (issue 15), in the same run:
#  1. storing them: one `kubectl apply -f` of one file (each VM written and fsync'd by the service);
#  2. `kubectl get vm -A` and `kvcon get vm -A` through the service's kubeconfig (BENCH_RUNS alternating runs after
#     one warm-up; median wall time, largest peak RSS), for the table and -o json;
#  3. kvcon's dashboard: time from exec to the first VM rows on screen (tmux 120x40) with the service as its cluster;
#  4. watch fan-out: BENCH_WATCHERS (default 20) `kubectl get vm -A -w` clients; the time from a label patch
#     (kubectl's exit) until every watcher has printed the change (polled every 10 ms).
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
KVCON_BIN=${KVCON_BIN:-$ROOT/kvcon}
VMS=${BENCH_ENGINE_VMS:-1000}
RUNS=${BENCH_RUNS:-5}
WATCHERS=${BENCH_WATCHERS:-20}
# shellcheck source=tests/e2e/engine-lib.bash
. "$ROOT/tests/e2e/engine-lib.bash"
command -v kubectl >/dev/null || { echo "kubectl missing (scripts/deps.sh check)"; exit 1; }
engine_embed_up kvsb
export HOME=$ENGINE_T/home
mkdir -p "$HOME"
SOCK=$ENGINE_T/api.sock
TM="tmux -L kvsb-$$ -f /dev/null"
PIDS=()
cleanup() {
    $TM kill-server 2>/dev/null
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
    wait 2>/dev/null
    engine_embed_cleanup
}
trap cleanup EXIT
now_ms() { date +%s%3N; }
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

"$KV" -c "$URI" engine serve --socket "$SOCK" --https 0 >"$ENGINE_T/serve.out" 2>"$ENGINE_T/serve.err" &
SRV=$!
PIDS+=("$SRV")
for _ in $(seq 1 600); do grep -q '^kubeconfig: ' "$ENGINE_T/serve.out" && break; sleep 0.1; done
KCFG=$(sed -n 's/^kubeconfig: //p' "$ENGINE_T/serve.out")
[[ -f $KCFG ]] || { cat "$ENGINE_T/serve.err"; echo "the service did not start"; exit 1; }
export KUBECONFIG=$KCFG
echo "engine serve: $VMS VMs; load average: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores"

# 1. store the VMs (one YAML document per VM in one file: kubectl validates a v1 List against OpenAPI v2, which the
# service does not serve)
for ((i = 0; i < VMS; i++)); do
    echo ---
    cat "$(engine_manifest "$ENGINE_T/vm.yaml" "$(printf 'vm-%04d' "$i")" Halted 128Mi)"
done >"$ENGINE_T/vms.yaml"
t0=$(now_ms)
kubectl --request-timeout=600s apply -f "$ENGINE_T/vms.yaml" >"$ENGINE_T/apply.out" 2>&1 || { tail -3 "$ENGINE_T/apply.out"; exit 1; }
t1=$(now_ms)
echo "kubectl apply -f (one file, $VMS VMs): $((t1 - t0)) ms, $(grep -c created "$ENGINE_T/apply.out") created ($(((t1 - t0) * 1000 / VMS)) us per VM)"

# 2. kubectl and kvcon, alternating
measure() {
    /usr/bin/time -f "%e %M" -o "$ENGINE_T/time" "$@" >"$ENGINE_T/out" 2>"$ENGINE_T/err" || { cat "$ENGINE_T/err" >&2; echo "0 0 0"; return; }
    echo "$(cat "$ENGINE_T/time") $(wc -l <"$ENGINE_T/out")"
}
compare() {
    : >"$ENGINE_T/kv.runs"
    : >"$ENGINE_T/kc.runs"
    measure "$KVCON_BIN" --no-engine get vm -A "$@" >/dev/null
    measure kubectl get vm -A "$@" >/dev/null
    for _ in $(seq 1 "$RUNS"); do
        measure "$KVCON_BIN" --no-engine get vm -A "$@" >>"$ENGINE_T/kv.runs"
        measure kubectl get vm -A "$@" >>"$ENGINE_T/kc.runs"
    done
    for who in kv kc; do
        w=$(awk '{print $1}' "$ENGINE_T/$who.runs" | median)
        r=$(awk '{print $2}' "$ENGINE_T/$who.runs" | sort -n | tail -1)
        l=$(awk '{print $3}' "$ENGINE_T/$who.runs" | sort -n | tail -1)
        name=kvcon
        [[ $who == kc ]] && name=kubectl
        printf '%-7s get vm -A %-8s %5d lines, median wall %s s over %d runs (%s), peak RSS %d MiB\n' "$name" "$*" \
            "$l" "$w" "$RUNS" "$(awk '{printf "%s ", $1}' "$ENGINE_T/$who.runs" | sed 's/ $//')" $((r / 1024))
    done
}
compare
compare -o json

# 3. the dashboard's first rows
$TM new-session -d -x 120 -y 40 "env KUBECONFIG=$KCFG $KVCON_BIN --no-engine; sleep 600"
t0=$(now_ms)
shown=
for _ in $(seq 1 3000); do
    if $TM capture-pane -p | grep -q 'vm-0'; then shown=$(now_ms); break; fi
    sleep 0.01
done
$TM kill-server 2>/dev/null
[[ -n $shown ]] && echo "dashboard: first VM rows after $((shown - t0)) ms (tmux 120x40, polled every 10 ms)" ||
    echo "dashboard: no VM rows in 30 s"

# 4. watch fan-out
for i in $(seq 1 "$WATCHERS"); do
    kubectl get vm -A -w -o name >"$ENGINE_T/w$i" 2>/dev/null &
    PIDS+=("$!")
done
for _ in $(seq 1 3000); do
    ok=1
    for i in $(seq 1 "$WATCHERS"); do [[ $(wc -l <"$ENGINE_T/w$i") -ge $VMS ]] || { ok=0; break; }; done
    ((ok)) && break
    sleep 0.1
done
for i in $(seq 1 "$WATCHERS"); do base[i]=$(wc -l <"$ENGINE_T/w$i"); done
kubectl patch vm vm-0007 --type merge -p '{"metadata":{"labels":{"touched":"1"}}}' >/dev/null
t0=$(now_ms)
done_at=
for _ in $(seq 1 3000); do
    ok=1
    for i in $(seq 1 "$WATCHERS"); do [[ $(wc -l <"$ENGINE_T/w$i") -gt ${base[i]} ]] || { ok=0; break; }; done
    if ((ok)); then done_at=$(now_ms); break; fi
    sleep 0.01
done
[[ -n $done_at ]] && echo "watch fan-out: $WATCHERS kubectl watchers all saw the patch $((done_at - t0)) ms after kubectl patch returned" ||
    echo "watch fan-out: not every watcher saw the patch in 30 s"
echo "service RSS with $VMS VMs and $WATCHERS watchers: $(awk '/VmRSS/ {print int($2 / 1024)}' "/proc/$SRV/status") MiB"
