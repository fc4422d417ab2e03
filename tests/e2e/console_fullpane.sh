#!/bin/bash
# e2e-lane: cluster
# Full-screen `kvcon console NS/NAME` is the dashboard's screen showing the console pane alone, zoomed (one terminal
# owner, ui/screen.c): in tmux, from a shell, against fakekube's echoing console:
#  1. the guest's bytes are drawn by the dashboard's console pane over the whole terminal (no tab line: the pane
#     has every row; its status row at the bottom says Ctrl+] exits); the log shows the dashboard's screen took
#     the terminal (ui: terminal ...) and the pane's frames;
#  2. Ctrl+] exits with status 0 and the terminal is the shell's again: the alternate screen is left, a marker
#     echoed after the command appears under the prompt, and the tty modes are the ones from before (stty -g);
#  3. SIGTSTP (`kill -TSTP`; Ctrl+Z is the guest's key) suspends it as a shell's job: the terminal is the shell's
#     while it is stopped (the alternate screen left), and `fg` brings the console back, repainted and echoing
#     (kvcon's own handler, not ncurses': ui/screen.c on_tstp).
. "$(dirname "$0")/ui_lib.inc"
fk_start --vms 2 --namespaces 1 --step 0.1
vm1=$(fk names virtualmachines | sed -n 1p); vm1=${vm1#*/}
[ -n "$vm1" ] || fail "no VM in fakekube"
$T new-session -d -x 120 -y 40 -s k -e "TERM=xterm-256color" "env -i PATH=$PATH TERM=xterm-256color HOME=$W bash --norc --noprofile"
keys "PS1='outer\$ '; stty -g > $W/stty.before; clear" Enter
wait_for '^outer\$' 5
keys "KUBECONFIG=$W/fk/kubeconfig KVCON_LOG=$W/kvcon.log $KVCON console ns-00/$vm1 2>$W/kvcon.err; echo EXIT=\$?; stty -g > $W/stty.after; echo MARKER-AFTER-\$((6*7))" Enter
wait_for "ns-00/$vm1 \| connected" 15
# 1. the whole terminal is the pane: its status row is the last row, and there is no tab line at the top
last=$(screen | sed -n 40p)
echo "$last" | grep -qE "^ ns-00/$vm1 \| connected[^|]* \| Ctrl\+\] exits  F12 copy mode" || fail "last row is not the pane's status: '$last'"
screen | grep -q ' 1:console ' && fail "a tab line is drawn over the lone pane"
[ "$($T display -p -t k '#{alternate_on}')" = 1 ] || fail "the console is not on the alternate screen"
keys "typed-into-the-guest"
wait_for 'typed-into-the-guest' 10
[ "$(screen | grep -c 'typed-into-the-guest')" -ge 1 ] || fail "echo missing"
grep -q 'ui: terminal [0-9]*x[0-9]*' "$W/kvcon.log" || fail "the dashboard's screen did not take the terminal"
# 2. Ctrl+] exits: status 0, the shell's screen back, the marker after the command, the modes as before
keys C-]
wait_for '^MARKER-AFTER-42$' 10
screen | grep -q '^EXIT=0$' || fail "exit status: $(screen | grep EXIT=)"
[ "$($T display -p -t k '#{alternate_on}')" = 0 ] || fail "the alternate screen was not left"
screen | grep -q 'typed-into-the-guest' && fail "the guest's screen is still shown after exit"
wait_for '^outer\$' 5
for _ in $(seq 50); do [ -s "$W/stty.after" ] && break; sleep 0.1; done
cmp -s "$W/stty.before" "$W/stty.after" || fail "tty modes differ: $(cat "$W/stty.before") vs $(cat "$W/stty.after")"
grep -qE 'console: [1-9][0-9]* frames drawn' "$W/kvcon.log" || fail "no frames logged"
grep -qE 'ui: [1-9][0-9]* frames drawn' "$W/kvcon.log" || fail "the screen's pacer drew no frames"
[ -s "$W/kvcon.err" ] && fail "stderr not empty: $(cat "$W/kvcon.err")"
# 3. suspended by SIGTSTP, resumed by fg
keys "clear; KUBECONFIG=$W/fk/kubeconfig KVCON_LOG=$W/kvcon2.log $KVCON console ns-00/$vm1 2>$W/kvcon2.err" Enter
wait_for "ns-00/$vm1 \| connected" 15
shpid=$($T display -p -t k '#{pane_pid}')
kvpid=$(pgrep -P "$shpid" -x kvcon)
[ -n "$kvpid" ] || fail "no kvcon under the shell $shpid"
kill -TSTP "$kvpid"
wait_for 'Stopped' 10
[ "$(ps -o stat= -p "$kvpid" | cut -c1)" = T ] || fail "kvcon is not stopped: $(ps -o stat= -p "$kvpid")"
[ "$($T display -p -t k '#{alternate_on}')" = 0 ] || fail "the alternate screen was not left on SIGTSTP"
keys "clear; fg" Enter
wait_for "ns-00/$vm1 \| connected" 10
[ "$($T display -p -t k '#{alternate_on}')" = 1 ] || fail "the console did not take the alternate screen back"
keys "after-the-suspend"
wait_for 'after-the-suspend' 10
keys C-]
wait_for '^outer\$' 10
[ "$($T display -p -t k '#{alternate_on}')" = 0 ] || fail "the alternate screen was not left after the resumed console"
[ -s "$W/kvcon2.err" ] && fail "stderr not empty after the suspend: $(cat "$W/kvcon2.err")"
echo "PASS console_fullpane: kvcon console is the dashboard's pane alone; Ctrl+] gives the shell its screen back; SIGTSTP suspends it as a job, fg resumes it"
