#!/bin/bash
# e2e-lane: cluster
# kvcon start/stop/restart/pause/unpause/migrate against fakekube, and the lineage they leave: start then
# stop+start gives two executions with distinct VMI UIDs (the first "stopped"), a migration keeps the VMI UID
# with a new launcher on a new node, a restart ends an execution "restarted"; every kvcon process adds to the
# same on-disk history. API errors (409) come back with the server's message; --readonly sends nothing.
# Exit 0 pass, 77 skip, anything else fail.
set -u
# shellcheck source=tests/e2e/lib/fakekube.bash
. "$(dirname "$0")/lib/fakekube.bash"

fk_start --vms 12 --namespaces 1 --seed 3 --step 0.05
export XDG_STATE_HOME="$tmp/state"

kv() { timeout 150 "$KVCON" "$@" >"$tmp/out" 2>"$tmp/err"; }
# the server's VMI of VM as "uid node", or "none"
vmi_of() {
	fkctl state virtualmachineinstances | "$PY" -c '
import json, sys
ns, name = sys.argv[1].split("/")
for v in json.load(sys.stdin)["virtualmachineinstances"]:
    if v["metadata"]["namespace"] == ns and v["metadata"]["name"] == name:
        print(v["metadata"]["uid"], v["status"].get("nodeName", "-")); break
else:
    print("none")' "$1"
}
# lineage -o json checked by a Python expression over `ex` (the list of executions)
lineage_check() {
	kv lineage "$vm" -o json || { cat "$tmp/err"; fail "lineage $vm"; }
	"$PY" - "$tmp/out" "$1" "${2:-}" "${3:-}" <<'EOF' || { cat "$tmp/out"; fail "lineage check: $1"; }
import json, sys
ex = json.load(open(sys.argv[1]))
a, b = sys.argv[3], sys.argv[4]
assert eval(sys.argv[2]), sys.argv[2]
EOF
}

vm=$(fkctl state virtualmachines | "$PY" -c '
import json, sys
for v in json.load(sys.stdin)["virtualmachines"]:
    if v["spec"].get("runStrategy") == "Halted":
        print("%s/%s" % (v["metadata"]["namespace"], v["metadata"]["name"])); break')
[ -n "$vm" ] || fail "no halted VM generated"

# halted: nothing expected, no history yet
kv diagnose "$vm" || fail "diagnose halted: exit $?"
grep -q 'not expected' "$tmp/out" || fail "halted VM not 'not expected'"

# start, wait until Running
kv start "$vm" --wait || { cat "$tmp/err"; fail "start --wait"; }
grep -q 'start requested' "$tmp/out" || fail "start output"
read -r uid1 node1 < <(vmi_of "$vm")
[ "$uid1" != none ] || fail "no VMI after start"
kv diagnose "$vm"; rc=$?
[ $rc -eq 0 ] || [ $rc -eq 3 ] || fail "diagnose after start: exit $rc"
lineage_check 'len(ex) == 1 and ex[0]["vmiUid"] == a and ex[0]["how"] == "running" and ex[0]["launchers"]' "$uid1"

# a second start is refused by the API with its own message (409)
kv start "$vm"; rc=$?
[ $rc -eq 1 ] || fail "start of a running VM: exit $rc"
grep -q 'already running' "$tmp/err" || { cat "$tmp/err"; fail "409 message not shown"; }

# stop + start: a new execution with a new VMI UID, the first ended "stopped"
kv stop "$vm" --wait || { cat "$tmp/err"; fail "stop --wait"; }
[ "$(vmi_of "$vm")" = none ] || fail "VMI still there after stop --wait"
kv start "$vm" --wait || { cat "$tmp/err"; fail "second start"; }
read -r uid2 node2 < <(vmi_of "$vm")
[ "$uid2" != "$uid1" ] || fail "stop+start kept the VMI UID"
lineage_check 'len(ex) == 2 and ex[0]["vmiUid"] == a and ex[0]["how"] == "stopped" and ex[0]["end"] and ex[1]["vmiUid"] == b and ex[1]["how"] == "running"' "$uid1" "$uid2"
kv lineage "$vm" || fail "lineage text"
grep -q "$uid1.* stopped " "$tmp/out" && grep -q "$uid2.* running " "$tmp/out" || { cat "$tmp/out"; fail "lineage text rows"; }

# migrate: the same execution, a second launcher on another node
kv migrate "$vm" --wait || { cat "$tmp/out" "$tmp/err"; fail "migrate --wait"; }
read -r uid3 node3 < <(vmi_of "$vm")
[ "$uid3" = "$uid2" ] || fail "migration changed the VMI UID"
[ "$node3" != "$node2" ] || fail "migration did not change the node"
lineage_check 'len(ex) == 2 and ex[1]["vmiUid"] == a and ex[1]["migrations"] == 1 and len(ex[1]["launchers"]) == 2 and ex[1]["launchers"][0]["node"] != ex[1]["launchers"][1]["node"] and ex[1]["launchers"][0]["migrated"] and ex[1]["launchers"][1]["node"] == b' "$uid2" "$node3"

# restart: the execution ends "restarted", a new one runs
kv restart "$vm" --wait || { cat "$tmp/err"; fail "restart --wait"; }
read -r uid4 _ < <(vmi_of "$vm")
[ "$uid4" != "$uid2" ] || fail "restart kept the VMI UID"
lineage_check 'len(ex) == 3 and ex[1]["how"] == "restarted" and ex[2]["vmiUid"] == a and ex[2]["how"] == "running"' "$uid4"

# pause: intentionally not running, exit 0; unpause
kv pause "$vm" --wait || { cat "$tmp/err"; fail "pause --wait"; }
kv diagnose "$vm" || { cat "$tmp/out"; fail "diagnose paused: exit $?"; }
grep -q '\[guest-paused\]' "$tmp/out" || fail "paused rule"
kv unpause "$vm" --wait || { cat "$tmp/err"; fail "unpause --wait"; }

# --readonly: refused before any request; the server counts no mutating call
fkctl post /fake/requests/reset >/dev/null
for a in stop restart pause migrate start; do
	kv --readonly "$a" "$vm"; rc=$?
	[ $rc -eq 1 ] || fail "--readonly $a: exit $rc"
	grep -q 'read-only' "$tmp/err" || fail "--readonly $a: message"
done
fkctl get /fake/requests | "$PY" -c 'import json,sys; n=json.load(sys.stdin)["mutating"]; sys.exit(n != 0)' ||
	fail "--readonly sent mutating requests"

# the history is on disk, in the context's file
grep -q "\"name\": *\"${vm#*/}\"" "$XDG_STATE_HOME/kvcon/lineage/fake.jsonl" || fail "lineage file missing"
echo "PASS"
