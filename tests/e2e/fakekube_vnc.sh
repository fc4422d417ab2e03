#!/bin/sh
# e2e-lane: cluster
# fakekube's built-in VNC server (no backend registered) seen through a real RFB client: kvcon's libvncclient
# over the KubeVirt VNC WebSocket takes a screenshot; the PNG must show the 320x200 colour bars.
# Exit 0 pass, 77 skip, anything else fail.
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
fk="$top/tests/fakekube"
KVCON=${KVCON_BIN:-$top/kvcon}
PY=${FAKEKUBE_PYTHON:-$(command -v python3 || echo /usr/bin/python3)}
[ -x "$KVCON" ] || { echo "SKIP: no kvcon binary"; exit 77; }
"$KVCON" vnc --help 2>&1 | grep -q -- '--screenshot' || { echo "SKIP: kvcon vnc has no --screenshot"; exit 77; }
tmp=$(mktemp -d)
pid=""
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM
fail() { echo "FAIL: $*" >&2; exit 1; }

"$PY" "$fk/fakekube.py" --dir "$tmp/fk" --vms 2 --namespaces 1 >"$tmp/fk.log" 2>&1 &
pid=$!
"$PY" "$fk/fkctl.py" "$tmp/fk" wait 60 || fail "fakekube did not start"
target=$("$PY" "$fk/fkctl.py" "$tmp/fk" names virtualmachineinstances | head -1)
KUBECONFIG="$tmp/fk/kubeconfig" timeout 60 "$KVCON" vnc "$target" --screenshot "$tmp/shot.png" --timeout 20 \
	>"$tmp/out.json" 2>"$tmp/err" || { cat "$tmp/err" >&2; fail "kvcon vnc --screenshot"; }
grep -q '"width":320,"height":200' "$tmp/out.json" || fail "screenshot size: $(cat "$tmp/out.json")"
"$PY" - "$tmp/shot.png" <<'PYEOF' || fail "screenshot pixels"
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n"
pos, idat, ihdr = 8, b"", None
while pos < len(data):
    n, typ = struct.unpack("!I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    if typ == b"IHDR":
        ihdr = struct.unpack("!IIBBBBB", body)
    elif typ == b"IDAT":
        idat += body
    pos += 12 + n
w, h, depth, ctype = ihdr[:4]
assert (w, h, depth) == (320, 200, 8), ihdr
bpp = {2: 3, 6: 4}[ctype]
raw = zlib.decompress(idat)
stride = w * bpp
prev = bytearray(stride)
rows = []
for y in range(h):
    f = raw[y * (stride + 1)]
    line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    for i in range(stride):
        a = line[i - bpp] if i >= bpp else 0
        b = prev[i]
        c = prev[i - bpp] if i >= bpp else 0
        if f == 1: line[i] = (line[i] + a) & 255
        elif f == 2: line[i] = (line[i] + b) & 255
        elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    rows.append(line)
    prev = line
bars = [(255, 255, 255), (255, 255, 0), (0, 255, 255), (0, 255, 0), (255, 0, 255), (255, 0, 0), (0, 0, 255), (0, 0, 0)]
for i, want in enumerate(bars):
    x = i * 40 + 20
    got = tuple(rows[100][x * bpp:x * bpp + 3])
    assert got == want, (i, got, want)
PYEOF
# virtctl's spelling: vnc screenshot TARGET -f - (the PNG alone on stdout, the same frame), -m; -f required
KUBECONFIG="$tmp/fk/kubeconfig" timeout 60 "$KVCON" vnc screenshot "$target" -f - -m --timeout 20 \
	>"$tmp/shot2.png" 2>"$tmp/err" || { cat "$tmp/err" >&2; fail "kvcon vnc screenshot -f -"; }
cmp -s "$tmp/shot.png" "$tmp/shot2.png" || fail "vnc screenshot -f - differs from --screenshot's PNG"
KUBECONFIG="$tmp/fk/kubeconfig" "$KVCON" vnc screenshot "$target" >/dev/null 2>"$tmp/err" && fail "screenshot without -f"
grep -q 'required flag(s) "file" not set' "$tmp/err" || fail "screenshot without -f: $(cat "$tmp/err")"
echo "PASS: fakekube_vnc (and vnc screenshot -f -)"
