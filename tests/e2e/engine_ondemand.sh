#!/bin/bash
# The engine service on demand (issue 15): with no setting, the first kvcon that needs the engine root (`kvcon get
# vm`) starts `kvcon engine serve` for it (a socket appears, the pid in SOCKET.pid answers), the next kvcon and the
# dashboard go through the same service (same pid), and the service leaves after its idle exit only when nothing
# needs reconciling: it stays while an Always VM runs (its QEMU's death must be reaped and restarted) and goes
# once the VM is stopped. Then: the socket and pid file are gone, the next kvcon starts a new service, and an
# explicit `kvcon engine serve` has no idle exit.
. "$(dirname "$0")/engine-lib.bash"
. "$(dirname "$0")/ui_lib.inc"
engine_needs "the embedded libvirt driver" qemu-system-x86_64 jq
engine_setup "$W" || fail "guest build"
engine_embed_warm || fail "embed-warm"
export HOME=$W/home XDG_CONFIG_HOME=$W/cfg
mkdir -p "$HOME" "$XDG_CONFIG_HOME"
unset KVCON_ENGINE_SERVICE KUBECONFIG
IDLE=3
export KVCON_ENGINE_IDLE_EXIT=$IDLE
SRV=
trap 'svc_stop_all "$W"; [ -n "$SRV" ] && kill -9 "$SRV" 2>/dev/null; for f in "$XDG_STATE_HOME"/kvcon/engine/run/qemu/*.pid; do [ -f "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null; done; ui_cleanup' EXIT
kvd() { "$KVCON" "$@"; } # the default root: no -c, no setting
# the service's pid as its pid file says, and the socket
svc_sock() { ls "$XDG_STATE_HOME"/kvcon/engine-*.sock 2>/dev/null; }
svc_pid() { cat "$XDG_STATE_HOME"/kvcon/engine-*.sock.pid 2>/dev/null; }
# how many `engine serve` processes serve this test's root
svc_count() {
	local n=0 p
	for p in /proc/[0-9]*; do
		{ tr '\0' ' ' <"$p/cmdline"; } 2>/dev/null | grep -q -- " engine serve --socket $XDG_STATE_HOME/" && n=$((n + 1))
	done
	echo $n
}
gone_within() { # PID SECONDS: 0 once the process is gone
	local deadline=$((SECONDS + $2))
	while [ $SECONDS -lt $deadline ]; do
		pid_alive "$1" || return 0
		sleep 0.2
	done
	return 1
}

