# shellcheck shell=sh
# counts.sh - sourced by the test runners: the `N passed, N failed, N skipped` line every runner ends with.
#   KVCON_STRICT=1   a skip counts as a failure (CI, the clean room, and `make check` as root): on a machine set
#                    up by scripts/deps.sh no test has a reason to skip
#   KVCON_COUNTS=F   also appends "PASSED FAILED SKIPPED" to F, for `make check`'s total (tests/summary.sh)
# Exit status of counts_end: 0 when nothing failed (and, strict, nothing skipped), else 1.
passed=0 failed=0 skipped=0
counts_end() {
	[ -z "${KVCON_COUNTS:-}" ] || echo "$passed $failed $skipped" >>"$KVCON_COUNTS"
	if [ "${KVCON_STRICT:-0}" = 1 ] && [ "$skipped" -gt 0 ]; then
		echo "$passed passed, $failed failed, $skipped skipped (KVCON_STRICT=1: a skip is a failure)"
		return 1
	fi
	echo "$passed passed, $failed failed, $skipped skipped"
	[ "$failed" = 0 ]
}
