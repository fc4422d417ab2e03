#!/bin/bash
# e2e-lane: cluster
# kvcon get against fakekube over TLS with a bearer token: -o summary (the store's view) equals /fake/state for vm, vmi, pod and event
# (with the `weird` scenario's control characters), table/name output, -w sees a stop made through the
# subresource, 403 on -A falls back to the namespace, 401 / no KubeVirt / unreachable server fail clearly.
# Exit 0 pass, 77 skip, anything else fail.
set -u
# shellcheck source=tests/e2e/lib/fakekube.bash
. "$(dirname "$0")/lib/fakekube.bash"

fk_start --vms 120 --namespaces 3 --seed 11 --scenario weird,stuck-launcher --step 0.05
grep -q 'certificate-authority-data' "$KUBECONFIG" && grep -q 'token:' "$KUBECONFIG" || fail "kubeconfig lacks TLS+token"

# 1. -o summary == server state, every kind
fkctl state >"$tmp/state.json"
for k in vm vmi pod event; do
	"$KVCON" get $k -A -o summary >"$tmp/$k.json" 2>"$tmp/$k.err" || { cat "$tmp/$k.err"; fail "get $k -A -o summary"; }
	"$PY" "$top/tests/e2e/get_compare.py" $k "$tmp/$k.json" "$tmp/state.json" || fail "get $k -o summary differs from /fake/state"
done
# namespace scope (-n) and the context default
"$KVCON" get vm -n ns-01 -o summary >"$tmp/ns.json" || fail "get vm -n"
"$PY" "$top/tests/e2e/get_compare.py" vm "$tmp/ns.json" "$tmp/state.json" ns-01 || fail "get vm -n ns-01 differs"

# 2. table and name output: rows sorted by namespace/name, NAMESPACE column with -A, escaped control characters
"$KVCON" get vm -A >"$tmp/vm.table" || fail "get vm -A table"
head -1 "$tmp/vm.table" | grep -q '^NAMESPACE  *NAME  *AGE  *STATUS  *READY$' || fail "vm header: $(head -1 "$tmp/vm.table")"
tail -n +2 "$tmp/vm.table" | awk '{print $1 "/" $2}' >"$tmp/vm.rows"
LC_ALL=C sort -c "$tmp/vm.rows" 2>/dev/null || LC_ALL=C sort -t/ -k1,1 -k2,2 -c "$tmp/vm.rows" || fail "rows not sorted"
grep -q '^default  *stuck-launcher  .*ErrorUnschedulable  *False$' "$tmp/vm.table" || fail "stuck-launcher row"
LC_ALL=C grep -q "$(printf '\033')" "$tmp/vm.table" && fail "raw ESC reached the table"
grep -q 'esc-\\e\]0;pwned\\x07-vm' "$tmp/vm.table" || fail "escaped weird name missing"
"$KVCON" get event -A >"$tmp/ev.table" || fail "get event"
LC_ALL=C grep -q "$(printf '\033')" "$tmp/ev.table" && fail "raw ESC in events"
LC_ALL=C grep -q "$(printf '\302\233')" "$tmp/ev.table" && fail "raw C1 CSI in events"
LC_ALL=C grep -q "$(printf '\033')" "$tmp/event.json" && fail "raw ESC in event JSON"
"$KVCON" get vmi -A -o name >"$tmp/vmi.names" || fail "get vmi -o name"
[ "$(grep -c '^virtualmachineinstance.kubevirt.io/' "$tmp/vmi.names")" -eq "$("$PY" -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["virtualmachineinstances"]))' "$tmp/state.json")" ] ||
	fail "-o name count"
