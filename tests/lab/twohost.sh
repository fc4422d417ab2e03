#!/usr/bin/env bash
# twohost.sh - two libvirt "hosts" on one machine, for live-migration tests.
#
#   eval "$(tests/lab/twohost.sh up)"   build the lab (idempotent), print env
#   tests/lab/twohost.sh env            SRC_URI DST_URI SRC_TCP_URI DST_TCP_URI ...
#   tests/lab/twohost.sh status         rc 0 when both hosts answer
#   tests/lab/twohost.sh exec a|b CMD   run CMD in host a's/b's namespaces
#   tests/lab/twohost.sh down           guests destroyed, daemons stopped,
#                                       namespaces and state dir removed
#
# Host a (the source) lives in netns ${NS}a at NET.1, host b in ${NS}b at
# NET.2, joined by one veth pair and nothing else. Each host is a libvirtd +
# virtlogd (tests/lab/lib.sh) with its own host_uuid, listening on tcp (auth
# none) at its address. URIs:
#   SRC_URI / DST_URI          qemu+unix:///system?socket=DIR/a|b/run/libvirt-sock
#                              (from the root namespace)
#   SRC_TCP_URI / DST_TCP_URI  qemu+tcp://NET.1|2/system (inside the
#                              namespaces: the p2p migration destination)
#   virsh -c "$SRC_URI" migrate --live --p2p --persistent --undefinesource DOM "$DST_TCP_URI"
# Kernel, initrd and disks must be at the same path on both hosts (they
# share the filesystem: any path outside the libvirt directories works).
# Per-host storage: /var/lib/libvirt inside host a is SRC_LIBDIR seen from
# the root namespace (b: DST_LIBDIR); a kernel put only under SRC_LIBDIR/boot
# and referenced as /var/lib/libvirt/boot/vmlinuz makes a migration to b
# fail ("could not open kernel file") and leaves the guest running on a.
#
# Knobs, so parallel labs do not collide (give each its own pair):
#   KVCON_TWOHOST_NS   netns name prefix (default kvcon- -> kvcon-a, kvcon-b)
#   KVCON_TWOHOST_DIR  state dir (default build/twohost; short: unix sockets)
#   KVCON_TWOHOST_NET  /24 prefix inside the namespaces (default 10.77.0)
#   KVCON_TWOHOST_KEEP=1  keep the state dir (logs) on down
set -euo pipefail

LAB_PROG=twohost.sh
LAB_ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/lab/lib.sh
. "$LAB_ROOT/tests/lab/lib.sh"

NSP=${KVCON_TWOHOST_NS:-kvcon-}
LAB=${KVCON_TWOHOST_DIR:-$LAB_ROOT/build/twohost}
NET=${KVCON_TWOHOST_NET:-10.77.0}
HOSTS="a b"
VETH=kvlab0

ns_of() { echo "$NSP$1"; }
ip_of() { case $1 in a) echo "$NET.1" ;; b) echo "$NET.2" ;; esac; }
uuid_of() { case $1 in a) echo 6b76636f-6e00-4000-8000-00000000000a ;; b) echo 6b76636f-6e00-4000-8000-00000000000b ;; esac; }
dir_of() { echo "$LAB/$1"; }
tcp_uri() { echo "qemu+tcp://$(ip_of "$1")/system"; }

host_up() { lab_host_running "$(dir_of "$1")" && [[ -e /run/netns/$(ns_of "$1") ]]; }
lab_is_up() { host_up a && host_up b; }

net_up() {
    local h na nb
    na=$(ns_of a) nb=$(ns_of b)
    for h in $HOSTS; do
        [[ -e /run/netns/$(ns_of "$h") ]] || ip netns add "$(ns_of "$h")"
        ip -n "$(ns_of "$h")" link set lo up
    done
    if ! ip -n "$na" link show "$VETH" >/dev/null 2>&1; then
        ip -n "$nb" link del "$VETH" 2>/dev/null || true
        ip -n "$na" link add "$VETH" type veth peer name "$VETH" netns "$nb"
    fi
    for h in $HOSTS; do
        ip -n "$(ns_of "$h")" addr replace "$(ip_of "$h")/24" dev "$VETH"
        ip -n "$(ns_of "$h")" link set "$VETH" up
    done
}

# the tcp listener of host h, as the other host sees it
wait_tcp() {
    local h=$1 o=$2 end=$((SECONDS + 30))
    until nsenter "--net=/run/netns/$(ns_of "$o")" -- virsh -q -c "$(tcp_uri "$h")" uri >/dev/null 2>&1; do
        ((SECONDS < end)) || lab_die "$(tcp_uri "$h") not reachable from $(ns_of "$o")"
        sleep 0.1
    done
}

