#!/bin/bash
# e2e-lane: cluster
# kube/ws.c against real WebSocket peers: websockify (Debian) bridging to a TCP echo server, over ws:// and
# wss:// (self-signed CA), and fakekube's console endpoint (TLS, bearer token, plain.kubevirt.io, refusals).
# Each case sends random bytes in random-sized writes and checks the echo byte for byte, then closes cleanly.
set -u
cd "$(dirname "$0")/../.."
command -v websockify >/dev/null || { echo "skip: websockify not installed"; exit 77; }
tmp=$(mktemp -d /tmp/kvcon-ws.XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; for f in "$tmp"/*.log; do echo "--- $f"; tail -20 "$f"; done; exit 1; }

# linked against the library of the build under test (build/, or build-asan/ with its sanitizer flags)
cc -std=c11 -D_GNU_SOURCE ${KVCON_CFLAGS:--O2 -g} -Isrc -o "$tmp/wsclient" tests/e2e/wsclient.c \
	"${KVCON_BUILD:-build}/libkvcon.a" \
	${KVCON_LIBS:-$(pkg-config --libs ncursesw libcurl json-c vterm libvncclient libvirt yaml-0.1 zlib) -lpthread -lm} ||
	fail "build wsclient"

# TCP echo server (standard library only)
cat >"$tmp/echo.py" <<'PY'
import socket, sys, threading
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0)); s.listen(8)
open(sys.argv[1] + ".tmp", "w").write(str(s.getsockname()[1]))
import os; os.rename(sys.argv[1] + ".tmp", sys.argv[1])
def serve(c):
    while True:
        d = c.recv(65536)
        if not d: break
        c.sendall(d)
    c.close()
while True:
    c, _ = s.accept(); threading.Thread(target=serve, args=(c,), daemon=True).start()
PY
python3 "$tmp/echo.py" "$tmp/echo.port" >"$tmp/echo.log" 2>&1 & pids+=($!)
for _ in $(seq 100); do [ -s "$tmp/echo.port" ] && break; sleep 0.05; done
eport=$(cat "$tmp/echo.port")

freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
waitport() { for _ in $(seq 200); do (echo >/dev/tcp/127.0.0.1/"$1") 2>/dev/null && return 0; sleep 0.05; done; return 1; }

# plain ws://
p1=$(freeport)
websockify 127.0.0.1:"$p1" 127.0.0.1:"$eport" >"$tmp/wsfy1.log" 2>&1 & pids+=($!)
waitport "$p1" || fail "websockify did not listen"
"$tmp/wsclient" -b 3000000 "ws://127.0.0.1:$p1/" || fail "ws:// echo"
"$tmp/wsclient" -b 1 "ws://127.0.0.1:$p1/" || fail "ws:// one byte"
"$tmp/wsclient" -p binary -b 200000 "ws://127.0.0.1:$p1/" || fail "ws:// with subprotocol binary"
# websockify accepts only 'binary' or no subprotocol: plain.kubevirt.io must be refused with its 400
"$tmp/wsclient" -p plain.kubevirt.io -r 400 "ws://127.0.0.1:$p1/" || fail "refusal not reported"

# wss:// with a self-signed CA
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$tmp/key.pem" -out "$tmp/cert.pem" -days 1 \
	-subj "/CN=localhost" -addext "subjectAltName=IP:127.0.0.1,DNS:localhost" >/dev/null 2>&1 || fail openssl
p2=$(freeport)
websockify --cert "$tmp/cert.pem" --key "$tmp/key.pem" --ssl-only 127.0.0.1:"$p2" 127.0.0.1:"$eport" \
	>"$tmp/wsfy2.log" 2>&1 & pids+=($!)
waitport "$p2" || fail "websockify (TLS) did not listen"
"$tmp/wsclient" -c "$tmp/cert.pem" -b 3000000 "wss://127.0.0.1:$p2/" || fail "wss:// echo"
# without the CA the TLS handshake must fail (no silent insecure fallback)
if "$tmp/wsclient" -b 10 "wss://127.0.0.1:$p2/" >"$tmp/noca.out" 2>&1; then fail "wss:// accepted an unknown CA"; fi

# the peer going away: websockify's backend closes -> the stream ends (not a hang)
cat >"$tmp/once.py" <<'PY'
import socket, sys, os
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0)); s.listen(1)
open(sys.argv[1] + ".tmp", "w").write(str(s.getsockname()[1])); os.rename(sys.argv[1] + ".tmp", sys.argv[1])
c, _ = s.accept(); n = 0
while n < 1000:
    d = c.recv(65536)
    if not d: break
    c.sendall(d); n += len(d)
c.close()
PY
python3 "$tmp/once.py" "$tmp/once.port" >"$tmp/once.log" 2>&1 & pids+=($!)
for _ in $(seq 100); do [ -s "$tmp/once.port" ] && break; sleep 0.05; done
p3=$(freeport)
websockify 127.0.0.1:"$p3" 127.0.0.1:"$(cat "$tmp/once.port")" >"$tmp/wsfy3.log" 2>&1 & pids+=($!)
waitport "$p3" || fail "websockify 3 did not listen"
"$tmp/wsclient" -e -b 1000 "ws://127.0.0.1:$p3/" || fail "peer close not reported"

# fakekube: TLS + bearer token + plain.kubevirt.io (its console echoes without a backend), and refusals
py=${FAKEKUBE_PYTHON:-python3}
mkdir -p "$tmp/fk"
$py tests/fakekube/fakekube.py --dir "$tmp/fk" --vms 2 --namespaces 1 >"$tmp/fakekube.log" 2>&1 & pids+=($!)
$py tests/fakekube/fkctl.py "$tmp/fk" wait 60 >/dev/null || fail "fakekube did not start"
url=$(cat "$tmp/fk/url"); tok=$(cat "$tmp/fk/token")
vmi=$($py tests/fakekube/fkctl.py "$tmp/fk" names virtualmachineinstances | head -1)
base="$url/apis/subresources.kubevirt.io/v1/namespaces/${vmi%/*}/virtualmachineinstances"
"$tmp/wsclient" -p plain.kubevirt.io -c "$tmp/fk/ca.crt" -t "$tok" -b 2000000 "$base/${vmi#*/}/console" \
	|| fail "fakekube console echo"
"$tmp/wsclient" -p plain.kubevirt.io -c "$tmp/fk/ca.crt" -t "$tok" -r 404 "$base/does-not-exist/console" \
	>"$tmp/r404.out" || fail "404 not reported"
grep -q 'not found' "$tmp/r404.out" || fail "404 reason lacks the API's message: $(cat "$tmp/r404.out")"
"$tmp/wsclient" -p plain.kubevirt.io -c "$tmp/fk/ca.crt" -t wrong-token -r 401 "$base/${vmi#*/}/console" \
	>/dev/null || fail "401 not reported"
echo "ok"
