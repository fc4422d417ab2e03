#!/bin/bash
# startup.sh - what every kvcon process pays before it does anything (issue 30): `kvcon version --client` run
# STARTUP_RUNS times (default 21): wall time (spawn to exit) as median and worst, CPU (user + system, from the
# child's rusage) and max RSS (/usr/bin/time -f %M) as medians, and the shared libraries it maps; the
# same for an empty main linked with kvcon's libraries (the floor) and with kvcon-engine's. KVCON_BIN: the kvcon
# binary (default: the repository's; kvcon-engine beside it). BENCHMARKS.md has the figures.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
KV=${KVCON_BIN:-$ROOT/kvcon}
N=${STARTUP_RUNS:-21}
[ -x "$KV" ] || { echo "startup: $KV missing (make all)"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
median() { sort -n | awk '{ v[NR] = $1 } END { printf "%s", v[int((NR + 1) / 2)] }'; }
worst() { sort -n | tail -n1; }
SPAWN='
import os, sys, time
n, cmd = int(sys.argv[1]), sys.argv[2:]
null = os.open("/dev/null", os.O_WRONLY)
walls, cpus = [], []
for _ in range(n):
    t0 = time.perf_counter()
    pid = os.posix_spawn(cmd[0], cmd, os.environ,
                         file_actions=[(os.POSIX_SPAWN_DUP2, null, 1), (os.POSIX_SPAWN_DUP2, null, 2)])
    _, _, ru = os.wait4(pid, 0)
    walls.append((time.perf_counter() - t0) * 1000)
    cpus.append((ru.ru_utime + ru.ru_stime) * 1000)
walls.sort()
cpus.sort()
print(f"{walls[n // 2]:.1f} {walls[-1]:.1f} {cpus[n // 2]:.1f}")
'
measure() { # NAME CMD...: one line of figures
	local name=$1 i rss wall worst cpu
	shift
	: >"$tmp/rss"
	for ((i = 0; i < N; i++)); do
		/usr/bin/time -o "$tmp/one" -f '%M' "$@" >/dev/null 2>&1
		cat "$tmp/one" >>"$tmp/rss"
	done
	rss=$(median <"$tmp/rss")
	# wall (spawn to exit) and CPU (the child's rusage, microseconds) of each run: "median worst cpu-median"
	read -r wall worst cpu < <(python3 -c "$SPAWN" "$N" "$@")
	printf '%-38s wall median %6s ms  worst %6s ms  CPU median %5s ms  max RSS median %6s KB  (%d runs)\n' \
		"$name" "$wall" "$worst" "$cpu" "$rss" "$N"
}
libs() { ldd "$1" | grep -c '=>'; }
printf 'int main(void) { return 0; }\n' >"$tmp/empty.c"
kv_pkgs=$(sed -n 's/^KVCON_PKGS *= *//p' "$ROOT/Makefile")
eng_pkgs=$(sed -n 's/^ENGINE_PKGS *= *//p' "$ROOT/Makefile")
# shellcheck disable=SC2086 # the package lists are words
cc -o "$tmp/empty-kvcon" "$tmp/empty.c" -Wl,--no-as-needed $(pkg-config --libs $kv_pkgs) -lpthread
# shellcheck disable=SC2086
cc -o "$tmp/empty-engine" "$tmp/empty.c" -Wl,--no-as-needed $(pkg-config --libs $eng_pkgs) -lpthread -lm
eng=$(dirname "$KV")/kvcon-engine
echo "kvcon maps $(libs "$KV") shared libraries$([ -x "$eng" ] && echo ", kvcon-engine $(libs "$eng")")"
measure "kvcon version --client" "$KV" version --client
measure "empty main, kvcon's libraries" "$tmp/empty-kvcon"
measure "empty main, kvcon-engine's libraries" "$tmp/empty-engine"
