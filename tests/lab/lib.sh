# shellcheck shell=bash
# lib.sh - sourced by libvirtd.sh and twohost.sh: one private libvirtd "host".
#
# A host is a directory D. Its libvirtd + virtlogd run in their own mount
# namespace (optionally also a network namespace) where private directories
# are bind-mounted over the fixed paths a root libvirtd uses (/etc/libvirt,
# /run/libvirt, /var/lib/libvirt, /var/log/libvirt, /var/cache/libvirt), so
# it never meets a system libvirtd. From the root namespace its socket is
# D/run/libvirt-sock. The mount namespace dies with the last process in it,
# so killing the processes is the whole cleanup.
#
# Needs: LAB_ROOT (repository root). Bash; callers run with `set -euo pipefail`.

LAB_CACHE=${KVCON_CACHE_DIR:-$LAB_ROOT/build/cache}
# QEMU capability cache shared between all lab daemons: a cold probe costs
# several seconds per daemon, a copied cache nothing (libvirt re-probes by
# itself when QEMU, libvirt or the kernel changed)
LAB_CAPS=$LAB_CACHE/libvirt-qemu-caps
# lab_caps_seed, lab_caps_save: the product's copy (scripts/embed-warm.sh uses them too)
# shellcheck source=scripts/caps-cache.sh
. "$LAB_ROOT/scripts/caps-cache.sh"

lab_log() { echo "${LAB_PROG:-lab}: $*" >&2; }
lab_die() { lab_log "ERROR: $*"; exit 1; }

lab_ms() { date +%s%3N; }

lab_need_root() {
    [[ $(id -u) == 0 ]] || { echo "${LAB_PROG:-lab}: needs root (mount namespaces, libvirtd)"; exit 77; }
    if ! command -v libvirtd >/dev/null || ! command -v virtlogd >/dev/null || ! command -v virsh >/dev/null; then
        echo "${LAB_PROG:-lab}: libvirtd/virtlogd/virsh missing (run scripts/deps.sh)"
        exit 77
    fi
}

# The QEMU driver looks up its compiled-in user and groups at start even when
# qemu.conf says root; Debian's libvirt-daemon-system would create them, and
# so does scripts/deps.sh. A test does not: it would hide a set-up that does
# not (the tests after the first lab test would pass by its side effect).
lab_ensure_accounts() {
    getent group kvm >/dev/null && getent group libvirt-qemu >/dev/null && getent passwd libvirt-qemu >/dev/null ||
        lab_die "the libvirt-qemu account or the kvm/libvirt-qemu groups are missing (run scripts/deps.sh as root)"
}

# pid in a pidfile, only if that process is alive and runs the expected binary
lab_live_pid() {
    local f=$1 want=$2 p c
    [[ -s $f ]] || return 1
    p=$(<"$f")
    [[ $p =~ ^[0-9]+$ ]] || return 1
    c=$(cat "/proc/$p/comm" 2>/dev/null) || return 1
    [[ $c == "$want"* ]] || return 1
    echo "$p"
}

