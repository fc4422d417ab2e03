#!/bin/bash
# The engine against a real, private libvirtd (tests/lab/libvirtd.sh), QEMU under TCG, through the engine service
# (started on demand, it holds the daemon's connection): the short run-strategy scenario (apply, boot marker
# through kvcon's console, Always restarts after a guest poweroff, stop/start UIDs, RerunOnFailure not restarted
# after a guest poweroff but restarted after `virsh destroy` simulating a crash, which the service sees through
# the daemon's lifecycle events); libvirtd killed and restarted under the service: it reconnects and resyncs, the
# execution survives, and its KubeVirt CR turns Degraded (HostNotReady) and back, each a watch event; a second
# service for the same host is refused (one engine process per host), naming the first.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/engine-lib.bash"

engine_needs "a private libvirtd in a mount namespace" libvirtd jq curl

ENGINE_T=$(mktemp -d /tmp/kvl.XXXXXX)
cleanup() {
    svc_stop_all "$ENGINE_T"
    "$ROOT/tests/lab/libvirtd.sh" down "$ENGINE_T/lv" >/dev/null 2>&1 || true
    [[ -n ${KEEP:-} ]] || rm -rf "$ENGINE_T"
}
trap cleanup EXIT
engine_setup
URI=$("$ROOT/tests/lab/libvirtd.sh" up "$ENGINE_T/lv")

crash_vm() { # virsh destroy behind kvcon's back while the service watches the daemon's events
    virsh -q -c "$URI" destroy "default_$1" >/dev/null
    local until=$(($(date +%s) + 60))
    while [[ $(rec_exec "$1" uid) == "$2" || $(rec_exec "$1" phase) != Running ]] && (($(date +%s) < until)); do
        sleep 0.2
    done
}

ENGINE_SHORT=1 engine_scenario

step "one engine process per host: a second service for the daemon's host is refused, naming the first"
rc=0
timeout 120 "$KV" -c "$URI" --log-file "$ENGINE_T/second.log" engine serve --socket "$ENGINE_T/second.sock" \
    >"$ENGINE_T/second.out" 2>&1 || rc=$?
cat "$ENGINE_T/second.out"
[[ $rc == 1 ]] || fail "a second service for $URI: exit $rc"
grep -q "managed by another kvcon engine process (pid [0-9]*, engine serve on /" "$ENGINE_T/second.out" ||
    fail "the refusal does not name the service that holds the host"
[[ ! -e $ENGINE_T/second.sock ]] || fail "the refused service left a socket"
kv engine get vm alpha >/dev/null || fail "the first service stopped answering"

step "a crash while no kvcon command runs: the service restarts it (Always)"
# stop + start: Halted, then Always with a clean failure count (two quick failures in a row would back off)
kv engine stop alpha --grace-period 0 >/dev/null || fail "stop"
kv engine start alpha >/dev/null || fail "start"
[[ $(vmi_phase alpha) == Running ]] || fail "alpha not running under Always"
u=$(vmi_uid alpha)
virsh -q -c "$URI" destroy default_alpha >/dev/null
restarted() { [[ $(vmi_phase alpha) == Running && $(vmi_uid alpha) != "$u" ]] && echo yes; }
wait_eq 60 yes restarted || fail "no restart after a crash while away"
out=$(kv engine get event alpha)
[[ $out == *"destroyed outside kvcon"* ]] || fail "the crash while away is not in the events: $out"

