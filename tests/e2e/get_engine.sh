#!/bin/bash
# e2e-lane: cluster
# Verbs on every source: `kvcon get` lists the local engine's VMs in every output format (alone without a
# kubeconfig); with a kubeconfig, its context alone as kubectl (no engine service started), the engine as a context
# of its own (--context engine), both when asked (--context CTX,engine: a SOURCE column); the verbs about one VM
# resolve NAME there, refuse an ambiguous one and take --source.
# Exit 0 pass, anything else fail.
set -u
# shellcheck source=tests/e2e/lib/fakekube.bash
. "$(dirname "$0")/lib/fakekube.bash"
command -v jq >/dev/null || fail "jq missing (scripts/deps.sh installs it)"
export XDG_STATE_HOME="$tmp/state" XDG_CONFIG_HOME="$tmp/cfg"
unset KVCON_ENGINE_URI LIBVIRT_DEFAULT_URI
manifest() {
	cat >"$tmp/$1.yaml" <<EOM
apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata:
  name: $1
  labels:
    app: $2
spec:
  runStrategy: Halted
  template:
    spec:
      domain:
        memory:
          guest: 128Mi
        devices:
          autoattachPodInterface: false
EOM
	echo "$tmp/$1.yaml"
}
K() { timeout 180 "$KVCON" "$@" >"$tmp/out" 2>"$tmp/err"; }

# 1. no kubeconfig: the engine's VMs, in every format
export KUBECONFIG="$tmp/none"
K engine apply -f "$(manifest evm demo)" || fail "engine apply: $(cat "$tmp/err")"
K engine apply -f "$(manifest stuck-launcher twin)" || fail "engine apply twin: $(cat "$tmp/err")"
K get vm || fail "get vm: $(cat "$tmp/err")"
head -1 "$tmp/out" | grep -q '^NAME  *AGE  *STATUS  *READY$' || fail "header: $(cat "$tmp/out")"
grep -q '^evm  *[0-9][0-9a-z]*  *Stopped  *False$' "$tmp/out" || fail "evm row: $(cat "$tmp/out")"
K get vm -o json && jq -e '.kind == "List" and ([.items[].metadata.name] | sort) == ["evm", "stuck-launcher"] and
	.items[0].apiVersion == "kubevirt.io/v1" and .items[0].kind == "VirtualMachine"' "$tmp/out" >/dev/null ||
	fail "-o json: $(head -c 400 "$tmp/out")"
K get vm evm -o yaml && grep -q '^kind: VirtualMachine$' "$tmp/out" && grep -q '^  name: evm$' "$tmp/out" ||
	fail "get vm evm -o yaml: $(head -20 "$tmp/out")"
K get vm -o name && [ "$(cat "$tmp/out")" = "$(printf 'virtualmachine.kubevirt.io/evm\nvirtualmachine.kubevirt.io/stuck-launcher')" ] ||
	fail "-o name: $(cat "$tmp/out")"
K get vm -l app=demo -o jsonpath='{.items[*].metadata.name}' && [ "$(cat "$tmp/out")" = evm ] || fail "-l + jsonpath: $(cat "$tmp/out")"
K get vm -o custom-columns=N:.metadata.name,S:.status.printableStatus --sort-by=.metadata.name &&
	[ "$(sed -n 2p "$tmp/out")" = "evm              Stopped" ] || fail "custom-columns: $(cat "$tmp/out")"
K get vm nosuch; [ $? = 1 ] && grep -q 'NotFound.*"nosuch" not found' "$tmp/err" || fail "get vm nosuch: $(cat "$tmp/err")"
K describe vm default/evm && grep -q '^Name:  *evm$' "$tmp/out" || fail "describe on the engine: $(cat "$tmp/err")"

# 1b. kvcon apply -f / delete -f on the engine (issue 27): a multi-document file with a Namespace and Halted VMs,
# kubectl's lines; unchanged the second time; --dry-run=server stores nothing; a VM in a namespace that does not
# exist is refused as the API server refuses it; create namespace; delete -f empties the file's namespace first
t1b=$(date +%s)
{ printf 'apiVersion: v1\nkind: Namespace\nmetadata:\n  name: lab\n---\n'
  sed 's/^  name: hv$/  name: hv\n  namespace: lab/' "$(manifest hv web)"; printf -- '---\n'; cat "$(manifest hd web)"; } >"$tmp/multi.yaml"
