#!/usr/bin/env bash
# embed-warm.sh - make `qemu:///embed?root=ROOT` fast to use from the first call.
#
#   scripts/embed-warm.sh ROOT          prints the URI (`make run`, and the tests' embedded roots)
#
# Two things made the first use of a new root take ~50 s here:
#  1. Without ROOT/etc/qemu.conf the driver runs QEMU as libvirt-qemu, which
#     cannot open /dev/kvm (root only). The capability probe, run as root,
#     sees KVM; the validity check, done for the qemu user, does not; so the
#     cache is judged outdated at every lookup and QEMU is probed again and
#     again (~4 s each, a dozen times for one `define`). With user = "root"
#     the cache is valid at once.
#  2. The probe itself (~4 s for qemu-system-x86_64): the cache file is the
#     same one a lab libvirtd writes, so it is shared through
#     build/cache/libvirt-qemu-caps (tests/lab/lib.sh's LAB_CAPS) and copied in.
# So: write ROOT/etc/qemu.conf when it is missing (root, no security driver,
# stdio_handler "file" since no virtlogd serves an embedded driver, no
# cgroups), seed the cache, then let libvirt confirm it (or probe once and
# share the result). Idempotent; run it before every test that uses ROOT.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
# the capability cache the test lab's daemons share (tests/lab/lib.sh)
LAB_CAPS=${KVCON_CACHE_DIR:-$ROOT/build/cache}/libvirt-qemu-caps
lab_log() { echo "embed-warm.sh: $*" >&2; }
lab_die() { lab_log "ERROR: $*"; exit 1; }
lab_ms() { date +%s%3N; }
lab_caps_save() {
    local d=$1 f tmp
    mkdir -p "$LAB_CAPS"
    for f in "$d"/cache/qemu/capabilities/*.xml; do
        [[ -s $f ]] || continue
        cmp -s "$f" "$LAB_CAPS/${f##*/}" && continue
        tmp=$(mktemp "$LAB_CAPS/.tmp.XXXXXX")
        cp "$f" "$tmp" && mv -f "$tmp" "$LAB_CAPS/${f##*/}"
    done
}

root=${1:-}
[[ -n $root ]] || { echo "usage: $0 ROOT" >&2; exit 2; }
[[ $(id -u) == 0 ]] || lab_log "not root: the embedded driver then runs unprivileged (this script is tested as root)"
command -v virsh >/dev/null || lab_die "virsh missing (run scripts/deps.sh)"
mkdir -p "$root"
root=$(cd "$root" && pwd)
uri="qemu:///embed?root=$root"
t0=$(lab_ms)

mkdir -p "$root/etc" "$root/cache/qemu/capabilities"
if [[ ! -e $root/etc/qemu.conf ]]; then
    cat >"$root/etc/qemu.conf" <<'EOF'
# written by scripts/embed-warm.sh: TCG-friendly embedded QEMU driver
user = "root"
group = "root"
dynamic_ownership = 0
remember_owner = 0
security_driver = "none"
stdio_handler = "file"
cgroup_controllers = [ ]
EOF
fi
had=$(ls "$root/cache/qemu/capabilities" | wc -l)
seeded=0
for f in "$LAB_CAPS"/*.xml; do
    [[ -s $f ]] || continue
    [[ -s $root/cache/qemu/capabilities/${f##*/} ]] && continue
    cp "$f" "$root/cache/qemu/capabilities/" && seeded=1
done

# the embedded driver logs warnings on stderr, and virsh says polkit is not running (root needs none): keep them
# out of test and `make run` output, and show them when virsh fails
if ! LIBVIRT_LOG_OUTPUTS="3:file:$root/embed-warm.log" \
    virsh -q -c "$uri" domcapabilities --virttype qemu --arch x86_64 >/dev/null 2>"$root/embed-warm.err"; then
    cat "$root/embed-warm.err" >&2
    lab_die "virsh -c '$uri' domcapabilities failed (see $root/embed-warm.log)"
fi
lab_caps_save "$root"
how=probed
[[ $had == 0 ]] || how=kept
[[ $seeded == 0 ]] || how=seeded
lab_log "warm in $(($(lab_ms) - t0)) ms (capability cache $how)"
echo "$uri"