"$KVCON" get pod -A >"$tmp/pod.table" || fail "get pod"
head -1 "$tmp/pod.table" | grep -q 'AGE  *VMI$' || fail "pod header: $(head -1 "$tmp/pod.table")"
grep -q '^default  *virt-launcher-stuck-launcher-[a-z0-9]*  *0/2  *Pending .* stuck-launcher$' "$tmp/pod.table" || fail "pod VMI column"
"$KVCON" get pod -A -o wide >"$tmp/pod.wide" || fail "get pod wide"
head -1 "$tmp/pod.wide" | grep -q 'IP  *NODE  *NOMINATED NODE  *READINESS GATES$' || fail "pod wide header: $(head -1 "$tmp/pod.wide")"
LC_ALL=C grep -q "$(printf '\033')" "$tmp/pod.wide" && fail "raw ESC in pod wide"
"$KVCON" get vmi -A -o wide | head -1 | grep -q 'LIVE-MIGRATABLE  *PAUSED$' || fail "vmi wide columns"
"$KVCON" get vm -A -l app=web -o summary >"$tmp/web.json" || fail "get -l"
"$PY" -c 'import json,sys; rows=json.load(open(sys.argv[1])); sys.exit(0 if rows and all(r["name"].startswith("web-") for r in rows) else 1)' "$tmp/web.json" || fail "label selector"
"$KVCON" get bogus >/dev/null 2>"$tmp/bogus.err"; [ $? -eq 1 ] || fail "unknown resource must exit 1"
grep -q '^error: the server doesn.t have a resource type "bogus"$' "$tmp/bogus.err" || fail "bogus: $(cat "$tmp/bogus.err")"
"$KVCON" get vm -o yamlx >/dev/null 2>&1; [ $? -eq 1 ] || fail "unknown format must exit 1"

