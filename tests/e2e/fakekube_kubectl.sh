#!/bin/sh
# e2e-lane: cluster
# Proves tests/fakekube faithful by running the real kubectl against it:
# table output, label selectors, chunked lists, watch, -o json vs /fake/state,
# 401 with a wrong token, 403 with the namespace-limited token, no-KubeVirt mode.
# Exit 0 pass, 77 skip, anything else fail.
set -eu

top=$(cd "$(dirname "$0")/../.." && pwd)
fk="$top/tests/fakekube"
KUBECTL=${KUBECTL:-/usr/bin/kubectl}
command -v "$KUBECTL" >/dev/null 2>&1 || KUBECTL=$(command -v kubectl || true)
if [ -z "$KUBECTL" ] || [ ! -x "$KUBECTL" ]; then
	echo "SKIP: kubectl not installed" >&2
	exit 77
fi
PY=${FAKEKUBE_PYTHON:-$(command -v python3 || echo /usr/bin/python3)}
command -v openssl >/dev/null 2>&1 || { echo "SKIP: openssl missing" >&2; exit 77; }

tmp=$(mktemp -d)
pids=""
cleanup() {
	for p in $pids; do kill "$p" 2>/dev/null || true; done
	for p in $pids; do wait "$p" 2>/dev/null || true; done
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

# Keep kubectl's discovery cache out of $HOME and per run.
export HOME="$tmp/home"
mkdir -p "$HOME"

"$PY" "$fk/fakekube.py" --dir "$tmp/fk" --vms 300 --namespaces 4 --seed 7 \
	--scenario stuck-launcher >"$tmp/fk.log" 2>&1 &
pids="$pids $!"
"$PY" "$fk/fkctl.py" "$tmp/fk" wait 60 || { cat "$tmp/fk.log" >&2; fail "fakekube did not start"; }
"$PY" "$fk/fkctl.py" "$tmp/fk" settle 30 >/dev/null || fail "simulator did not settle"
export KUBECONFIG="$tmp/fk/kubeconfig"
k() { "$KUBECTL" --request-timeout=30s "$@"; }
fkctl() { "$PY" "$fk/fkctl.py" "$tmp/fk" "$@"; }

# Names in the server's own state, sorted, "ns/name" (kubectl prints ns and name columns).
fkctl names virtualmachines | sort >"$tmp/vm.state"
fkctl names virtualmachineinstances | sort >"$tmp/vmi.state"
nvm=$(wc -l <"$tmp/vm.state")
[ "$nvm" -eq 301 ] || fail "expected 301 VMs in state, got $nvm"

# 1. kubectl get vm,vmi -A: server-side Table with KubeVirt's printer columns.
k get vm,vmi -A >"$tmp/get.out" 2>"$tmp/get.err" || { cat "$tmp/get.err" >&2; fail "kubectl get vm,vmi -A"; }
grep -q '^NAMESPACE  *NAME  *AGE  *STATUS  *READY *$' "$tmp/get.out" || fail "VM header: $(head -1 "$tmp/get.out")"
grep -q '^NAMESPACE  *NAME  *AGE  *PHASE  *IP  *NODENAME  *READY *$' "$tmp/get.out" || fail "VMI header missing"
awk '$2 ~ /^virtualmachine\.kubevirt\.io\// {sub("virtualmachine.kubevirt.io/","",$2); print $1 "/" $2}' \
	"$tmp/get.out" | sort >"$tmp/vm.kubectl"
cmp -s "$tmp/vm.state" "$tmp/vm.kubectl" || fail "kubectl get vm -A rows differ from /fake/state"
awk '$2 ~ /^virtualmachineinstance\.kubevirt\.io\// {sub("virtualmachineinstance.kubevirt.io/","",$2); print $1 "/" $2}' \
	"$tmp/get.out" | sort >"$tmp/vmi.kubectl"
cmp -s "$tmp/vmi.state" "$tmp/vmi.kubectl" || fail "kubectl get vmi -A rows differ from /fake/state"
grep -q '^default  *virtualmachine.kubevirt.io/stuck-launcher  .* ErrorUnschedulable  *False' "$tmp/get.out" ||
	fail "stuck-launcher VM row"
grep -q 'virtualmachineinstance.kubevirt.io/stuck-launcher  .* Scheduling ' "$tmp/get.out" || fail "stuck VMI row"
# wide adds KubeVirt's priority-1 columns
k get vmi -A -o wide | head -1 | grep -q 'LIVE-MIGRATABLE  *PAUSED' || fail "vmi -o wide columns"

# 2. launcher pods by label selector; KubeVirt's own pods must not match.
k get pods -A -l kubevirt.io=virt-launcher --no-headers >"$tmp/pods.out"
fkctl state pods >"$tmp/pods.json"
"$PY" -c '
import json, sys
st = json.load(open(sys.argv[1]))
for p in st["pods"]:
    if p["metadata"]["labels"].get("kubevirt.io") == "virt-launcher":
        print("%s/%s" % (p["metadata"]["namespace"], p["metadata"]["name"]))
' "$tmp/pods.json" | sort >"$tmp/pods.expect"
awk '{print $1 "/" $2}' "$tmp/pods.out" | sort >"$tmp/pods.got"
[ -s "$tmp/pods.got" ] || fail "no launcher pods listed"
cmp -s "$tmp/pods.expect" "$tmp/pods.got" || fail "launcher pods differ from state"
grep -q 'virt-handler' "$tmp/pods.got" && fail "label selector let virt-handler through"
grep -q '^default  *virt-launcher-stuck-launcher-[a-z0-9]*  *0/2  *Pending ' "$tmp/pods.out" || fail "stuck launcher pod row"
k get pods -n kubevirt -l 'kubevirt.io!=virt-launcher,kubevirt.io' --no-headers | grep -q virt-handler ||
	fail "!= and exists selectors"

# 3. chunked list: --chunk-size=50 on 301 VMs pages 7 times and loses nothing.
k get vm -A --chunk-size=50 -o name -v=6 >"$tmp/chunk.out" 2>"$tmp/chunk.err"
grep -c '^virtualmachine.kubevirt.io/' "$tmp/chunk.out" | grep -qx 301 || fail "chunked list row count"
# kubectl <= 1.32 logs `GET URL 200 OK in N milliseconds`, 1.33 `"Response" verb="GET" url="URL" status="200 OK"`
pages=$(grep -c 'GET[" ].*virtualmachines?.*limit=50.*[" ]200 OK' "$tmp/chunk.err" || true)
conts=$(grep -c 'GET[" ].*virtualmachines?continue=.*limit=50.*[" ]200 OK' "$tmp/chunk.err" || true)
[ "$pages" -eq 7 ] && [ "$conts" -eq 6 ] || fail "expected 7 pages (6 with continue), got $pages/$conts"
sed 's|.*/||' "$tmp/vm.state" | sort >"$tmp/vm.names"
sed 's|^virtualmachine.kubevirt.io/||' "$tmp/chunk.out" | sort >"$tmp/chunk.names"
cmp -s "$tmp/vm.names" "$tmp/chunk.names" || fail "chunked names differ"

# 4. watch: kubectl get vm -A -w sees a stop issued through the subresource.
fkctl state virtualmachines >"$tmp/vms.json"
vm=$("$PY" -c '
import json, sys
st = json.load(open(sys.argv[1]))
print(next(v["metadata"]["name"] for v in st["virtualmachines"]
           if v["metadata"]["namespace"] == "ns-01" and v["status"]["printableStatus"] == "Running"))
' "$tmp/vms.json")
: >"$tmp/watch.out"
k get vm -A -w >>"$tmp/watch.out" 2>"$tmp/watch.err" &
wpid=$!
pids="$pids $wpid"
deadline=$(($(date +%s) + 20))
until grep -q "^ns-01  *$vm " "$tmp/watch.out"; do
	[ "$(date +%s)" -lt $deadline ] || fail "watch never listed $vm"
	sleep 0.1
done
fkctl action ns-01 "$vm" stop >/dev/null || fail "stop subresource"
until grep -q "^ns-01  *$vm  *[0-9a-z]*  *Stopped  *False" "$tmp/watch.out"; do
	[ "$(date +%s)" -lt $deadline ] || { cat "$tmp/watch.out" >&2; fail "watch did not print $vm Stopped"; }
	sleep 0.1
done
grep -q "^ns-01  *$vm  *[0-9a-z]*  *Stopping " "$tmp/watch.out" || fail "watch missed the Stopping transition"
kill "$wpid" 2>/dev/null || true
# a second stop is a 409 Conflict with KubeVirt's message
fkctl action ns-01 "$vm" stop 2>/dev/null >"$tmp/conflict.out" && fail "second stop accepted"
grep -q '"code":409' "$tmp/conflict.out" && grep -q 'VM is not running' "$tmp/conflict.out" || fail "409 body"
fkctl action ns-01 "$vm" start >/dev/null || fail "start subresource"
fkctl settle 30 >/dev/null || fail "did not settle after start"
# a live migration: kubectl shows the VMIM and the VMI on its new node
node1=$(k get vmi -n ns-01 "$vm" -o jsonpath='{.status.nodeName}')
fkctl action ns-01 "$vm" migrate >/dev/null || fail "migrate subresource"
fkctl settle 30 >/dev/null || fail "did not settle after migrate"
k get vmim -n ns-01 --no-headers | grep -q "^kubevirt-migrate-vm-[a-z0-9]*  *Succeeded  *$vm *$" || fail "kubectl get vmim"
node2=$(k get vmi -n ns-01 "$vm" -o jsonpath='{.status.nodeName}')
[ -n "$node2" ] && [ "$node1" != "$node2" ] || fail "VMI did not move ($node1 -> $node2)"
# kubectl drain as on a cluster: cordon (a strategic merge patch of the Node), then the Eviction API
# (pods/eviction in discovery) on the VM's launcher, evictionStrategy None: the pod is deleted; uncordon
vuid=$(k get vmi -n ns-01 "$vm" -o jsonpath='{.metadata.uid}')
k drain "$node2" --pod-selector="kubevirt.io/created-by=$vuid" --timeout=30s >"$tmp/drain.out" 2>&1 ||
	{ cat "$tmp/drain.out" >&2; fail "kubectl drain"; }
grep -q "^node/$node2 cordoned$" "$tmp/drain.out" && grep -q "^evicting pod ns-01/virt-launcher-$vm-" "$tmp/drain.out" &&
	grep -q "^pod/virt-launcher-$vm-[a-z0-9]* evicted$" "$tmp/drain.out" && grep -q "^node/$node2 drained$" "$tmp/drain.out" ||
	{ cat "$tmp/drain.out" >&2; fail "kubectl drain's output"; }
[ "$(k get node "$node2" -o jsonpath='{.spec.unschedulable}')" = true ] || fail "node not cordoned"
[ "$(k uncordon "$node2")" = "node/$node2 uncordoned" ] || fail "kubectl uncordon"
[ -z "$(k get node "$node2" -o jsonpath='{.spec.unschedulable}')" ] || fail "node still cordoned"
fkctl settle 30 >/dev/null || fail "did not settle after drain"

# 5. -o json equals the server state (names, UIDs, resourceVersions).
for kind in vm vmi pods; do
	case $kind in
	vm) plural=virtualmachines sel="" ;;
	vmi) plural=virtualmachineinstances sel="" ;;
	pods) plural=pods sel="-l kubevirt.io=virt-launcher" ;;
	esac
	# shellcheck disable=SC2086
	k get "$kind" -A $sel -o json >"$tmp/$kind.json" || fail "kubectl get $kind -o json"
	fkctl state "$plural" >"$tmp/$kind.state.json"
	"$PY" -c '
