#!/bin/bash
# Runs every benchmark script (tests/bench/*.sh); each prints its figures. Results go into BENCHMARKS.md by hand,
# with the command that produced them.
set -u
cd "$(dirname "$0")/.."
export KVCON_BIN="${KVCON_BIN:-$PWD/kvcon}"
for b in tests/bench/*.sh; do
	[ -f "$b" ] || continue
	if [ -n "${BENCH_FILTER:-}" ] && ! [[ "$b" =~ $BENCH_FILTER ]]; then continue; fi
	echo "== $b"
	bash "$b" || echo "  (failed: $b)"
done
