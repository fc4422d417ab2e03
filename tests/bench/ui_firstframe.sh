#!/bin/bash
# The dashboard's first frame and its answer to a key while the lists load, measured as a user meets them: kvcon in
# a bare pseudo-terminal (../shared/bench/ptyrun.py, tests/bench/keylat.py; no tmux or `script` in between) against
# a server that answers from memory (../shared/bench/replaykube.py in front of fakekube), so that neither the
# harness nor the Python fake cluster is measured. For each size of UI_FF_SIZES (default "500 10000 100000" VMs,
# each running VM with its VMI, launcher pod and two events, 10 namespaces), after exec to `kvcon version`'s output
# (process start-up alone, the floor of the first figure):
#  1. exec to the first VM rows written to the terminal, UI_FF_RUNS (default 9) runs: median and worst;
#  2. exec to every list loaded (kvcon's log says "listed" for VMs, VMIs, pods, events);
#  3. `get vmi -A -o name`: kvcon and kubectl (when installed) side by side, wall time and peak RSS;
#  4. at the largest size: `?` pressed 0, 250, 500, 1000 and 2000 ms after the first rows, time until the help
#     view is on the terminal, and whether the lists were still loading then.
# KVCON_B=PATH: another build's kvcon, run alternately with KVCON_BIN's in step 1 (before and after, the same minutes).
# The tools under ../shared/bench are the project's neighbours', not the project's: without them this bench says so
# and stops. fakekube at 100,000 VMs takes minutes and a few GB to build its objects.
set -u
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
KVCON="${KVCON_BIN:-$ROOT/kvcon}"
SIZES="${UI_FF_SIZES:-500 10000 100000}"
RUNS="${UI_FF_RUNS:-9}"
SHARED="${BENCH_SHARED:-$ROOT/../shared/bench}"
PTYRUN="$SHARED/ptyrun.py"
REPLAY="$SHARED/replaykube.py"
KEYLAT="$ROOT/tests/bench/keylat.py"
ROWS='[a-z]-[0-9]{5,6}(?![0-9])'
[ -f "$PTYRUN" ] && [ -f "$REPLAY" ] || { echo "ptyrun.py/replaykube.py not found in $SHARED (BENCH_SHARED)"; exit 0; }
W=$(mktemp -d /tmp/kvcon-ff-bench.XXXXXX)
FKPID="" RPPID=""
stop_servers() {
	[ -n "$RPPID" ] && kill "$RPPID" 2>/dev/null && wait "$RPPID" 2>/dev/null
	[ -n "$FKPID" ] && kill "$FKPID" 2>/dev/null && wait "$FKPID" 2>/dev/null
	RPPID="" FKPID=""
}
cleanup() {
	stop_servers
	rm -rf "$W"
}
trap cleanup EXIT

# fakekube (plain HTTP, anonymous: replaykube forwards no credentials) and replaykube in front of it; the
# kubeconfig $W/kc points at replaykube
servers_start() {
	stop_servers
	rm -rf "$W/fk" "$W/rp.port"
	mkdir -p "$W/fk"
	python3 "$ROOT/tests/fakekube/fakekube.py" --dir "$W/fk" --vms "$1" --namespaces 10 --insecure-http --anonymous \
		>"$W/fk.log" 2>&1 &
	FKPID=$!
	python3 "$ROOT/tests/fakekube/fkctl.py" "$W/fk" wait 1800 >/dev/null || { echo "fakekube did not start"; exit 1; }
	local port
	port=$(cat "$W/fk/port")
	python3 "$REPLAY" "http://127.0.0.1:$port" "$W/rp.port" >"$W/rp.log" 2>&1 &
	RPPID=$!
	for _ in $(seq 100); do [ -s "$W/rp.port" ] && break; sleep 0.1; done
	sed -e "s/:$port/:$(cat "$W/rp.port")/" -e '/^    token:/d' -e 's/^  user:$/  user: {}/' "$W/fk/kubeconfig" >"$W/kc"
}

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
worst() { sort -n | tail -1; }
field() { sed -n "s/.*$1=\\(-\\{0,1\\}[0-9.]*\\).*/\\1/p"; }
# kvcon's lineage history is its own, not the bench's
export XDG_STATE_HOME="$W/state"