# one outage of the daemon for both sides of it: kvcon's connection (it reconnects and resyncs, the execution
# survives, lifecycle events flow again) and the service's KubeVirt CR (Degraded while away, a watch event each way)
step "libvirtd goes away and comes back: the CR is Degraded meanwhile, kvcon reconnects and resyncs; the guest and its execution survive"
kv engine apply -f "$(manifest alpha Always)" >/dev/null || fail "apply Always"
u=$(rec_exec alpha uid)
[[ $(rec_exec alpha phase) == Running ]] || fail "alpha not running before the daemon restart"
log=$XDG_STATE_HOME/kvcon/kvcon.log
conns() { grep -c "connected to $URI" "$log" || true; }
# the service the commands above started on demand (its socket beside the state: engine_setup)
socks=("$XDG_STATE_HOME"/kvcon/engine-*.sock)
[[ ${#socks[@]} == 1 && -S ${socks[0]} ]] || fail "not one engine service: ${socks[*]}"
SOCK=${socks[0]}
kvcr() { curl -sf --unix-socket "$SOCK" http://engine/apis/kubevirt.io/v1/namespaces/kubevirt/kubevirts/kubevirt; }
kvcond() { kvcr | jq -r --arg t "$1" '.status.conditions[] | select(.type == $t) | .status + " " + .reason'; }
wait_eq 30 "False AllComponentsReady" kvcond Degraded || fail "not healthy at the start: $(kvcr)"
[[ $(kvcr | jq -r '.status.phase + " " + .metadata.namespace + "/" + .metadata.name') == "Deployed kubevirt/kubevirt" ]] ||
    fail "the KubeVirt CR: $(kvcr)"
rv=$(kvcr | jq -r .metadata.resourceVersion)
curl -sN --max-time 150 --unix-socket "$SOCK" -o "$ENGINE_T/kvwatch.out" \
    "http://engine/apis/kubevirt.io/v1/kubevirts?watch=1&resourceVersion=$rv" &
wp=$!
before=$(conns)
kill -9 "$(cat "$ENGINE_T/lv/libvirtd.pid")"
wait_eq 30 1 sh -c "grep -c 'connection closed; reconnecting' '$log' | cut -c1" ||
    fail "kvcon did not notice the daemon going away"
wait_eq 30 "True HostNotReady" kvcond Degraded || fail "not Degraded without libvirtd: $(kvcr)"
[[ $(kvcond Available) == "False NoHostReady" ]] || fail "Available without a host: $(kvcond Available)"
host=$(kvcr | jq -r '.status.conditions[] | select(.type == "Degraded") | .message')
[[ $host == "host "*" is not ready: "* ]] || fail "the Degraded message: $host"
# a new libvirtd in the same mount namespace (virtlogd and QEMU live on there): it reattaches to the guest
vl=$(cat "$ENGINE_T/lv/virtlogd.pid")
nsenter -t "$vl" --mount --uts --root --wd -- \
    libvirtd -d -f /etc/libvirt/libvirtd.conf -p "$ENGINE_T/lv/libvirtd.pid"
wait_eq 60 $((before + 1)) conns || fail "kvcon did not reconnect"
[[ $(rec_exec alpha uid) == "$u" && $(rec_exec alpha phase) == Running ]] ||
    fail "the execution did not survive the daemon restart (uid $(rec_exec alpha uid), $(rec_exec alpha phase))"
wait_eq 90 "False AllComponentsReady" kvcond Degraded || fail "not healthy again after libvirtd's restart: $(kvcr)"
[[ $(kvcond Available) == "True AllComponentsReady" ]] || fail "not Available again"
# the watch's events (a GET can see the change before the watch's event has reached the file)
seen() {
    jq -r 'select(.object.kind == "KubeVirt") | .type + " " +
        (.object.status.conditions[] | select(.type == "Degraded") | .status)' "$ENGINE_T/kvwatch.out" 2>/dev/null |
        uniq | tr '\n' ,
}
wait_eq 30 "MODIFIED True,MODIFIED False," seen ||
    fail "the watch saw '$(seen)' (its curl $(kill -0 "$wp" 2>/dev/null && echo runs || echo ended)): $(cat "$ENGINE_T/kvwatch.out")"
kill "$wp" 2>/dev/null || true
wait "$wp" 2>/dev/null || true
# lifecycle events flow on the new connection: a destroy is seen at once and Always restarts
virsh -q -c "$URI" destroy default_alpha >/dev/null
until=$(($(date +%s) + 90))
while [[ $(rec_exec alpha uid) == "$u" || $(rec_exec alpha phase) != Running ]] && (($(date +%s) < until)); do
    sleep 0.2
done
[[ $(rec_exec alpha phase) == Running && $(rec_exec alpha uid) != "$u" ]] ||
    fail "no restart after the reconnect (phase $(rec_exec alpha phase))"
marker alpha
echo PASS
