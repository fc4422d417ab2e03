#!/bin/bash
# e2e-lane: cluster
# kvcon get and the real kubectl side by side on the same fakekube (issue 16's output contract): -o json and
# -o yaml equal once parsed (and byte for byte), -o name, -o jsonpath= (fields, [n], [-1], slices, [*], .., filters,
# range/end, quoted literals), -o custom-columns=, -o wide, --sort-by, -L, --show-labels, --no-headers, get KIND
# NAME, get vm,vmi and vmim/node/namespace equal byte for byte; the option forms kubectl takes (-ojson, -o=json,
# --output=json, -nNS, --namespace=NS, repeated -l); errors are "error: ..." with exit 1; text from the `weird`
# scenario never reaches the terminal raw in any format. Exit 0 pass, anything else fail.
set -u
# shellcheck source=tests/e2e/lib/fakekube.bash
. "$(dirname "$0")/lib/fakekube.bash"
KUBECTL=$(command -v kubectl || echo /usr/bin/kubectl)
[ -x "$KUBECTL" ] || fail "kubectl missing (scripts/deps.sh installs it)"
YPY=/usr/bin/python3 # Debian's, with python3-yaml
"$YPY" -c 'import yaml' || fail "python3-yaml missing (scripts/deps.sh installs it)"
export HOME="$tmp/home" # kubectl's discovery cache, per run
mkdir -p "$HOME"

fk_start --vms 60 --namespaces 3 --seed 16 --scenario weird,stuck-launcher,replicaset --step 0.05
K() { "$KUBECTL" --request-timeout=30s "$@"; }
# the scenario VMs (weird names) live in `default`: byte comparisons leave them out
NOTDEF=--field-selector=metadata.namespace!=default

# same ARGS...: kvcon get ARGS and kubectl get ARGS print the same bytes and exit status. A table's AGE may tick
# between the two runs, so a difference is re-run up to twice before it counts.
same() {
	local try
	for try in 1 2 3; do
		"$KVCON" get "$@" >"$tmp/kv.out" 2>"$tmp/kv.err"; kr=$?
		K get "$@" >"$tmp/kc.out" 2>"$tmp/kc.err"; cr=$?
		[ $kr -eq $cr ] && cmp -s "$tmp/kv.out" "$tmp/kc.out" && return 0
	done
	echo "--- kvcon get $* (exit $kr)"; head -c 2000 "$tmp/kv.out"; cat "$tmp/kv.err"
	echo "--- kubectl get $* (exit $cr)"; head -c 2000 "$tmp/kc.out"; cat "$tmp/kc.err"
	diff "$tmp/kv.out" "$tmp/kc.out" | head -20
	fail "kvcon get $* differs from kubectl"
}
n=0
check() { same "$@"; n=$((n + 1)); }

# 1. -o json / -o yaml: the server's objects, a List for several, the object itself for KIND NAME
# (kubectl's own YAML printer refuses the weird scenario's control characters: -A leaves `default` out)
for args in "vm -A $NOTDEF" "vmi -A $NOTDEF" "pod -A $NOTDEF" "event -A $NOTDEF" "vm,vmi -n ns-01" "vmim -A" "node" \
	"namespace" "vm -n ns-02 -l app=web"; do
	# shellcheck disable=SC2086
	"$KVCON" get $args -o json >"$tmp/kv.json" || fail "kvcon get $args -o json"
	# shellcheck disable=SC2086
	K get $args -o json >"$tmp/kc.json" || fail "kubectl get $args -o json"
	jq -e '.kind == "List" and .apiVersion == "v1" and .metadata.resourceVersion == ""' "$tmp/kv.json" >/dev/null ||
		fail "get $args -o json is not a List"
	cmp -s <(jq -S . "$tmp/kv.json") <(jq -S . "$tmp/kc.json") || fail "get $args -o json differs once parsed"
	# shellcheck disable=SC2086
	"$KVCON" get $args -o yaml >"$tmp/kv.yaml" || fail "kvcon get $args -o yaml"
	# shellcheck disable=SC2086
	K get $args -o yaml >"$tmp/kc.yaml" || fail "kubectl get $args -o yaml"
	"$YPY" -c 'import sys, yaml; a, b = (yaml.safe_load(open(f)) for f in sys.argv[1:]); sys.exit(a != b)' \
		"$tmp/kv.yaml" "$tmp/kc.yaml" || fail "get $args -o yaml differs once parsed"
	n=$((n + 2))
