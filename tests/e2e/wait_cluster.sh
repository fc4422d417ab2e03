#!/bin/bash
# e2e-lane: cluster
# kvcon wait against fakekube, side by side with the real kubectl wait: the same output and exit codes for a
# condition already met, a timeout (1, "error: timed out waiting for the condition on ..."), a missing object
# (NotFound, 1; --for=delete: 0 at once); and, while both are waiting on their watches, a change the test makes
# (pause -> condition=Paused, start -> jsonpath printableStatus=Running, stop -> --for=delete) ends both with 0,
# also when the watches are cut just before the change.
# Exit 0 pass, anything else fail.
set -u
# shellcheck source=tests/e2e/lib/fakekube.bash
. "$(dirname "$0")/lib/fakekube.bash"

command -v kubectl >/dev/null || fail "kubectl missing (the set-up installs it)"
fk_start --vms 6 --namespaces 1 --seed 3 --step 0.1
running=$(fkctl state virtualmachineinstances | "$PY" -c '
import json, sys
print(" ".join(v["metadata"]["name"] for v in json.load(sys.stdin)["virtualmachineinstances"] if v["status"].get("phase") == "Running"))')
set -- $running
[ $# -ge 3 ] || fail "fewer than 3 running VMs: $running"
v1=$1 v2=$2 v3=$3

# both ARGS...: kvcon wait and kubectl wait with the same arguments; same exit code, stdout and stderr
both() {
	local rk rc
	"$KVCON" wait "$@" >"$tmp/kv.out" 2>"$tmp/kv.err"; rk=$?
	kubectl wait "$@" >"$tmp/kc.out" 2>"$tmp/kc.err"; rc=$?
	[ $rk -eq $rc ] || fail "wait $*: kvcon exit $rk, kubectl $rc ($(cat "$tmp/kv.err"))"
	cmp -s "$tmp/kv.out" "$tmp/kc.out" || fail "wait $*: stdout '$(cat "$tmp/kv.out")' vs '$(cat "$tmp/kc.out")'"
	cmp -s "$tmp/kv.err" "$tmp/kc.err" || fail "wait $*: stderr '$(cat "$tmp/kv.err")' vs '$(cat "$tmp/kc.err")'"
	return $rk
}

# 1. already met, timeout, missing
both -n ns-00 vmi/$v1 --for=condition=Ready --timeout=5s || fail "Ready already true"
grep -qx "virtualmachineinstance.kubevirt.io/$v1 condition met" "$tmp/kv.out" || fail "met line"
both -n ns-00 vm/$v1 "--for=jsonpath={.status.printableStatus}=Running" --timeout=5s || fail "jsonpath already met"
t0=$(date +%s%N)
"$KVCON" wait vmi ns-00/$v1 --for=condition=Paused --timeout=2s >"$tmp/to.out" 2>"$tmp/to.err"; rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
[ $rc -eq 1 ] || fail "timeout must exit 1 (got $rc)"
grep -qx "error: timed out waiting for the condition on virtualmachineinstances/$v1" "$tmp/to.err" || fail "timeout message: $(cat "$tmp/to.err")"
[ $ms -ge 2000 ] && [ $ms -lt 8000 ] || fail "timeout 2s took $ms ms"
both -n ns-00 vmi/$v1 --for=condition=Paused --timeout=1s; [ $? -eq 1 ] || fail "timeout: both exit 1"
both -n ns-00 vmi/nothing-here --for=condition=Ready --timeout=1s; [ $? -eq 1 ] || fail "NotFound: exit 1"
grep -q 'Error from server (NotFound): virtualmachineinstances.kubevirt.io "nothing-here" not found' "$tmp/kv.err" || fail "NotFound message"
both -n ns-00 vmi/nothing-here --for=delete --timeout=1s || fail "delete of a missing object: exit 0"
"$KVCON" wait vmi ns-00/$v1 --for=bogus >/dev/null 2>&1; [ $? -eq 1 ] || fail "bad --for must exit 1"

# watches() the open watches on the fake cluster
watches() { fkctl get /fake/info | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["watches"])'; }
watches_eq() { [ "$(watches)" -eq "$1" ]; }
watches_ge() { [ "$(watches)" -ge "$1" ]; }
# race-free: start both waits, wait until both are on the server's watch, check they have not returned, then change
# the object; both must return 0 with "condition met"
waiting() { # DESC CHANGE-CMD -- WAIT-ARGS...
	local desc=$1 change=$2; shift 3
	local w0=0 kp cp
	# the watches of earlier commands end on the server when its next bookmark finds them gone
	poll 20 watches_eq 0 || fail "$desc: $(watches) watches still open before the wait"
	"$KVCON" wait "$@" --timeout=60s >"$tmp/kvw.out" 2>"$tmp/kvw.err" &
	kp=$!
	kubectl wait "$@" --timeout=60s >"$tmp/kcw.out" 2>"$tmp/kcw.err" &
	cp=$!
	pids="$pids $kp $cp"
	# kvcon's session: 4 reflectors + its own watch on the object; kubectl: 1
	poll 30 watches_ge $((w0 + 6)) || fail "$desc: the waits never reached their watches ($(watches) vs $w0)"
	kill -0 $kp 2>/dev/null || fail "$desc: kvcon wait returned before the change: $(cat "$tmp/kvw.out" "$tmp/kvw.err")"
	kill -0 $cp 2>/dev/null || fail "$desc: kubectl wait returned before the change"
	[ -s "$tmp/kvw.out" ] && fail "$desc: kvcon printed before the change"
	eval "$change" >/dev/null || fail "$desc: change"
	wait $kp; rk=$?
	wait $cp; rc=$?
	[ $rk -eq 0 ] || fail "$desc: kvcon exit $rk ($(cat "$tmp/kvw.err"))"
	[ $rc -eq 0 ] || fail "$desc: kubectl exit $rc ($(cat "$tmp/kcw.err"))"
	cmp -s "$tmp/kvw.out" "$tmp/kcw.out" || fail "$desc: '$(cat "$tmp/kvw.out")' vs kubectl '$(cat "$tmp/kcw.out")'"
}
# the watches are cut mid-event just before the change: the waits must watch again from where they were
waiting "condition comes" "fkctl post /fake/drop-watches && fkctl action ns-00 $v1 pause" -- -n ns-00 vmi/$v1 --for=condition=Paused
grep -qx "virtualmachineinstance.kubevirt.io/$v1 condition met" "$tmp/kvw.out" || fail "pause: met line"

fkctl action ns-00 $v2 stop '{"gracePeriod":0}' >/dev/null || fail "stop $v2"
fkctl settle 30 >/dev/null || fail "settle"
waiting "jsonpath comes" "fkctl action ns-00 $v2 start" -- -n ns-00 vm/$v2 "--for=jsonpath={.status.printableStatus}=Running"
grep -qx "virtualmachine.kubevirt.io/$v2 condition met" "$tmp/kvw.out" || fail "start: met line"

waiting "delete comes" "fkctl action ns-00 $v3 stop" -- -n ns-00 vmi/$v3 --for=delete
grep -qx "virtualmachineinstance.kubevirt.io/$v3 condition met" "$tmp/kvw.out" || fail "delete: met line"
echo PASS
