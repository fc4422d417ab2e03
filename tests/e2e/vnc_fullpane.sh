#!/bin/bash
# e2e-lane: cluster
# Full-screen `kvcon vnc` is the dashboard's screen showing the VNC pane alone, zoomed (one terminal owner,
# ui/screen.c, as `kvcon console`): in tmux (80x24, TERM=tmux-256color, whose terminfo has 256 colours and X10
# mouse), from a shell, against the recording RFB server (tests/e2e/vnc_rfbserver.py, 640x480 gradient):
#  1. the log shows the dashboard's screen took the terminal; alternate screen, SGR mouse and button-event
#     tracking are on, the cursor is hidden; COLORTERM=truecolor gives true colour cells (48;2;: the server's gradient has the same colour in both halves of a cell) although
#     terminfo has none (the pane's own sequences after curses' update); a click is a pointer event; a bracketed
#     paste is typed on the guest's keyboard; Alt+x, Ctrl+Up and a lone Escape keep their modifiers; after a DesktopSize change the status row says the new size and no
#     text of curses' lands inside the picture;
#  2. the server goes away: kvcon exits 1 at once with `error: ...` on stderr, and the terminal is the
#     shell's again (main screen, mouse off, cursor on, stty -g as before);
#  3. --colors 256 draws xterm palette colours (48;5;, no 48;2;), --colors mono ASCII density characters without
#     colour or half blocks, --scale 1:1 says 1:1 in the status row, --view-only sends nothing; Ctrl+] and F8 q
#     leave with 0 and the same tty modes.
set -u
cd "$(dirname "$0")/../.."
KVCON=${KVCON_BIN:-$PWD/kvcon}
command -v tmux >/dev/null || { echo "FAIL: tmux not installed"; exit 1; }
tmp=$(mktemp -d /tmp/kvvfp.XXXXXX)
sock="kvvfp$$"
srv=""
cleanup() {
	tmux -L "$sock" kill-server 2>/dev/null
	[ -n "$srv" ] && kill "$srv" 2>/dev/null
	wait 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
T="tmux -L $sock"
screen() { $T capture-pane -p -t k; }
fail() {
	echo "FAIL: $*"
	echo "--- screen"; screen 2>/dev/null | tail -5
	echo "--- stderr"; cat "$tmp"/err.* 2>/dev/null
	echo "--- server"; tail -5 "$tmp/events.log" 2>/dev/null
	exit 1
}
until_ok() { local t=$1; shift; local end=$((SECONDS + t)); while ! "$@"; do [ $SECONDS -ge $end ] && return 1; sleep 0.1; done; }
on_screen() { screen | grep -qE -- "$1"; }
wait_screen() { until_ok "${2:-10}" on_screen "$1" || fail "not on screen: $1"; }
modes() { $T display -p -t k '#{alternate_on}|#{mouse_sgr_flag}|#{mouse_button_flag}|#{mouse_any_flag}|#{cursor_flag}'; }
mark() { echo $(($(wc -l <"$tmp/events.log") + 1)); }
events_since() { tail -n +"$1" "$tmp/events.log" | tr '\n' ' '; }
start_server() {
	rm -f "$tmp/port"
	python3 tests/e2e/vnc_rfbserver.py "$tmp/port" "$tmp/events.log" >"$tmp/server.out" 2>&1 &
	srv=$!
	until_ok 10 test -s "$tmp/port" || fail "the recording server did not start"
	port=$(cat "$tmp/port")
}
# run N ENV ARGS...: kvcon vnc from the shell; EXIT=N and the tty modes after it are written when it returns
run() {
	local n=$1 envs=$2; shift 2
	rm -f "$tmp/stty.after"
	$T send-keys -t k "$envs $KVCON --log-file $tmp/kvcon.$n.log vnc tcp:127.0.0.1:$port $* 2>$tmp/err.$n; echo EXIT-$n=\$?; stty -g > $tmp/stty.after" Enter
}
# back N STATUS: the shell has the terminal again, kvcon's status was STATUS, the modes are the ones from before
back() {
	wait_screen "^EXIT-$1=[0-9]+$" 10
	on_screen "^EXIT-$1=$2$" || fail "run $1: $(screen | grep "^EXIT-$1=") (want $2)"
	until_ok 5 test -s "$tmp/stty.after" || fail "run $1: no stty after"
	cmp -s "$tmp/stty.before" "$tmp/stty.after" || fail "run $1: tty modes differ: $(cat "$tmp/stty.before") vs $(cat "$tmp/stty.after")"
	[ "$(modes)" = "0|0|0|0|1" ] || fail "run $1: terminal modes after leaving: $(modes) (alternate|sgr|button|any|cursor)"
}

: >"$tmp/events.log"
start_server
$T -f /dev/null new-session -d -x 80 -y 24 -s k "env -i PATH=$PATH TERM=tmux-256color HOME=$tmp bash --norc --noprofile"
$T send-keys -t k "PS1='outer\$ '; stty -g > $tmp/stty.before; clear" Enter
wait_screen '^outer\$' 5

# 1. true colour through the dashboard's screen, mouse, paste
run 1 COLORTERM=truecolor
wait_screen 'fake  640x480  fit  F8 menu  Ctrl\+\] leave' 15
grep -q 'ui: terminal 80x24' "$tmp/kvcon.1.log" || fail "the dashboard's screen did not take the terminal"
[ "$(modes)" = "1|1|1|1|0" ] || fail "display modes while running: $(modes) (alternate|sgr|button|any|cursor)"
until_ok 10 bash -c "$T capture-pane -p -e -t k | grep -q '[34]8;2;'" || fail "no true colour cells with COLORTERM=truecolor"
echo "  COLORTERM=truecolor under a 256-colour terminfo: true colour cells, SGR mouse and drags on"
m=$(mark); $T send-keys -t k -l $'\e[<0;41;12M'; $T send-keys -t k -l $'\e[<0;41;12m'
until_ok 10 bash -c "[ \"\$(tail -n +$m '$tmp/events.log' | tr '\n' ' ')\" = 'ptr 1 330 234 ptr 0 330 234 ' ]" ||
	fail "click: $(events_since "$m")"
m=$(mark); printf 'hi' | $T load-buffer -b kvp -; $T paste-buffer -p -b kvp -t k
until_ok 10 bash -c "[ \"\$(tail -n +$m '$tmp/events.log' | tr '\n' ' ')\" = 'key 1 0x68 key 0 0x68 key 1 0x69 key 0 0x69 ' ]" ||
	fail "paste: $(events_since "$m")"
echo "  a click is a pointer event at the pixel under the cell; a paste is typed"
# keys ncurses decodes: Alt+x (ESC x at once), Ctrl+Up (kUP5), a lone Escape
expect_keys() {
	local what=$1 m=$2 want=$3
	until_ok 10 bash -c "[ \"\$(tail -n +$m '$tmp/events.log' | tr '\n' ' ')\" = '$want' ]" ||
		fail "$what: got '$(events_since "$m")', want '$want'"
}
m=$(mark); $T send-keys -t k M-x
expect_keys "Alt+x" "$m" "key 1 0xffe9 key 1 0x78 key 0 0x78 key 0 0xffe9 "
m=$(mark); $T send-keys -t k C-Up
expect_keys "Ctrl+Up" "$m" "key 1 0xffe3 key 1 0xff52 key 0 0xff52 key 0 0xffe3 "
m=$(mark); $T send-keys -t k Escape
expect_keys "Escape" "$m" "key 1 0xff1b key 0 0xff1b "
echo "  Alt+x, Ctrl+Up and Escape reach the guest with their modifiers"
# the server resizes its desktop (F12): curses' status row follows, and none of its text lands in the picture
# (the raw cells are written after curses' update; curses must still know where the cursor is)
$T send-keys -t k F12
wait_screen 'fake  800x600  fit  F8 menu  Ctrl\+\] leave' 10
screen | head -23 | grep -q '[A-Za-z0-9]' && fail "text inside the picture: $(screen | head -23 | grep '[A-Za-z0-9]' | head -2)"
echo "  DesktopSize: the status row follows, the picture stays clean"
# frames that change only the status row (the menu opened and closed) leave the picture alone: curses writes
# nothing over it (no reverse-video blanks from the status row's attributes)
$T send-keys -t k F8; wait_screen '^send: d Ctrl' 5; $T send-keys -t k Escape
wait_screen 'fake  800x600  fit  F8 menu' 5
pic=$($T capture-pane -p -e -t k | head -23)
echo "$pic" | grep -q '[34]8;2;' || fail "the picture is gone after status-only frames"
echo "$pic" | grep -qE '\[(0;)?7m' && fail "reverse video inside the picture after status-only frames"
echo "  status-only frames leave the picture alone"
# 2. the server goes away: exit 1 with the reason, the terminal given back
kill "$srv"; wait "$srv" 2>/dev/null; srv=""
back 1 1
grep -q '^error: ' "$tmp/err.1" || fail "no reason on stderr: $(cat "$tmp/err.1")"
grep -qE 'ui: [1-9][0-9]* frames drawn' "$tmp/kvcon.1.log" || fail "the screen's pacer drew no frames"
grep -qE 'vnc: [1-9][0-9]* frames drawn' "$tmp/kvcon.1.log" || fail "no frames logged by kvcon vnc"
echo "  the server went away: exit 1, '$(head -1 "$tmp/err.1")', tty modes and screen restored"

# 3. the options still act; Ctrl+] and F8 q leave with 0
start_server
run 2 COLORTERM=truecolor --colors 256
wait_screen 'fake  640x480  fit' 15
until_ok 10 bash -c "$T capture-pane -p -e -t k | grep -q '[34]8;5;'" || fail "--colors 256: no palette colours"
$T capture-pane -p -e -t k | grep -q '[34]8;2;' && fail "--colors 256: true colour drawn"
$T send-keys -t k C-]
back 2 0
[ -s "$tmp/err.2" ] && fail "stderr not empty after Ctrl+]: $(cat "$tmp/err.2")"
echo "  --colors 256: palette colours; Ctrl+] leaves with 0"
run 3 COLORTERM=truecolor --colors mono --scale 1:1
wait_screen 'fake  640x480  1:1' 15
screen | head -23 | grep -q '▀' && fail "--colors mono: half blocks drawn"
$T capture-pane -p -e -t k | head -23 | grep -qE '\[(3|4)8;' && fail "--colors mono: colours drawn"
screen | head -23 | grep -qE '[^ ]' || fail "--colors mono: no density characters"
$T send-keys -t k F8; wait_screen '^send: d Ctrl\+Alt\+Del' 5; $T send-keys -t k q
back 3 0
echo "  --colors mono: ASCII without colour; --scale 1:1 shown; F8 q leaves with 0"
run 4 "" --view-only
wait_screen 'fake  640x480  fit' 15
m=$(mark)
$T send-keys -t k -l 'abc'; $T send-keys -t k -l $'\e[<0;41;12M'; $T send-keys -t k -l $'\e[<0;41;12m'
$T send-keys -t k C-]
back 4 0
until_ok 10 bash -c "tail -n1 '$tmp/events.log' | grep -q closed" || fail "the view-only session did not end"
[ "$(events_since "$m")" = "closed " ] || fail "--view-only sent: $(events_since "$m")"
echo "  --view-only: nothing sent"
echo "PASS vnc_fullpane: kvcon vnc is the dashboard's VNC pane alone; the terminal is given back on every exit"