# the floor: exec to `kvcon version`'s line on the terminal (process start-up, no server)
for _ in $(seq "$RUNS"); do python3 "$PTYRUN" 'v[0-9]+\.[0-9]' "$KVCON" version; done >"$W/version.txt"
ms=$(field first_ms <"$W/version.txt")
echo "kvcon version: exec to its line on the terminal, $RUNS runs: median $(echo "$ms" | median) ms, worst" \
	"$(echo "$ms" | worst) ms (start-up alone)"

last=""
for n in $SIZES; do
	servers_start "$n"
	last=$n
	rm -f "$W/first.txt"
	# fill replaykube's cache: every page kvcon asks for, once
	KUBECONFIG=$W/kc KVCON_LOG=$W/warm.log python3 "$KEYLAT" --limit 600 --log "$W/warm.log" "$ROWS" '' '' "$KVCON" -A \
		>/dev/null
	rm -f "$W/warm.log"
	: >"$W/first-b.txt"
	for _ in $(seq "$RUNS"); do
		KUBECONFIG=$W/kc python3 "$PTYRUN" --limit 30 "$ROWS" "$KVCON" -A >>"$W/first.txt"
		[ -z "${KVCON_B:-}" ] || KUBECONFIG=$W/kc python3 "$PTYRUN" --limit 30 "$ROWS" "$KVCON_B" -A >>"$W/first-b.txt"
	done
	ms=$(field first_ms <"$W/first.txt")
	rss=$(field rss_kb <"$W/first.txt" | median)
	echo "$n VMs: exec to first rows on the terminal, $RUNS runs: median $(echo "$ms" | median) ms, worst" \
		"$(echo "$ms" | worst) ms (all: $(echo $ms)); RSS then $((rss / 1024)) MiB; load average $(cut -d' ' -f1 /proc/loadavg)"
	if [ -n "${KVCON_B:-}" ]; then
		ms=$(field first_ms <"$W/first-b.txt")
		echo "$n VMs: KVCON_B ($KVCON_B), the same runs alternating: median $(echo "$ms" | median) ms, worst" \
			"$(echo "$ms" | worst) ms (all: $(echo $ms))"
	fi
	rm -f "$W/l.log"
	out=$(KUBECONFIG=$W/kc KVCON_LOG=$W/l.log python3 "$KEYLAT" --limit 600 --log "$W/l.log" "$ROWS" '' '' "$KVCON" -A)
	echo "$n VMs: exec to every list loaded (VMs, VMIs, pods, events): $(echo "$out" | field listed_ms) ms"
	for tool in "$KVCON" kubectl; do
		command -v "$tool" >/dev/null || continue
		KUBECONFIG=$W/kc "$tool" get vmi -A -o name >/dev/null 2>&1 # the server's cache, for kubectl's own URLs
		t=$( { KUBECONFIG=$W/kc /usr/bin/time -f '%e s, %M KB' "$tool" get vmi -A -o name >/dev/null; } 2>&1 | tail -1)
		echo "$n VMs: $(basename "$tool") get vmi -A -o name: $t"
	done
done

# the largest size is still being served: a key while its lists load
for after in 0 250 500 1000 2000; do
	rm -f "$W/k.log"
	out=$(KUBECONFIG=$W/kc KVCON_LOG=$W/k.log python3 "$KEYLAT" --after "$after" --log "$W/k.log" "$ROWS" '?' \
		'Keys of this view' "$KVCON" -A)
	echo "$last VMs: '?' pressed $after ms after the first rows: drawn $(echo "$out" | field key_ms) ms later" \
		"(lists still loading: $( [ "$(echo "$out" | field busy)" = 1 ] && echo yes || echo no))"
done
