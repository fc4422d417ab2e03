# migrate-lib.bash - sourced by tests/e2e/migrate_*.sh: the two-host lab (tests/lab/twohost.sh) with a private
# namespace prefix and state dir, kvcon's engine configured with both hosts (config file, migrate-uri), helpers.
#
# After mig_setup: SRC_URI DST_URI SRC_TCP_URI DST_TCP_URI SRC_LIBDIR DST_LIBDIR, HA/HB (host names), MT (temp).

ROOT=${KVCON_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
KV=${KVCON_BIN:-$ROOT/kvcon}
step() { echo "== $(date +%T) $*"; }
fail() { echo "FAIL: $*"; exit 1; }

kv() {
    local t0 rc=0
    t0=$(date +%s%N)
    "$KV" "$@" || rc=$?
    echo "   [kvcon $* -> $rc, $((($(date +%s%N) - t0) / 1000000)) ms]" >&2
    return $rc
}

mig_cleanup() {
    local rc=$?
    [[ -n ${MIG_BG:-} ]] && kill "$MIG_BG" 2>/dev/null
    "$ROOT/tests/lab/twohost.sh" down >/dev/null 2>&1 || true
    [[ -n ${MIG_EXTRA_CLEAN:-} ]] && rm -rf $MIG_EXTRA_CLEAN
    [[ -n ${KEEP:-} ]] || rm -rf "$MT"
    exit $rc
}

mig_setup() {
    [[ $(id -u) == 0 ]] || { echo "needs root (network namespaces, private libvirtd)"; exit 77; }
    local c
    for c in ip libvirtd virsh jq qemu-system-x86_64; do
        command -v $c >/dev/null || { echo "$c missing (scripts/deps.sh)"; exit 77; }
    done
    MT=$(mktemp -d /tmp/kvm.XXXXXX)
    export KVCON_TWOHOST_NS=kvm${MT##*.}-
    export KVCON_TWOHOST_DIR=$MT/lab
    trap mig_cleanup EXIT
    export XDG_STATE_HOME=$MT/state XDG_CONFIG_HOME=$MT/cfg
    export KVCON_ENGINE_IMAGES=$MT/images KVCON_ENGINE_ACCEL=tcg
    mkdir -p "$KVCON_ENGINE_IMAGES" "$XDG_CONFIG_HOME/kvcon"
    "$ROOT/tests/lab/guest.sh" "$KVCON_ENGINE_IMAGES/kvcon-lab-guest" >/dev/null ||
        { echo "guest image could not be built (tests/lab/guest.sh)"; exit 77; }
    local env
    env=$("$ROOT/tests/lab/twohost.sh" up) || { echo "two-host lab did not come up (tests/lab/twohost.sh)"; exit 77; }
    eval "$env"
    HA=${KVCON_TWOHOST_NS}a HB=${KVCON_TWOHOST_NS}b
    cat >"$XDG_CONFIG_HOME/kvcon/config" <<EOF
# the two lab hosts; the source libvirtd reaches the other one on its tcp address
engine.host = $SRC_URI migrate-uri=$SRC_TCP_URI
engine.host = $DST_URI migrate-uri=$DST_TCP_URI
EOF
}

# manifest NAME [KERNEL INITRD] -> path (the lab guest; host paths with image: host)
manifest() {
    local f=$MT/$1.yaml img=kvcon-lab-guest k=/vmlinuz i=/initrd.gz
    [[ -n ${2:-} ]] && img=host k=$2 i=$3
    cat >"$f" <<EOF
apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata:
  name: $1
spec:
  runStrategy: Always
  template:
    spec:
      terminationGracePeriodSeconds: 3
      domain:
        memory:
          guest: 160Mi
        firmware:
          kernelBoot:
            kernelArgs: console=ttyS0 quiet panic=-1
            container:
              image: $img
              kernelPath: $k
              initrdPath: $i
        devices:
          autoattachPodInterface: false
EOF
    echo "$f"
}

vmi_json() { "$KV" engine get vmi "$1" -o json 2>/dev/null | jq -c '.[0] // {}'; }
vmi_field() { vmi_json "$1" | jq -r ".$2 // \"\""; }
# the record of NAME, wherever it is (one host holds it)
record() { cat "$XDG_STATE_HOME"/kvcon/engine-data/hosts/*/vms/default_"$1".json 2>/dev/null || echo '{}'; }
rec() { record "$1" | jq -r ".execution.$2 // \"\""; }
rec_host() { local f; f=$(ls "$XDG_STATE_HOME"/kvcon/engine-data/hosts/*/vms/default_"$1".json 2>/dev/null); basename "$(dirname "$(dirname "$f")")"; }
dom_state() { virsh -q -c "$1" domstate "default_$2" 2>/dev/null | head -n1; }

# console NAME LINE REGEX: send LINE on kvcon's serial console of NAME and expect REGEX
console() {
    kv engine console "$1" --send "$2" --expect "$3" --timeout 60 >"$MT/console.out" 2>&1 ||
        { cat "$MT/console.out"; return 1; }
}

# boot NAME: wait for its shell, through kvcon's console
wait_shell() {
    kv engine console "$1" --expect 'KVCON-GUEST-READY' --send 'echo up=$((20+22))' --expect 'up=42' \
        --timeout 90 >"$MT/console.out" 2>&1 || { cat "$MT/console.out"; fail "$1: no shell on the console"; }
}

wait_for() { # wait_for SECONDS CMD... (until CMD succeeds)
    local until=$(($(date +%s) + $1))
    shift
    until "$@"; do
        (($(date +%s) < until)) || return 1
        sleep 0.2
    done
}
