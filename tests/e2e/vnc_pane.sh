#!/bin/bash
# The dashboard's VNC pane: kvcon (tmux 120x40) against fakekube whose vnc subresource is bridged to a real QEMU
# guest (tests/lab); `v` on the VM opens its display in a pane (half-block cells, status line with the size), a
# command typed there reaches the guest's tty1 shell (it writes a marker to ttyS0), Ctrl+] gives the keyboard
# back to the dashboard (`:` works again), and the dashboard quits cleanly; with TERM=xterm-direct the pane is
# drawn in true colour.
. "$(dirname "$0")/ui_lib.inc" || { echo "FAIL: tests/e2e/ui_lib.inc missing"; exit 1; }
command -v qemu-system-x86_64 >/dev/null || { echo "skip: qemu-system-x86_64 not installed"; exit 77; }
G="$W/g"
qemu_stop() { "$ROOT/tests/lab/qemu-guest.sh" stop "$G" >/dev/null 2>&1; ui_cleanup; }
trap qemu_stop EXIT
eval "$("$ROOT/scripts/demo-guest.sh")" || { echo "skip: cannot build the lab guest (no kernel package?)"; exit 77; }
mkdir -p "$G"
eval "$("$ROOT/tests/lab/qemu-guest.sh" start "$G")" || fail "QEMU did not start"
"$ROOT/tests/lab/serial-probe" "$QEMU_GUEST_SERIAL" --timeout 60 --ready --quiet || fail "the guest's shell did not answer"

fk_start --vms 3 --namespaces 1 --step 0.1
vmi=$(fk names virtualmachineinstances | sed -n 1p)
ns=${vmi%/*}; name=${vmi#*/}
fk post /fake/backend "{\"namespace\":\"$ns\",\"name\":\"$name\",\"kind\":\"vnc\",\"unix\":\"$QEMU_GUEST_VNC\"}" \
	>/dev/null || fail "backend not set"

kv_start -A
wait_for "$name" 20
keys "/"; keys -l "$name"; keys Enter; wait_for "</$name> "
keys v
wait_for "VNC $ns/$name +720x400 +fit +F8 menu +Ctrl\+\] leave" 20
screen | grep -q '▀' || fail "no half-block cells in the pane"
screen >"$W/pane.txt"
echo "  pane: the display of $vmi is shown"

keys -l 'echo "PANE-TYPED-$((6*7))" > /dev/ttyS0'; keys Enter
deadline=$((SECONDS + 20))
until grep -aq 'PANE-TYPED-42' "$QEMU_GUEST_SERIAL_LOG"; do
	[ $SECONDS -ge $deadline ] && { fail "the command typed in the pane did not reach the guest"; exit 1; }
	sleep 0.1
done
echo "  pane: the typed command ran in the guest"

# Ctrl+] gives the keyboard back: ':' opens the dashboard's command line again
keys C-]
keys ":"; wait_for '^:' 5; keys Escape
keys ":"; keys -l "q"; keys Enter
deadline=$((SECONDS + 10))
until [ -s "$W/exit" ]; do [ $SECONDS -ge $deadline ] && { fail "kvcon did not quit"; exit 1; }; sleep 0.1; done
grep -q 'KVCON_EXIT=0' "$W/exit" || fail "kvcon exit: $(cat "$W/exit")"
echo "  Ctrl+] gave the keyboard back; :q quit with 0"

# a direct-colour terminal (terminfo xterm-direct, from ncurses-term): the pane draws true colour through curses
if infocmp xterm-direct >/dev/null 2>&1; then
	$T kill-session -t k 2>/dev/null
	rm -f "$W/exit"
	$T new-session -d -x 120 -y 40 -s k -e "TERM=xterm-direct" \
		"env TERM=xterm-direct KUBECONFIG=$W/fk/kubeconfig KVCON_LOG=$W/kvcon.log XDG_CONFIG_HOME=$W/cfg XDG_STATE_HOME=$W/state $KVCON -A ; echo KVCON_EXIT=\$? > $W/exit; sleep 600"
	wait_for "$name" 20
	keys "/"; keys -l "$name"; keys Enter; wait_for "</$name> "
	keys v
	wait_for "VNC $ns/$name +720x400" 20
	deadline=$((SECONDS + 10))
	until $T capture-pane -p -e -t k | grep -q '38;2;'; do
		[ $SECONDS -ge $deadline ] && { fail "no true colour in the pane with TERM=xterm-direct"; exit 1; }
		sleep 0.1
	done
	echo "  TERM=xterm-direct: the pane is drawn in true colour"
	keys C-]; keys ":"; keys -l "q"; keys Enter
fi
[ -n "${VNC_PANE_KEEP:-}" ] && cp "$W/pane.txt" "$VNC_PANE_KEEP"
echo PASS
