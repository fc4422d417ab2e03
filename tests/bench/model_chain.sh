#!/bin/bash
# Model: decoder cost per object, chain join + diagnosis and lineage lookup for one VM in a store of 10,000 VMs
# (+ VMIs, launcher pods, 2 events each) (tests/bench/model_bench.c, one core, -O2).
set -eu
cd "$(dirname "$0")/../.."
[ -f build/libkvcon.a ] || make -s all
tmp=$(mktemp -d /tmp/kvmodelb.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cc -std=c11 -D_GNU_SOURCE -O2 -g -Isrc $(pkg-config --cflags json-c) -o "$tmp/model_bench" tests/bench/model_bench.c \
	build/libkvcon.a $(pkg-config --libs ncursesw libcurl json-c vterm libvncclient libvirt yaml-0.1 zlib) -lpthread -lm
taskset -c 0 "$tmp/model_bench" 2>/dev/null || "$tmp/model_bench"
