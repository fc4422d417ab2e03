# engine-lib.bash - sourced by tests/e2e/engine_*.sh: the engine's run-strategy scenario against one libvirt
# host (the embedded driver or a private libvirtd), driven only through `kvcon engine ...`. Its set-up
# (engine_needs, engine_setup, engine_embed_warm, engine_twohost_up, engine_manifest) is also what
# migrate-lib.bash and the dashboard's engine tests (ui_engine.sh, ui_migrate.sh, sourcing it before ui_lib.inc) use.
#
# The caller sets KV (kvcon binary), ENGINE_T (a short temp dir), URI (libvirt URI), and crash_vm NAME (makes
# the current QEMU of NAME die the way a crash would while `kvcon engine reconcile` runs).
# XDG_STATE_HOME=$ENGINE_T/state keeps everything (records, run dirs, the embedded root) private.

ROOT=${KVCON_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
. "$ROOT/tests/e2e/lib/service.bash"
KV=${KVCON_BIN:-$ROOT/kvcon}
step() { echo "== $(date +%T) $*"; }
fail() { echo "FAIL: $*"; exit 1; }

kv() {
    local t0 rc=0
    t0=$(date +%s%N)
    "$KV" -c "$URI" "$@" || rc=$?
    echo "   [kvcon $* -> $rc, $((($(date +%s%N) - t0) / 1000000)) ms]" >&2
    return $rc
}

# engine_needs WHAT CMD...: skips (77) unless root (for WHAT) with every CMD on the PATH
engine_needs() {
    [[ $(id -u) == 0 ]] || { echo "needs root ($1)"; exit 77; }
    shift
    local c
    for c; do
        command -v "$c" >/dev/null || { echo "$c missing (scripts/deps.sh)"; exit 77; }
    done
}

# engine_setup [DIR]: the engine's set-up every engine test shares, under DIR (default $ENGINE_T):
# XDG_STATE_HOME=DIR/state (records, run dirs, the embedded root), the guest (scripts/demo-guest.sh) as a
# kernel-boot image in KVCON_ENGINE_IMAGES=DIR/images, TCG unless KVCON_ENGINE_ACCEL says otherwise.
# Non-zero when the guest could not be built.
engine_setup() {
    local dir=${1:-$ENGINE_T} g
    export XDG_STATE_HOME=$dir/state
    # the engine service's socket (started on demand) beside the state, not in the user's runtime directory
    unset XDG_RUNTIME_DIR
    export KVCON_ENGINE_IMAGES=$dir/images
    export KVCON_ENGINE_ACCEL=${KVCON_ENGINE_ACCEL:-tcg}
    mkdir -p "$KVCON_ENGINE_IMAGES/kvcon-lab-guest"
    # built once into build/guest (guest.sh skips a rebuild on its stamp), linked into this test's image dir
    g=$(cd "$ROOT" && scripts/demo-guest.sh >/dev/null && echo "$ROOT/build/guest") || return 1
    ln -f "$g/vmlinuz" "$g/initrd.gz" "$KVCON_ENGINE_IMAGES/kvcon-lab-guest/" 2>/dev/null ||
        cp "$g/vmlinuz" "$g/initrd.gz" "$KVCON_ENGINE_IMAGES/kvcon-lab-guest/"
}

# engine_embed_warm: URI, libvirt's embedded driver rooted in this test's state, its capability cache warmed
engine_embed_warm() {
    URI="qemu:///embed?root=$XDG_STATE_HOME/kvcon/engine"
    "$ROOT/scripts/embed-warm.sh" "$XDG_STATE_HOME/kvcon/engine" >/dev/null
}

# The embedded driver as this test's host: skips (77) unless root with QEMU and jq; ENGINE_T=/tmp/PREFIX.XXXXXX with
# a cleanup trap (kills the QEMUs of its root, removes it unless KEEP is set), engine_setup, URI, a warm root.
engine_embed_up() {
    engine_needs "the embedded libvirt driver runs guests under its own account only as root" qemu-system-x86_64 jq
    ENGINE_T=$(mktemp -d "/tmp/$1.XXXXXX")
    trap engine_embed_cleanup EXIT
    engine_setup "$ENGINE_T"
    engine_embed_warm
}
engine_embed_cleanup() {
    local f
    svc_stop_all "$ENGINE_T"
    for f in "$ENGINE_T"/state/kvcon/engine/run/qemu/*.pid; do
        [[ -f $f ]] && kill -9 "$(cat "$f")" 2>/dev/null || true
    done
    [[ -n ${KEEP:-} ]] || rm -rf "$ENGINE_T"
}

# engine_twohost_up: the two-host lab (tests/lab/twohost.sh; the caller sets KVCON_TWOHOST_NS and
# KVCON_TWOHOST_DIR) up, its SRC_URI DST_URI SRC_TCP_URI DST_TCP_URI SRC_LIBDIR DST_LIBDIR exported, HA/HB the
# host names, and kvcon's config file ($XDG_CONFIG_HOME/kvcon/config) naming both hosts. Skips (77) when the lab
# does not come up.
engine_twohost_up() {
    local env
    env=$("$ROOT/tests/lab/twohost.sh" up) || { echo "two-host lab did not come up (tests/lab/twohost.sh)"; exit 77; }
    eval "$env"
    # shellcheck disable=SC2034 # the callers' host names
    HA=${KVCON_TWOHOST_NS}a HB=${KVCON_TWOHOST_NS}b
    mkdir -p "$XDG_CONFIG_HOME/kvcon"
    cat >"$XDG_CONFIG_HOME/kvcon/config" <<EOF
# the two lab hosts; the source libvirtd reaches the other one on its tcp address
engine.host = $SRC_URI migrate-uri=$SRC_TCP_URI
engine.host = $DST_URI migrate-uri=$DST_TCP_URI
EOF
}

# engine_manifest FILE NAME STRATEGY MEMORY [IMAGE KERNEL INITRD]: writes a VM of the lab guest (or of IMAGE's
# KERNEL and INITRD; image "host" takes host paths) to FILE and prints FILE
engine_manifest() {
    cat >"$1" <<EOF
apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata:
  name: $2
spec:
  runStrategy: $3
  template:
    spec:
      terminationGracePeriodSeconds: 3
      domain:
        memory:
          guest: $4
        firmware:
          kernelBoot:
            kernelArgs: console=ttyS0 quiet panic=-1
            container:
              image: ${5:-kvcon-lab-guest}
              kernelPath: ${6:-/vmlinuz}
              initrdPath: ${7:-/initrd.gz}
        devices:
          autoattachPodInterface: false
EOF
    echo "$1"
}

# manifest NAME STRATEGY -> path
manifest() { engine_manifest "$ENGINE_T/$1-$2.yaml" "$1" "$2" 192Mi; }

# kvcon's own view, as JSON (converged: `get` runs after the engine's resync)
# (the API objects `kvcon get -o json` prints: a List; none is {})
vm_json() { kv engine get vm -o json | jq -c --arg n "$1" '[.items[] | select(.metadata.name == $n)][0] // {}'; }
vmi_json() { kv engine get vmi -o json | jq -c --arg n "$1" '[.items[] | select(.metadata.name == $n)][0] // {}'; }
vmi_uid() { vmi_json "$1" | jq -r '.metadata.uid // ""'; }
vmi_phase() { vmi_json "$1" | jq -r '.status.phase // ""'; }
# vm_field NAME status|runStrategy|uid|memory: the VM's printable status, run strategy, UID, guest memory
vm_field() {
    local path
    case $2 in
    status) path=.status.printableStatus ;;
    runStrategy) path=.spec.runStrategy ;;
    uid) path=.metadata.uid ;;
    memory) path=.spec.template.spec.domain.memory.guest ;;
    *) path=.$2 ;;
    esac
    vm_json "$1" | jq -r "$path // \"\""
}

# the record kvcon keeps (readable while another kvcon runs)
record() { cat "$XDG_STATE_HOME"/kvcon/engine-data/hosts/*/vms/default_"$1".json 2>/dev/null || echo '{}'; }
rec_exec() { record "$1" | jq -r ".execution.$2 // \"\""; }

# poll CMD until it prints WANT (deadline S seconds)
wait_eq() {
    local s=$1 want=$2 got=""
    shift 2
    local until=$(($(date +%s) + s))
    while (($(date +%s) < until)); do
        got=$("$@" 2>/dev/null || true)
        [[ $got == "$want" ]] && return 0
        sleep 0.2
    done
    echo "wait_eq: '$*' is '$got', wanted '$want' after ${s}s"
    return 1
}

# wait_phase_fast RE NAME: the record of NAME's execution has a phase matching RE within 20 s (polled without
# pauses: a start is Pending, then Scheduled, for well under a second)
wait_phase_fast() {
    local until=$(($(date +%s) + 20)) f
    while (($(date +%s) < until)); do
        for f in "$XDG_STATE_HOME"/kvcon/engine-data/hosts/*/vms/default_"$2".json; do
            [[ -f $f && $(<"$f") =~ \"phase\":\ ?\"($1)\" ]] && return 0
        done
    done
    return 1
}

# svc_kill9: kill -9 every engine service of this test (its pid files under $ENGINE_T), as a crash would
svc_kill9() {
    local f p
    while IFS= read -r f; do
        p=$(cat "$f" 2>/dev/null) || continue
        [[ $p =~ ^[0-9]+$ ]] || continue
        { tr '\0' ' ' <"/proc/$p/cmdline"; } 2>/dev/null | grep -q ' engine serve ' && kill -9 "$p"
    done < <(find "$ENGINE_T" -name 'engine-*.sock.pid' 2>/dev/null)
    return 0
}

qemu_count() { # QEMU processes running domain NS_NAME of this test's host (NS: default, or $2)
    local n=0 p
    for p in /proc/[0-9]*; do
        { tr '\0' ' ' <"$p/cmdline"; } 2>/dev/null | grep -- "guest=${2:-default}_$1," | grep -q -- "$ENGINE_T" &&
            n=$((n + 1))
    done
    echo $n
}

# boot marker through kvcon's serial console
marker() { kv engine console "$1" --expect KVCON-GUEST-READY --timeout 120s >"$ENGINE_T/console-$1.log" ||
    { cat "$ENGINE_T/console-$1.log"; fail "no boot marker from $1 on kvcon's console"; }; }

# shut the guest down from inside, through kvcon's console; returns when the execution ended (and the
# run strategy reacted: the command lets the reconciler converge before leaving)
guest_poweroff() {
    kv engine console "$1" --expect KVCON-GUEST-READY --send 'poweroff -f' --wait-stop --timeout 60s \
        >"$ENGINE_T/poweroff-$1.log" || { cat "$ENGINE_T/poweroff-$1.log"; fail "poweroff of $1"; }
}

engine_scenario() {
    local vmuid u1 u2 u3 u4 u5 u6 out

    step "apply (Halted): stored, not running"
    out=$(kv engine apply -f "$(manifest alpha Halted)")
    [[ $out == *"virtualmachine.kubevirt.io/alpha created"* ]] || fail "apply: $out"
    [[ $(vm_field alpha status) == Stopped ]] || fail "alpha not Stopped"
    vmuid=$(vm_field alpha uid)
    [[ -n $vmuid ]] || fail "no VM uid"
    out=$(kv engine apply -f "$ENGINE_T/alpha-Halted.yaml")
    [[ $out == *unchanged* ]] || fail "re-apply not unchanged: $out"

    step "start: Halted -> Always, running, boot marker on kvcon's console"
    kv engine start alpha >/dev/null || fail "start"
    [[ $(vm_field alpha runStrategy) == Always ]] || fail "start did not set Always"
    [[ $(vmi_phase alpha) == Running ]] || fail "not Running after start"
    u1=$(vmi_uid alpha)
    marker alpha
    [[ $(kv engine get pod -o json | jq -r '.items[0].metadata.annotations["kvcon.io/qemu-pid"] // 0') -gt 0 ]] || fail "launcher pod has no QEMU pid"
    out=$(kv engine start alpha 2>&1 || true)
    [[ $out == *"already running"* ]] || fail "second start not refused: $out"

    step "Always: guest poweroff -> restarted with a new execution UID"
    guest_poweroff alpha
    [[ $(vmi_phase alpha) == Running ]] || fail "Always did not restart"
    u2=$(vmi_uid alpha)
    [[ -n $u2 && $u2 != "$u1" ]] || fail "Always restart kept the VMI uid ($u1)"
    out=$(kv engine get event alpha)
    [[ $out == *ShutdownByGuest* && $out == *Restarted* ]] || fail "no ShutdownByGuest/Restarted events: $out"
    marker alpha

    step "a console held open across an Always restart sees the new execution boot (the service's console follows it)"
    kv engine console alpha --expect KVCON-GUEST-READY --send 'poweroff -f' --expect KVCON-GUEST-READY --timeout 120s \
        >"$ENGINE_T/across-alpha.log" 2>&1 || { cat "$ENGINE_T/across-alpha.log"; fail "no boot marker of the next execution on a console opened before the restart"; }
    wait_eq 60 Running vmi_phase alpha || fail "alpha not Running after the restart seen on the console"
    out=$(vmi_uid alpha)
    [[ -n $out && $out != "$u2" ]] || fail "the console's second marker came from the same execution ($u2)"
    u2=$out

    step "stop -> Halted, no VMI; start -> new VMI UID, same VM UID"
    kv engine stop alpha --grace-period 0 >/dev/null || fail "stop"
    [[ $(vm_field alpha runStrategy) == Halted && $(vm_field alpha status) == Stopped ]] || fail "stop state"
    [[ -z $(vmi_uid alpha) ]] || fail "a VMI remains after stop"
    [[ $(qemu_count alpha) == 0 ]] || fail "QEMU still running after stop"
    kv engine start alpha >/dev/null || fail "start again"
    u3=$(vmi_uid alpha)
    [[ -n $u3 && $u3 != "$u2" && $u3 != "$u1" ]] || fail "stop/start kept a VMI uid"
    [[ $(vm_field alpha uid) == "$vmuid" ]] || fail "VM uid changed"

    step "RerunOnFailure: guest poweroff -> Succeeded, not restarted"
    out=$(kv engine apply -f "$(manifest alpha RerunOnFailure)")
    [[ $out == *configured* ]] || fail "re-apply RerunOnFailure: $out"
    [[ $(vm_field alpha uid) == "$vmuid" ]] || fail "VM uid changed on apply"
    guest_poweroff alpha
    [[ $(vmi_phase alpha) == Succeeded ]] || fail "RerunOnFailure: phase $(vmi_phase alpha), wanted Succeeded"
    [[ $(vmi_uid alpha) == "$u3" ]] || fail "RerunOnFailure restarted after a guest shutdown"
    [[ $(qemu_count alpha) == 0 ]] || fail "QEMU running after the guest shut down"

    step "RerunOnFailure: start, crash -> restarted with a new UID"
    kv engine start alpha >/dev/null || fail "start RerunOnFailure"
    u4=$(vmi_uid alpha)
    [[ -n $u4 && $u4 != "$u3" ]] || fail "start under RerunOnFailure kept the uid"
    marker alpha
    crash_vm alpha "$u4"
    [[ $(vmi_phase alpha) == Running ]] || fail "RerunOnFailure did not restart after the crash"
    u5=$(vmi_uid alpha)
    [[ $u5 != "$u4" ]] || fail "crash restart kept the uid"
    out=$(kv engine get event alpha)
    [[ $out == *Crashed* ]] || fail "no Crashed event: $out"
    marker alpha

    if [[ ${ENGINE_SHORT:-} == 1 ]]; then
        echo "uids: vm=$vmuid vmi: $u1 $u2 $u3 $u4 $u5"
        return 0
    fi

    # the engine service carries out what a command asked: it is the process killed -9 mid-way (the command
    # itself has left once the service accepted the request)
    step "kill -9 the engine service in the middle of a start: the next kvcon converges, nothing lost"
    kv engine stop alpha --grace-period 0 >/dev/null || fail "stop before kill test"
    kv engine apply -f "$(manifest alpha Halted)" >/dev/null
    "$KV" -c "$URI" engine start alpha --no-wait >/dev/null 2>&1 & # not via kv(): $! must be kvcon
    local bg=$!
    wait_phase_fast 'Pending|Scheduled' alpha || { kill -9 $bg; fail "never saw the start recorded"; }
    svc_kill9
    kill -9 $bg 2>/dev/null || true
    wait $bg 2>/dev/null || true
    kv engine reconcile >/dev/null || fail "reconcile after kill"
    [[ $(vmi_phase alpha) == Running ]] || fail "not Running after the killed start: $(vmi_phase alpha)"
    [[ $(qemu_count alpha) == 1 ]] || fail "$(qemu_count alpha) QEMUs for alpha after the killed start"
    u6=$(vmi_uid alpha)
    [[ $(vm_field alpha uid) == "$vmuid" ]] || fail "VM uid changed after the killed start"
    marker alpha

    step "kill -9 the engine service during a graceful stop: converges to stopped"
    "$KV" -c "$URI" engine stop alpha --grace-period 30 >/dev/null 2>&1 &
    bg=$!
    wait_eq 20 true rec_exec alpha stopByUs || { kill -9 $bg; fail "never saw the stop recorded"; }
    svc_kill9
    kill -9 $bg 2>/dev/null || true
    wait $bg 2>/dev/null || true
    [[ $(vm_field alpha runStrategy) == Halted ]] || fail "the stop's Halted was lost"
    kv engine reconcile >/dev/null
    wait_eq 40 0 qemu_count alpha || fail "alpha still running after the killed stop converged"
    [[ $(vm_field alpha status) == Stopped ]] || fail "status $(vm_field alpha status) after the killed stop"

    step "Once and Manual"
    kv engine apply -f "$(manifest beta Once)" >/dev/null || fail "apply Once"
    [[ $(vmi_phase beta) == Running ]] || fail "Once did not start"
    local b1
    b1=$(vmi_uid beta)
    guest_poweroff beta
    [[ $(vmi_phase beta) == Succeeded && $(vmi_uid beta) == "$b1" ]] || fail "Once restarted"
    out=$(kv engine start beta 2>&1 || true)
    [[ $out == *"does not support manual start"* ]] || fail "start under Once not refused: $out"
    kv engine apply -f "$(manifest gamma Manual)" >/dev/null || fail "apply Manual"
    [[ -z $(vmi_uid gamma) ]] || fail "Manual started by itself"
    kv engine start gamma >/dev/null || fail "start Manual"
    [[ $(vm_field gamma runStrategy) == Manual ]] || fail "start changed Manual"
    guest_poweroff gamma
    [[ $(vmi_phase gamma) == Succeeded ]] || fail "Manual restarted after shutdown"

    step "delete keeps volumes unless asked; records gone"
    kv engine delete beta >/dev/null || fail "delete beta"
    kv engine delete gamma >/dev/null || fail "delete gamma"
    [[ -z $(vm_field beta uid) && -z $(vm_field gamma uid) ]] || fail "deleted VMs still listed"
    [[ $(record beta) == '{}' ]] || fail "beta's record remains"
    # a persistentVolumeClaim is a file in the volume directory: kept by delete, removed by --delete-volumes
    local vol=$XDG_STATE_HOME/kvcon/engine-data/volumes/default/delta-data.img
    mkdir -p "${vol%/*}"
    truncate -s 1M "$vol"
    { cat "$(manifest delta Halted)"; printf '      volumes:\n      - name: data\n        persistentVolumeClaim:\n          claimName: delta-data\n'; } >"$ENGINE_T/delta.yaml"
    kv engine apply -f "$ENGINE_T/delta.yaml" >/dev/null || fail "apply delta"
    kv engine delete delta >/dev/null || fail "delete delta"
    [[ -f $vol ]] || fail "delete removed the volume"
    kv engine apply -f "$ENGINE_T/delta.yaml" >/dev/null || fail "re-apply delta"
    kv engine delete delta --delete-volumes >/dev/null || fail "delete --delete-volumes"
    [[ ! -e $vol ]] || fail "--delete-volumes kept the volume"
    echo "uids: vm=$vmuid vmi: $u1 $u2 $u3 $u4 $u5 $u6"
}
