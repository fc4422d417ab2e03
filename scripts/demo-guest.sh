#!/usr/bin/env bash
# demo-guest.sh - builds the tiny guest `make run`'s demo VM boots, and every kvcon lab test too:
#   OUTDIR/vmlinuz    Debian's cloud kernel (linux-image-<ver>-cloud-amd64)
#   OUTDIR/initrd.gz  busybox-static + busybox init: shell on ttyS0 and on tty1
#   OUTDIR/cmdline    the kernel arguments to boot it with
#   OUTDIR/guest.env  the three as shell assignments (also printed on stdout)
#
#   scripts/demo-guest.sh [OUTDIR]         default OUTDIR: build/guest
#   scripts/demo-guest.sh --ssh [OUTDIR]   the ssh variant, default OUTDIR: build/guest-ssh
#   eval "$(scripts/demo-guest.sh)"        -> KVCON_GUEST_KERNEL/INITRD/CMDLINE
#
# The ssh variant adds, from the host's Debian packages (scripts/deps.sh: dropbear-bin, qemu-guest-agent,
# openssh-server's sftp-server), each binary with the libraries ldd names:
#   - dropbear on port 22: root logs in with a key only (no password), a host key made at build time; sftp-server
#     for scp. No key is built in: a test appends its own /root/.ssh/authorized_keys as a second cpio archive
#     (the kernel unpacks concatenated archives in order): `cat initrd.gz keys.cpio.gz >its-own-initrd.gz`;
#   - qemu-guest-agent on the virtio-serial port org.qemu.guest_agent.0 (what libvirt and KubeVirt attach);
#     /etc/os-release names the guest (ID=kvcon-lab);
#   - busybox httpd on port 8000 serving /srv/www/index.html: KVCON-HTTPD-OK;
#   - a UDP echo on port 7000 (built here with cc -static: busybox has no UDP server).
# It prints KVCON-SSH-READY on the console once dropbear and the agent are started.
#
# The guest prints "KVCON-GUEST-READY" on ttyS0 each time its serial shell
# (re)starts, and a banner on the VGA text console (tty1) for VNC tests.
# A cloud-init seed on a virtio disk (an ISO 9660 NoCloud or config-drive
# image) is printed on the console at boot, between KVCON-CLOUDINIT-BEGIN and
# KVCON-CLOUDINIT-END lines (the files' names, then their contents).
# `exit` respawns the shell; `poweroff` / `poweroff -f` power the machine off,
# so QEMU exits. Idempotent: a stamp (kernel .deb + hash of this script)
# skips the rebuild; the kernel .deb is cached in KVCON_CACHE_DIR
# (default build/cache). A virtio NIC is brought up with DHCP (busybox
# udhcpc) in the background; the lease, `ip addr` and `ip route` are printed
# between KVCON-NET-BEGIN and KVCON-NET-END lines. Env: KVCON_GUEST_KERNEL_DEB=/path/to.deb overrides
# the download (offline machines).
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
VARIANT=base
if [[ ${1:-} == --ssh ]]; then
    VARIANT=ssh
    shift
fi
if [[ $VARIANT == ssh ]]; then OUT=${1:-$ROOT/build/guest-ssh}; else OUT=${1:-$ROOT/build/guest}; fi
CACHE=${KVCON_CACHE_DIR:-$ROOT/build/cache}
CMDLINE='console=tty0 console=ttyS0 quiet panic=-1'

