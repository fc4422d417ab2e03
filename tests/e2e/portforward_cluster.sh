#!/bin/bash
# e2e-lane: cluster
# kvcon port-forward, ssh, scp and the guest agent's verbs against fakekube's portforward subresource, with real
# servers standing in for the guest: a python echo server, and Debian's sshd on loopback mapped as guest port 22.
# Two connections through one forward both echo (and a 2 MB round trip), a guest port where nothing listens ends
# that connection with the dial error and not the forward, --stdio, vm/ and vmi/ forms, the local port closed when
# the command ends; ssh -c 'echo hello' returns hello, the guest's key lands in --known-hosts under
# vmi.NAME.NS; scp copies a file both ways; udp/ round-trips datagrams (one 1,100-byte datagram stays one) to a
# guest UDP echo through portforward/PORT/udp; guestosinfo/userlist/fslist print the subresources' JSON.
# Exit 0 pass, 77 skip, anything else fail.
set -u
# shellcheck source=tests/e2e/lib/fakekube.bash
. "$(dirname "$0")/lib/fakekube.bash"
SSHD=$(command -v sshd || echo /usr/sbin/sshd)
[ -x "$SSHD" ] && command -v ssh >/dev/null && command -v scp >/dev/null || { echo "SKIP: openssh-server/client missing"; exit 77; }

FK_SETTLE=0 fk_start --vms 2 --namespaces 1 --seed 5
vmi=vmi/web-00000.ns-00
poll 20 "$KVCON" get vmi -n ns-00 web-00000 >/dev/null 2>&1 || fail "no VMI web-00000"

# the guest's echo server
cat >"$tmp/echo.py" <<'PY'
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
"$PY" "$tmp/echo.py" "$tmp/echo.port" & pids="$pids $!"
poll 5 test -s "$tmp/echo.port" || fail "echo server"
EP=$(cat "$tmp/echo.port")
# a port nothing listens on
DEAD=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')

# 1. a forward of two ports: the echo and the dead one
"$KVCON" port-forward "$vmi" "0:$EP" "0:$DEAD" >"$tmp/pf.out" 2>"$tmp/pf.err" & pfpid=$!; pids="$pids $pfpid"
poll 10 grep -q -- "-> $DEAD\$" "$tmp/pf.out" || { cat "$tmp/pf.err"; fail "no Forwarding lines"; }
LE=$(awk -v p="$EP" '$NF == p { n = split($3, a, ":"); print a[n] }' "$tmp/pf.out")
LD=$(awk -v p="$DEAD" '$NF == p { n = split($3, a, ":"); print a[n] }' "$tmp/pf.out")
grep -q "^Forwarding from 127.0.0.1:$LE -> $EP\$" "$tmp/pf.out" || fail "kubectl's Forwarding line: $(cat "$tmp/pf.out")"
"$PY" - "$LE" "$LD" <<'PY' || fail "connections through the forward"
import socket, sys, threading
le, ld = int(sys.argv[1]), int(sys.argv[2])
a = socket.create_connection(("127.0.0.1", le)); b = socket.create_connection(("127.0.0.1", le))
a.settimeout(10); b.settimeout(10)
a.sendall(b"from a\n"); b.sendall(b"from b\n")
assert b.recv(100) == b"from b\n" and a.recv(100) == b"from a\n", "both echo"
# the dead port: this connection ends (EOF), the others go on
d = socket.create_connection(("127.0.0.1", ld)); d.settimeout(10)
assert d.recv(100) == b"", "the dead port's connection ends"
a.sendall(b"still\n"); assert a.recv(100) == b"still\n", "a survives the dead port"
big = bytes(range(256)) * 8192  # 2 MiB through the bounded queues
got = bytearray()
def rd():
    while len(got) < len(big):
        x = b.recv(1 << 16)
        if not x:
            break
        got.extend(x)
t = threading.Thread(target=rd); t.start(); b.sendall(big); t.join(30)
assert bytes(got) == big, "2 MiB round trip: %d bytes" % len(got)
c = socket.create_connection(("127.0.0.1", le)); c.settimeout(10)
c.sendall(b"new\n"); assert c.recv(100) == b"new\n", "a new connection after all that"
PY
grep -q "error: guest port $DEAD: dial tcp 127.0.0.1:$DEAD: .*refused" "$tmp/pf.err" || fail "dial error not said: $(cat "$tmp/pf.err")"
kill -0 $pfpid 2>/dev/null || fail "the forward ended"
kill -INT $pfpid; wait $pfpid 2>/dev/null
"$PY" -c 'import socket,sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=2)' "$LE" 2>/dev/null &&
	fail "the local port is still open after the command ended"

# 1b. udp/: datagrams to the guest's UDP echo and back through portforward/PORT/udp, each one message
"$PY" -c '
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1", 0))
open(sys.argv[1], "w").write("%d\n" % s.getsockname()[1])
while True:
    d, a = s.recvfrom(65536); s.sendto(d, a)' "$tmp/uecho.port" & pids="$pids $!"
poll 5 test -s "$tmp/uecho.port" || fail "UDP echo server"
UP=$(cat "$tmp/uecho.port")
"$KVCON" port-forward "$vmi" "udp/0:$UP" >"$tmp/pfu.out" 2>"$tmp/pfu.err" & pfpid=$!; pids="$pids $pfpid"
poll 10 grep -q -- "-> $UP\$" "$tmp/pfu.out" || { cat "$tmp/pfu.err"; fail "no UDP Forwarding line"; }
LU=$(sed -nE "s/^Forwarding from 127\.0\.0\.1:([0-9]+) -> $UP\$/\1/p" "$tmp/pfu.out")
"$PY" - "$LU" <<'PY' || { cat "$tmp/pfu.err"; fail "UDP through the forward"; }
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(10)
for msg in (b"udp-1", b"udp-2" * 220, b"udp-3"):
    s.sendto(msg, ("127.0.0.1", int(sys.argv[1])))
    got = s.recv(65536)
    assert got == msg, "echo %r for %r" % (got[:40], msg[:40])
