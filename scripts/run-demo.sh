#!/bin/sh
# `make run`: kvcon on its out-of-the-box default, the local engine on libvirt's embedded QEMU driver, with a
# ready demo VM (examples/demo-vm.yaml): the lab guest built from Debian packages as a kernel-boot image, the
# embedded driver's root pre-warmed (QEMU's capability probe once), the manifest applied, then the dashboard.
set -e
cd "$(dirname "$0")/.."
state=${XDG_STATE_HOME:-$HOME/.local/state}/kvcon
images=${KVCON_ENGINE_IMAGES:-$state/engine-data/images}
root=$state/engine

echo "run-demo: building the demo guest into $images/kvcon-lab-guest" >&2
tests/lab/guest.sh "$images/kvcon-lab-guest" >/dev/null
if [ -z "${KVCON_ENGINE_URI:-}" ]; then
	echo "run-demo: warming the embedded libvirt driver in $root" >&2
	tests/lab/embed-warm.sh "$root" >/dev/null
fi
# The engine's own KVM probe (SeaBIOS under KVM) passes on machines where /dev/kvm answers but a real kernel
# never prints a line (seen here: KVM "ok", the demo guest silent). Boot the demo kernel itself under KVM once
# per machine boot; when its marker does not come, the demo runs under TCG, and says so.
if [ -z "${KVCON_ENGINE_ACCEL:-}" ] && [ -e /dev/kvm ]; then
	probe=$state/demo-kvm-probe
	boot=$(cat /proc/sys/kernel/random/boot_id 2>/dev/null || echo unknown)
	if ! grep -q "^$boot " "$probe" 2>/dev/null; then
		echo "run-demo: checking that a guest kernel runs under KVM (at most 15 s, once per boot)" >&2
		verdict=tcg
		if timeout 15 qemu-system-x86_64 -accel kvm -m 256 -display none -serial stdio -monitor none \
			-no-reboot -kernel "$images/kvcon-lab-guest/vmlinuz" -initrd "$images/kvcon-lab-guest/initrd.gz" \
			-append 'console=ttyS0 quiet panic=-1' </dev/null 2>/dev/null | grep -q -m1 KVCON-GUEST-READY; then
			verdict=kvm
		fi
		mkdir -p "$state" && echo "$boot $verdict" >"$probe"
	fi
	if grep -q "^$boot tcg" "$probe"; then
		echo "run-demo: KVM does not run guests on this machine: the demo uses TCG emulation" >&2
		export KVCON_ENGINE_ACCEL=tcg
	fi
fi
./kvcon engine apply -f examples/demo-vm.yaml
if [ -f src/ui/ui.h ] && [ $# -eq 0 ]; then
	exec ./kvcon
fi
# no dashboard in this build yet: the same steps from the command line
./kvcon engine get vm
cat >&2 <<'EOF'

The demo VM is stored (runStrategy Halted). Next:
  ./kvcon engine start demo-vm        # boots in a few seconds (TCG when KVM does not work here)
  ./kvcon engine console demo-vm      # its serial console; Ctrl+] leaves
  ./kvcon engine stop demo-vm
EOF
if [ $# -gt 0 ]; then
	exec ./kvcon "$@"
fi
