#!/bin/bash
# `kvcon engine serve`: the engine as a single-host KubeVirt, driven by the REAL kubectl through the kubeconfig
# the service writes (HTTPS on 127.0.0.1, its own CA and bearer token), and by curl on its unix socket. A real
# TCG guest on the embedded driver: apply, get -o wide, wait for Running, the launcher pod's owner, events, a watch
# that sees a restart (KubeVirt's subresource over the unix socket), apply of a change, paging, 401 without the
# token, 422 for a bad manifest, delete; the KubeVirt CR (kubevirt/kubevirt): Deployed, read-only, Degraded with an
# unreadable record.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/engine-lib.bash"

engine_needs "the embedded libvirt driver runs guests under its own account only as root" kubectl curl
engine_embed_up kvs
export HOME=$ENGINE_T/home # kubectl's discovery cache, private to the test
mkdir -p "$HOME"
SOCK=$ENGINE_T/api.sock
SRV=
stop_srv() {
    [[ -n $SRV ]] && kill -TERM "$SRV" 2>/dev/null && wait "$SRV" 2>/dev/null || true
    SRV=
}
trap 'stop_srv; engine_embed_cleanup' EXIT

step "serve: unix socket and HTTPS, kubeconfig written"
export KVCON_ENGINE_WATCH_HISTORY=16 # a short watch history (the service default is 4096): 410 within the test
"$KV" -c "$URI" engine serve --socket "$SOCK" --https 0 >"$ENGINE_T/serve.out" 2>"$ENGINE_T/serve.err" &
SRV=$!
wait_eq 120 "engine serving" tail -n1 "$ENGINE_T/serve.out" || { cat "$ENGINE_T/serve.err"; fail "serve did not start"; }
grep -qx "socket: $SOCK" "$ENGINE_T/serve.out" || fail "socket path not printed"
# kvcon exec'd the engine's own executable in its place (same pid), with kvcon's command line
[[ $(readlink "/proc/$SRV/exe") == "$(dirname "$(readlink -f "$KV")")/kvcon-engine" ]] ||
    fail "the service runs $(readlink "/proc/$SRV/exe"), not the kvcon-engine beside kvcon"
[[ $(tr '\0' ' ' <"/proc/$SRV/cmdline") == *" -c $URI engine serve --socket $SOCK --https 0 " ]] ||
    fail "the service's command line: $(tr '\0' ' ' <"/proc/$SRV/cmdline")"
