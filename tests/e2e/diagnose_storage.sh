#!/bin/bash
# e2e-lane: cluster
# The storage chain behind a VM: fakekube serves DataVolumes (cdi.kubevirt.io/v1beta1), PVCs and PVs, checked
# with the real kubectl (get with the server's columns, -o json equal to /fake/state, describe); kvcon diagnose
# walks each VM volume -> DataVolume -> PVC -> PV and names the first broken link: a DataVolume still
# importing, a Pending PVC, a missing PVC; a running VM on a ReadWriteOnce claim gets the migration warning and
# the PV's reclaim policy; a VM on container disks has no storage section.
# Exit 0 pass, anything else fail.
set -u
# shellcheck source=tests/e2e/lib/fakekube.bash
. "$(dirname "$0")/lib/fakekube.bash"

command -v kubectl >/dev/null || fail "kubectl missing (the set-up installs it)"
command -v jq >/dev/null || fail "jq missing (the set-up installs it)"
fk_start --vms 2 --namespaces 1 --seed 9 --scenario dv-importing,pvc-pending,rwo-migration,pvc-missing,dv-error,dv-upload \
	--step 0.05

# 1. kubectl against the storage objects
kubectl get dv -n default >"$tmp/dv" || fail "kubectl get dv"
grep -q '^dv-importing-rootdisk  *ImportInProgress  *37.50%  *0 ' "$tmp/dv" || { cat "$tmp/dv"; fail "dv row"; }
kubectl get pvc -n default >"$tmp/pvc" || fail "kubectl get pvc"
grep -q '^pvc-pending-rootdisk  *Pending  .*slow-nfs' "$tmp/pvc" || { cat "$tmp/pvc"; fail "pending pvc row"; }
grep -q '^rwo-migration-rootdisk  *Bound  *pvc-[0-9a-f-]*  *10Gi  *RWO  *local-path' "$tmp/pvc" || { cat "$tmp/pvc"; fail "bound pvc row"; }
kubectl get pv >"$tmp/pv" || fail "kubectl get pv"
grep -q ' Retain  *Bound  *default/rwo-migration-rootdisk ' "$tmp/pv" || { cat "$tmp/pv"; fail "pv row"; }
for k in datavolumes persistentvolumeclaims persistentvolumes; do
	kubectl get $k -A -o json | jq -S '[.items[] | {n: .metadata.name, uid: .metadata.uid, rv: .metadata.resourceVersion}]' >"$tmp/kc.$k"
	fkctl state $k | jq -S "[.$k[] | {n: .metadata.name, uid: .metadata.uid, rv: .metadata.resourceVersion}]" >"$tmp/fk.$k"
	cmp -s "$tmp/kc.$k" "$tmp/fk.$k" || fail "kubectl get $k -o json differs from /fake/state"
	[ "$(jq length "$tmp/kc.$k")" -ge 1 ] || fail "no $k"
done
kubectl describe pvc -n default pvc-pending-rootdisk | grep -q 'ProvisioningFailed .*"slow-nfs" not found' || fail "pvc event"

# 2. diagnose names the first broken link
diag() { "$KVCON" diagnose "default/$1" >"$tmp/d.txt" 2>"$tmp/d.err"; "$KVCON" diagnose "default/$1" -o json >"$tmp/d.json" 2>/dev/null; }
diag dv-importing
grep -q '^  rootdisk: DataVolume dv-importing-rootdisk ImportInProgress 37.50% -> PVC dv-importing-rootdisk Bound 10Gi RWO class local-path -> PV pvc-.* Bound reclaim Delete$' "$tmp/d.txt" ||
	{ cat "$tmp/d.txt"; fail "dv chain line"; }
grep -q 'first broken link: DataVolume: DataVolume default/dv-importing-rootdisk is ImportInProgress (37.50%)' "$tmp/d.txt" || fail "dv broken link"
grep -q 'PVC owned by DataVolume/dv-importing-rootdisk' "$tmp/d.txt" || fail "pvc owner"
jq -e '.storage[0].brokenLink == "DataVolume" and .storage[0].dataVolume.phase == "ImportInProgress" and .storage[0].pv.reclaimPolicy == "Delete"' "$tmp/d.json" >/dev/null ||
	{ jq .storage "$tmp/d.json"; fail "dv json"; }
