#!/bin/bash
# kvcon vnc against QEMU's own VNC server on a TCG guest (tests/lab): the framebuffer kvcon received (--screenshot)
# is pixel-equal to QEMU's screendump of the same guest once the screen is quiet, reached directly (unix socket),
# through websockify (a real WebSocket peer, ws://), through fakekube's vnc subresource (NS/NAME) and through
# kvcon's own --proxy-only port; a command typed in
# the full-screen display (tmux) reaches the guest's tty1 shell and writes a marker to ttyS0; Ctrl+] gives the
# terminal back. A second display of the same guest asks for a password (VncAuth).
set -u
cd "$(dirname "$0")/../.."
ROOT=$PWD
KVCON=${KVCON_BIN:-$ROOT/kvcon}
command -v qemu-system-x86_64 >/dev/null || { echo "skip: qemu-system-x86_64 not installed"; exit 77; }
command -v tmux >/dev/null || { echo "skip: tmux not installed"; exit 77; }
tmp=$(mktemp -d /tmp/kvvnc.XXXXXX)
# kvcon's state in the test's own directory: the engine a command may look at (and its service, started on
# demand) is the test's, never this machine's
export XDG_STATE_HOME="$tmp/state" XDG_CONFIG_HOME="$tmp/cfg"
unset XDG_RUNTIME_DIR
sock="kvvnc$$"
pids=()
cleanup() {
	tmux -L "$sock" kill-server 2>/dev/null
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	tests/lab/qemu-guest.sh stop "$tmp/g" >/dev/null 2>&1
	wait 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
	echo "FAIL: $*"
	for f in "$tmp"/*.log "$tmp"/g/qemu.log; do [ -f "$f" ] && { echo "--- $f"; tail -15 "$f"; }; done
	exit 1
}
# polls a command until it succeeds or the deadline (seconds) passes
until_ok() { local t=$1; shift; local end=$((SECONDS + t)); while ! "$@"; do [ $SECONDS -ge $end ] && return 1; sleep 0.1; done; }

eval "$(scripts/demo-guest.sh)" || { echo "skip: cannot build the lab guest (no kernel package?)"; exit 77; }
mkdir -p "$tmp/g"
# a second VNC display of the same guest that asks for a password (VncAuth)
eval "$(tests/lab/qemu-guest.sh start "$tmp/g" -vnc "unix:$tmp/g/pw.sock,password=on,id=pw")" ||
	fail "QEMU did not start"
tests/lab/serial-probe "$QEMU_GUEST_SERIAL" --timeout 60 --ready --quiet || fail "the guest's shell did not answer"
# the VGA text cursor blinks (a framebuffer update every ~270 ms): hide it so the screen can be quiet; open
# tty2 once so that the kernel allocates it (Ctrl+Alt+F2 switches only to an allocated console)
tests/lab/serial-probe "$QEMU_GUEST_SERIAL" --ready --quiet \
	--send "printf '\\033[?25l' >/dev/tty1; : >/dev/tty2; echo cursor-\$((40+2))" --expect 'cursor-42' ||
	fail "hiding the cursor"

qmp_screendump() { qmp "{\"execute\":\"screendump\",\"arguments\":{\"filename\":\"$1\"}}"; }

qmp() {
	python3 - "$QEMU_GUEST_QMP" "$@" <<'PY'
import json, socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); f = s.makefile("rw")
def reply():
    while True:
        m = json.loads(f.readline())
        if "event" not in m:
            return m
reply()
for cmd in [{"execute": "qmp_capabilities"}] + [json.loads(a) for a in sys.argv[2:]]:
    f.write(json.dumps(cmd) + "\n"); f.flush()
    r = reply()
    if "error" in r:
        sys.exit("QMP: %s" % r["error"])
PY
}

# kvcon's frame == QEMU's screendump; a line typed on the guest between the two would differ, so retry a few times
compare_via() {
	local what=$1 target=$2 i
	for i in 1 2 3; do
		"$KVCON" --log-file "$tmp/kvcon-$what.log" vnc "$target" --screenshot "$tmp/$what.png" --quiet-ms 700 \
			--timeout 20 ${pwfile:+--password-file "$pwfile"} \
			>"$tmp/$what.out" 2>&1 || fail "$what: kvcon vnc --screenshot: $(cat "$tmp/$what.out")"
		qmp_screendump "$tmp/$what.ppm" || fail "$what: QMP screendump"
		if python3 tests/e2e/vnc_imgcmp.py "$tmp/$what.png" "$tmp/$what.ppm" >"$tmp/$what.cmp"; then
			echo "  $what: $(cat "$tmp/$what.cmp")"
			grep -q ' 0 non-black' "$tmp/$what.cmp" && fail "$what: the screen is black"
			return 0
		fi
		echo "  $what: attempt $i: $(cat "$tmp/$what.cmp")"
	done
	fail "$what: kvcon's framebuffer differs from QEMU's screendump"
}

compare_via direct "unix:$QEMU_GUEST_VNC"
grep -q '"width":720,"height":400' "$tmp/direct.out" || fail "unexpected size: $(cat "$tmp/direct.out")"

if command -v websockify >/dev/null; then
	port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
	websockify --unix-target="$QEMU_GUEST_VNC" 127.0.0.1:"$port" >"$tmp/websockify.log" 2>&1 &
	pids+=($!)
	until_ok 20 bash -c "echo >/dev/tcp/127.0.0.1/$port" 2>/dev/null || fail "websockify did not listen"
	compare_via websockify "ws://127.0.0.1:$port/"
else
	echo "  websockify: not installed, WebSocket case skipped"
fi

# NS/NAME through fakekube: the VMI's vnc subresource WebSocket (TLS, bearer token, plain.kubevirt.io), bridged
# by fakekube to QEMU's VNC socket
py=${FAKEKUBE_PYTHON:-python3}
mkdir -p "$tmp/fk"
$py tests/fakekube/fakekube.py --dir "$tmp/fk" --vms 2 --namespaces 1 --step 0.1 >"$tmp/fakekube.log" 2>&1 &
pids+=($!)
$py tests/fakekube/fkctl.py "$tmp/fk" wait 60 >/dev/null || fail "fakekube did not start"
vmi=$($py tests/fakekube/fkctl.py "$tmp/fk" names virtualmachineinstances | sed -n 1p)
$py tests/fakekube/fkctl.py "$tmp/fk" post /fake/backend \
	"{\"namespace\":\"${vmi%/*}\",\"name\":\"${vmi#*/}\",\"kind\":\"vnc\",\"unix\":\"$QEMU_GUEST_VNC\"}" \
	>/dev/null || fail "fakekube: backend not set"