print_env() {
    echo "export KVCON_TWOHOST_DIR='$LAB'"
    echo "export SRC_URI='$(lab_uri "$(dir_of a)")'"
    echo "export DST_URI='$(lab_uri "$(dir_of b)")'"
    echo "export SRC_TCP_URI='$(tcp_uri a)'"
    echo "export DST_TCP_URI='$(tcp_uri b)'"
    echo "export SRC_NETNS='$(ns_of a)'"
    echo "export DST_NETNS='$(ns_of b)'"
    echo "export SRC_LIBDIR='$(dir_of a)/lib'"
    echo "export DST_LIBDIR='$(dir_of b)/lib'"
}

cmd_down() {
    local h ns p
    for h in $HOSTS; do
        [[ -d $(dir_of "$h") ]] && lab_host_stop "$(dir_of "$h")" &
    done
    wait
    for h in $HOSTS; do
        ns=$(ns_of "$h")
        [[ -e /run/netns/$ns ]] || continue
        # only lab processes live in these namespaces
        # shellcheck disable=SC2046
        lab_kill_pids 10 $(ip netns pids "$ns" 2>/dev/null)
        ip netns del "$ns" 2>/dev/null || true
    done
    if [[ ${KVCON_TWOHOST_KEEP:-0} == 1 ]]; then
        lab_log "state kept in $LAB"
    elif [[ -d $LAB ]]; then
        # only what `up` made: KVCON_TWOHOST_DIR may be a directory of the caller's
        rm -rf "$LAB/a" "$LAB/b" "$LAB/env"
        rmdir "$LAB" 2>/dev/null || true
    fi
}

cmd_up() {
    local t0 h
    t0=$(lab_ms)
    if lab_is_up; then
        print_env
        return 0
    fi
    if [[ -d $LAB/a || -d $LAB/b || -e /run/netns/$(ns_of a) || -e /run/netns/$(ns_of b) ]]; then
        lab_log "partial lab found, tearing it down first"
        KVCON_TWOHOST_KEEP=0 cmd_down
    fi
    ((${#LAB} + 22 <= 107)) || lab_die "KVCON_TWOHOST_DIR too long for unix sockets: $LAB"
    # a failed start must leave nothing behind
    trap 'KVCON_TWOHOST_KEEP=1 cmd_down' EXIT
    mkdir -p "$LAB"
    net_up
    LAB_HOSTS_LINES="$(ip_of a) $(ns_of a)
$(ip_of b) $(ns_of b)"
    for h in $HOSTS; do
        lab_host_config "$(dir_of "$h")" "$(ns_of "$h")" "$(uuid_of "$h")" "$(ip_of "$h")"
        lab_host_start "$(dir_of "$h")" "$(ns_of "$h")"
    done
    for h in $HOSTS; do lab_host_wait "$(dir_of "$h")" 60; done
    wait_tcp a b
    wait_tcp b a
    # probe QEMU now (or confirm the shared cache) rather than in a test
    lab_host_warm "$(dir_of a)" &
    lab_host_warm "$(dir_of b)" &
    wait
    lab_caps_save "$(dir_of a)"
    trap - EXIT
    print_env >"$LAB/env"
    lab_log "up in $(($(lab_ms) - t0)) ms"
    print_env
}

cmd_status() {
    local h d rc=0 p
    for h in $HOSTS; do
        d=$(dir_of "$h")
        echo "== host $h: netns $(ns_of "$h"), $(ip_of "$h"), $d"
        p=$(lab_live_pid "$d/libvirtd.pid" libvirtd) && echo "libvirtd pid $p" || { echo "libvirtd DOWN"; rc=1; }
        p=$(lab_live_pid "$d/virtlogd.pid" virtlogd) && echo "virtlogd pid $p" || { echo "virtlogd DOWN"; rc=1; }
        [[ -e /run/netns/$(ns_of "$h") ]] && echo "netns present" || { echo "netns MISSING"; rc=1; }
        if host_up "$h"; then
            timeout 20 virsh -c "$(lab_uri "$d")" list --all 2>&1 | sed 's/^/  /' || rc=1
        fi
    done
    return $rc
}

cmd_exec() {
    local h=${1:-} p
    [[ $h == a || $h == b ]] || lab_die "usage: $0 exec a|b CMD..."
    shift
    p=$(lab_live_pid "$(dir_of "$h")/libvirtd.pid" libvirtd) || lab_die "host $h is not up"
    exec nsenter -t "$p" -m -u -n -r -w -- "$@"
}

lab_need_root
command -v ip >/dev/null || { echo "twohost.sh: iproute2 missing (run scripts/deps.sh)"; exit 77; }
case ${1:-} in
up) cmd_up ;;
down) cmd_down ;;
status) cmd_status ;;
env) lab_is_up || lab_die "lab is not up"; print_env ;;
exec) shift; cmd_exec "$@" ;;
*) echo "usage: $0 up|down|status|env|exec a|b CMD..." >&2; exit 2 ;;
esac
