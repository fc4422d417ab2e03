#!/bin/sh
# Runs each unit test binary given on the command line; fails when any fails. Last line: the counts
# (tests/counts.sh).
. "$(dirname "$0")/counts.sh"
out=$(mktemp)
for t in "$@"; do
	if "$t" >"$out" 2>&1; then
		printf '  PASS %s (%s)\n' "$(basename "$t")" "$(tail -n1 "$out" | sed 's/.*: //')"
		passed=$((passed + 1))
	else
		printf '  FAIL %s\n' "$(basename "$t")"
		cat "$out"
		failed=$((failed + 1))
	fi
done
rm -f "$out"
counts_end
