#!/bin/bash
# Dashboard benchmarks against fakekube in tmux (120x40):
#  1. time from exec to the first VM rows on screen, with UI_BENCH_VMS (default 10000) VMs + VMIs + pods and with
#     500, to show it does not grow with the cluster;
#  2. kvcon's CPU and bytes written to the terminal per second while the cluster changes at UI_BENCH_CHURN
#     (default 1000) writes/s (fakekube's churn; the rate reached is printed from resourceVersion), in
#     UI_BENCH_RUNS (default 3) windows of UI_BENCH_SECONDS (default 10), their median and worst;
#  3. idle CPU with no events (the scheduler's nanoseconds of every thread: a clock tick is 0.1% of 10 s).
# CPU from /proc/PID/stat (utime+stime); terminal bytes and the first rows from a `script` typescript of kvcon's
# output.
set -u
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
KVCON="${KVCON_BIN:-$ROOT/kvcon}"
VMS="${UI_BENCH_VMS:-10000}"
CHURN="${UI_BENCH_CHURN:-1000}"
SECS="${UI_BENCH_SECONDS:-10}"
RUNS="${UI_BENCH_RUNS:-3}"
command -v tmux >/dev/null || { echo "tmux missing"; exit 0; }
W=$(mktemp -d /tmp/kvcon-ui-bench.XXXXXX)
SOCK="kvcon-ui-bench-$$"
T="tmux -L $SOCK -f /dev/null"
FKPID=""
# `script` outlives its tmux pane (it waits for its child), so the measured process is ended by pid
stop_measured() {
	[ -s "$W/pid" ] && kill "$(cat "$W/pid")" 2>/dev/null
	rm -f "$W/pid"
}
cleanup() {
	stop_measured
	$T kill-server 2>/dev/null
	[ -n "$FKPID" ] && kill "$FKPID" 2>/dev/null && wait "$FKPID" 2>/dev/null
	rm -rf "$W"
}
trap cleanup EXIT
fk() { python3 "$ROOT/tests/fakekube/fkctl.py" "$W/fk" "$@"; }
now_ms() { date +%s%3N; }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# nanoseconds on a CPU, every thread of the process (the scheduler's count: idle is below a clock tick a second)
cpu_ns() { cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{s += $1} END {print s + 0}'; }
rv() { fk get /fake/info | python3 -c 'import json,sys; print(json.load(sys.stdin)["resourceVersion"])'; }

fk_start() {
	$T kill-server 2>/dev/null
	[ -n "$FKPID" ] && kill "$FKPID" 2>/dev/null && wait "$FKPID" 2>/dev/null
	rm -rf "$W/fk"
	mkdir -p "$W/fk"
	python3 "$ROOT/tests/fakekube/fakekube.py" --dir "$W/fk" --vms "$1" --namespaces 10 >"$W/fk.log" 2>&1 &
	FKPID=$!
	fk wait 300 >/dev/null || { echo "fakekube did not start"; exit 1; }
}

# Starts kvcon under `script` (the typescript is what it writes to the terminal); prints ms from exec until a VM
# name is in the typescript (a row written to the terminal), read by a poller that costs little CPU (polling tmux
# capture-pane every few ms would itself load the 2 cores).
first_rows() {
	rm -f "$W/pid" "$W/ts" "$W/t_exec"
	local t0 ms
	t0=$(now_ms)
	# the clock starts just before kvcon is exec'd (tmux and script start-up are not kvcon's)
	$T new-session -d -x 120 -y 40 -s b -e TERM=xterm-256color \
		"script -qfc 'echo \$\$ > $W/pid; date +%s%3N > $W/t_exec; exec env KUBECONFIG=$W/fk/kubeconfig KVCON_LOG=$W/kvcon.log $KVCON -A' $W/ts"
	ms=$(python3 - "$W/ts" "$t0" "$W/t_exec" <<'PY'
import re, sys, time
path, t0, exec_file = sys.argv[1], int(sys.argv[2]), sys.argv[3]
rx = re.compile(rb"[a-z]+-[0-9]{5}")
while True:
    try:
        with open(path, "rb") as f:
            if rx.search(f.read()):
                now = int(time.time() * 1000)
                with open(exec_file) as e:
                    print(now - int(e.read()))
                break
    except FileNotFoundError:
        pass
    if time.time() * 1000 - t0 > 30000:
        print(-1)
        break
    time.sleep(0.002)
PY
)
	[ "$ms" -ge 0 ] || { echo "no rows after 30 s"; $T capture-pane -p -t b; exit 1; }
	# and tmux shows them
	for _ in $(seq 100); do $T capture-pane -p -t b | grep -qE '^ ns-0[0-9] +[a-z]+-[0-9]{5} ' && break; sleep 0.05; done
	echo "$ms"
}

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

echo "== ui_dashboard bench: $VMS VMs, churn $CHURN/s, ${SECS}s windows, 120x40"
for n in 500 "$VMS"; do
	fk_start "$n"
	: >"$W/kvcon.log"
	ms=$(for r in $(seq "$RUNS"); do first_rows; stop_measured; $T kill-server 2>/dev/null; sleep 0.3; done | median)
	obj=$(grep -o 'first VM object in the store [0-9]* ms' "$W/kvcon.log" | awk '{print $7}' | median)
	drawn=$(grep -o 'first rows drawn [0-9]* ms' "$W/kvcon.log" | awk '{print $4}' | median)
	echo "first rows on screen, $n VMs (+VMIs, pods, events): median of $RUNS: $ms ms from exec to rows written to the terminal;" \
		"kvcon log: first VM object received at $obj ms, rows drawn at $drawn ms (load average $(cut -d' ' -f1 /proc/loadavg))"
done

# the big cluster is running: measure idle and churn on one kvcon
first_rows >/dev/null
pid=$(cat "$W/pid")
# wait until every list is in (the header says live for all four)
for _ in $(seq 600); do
	$T capture-pane -p -t b | grep -qE 'Watch: vm live +vmi live +pod live +event live' && break
	sleep 0.1
done
hz=$(getconf CLK_TCK)
sleep 1
c0=$(cpu_ticks "$pid"); n0=$(cpu_ns "$pid"); b0=$(stat -c %s "$W/ts"); sleep "$SECS"
c1=$(cpu_ticks "$pid"); n1=$(cpu_ns "$pid"); b1=$(stat -c %s "$W/ts")
echo "idle: CPU $(awk -v n=$((n1 - n0)) -v s="$SECS" 'BEGIN{printf "%.3f", 100*n/1e9/s}')% of a core (the scheduler's" \
	"count, every thread; $((c1 - c0)) clock ticks of 1/$hz s), terminal $(( (b1 - b0) / SECS )) bytes/s"
fk post /fake/churn "{\"rate\":$CHURN}" >/dev/null
sleep 2
: >"$W/churn.runs"
for r in $(seq "$RUNS"); do
	r0=$(rv); c0=$(cpu_ticks "$pid"); b0=$(stat -c %s "$W/ts"); t0=$(now_ms)
	sleep "$SECS"
	r1=$(rv); c1=$(cpu_ticks "$pid"); b1=$(stat -c %s "$W/ts"); t1=$(now_ms)
	el=$((t1 - t0))
	cpu=$(awk -v c=$((c1 - c0)) -v h="$hz" -v e="$el" 'BEGIN{printf "%.1f", 100*c/h/(e/1000)}')
	echo "$cpu" >>"$W/churn.runs"
	echo "churn, window $r of $RUNS: $(( (r1 - r0) * 1000 / el )) writes/s reached; kvcon CPU $cpu% of a core;" \
		"terminal $(( (b1 - b0) * 1000 / el )) bytes/s (load average $(cut -d' ' -f1 /proc/loadavg))"
done
fk post /fake/churn '{"rate":0}' >/dev/null
echo "churn: kvcon CPU median $(median <"$W/churn.runs")%, worst $(sort -n "$W/churn.runs" | tail -1)% of a core over" \
	"$RUNS windows of ${SECS}s"
echo "kvcon RSS: $(awk '/VmRSS/{print $2, $3}' /proc/$pid/status)"
stop_measured
$T kill-server 2>/dev/null

# The dashboard alone at exactly CHURN status changes/s: the unit-test binary's in-process feeder (the same
# dashboard code, no network, no JSON) changes CHURN VMs a second (each with its VMI and pod) in the store, a batch
# every SOURCES_WATCH_BATCH_MS (100 ms) as the dashboard's watches deliver them (UI_BENCH_EVERY=MS another cadence:
# 5 is the event-by-event stream of the builds before watch batching). RUNS rounds, each with an empty lineage history of its own
# (XDG_STATE_HOME): the median and the worst are printed. UI_BENCH_FEEDER runs another build's feeder (a
# before/after comparison).
feeder="${UI_BENCH_FEEDER:-$ROOT/build/tests/test_ui}"
if [ -x "$feeder" ]; then
	cpus=""
	for r in $(seq "$RUNS"); do
		rm -rf "$W/pid" "$W/ts" "$W/state"
		mkdir -p "$W/state"
		$T new-session -d -x 120 -y 40 -s f -e TERM=xterm-256color \
			"script -qfc 'echo \$\$ > $W/pid; exec env XDG_STATE_HOME=$W/state KVCON_LOG=$W/feeder.log $feeder --dashboard $VMS --churn $CHURN ${UI_BENCH_EVERY:+--churn-every $UI_BENCH_EVERY}' $W/ts"
		for _ in $(seq 300); do [ -s "$W/pid" ] && $T capture-pane -p -t f | grep -q 'VirtualMachines(all)\[' && break; sleep 0.1; done
		pid=$(cat "$W/pid")
		sleep 2
		c0=$(cpu_ticks "$pid"); b0=$(stat -c %s "$W/ts"); t0=$(now_ms)
		sleep "$SECS"
		c1=$(cpu_ticks "$pid"); b1=$(stat -c %s "$W/ts"); t1=$(now_ms)
		el=$((t1 - t0))
		cpu=$(awk -v c=$((c1 - c0)) -v h="$hz" -v e="$el" 'BEGIN{printf "%.1f", 100*c/h/(e/1000)}')
		cpus="$cpus $cpu"
		echo "dashboard alone (in-process feeder, $VMS VMs, $CHURN VM status changes/s), round $r: CPU $cpu% of a core; terminal $(( (b1 - b0) * 1000 / el )) bytes/s (load average $(cut -d' ' -f1 /proc/loadavg))"
		[ "$r" -lt "$RUNS" ] || break
		stop_measured
		$T kill-server 2>/dev/null
		sleep 0.5
	done
	echo "dashboard alone: median $(echo $cpus | tr ' ' '\n' | median)%, worst $(echo $cpus | tr ' ' '\n' | sort -n | tail -1)% of a core over $RUNS rounds"
	# the same with a text filter typed (/vm-01: a tenth of the rows match and change)
	$T send-keys -t f "/vm-01" Enter
	for _ in $(seq 100); do $T capture-pane -p -t f | grep -q "</vm-01>" && break; sleep 0.1; done
	sleep 2
	c0=$(cpu_ticks "$pid"); b0=$(stat -c %s "$W/ts"); t0=$(now_ms)
	sleep "$SECS"
	c1=$(cpu_ticks "$pid"); b1=$(stat -c %s "$W/ts"); t1=$(now_ms)
	el=$((t1 - t0))
	stop_measured
	echo "dashboard alone with the text filter /vm-01: CPU $(awk -v c=$((c1 - c0)) -v h="$hz" -v e="$el" 'BEGIN{printf "%.1f", 100*c/h/(e/1000)}')% of a core; terminal $(( (b1 - b0) * 1000 / el )) bytes/s"
fi