K apply -f "$tmp/multi.yaml" || fail "apply multi: $(cat "$tmp/err")"
[ "$(cat "$tmp/out")" = "$(printf 'namespace/lab created\nvirtualmachine.kubevirt.io/hv created\nvirtualmachine.kubevirt.io/hd created')" ] ||
	fail "apply multi said: $(cat "$tmp/out")"
K apply -f "$tmp/multi.yaml" && [ "$(grep -c ' unchanged$' "$tmp/out")" = 3 ] || fail "re-apply: $(cat "$tmp/out" "$tmp/err")"
sed 's/guest: 128Mi/guest: 192Mi/' "$tmp/multi.yaml" >"$tmp/multi2.yaml"
K engine apply --dry-run=server -f "$tmp/multi2.yaml" && grep -qx 'virtualmachine.kubevirt.io/hv configured (server dry run)' "$tmp/out" ||
	fail "dry run: $(cat "$tmp/out" "$tmp/err")"
K get vm hv -n lab -o jsonpath='{.spec.template.spec.domain.memory.guest}' && [ "$(cat "$tmp/out")" = 128Mi ] ||
	fail "--dry-run=server changed hv: $(cat "$tmp/out")"
K get vm -n lab && grep -q '^hv  *[0-9][0-9a-z]*  *Stopped  *False$' "$tmp/out" || fail "get vm -n lab: $(cat "$tmp/out" "$tmp/err")"
K engine get ns lab && grep -q '^lab  *Active ' "$tmp/out" || fail "engine get ns lab: $(cat "$tmp/out" "$tmp/err")"
sed 's/^  name: hn$/  name: hn\n  namespace: nope/' "$(manifest hn web)" >"$tmp/nope.yaml"
K apply -f "$tmp/nope.yaml"; [ $? = 1 ] && grep -q 'namespaces "nope" not found' "$tmp/err" || fail "missing namespace: $(cat "$tmp/err")"
K create namespace lab2 && [ "$(cat "$tmp/out")" = "namespace/lab2 created" ] || fail "create namespace: $(cat "$tmp/out" "$tmp/err")"
K create namespace lab2; [ $? = 1 ] && grep -q 'AlreadyExists.*"lab2" already exists' "$tmp/err" || fail "create twice: $(cat "$tmp/err")"
K delete -f "$tmp/multi.yaml" || fail "delete -f: $(cat "$tmp/out" "$tmp/err")"
[ "$(sort "$tmp/out")" = "$(printf 'namespace "lab" deleted\nvirtualmachine.kubevirt.io "hd" deleted\nvirtualmachine.kubevirt.io "hv" deleted')" ] ||
	fail "delete -f said: $(cat "$tmp/out")"
K engine get ns && ! grep -q '^lab ' "$tmp/out" && grep -q '^lab2 ' "$tmp/out" || fail "namespaces after delete: $(cat "$tmp/out")"
K get vm -o name && ! grep -q 'hd$' "$tmp/out" || fail "hd still listed: $(cat "$tmp/out")"
echo "apply/delete -f on the engine: $(( $(date +%s) - t1b )) s"

# 2. with a cluster: its context alone, exactly as kubectl (no engine row, no engine service started); the engine
# is a context of its own (--context engine); both only when asked (--context CTX,engine), with a SOURCE column
fk_start --vms 4 --namespaces 1 --seed 3 --scenario stuck-launcher
svc_stop_all "$tmp"
svc_pids() { # the engine services of this state directory
	local p
	for p in $(pgrep -f ' engine serve '); do
		tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qxF "XDG_STATE_HOME=$XDG_STATE_HOME" && echo "$p"
	done
}
K get vm -A || fail "get vm -A (cluster): $(cat "$tmp/err")"
kubectl get vm -A >"$tmp/kubectl.out" 2>&1 || fail "kubectl get vm -A: $(cat "$tmp/kubectl.out")"
[ "$(awk '{ print $1, $2 }' "$tmp/out")" = "$(awk '{ print $1, $2 }' "$tmp/kubectl.out")" ] ||
	fail "get vm -A is not kubectl's rows: $(cat "$tmp/out") -- kubectl: $(cat "$tmp/kubectl.out")"
K get vm -A -o json && [ "$(jq '.items | length' "$tmp/out")" = "$(kubectl get vm -A -o json | jq '.items | length')" ] ||
	fail "get vm -A -o json items: $(head -c 300 "$tmp/out")"
