#!/bin/bash
# e2e-lane: cluster
# The dashboard against fakekube in tmux at 120x40: open, switch views with `:`, filter, sort, a row following
# churn without a key press, escaped hostile names, an action with confirmation, namespace and context switch,
# resize, quit with the terminal restored.
. "$(dirname "$0")/ui_lib.inc"

fk_start --vms 40 --scenario weird,stuck-launcher --step 0.2
kv_start -A

wait_for 'VirtualMachines\(all\)\[4[0-9]\]' 10
wait_for 'Watch: vm live +vmi live +pod live +event live' 10
wait_for 'KubeVirt: v1\.[0-9]+\.[0-9]+' 10
screen | grep -q 'RUNSTRATEGY' || fail "no VM columns"

# views
cmd vmi; wait_for 'VirtualMachineInstances\(all\)' ; screen | grep -q 'LIVE-MIGRATABLE' || fail "vmi columns"
cmd pod; wait_for 'LauncherPods\(all\)'; screen | grep -qE 'virt-launcher-[a-z]+-[0-9]+-' || fail "pod rows"
cmd events; wait_for 'Events\(all\)'; screen | grep -q 'LAST SEEN' || fail "event columns"
cmd vm; wait_for 'VirtualMachines\(all\)'
# completion: ":vm" prefix "vm" + tab cycles command names
keys ":"; keys -l "ev"; keys Tab; wait_for '^:events'; keys Escape

# hostile names are shown escaped; the pane title is not changed by an OSC sequence
wait_for 'esc-\\e\]0;pwned\\x07-vm'
wait_for 'bidi-\\u\{202e\}gnp\.exe'
title=$($T display -p -t k '#{pane_title}')
[ "$title" != "pwned" ] || fail "a VM name changed the terminal title"
keys G; wait_for ' 虚拟机-一 +Running'
wait_for ' vm-ünïcödé '
keys g; wait_for ' app-00005 '

# filter, negated filter, label filter
keys "/"; keys -l "web-"; keys Enter
wait_for '</web-> '
screen | sed -n '6,38p' | grep -qE ' (db|cache|ci)-[0-9]' && fail "filter left other rows"
keys "/"; keys -l "!web-"; keys Enter
wait_for '</!web-> '
screen | sed -n '6,38p' | grep -qE ' web-[0-9]' && fail "negated filter kept web rows"
keys "/"; keys -l " -l app=db"; keys Enter  # leading space: tmux would take -l as its flag
wait_for '</-l app=db> '
screen | sed -n '6,38p' | grep -qE ' (web|cache)-[0-9]' && fail "label filter kept other rows"
keys Escape; wait_gone '</'

# sort by name (reverse), by age
keys N; wait_for 'NAME↓'
keys A; wait_for 'AGE↑'
keys N; wait_for 'NAME↑'

# follow a VM changed by the cluster, no key pressed afterwards
vm=$(fk names virtualmachines | grep -E '/web-[0-9]+$' | head -1)
ns=${vm%/*}; name=${vm#*/}
keys "/"; keys -l "$name"; keys Enter; wait_for "</$name> "
fk action "$ns" "$name" stop >/dev/null || fail "stop via fkctl"
wait_for " $name +(Stopping|Stopped) " 15
wait_for " $name +Stopped +False +Halted" 15

# an action with confirmation naming the VM; 'n' cancels, 'y' sends
fk post /fake/requests/reset >/dev/null
keys s; wait_for "start $ns/$name: (sent|accepted)"
wait_for " $name +(Starting|Running) " 15
keys S; wait_for "Stop VM $ns/$name\? \[y/N\]"
keys n; wait_for 'cancelled'
keys S; wait_for "Stop VM $ns/$name\? \[y/N\]"
keys y; wait_for "stop $ns/$name: (sent|accepted)"
wait_for " $name +Stopped " 15
[ "$(mutating)" = 2 ] || fail "expected 2 mutating requests (start, stop), got $(mutating)"
# an API error shows the Status message
keys S; keys y; wait_for "stop $ns/$name failed: .*VM is not running"
keys Escape; wait_gone '</'

# its lineage: the first execution ended when stopped, the start made a new VMI UID, ended by the stop too
cmd "vm $ns/$name"; wait_for " VM $ns/$name "
wait_for 'lineage\[2\]' 10
[ "$(screen | grep -cE '^ #[12] [0-9a-f-]{36} stopped ')" = 2 ] || fail "lineage does not show two stopped executions"
# a halted VM: VM progressed, no VMI is expected (not an outage); start it from this view and watch the four
# boundaries progress; a third execution appears
wait_for 'VM +progressed'; wait_for 'VMI +not expected'
keys s; wait_for "start $ns/$name: (sent|accepted)"
wait_for 'VMI +progressed' 15; wait_for 'launcher pod +progressed' 15; wait_for 'guest +progressed' 15
wait_for 'lineage\[3\]' 10
screen | grep -qE '^ #3 [0-9a-f-]{36} running ' || fail "the new execution is not in the lineage"
keys Escape; wait_for 'VirtualMachines\(all\)'

