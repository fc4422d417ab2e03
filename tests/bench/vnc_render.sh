#!/bin/bash
# VNC display rendering: frames/s for full 1024x768 updates into a 200x60 pane, CPU for an incremental update,
# bytes written to the terminal per frame (tests/bench/vnc_bench.c, one core, the project's -O2 build).
set -eu
cd "$(dirname "$0")/../.."
make -s build/libkvcon.a # the tests' archive (not built by `make all`), rebuilt when a source changed
tmp=$(mktemp -d /tmp/kvvncb.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cc -std=c11 -D_GNU_SOURCE -O2 -g -Isrc -o "$tmp/vnc_bench" tests/bench/vnc_bench.c build/libkvcon.a \
	$(pkg-config --libs ncursesw libcurl json-c vterm libvncclient libvirt yaml-0.1 zlib) -lpthread -lm
taskset -c 0 "$tmp/vnc_bench" 2>/dev/null || "$tmp/vnc_bench"
cc -std=c11 -D_GNU_SOURCE -O2 -g -Isrc -o "$tmp/vnc_e2e_bench" tests/bench/vnc_e2e_bench.c build/libkvcon.a \
	$(pkg-config --libs ncursesw libcurl json-c vterm libvncclient libvirt yaml-0.1 zlib) -lpthread -lm
"$tmp/vnc_e2e_bench"
