#!/bin/bash
# containerDisks pulled from a real registry (Debian's docker-registry on 127.0.0.1, TLS with a CA made here,
# htpasswd auth; images pushed with skopeo, tests/lab/registry.sh) by the engine on the embedded driver:
#  - the seed 001 fedora-demo manifest byte for byte, with kvcon's registry mirror pointing quay.io at the local
#    registry, pulls, boots from the containerDisk (BIOS, syslinux) to the guest's shell marker, imageID recorded,
#    and the guest prints the cloudInitNoCloud user data it finds on its seed disk;
#  - the seed 000 internals-demo manifest with only its digest replaced: an image index resolved to linux/amd64;
#  - a second VM of the same image shares the one cached disk (one file, same backing file);
#  - missing tag, absent digest, corrupted blob (digest mismatch), unreachable registry, bad credentials, a disk
#    over engine.image-max-size: ErrImagePull then ImagePullBackOff, a message naming the registry, nothing
#    written to the cache (the slow and disk-filling registries of issue 23: engine_oci_limits.sh);
#  - a Bearer token service (tests/lab/tokenserver.py) and a plain-HTTP registry (insecure=true);
#  - kill -9 in the middle of a pull: nothing half-written is trusted, the next sweep removes the leftovers;
#  - delete removes cached images no VM uses; a local file in the image directory wins (registry down).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/engine-lib.bash"

engine_needs "QEMU, the embedded libvirt driver and a registry" qemu-system-x86_64 jq docker-registry skopeo \
    htpasswd openssl syslinux mcopy
engine_embed_up kvo
export XDG_CONFIG_HOME=$ENGINE_T/config
REGDIR=$ENGINE_T/reg
TOKDIR=$ENGINE_T/tok
PLAINDIR=$ENGINE_T/plain
cleanup() {
    "$ROOT/tests/lab/registry.sh" down "$PLAINDIR" || true
    "$ROOT/tests/lab/registry.sh" down "$REGDIR" || true
    "$ROOT/tests/lab/registry.sh" down "$TOKDIR" || true
    engine_embed_cleanup
}
trap cleanup EXIT

