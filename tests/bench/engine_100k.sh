#!/bin/bash
# The engine service as the benchmark server (issue 28): `kvcon engine serve` (kvcon-engine: C, libmicrohttpd)
# holding BENCH_SIZES (default "10000 100000") stored VirtualMachines (Halted: no guests, no VMIs or pods), so that
# kvcon and kubectl are measured against the same fast server, as a user meets it: both through the kubeconfig the
# service writes (HTTPS on 127.0.0.1, its CA and bearer token; kvcon with --no-engine, as any cluster). For each size:
#  1. the records: one VM created through the API (kubectl apply) is the template; tests/bench/engine_records.c
#     (linking build/libkvcon-engine.a: the engine's own record code) writes N records like it into the host's
#     records directory while the service is stopped, in 10 namespaces created through the API;
#  2. the service's start-up: exec until its list of VMs holds all N (polled every 50 ms on its unix socket), then
#     until its log says the texts it serves are built (on its loop, after it started serving), its CPU time and
#     RSS then; the first list after the start is timed on its own;
#  3. `get vm -A -o name` and `-o json`, kvcon and kubectl alternating, BENCH_RUNS (default 5) runs each after one
#     warm-up (whose outputs are compared: the same names, the same JSON bytes): wall time and peak RSS
#     (/usr/bin/time -f '%e %M'), median and worst, and the service's own CPU time per list (utime+stime); beside
#     them the floor under any client of libcurl and OpenSSL: tests/bench/curl_floor.c's one GET of /version with
#     the same CA and token, nothing kept (its peak RSS, worst of BENCH_RUNS);
#  4. at the largest size (BENCH_UI_SIZES, default the largest of BENCH_SIZES): the dashboard, exec to the first VM
#     rows on the terminal (../shared/bench/ptyrun.py, a bare 120x40 pty), BENCH_UI_RUNS (default 9) runs after one;
#  5. at the largest size: one `kubectl apply -f` of BENCH_API_VMS (default 1000) more VMs (each stored and fsync'd
#     by the service), per VM, then one `kubectl delete -f` of them, until the service lists none of them, with its
#     CPU time; and the service's RSS at the end.
# Everything (state, runtime directory, HOME, the embedded libvirt root) is private to the bench's directory. Needs
# root (the embedded driver), QEMU, kubectl, curl and jq. The load average goes with every figure.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
KVCON=${KVCON_BIN:-$ROOT/kvcon}
SIZES=${BENCH_SIZES:-10000 100000}
RUNS=${BENCH_RUNS:-5}
UI_RUNS=${BENCH_UI_RUNS:-9}
API_VMS=${BENCH_API_VMS:-1000}
SHARED=${BENCH_SHARED:-$ROOT/../shared/bench}
PTYRUN=$SHARED/ptyrun.py
ROWS='[a-z]-[0-9]{5,6}(?![0-9])'
largest=0
for n in $SIZES; do ((n > largest)) && largest=$n; done
UI_SIZES=${BENCH_UI_SIZES:-$largest}
[[ $(id -u) == 0 ]] || { echo "needs root (the embedded libvirt driver)"; exit 0; }
for c in kubectl curl jq qemu-system-x86_64 /usr/bin/time; do
    command -v "$c" >/dev/null || { echo "$c missing (scripts/deps.sh)"; exit 0; }
done
[[ -x $KVCON && -x $(dirname "$KVCON")/kvcon-engine && -f $ROOT/build/libkvcon-engine.a ]] ||
    { echo "build first (make all)"; exit 1; }
# shellcheck source=tests/e2e/lib/service.bash
. "$ROOT/tests/e2e/lib/service.bash"

W=$(mktemp -d /tmp/kvcon-e100k.XXXXXX)
export XDG_STATE_HOME=$W/state XDG_RUNTIME_DIR=$W/run XDG_CONFIG_HOME=$W/config HOME=$W/home
mkdir -p "$XDG_STATE_HOME" "$XDG_RUNTIME_DIR" "$XDG_CONFIG_HOME" "$HOME"
chmod 700 "$XDG_RUNTIME_DIR"
unset KUBECONFIG
SOCK=$W/api.sock
SRV=""
serve_stop() {
    [[ -n $SRV ]] || return 0
    kill -TERM "$SRV" 2>/dev/null
    wait "$SRV" 2>/dev/null
    SRV=""
}
cleanup() {
    serve_stop
    svc_stop_all "$W"
    [[ -n ${KEEP:-} ]] || rm -rf "$W"
}
trap cleanup EXIT