KUBECONFIG="$tmp/fk/kubeconfig" compare_via fakekube "$vmi"
# a VMI that does not exist: the upgrade is refused (404); kvcon says so and exits 1
if KUBECONFIG="$tmp/fk/kubeconfig" "$KVCON" --log-file "$tmp/refused.log" vnc "${vmi%/*}/no-such-vmi" \
	--screenshot "$tmp/refused.png" --timeout 10 >"$tmp/refused.out" 2>&1; then fail "a refused VNC WebSocket gave a frame"; fi
grep -q 'refused' "$tmp/refused.out" || fail "refusal not explained: $(cat "$tmp/refused.out")"
echo "  fakekube: a missing VMI is refused: $(head -1 "$tmp/refused.out")"

# VncAuth: refused without a password and with a wrong one, pixel-equal with the right one
qmp '{"execute":"set_password","arguments":{"protocol":"vnc","password":"kv-s3cret","display":"pw"}}' ||
	fail "QMP set_password"
if "$KVCON" --log-file "$tmp/pw.log" vnc "unix:$tmp/g/pw.sock" --screenshot "$tmp/pw.png" --timeout 5 \
	>"$tmp/pw.out" 2>&1; then fail "no password: accepted"; fi
grep -q 'wants a password' "$tmp/pw.out" || fail "no password: unclear message: $(cat "$tmp/pw.out")"
echo wrong >"$tmp/pw.bad"
if "$KVCON" --log-file "$tmp/pw.log" vnc "unix:$tmp/g/pw.sock" --screenshot "$tmp/pw.png" --timeout 5 \
	--password-file "$tmp/pw.bad" >"$tmp/pw.out" 2>&1; then fail "wrong password: accepted"; fi
grep -q 'authentication failed' "$tmp/pw.out" || fail "wrong password: unclear message: $(cat "$tmp/pw.out")"
echo "  vncauth: refused without a password and with a wrong one"
echo kv-s3cret >"$tmp/pw.good"
pwfile="$tmp/pw.good"
compare_via vncauth "unix:$tmp/g/pw.sock"
pwfile=

