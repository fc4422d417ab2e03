#!/bin/bash
# The engine picks its accelerator by itself (no KVCON_ENGINE_ACCEL, no config): its KVM probe (a tiny guest kvcon
# builds, timed under -accel kvm) decides, and whatever it decides, a real guest started through the engine must
# print its boot marker on kvcon's console (the notice on stderr once per boot). A probe that says "ok" where KVM guests stay silent (this lab: /dev/kvm
# answers, vCPUs crawl) fails here. Then the verdict is cached for this boot: a second kvcon does not probe again.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/engine-lib.bash"

engine_embed_up kva
unset KVCON_ENGINE_ACCEL
# the first open in-process on purpose (its notice on stderr, its log): no service on demand
export KVCON_ENGINE_SERVICE=off
export XDG_CONFIG_HOME=$ENGINE_T/config # no engine.accel from a config file either
LOG=$ENGINE_T/kvcon.log
probe=$XDG_STATE_HOME/kvcon/engine-kvm-probe

step "first open: the engine probes KVM itself"
kv --log-file "$LOG" engine apply -f "$(manifest alpha Always)" 2>"$ENGINE_T/apply.err" >/dev/null ||
    { cat "$ENGINE_T/apply.err"; fail "apply"; }
[[ -s $probe ]] || fail "no probe verdict cached in $probe"
read -r _ version verdict reason <"$probe"
echo "   probe: $version $verdict ${reason:-}"
grep 'KVM probe' "$LOG" | sed 's/^/   log: /'
[[ $version == probe2 ]] || fail "cache written by another probe version: $(cat "$probe")"
pid=$(rec_exec alpha pid)
[[ $pid -gt 0 ]] || fail "no QEMU pid recorded"
cmd=$(tr '\0' ' ' </proc/"$pid"/cmdline)
case $verdict in
broken)
    [[ -n ${reason:-} ]] || fail "a broken verdict without a reason"
    grep -q "KVM unusable here, guests run under TCG emulation: " "$ENGINE_T/apply.err" ||
        { cat "$ENGINE_T/apply.err"; fail "no TCG notice on stderr"; }
    [[ $cmd == *"-accel tcg"* ]] || fail "KVM judged unusable, yet QEMU runs: $cmd" ;;
ok)
    [[ $cmd == *"-accel kvm"* ]] || fail "KVM judged usable, yet QEMU runs: $cmd" ;;
*) fail "verdict '$verdict'" ;;
esac

step "the guest talks (a KVM that was judged ok but does not run guests fails here)"
marker alpha

step "second open: the cached verdict, no new probe"
: >"$LOG"
kv --log-file "$LOG" engine get vmi alpha >/dev/null 2>"$ENGINE_T/get.err" || fail "get"
grep -q "engine: KVM .* (cached in $probe)" "$LOG" || { cat "$LOG"; fail "second open did not use the cache"; }
if grep -q 'KVM probe:' "$LOG"; then fail "second open probed again"; fi
# the notice is shown once per boot on the command line; the log keeps it every time
if [[ $verdict != ok ]]; then
    grep -q "KVM unusable here" "$ENGINE_T/get.err" && fail "the notice again in the same boot: $(cat "$ENGINE_T/get.err")"
    grep -q "KVM unusable here" "$LOG" || fail "no notice from the cached verdict in the log"
fi

kv engine stop alpha --grace-period 0 >/dev/null || fail "stop"
echo PASS
