#!/bin/bash
# Namespace scope without -A: the context's namespace is watched; `:ns NAME` re-watches another namespace,
# `:ns all` every namespace; the `:ns` and `:ctx` lists switch with enter.
. "$(dirname "$0")/ui_lib.inc"

fk_start --vms 20 --scenario stuck-launcher --step 0.2
kv_start
wait_for 'Scope: default' 10
wait_for 'VirtualMachines\(default\)\[1\]' 10
wait_for ' stuck-launcher '
screen | grep -q 'NAMESPACE' && fail "NAMESPACE column shown for one namespace"
cmd "ns ns-00"; wait_for 'Scope: ns-00' 10; wait_for 'VirtualMachines\(ns-00\)\[10\]' 10
cmd "ns all"; wait_for 'Scope: all namespaces' 10; wait_for 'VirtualMachines\(all\)\[21\]' 10
screen | grep -q 'NAMESPACE' || fail "no NAMESPACE column for all namespaces"
# the namespace list: pick ns-01 with enter
cmd ns; wait_for 'Namespaces\['; wait_for '^ ns-01'
# namespaces without VMs come from the cluster's namespace list
wait_for '^ kube-public' 10
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
# the context list
cmd ctx; wait_for 'Contexts\[3\]'; wait_for 'fake +\(current\)'
keys Escape; wait_for 'VirtualMachines\(ns-01\)'
# a user who may not list namespaces: the list says so and still offers the namespaces of its objects
cmd "ctx fake-ns"; wait_for 'Context: fake-ns' 10; wait_for 'Scope: ns-00' 10
cmd ns; wait_for 'namespaces from its objects only \(.*forbidden' 10; wait_for '^ ns-00'
screen | grep -q '^ kube-public' && fail "namespaces of the previous context are still listed"
keys Escape
echo "PASS ui_scope"