# live migration from the VM view: same execution (VMI UID), a new launcher on another node
vm2=$(fk names virtualmachines | grep -E '/db-[0-9]+$' | head -1)
cmd "vm $vm2"; wait_for " VM $vm2 "; wait_for 'VMI +progressed'
uid_before=$(screen | grep -oE 'uid: [0-9a-f-]{8}' | sed -n 1p) # the VMI panel's (row 2, before the VM's)
keys m; wait_for "Live-migrate VM $vm2\? \[y/N\]"
keys y; wait_for "migrate $vm2: (sent|accepted)"
wait_for 'migration: Succeeded' 20
wait_for '^ #1 [0-9a-f-]{36} running .* on node0[1-3] -> node0[1-3]  \[1 migration\]' 10
uid_after=$(screen | grep -oE 'uid: [0-9a-f-]{8}' | sed -n 1p)
[ -n "$uid_before" ] && [ "$uid_before" = "$uid_after" ] || fail "VMI UID changed by migration: $uid_before -> $uid_after"
keys Escape; wait_for 'VirtualMachines\(all\)'

# enter opens the VM view; y the YAML; esc back
keys Enter; wait_for '─ VM +'; wait_for ' VMI '; wait_for 'launcher pod'
keys y; wait_for '\(YAML\)'; wait_for 'apiVersion: kubevirt.io/v1'
keys Escape; keys Escape; wait_for 'VirtualMachines\(all\)'

# the four-boundary view of a VM whose launcher cannot be scheduled: the pod boundary is the stalled one, and
# `d` quotes the event
cmd "vm default/stuck-launcher"; wait_for ' VM default/stuck-launcher '
wait_for ' launcher pod +(failed|waiting) ' 15
wait_for ' VM +progressed '
keys d; wait_for 'walkthrough default/stuck-launcher'; wait_for 'FailedScheduling' 5
keys Escape; keys Escape; wait_for 'VirtualMachines\(all\)'

# help from the key table
keys "?"; wait_for 'Keys of this view'; wait_for 'force stop the VM'
keys Escape; wait_for 'VirtualMachines\(all\)'

# namespace scope
cmd "ns ns-00"; wait_for 'VirtualMachines\(ns-00\)'
screen | sed -n '6,38p' | grep -q 'ns-01' && fail "other namespace shown"
cmd "ns all"; wait_for 'VirtualMachines\(all\)'

# context switch: the namespace-limited context
# (-A was given: the namespace token's 403 on a cluster-wide list falls back to its namespace)
cmd "ctx fake-ns"; wait_for 'Context: fake-ns' 10; wait_for 'Scope: ns-00' 10
wait_for 'VirtualMachines\(ns-00\)\[[0-9]+\]' # the list says the scope the header says (issue 25, item 6)
screen | sed -n '6,38p' | grep -q ' ns-01 ' && fail "ns-01 rows after switching to the namespace context"
cmd "ctx fake"; wait_for 'Context: fake ' 10
# switching contexts dropped the objects from the store, which is not the end of their executions
wait_for 'Watch: vm live' 10
cmd "vm $ns/$name"; wait_for " VM $ns/$name " 10; wait_for 'lineage\[3\]' 10
screen | grep -qE '^ #3 [0-9a-f-]{36} running ' || fail "the context switch ended the running execution in the lineage"
keys Escape

# resize: smaller still draws; below 40x10 a notice; back
$T resize-window -t k -x 60 -y 15; wait_for 'VirtualMachines'
$T resize-window -t k -x 30 -y 8; wait_for 'kvcon needs 40x10'
$T resize-window -t k -x 120 -y 40; wait_for 'VirtualMachines\(all\)'
screen | grep -q 'RUNSTRATEGY' || fail "not redrawn after resize"

# quit: terminal restored (no alternate screen, cursor visible, no mouse mode)
cmd q
deadline=$((SECONDS + 10)); while [ ! -s "$W/exit" ] && [ $SECONDS -lt $deadline ]; do sleep 0.1; done
grep -q 'KVCON_EXIT=0' "$W/exit" || fail "exit status: $(cat "$W/exit" 2>/dev/null)"
state=$($T display -p -t k '#{alternate_on} #{cursor_flag} #{mouse_any_flag} #{mouse_standard_flag} #{mouse_button_flag} #{keypad_flag}')
[ "$state" = "0 1 0 0 0 0" ] || fail "terminal not restored: alternate,cursor,mouse_any,mouse_std,mouse_btn,keypad = $state"
echo "PASS ui_dashboard"
