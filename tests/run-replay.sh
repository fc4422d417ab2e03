#!/bin/sh
# Replays each fuzz harness over its corpus (tests/fuzz/corpus/NAME for fuzz_NAME) with 300 mutations per input.
fail=0
for b in "$@"; do
	name=$(basename "$b"); corpus="tests/fuzz/corpus/${name#fuzz_}"
	[ -d "$corpus" ] || { printf '  FAIL %s (no corpus in %s)\n' "$name" "$corpus"; fail=1; continue; }
	if "$b" -m "${REPLAY_MUTATIONS:-300}" "$corpus" >/tmp/kvcon-replay.$$ 2>&1; then
		printf '  PASS %s replay (%s)\n' "$name" "$(tail -n1 /tmp/kvcon-replay.$$ | sed 's/.*: //')"
	else
		printf '  FAIL %s replay\n' "$name"; tail -n 30 /tmp/kvcon-replay.$$; fail=1
	fi
done
rm -f /tmp/kvcon-replay.$$
exit $fail