done
[ "$(jq '.items | length' "$tmp/kv.json")" -gt 0 ] || fail "the web VMs list is empty"
# every kind's items, -A, byte for byte (generated namespaces)
for fmt in json yaml; do check vm,vmi,pod,event,vmim -A "$NOTDEF" -o $fmt; done
vm=$(jq -r '.items[0].metadata.name' "$tmp/kv.json")
for fmt in json yaml; do check vm -n ns-02 "$vm" -o $fmt; done
"$KVCON" get vm -n ns-02 "$vm" -o json | jq -e '.kind == "VirtualMachine"' >/dev/null || fail "get vm NAME -o json is not the object"
# the weird scenario's objects: parsed equal, and no raw ESC/C1 reaches the terminal
"$KVCON" get vm,vmi,pod,event -n default -o json >"$tmp/w.json" || fail "weird -o json"
K get vm,vmi,pod,event -n default -o json >"$tmp/wk.json" || fail "kubectl weird -o json"
cmp -s <(jq -S . "$tmp/w.json") <(jq -S . "$tmp/wk.json") || fail "weird objects differ once parsed"
# kubectl refuses to print these as YAML ("control characters are not allowed"); kvcon's YAML reads back as the
# same objects as kubectl's JSON
"$KVCON" get vm,vmi,pod,event -n default -o yaml >"$tmp/w.yaml" || fail "weird -o yaml"
"$YPY" -c 'import json, sys, yaml; sys.exit(yaml.safe_load(open(sys.argv[1])) != json.load(open(sys.argv[2])))' \
	"$tmp/w.yaml" "$tmp/wk.json" || fail "weird objects: kvcon's YAML differs from kubectl's JSON once parsed"
"$KVCON" get vm -n default -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}' >"$tmp/w.jp" || fail "weird jsonpath"
"$KVCON" get vm -n default -o custom-columns=N:.metadata.name,A:.metadata.annotations >"$tmp/w.cc" || fail "weird cc"
"$KVCON" get vm,pod -n default -o wide --show-labels >"$tmp/w.wide" || fail "weird wide"
for f in w.json w.yaml w.jp w.cc w.wide; do
	LC_ALL=C grep -q "$(printf '\033')" "$tmp/$f" && fail "raw ESC in $f"
	LC_ALL=C grep -q "$(printf '\302\233')" "$tmp/$f" && fail "raw C1 CSI in $f"
done
grep -q 'esc-\\e\]0;pwned\\x07-vm' "$tmp/w.jp" || fail "the weird name is not shown escaped: $(cat "$tmp/w.jp")"

