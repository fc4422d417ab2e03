#!/bin/bash
# A hostile registry against `kvcon engine pull` (issue 23, findings 2 and 5), no engine and no guest: a fake
# registry in Python's standard library (tests/e2e/lib/fakeregistry.py, plain HTTP, insecure=true) serves
#  - a 1 MiB layer that is gzip of 1 GiB of zeros: refused over engine.image-max-size ("needs 1.0 GiB, ... free /
#    cap 512.0 MiB", nothing cached), then, without the cap, cached as a sparse file (du: no 1 GiB allocated);
#  - a manifest sent at one byte a second: the pull fails within the token-and-manifest deadline, naming the
#    registry;
#  - a blob sent at 100 bytes a second: aborted under the rate floor, naming the registry, after progress lines
#    that say bytes fetched and bytes unpacked.
# The deadlines are shortened with $KVCON_TEST_REGISTRY_DEADLINES (tests only: it can only make them stricter).
set -euo pipefail
ROOT=${KVCON_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
KV=${KVCON_BIN:-$ROOT/kvcon}
step() { echo "== $(date +%T) $*"; }
fail() { echo "FAIL: $*"; exit 1; }
command -v python3 >/dev/null || { echo "python3 missing"; exit 77; }

T=$(mktemp -d /tmp/kvol.XXXXXX)
REGPID=
cleanup() {
    if [[ -n $REGPID ]]; then kill "$REGPID" 2>/dev/null || true; wait "$REGPID" 2>/dev/null || true; fi
    [[ -n ${KEEP:-} ]] || rm -rf "$T"
}
trap cleanup EXIT
export XDG_CONFIG_HOME=$T/config XDG_STATE_HOME=$T/state HOME=$T
unset XDG_RUNTIME_DIR REGISTRY_AUTH_FILE DOCKER_CONFIG KVCON_TEST_REGISTRY_DEADLINES
CACHE=$XDG_STATE_HOME/kvcon/engine-data/imgcache
umask 077
mkdir -p "$XDG_CONFIG_HOME/kvcon"

step "the fake registry (1 GiB of zeros as a gzip'ed layer)"
python3 "$ROOT/tests/e2e/lib/fakeregistry.py" 1024 >"$T/reg.out" 2>"$T/reg.log" &
REGPID=$!
for _ in $(seq 100); do grep -q '^port ' "$T/reg.out" && break; sleep 0.1; done
read -r _ PORT _ LAYER <"$T/reg.out" || fail "the fake registry did not start: $(cat "$T/reg.log")"
REG=127.0.0.1:$PORT
echo "   registry $REG, layer $LAYER bytes"
((LAYER < 2 * 1024 * 1024)) || fail "the layer is $LAYER bytes, not about 1 MiB"
config() { printf 'registry = %s insecure=true\n%s' "$REG" "${1:-}" >"$XDG_CONFIG_HOME/kvcon/config"; }
# pull WANT_RC IMAGE: runs `kvcon engine pull` (at most 30 s), its stdout+stderr in $out, its time in $ms
pull() {
    local want=$1 t0 rc=0
    t0=$(date +%s%N)
    out=$(timeout 30 "$KV" engine pull "$2" 2>&1) || rc=$?
    ms=$((($(date +%s%N) - t0) / 1000000))
    echo "$out" | sed 's/^/   | /'
    echo "   [engine pull $2 -> $rc, $ms ms]"
    [[ $rc == "$want" ]] || fail "engine pull $2 exited $rc, wanted $want"
}
ncached() { find "$CACHE/disks" "$CACHE/tmp" -type f 2>/dev/null | wc -l; }

step "a layer whose header says more than engine.image-max-size: refused before a byte is written"
config "engine.image-max-size = 512Mi"$'\n'
pull 1 "$REG/zeros/disk:v1"
[[ $out =~ ErrImagePull:\ pulling\ image\ \"$REG/zeros/disk:v1\":\ registry\ $REG:\ blob\ sha256:[0-9a-f]{64}:\ layer:\ the\ disk\ disk/zeros.raw\ needs\ 1.0\ GiB,\ [0-9.]+\ [KMG]iB\ free\ /\ cap\ 512.0\ MiB ]] ||
    fail "no 'needs 1.0 GiB, Y free / cap 512.0 MiB' naming the registry"
[[ $(ncached) == 0 ]] || fail "the refused layer left $(ncached) files in the cache"

step "the same layer without the cap: cached sparse (1 GiB long, next to nothing allocated)"
config
pull 0 "$REG/zeros/disk:v1"
disk=$(tail -n1 <<<"$out")
[[ -f $disk && $disk == "$CACHE"/disks/* ]] || fail "no cached disk: $disk"
size=$(stat -c %s "$disk")
kib=$(du -k "$disk" | cut -f1)
echo "   $disk: $size bytes, du $kib KiB"
[[ $size == $((1 << 30)) ]] || fail "the cached disk is $size bytes, not 1 GiB"
((kib < 1024)) || fail "the cached disk takes $kib KiB on disk for $LAYER bytes fetched (not sparse)"

export KVCON_TEST_REGISTRY_DEADLINES=3,1024,2 # 3 s for token+manifests; a blob under 1 KiB/s for 2 s
step "a manifest at one byte a second: the pull fails at the deadline, naming the registry"
pull 1 "$REG/slow/manifest:v1"
[[ $out == *"ErrImagePull"*"registry $REG did not finish its token and manifest requests within 3 s"* ]] ||
    fail "the slow manifest's failure does not say the deadline and the registry"
((ms < 10000)) || fail "the slow manifest held the pull $ms ms (deadline 3 s)"

step "a blob at 100 bytes a second: aborted under the floor, naming the registry; progress says both figures"
pull 1 "$REG/slow/blob:v1"
[[ $out == *"ErrImagePull"*"registry $REG sent a blob slower than 1.0 KiB/s for 2 s: aborted"* ]] ||
    fail "the slow blob's failure does not say the floor and the registry"
grep -Eq "^pulling image \"$REG/slow/blob:v1\": [0-9.]+ [KMG]?i?B of [0-9.]+ KiB fetched, [0-9.]+ [KMG]?i?B unpacked$" <<<"$out" ||
    fail "no progress line with bytes fetched and bytes unpacked"
((ms < 15000)) || fail "the slow blob held the pull $ms ms (floor: 2 s)"
[[ $(find "$CACHE/tmp" -type f | wc -l) == 0 ]] || fail "the aborted pull left a temporary file"
echo PASS