# 3. -w sees a stop made through the subresource
vm=$("$PY" -c '
import json, sys
st = json.load(open(sys.argv[1]))
print(next(v["metadata"]["name"] for v in st["virtualmachines"]
           if v["metadata"]["namespace"] == "ns-01" and v["status"]["printableStatus"] == "Running"))' "$tmp/state.json")
"$KVCON" get vm -n ns-01 -w >"$tmp/watch.out" 2>"$tmp/watch.err" &
wpid=$!
pids="$pids $wpid"
poll 20 grep -q "^$vm " "$tmp/watch.out" || fail "watch never listed $vm"
fkctl action ns-01 "$vm" stop >/dev/null || fail "stop subresource"
poll 20 grep -q "^$vm  *[0-9a-z]*  *Stopped  *False$" "$tmp/watch.out" || { cat "$tmp/watch.out"; fail "watch did not show $vm Stopped"; }
grep -q "^$vm  *[0-9a-z]*  *Stopping " "$tmp/watch.out" || fail "watch missed Stopping"
kill $wpid

# 4. 403 on -A with the namespace token falls back to its namespace, and says so
"$KVCON" --context fake-ns get vm -A -o summary >"$tmp/403.json" 2>"$tmp/403.err" || { cat "$tmp/403.err"; fail "403 fallback exit"; }
grep -q 'forbidden.*showing namespace ns-00' "$tmp/403.err" || fail "403 notice: $(cat "$tmp/403.err")"
"$PY" "$top/tests/e2e/get_compare.py" vm "$tmp/403.json" "$tmp/state.json" ns-00 || fail "403 fallback rows"

# 5. 401: a wrong token, with the API's message, exit 1
sed "s/token: .*/token: wrong-token/" "$KUBECONFIG" >"$tmp/bad.kubeconfig"
KUBECONFIG="$tmp/bad.kubeconfig" "$KVCON" get vm -A >"$tmp/401.out" 2>&1; rc=$?
[ $rc -eq 1 ] || fail "401 exit $rc"
grep -q 'Unauthorized' "$tmp/401.out" || fail "401 message: $(cat "$tmp/401.out")"
grep -q 'wrong-token' "$tmp/401.out" && fail "token printed"

# 6. a server without KubeVirt
"$PY" "$fk/fakekube.py" --dir "$tmp/nokv" --no-kubevirt --context-name plain >"$tmp/nokv.log" 2>&1 &
pids="$pids $!"
"$PY" "$fk/fkctl.py" "$tmp/nokv" wait 60 || fail "no-kubevirt fakekube did not start"
start=$(date +%s)
KUBECONFIG="$tmp/nokv/kubeconfig" timeout 30 "$KVCON" get vm >"$tmp/nokv.out" 2>&1; rc=$?
[ $rc -eq 1 ] || fail "no-kubevirt exit $rc: $(cat "$tmp/nokv.out")"
grep -q "KubeVirt (kubevirt.io/v1) is not served by https://127.0.0.1:" "$tmp/nokv.out" || fail "no-kubevirt message: $(cat "$tmp/nokv.out")"

# 7. an unreachable server: a clear error within a bounded time
port=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
sed "s#server: .*#server: https://127.0.0.1:$port#" "$KUBECONFIG" >"$tmp/down.kubeconfig"
start=$(date +%s)
KUBECONFIG="$tmp/down.kubeconfig" timeout 60 "$KVCON" get vm >"$tmp/down.out" 2>&1; rc=$?
secs=$(($(date +%s) - start))
[ $rc -eq 1 ] || fail "unreachable exit $rc"
grep -q "cannot reach https://127.0.0.1:$port" "$tmp/down.out" || fail "unreachable message: $(cat "$tmp/down.out")"
[ $secs -le 20 ] || fail "unreachable took $secs s"

# 8. a broken kubeconfig names file and line
printf 'apiVersion: v1\nclusters:\n- name: a\n  cluster: [unclosed\n' >"$tmp/broken.yaml"
KUBECONFIG="$tmp/broken.yaml" "$KVCON" get vm >"$tmp/broken.out" 2>&1; rc=$?
[ $rc -eq 1 ] || fail "broken kubeconfig exit $rc"
grep -q "broken.yaml:[0-9]" "$tmp/broken.out" || fail "broken kubeconfig message: $(cat "$tmp/broken.out")"
# 9. exec credential plugin: the first credential is refused (401), kvcon re-runs the plugin once and succeeds;
# a plugin whose credential is always refused ends with the API's message
cat >"$tmp/plugin.sh" <<'PLUGIN'
#!/bin/sh
n=$(( $(cat "$PLUGIN_DIR/runs" 2>/dev/null || echo 0) + 1 ))
echo $n >"$PLUGIN_DIR/runs"
tok=$(cat "$PLUGIN_DIR/fk/token")
if [ $n -eq 1 ] || [ "${ALWAYS_WRONG:-}" = 1 ]; then tok=stale-token; fi
printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"%s","expirationTimestamp":"2999-01-01T00:00:00Z"}}\n' "$tok"
PLUGIN
chmod +x "$tmp/plugin.sh"
"$PY" - "$KUBECONFIG" "$tmp/exec.kubeconfig" <<'PYEOF'
import sys
src = open(sys.argv[1]).read().splitlines()
out = []
for line in src:
    if line.strip().startswith("token:"):
        ind = line[: len(line) - len(line.lstrip())]
        out += [ind + "exec:", ind + "  apiVersion: client.authentication.k8s.io/v1", ind + "  command: ./plugin.sh",
                ind + "  interactiveMode: Never"]
    else:
        out.append(line)
open(sys.argv[2], "w").write("\n".join(out) + "\n")
PYEOF
PLUGIN_DIR=$tmp KUBECONFIG="$tmp/exec.kubeconfig" "$KVCON" get vm -n ns-01 -o name >"$tmp/exec.out" 2>&1 || { cat "$tmp/exec.out"; fail "exec plugin with 401 retry"; }
[ "$(cat "$tmp/runs")" -eq 2 ] || fail "exec plugin ran $(cat "$tmp/runs") times, want 2"
grep -q '^virtualmachine.kubevirt.io/' "$tmp/exec.out" || fail "exec plugin listing"
rm -f "$tmp/runs"
ALWAYS_WRONG=1 PLUGIN_DIR=$tmp KUBECONFIG="$tmp/exec.kubeconfig" "$KVCON" get vm -n ns-01 >"$tmp/exec2.out" 2>&1; rc=$?
[ $rc -eq 1 ] || fail "always-wrong exec credential exit $rc"
grep -q 'Unauthorized' "$tmp/exec2.out" || fail "exec 401 message: $(cat "$tmp/exec2.out")"
grep -q 'stale-token' "$tmp/exec2.out" && fail "token printed"
echo "PASS: get_basic"
