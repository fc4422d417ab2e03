#!/bin/bash
# e2e-lane: cluster
# The log pane of the dashboard, in tmux at 120x40 against fakekube's pods/log: `l` on a VM opens its launcher's
# compute log under the list, lines appended to the log show up without a key press (follow), an escape
# sequence in the log is shown escaped and changes nothing in tmux, w wraps, / searches, shift-C switches to
# the next container, p shows the previous instance after a restart, q closes the pane; `l` on a VM that is not
# running and on an event row says why instead of doing nothing; `l` on a pod row reads that pod. `e` describes
# the VM in the pager (kubectl describe's layout) and says why on an event row.
. "$(dirname "$0")/ui_lib.inc"

fk_start --vms 4 --namespaces 1 --step 0.05
$PY "$ROOT/tests/fakekube/fkctl.py" "$W/fk" settle 30 >/dev/null || fail "fakekube did not settle"
kv_start -n ns-00
wait_for 'Watch: vm live +vmi live +pod live' 15
vm=web-00000
pod=$(fk names pods | sed -n "s|^ns-00/\(virt-launcher-$vm-.*\)|\1|p")
[ -n "$pod" ] || fail "no launcher of $vm"
applog() { fk post /fake/log "{\"namespace\":\"ns-00\",\"pod\":\"$pod\",\"container\":\"compute\",\"lines\":[$1]}" >/dev/null; }

# 1. l on the VM: the compute log of its launcher, following
keys "/"; keys -l "$vm"; keys Enter
wait_for "^ $vm "
keys l
wait_for "1:logs ns-00/$vm" 10
wait_for "ns-00/$pod \[compute\] \| streaming \| [0-9]+ lines, following" 10
wait_for '"msg":"Marked as ready"' 10
screen | grep -q " $vm .*Running" || fail "the list is not above the pane"

# 2. appended lines arrive without a key press
applog '"kvcon-follow-line-1"'
wait_for 'kvcon-follow-line-1' 10
applog '"kvcon-follow-line-2"'
wait_for 'kvcon-follow-line-2' 10

# 3. escape sequences are shown, not obeyed
title0=$($T display -p -t k '#{pane_title}')
applog '"evil \u001b]0;pwned\u0007 \u001b[2J after"'
wait_for 'evil \\e\]0;pwned\\x07 \\e\[2J after' 10
[ "$($T display -p -t k '#{pane_title}')" = "$title0" ] || fail "a log line changed the terminal title"
screen | grep -q 'kvcon-follow-line-2' || fail "the screen was cleared by a log line"

# 4. wrap, search
applog "\"long-line-start $(printf 'x%.0s' $(seq 1 200)) long-line-end\""
wait_for 'long-line-start' 10
screen | grep -q 'long-line-end' && fail "a long line was not cut"
keys w
wait_for 'wrapped \|' 5
wait_for 'long-line-end' 5
keys w
wait_gone 'wrapped \|' 5
keys "/"; keys -l "no-such-text-anywhere"; keys Enter
wait_for 'not found: no-such-text-anywhere' 5

# 5. shift-C: the next container
keys C
wait_for "ns-00/$pod \[volumecontainerdisk\]" 5
wait_for "container-disk: serving /disk/downloaded for $vm" 10
keys C
wait_for "ns-00/$pod \[compute\]" 5

# 6. p: the previous instance, after a restart of the container
fk post /fake/restart-container "{\"namespace\":\"ns-00\",\"pod\":\"$pod\",\"container\":\"compute\"}" >/dev/null || fail "restart"
wait_for "ns-00/$pod \[compute\] \| ended" 10
keys p
wait_for "ns-00/$pod \[compute, previous\] \| ended" 10
wait_for 'kvcon-follow-line-2' 10
keys p
wait_for "ns-00/$pod \[compute\] \| streaming" 10
screen | grep -q 'kvcon-follow-line-2' && fail "the new instance shows the old lines"

# 7. q closes the pane
keys q
wait_gone "1:logs ns-00/$vm" 5

# 8. e: the VM described (kubectl describe's layout) in the pager, events last
keys e
wait_for "describe vm ns-00/$vm" 10
wait_for "^ Name: +$vm$" 10
screen | grep -qE "^ API Version: +kubevirt.io/v1$" || fail "describe: API Version"
keys G
wait_for "^   Normal +SuccessfulCreate " 5
keys q
wait_gone "describe vm ns-00/$vm" 5

# 9. nothing to show: say why
fk action ns-00 "$vm" stop '{"gracePeriod":0}' >/dev/null || fail "stop"
wait_for "^ $vm .*Stopped" 15
keys l
wait_for "logs: VirtualMachine ns-00/$vm has no launcher pod \(no VMI: the VM is not running\)" 5
cmd events; wait_for 'Events\(ns-00\)' 10
keys "/"; keys Escape
keys l
wait_for 'logs: logs are read from a VM, a VMI or a pod' 5
keys e
wait_for 'describe: a VM, VMI or pod row' 5

# 10. l on a pod row reads that pod
other=$(fk names pods | sed -n 's|^ns-00/\(virt-launcher-.*\)|\1|p' | head -1)
[ -n "$other" ] || fail "no other launcher"
cmd pod; wait_for 'LauncherPods\(ns-00\)' 10
keys "/"; keys -l "$other"; keys Enter
wait_for "^ $other "
keys l
wait_for "ns-00/$other \[compute\] \| streaming" 10
wait_for '"msg":"Marked as ready"' 10
keys x
wait_gone "ns-00/$other \[compute\]" 5
cmd q
echo PASS
