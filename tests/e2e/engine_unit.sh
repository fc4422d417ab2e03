#!/bin/bash
# The systemd user unit `make install` writes (contrib/kvcon-engine.service.in; issue 15: "a systemd unit installed
# by make install for hosts that want it at boot"): `systemd-analyze --user verify` accepts it (and refuses the same
# unit with a missing ExecStart binary, so the check means something), and its ExecStart line, run as this test's
# own process (no systemd user manager here), serves the root on its well-known socket: kvcon goes through it
# instead of starting a service on demand, it has no idle exit, and SIGTERM (systemctl stop) ends it with exit 0.
. "$(dirname "$0")/engine-lib.bash"
engine_embed_up kvunit
command -v systemd-analyze >/dev/null || fail "systemd-analyze missing (scripts/deps.sh installs systemd)"
export HOME=$ENGINE_T/home XDG_CONFIG_HOME=$ENGINE_T/cfg KVCON_ENGINE_IDLE_EXIT=1
unset KVCON_ENGINE_SERVICE KUBECONFIG
mkdir -p "$HOME" "$XDG_CONFIG_HOME" "$ENGINE_T/run"
chmod 0700 "$ENGINE_T/run"
P=$ENGINE_T/prefix
SRV=
trap '[ -n "$SRV" ] && kill -9 "$SRV" 2>/dev/null; engine_embed_cleanup' EXIT

step "make install-unit writes the unit for PREFIX"
make -s -C "$ROOT" install-unit PREFIX="$P" >"$ENGINE_T/make.out" 2>&1 || fail "make install-unit: $(cat "$ENGINE_T/make.out")"
unit=$P/lib/systemd/user/kvcon-engine.service
[ -f "$unit" ] || fail "no unit at $unit"
[ "$(stat -c %a "$unit")" = 644 ] || fail "unit mode $(stat -c %a "$unit")"
exec_line=$(sed -n 's/^ExecStart=//p' "$unit")
[ "$exec_line" = "$P/bin/kvcon engine serve" ] || fail "ExecStart=$exec_line"
mkdir -p "$P/bin"
cp "$KV" "$P/bin/kvcon" # what make install puts there, the engine beside it
cp "$(dirname "$KV")/kvcon-engine" "$P/bin/kvcon-engine"

step "systemd-analyze verify: the unit passes, a broken copy does not"
XDG_RUNTIME_DIR=$ENGINE_T/run systemd-analyze --user verify --man=no "$unit" >"$ENGINE_T/verify.out" 2>&1 ||
	fail "verify: $(cat "$ENGINE_T/verify.out")"
[ ! -s "$ENGINE_T/verify.out" ] || fail "verify said: $(cat "$ENGINE_T/verify.out")"
sed "s|^ExecStart=$P/bin/kvcon|ExecStart=$P/nonexistent/kvcon|" "$unit" >"$ENGINE_T/broken.service"
if XDG_RUNTIME_DIR=$ENGINE_T/run systemd-analyze --user verify --man=no "$ENGINE_T/broken.service" >"$ENGINE_T/verify2.out" 2>&1; then
	fail "verify accepted a unit whose ExecStart does not exist"
fi
grep -q 'is not executable' "$ENGINE_T/verify2.out" || fail "broken unit: $(cat "$ENGINE_T/verify2.out")"

step "the ExecStart line serves the root"
read -ra argv <<<"$exec_line"
"${argv[@]}" >"$ENGINE_T/unit.out" 2>"$ENGINE_T/unit.err" &
SRV=$!
deadline=$((SECONDS + 120))
until grep -q '^engine serving' "$ENGINE_T/unit.out"; do
	[ $SECONDS -lt $deadline ] && kill -0 "$SRV" 2>/dev/null || fail "the unit's service did not start: $(cat "$ENGINE_T/unit.err")"
	sleep 0.1
done
sock=$(sed -n 's/^socket: //p' "$ENGINE_T/unit.out")
[ "$(cat "$sock.pid")" = "$SRV" ] || fail "pid file $(cat "$sock.pid" 2>/dev/null), not $SRV"
engine_manifest "$ENGINE_T/u.yaml" u Halted 160Mi >/dev/null
out=$("$KV" engine apply -f "$ENGINE_T/u.yaml") || fail "apply through the unit's service: $out"
[ "$out" = "virtualmachine.kubevirt.io/u created" ] || fail "apply said '$out'"
"$KV" get vm -A >"$ENGINE_T/get.out" 2>&1 || fail "get: $(cat "$ENGINE_T/get.out")"
grep -Eq '^default +u +[^ ]+ +Stopped ' "$ENGINE_T/get.out" || fail "get: $(cat "$ENGINE_T/get.out")"
[ "$(cat "$sock.pid")" = "$SRV" ] || fail "kvcon started another service: $(cat "$sock.pid")"
n=0
for p in /proc/[0-9]*; do
	{ tr '\0' ' ' <"$p/cmdline"; } 2>/dev/null | grep -q "engine serve" && grep -qz "^XDG_STATE_HOME=$XDG_STATE_HOME\$" "$p/environ" 2>/dev/null && n=$((n + 1))
done
[ $n = 1 ] || fail "$n services on the root"

step "no idle exit (KVCON_ENGINE_IDLE_EXIT=1 is for services started on demand)"
for _ in $(seq 1 30); do
	kill -0 "$SRV" 2>/dev/null || fail "the unit's service left by itself: $(cat "$ENGINE_T/unit.out")"
	sleep 0.1
done

step "SIGTERM (systemctl stop): exit 0, the socket removed"
kill -TERM "$SRV"
rc=0
wait "$SRV" || rc=$?
SRV=
[ $rc = 0 ] || fail "the service exited $rc on SIGTERM: $(cat "$ENGINE_T/unit.err")"
[ ! -e "$sock" ] && [ ! -e "$sock.pid" ] || fail "the socket or pid file stayed"
echo "PASS engine_unit"
