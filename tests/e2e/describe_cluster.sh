#!/bin/bash
# e2e-lane: cluster
# kvcon describe vm|vmi|pod against fakekube, side by side with the real kubectl describe on the same objects: the
# same text line for line (Name, Namespace, Labels, Annotations, API Version, Kind, Metadata, Spec, Status with
# its Conditions, Volumes, owner references, tabwriter alignment), the Events table in the same order (newest
# last) with only the Age column left out of the comparison (a second may pass between the two); a missing
# object gives kubectl's NotFound message and exit 1.
# Exit 0 pass, anything else fail.
set -u
# shellcheck source=tests/e2e/lib/fakekube.bash
. "$(dirname "$0")/lib/fakekube.bash"

command -v kubectl >/dev/null || fail "kubectl missing (the set-up installs it)"
fk_start --vms 3 --namespaces 1 --seed 7 --scenario crashloop,pvc-missing,imagepull,stuck-launcher --step 0.05
noage() { sed -E 's/^(  (Normal|Warning) +[^ ]+ +)[0-9a-z]+( \(x[0-9]+ over [0-9a-z]+\))? +/\1AGE /'; }
for obj in "vm ns-00 web-00000" "vmi ns-00 web-00000" "vm default crashloop" "vmi default crashloop" \
	"vmi default pvc-missing"; do
	set -- $obj
	"$KVCON" describe "$1" "$2/$3" >"$tmp/kv" 2>"$tmp/kv.err" || { cat "$tmp/kv.err"; fail "kvcon describe $obj"; }
	kubectl describe "$1" -n "$2" "$3" >"$tmp/kc" 2>&1 || fail "kubectl describe $obj"
	for f in "Name:  *$3" "Namespace:  *$2" "Labels:" "Annotations:" "API Version:  *kubevirt.io/v1" "Kind:" \
		"Metadata:" "  UID:" "Spec:" "Status:" "  Conditions:" "    Last Transition Time:" "    Type:" "Events:"; do
		grep -q "^$f" "$tmp/kv" || fail "$obj: no line '$f'"
	done
	diff <(noage <"$tmp/kv") <(noage <"$tmp/kc") >"$tmp/diff" || { cat "$tmp/diff"; fail "describe $obj differs from kubectl"; }
done
# pods: kubectl's own pod layout (node, start time, containers with state, last state, resources, conditions,
# QoS, node selectors, tolerations); events compared as a set (kubectl's order of events of the same second is
# not stable)
pods=$(fkctl names pods | grep -E '^(default|ns-00|kubevirt)/' | grep -E 'virt-launcher-(crashloop|imagepull|stuck-launcher|web-00000)-|virt-api-')
[ "$(echo "$pods" | wc -l)" -ge 5 ] || fail "pods to describe: $pods"
for p in $pods; do
	"$KVCON" describe pod "$p" >"$tmp/kv" 2>"$tmp/kv.err" || { cat "$tmp/kv.err"; fail "kvcon describe pod $p"; }
	kubectl describe pod -n "${p%%/*}" "${p#*/}" >"$tmp/kc" 2>&1 || fail "kubectl describe pod $p"
	for f in "Name:  *${p#*/}" "Status:" "Containers:" "Conditions:" "QoS Class:" "Tolerations:" "Events:"; do
		grep -q "^$f" "$tmp/kv" || fail "pod $p: no line '$f'"
	done
	diff <(sed '/^Events:/,$d' "$tmp/kv") <(sed '/^Events:/,$d' "$tmp/kc") >"$tmp/diff" || { cat "$tmp/diff"; fail "describe pod $p differs from kubectl"; }
	diff <(sed -n '/^Events:/,$p' "$tmp/kv" | noage | sort) <(sed -n '/^Events:/,$p' "$tmp/kc" | noage | sort) >"$tmp/diff" ||
		{ cat "$tmp/diff"; fail "describe pod $p: events differ from kubectl"; }
done
"$KVCON" describe pod "$(echo "$pods" | grep crashloop)" >"$tmp/kv"
grep -q '^    Last State:  *Terminated$' "$tmp/kv" && grep -q '^      Reason:  *CrashLoopBackOff$' "$tmp/kv" || fail "crashloop pod states"

# owner references, volumes and reasons/messages are in the compared text
"$KVCON" describe vmi default/pvc-missing >"$tmp/kv" || fail "describe pvc-missing"
grep -q '^    Kind:  *VirtualMachine$' "$tmp/kv" || fail "owner reference"
grep -q 'Claim Name:  *pvc-missing-rootdisk' "$tmp/kv" || fail "volume"
grep -q 'Reason:  *FailedPvcNotFound' "$tmp/kv" || fail "condition reason"
grep -q '^  Warning  FailedPvcNotFound' "$tmp/kv" || fail "warning event"
"$KVCON" describe vm ns-00/nothing-here >/dev/null 2>"$tmp/e"; [ $? -eq 1 ] || fail "missing: exit 1"
grep -qx 'Error from server (NotFound): virtualmachines.kubevirt.io "nothing-here" not found' "$tmp/e" || fail "NotFound: $(cat "$tmp/e")"
echo PASS
