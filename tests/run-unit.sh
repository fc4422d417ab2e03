#!/bin/sh
# Runs each unit test binary given on the command line; fails when any fails.
fail=0
for t in "$@"; do
	if "$t" >/tmp/kvcon-unit.$$ 2>&1; then
		printf '  PASS %s (%s)\n' "$(basename "$t")" "$(tail -n1 /tmp/kvcon-unit.$$ | sed 's/.*: //')"
	else
		printf '  FAIL %s\n' "$(basename "$t")"
		cat /tmp/kvcon-unit.$$
		fail=1
	fi
done
rm -f /tmp/kvcon-unit.$$
exit $fail
