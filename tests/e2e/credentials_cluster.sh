#!/bin/bash
# e2e-lane: cluster
# kvcon credentials add-ssh-key, remove-ssh-key and set-password against fakekube, checked with the real kubectl:
# add-ssh-key on a running VM is refused without --force (virtctl's rule), then creates a Secret owned by the VM
# (generateName NAME-ssh-key-) and appends the VM's accessCredentials entry (sshPublicKey, qemuGuestAgent, the
# user); a second key (-f FILE) goes into that Secret, the same key again is reported and not added; remove-ssh-key
# takes the key's line away; set-password refuses a Secret the VM does not own, and sets the user's key with
# --force; deleting the VM deletes the Secret it owns. Exit 0 pass, 77 skip, anything else fail.
set -u
# shellcheck source=tests/e2e/lib/fakekube.bash
. "$(dirname "$0")/lib/fakekube.bash"
KUBECTL=${KUBECTL:-$(command -v kubectl || true)}
[ -n "$KUBECTL" ] || { echo "SKIP: kubectl not installed"; exit 77; }
export HOME="$tmp/home"
mkdir -p "$HOME"
k() { "$KUBECTL" --request-timeout=30s -n ns-00 "$@"; }

FK_SETTLE=0 fk_start --vms 2 --namespaces 1 --seed 5
vm=ns-00/web-00000
poll 20 "$KVCON" get vmi -n ns-00 web-00000 >/dev/null 2>&1 || fail "no VMI web-00000"
K1="ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKvcon1 one@test"
K2="ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKvcon2 two@test"
printf '%s\n' "$K2" >"$tmp/k2.pub"
secret_keys() { k get secret "$1" -o go-template='{{range $k, $v := .data}}{{$v | base64decode}}{{"\n"}}{{end}}' | sed '/^$/d'; }

# usage errors before the cluster is asked
"$KVCON" credentials add-ssh-key $vm --value "$K1" >/dev/null 2>"$tmp/e" && fail "no --user accepted"
grep -q 'required flag(s) "user" not set' "$tmp/e" || fail "no --user: $(cat "$tmp/e")"
"$KVCON" credentials add-ssh-key $vm --user fedora >/dev/null 2>"$tmp/e" && fail "no key accepted"
grep -q 'one of --file, or --value' "$tmp/e" || fail "no key: $(cat "$tmp/e")"

# a running VM: refused without --force
"$KVCON" credentials add-ssh-key $vm --user fedora --value "$K1" >/dev/null 2>"$tmp/e" && fail "running VM accepted"
grep -q 'virtual machine web-00000 is running. Use --force' "$tmp/e" || fail "running: $(cat "$tmp/e")"
[ -z "$(k get vm web-00000 -o jsonpath='{.spec.template.spec.accessCredentials}')" ] || fail "refused but patched"

"$KVCON" credentials add-ssh-key $vm --user fedora --value "$K1" --force >"$tmp/o" 2>"$tmp/e" ||
	fail "add-ssh-key --force: $(cat "$tmp/e")"
sec=$(k get vm web-00000 -o jsonpath='{.spec.template.spec.accessCredentials[0].sshPublicKey.source.secret.secretName}')
case $sec in web-00000-ssh-key-?*) ;; *) fail "accessCredentials secretName: '$sec'" ;; esac
grep -q "\"$sec\"" "$tmp/o" || fail "add-ssh-key does not name the Secret: $(cat "$tmp/o")"
[ "$(k get vm web-00000 -o jsonpath='{.spec.template.spec.accessCredentials[0].sshPublicKey.propagationMethod.qemuGuestAgent.users[0]}')" = fedora ] ||
	fail "accessCredentials users: $(k get vm web-00000 -o jsonpath='{.spec.template.spec.accessCredentials}')"
[ "$(k get secret "$sec" -o jsonpath='{.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].name}/{.metadata.ownerReferences[0].uid}')" = \
  "VirtualMachine/web-00000/$(k get vm web-00000 -o jsonpath='{.metadata.uid}')" ] || fail "the Secret's owner"
[ "$(secret_keys "$sec")" = "$K1" ] || fail "the Secret holds: $(secret_keys "$sec")"
k get secrets | grep -q "^$sec  *Opaque  *1 " || fail "kubectl get secrets: $(k get secrets)"