# --proxy-only: prints {"port":N,"password":"..."}; the listener is reachable by every local user, so the first
# viewer must pass VNC authentication with that password before the display is opened (issue 14)
start_proxy() {
	"$KVCON" --log-file "$tmp/proxy-$1.log" vnc "unix:$QEMU_GUEST_VNC" --proxy-only --port 0 >"$tmp/proxy-$1.out" 2>&1 &
	ppid_=$!
	pids+=($ppid_)
	until_ok 10 grep -qs '"port"' "$tmp/proxy-$1.out" || fail "no port printed by --proxy-only"
	pport=$(sed -n 's/^{"port":\([0-9]*\),"password":"[A-Za-z0-9]\{8\}"}$/\1/p' "$tmp/proxy-$1.out")
	ppass=$(sed -n 's/^{"port":[0-9]*,"password":"\([A-Za-z0-9]\{8\}\)"}$/\1/p' "$tmp/proxy-$1.out")
	[ -n "$pport" ] && [ -n "$ppass" ] || fail "bad --proxy-only output: $(cat "$tmp/proxy-$1.out")"
}
start_proxy good
echo "$ppass" >"$tmp/pw.proxy"
pwfile="$tmp/pw.proxy"
compare_via proxy "tcp:127.0.0.1:$pport"
pwfile=
# a wrong password and no password: refused, and the proxy ends with an error instead of serving the display
for how in wrong none; do
	start_proxy "$how"
	echo "not-$ppass" >"$tmp/pw.wrong"
	if "$KVCON" --log-file "$tmp/kvcon-$how.log" vnc "tcp:127.0.0.1:$pport" --screenshot "$tmp/$how.png" --timeout 10 \
		$([ $how = wrong ] && echo --password-file "$tmp/pw.wrong") >"$tmp/$how.viewer" 2>&1; then
		fail "proxy: a viewer with $how password got the display"
	fi
	[ ! -s "$tmp/$how.png" ] || fail "proxy: a screenshot was written with $how password"
	wait "$ppid_"; prc=$?
	[ $prc -ne 0 ] || fail "proxy: exit 0 after a viewer with $how password"
	want='authentication failed: wrong password'
	[ $how = none ] && want='the viewer left before the handshake was done'
	grep -q "^error: vnc: $want\$" "$tmp/proxy-$how.out" || fail "proxy: no refusal line: $(cat "$tmp/proxy-$how.out")"
	echo "  proxy: a viewer with $how password is refused (proxy exit $prc)"
done

# typing: the full-screen display in tmux; the guest's tty1 shell runs what we type and writes to ttyS0
tmux -L "$sock" new-session -d -x 100 -y 30 \
	"COLORTERM=truecolor '$KVCON' --log-file '$tmp/tmux.log' vnc 'unix:$QEMU_GUEST_VNC'; echo KVCON-EXIT=\$?; sleep 60"
until_ok 20 bash -c "tmux -L $sock capture-pane -p | grep -q '720x400.*Ctrl+. leave'" ||
	fail "no status line with the display size: $(tmux -L "$sock" capture-pane -p | tail -1)"
on=$(tmux -L "$sock" display -p '#{alternate_on}|#{mouse_sgr_flag}|#{cursor_flag}')
[ "$on" = "1|1|0" ] || fail "display modes while running: $on (alternate|sgr mouse|cursor)"
# a mix of shifted and unshifted characters, as a real keyboard types them
tmux -L "$sock" send-keys 'echo "VNC-TYPED-$((6*7))" > /dev/ttyS0' Enter
until_ok 20 grep -aq 'VNC-TYPED-42' "$QEMU_GUEST_SERIAL_LOG" || fail "the typed command did not reach the guest"
echo "  typing: the guest ran the command typed through kvcon's VNC display"
# the display shows pixels: half blocks were drawn
tmux -L "$sock" capture-pane -p | grep -q '▀' || fail "no half-block cells on screen"
# the F8 send-key menu: Ctrl+Alt+F2 switches the guest to the empty tty2, Ctrl+Alt+F1 back to the shell
lit() { python3 tests/e2e/vnc_imgcmp.py "$1" "$1" | sed -n 's/.* \([0-9]*\) non-black.*/\1/p'; }
tmux -L "$sock" send-keys F8
until_ok 10 bash -c "tmux -L $sock capture-pane -p | grep -q 'Ctrl+Alt+Del'" || fail "F8 shows no menu"
tmux -L "$sock" send-keys 2
tty2_blank() {
	"$KVCON" --log-file "$tmp/vt.log" vnc "unix:$QEMU_GUEST_VNC" --screenshot "$tmp/vt.png" --quiet-ms 300 \
		--timeout 2 >/dev/null 2>&1 && [ "$(lit "$tmp/vt.png")" -lt 200 ]
}
until_ok 20 tty2_blank || fail "Ctrl+Alt+F2 from the menu did not switch the guest's console"
tmux -L "$sock" send-keys F8 1
compare_via back-on-tty1 "unix:$QEMU_GUEST_VNC"
[ "$(lit "$tmp/back-on-tty1.png")" -gt 5000 ] || fail "Ctrl+Alt+F1 did not bring the shell back"
echo "  menu: Ctrl+Alt+F2 and Ctrl+Alt+F1 sent through F8"
tmux -L "$sock" send-keys C-]
until_ok 10 bash -c "tmux -L $sock capture-pane -p | grep -q 'KVCON-EXIT=0'" || fail "Ctrl+] did not leave with 0"
# the terminal is given back: main screen, no mouse reporting, cursor visible
modes=$(tmux -L "$sock" display -p '#{alternate_on}|#{mouse_any_flag}|#{mouse_sgr_flag}|#{mouse_button_flag}|#{cursor_flag}')
[ "$modes" = "0|0|0|0|1" ] || fail "terminal modes after leaving: $modes (alternate|mouse|sgr|button|cursor)"
echo "  Ctrl+] left the display, exit 0, terminal modes restored"
echo "PASS"
