#!/bin/bash
# e2e-lane: cluster
# Command-line conventions shared with kubectl, virtctl and virsh: LIBVIRT_DEFAULT_URI is the engine's default
# host (after -c, the config and KVCON_ENGINE_URI), console --timeout counts minutes (a unit says otherwise) and
# (engine console's too) refuses junk with error: and exit 1, every verb's usage error is error: and exit 1, `kvcon help VERB` and `VERB --help` print the table's flags.
# Exit 0 pass, anything else fail.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
KVCON=${KVCON_BIN:-$top/kvcon}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
export XDG_STATE_HOME="$tmp/state" XDG_CONFIG_HOME="$tmp/cfg" KUBECONFIG="$tmp/none"
unset KVCON_ENGINE_URI

# LIBVIRT_DEFAULT_URI is the host the engine opens (the test driver is refused by name: it was the one tried)
LIBVIRT_DEFAULT_URI=test:///default "$KVCON" engine get >"$tmp/o" 2>"$tmp/e"; rc=$?
[ $rc = 1 ] && grep -q 'test:///default' "$tmp/e" || fail "LIBVIRT_DEFAULT_URI not used (rc $rc): $(cat "$tmp/e")"
# -c wins over it, KVCON_ENGINE_URI too
LIBVIRT_DEFAULT_URI=test:///default "$KVCON" -c test:///other engine get >"$tmp/o" 2>"$tmp/e"
grep -q 'test:///other' "$tmp/e" && ! grep -q 'test:///default' "$tmp/e" || fail "-c did not win: $(cat "$tmp/e")"
LIBVIRT_DEFAULT_URI=test:///default KVCON_ENGINE_URI=test:///mine "$KVCON" engine get >"$tmp/o" 2>"$tmp/e"
grep -q 'test:///mine' "$tmp/e" || fail "KVCON_ENGINE_URI did not win: $(cat "$tmp/e")"

# console --timeout: minutes, or a duration with its unit; anything else is a usage error
for bad in 5x -1 abc 2d; do
	"$KVCON" console default/x --timeout "$bad" </dev/null >"$tmp/o" 2>"$tmp/e"; rc=$?
	[ $rc = 1 ] && grep -q '^error: --timeout takes minutes' "$tmp/e" || fail "--timeout $bad: rc $rc $(cat "$tmp/e")"
done
for good in 5 30s 2m 1h 0; do
	# accepted: the next complaint is the missing terminal, not the timeout
	"$KVCON" console default/x --timeout "$good" </dev/null >"$tmp/o" 2>"$tmp/e"
	grep -q 'timeout' "$tmp/e" && fail "--timeout $good refused: $(cat "$tmp/e")"
done
"$KVCON" help console | grep -q -- '--timeout MINUTES' || fail "help console does not say minutes"
# engine console is console on the engine: the same flags, --timeout in minutes too (it counted seconds)
"$KVCON" engine console x --timeout 5x </dev/null >"$tmp/o" 2>"$tmp/e"; rc=$?
[ $rc = 1 ] && grep -q '^error: --timeout takes minutes' "$tmp/e" || fail "engine console --timeout: rc $rc $(cat "$tmp/e")"
"$KVCON" engine --help | grep -q 'console NAME \[--timeout MIN\]' || fail "engine --help does not say minutes"
# the engine's verbs are child rows of the table: help, flags and errors from it
"$KVCON" help engine migrate | grep -q -- '--bandwidth MiB/s' || fail "help engine migrate lacks its flags"
"$KVCON" engine --help | grep -q '^  kvcon engine soft-reboot NAME' || fail "engine --help lacks the registry's actions"
for args in "engine migrate x --bogus" "engine start" "engine stop x --grace-period=x" "engine pull" "engine nosuch"; do
	# shellcheck disable=SC2086 # the words of args
	"$KVCON" $args </dev/null >"$tmp/o" 2>"$tmp/e"; rc=$?
	[ $rc = 1 ] && grep -q '^error: ' "$tmp/e" || fail "kvcon $args: rc $rc $(cat "$tmp/e")"
done

# help from the table: every verb's flags, the same for VERB --help; unknown verbs fail as kubectl does
[ "$("$KVCON" help stop)" = "$("$KVCON" stop --help)" ] || fail "help stop != stop --help"
"$KVCON" help stop | grep -q -- '--grace-period N' || fail "help stop lacks its flags"
"$KVCON" help softreboot | grep -q '^usage: kvcon soft-reboot' || fail "virtctl's soft-reboot, softreboot its alias"
# one error shape, kubectl's suggestion for a mistyped verb (model/registry.c's suggestion rule)
"$KVCON" gte vm >"$tmp/o" 2>"$tmp/e"; rc=$?
printf 'error: unknown command "gte" for "kvcon"\n\nDid you mean this?\n\tget\n' | cmp -s - "$tmp/e" && [ $rc = 1 ] ||
	fail "kvcon gte vm: rc $rc $(cat "$tmp/e")"
"$KVCON" stop >"$tmp/o" 2>"$tmp/e"; [ $? = 1 ] && grep -q '^error: which VM' "$tmp/e" || fail "stop: $(cat "$tmp/e")"
"$KVCON" get datavolume2 >"$tmp/o" 2>"$tmp/e"; [ $? = 1 ] && grep -q '^error: the server doesn.t have a resource type "datavolume2"' \
	"$tmp/e" && grep -q "^$(printf '\t')datavolumes$" "$tmp/e" || fail "get datavolume2: $(cat "$tmp/e")"
grep -rq 'kvcon [a-z]*: \|unknown action' "$tmp/e" && fail "an old error shape: $(cat "$tmp/e")"
# the verbs with their own parsers say it the same way: error: and exit 1, no "kvcon VERB:" prefix
for args in "vnc default/x --port" "vnc default/x --bogus" "engine apply" "engine console" "console" "logs" \
	"wait vm" "describe" "bundle" "stop default/x --bogus" "version x" "diagnose a/b -o yaml"; do
	# shellcheck disable=SC2086 # the words of args
	"$KVCON" $args </dev/null >"$tmp/o" 2>"$tmp/e"; rc=$?
	[ $rc = 1 ] && grep -q '^error: ' "$tmp/e" && ! grep -q '^kvcon[ :]' "$tmp/e" || fail "kvcon $args: rc $rc $(cat "$tmp/e")"
done
"$KVCON" help nosuch >/dev/null 2>"$tmp/e"; [ $? = 1 ] && grep -q '^error: unknown command "nosuch"' "$tmp/e" ||
	fail "help nosuch: $(cat "$tmp/e")"
"$KVCON" --help | grep -q '^  completion bash|zsh' || fail "--help lacks completion"
"$KVCON" --help | grep -q '__complete' && fail  "--help shows the hidden __complete"
# the man page's COMMANDS section names every verb of the table (the table drives --help and completion)
sed -n '/^\.SH COMMANDS/,/^\.SH [A-Z]/p' "$top/man/kvcon.1" >"$tmp/commands.man"
for v in $("$KVCON" --help | sed -n '/^commands:/,/^$/p' | awk 'NR > 1 && /^  [a-z]/ { print $1 }'); do
	grep -qF "\\fB${v//-/\\-}\\fR" "$tmp/commands.man" || fail "man/kvcon.1 COMMANDS lacks the verb $v"
done
echo "PASS cli_conventions: LIBVIRT_DEFAULT_URI, console --timeout minutes, help from the table"
