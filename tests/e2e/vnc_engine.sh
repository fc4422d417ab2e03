#!/bin/bash
# kvcon vnc NS/NAME on a VM of the local engine (libvirt's embedded QEMU driver, the lab guest under TCG with
# the kernel also on the VGA console): `kvcon -c URI vnc default/NAME --screenshot` reaches the display through
# the engine's provider (virDomainOpenGraphicsFD) and saves the guest's 720x400 text screen, with the shell's
# banner on it (checked by its lit pixels growing past the BIOS screen); a stopped VM is refused with a message.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/engine-lib.bash"
engine_needs "QEMU and the embedded libvirt driver run as root here" qemu-system-x86_64
"$KV" --help 2>/dev/null | grep -q '^  engine ' || { echo "skip: the engine is not in this build"; exit 77; }

ENGINE_T=$(mktemp -d /tmp/kvvng.XXXXXX)
cleanup() {
	timeout 60 "$KV" -c "$URI" stop default/vvm --force >/dev/null 2>&1
	local f
	for f in "$ENGINE_T"/state/kvcon/engine/run/qemu/*.pid; do
		[ -f "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null
	done
	rm -rf "$ENGINE_T"
}
trap cleanup EXIT
engine_setup || { echo "skip: the lab guest could not be built"; exit 77; }
engine_embed_warm || fail "embed-warm"

m=$(manifest vvm Halted)
sed -i 's/kernelArgs: console=ttyS0 quiet panic=-1/kernelArgs: console=tty0 console=ttyS0 quiet panic=-1/' "$m"
kv engine apply -f "$m" >/dev/null 2>&1 || fail "apply"

# halted: no display to open
if timeout 120 "$KV" -c "$URI" --log-file "$ENGINE_T/halted.log" vnc default/vvm --screenshot "$ENGINE_T/h.png" \
	--timeout 10 >"$ENGINE_T/halted.out" 2>&1; then fail "a halted VM gave a frame"; fi
grep -qi 'vnc' "$ENGINE_T/halted.out" || fail "no reason for the halted VM: $(cat "$ENGINE_T/halted.out")"
echo "  halted VM refused: $(head -1 "$ENGINE_T/halted.out")"

timeout 180 "$KV" -c "$URI" start default/vvm --wait >"$ENGINE_T/start.out" 2>&1 || fail "start: $(cat "$ENGINE_T/start.out")"
lit() { python3 "$ROOT/tests/e2e/vnc_imgcmp.py" "$1" "$1" | sed -n 's/.* \([0-9]*\) non-black.*/\1/p'; }
shot() {
	timeout 120 "$KV" -c "$URI" --log-file "$ENGINE_T/vnc.log" vnc default/vvm --screenshot "$ENGINE_T/s.png" \
		--quiet-ms 500 --timeout 3 >"$ENGINE_T/s.out" 2>&1 &&
		grep -q '"width":720,"height":400' "$ENGINE_T/s.out" && [ "$(lit "$ENGINE_T/s.png")" -gt 5000 ]
}
deadline=$((SECONDS + 90))
until shot; do
	[ $SECONDS -ge $deadline ] && fail "no guest text screen through the engine: $(cat "$ENGINE_T/s.out")"
	sleep 1
done
echo "  engine VM display: $(grep "^{" "$ENGINE_T/s.out"), $(lit "$ENGINE_T/s.png") lit pixels"
echo PASS
