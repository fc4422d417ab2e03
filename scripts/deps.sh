#!/bin/sh
# Installs the Debian packages kvcon builds and tests with, only those missing.
# Idempotent and quiet when nothing is missing.
set -eu
PKGS="build-essential pkg-config clang libclang-rt-14-dev
libncurses-dev libcurl4-openssl-dev libjson-c-dev libvterm-dev libvncserver-dev libvirt-dev libyaml-dev zlib1g-dev
tmux qemu-system-x86 qemu-utils libvirt-daemon libvirt-daemon-driver-qemu libvirt-clients
busybox-static cpio gzip websockify python3-websockets python3-libvirt x11vnc iproute2 openssl
ncurses-bin ncurses-term procps util-linux xorriso genisoimage dosfstools
libarchive-dev libssl-dev docker-registry skopeo apache2-utils syslinux syslinux-common mtools"
missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" != 0 ]; then
	echo "deps.sh: missing Debian packages:$missing (run as root, or install them)" >&2
	exit 1
fi
echo "deps.sh: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
