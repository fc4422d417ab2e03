#!/bin/bash
# e2e-lane: cluster
# kvcon apply -f / delete -f / create namespace and the real kubectl side by side on the same fakekube (issue 27):
# the same sequence of multi-document files (a Namespace and VMs, an empty document, a List, a directory with -R,
# STDIN), run once by kubectl and once by kvcon from the same starting state, prints the same lines and exit codes
# (created, unchanged, configured, the dry runs, deleted, the errors of a second delete and of an unknown kind),
# leaves the same last-applied annotation, and --dry-run=server / client store nothing. Exit 0 pass, else fail.
set -u
# shellcheck source=tests/e2e/lib/fakekube.bash
. "$(dirname "$0")/lib/fakekube.bash"
KUBECTL=$(command -v kubectl || echo /usr/bin/kubectl)
[ -x "$KUBECTL" ] || fail "kubectl missing (scripts/deps.sh installs it)"
export HOME="$tmp/home" # kubectl's discovery cache, per run
mkdir -p "$HOME"
fk_start --vms 2 --namespaces 1 --seed 27
K() { "$KUBECTL" --request-timeout=30s "$@"; }

m="$tmp/m"
mkdir -p "$m/dir/sub"
vm() { # NAME MEMORY [NAMESPACE]
	printf 'apiVersion: kubevirt.io/v1\nkind: VirtualMachine\nmetadata:\n  name: %s\n' "$1"
	[ -n "${3:-}" ] && printf '  namespace: %s\n' "$3"
	printf '  labels:\n    app: web\nspec:\n  runStrategy: Halted\n  template:\n    spec:\n      domain:\n'
	printf '        devices: {}\n        resources:\n          requests:\n            memory: %s\n' "$2"
}
{ printf 'apiVersion: v1\nkind: Namespace\nmetadata:\n  name: apx\n---\n'; vm web1 64Mi apx
  printf -- '---\n# nothing here\n---\n'; vm web2 64Mi; } >"$m/multi.yaml"
{ printf 'apiVersion: v1\nkind: Namespace\nmetadata:\n  name: apx\n---\n'; vm web1 128Mi apx
  printf -- '---\n'; vm web2 64Mi; } >"$m/changed.yaml"
{ vm web1 256Mi apx; } >"$m/dry.yaml"
vm web3 64Mi >"$m/dir/sub/b.yml"
vm web4 64Mi >"$m/dir/a.yaml"
echo 'not: a manifest' >"$m/dir/notes.txt"
{ printf 'apiVersion: v1\nkind: List\nitems:\n'; vm web5 64Mi | sed 's/^/  /; 1s/^  /- /'; } >"$m/list.yaml"
{ printf 'apiVersion: example.com/v1\nkind: Gadget\nmetadata:\n  name: g\n---\n'; vm web6 64Mi; } >"$m/unknown.yaml"

# seq TOOL OUT: the steps, each "$ ARGS", its stdout, stderr and exit code into OUT
seq_run() {
	local tool=$1 out=$2
	step() {
		echo "\$ $*" >>"$out"
		"$tool" "$@" >>"$out" 2>"$tmp/err"
		echo "exit $?" >>"$out"
		sed 's/^/stderr: /' "$tmp/err" >>"$out"
	}
	: >"$out"
	step apply --dry-run=server -f "$m/multi.yaml"
	K get ns apx >/dev/null 2>&1 && fail "$tool: --dry-run=server created the namespace"
	step apply --dry-run=client -f "$m/multi.yaml"
	step apply -f "$m/multi.yaml"
	step apply -f "$m/multi.yaml"
	step apply -f "$m/changed.yaml"
	step apply -f "$m/dry.yaml" --dry-run=server
	[ "$(K get vm -n apx web1 -o jsonpath='{.spec.template.spec.domain.resources.requests.memory}')" = 128Mi ] ||
		fail "$tool: --dry-run=server changed the VM"
	K get vm -n apx web1 -o jsonpath='{.metadata.annotations}' >"$out.annot"
	step apply -R -f "$m/dir"
	step apply -f "$m/dir"
	step apply -f - <"$m/changed.yaml"
	step delete --dry-run=server -f "$m/changed.yaml"
	K get vm -n apx web1 >/dev/null 2>&1 || fail "$tool: delete --dry-run=server deleted"
	step delete -R -f "$m/dir"
	step delete -f "$m/changed.yaml"
	step delete -f "$m/changed.yaml"
	step delete --ignore-not-found -f "$m/changed.yaml"
	step delete -f "$m/no-such-file.yaml"
}
t0=$(date +%s)
seq_run "$KUBECTL" "$tmp/kubectl.out"
seq_run "$KVCON" "$tmp/kvcon.out"
if ! cmp -s "$tmp/kubectl.out" "$tmp/kvcon.out"; then
	diff -u "$tmp/kubectl.out" "$tmp/kvcon.out" | head -60
	fail "kvcon and kubectl printed different things"