now_ms() { date +%s%3N; }
load() { cut -d' ' -f1-3 /proc/loadavg; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
worst() { sort -n | tail -1; }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
rss_mib() { awk '/VmRSS/ {print int($2 / 1024)}' "/proc/$1/status"; }
list_count() { # the VMs the service lists (a page of one and the count of the rest), in namespace $1 when given;
    # 0 when it does not answer
    curl -s -m 10 --unix-socket "$SOCK" "http://engine/apis/kubevirt.io/v1/${1:+namespaces/$1/}virtualmachines?limit=1" \
        2>/dev/null | jq -r '(.items | length) + (.metadata.remainingItemCount // 0)' 2>/dev/null || echo 0
}

URI=$("$ROOT/scripts/embed-warm.sh" "$XDG_STATE_HOME/kvcon/engine") || { echo "embed-warm.sh failed"; exit 1; }
# the generator, with the engine's own record code (the engine's link line)
PKGS="libcurl json-c yaml-0.1 zlib libvirt libvirt-qemu libxml-2.0 libarchive libcrypto libmicrohttpd"
# shellcheck disable=SC2046,SC2086 # pkg-config's words
cc -std=c11 -D_GNU_SOURCE -O2 -g -Wall -Wextra -Wshadow -Wformat=2 -Werror -I"$ROOT/src" \
    $(pkg-config --cflags $PKGS) -o "$W/engine_records" "$ROOT/tests/bench/engine_records.c" \
    "$ROOT/build/libkvcon-engine.a" $(pkg-config --libs $PKGS) -lpthread -lm || exit 1
# the floor: one GET through libcurl and OpenSSL, nothing kept (tests/bench/curl_floor.c)
# shellcheck disable=SC2046 # pkg-config's words
cc -std=c11 -O2 -Wall -Wextra -Werror -o "$W/curl_floor" "$ROOT/tests/bench/curl_floor.c" $(pkg-config --cflags --libs libcurl) ||
    exit 1

# serve_start N: the service on the embedded root; prints nothing, sets SRV, KCFG, START_MS (exec until it lists
# N VMs) and WARM_MS (exec until its log says the texts of the objects it loaded are built: apis_warm_start)
LOG=$XDG_STATE_HOME/kvcon/kvcon.log
serve_start() {
    local want=$1 t0 i seen
    rm -f "$W/serve.out"
    seen=$(grep -c 'texts of .* objects built' "$LOG" 2>/dev/null)
    t0=$(now_ms)
    "$KVCON" -c "$URI" engine serve --socket "$SOCK" --https 0 >"$W/serve.out" 2>"$W/serve.err" &
    SRV=$!
    for i in $(seq 1 6000); do
        if grep -q '^engine serving' "$W/serve.out" 2>/dev/null && (($(list_count) >= want)); then break; fi
        kill -0 "$SRV" 2>/dev/null || { cat "$W/serve.err"; echo "the service left"; exit 1; }
        sleep 0.05
    done
    START_MS=$(($(now_ms) - t0))
    for i in $(seq 1 6000); do
        (($(grep -c 'texts of .* objects built' "$LOG" 2>/dev/null) > ${seen:-0})) && break
        sleep 0.05
    done
    WARM_MS=$(($(now_ms) - t0))
    KCFG=$(sed -n 's/^kubeconfig: //p' "$W/serve.out")
    [[ -f $KCFG ]] || { cat "$W/serve.err"; echo "the service wrote no kubeconfig"; exit 1; }
}

# the template: one VM through the API, in the namespaces the copies use
serve_start 0
export KUBECONFIG=$KCFG
for i in $(seq 0 9); do kubectl create namespace "ns-$i" >/dev/null || exit 1; done
cat >"$W/vm.yaml" <<'EOF'
apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata:
  name: vm-000000
  namespace: ns-0
  labels:
    app: bench
spec:
  runStrategy: Halted
  template:
    metadata:
      labels:
        kubevirt.io/vm: vm-000000
    spec:
      domain:
        cpu:
          cores: 1
        memory:
          guest: 128Mi
        devices:
          autoattachPodInterface: false
EOF
kubectl apply -f "$W/vm.yaml" >/dev/null || exit 1
REC=$(ls "$XDG_STATE_HOME"/kvcon/engine-data/hosts/*/vms/ns-0_vm-000000.json)
cp "$REC" "$W/template.json"
VMS_DIR=$(dirname "$REC")
serve_stop
echo "engine service bench: $(nproc) cores, kvcon $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null), kubectl" \
    "$(kubectl version --client 2>/dev/null | sed -n 's/^Client Version: //p'); load average $(load)"

for n in $SIZES; do
    rm -f "$VMS_DIR"/*.json
    t0=$(now_ms)
    "$W/engine_records" "$W/template.json" "$VMS_DIR" "$n" 10 || exit 1
    echo "$n VMs: records written in $(($(now_ms) - t0)) ms ($(du -sh "$VMS_DIR" | cut -f1) on disk);" \
        "load average $(load)"
    serve_start "$n"
    echo "$n VMs: service start-up (exec until it lists all $n) $START_MS ms; every text built (its log:" \
        "$(grep 'texts of .* objects built' "$LOG" | tail -1 | sed 's/.*engine serve: //')) $WARM_MS ms after the" \
        "exec; its CPU then $(($(cpu_ticks "$SRV") * 10)) ms, RSS $(rss_mib "$SRV") MiB; load average $(load)"
    KV=("$KVCON" --no-engine get vm -A)
    KC=(kubectl get vm -A)
    # the first list after the start builds the texts the service serves
    c0=$(cpu_ticks "$SRV")
    /usr/bin/time -f '%e %M' -o "$W/time" "${KV[@]}" -o name >"$W/kv.name" 2>"$W/err" || { cat "$W/err"; exit 1; }
    echo "$n VMs: first list after the start (kvcon -o name) $(cut -d' ' -f1 "$W/time") s, the service's CPU" \
        "$(( ($(cpu_ticks "$SRV") - c0) * 10 )) ms, its RSS then $(rss_mib "$SRV") MiB; load average $(load)"
    kubectl get vm -A -o name >"$W/kc.name" 2>"$W/err" || { cat "$W/err"; exit 1; }
    "${KV[@]}" -o json >"$W/kv.json" 2>"$W/err" || { cat "$W/err"; exit 1; }
    kubectl get vm -A -o json >"$W/kc.json" 2>"$W/err" || { cat "$W/err"; exit 1; }
    echo "$n VMs: -o name: kvcon $(wc -l <"$W/kv.name") lines, kubectl $(wc -l <"$W/kc.name"), the same set:" \
        "$(cmp -s <(sort "$W/kv.name") <(sort "$W/kc.name") && echo yes || echo NO);" \
        "-o json: kvcon $(wc -c <"$W/kv.json") bytes, kubectl $(wc -c <"$W/kc.json"), identical:" \
        "$(cmp -s "$W/kv.json" "$W/kc.json" && echo yes || echo NO)"
    rm -f "$W/kv.json" "$W/kc.json"
    for fmt in name json; do
        ((RUNS > 0)) || break # BENCH_RUNS=0: the lists are not timed
        : >"$W/kv.runs"
        : >"$W/kc.runs"
        l0=$(load)
        for _ in $(seq 1 "$RUNS"); do
            for who in kv kc; do
                if [[ $who == kv ]]; then cmd=("${KV[@]}"); else cmd=("${KC[@]}"); fi
                c0=$(cpu_ticks "$SRV")
                /usr/bin/time -f '%e %M' -o "$W/time" "${cmd[@]}" -o "$fmt" >/dev/null 2>"$W/err" ||
                    { cat "$W/err"; exit 1; }
                echo "$(cat "$W/time") $(( ($(cpu_ticks "$SRV") - c0) * 10 ))" >>"$W/$who.runs"
            done
        done
        for who in kv kc; do
            name=kvcon
            [[ $who == kc ]] && name=kubectl
            w=$(cut -d' ' -f1 "$W/$who.runs")
            r=$(cut -d' ' -f2 "$W/$who.runs" | worst)
            s=$(cut -d' ' -f3 "$W/$who.runs" | median)
            printf '%s VMs: %-7s get vm -A -o %-4s median %6s s, worst %6s s (%s), peak RSS %4d MiB;' \
                "$n" "$name" "$fmt" "$(echo "$w" | median)" "$(echo "$w" | worst)" "${w//$'\n'/ }" $((r / 1024))
            echo " the service $s ms CPU a list (median)"
        done
        read -r kvm kvr < <(echo "$(cut -d' ' -f1 "$W/kv.runs" | median) $(cut -d' ' -f2 "$W/kv.runs" | worst)")
        read -r kcm kcr < <(echo "$(cut -d' ' -f1 "$W/kc.runs" | median) $(cut -d' ' -f2 "$W/kc.runs" | worst)")
        echo "$n VMs: -o $fmt: kvcon $(awk -v a="$kcm" -v b="$kvm" 'BEGIN {printf "%.1f", a / b}')x faster (medians)" \
            "at $(awk -v a="$kvr" -v b="$kcr" 'BEGIN {printf "%.1f", 100 * a / b}')% of kubectl's peak RSS;" \
            "load average $l0 before, $(load) after"
        [[ $fmt == name ]] || continue
        # the floor beside it: one GET of /version through libcurl and OpenSSL with the same CA and token
        kubectl config view --raw --minify -o jsonpath='{.clusters[0].cluster.certificate-authority-data}' |
            base64 -d >"$W/ca.pem"
        kubectl config view --raw --minify -o jsonpath='{.users[0].user.token}' >"$W/token"
        url=$(kubectl config view --minify -o jsonpath='{.clusters[0].cluster.server}')/version
        : >"$W/floor.runs"
        for _ in $(seq 1 "$RUNS"); do
            /usr/bin/time -f '%M' -o "$W/time" "$W/curl_floor" "$url" "$W/ca.pem" "$W/token" 2>"$W/err" ||
                { cat "$W/err"; exit 1; }
            cat "$W/time" >>"$W/floor.runs"
        done
        fr=$(worst <"$W/floor.runs")
        echo "$n VMs: the floor, one GET of /version through libcurl and OpenSSL and nothing kept" \
            "(tests/bench/curl_floor.c): peak RSS $(awk -v a="$fr" 'BEGIN {printf "%.1f", a / 1024}') MiB (worst of $RUNS: $(tr '\n' ' ' <"$W/floor.runs")KiB)," \
            "$(awk -v a="$fr" -v b="$kcr" 'BEGIN {printf "%.1f", 100 * a / b}')% of kubectl's -o name"
        rm -f "$W/token"
    done
    echo "$n VMs: service RSS after the lists $(rss_mib "$SRV") MiB; load average $(load)"

    if [[ " $UI_SIZES " == *" $n "* ]]; then
        if [[ -f $PTYRUN ]]; then
            python3 "$PTYRUN" --limit 60 "$ROWS" "$KVCON" --no-engine -A >/dev/null # the lineage history's first run
            for _ in $(seq "$UI_RUNS"); do
                python3 "$PTYRUN" --limit 60 "$ROWS" "$KVCON" --no-engine -A
            done >"$W/first.txt"
            ms=$(sed -n 's/.*first_ms=\(-\{0,1\}[0-9]*\).*/\1/p' "$W/first.txt")
            rss=$(sed -n 's/.*rss_kb=\([0-9]*\).*/\1/p' "$W/first.txt" | median)
            echo "$n VMs: dashboard, exec to the first VM rows on the terminal, $UI_RUNS runs: median" \
                "$(echo "$ms" | median) ms, worst $(echo "$ms" | worst) ms (all: ${ms//$'\n'/ }); RSS then" \
                "$((rss / 1024)) MiB; load average $(load)"
        else
            echo "$n VMs: dashboard not measured: $PTYRUN not found (BENCH_SHARED)"
        fi
    fi

    if ((n == largest && API_VMS > 0)); then
        NS1=$(list_count ns-1)
        for ((i = 0; i < API_VMS; i++)); do
            echo ---
            sed -e "s/vm-000000/api-$(printf '%05d' "$i")/" -e 's/namespace: ns-0/namespace: ns-1/' "$W/vm.yaml"
        done >"$W/api.yaml"
        t0=$(now_ms)
        kubectl --request-timeout=600s apply -f "$W/api.yaml" >"$W/apply.out" 2>&1 ||
            { tail -3 "$W/apply.out"; exit 1; }
        t1=$(now_ms)
        echo "$n VMs: kubectl apply -f of $API_VMS more VMs (one file): $((t1 - t0)) ms," \
            "$(grep -c created "$W/apply.out") created, $(((t1 - t0) * 1000 / API_VMS)) us per VM; load average $(load)"
        # and deleted again (kubectl --wait=false: its wait GETs each object after the deletes, throttled by its
        # client to 5 a second); until the service lists none of them
        c0=$(cpu_ticks "$SRV")
        t0=$(now_ms)
        kubectl --request-timeout=600s delete --wait=false -f "$W/api.yaml" >"$W/delete.out" 2>&1 ||
            { tail -3 "$W/delete.out"; exit 1; }
        t1=$(now_ms)
        for i in $(seq 1 6000); do
            (($(list_count ns-1) <= NS1)) && break
            sleep 0.05
        done
        t2=$(now_ms)
        c1=$(cpu_ticks "$SRV")
        echo "$n VMs: kubectl delete -f of those $API_VMS VMs: $((t1 - t0)) ms, $(grep -c deleted "$W/delete.out")" \
            "deleted, $(((t1 - t0) * 1000 / API_VMS)) us per VM; all gone $((t2 - t0)) ms after; the service's CPU" \
            "$(((c1 - c0) * 1000 / $(getconf CLK_TCK))) ms, $(((c1 - c0) * 1000000 / $(getconf CLK_TCK) / API_VMS)) us" \
            "per VM; load average $(load)"
    fi
    echo "$n VMs: service RSS at the end $(rss_mib "$SRV") MiB"
    serve_stop
done
