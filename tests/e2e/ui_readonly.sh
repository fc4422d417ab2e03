#!/bin/bash
# --readonly: every action key pressed in the list view and in the VM view (answering yes to any question)
# sends no mutating request to the API (fakekube counts them), and the header says READ-ONLY.
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
# the config file's readonly = true does the same
keys Escape; cmd q
deadline=$((SECONDS + 10)); while [ ! -s "$W/exit" ] && [ $SECONDS -lt $deadline ]; do sleep 0.1; done
mkdir -p "$W/cfg/kvcon"; printf 'theme = mono\nreadonly = true\n' > "$W/cfg/kvcon/config"
kv_restart -A
wait_for 'READ-ONLY' 10
wait_for 'Watch: vm live'
press_all
[ "$(mutating)" = 0 ] || fail "config readonly sent mutating requests"
echo "PASS ui_readonly"
