#!/bin/bash
# e2e-lane: cluster
# kvcon logs against fakekube's pods/log, side by side with the real kubectl logs on the same pods: the same
# bytes for the default (compute) and another container, --tail, --since, --timestamps-free output, --previous
# of a crash-looping launcher; VM and VMI names resolve to the current launcher; -f streams lines as they are
# appended and ends when the container instance restarts; --previous then shows the instance that ended;
# escape sequences in a log never reach the terminal raw; the kubelet's errors (image can't be pulled, no
# previous instance, unknown container) come through with exit 1.
# Exit 0 pass, anything else fail.
set -u
# shellcheck source=tests/e2e/lib/fakekube.bash
. "$(dirname "$0")/lib/fakekube.bash"

command -v kubectl >/dev/null || fail "kubectl missing (the set-up installs it)"
fk_start --vms 4 --namespaces 1 --seed 5 --scenario crashloop,imagepull,stuck-launcher --step 0.05
pod_of() { # NS VM: the VM's launcher pod name
	fkctl state pods | "$PY" -c '
import json, sys
for p in json.load(sys.stdin)["pods"]:
    md = p["metadata"]
    if md["namespace"] == sys.argv[1] and md.get("labels", {}).get("vm.kubevirt.io/name") == sys.argv[2]:
        print(md["name"]); break' "$1" "$2"
}
vm=web-00000
pod=$(pod_of ns-00 $vm)
[ -n "$pod" ] || fail "no launcher pod for $vm"
crash=$(pod_of default crashloop)
pull=$(pod_of default imagepull)

# 1. the same bytes as kubectl logs
same() { # DESC KVCON-ARGS -- KUBECTL-ARGS
	local desc=$1; shift
	local ka=() ca=()
	while [ "$1" != -- ]; do ka+=("$1"); shift; done
	shift
	ca=("$@")
	"$KVCON" logs "${ka[@]}" >"$tmp/kv.out" 2>"$tmp/kv.err" || { cat "$tmp/kv.err"; fail "$desc: kvcon logs ${ka[*]}"; }
	kubectl logs "${ca[@]}" >"$tmp/kc.out" 2>"$tmp/kc.err" || { cat "$tmp/kc.err"; fail "$desc: kubectl logs ${ca[*]}"; }
	[ -s "$tmp/kc.out" ] || fail "$desc: kubectl printed nothing"
	cmp -s "$tmp/kv.out" "$tmp/kc.out" || { diff "$tmp/kv.out" "$tmp/kc.out" | head; fail "$desc: output differs from kubectl"; }
}
same "VM name -> launcher, default container" ns-00/$vm -- -n ns-00 "$pod"
grep -q '"msg":"Marked as ready"' "$tmp/kv.out" || fail "compute log content"
same "pod name" -n ns-00 "$pod" -- -n ns-00 "$pod" -c compute
same "-c volumecontainerdisk" ns-00/$vm -c volumecontainerdisk -- -n ns-00 "$pod" -c volumecontainerdisk
same "--container=" ns-00/$vm --container=volumecontainerdisk -- -n ns-00 "$pod" -c volumecontainerdisk
same "--tail 3" ns-00/$vm --tail 3 -- -n ns-00 "$pod" --tail 3
[ "$(wc -l <"$tmp/kv.out")" -eq 3 ] || fail "--tail 3 gave $(wc -l <"$tmp/kv.out") lines"
same "--since 1h" ns-00/$vm --since 1h -- -n ns-00 "$pod" --since 1h
same "--previous of a crash loop" default/crashloop --previous -- -n default "$crash" --previous
grep -q 'dirty virt-launcher shutdown' "$tmp/kv.out" || fail "previous crashloop log content"
same "crash loop: current = the last terminated instance" default/crashloop -p --tail 1 -- -n default "$crash" -p --tail 1

# 2. errors as the kubelet says them, exit 1
"$KVCON" logs default/imagepull -c volumecontainerdisk >/dev/null 2>"$tmp/e1"; [ $? -eq 1 ] || fail "imagepull must exit 1"
grep -q "is waiting to start: image can't be pulled" "$tmp/e1" || fail "imagepull message: $(cat "$tmp/e1")"
kubectl logs -n default "$pull" -c volumecontainerdisk 2>&1 | grep -q "is waiting to start: image can't be pulled" ||
	fail "kubectl disagrees on the imagepull message"
