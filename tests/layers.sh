#!/bin/sh
# The include graph between src/ layers must have no cycle (docs/ARCHITECTURE.md, "Layers"), nor the one between
# files: a module (src/LAYER/NAME.c and .h, one node) must not reach its own header again through the headers it
# and they include. Reads every #include "LAYER/..." of src/*/*.[ch] and of the mains (src/*.c), builds the layer -> layer
# graph and the module -> module graph and fails on any cycle, printing it with one file that makes each edge.
# Usage: tests/layers.sh [SRCDIR] (default: src).
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
	# files: a/p.c includes a/q.h, a/q.c includes a/r.h, a/r.h includes a/p.h (a module's .c and .h are one node)
	rm -f "$t/b/y.c"
	printf '#include "a/q.h"\n' >"$t/a/p.c"
	printf '#include "a/r.h"\n' >"$t/a/q.c"
	: >"$t/a/q.h"
	: >"$t/a/p.h"
	printf '#include "a/p.h"\n' >"$t/a/r.h"
	if "$0" "$t" 2>"$t/err" >/dev/null || ! grep -q 'file include cycle: a/p a/q a/r$' "$t/err"; then
		echo "layers: self-test: the file cycle a/p -> a/q -> a/r -> a/p was not reported" >&2
		exit 1
	fi
	rm "$t/a/r.h"
	"$0" "$t" >/dev/null 2>&1 || { echo "layers: self-test: a/p -> a/q reported as a cycle" >&2; exit 1; }
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
# modules: "FROM TO FILE" for each #include "L/N.h" of FROM's .c or .h (FROM is L/N of the file) naming another module
medges=$(
	for f in "$src"/*/*.c "$src"/*/*.h; do
		[ -f "$f" ] || continue
		rel=${f#"$src"/}
		from=${rel%.*}
		sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([a-z_0-9]*\/[a-z_0-9]*\)\.h".*/\1/p' "$f" |
			while read -r to; do
				[ "$to" = "$from" ] || [ ! -f "$src/$to.h" ] || echo "$from $to $rel"
			done
	done | awk '!seen[$1" "$2]++'
)
# Tarjan's strongly connected components: each of more than one module is a cycle, printed with its edges, unless
# it lies within one of the knots that predate this check (tests/layers-knots.txt, one a line, to be taken apart:
# a knot may shrink, never grow, and a line no cycle needs any more fails too, so that it is removed).
knots=$(dirname "$0")/layers-knots.txt
[ -f "$knots" ] && [ "$src" = "$(dirname "$0")/../src" ] || knots=/dev/null
printf '%s\n' "$medges" | awk -v knots="$knots" '
BEGIN {
	while ((getline line < knots) > 0) {
		if (line ~ /^#/ || line == "") continue
		nk++; kline[nk] = line; kn = split(line, kw, " ")
		for (i = 1; i <= kn; i++) knot[kw[i]] = nk
	}
}
NF == 3 { adj[$1] = adj[$1] " " $2; file[$1 " " $2] = $3; nodes[$1]; nodes[$2] }
function visit(v,    k, i, out, w, comp, n) {
	idx[v] = low[v] = ++count; stack[++sp] = v; on[v] = 1
	k = split(adj[v], out, " ")
	for (i = 1; i <= k; i++) {
		w = out[i]
		if (!(w in idx)) { visit(w); if (low[w] < low[v]) low[v] = low[w] }
		else if (on[w] && idx[w] < low[v]) low[v] = idx[w]
	}
	if (low[v] != idx[v]) return
	n = 0; comp = ""
	do { w = stack[sp--]; on[w] = 0; member[w] = v; list[++n] = w } while (w != v)
	if (n < 2) return
	k = knot[list[1]]
	for (i = 2; i <= n && k; i++) if (knot[list[i]] != k) k = 0
	if (k) { used[k] = 1; return } # within a known knot
	bad = 1
	# sorted, so that the message is stable
	for (i = 2; i <= n; i++) for (k = i; k > 1 && list[k - 1] > list[k]; k--) { w = list[k]; list[k] = list[k - 1]; list[k - 1] = w }
	for (i = 1; i <= n; i++) comp = comp " " list[i]
	print "layers: file include cycle:" comp > "/dev/stderr"
	for (e in file) { split(e, p, " "); if (member[p[1]] == v && member[p[2]] == v) print "  " p[1] " -> " p[2] ": " file[e] > "/dev/stderr" }
}
END {
	for (n in nodes) if (!(n in idx)) visit(n)
	for (k = 1; k <= nk; k++) if (!used[k]) {
		print "layers: " knots ": no longer a cycle, remove the line: " kline[k] > "/dev/stderr"
		bad = 1
	}
	if (bad) exit 1
	for (e in file) ne++
	print "layers: " ne " edges between modules, no cycle but the " nk + 0 " known knots of " knots
}'
