#!/bin/bash
# kvcon logs, describe and wait on engine VMs (libvirt's embedded QEMU driver, the lab guest under TCG): compute is QEMU's log of
# the current execution (from libvirt's "starting up" line), serial the guest's serial log (its boot marker);
# -f prints what is appended to the log as it is written; --previous after a restart is the QEMU log of the
# execution before; a VM that is not running and an unknown container fail with a reason and exit 1. Also kvcon
# wait on an engine VMI (met, and the timeout's exit 1 and message), bundle (QEMU and serial logs, objects), and
# softreboot (the guest boots again in the same execution), and diagnose's engine storage section (files, sizes,
# users, a missing volume file named).
# Exit 0 pass, anything else fail.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
KVCON=${KVCON_BIN:-$top/kvcon}
# shellcheck source=/dev/null
source "$top/tests/e2e/engine-lib.bash"
KV=$KVCON
engine_embed_up kvtrbe
K() { timeout 180 "$KVCON" -c "$URI" "$@" >"$ENGINE_T/out" 2>"$ENGINE_T/err"; }
poll() {
	local secs=$1; shift
	local deadline=$(($(date +%s) + secs))
	until "$@"; do
		[ "$(date +%s)" -lt $deadline ] || return 1
		sleep 0.1
	done
}

kv engine apply -f "$(manifest lvm Halted)" >/dev/null || fail "apply"
K logs default/lvm; rc=$?
[ $rc -eq 1 ] || fail "logs of a halted VM: exit $rc"
grep -q 'has no launcher pod (no VMI: the VM is not running)' "$ENGINE_T/err" || fail "halted message: $(cat "$ENGINE_T/err")"

K start default/lvm --wait || { cat "$ENGINE_T/err"; fail "start --wait"; }
# kvcon wait on the engine's store: met at once, and the kubectl-style timeout
K wait vmi default/lvm "--for=jsonpath={.status.phase}=Running" --timeout=30s || { cat "$ENGINE_T/err"; fail "engine wait phase"; }
grep -qx 'virtualmachineinstance.kubevirt.io/lvm condition met' "$ENGINE_T/out" || fail "engine wait: met line"
K wait vmi default/lvm --for=condition=Paused --timeout=2s; [ $? -eq 1 ] || fail "engine wait timeout must exit 1"
grep -qx 'error: timed out waiting for the condition on virtualmachineinstances/lvm' "$ENGINE_T/err" || fail "engine wait timeout message"

# describe: KubeVirt-shaped objects from the engine's store in kubectl's layout
K describe vm default/lvm || { cat "$ENGINE_T/err"; fail "engine describe vm"; }
for f in 'Name: *lvm$' 'Namespace: *default$' 'API Version: *kubevirt.io/v1$' 'Kind: *VirtualMachine$' '  Run Strategy: *Always$' \
	'  Printable Status: *Running$' '    Type: *Ready$' 'Events:'; do
	grep -q "^$f" "$ENGINE_T/out" || { cat "$ENGINE_T/out"; fail "engine describe vm: no '$f'"; }
done
K describe vmi default/lvm || fail "engine describe vmi"
grep -q '^    Kind: *VirtualMachine$' "$ENGINE_T/out" && grep -q '^  Phase: *Running$' "$ENGINE_T/out" &&
	grep -q '^  Normal  *Started  .*started (QEMU pid' "$ENGINE_T/out" || { cat "$ENGINE_T/out"; fail "engine describe vmi content"; }
lpod="virt-launcher-lvm-$(record lvm | jq -r '.execution.launcherUid // ""' | cut -c1-5)"
K describe pod "default/$lpod" || { cat "$ENGINE_T/err"; fail "engine describe pod $lpod"; }
grep -q '^Controlled By: *VirtualMachineInstance/lvm$' "$ENGINE_T/out" && grep -q '^  compute:$' "$ENGINE_T/out" || { cat "$ENGINE_T/out"; fail "engine describe pod content"; }

# compute: QEMU's log of this execution
K logs default/lvm || { cat "$ENGINE_T/err"; fail "logs compute"; }
[ "$(grep -c ': starting up libvirt version:' "$ENGINE_T/out")" -eq 1 ] || { cat "$ENGINE_T/out"; fail "compute: one starting-up line"; }
grep -q 'qemu-system-x86_64' "$ENGINE_T/out" || fail "compute: no QEMU command line"
K logs default/lvm --tail 1 || fail "--tail 1"
[ "$(wc -l <"$ENGINE_T/out")" -eq 1 ] || fail "--tail 1 gave $(wc -l <"$ENGINE_T/out") lines"

