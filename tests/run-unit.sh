#!/bin/sh
# Runs each unit test binary given on the command line; fails when any fails. Each line gives the test's time in
# seconds (as tests/run-e2e.sh's), so that CI's budget stays visible. Last line: the counts (tests/counts.sh).
. "$(dirname "$0")/counts.sh"
out=$(mktemp)
secs() { awk -v a="$1" -v b="$(date +%s%N)" 'BEGIN { printf "%.1f", (b - a) / 1e9 }'; }
for t in "$@"; do
	start=$(date +%s%N)
	if "$t" >"$out" 2>&1; then
		printf '  PASS %-32s %5ss  (%s)\n' "$(basename "$t")" "$(secs "$start")" "$(tail -n1 "$out" | sed 's/.*: //')"
		passed=$((passed + 1))
	else
		printf '  FAIL %-32s %5ss\n' "$(basename "$t")" "$(secs "$start")"
		cat "$out"
		failed=$((failed + 1))
	fi
done
rm -f "$out"
counts_end
