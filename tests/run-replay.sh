#!/bin/sh
# Replays each fuzz harness over its corpus (tests/fuzz/corpus/NAME for fuzz_NAME) with 300 mutations per input.
# Last line: the counts (tests/counts.sh).
. "$(dirname "$0")/counts.sh"
out=$(mktemp)
for b in "$@"; do
	name=$(basename "$b"); corpus="tests/fuzz/corpus/${name#fuzz_}"
	if [ ! -d "$corpus" ]; then
		printf '  FAIL %s (no corpus in %s)\n' "$name" "$corpus"
		failed=$((failed + 1))
	elif "$b" -m "${REPLAY_MUTATIONS:-300}" "$corpus" >"$out" 2>&1; then
		printf '  PASS %s replay (%s)\n' "$name" "$(tail -n1 "$out" | sed 's/.*: //')"
		passed=$((passed + 1))
	else
		printf '  FAIL %s replay\n' "$name"; tail -n 30 "$out"
		failed=$((failed + 1))
	fi
done
rm -f "$out"
counts_end