fi
cmp -s "$tmp/kubectl.out.annot" "$tmp/kvcon.out.annot" || fail "last-applied differs: $(cat "$tmp/kubectl.out.annot") vs $(cat "$tmp/kvcon.out.annot")"
grep -q 'virtualmachine.kubevirt.io/web1 configured' "$tmp/kvcon.out" || fail "no configured line"
grep -q 'virtualmachine.kubevirt.io/web1 unchanged' "$tmp/kvcon.out" || fail "no unchanged line"
grep -q 'created (server dry run)' "$tmp/kvcon.out" || fail "no server dry run line"
# kvcon alone where fakekube's partial OpenAPI makes kubectl's client-side validation fail (a List, an unknown group)
# and kubectl create namespace's protobuf body, which fakekube does not read: a List's items are applied; an
# unknown kind is an error after the other documents were applied (as kubectl against a real API server); create
# namespace twice is AlreadyExists.
out=$("$KVCON" apply -f "$m/list.yaml" 2>&1) || fail "apply of a List: $out"
[ "$out" = "virtualmachine.kubevirt.io/web5 created" ] || fail "apply of a List said: $out"
"$KVCON" apply -f "$m/unknown.yaml" >"$tmp/u.out" 2>"$tmp/u.err" && fail "an unknown kind exited 0"
grep -qx 'virtualmachine.kubevirt.io/web6 created' "$tmp/u.out" || fail "the known document of a file was not applied"
grep -qx 'error: resource mapping not found for name: "g" namespace: "" from "'"$m"'/unknown.yaml": no matches for kind "Gadget" in version "example.com/v1"' "$tmp/u.err" || fail "unknown kind: $(cat "$tmp/u.err")"
out=$("$KVCON" create namespace apy 2>&1) || fail "create namespace: $out"
[ "$out" = "namespace/apy created" ] || fail "create namespace said: $out"
K get ns apy >/dev/null || fail "kubectl does not see the namespace kvcon created"
out=$("$KVCON" create namespace apy 2>&1) && fail "create namespace twice exited 0"
[ "$out" = 'Error from server (AlreadyExists): namespaces "apy" already exists' ] || fail "create twice said: $out"
printf 'a: [1\n' >"$m/bad.yaml"
"$KVCON" apply -f "$m/bad.yaml" -f "$m/dir/a.yaml" >"$tmp/b.out" 2>"$tmp/b.err" && fail "a YAML error exited 0"
grep -q '^error: error parsing .*bad.yaml: YAML error at line' "$tmp/b.err" || fail "YAML error: $(cat "$tmp/b.err")"
grep -qx 'virtualmachine.kubevirt.io/web4 created' "$tmp/b.out" || fail "the other file was not applied"

echo "PASS: apply/delete/create namespace as kubectl ($(grep -c '^\$ ' "$tmp/kvcon.out") steps, $(( $(date +%s) - t0 )) s)"