K get vm --watch-for 1 && ! grep -q '^evm ' "$tmp/out" || fail "--watch-for lists the engine: $(cat "$tmp/out")"
[ -z "$(svc_pids)" ] || fail "get on the cluster started an engine service: $(svc_pids)"
ctx=$(kubectl config current-context)
host=$(hostname)
K --context engine get vm && grep -q '^evm ' "$tmp/out" && ! grep -q SOURCE "$tmp/out" ||
	fail "--context engine: $(cat "$tmp/out" "$tmp/err")"
K --context "$ctx,engine" get vm || fail "get vm (cluster + engine): $(cat "$tmp/err")"
head -1 "$tmp/out" | grep -q '^NAME  *AGE  *STATUS  *READY  *SOURCE$' || fail "no SOURCE column: $(cat "$tmp/out")"
[ "$(grep -c '^stuck-launcher ' "$tmp/out")" = 2 ] || fail "stuck-launcher twice: $(cat "$tmp/out")"
grep -q "^evm  .*Stopped  *False  *$host\$" "$tmp/out" || fail "the engine's evm with its source: $(cat "$tmp/out")"
grep -q "^stuck-launcher .* $ctx\$" "$tmp/out" || fail "the cluster's row with its source: $(cat "$tmp/out")"
K --context "$ctx,engine" get vm -o json && jq -e '[.items[].metadata.name] | index("evm") != null' "$tmp/out" >/dev/null ||
	fail "json lacks evm"
K --no-engine --context "$ctx" get vm && ! grep -q '^evm ' "$tmp/out" || fail "--no-engine still lists the engine"
K --context "$ctx,$host" get vm --watch-for 1 || fail "--watch-for beside the cluster: $(cat "$tmp/err")"
grep -q '^stuck-launcher .* '"$ctx"'$' "$tmp/out" && grep -q '^evm .* '"$host"'$' "$tmp/out" ||
	fail "--watch-for rows: $(cat "$tmp/out") $(cat "$tmp/err")"
svc_stop_all "$tmp"
KVCON_ENGINE_SERVICE=use K get vm -w -o json -c "qemu:///embed?root=$XDG_STATE_HOME/kvcon/engine"; [ $? = 1 ] &&
	grep -q "^error: no engine service answers on $XDG_STATE_HOME/kvcon/engine-[0-9a-f]*\.sock .*start one with \`kvcon engine serve\`" "$tmp/err" ||
	fail "-w -c without a service: $(cat "$tmp/err")"

# 3. one VM: the cluster's context alone (the engine's VM is named, not read), ambiguous refused when both are
# asked for, --source picks
K describe vm default/evm; [ $? = 1 ] && grep -q '^Error from server (NotFound): virtualmachines.kubevirt.io "evm" not found$' "$tmp/err" ||
	fail "describe evm on the cluster: $(cat "$tmp/err")"
K lineage default/evm; [ $? = 1 ] && grep -q "^error: VirtualMachine default/evm not found in context fake (the local engine has one: --context engine)$" "$tmp/err" ||
	fail "lineage evm on the cluster: $(cat "$tmp/err")"
[ -z "$(svc_pids)" ] || fail "describe on the cluster started an engine service: $(svc_pids)"
K --context engine describe vm default/evm && grep -q '^Name:  *evm$' "$tmp/out" || fail "describe evm (engine): $(cat "$tmp/err")"
K --context "$ctx,engine" lineage default/stuck-launcher; [ $? = 1 ] && grep -q "^error: default/stuck-launcher exists in context $ctx, engine host $host: say which with --source NAME$" "$tmp/err" ||
	fail "ambiguous name: $(cat "$tmp/err")"
# the engine's twin is Halted, the cluster's is stuck at its launcher
K --source "$host" diagnose default/stuck-launcher -o json
jq -e '.boundaries[0].rule == "vm-halted"' "$tmp/out" >/dev/null || fail "--source $host: $(head -c 600 "$tmp/out"; cat "$tmp/err")"
K --source "$ctx" diagnose default/stuck-launcher -o json
jq -e '.boundaries[0].rule != "vm-halted" and .firstStalled != null' "$tmp/out" >/dev/null ||
	fail "--source $ctx: $(head -c 600 "$tmp/out"; cat "$tmp/err")"
K --source nosuch lineage default/evm; [ $? = 1 ] && grep -q '^error: --source nosuch: no such context or engine host' "$tmp/err" ||
	fail "--source nosuch: $(cat "$tmp/err")"
echo "PASS get_engine: engine VMs in get's formats, SOURCE column, resolution and --source"
