#!/bin/bash
# kvcon get vs kubectl get against fakekube with BENCH_VMS (default 10,000) VMs and their VMIs and launcher pods:
# wall time and peak RSS of `kvcon get vmi -A -o name|json` and `kubectl get vmi -A -o name|json` in the same run
# (BENCH_RUNS alternating runs each after one warm-up, median wall time, largest peak RSS), then the store's
# memory per object and watch events applied per second (tests/bench/watch_replay.c loading /fake/state as list
# pages, and as ADDED then MODIFIED watch streams, through the reflector's list path or line parser, the decoder and
# the store).
set -u
# shellcheck source=tests/e2e/lib/fakekube.bash
. "$(dirname "$0")/../e2e/lib/fakekube.bash"
VMS=${BENCH_VMS:-10000}
RUNS=${BENCH_RUNS:-5}
KUBECTL=$(command -v kubectl || true)
export HOME="$tmp/home"
mkdir -p "$HOME"

FK_WAIT=600 FK_SETTLE=0 fk_start --vms "$VMS" --namespaces 10 --seed 3
echo "fakekube: $VMS VMs, ready in $(cut -d' ' -f2 "$tmp/fk/ready") s; load average: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores"

# one measured run: prints "WALL_S RSS_KB LINES"
measure() {
	/usr/bin/time -f "%e %M" -o "$tmp/time" "$@" >"$tmp/out" 2>"$tmp/err" || { cat "$tmp/err" >&2; echo "0 0 0"; return; }
	echo "$(cat "$tmp/time") $(wc -l <"$tmp/out")"
}
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

# compare FORMAT: kvcon and kubectl `get vmi -A -o FORMAT`, alternating, after one warm-up each
compare() {
	local fmt=$1
	: >"$tmp/kvcon.runs"
	: >"$tmp/kubectl.runs"
	measure "$KVCON" get vmi -A -o "$fmt" >/dev/null
	[ -n "$KUBECTL" ] && measure "$KUBECTL" --request-timeout=120s get vmi -A -o "$fmt" >/dev/null
	for i in $(seq 1 "$RUNS"); do
		measure "$KVCON" get vmi -A -o "$fmt" >>"$tmp/kvcon.runs"
		[ -n "$KUBECTL" ] && measure "$KUBECTL" --request-timeout=120s get vmi -A -o "$fmt" >>"$tmp/kubectl.runs"
	done
	kw=$(awk '{print $1}' "$tmp/kvcon.runs" | median)
	kr=$(awk '{print $2}' "$tmp/kvcon.runs" | sort -n | tail -1)
	kl=$(awk '{print $3}' "$tmp/kvcon.runs" | sort -n | tail -1)
	echo "kvcon   get vmi -A -o $fmt: $kl lines, median wall ${kw} s over $RUNS runs ($(awk '{printf "%s ", $1}' "$tmp/kvcon.runs")), peak RSS $((kr / 1024)) MiB"
	if [ -n "$KUBECTL" ]; then
		cw=$(awk '{print $1}' "$tmp/kubectl.runs" | median)
		cr=$(awk '{print $2}' "$tmp/kubectl.runs" | sort -n | tail -1)
		cl=$(awk '{print $3}' "$tmp/kubectl.runs" | sort -n | tail -1)
		echo "kubectl get vmi -A -o $fmt: $cl lines, median wall ${cw} s over $RUNS runs ($(awk '{printf "%s ", $1}' "$tmp/kubectl.runs")), peak RSS $((cr / 1024)) MiB"
		awk -v a="$cw" -v b="$kw" -v c="$cr" -v d="$kr" -v f="$fmt" 'BEGIN {printf "ratio (-o %s): kvcon is %.1fx faster (wall), uses %.1f%% of kubectl'"'"'s peak RSS\n", f, a / b, 100 * d / c}'
	else
		echo "kubectl: not installed, no comparison"
	fi
}
compare name
# -o json: the server's objects streamed page by page (issue 16: at least 5x faster, at most 25% of kubectl's RSS);
# the two outputs must be the same objects
compare json
if [ -n "$KUBECTL" ]; then
	"$KVCON" get vmi -A -o json | jq -S . >"$tmp/kv.json"
	"$KUBECTL" --request-timeout=120s get vmi -A -o json | jq -S . >"$tmp/kc.json"
	cmp -s "$tmp/kv.json" "$tmp/kc.json" && echo "-o json: the same objects as kubectl's ($(jq '.items | length' "$tmp/kv.json") items)" ||
		echo "-o json: DIFFERS from kubectl's"
fi

# store memory per object and watch events per second, decode included
cc -std=c11 -D_GNU_SOURCE -O2 -g -Wall -Wextra -Werror -I"$top/src" $(pkg-config --cflags json-c) -o "$tmp/watch_replay" \
	"$top/tests/bench/watch_replay.c" "$top/build/libkvcon.a" \
	$(pkg-config --libs ncursesw libcurl json-c vterm libvncclient libvirt yaml-0.1) -lpthread -lm || exit 1
"$PY" "$fk/fkctl.py" "$tmp/fk" state >"$tmp/state.json"
"$PY" - "$tmp/state.json" "$tmp" <<'PYEOF'
import json, sys
st = json.load(open(sys.argv[1]))
for plural in ("virtualmachines", "virtualmachineinstances", "pods", "events"):
    objs = st[plural]
    if plural == "pods":
        objs = [p for p in objs if (p["metadata"].get("labels") or {}).get("kubevirt.io") == "virt-launcher"]
    # the list path's first load: pages of 500, as the reflector lists them
    with open("%s/%s.PAGES" % (sys.argv[2], plural), "w") as out:
        for i in range(0, len(objs), 500):
            page = {"kind": "List", "metadata": {"resourceVersion": "1"}, "items": objs[i:i + 500]}
            out.write(json.dumps(page, separators=(",", ":")) + "\n")
    for typ in ("ADDED", "MODIFIED"):
        with open("%s/%s.%s" % (sys.argv[2], plural, typ), "w") as out:
            for i, o in enumerate(objs):
                if typ == "MODIFIED":
                    o["metadata"]["resourceVersion"] = str(10**9 + i)
                out.write(json.dumps({"type": typ, "object": o}, separators=(",", ":")) + "\n")
PYEOF
for k in vm:virtualmachines vmi:virtualmachineinstances pod:pods event:events; do
	"$tmp/watch_replay" --list "${k%%:*}" "$tmp/${k#*:}.PAGES"
	"$tmp/watch_replay" "${k%%:*}" "$tmp/${k#*:}.ADDED" "$tmp/${k#*:}.MODIFIED" "${BENCH_REPLAYS:-5}"
done
