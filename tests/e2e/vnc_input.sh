#!/bin/bash
# e2e-lane: cluster
# What kvcon's VNC display sends, checked message by message against a recording RFB server
# (tests/e2e/vnc_rfbserver.py, 640x480): typed letters and shifted symbols become X keysyms (with Shift pressed
# for 'A' and '>'), Ctrl+C is Control_L + c, the F8 menu sends Ctrl+Alt+Del, an xterm SGR mouse click on a cell
# becomes pointer events at the framebuffer pixel under that cell (fit scaling in an 80x24 terminal), the wheel
# is a press and release of button 4; a bracketed paste is typed as keys; a DesktopSize change from the server is
# followed; --view-only sends nothing; --readonly and the config's readonly = true (issue 25, item 9) say READ-ONLY
# in the status line and send no KeyEvent, PointerEvent or ClientCutText for keys, the F8 menu, a paste, clicks,
# the wheel or a drag.
set -u
cd "$(dirname "$0")/../.."
KVCON=${KVCON_BIN:-$PWD/kvcon}
command -v tmux >/dev/null || { echo "skip: tmux not installed"; exit 77; }
tmp=$(mktemp -d /tmp/kvvin.XXXXXX)
# kvcon's state in the test's own directory: the engine a command may look at (and its service, started on
# demand) is the test's, never this machine's
export XDG_STATE_HOME="$tmp/state" XDG_CONFIG_HOME="$tmp/cfg"
unset XDG_RUNTIME_DIR
sock="kvvin$$"
srv=""
cleanup() {
	tmux -L "$sock" kill-server 2>/dev/null
	[ -n "$srv" ] && kill "$srv" 2>/dev/null
	wait 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
	echo "FAIL: $*"
	echo "--- server log"; cat "$tmp/events.log"
	echo "--- screen"; tmux -L "$sock" capture-pane -p 2>/dev/null | tail -3
	exit 1
}
until_ok() { local t=$1; shift; local end=$((SECONDS + t)); while ! "$@"; do [ $SECONDS -ge $end ] && return 1; sleep 0.1; done; }
# the log from line $1 on, joined into one line
events_since() { tail -n +"$1" "$tmp/events.log" | tr '\n' ' '; }
mark() { echo $(($(wc -l <"$tmp/events.log") + 1)); }

python3 tests/e2e/vnc_rfbserver.py "$tmp/port" "$tmp/events.log" >"$tmp/server.out" 2>&1 &
srv=$!
until_ok 10 test -s "$tmp/port" || fail "the recording server did not start"
: >>"$tmp/events.log"
port=$(cat "$tmp/port")

tmux -L "$sock" -f /dev/null new-session -d -x 80 -y 24 \
	"COLORTERM=truecolor '$KVCON' --log-file '$tmp/kvcon.log' vnc tcp:127.0.0.1:$port; echo KVCON-EXIT=\$?; sleep 60"
until_ok 10 bash -c "tmux -L $sock capture-pane -p | grep -q 'fake  640x480  fit'" || fail "no display"

# expect WHAT LINE EVENTS...: waits until the events logged since LINE are exactly EVENTS
expect() {
	local what=$1 from=$2 want=$3
	until_ok 10 bash -c "[ \"\$(tail -n +$from '$tmp/events.log' | tr '\n' ' ')\" = '$want' ]" ||
		fail "$what: got '$(events_since "$from")', want '$want'"
	echo "  $what: $want"
}

m=$(mark); tmux -L "$sock" send-keys -l 'a'
expect "a" "$m" "key 1 0x61 key 0 0x61 "
m=$(mark); tmux -L "$sock" send-keys -l 'A'
expect "A (with Shift)" "$m" "key 1 0xffe1 key 1 0x41 key 0 0x41 key 0 0xffe1 "
m=$(mark); tmux -L "$sock" send-keys -l '>'
expect "> (with Shift)" "$m" "key 1 0xffe1 key 1 0x3e key 0 0x3e key 0 0xffe1 "
m=$(mark); tmux -L "$sock" send-keys C-c
expect "Ctrl+C" "$m" "key 1 0xffe3 key 1 0x63 key 0 0x63 key 0 0xffe3 "
m=$(mark); tmux -L "$sock" send-keys Enter
expect "Enter" "$m" "key 1 0xff0d key 0 0xff0d "
m=$(mark); tmux -L "$sock" send-keys Up
expect "Up" "$m" "key 1 0xff52 key 0 0xff52 "
# a paste (tmux brackets it, kvcon asked for bracketed paste) is typed key by key
paste() { tmux -L "$sock" set-buffer -b kvvin "$1" && tmux -L "$sock" paste-buffer -p -d -b kvvin; }
m=$(mark); paste 'hi'
expect "paste 'hi'" "$m" "key 1 0x68 key 0 0x68 key 1 0x69 key 0 0x69 "
m=$(mark); tmux -L "$sock" send-keys F8; tmux -L "$sock" send-keys d
expect "F8 d (Ctrl+Alt+Del)" "$m" "key 1 0xffe3 key 1 0xffe9 key 1 0xffff key 0 0xffff key 0 0xffe9 key 0 0xffe3 "

