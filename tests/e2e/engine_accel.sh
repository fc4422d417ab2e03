#!/bin/bash
# The engine picks its accelerator by itself (no KVCON_ENGINE_ACCEL, no config): its KVM probe (a tiny guest kvcon
# builds, timed under -accel kvm, in the engine service started on demand) decides, and whatever it decides, a real guest started through the engine must
# print its boot marker on kvcon's console (the notice on stderr once per boot). A probe that says "ok" where KVM guests stay silent (this lab: /dev/kvm
# answers, vCPUs crawl) fails here. Then the verdict is cached for this boot: a second kvcon does not probe again.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/engine-lib.bash"

engine_embed_up kva
unset KVCON_ENGINE_ACCEL
export XDG_CONFIG_HOME=$ENGINE_T/config # no engine.accel from a config file either
# the engine service started on demand opens the engine and probes; its log is the state directory's kvcon.log,
# the command's own (its notice from the service) LOG
LOG=$ENGINE_T/kvcon.log
SLOG=$XDG_STATE_HOME/kvcon/kvcon.log
probe=$XDG_STATE_HOME/kvcon/engine-kvm-probe

step "first open: the engine probes KVM itself"
kv --log-file "$LOG" engine apply -f "$(manifest alpha Always)" 2>"$ENGINE_T/apply.err" >/dev/null ||
    { cat "$ENGINE_T/apply.err"; fail "apply"; }
[[ -s $probe ]] || fail "no probe verdict cached in $probe"
read -r _ version verdict reason <"$probe"
echo "   probe: $version $verdict ${reason:-}"
grep 'KVM probe' "$SLOG" | sed 's/^/   service log: /'
grep -q 'KVM probe:' "$SLOG" || fail "the service's log has no KVM probe"
[[ $version == probe2 ]] || fail "cache written by another probe version: $(cat "$probe")"
pid=$(rec_exec alpha pid)
[[ $pid -gt 0 ]] || fail "no QEMU pid recorded"
cmd=$(tr '\0' ' ' </proc/"$pid"/cmdline)
case $verdict in
broken)
    [[ -n ${reason:-} ]] || fail "a broken verdict without a reason"
    grep -q "KVM unusable here, guests run under TCG emulation: " "$ENGINE_T/apply.err" ||
        { cat "$ENGINE_T/apply.err"; fail "no TCG notice on stderr"; }
    [[ $(grep -c "KVM unusable" "$ENGINE_T/apply.err") == 1 ]] || fail "the notice more than once: $(cat "$ENGINE_T/apply.err")"
    # the service tells every client (the dashboard's header shows the same): its Node's kvcon.io/notice
    sock=$(find "$XDG_STATE_HOME/kvcon" -maxdepth 1 -name 'engine-*.sock' -type s | head -1)
    curl -sf --unix-socket "$sock" http://engine/api/v1/nodes |
        jq -r '.items[0].metadata.annotations["kvcon.io/notice"] // ""' | grep -q "^KVM unusable here" ||
        fail "the service's Node has no notice"
    [[ $cmd == *"-accel tcg"* ]] || fail "KVM judged unusable, yet QEMU runs: $cmd" ;;
ok)
    [[ $cmd == *"-accel kvm"* ]] || fail "KVM judged usable, yet QEMU runs: $cmd" ;;
*) fail "verdict '$verdict'" ;;
esac

step "the guest talks (a KVM that was judged ok but does not run guests fails here)"
marker alpha

step "second open (a new engine service): the cached verdict, no new probe"
svc_stop_all "$ENGINE_T"
: >"$LOG"
: >"$SLOG"
kv --log-file "$LOG" engine get vmi alpha >/dev/null 2>"$ENGINE_T/get.err" || fail "get"
grep -q "engine: KVM .* (cached in $probe)" "$SLOG" || { cat "$SLOG"; fail "second open did not use the cache"; }
if grep -q 'KVM probe:' "$SLOG"; then fail "second open probed again"; fi
# the notice is shown once per boot on the command line; the log keeps it every time
if [[ $verdict != ok ]]; then
    grep -q "KVM unusable here" "$ENGINE_T/get.err" && fail "the notice again in the same boot: $(cat "$ENGINE_T/get.err")"
    grep -q "KVM unusable here" "$LOG" || fail "no notice from the cached verdict in the log"
fi

if [[ $verdict != ok ]]; then
    step "the dashboard's header shows the notice, from the same service"
    tm=(tmux -L "kva$$")
    "${tm[@]}" new-session -d -x 160 -y 30 "env -u KUBECONFIG HOME=$ENGINE_T $KV -c '$URI'"
    header() { "${tm[@]}" capture-pane -p -t 0 2>/dev/null | head -n 4 | grep -c "KVM unusable here, guests run under TCG"; }
    wait_eq 30 1 header || { "${tm[@]}" capture-pane -p -t 0; "${tm[@]}" kill-server; fail "no notice in the header"; }
    "${tm[@]}" kill-server
fi

kv engine stop alpha --grace-period 0 >/dev/null || fail "stop"
echo PASS