import json, sys
got = json.load(open(sys.argv[1]))["items"]
st = json.load(open(sys.argv[2]))[sys.argv[3]]
if sys.argv[3] == "pods":
    st = [p for p in st if p["metadata"]["labels"].get("kubevirt.io") == "virt-launcher"]
key = lambda o: (o["metadata"]["namespace"], o["metadata"]["name"])
g = {key(o): o for o in got}
s = {key(o): o for o in st}
if g.keys() != s.keys():
    sys.exit("key sets differ: %d vs %d" % (len(g), len(s)))
for k in s:
    if g[k] != s[k]:
        sys.exit("object %s differs" % (k,))
' "$tmp/$kind.json" "$tmp/$kind.state.json" "$plural" || fail "-o json $kind differs from /fake/state"
done

# 5b. kubectl create/patch/delete with KubeVirt's example manifest (OpenAPI v3 lets kubectl
# validate on the server side); the fake controllers start the VM when runStrategy becomes Always.
cat >"$tmp/cirros.yaml" <<'YAML'
apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata:
  name: vm-cirros
  labels:
    kubevirt.io/vm: vm-cirros
spec:
  runStrategy: Halted
  template:
    metadata:
      labels:
        kubevirt.io/vm: vm-cirros
    spec:
      domain:
        devices:
          disks:
          - disk:
              bus: virtio
            name: containerdisk
        memory:
          guest: 128Mi
      volumes:
      - containerDisk:
          image: registry:5000/kubevirt/cirros-container-disk-demo:devel
        name: containerdisk