# the second key into the same Secret; the first again is reported, not added
"$KVCON" credentials add-ssh-key $vm -u fedora -f "$tmp/k2.pub" >"$tmp/o" 2>"$tmp/e" || fail "add -f: $(cat "$tmp/e")"
grep -q "Successfully added the key to secret \"$sec\"" "$tmp/o" || fail "add -f said: $(cat "$tmp/o")"
[ "$(secret_keys "$sec" | sort)" = "$(printf '%s\n%s\n' "$K1" "$K2" | sort)" ] || fail "two keys: $(secret_keys "$sec")"
[ "$(k get vm web-00000 -o jsonpath='{.spec.template.spec.accessCredentials[*].sshPublicKey.source.secret.secretName}')" = "$sec" ] ||
	fail "a second accessCredentials entry"
"$KVCON" credentials add-ssh-key $vm -u fedora --value "$K1" >"$tmp/o" 2>&1 || fail "add again: $(cat "$tmp/o")"
grep -q "already contains this SSH key" "$tmp/o" || fail "add again said: $(cat "$tmp/o")"

# remove-ssh-key takes the key's line away, the other stays
"$KVCON" credentials remove-ssh-key $vm --user fedora --value "$K1" >"$tmp/o" 2>"$tmp/e" || fail "remove: $(cat "$tmp/e")"
[ "$(secret_keys "$sec")" = "$K2" ] || fail "after remove: $(secret_keys "$sec")"
"$KVCON" credentials remove-ssh-key $vm --user fedora -f "$tmp/k2.pub" >/dev/null 2>&1 || fail "remove -f"
[ "$(k get secret "$sec" -o jsonpath='{.data}')" = "" ] || [ "$(k get secret "$sec" -o jsonpath='{.data}')" = "{}" ] ||
	fail "after removing both: $(k get secret "$sec" -o jsonpath='{.data}')"

# set-password: a userPassword Secret made with kubectl, not owned by the VM
"$KVCON" credentials set-password $vm --user fedora --password s3cret >/dev/null 2>"$tmp/e" && fail "no userPassword accepted"
grep -q 'no secrets assigned to UserPassword' "$tmp/e" || fail "set-password without one: $(cat "$tmp/e")"
# (a manifest: kubectl create secret generic sends protobuf, which fakekube does not read; stringData as the API does)
printf 'apiVersion: v1\nkind: Secret\nmetadata:\n  name: pw\nstringData:\n  root: old\n' | k create -f - >/dev/null ||
	fail "kubectl create -f secret"
k patch vm web-00000 --type=json -p '[{"op":"add","path":"/spec/template/spec/accessCredentials/-","value":{"userPassword":{"source":{"secret":{"secretName":"pw"}},"propagationMethod":{"qemuGuestAgent":{}}}}}]' >/dev/null ||
	fail "kubectl patch vm"
"$KVCON" credentials set-password $vm --user fedora --password s3cret >/dev/null 2>"$tmp/e" && fail "unowned Secret changed"
grep -q 'secret pw does not have an owner reference pointing to VM web-00000' "$tmp/e" || fail "unowned: $(cat "$tmp/e")"
"$KVCON" credentials set-password $vm --user fedora -p s3cret --force >"$tmp/o" 2>"$tmp/e" || fail "set-password: $(cat "$tmp/e")"
[ "$(k get secret pw -o jsonpath='{.data.fedora}' | base64 -d)/$(k get secret pw -o jsonpath='{.data.root}' | base64 -d)" = s3cret/old ] ||
	fail "the password Secret: $(k get secret pw -o jsonpath='{.data}')"
# the VM's own Secret goes with it (the garbage collector), the one it does not own stays
k delete vm web-00000 --wait=false >/dev/null || fail "kubectl delete vm"
poll 5 sh -c "! '$KUBECTL' -n ns-00 get secret '$sec' >/dev/null 2>&1" || fail "the VM's Secret $sec outlived it"
k get secret pw >/dev/null 2>&1 || fail "the unowned Secret pw went with the VM"
echo "PASS credentials_cluster: add-ssh-key (running refused, --force, -f, again), remove-ssh-key, set-password, owned Secrets collected, as kubectl sees them"
