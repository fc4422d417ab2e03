#!/bin/sh
# How fast fakekube serves a big cluster: startup with N VMs (+ VMIs + launcher pods + events),
# the first limit=500 page (median of 9), full lists, a chunked walk, and kubectl against it for
# reference. FAKEKUBE_BENCH_VMS (default 10000) sets the size.
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
fk="$top/tests/fakekube"
PY=${FAKEKUBE_PYTHON:-$(command -v python3 || echo /usr/bin/python3)}
N=${FAKEKUBE_BENCH_VMS:-10000}
tmp=$(mktemp -d)
pid=""
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM
export HOME="$tmp"

"$PY" "$fk/fakekube.py" --dir "$tmp/fk" --vms "$N" --namespaces 20 >"$tmp/log" 2>&1 &
pid=$!
"$PY" "$fk/fkctl.py" "$tmp/fk" wait 300
echo "fakekube: $N VMs, startup $(cut -d' ' -f2 "$tmp/fk/ready") s, RSS $(ps -o rss= -p "$pid") KB ($PY)"

FK="$fk" "$PY" - "$tmp/fk" <<'EOF'
import os, sys, time, json, statistics, urllib.parse
sys.path.insert(0, os.environ["FK"])
import fkctl
d = sys.argv[1]

def timed(path):
    t = time.monotonic()
    code, out = fkctl.request(d, "GET", path)
    assert code == 200, (path, code)
    return time.monotonic() - t, out

for plural, path in (("vmi", "/apis/kubevirt.io/v1/virtualmachineinstances"),
                     ("pod", "/api/v1/pods?labelSelector=kubevirt.io%3Dvirt-launcher")):
    sep = "&" if "?" in path else "?"
    first = [timed(path + sep + "limit=500")[0] for _ in range(9)]
    print("  first %s page (limit=500): median %.1f ms, max %.1f ms" % (plural, statistics.median(first) * 1000, max(first) * 1000))
    dt, out = timed(path)
    n = len(json.loads(out)["items"])
    print("  full %s list: %d items, %.1f MB, %.0f ms (client incl. TLS + read)" % (plural, n, len(out) / 1e6, dt * 1000))
    t = time.monotonic(); cont = ""; pages = 0
    while True:
        _, out = timed(path + sep + "limit=500" + ("&continue=" + urllib.parse.quote(cont) if cont else ""))
        pages += 1
        cont = json.loads(out)["metadata"].get("continue")
        if not cont:
            break
    print("  paginated %s walk: %d pages in %.0f ms" % (plural, pages, (time.monotonic() - t) * 1000))
EOF

if command -v kubectl >/dev/null 2>&1; then
	export KUBECONFIG="$tmp/fk/kubeconfig"
	kubectl get ns >/dev/null 2>&1 || true # warm discovery cache
	/usr/bin/time -f "  kubectl get vmi -A -o name: %e s, peak RSS %M KB" kubectl get vmi -A -o name >"$tmp/names" 2>"$tmp/time" || true
	tail -1 "$tmp/time"
	echo "  ($(wc -l <"$tmp/names") names)"
fi
