#!/bin/bash
# A domain moved by `virsh migrate` behind kvcon's back (the two-host lab, both hosts the engine service's nodes):
# the record follows the domain to the host that runs it now instead of the execution being treated as gone. The
# same execution (VMI UID) goes on on the other node, it is not restarted on the old one (one QEMU of it on the
# machine), the event says where it was found, and the guest's shell state survives. Checked while the service
# runs (it sees the domain leave through libvirt's lifecycle event) and while no service runs (a new one finds
# the domain on the other host when it reads the records).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/migrate-lib.bash"
export KVCON_ENGINE_SERVICE=use # the test's own service only (it stops and starts it)
mig_service_setup TERM

srv_stop() { kill -TERM "$SRV" 2>/dev/null || true; wait "$SRV" 2>/dev/null || true; SRV=; }
vmi() { api http://engine/apis/kubevirt.io/v1/namespaces/default/virtualmachineinstances/vm1 | jq -r "$1"; }
# adopted HOST UID: the VMI (same UID) Running on HOST, its record there only, its domain running there only
adopted() {
    [[ $(vmi '.status.phase + " " + .status.nodeName + " " + .metadata.uid') == "Running $1 $2" ]] &&
        [[ $(rec_hosts vm1) == "$1" ]] && echo yes
}
# `virsh migrate` from the root namespace, as LAB.md: peer to peer, the target's address as the source reaches it
virsh_migrate() { virsh -q -c "$1" migrate --live --p2p --persistent --undefinesource default_vm1 "$2"; }

step "vm1 running on $HA (the service's first node), a shell variable set"
srv_up
kv engine apply -f "$(manifest vm1)"
wait_shell vm1
console vm1 'export KVMARK=adopt$((6*7)); echo mark=$KVMARK' 'mark=adopt42' || fail "variable not set"
uid=$(vmi .metadata.uid)
[[ $(vmi .status.nodeName) == "$HA" && ${#uid} == 36 ]] || fail "vm1 not on $HA: $(vmi .status)"

step "virsh migrate to $HB while the service runs: the record follows the domain"
virsh_migrate "$SRC_URI" "$DST_TCP_URI" || fail "virsh migrate"
wait_eq 60 yes adopted "$HB" "$uid" || fail "not adopted on $HB: VMI $(vmi -c .status), records on '$(rec_hosts vm1)'"
[[ $(dom_state "$DST_URI" vm1) == running ]] || fail "not running on $HB"
! virsh -q -c "$SRC_URI" dominfo default_vm1 >/dev/null 2>&1 || fail "defined again on $HA (restarted there?)"
[[ $(nqemu vm1) == 1 ]] || fail "$(nqemu vm1) QEMU of vm1"
api 'http://engine/api/v1/namespaces/default/events' >"$MT/events.json"
jq -e --arg h "$HB" '[.items[] | select(.reason == "Migrated" and (.message | test("found running on " + $h)))] | length >= 1' \
    "$MT/events.json" >/dev/null || fail "no Migrated event naming $HB: $(jq -c '[.items[] | [.reason, .message]]' "$MT/events.json")"
console vm1 'echo mark=$KVMARK' 'mark=adopt42' || fail "the guest's state is lost"
sleep 12 # past a periodic resync (10 s): nothing restarts it on $HA
[[ $(adopted "$HB" "$uid") == yes && $(nqemu vm1) == 1 ]] || fail "after a resync: VMI $(vmi -c .status), $(nqemu vm1) QEMU"

step "virsh migrate back to $HA while no service runs: a new service finds it there"
srv_stop
virsh_migrate "$DST_URI" "$SRC_TCP_URI" || fail "virsh migrate back"
[[ $(rec_hosts vm1) == "$HB" ]] || fail "set-up: records on '$(rec_hosts vm1)'"
srv_up
wait_eq 60 yes adopted "$HA" "$uid" || fail "not adopted on $HA: VMI $(vmi -c .status), records on '$(rec_hosts vm1)'"
! virsh -q -c "$DST_URI" dominfo default_vm1 >/dev/null 2>&1 || fail "defined again on $HB (restarted there?)"
[[ $(nqemu vm1) == 1 ]] || fail "$(nqemu vm1) QEMU of vm1"
console vm1 'echo mark=$KVMARK' 'mark=adopt42' || fail "the guest's state is lost after the way back"
echo PASS
