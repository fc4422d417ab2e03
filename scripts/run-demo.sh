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
scripts/demo-guest.sh "$images/kvcon-lab-guest" >/dev/null
if [ -z "${KVCON_ENGINE_URI:-}" ]; then
	echo "run-demo: warming the embedded libvirt driver in $root" >&2
	scripts/embed-warm.sh "$root" >/dev/null
fi
# No accelerator choice here: the engine probes KVM itself (once per machine boot, a tiny guest of its own timed
# under -accel kvm) and runs the demo under TCG, with a notice, where KVM guests would not run.
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
