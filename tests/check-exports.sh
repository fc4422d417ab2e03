#!/bin/sh
# check-exports.sh BUILD: every function or variable a src/ object exports is used by another object of kvcon or
# by a test (tests/**/*.c); one used only in its own file should be static, one used nowhere deleted, and one used
# by tests only is a test seam, declared in its header below a "---- test seams" line (and nothing kvcon calls is).
# nm over the objects `make all` built: a second or so. Last line: the counts (tests/counts.sh).
. "$(dirname "$0")/counts.sh"
cd "$(dirname "$0")/.." || exit 1
b=${1:?usage: check-exports.sh BUILD}
export LC_ALL=C
# Defined outside C (kvmprobe.c's guest code is assembly), called by the C runtime, or by a library (GnuTLS's
# opt-out of its implicit initialisation, src/main.c).
allow="main kvmprobe_code kvmprobe_code_end _gnutls_global_init_skip"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# the objects of today's sources (a stale object of a removed file is no export)
set --
for c in src/*/*.c src/*.c; do set -- "$@" "$b/${c%.c}.o"; done
for o in "$@"; do
	[ -f "$o" ] || { printf '  FAIL exports (%s missing: run make all first)\n' "$o"; failed=1; counts_end; exit; }
done
# one nm for every object (-A: "OBJECT:ADDRESS TYPE SYMBOL", "OBJECT: U SYMBOL")
# (names the compiler makes, such as ASan's __odr_asan.NAME, are not the project's)
nm -A -g --defined-only "$@" | awk -v b="$b/" '$(NF-1) ~ /^[TDBR]$/ && $NF !~ /^__/ {
	o = $1; sub(/:[^:]*$/, "", o); if (index(o, b) == 1) o = substr(o, length(b) + 1); sub(/\.o$/, ".c", o); print $NF, o }' | sort >"$tmp/defs"
{ nm -A -u "$@" | awk '{ print $NF }'; printf '%s\n' $allow; } | sort -u >"$tmp/krefs"
{
	cat "$tmp/krefs"
	grep -rhoE --include='*.c' '[A-Za-z_][A-Za-z0-9_]*' tests
} | sort -u >"$tmp/refs"
join -v1 "$tmp/defs" "$tmp/refs" | while read -r sym src; do
	if [ "$(grep -cw "$sym" "$src")" -gt 1 ]; then
		echo "    $src: $sym is used only in its own file: make it static"
	else
		echo "    $src: $sym is never used: delete it"
	fi
done >"$tmp/out"
# What only tests call is a test seam: declared below its header's "---- test seams" line, and what kvcon itself
# calls is not declared there.
seams() { # HEADER: the names declared below its test seams line
	[ -f "$1" ] && awk '/---- test seams/ { f = 1; next } f' "$1" | grep -v '^ *\(/\*\|\*\)' |
		grep -oE '[A-Za-z_][A-Za-z0-9_]*[[:space:]]*[[(;]' | tr -d '[(; \t' | sort -u
}
join -v1 "$tmp/defs" "$tmp/krefs" | join - "$tmp/refs" | while read -r sym src; do
	h=${src%.c}.h
	seams "$h" | grep -qx "$sym" ||
		echo "    $src: $sym is called by tests only: static, or declared below the test seams line of $h"
done >>"$tmp/out"
for h in src/*/*.h; do
	seams "$h" | join - "$tmp/krefs" | while read -r sym; do
		echo "    $h: $sym is declared a test seam but kvcon calls it: declare it above that line"
	done
done >>"$tmp/out"
if [ -s "$tmp/out" ]; then
	printf '  FAIL exports (%s)\n' "$(wc -l <"$tmp/out") unused"
	cat "$tmp/out"
	failed=1
else
	printf '  PASS exports (%s symbols)\n' "$(wc -l <"$tmp/defs")"
	passed=1
fi
counts_end