# serial: the guest's boot marker (it may still be booting: poll)
serial_has_marker() { K logs default/lvm -c serial && grep -q 'KVCON-GUEST-READY' "$ENGINE_T/out"; }
poll 60 serial_has_marker || { cat "$ENGINE_T/out" "$ENGINE_T/err"; fail "serial log without the guest's marker"; }
LC_ALL=C grep -q "$(printf '\033')" "$ENGINE_T/out" && fail "raw ESC from the serial log"

# -f: what is appended to the serial log appears while the command runs
slog=$(record lvm | jq -r '.execution.serialLog // ""')
[ -n "$slog" ] && [ -f "$slog" ] || fail "no serial log path in the record"
"$KVCON" -c "$URI" logs default/lvm -c serial -f >"$ENGINE_T/f.out" 2>"$ENGINE_T/f.err" &
fpid=$!
poll 60 grep -q 'KVCON-GUEST-READY' "$ENGINE_T/f.out" || { cat "$ENGINE_T/f.err"; kill $fpid; fail "-f: no first lines"; }
printf 'appended-by-the-test \033[31mred\033[0m\n' >>"$slog"
poll 20 grep -qF 'appended-by-the-test \e[31mred\e[0m' "$ENGINE_T/f.out" || { cat "$ENGINE_T/f.out"; kill $fpid; fail "-f did not show the appended line"; }
kill -0 $fpid 2>/dev/null || fail "-f ended while the VM runs"
kill $fpid; wait $fpid 2>/dev/null

# softreboot: the guest boots again (a second marker in the serial log), the execution stays (same VMI UID)
uid_before=$(record lvm | jq -r '.execution.uid // ""')
K softreboot default/lvm || { cat "$ENGINE_T/err"; fail "engine softreboot"; }
grep -qx 'VM default/lvm: soft reboot requested' "$ENGINE_T/out" || fail "softreboot output"
rebooted() { "$KVCON" -c "$URI" logs default/lvm -c serial 2>/dev/null | grep -c 'KVCON-GUEST-READY' | grep -qx '[2-9]'; }
poll 90 rebooted || fail "the guest did not boot again after softreboot"
[ "$(record lvm | jq -r '.execution.uid // ""')" = "$uid_before" ] || fail "softreboot changed the execution"

# bundle: the engine VM's objects, QEMU and serial logs, the reasons for what is not there
(cd "$ENGINE_T" && timeout 180 "$KVCON" -c "$URI" bundle default/lvm -o b.tar.gz >"$ENGINE_T/out" 2>"$ENGINE_T/err") ||
	{ cat "$ENGINE_T/err"; fail "engine bundle"; }
mkdir -p "$ENGINE_T/bx" && tar xzf "$ENGINE_T/b.tar.gz" -C "$ENGINE_T/bx" || fail "engine bundle: tar"
grep -q ': starting up libvirt version:' "$ENGINE_T"/bx/logs/virt-launcher-lvm-*/compute.log || fail "engine bundle: QEMU log"
grep -q 'KVCON-GUEST-READY' "$ENGINE_T"/bx/logs/virt-launcher-lvm-*/serial.log || fail "engine bundle: serial log"
grep -q '^Kind: *VirtualMachine$' "$ENGINE_T/bx/describe/vm.txt" && [ -s "$ENGINE_T/bx/vmi.yaml" ] || fail "engine bundle: objects"
grep -q '^kvcon bundle of VirtualMachine default/lvm on engine host ' "$ENGINE_T/bx/manifest.txt" || fail "engine bundle: not said as an engine host"
grep -q '^missing  logs/[^ ]*/serial\.log ' "$ENGINE_T/bx/manifest.txt" && { cat "$ENGINE_T/bx/manifest.txt"; fail "engine bundle: serial log listed as missing"; }
# the domain XML kvcon defined for this execution: libvirt's schema, this VM's domain name and VMI UID
uid_now=$(record lvm | jq -r '.execution.uid // ""')
grep -q '^<domain' "$ENGINE_T/bx/domain.xml" && grep -q "<name>default_lvm</name>" "$ENGINE_T/bx/domain.xml" && grep -qF "$uid_now" "$ENGINE_T/bx/domain.xml" ||
	fail "engine bundle: domain.xml: $(head -c 300 "$ENGINE_T/bx/domain.xml" 2>&1)"
