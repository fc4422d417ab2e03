#!/bin/bash
# Issue 14 finding 8: a manifest with 80,000 labels against the engine (embedded libvirt driver, Halted, no guest
# started). Times `kvcon engine apply` (parse, duplicate-key check, validation, record written) and two later
# commands that load the stored record (`engine get vm`), each a fresh process as a user runs them. Before the
# fix the duplicate-key check was quadratic: 48 s for the apply and again for every later command.
# KVCON_BIN picks the binary (compare two builds); LABELS the label count.
set -u
# shellcheck source=tests/e2e/engine-lib.bash
. "$(dirname "$0")/../e2e/engine-lib.bash"
engine_embed_up kvbenchlbl
n=${LABELS:-80000}
m=$ENGINE_T/labels.yaml
engine_manifest "$m" biglabels Halted 128Mi >/dev/null
{
	head -4 "$m"
	echo "  labels:"
	for ((i = 0; i < n; i++)); do echo "    bench.kvcon.io/l$i: v$i"; done
	tail -n +5 "$m"
} >"$m.big"
bytes=$(stat -c %s "$m.big")
# wall ms / CPU ms of a command
ms() {
	local t0 t1
	t0=$(date +%s%N)
	/usr/bin/time -f %U+%S -o "$ENGINE_T/cpu" "$@" >/dev/null 2>"$ENGINE_T/err" || { cat "$ENGINE_T/err"; echo "  (failed: $*)"; }
	t1=$(date +%s%N)
	echo "$(((t1 - t0) / 1000000)) ms wall / $(echo "($(cat "$ENGINE_T/cpu")) * 1000" | bc | cut -d. -f1) ms CPU"
}
# the driver's first open of a new root costs seconds whatever the manifest: the VM applied small first, then
# the 80,000 labels applied over it
e=$(ms "$KV" -c "$URI" engine apply -f "$m")
a=$(ms "$KV" -c "$URI" engine apply -f "$m.big")
g1=$(ms "$KV" -c "$URI" engine get vm biglabels)
g2=$(ms "$KV" -c "$URI" engine get vm)
"$KV" -c "$URI" engine get vm biglabels -o json | jq -e '.metadata.name == "biglabels"' >/dev/null || echo "  (the VM is not listed)"
echo "manifest: $n labels, $bytes bytes; engine apply: $a; then engine get vm NAME: $g1; engine get vm: $g2;" \
	"(first command, a small manifest: $e)"
