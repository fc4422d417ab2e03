#!/bin/sh
# summary.sh FILE: the total of the runners' counts (lines "PASSED FAILED SKIPPED", see tests/counts.sh) as
# `make check`'s last line. Exit 1 when anything failed or, with KVCON_STRICT=1, was skipped.
f=${1:?usage: summary.sh FILE}
[ -s "$f" ] || { echo "0 passed, 0 failed, 0 skipped (no runner reported)"; exit 1; }
awk -v strict="${KVCON_STRICT:-0}" '{ p += $1; f += $2; s += $3 }
	END { printf "total: %d passed, %d failed, %d skipped%s\n", p, f, s,
		(strict == 1 && s > 0) ? " (KVCON_STRICT=1: a skip is a failure)" : ""
		exit (f > 0 || (strict == 1 && s > 0)) ? 1 : 0 }' "$f"
