#!/bin/bash
# A kvcon killed while libvirt probes QEMU's capabilities (a cold embedded root's first open) leaves the probe's
# QEMU behind: daemonized, waiting on its monitor for good, its pid file under ROOT/lib/qemu/qmp-*/. The next
# engine process of that root ends it before libvirt starts (src/engine/embed.c, embed_reap_probes). The orphan
# here is a real QEMU started with the probe's own arguments (what libvirt leaves; a kill timed into the probe
# would make the test depend on timing), beside a pid file that names another live process (a pid used again:
# left alone).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/engine-lib.bash"

engine_embed_up kvq
ROOT=$XDG_STATE_HOME/kvcon/engine
[[ -e $ROOT/run/qemu/driver.pid ]] || fail "the warm-up left no driver.pid in $ROOT"

step "a probe's QEMU left by a killed kvcon, and a pid file naming some other process"
D=$ROOT/lib/qemu/qmp-KVTEST
mkdir -p "$D"
qemu-system-x86_64 -S -no-user-config -nodefaults -nographic -machine none,accel=tcg \
    -qmp "unix:$D/qmp.monitor,server=on,wait=off" -pidfile "$D/qmp.pid" -daemonize
probe=$(cat "$D/qmp.pid")
kill -0 "$probe" || fail "the probe QEMU did not start"
sleep 600 &
other=$!
mkdir -p "$ROOT/lib/qemu/qmp-OTHER"
echo "$other" >"$ROOT/lib/qemu/qmp-OTHER/qmp.pid"

step "the next engine process (a service started on demand) ends the probe before it opens the root"
kv engine get vm >/dev/null 2>"$ENGINE_T/get.err" || { cat "$ENGINE_T/get.err"; fail "get vm"; }
alive() { kill -0 "$1" 2>/dev/null && echo yes || echo no; }
wait_eq 10 no alive "$probe" || fail "the probe QEMU $probe still runs"
[[ ! -e $D ]] || fail "its directory $D is still there"
grep -q "ended QEMU pid $probe, a capability probe left by a kvcon killed while libvirt probed" \
    "$XDG_STATE_HOME/kvcon/kvcon.log" || fail "the service's log does not say it ended the probe"
kill -0 "$other" || fail "a process the pid file of another directory named was killed"
kill "$other"
echo PASS
