#!/bin/bash
# kvcon console in tmux (120x40) against fakekube, whose console WebSocket is bridged to a real QEMU guest under
# TCG (tests/lab): `uname -r` typed into kvcon's pane shows the guest kernel's version; busybox vi renders in the
# pane and its file is written; an escape-sequence attack from the guest (title, OSC 52 clipboard, alternate
# screen, mouse and paste modes) changes nothing in the outer tmux; a restart of the VM (new VMI UID) prints the
# marker with both UIDs and the console reconnects; Ctrl+] gives back the terminal with its modes and stty intact;
# --log recorded the guest's bytes.
set -u
cd "$(dirname "$0")/../.."
ROOT=$PWD
KVCON=${KVCON_BIN:-$ROOT/kvcon}
command -v qemu-system-x86_64 >/dev/null || { echo "skip: qemu-system-x86_64 not installed"; exit 77; }
command -v tmux >/dev/null || { echo "skip: tmux not installed"; exit 77; }
py=${FAKEKUBE_PYTHON:-python3}
tmp=$(mktemp -d /tmp/kvcon.XXXXXX)
# kvcon's state in the test's own directory: the engine a command may look at (and its service, started on
# demand) is the test's, never this machine's
export XDG_STATE_HOME="$tmp/state" XDG_CONFIG_HOME="$tmp/cfg"
unset XDG_RUNTIME_DIR
sock="kvcon$$"
pids=()
cleanup() {
	tmux -L "$sock" kill-server 2>/dev/null
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	tests/lab/qemu-guest.sh stop "$tmp/g" >/dev/null 2>&1
	wait 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
	echo "FAIL: $*"
	echo "--- screen"; tmux -L "$sock" capture-pane -p -t k 2>/dev/null
	for f in "$tmp"/*.log "$tmp"/g/qemu.log; do [ -f "$f" ] && { echo "--- $f"; tail -15 "$f"; }; done
	exit 1
}
until_ok() { local t=$1; shift; local end=$((SECONDS + t)); while ! "$@"; do [ $SECONDS -ge $end ] && return 1; sleep 0.1; done; }
screen() { tmux -L "$sock" capture-pane -p -t k; }
on_screen() { screen | grep -qE -- "$1"; }
fmt='#{pane_title}|#{alternate_on}|#{mouse_any_flag}|#{mouse_sgr_flag}|#{mouse_standard_flag}|#{mouse_button_flag}|#{mouse_all_flag}|#{cursor_flag}|#{keypad_cursor_flag}|#{keypad_flag}|#{insert_flag}|#{wrap_flag}'
modes() { tmux -L "$sock" display -p -t k "$fmt"; }

eval "$(scripts/demo-guest.sh)" || { echo "skip: cannot build the lab guest (no kernel package?)"; exit 77; }
kver=$(strings "$KVCON_GUEST_KERNEL" | grep -m1 -oE '^[0-9]+\.[0-9]+\.[0-9]+-[0-9]+-[a-z0-9-]+') || fail "no version in the kernel image"
mkdir -p "$tmp/g" "$tmp/fk"
eval "$(tests/lab/qemu-guest.sh start "$tmp/g")" || fail "QEMU did not start"
tests/lab/serial-probe "$QEMU_GUEST_SERIAL" --timeout 60 --ready --quiet || fail "the guest's shell did not answer"

$py tests/fakekube/fakekube.py --dir "$tmp/fk" --vms 2 --namespaces 1 --step 0.1 >"$tmp/fakekube.log" 2>&1 & pids+=($!)
$py tests/fakekube/fkctl.py "$tmp/fk" wait 60 >/dev/null || fail "fakekube did not start"
vmi=$($py tests/fakekube/fkctl.py "$tmp/fk" names virtualmachineinstances | head -1)
ns=${vmi%/*}; name=${vmi#*/}
$py tests/fakekube/fkctl.py "$tmp/fk" post /fake/backend \
	"{\"namespace\":\"$ns\",\"name\":\"$name\",\"kind\":\"console\",\"unix\":\"$QEMU_GUEST_SERIAL\"}" >/dev/null \
	|| fail "backend not set"
uid1=$($py tests/fakekube/fkctl.py "$tmp/fk" get "/apis/kubevirt.io/v1/namespaces/$ns/virtualmachineinstances/$name" |
	$py -c 'import json,sys; print(json.load(sys.stdin)["metadata"]["uid"])')

# an outer shell in tmux, with OSC 52 honoured (a leak would land in tmux's paste buffers)
tmux -L "$sock" -f /dev/null new-session -d -s k -x 120 -y 40 "env -i PATH=$PATH TERM=screen-256color HOME=$tmp bash --norc --noprofile"
tmux -L "$sock" set -g set-clipboard on
tmux -L "$sock" set -g allow-rename on 2>/dev/null
tmux -L "$sock" send-keys -t k "PS1='outer\$ '; stty -g > $tmp/stty.before; clear" Enter
until_ok 10 test -s "$tmp/stty.before" || fail "outer shell"
before=$(modes)
tmux -L "$sock" send-keys -t k "KUBECONFIG=$tmp/fk/kubeconfig $KVCON console $ns/$name --log $tmp/guest.log --timeout 1 2>$tmp/kvcon.err; echo EXIT=\$?" Enter
until_ok 20 on_screen "connected to VMI $uid1" || fail "kvcon did not connect"
running=$(modes) # kvcon's own modes (its alternate screen, keypad); the guest must not change them