grep -q '^missing  domain.xml ' "$ENGINE_T/bx/manifest.txt" && fail "engine bundle: domain.xml listed as missing"
# kvcon's own subresources on the service's socket: read-only (a write is refused with 405), an unknown VMI is 404
sock=$(find "$XDG_STATE_HOME" -name 'engine-*.sock' -type s | head -n1)
[ -S "$sock" ] || fail "no engine service socket under $XDG_STATE_HOME"
api() { curl -s -o "$ENGINE_T/api.out" -w '%{http_code}' --unix-socket "$sock" "$@"; }
[ "$(api http://localhost/apis/kubevirt.io/v1/namespaces/default/virtualmachineinstances/lvm/kvcon-domainxml)" = 200 ] &&
	grep -q '^<domain' "$ENGINE_T/api.out" || fail "kvcon-domainxml GET"
[ "$(api -X PUT -d '{}' http://localhost/apis/kubevirt.io/v1/namespaces/default/virtualmachineinstances/lvm/kvcon-domainxml)" = 405 ] ||
	fail "kvcon-domainxml PUT is not refused"
[ "$(api http://localhost/apis/kubevirt.io/v1/namespaces/default/virtualmachineinstances/nope/kvcon-domainxml)" = 404 ] ||
	fail "kvcon-domainxml of an unknown VMI"
[ "$(api http://localhost/apis/kubevirt.io/v1/namespaces/default/virtualmachines/lvm/kvcon-storage)" = 200 ] &&
	jq -e 'type == "array"' "$ENGINE_T/api.out" >/dev/null || fail "kvcon-storage GET"

# unknown container, serial --previous: a reason, exit 1
K logs default/lvm -c nope; [ $? -eq 1 ] || fail "unknown container must exit 1"
grep -q 'container nope is not valid for pod virt-launcher-lvm-' "$ENGINE_T/err" || fail "container message: $(cat "$ENGINE_T/err")"
K logs default/lvm --previous; [ $? -eq 1 ] || fail "--previous before any restart must exit 1"
grep -q 'previous terminated container "compute"' "$ENGINE_T/err" || fail "previous message: $(cat "$ENGINE_T/err")"

# --previous after a restart: the QEMU log of the execution before
K logs default/lvm --tail 0 || fail "logs --tail 0"
[ -s "$ENGINE_T/out" ] && fail "--tail 0 printed lines"
K logs default/lvm
first_start=$(grep ': starting up libvirt version:' "$ENGINE_T/out")
K restart default/lvm --wait || { cat "$ENGINE_T/err"; fail "restart --wait"; }
K logs default/lvm --previous || { cat "$ENGINE_T/err"; fail "--previous after restart"; }
[ "$(grep -c ': starting up libvirt version:' "$ENGINE_T/out")" -eq 1 ] || fail "previous: one execution"
grep -qF "$first_start" "$ENGINE_T/out" || fail "previous is not the first execution's log"
K logs default/lvm || fail "logs after restart"
grep -qF "$first_start" "$ENGINE_T/out" && fail "current still shows the first execution"
# diagnose on the engine: each volume's file on this host, its size, who uses it, and a missing one named
vdir=$XDG_STATE_HOME/kvcon/engine-data/volumes/default
mkdir -p "$vdir" && truncate -s 1M "$vdir/svm-data.img"
{ cat "$(manifest svm Halted)"; printf '      volumes:\n      - name: data\n        persistentVolumeClaim:\n          claimName: svm-data\n      - name: gone\n        persistentVolumeClaim:\n          claimName: svm-gone\n'; } >"$ENGINE_T/svm.yaml"
kv engine apply -f "$ENGINE_T/svm.yaml" >/dev/null || fail "apply svm"
K diagnose default/svm || { cat "$ENGINE_T/out" "$ENGINE_T/err"; fail "diagnose svm (halted: exit 0)"; }
grep -q '^Storage (engine volumes: VM volume -> file on this host):$' "$ENGINE_T/out" || { cat "$ENGINE_T/out"; fail "engine storage section"; }
grep -q "^  data: persistentVolumeClaim claim svm-data -> $vdir/svm-data.img 1048576 bytes$" "$ENGINE_T/out" || { cat "$ENGINE_T/out"; fail "data volume line"; }
grep -q '^      used by default/svm$' "$ENGINE_T/out" || fail "used by"
grep -q "^      first broken link: file: the volume file of claim svm-gone ($vdir/svm-gone.img) does not exist$" "$ENGINE_T/out" || fail "missing volume named"
K diagnose default/svm -o json
jq -e '.storage[1].brokenLink == "file" and .storage[0].file.exists == true and .storage[0].file.sizeBytes == 1048576' "$ENGINE_T/out" >/dev/null || fail "engine storage json"

K stop default/lvm --force --wait || fail "force stop"
echo PASS
