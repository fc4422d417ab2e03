#!/bin/bash
# Runs every e2e / lab script (tests/e2e/*.sh, tests/lab/selftest.sh). Each exits 0 (pass), 77 (skip, with the
# reason on its last output line) or anything else (fail). KVCON_BIN names the binary under test.
# E2E_FILTER=regex runs a subset; E2E_OMIT=regex leaves the matching scripts out, each named on an OMIT line (not
# counted: `make asan` omits the ones that run no kvcon code). Last line: the counts (tests/counts.sh;
# KVCON_STRICT=1 fails on a skip).
# Two lanes, each one test at a time, side by side: the machine lane (QEMU guests, libvirt, the lab, the engine's
# guests: mostly one core busy, the rest waiting on guests) and the cluster lane, the scripts whose header says
# `# e2e-lane: cluster`: a fake cluster, tmux, kvcon and at most an engine root of their own without a guest;
# nothing of the machine's (no QEMU, no libvirtd, no lab, no account or mount outside a private namespace), no
# fixed port, no process looked for outside their own directories. E2E_LANES=1 runs all in one lane, in order.
set -u
cd "$(dirname "$0")/.."
. tests/counts.sh
export KVCON_BIN="${KVCON_BIN:-$PWD/kvcon}"
export KVCON_ROOT="$PWD"
logdir="$PWD/build/e2e-logs"
mkdir -p "$logdir"
n=0
# Processes a test leaves behind, started while it ran: an `engine serve` of the binary under test (the
# kvcon-engine beside it, which kvcon starts and `kvcon engine serve` execs) that carries this run's mark in its
# environment (KVCON_E2E_RUN, inherited by the services kvcon starts on demand), or a QEMU
# whose command line names a /tmp directory that is gone and that the test's log names (its test removed it).
# Printed, then ended (they would disturb the next test), and the test fails. Another suite's processes on the
# same machine (another checkout, another runner) are never this run's.
kvbin=$(readlink -f "$KVCON_BIN")
kveng=$(dirname "$kvbin")/kvcon-engine
run_id="$$.$(date +%s%N)" # each test's mark: KVCON_E2E_RUN=$run_id.NAME
ours() { # PID LOG MARK: an `engine serve` of the test (MARK), or a QEMU of a removed /tmp directory LOG names
	local exe cmd w d
	exe=$(readlink "/proc/$1/exe" 2>/dev/null) || return 1
	cmd=$({ tr '\0' ' ' <"/proc/$1/cmdline"; } 2>/dev/null) || return 1
	if [ "${exe% (deleted)}" = "$kvbin" ] || [ "${exe% (deleted)}" = "$kveng" ]; then
		[[ $cmd == *" engine serve"* ]] || return 1
		tr '\0' '\n' <"/proc/$1/environ" 2>/dev/null | grep -qxF "KVCON_E2E_RUN=$3"
		return
	fi
	[[ $exe == */qemu-system-* ]] || return 1
	for w in $cmd; do
		[[ $w =~ (/tmp/[^/,=:\"]+) ]] || continue
		d=${BASH_REMATCH[1]}
		[ ! -e "$d" ] && grep -qF "$d" "$2" && return 0
	done
	return 1
}
pids_now() { ls /proc | grep -E '^[0-9]+$' | sort; }
leftovers() { # BEFORE-LIST LOG MARK: the pids started since that are the test's
	local p now
	now=$(mktemp)
	pids_now >"$now"
	for p in $(comm -13 "$1" "$now"); do
		ours "$p" "$2" "$3" && echo "$p"
	done
	rm -f "$now"
}
results=$(mktemp) # a line per test: pass|skip|fail
# run_one SCRIPT NAME: runs it, prints its line (one write), appends its result to $results
run_one() {
	local t=$1 name=$2 start rc before left p i alive secs line
	start=$(date +%s)
	before=$(mktemp)
	pids_now >"$before"
	KVCON_E2E_RUN="$run_id.$name" bash "$t" >"$logdir/$name.log" 2>&1
	rc=$?
	left=$(leftovers "$before" "$logdir/$name.log" "$run_id.$name")
	rm -f "$before"
	if [ -n "$left" ]; then
		for p in $left; do
			echo "FAIL: left running after the test: pid $p: $({ tr '\0' ' ' <"/proc/$p/cmdline"; } 2>/dev/null | head -c 300)"
			kill -TERM "$p" 2>/dev/null
		done >>"$logdir/$name.log"
		for i in $(seq 1 50); do
			alive=0
			for p in $left; do kill -0 "$p" 2>/dev/null && alive=1; done
			[ $alive = 1 ] || break
			sleep 0.1
		done
		for p in $left; do kill -9 "$p" 2>/dev/null; done
		if [ "$rc" = 0 ] || [ "$rc" = 77 ]; then rc=1; fi
	fi
	secs=$(( $(date +%s) - start ))
	case $rc in
	0) line=$(printf '  PASS %-32s %4ss' "$name" "$secs"); echo pass >>"$results" ;;
	77) line=$(printf '  SKIP %-32s %4ss  %s' "$name" "$secs" "$(tail -n1 "$logdir/$name.log")")
	    echo skip >>"$results" ;;
	*) line=$(printf '  FAIL %-32s %4ss  (rc %d, log %s)' "$name" "$secs" "$rc" "$logdir/$name.log"
	   grep -m 3 'FAIL' "$logdir/$name.log" | sed 's/^/    ! /'
	   tail -n 30 "$logdir/$name.log" | sed 's/^/    | /')
	   echo fail >>"$results" ;;
	esac
	printf '%s\n' "$line"
}
machine=() cluster=()
for t in tests/e2e/*.sh tests/lab/selftest.sh; do
	[ -f "$t" ] || continue
	if [ -n "${E2E_FILTER:-}" ] && ! [[ "$t" =~ $E2E_FILTER ]]; then continue; fi
	name=$(basename "$t" .sh); [ "$t" = tests/lab/selftest.sh ] && name=lab-selftest
	if [ -n "${E2E_OMIT:-}" ] && [[ "$t" =~ $E2E_OMIT ]]; then
		printf '  OMIT %-32s        (E2E_OMIT)\n' "$name"
		continue
	fi
	n=$((n + 1))
	if [ "${E2E_LANES:-2}" != 1 ] && head -n 20 "$t" | grep -qx '# e2e-lane: cluster'; then
		cluster+=("$t:$name")
	else
		machine+=("$t:$name")
	fi
done
lane() { local e; for e in "$@"; do run_one "${e%%:*}" "${e#*:}"; done; }
lane ${cluster[@]+"${cluster[@]}"} &
cl=$!
lane ${machine[@]+"${machine[@]}"}
wait $cl
passed=$(grep -c '^pass$' "$results") failed=$(grep -c '^fail$' "$results") skipped=$(grep -c '^skip$' "$results")
rm -f "$results"
[ $n -gt 0 ] || echo "  (no e2e tests)"
counts_end
