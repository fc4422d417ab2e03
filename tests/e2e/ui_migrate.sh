#!/bin/bash
# The dashboard with two engine hosts (the two-host lab, listed in the config file), through the engine service
# (started on demand; its hosts are its nodes): `m` on an engine VM asks to live-migrate it from the node it runs
# on, `y` does it (the migrate subresource: a VirtualMachineInstanceMigration); the row's NODE changes, the VM
# view shows the completed migrationState and its downtime; `m` again brings it back.
. "$(dirname "$0")/engine-lib.bash"
. "$(dirname "$0")/ui_lib.inc"
engine_needs "network namespaces, private libvirtd" ip libvirtd qemu-system-x86_64 curl jq

export KVCON_TWOHOST_NS=kui${W##*.}- KVCON_TWOHOST_DIR=$W/lab
trap '$T kill-server 2>/dev/null; svc_stop_all "$W"; "$ROOT/tests/lab/twohost.sh" down >/dev/null 2>&1; ui_cleanup' EXIT
fk_start --vms 1
export XDG_CONFIG_HOME=$W/cfg KVCON_ENGINE_ACCEL=tcg
engine_setup "$W" || { echo "guest image not built"; exit 77; }
engine_twohost_up
A=$HA B=$HB
engine_manifest "$W/vm.yaml" mvm Always 160Mi >/dev/null
"$KVCON" engine apply -f "$W/vm.yaml" >/dev/null 2>&1 || fail "engine apply"

# the cluster and the engine (the config's two hosts), both asked for: the VM view's title says where (@)
kv_start_env "XDG_STATE_HOME=$XDG_STATE_HOME KVCON_ENGINE_IMAGES=$KVCON_ENGINE_IMAGES KVCON_ENGINE_ACCEL=tcg" -A \
	--context fake,engine
wait_for " mvm +.* Running +$A " 60
screen | grep -q "Via: the engine service" || fail "the dashboard does not go through the engine service"
keys "/"; keys -l "mvm"; keys Enter; wait_for '</mvm>'
# both hosts connected and resynced: the service's Node of the target is Ready
node_ready() {
	local sock
	for sock in "$XDG_STATE_HOME"/kvcon/engine-*.sock; do
		curl -s --max-time 5 --unix-socket "$sock" http://engine/api/v1/nodes | jq -e --arg n "$B" \
			'.items[] | select(.metadata.name == $n) | .status.conditions[] | select(.type == "Ready" and .status == "True")' \
			>/dev/null && return 0
	done
	return 1
}
deadline=$((SECONDS + 60))
until node_ready; do
	[ $SECONDS -lt $deadline ] || fail "host $B never connected: $(for s in "$XDG_STATE_HOME"/kvcon/engine-*.sock; do curl -s --max-time 5 --unix-socket "$s" http://engine/api/v1/nodes; done)"
	sleep 0.2
done
for try in 1 2 3 4 5 6 7 8 9 10; do
	keys m; wait_for "Live-migrate VM default/mvm on $A\\?"; keys y
	wait_for "migrate default/mvm: (sent|accepted)|refused" 10
	screen | grep -q "is not connected yet" || break
	sleep 0.5 # the target's first resync is under way
done
screen | grep -q "migrate default/mvm: (sent|accepted)" && true
wait_for " mvm +.* Running +$B " 90
ls "$XDG_STATE_HOME"/kvcon/engine-data/vmims/default_kubevirt-migrate-vm-*.json >/dev/null 2>&1 ||
	fail "no VirtualMachineInstanceMigration kept by the service"
[ "$(virsh -q -c "$DST_URI" domstate default_mvm)" = running ] || fail "not running on $B"
virsh -q -c "$SRC_URI" dominfo default_mvm >/dev/null 2>&1 && fail "still defined on $A"
keys Enter; wait_for ' VM default/mvm @'
wait_for "migration: Succeeded" 10; wait_for "on $A -> $B +\\[1 migration\\]" 10
wait_for 'downtime [0-9]+ ms' 5
keys Escape; wait_gone ' VM default/mvm @'
keys m; wait_for "Live-migrate VM default/mvm on $B\\?"; keys y
wait_for " mvm +.* Running +$A " 90
[ "$(virsh -q -c "$SRC_URI" domstate default_mvm)" = running ] || fail "not running on $A after the way back"
cmd q
deadline=$((SECONDS + 30)); while ! grep -qs KVCON_EXIT "$W/exit" && [ $SECONDS -lt $deadline ]; do sleep 0.1; done
grep -q 'KVCON_EXIT=0' "$W/exit" || fail "exit: $(cat "$W/exit")"
echo "PASS ui_migrate"
