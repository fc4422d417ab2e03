#!/bin/sh
# The include graph between src/ layers must have no cycle (docs/ARCHITECTURE.md, "Layers").
# Reads every #include "LAYER/..." of src/*/*.[ch] and of the mains (src/*.c, the layer main), builds the
# layer -> layer graph and fails on any cycle, printing it with one file that makes each edge. Usage: tests/layers.sh [SRCDIR] (default: src).
set -eu
if [ $# = 0 ]; then
	# the check checks itself first: a two-layer cycle must fail (and be named), one direction must pass
	t=$(mktemp -d)
	trap 'rm -rf "$t"' EXIT
	mkdir -p "$t/a" "$t/b"
	printf '#include "b/y.h"\n' >"$t/a/x.c"
	: >"$t/b/y.h"
	"$0" "$t" >/dev/null || { echo "layers: self-test: a -> b reported as a cycle" >&2; exit 1; }
	printf '#include "a/x.h"\n' >"$t/b/y.c"
	if "$0" "$t" 2>"$t/err" >/dev/null || ! grep -Eq 'cycle: (a -> b -> a|b -> a -> b)$' "$t/err"; then
		echo "layers: self-test: the cycle a -> b -> a was not reported" >&2
		exit 1
	fi
	set -- "$(dirname "$0")/../src"
fi
src=$1
[ -d "$src" ] || { echo "layers: no directory $src" >&2; exit 1; }
# edges "from to file", one per (from,to) pair (the first file seen names it)
edges=$(
	for f in "$src"/*.c "$src"/*/*.c "$src"/*/*.h; do
		[ -f "$f" ] || continue
		rel=${f#"$src"/}
		case $rel in */*) from=${rel%%/*} ;; *) from=main ;; esac
		sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([a-z]*\)\/[^"]*".*/\1/p' "$f" |
			while read -r to; do
				[ "$to" = "$from" ] || [ ! -d "$src/$to" ] || echo "$from $to $rel"
			done
	done | sort -u -k1,2 | awk '!seen[$1" "$2]++'
)
printf '%s\n' "$edges" | awk '
NF == 3 { adj[$1] = adj[$1] " " $2; file[$1 " " $2] = $3; nodes[$1]; nodes[$2] }
function dfs(n,    i, k, m, out, j, cyc) {
	state[n] = 1; stack[++depth] = n
	k = split(adj[n], out, " ")
	for (i = 1; i <= k; i++) {
		m = out[i]
		if (state[m] == 1) {
			cyc = ""
			for (j = 1; j <= depth; j++)
				if (stack[j] == m) break
			for (; j <= depth; j++)
				cyc = cyc stack[j] " -> "
			cyc = cyc m
			if (!(cyc in printed)) {
				printed[cyc]
				print "layers: include cycle: " cyc > "/dev/stderr"
				for (j = 1; j <= depth; j++)
					if (stack[j] == m) break
				for (; j < depth; j++)
					print "  " stack[j] " -> " stack[j + 1] ": " file[stack[j] " " stack[j + 1]] > "/dev/stderr"
				print "  " n " -> " m ": " file[n " " m] > "/dev/stderr"
			}
			bad = 1
		} else if (state[m] == 0) {
			dfs(m)
		}
	}
	depth--; state[n] = 2
}
END {
	for (n in nodes) if (state[n] == 0) dfs(n)
	if (bad) exit 1
	for (e in file) ne++
	print "layers: " ne " edges between layers, no cycle"
}'
