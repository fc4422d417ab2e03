#!/bin/bash
# e2e-lane: cluster
# Frame pacing: with 10,000 VMs changing at 1,000 a second the dashboard draws at most ~30 frames a second; with
# 30 VMs, every one of them on the screen, changing as fast, at most ~10 (SCREEN_STORE_FPS: the cluster's changes
# alone); with nothing changing about one a second (the ages). Upper bounds only (they hold however slow the
# machine is); the frame count comes from kvcon's log at exit. Uses the unit-test binary's in-process feeder (no
# cluster).
. "$(dirname "$0")/ui_lib.inc"
FEEDER="${KVCON_BUILD:-$ROOT/build}/tests/test_ui"
[ -x "$FEEDER" ] || { echo "build/tests/test_ui not built (make unit)"; exit 77; }

run_feeder() { # SECONDS CHURN [VMS] -> frames drawn
	local secs=$1 churn=$2 vms=${3:-10000}
	: >"$W/feeder.log"
	$T kill-session -t f 2>/dev/null
	$T has-session -t keep 2>/dev/null || $T new-session -d -s keep "sleep 600"
	$T new-session -d -x 120 -y 40 -s f -e TERM=xterm-256color \
		"env KVCON_LOG=$W/feeder.log $FEEDER --dashboard $vms --churn $churn; echo FEEDER_EXIT=\$? > $W/fexit; sleep 600"
	local deadline=$((SECONDS + 20))
	until $T capture-pane -p -t f | grep -q "VirtualMachines(all)\\[$vms\\]"; do
		[ $SECONDS -lt $deadline ] || fail "feeder did not show $vms VMs"
		sleep 0.1
	done
	local start=$(date +%s%N)
	sleep "$secs"
	$T send-keys -t f C-c
	deadline=$((SECONDS + 10))
	until grep -q 'frames drawn' "$W/feeder.log"; do
		[ $SECONDS -lt $deadline ] || fail "no frame count in the log"
		sleep 0.1
	done
	local el_ms=$((($(date +%s%N) - start) / 1000000))
	local frames=$(grep -o '[0-9]* frames drawn' "$W/feeder.log" | awk '{print $1}')
	echo "$frames $el_ms"
}

read -r frames ms < <(run_feeder 4 1000)
# the whole run (start-up included, ~1 s of it) at 30 frames/s at most, plus the first frame
max=$(( (ms + 2000) * 30 / 1000 + 2 ))
echo "churn 1000/s: $frames frames in ~${ms} ms (bound $max)"
[ "$frames" -gt 0 ] && [ "$frames" -le "$max" ] || fail "churn: $frames frames, more than $max"
read -r frames ms < <(run_feeder 4 1000 30)
# every row on the screen changes several times a frame: the cluster's pace (10 frames/s), the 1 s tick, a burst
max=$(( (ms + 2000) * 11 / 1000 + 4 ))
echo "churn 1000/s, 30 VMs on the screen: $frames frames in ~${ms} ms (bound $max)"
[ "$frames" -gt 0 ] && [ "$frames" -le "$max" ] || fail "churn on the screen: $frames frames, more than $max"
read -r frames ms < <(run_feeder 4 0)
# idle: the 1 s tick, the first paint and a few start-up frames
max=$(( (ms + 2000) / 1000 + 6 ))
echo "idle: $frames frames in ~${ms} ms (bound $max)"
[ "$frames" -le "$max" ] || fail "idle: $frames frames, more than $max"
echo "PASS ui_pacing"
