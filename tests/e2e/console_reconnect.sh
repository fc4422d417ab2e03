#!/bin/bash
# e2e-lane: cluster
# kvcon console's reconnect and timeout behaviour, in tmux: a serial server (unix socket) that drops the first
# connection makes the pane say so, reconnect with backoff and go on with the second connection (typed keys reach
# it); a VMI that does not exist ends `--timeout 2` with status 1 and the reason; the terminal is given back.
set -u
cd "$(dirname "$0")/../.."
ROOT=$PWD
KVCON=${KVCON_BIN:-$ROOT/kvcon}
command -v tmux >/dev/null || { echo "skip: tmux not installed"; exit 77; }
py=${FAKEKUBE_PYTHON:-python3}
tmp=$(mktemp -d /tmp/kvcr.XXXXXX)
# kvcon's state in the test's own directory: the engine a command may look at (and its service, started on
# demand) is the test's, never this machine's
export XDG_STATE_HOME="$tmp/state" XDG_CONFIG_HOME="$tmp/cfg"
unset XDG_RUNTIME_DIR
sock="kvcr$$"
pids=()
cleanup() {
	tmux -L "$sock" kill-server 2>/dev/null
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
	echo "FAIL: $*"; echo "--- screen"; tmux -L "$sock" capture-pane -p -t k 2>/dev/null
	for f in "$tmp"/*.log; do [ -f "$f" ] && { echo "--- $f"; tail -15 "$f"; }; done
	exit 1
}
until_ok() { local t=$1; shift; local end=$((SECONDS + t)); while ! "$@"; do [ $SECONDS -ge $end ] && return 1; sleep 0.1; done; }
on_screen() { tmux -L "$sock" capture-pane -p -t k | grep -qE -- "$1"; }

# connection 1: greets, and hangs up when it reads "drop"; connection 2: greets and echoes typed lines
cat >"$tmp/serial.py" <<'PY'
import os, socket, sys
path = sys.argv[1]
s = socket.socket(socket.AF_UNIX); s.bind(path); s.listen(1)
c, _ = s.accept(); c.sendall(b"first connection\r\n"); buf = b""
while b"drop" not in buf:
    d = c.recv(100)
    if not d: break
    buf += d
c.close()
c, _ = s.accept(); c.sendall(b"second connection\r\n"); buf = b""
while True:
    d = c.recv(100)
    if not d: break
    buf += d
    while b"\r" in buf:
        line, buf = buf.split(b"\r", 1)
        c.sendall(b"\r\ngot: " + line + b"\r\n")
PY
$py "$tmp/serial.py" "$tmp/s.sock" >"$tmp/serial.log" 2>&1 & pids+=($!)
until_ok 10 test -S "$tmp/s.sock" || fail "serial server"

tmux -L "$sock" -f /dev/null new-session -d -s k -x 100 -y 30 "env -i PATH=$PATH TERM=screen-256color HOME=$tmp bash --norc --noprofile"
tmux -L "$sock" send-keys -t k "PS1='outer\$ '; clear" Enter
tmux -L "$sock" send-keys -t k "$KVCON console unix:$tmp/s.sock 2>$tmp/kvcon.log; echo EXIT=\$?" Enter
until_ok 10 on_screen 'first connection' || fail "first connection"
tmux -L "$sock" send-keys -t k "drop"
until_ok 10 on_screen 'connection lost' || fail "the drop was not said"
until_ok 15 on_screen 'reconnected' || fail "no reconnect"
until_ok 10 on_screen 'second connection' || fail "second connection's bytes"
tmux -L "$sock" send-keys -t k "hello" Enter
until_ok 10 on_screen 'got: hello' || fail "typed keys did not reach the new connection"
tmux -L "$sock" send-keys -t k C-]
until_ok 10 on_screen '^EXIT=0' || fail "Ctrl+] did not leave"
echo "dropped stream: said, reconnected, typing works"

# a VMI that never appears: --timeout ends it with the reason
mkdir -p "$tmp/fk"
$py tests/fakekube/fakekube.py --dir "$tmp/fk" --vms 1 --namespaces 1 >"$tmp/fakekube.log" 2>&1 & pids+=($!)
$py tests/fakekube/fkctl.py "$tmp/fk" wait 60 >/dev/null || fail "fakekube did not start"
tmux -L "$sock" send-keys -t k "clear; KUBECONFIG=$tmp/fk/kubeconfig $KVCON console ns-00/no-such-vm --timeout 2s; echo EXIT=\$?" Enter
until_ok 20 on_screen '^EXIT=1' || fail "--timeout did not end with status 1"
on_screen 'no console after 2 s: waiting for VMI ns-00/no-such-vm to exist' || fail "timeout reason missing"
[ "$(tmux -L "$sock" display -p -t k '#{alternate_on}')" = 0 ] || fail "terminal left in the alternate screen"
echo "ok"
