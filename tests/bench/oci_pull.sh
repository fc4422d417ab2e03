#!/bin/bash
# containerDisk pull throughput: `kvcon engine pull` against `skopeo copy` of the same image from the same local
# registry (tests/lab/registry.sh: docker-registry on 127.0.0.1, TLS, htpasswd), same run, alternating, each
# into an empty destination. The image is build/cdisk's "big": one gzip layer of a 160 MiB raw disk of random
# data (incompressible: the layer is ~160 MiB). kvcon verifies the blob's sha256 while it streams, then
# gunzips the disk out of the layer into its cache (fsync, rename); skopeo copies the blob into an OCI layout
# (verifying it too) without unpacking it.   RUNS=N (default 5).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
KV=${KVCON_BIN:-$ROOT/kvcon}
RUNS=${RUNS:-5}
T=$(mktemp -d /tmp/kvbench-oci.XXXXXX)
trap '"$ROOT/tests/lab/registry.sh" down "$T/reg"; rm -rf "$T"' EXIT
"$ROOT/tests/lab/containerdisk.sh"
eval "$("$ROOT/tests/lab/registry.sh" up "$T/reg")"
digest=$("$ROOT/tests/lab/registry.sh" push "$T/reg" "$ROOT/build/cdisk/oci:big" kvtest/big:v1)
export REGISTRY_AUTH_FILE=$REG_AUTH XDG_CONFIG_HOME=$T/config
mkdir -p "$XDG_CONFIG_HOME/kvcon"
echo "registry = $REG ca=$REG_CA" >"$XDG_CONFIG_HOME/kvcon/config"
size=$(jq -r '.layers[0].size' "$ROOT/build/cdisk/oci/blobs/sha256/${digest#sha256:}")
echo "image $REG/kvtest/big:v1 $digest, layer $size bytes, $(nproc) CPUs"
ms() { echo $((($(date +%s%N) - $1) / 1000000)); }
kvt=() skt=()
for i in $(seq "$RUNS"); do
    rm -rf "$T/state" "$T/oci"
    t0=$(date +%s%N)
    XDG_STATE_HOME=$T/state "$KV" engine pull "$REG/kvtest/big:v1" >/dev/null
    kvt+=("$(ms "$t0")")
    t0=$(date +%s%N)
    skopeo copy --quiet --src-cert-dir "$T/reg/certs" --src-creds "$REG_USER:$REG_PASS" \
        "docker://$REG/kvtest/big:v1" "oci:$T/oci:big" >/dev/null
    skt+=("$(ms "$t0")")
    printf 'run %d: kvcon %5d ms (%6.1f MiB/s)   skopeo copy %5d ms (%6.1f MiB/s)\n' "$i" "${kvt[-1]}" \
        "$(echo "$size ${kvt[-1]}" | awk '{print $1 / 1048576 / ($2 / 1000)}')" "${skt[-1]}" \
        "$(echo "$size ${skt[-1]}" | awk '{print $1 / 1048576 / ($2 / 1000)}')"
done
med() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
printf 'median: kvcon %d ms, skopeo copy %d ms\n' "$(med "${kvt[@]}")" "$(med "${skt[@]}")"