log() { echo "demo-guest.sh: $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

mkdir -p "$OUT" "$CACHE"
OUT=$(cd "$OUT" && pwd)
CACHE=$(cd "$CACHE" && pwd)

# several tests (and several worktrees sharing a cache) may call us at once
exec 9>"$CACHE/.guest.lock"
flock 9

# -------------------------------------------------------------- the kernel
# The version the cloud metapackage currently depends on, else the newest
# .deb already in the cache (so a machine without apt lists still works).
cloud_kernel_pkg() {
    apt-cache depends linux-image-cloud-amd64 2>/dev/null |
        sed -n 's/^ *Depends: \(linux-image-[0-9].*-cloud-amd64\)$/\1/p' | head -n1 || true
}

kernel_deb() {
    local pkg deb
    if [[ -n ${KVCON_GUEST_KERNEL_DEB:-} ]]; then
        [[ -r $KVCON_GUEST_KERNEL_DEB ]] || die "KVCON_GUEST_KERNEL_DEB=$KVCON_GUEST_KERNEL_DEB unreadable"
        echo "$KVCON_GUEST_KERNEL_DEB"
        return
    fi
    # apt-cache takes ~1 s: remember its answer until the apt lists change
    local lists key
    lists=$(stat -c %Y /var/lib/apt/lists 2>/dev/null || echo none)
    key=$CACHE/.kernel-pkg
    if [[ -s $key && $(head -n1 "$key") == "$lists" ]]; then
        pkg=$(sed -n 2p "$key")
    else
        pkg=$(cloud_kernel_pkg)
        if [[ -z $pkg && $(id -u) == 0 ]] &&
            ! ls "$CACHE"/linux-image-*-cloud-amd64_*_amd64.deb >/dev/null 2>&1; then
            # a fresh machine may have no package lists yet
            log "no linux-image-cloud-amd64 in the apt lists: apt-get update"
            apt-get update -qq >&2 || true
            lists=$(stat -c %Y /var/lib/apt/lists 2>/dev/null || echo none)
            pkg=$(cloud_kernel_pkg)
        fi
        [[ -z $pkg ]] || printf '%s\n%s\n' "$lists" "$pkg" >"$key"
    fi
    if [[ -n $pkg ]]; then
        deb=$(ls -t "$CACHE/${pkg}_"*_amd64.deb 2>/dev/null | head -n1) || true
        if [[ -z $deb ]]; then
            log "downloading $pkg"
            # apt's _apt sandbox user may not be able to write into the cache
            (cd "$CACHE" && apt-get download -q -o APT::Sandbox::User=root "$pkg" >&2) ||
                log "apt-get download $pkg failed"
            deb=$(ls -t "$CACHE/${pkg}_"*_amd64.deb 2>/dev/null | head -n1) || true
        fi
    fi
    [[ -n ${deb:-} ]] || deb=$(ls -t "$CACHE"/linux-image-*-cloud-amd64_*_amd64.deb 2>/dev/null | head -n1) || true
    [[ -n ${deb:-} ]] || die "no cloud kernel package (apt-get update? or set KVCON_GUEST_KERNEL_DEB)"
    echo "$deb"
}

# -------------------------------------------------------------- the initrd
write_initrd_tree() {
    local t=$1 a
    mkdir -p "$t"/{bin,sbin,etc,proc,sys,dev,tmp,root,run,mnt,usr/bin,usr/sbin}
    cp /bin/busybox "$t/bin/busybox"
    # every applet as a link, so init, vi, poweroff, setsid... are on PATH
    for a in $("$t/bin/busybox" --list-full); do
        [[ -e $t/$a ]] || ln -s /bin/busybox "$t/$a"
    done

    cat >"$t/init" <<'EOF'
#!/bin/sh
# kvcon lab guest: mount the kernel filesystems, then hand over to busybox
# init (it respawns the shells and handles poweroff/reboot signals).
export PATH=/sbin:/usr/sbin:/bin:/usr/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /tmp
hostname guest
# ACPI power button -> /dev/input/event* -> acpid -> poweroff: a graceful
# shutdown request (virsh shutdown, QMP system_powerdown) is obeyed
insmod /lib/modules/evdev.ko
insmod /lib/modules/button.ko
# started before any shell, and waited for until it holds the input devices:
# once the marker is out, a power-button press is never missed
acpid -f -c /etc/acpi -a /etc/acpid.conf -l /tmp/acpid.log &
# virtio disks and ISO 9660: a cloud-init seed (NoCloud "cidata" or config-2) is shown on the console
for m in virtio_ring virtio virtio_pci_legacy_dev virtio_pci_modern_dev virtio_pci virtio_blk cdrom isofs; do
	insmod /lib/modules/$m.ko 2>/dev/null
done
if grep -qs 0x0002 /sys/bus/virtio/devices/*/device; then
	j=0
	while [ $j -lt 40 ] && ! ls /dev/vd? >/dev/null 2>&1; do
		sleep 0.05
		j=$((j + 1))
	done
fi
for d in /dev/vd?; do
	[ -b "$d" ] && mount -t iso9660 -o ro "$d" /mnt 2>/dev/null || continue
	if [ -f /mnt/user-data ] || [ -d /mnt/openstack ]; then
		echo "KVCON-CLOUDINIT-BEGIN $d"
		for f in /mnt/meta-data /mnt/user-data /mnt/network-config /mnt/openstack/latest/*; do
			[ -f "$f" ] || continue
			echo "--- $f"
			cat "$f"
			echo
		done
		echo "KVCON-CLOUDINIT-END"
	fi
	umount /mnt
done
acpid_pid=$!
# a virtio NIC (the pod network): DHCP in the background, the result on the console
for m in failover net_failover virtio_net; do
	insmod /lib/modules/$m.ko 2>/dev/null
done
if [ -e /sys/class/net/eth0 ]; then
	ip link set lo up
	(
		ip link set eth0 up
		udhcpc -i eth0 -q -n -t 20 -T 1 -s /etc/udhcpc.script >/tmp/udhcpc.log 2>&1
		echo "KVCON-NET-BEGIN rc=$?"
		cat /tmp/udhcpc.log
		ip -4 addr show dev eth0
		ip -4 route
		cat /etc/resolv.conf 2>/dev/null
		echo "KVCON-NET-END"
	) >/dev/console 2>&1 &
fi
i=0
while [ $i -lt 100 ] && ! ls -l /proc/$acpid_pid/fd 2>/dev/null | grep -q /dev/input/; do
	sleep 0.05
	i=$((i + 1))
done
# a variant's own start-up (the ssh variant: the agent's port, dropbear, qemu-ga)
[ -x /etc/guest-extra ] && /etc/guest-extra
exec /sbin/init
EOF
    chmod 755 "$t/init"

    cat >"$t/etc/inittab" <<'EOF'
ttyS0::respawn:/bin/guest-shell serial
tty1::respawn:/bin/guest-shell vga
::ctrlaltdel:/sbin/reboot
::shutdown:/bin/umount -a -r
EOF

    # The marker is printed by the process that already holds the tty open:
    # bytes the host sends once it has seen the marker are queued, not lost.
    cat >"$t/bin/guest-shell" <<'EOF'
#!/bin/sh
export PATH=/sbin:/usr/sbin:/bin:/usr/bin HOME=/root PS1='guest:\w# '
cd /root
case $1 in
serial)
	export TERM=vt100
	echo "KVCON-GUEST-READY"
	;;
vga)
	export TERM=linux
	echo "KVCON-GUEST-READY on the VGA console (tty1)"
	echo "kvcon lab guest $(uname -r): a shell on tty1 follows"
	;;
esac
exec cttyhack sh -l
EOF
    chmod 755 "$t/bin/guest-shell"
    # busybox acpid: event name -> action, a script under /etc/acpi
    echo "PWRF power" >"$t/etc/acpid.conf"
    mkdir -p "$t/etc/acpi"
    printf '#!/bin/sh\necho "KVCON-GUEST-POWER-BUTTON" >/dev/console\nexec poweroff\n' >"$t/etc/acpi/power"
    chmod 755 "$t/etc/acpi/power"
    echo "guest" >"$t/etc/hostname"
    # udhcpc's lease script: address, default route, DNS (busybox ip)
    cat >"$t/etc/udhcpc.script" <<'EOF'
#!/bin/sh
case $1 in
deconfig) ip -4 addr flush dev "$interface"; ip link set "$interface" up ;;
bound|renew)
	ip -4 addr flush dev "$interface"
	ip -4 addr add "$ip/${mask:-24}" dev "$interface"
	for r in $router; do ip -4 route add default via "$r" dev "$interface"; break; done
	: >/etc/resolv.conf
	for d in $dns; do echo "nameserver $d" >>/etc/resolv.conf; done
	echo "KVCON-DHCP-LEASE $ip/${mask:-24} router ${router:-none} on $interface"
	;;
esac
exit 0
EOF
    chmod 755 "$t/etc/udhcpc.script"
    printf 'root:x:0:0:root:/root:/bin/sh\n' >"$t/etc/passwd"
    printf 'root:x:0:\n' >"$t/etc/group"
}

# copy_bin TREE BINARY [AS]: the binary (at AS, default its own path) and every library ldd names, at their
# paths, into TREE
copy_bin() {
    local t=$1 b=$2 as=${3:-$2} lib
    [[ -x $b ]] || die "$b missing (run scripts/deps.sh)"
    mkdir -p "$t$(dirname "$as")"
    cp -L "$b" "$t$as"
    for lib in $(ldd "$b" | sed -n 's/.*=> \(\/[^ ]*\) .*/\1/p; s/^[[:space:]]*\(\/[^ ]*\) (.*/\1/p'); do
        [[ -e $t$lib ]] && continue
        mkdir -p "$t$(dirname "$lib")"
        cp -L "$lib" "$t$lib"
    done
}

# the ssh variant's additions to the tree (see the header)
write_ssh_tree() {
    local t=$1
    copy_bin "$t" /usr/sbin/dropbear
    copy_bin "$t" /usr/lib/openssh/sftp-server /usr/lib/sftp-server
    copy_bin "$t" /usr/sbin/qemu-ga
    mkdir -p "$t/etc/dropbear" "$t/root/.ssh" "$t/srv/www" "$t/var/log"
    ln -s /run "$t/var/run"
    chmod 700 "$t/root/.ssh"
    # made once per build, not at each boot (a key under TCG costs boot time)
    dropbearkey -t ed25519 -f "$t/etc/dropbear/dropbear_ed25519_host_key" >/dev/null 2>&1 ||
        die "dropbearkey failed"
    printf '/bin/sh\n' >"$t/etc/shells"
    printf 'passwd: files\ngroup: files\nshadow: files\n' >"$t/etc/nsswitch.conf"
    printf 'NAME="kvcon lab guest"\nID=kvcon-lab\nVERSION_ID=1\nVERSION="1 (ssh)"\nPRETTY_NAME="kvcon lab guest 1 (ssh)"\n' \
        >"$t/etc/os-release"
    echo KVCON-HTTPD-OK >"$t/srv/www/index.html"
    # a UDP echo on port 7000 (busybox has no UDP server): a few lines of C, built static here
    cat >"$t/../udpecho.c" <<'EOF'
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
int main(int argc, char **argv)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(argc > 1 ? atoi(argv[1]) : 7000) };
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) < 0)
		return 1;
	for (char b[65536];;) {
		struct sockaddr_in p;
		socklen_t pl = sizeof p;
		ssize_t n = recvfrom(fd, b, sizeof b, 0, (struct sockaddr *)&p, &pl);
		if (n >= 0)
			sendto(fd, b, (size_t)n, 0, (struct sockaddr *)&p, pl);
	}
}
EOF
    cc -static -Os -o "$t/bin/udpecho" "$t/../udpecho.c" || die "cc -static udpecho.c failed (build-essential)"
    cat >"$t/etc/guest-extra" <<'EOF'