YAML
k create -n ns-02 -f "$tmp/cirros.yaml" >/dev/null || fail "kubectl create vm"
k get vm -n ns-02 vm-cirros --no-headers | grep -q ' Stopped ' || fail "created VM not Stopped"
k patch vm -n ns-02 vm-cirros --type merge -p '{"spec":{"runStrategy":"Always"}}' >/dev/null || fail "kubectl patch"
deadline=$(($(date +%s) + 20))
until k get vmi -n ns-02 vm-cirros --no-headers 2>/dev/null | grep -q ' Running '; do
	[ "$(date +%s)" -lt $deadline ] || fail "vm-cirros VMI never Running"
	sleep 0.2
done
k get pods -n ns-02 -l kubevirt.io/created-by="$(k get vmi -n ns-02 vm-cirros -o jsonpath='{.metadata.uid}')" --no-headers |
	grep -q '^virt-launcher-vm-cirros-[a-z0-9]*  *2/2  *Running' || fail "vm-cirros launcher pod"
k delete vm -n ns-02 vm-cirros >/dev/null || fail "kubectl delete"
k get vmi -n ns-02 vm-cirros >/dev/null 2>&1 && fail "VMI survived its VM"

# 6. 401 with a wrong token, with the apiserver's message.
if k --token not-the-token get vm -A >"$tmp/401.out" 2>&1; then fail "wrong token accepted"; fi
grep -q 'Unauthorized' "$tmp/401.out" || fail "401 message: $(cat "$tmp/401.out")"

