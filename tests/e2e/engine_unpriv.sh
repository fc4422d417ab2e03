#!/bin/bash
# QEMU not as root (issue 14): on libvirt's embedded driver, as kvcon sets it up by itself, a default guest's QEMU
# runs as the unprivileged account (libvirt-qemu, group kvm) and still reaches its shell on kvcon's serial
# console; its run directory is the account's and 0700; the test's private directories are reachable by that
# account (search-only ACL entries) and still closed to every other user; engine.qemu-user=root brings QEMU as
# root back (a setting of the engine service, which opens the root); a missing account is named in one line;
# kvcon not root refuses a host bridge naming the field, through an engine service of its own (nobody's, in
# nobody's directories, socket 0600, seeing nothing of root's, and root's closed to it).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/engine-lib.bash"

engine_needs "the embedded driver changes users only as root" qemu-system-x86_64 jq setpriv ps
getent passwd libvirt-qemu >/dev/null || fail "no libvirt-qemu account (scripts/deps.sh creates it)"
ENGINE_T=$(mktemp -d /tmp/kvu.XXXXXX)
NOBODY_T=$(mktemp -d /tmp/kvun.XXXXXX)
trap 'svc_stop_all "$NOBODY_T"; engine_embed_cleanup; rm -rf "$NOBODY_T"' EXIT
engine_setup "$ENGINE_T"
# no embed-warm.sh: kvcon alone prepares the new root
URI="qemu:///embed?root=$XDG_STATE_HOME/kvcon/engine"

qemu_user() { ps -o user= -p "$(rec_exec "$1" pid)" | tr -d ' '; }

step "first use of a new root: apply + start a default guest"
kv engine apply -f "$(manifest alpha Always)" >/dev/null || fail "apply"
[[ $(vmi_phase alpha) == Running ]] || fail "alpha not Running: $(vmi_phase alpha)"
grep -q '^user = "libvirt-qemu"' "$XDG_STATE_HOME/kvcon/engine/etc/qemu.conf" || fail "qemu.conf: $(cat "$XDG_STATE_HOME/kvcon/engine/etc/qemu.conf")"
marker alpha
pid=$(rec_exec alpha pid)
[[ $pid -gt 0 ]] || fail "no QEMU pid"
u=$(qemu_user alpha)
echo "   QEMU $pid runs as $u"
[[ -n $u && $u != root ]] || fail "QEMU runs as '$u'"
[[ $u == libvirt-qemu ]] || fail "QEMU runs as $u, wanted the default account libvirt-qemu"
# every uid of the process (real, effective, saved, fs) is the account's, and no capability is left
awk '/^Uid:/ { for (i = 2; i <= 5; i++) if ($i == 0) exit 1 }' "/proc/$pid/status" || fail "a root uid in $(grep ^Uid: "/proc/$pid/status")"
grep -q '^CapEff:[[:space:]]*0000000000000000$' "/proc/$pid/status" || fail "QEMU keeps capabilities: $(grep ^CapEff: "/proc/$pid/status")"

step "the run directory is the account's; private directories stay closed to others"
rd=$(rec_exec alpha runDir)
[[ $(stat -c '%U %a' "$rd") == "libvirt-qemu 700" ]] || fail "run dir $rd: $(stat -c '%U %a' "$rd")"
[[ -S $rd/ga.sock || -f $rd/serial.log ]] || fail "nothing of QEMU's in $rd: $(ls -la "$rd")"
# the account may pass through the test's 0700 directory, nobody else may
setpriv --reuid=libvirt-qemu --regid=kvm --init-groups test -x "$ENGINE_T" || fail "libvirt-qemu cannot search $ENGINE_T"
! setpriv --reuid=nobody --regid=nogroup --clear-groups test -x "$ENGINE_T" || fail "$ENGINE_T is open to nobody"
! setpriv --reuid=libvirt-qemu --regid=kvm --init-groups ls "$ENGINE_T" >/dev/null 2>&1 ||
    fail "libvirt-qemu may list $ENGINE_T (search only was wanted)"
[[ $(stat -c %a "$ENGINE_T") == *0 ]] || fail "$ENGINE_T others bits: $(stat -c '%a' "$ENGINE_T")"

step "engine.qemu-user=root: QEMU as root again, then the default back"
# the setting is the engine service's (it opens the root): a service started with it, and one without it again
kv engine stop alpha --grace-period 0 >/dev/null || fail "stop"
svc_stop_all "$ENGINE_T"
KVCON_ENGINE_QEMU_USER=root kv engine start alpha >/dev/null || fail "start as root"
[[ $(qemu_user alpha) == root ]] || fail "engine.qemu-user=root: QEMU runs as $(qemu_user alpha)"
marker alpha
kv engine stop alpha --grace-period 0 >/dev/null || fail "stop"
svc_stop_all "$ENGINE_T"
kv engine start alpha >/dev/null || fail "start with the default again"
[[ $(qemu_user alpha) == libvirt-qemu ]] || fail "default again: QEMU runs as $(qemu_user alpha)"
marker alpha
kv engine stop alpha --grace-period 0 >/dev/null || fail "stop"

