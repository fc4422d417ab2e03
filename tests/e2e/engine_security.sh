#!/bin/bash
# Issue 14, findings 1-4, on the real engine as root (libvirt's embedded QEMU driver, the lab guest under TCG):
#  1. an interface name that closes its XML attribute and adds <qemu:commandline> (a -chardev file=...) is refused
#     at apply (exit 1, the field path, nothing stored) and the file it asked QEMU to create does not appear;
#  2. an emptyDisk volume named ../../../some/dir/victim is refused at apply and the victim keeps its bytes;
#  3. a hostDisk on a secret host file is refused without the host owner's opt-in, and with it a link out of
#     the allowed directory still is; a disk inside the allowed directory then boots, opened by QEMU;
#  4. with $XDG_STATE_HOME so deep that no socket path fits in its run directory, the guest's display is a unix
#     socket in a 0700 directory of its own and QEMU listens on no TCP port (ss -ltn).
#  5. the same attacks on the engine service's API itself (curl on its 0600 socket): a POSTed injection, a merge
#     patch bringing it (or the traversing volume name, or the secret hostDisk) into a stored VM, a name or a
#     namespace that is a path (in the body or the URL): refused (422 with the field, or 4xx), nothing changed.
# Every step goes through the engine service started on demand (the only way kvcon reaches the engine).
# Before the fix each of these went the other way (the file was created, the victim zeroed, the disk attached,
# VNC on 127.0.0.1:59xx without a password).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/engine-lib.bash"

engine_embed_up kvsec
security_cleanup() {
    local f
    for f in "$ENGINE_T"/r2/run/qemu/*.pid; do
        [[ -f $f ]] && kill -9 "$(cat "$f")" 2>/dev/null || true
    done
    [[ -n ${deep_uid:-} ]] && rm -rf "/run/kvcon-0/$deep_uid"
    engine_embed_cleanup
}
trap security_cleanup EXIT
command -v ss >/dev/null || fail "ss missing (iproute2, scripts/deps.sh)"
export XDG_CONFIG_HOME=$ENGINE_T/config # the host owner's config: private to the test
mkdir -p "$XDG_CONFIG_HOME/kvcon"
: >"$XDG_CONFIG_HOME/kvcon/config"

# apply_refused FILE WANT: apply exits 1 naming WANT on stderr, and nothing is stored
apply_refused() {
    local rc=0 name
    name=$(sed -n 's/^  name: *//p' "$1" | head -1)
    kv engine apply -f "$1" >"$ENGINE_T/apply.out" 2>"$ENGINE_T/apply.err" || rc=$?
    cat "$ENGINE_T/apply.err"
    ((rc == 1)) || fail "apply of $1: exit $rc, wanted 1"
    grep -qF -- "$2" "$ENGINE_T/apply.err" || fail "apply of $1: no '$2' in the refusal"
    [[ -z $(vm_field "$name" uid) ]] || fail "$name was stored although refused"
    [[ $(record "$name") == '{}' ]] || fail "$name has a record although refused"
}

# vm NAME STRATEGY [DEVICES [SPEC]]: the lab guest's manifest; DEVICES lines go under domain.devices (instead of
# autoattachPodInterface: false), SPEC lines under spec.template.spec
vm() {
    engine_manifest "$ENGINE_T/$1.yaml" "$1" "$2" 160Mi >/dev/null
    python3 - "$ENGINE_T/$1.yaml" "${3:-}" "${4:-}" <<'EOF'
import sys
p, devices, spec = sys.argv[1:4]
text = open(p).read()
if devices:
    text = text.replace('          autoattachPodInterface: false\n', devices.rstrip('\n') + '\n')
open(p, 'w').write(text.rstrip('\n') + '\n' + (spec.rstrip('\n') + '\n' if spec else ''))
EOF
    echo "$ENGINE_T/$1.yaml"
}

