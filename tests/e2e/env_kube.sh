#!/bin/bash
# e2e-lane: cluster
# shellcheck disable=SC2016 # the namespaces' scripts expand their own arguments
# env_kube.sh - the cluster side's environment problems are one `error: ...` line with the fix, exit 1, promised within 5 s
# (issue 13, item 4): no kubeconfig (for `kvcon get`, and for the dashboard with the engine off or unable to
# open), a cluster that refuses the connection, one that never answers (a private network namespace), and
# credentials the cluster refuses (401 from tests/fakekube: a token that is wrong or has expired).
# Prints "ENVTIME case seconds" lines (BENCHMARKS.md). Exit 0 pass, 77 skip, anything else fail.
set -u
# shellcheck source=tests/e2e/lib/fakekube.bash
. "$(dirname "$0")/lib/fakekube.bash"
[[ $(id -u) == 0 ]] || { echo "needs root (private mount and network namespaces)"; exit 77; }
EXPECT_DIR=$tmp
# shellcheck source=tests/e2e/lib/envexpect.bash
. "$top/tests/e2e/lib/envexpect.bash"
K=$KVCON
mkdir -p "$tmp/home" "$tmp/state"
export XDG_STATE_HOME=$tmp/state XDG_CONFIG_HOME=$tmp/config
# nothing from this machine's own kubeconfig or cluster
nokube=(env -u KUBECONFIG -u KUBERNETES_SERVICE_HOST -u KUBERNETES_SERVICE_PORT HOME="$tmp/home")

echo "== no kubeconfig"
want="error: no kubeconfig (~/.kube/config or \$KUBECONFIG) and not running in a cluster (KUBERNETES_SERVICE_HOST"
want+=" unset): point \$KUBECONFIG or --kubeconfig at a cluster's kubeconfig (the local engine's VMs: kvcon engine get)"
expect no-kubeconfig "$want" "${nokube[@]}" "$K" --no-engine get vm
# without --no-engine, get looks at the local engine instead (the out-of-the-box default): no error
# (the engine host's KVM/TCG notice may come first, once a boot: nothing else)
out=$("${nokube[@]}" XDG_STATE_HOME="$tmp/state" "$K" get vm 2>&1) || fail "get vm with no kubeconfig, engine: $out"
[[ ${out##*$'\n'} == "No resources found in default namespace." ]] || fail "get vm with no kubeconfig, engine: $out"
[[ $(grep -cv -e '^No resources found in default namespace\.$' -e '^kvcon: [^ ]*: KVM ' -e '^kvcon: [^ ]*: TCG ' <<<"$out") == 0 ]] ||
    fail "get vm with no kubeconfig, engine, said more: $out"
# the dashboard (in a pseudo-terminal, whose output script(1) copies to stderr here) says it before taking the
# screen
want="error: no kubeconfig (~/.kube/config or \$KUBECONFIG) and no engine (--no-engine): set \$KUBECONFIG or"
want+=" --kubeconfig, or leave out --no-engine for the local engine"
expect dash-no-engine "$want" "${nokube[@]}" bash -c 'exec script -qec "$1 --no-engine" /dev/null >&2' x "$K"
# QEMU hidden: the engine the dashboard would fall back to cannot open either (its service, started on demand
# inside the namespace, refuses; the one `get vm` started above sees QEMU and goes first)
svc_stop_all "$tmp"
want="error: no kubeconfig (~/.kube/config or \$KUBECONFIG), and the local engine cannot open: QEMU is not installed"
want+=" (no qemu-system-x86_64 on the PATH): install qemu-system-x86 (Debian), or run scripts/deps.sh as root"
expect dash-no-qemu "$want" "${nokube[@]}" "${IN_NS[@]}" 'mount --bind /dev/null "$(command -v qemu-system-x86_64)" &&
    exec script -qec "$1" /dev/null >&2' x "$K"

# shellcheck disable=SC2119 # no fakekube options
fk_start
echo "== a cluster that refuses the connection"
port=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
sed "s#server: .*#server: https://127.0.0.1:$port#" "$KUBECONFIG" >"$tmp/down.kubeconfig"
want="error: cannot reach https://127.0.0.1:$port (context fake): connection refused: is the cluster up, and is that"
want+=" the server the kubeconfig should name?"
expect refused "$want" env KUBECONFIG="$tmp/down.kubeconfig" "$K" get vm

echo "== a cluster that never answers"
sed "s#server: .*#server: https://10.99.0.2:6443#" "$KUBECONFIG" >"$tmp/silent.kubeconfig"
want="error: cannot reach https://10.99.0.2:6443 (context fake): no answer within 3 s: is the cluster up, and is that"
want+=" the server the kubeconfig should name?"
expect silent "$want" env KUBECONFIG="$tmp/silent.kubeconfig" "${IN_SILENT_NET[@]}" "$SILENT_NET_UP"' &&
    exec "$1" get vm' x "$K"

echo "== credentials the cluster refuses (401)"
sed "s/token: .*/token: kvenv-expired-token/" "$KUBECONFIG" >"$tmp/expired.kubeconfig"
server=$(sed -n 's/^ *server: //p' "$KUBECONFIG" | head -n1)
want="error: $server refused the credentials of user fake-admin (context fake): Unauthorized (401): they are wrong"
want+=" or have expired; log in again, or renew the token or certificate in the kubeconfig"
expect unauthorized "$want" env KUBECONFIG="$tmp/expired.kubeconfig" "$K" get vm
grep -q kvenv-expired-token "$tmp/unauthorized.err" && fail "the token was printed"
echo PASS