# 2. -o name, -o wide, tables, -L, --show-labels, --no-headers, --sort-by, KIND NAME, vm,vmi, the new kinds
check vm -A "$NOTDEF" -o name
check vm,vmi -A "$NOTDEF" -o name
check vm,vmi -n ns-01
check vm,vmi -A "$NOTDEF" -o wide
check pod -A "$NOTDEF" -o wide
check event -n ns-00 -o wide
check vmim -A
check vmirs -A
check vmirs -n default -o wide
check virtualmachineinstancereplicaset.kubevirt.io replicaset -o yaml
check node
check node -o wide
check namespace
check ns,no -o name
check vm -n ns-01 "$vm"
check "vm/$vm" "vmi/$vm" -n ns-02 -o name
check "vm/$vm" "vmi/$vm" -n ns-02 -o json
check "vm/$vm" "vmi/$vm" -n ns-02
check vm "$vm" -A
check vmi -n ns-02 "$vm" -o wide
check vm -A "$NOTDEF" -L app -L tier,kubevirt.io/vm
check vm -n ns-00 --show-labels
check vmi -A "$NOTDEF" --no-headers
# (kubectl's sort is not stable: equal keys may come in any order, so only unique keys compare byte for byte)
check vm -A "$NOTDEF" --sort-by=.metadata.uid
check vmi -A "$NOTDEF" --sort-by='{.metadata.uid}' -o wide
check vm -A "$NOTDEF" --sort-by=.metadata.name -o name
check vm -n ns-01 -l tier=frontend -l app=web
check pod -n ns-01 --field-selector=status.phase=Running -o name
check vm -n no-such-namespace
# every kind the dashboard lists (model/registry.c): PVCs, PVs, DataVolumes, by short name and long
check pvc -A "$NOTDEF"
check pv
check dv -A "$NOTDEF" -o wide
K apply --validate=false -n ns-01 -f - >/dev/null <<'YAML' || fail "kubectl apply of a Secret and a ConfigMap"
{"apiVersion": "v1", "kind": "List", "items": [
 {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "kv-s1"}, "stringData": {"a": "b", "c": "d"}},
 {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kv-c1"}, "data": {"a": "b"}}]}
YAML
check secret,cm -n ns-01
check secrets,configmaps -n ns-01 -o name
check persistentvolumeclaims,datavolumes.cdi.kubevirt.io -n ns-01 -o name
check vm -n ns-01 no-such-vm
# 3. jsonpath, byte for byte
while IFS= read -r t; do
	check vm,vmi -A "$NOTDEF" -o "jsonpath=$t"
done <<'JP'
{.items[*].metadata.name}
{range .items[*]}{.metadata.namespace}{"/"}{.metadata.name}{"\t"}{.status.printableStatus}{"\n"}{end}
{.items[0].metadata.labels}
{.items[-1].metadata.name}
{.items[1:4].metadata.name}
{.items[0,2].kind}
{..nodeName}
{.items[?(@.status.phase=="Running")].metadata.name}
{range .items[*]}{.metadata.name}{" "}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}
{.items[*].metadata.labels['kubevirt\.io/vm']}
{.items[*].spec.template.spec.domain.cpu.cores}
{.kind} {.apiVersion}
{.items[*].status.interfaces[0].ipAddress}
{.items[?(@.metadata.name=='web-00000')].metadata.uid}
{range .items[?(@.kind=="VirtualMachine")]}{.metadata.name}{","}{end}
{.items[0].metadata['name','namespace']}
{range .items[*]}{range .status.conditions[*]}{.type}={.status};{end}{"\n"}{end}
JP
check vm -n ns-02 "$vm" -o 'jsonpath={.metadata.name} {.spec.runStrategy}'
# 4. custom-columns, byte for byte
check vm,vmi -A "$NOTDEF" -o custom-columns=NAME:.metadata.name,NS:.metadata.namespace,PHASE:.status.phase,NODE:.status.nodeName
check vm -A "$NOTDEF" -o custom-columns='NAME:metadata.name,LABELS:.metadata.labels,COND:.status.conditions[*].type,X:.spec.template.spec.domain.devices.disks'
check vmi -A "$NOTDEF" -o custom-columns=NAME:.metadata.name,IP:.status.interfaces[0].ipAddress --sort-by=.metadata.name --no-headers

# 5. kubectl's option forms mean the same
"$KVCON" get vm -n ns-01 -o json >"$tmp/f0"
for form in "vm -n ns-01 -ojson" "vm -n ns-01 -o=json" "vm -n ns-01 --output=json" "vm -n ns-01 --output json" \
	"vm -nns-01 -o json" "vm --namespace=ns-01 -o json" "-n ns-01 get-vm"; do
	# shellcheck disable=SC2086
	case $form in -n*) "$KVCON" -n ns-01 get vm -o json >"$tmp/f1" ;; *) "$KVCON" get $form >"$tmp/f1" ;; esac ||
		fail "form: $form"
	cmp -s "$tmp/f0" "$tmp/f1" || fail "get $form differs from get vm -n ns-01 -o json"
done
# 6. errors: "error: ..." on stderr, exit 1, usage included
for bad in "bogus" "vm -o yamlx" "vm -o jsonpath={.a" "vm --bogus-flag" "vm -o custom-columns=NOCOLON" "vm -n"; do
	# shellcheck disable=SC2086
	"$KVCON" get $bad >/dev/null 2>"$tmp/bad.err"; rc=$?
	[ $rc -eq 1 ] || fail "get $bad: exit $rc, want 1"
	grep -q '^error: ' "$tmp/bad.err" || fail "get $bad: $(cat "$tmp/bad.err")"
done
"$KVCON" nosuchcommand >/dev/null 2>"$tmp/bad.err"; [ $? -eq 1 ] && grep -q '^error: unknown command' "$tmp/bad.err" ||
	fail "unknown command: $(cat "$tmp/bad.err")"
# 7. version: the client's, and the server's from /version
"$KVCON" version >"$tmp/ver" || fail "kvcon version"
grep -q '^Client Version: v' "$tmp/ver" || fail "client version: $(cat "$tmp/ver")"
grep -qx "Server Version: $(K version -o json | jq -r .serverVersion.gitVersion)" "$tmp/ver" || fail "server version: $(cat "$tmp/ver")"
"$KVCON" --version | cmp -s - "$tmp/ver" || fail "--version differs from version"
"$KVCON" version --client | grep -q 'Server' && fail "version --client printed the server's"
"$KVCON" -v 2 get ns -o name >/dev/null && "$KVCON" --v=3 get ns -o name >/dev/null || fail "-v N / --v=N"
# 8. -w streams the API objects' formats: each object on its own, the listed ones first, then every change; -w's
# table is kubectl's, byte for byte, column widths kept from the first page (issue 25, item 11)
vmw=$(K get vm -n ns-01 -o jsonpath='{.items[?(@.status.printableStatus=="Running")].metadata.name}' | cut -d' ' -f1)
[ -n "$vmw" ] || fail "no running VM in ns-01"
"$KVCON" get vm -n ns-01 -w --watch-for 60 -o jsonpath='{.metadata.name} {.status.printableStatus}{"\n"}' \
	>"$tmp/w.out" 2>"$tmp/w.err" &
