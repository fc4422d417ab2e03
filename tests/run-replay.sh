#!/bin/sh
# Replays each fuzz harness over its corpus (tests/fuzz/corpus/NAME for fuzz_NAME) with 300 mutations per input.
# Each line gives the replay's time in seconds (as tests/run-e2e.sh's). Last line: the counts (tests/counts.sh).
. "$(dirname "$0")/counts.sh"
out=$(mktemp)
secs() { awk -v a="$1" -v b="$(date +%s%N)" 'BEGIN { printf "%.1f", (b - a) / 1e9 }'; }
for b in "$@"; do
	name=$(basename "$b"); corpus="tests/fuzz/corpus/${name#fuzz_}"
	start=$(date +%s%N)
	if [ ! -d "$corpus" ]; then
		printf '  FAIL %s (no corpus in %s)\n' "$name" "$corpus"
		failed=$((failed + 1))
	elif "$b" -m "${REPLAY_MUTATIONS:-300}" "$corpus" >"$out" 2>&1; then
		printf '  PASS %-32s %5ss  (replay, %s)\n' "$name" "$(secs "$start")" "$(tail -n1 "$out" | sed 's/.*: //')"
		passed=$((passed + 1))
	else
		printf '  FAIL %-32s %5ss  (replay)\n' "$name" "$(secs "$start")"; tail -n 30 "$out"
		failed=$((failed + 1))
	fi
done
rm -f "$out"
counts_end
