#!/bin/bash
# Runs every e2e / lab script (tests/e2e/*.sh, tests/lab/selftest.sh). Each exits 0 (pass), 77 (skip, with the
# reason on its last output line) or anything else (fail). KVCON_BIN names the binary under test.
# E2E_FILTER=regex runs a subset. Last line: the counts (tests/counts.sh; KVCON_STRICT=1 fails on a skip).
set -u
cd "$(dirname "$0")/.."
. tests/counts.sh
export KVCON_BIN="${KVCON_BIN:-$PWD/kvcon}"
export KVCON_ROOT="$PWD"
logdir="$PWD/build/e2e-logs"
mkdir -p "$logdir"
n=0
for t in tests/e2e/*.sh tests/lab/selftest.sh; do
	[ -f "$t" ] || continue
	if [ -n "${E2E_FILTER:-}" ] && ! [[ "$t" =~ $E2E_FILTER ]]; then continue; fi
	name=$(basename "$t" .sh); [ "$t" = tests/lab/selftest.sh ] && name=lab-selftest
	start=$(date +%s)
	bash "$t" >"$logdir/$name.log" 2>&1
	rc=$?
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