step "build the containerDisk images, start the registry, push with skopeo"
"$ROOT/tests/lab/containerdisk.sh" || fail "containerdisk.sh"
OCI=$ROOT/build/cdisk/oci
eval "$("$ROOT/tests/lab/registry.sh" up "$REGDIR")"
push() { "$ROOT/tests/lab/registry.sh" push "$REGDIR" "$OCI:$1" "$2"; }
D_GUEST=$(push guest containerdisks/fedora:latest)
D_INDEX=$(push index kubevirt/cirros-container-disk-demo:test)
D_OTHER=$(push other kvtest/other:v1)
D_BIG=$(push big kvtest/big:v1)
echo "fedora:latest $D_GUEST, cirros index $D_INDEX, other $D_OTHER, big $D_BIG"
for d in "$D_GUEST" "$D_INDEX" "$D_OTHER" "$D_BIG"; do [[ $d == sha256:* ]] || fail "no digest from the push"; done
export REGISTRY_AUTH_FILE=$REG_AUTH
mkdir -p "$XDG_CONFIG_HOME/kvcon"
cat >"$XDG_CONFIG_HOME/kvcon/config" <<EOF
# the test registry: TLS with the test's CA; quay.io mirrored to it (registries.conf semantics)
registry = $REG ca=$REG_CA
registry.mirror = quay.io location=$REG ca=$REG_CA
EOF
CACHE=$XDG_STATE_HOME/kvcon/engine-data/imgcache
ndisks() { find "$CACHE/disks" -type f 2>/dev/null | wc -l; }
ntmp() { find "$CACHE/tmp" -type f 2>/dev/null | wc -l; }
image_id() { # image_id [NS] VMNAME VOLUME -> the launcher's imageID for the volume's container
    local ns=default
    [[ $# == 3 ]] && { ns=$1; shift; }
    kv -n "$ns" engine get pod -o json | jq -r --arg p "virt-launcher-$1-" --arg c "volume$2" \
        '.items[] | select(.metadata.name | startswith($p)) | .status.containerStatuses[] | select(.name == $c) | .imageID // ""'
}
overlay_backing() { # the backing file of a VM's containerDisk overlay
    qemu-img info -U --output=json "$(rec_exec "$1" runDir)/overlay-$2.qcow2" | jq -r '.["backing-filename"]'
}

step "seed 001 fedora-demo, byte for byte: quay.io mirrored to the local registry, pulled, boots to a shell"
# tests/fixtures/seed-001-fedora-demo.yaml is the manifest of ../shared/seeds/001_*.txt, byte for byte (cut out
# with the awk below); where the seeds are at hand (the development machine) the copy is checked against them
cp "$ROOT/tests/fixtures/seed-001-fedora-demo.yaml" "$ENGINE_T/fedora-demo.yaml"
SEED1=$(ls /work/shared/seeds/001_*.txt "$ROOT"/../shared/seeds/001_*.txt 2>/dev/null | head -n1 || true)
if [[ -n $SEED1 ]]; then
    awk '/^apiVersion: kubevirt.io\/v1$/ && !go { go = 1 } go { print } go && /chpasswd:/ { exit }' "$SEED1" |
        cmp -s - "$ENGINE_T/fedora-demo.yaml" || fail "tests/fixtures/seed-001-fedora-demo.yaml differs from $SEED1"
fi
grep -q 'image: quay.io/containerdisks/fedora:latest' "$ENGINE_T/fedora-demo.yaml" || fail "seed 001 fixture"
out=$(kv engine apply -f "$ENGINE_T/fedora-demo.yaml") || fail "apply seed 001: $out"
kv engine start fedora-demo 2>"$ENGINE_T/start-fedora.err" || { cat "$ENGINE_T/start-fedora.err"; fail "start fedora-demo"; }
marker fedora-demo
id=$(image_id fedora-demo containerdisk)
[[ $id == "quay.io/containerdisks/fedora@$D_GUEST" ]] || fail "fedora-demo imageID '$id', wanted quay.io/containerdisks/fedora@$D_GUEST"
kv engine get event fedora-demo | grep -q 'Successfully pulled image "quay.io/containerdisks/fedora:latest"' ||
    fail "no Pulled event"
# the guest read its cloudInitNoCloud seed (the second virtio disk) and printed it on the serial console
seed=$(tr -d '\r' <"$(rec_exec fedora-demo serialLog)" | sed -n '/^KVCON-CLOUDINIT-BEGIN/,/^KVCON-CLOUDINIT-END/p')
echo "$seed" | sed 's/^/   guest| /'
grep -qx 'KVCON-CLOUDINIT-BEGIN /dev/vdb' <<<"$seed" || fail "the guest found no cloud-init seed on vdb"
grep -qx '#cloud-config' <<<"$seed" && grep -qx 'password: fedora' <<<"$seed" &&
    grep -qx 'chpasswd: { expire: False }' <<<"$seed" || fail "the guest did not see seed 001's user data"
[[ $(ndisks) == 1 ]] || fail "$(ndisks) disks in the cache after one pull"
[[ $(ntmp) == 0 ]] || fail "temporary files left after a pull"

step "seed 000 internals-demo with the test digest: an image index resolved to linux/amd64"
SEED0=$(ls /work/shared/seeds/000_*.txt "$ROOT"/../shared/seeds/000_*.txt 2>/dev/null | head -n1 || true)
if [[ -n $SEED0 ]]; then
    awk '/^apiVersion: kubevirt.io\/v1$/ && !go { go = 1 } go && /^YAML$/ { exit } go { print }' "$SEED0" |
        cmp -s - "$ROOT/tests/fixtures/seed-000-internals-demo.yaml" ||
        fail "tests/fixtures/seed-000-internals-demo.yaml differs from $SEED0"
fi
sed "s/@sha256:[0-9a-f]\{64\}/@$D_INDEX/" "$ROOT/tests/fixtures/seed-000-internals-demo.yaml" >"$ENGINE_T/internals-demo.yaml"
grep -q "cirros-container-disk-demo@$D_INDEX" "$ENGINE_T/internals-demo.yaml" || fail "seed 000 extraction"
# the seed's `kubectl create namespace kubevirt-lab`, on the engine service's API (a VM's namespace must exist there)
curl -sf --unix-socket "$(ls "$XDG_STATE_HOME"/kvcon/engine-*.sock)" -X POST -H 'Content-Type: application/json' \
    -d '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"kubevirt-lab"}}' \
    http://engine/api/v1/namespaces >/dev/null || fail "create namespace kubevirt-lab"
kv engine apply -f "$ENGINE_T/internals-demo.yaml" >/dev/null || fail "apply seed 000"
kv -n kubevirt-lab engine start internals-demo >/dev/null 2>&1 || fail "start internals-demo"
kv -n kubevirt-lab engine console internals-demo --expect KVCON-GUEST-READY --timeout 120s >"$ENGINE_T/c0.log" ||
    { cat "$ENGINE_T/c0.log"; fail "no marker from internals-demo"; }
id=$(image_id kubevirt-lab internals-demo rootdisk)
[[ $id == "quay.io/kubevirt/cirros-container-disk-demo@$D_INDEX" ]] || fail "internals-demo imageID '$id'"
[[ $(ndisks) == 1 ]] || fail "the index's amd64 image (same layer) made $(ndisks) cached disks"

step "a second VM of the same image shares the cached disk"
sed 's/fedora-demo/fedora-two/g' "$ENGINE_T/fedora-demo.yaml" >"$ENGINE_T/fedora-two.yaml"
kv engine apply -f "$ENGINE_T/fedora-two.yaml" >/dev/null || fail "apply fedora-two"
kv engine start fedora-two >/dev/null 2>&1 || fail "start fedora-two"
marker fedora-two
[[ $(ndisks) == 1 ]] || fail "$(ndisks) cached disks for one image"
b1=$(overlay_backing fedora-demo containerdisk)
b2=$(overlay_backing fedora-two containerdisk)
[[ $b1 == "$b2" && $b1 == "$CACHE"/disks/* ]] || fail "overlays not backed by one cached disk: $b1 / $b2"
[[ $(find "$CACHE/disks" -type f -newer "$ENGINE_T/c0.log" | wc -l) == 0 ]] || fail "the cached disk was rewritten"

# start_fails NAME IMAGE REGEX: the start fails with ErrImagePull and a message matching REGEX, then the VM
# shows ImagePullBackOff; the cache gains nothing
start_fails() {
    local name=$1 img=$2 want=$3 out before
    before=$(find "$CACHE/disks" "$CACHE/refs" -type f | sort | md5sum)
    sed -e "s/fedora-demo/$name/g" -e "s#image: quay.io/containerdisks/fedora:latest#image: $img#" \
        "$ENGINE_T/fedora-demo.yaml" >"$ENGINE_T/$name.yaml"
    kv engine apply -f "$ENGINE_T/$name.yaml" >/dev/null || fail "apply $name"
    out=$(kv engine start "$name" 2>&1) && fail "start $name succeeded"
    echo "   $out"
    [[ $out == *ErrImagePull* ]] || fail "$name: no ErrImagePull in: $out"
    [[ $out =~ $want ]] || fail "$name: message does not match /$want/: $out"
    [[ $(vm_field "$name" status) == ImagePullBackOff ]] || fail "$name: status $(vm_field "$name" status), wanted ImagePullBackOff"
    # as on a cluster: the VMI still Scheduling, its launcher Pending, the image container waiting with the reason
    [[ $(vmi_phase "$name") == Scheduling ]] || fail "$name: VMI phase $(vmi_phase "$name"), wanted Scheduling"
    kv engine get pod -o json | jq -e --arg p "virt-launcher-$name-" '[.items[] | select(.metadata.name | startswith($p))][0] |
        .status.phase == "Pending" and (.status.containerStatuses[] | select(.name == "volumecontainerdisk") |
        .state.waiting.reason == "ImagePullBackOff" or .state.waiting.reason == "ErrImagePull")' >/dev/null ||
        fail "$name: the launcher does not show the image pull failure"
    out=$(kv diagnose "default/$name" 2>&1) && fail "$name: diagnose found nothing wrong"
    [[ $out == *launcher-image-pull* ]] || fail "$name: diagnose does not point at the image pull: $out"
    kv engine get event "$name" | grep -q ErrImagePull || fail "$name: no ErrImagePull event"
    kv engine get event "$name" | grep -q BackOff || fail "$name: no BackOff event"
    [[ $(ntmp) == 0 ]] || fail "$name: temporary files left in the cache"
    [[ $(find "$CACHE/disks" "$CACHE/refs" -type f | sort | md5sum) == "$before" ]] || fail "$name: the cache changed"
    kv engine delete "$name" --force >/dev/null || fail "delete $name"
}

step "failures: ErrImagePull then ImagePullBackOff, the registry named, nothing written"
start_fails bad-tag "$REG/containerdisks/fedora:nope" "manifest nope not found .*registry $REG"
start_fails bad-digest "quay.io/containerdisks/fedora@sha256:$(printf '%064d' 0)" "not found .*registry $REG"
start_fails unreachable "127.0.0.1:9/kvtest/none:v1" "registry 127.0.0.1:9 unreachable"
# a disk larger than engine.image-max-size (issue 23): refused on its tar header, before a byte is written
echo "engine.image-max-size = 3Mi" >>"$XDG_CONFIG_HOME/kvcon/config"
start_fails too-big "$REG/kvtest/other:v1" \
    "registry $REG: blob sha256:[0-9a-f]{64}: layer: the disk [^ ]+ needs 4.0 MiB, [0-9.]+ [KMG]iB free / cap 3.0 MiB"
sed -i '/^engine.image-max-size/d' "$XDG_CONFIG_HOME/kvcon/config"
printf '{"auths":{"%s":{"auth":"%s"}}}\n' "$REG" "$(printf 'kvtest:wrong' | base64 -w0)" >"$ENGINE_T/bad-auth.json"
# the pull is the engine service's: its credentials are those of its environment (a service started on demand
# inherits the starting kvcon's), so the service is restarted with the bad ones, and again without them after
svc_stop_all "$ENGINE_T"
REGISTRY_AUTH_FILE=$ENGINE_T/bad-auth.json start_fails bad-creds "$REG/kvtest/other:v1" \
    "unauthorized: registry $REG refused the credentials from $ENGINE_T/bad-auth.json"
svc_stop_all "$ENGINE_T"
# a blob whose bytes no longer match its digest (the registry's storage corrupted behind its back)
layer=$(jq -r '.layers[0].digest' "$OCI/blobs/sha256/${D_OTHER#sha256:}")
data=$REGDIR/data/docker/registry/v2/blobs/sha256/${layer:7:2}/${layer#sha256:}/data
[[ -f $data ]] || fail "no registry blob $data"
size=$(stat -c %s "$data")
head -c "$size" /dev/urandom >"$data"
start_fails bad-blob "$REG/kvtest/other:v1" "digest mismatch: registry $REG served $size bytes with digest sha256:[0-9a-f]+ for blob $layer"

step "Bearer tokens: a registry whose auth is a token service (WWW-Authenticate: Bearer realm=...)"
tok_env=$("$ROOT/tests/lab/registry.sh" up "$TOKDIR" token) || fail "token registry"
TREG=$(sed -n 's/^REG=//p' <<<"$tok_env")
TAUTH=$(sed -n 's/^REG_AUTH=//p' <<<"$tok_env")
d=$("$ROOT/tests/lab/registry.sh" push "$TOKDIR" "$OCI:other" kvtest/other:v1) || fail "push to the token registry"
echo "registry = $TREG ca=$TOKDIR/ca.crt" >>"$XDG_CONFIG_HOME/kvcon/config"
out=$(REGISTRY_AUTH_FILE=$TAUTH kv engine pull "$TREG/kvtest/other:v1") || fail "pull with a token: $out"
[[ $out == *"$d from $TREG"* ]] || fail "token pull: $out"
grep -q 'GET /token?scope=repository%3akvtest%2fother%3apull&service=kvcon-test-registry HTTP/1.1" 200' \
    "$TOKDIR/token.log" || fail "the token service was not asked"
out=$(REGISTRY_AUTH_FILE=/nonexistent kv engine pull "$TREG/kvtest/other:v1" 2>&1) && fail "anonymous pull worked"
[[ $out == *"ErrImagePull"*"unauthorized: registry $TREG requires authentication"* ]] || fail "anonymous: $out"
printf '{"auths":{"%s":{"auth":"%s"}}}\n' "$TREG" "$(printf 'kvtest:wrong' | base64 -w0)" >"$ENGINE_T/bad-tok.json"
out=$(REGISTRY_AUTH_FILE=$ENGINE_T/bad-tok.json kv engine pull "$TREG/kvtest/other:v1" 2>&1) && fail "bad token creds"
[[ $out == *"unauthorized: the token service of registry $TREG refused the credentials"* ]] || fail "bad creds: $out"
"$ROOT/tests/lab/registry.sh" down "$TOKDIR"

step "an insecure registry (plain HTTP) only with insecure=true"
PREG=$("$ROOT/tests/lab/registry.sh" up "$PLAINDIR" plain | sed -n 's/^REG=//p') || fail "plain registry"
d=$("$ROOT/tests/lab/registry.sh" push "$PLAINDIR" "$OCI:other" kvtest/other:v1) || fail "push to the plain registry"
out=$(kv engine pull "$PREG/kvtest/other:v1" 2>&1) && fail "pulled over plain HTTP without insecure=true: $out"
[[ $out == *"ErrImagePull"*"registry $PREG unreachable"* ]] || fail "plain registry, secure: $out"
echo "registry = $PREG insecure=true" >>"$XDG_CONFIG_HOME/kvcon/config"
out=$(kv engine pull "$PREG/kvtest/other:v1") || fail "insecure pull: $out"
[[ $out == *"$d from $PREG"* ]] || fail "insecure pull: $out"
"$ROOT/tests/lab/registry.sh" down "$PLAINDIR"

step "kill -9 in the middle of a pull: nothing half-written is trusted"
"$KV" engine pull "$REG/kvtest/big:v1" >"$ENGINE_T/big.out" 2>&1 &
bg=$!
until (($(find "$CACHE/tmp" -type f -size +1M 2>/dev/null | wc -l) > 0)); do
    kill -0 $bg 2>/dev/null || { cat "$ENGINE_T/big.out"; fail "the pull ended before it could be killed"; }
    sleep 0.02
done
kill -9 $bg
wait $bg 2>/dev/null || true
biglayer=$(jq -r '.layers[0].digest' "$OCI/blobs/sha256/${D_BIG#sha256:}")
[[ ! -e $CACHE/disks/sha256-${biglayer#sha256:}.raw ]] || fail "a disk from the killed pull is in the cache"
ls "$CACHE/refs" | grep -q big && fail "a reference from the killed pull is in the cache"
(($(ntmp) > 0)) || fail "expected the killed pull's temporary file (the test must kill it mid-way)"
out=$(kv engine pull "$REG/kvtest/big:v1") || fail "pull after the kill: $out"
[[ $out == *"$D_BIG"* ]] || fail "pull after the kill: $out"
kv engine apply -f "$ENGINE_T/fedora-demo.yaml" >/dev/null # unchanged; sweeps
[[ $(ntmp) == 0 ]] || fail "the sweep left the killed pull's temporary file"
[[ ! -e $CACHE/disks/sha256-${biglayer#sha256:}.raw ]] || fail "the sweep kept a disk no VM uses"

step "progress on the command line: the service's launcher pod carries the pull, engine start shows it"
# the 160 MiB image (swept from the cache just above): its pull takes a while; the engine service reports it as
# kubelet would, the waiting message of the launcher's ContainerCreating container, and `engine start` prints it
sed -e "s/fedora-demo/bigvm/g" -e "s#image: quay.io/containerdisks/fedora:latest#image: $REG/kvtest/big:v1#" \
    "$ENGINE_T/fedora-demo.yaml" >"$ENGINE_T/bigvm.yaml"
kv engine apply -f "$ENGINE_T/bigvm.yaml" >/dev/null || fail "apply bigvm"
kv engine start bigvm 2>"$ENGINE_T/start-big.err" >/dev/null || { cat "$ENGINE_T/start-big.err"; fail "start bigvm"; }
sed 's/^/   stderr| /' "$ENGINE_T/start-big.err"
grep -q "^pulling image \"$REG/kvtest/big:v1\"" "$ENGINE_T/start-big.err" || fail "engine start showed no pull progress"
kv engine get event bigvm | grep -q "Successfully pulled image \"$REG/kvtest/big:v1\"" || fail "no Pulled event for bigvm"
kv engine delete bigvm --force >/dev/null

step "delete: cached images go when no VM uses them"
kv engine delete fedora-two --force >/dev/null
kv engine delete fedora-demo --force >/dev/null
[[ $(ndisks) == 1 ]] || fail "internals-demo's disk went with the fedora VMs"
ls "$CACHE/refs" | grep -q fedora && fail "fedora's reference outlived its VMs"
kv -n kubevirt-lab engine delete internals-demo --force >/dev/null
[[ $(ndisks) == 0 ]] || fail "$(ndisks) disks cached after every VM was deleted"

step "a local file in the image directory wins (registry stopped)"
"$ROOT/tests/lab/registry.sh" down "$REGDIR"
cp "$ROOT/build/cdisk/disk.qcow2" "$KVCON_ENGINE_IMAGES/quay.io_containerdisks_fedora_latest.qcow2"
kv engine apply -f "$ENGINE_T/fedora-demo.yaml" >/dev/null || fail "apply with a local file"
kv engine start fedora-demo >/dev/null 2>&1 || fail "start from the local file"
marker fedora-demo
kv engine get event fedora-demo | grep -q Pulling && fail "pulled although a local file exists"
[[ $(overlay_backing fedora-demo containerdisk) == "$KVCON_ENGINE_IMAGES/quay.io_containerdisks_fedora_latest.qcow2" ]] ||
    fail "not backed by the local file"
kv engine stop fedora-demo --force >/dev/null
echo PASS
