#!/usr/bin/env bash
# containerdisk.sh - packs the lab guest (scripts/demo-guest.sh) as a KubeVirt containerDisk OCI image:
#   OUTDIR/boot.raw     a BIOS-bootable disk: FAT with syslinux, the guest's kernel and initramfs
#                       (prints KVCON-GUEST-READY on ttyS0 like the kernel-boot guest)
#   OUTDIR/disk.qcow2   the same as qcow2
#   OUTDIR/oci/         an OCI image layout, tags:
#                         guest     one gzip layer holding /disk/disk.qcow2 (owner 107, as KubeVirt's images)
#                         index     an image index: linux/arm64 (a decoy without a disk) first, then linux/amd64
#                         other     a different disk (raw, 4 MiB of random data) for failure tests
#                         big       a 160 MiB raw disk of random data (pulls that take a while)
#
#   tests/lab/containerdisk.sh [OUTDIR]     default OUTDIR: build/cdisk
# Idempotent: a stamp (the guest's stamp + hash of this script) skips the rebuild.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
OUT=${1:-$ROOT/build/cdisk}
log() { echo "containerdisk.sh: $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

for c in mkfs.vfat syslinux mcopy qemu-img sha256sum gzip tar; do
    command -v "$c" >/dev/null || die "$c missing (run scripts/deps.sh)"
done
"$ROOT/scripts/demo-guest.sh" >/dev/null
G=$ROOT/build/guest
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
exec 9>"$OUT/.lock"
flock 9
stamp="$(cat "$G/.stamp") $(sha256sum "$0" | cut -c1-16)"
if [[ -s $OUT/.stamp && $(<"$OUT/.stamp") == "$stamp" && -f $OUT/oci/index.json ]]; then
    exit 0
fi
T=$(mktemp -d "$OUT/.build.XXXXXX")
trap 'rm -rf "$T"' EXIT

# ---- the bootable disk: syslinux on a partitionless FAT (SeaBIOS boots its boot sector)
truncate -s 24M "$T/boot.raw"
mkfs.vfat -n KVCONGUEST "$T/boot.raw" >/dev/null
syslinux --install "$T/boot.raw"
cat >"$T/syslinux.cfg" <<EOF
DEFAULT guest
PROMPT 0
TIMEOUT 0
LABEL guest
  KERNEL vmlinuz
  INITRD initrd.gz
  APPEND $(cat "$G/cmdline")
EOF
MTOOLS_SKIP_CHECK=1 mcopy -i "$T/boot.raw" "$G/vmlinuz" "$G/initrd.gz" "$T/syslinux.cfg" ::/
qemu-img convert -f raw -O qcow2 "$T/boot.raw" "$T/disk.qcow2"

# ---- the OCI layout
L=$T/oci
mkdir -p "$L/blobs/sha256"
blob() { # blob FILE -> prints "sha256:<hex> <size>", stores it
    local h s
    h=$(sha256sum "$1" | cut -d' ' -f1)
    s=$(stat -c %s "$1")
    cp "$1" "$L/blobs/sha256/$h"
    echo "sha256:$h $s"
}
layer() { # layer DISKFILE NAME -> "digest size diffid"
    local d=$T/tree.$2
    mkdir -p "$d/disk"
    cp "$1" "$d/disk/$2"
    tar --owner=107 --group=107 --numeric-owner --mtime=@0 -C "$d" -cf "$T/layer.tar" disk
    local diff
    diff=sha256:$(sha256sum "$T/layer.tar" | cut -d' ' -f1)
    gzip -n -1 -c "$T/layer.tar" >"$T/layer.tgz"
    echo "$(blob "$T/layer.tgz") $diff"
}
image() { # image ARCH LAYERDIGEST LAYERSIZE DIFFID -> "digest size" of the image manifest
    printf '{"architecture":"%s","os":"linux","rootfs":{"type":"layers","diff_ids":["%s"]},"config":{}}' \
        "$1" "$4" >"$T/config.json"
    read -r cd cs < <(blob "$T/config.json")
    printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar+gzip","digest":"%s","size":%s}]}' \
        "$cd" "$cs" "$2" "$3" >"$T/manifest.json"
    blob "$T/manifest.json"
}
read -r gd gs gdiff < <(layer "$T/disk.qcow2" disk.qcow2)
read -r md ms < <(image amd64 "$gd" "$gs" "$gdiff")
# the decoy: an arm64 image whose layer has no disk/
mkdir -p "$T/tree.decoy/etc"
echo decoy >"$T/tree.decoy/etc/decoy"
tar --mtime=@0 -C "$T/tree.decoy" -cf "$T/layer.tar" etc
ddiff=sha256:$(sha256sum "$T/layer.tar" | cut -d' ' -f1)
gzip -n -1 -c "$T/layer.tar" >"$T/layer.tgz"
read -r dd ds < <(blob "$T/layer.tgz")
read -r amd asz < <(image arm64 "$dd" "$ds" "$ddiff")
printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"%s","size":%s,"platform":{"architecture":"arm64","os":"linux"}},{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"%s","size":%s,"platform":{"architecture":"amd64","os":"linux"}}]}' \
    "$amd" "$asz" "$md" "$ms" >"$T/index-manifest.json"
read -r xd xs < <(blob "$T/index-manifest.json")
head -c 4M /dev/urandom >"$T/other.raw"
read -r od os odiff < <(layer "$T/other.raw" other.raw)
read -r omd oms < <(image amd64 "$od" "$os" "$odiff")
head -c 160M /dev/urandom >"$T/big.raw"
read -r bd bs bdiff < <(layer "$T/big.raw" big.raw)
rm -f "$T/big.raw" "$T/layer.tar" "$T/layer.tgz"
read -r bmd bms < <(image amd64 "$bd" "$bs" "$bdiff")
echo '{"imageLayoutVersion":"1.0.0"}' >"$L/oci-layout"
ent() { printf '{"mediaType":"application/vnd.oci.image.%s.v1+json","digest":"%s","size":%s,"annotations":{"org.opencontainers.image.ref.name":"%s"}}' "$@"; }
printf '{"schemaVersion":2,"manifests":[%s,%s,%s,%s]}' "$(ent manifest "$md" "$ms" guest)" "$(ent index "$xd" "$xs" index)" \
    "$(ent manifest "$omd" "$oms" other)" "$(ent manifest "$bmd" "$bms" big)" >"$L/index.json"
rm -rf "$OUT/oci"
mv "$T/boot.raw" "$T/disk.qcow2" "$OUT/"
mv "$L" "$OUT/oci"
echo "$stamp" >"$OUT/.stamp"
log "built $OUT (guest manifest $md, layer $gd)"