PY
kill -INT $pfpid; wait $pfpid 2>/dev/null

# 2. --stdio, vm/ form and TYPE/NAME/NS
out=$( (printf 'over stdio\n'; sleep 0.3) | "$KVCON" port-forward --stdio vm/web-00000/ns-00 "$EP") || fail "--stdio exit $?"
[ "$out" = "over stdio" ] || fail "--stdio echo: '$out'"
out=$(printf 'x\n' | "$KVCON" port-forward --stdio=true "$vmi" "$DEAD" 2>"$tmp/e"); rc=$?
[ $rc -eq 1 ] && grep -q "refused" "$tmp/e" || fail "--stdio to a dead port: rc $rc, $(cat "$tmp/e")"
"$KVCON" port-forward pod/web-00000 80 2>"$tmp/e" && fail "pod/ accepted"
grep -q "unsupported resource type" "$tmp/e" || fail "pod/ message: $(cat "$tmp/e")"

# 3. guest agent verbs: the subresources' JSON
"$KVCON" guestosinfo ns-00/web-00000 >"$tmp/gi.json" || fail "guestosinfo"
"$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["hostname"] == "web-00000" and "os" in d' "$tmp/gi.json" ||
	fail "guestosinfo JSON: $(head -5 "$tmp/gi.json")"
"$KVCON" -n ns-00 userlist web-00000 | "$PY" -c 'import json,sys; assert "items" in json.load(sys.stdin)' || fail "userlist"
"$KVCON" fslist ns-00/web-00000 | "$PY" -c 'import json,sys; assert "items" in json.load(sys.stdin)' || fail "fslist"

# 4. ssh and scp through a real sshd as guest port 22
mkdir -p "$tmp/ssh" /run/sshd 2>/dev/null
ssh-keygen -q -t ed25519 -N '' -f "$tmp/ssh/host" && ssh-keygen -q -t ed25519 -N '' -f "$tmp/ssh/id" || fail "ssh-keygen"
cp "$tmp/ssh/id.pub" "$tmp/ssh/authorized_keys"
SP=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat >"$tmp/ssh/sshd_config" <<CFG
ListenAddress 127.0.0.1:$SP
HostKey $tmp/ssh/host
AuthorizedKeysFile $tmp/ssh/authorized_keys
PidFile $tmp/ssh/sshd.pid
StrictModes no
UsePAM no
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
Subsystem sftp internal-sftp
CFG
"$SSHD" -D -e -f "$tmp/ssh/sshd_config" 2>"$tmp/sshd.log" & pids="$pids $!"
poll 5 "$PY" -c 'import socket,sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=1)' "$SP" 2>/dev/null ||
	{ cat "$tmp/sshd.log"; fail "sshd did not start"; }
fkctl post /fake/backend "{\"namespace\":\"ns-00\",\"name\":\"web-00000\",\"kind\":\"portforward\",\"ports\":{\"22\":\"127.0.0.1:$SP\"}}" >/dev/null ||
	fail "backend not set"
me=$(id -un)
sshopts=(-i "$tmp/ssh/id" --known-hosts "$tmp/ssh/known_hosts" -t "-oStrictHostKeyChecking=accept-new" -t "-oBatchMode=yes"
	-t "-F/dev/null")
out=$("$KVCON" ssh "${sshopts[@]}" "$me@$vmi" -c 'echo hello' 2>"$tmp/ssh.err") || { cat "$tmp/ssh.err" "$tmp/sshd.log"; fail "ssh exit"; }
[ "$out" = hello ] || fail "ssh -c 'echo hello' printed '$out'"
grep -q "^vmi.web-00000.ns-00 ssh-ed25519 " "$tmp/ssh/known_hosts" || fail "known host entry: $(cat "$tmp/ssh/known_hosts")"
out=$("$KVCON" ssh "${sshopts[@]}" -l "$me" vm/web-00000 -n ns-00 -c 'echo again' 2>"$tmp/ssh.err") || fail "ssh -l, vm/, -n"
[ "$out" = again ] || fail "ssh -l printed '$out'"
head -c 100000 /dev/urandom >"$tmp/up.bin"
"$KVCON" scp "${sshopts[@]}" "$tmp/up.bin" "$me@$vmi:$tmp/guest.bin" 2>"$tmp/scp.err" || { cat "$tmp/scp.err"; fail "scp up"; }
cmp -s "$tmp/up.bin" "$tmp/guest.bin" || fail "scp up: content"
"$KVCON" scp "${sshopts[@]}" "$me@$vmi:$tmp/guest.bin" "$tmp/down.bin" 2>"$tmp/scp.err" || { cat "$tmp/scp.err"; fail "scp down"; }
cmp -s "$tmp/up.bin" "$tmp/down.bin" || fail "scp down: content"
"$KVCON" scp "$tmp/up.bin" "host:/x" 2>"$tmp/e" && fail "scp to another host accepted"
grep -q "names another host" "$tmp/e" || fail "scp HOST:PATH message: $(cat "$tmp/e")"
echo PASS