# 1. uname -r (the shell may hold a half-typed line from the probe: ^C first, then retry until it answers)
for _ in 1 2 3 4 5; do
	tmux -L "$sock" send-keys -t k C-c; tmux -L "$sock" send-keys -t k "uname -r" Enter
	until_ok 4 on_screen "^$kver\$" && break
done
on_screen "^$kver\$" || fail "kernel version $kver not shown"
echo "uname -r in the pane: $kver"

# 2. busybox vi full-screen inside the pane (the pane is 39 rows: tell the serial tty)
tmux -L "$sock" send-keys -t k "stty rows 39 cols 120; vi /tmp/kvcon-vi.txt" Enter
until_ok 10 bash -c "[ \$(tmux -L $sock capture-pane -p -t k | grep -c '^~') -ge 30 ]" || fail "vi did not draw its empty buffer"
tmux -L "$sock" send-keys -t k "ihello from vi in kvcon" Escape
until_ok 10 on_screen '^hello from vi in kvcon' || fail "vi text not shown"
until_ok 10 on_screen 'kvcon-vi.txt.*Modified' || fail "vi status line not shown"
tmux -L "$sock" send-keys -t k ":wq" Enter
until_ok 10 on_screen '^guest:~# $' || true
tmux -L "$sock" send-keys -t k "clear; cat /tmp/kvcon-vi.txt | tr a-z A-Z" Enter
until_ok 10 on_screen '^HELLO FROM VI IN KVCON' || fail "vi did not write its file"
echo "vi rendered and saved"

# 3. an escape-sequence attack from the guest
tmux -L "$sock" send-keys -t k "printf '\\033]0;PWNED\\007\\033]2;PWNED2\\007\\033]52;c;cHduZWQ=\\007\\033[?1049h\\033[?1000h\\033[?1006h\\033[?2004h\\033[?1h\\033='; echo ATTACK-\$((40+2))" Enter
until_ok 10 on_screen 'ATTACK-42' || fail "attack marker not shown"
sleep 0.3 # one more frame: anything leaked would be visible in tmux's state by now
after=$(modes)
[ "$running" = "$after" ] || fail "outer terminal modes changed: '$running' -> '$after'"
tmux -L "$sock" display -p -t k '#{pane_title}' | grep -q PWNED && fail "the guest set the outer title"
[ -z "$(tmux -L "$sock" list-buffers 2>/dev/null)" ] || fail "OSC 52 reached the outer clipboard: $(tmux -L "$sock" list-buffers)"
echo "attack absorbed: $after"
tmux -L "$sock" send-keys -t k "printf '\\033[?1049l\\033[?1000l\\033[?1006l\\033[?2004l'; clear" Enter

# 4. the VM restarts: new VMI UID -> marker with both UIDs, and the console comes back
$py tests/fakekube/fkctl.py "$tmp/fk" action "$ns" "$name" restart >/dev/null || fail "restart"
until_ok 30 on_screen "VMI replaced: $uid1 -> [0-9a-f-]{36}" || fail "no replacement marker"
uid2=$(screen | grep -oE "VMI replaced: $uid1 -> [0-9a-f-]{36}" | head -1 | awk '{print $5}')
[ "$uid2" != "$uid1" ] || fail "same UID after restart"
until_ok 30 on_screen "connected to VMI $uid2" || fail "did not reconnect to the new VMI"
tmux -L "$sock" send-keys -t k C-c; tmux -L "$sock" send-keys -t k "echo again-\$((1+1))" Enter
until_ok 10 on_screen '^again-2$' || fail "no shell after the reconnect"
echo "VMI replaced $uid1 -> $uid2, reconnected"

# 5. Ctrl+] leaves; the outer terminal is as before
tmux -L "$sock" send-keys -t k C-]
until_ok 10 on_screen '^EXIT=0' || fail "kvcon did not exit on Ctrl+]"
tmux -L "$sock" send-keys -t k "stty -g > $tmp/stty.after" Enter
until_ok 10 test -s "$tmp/stty.after" || fail "outer shell gone"
cmp -s "$tmp/stty.before" "$tmp/stty.after" || fail "stty changed: $(cat "$tmp/stty.before") -> $(cat "$tmp/stty.after")"
final=$(modes)
[ "$before" = "$final" ] || fail "outer modes after exit: '$before' -> '$final'"
grep -q "$kver" "$tmp/guest.log" || fail "--log lacks the guest's output"
grep -q 'ATTACK-42' "$tmp/guest.log" || fail "--log lacks the attack marker"
echo "ok"