# 7. 403 with the namespace-limited token on -A; its own namespace works.
if k --context fake-ns get vm -A >"$tmp/403.out" 2>&1; then fail "ns token listed cluster-wide"; fi
grep -q 'virtualmachines.kubevirt.io is forbidden: User "system:serviceaccount:ns-00:kvcon-viewer" cannot list resource "virtualmachines" in API group "kubevirt.io" at the cluster scope' \
	"$tmp/403.out" || fail "403 message: $(cat "$tmp/403.out")"
k --context fake-ns get vm --no-headers | grep -c . | grep -qx "$(grep -c '^ns-00/' "$tmp/vm.state")" ||
	fail "ns token in its namespace"
# client certificate auth
k --context fake-cert get vm -n ns-02 --no-headers | grep -q . || fail "client-cert context"

# 8. a cluster without KubeVirt: kubectl knows no vm resource. Plain HTTP needs
# --anonymous: kubectl does not send bearer tokens over http.
"$PY" "$fk/fakekube.py" --dir "$tmp/nokv" --no-kubevirt --insecure-http --anonymous --context-name plain >"$tmp/nokv.log" 2>&1 &
pids="$pids $!"
"$PY" "$fk/fkctl.py" "$tmp/nokv" wait 60 || fail "no-kubevirt fakekube did not start"
if KUBECONFIG="$tmp/nokv/kubeconfig" k get vm >"$tmp/nokv.out" 2>&1; then fail "vm served without KubeVirt"; fi
grep -q 'the server doesn.t have a resource type "vm"' "$tmp/nokv.out" || fail "no-kubevirt message: $(cat "$tmp/nokv.out")"
KUBECONFIG="$tmp/nokv/kubeconfig" k get ns --no-headers | grep -q '^default ' || fail "plain HTTP core API"

echo "PASS: fakekube_kubectl"
