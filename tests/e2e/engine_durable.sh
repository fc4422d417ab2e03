#!/bin/bash
# The engine's durable intent (docs/ENGINE-SERVICE.md, "Durable intent"), the cases the issue measured:
# kvcon reaches the engine only through its service (started on demand): the process that holds the engine and
# is killed here is that service; the next command starts another, which resumes what was accepted.
#   - `engine stop --grace-period 5`, the service killed -9 after 1.5 s: the next service finishes the stop
#     within the 5 s (not the default, not 80 s), the VM Stopped;
#   - a SIGTERM'd service during `engine delete`: the VM does not come back, it is deleted by the next service;
#   - a full disk (a small tmpfs under the records): `engine apply` fails with exit 1, nothing printed as
#     created, the previous record byte for byte intact, a new VM not listed;
#   - a corrupt record (found by a service starting): `engine get` and `get` name the file on stderr, the
#     service's status (its KubeVirt CR's Degraded condition) names it, a RecordUnreadable row; its QEMU keeps
#     running (not killed, not forgotten), apply over it is refused; the dashboard's header names it, and no
#     longer once the file is moved away; moved away, the next apply adopts the QEMU;
#   - a pause stored but not yet sent (the record edited as a kill would leave it) is done by the next process;
#   - records are per embedded root: another root with the same state directory sees none of them.
# Then Always holds on a QEMU kill (new VMI UID, Running; polled, the timing is tests/bench/engine_always.sh's).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/engine-lib.bash"

engine_embed_up kvdur
MNT=""
DASH_CLEAN=""
cleanup() {
    [[ -z $DASH_CLEAN ]] || tmux -L "kvdur-$$" kill-server 2>/dev/null || true
    [[ -z $MNT ]] || umount "$MNT" 2>/dev/null || true
    engine_embed_cleanup
}
trap cleanup EXIT
# the engine service of this test's root (started on demand by the first command)
svc_pid() { cat "$XDG_STATE_HOME"/kvcon/engine-*.sock.pid 2>/dev/null; }
svc_sock() { ls "$XDG_STATE_HOME"/kvcon/engine-*.sock; }
recdir() { dirname "$(ls "$XDG_STATE_HOME"/kvcon/engine-data/hosts/*/vms/default_"$1".json)"; }
pid_of() { rec_exec "$1" pid; }

step "stop --grace-period 5, the service killed -9 after 1.5 s: the next service keeps the grace period"
kv engine apply -f "$(manifest gs Always)" >/dev/null
wait_eq 60 Running vmi_phase gs
spid=$(svc_pid)
[[ $spid -gt 0 ]] || fail "no engine service started on demand"
"$KV" -c "$URI" engine stop gs --grace-period 5 >/dev/null 2>&1 &
bg=$!
wait_eq 10 true bash -c "jq -r '.stopping' $(recdir gs)/default_gs.json"
sleep 1.5 # the moment the issue measured: the guest has not stopped yet
kill -9 "$spid"
kill -9 $bg # the client would wait for its service to come back
wait $bg 2>/dev/null || true
wait_eq 10 gone pid_gone "$spid" || fail "the service outlived kill -9"
[[ $(record gs | jq -r .stopping) == true ]] || fail "the stop intent is not in the record: $(record gs)"
t0=$(date +%s%N)
timeout 60 "$KV" -c "$URI" engine reconcile >/dev/null || fail "reconcile"
ms=$((($(date +%s%N) - t0) / 1000000))
echo "reconcile finished the stop in $ms ms"
((ms < 9000)) || fail "reconcile took $ms ms (grace period 5 s lost)"
[[ $(vm_field gs status) == Stopped && $(qemu_count gs) == 0 ]] || fail "gs not stopped: $(vm_json gs)"
[[ $(svc_pid) != "$spid" ]] || fail "no new service"

step "SIGTERM'd service during delete: the VM does not come back"
kv engine start gs >/dev/null
wait_eq 60 Running vmi_phase gs
spid=$(svc_pid)
"$KV" -c "$URI" engine delete gs --grace-period 3 >/dev/null 2>&1 &
bg=$!
wait_eq 10 true bash -c "jq -r '.deleting' $(recdir gs)/default_gs.json"
kill -TERM "$spid"
kill -9 $bg
wait $bg 2>/dev/null || true
wait_eq 20 gone pid_gone "$spid"
timeout 60 "$KV" -c "$URI" engine reconcile >/dev/null || fail "reconcile"
[[ $(vm_json gs) == '{}' && $(qemu_count gs) == 0 ]] || fail "gs came back: $(vm_json gs)"
[[ ! -e $(dirname "$(ls -d "$XDG_STATE_HOME"/kvcon/engine-data/hosts/*/vms)")/vms/default_gs.json ]] ||
    fail "gs's record stayed"