step "1. interface-name injection: refused at apply, QEMU never creates the file"
inj=$ENGINE_T/injected
payload="x'/></interface></devices><qemu:commandline xmlns:qemu='http://libvirt.org/schemas/domain/qemu/1.0'><qemu:arg value='-chardev'/><qemu:arg value='file,id=kvinj,path=$inj'/></qemu:commandline><devices><interface type='user'><alias name='y"
m=$(vm inj Always "          interfaces:
          - name: \"$payload\"
            masquerade: {}")
apply_refused "$m" "spec.template.spec.domain.devices.interfaces[0].name: Invalid value:"
grep -qF "a lowercase RFC 1123 label must consist of" "$ENGINE_T/apply.err" || fail "not apimachinery's wording"
kv engine reconcile >/dev/null
[[ ! -e $inj ]] || fail "the injected -chardev file exists: $inj"
[[ $(qemu_count inj) == 0 ]] || fail "a QEMU runs for the refused VM"

step "2. emptyDisk named ../../../some/dir/victim: refused, the victim keeps its bytes"
# run/<vmi>/empty-<name>.img: seven '..' from there lead to \$ENGINE_T
mkdir -p "$ENGINE_T/some/dir"
victim=$ENGINE_T/some/dir/victim.img
printf 'precious bytes\n' >"$victim"
sum=$(sha256sum <"$victim")
m=$(vm trav Always "" "      volumes:
      - name: ../../../../../../../some/dir/victim
        emptyDisk: {capacity: 1Mi}")
apply_refused "$m" 'spec.template.spec.volumes[0].name: Invalid value: "../../../../../../../some/dir/victim": a lowercase RFC 1123 label'
kv engine reconcile >/dev/null
[[ $(sha256sum <"$victim") == "$sum" ]] || fail "the victim's bytes changed"
[[ -z $(find "$XDG_STATE_HOME/kvcon/engine-data" -name 'empty-*' 2>/dev/null) ]] || fail "an empty-* path was made"

step "3. hostDisk on a secret host file: refused without the opt-in; a link out refused with it"
mkdir -p "$ENGINE_T/secret" "$ENGINE_T/hostdisks"
printf 'root:$6$secret\n' >"$ENGINE_T/secret/shadow"
chmod 600 "$ENGINE_T/secret/shadow"
m=$(vm hd Always "" "      volumes:
      - name: h
        hostDisk: {path: $ENGINE_T/secret/shadow, type: Disk}")
apply_refused "$m" "spec.template.spec.volumes[0].hostDisk.path: Forbidden: host path \"$ENGINE_T/secret/shadow\""
grep -qF 'engine.allow-host-path = DIR' "$ENGINE_T/apply.err" || fail "the refusal does not say how to opt in"
echo "engine.allow-host-path = $ENGINE_T/hostdisks" >>"$XDG_CONFIG_HOME/kvcon/config"
apply_refused "$m" "hostDisk.path: Forbidden"
ln -s "$ENGINE_T/secret/shadow" "$ENGINE_T/hostdisks/link.img"
m=$(vm hd Always "" "      volumes:
      - name: h
        hostDisk: {path: $ENGINE_T/hostdisks/link.img, type: Disk}")
apply_refused "$m" "resolves to $ENGINE_T/secret/shadow"
# a kernel outside the image directory is a host path as well
m=$(engine_manifest "$ENGINE_T/kh.yaml" kh Halted 160Mi host "$ENGINE_T/secret/shadow" "")
sed -i '/initrdPath: *$/d' "$m"
apply_refused "$m" "kernelBoot.container.kernelPath: Forbidden: host path \"$ENGINE_T/secret/shadow\""
# allowed: DiskOrCreate below the allowed directory, created there and opened by QEMU
m=$(vm hd Always "" "      volumes:
      - name: h
        hostDisk: {path: $ENGINE_T/hostdisks/data.img, type: DiskOrCreate, capacity: 4Mi}")
kv engine apply -f "$m" >/dev/null || fail "apply of an allowed hostDisk"
[[ $(vmi_phase hd) == Running ]] || fail "hd not Running: $(vmi_phase hd)"
[[ $(stat -c %s "$ENGINE_T/hostdisks/data.img") == 4194304 ]] || fail "DiskOrCreate did not make 4Mi"
pid=$(rec_exec hd pid)
ls -l "/proc/$pid/fd" 2>/dev/null | grep -qF "$ENGINE_T/hostdisks/data.img" || fail "QEMU has not opened the disk"
! ls -l "/proc/$pid/fd" 2>/dev/null | grep -qF "$ENGINE_T/secret" || fail "QEMU opened the secret"
kv engine delete hd >/dev/null || fail "delete hd"

step "5. the same attacks on the engine service's API itself (curl on its socket, no kvcon client in between)"
sock=$(find "$XDG_STATE_HOME/kvcon" -maxdepth 1 -name 'engine-*.sock' -type s | head -1)
[[ -S $sock ]] || fail "no engine service socket in $XDG_STATE_HOME/kvcon"
[[ $(stat -c '%a' "$sock") == 600 ]] || fail "the service's socket is $(stat -c '%a' "$sock")"
VMS=/apis/kubevirt.io/v1/namespaces/default/virtualmachines
# api METHOD PATH [CONTENT-TYPE BODY-FILE]: the HTTP status; the body in $ENGINE_T/api.out
api() {
    local a=(-s -o "$ENGINE_T/api.out" -w '%{http_code}' --unix-socket "$sock" -X "$1")
    [[ -n ${3:-} ]] && a+=(-H "Content-Type: $3" --data-binary "@$4")
    curl "${a[@]}" "http://engine$2"
}
# api_refused WANT-STATUS WANT-TEXT METHOD PATH [CT FILE]: HTTP WANT-STATUS, a Status whose message has WANT-TEXT
api_refused() {
    local want=$1 text=$2 got
    shift 2
    got=$(api "$@")
    [[ $got == "$want" ]] || fail "$1 $2: HTTP $got, wanted $want: $(cat "$ENGINE_T/api.out")"
    jq -r '.message // ""' "$ENGINE_T/api.out" | grep -qF -- "$text" ||
        fail "$1 $2: no '$text' in the Status's message: $(cat "$ENGINE_T/api.out")"
}
# the injection as JSON, POSTed
python3 - "$payload" "$ENGINE_T/inj.json" <<'EOF2'
import json, sys
vm = {"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine", "metadata": {"name": "inj"},
      "spec": {"runStrategy": "Always", "template": {"spec": {"domain": {
          "memory": {"guest": "160Mi"},
          "firmware": {"kernelBoot": {"kernelArgs": "console=ttyS0", "container": {
              "image": "kvcon-lab-guest", "kernelPath": "/vmlinuz", "initrdPath": "/initrd.gz"}}},
          "devices": {"interfaces": [{"name": sys.argv[1], "masquerade": {}}]}}}}}}
open(sys.argv[2], "w").write(json.dumps(vm))
EOF2
api_refused 422 "spec.template.spec.domain.devices.interfaces[0].name: Invalid value:" POST "$VMS" application/json \
    "$ENGINE_T/inj.json"
[[ $(api GET "$VMS/inj") == 404 ]] || fail "inj stored through the API"
# a good VM, then the injection as a JSON merge patch of it: refused, the stored VM unchanged
kv engine apply -f "$(vm good Halted)" >/dev/null || fail "apply good"
before=$(api GET "$VMS/good" >/dev/null; jq -c .spec "$ENGINE_T/api.out")
jq -c '{spec: {template: {spec: {domain: {devices: .spec.template.spec.domain.devices}}}}}' "$ENGINE_T/inj.json" \
    >"$ENGINE_T/inj-patch.json"
api_refused 422 "interfaces[0].name: Invalid value:" PATCH "$VMS/good" application/merge-patch+json \
    "$ENGINE_T/inj-patch.json"
[[ $(api GET "$VMS/good" >/dev/null; jq -c .spec "$ENGINE_T/api.out") == "$before" ]] || fail "the patch changed good"
# the traversing volume name and the secret hostDisk, patched in
printf '%s' '{"spec":{"template":{"spec":{"volumes":[{"name":"../../../../../../../some/dir/victim","emptyDisk":{"capacity":"1Mi"}}]}}}}' \
    >"$ENGINE_T/trav-patch.json"
api_refused 422 'volumes[0].name: Invalid value: "../../../../../../../some/dir/victim"' PATCH "$VMS/good" \
    application/merge-patch+json "$ENGINE_T/trav-patch.json"
printf '{"spec":{"template":{"spec":{"volumes":[{"name":"h","hostDisk":{"path":"%s","type":"Disk"}}]}}}}' \
    "$ENGINE_T/secret/shadow" >"$ENGINE_T/hd-patch.json"
api_refused 422 "hostDisk.path: Forbidden" PATCH "$VMS/good" application/merge-patch+json "$ENGINE_T/hd-patch.json"
[[ $(sha256sum <"$victim") == "$sum" ]] || fail "the victim's bytes changed"
# names and namespaces that are paths: in the body and in the URL
jq -c '.metadata.name = "../../x" | .spec.template.spec.domain.devices = {}' "$ENGINE_T/inj.json" >"$ENGINE_T/dots.json"
api_refused 422 "metadata.name" POST "$VMS" application/json "$ENGINE_T/dots.json"
jq -c '.metadata.name = "dots" | .spec.template.spec.domain.devices = {}' "$ENGINE_T/inj.json" >"$ENGINE_T/dots.json"
got=$(api POST "/apis/kubevirt.io/v1/namespaces/..%2F..%2Fescape/virtualmachines" application/json "$ENGINE_T/dots.json")
[[ $got == 4* ]] || fail "a namespace of ../../escape: HTTP $got: $(cat "$ENGINE_T/api.out")"
[[ -z $(find "$ENGINE_T" -path '*escape*' 2>/dev/null) ]] || fail "a path was made from the namespace"
got=$(api PUT "$VMS/..%2F..%2Fgood/start")
[[ $got == 4* ]] || fail "start of ../../good: HTTP $got"
[[ $(vmi_phase good) == "" ]] || fail "good started through a path name"
kv engine delete good >/dev/null || fail "delete good"

step "4. a very deep \$XDG_STATE_HOME: the display stays on a private unix socket, no TCP listener"
deep=$ENGINE_T/home/$(printf 'a-rather-long-directory-name-%02d/' 1 2 3 4 5)
export XDG_STATE_HOME=${deep%/}/state
mkdir -p "$XDG_STATE_HOME"
URI="qemu:///embed?root=$ENGINE_T/r2" # the embedded root itself stays short: libvirt's own sockets live there
"$ROOT/scripts/embed-warm.sh" "$ENGINE_T/r2" >/dev/null
m=$(vm deep Always)
kv engine apply -f "$m" >/dev/null || fail "apply deep"
[[ $(vmi_phase deep) == Running ]] || fail "deep not Running: $(vmi_phase deep)"
uid=$(vmi_uid deep)
deep_uid=$uid
pid=$(rec_exec deep pid)
[[ $pid -gt 0 ]] || fail "no QEMU pid"
run_dir=$XDG_STATE_HOME/kvcon/engine-data/run/$uid
((${#run_dir} + 9 > 100)) || fail "the run directory ($run_dir) is not deep enough for this test"
listeners=$(ss -ltnp 2>/dev/null | grep -F "pid=$pid," || true)
[[ -z $listeners ]] || fail "QEMU listens on TCP: $listeners"
sock=/run/kvcon-0/$uid/vnc.sock
[[ -S $sock ]] || fail "no VNC socket at $sock"
# QEMU runs as libvirt-qemu (engine_unpriv.sh): the execution's socket directory is that account's, its base
# root's with at most a search-only ACL entry for the account (the mask shows as group x), closed to everyone else
[[ $(stat -c '%a %U' "/run/kvcon-0/$uid") == "700 libvirt-qemu" && $(stat -c '%a %U' /run/kvcon-0) == 7[01]0\ root ]] ||
    fail "socket directory modes: $(stat -c '%n %a %U' /run/kvcon-0 "/run/kvcon-0/$uid")"
! setpriv --reuid=nobody --regid=nogroup --clear-groups test -x /run/kvcon-0 || fail "/run/kvcon-0 is open to nobody"
ss -lxp 2>/dev/null | grep -F "$sock" | grep -qF "pid=$pid," || fail "QEMU does not listen on $sock"
# and the display works through it
timeout 120 "$KV" -c "$URI" vnc default/deep --screenshot "$ENGINE_T/deep.png" --quiet-ms 300 --timeout 5 \
    >"$ENGINE_T/deep.out" 2>&1 || fail "no display: $(cat "$ENGINE_T/deep.out")"
grep -q '"width":' "$ENGINE_T/deep.out" || fail "no frame: $(cat "$ENGINE_T/deep.out")"
kv engine stop deep --force >/dev/null || fail "stop deep"
# the directory goes when the engine handles the domain's end, which may come just after stop's answer: polled
sock_dir_gone() { [[ -e /run/kvcon-0/$uid ]] && echo present || echo gone; }
wait_eq 10 gone sock_dir_gone || fail "the execution's socket directory remains after it ended"
echo PASS