# 80x23 cells of display (the last row is the status line) = 80x46 half cells; 640x480 fits as 61x46, from
# column 9. Cell (col 40, row 11), 0-based, top half: target (31, 22) -> pixel (330, 234).
m=$(mark); tmux -L "$sock" send-keys -l $'\e[<0;41;12M'; tmux -L "$sock" send-keys -l $'\e[<0;41;12m'
expect "left click at cell 40,11" "$m" "ptr 1 330 234 ptr 0 330 234 "
m=$(mark); tmux -L "$sock" send-keys -l $'\e[<65;41;12M'
expect "wheel down" "$m" "ptr 16 330 234 ptr 0 330 234 "
# a drag: press at the left edge of the picture, move, release at the right edge
m=$(mark)
tmux -L "$sock" send-keys -l $'\e[<0;10;1M'; tmux -L "$sock" send-keys -l $'\e[<32;70;23M'
tmux -L "$sock" send-keys -l $'\e[<0;70;23m'
expect "drag" "$m" "ptr 1 5 5 ptr 1 634 464 ptr 0 634 464 "

# the server resizes its desktop (DesktopSize): the display follows
tmux -L "$sock" send-keys F12
until_ok 10 bash -c "tmux -L $sock capture-pane -p | grep -q 'fake  800x600  fit'" || fail "resize not shown"
echo "  DesktopSize: the display follows the server to 800x600"
tmux -L "$sock" send-keys C-]
until_ok 10 bash -c "tmux -L $sock capture-pane -p | grep -q 'KVCON-EXIT=0'" || fail "Ctrl+] did not leave with 0"
until_ok 10 bash -c "tail -n1 '$tmp/events.log' | grep -q closed" || fail "the session did not end"

# --view-only: keys and clicks stay home (a second tmux server: a killed one may linger a moment)
tmux -L "$sock" kill-server
sock="${sock}v"
tmux -L "$sock" -f /dev/null new-session -d -x 80 -y 24 \
	"'$KVCON' --log-file '$tmp/kvcon.log' vnc tcp:127.0.0.1:$port --view-only; echo KVCON-EXIT=\$?; sleep 60"
until_ok 10 bash -c "tmux -L $sock capture-pane -p | grep -q 'fake  640x480  fit'" || fail "no display (view-only)"
m=$(mark)
tmux -L "$sock" send-keys -l 'abc'; tmux -L "$sock" send-keys -l $'\e[<0;41;12M'
tmux -L "$sock" send-keys C-]
until_ok 10 bash -c "tmux -L $sock capture-pane -p | grep -q 'KVCON-EXIT=0'" || fail "Ctrl+] did not leave (view-only)"
until_ok 10 bash -c "tail -n1 '$tmp/events.log' | grep -q closed" || fail "the view-only session did not end"
[ "$(events_since "$m")" = "closed " ] || fail "--view-only sent: $(events_since "$m")"
echo "  --view-only: nothing sent"

# --readonly (and readonly = true in the config): the status line says READ-ONLY and everything the first session
# sent is now sent nowhere
readonly_run() {
	local what=$1; shift
	tmux -L "$sock" kill-server
	sock="${sock}r"
	tmux -L "$sock" -f /dev/null new-session -d -x 80 -y 24 \
		"'$KVCON' $* --log-file '$tmp/kvcon.log' vnc tcp:127.0.0.1:$port; echo KVCON-EXIT=\$?; sleep 60"
	until_ok 10 bash -c "tmux -L $sock capture-pane -p | grep -q 'fake  640x480  fit  READ-ONLY: view only'" ||
		fail "$what: no display saying READ-ONLY"
	m=$(mark)
	tmux -L "$sock" send-keys -l 'aA>'; tmux -L "$sock" send-keys C-c Enter Up F1
	tmux -L "$sock" send-keys F8; tmux -L "$sock" send-keys d # the menu's Ctrl+Alt+Del
	paste 'pasted under readonly'
	tmux -L "$sock" send-keys -l $'\e[<0;41;12M'; tmux -L "$sock" send-keys -l $'\e[<0;41;12m'
	tmux -L "$sock" send-keys -l $'\e[<2;41;12M'; tmux -L "$sock" send-keys -l $'\e[<2;41;12m'
	tmux -L "$sock" send-keys -l $'\e[<65;41;12M'
	tmux -L "$sock" send-keys -l $'\e[<0;10;1M'; tmux -L "$sock" send-keys -l $'\e[<32;70;23M'
	tmux -L "$sock" send-keys -l $'\e[<0;70;23m'
	# F8 opens the menu once kvcon has read everything above (one input stream, read in order): from then on
	# anything it queued for the server is on its way
	tmux -L "$sock" send-keys F8
	until_ok 10 bash -c "tmux -L $sock capture-pane -p | grep -q '^send: '" ||
		fail "$what: the F8 menu did not open"
	# nothing comes back to wait for when nothing is sent: a queued event reaches the server within a millisecond
	# or two (the first session's arrive that fast), so 0.3 s of silence shows there was none; quitting at once
	# could drop a queued event unsent (the VNC thread stops before it drains its queue) and hide a leak
	sleep 0.3
	tmux -L "$sock" send-keys F8; tmux -L "$sock" send-keys C-]
	until_ok 10 bash -c "tmux -L $sock capture-pane -p | grep -q 'KVCON-EXIT=0'" ||
		fail "$what: Ctrl+] did not leave with 0"
	until_ok 10 bash -c "tail -n1 '$tmp/events.log' | grep -q closed" || fail "$what: the session did not end"
	[ "$(events_since "$m")" = "closed " ] || fail "$what sent: $(events_since "$m")"
	echo "  $what: READ-ONLY in the status line, no key, pointer or cut text sent"
}
readonly_run --readonly --readonly
mkdir -p "$tmp/cfg/kvcon"; printf 'readonly = true\n' >"$tmp/cfg/kvcon/config"
readonly_run "readonly = true"
echo PASS