"$KVCON" logs ns-00/$vm --previous >/dev/null 2>"$tmp/e2"; [ $? -eq 1 ] || fail "no previous must exit 1"
grep -q "previous terminated container \"compute\" in pod \"$pod\" not found" "$tmp/e2" || fail "previous message: $(cat "$tmp/e2")"
"$KVCON" logs ns-00/$vm -c nope >/dev/null 2>"$tmp/e3"; [ $? -eq 1 ] || fail "unknown container must exit 1"
grep -q "container nope is not valid for pod $pod" "$tmp/e3" || fail "container message: $(cat "$tmp/e3")"
"$KVCON" logs ns-00/nothing-here >/dev/null 2>"$tmp/e4"; [ $? -eq 1 ] || fail "unknown name must exit 1"
# a launcher not started yet: the container is the pod's default-container annotation's (compute), as kubectl's,
# and the answer is kubectl's words and exit status (not "a container name must be specified")
stuck=$(pod_of default stuck-launcher)
"$KVCON" logs default/stuck-launcher >/dev/null 2>"$tmp/e5"; r1=$?
kubectl logs -n default "$stuck" >/dev/null 2>"$tmp/k5"; r2=$?
[ $r1 -eq 1 ] && [ $r2 -eq 1 ] || fail "waiting launcher: kvcon exit $r1, kubectl exit $r2 (want 1)"
[ "$(sed 's/^error: //' "$tmp/e5")" = "$(sed 's/^Error from server (BadRequest): //' "$tmp/k5")" ] ||
	fail "waiting launcher: kvcon said '$(cat "$tmp/e5")', kubectl '$(cat "$tmp/k5")'"
grep -q "container \"compute\" in pod \"$stuck\" is waiting to start: ContainerCreating" "$tmp/e5" ||
	fail "waiting launcher message: $(cat "$tmp/e5")"

# 3. escape sequences are shown, never sent
fkctl post /fake/log "{\"namespace\":\"ns-00\",\"pod\":\"$pod\",\"container\":\"compute\",\"lines\":[\"evil \\u001b[2J\\u001b]0;pwned\\u0007 \\u009b31m end\"]}" >/dev/null ||
	fail "append"
"$KVCON" logs ns-00/$vm --tail 1 >"$tmp/esc.out" || fail "logs after evil line"
LC_ALL=C grep -q "$(printf '\033')" "$tmp/esc.out" && fail "raw ESC reached stdout"
LC_ALL=C grep -q "$(printf '\302\233')" "$tmp/esc.out" && fail "raw C1 CSI reached stdout"
LC_ALL=C grep -q "$(printf '\007')" "$tmp/esc.out" && fail "raw BEL reached stdout"
grep -qF 'evil \e[2J\e]0;pwned\x07 \xc2\x9b31m end' "$tmp/esc.out" || grep -qF 'evil \e[2J\e]0;pwned\x07' "$tmp/esc.out" ||
	fail "escaped line: $(cat "$tmp/esc.out")"

# 4. -f streams appended lines (kvcon and kubectl side by side) and ends with the container instance
fkctl post /fake/log "{\"namespace\":\"ns-00\",\"pod\":\"$pod\",\"container\":\"compute\",\"lines\":[\"follow start\"]}" >/dev/null
"$KVCON" logs ns-00/$vm -f --tail 1 >"$tmp/kvf.out" 2>"$tmp/kvf.err" &
kvf=$!
pids="$pids $kvf"
kubectl logs -n ns-00 "$pod" -f --tail 1 >"$tmp/kcf.out" 2>&1 &
kcf=$!
pids="$pids $kcf"
poll 20 test -s "$tmp/kvf.out" || fail "kvcon -f printed no first line"
poll 20 test -s "$tmp/kcf.out" || fail "kubectl -f printed no first line"
for n in 1 2 3; do
	fkctl post /fake/log "{\"namespace\":\"ns-00\",\"pod\":\"$pod\",\"container\":\"compute\",\"lines\":[\"follow line $n\"]}" >/dev/null
	poll 20 grep -q "^follow line $n$" "$tmp/kvf.out" || { cat "$tmp/kvf.out"; fail "kvcon -f did not stream line $n"; }
	poll 20 grep -q "^follow line $n$" "$tmp/kcf.out" || fail "kubectl -f did not stream line $n"
done
kill -0 $kvf 2>/dev/null || fail "kvcon -f ended early"
fkctl post /fake/restart-container "{\"namespace\":\"ns-00\",\"pod\":\"$pod\",\"container\":\"compute\"}" >/dev/null || fail "restart"
gone() { ! kill -0 "$1" 2>/dev/null; }
poll 20 gone $kvf || fail "kvcon -f did not end when the container restarted"
wait $kvf; rc=$?
[ $rc -eq 0 ] || { cat "$tmp/kvf.err"; fail "kvcon -f exit $rc"; }
poll 20 gone $kcf || fail "kubectl -f did not end either"
cmp -s "$tmp/kvf.out" "$tmp/kcf.out" || { diff "$tmp/kvf.out" "$tmp/kcf.out"; fail "-f output differs from kubectl"; }

# 5. --previous is now the instance that was followed
same "--previous after a restart" ns-00/$vm --previous --tail 3 -- -n ns-00 "$pod" --previous --tail 3
tail -1 "$tmp/kv.out" | grep -q '^follow line 3$' || fail "previous instance does not end with the followed lines"
"$KVCON" logs ns-00/$vm | grep -q 'follow line' && fail "the new instance shows the old lines"
echo "PASS"
