#!/bin/bash
# `kvcon get -w` on the engine (issue 16): the engine's objects are watched through its service's API as a
# cluster's are. Without a service it is an error (exit 1), not an empty watch. With one (`kvcon engine serve` on
# the root's well-known socket), `get vm -w` (kvcon's table), `get vm -w -o json` (the API objects, one per event),
# `get vmi -w -o jsonpath=`, `get pods -w -o name`, `get events -w` and kubectl's own `get vm -w` run side by side
# while the VM is labelled, started (a TCG guest) and stopped; each must print the new rows, and kvcon's table the
# same statuses as kubectl's.
# --watch-for SECONDS prints the table at its end.
. "$(dirname "$0")/engine-lib.bash"
engine_needs "the embedded libvirt driver" qemu-system-x86_64 kubectl jq
W=$(mktemp -d /tmp/kgw.XXXXXX) # short: libvirt puts unix sockets under it
engine_setup "$W" || fail "guest build"
engine_embed_warm || fail "embed-warm"
export HOME=$W/home XDG_RUNTIME_DIR=$W/run XDG_CONFIG_HOME=$W/cfg KUBECONFIG=$W/no-kubeconfig
mkdir -p "$HOME" "$XDG_RUNTIME_DIR"
chmod 0700 "$XDG_RUNTIME_DIR"
unset KVCON_ENGINE_URI LIBVIRT_DEFAULT_URI KVCON_ENGINE_SERVICE
SRV=
WATCHERS=()
cleanup() {
	# each watcher is a backgrounded function (a subshell): its kvcon child first, or it outlives the test
	for p in "${WATCHERS[@]}"; do pkill -P "$p" 2>/dev/null; kill "$p" 2>/dev/null; done
	if [ -n "$SRV" ] && kill -TERM "$SRV" 2>/dev/null; then wait "$SRV" 2>/dev/null; fi
	for f in "$W"/state/kvcon/engine/run/qemu/*.pid; do
		[ -f "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null
	done
	[ -n "${KEEP:-}" ] || rm -rf "$W"
}
trap cleanup EXIT
kvc() { "$KV" -c "$URI" "$@"; }
# until_ok SECONDS WHAT CMD...: polls until CMD succeeds; else fails with WHAT and the watchers' outputs
until_ok() {
	local deadline=$((SECONDS + $1)) what=$2 f
	shift 2
	until "$@" 2>/dev/null; do
		if [ $SECONDS -ge $deadline ]; then
			for f in "$W"/t.out "$W"/k.out "$W"/i.out "$W"/p.out "$W"/e.out "$W"/*.err; do
				[ -f "$f" ] && { echo "--- $f"; tail -n 20 "$f"; }
			done
			fail "$what (after $1 s)"
		fi
		sleep 0.3
	done
}
# the STATUS column of NAME's rows (table with NAME AGE STATUS READY), consecutive repeats collapsed
statuses() { awk -v n="$2" '$1 == n { print $3 }' "$1" | uniq | tr '\n' ' '; }

step "no service (engine.service = use: never one started on demand): -w is an error, not an empty watch"
if KVCON_ENGINE_SERVICE=use timeout 60 "$KV" -c "$URI" get vm -w >"$W/nosvc.out" 2>"$W/nosvc.err"; then
	fail "get vm -w without a service exited 0: $(cat "$W/nosvc.out")"
fi
grep -q "^error: no engine service answers on $XDG_RUNTIME_DIR/kvcon/engine-" \
	"$W/nosvc.err" || fail "no service: $(cat "$W/nosvc.err")"

step "the service holds the root, on its well-known socket"
kvc engine serve --https 0 >"$W/serve.out" 2>"$W/serve.err" &
SRV=$!
deadline=$((SECONDS + 120))
until grep -q '^engine serving' "$W/serve.out"; do
	[ $SECONDS -lt $deadline ] && kill -0 "$SRV" 2>/dev/null || fail "serve did not start: $(cat "$W/serve.err")"
	sleep 0.1
done
KCFG=$(sed -n 's/^kubeconfig: //p' "$W/serve.out")
k() { KUBECONFIG=$KCFG kubectl --request-timeout=60s "$@"; }
engine_manifest "$W/evm.yaml" evm Halted 160Mi >/dev/null
k apply -f "$W/evm.yaml" >/dev/null || fail "kubectl apply"

step "watchers: kvcon's table, -o json, the VMI's jsonpath, kubectl's table"
kvc get vm -w >"$W/t.out" 2>"$W/t.err" &
WATCHERS+=($!)
kvc get vm -w -o json >"$W/j.out" 2>"$W/j.err" &
WATCHERS+=($!)
kvc get vmi -w -o jsonpath='{.metadata.name} {.status.phase}{"\n"}' >"$W/i.out" 2>"$W/i.err" &
WATCHERS+=($!)
k get vm -w >"$W/k.out" 2>"$W/k.err" &
WATCHERS+=($!)
kvc get pods -w -o name >"$W/p.out" 2>"$W/p.err" &
WATCHERS+=($!)
kvc get events -w >"$W/e.out" 2>"$W/e.err" &
WATCHERS+=($!)
has_row() { grep -Eq "$2" "$1"; }
until_ok 60 "kvcon's table has no evm row" has_row "$W/t.out" '^evm +[0-9a-z]+ +Stopped +False$'
until_ok 60 "kubectl's table has no evm row" has_row "$W/k.out" '^evm +[0-9a-z]+ +Stopped +False$'
head -1 "$W/t.out" | grep -Eq '^NAME +AGE +STATUS +READY$' || fail "kvcon's header: $(head -1 "$W/t.out")"
json_has() { jq -se "$2" "$1" >/dev/null; }
until_ok 60 "-o json has no evm" \
	json_has "$W/j.out" 'map(select(.kind == "VirtualMachine" and .metadata.name == "evm")) | length == 1'
[ -s "$W/i.out" ] && fail "a VMI before any start: $(cat "$W/i.out")"

step "a label: a new row in every watch"
k label vm evm stage=two >/dev/null || fail "kubectl label"
until_ok 30 "-o json lacks the labelled evm" \
	json_has "$W/j.out" 'map(select(.metadata.name == "evm" and .metadata.labels.stage == "two")) | length == 1'
until_ok 30 "kvcon's table: no new row" eval '[ "$(grep -c "^evm " "$W/t.out")" -ge 2 ]'
until_ok 30 "kubectl's table: no new row" eval '[ "$(grep -c "^evm " "$W/k.out")" -ge 2 ]'

step "start (a TCG guest), then stop: Running, then Stopped, in every watch"
kvc start default/evm >"$W/start.out" 2>&1 || fail "start: $(cat "$W/start.out")"
until_ok 120 "kvcon's table never said Running" has_row "$W/t.out" '^evm +[0-9a-z]+ +Running +True$'
until_ok 60 "the VMI watch never said Running" has_row "$W/i.out" '^evm Running$'
until_ok 30 "the pods watch never showed the launcher" has_row "$W/p.out" '^pod/virt-launcher-evm-'
until_ok 30 "the events watch has no event of evm" has_row "$W/e.out" ' virtualmachine(instance)?/evm '
until_ok 60 "-o json never had a Ready evm" \
	json_has "$W/j.out" 'map(select(.metadata.name == "evm" and .status.printableStatus == "Running")) | length >= 1'
kvc stop default/evm --grace-period 5 >"$W/stop.out" 2>&1 || fail "stop: $(cat "$W/stop.out")"
last_stopped() { [ "$(awk '$1 == "evm" { s = $3 } END { print s }' "$1")" = Stopped ] && grep -q 'Running' "$1"; }
until_ok 60 "kvcon's table did not end Stopped" last_stopped "$W/t.out"
until_ok 60 "kubectl's table did not end Stopped" last_stopped "$W/k.out"
until_ok 30 "-o json did not end Stopped" \
	json_has "$W/j.out" 'map(select(.metadata.name == "evm")) | last | .status.printableStatus == "Stopped"'
# kvcon's rows and kubectl's (both from the same watch stream) say the same statuses in the same order
kst=$(statuses "$W/k.out" evm) vst=$(statuses "$W/t.out" evm)
echo "   kubectl: $kst"
echo "   kvcon:   $vst"
[ "$kst" = "$vst" ] || fail "statuses differ: kubectl '$kst', kvcon '$vst'"
for p in "${WATCHERS[@]}"; do kill -0 "$p" 2>/dev/null || fail "a watcher ended early: $(cat "$W"/*.err)"; done

step "--watch-for: the table at the end"
kvc get vm --watch-for 2 >"$W/wf.out" 2>"$W/wf.err" || fail "--watch-for: $(cat "$W/wf.err")"
grep -Eq '^evm +[0-9a-z]+ +Stopped +False$' "$W/wf.out" || fail "--watch-for: $(cat "$W/wf.out")"
echo "PASS get_watch_engine: get -w (table, json, jsonpath, pods, events) through the engine service beside kubectl's"