# TERM all, wait up to T seconds for all, then KILL the rest
lab_kill_pids() {
    local t=$1 i p left
    shift
    (($#)) || return 0
    kill -TERM "$@" 2>/dev/null || true
    for ((i = 0; i < t * 10; i++)); do
        left=0
        for p in "$@"; do kill -0 "$p" 2>/dev/null && left=1; done
        ((left)) || return 0
        sleep 0.1
    done
    lab_log "KILL after ${t}s: $*"
    kill -KILL "$@" 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do
        left=0
        for p in "$@"; do kill -0 "$p" 2>/dev/null && left=1; done
        ((left)) || return 0
        sleep 0.1
    done
}

lab_uri() { echo "qemu+unix:///system?socket=$1/run/libvirt-sock"; }

lab_virsh() {
    local d=$1
    shift
    virsh -q -c "$(lab_uri "$d")" "$@"
}

# lab_host_config D NAME [UUID IP]: write the configs and the boot script.
# With IP the daemon listens on tcp (auth none) there, for migration.
lab_host_config() {
    local d=$1 name=$2 uuid=${3:-} ip=${4:-}
    mkdir -p "$d"/{etc,run,lib,log/qemu,cache/qemu/capabilities}
    [[ -n $uuid ]] || uuid=$(cat /proc/sys/kernel/random/uuid)
    [[ ${KVCON_LAB_SEED_CAPS:-1} == 0 ]] || lab_caps_seed "$d" || true
    {
        echo "# kvcon test lab host $name"
        # a fixed host UUID spares dmidecode; migration needs distinct ones
        echo "host_uuid = \"$uuid\""
        echo 'auth_unix_rw = "none"'
        echo 'auth_unix_ro = "none"'
        echo 'unix_sock_group = "root"'
        echo 'unix_sock_rw_perms = "0770"'
        echo 'log_outputs = "3:file:/var/log/libvirt/libvirtd.log"'
        if [[ -n $ip ]]; then
            echo 'listen_tls = 0'
            echo 'listen_tcp = 1'
            echo "listen_addr = \"$ip\""
            echo 'auth_tcp = "none"'
        fi
    } >"$d/etc/libvirtd.conf"
    {
        echo "# kvcon test lab host $name: TCG guests as root, no security driver"
        echo 'user = "root"'
        echo 'group = "root"'
        echo 'dynamic_ownership = 0'
        echo 'remember_owner = 0'
        echo 'security_driver = "none"'
        # no cgroups: two lab daemons both number guests from 1, so the two
        # halves of a migrating guest would share one cgroup name
        echo 'cgroup_controllers = [ ]'
        if [[ -n $ip ]]; then
            echo "migration_host = \"$ip\""
            echo "migration_address = \"$ip\""
        fi
    } >"$d/etc/qemu.conf"
    : >"$d/etc/virtlogd.conf"
    {
        echo "127.0.0.1 localhost"
        [[ -z ${LAB_HOSTS_LINES:-} ]] || printf '%s\n' "$LAB_HOSTS_LINES"
    } >"$d/hosts"
    local listen=
    [[ -z $ip ]] || listen=--listen
    # the pid files must be ours: the default ones (/run/libvirtd.pid,
    # /run/virtlogd.pid) belong to a system daemon. `--listen` is needed for
    # tcp: listen_tcp=1 alone opens no port in libvirt 9 (socket activation)
    cat >"$d/boot.sh" <<EOF
#!/bin/bash
# runs in a fresh mount (+UTS) namespace, see tests/lab/lib.sh
set -e
hostname $name
mount --bind $d/etc   /etc/libvirt
mount --bind $d/run   /run/libvirt
mount --bind $d/lib   /var/lib/libvirt
mount --bind $d/log   /var/log/libvirt
mount --bind $d/cache /var/cache/libvirt
mount --bind $d/hosts /etc/hosts
virtlogd -d -f /etc/libvirt/virtlogd.conf -p $d/virtlogd.pid
libvirtd -d $listen -f /etc/libvirt/libvirtd.conf -p $d/libvirtd.pid
EOF
    chmod 755 "$d/boot.sh"
}

# lab_host_start D [NETNS]
lab_host_start() {
    local d=$1 ns=${2:-} pre=()
    lab_ensure_accounts
    # the fixed mount points must exist in the root namespace to bind over them
    mkdir -p /etc/libvirt /run/libvirt /var/lib/libvirt /var/log/libvirt /var/cache/libvirt
    # nsenter --net rather than `ip netns exec`, which remounts /sys
    [[ -z $ns ]] || pre=(nsenter "--net=/run/netns/$ns" --)
    "${pre[@]}" unshare --mount --uts --propagation private -- "$d/boot.sh" >"$d/boot.out" 2>&1 ||
        { cat "$d/boot.out" >&2; lab_die "libvirtd in $d failed to start"; }
    local p
    p=$(lab_live_pid "$d/libvirtd.pid" libvirtd) || lab_die "libvirtd in $d exited (see $d/log/libvirtd.log)"
    # remember the mount namespace: every process in it is ours to stop
    readlink "/proc/$p/ns/mnt" >"$d/mntns"
}

lab_host_running() {
    local d=$1
    lab_live_pid "$d/libvirtd.pid" libvirtd >/dev/null && lab_live_pid "$d/virtlogd.pid" virtlogd >/dev/null
}

lab_host_wait() {
    local d=$1 t=${2:-60} end
    end=$((SECONDS + t))
    until lab_virsh "$d" uri >/dev/null 2>&1; do
        lab_host_running "$d" || lab_die "libvirtd in $d died (see $d/log/libvirtd.log)"
        ((SECONDS < end)) || lab_die "libvirtd in $d not answering after ${t}s (see $d/log/libvirtd.log)"
        sleep 0.1
    done
}

# Probe QEMU capabilities now rather than in the first test's `virsh start`,
# then share the result with every later lab daemon.
lab_host_warm() {
    local d=$1
    lab_virsh "$d" domcapabilities --virttype qemu >/dev/null
}

# pids of the lab's processes (daemons, guests) in the host's mount namespace;
# the binary is checked too, in case the namespace is gone and its number reused
lab_host_pids() {
    local d=$1 ns p c
    [[ -s $d/mntns ]] || return 0
    ns=$(<"$d/mntns")
    for p in /proc/[0-9]*; do
        [[ $(readlink "$p/ns/mnt" 2>/dev/null) == "$ns" ]] || continue
        c=$(cat "$p/comm" 2>/dev/null) || continue
        case $c in libvirtd | virtlogd | qemu-system*) echo "${p#/proc/}" ;; esac
    done
    return 0
}

# destroy guests through libvirt, then stop every process of the host
lab_host_stop() {
    local d=$1 dom pids p f
    if lab_live_pid "$d/libvirtd.pid" libvirtd >/dev/null; then
        for dom in $(timeout 20 virsh -q -c "$(lab_uri "$d")" list --name 2>/dev/null); do
            timeout 20 virsh -q -c "$(lab_uri "$d")" destroy "$dom" >/dev/null 2>&1 || true
        done
    fi
    pids=$(lab_host_pids "$d")
    for f in "$d/libvirtd.pid" "$d/virtlogd.pid" "$d"/run/qemu/*.pid; do
        [[ -e $f ]] || continue
        p=$(lab_live_pid "$f" libvirtd || lab_live_pid "$f" virtlogd || lab_live_pid "$f" qemu-system) &&
            pids+=" $p"
    done
    # shellcheck disable=SC2046,SC2086
    lab_kill_pids 15 $(printf '%s\n' $pids | sort -u)
    rm -f "$d/libvirtd.pid" "$d/virtlogd.pid" "$d/mntns"
}
