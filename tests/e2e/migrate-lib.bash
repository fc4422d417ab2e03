# migrate-lib.bash - sourced by tests/e2e/migrate_*.sh: the two-host lab (tests/lab/twohost.sh) with a private
# namespace prefix and state dir, kvcon's engine configured with both hosts (config file, migrate-uri), helpers.
# The set-up itself is engine-lib.bash's (engine_setup, engine_twohost_up, engine_manifest).
#
# After mig_setup: SRC_URI DST_URI SRC_TCP_URI DST_TCP_URI SRC_LIBDIR DST_LIBDIR, HA/HB (host names), MT (temp).

. "$(dirname "${BASH_SOURCE[0]}")/engine-lib.bash"

# kvcon with the config file's hosts (no -c)
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
    svc_stop_all "$MT"
    "$ROOT/tests/lab/twohost.sh" down >/dev/null 2>&1 || true
    [[ -n ${MIG_EXTRA_CLEAN:-} ]] && rm -rf $MIG_EXTRA_CLEAN
    [[ -n ${KEEP:-} ]] || rm -rf "$MT"
    exit $rc
}

mig_setup() {
    engine_needs "network namespaces, private libvirtd" ip libvirtd virsh jq qemu-system-x86_64
    MT=$(mktemp -d /tmp/kvm.XXXXXX)
    export KVCON_TWOHOST_NS=kvm${MT##*.}-
    export KVCON_TWOHOST_DIR=$MT/lab
    trap mig_cleanup EXIT
    export XDG_CONFIG_HOME=$MT/cfg KVCON_ENGINE_ACCEL=tcg
    engine_setup "$MT" || { echo "guest image could not be built (scripts/demo-guest.sh)"; exit 77; }
    engine_twohost_up
}

# manifest NAME [KERNEL INITRD] -> path (the lab guest; host paths with image: host)
manifest() { engine_manifest "$MT/$1.yaml" "$1" Always 160Mi ${2:+host "$2" "$3"}; }

# the VMI as the API object `kvcon get -o json` lists ({} when none); vmi_field NAME uid|node|phase
vmi_json() { "$KV" engine get vmi -o json 2>/dev/null | jq -c --arg n "$1" '[.items[] | select(.metadata.name == $n)][0] // {}'; }
vmi_field() {
    local path
    case $2 in
    uid) path=.metadata.uid ;;
    node) path=.status.nodeName ;;
    phase) path=.status.phase ;;
    *) path=.$2 ;;
    esac
    vmi_json "$1" | jq -r "$path // \"\""
}
rec() { rec_exec "$1" "$2"; }
rec_host() { local f; f=$(ls "$XDG_STATE_HOME"/kvcon/engine-data/hosts/*/vms/default_"$1".json 2>/dev/null); basename "$(dirname "$(dirname "$f")")"; }
dom_state() { virsh -q -c "$1" domstate "default_$2" 2>/dev/null | head -n1; }

# console NAME LINE REGEX: send LINE on kvcon's serial console of NAME and expect REGEX
console() {
    kv engine console "$1" --send "$2" --expect "$3" --timeout 60s >"$MT/console.out" 2>&1 ||
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

# mig_service_setup [SIGNAL]: mig_setup for a test that runs its own `kvcon engine serve` (SRV, its socket SOCK):
# HOME and XDG_RUNTIME_DIR of the test's own (0700), an EXIT trap that ends the service (SIGNAL, default TERM)
# before mig_cleanup; srv_up starts it (up to 120 s for "engine serving"), srv_kill kills it -9.
mig_service_setup() {
    MIG_SRV_SIGNAL=${1:-TERM}
    mig_setup
    export HOME=$MT/home XDG_RUNTIME_DIR=$MT/run
    mkdir -p "$HOME" "$XDG_RUNTIME_DIR"
    chmod 0700 "$XDG_RUNTIME_DIR"
    SRV=
    SOCK=
    trap 'r=$?; [[ -z $SRV ]] || { kill -$MIG_SRV_SIGNAL $SRV; wait $SRV; } 2>/dev/null || true; set +e; (exit $r); mig_cleanup' EXIT
}
srv_up() {
    local deadline=$((SECONDS + 120))
    : >"$MT/serve.out"
    "$KV" --log-file "$MT/srv.log" engine serve >"$MT/serve.out" 2>"$MT/serve.err" &
    SRV=$!
    until grep -q '^engine serving' "$MT/serve.out"; do
        ((SECONDS < deadline)) && kill -0 $SRV 2>/dev/null || fail "engine serve did not start: $(cat "$MT/serve.err")"
        sleep 0.05
    done
    SOCK=$(sed -n 's/^socket: //p' "$MT/serve.out")
}
srv_kill() { kill -9 "$SRV" 2>/dev/null || true; wait "$SRV" 2>/dev/null || true; SRV=; }
# api CURL-ARGS...: a request to the service srv_up started
api() { curl -s --max-time 20 --unix-socket "$SOCK" "$@"; }
# rec_hosts NAME: the hosts holding NAME's record (in the order of the state directory)
rec_hosts() {
    local f out=""
    for f in "$XDG_STATE_HOME"/kvcon/engine-data/hosts/*/vms/default_"$1".json; do
        [[ -e $f ]] && out="$out${out:+ }$(basename "$(dirname "$(dirname "$f")")")"
    done
    echo "$out"
}
# nqemu NAME: the QEMU processes of NAME of this test (both lab hosts run on this machine)
nqemu() {
    pgrep -a qemu-system | awk -v g="guest=default_$1," -v t="$MT/" 'index($0, g) && index($0, t)' | wc -l
}
