# shellcheck shell=bash
# caps-cache.sh - sourced by scripts/embed-warm.sh and tests/lab/lib.sh: the QEMU capability cache that embedded
# roots and the test lab's libvirtd hosts share. A cold probe costs several seconds a QEMU binary, a copied cache
# nothing (libvirt re-probes by itself when QEMU, libvirt or the kernel changed).
# Needs: LAB_CAPS (the shared cache directory).

# Copies the shared cache's files that ROOT (an embedded root or a lab host's directory) lacks into
# ROOT/cache/qemu/capabilities. Status 0 when it copied any.
lab_caps_seed() {
    local d=$1 f copied=1
    mkdir -p "$d/cache/qemu/capabilities"
    for f in "$LAB_CAPS"/*.xml; do
        [[ -s $f ]] || continue
        [[ -s $d/cache/qemu/capabilities/${f##*/} ]] && continue
        cp "$f" "$d/cache/qemu/capabilities/" && copied=0
    done
    return $copied
}

# Shares ROOT's capability files back (atomically, only the ones that changed).
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
