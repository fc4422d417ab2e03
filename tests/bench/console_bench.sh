#!/bin/bash
# Console benchmarks (issue 5): guest-to-screen throughput of 20 MB through WebSocket (websockify) + libvterm +
# ncurses, against tmux absorbing the same bytes; keystroke round trip added by kvcon. See console_bench.py.
set -u
cd "$(dirname "$0")/../.."
export KVCON_BIN=${KVCON_BIN:-$PWD/kvcon}
command -v tmux >/dev/null || { echo "skip: tmux not installed"; exit 0; }
command -v websockify >/dev/null || { echo "skip: websockify not installed"; exit 0; }
tmp=$(mktemp -d /tmp/kvcb.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
python3 tests/bench/console_bench.py "$tmp"
