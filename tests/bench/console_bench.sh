#!/bin/bash
# Console benchmarks (issue 5): guest-to-screen throughput of 20 MB through WebSocket (websockify) + libvterm +
# ncurses, against tmux absorbing the same bytes; the same bytes fed straight into the pane (fast path on and
# off, tests/bench/vtpane_bench.c); keystroke round trip added by kvcon, and what a key costs it in instructions and
# system calls (console_keycost.py). See console_bench.py.
set -u
cd "$(dirname "$0")/../.."
export KVCON_BIN=${KVCON_BIN:-$PWD/kvcon}
command -v tmux >/dev/null || { echo "skip: tmux not installed"; exit 0; }
command -v websockify >/dev/null || { echo "skip: websockify not installed"; exit 0; }
tmp=$(mktemp -d /tmp/kvcb.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 tests/bench/console_bench.py "$tmp"
rc=$? # a failed measurement still lets the pane bench run, but the script fails (run-bench.sh says so)
if [ "${BENCH_CONSOLE_PART:-all}" != throughput ]; then
	# what a key costs kvcon in instructions and system calls: figures the machine's other load does not move
	python3 tests/bench/console_keycost.py "$KVCON_BIN" || rc=1
fi
if [ "${BENCH_CONSOLE_PART:-all}" != latency ]; then
	[ -f build/libkvcon.a ] || make -s all
	cc -std=c11 -D_GNU_SOURCE -O2 -g -Isrc -o "$tmp/vtpane_bench" tests/bench/vtpane_bench.c build/libkvcon.a \
		$(pkg-config --libs ncursesw libcurl json-c vterm libvncclient libvirt yaml-0.1 zlib) -lpthread -lm
	python3 -c "import sys; sys.path.insert(0, 'tests/bench'); import console_bench as c; open('$tmp/payload', 'wb').write(c.payload())"
	echo "the same payload fed straight into the pane (200x59, 10,000 lines of scrollback, 64 kB chunks):"
	"$tmp/vtpane_bench" "$tmp/payload" 7
fi
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
exit $rc
