#!/bin/bash
# The engine service as the one owner of the host (issue 15): `kvcon engine serve` holds the embedded root, and
# every client goes through its API: the dashboard (kvcon's kube provider with the service's kubeconfig), 20 CLI
# verbs at once beside it, and kubectl. With only the service running, an Always VM whose QEMU is killed gets a new
# execution (new VMI UID) and is Running again; the time from the kill to the new execution is printed.
. "$(dirname "$0")/engine-lib.bash"
. "$(dirname "$0")/ui_lib.inc"
engine_needs "the embedded libvirt driver" qemu-system-x86_64 kubectl jq
engine_setup "$W" || fail "guest build"
engine_embed_warm || fail "embed-warm"
export HOME=$W/home
mkdir -p "$HOME"
SRV=
stop_srv() {
	[ -n "$SRV" ] && kill -TERM "$SRV" 2>/dev/null && wait "$SRV" 2>/dev/null
	SRV=
	for f in "$XDG_STATE_HOME"/kvcon/engine/run/qemu/*.pid; do
		[ -f "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null
	done
}
trap 'stop_srv; ui_cleanup' EXIT

step "the service holds the root"
"$KV" -c "$URI" engine serve --socket "$W/api.sock" --https 0 >"$W/serve.out" 2>"$W/serve.err" &
SRV=$!
deadline=$((SECONDS + 120))
until grep -q '^kubeconfig: ' "$W/serve.out"; do
	[ $SECONDS -lt $deadline ] && kill -0 "$SRV" 2>/dev/null || fail "serve did not start: $(cat "$W/serve.err")"
	sleep 0.1
done
export KUBECONFIG=$(sed -n 's/^kubeconfig: //p' "$W/serve.out")
k() { kubectl --request-timeout=60s "$@"; }
kvc() { "$KVCON" --no-engine "$@"; }
for vm in always:Always halted1:Halted halted2:Halted; do
	engine_manifest "$W/${vm%%:*}.yaml" "${vm%%:*}" "${vm#*:}" 160Mi >/dev/null
	k apply -f "$W/${vm%%:*}.yaml" >/dev/null || fail "kubectl apply ${vm%%:*}"
done
k wait --for=jsonpath='{.status.phase}'=Running vmi/always --timeout=120s >/dev/null || fail "always not Running"

step "the dashboard on the service (its kube provider, no in-process engine)"
kv_start_env "KUBECONFIG=$KUBECONFIG" --no-engine -A
wait_for ' always +Running +True' 30
wait_for ' halted1 +Stopped ' 10
screen | grep -q 'Context: kvcon-engine' || fail "the dashboard's context is not the service's"

step "20 CLI verbs at once, beside the dashboard"
pids=()
for i in $(seq 1 16); do
	case $((i % 4)) in
	0) kvc get vm -A -o name ;;
	1) kvc get vmi always -o json ;;
	2) kvc get pods -l kubevirt.io=virt-launcher -o name ;;
	3) kvc describe vm default/always ;;
	esac >"$W/verb$i.out" 2>"$W/verb$i.err" &
	pids+=($!)
done
kvc start default/halted1 >"$W/verb17.out" 2>"$W/verb17.err" &
pids+=($!)
kvc start default/halted2 >"$W/verb18.out" 2>"$W/verb18.err" &
pids+=($!)
k get vm -A -o name >"$W/verb19.out" 2>"$W/verb19.err" &
pids+=($!)
k get events -o name >"$W/verb20.out" 2>"$W/verb20.err" &
pids+=($!)
n=0
for i in "${!pids[@]}"; do
	wait "${pids[$i]}" || fail "verb $((i + 1)) failed: $(cat "$W/verb$((i + 1)).err")"
	n=$((n + 1))
done
[ $n = 20 ] || fail "$n verbs"
grep -qx 'virtualmachine.kubevirt.io/always' "$W/verb4.out" || fail "get vm -o name: $(cat "$W/verb4.out")"
[ "$(jq -r '.status.phase' "$W/verb1.out")" = Running ] || fail "get vmi -o json: $(head -c 300 "$W/verb1.out")"
grep -q '^pod/virt-launcher-always-' "$W/verb2.out" || fail "get pods: $(cat "$W/verb2.out")"
for vm in halted1 halted2; do
	k wait --for=jsonpath='{.status.phase}'=Running "vmi/$vm" --timeout=120s >/dev/null || fail "$vm not Running"
done
wait_for ' halted2 +Running +True' 30

step "Always with only the service: QEMU killed, a new execution"
UID1=$(k get vmi always -o jsonpath='{.metadata.uid}')
pidf=$XDG_STATE_HOME/kvcon/engine/run/qemu/default_always.pid
[ -f "$pidf" ] || fail "no pid file $pidf"
cmd q
deadline=$((SECONDS + 20))
while ! grep -q KVCON_EXIT "$W/exit" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.1; done
grep -q 'KVCON_EXIT=0' "$W/exit" || fail "dashboard exit: $(cat "$W/exit")"
t0=$(date +%s%3N)
kill -9 "$(cat "$pidf")"
deadline=$((SECONDS + 120))
while :; do
	uid=$(k get vmi always -o jsonpath='{.metadata.uid} {.status.phase}' 2>/dev/null || true)
	[ "${uid% *}" != "$UID1" ] && [ -n "${uid% *}" ] && [ "${uid#* }" = Running ] && break
	[ $SECONDS -lt $deadline ] || fail "no new Running execution after the kill: $uid"
	sleep 0.05
done
echo "ALWAYS: a new execution Running $(($(date +%s%3N) - t0)) ms after the kill (kubectl polled every 50 ms)"
k get events --sort-by=.metadata.creationTimestamp >"$W/events.out" || fail "get events"
grep -q 'always' "$W/events.out" || fail "no events for always: $(tail -5 "$W/events.out")"
step "an unreadable record: named in the node's status, its QEMU left running"
rec=$(ls "$XDG_STATE_HOME"/kvcon/engine-data/hosts/*/vms/default_halted2.json)
qpid=$(cat "$XDG_STATE_HOME/kvcon/engine/run/qemu/default_halted2.pid")
kill -TERM "$SRV" && wait "$SRV"
SRV=
echo '{"name": "halted2", truncated' >"$rec"
"$KV" -c "$URI" engine serve --socket "$W/api.sock" --https 0 >"$W/serve2.out" 2>"$W/serve2.err" &
SRV=$!
deadline=$((SECONDS + 120))
until grep -q '^engine serving' "$W/serve2.out"; do
	[ $SECONDS -lt $deadline ] && kill -0 "$SRV" 2>/dev/null || fail "serve did not restart: $(cat "$W/serve2.err")"
	sleep 0.1
done
msg=$(k get nodes -o jsonpath='{.items[0].status.conditions[?(@.type=="RecordsReadable")].status} {.items[0].status.conditions[?(@.type=="RecordsReadable")].message}')
[[ $msg == False*default_halted2.json* ]] || fail "RecordsReadable: $msg"
kill -0 "$qpid" 2>/dev/null || fail "the QEMU of the unreadable record was stopped"
echo "PASS engine_service"
