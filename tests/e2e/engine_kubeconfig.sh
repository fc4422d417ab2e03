#!/bin/bash
# kubectl without a restart (issue 27): the service started on demand serves HTTPS with its token by default, on a
# port chosen once and recorded, so `kubectl --kubeconfig <(kvcon engine kubeconfig)` works against it (no `engine
# serve --https`), the same kubeconfig still works after the service left and another was started, `--merge` puts
# context kvcon-engine into ~/.kube/config beside the user's own contexts (0600, nothing else changed), and an
# explicit `engine serve --https 0` takes the root over from the service started on demand instead of refusing.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/engine-lib.bash"

engine_needs "the embedded libvirt driver runs guests under its own account only as root" kubectl jq curl
engine_embed_up kvk
export HOME=$ENGINE_T/home # kubectl's cache and ~/.kube/config, private to the test
mkdir -p "$HOME"
unset KUBECONFIG KVCON_ENGINE_SERVICE KVCON_ENGINE_API_PORT
SRV=
trap '[[ -n $SRV ]] && kill -TERM "$SRV" 2>/dev/null; engine_embed_cleanup' EXIT
svc_pid() { cat "$XDG_STATE_HOME"/kvcon/engine-*.sock.pid 2>/dev/null; }
# Google Cloud SDK's kubectl is a dispatcher that reads the kubeconfig before it runs the real one, which then
# finds a pipe (<(...)) empty: the real binary of the same version beside it, when there is one
KCTL=kubectl
d=$(dirname "$(readlink -f "$(command -v kubectl)")")
minor=$(kubectl version --client -o json 2>/dev/null | jq -r '.clientVersion.minor // "" | rtrimstr("+")')
[[ -x $d/kubectl.1.$minor ]] && KCTL=$d/kubectl.1.$minor
k() { "$KCTL" --request-timeout=30s "$@"; }

step "kvcon engine kubeconfig starts the service on demand; the real kubectl reaches it over HTTPS"
kv engine kubeconfig >"$ENGINE_T/kc1" || fail "engine kubeconfig: $(cat "$ENGINE_T/kc1")"
pid=$(svc_pid)
tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -- ' engine serve --socket .* --on-demand' ||
    fail "the service is not the one started on demand: $(tr '\0' ' ' <"/proc/$pid/cmdline")"
PORT=$(sed -n 's|^    server: https://127.0.0.1:\([0-9]*\)$|\1|p' "$ENGINE_T/kc1")
[[ -n $PORT ]] && grep -q '^current-context: kvcon-engine$' "$ENGINE_T/kc1" || fail "kubeconfig: $(sed 's/token: .*/token: .../' "$ENGINE_T/kc1")"
out=$(k --kubeconfig <(kv engine kubeconfig) get vm 2>&1) || fail "kubectl get vm: $out"
[[ $out == "No resources found in default namespace." ]] || fail "kubectl get vm said: $out"
engine_manifest "$ENGINE_T/halted.yaml" halted Halted 160Mi >/dev/null
out=$(k --kubeconfig "$ENGINE_T/kc1" apply -f "$ENGINE_T/halted.yaml" 2>&1) || fail "kubectl apply: $out"
[[ $out == "virtualmachine.kubevirt.io/halted created" ]] || fail "kubectl apply said: $out"
k --kubeconfig "$ENGINE_T/kc1" get vm halted -o jsonpath='{.spec.runStrategy}' | grep -qx Halted || fail "get vm halted"
code=$(curl -sk -o /dev/null -w '%{http_code}' "https://127.0.0.1:$PORT/api/v1/pods")
[[ $code == 401 ]] || fail "no token: $code"