step "a missing account is named"
svc_stop_all "$ENGINE_T"
out=$(KVCON_ENGINE_QEMU_USER=kvcon-no-such-account timeout 15 "$KV" -c "$URI" engine get vm 2>&1 || true)
[[ $out == *"'kvcon-no-such-account', does not exist"* ]] || fail "missing account: $out"
echo "   $out"
step "kvcon not root: a host bridge is refused with its field"
chmod 755 "$NOBODY_T"
mkdir -p "$NOBODY_T/home/images"
cp -r "$KVCON_ENGINE_IMAGES/kvcon-lab-guest" "$NOBODY_T/home/images/"
engine_manifest "$NOBODY_T/br.yaml" br Halted 192Mi >/dev/null
sed -i -e 's/autoattachPodInterface: false/interfaces: [{name: default, bridge: {}}]/' -e '$a\      networks: [{name: default, pod: {}}]' "$NOBODY_T/br.yaml"
chown -R nobody:nogroup "$NOBODY_T/home"
# a copy nobody can run: the build tree may be under a home nobody cannot enter (the clean room's /root/kvcon)
cp "$KV" "$NOBODY_T/kvcon" && cp "$(dirname "$KV")/kvcon-engine" "$NOBODY_T/kvcon-engine" &&
    chmod 755 "$NOBODY_T/kvcon" "$NOBODY_T/kvcon-engine"
as_nobody() {
    setpriv --reuid=nobody --regid=nogroup --clear-groups env -i PATH=/usr/bin:/bin HOME="$NOBODY_T/home" ${ASAN_OPTIONS:+ASAN_OPTIONS="$ASAN_OPTIONS"} \
        XDG_STATE_HOME="$NOBODY_T/home/state" KVCON_ENGINE_IMAGES="$NOBODY_T/home/images" KVCON_ENGINE_ACCEL=tcg \
        KVCON_ENGINE_BRIDGE=kvcon-nobr timeout 120 "$NOBODY_T/kvcon" "$@"
}
out=$(as_nobody engine apply -f "$NOBODY_T/br.yaml" 2>&1) || fail "apply as nobody: $out"
out=$(as_nobody engine start br 2>&1 || true)
[[ $out == *"interfaces[0].bridge: a host bridge needs kvcon as root"* ]] || fail "bridge as nobody: $out"

step "nobody's engine service: nobody's own, in nobody's directories, closed to others, blind to root's"
nsock=$(find "$NOBODY_T/home/state/kvcon" -maxdepth 1 -name 'engine-*.sock' -type s)
[[ -n $nsock && $(wc -l <<<"$nsock") == 1 ]] || fail "no single service socket in nobody's state: $nsock"
[[ $(stat -c '%U %a' "$nsock") == "nobody 600" ]] || fail "nobody's socket: $(stat -c '%U %a' "$nsock")"
[[ $(stat -c '%U %a' "${nsock%/*}") == "nobody 700" ]] || fail "its directory: $(stat -c '%U %a' "${nsock%/*}")"
npid=$(cat "$nsock.pid")
[[ $(ps -o user= -p "$npid" | tr -d ' ') == nobody ]] || fail "nobody's service $npid runs as $(ps -o user= -p "$npid")"
tr '\0' '\n' <"/proc/$npid/environ" | grep -q "^XDG_STATE_HOME=$NOBODY_T/home/state$" ||
    fail "nobody's service has another state directory: $(tr '\0' ' ' <"/proc/$npid/environ")"
# nothing of root's: its records, its root, its service
out=$(as_nobody engine get vm 2>&1) || fail "get vm as nobody: $out"
[[ $out == *br* && $out != *alpha* ]] || fail "nobody's service lists: $out"
! grep -qF "$ENGINE_T" "$NOBODY_T/home/state/kvcon/engine-serve.log" || fail "root's directories in nobody's log"
! tr '\0' '\n' <"/proc/$npid/cmdline" | grep -qF "$ENGINE_T" || fail "nobody's service names root's directories"
kv engine get vm >/dev/null || fail "root's get vm" # root's service, beside nobody's
rsock=$(find "$XDG_STATE_HOME/kvcon" -maxdepth 1 -name 'engine-*.sock' -type s | head -1)
[[ -n $rsock && $(stat -c '%U %a' "$rsock") == "root 600" ]] || fail "root's socket: $rsock"
curl -sf --unix-socket "$rsock" http://e/healthz >/dev/null || fail "root does not reach its own service"
! setpriv --reuid=nobody --regid=nogroup --clear-groups curl -sf --unix-socket "$rsock" http://e/healthz >/dev/null 2>&1 ||
    fail "nobody reaches root's engine service"
echo PASS
