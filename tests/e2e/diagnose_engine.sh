#!/bin/bash
# kvcon diagnose / lineage / start / stop / restart on an engine host (libvirt's embedded QEMU driver, the lab
# guest under TCG): the same rules and lineage as on a cluster, with engine commands instead of kubectl.
# Skips (77) while the engine is not in the tree. Exit 0 pass, 77 skip, anything else fail.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
KVCON=${KVCON_BIN:-$top/kvcon}
lib="$top/tests/e2e/engine-lib.bash"
[ -f "$lib" ] && "$KVCON" --help 2>/dev/null | grep -q '^  engine ' || { echo "SKIP: the engine is not in this build"; exit 77; }
command -v jq >/dev/null 2>&1 || { echo "SKIP: jq missing"; exit 77; }
ENGINE_T=$(mktemp -d /tmp/kvdiage.XXXXXX)
cleanup() {
	timeout 60 "$KVCON" -c "$URI" engine stop dvm --force >/dev/null 2>&1
	svc_stop_all "$ENGINE_T"
	rm -rf "$ENGINE_T"
}
trap cleanup EXIT INT TERM
# shellcheck source=/dev/null
source "$lib"
KV=$KVCON
URI="qemu:///embed?root=$ENGINE_T/state/kvcon/engine"
engine_setup || { echo "SKIP: the lab guest could not be built"; exit 77; }
K() { timeout 180 "$KVCON" -c "$URI" "$@" >"$ENGINE_T/out" 2>"$ENGINE_T/err"; }

kv engine apply -f "$(manifest dvm Halted)" >/dev/null || fail "apply"

# halted: not expected, exit 0, the next command is the engine's
K diagnose default/dvm || { rc=$?; cat "$ENGINE_T/out" "$ENGINE_T/err"; fail "diagnose halted: exit $rc"; }
grep -q '\[vm-halted\]' "$ENGINE_T/out" || fail "halted rule"
grep -q "\$ kvcon -c '$URI' -n default engine start dvm" "$ENGINE_T/out" || { cat "$ENGINE_T/out"; fail "engine command"; }
grep -q kubectl "$ENGINE_T/out" && fail "kubectl suggested for an engine VM"
grep -q virtctl "$ENGINE_T/out" && fail "virtctl suggested for an engine VM"
# through the engine service the VM is still said to be on the engine host, not in a cluster context
grep -q "^VirtualMachine default/dvm (engine $(hostname))\$" "$ENGINE_T/out" || { cat "$ENGINE_T/out"; fail "not said as on the engine host"; }

# a start that keeps failing (runStrategy Always, a "kernel" QEMU cannot boot: no guest runs): the VM backs
# off with its failed VMI; a stop ends that execution as KubeVirt does, so stop --wait returns once the VM is
# stopped, diagnose says halted, and the console of the halted VM says so at once with the start command
# (issue 25, items 7 and 8)
head -c 4096 /dev/zero >"$ENGINE_T/images/kvcon-lab-guest/bad-kernel"
kv engine apply -f "$(engine_manifest "$ENGINE_T/cvm.yaml" cvm Always 192Mi kvcon-lab-guest /bad-kernel)" >/dev/null ||
	fail "apply cvm"
wait_eq 60 CrashLoopBackOff vm_field cvm status || fail "cvm not in CrashLoopBackOff"
[[ $(vmi_phase cvm) == Failed ]] || fail "cvm: the failed execution's VMI is not Failed: $(vmi_phase cvm)"
K diagnose default/cvm; [[ $? == 3 ]] || { cat "$ENGINE_T/out"; fail "diagnose of the crash loop: not exit 3"; }
grep -qE '^  \[vmi-ended-restart\] the VMI ended \(Failed; [0-9]+ failed starts in a row(, next attempt in [0-9a-z]+)?\) and runStrategy Always should replace it$' \
	"$ENGINE_T/out" || { cat "$ENGINE_T/out"; fail "diagnose of the crash loop: headline"; }
K stop default/cvm --wait=30 || { rc=$?; cat "$ENGINE_T/err"; fail "stop --wait of a crash-looping VM: exit $rc"; }
[[ $(vmi_json cvm) == '{}' ]] || fail "cvm: a VMI after the stop: $(vmi_json cvm)"
[[ $(vm_field cvm status) == Stopped && $(vm_field cvm runStrategy) == Halted ]] || fail "cvm: not Stopped/Halted"
K diagnose default/cvm || { cat "$ENGINE_T/out"; fail "diagnose of the stopped cvm: exit $?"; }
grep -q '\[vm-halted\]' "$ENGINE_T/out" || { cat "$ENGINE_T/out"; fail "cvm: not diagnosed as halted"; }
t0=$(date +%s)
timeout 60 "$KVCON" -c "$URI" console default/cvm --expect never --timeout 1m >"$ENGINE_T/out" 2>"$ENGINE_T/err"
rc=$?
[[ $rc == 1 && $(($(date +%s) - t0)) -lt 15 ]] || { cat "$ENGINE_T/err"; fail "console of a halted VM: exit $rc after $(($(date +%s) - t0)) s"; }
grep -qx 'error: VM default/cvm is Stopped (runStrategy Halted): it has no console until it runs; start it with: kvcon start default/cvm' \
	"$ENGINE_T/err" || { cat "$ENGINE_T/err"; fail "console of a halted VM: message"; }
kv engine delete cvm >/dev/null || fail "delete cvm"

# start: every boundary progressed (the lab guest has no agent: a note, exit 0)
K start default/dvm --wait || { cat "$ENGINE_T/err"; fail "start --wait"; }
K diagnose default/dvm -o json || { cat "$ENGINE_T/out"; fail "diagnose running: exit $?"; }
jq -e '[.boundaries[].verdict] == ["progressed","progressed","progressed","progressed"]' "$ENGINE_T/out" >/dev/null ||
	{ cat "$ENGINE_T/out"; fail "running verdicts"; }
uid1=$(jq -r .chain.vmiUid "$ENGINE_T/out")
jq -e '[.findings[].commands // [] | .[]] as $c | ($c | length) > 0 and ([$c[] | select(test("virtctl|kubectl|virsh|^less "))] == [])
	and ([$c[] | select(startswith("kvcon -c "))] | length) == ($c | length)' "$ENGINE_T/out" >/dev/null ||
	{ cat "$ENGINE_T/out"; fail "running: a cluster's or libvirt's command suggested"; }
K diagnose default/dvm || fail "diagnose running (text)"
grep -qE '^  launcher +progressed +process virt-launcher-dvm-' "$ENGINE_T/out" || { cat "$ENGINE_T/out"; fail "the launcher is not said as the engine's process"; }

# stop + start: two executions, the first stopped; restart: the second restarted
K stop default/dvm --wait || { cat "$ENGINE_T/err"; fail "stop --wait"; }
K start default/dvm --wait || { cat "$ENGINE_T/err"; fail "second start"; }
K restart default/dvm --wait || { cat "$ENGINE_T/err"; fail "restart --wait"; }
K lineage default/dvm -o json || fail "lineage"
jq -e --arg u "$uid1" 'length == 3 and .[0].vmiUid == $u and .[0].how == "stopped" and .[1].how == "restarted"
	and .[2].how == "running" and (.[0].vmiUid != .[1].vmiUid) and (.[1].vmiUid != .[2].vmiUid)
	and (.[2].launchers | length) == 1' "$ENGINE_T/out" >/dev/null || { cat "$ENGINE_T/out"; fail "lineage content"; }
K stop default/dvm --force --wait || fail "force stop"
echo "PASS"
