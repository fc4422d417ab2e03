# service.bash - sourced by the e2e libraries (engine-lib.bash, ui_lib.inc, lib/fakekube.bash, migrate-lib.bash):
# kvcon starts an engine service on demand (docs/ENGINE-SERVICE.md) for the root a test uses; the test's cleanup
# stops the ones under its own directories, so that no service outlives its test.

# pid_alive PID: the process runs (a zombie does not: a service started on demand is init's child, and some inits
# reap only every second or so, while kill -0 still answers for the zombie). A zombie main thread whose other
# threads still exit is alive: they hold the process's files and locks (an engine root's driver.pid) until the
# last is gone, as util_pid_running says.
pid_alive() {
    local st t
    st=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
    st=${st##*) }
    [[ ${st%% *} != Z ]] && return 0
    for t in /proc/"$1"/task/*/stat; do
        st=$(cat "$t" 2>/dev/null) || continue
        st=${st##*) }
        [[ ${st%% *} != Z && ${st%% *} != X ]] && return 0
    done
    return 1
}
pid_gone() { pid_alive "$1" || echo gone; } # for wait_eq SECONDS gone pid_gone PID

# svc_stop_all DIR...: stops every `kvcon engine serve` whose SOCKET.pid lies under a DIR, or whose socket an
# engine-serve.log under a DIR names (a state directory too deep for a socket puts it in a short directory
# elsewhere: service/service.c) (SIGTERM, SIGKILL after 10 s), before the caller removes its directories
svc_stop_all() {
    local f p i
    while IFS= read -r f; do
        p=$(cat "$f" 2>/dev/null) || continue
        [[ $p =~ ^[0-9]+$ ]] || continue
        { tr '\0' ' ' <"/proc/$p/cmdline"; } 2>/dev/null | grep -q ' engine serve ' || continue
        kill -TERM "$p" 2>/dev/null || continue
        for i in $(seq 1 100); do
            pid_alive "$p" || break
            sleep 0.1
        done
        kill -9 "$p" 2>/dev/null || true
    done < <({
        find "$@" -name 'engine-*.sock.pid' 2>/dev/null
        find "$@" -name engine-serve.log -exec sed -n 's/^socket: \(.*\)$/\1.pid/p' {} + 2>/dev/null
    } | sort -u)
    # those outside the DIRs (named by a log under them, hashed from the test's own state directory) leave nothing
    # behind either: the socket of one killed -9, the pid file, the starters' lock
    while IFS= read -r f; do
        rm -f "$f" "$f.pid" "$f.lock"
    done < <(find "$@" -name engine-serve.log -exec sed -n 's/^socket: \(.*\)$/\1/p' {} + 2>/dev/null | sort -u)
    # a service stopped while libvirt probed QEMU's capabilities (a cold root's first open) leaves the probe's
    # QEMU behind, daemonized (the next engine process of the root would end it: embed_reap_probes): found by
    # its command line, whose monitor is under a root in the DIRs (its pid file may not be written yet)
    local c d
    for p in /proc/[0-9]*; do
        c=$({ tr '\0' ' ' <"$p/cmdline"; } 2>/dev/null) || continue
        [[ $c == *qemu-system*" -machine none"* ]] || continue
        for d in "$@"; do
            [[ $c == *" -qmp unix:$d/"*/lib/qemu/qmp-* ]] && kill -9 "${p#/proc/}" 2>/dev/null
        done
    done
    return 0
}
