#!/bin/bash
# e2e-lane: cluster
# Every frame reaches the terminal in one write(): a frame written in pieces wakes the terminal once a piece, and a
# console's echo went out as the cursor move alone, then the character (ncurses 6.4 flushes after every cursor
# movement of a doupdate until the screen has once been suspended and resumed; screen_init does that once). The
# dashboard (the unit-test binary's in-process feeder: 2,000 VMs, 500 changes a second, rows changing all over the
# screen, the selection moved, the help opened and closed, then the selection moved up and down) runs with
# tests/e2e/lib/framewrites.c preloaded, which counts the write()s to the terminal inside each doupdate.
. "$(dirname "$0")/ui_lib.inc"
FEEDER="${KVCON_BUILD:-$ROOT/build}/tests/test_ui"
[ -x "$FEEDER" ] || { echo "build/tests/test_ui not built (make unit)"; exit 77; }
cc -shared -fPIC -O2 -Wall -Wextra -Werror -o "$W/framewrites.so" "$ROOT/tests/e2e/lib/framewrites.c" -ldl ||
	fail "framewrites.so did not build"
# under ASan the sanitizer's runtime would rather come first; the probe only wraps write and doupdate
asan="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"

$T has-session -t keep 2>/dev/null || $T new-session -d -s keep "sleep 600"
$T new-session -d -x 120 -y 40 -s k -e TERM=xterm-256color \
	"env KVCON_LOG=$W/kvcon.log FRAMEWRITES_LOG=$W/frames LD_PRELOAD=$W/framewrites.so ASAN_OPTIONS=$asan $FEEDER --dashboard 2000 --churn 500; echo FEEDER_EXIT=\$? > $W/exit; sleep 600"
deadline=$((SECONDS + 30))
until $T capture-pane -p -t k | grep -q 'VirtualMachines(all)\[2000\]'; do
	[ $SECONDS -lt $deadline ] || fail "the feeder did not show 2000 VMs"
	sleep 0.1
done
frames() { [ -f "$W/frames" ] && wc -l <"$W/frames" || echo 0; }
# the selection moved down and back (two rows redrawn far apart each time), the help over the list and gone again
for k in j j j j k k G g; do
	n=$(frames)
	$T send-keys -t k "$k"
	poll_until() { [ "$(frames)" -gt "$n" ]; }
	deadline=$((SECONDS + 10))
	until poll_until; do
		[ $SECONDS -lt $deadline ] || fail "no frame after the key $k"
		sleep 0.05
	done
done
$T send-keys -t k '?'
deadline=$((SECONDS + 10))
until $T capture-pane -p -t k | grep -qi 'help'; do
	[ $SECONDS -lt $deadline ] || fail "the help did not open"
	sleep 0.05
done
$T send-keys -t k Escape
# the churn goes on (its frames are paced at SCREEN_STORE_FPS) while the selection moves: 60 frames in all
deadline=$((SECONDS + 30))
k=j
until [ "$(frames)" -ge 60 ]; do
	[ $SECONDS -lt $deadline ] || fail "only $(frames) frames in 30 s"
	n=$(frames)
	$T send-keys -t k "$k"
	[ $k = j ] && k=k || k=j
	until [ "$(frames)" -gt "$n" ] || [ $SECONDS -ge $deadline ]; do sleep 0.05; done
done
$T send-keys -t k C-c
deadline=$((SECONDS + 10))
until grep -q 'FEEDER_EXIT=' "$W/exit" 2>/dev/null; do
	[ $SECONDS -lt $deadline ] || fail "the feeder did not exit"
	sleep 0.1
done
grep -q 'FEEDER_EXIT=0' "$W/exit" || fail "the feeder exited: $(cat "$W/exit")"
total=$(wc -l <"$W/frames")
# ncurses' output buffer holds about (LINES + 2) * (COLUMNS + 6) bytes: a frame larger than that (the first paint
# of a full screen) goes out in a write per bufferful, never more than one a 4 KiB
split=$(awk '$2 > 1 + int($3 / 4096)' "$W/frames" | wc -l)
echo "frames drawn: $total; written in more write()s than their size needs: $split (writes per frame: $(awk '{print $2}' "$W/frames" | sort -n | uniq -c | awk '{printf "%s x%s ", $2, $1}'))"
[ "$total" -ge 60 ] || fail "only $total frames"
[ "$split" = 0 ] || { awk '$2 > 1 + int($3 / 4096)' "$W/frames" | head -5; fail "$split of $total frames went out in more write()s than their size needs"; }
echo "PASS ui_onewrite"
