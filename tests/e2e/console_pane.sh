#!/bin/bash
# e2e-lane: cluster
# The console pane of the dashboard, in tmux at 120x40 against fakekube (its console WebSocket echoes every byte
# when no backend is set): `c` on a VM opens the console under the list; typed text comes back through the
# WebSocket and libvterm onto the pane; an escape-sequence attack echoed by the "guest" changes nothing in tmux;
# Ctrl+] gives focus back to the list; a second console opens as a second tab; z zooms; a restart of the VM (new
# VMI UID) prints the marker with both UIDs and reconnects; x closes the panes; the terminal is restored on exit.
. "$(dirname "$0")/ui_lib.inc"
fmt='#{pane_title}|#{mouse_any_flag}|#{mouse_sgr_flag}|#{mouse_standard_flag}|#{mouse_button_flag}|#{mouse_all_flag}|#{keypad_cursor_flag}|#{insert_flag}|#{wrap_flag}'
modes() { $T display -p -t k "$fmt"; }

fk_start --vms 4 --namespaces 1 --step 0.1
kv_start -n ns-00
$T set -g set-clipboard on
wait_for 'Watch: vm live +vmi live' 15
vms=$(fk names virtualmachines)
vm1=$(echo "$vms" | sed -n 1p); vm1=${vm1#*/}
vm2=$(echo "$vms" | sed -n 2p); vm2=${vm2#*/}
uid1=$(fk get "/apis/kubevirt.io/v1/namespaces/ns-00/virtualmachineinstances/$vm1" |
	$PY -c 'import json,sys; print(json.load(sys.stdin)["metadata"]["uid"])')

# 1. c on the first VM: a pane under the list, connected, typing echoes
keys "/"; keys -l "$vm1"; keys Enter
wait_for "^ $vm1 "
keys c
wait_for "1:console ns-00/$vm1 " 10
wait_for "ns-00/$vm1 \| connected to VMI $uid1" 15
screen | grep -q " $vm1 .*Running" || fail "the list is not above the pane"
before=$(modes)
keys -l "echo-through-kvcon"
wait_for 'echo-through-kvcon' 10

# 2. the attack, echoed back by the fake guest
keys -l "$(printf 'x\033]0;PWNED\007\033]52;c;cHduZWQ=\007\033[?1049h\033[?1000h\033[?1006hATTACK-DONE')"
wait_for 'ATTACK-DONE' 10
sleep 0.3
after=$(modes)
[ "$before" = "$after" ] || fail "outer modes changed: '$before' -> '$after'"
$T display -p -t k '#{pane_title}' | grep -q PWNED && fail "title reached tmux"
[ -z "$($T list-buffers 2>/dev/null)" ] || fail "OSC 52 reached tmux's clipboard"
keys -l "$(printf '\033[?1049l\033[?1000l\033[?1006l')"

# 3. Ctrl+] leaves the pane: keys go to the list again (the filter prompt opens)
keys C-]
wait_for 'tab: focus  z: zoom' 5
keys "/"; keys -l "$vm2"; keys Enter
wait_for "^ $vm2 "
screen | grep -q "echo-through-kvcon" || fail "the first console's screen is gone"

# 4. a second console is a second tab; z zooms the pane over the whole body and back
keys c
wait_for "2:console ns-00/$vm2 " 10
wait_for "ns-00/$vm2 \| connected" 15
keys C-]
keys z
sleep 0.3
screen | grep -q " $vm2 .*Running" && fail "z did not zoom the pane"
keys z
wait_for " $vm2 .*Running" 5

# 5. the first VM restarts: its pane says so with both UIDs and reconnects to the new VMI
keys ']'
wait_for "ns-00/$vm1 \|" 5
fk action ns-00 "$vm1" restart >/dev/null || fail "restart"
wait_for "VMI replaced: $uid1 -> [0-9a-f-]{36}" 30
wait_for "ns-00/$vm1 \| connected to VMI [0-9a-f-]{36}" 30
screen | grep -q "connected to VMI $uid1" && fail "still on the old VMI"

# 6. x closes both panes; quit restores the terminal
keys x
wait_gone "1:console ns-00/$vm1 " 5
keys x
wait_gone "console ns-00/" 5
keys C-c
for _ in $(seq 50); do [ -s "$W/exit" ] && break; sleep 0.1; done
grep -q 'KVCON_EXIT=0' "$W/exit" || fail "kvcon exit: $(cat "$W/exit" 2>/dev/null)"
[ "$($T display -p -t k '#{alternate_on}')" = 0 ] || fail "alternate screen left on"
echo ok