step "disk full: apply fails (exit 1), the previous record intact"
kv engine apply -f "$(manifest full Halted)" >/dev/null
dir=$(recdir full)
cp "$dir/default_full.json" "$ENGINE_T/full.before"
# the records directory on a small tmpfs, filled up
MNT=$dir
mount -t tmpfs -o size=64k tmpfs "$MNT"
cp "$ENGINE_T/full.before" "$MNT/default_full.json"
dd if=/dev/zero of="$MNT/filler" bs=4k 2>/dev/null || true
sed 's/guest: 192Mi/guest: 256Mi/' "$ENGINE_T/full-Halted.yaml" >"$ENGINE_T/full2.yaml"
rc=0
out=$(kv engine apply -f "$ENGINE_T/full2.yaml" 2>"$ENGINE_T/full.err") || rc=$?
cat "$ENGINE_T/full.err"
[[ $rc == 1 ]] || fail "apply on a full disk: exit $rc (want 1), said '$out'"
[[ -z $out ]] || fail "apply on a full disk printed '$out'"
grep -q "default_full.json: No space left on device" "$ENGINE_T/full.err" || fail "no ENOSPC reason on stderr"
cmp "$ENGINE_T/full.before" "$MNT/default_full.json" || fail "the previous record changed"
rc=0
kv engine apply -f "$(manifest newvm Always)" >/dev/null 2>&1 || rc=$?
[[ $rc == 1 ]] || fail "apply of a new VM on a full disk: exit $rc"
[[ $(vm_json newvm) == '{}' && $(qemu_count newvm) == 0 ]] || fail "newvm exists after a failed apply"
[[ $(vm_field full memory) != 256Mi ]] || true
rm -f "$MNT/filler"
kv engine apply -f "$ENGINE_T/full2.yaml" | grep -q configured || fail "apply after space came back"
cp "$MNT/default_full.json" "$ENGINE_T/full.after"
umount "$MNT"
MNT=""
cp "$ENGINE_T/full.after" "$dir/default_full.json"
kv engine delete full >/dev/null

step "corrupt record: reported by file name, its QEMU left running, apply refused until it is moved away"
kv engine apply -f "$(manifest bad Always)" >/dev/null
wait_eq 60 Running vmi_phase bad
pid=$(pid_of bad)
[[ $pid -gt 0 ]] || fail "no pid for bad"
f=$(recdir bad)/default_bad.json
# the record broken while no service runs (a crash mid-write, a bad disk): the next service finds it
svc_stop_all "$ENGINE_T"
[[ -z $(svc_pid) ]] || fail "the service did not stop"
echo '{"apiVersion": "engine.kvcon.dev/v1", "kind": "EngineVirtual' >"$f"
cp "$f" "$ENGINE_T/bad.json"
rc=0
kv engine get vm >"$ENGINE_T/get.out" 2>"$ENGINE_T/get.err" || rc=$?
cat "$ENGINE_T/get.out" "$ENGINE_T/get.err"
grep -q "^warning: .*default_bad.json" "$ENGINE_T/get.err" || fail "get does not name the unreadable record on stderr"
grep -E "^bad .*RecordUnreadable" "$ENGINE_T/get.out" || fail "get shows no RecordUnreadable row"
rc=0
"$KV" -c "$URI" get vm >"$ENGINE_T/kget.out" 2>"$ENGINE_T/kget.err" || rc=$?
cat "$ENGINE_T/kget.out" "$ENGINE_T/kget.err"
# -c URI is the engine as the context (core/connect.h): get says what engine get says
grep -q "^warning: .*default_bad.json" "$ENGINE_T/kget.err" && grep -qE "^bad .*RecordUnreadable" "$ENGINE_T/kget.out" ||
    fail "kvcon -c URI get does not name the unreadable record"
grep -E "^bad .*RecordUnreadable" "$ENGINE_T/kget.out" || fail "kvcon get shows no RecordUnreadable row"
# the service's own status: its KubeVirt CR (virt-operator's Degraded condition) and the node's RecordsReadable
curl -sf --unix-socket "$(svc_sock)" http://engine/apis/kubevirt.io/v1/namespaces/kubevirt/kubevirts/kubevirt >"$ENGINE_T/kv.json" ||
    fail "the KubeVirt CR"
jq -e '.status.conditions[] | select(.type == "Degraded" and .status == "True" and .reason == "RecordUnreadable")
    | .message | contains("default_bad.json")' "$ENGINE_T/kv.json" >/dev/null || fail "the CR is not Degraded: $(cat "$ENGINE_T/kv.json")"
