#!/bin/bash
# e2e-lane: cluster
# --readonly: every action key pressed in the list view and in the VM view (answering yes to any question)
# sends no mutating request to the API (fakekube counts them), and the header says READ-ONLY; the config file's
# readonly = true does the same in the dashboard and for `kvcon stop`; an action key on a pod's row says it does
# not apply to pods.
. "$(dirname "$0")/ui_lib.inc"

fk_start --vms 12 --step 0.2
kv_start -A --readonly
wait_for 'VirtualMachines\(all\)\[12\]' 10
wait_for 'READ-ONLY'
wait_for 'Watch: vm live'
fk post /fake/requests/reset >/dev/null
press_all() {
	local k a
	for k in s:start S:stop C-k:force-stop r:restart p:pause m:migrate; do
		a=${k#*:}
		keys "${k%%:*}"
		# refused at once, naming the action: no question is asked (a question would make this wait fail)
		wait_for "READ-ONLY: $a [^ ]+ refused" 5
	done
}
# a running VM and a stopped one in the list
press_all
keys j; press_all
# the VM view
cmd "vm ns-01/app-00005"; wait_for ' VM ns-01/app-00005 '; wait_for ' launcher pod'
press_all
sleep 0.5 # requests in flight would have reached the server by now; the count must stay 0
n=$(mutating)
[ "$n" = 0 ] || fail "readonly sent $n mutating requests"
# the console pane is view-only (issue 25, item 9): its status line says so, and what is typed never reaches the
# guest (fakekube's console echoes every byte it gets: nothing comes back)
keys Escape
vmi=$(fk names virtualmachineinstances | head -1)
keys "/"; keys -l "${vmi#*/}"; keys Enter
wait_for "^ ${vmi%%/*} +${vmi#*/} "
keys c
wait_for "$vmi \| READ-ONLY: view only, nothing typed or pasted is sent \| connected to VMI" 15
keys -l "typed-under-readonly"
sleep 1 # an echo would be back well within this; it must not come
screen | grep -q 'typed-under-readonly' && fail "a key typed under --readonly reached the guest"
keys C-]; keys x
# the config file's readonly = true does the same
keys Escape; cmd q
deadline=$((SECONDS + 10)); while [ ! -s "$W/exit" ] && [ $SECONDS -lt $deadline ]; do sleep 0.1; done
mkdir -p "$W/cfg/kvcon"; printf 'theme = mono\nreadonly = true\n' > "$W/cfg/kvcon/config"
kv_restart -A
wait_for 'READ-ONLY' 10
wait_for 'Watch: vm live'
press_all
[ "$(mutating)" = 0 ] || fail "config readonly sent mutating requests"
# an action is offered only on rows of the kinds it applies to (model/registry.c): s on a pod's row says so
cmd pod; wait_for 'virt-launcher-'
keys s; wait_for 'start does not apply to pods' 5
# the config's readonly holds for the CLI verbs too: error, exit 1, the VM unchanged (no mutating request)
vm=$(env KUBECONFIG="$W/fk/kubeconfig" XDG_STATE_HOME="$W/state" "$KVCON" --no-engine get vm -n ns-01 -o name | head -1)
env KUBECONFIG="$W/fk/kubeconfig" XDG_CONFIG_HOME="$W/cfg" XDG_STATE_HOME="$W/state" "$KVCON" --no-engine stop \
	"ns-01/${vm#*/}" >"$W/stop.out" 2>&1; rc=$?
[ $rc = 1 ] && grep -q '^error: read-only mode: stop ns-01/' "$W/stop.out" || fail "stop with readonly = true: rc $rc $(cat "$W/stop.out")"
[ "$(mutating)" = 0 ] || fail "the CLI's stop under readonly = true sent a mutating request"
echo "PASS ui_readonly"
