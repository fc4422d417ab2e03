#!/bin/bash
# e2e-lane: cluster
# Namespace scope without -A: the context's namespace is watched; `:ns NAME` re-watches another namespace,
# `:ns all` every namespace; the `:ns` and `:ctx` lists switch with enter; the open namespace list and the
# header's VM counts follow a VM created in a new namespace and deleted.
. "$(dirname "$0")/ui_lib.inc"

# "VMs: N" and "Status n" pairs (sorted by status) of the header's counts line, and the same from the cluster
header_counts() {
	screen | grep -m1 '^ Namespace: ' | $PY -c '
import re, sys
m = re.search(r"VMs: (\d+)((?:  \S+ \d+)*)", sys.stdin.read())
print("VMs: %s " % (m.group(1) if m else "?") + " ".join("%s %s" % p for p in sorted(re.findall(r"(\S+) (\d+)", m.group(2) if m else ""))))'
}
cluster_counts() {
	fk state virtualmachines | $PY -c '
import collections, json, sys
vms = json.load(sys.stdin)["virtualmachines"]
c = collections.Counter((v.get("status") or {}).get("printableStatus") or "Unknown" for v in vms)
print("VMs: %d " % len(vms) + " ".join("%s %d" % kv for kv in sorted(c.items())))'
}
# the header (scope: all namespaces) counts what the cluster has, once the watches caught up
wait_header_counts() {
	local deadline=$((SECONDS + 15)) want got
	while [ $SECONDS -lt $deadline ]; do
		want=$(cluster_counts); got=$(header_counts)
		[ "$want" = "$got" ] && return 0
		sleep 0.2
	done
	fail "header counts '$got', cluster '$want'"
}

fk_start --vms 20 --scenario stuck-launcher --step 0.2
kv_start
wait_for 'Scope: default' 10
wait_for 'VirtualMachines\(default\)\[1\]' 10
wait_for ' stuck-launcher '
screen | grep -q 'NAMESPACE' && fail "NAMESPACE column shown for one namespace"
cmd "ns ns-00"; wait_for 'Scope: ns-00' 10; wait_for 'VirtualMachines\(ns-00\)\[10\]' 10
cmd "ns all"; wait_for 'Scope: all namespaces' 10; wait_for 'VirtualMachines\(all\)\[21\]' 10
screen | grep -q 'NAMESPACE' || fail "no NAMESPACE column for all namespaces"
wait_header_counts
# the namespace list: pick ns-01 with enter
cmd ns; wait_for 'Namespaces\['; wait_for '^ ns-01'
# namespaces without VMs come from the cluster's namespace list
wait_for '^ kube-public' 10
# a VM in a namespace new to the cluster, created while the list is open: the list (asked from the cluster when
# it opened) shows the namespace from the VM at once, and drops it with the VM; the header counts follow
fk get /apis/kubevirt.io/v1/namespaces/ns-00/virtualmachines | $PY -c '
import json, sys
vm = json.load(sys.stdin)["items"][0]
vm["metadata"] = {"name": "late-vm", "namespace": "zz-late", "labels": vm["metadata"].get("labels", {})}
vm.pop("status", None)
vm["spec"].pop("running", None)
vm["spec"]["runStrategy"] = "Halted"
print(json.dumps(vm))' >"$W/late.json"
fk post /fake/apply "$(cat "$W/late.json")" >/dev/null || fail "apply a VM in zz-late"
wait_for '^ zz-late' 10
wait_for '^ Namespace: all  VMs: 22 ' 10
wait_header_counts
fk post /fake/delete '{"kind":"virtualmachines","namespace":"zz-late","name":"late-vm"}' >/dev/null || fail "delete late-vm"
wait_gone '^ zz-late' 10
wait_for '^ Namespace: all  VMs: 21 ' 10
wait_header_counts
# and `:ns` completes them
keys Escape; keys ":"; keys -l "ns kube-p"; keys Tab; wait_for '^:ns kube-public'; keys Escape
cmd ns; wait_for 'Namespaces\['
# move the selection (the default theme's cyan background) onto ns-01 whatever its position
for _ in $(seq 20); do
	line=$($T capture-pane -p -e -t k | grep -E $'\e\\[[0-9;]*46m' | sed 's/\x1b\[[0-9;]*m//g' | awk '{print $1}' | head -1)
	[ "$line" = ns-01 ] && break
	if [[ "$line" < ns-01 ]]; then keys j; else keys k; fi
	sleep 0.1
done
keys Enter; wait_for 'VirtualMachines\(ns-01\)\[10\]' 10
# the context list: the kubeconfig's, then the local engine's (a context of its own)
cmd ctx; wait_for 'Contexts\[4\]'; wait_for 'fake +\(current\)'; wait_for '^ engine *$'
keys Escape; wait_for 'VirtualMachines\(ns-01\)'
# a user who may not list namespaces: the list says so and still offers the namespaces of its objects
cmd "ctx fake-ns"; wait_for 'Context: fake-ns' 10; wait_for 'Scope: ns-00' 10
cmd ns; wait_for 'namespaces from its objects only \(.*forbidden' 10; wait_for '^ ns-00'
screen | grep -q '^ kube-public' && fail "namespaces of the previous context are still listed"
keys Escape
# `:ns all` for that user: it may list ns-00 only, so the header and the list say ns-00 (issue 25, item 6: the
# header said Scope: ns-00 above a list titled (all))
cmd "ns all"; wait_for '^namespace: all' 10; wait_for 'Scope: ns-00' 10
wait_for 'VirtualMachines\(ns-00\)\[10\]' 10
screen | grep -q '^ Namespace: ns-00  VMs: 10 ' || fail "the header's namespace is not the list's"
screen | grep -q 'NAMESPACE' && fail "a NAMESPACE column for one namespace"
echo "PASS ui_scope"