step "the port is kept: the service leaves, the next kvcon starts another, the first kubeconfig still works"
kill -TERM "$pid"
for _ in $(seq 1 300); do pid_alive "$pid" || break; sleep 0.1; done
! pid_alive "$pid" || fail "the service did not leave on SIGTERM"
kv get vm >/dev/null || fail "kvcon get vm after the service left"
pid2=$(svc_pid)
[[ -n $pid2 && $pid2 != "$pid" ]] || fail "no new service ($pid2)"
kv engine kubeconfig | cmp -s - "$ENGINE_T/kc1" || fail "another kubeconfig after the restart"
out=$(k --kubeconfig "$ENGINE_T/kc1" get vm -o name 2>&1) || fail "kubectl after the restart: $out"
[[ $out == "virtualmachine.kubevirt.io/halted" ]] || fail "kubectl after the restart said: $out"

step "--merge: context kvcon-engine beside the user's own, 0600, their current context kept"
mkdir -p "$HOME/.kube"
cat >"$HOME/.kube/config" <<'EOF'
apiVersion: v1
kind: Config
clusters:
- name: other
  cluster:
    server: https://192.0.2.1:6443
users:
- name: other
  user:
    token: abc
contexts:
- name: other
  context:
    cluster: other
    user: other
current-context: other
EOF
chmod 644 "$HOME/.kube/config"
out=$(kv engine kubeconfig --merge) || fail "--merge: $out"
[[ $out == "context \"kvcon-engine\" (https://127.0.0.1:$PORT) merged into $HOME/.kube/config" ]] || fail "--merge said: $out"
[[ $(stat -c %a "$HOME/.kube/config") == 600 ]] || fail "mode $(stat -c %a "$HOME/.kube/config")"
[[ $(k config get-contexts -o name | sort | tr '\n' ' ') == "kvcon-engine other " ]] || fail "contexts: $(k config get-contexts -o name)"
[[ $(k config current-context) == other ]] || fail "current context $(k config current-context)"
[[ $(k config view -o jsonpath='{.clusters[?(@.name=="other")].cluster.server}') == https://192.0.2.1:6443 ]] ||
    fail "the other cluster changed: $(k config view)"
out=$(k --context kvcon-engine get vm -o name 2>&1) || fail "kubectl --context kvcon-engine: $out"
[[ $out == "virtualmachine.kubevirt.io/halted" ]] || fail "kubectl --context kvcon-engine said: $out"
kv engine kubeconfig --merge >/dev/null || fail "a second --merge"
[[ $(k config view -o json | jq '[.contexts[] | select(.name == "kvcon-engine")] | length') == 1 ]] ||
    fail "a second --merge added a second entry"
ln -s "$HOME/.kube/config" "$HOME/link"
if KUBECONFIG=$HOME/link kv engine kubeconfig --merge >"$ENGINE_T/link.out" 2>&1; then fail "merged through a symlink"; fi
[[ -L $HOME/link ]] || fail "the symlink was replaced"

step "engine serve --https 0 takes the root over from the service started on demand"
"$KV" -c "$URI" engine serve --https 0 >"$ENGINE_T/serve.out" 2>"$ENGINE_T/serve.err" &
SRV=$!
wait_eq 120 "engine serving" tail -n1 "$ENGINE_T/serve.out" ||
    fail "serve did not start: $(cat "$ENGINE_T/serve.err")"
grep -q "the service started on demand (pid $pid2) leaves for this one" "$ENGINE_T/serve.err" ||
    fail "serve.err: $(cat "$ENGINE_T/serve.err")"
! pid_alive "$pid2" || fail "the service started on demand stayed"
[[ $(svc_pid) == "$SRV" ]] || fail "the pid file names $(svc_pid), not $SRV"
P3=$(sed -n 's|^https: https://127.0.0.1:||p' "$ENGINE_T/serve.out")
out=$(k --kubeconfig <(kv engine kubeconfig) get vm -o name 2>&1) || fail "kubectl through serve's port: $out"
[[ $out == "virtualmachine.kubevirt.io/halted" ]] || fail "kubectl through serve said: $out"
kv engine kubeconfig | grep -q "server: https://127.0.0.1:$P3\$" || fail "the kubeconfig does not name serve's port $P3"
echo PASS
