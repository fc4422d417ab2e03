# fakekube.bash - sourced by the bash e2e and bench scripts that run kvcon against tests/fakekube. Sets top, fk
# (tests/fakekube), KVCON (the binary under test), PY (fakekube's python) and tmp (a private temp dir), skips (77)
# without openssl, and installs the EXIT/INT/TERM trap that stops every pid in $pids (append the ones you start)
# and removes $tmp (KEEP=1 keeps it). Gives fail, fkctl, poll and fk_start.
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
fk="$top/tests/fakekube"
KVCON=${KVCON_BIN:-$top/kvcon}
PY=${FAKEKUBE_PYTHON:-$(command -v python3 || echo /usr/bin/python3)}
command -v openssl >/dev/null 2>&1 || { echo "SKIP: openssl missing"; exit 77; }
tmp=$(mktemp -d)
. "$top/tests/e2e/lib/service.bash"
unset XDG_RUNTIME_DIR # an engine service started on demand keeps its socket in $tmp
# kvcon's state and config are the test's own: what this machine keeps (a local engine's VM records, which
# `kvcon get` lists beside a cluster's, or a config file) never reaches a cluster test
export XDG_STATE_HOME="$tmp/state" XDG_CONFIG_HOME="$tmp/config"
pids=""
cleanup() {
	svc_stop_all "$tmp"
	for p in $pids; do kill "$p" 2>/dev/null; done
	for p in $pids; do wait "$p" 2>/dev/null; done
	[ -n "${KEEP:-}" ] || rm -rf "$tmp"
}
trap cleanup EXIT INT TERM
fail() { echo "FAIL: $*"; exit 1; }
fkctl() { "$PY" "$fk/fkctl.py" "$tmp/fk" "$@"; }
# poll SECS CMD...: runs CMD until it succeeds; 1 when SECS pass first
poll() {
	local secs=$1; shift
	local deadline=$(($(date +%s) + secs))
	until "$@"; do
		[ "$(date +%s)" -lt $deadline ] || return 1
		sleep 0.1
	done
}
# fk_start FAKEKUBE_ARGS...: fakekube on $tmp/fk in the background (log $tmp/fk.log, pid $fkpid, in $pids), up within
# FK_WAIT s (60) and settled within FK_SETTLE s (30; 0 = do not wait for it); exports KUBECONFIG.
fk_start() {
	"$PY" "$fk/fakekube.py" --dir "$tmp/fk" "$@" >"$tmp/fk.log" 2>&1 &
	fkpid=$!
	pids="$pids $fkpid"
	fkctl wait "${FK_WAIT:-60}" >/dev/null || { cat "$tmp/fk.log"; fail "fakekube did not start"; }
	if [ "${FK_SETTLE:-30}" != 0 ]; then
		fkctl settle "${FK_SETTLE:-30}" >/dev/null || fail "fakekube did not settle"
	fi
	export KUBECONFIG="$tmp/fk/kubeconfig"
}
