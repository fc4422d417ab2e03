#!/bin/bash
# e2e-lane: cluster
# Convergence under churn and faults: fakekube churns (CONVERGE_CHURN events/s, default 200) with a fault rate
# of CONVERGE_FAULTS (default 0.05: dropped streams mid-chunk, 410, 429, 500) while four `kvcon get KIND -A -o summary
# --watch-for W` run; churn is paused and the simulator settled well before their windows end; each printed
# store must equal the server's final state exactly. CONVERGE_SECONDS (W, default 24) and CONVERGE_RUNS
# (default 1) scale it up (make bench runs 60 s x 10). Each run starts a fresh fakekube.
# Exit 0 pass, 77 skip, anything else fail.
set -u
# shellcheck source=tests/e2e/lib/fakekube.bash
. "$(dirname "$0")/lib/fakekube.bash"
W=${CONVERGE_SECONDS:-24}
RUNS=${CONVERGE_RUNS:-1}
CHURN=${CONVERGE_CHURN:-200}
FAULTS=${CONVERGE_FAULTS:-0.05}
VMS=${CONVERGE_VMS:-400}
[ "$W" -ge 16 ] || { echo "CONVERGE_SECONDS must be at least 16"; exit 2; }

passed=0
TAIL=$(( W / 4 > 12 ? W / 4 : 12 ))
for run in $(seq 1 "$RUNS"); do
	# a fresh cluster per run, so runs are independent (Events would otherwise pile up across runs)
	rm -rf "$tmp/fk"
	fk_start --vms "$VMS" --namespaces 4 --seed $((5 + run)) --step 0.1 --history 100000
	fkctl post /fake/faults "{\"rate\":$FAULTS,\"seed\":$((run * 7))}" >/dev/null || fail "faults"
	fkctl post /fake/churn "{\"rate\":$CHURN}" >/dev/null || fail "churn"
	fkctl post /fake/requests/reset >/dev/null
	kp=""
	rm -f "$tmp"/kvcon-*.log
	for k in vm vmi pod event; do
		"$KVCON" get $k -A -o summary --watch-for "$W" --log-file "$tmp/kvcon-$k.log" -v >"$tmp/$k.json" 2>"$tmp/$k.err" &
		kp="$kp $!"
	done
	pids="$pids $kp"
	# churn for most of the window, then stop it and let every lifecycle finish; the rest of the window is
	# for the watches to catch up (faults stay on)
	sleep $((W - TAIL))
	fkctl post /fake/pause-churn >/dev/null || fail "pause churn"
	fkctl settle 8 >/dev/null || fail "did not settle within 8 s"
	fkctl state >"$tmp/state.json"
	for p in $kp; do wait "$p" || { cat "$tmp"/*.err; fail "kvcon get exited non-zero (run $run)"; }; done
	fkctl state >"$tmp/state2.json"
	"$PY" -c 'import json,sys; a=json.load(open(sys.argv[1]))["resourceVersion"]; b=json.load(open(sys.argv[2]))["resourceVersion"]; sys.exit(a!=b)' \
		"$tmp/state.json" "$tmp/state2.json" || fail "server state moved after settle (run $run)"
	info=$(fkctl get /fake/requests)
	ok=1
	for k in vm vmi pod event; do
		"$PY" "$top/tests/e2e/get_compare.py" $k "$tmp/$k.json" "$tmp/state.json" || ok=0
	done
	echo "run $run: faults $(echo "$info" | "$PY" -c 'import json,sys; print(json.load(sys.stdin).get("faults"))'), relists $(grep -c 'relisting' "$tmp"/kvcon-*.log | awk -F: '{s+=$2} END {print s}')"
	if [ $ok -ne 1 ]; then
		for k in vm vmi pod event; do echo "--- $k log tail"; tail -n 4 "$tmp/kvcon-$k.log"; done
		fail "run $run: printed store differs from the server's final state"
	fi
	passed=$((passed + 1))
	kill $fkpid
	wait $fkpid 2>/dev/null
done
echo "PASS: get_converge ($passed/$RUNS runs, ${W}s windows, churn $CHURN/s, fault rate $FAULTS)"
