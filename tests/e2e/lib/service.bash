# service.bash - sourced by the e2e libraries (engine-lib.bash, ui_lib.inc, lib/fakekube.bash, migrate-lib.bash):
# kvcon starts an engine service on demand (docs/ENGINE-SERVICE.md) for the root a test uses; the test's cleanup
# stops the ones under its own directories, so that no service outlives its test.

# svc_stop_all DIR...: stops every `kvcon engine serve` whose SOCKET.pid lies under a DIR (SIGTERM, SIGKILL after
# 10 s), before the caller removes its directories
svc_stop_all() {
    local f p i
    while IFS= read -r f; do
        p=$(cat "$f" 2>/dev/null) || continue
        [[ $p =~ ^[0-9]+$ ]] || continue
        { tr '\0' ' ' <"/proc/$p/cmdline"; } 2>/dev/null | grep -q ' engine serve ' || continue
        kill -TERM "$p" 2>/dev/null || continue
        for i in $(seq 1 100); do
            kill -0 "$p" 2>/dev/null || break
            sleep 0.1
        done
        kill -9 "$p" 2>/dev/null || true
    done < <(find "$@" -name 'engine-*.sock.pid' 2>/dev/null)
    # a service stopped while libvirt probed QEMU's capabilities (a cold root's first open) leaves the probe's
    # QEMU behind, daemonized: its pid file is under the root's lib/qemu/qmp-*/
    while IFS= read -r f; do
        p=$(cat "$f" 2>/dev/null) || continue
        [[ $p =~ ^[0-9]+$ ]] || continue
        { tr '\0' ' ' <"/proc/$p/cmdline"; } 2>/dev/null | grep -q -- "-qmp unix:${f%/qmp.pid}/" || continue
        kill -9 "$p" 2>/dev/null || true
    done < <(find "$@" -path '*/qmp-*/qmp.pid' 2>/dev/null)
    return 0
}
