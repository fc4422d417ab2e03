#!/bin/bash
# e2e-lane: cluster
# The dashboard's port forwards against fakekube in tmux: shift-F on a VM asks for the ports and starts a forward
# (a python echo server stands in for the guest's port); bytes go through it; `:pf` lists it with its VM, local and
# guest port, connections and bytes; ctrl-d there stops it and its local port closes; a forward still running
# when the dashboard quits ends with it.
. "$(dirname "$0")/ui_lib.inc"

fk_start --vms 2 --namespaces 1 --seed 5
fk settle 30 >/dev/null || fail "settle"
cat >"$W/echo.py" <<'PY'
import socket, sys, threading
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("127.0.0.1", 0)); s.listen(8)
open(sys.argv[1], "w").write("%d\n" % s.getsockname()[1])
def serve(c):
    while True:
        d = c.recv(65536)
        if not d:
            break
        c.sendall(d)
    c.close()
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
PY
$PY "$W/echo.py" "$W/echo.port" & ECHOPID=$!
trap 'kill $ECHOPID 2>/dev/null; ui_cleanup' EXIT
for _ in $(seq 50); do [ -s "$W/echo.port" ] && break; sleep 0.1; done
EP=$(cat "$W/echo.port")
echo_through() { # PORT: one round trip through 127.0.0.1:PORT
	$PY - "$1" <<'PY'
import socket, sys
c = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5); c.settimeout(5)
c.sendall(b"through the dashboard\n")
assert c.recv(100) == b"through the dashboard\n"
PY
}
closed() { ! $PY -c 'import socket,sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=2)' "$1" 2>/dev/null; }

kv_start -n ns-00
wait_for 'db-00001' 15
keys g
keys F
wait_for 'forward db-00001 ports \[LOCAL:\]REMOTE' 5
keys -l "0:$EP"
keys Enter
wait_for "forwarding 127.0.0.1:[0-9]+ -> ns-00/db-00001 port $EP" 10
LP=$(screen | sed -nE "s/.*forwarding 127\.0\.0\.1:([0-9]+) -> ns-00\/db-00001 port $EP.*/\1/p" | head -1)
[ -n "$LP" ] || fail "no local port on the status line"
echo_through "$LP" || fail "no echo through the dashboard's forward"

# :pf lists it, with the bytes that went through
cmd pf
wait_for 'Port forwards\[1\]' 5
wait_for 'VM +LOCAL +GUEST +CONNS +FAILED +BYTES-OUT +BYTES-IN' 5
wait_for "ns-00/db-00001 +127\.0\.0\.1:$LP +$EP +0/1 +0 +22 +22" 5
keys '?'
wait_for 'ctrl-d +stop the selected forward' 5
keys Escape
keys C-d
wait_for 'Port forwards\[0\]' 5
closed "$LP" || fail "the local port is still open after ctrl-d"

# a forward running when the dashboard quits ends with it
cmd vm
wait_for 'db-00001' 10
keys g
keys F
wait_for 'forward db-00001 ports' 5
keys -l "0:$EP"
keys Enter
wait_for "forwarding 127.0.0.1:[0-9]+ -> ns-00/db-00001 port $EP" 10
LP=$(screen | sed -nE "s/.*forwarding 127\.0\.0\.1:([0-9]+) -> ns-00\/db-00001 port $EP.*/\1/p" | head -1)
echo_through "$LP" || fail "second forward"
cmd q
for _ in $(seq 50); do grep -q KVCON_EXIT "$W/exit" 2>/dev/null && break; sleep 0.1; done
grep -q KVCON_EXIT=0 "$W/exit" || fail "kvcon did not quit cleanly: $(cat "$W/exit" 2>/dev/null)"
closed "$LP" || fail "the forward outlived the dashboard"
echo "PASS ui_portforward"