wpid=$!
# -w's table beside kubectl's: later rows keep the first page's widths, widened by a longer value (Stopping)
"$KVCON" get vm -n ns-01 -w >"$tmp/wt.kv" 2>&1 &
wtkv=$!
K get vm -n ns-01 -w >"$tmp/wt.kc" 2>&1 &
wtkc=$!
pids="$pids $wpid $wtkv $wtkc"
poll 20 grep -q "^$vmw Running$" "$tmp/w.out" || fail "-w never listed $vmw: $(cat "$tmp/w.out" "$tmp/w.err")"
poll 20 grep -q "^$vmw " "$tmp/wt.kv" || fail "-w never listed $vmw: $(cat "$tmp/wt.kv")"
poll 20 grep -q "^$vmw " "$tmp/wt.kc" || fail "kubectl -w never listed $vmw: $(cat "$tmp/wt.kc")"
fkctl action ns-01 "$vmw" stop >/dev/null || fail "stop subresource"
poll 20 grep -q "^$vmw Stopped$" "$tmp/w.out" || fail "-w -o jsonpath did not show $vmw Stopped: $(cat "$tmp/w.out")"
poll 20 grep -q "^$vmw  .* Stopped  " "$tmp/wt.kc" || fail "kubectl -w did not show $vmw Stopped: $(cat "$tmp/wt.kc")"
poll 20 grep -q "^$vmw  .* Stopped  " "$tmp/wt.kv" || fail "-w did not show $vmw Stopped: $(cat "$tmp/wt.kv")"
kill $wpid $wtkv $wtkc
grep -q "^$vmw  .* Stopping  " "$tmp/wt.kc" || fail "kubectl -w missed Stopping, the longer value"
cmp -s "$tmp/wt.kv" "$tmp/wt.kc" || fail "-w's table differs from kubectl's: $(diff "$tmp/wt.kv" "$tmp/wt.kc" | head -8)"
n=$((n + 1))
nvm=$(K get vm -n ns-01 -o name | wc -l)
"$KVCON" get vm -n ns-01 -w --watch-for 2 -o json >"$tmp/w.json" || fail "-w -o json exit"
[ "$(jq -s 'map(select(.kind == "VirtualMachine")) | length' "$tmp/w.json")" -ge "$nvm" ] || fail "-w -o json objects"
"$KVCON" get vm -n ns-01 -w --watch-for 2 -o yaml >"$tmp/w.yaml" || fail "-w -o yaml exit"
"$YPY" -c 'import sys, yaml; d = [x for x in yaml.safe_load_all(open(sys.argv[1]))]; sys.exit(len(d) < int(sys.argv[2]))' \
	"$tmp/w.yaml" "$nvm" || fail "-w -o yaml documents"
# 9. --watch-for N in every format of get: the objects once N seconds have passed, as kubectl lists them then
# (issue 25, item 12: -o json was refused as "take one kind")
for f in json yaml 'jsonpath={.items[*].metadata.name}' 'custom-columns=NAME:.metadata.name,RS:.spec.runStrategy' name wide; do
	"$KVCON" get vm -n ns-01 --watch-for 1 -o "$f" >"$tmp/wf.out" 2>"$tmp/wf.err" || fail "--watch-for 1 -o $f: $(cat "$tmp/wf.err")"
	K get vm -n ns-01 -o "$f" >"$tmp/wf.k"
	case $f in
	json) [ "$(jq -c '[.items[].metadata.name]' "$tmp/wf.out")" = "$(jq -c '[.items[].metadata.name]' "$tmp/wf.k")" ] ;;
	yaml) grep -q '^kind: List$' "$tmp/wf.out" && [ "$(grep -c '^  kind: VirtualMachine$' "$tmp/wf.out")" = "$nvm" ] ;;
	wide) [ "$(awk '{print $1}' "$tmp/wf.out")" = "$(awk '{print $1}' "$tmp/wf.k")" ] ;;
	*) cmp -s "$tmp/wf.out" "$tmp/wf.k" ;;
	esac || fail "--watch-for 1 -o $f differs from kubectl: $(diff "$tmp/wf.out" "$tmp/wf.k" | head -5)"
	n=$((n + 1))
done
"$KVCON" get vm,vmi -n ns-01 --watch-for 1 -o name | cmp -s - <(K get vm,vmi -n ns-01 -o name) || fail "--watch-for with two kinds"
echo "PASS: get_kubectl ($n comparisons with kubectl)"