#!/bin/sh
# the ssh variant: the guest agent's port (no udev: its name is in sysfs), then the daemons
insmod /lib/modules/virtio_console.ko 2>/dev/null
: >/run/utmp
mkdir -p /dev/virtio-ports
i=0
while [ $i -lt 40 ]; do
	for p in /sys/class/virtio-ports/*; do
		[ "$(cat "$p/name" 2>/dev/null)" = org.qemu.guest_agent.0 ] &&
			ln -sf "/dev/${p##*/}" /dev/virtio-ports/org.qemu.guest_agent.0
	done
	[ -e /dev/virtio-ports/org.qemu.guest_agent.0 ] && break
	# no virtio-serial device at all (plain QEMU without the channel): nothing to wait for
	grep -qs 0x0003 /sys/bus/virtio/devices/*/device || break
	sleep 0.05
	i=$((i + 1))
done
cat >>/etc/inittab <<'TAB'
::respawn:/bin/guest-daemon dropbear /usr/sbin/dropbear -F -E -s -r /etc/dropbear/dropbear_ed25519_host_key -p 22
::respawn:/bin/guest-daemon qemu-ga /usr/sbin/qemu-ga -m virtio-serial -p /dev/virtio-ports/org.qemu.guest_agent.0 -t /run
::respawn:/bin/guest-daemon httpd /bin/busybox httpd -f -p 8000 -h /srv/www
::respawn:/bin/guest-daemon udpecho /bin/udpecho 7000
TAB
echo "KVCON-SSH-READY agent=$([ -e /dev/virtio-ports/org.qemu.guest_agent.0 ] && echo yes || echo no)"
EOF
    chmod 755 "$t/etc/guest-extra"
    # a daemon's output to its log, not the console; one whose device is missing waits instead of respawning hot
    cat >"$t/bin/guest-daemon" <<'EOF'
#!/bin/sh
n=$1
shift
[ -x "$1" ] || exec sleep 3600
case $n in qemu-ga) [ -e /dev/virtio-ports/org.qemu.guest_agent.0 ] || exec sleep 3600 ;; esac
exec "$@" >>/var/log/$n.log 2>&1
EOF
    chmod 755 "$t/bin/guest-daemon"
}

BUILD_TMP=
build() {
    local deb=$1 stamp=$2 tmp
    tmp=$(mktemp -d "$OUT/.build.XXXXXX")
    BUILD_TMP=$tmp
    trap 'rm -rf "$BUILD_TMP"' EXIT
    # the power button (ACPI) reaches acpid through these two modules
    dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$tmp" --wildcards './boot/vmlinuz-*' \
        './lib/modules/*/kernel/drivers/acpi/button.ko' './lib/modules/*/kernel/drivers/input/evdev.ko' \
        './lib/modules/*/kernel/drivers/virtio/*.ko' './lib/modules/*/kernel/drivers/block/virtio_blk.ko' \
        './lib/modules/*/kernel/drivers/cdrom/cdrom.ko' './lib/modules/*/kernel/fs/isofs/isofs.ko' \
        './lib/modules/*/kernel/drivers/net/virtio_net.ko' './lib/modules/*/kernel/drivers/net/net_failover.ko' \
        './lib/modules/*/kernel/net/core/failover.ko' './lib/modules/*/kernel/drivers/char/virtio_console.ko'
    mv "$tmp"/boot/vmlinuz-* "$tmp/vmlinuz"
    write_initrd_tree "$tmp/root"
    mkdir -p "$tmp/root/lib/modules"
    cp "$tmp"/lib/modules/*/kernel/drivers/acpi/button.ko "$tmp"/lib/modules/*/kernel/drivers/input/evdev.ko \
        "$tmp"/lib/modules/*/kernel/drivers/virtio/{virtio,virtio_ring,virtio_pci,virtio_pci_legacy_dev}.ko \
        "$tmp"/lib/modules/*/kernel/drivers/virtio/virtio_pci_modern_dev.ko \
        "$tmp"/lib/modules/*/kernel/drivers/block/virtio_blk.ko "$tmp"/lib/modules/*/kernel/drivers/cdrom/cdrom.ko \
        "$tmp"/lib/modules/*/kernel/fs/isofs/isofs.ko "$tmp"/lib/modules/*/kernel/drivers/net/virtio_net.ko \
        "$tmp"/lib/modules/*/kernel/drivers/net/net_failover.ko "$tmp"/lib/modules/*/kernel/net/core/failover.ko \
        "$tmp/root/lib/modules/"
    if [[ $VARIANT == ssh ]]; then
        cp "$tmp"/lib/modules/*/kernel/drivers/char/virtio_console.ko "$tmp/root/lib/modules/"
        write_ssh_tree "$tmp/root"
    fi
    (cd "$tmp/root" && find . | LC_ALL=C sort | cpio -o -H newc --quiet -R 0:0) | gzip -9n >"$tmp/initrd.gz"
    echo "$CMDLINE" >"$tmp/cmdline"
    # atomic: readers never see a half-written kernel or initrd
    mv -f "$tmp/vmlinuz" "$OUT/vmlinuz"
    mv -f "$tmp/initrd.gz" "$OUT/initrd.gz"
    mv -f "$tmp/cmdline" "$OUT/cmdline"
    echo "$stamp" >"$OUT/.stamp"
    rm -rf "$tmp"
    trap - EXIT
}

if [[ ! -x /bin/busybox ]] || ! /bin/busybox --list | grep -x cttyhack >/dev/null; then
    die "/bin/busybox missing or not busybox-static (run scripts/deps.sh)"
fi
command -v cpio >/dev/null || die "cpio missing (run scripts/deps.sh)"

deb=$(kernel_deb)
stamp="$(basename "$deb") $(sha256sum "$0" | cut -c1-16) $(sha256sum /bin/busybox | cut -c1-16)"
if [[ $VARIANT == ssh ]]; then
    command -v dropbearkey >/dev/null || die "dropbearkey missing (run scripts/deps.sh: dropbear-bin)"
    stamp="$stamp ssh $(cat /usr/sbin/dropbear /usr/sbin/qemu-ga /usr/lib/openssh/sftp-server | sha256sum | cut -c1-16)"
fi
if [[ -s $OUT/vmlinuz && -s $OUT/initrd.gz && -s $OUT/.stamp && $(<"$OUT/.stamp") == "$stamp" ]]; then
    :
else
    t0=$(date +%s%N)
    build "$deb" "$stamp"
    log "built from $(basename "$deb") in $((($(date +%s%N) - t0) / 1000000)) ms"
fi

{
    echo "KVCON_GUEST_KERNEL='$OUT/vmlinuz'"
    echo "KVCON_GUEST_INITRD='$OUT/initrd.gz'"
    echo "KVCON_GUEST_CMDLINE='$CMDLINE'"
} >"$OUT/guest.env"
cat "$OUT/guest.env"
