#!/bin/bash
# kvcon beside its engine service (issue 15): while `kvcon engine serve` holds the embedded root, kvcon's own
# commands on that root (`-c URI` or the default) find the service on the root's well-known socket and go through
# its API over the unix socket (plain HTTP, no token) instead of being refused: engine apply/get/start/stop/delete,
# get vm -A, the console, engine vnc and engine reconcile, and the dashboard, all while the service runs
# (engine migrate and drain: engine_route_mig.sh, the two-host lab). With routing off they are refused (the
# failure this fixes); with engine.service = use, a stale socket (the service killed -9) falls back to the engine
# in-process; by default, the next command starts a service on demand on the stale socket.
. "$(dirname "$0")/engine-lib.bash"
. "$(dirname "$0")/ui_lib.inc"
engine_needs "the embedded libvirt driver" qemu-system-x86_64 jq
engine_setup "$W" || fail "guest build"
engine_embed_warm || fail "embed-warm"
export HOME=$W/home XDG_RUNTIME_DIR=$W/run
mkdir -p "$HOME" "$XDG_RUNTIME_DIR"
chmod 0700 "$XDG_RUNTIME_DIR"
SRV=
stop_srv() {
	if [ -n "$SRV" ] && kill -TERM "$SRV" 2>/dev/null; then
		wait "$SRV" 2>/dev/null # our child; one started on demand is not: poll it
		for _ in $(seq 1 100); do kill -0 "$SRV" 2>/dev/null || break; sleep 0.1; done
	fi
	SRV=
	for f in "$XDG_STATE_HOME"/kvcon/engine/run/qemu/*.pid; do
		[ -f "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null
	done
}
trap 'stop_srv; ui_cleanup' EXIT
kvc() { "$KVCON" -c "$URI" "$@"; }
# vm_status NAME: the VM's printable status as `engine get -o json` (the API's List) says it
vm_status() { kvc engine get vm -o json | jq -r --arg n "$1" '[.items[] | select(.metadata.name == $n)][0].status.printableStatus // ""'; }
until_status() {
	local deadline=$((SECONDS + $3)) s=
	while [ $SECONDS -lt $deadline ]; do
		s=$(vm_status "$1")
		[ "$s" = "$2" ] && return 0
		sleep 0.5
	done
	fail "$1 is '$s', not $2 after $3 s"
}

step "the service holds the root, on the root's well-known socket"
"$KVCON" -c "$URI" engine serve >"$W/serve.out" 2>"$W/serve.err" &
SRV=$!
deadline=$((SECONDS + 120))
until grep -q '^engine serving' "$W/serve.out"; do
	[ $SECONDS -lt $deadline ] && kill -0 "$SRV" 2>/dev/null || fail "serve did not start: $(cat "$W/serve.err")"
	sleep 0.1
done
sock=$(sed -n 's/^socket: //p' "$W/serve.out")
[[ $sock == "$XDG_RUNTIME_DIR"/kvcon/engine-*.sock ]] || fail "socket $sock is not the root's well-known one"
[ "$(stat -c %a "$sock")" = 600 ] || fail "socket mode $(stat -c %a "$sock")"

step "engine apply / get through the service (created, unchanged, the table)"
engine_manifest "$W/always.yaml" always Always 160Mi >/dev/null
engine_manifest "$W/halted.yaml" halted Halted 160Mi >/dev/null
out=$(kvc engine apply -f "$W/always.yaml") || fail "apply always: $out"
[ "$out" = "virtualmachine.kubevirt.io/always created" ] || fail "apply said '$out'"
out=$(kvc engine apply -f "$W/halted.yaml") || fail "apply halted: $out"
[ "$out" = "virtualmachine.kubevirt.io/halted created" ] || fail "apply said '$out'"
out=$(kvc engine apply -f "$W/halted.yaml") || fail "re-apply halted: $out"
[ "$out" = "virtualmachine.kubevirt.io/halted unchanged" ] || fail "re-apply said '$out'"
until_status always Running 120
kvc engine get vm >"$W/get.out" 2>"$W/get.err" || fail "engine get vm: $(cat "$W/get.err")"
grep -Eq '^always .* Running ' "$W/get.out" || fail "engine get vm: $(cat "$W/get.out")"
grep -Eq '^halted .* Stopped ' "$W/get.out" || fail "engine get vm: $(cat "$W/get.out")"
# the default root (no -c) is the same root: the same socket
"$KVCON" engine get vm -o name >"$W/getd.out" 2>&1 || fail "engine get (default root): $(cat "$W/getd.out")"
grep -qx 'virtualmachine.kubevirt.io/always' "$W/getd.out" || fail "engine get (default root): $(cat "$W/getd.out")"
# an invalid manifest is refused by the service's validator: exit 1, nothing stored
sed 's/runStrategy: Halted/runStrategy: Sometimes/' "$W/halted.yaml" >"$W/bad.yaml"
if kvc engine apply -f "$W/bad.yaml" >"$W/bad.out" 2>&1; then fail "invalid manifest accepted: $(cat "$W/bad.out")"; fi
grep -q 'runStrategy' "$W/bad.out" || fail "refusal does not name the field: $(cat "$W/bad.out")"

step "engine start / stop / delete through the service"
out=$(kvc engine start halted) || fail "start: $out"
[ "$out" = $'VM default/halted: start requested\nVM default/halted: done' ] || fail "start said '$out'"
[ "$(vm_status halted)" = Running ] || fail "halted is $(vm_status halted) after start"
out=$(kvc engine stop halted --grace-period 2) || fail "stop: $out"
[ "$out" = $'VM default/halted: stop requested\nVM default/halted: done' ] || fail "stop said '$out'"
[ "$(vm_status halted)" = Stopped ] || fail "halted is $(vm_status halted) after stop"

step "kvcon get vm -A, and the console, beside the service"
kvc get vm -A >"$W/getA.out" 2>"$W/getA.err" || fail "get vm -A: $(cat "$W/getA.err")"
grep -Eq '^default +always ' "$W/getA.out" || fail "get vm -A: $(cat "$W/getA.out")"
grep -Eq '^default +halted ' "$W/getA.out" || fail "get vm -A: $(cat "$W/getA.out")"
kvc describe vm default/always >"$W/desc.out" 2>"$W/desc.err" || fail "describe: $(cat "$W/desc.err")"
grep -q 'always' "$W/desc.out" || fail "describe: $(head -5 "$W/desc.out")"
out=$(kvc pause default/always 2>&1) || fail "pause (the top-level verb): $out"
until_status always Paused 60
out=$(kvc unpause default/always 2>&1) || fail "unpause: $out"
until_status always Running 60
kv_start_env "XDG_RUNTIME_DIR=$XDG_RUNTIME_DIR HOME=$HOME KVCON_ENGINE_IMAGES=$KVCON_ENGINE_IMAGES" -c "$URI" console default/always
deadline=$((SECONDS + 60))
until screen | grep -q 'ROUTE-42'; do
	keys -l 'echo ROUTE-$((6*7))'
	keys Enter
	[ $SECONDS -lt $deadline ] || fail "the guest's answer did not come through the console"
	for _ in 1 2 3 4 5 6 7 8 9 10; do screen | grep -q 'ROUTE-42' && break; sleep 0.3; done
done
keys C-]
deadline=$((SECONDS + 20))
while ! grep -q KVCON_EXIT "$W/exit" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.1; done
grep -q 'KVCON_EXIT=0' "$W/exit" || fail "console exit: $(cat "$W/exit" 2>/dev/null)"

# the scripted console (engine console --send/--expect) through the service's console WebSocket
kvc engine console always --send 'echo ROUTE-$((7*7))' --expect 'ROUTE-49' --timeout 60s >"$W/econ.out" 2>&1 ||
	fail "engine console through the service: $(tail -c 400 "$W/econ.out")"

step "engine vnc and engine reconcile through the service (refused before: they opened the root in-process)"
timeout 120 "$KVCON" -c "$URI" --log-file "$W/vnc.log" engine vnc always --screenshot "$W/vnc.png" --quiet-ms 500 \
	--timeout 5 >"$W/vnc.out" 2>&1 || fail "engine vnc through the service: $(tail -c 400 "$W/vnc.out")"
grep -q 'the engine service answers on .*going through it' "$W/vnc.log" || fail "engine vnc did not use the service"
grep -Eq '"width":[1-9][0-9]*,"height":[1-9][0-9]*' "$W/vnc.out" || fail "engine vnc: $(cat "$W/vnc.out")"
[ "$(head -c 4 "$W/vnc.png" | tail -c 3)" = PNG ] || fail "engine vnc: no PNG written"
out=$(timeout 120 "$KVCON" -c "$URI" --log-file "$W/rec.log" engine reconcile --for 1 2>&1) || fail "reconcile: $out"
[ "$out" = "engine ready (the engine service reconciles these hosts)" ] || fail "reconcile said '$out'"
grep -q 'the engine service answers on .*going through it' "$W/rec.log" || fail "engine reconcile did not use the service"

step "the dashboard beside the service"
: >"$W/exit"
kv_start_env "XDG_RUNTIME_DIR=$XDG_RUNTIME_DIR HOME=$HOME KVCON_ENGINE_IMAGES=$KVCON_ENGINE_IMAGES" -c "$URI" -A
wait_for ' always +Running +True' 60
wait_for ' halted +Stopped ' 10
grep -q 'the engine service answers on .*going through it' "$W/kvcon.log" || fail "the dashboard did not use the service"
out=$(kvc engine start halted) || fail "start beside the dashboard: $out"
wait_for ' halted +Running +True' 60
cmd q
deadline=$((SECONDS + 20))
while ! grep -q KVCON_EXIT "$W/exit" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.1; done
grep -q 'KVCON_EXIT=0' "$W/exit" || fail "dashboard exit: $(cat "$W/exit")"
out=$(kvc engine delete halted --grace-period 1) || fail "delete: $out"
[ "$out" = $'VM default/halted: delete requested\nVM default/halted: done' ] || fail "delete said '$out'"
kvc engine get vm -o name >"$W/get2.out" 2>&1 || fail "get after delete: $(cat "$W/get2.out")"
! grep -q 'halted' "$W/get2.out" || fail "halted still listed: $(cat "$W/get2.out")"

step "engine.service = off (the old name of use) goes through the running service too"
KVCON_ENGINE_SERVICE=off timeout 20 "$KVCON" -c "$URI" --log-file "$W/off.log" engine get vm >"$W/off.out" 2>&1 ||
	fail "get with engine.service = off beside the service: $(cat "$W/off.out")"
grep -Eq '^always .* Running ' "$W/off.out" || fail "get with engine.service = off: $(cat "$W/off.out")"
grep -q "the engine service answers on $sock" "$W/off.log" || fail "not through the service: $(tail -c 400 "$W/off.log")"

step "a stale socket (the service killed -9), engine.service = use: an error naming the socket, nothing opened"
kill -9 "$SRV"
wait "$SRV" 2>/dev/null
SRV=
[ -S "$sock" ] || fail "the killed service's socket is gone (nothing stale to test)"
rc=0
KVCON_ENGINE_SERVICE=use kvc engine get vm >"$W/stale.out" 2>"$W/stale.err" || rc=$?
[ "$rc" = 1 ] || fail "get with a stale socket: exit $rc: $(cat "$W/stale.out" "$W/stale.err")"
grep -Eq "^error: (the engine service: )?no engine service answers on $sock .*kvcon engine serve" "$W/stale.err" ||
	fail "get with a stale socket: $(cat "$W/stale.err")"
[ -z "$(pgrep -f "engine serve --socket $sock")" ] || fail "a service started with engine.service = use"

step "by default the first command starts a service on the stale socket, the next ones go through it"
kvc engine get vm -o name >"$W/auto.out" 2>&1 || fail "auto: $(cat "$W/auto.out")"
grep -qx 'virtualmachine.kubevirt.io/always' "$W/auto.out" || fail "auto get: $(cat "$W/auto.out")"
[ -f "$sock.pid" ] || fail "no pid file for the service started on demand"
# the README's way to stop it finds this pid file (it once named ~/.local/state/kvcon/, where none is)
readme_pidf=$(grep -o 'kill $(cat [^)]*)' "$ROOT/README.md" | head -1 | sed 's/^kill $(cat //; s/)$//')
[ "$(eval "ls $readme_pidf" 2>/dev/null)" = "$sock.pid" ] || fail "README's pid file '$readme_pidf' is not $sock.pid"
SRV=$(cat "$sock.pid")
kill -0 "$SRV" 2>/dev/null || fail "the service started on demand is not running"
tr '\0' ' ' <"/proc/$SRV/cmdline" | grep -q 'engine serve --socket' || fail "pid $SRV: $(tr '\0' ' ' <"/proc/$SRV/cmdline")"
[ "$(stat -c %a "$sock")" = 600 ] || fail "socket mode $(stat -c %a "$sock")"
out=$(kvc engine stop always) || fail "stop through the service started on demand: $out"
[ "$out" = $'VM default/always: stop requested\nVM default/always: done' ] || fail "stop said '$out'"
KVCON_ENGINE_SERVICE=off timeout 20 "$KVCON" -c "$URI" engine get vm -o name >"$W/off2.out" 2>&1 ||
	fail "engine.service = off beside the service started on demand: $(cat "$W/off2.out")"
grep -qx 'virtualmachine.kubevirt.io/always' "$W/off2.out" || fail "engine.service = off: $(cat "$W/off2.out")"
[ "$(cat "$sock.pid")" = "$SRV" ] || fail "another service replaced the one started on demand"
echo "PASS engine_route"
