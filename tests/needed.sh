#!/bin/sh
# needed.sh: kvcon links none of the engine's libraries (libvirt, libvirt-qemu, libxml2, libmicrohttpd,
# libarchive): they are kvcon-engine's (Makefile: KVCON_PKGS, ENGINE_PKGS), which must need them, so that the check
# is seen to bite. Reads the dynamic sections (readelf -d) of $KVCON_BIN (default ./kvcon) and the kvcon-engine
# beside it; well under a second.
set -u
cd "$(dirname "$0")/.." || exit 1
bin=${KVCON_BIN:-$PWD/kvcon}
eng=$(dirname "$bin")/kvcon-engine
engine_libs='libvirt\.so|libvirt-qemu\.so|libxml2\.so|libmicrohttpd\.so|libarchive\.so'
needed() { readelf -d "$1" | sed -n 's/.*(NEEDED).*Shared library: \[\(.*\)\]/\1/p'; }
for f in "$bin" "$eng"; do
	[ -x "$f" ] || { echo "needed: $f missing (make all)"; exit 1; }
done
bad=$(needed "$bin" | grep -E "^($engine_libs)")
if [ -n "$bad" ]; then
	echo "needed: $bin needs the engine's libraries: $(echo $bad)"
	exit 1
fi
for l in libvirt.so libvirt-qemu.so libxml2.so libmicrohttpd.so libarchive.so; do
	needed "$eng" | grep -q "^$l" || { echo "needed: $eng does not need $l (is the check reading the right thing?)"; exit 1; }
done
echo "needed: kvcon needs $(needed "$bin" | wc -l) libraries, none of the engine's"
