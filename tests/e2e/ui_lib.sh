# Shared helpers for the dashboard's e2e tests (sourced by tests/e2e/ui_*.sh; not a test itself: run-e2e.sh
# only runs files matching ui_*.sh that are executable tests, and this one exits 0 when run alone).
# Starts fakekube and kvcon in a private tmux server at 120x40; everything is cleaned up on exit.
[ "${BASH_SOURCE[0]}" = "$0" ] && { echo "helper library"; exit 0; }
set -u
ROOT="${KVCON_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
KVCON="${KVCON_BIN:-$ROOT/kvcon}"
PY=python3
command -v tmux >/dev/null || { echo "tmux not installed"; exit 77; }
W=$(mktemp -d /tmp/kvcon-ui-e2e.XXXXXX)
SOCK="kvcon-ui-$$"
T="tmux -L $SOCK -f /dev/null"
FKPID=""

ui_cleanup() {
	$T kill-server 2>/dev/null
	[ -n "$FKPID" ] && kill "$FKPID" 2>/dev/null && wait "$FKPID" 2>/dev/null
	rm -rf "$W"
}
trap ui_cleanup EXIT

fail() {
	echo "FAIL: $*"
	echo "--- screen:"
	$T capture-pane -p -t k 2>/dev/null
	echo "--- kvcon log (tail):"
	tail -n 20 "$W/kvcon.log" 2>/dev/null
	exit 1
}

# fk_start ARGS...: fakekube in $W/fk
fk_start() {
	mkdir -p "$W/fk"
	$PY "$ROOT/tests/fakekube/fakekube.py" --dir "$W/fk" "$@" >"$W/fk.log" 2>&1 &
	FKPID=$!
	$PY "$ROOT/tests/fakekube/fkctl.py" "$W/fk" wait 60 >/dev/null || fail "fakekube did not start"
}
fk() { $PY "$ROOT/tests/fakekube/fkctl.py" "$W/fk" "$@"; }
mutating() { fk get /fake/requests | $PY -c 'import json,sys; print(json.load(sys.stdin)["mutating"])'; }

# kv_start ARGS...: kvcon in a 120x40 tmux pane whose exit status is kept
kv_start() {
	# a second session keeps the tmux server up across kvcon restarts (kv_restart)
	$T has-session -t keep 2>/dev/null || $T new-session -d -s keep "sleep 600"
	$T new-session -d -x 120 -y 40 -s k -e "TERM=xterm-256color" \
		"env KUBECONFIG=$W/fk/kubeconfig KVCON_LOG=$W/kvcon.log XDG_CONFIG_HOME=$W/cfg XDG_STATE_HOME=$W/state $KVCON $* ; echo KVCON_EXIT=\$? > $W/exit; sleep 600"
}
# kv_restart ARGS...: a new kvcon in a new pane (the old one gets SIGHUP)
kv_restart() {
	$T kill-session -t k 2>/dev/null
	: >"$W/exit"
	kv_start "$@"
}
# kv_start_env "VAR=x ..." ARGS...: like kv_start with extra environment (TERM too)
kv_start_env() {
	local envs="$1"
	shift
	$T kill-session -t k 2>/dev/null
	$T has-session -t keep 2>/dev/null || $T new-session -d -s keep "sleep 600"
	$T new-session -d -x 120 -y 40 -s k -e "TERM=xterm-256color" \
		"env KUBECONFIG=$W/fk/kubeconfig KVCON_LOG=$W/kvcon.log XDG_CONFIG_HOME=$W/cfg XDG_STATE_HOME=$W/state $envs $KVCON $* ; echo KVCON_EXIT=\$? > $W/exit; sleep 600"
}
screen() { $T capture-pane -p -t k; }
keys() { $T send-keys -t k "$@"; }
# wait_for REGEX [SECONDS]: polls the screen until it matches
wait_for() {
	local re="$1" deadline=$((SECONDS + ${2:-10}))
	while [ $SECONDS -lt $deadline ]; do
		screen | grep -qE -- "$re" && return 0
		sleep 0.1
	done
	fail "timed out waiting for /$re/"
}
wait_gone() {
	local re="$1" deadline=$((SECONDS + ${2:-10}))
	while [ $SECONDS -lt $deadline ]; do
		screen | grep -qE -- "$re" || return 0
		sleep 0.1
	done
	fail "timed out waiting for /$re/ to go"
}
# cmd TEXT: types a `:` command
cmd() { keys ":"; keys -l "$1"; keys Enter; }