timeout 60 "$KV" -c "$URI" engine reconcile --for 2 >/dev/null 2>&1 || fail "reconcile"
kill -0 "$pid" || fail "the QEMU of the unreadable record was killed"
cmp "$f" "$ENGINE_T/bad.json" || fail "the unreadable record was overwritten"
rc=0
kv engine apply -f "$ENGINE_T/bad-Always.yaml" 2>"$ENGINE_T/apply.err" || rc=$?
[[ $rc == 1 ]] && grep -q default_bad.json "$ENGINE_T/apply.err" || fail "apply over an unreadable record: exit $rc"
# the dashboard on the same service: its header names the record, and drops it once the file is gone (it reads
# the service's notices again every 10 s, as the service syncs the host)
TM="tmux -L kvdur-$$ -f /dev/null"
DASH_CLEAN=1
$TM new-session -d -x 220 -y 30 -s d "env TERM=xterm-256color KVCON_LOG=$ENGINE_T/dash.log '$KV' -c '$URI'; sleep 600"
dash_has() { $TM capture-pane -p -t d | head -5 | grep -q -- "$1"; }
wait_dash() { # wait_dash SECONDS yes|no TEXT: polls the dashboard's header until it shows TEXT (yes) or not (no)
    local until=$(($(date +%s) + $1))
    while (($(date +%s) < until)); do
        if dash_has "$3"; then [[ $2 == yes ]] && return 0; else [[ $2 == no ]] && return 0; fi
        sleep 0.2
    done
    $TM capture-pane -p -t d | head -5
    return 1
}
wait_dash 60 yes "1 unreadable VM record" || fail "the dashboard's header does not name the unreadable record"
dash_has "default_bad.json" || fail "the header's notice does not name the file"
mv "$f" "$ENGINE_T/bad.moved"
# the running service notices the file is gone at its next sync of the host (every 10 s): the row goes
wait_eq 30 "" vm_field bad status || fail "the unreadable row stayed after its file was moved away"
wait_dash 30 no "unreadable VM record" || fail "the dashboard's header still names the record moved away"
$TM kill-server 2>/dev/null || true
DASH_CLEAN=""
kv engine apply -f "$ENGINE_T/bad-Always.yaml" >/dev/null || fail "apply after the record was moved away"
wait_eq 60 Running vmi_phase bad
[[ $(pid_of bad) == "$pid" && $(qemu_count bad) == 1 ]] || fail "the running QEMU was not adopted"
curl -sf --unix-socket "$(svc_sock)" http://engine/apis/kubevirt.io/v1/namespaces/kubevirt/kubevirts/kubevirt |
    jq -e '.status.conditions[] | select(.type == "Degraded") | .status == "False"' >/dev/null ||
    fail "the service is still degraded after the record was replaced"
[[ $(kv engine get vm -o name 2>&1 | grep -c bad) == 1 ]] || fail "bad listed twice (the unreadable row stayed)"

step "Always after a QEMU kill: a new execution (new VMI UID), Running, with only the service running"
u1=$(vmi_uid bad)
kill -9 "$pid"
until=$(($(date +%s) + 30))
while [[ $(rec_exec bad uid) == "$u1" || $(rec_exec bad phase) != Running ]] && (($(date +%s) < until)); do
    sleep 0.1
done
[[ $(vmi_uid bad) != "$u1" && $(vmi_phase bad) == Running && $(qemu_count bad) == 1 ]] ||
    fail "no new execution after the kill: $(vmi_json bad)"

step "a stored pause (the kill between the record and libvirt's suspend) is carried out by the next service"
f=$(recdir bad)/default_bad.json
svc_stop_all "$ENGINE_T" # the record edited as a kill -9 of the service would leave it, with none running
jq '.pauseRequest = 1' "$f" >"$f.new" && mv "$f.new" "$f"
timeout 60 "$KV" -c "$URI" engine reconcile >/dev/null 2>&1 || fail "reconcile"
[[ $(vm_field bad status) == Paused ]] || fail "the stored pause was not carried out: $(vm_json bad)"
[[ $(record bad | jq -r '.pauseRequest') == 0 ]] || fail "the pause request stayed in the record"
svc_stop_all "$ENGINE_T"
jq '.pauseRequest = 2' "$f" >"$f.new" && mv "$f.new" "$f"
timeout 60 "$KV" -c "$URI" engine reconcile >/dev/null 2>&1 || fail "reconcile"
[[ $(vm_field bad status) == Running ]] || fail "the stored unpause was not carried out: $(vm_json bad)"

step "records are per embedded root: another root with the same state sees none of them"
OTHER=$ENGINE_T/other
"$ROOT/scripts/embed-warm.sh" "$OTHER" >/dev/null
out=$("$KV" -c "qemu:///embed?root=$OTHER" engine get vm -o name 2>/dev/null)
[[ -z $out ]] || fail "the other root lists: $out"
n=0
for p in /proc/[0-9]*; do
    # the other root's own service names it too: only a QEMU counts
    { tr '\0' ' ' <"$p/cmdline"; } 2>/dev/null | grep -v ' engine serve ' | grep -q -- "$OTHER" && n=$((n + 1))
done
[[ $n == 0 ]] || fail "$n QEMU started in the other root"
[[ $(qemu_count bad) == 1 ]] || fail "bad no longer runs in its own root"

step "records of the earlier layout (hosts/HOSTNAME/vms) move to their root"
d=$(recdir bad)
old=$XDG_STATE_HOME/kvcon/engine-data/hosts/$(hostname)/vms
mkdir -p "$old"
svc_stop_all "$ENGINE_T" # moved as an upgrade finds it: before a service starts
mv "$d/default_bad.json" "$old/"
[[ $(kv engine get vm bad -o name) == */bad ]] || fail "the old layout's record was not taken"
[[ -f $d/default_bad.json && ! -e $old/default_bad.json ]] || fail "the record was not moved"
[[ $(qemu_count bad) == 1 ]] || fail "bad's QEMU changed while its record moved"
echo PASS
