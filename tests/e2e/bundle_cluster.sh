#!/bin/bash
# e2e-lane: cluster
# kvcon bundle against fakekube: the tarball holds exactly the files manifest.txt lists as ok (checked with tar),
# the VM, VMI and launcher as YAML and describe text, the events, the launcher's logs (the previous instance of
# a crash-looping compute container included), the storage objects behind a DataVolume-backed VM, the
# diagnosis (kvcon diagnose's: its storage headline names the DataVolume) and lineage; what could not be
# collected is listed with its reason; cloud-init user and network data never reach the tarball (a marker in them
# is searched in every file); a missing VM fails with exit 1.
# Exit 0 pass, anything else fail.
set -u
# shellcheck source=tests/e2e/lib/fakekube.bash
. "$(dirname "$0")/lib/fakekube.bash"

fk_start --vms 2 --namespaces 1 --seed 4 --scenario crashloop,dv-importing --step 0.05
marker="kvcon-secret-$$-$RANDOM"
fkctl post /fake/apply "{\"apiVersion\":\"kubevirt.io/v1\",\"kind\":\"VirtualMachine\",\"metadata\":{\"name\":\"sec\",\"namespace\":\"default\"},
 \"spec\":{\"runStrategy\":\"Always\",\"template\":{\"spec\":{\"domain\":{\"devices\":{\"disks\":[{\"name\":\"c\",\"disk\":{\"bus\":\"virtio\"}}]}},
 \"volumes\":[{\"name\":\"c\",\"cloudInitNoCloud\":{\"userData\":\"#cloud-config\\npassword: $marker\\n\",\"networkData\":\"net-$marker\"}}]}}}}" >/dev/null ||
	fail "apply sec"
fkctl settle 30 >/dev/null || fail "settle"

check_bundle() { # FILE: tar lists exactly the ok files of the manifest, and no file holds the marker
	local f=$1
	tar tzf "$f" | sort >"$tmp/listed" || fail "tar cannot read $f"
	{ tar xzf "$f" -O manifest.txt | awk '$1 == "ok" {print $2}'; echo manifest.txt; } | sort >"$tmp/ok"
	diff "$tmp/listed" "$tmp/ok" || fail "$f: the tarball and manifest.txt disagree"
	rm -rf "$tmp/x" && mkdir "$tmp/x" && tar xzf "$f" -C "$tmp/x" || fail "extract $f"
	grep -rl -- "$marker" "$tmp/x" && fail "$f: cloud-init data leaked into the bundle"
	return 0
}

# 1. a running VM with cloud-init secrets
(cd "$tmp" && "$KVCON" bundle default/sec >"$tmp/out") || fail "bundle default/sec"
grep -q '^bundle written: kvcon-bundle-default-sec-[0-9TZ]*\.tar\.gz ([0-9]* files, [0-9]* not collected: see manifest.txt)$' "$tmp/out" || fail "output: $(cat "$tmp/out")"
f=$(ls "$tmp"/kvcon-bundle-default-sec-*.tar.gz)
check_bundle "$f"
for p in vm.yaml vmi.yaml describe/vm.txt describe/vmi.txt events.txt diagnosis.txt lineage.txt migrations.yaml storage/chain.json; do
	[ -s "$tmp/x/$p" ] || fail "sec bundle lacks $p"
done
ls "$tmp/x/pods/" | grep -q '^virt-launcher-sec-.*\.yaml$' || fail "launcher pod YAML"
ls "$tmp"/x/logs/virt-launcher-sec-*/compute.log >/dev/null || fail "compute log"
grep -q '<redacted by kvcon bundle>' "$tmp/x/vm.yaml" || fail "vm.yaml not redacted"
grep -q '^Name: *sec$' "$tmp/x/describe/vm.txt" || fail "describe text"
grep -q '^missing  logs/virt-launcher-sec-[a-z0-9]*/compute.previous.log  *previous terminated container "compute"' "$tmp/x/manifest.txt" ||
	fail "the manifest does not say why the previous log is missing"
grep -q '^missing  console.log ' "$tmp/x/manifest.txt" || fail "console reason"

# 2. a crash loop: the previous instance's log is there
"$KVCON" bundle default/crashloop -o "$tmp/crash.tar.gz" >/dev/null || fail "bundle crashloop"
check_bundle "$tmp/crash.tar.gz"
grep -q 'dirty virt-launcher shutdown' "$tmp"/x/logs/virt-launcher-crashloop-*/compute.previous.log || fail "previous compute log"

# 3. the storage behind a DataVolume-backed VM
"$KVCON" bundle default/dv-importing -o "$tmp/dv.tar.gz" >/dev/null || fail "bundle dv-importing"
check_bundle "$tmp/dv.tar.gz"
for p in storage/dv-dv-importing-rootdisk.yaml storage/pvc-dv-importing-rootdisk.yaml; do
	[ -s "$tmp/x/$p" ] || fail "dv bundle lacks $p"
done
ls "$tmp"/x/storage/pv-pvc-*.yaml >/dev/null || fail "dv bundle lacks the PV"
grep -q 'kind: DataVolume' "$tmp/x/storage/dv-dv-importing-rootdisk.yaml" || fail "dv yaml"
grep -q '^missing  vmi.yaml  *no VirtualMachineInstance' "$tmp/x/manifest.txt" || fail "no-VMI reason"
# the diagnosis is kvcon diagnose's: its storage headline names the DataVolume and its progress, then the chain
grep -qxF '  [vm-provisioning] the VM waits for its disks: DataVolume default/dv-importing-rootdisk is ImportInProgress (37.50%); its VMI is created once they are ready' \
	"$tmp/x/diagnosis.txt" || { cat "$tmp/x/diagnosis.txt"; fail "the bundle's diagnosis does not name the DataVolume"; }
grep -q '^Storage (VM volume -> DataVolume -> PVC -> PV):' "$tmp/x/diagnosis.txt" || fail "the bundle's diagnosis lacks its storage section"

# 4. a VM that does not exist
"$KVCON" bundle default/nothing-here -o "$tmp/none.tar.gz" >/dev/null 2>&1; [ $? -eq 1 ] || fail "missing VM must exit 1"
[ -e "$tmp/none.tar.gz" ] && fail "a bundle was written for a missing VM"
echo PASS