diag pvc-pending
grep -q 'first broken link: PVC: PVC default/pvc-pending-rootdisk is Pending (storage class slow-nfs)' "$tmp/d.txt" || { cat "$tmp/d.txt"; fail "pending broken link"; }
jq -e '.storage[0].brokenLink == "PVC" and (.storage[0] | has("pv") | not)' "$tmp/d.json" >/dev/null || fail "pending json"
diag pvc-missing
grep -q 'first broken link: PVC: PVC default/pvc-missing-rootdisk does not exist' "$tmp/d.txt" || { cat "$tmp/d.txt"; fail "missing broken link"; }
diag rwo-migration
grep -q 'every link holds' "$tmp/d.txt" || { cat "$tmp/d.txt"; fail "rwo: links hold"; }
grep -q 'migration: PVC default/rwo-migration-rootdisk is RWO, not ReadWriteMany: it blocks live migration' "$tmp/d.txt" || fail "rwo migration line"
jq -e '.storage[0].pv.reclaimPolicy == "Retain" and (.storage[0] | has("brokenLink") | not)' "$tmp/d.json" >/dev/null || fail "rwo json"
kubectl get vmi -n default rwo-migration -o jsonpath='{.status.conditions[?(@.type=="LiveMigratable")].reason}' | grep -qx DisksNotLiveMigratable ||
	fail "rwo VMI condition"
# 3. the headline names the cause and the object, per printableStatus (issue 25): the DataVolume and its progress
# (waiting, not failed, an hour after the VM was made), the claim and its storage class, the missing claim, the
# failed import's error, the upload awaited
head_is() { # VM RULE VERDICT HEADLINE (the rule's line, fixed string)
	diag "$1"
	grep -q "^First boundary that has not progressed: VM ($3)\$" "$tmp/d.txt" || grep -q "^First boundary that has not progressed: VMI ($3)\$" "$tmp/d.txt" ||
		{ cat "$tmp/d.txt"; fail "$1: not $3"; }
	grep -qxF "  [$2] $4" "$tmp/d.txt" || { cat "$tmp/d.txt"; fail "$1: headline"; }
	[ "$(grep -c 'status.printableStatus' "$tmp/d.txt")" -le 1 ] || { cat "$tmp/d.txt"; fail "$1: printableStatus quoted twice"; }
}
head_is dv-importing vm-provisioning waiting \
	'the VM waits for its disks: DataVolume default/dv-importing-rootdisk is ImportInProgress (37.50%); its VMI is created once they are ready'
head_is pvc-pending vm-volume-binding failed \
	'the VM waits for its claim to be bound: PVC default/pvc-pending-rootdisk (storage class slow-nfs) is Pending'
head_is pvc-missing vmi-pvc-not-found failed 'the VM uses a claim that does not exist: PVC default/pvc-missing-rootdisk does not exist'
head_is dv-error vm-datavolume-error failed \
	'a DataVolume of the VM failed: DataVolume default/dv-error-rootdisk is Failed (0.00%): Unable to connect to http data source: expected status code 200, got 404. Status: 404 Not Found'
head_is dv-upload vm-waiting-for-receiver waiting 'the VM waits for an upload: DataVolume default/dv-upload-rootdisk is UploadReady'
grep -qF '$ virtctl -n default image-upload dv dv-upload-rootdisk --image-path=FILE' "$tmp/d.txt" || { cat "$tmp/d.txt"; fail "upload command"; }
vm=$(fkctl names virtualmachines | sed -n 's|^ns-00/||p' | head -1)
"$KVCON" diagnose "ns-00/$vm" >"$tmp/d.txt"
grep -q '^Storage' "$tmp/d.txt" && fail "a container-disk VM has a storage section"
echo PASS
