#!/bin/bash
# e2e-lane: cluster
# Mouse (click selects, double-click opens, wheel scrolls) and themes (--theme, KVCON_THEME, NO_COLOR, an
# 8-colour terminal, a missing theme) in the real binary, read back from tmux with attributes (capture-pane -e).
. "$(dirname "$0")/ui_lib.inc"

fk_start --vms 20 --step 0.2
row_name() { screen | sed -n "$1p" | awk '{print $2}'; }
# X10 mouse report: ESC [ M, button+32, column+33, row+33 (0-based); tmux hands it to the pane as typed bytes
mouse() { keys -H 1b 5b 4d "$(printf '%x' $(($1 + 32)))" "$(printf '%x' $(($2 + 33)))" "$(printf '%x' $(($3 + 33)))"; }
# a click: press and release in one write, as a terminal sends them
click() { keys -H 1b 5b 4d 20 "$(printf '%x' $(($1 + 33)))" "$(printf '%x' $(($2 + 33)))" 1b 5b 4d 23 "$(printf '%x' $(($1 + 33)))" "$(printf '%x' $(($2 + 33)))"; }

kv_start -A
wait_for 'VirtualMachines\(all\)\[20\]' 10
# click on screen line 10 (0-based row 9): that row is selected; enter opens it
want=$(row_name 10)
click 5 9
sleep 0.3
keys Enter; wait_for " VM [a-z0-9-]+/$want "
keys Escape; wait_for 'VirtualMachines\(all\)'
# a double click opens the row
want=$(row_name 8)
click 5 7; click 5 7
wait_for " VM [a-z0-9-]+/$want "
keys Escape; wait_for 'VirtualMachines\(all\)'
click 5 9; sleep 0.5 # (a single click, later: no double)
# wheel down moves the selection by 3 rows (from the clicked row)
mouse 65 5 9
sleep 0.3
want=$(row_name 13)
keys Enter; wait_for " VM [a-z0-9-]+/$want "
keys Escape; wait_for 'VirtualMachines\(all\)'

# a row whose state changes flashes (the default theme's flash: black on yellow) without a key press
keys g
target=$(row_name 9)
tns=$(fk names virtualmachines | grep "/$target\$" | cut -d/ -f1)
fk action "$tns" "$target" stop >/dev/null || fail "stop $target"
deadline=$((SECONDS + 15)); flashed=""
while [ $SECONDS -lt $deadline ]; do
	if $T capture-pane -p -e -t k | grep -E $'\e\\[[0-9;]*43m' | grep -q " $target "; then flashed=1; break; fi
	sleep 0.05
done
[ -n "$flashed" ] || fail "the changed row $target did not flash"

colours() { $T capture-pane -p -e -t k | sed -n '6,30p' | grep -cE $'\e\\[[0-9;]*(3[0-7]|38;5;[0-9]+|4[0-7]|48;5;[0-9]+)m'; }

# the dark theme uses the 256-colour palette on a 256-colour terminal
kv_restart -A --theme dark
wait_for 'VirtualMachines\(all\)\[20\]' 10
$T capture-pane -p -e -t k | grep -q $'\e\\[[0-9;]*38;5;' || fail "--theme dark: no 256-colour codes"
# ... and folds onto 8 colours on an 8-colour terminal
kv_start_env "TERM=xterm" -A --theme dark
wait_for 'VirtualMachines\(all\)\[20\]' 10
$T capture-pane -p -e -t k | grep -q $'\e\\[[0-9;]*38;5;' && fail "8-colour terminal got 256-colour codes"
[ "$(colours)" -gt 0 ] || fail "8-colour terminal got no colour at all"

# NO_COLOR: attributes only, the selection still visible (reverse)
kv_start_env "NO_COLOR=1" -A
wait_for 'VirtualMachines\(all\)\[20\]' 10
[ "$(colours)" = 0 ] || fail "NO_COLOR: colour codes on screen"
$T capture-pane -p -e -t k | sed -n 7p | grep -q $'\e\\[[0-9;]*7m' || fail "NO_COLOR: selected row not in reverse"

# KVCON_THEME=mono, and the config file's theme
kv_start_env "KVCON_THEME=mono" -A
wait_for 'VirtualMachines\(all\)\[20\]' 10
[ "$(colours)" = 0 ] || fail "KVCON_THEME=mono: colour codes on screen"
mkdir -p "$W/cfg/kvcon"; echo "theme = nope" > "$W/cfg/kvcon/config"
kv_restart -A
wait_for "theme: theme 'nope' not found" 10
wait_for 'VirtualMachines\(all\)\[20\]' 10

# SIGTERM and a crash (SIGSEGV) both give the terminal back: no alternate screen, cursor on, no mouse mode
modes() { $T display -p -t k '#{alternate_on} #{cursor_flag} #{mouse_any_flag} #{mouse_standard_flag} #{mouse_button_flag}'; }
kvpid() { pgrep -P "$($T display -p -t k '#{pane_pid}')" -x kvcon | head -1; }
for sig in TERM SEGV; do
	kv_restart -A
	wait_for 'VirtualMachines\(all\)\[20\]' 10
	[ "$(modes)" = "1 0 1 1 0" ] || fail "while running, modes are $(modes)"
	kill -s $sig "$(kvpid)"
	deadline=$((SECONDS + 10)); while ! grep -q KVCON_EXIT "$W/exit" && [ $SECONDS -lt $deadline ]; do sleep 0.1; done
	grep -q KVCON_EXIT "$W/exit" || fail "kvcon did not exit on SIG$sig"
	[ "$(modes)" = "0 1 0 0 0" ] || fail "after SIG$sig the terminal modes are $(modes)"
done
grep -q 'KVCON_EXIT=139' "$W/exit" || fail "SIGSEGV exit status: $(cat "$W/exit")"
screen | grep -q 'kvcon: crashed; the terminal was restored' || fail "no crash notice"
echo "PASS ui_mouse_themes"
