#!/bin/bash
# `kvcon engine serve --https` while a local user holds idle TCP connections to its port (no TLS handshake, no
# byte; issue 23, finding 4): for BENCH_IDLE_CONNS (default "0 500 1500 3000") held connections
# (tests/e2e/holdconns.py), BENCH_RUNS (default 5) authorised `curl .../healthz` one after another; the median and
# the largest time_total, and how long after the last connect the server had closed every idle connection.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
KVCON_BIN=${KVCON_BIN:-$ROOT/kvcon}
RUNS=${BENCH_RUNS:-5}
# shellcheck source=tests/e2e/engine-lib.bash
. "$ROOT/tests/e2e/engine-lib.bash"
engine_embed_up kvib
SOCK=$ENGINE_T/api.sock
SRV=
cleanup() {
    [[ -n $SRV ]] && kill "$SRV" 2>/dev/null && wait "$SRV" 2>/dev/null
    engine_embed_cleanup
}
trap cleanup EXIT
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

"$KV" -c "$URI" engine serve --socket "$SOCK" --https 0 >"$ENGINE_T/serve.out" 2>"$ENGINE_T/serve.err" &
SRV=$!
for _ in $(seq 1 600); do grep -q '^kubeconfig: ' "$ENGINE_T/serve.out" && break; sleep 0.1; done
KCFG=$(sed -n 's/^kubeconfig: //p' "$ENGINE_T/serve.out")
PORT=$(sed -n 's|^https: https://127.0.0.1:||p' "$ENGINE_T/serve.out")
[[ -f $KCFG ]] || { cat "$ENGINE_T/serve.err"; echo "the service did not start"; exit 1; }
TOKEN=$(awk '/token:/ {print $2}' "$KCFG")
echo "engine serve --https, idle connections held; load average: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores"
echo "held | healthz with the token, median / max (s) | codes | all idle connections closed by the server after"
for n in ${BENCH_IDLE_CONNS:-0 500 1500 3000}; do
    rm -f "$ENGINE_T/held"
    (ulimit -n $((n + 256)) && exec python3 "$ROOT/tests/e2e/holdconns.py" "$PORT" "$n" "$ENGINE_T/held" 30) \
        >"$ENGINE_T/hold.out" 2>&1 &
    hold=$!
    for _ in $(seq 1 300); do [[ -s $ENGINE_T/held ]] && break; sleep 0.1; done
    : >"$ENGINE_T/times"
    codes=
    for ((r = 0; r < RUNS; r++)); do
        got=$(curl -sk --max-time 10 -o /dev/null -w '%{http_code} %{time_total}' \
            -H "Authorization: Bearer $TOKEN" "https://127.0.0.1:$PORT/healthz") || true
        codes+="${got%% *} "
        echo "${got#* }" >>"$ENGINE_T/times"
    done
    wait "$hold"
    echo "$n | $(median <"$ENGINE_T/times") / $(sort -n "$ENGINE_T/times" | tail -n1) | ${codes% } | $(cat "$ENGINE_T/hold.out")"
done