KCFG=$(sed -n 's/^kubeconfig: //p' "$ENGINE_T/serve.out")
PORT=$(sed -n 's|^https: https://127.0.0.1:||p' "$ENGINE_T/serve.out")
[[ $KCFG == "$XDG_STATE_HOME"/kvcon/engine-kubeconfig && -f $KCFG && $PORT -gt 0 ]] || fail "kubeconfig/port: $KCFG $PORT"
[[ $(stat -c %a "$SOCK") == 600 ]] || fail "socket mode $(stat -c %a "$SOCK")"
[[ $(stat -c %a "$KCFG") == 600 ]] || fail "kubeconfig mode $(stat -c %a "$KCFG")"
TOKEN=$(awk '/token:/ {print $2}' "$KCFG")
[[ ${#TOKEN} == 64 ]] || fail "no token in the kubeconfig"
export KUBECONFIG=$KCFG
[[ $(kubectl config current-context) == kvcon-engine ]] || fail "context name"
k() { kubectl --request-timeout=60s "$@"; }

step "401 without the token (or with a wrong one); 200 with it, the server's certificate checked against the CA"
code=$(curl -sk -o "$ENGINE_T/401.json" -w '%{http_code}' "https://127.0.0.1:$PORT/api/v1/pods")
[[ $code == 401 && $(jq -r '.kind + " " + .reason' "$ENGINE_T/401.json") == "Status Unauthorized" ]] ||
    fail "no token: $code $(cat "$ENGINE_T/401.json")"
code=$(curl -sk -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $(tr 0-9a-f 1-9a-f0 <<<"$TOKEN")" "https://127.0.0.1:$PORT/api/v1/pods")
[[ $code == 401 ]] || fail "wrong token: $code"
awk '/certificate-authority-data:/ {print $2}' "$KCFG" | base64 -d >"$ENGINE_T/ca.crt"
code=$(curl -s --cacert "$ENGINE_T/ca.crt" -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $TOKEN" \
    "https://127.0.0.1:$PORT/apis/kubevirt.io/v1/virtualmachines")
[[ $code == 200 ]] || fail "with the token: $code"
head -c 5000000 /dev/zero >"$ENGINE_T/big"
code=$(curl -sk -o /dev/null -w '%{http_code}' -X POST --data-binary @"$ENGINE_T/big" "https://127.0.0.1:$PORT/api/v1/namespaces")
[[ $code == 401 ]] || fail "a big body without the token: $code"
code=$(curl -s --unix-socket "$SOCK" -o /dev/null -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
    --data-binary @"$ENGINE_T/big" "http://engine/api/v1/namespaces")
[[ $code == 413 ]] || fail "a body over 4 MiB: $code"

step "1,500 idle connections without a byte and 2 dripping a request head (a local user): the token still gets in; the server closes them in 10 s"
rm -f "$ENGINE_T/held"
(ulimit -n 4096 && exec python3 "$HERE/holdconns.py" "$PORT" 1500 "$ENGINE_T/held" 30 2) >"$ENGINE_T/hold.out" 2>&1 &
HOLD=$!
wait_eq 30 "held 1500" cat "$ENGINE_T/held" || fail "the connections: $(cat "$ENGINE_T/hold.out")"
got=$(curl -s --max-time 10 --cacert "$ENGINE_T/ca.crt" -o /dev/null -w '%{http_code} %{time_total}' \
    -H "Authorization: Bearer $TOKEN" "https://127.0.0.1:$PORT/healthz") || true
[[ ${got%% *} == 200 ]] || fail "healthz under 1,500 idle connections: $got"
echo "   healthz under 1,500 idle connections: ${got#* } s"
wait "$HOLD" || fail "idle connections left open: $(cat "$ENGINE_T/hold.out")"
read -r _ _ _ secs _ <"$ENGINE_T/hold.out"
echo "   $(cat "$ENGINE_T/hold.out")"
((${secs%.*} < 15)) || fail "the idle connections were closed only after $secs s" # 10 s, the 1 s tick, load

step "kubectl apply -f vm.yaml"
m=$(engine_manifest "$ENGINE_T/demo.yaml" demo Always 192Mi)
out=$(k apply -f "$m")
[[ $out == "virtualmachine.kubevirt.io/demo created" ]] || fail "apply: $out"

step "kubectl wait for Running; kubectl get vm,vmi,pods -o wide"
k wait --for=jsonpath='{.status.phase}'=Running vmi/demo --timeout=120s || fail "kubectl wait"
k get vm,vmi,pods -o wide >"$ENGINE_T/get.out" || fail "kubectl get -o wide"
cat "$ENGINE_T/get.out"
grep -Eq '^virtualmachine.kubevirt.io/demo +[0-9a-z]+ +Running +True' "$ENGINE_T/get.out" || fail "vm row"
grep -q 'LIVE-MIGRATABLE' "$ENGINE_T/get.out" || fail "no wide VMI columns"
grep -Eq '^virtualmachineinstance.kubevirt.io/demo +[0-9a-z]+ +Running ' "$ENGINE_T/get.out" || fail "vmi row"
grep -Eq '^pod/virt-launcher-demo-[0-9a-f]{5} +1/1 +Running ' "$ENGINE_T/get.out" || fail "pod row"

k get vm -A --no-headers | grep -Eq '^default +demo +[0-9a-z]+ +Running +True' || fail "get vm -A"
k get nodes --no-headers | grep -Eq '^[^ ]+ +Ready ' || fail "the host as a Ready node"

step "the KubeVirt CR (kubevirt/kubevirt): discovery, get -A, Table columns, status, watch; writes refused"
k api-resources >"$ENGINE_T/res.out" || fail "kubectl api-resources"
grep -Eq '^kubevirts +kv,kvs +kubevirt.io/v1 +true +KubeVirt$' "$ENGINE_T/res.out" ||
    fail "api-resources: $(grep -i kubevirt "$ENGINE_T/res.out")"
k -n kubevirt wait kv kubevirt --for condition=Available --timeout=120s >/dev/null || fail "kubevirt not Available"
k get kubevirt -A >"$ENGINE_T/kv.out" || fail "kubectl get kubevirt -A"
cat "$ENGINE_T/kv.out"
head -n1 "$ENGINE_T/kv.out" | grep -Eq '^NAMESPACE +NAME +AGE +PHASE$' || fail "kubevirt columns: $(head -n1 "$ENGINE_T/kv.out")"
grep -Eq '^kubevirt +kubevirt +[0-9a-z]+ +Deployed$' "$ENGINE_T/kv.out" || fail "kubevirt row"
[[ $(wc -l <"$ENGINE_T/kv.out") == 2 ]] || fail "more than one KubeVirt"
VER=$("$KV" version --client | sed -n 's/^Client Version: //p')
got=$(k get kv -n kubevirt kubevirt -o jsonpath='{.status.phase} {.status.observedKubeVirtVersion} {.status.conditions[?(@.type=="Available")].status}{.status.conditions[?(@.type=="Progressing")].status}{.status.conditions[?(@.type=="Degraded")].status}{.status.conditions[?(@.type=="RecordsReadable")].status}')
[[ $got == "Deployed $VER TrueFalseFalseTrue" ]] || fail "kubevirt status: '$got' (kvcon $VER)"
k get ns kubevirt -o jsonpath='{.status.phase}' | grep -qx Active || fail "no kubevirt namespace"
# a watch from now: the CR as ADDED, nothing else (the status does not change)
curl -sf --max-time 30 --unix-socket "$SOCK" \
    "http://engine/apis/kubevirt.io/v1/kubevirts?watch=1&timeoutSeconds=2" >"$ENGINE_T/kvwatch.out" || fail "kubevirt watch"
[[ $(jq -r '.type + " " + .object.kind + " " + .object.metadata.namespace + "/" + .object.metadata.name' \
    "$ENGINE_T/kvwatch.out") == "ADDED KubeVirt kubevirt/kubevirt" ]] || fail "kubevirt watch: $(cat "$ENGINE_T/kvwatch.out")"
rc=0
k -n kubevirt delete kv kubevirt >"$ENGINE_T/kvdel.out" 2>&1 || rc=$?
[[ $rc == 1 ]] && grep -q 'MethodNotAllowed' "$ENGINE_T/kvdel.out" || fail "delete kv: exit $rc $(cat "$ENGINE_T/kvdel.out")"
code=$(curl -s --unix-socket "$SOCK" -o "$ENGINE_T/kvpatch.json" -w '%{http_code}' -X PATCH \
    -H 'Content-Type: application/merge-patch+json' -d '{"spec":{"imagePullPolicy":"Always"}}' \
    "http://engine/apis/kubevirt.io/v1/namespaces/kubevirt/kubevirts/kubevirt")
[[ $code == 405 && $(jq -r .reason "$ENGINE_T/kvpatch.json") == MethodNotAllowed ]] || fail "patch kv: $code"
[[ $(k get kv -n kubevirt kubevirt -o jsonpath='{.spec.imagePullPolicy}') == IfNotPresent ]] || fail "the patch changed it"

step "the launcher pod's owner is the VMI (its UID)"
VMI1=$(k get vmi demo -o jsonpath='{.metadata.uid}')
owner=$(k get pods -l kubevirt.io=virt-launcher -o custom-columns=NAME:.metadata.name,OWNER:.metadata.ownerReferences[0].uid --no-headers)
[[ $owner == virt-launcher-demo-*" $VMI1" ]] || fail "owner: '$owner' vs VMI $VMI1"
[[ $(k get pods -l kubevirt.io/created-by="$VMI1" -o name) == pod/virt-launcher-demo-* ]] || fail "created-by label"
[[ -z $(k get pods -l 'kubevirt.io notin (virt-launcher)' -o name) ]] || fail "notin selector"

step "kubectl get events --sort-by=.metadata.creationTimestamp"
k get events --sort-by=.metadata.creationTimestamp >"$ENGINE_T/events.out" || fail "get events"
grep -q 'Started' "$ENGINE_T/events.out" || fail "no Started event: $(cat "$ENGINE_T/events.out")"

step "paging over the unix socket: limit=1 and continue"
curl -sf --unix-socket "$SOCK" "http://engine/api/v1/namespaces/default/events?limit=1" >"$ENGINE_T/p1.json"
[[ $(jq '.items | length' "$ENGINE_T/p1.json") == 1 ]] || fail "page 1"
cont=$(jq -r '.metadata.continue' "$ENGINE_T/p1.json")
[[ -n $cont && $cont != null ]] || fail "no continue token"
curl -sf --unix-socket "$SOCK" "http://engine/api/v1/namespaces/default/events?limit=100&continue=$cont" >"$ENGINE_T/p2.json"
n=$(curl -sf --unix-socket "$SOCK" "http://engine/api/v1/events" | jq '.items | length')
[[ $(jq '.items | length' "$ENGINE_T/p2.json") == $((n - 1)) ]] || fail "page 2 is not the rest of $n"
[[ $(jq -r '.items[0].metadata.name' "$ENGINE_T/p1.json") != $(jq -r '.items[0].metadata.name' "$ENGINE_T/p2.json") ]] ||
    fail "page 2 repeats page 1"

step "a raw watch over the unix socket: from a resourceVersion, with bookmarks, ending at timeoutSeconds"
RV0=$(curl -sf --unix-socket "$SOCK" "http://engine/apis/kubevirt.io/v1/namespaces/default/virtualmachines" |
    jq -r .metadata.resourceVersion)
[[ $RV0 -gt 0 ]] || fail "list resourceVersion: $RV0"
curl -sN --max-time 60 --unix-socket "$SOCK" -o "$ENGINE_T/rawwatch.out" \
    "http://engine/apis/kubevirt.io/v1/namespaces/default/virtualmachines?watch=1&resourceVersion=$RV0&allowWatchBookmarks=true&timeoutSeconds=14&fieldSelector=metadata.name%3Ddemo" &
RAWW=$!

step "kubectl get vm -w sees a restart (the subresource, over the unix socket)"
k get vm -w >"$ENGINE_T/watch.out" 2>&1 &
WP=$!
wait_eq 30 1 grep -c '^demo ' "$ENGINE_T/watch.out" || fail "the watch did not list demo"
code=$(curl -s --unix-socket "$SOCK" -X PUT -o /dev/null -w '%{http_code}' \
    "http://engine/apis/subresources.kubevirt.io/v1/namespaces/default/virtualmachines/demo/restart")
[[ $code == 202 ]] || fail "restart: $code"
until=$(($(date +%s) + 60))
while ! grep -Eq '^demo +[0-9a-z]+ +(Stopping|Stopped|Starting)' "$ENGINE_T/watch.out" && (($(date +%s) < until)); do
    sleep 0.2
done
kill $WP 2>/dev/null || true
wait $WP 2>/dev/null || true
cat "$ENGINE_T/watch.out"
grep -Eq '^demo +[0-9a-z]+ +(Stopping|Stopped|Starting)' "$ENGINE_T/watch.out" || fail "the watch saw no change"
# a new execution: another VMI UID, Running
until=$(($(date +%s) + 120))
VMI2=
while (($(date +%s) < until)); do
    got=$(k get vmi demo -o jsonpath='{.metadata.uid} {.status.phase}' 2>/dev/null || true)
    [[ $got == *" Running" && $got != "$VMI1 "* ]] && VMI2=${got% *} && break
    sleep 0.3
done
[[ -n $VMI2 && $VMI2 != "$VMI1" ]] || fail "restart kept the VMI uid"

step "the raw watch: MODIFIED events of demo, a BOOKMARK, ended by timeoutSeconds; 410 from before the history"
rc=0
wait $RAWW || rc=$?
[[ $rc == 0 ]] || fail "raw watch exit $rc"
jq -e -s 'map(select(.type == "MODIFIED" and .object.metadata.name == "demo")) | length > 0' "$ENGINE_T/rawwatch.out" \
    >/dev/null || fail "no MODIFIED of demo: $(head -c 300 "$ENGINE_T/rawwatch.out")"
jq -e -s 'map(select(.type == "BOOKMARK")) | length > 0' "$ENGINE_T/rawwatch.out" >/dev/null || fail "no BOOKMARK"
jq -e -s 'map(select(.type != "BOOKMARK") | .object.metadata.resourceVersion | tonumber) | . == sort and (.[0] > '"$RV0"')' \
    "$ENGINE_T/rawwatch.out" >/dev/null || fail "resourceVersions not increasing after $RV0"
code=$(curl -s --max-time 10 --unix-socket "$SOCK" -o "$ENGINE_T/410.json" -w '%{http_code}' \
    "http://engine/api/v1/namespaces/default/events?watch=1&resourceVersion=1")
[[ $code == 410 && $(jq -r .reason "$ENGINE_T/410.json") == Expired ]] || fail "too old a watch: $code"

step "kubectl apply of a change: configured, generation 2, last-applied kept"
sed 's/guest: 192Mi/guest: 256Mi/' "$m" >"$ENGINE_T/demo2.yaml"
out=$(k apply -f "$ENGINE_T/demo2.yaml")
[[ $out == "virtualmachine.kubevirt.io/demo configured" ]] || fail "re-apply: $out"
[[ $(k get vm demo -o jsonpath='{.spec.template.spec.domain.memory.guest} {.metadata.generation}') == "256Mi 2" ]] ||
    fail "the change was not stored"
k get vm demo -o jsonpath='{.metadata.annotations.kubectl\.kubernetes\.io/last-applied-configuration}' | grep -q 256Mi ||
    fail "last-applied annotation"
out=$(k apply -f "$ENGINE_T/demo2.yaml")
[[ $out == "virtualmachine.kubevirt.io/demo unchanged" ]] || fail "unchanged: $out"
sed 's/guest: 192Mi/guest: 320Mi/' "$m" >"$ENGINE_T/demo3.yaml"
out=$(k apply --dry-run=server -f "$ENGINE_T/demo3.yaml")
[[ $out == "virtualmachine.kubevirt.io/demo configured (server dry run)" ]] || fail "dry run: $out"
[[ $(k get vm demo -o jsonpath='{.spec.template.spec.domain.memory.guest} {.metadata.generation}') == "256Mi 2" ]] ||
    fail "a server dry run changed the VM"
k delete vm demo --dry-run=server >/dev/null || fail "delete dry run"
[[ $(k get vm demo -o jsonpath='{.metadata.deletionTimestamp}/{.status.printableStatus}') == /Running ]] ||
    fail "a delete dry run touched the VM"

step "namespaces: create, use, refuse an unknown one, delete; kubectl describe (events by involvedObject)"
k create namespace kvlab >/dev/null || fail "create namespace"
[[ $(k get ns kvlab -o jsonpath='{.status.phase}') == Active ]] || fail "kvlab not Active"
rc=0
k create namespace kvlab >/dev/null 2>&1 || rc=$?
[[ $rc == 1 ]] || fail "a second create namespace kvlab exit $rc"
sed 's/name: demo/name: other/' "$m" >"$ENGINE_T/other.yaml"
rc=0
k -n nosuch apply -f "$ENGINE_T/other.yaml" >"$ENGINE_T/nons.out" 2>&1 || rc=$?
[[ $rc == 1 ]] && grep -q 'namespaces "nosuch" not found' "$ENGINE_T/nons.out" || fail "unknown namespace: $(cat "$ENGINE_T/nons.out")"
k -n kvlab get vm 2>&1 | grep -q 'No resources found in kvlab namespace' || fail "kvlab not empty"
k delete namespace kvlab >/dev/null || fail "delete namespace"
k describe vmi demo >"$ENGINE_T/describe.out" || fail "kubectl describe vmi"
grep -q '^Events:' "$ENGINE_T/describe.out" && grep -Eq 'Normal +Started' "$ENGINE_T/describe.out" ||
    fail "describe shows no events: $(tail -5 "$ENGINE_T/describe.out")"

step "a bad manifest: 422, exit 1, nothing stored"
sed -e 's/name: demo/name: bad/' -e 's/runStrategy: Always/runStrategy: Sometimes/' "$m" >"$ENGINE_T/bad.yaml"
rc=0
k apply -f "$ENGINE_T/bad.yaml" >"$ENGINE_T/bad.out" 2>&1 || rc=$?
[[ $rc == 1 ]] || fail "bad manifest exit $rc"
grep -q 'The VirtualMachine "bad" is invalid: spec.runStrategy' "$ENGINE_T/bad.out" || fail "bad: $(cat "$ENGINE_T/bad.out")"
code=$(curl -s --unix-socket "$SOCK" -o "$ENGINE_T/422.json" -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
    -d '{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachine","metadata":{"name":"bad"},"spec":{"runStrategy":"Sometimes"}}' \
    "http://engine/apis/kubevirt.io/v1/namespaces/default/virtualmachines")
[[ $code == 422 && $(jq -r .reason "$ENGINE_T/422.json") == Invalid ]] || fail "POST bad: $code"
rc=0
k get vm bad >/dev/null 2>&1 || rc=$?
[[ $rc == 1 ]] || fail "bad was stored"
code=$(curl -s --unix-socket "$SOCK" -o /dev/null -w '%{http_code}' "http://engine/apis/kubevirt.io/v1/namespaces/default/virtualmachines/Bad_Name")
[[ $code == 400 ]] || fail "invalid name in the path: $code"

step "the serial console as KubeVirt's WebSocket (wss, token, plain.kubevirt.io): a command and its output"
PY=/usr/bin/python3
[[ -x $PY ]] || PY=python3
timeout 120 "$PY" "$HERE/lib/wsconsole.py" \
    "wss://127.0.0.1:$PORT/apis/subresources.kubevirt.io/v1/namespaces/default/virtualmachineinstances/demo/console" \
    "$ENGINE_T/ca.crt" "$TOKEN" >"$ENGINE_T/ws.out" 2>&1 || { cat "$ENGINE_T/ws.out"; fail "console WebSocket"; }
grep -qx 'console ok' "$ENGINE_T/ws.out" || fail "console WebSocket: $(cat "$ENGINE_T/ws.out")"

step "kvcon's own kube provider against the service: get, the VNC WebSocket (a screenshot), stop --wait, start --wait"
kvk() { "$KV" --no-engine --kubeconfig "$KCFG" "$@"; }
kvk get vm | grep -Eq '^demo +[0-9a-z]+ +Running +True' || fail "kvcon get vm: $(kvk get vm 2>&1)"
# the guest's screen keeps changing (never still for 500 ms): the latest frame after 5 s is the one checked
kvk vnc default/demo --screenshot "$ENGINE_T/screen.png" --quiet-ms 500 --timeout 5 >"$ENGINE_T/vnc.json" ||
    fail "kvcon vnc through the service"
[[ $(jq -r '.width > 0 and .updates > 0' "$ENGINE_T/vnc.json") == true ]] || fail "vnc: $(cat "$ENGINE_T/vnc.json")"
[[ $(head -c 8 "$ENGINE_T/screen.png" | od -An -tx1 | tr -d ' \n') == 89504e470d0a1a0a ]] || fail "not a PNG"
kvk stop default/demo --wait=90 >/dev/null || fail "kvcon stop"
[[ $(k get vm demo -o jsonpath='{.status.printableStatus} {.spec.runStrategy}') == "Stopped Halted" ]] || fail "not stopped"
kvk start default/demo --wait=90 >/dev/null || fail "kvcon start"
k wait --for=jsonpath='{.status.phase}'=Running vmi/demo --timeout=120s || fail "not Running after kvcon start"

step "kubectl delete vm demo: gone, no QEMU left"
k delete vm demo --timeout=90s || fail "kubectl delete"
rc=0
k get vm demo >/dev/null 2>&1 || rc=$?
[[ $rc == 1 ]] || fail "demo still there"
[[ $(qemu_count demo) == 0 ]] || fail "QEMU of demo still running"

step "the token never reaches the service's output or log"
! grep -rqF "$TOKEN" "$ENGINE_T/serve.out" "$ENGINE_T/serve.err" "$XDG_STATE_HOME/kvcon/kvcon.log" 2>/dev/null ||
    fail "the token was logged"

step "SIGTERM: the service leaves (exit 0) and removes its socket"
kill -0 "$SRV" 2>/dev/null || fail "the service died: $(tail -5 "$ENGINE_T/serve.err")"
kill -TERM "$SRV"
rc=0
wait "$SRV" || rc=$?
SRV=
[[ $rc == 0 ]] || fail "the service exited $rc: $(tail -5 "$ENGINE_T/serve.err")"
! grep -Eq 'error|Sanitizer|runtime error' "$ENGINE_T/serve.err" || { cat "$ENGINE_T/serve.err"; fail "errors on stderr"; }
[[ ! -e $SOCK ]] || fail "socket left behind"

step "an unreadable record: the KubeVirt CR says Degraded and names the file (phase Deployed, Available)"
vms=$(ls -d "$XDG_STATE_HOME"/kvcon/engine-data/hosts/*/vms | head -n1)
[[ -d $vms ]] || fail "no records directory"
echo '{"name": "broken", truncated' >"$vms/default_broken.json"
"$KV" -c "$URI" engine serve --socket "$SOCK" --https 0 >"$ENGINE_T/serve2.out" 2>"$ENGINE_T/serve2.err" &
SRV=$!
wait_eq 120 "engine serving" tail -n1 "$ENGINE_T/serve2.out" || { cat "$ENGINE_T/serve2.err"; fail "serve did not restart"; }
k -n kubevirt wait kv kubevirt --for condition=Degraded --timeout=60s >/dev/null || fail "kubevirt not Degraded"
got=$(k get kv -n kubevirt kubevirt -o jsonpath='{.status.phase} {.status.conditions[?(@.type=="Available")].status} {.status.conditions[?(@.type=="Degraded")].reason} {.status.conditions[?(@.type=="RecordsReadable")].status}')
[[ $got == "Deployed True RecordUnreadable False" ]] || fail "degraded status: $got"
k get kv -n kubevirt kubevirt -o jsonpath='{.status.conditions[?(@.type=="Degraded")].message}' |
    grep -q 'default_broken.json' || fail "the Degraded message does not name the file"
k get kubevirt -A --no-headers | grep -Eq '^kubevirt +kubevirt +[0-9a-z]+ +Deployed$' || fail "kubevirt row (degraded)"
stop_srv

step "connections without the token are no clients: the service still leaves after --idle-exit 2"
"$KV" -c "$URI" engine serve --socket "$SOCK" --https 0 --idle-exit 2 >"$ENGINE_T/serve3.out" 2>"$ENGINE_T/serve3.err" &
SRV=$!
wait_eq 120 "engine serving" tail -n1 "$ENGINE_T/serve3.out" || { cat "$ENGINE_T/serve3.err"; fail "serve did not restart"; }
PORT=$(sed -n 's|^https: https://127.0.0.1:||p' "$ENGINE_T/serve3.out")
rm -f "$ENGINE_T/held"
python3 "$HERE/holdconns.py" "$PORT" 50 "$ENGINE_T/held" 30 >"$ENGINE_T/hold.out" 2>&1 &
HOLD=$!
wait_eq 30 "held 50" cat "$ENGINE_T/held" || fail "the connections: $(cat "$ENGINE_T/hold.out")"
t0=$SECONDS
while kill -0 "$SRV" 2>/dev/null && ((SECONDS - t0 < 8)); do sleep 0.2; done
kill -0 "$SRV" 2>/dev/null && fail "the service stays with 50 connections without the token: $(tail -3 "$ENGINE_T/serve3.out")"
wait "$SRV" || fail "the idle service exited $?"
SRV=
grep -q 'idle for 2 s with nothing to reconcile: exiting' "$ENGINE_T/serve3.out" || fail "no idle exit: $(cat "$ENGINE_T/serve3.out")"
wait "$HOLD" || fail "connections left open: $(cat "$ENGINE_T/hold.out")"
echo PASS
