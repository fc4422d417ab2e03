#!/bin/bash
# Runs every e2e / lab script (tests/e2e/*.sh, tests/lab/selftest.sh). Each exits 0 (pass), 77 (skip, with the
# reason on its last output line) or anything else (fail). KVCON_BIN names the binary under test.
# E2E_FILTER=regex runs a subset; E2E_OMIT=regex leaves the matching scripts out, each named on an OMIT line (not
# counted: `make asan` omits the ones that run no kvcon code). Last line: the counts (tests/counts.sh;
# KVCON_STRICT=1 fails on a skip).
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
export KVCON_E2E_RUN="$$.$(date +%s%N)"
ours() { # PID LOG: an `engine serve` of this run, or a QEMU of a removed /tmp directory LOG names
	local exe cmd w d
	exe=$(readlink "/proc/$1/exe" 2>/dev/null) || return 1
	cmd=$({ tr '\0' ' ' <"/proc/$1/cmdline"; } 2>/dev/null) || return 1
	if [ "${exe% (deleted)}" = "$kvbin" ] || [ "${exe% (deleted)}" = "$kveng" ]; then
		[[ $cmd == *" engine serve"* ]] || return 1
		tr '\0' '\n' <"/proc/$1/environ" 2>/dev/null | grep -qxF "KVCON_E2E_RUN=$KVCON_E2E_RUN"
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
leftovers() { # BEFORE-LIST LOG: the pids started since that are ours
	local p now
	now=$(mktemp)
	pids_now >"$now"
	for p in $(comm -13 "$1" "$now"); do
		ours "$p" "$2" && echo "$p"
	done
	rm -f "$now"
}
for t in tests/e2e/*.sh tests/lab/selftest.sh; do
	[ -f "$t" ] || continue
	if [ -n "${E2E_FILTER:-}" ] && ! [[ "$t" =~ $E2E_FILTER ]]; then continue; fi
	name=$(basename "$t" .sh); [ "$t" = tests/lab/selftest.sh ] && name=lab-selftest
	if [ -n "${E2E_OMIT:-}" ] && [[ "$t" =~ $E2E_OMIT ]]; then
		printf '  OMIT %-32s        (E2E_OMIT)\n' "$name"
		continue
	fi
	start=$(date +%s)
	before=$(mktemp)
	pids_now >"$before"
	bash "$t" >"$logdir/$name.log" 2>&1
	rc=$?
	left=$(leftovers "$before" "$logdir/$name.log")
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
	n=$((n + 1))
	case $rc in
	0) printf '  PASS %-32s %4ss\n' "$name" "$secs"; passed=$((passed + 1)) ;;
	77) printf '  SKIP %-32s %4ss  %s\n' "$name" "$secs" "$(tail -n1 "$logdir/$name.log")"
	    skipped=$((skipped + 1)) ;;
	*) printf '  FAIL %-32s %4ss  (rc %d, log %s)\n' "$name" "$secs" "$rc" "$logdir/$name.log"
	   grep -m 3 'FAIL' "$logdir/$name.log" | sed 's/^/    ! /'
	   tail -n 30 "$logdir/$name.log" | sed 's/^/    | /'
	   failed=$((failed + 1)) ;;
	esac
done
[ $n -gt 0 ] || echo "  (no e2e tests)"
counts_end