step "no service yet; kvcon get vm starts one on demand"
[ -z "$(svc_sock)" ] || fail "a socket before the first command: $(svc_sock)"
kvd get vm -A >"$W/get1.out" 2>"$W/get1.err" || fail "get vm: $(cat "$W/get1.err")"
sock=$(svc_sock)
[ -S "$sock" ] || fail "no service socket after get vm (state: $(ls "$XDG_STATE_HOME/kvcon"))"
[ "$(stat -c %a "$sock")" = 600 ] || fail "socket mode $(stat -c %a "$sock")"
pid=$(svc_pid)
[ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || fail "the pid file says '$pid', which does not run"
tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -- "engine serve --socket $sock --idle-exit $IDLE" ||
	fail "pid $pid is $(tr '\0' ' ' <"/proc/$pid/cmdline")"
[ "$(svc_count)" = 1 ] || fail "$(svc_count) services for the root"
curl -sf --unix-socket "$sock" http://engine/healthz >/dev/null || fail "the service does not answer /healthz"

step "the next kvcon goes through the same service"
engine_manifest "$W/always.yaml" always Always 160Mi >/dev/null
out=$(kvd engine apply -f "$W/always.yaml") || fail "apply: $out"
[ "$out" = "virtualmachine.kubevirt.io/always created" ] || fail "apply said '$out'"
deadline=$((SECONDS + 120))
until kvd get vm -A 2>/dev/null | grep -Eq '^default +always +[^ ]+ +Running '; do
	[ $SECONDS -lt $deadline ] || fail "always not Running: $(kvd get vm -A 2>&1)"
	sleep 0.5
done
[ "$(svc_pid)" = "$pid" ] || fail "the service changed: $pid -> $(svc_pid)"
[ "$(svc_count)" = 1 ] || fail "$(svc_count) services for the root"
# two at once, with no service answering yet, would both start one: the lock makes the second wait (below)

step "the dashboard goes through it"
: >"$W/exit"
kv_start_env "HOME=$HOME KVCON_ENGINE_IMAGES=$KVCON_ENGINE_IMAGES KVCON_ENGINE_IDLE_EXIT=$IDLE" -A
wait_for ' always +Running +True' 60
grep -q "the engine service answers on $sock: going through it" "$W/kvcon.log" ||
	fail "the dashboard did not use the service: $(grep -i 'engine' "$W/kvcon.log" | tail -5)"
[ "$(svc_pid)" = "$pid" ] || fail "the dashboard started another service"
cmd q
deadline=$((SECONDS + 20))
while ! grep -q KVCON_EXIT "$W/exit" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.1; done
grep -q 'KVCON_EXIT=0' "$W/exit" || fail "dashboard exit: $(cat "$W/exit")"

step "no client, but an Always VM runs: the service stays (4 idle periods)"
if gone_within "$pid" $((IDLE * 4)); then
	fail "the service left while always runs: $(tail -5 "$XDG_STATE_HOME/kvcon/engine-serve.log")"
fi
[ "$(svc_pid)" = "$pid" ] || fail "the service changed: $pid -> $(svc_pid)"

step "the VM stopped: nothing to reconcile, the service leaves after $IDLE s"
out=$(kvd engine stop always) || fail "stop: $out"
[ "$out" = $'VM default/always: stop requested\nVM default/always: done' ] || fail "stop said '$out'"
t0=$SECONDS
gone_within "$pid" $((IDLE + 30)) || fail "the service still runs $((SECONDS - t0)) s after the stop"
echo "   the service left $((SECONDS - t0)) s after the stop; what kept it last:"
grep 'engine serve: staying' "$XDG_STATE_HOME/kvcon/kvcon.log" | tail -n 3
grep -q "idle for $IDLE s with nothing to reconcile: exiting" "$XDG_STATE_HOME/kvcon/engine-serve.log" ||
	fail "no idle exit in the log: $(tail -5 "$XDG_STATE_HOME/kvcon/engine-serve.log")"
[ ! -e "$sock" ] || fail "the socket stayed"
[ ! -e "$sock.pid" ] || fail "the pid file stayed"

step "the next kvcon starts a new service; the stopped VM is still there"
kvd get vm -A >"$W/get3.out" 2>"$W/get3.err" || fail "get vm: $(cat "$W/get3.err")"
grep -Eq '^default +always +[^ ]+ +Stopped ' "$W/get3.out" || fail "get: $(cat "$W/get3.out")"
pid2=$(svc_pid)
[ -n "$pid2" ] && [ "$pid2" != "$pid" ] && kill -0 "$pid2" 2>/dev/null || fail "no new service ($pid2)"

step "two kvcons at once with no service: one service"
kill -TERM "$pid2"
gone_within "$pid2" 30 || fail "the service ignored SIGTERM"
kvd get vm -A >"$W/c1.out" 2>&1 &
c1=$!
kvd get vm -A >"$W/c2.out" 2>&1 || fail "the second get: $(cat "$W/c2.out")"
wait "$c1" || fail "the first get: $(cat "$W/c1.out")"
[ "$(svc_count)" = 1 ] || fail "$(svc_count) services for the root"
pid3=$(svc_pid)
kill -TERM "$pid3"
gone_within "$pid3" 30 || fail "the service ignored SIGTERM"

step "engine.service = off (the old name of use): no service started, an error naming the socket and the fix"
rc=0
KVCON_ENGINE_SERVICE=off kvd get vm -A >"$W/off.out" 2>"$W/off.err" || rc=$?
[ "$rc" = 1 ] || fail "get with engine.service = off and no service: exit $rc: $(cat "$W/off.out" "$W/off.err")"
[ ! -s "$W/off.out" ] || fail "get with no service printed rows: $(cat "$W/off.out")"
grep -q "^error: no engine service answers on $XDG_STATE_HOME/kvcon/engine-[0-9a-f]*\.sock .*start one with \`kvcon engine serve\`" "$W/off.err" ||
	fail "the error does not name the socket and how to start one: $(cat "$W/off.err")"
[ "$(svc_count)" = 0 ] || fail "a service started with engine.service = off"

step "an explicit engine serve has no idle exit"
"$KVCON" engine serve >"$W/serve.out" 2>"$W/serve.err" &
SRV=$!
deadline=$((SECONDS + 120))
until grep -q '^engine serving' "$W/serve.out"; do
	[ $SECONDS -lt $deadline ] && kill -0 "$SRV" 2>/dev/null || fail "serve did not start: $(cat "$W/serve.err")"
	sleep 0.1
done
[ "$(svc_pid)" = "$SRV" ] || fail "the explicit service's pid file says $(svc_pid), not $SRV"
! gone_within "$SRV" $((IDLE * 3)) || fail "the explicit service left by itself: $(cat "$W/serve.out")"
"$KVCON" engine serve >"$W/serve2.out" 2>&1 && fail "a second service on the same socket: $(cat "$W/serve2.out")"
# refused (the embedded root is in use; on a libvirtd root: another engine service answers there), and the first
# keeps its socket and pid file
grep -Eq 'another engine service answers there|is in use by kvcon' "$W/serve2.out" || fail "second serve: $(cat "$W/serve2.out")"
[ "$(svc_pid)" = "$SRV" ] && curl -sf --unix-socket "$(svc_sock)" http://engine/healthz >/dev/null ||
	fail "the second serve took the first one's socket"
kill -TERM "$SRV"
wait "$SRV" 2>/dev/null
SRV=
echo "PASS engine_ondemand"
